// SPDX-License-Identifier: MIT
/* Kernels for lib_libc: picolibc's C library and libm on the device. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <npu_kernel.h>

/* out[4 i ..] = expf, sqrtf of |x|, fmaf(x, y, z), and x through memcpy */
NPU_KERNEL(math, (const float *, x), (const float *, y), (const float *, z),
	   (float *, out), (unsigned, n))
{
	unsigned i = npu_block_index() * npu_block_threads() + npu_thread_index();

	if (i >= n)
		return;
	out[4 * i] = expf(x[i]);
	out[4 * i + 1] = sqrtf(fabsf(x[i]));
	out[4 * i + 2] = fmaf(x[i], y[i], z[i]);
	memcpy(&out[4 * i + 3], &x[i], sizeof(float));
}

/* 64 bytes of text per thread */
NPU_KERNEL(format, (char *, text), (const float *, x), (unsigned, n))
{
	unsigned i = npu_block_index() * npu_block_threads() + npu_thread_index();

	if (i < n)
		snprintf(text + 64 * i, 64, "%u|%-5d|%08.3f|%.6e|%s|%#x", i,
			 -(int)i, x[i], x[i], i % 2 ? "odd" : "even", i * 77);
}

/* errno is each thread's own: odd threads overflow strtol, even ones not */
NPU_KERNEL(errnos, (int *, out), (unsigned, n))
{
	unsigned i = npu_block_index() * npu_block_threads() + npu_thread_index();
	long v;

	if (i >= n)
		return;
	errno = 0;
	v = strtol(i % 2 ? "99999999999999999999999" : "12345", NULL, 10);
	npu_barrier();		/* every thread has set its errno */
	out[2 * i] = errno;
	out[2 * i + 1] = v == 12345;
}

/* the device's printf with <stdio.h> included */
NPU_KERNEL(hello, (unsigned, tag))
{
	printf("hello from the device %u\n", tag);
}
