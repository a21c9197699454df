// SPDX-License-Identifier: MIT
/*
 * LR/SC against another thread's store (args: w, out): thread 0 takes a
 * reservation on w[0], thread 1 then stores to w[0] (a plain sw), then
 * thread 0's SC must fail. out[0] = SC's result, out[1] = w[0] after.
 * The same again with thread 1 storing by its own LR/SC on w[1]:
 * out[2], out[3].
 */
#include "kernel.h"

KERNEL void kmain(unsigned int *w, unsigned long *out)
{
	unsigned t = npu_thread_index();
	unsigned long r = 5, v;

	if (t == 0)
		__asm__ volatile("lr.w %0, (%1)" : "=r"(v) : "r"(w) : "memory");
	npu_barrier();
	if (t == 1)
		w[0] = 77;
	npu_barrier();
	if (t == 0) {
		__asm__ volatile("sc.w %0, %2, (%1)" : "=r"(r)
				 : "r"(w), "r"(99l) : "memory");
		out[0] = r;
		out[1] = w[0];
	}
	npu_barrier();
	if (t == 0)
		__asm__ volatile("lr.w %0, (%1)" : "=r"(v) : "r"(w + 1) : "memory");
	npu_barrier();
	if (t == 1)
		__asm__ volatile("lr.w %0, (%2)\n\tsc.w %1, %3, (%2)"
				 : "=&r"(v), "=&r"(r) : "r"(w + 1), "r"(66l)
				 : "memory");
	npu_barrier();
	if (t == 0) {
		__asm__ volatile("sc.w %0, %2, (%1)" : "=r"(r)
				 : "r"(w + 1), "r"(99l) : "memory");
		out[2] = r;
		out[3] = w[1];
	}
}
