// SPDX-License-Identifier: MIT
/* Kernels of lib_modules: each faults one way, for the messages that say
 * which kernel, function and line faulted and what the device recorded. */
#include <npu_kernel.h>

/* not inlined: the fault's PC is in this function, not in the kernel */
static __attribute__((noinline)) int helper_load(const volatile int *p)
{
	return *p;
}

/* the load from p (unmapped) happens in helper_load */
NPU_KERNEL(calls_helper, (const int *, p), (int *, out))
{
	out[npu_thread_index()] = helper_load(p);
}

/* a 4-byte store one byte past p's alignment */
NPU_KERNEL(misaligned_store, (char *, p))
{
	*(volatile int *)(p + 1) = 1;
}

/* a store just past the end of the block's scratchpad */
NPU_KERNEL_EX(scratch_overrun, 256, 0, 0, (int, unused))
{
	volatile int *s = npu_scratch();

	s[npu_scratch_bytes() / sizeof(int) + unused] = 1;
}

/* a read of the word after the last argument */
NPU_KERNEL(params_overrun, (int *, out))
{
	const volatile unsigned long *a = npu_args();

	out[0] = (int)a[npu_nargs()];
}

/* recursion deeper than the thread's stack */
static __attribute__((noinline)) unsigned deep(unsigned d)
{
	volatile char pad[256];

	pad[0] = (char)d;
	return d ? deep(d - 1) + pad[0] : 0;
}

NPU_KERNEL(stack_overflow, (unsigned *, out), (unsigned, depth))
{
	out[0] = deep(depth);
}

/* out[i] = i: a kernel that works, for graphs */
NPU_KERNEL(iota, (unsigned *, out), (unsigned, n))
{
	unsigned i = npu_block_index() * npu_block_threads() +
		     npu_thread_index();

	if (i < n)
		out[i] = i;
}
