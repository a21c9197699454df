// SPDX-License-Identifier: MIT
/* A dependent chain of n fused multiply-adds: every one waits for the last. */
#include "kernel.h"

KERNEL void kmain(double *out, unsigned long n)
{
	double x = 1.0;

#pragma clang loop unroll_count(8)
	for (unsigned long i = 0; i < n; i++)
		x = x * 0.999 + 0.5;	/* fmadd.d: clang contracts it */
	out[npu_block_index() * npu_block_threads() + npu_thread_index()] = x;
}
