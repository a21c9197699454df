// SPDX-License-Identifier: MIT
/*
 * Thread 0 works for n iterations before the barrier, the others arrive at
 * once; after it every thread reads what thread 0 left in the scratchpad.
 */
#include "kernel.h"

KERNEL void kmain(unsigned long *out, unsigned long n)
{
	volatile unsigned long *shared = npu_scratch();
	unsigned t = npu_thread_index();

	if (t == 0) {
		unsigned long acc = 0;

		for (unsigned long i = 0; i < n; i++)
			acc += i ^ (acc >> 3);
		shared[0] = acc + 1;
	}
	npu_barrier();
	out[npu_block_index() * npu_block_threads() + t] = shared[0];
}
