// SPDX-License-Identifier: MIT
/* Kernels of lib_kernels: arithmetic, a float argument, block barrier and
 * scratchpad, atomics, printf, relocated data and a fault. */
#include <npu_kernel.h>

static unsigned global_id(void)
{
	return npu_block_index() * npu_block_threads() + npu_thread_index();
}

static unsigned global_size(void)
{
	return npu_grid_x() * npu_grid_y() * npu_grid_z() * npu_block_threads();
}

/* c = a + b, grid-stride */
NPU_KERNEL(vadd, (const float *, a), (const float *, b), (float *, c),
	   (unsigned, n))
{
	for (unsigned i = global_id(); i < n; i += global_size())
		c[i] = a[i] + b[i];
}

/* y = a * x + y with a float and a 64-bit integer argument */
NPU_KERNEL(saxpy, (float, a), (const float *, x), (float *, y),
	   (unsigned long, n))
{
	for (unsigned long i = global_id(); i < n; i += global_size())
		y[i] = a * x[i] + y[i];
}

/* out[block] = sum of in[block * threads .. +threads), through the block's
 * scratchpad and barrier (tree reduction); static scratchpad of 4 KiB */
NPU_KERNEL_EX(block_sum, 4096, 256, 0, (const int *, in), (int *, out))
{
	int *s = npu_scratch();
	unsigned t = npu_thread_index(), n = npu_block_threads();

	s[t] = in[npu_block_index() * n + t];
	npu_barrier();
	for (unsigned half = n / 2; half; half /= 2) {
		if (t < half)
			s[t] += s[t + half];
		npu_barrier();
	}
	if (!t)
		out[npu_block_index()] = s[0];
}

/* hist[v % bins]++ for every value, with device atomics */
NPU_KERNEL(histogram, (const unsigned *, v), (unsigned, n), (unsigned *, hist),
	   (unsigned, bins))
{
	for (unsigned i = global_id(); i < n; i += global_size())
		npu_atomic_add(&hist[v[i] % bins], 1u);
}

static const char *const words[] = { "zero", "one", "two", "three" };

/* every thread prints one line; the strings come from a table of
 * pointers (relocated at load) */
NPU_KERNEL(hello, (int, tag), (double, x))
{
	unsigned b = npu_block_index(), t = npu_thread_index();

	printf("# hello %d: block %u thread %u %s x=%.3f %5.1f|%-4x|%c|%%\n", tag,
	       b, t, words[t % 4], x, x * 2, b * 16 + t, 'A' + (int)t);
}

/* many records: more than a printf buffer holds */
NPU_KERNEL(chatty, (int, lines))
{
	for (int i = 0; i < lines; i++)
		printf("# chatty block %u thread %u line %d of %d\n",
		       npu_block_index(), npu_thread_index(), i, lines);
}

/* thread 3 of block 1 stores to p, an address nobody mapped */
NPU_KERNEL(bad_store, (int *, p))
{
	if (npu_block_index() == 1 && npu_thread_index() == 3)
		*p = 42;
}

/* no arguments at all */
NPU_KERNEL(noargs)
{
}

/* p[i] += 1 for i < n: p may be pinned host memory (its device pointer) */
NPU_KERNEL(incr, (unsigned *, p), (unsigned, n))
{
	for (unsigned i = global_id(); i < n; i += global_size())
		p[i] += 1;
}

/* a dependent floating-point chain: compute-bound */
NPU_KERNEL(fma_chain, (float *, out), (unsigned, iters))
{
	float a = (float)npu_thread_index(), b = 1.0001f;

	for (unsigned i = 0; i < iters; i++) {
		a = a * b + 0.5f;
		b = b * 0.9999f + 0.0001f;
	}
	out[global_id()] = a + b;
}

/* one argument of every width, in 16 (the most a kernel takes): each
 * stored back sign- or zero-extended as its type says */
NPU_KERNEL(widths, (long long *, out), (signed char, c), (unsigned char, uc),
	   (short, sh), (unsigned short, us), (int, i), (unsigned, u),
	   (long, l), (float, f), (double, d), (signed char, c2), (short, sh2),
	   (int, i2), (unsigned long long, ull), (unsigned short, us2),
	   (unsigned char, uc2))
{
	out[0] = c;
	out[1] = uc;
	out[2] = sh;
	out[3] = us;
	out[4] = i;
	out[5] = u;
	out[6] = l;
	out[7] = (long long)(f * 4.0f);
	out[8] = (long long)(d * 8.0);
	out[9] = c2;
	out[10] = sh2;
	out[11] = i2;
	out[12] = (long long)ull;
	out[13] = us2;
	out[14] = uc2;
}

/* Stores its own first instruction word back: code is mapped read-only. */
NPU_KERNEL(store_to_code)
{
	volatile unsigned *code = (volatile unsigned *)(unsigned long)&store_to_code;

	*code = *code;
}
