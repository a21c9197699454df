// SPDX-License-Identifier: MIT
/*
 * c[i] = a[i] + b[i] for i < n, the grid's threads taking every
 * (threads)-th element: a kernel whose accesses go through the MMU page
 * by page, and (c == a) not idempotent, for the device tests that once
 * used the fixed-function VADD.
 */
#include "kernel.h"

KERNEL void kmain(const float *a, const float *b, float *c, unsigned long n)
{
	unsigned long threads = (unsigned long)npu_grid_x() * npu_grid_y() *
				npu_grid_z() * npu_block_threads();
	unsigned long g = (unsigned long)npu_block_index() *
			  npu_block_threads() + npu_thread_index();

	for (unsigned long i = g; i < n; i += threads)
		c[i] = a[i] + b[i];
}
