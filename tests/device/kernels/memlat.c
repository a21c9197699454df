// SPDX-License-Identifier: MIT
/*
 * Latency-bound: each thread sums n words of a device-memory array, one
 * load per iteration; threads are independent, so resident threads hide
 * each other's load latency.
 */
#include "kernel.h"

KERNEL void kmain(const unsigned int *a, unsigned long n, unsigned long mask,
		  unsigned long *out)
{
	unsigned t = npu_block_index() * npu_block_threads() +
		     npu_thread_index();
	unsigned long sum = 0, i = t * 16;

	for (unsigned long k = 0; k < n; k++) {
		sum += a[i & mask];
		i += 17;
	}
	out[t] = sum;
}
