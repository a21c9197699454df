// SPDX-License-Identifier: MIT
/*
 * Every thread spins until n unit cycles have passed since it started;
 * thread 0 of each block records the unit it ran on and its start cycle.
 */
#include "kernel.h"

KERNEL void kmain(unsigned long n, unsigned long *out)
{
	unsigned long start = npu_cycles();

	while (npu_cycles() - start < n)
		;
	if (npu_thread_index() == 0) {
		out[2 * npu_block_index()] = npu_unit();
		out[2 * npu_block_index() + 1] = start;
	}
}
