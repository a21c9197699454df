// SPDX-License-Identifier: MIT
/* Kernels for lib_hotspots: where the profiler's PC samples land. */
#include <npu_kernel.h>

/* the lines of the kernels' bodies, told to the test by body_lines */
enum {
	SAXPY_BODY_LINE = __LINE__ + 12,
	SAXPY1_FIRST_LINE = __LINE__ + 30,	/* its index line */
	SAXPY1_LAST_LINE = __LINE__ + 32,	/* y[i] = ... */
};

/* grid-stride SAXPY: each thread runs the loop for many elements */
NPU_KERNEL(saxpy, (float, a), (const float *, x), (float *, y), (unsigned, n))
{
	unsigned stride = npu_grid_x() * npu_block_threads();

	for (unsigned i = npu_block_index() * npu_block_threads() +
			  npu_thread_index(); i < n; i += stride)
		y[i] = a * x[i] + y[i];
}

NPU_KERNEL(body_lines, (unsigned *, out))
{
	out[0] = SAXPY_BODY_LINE;
	out[1] = SAXPY1_FIRST_LINE;
	out[2] = SAXPY1_LAST_LINE;
}

/* no body: every sample is in NPU_KERNEL's entry stub */
NPU_KERNEL(empty, (unsigned, unused))
{
	(void)unused;
}

/* one element per thread, as a first kernel is often written */
NPU_KERNEL(saxpy1, (float, a), (const float *, x), (float *, y), (unsigned, n))
{
	unsigned i = npu_block_index() * npu_block_threads() + npu_thread_index();

	if (i < n)
		y[i] = a * x[i] + y[i];
}
