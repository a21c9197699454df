// SPDX-License-Identifier: MIT
/*
 * LR/SC reservations by physical address (args: mode, w, a, out).
 * mode 0, holder: waits until a[0] != 0 (another launch is storing), takes
 *   a reservation on w[0] (a[2] = 1 says so), lets the storer run for a
 *   while, then SCs 99: out[0] = SC's result, out[1] = w[0] after;
 *   a[1] = 1 tells the storer to stop.
 * mode 1, storer: sets a[0] = 1 and stores to w[0] until a[1] != 0:
 *   out[0] = its stores, out[1] = those made while a[2] != 0.
 * mode 2, alias (2 threads): thread 0 takes a reservation on w[0]; thread 1
 *   stores 77 through a[0], the same word through another VA; thread 0's
 *   SC of 99 then: out[0] = SC's result, out[1] = w[0].
 * mode 3: mode 2 on a word of the block's scratchpad (w, a ignored).
 */
#include "kernel.h"

#define WAIT_CYCLES	4000000000ul	/* bound on every wait */

KERNEL void kmain(unsigned long mode, volatile unsigned int *w,
		  volatile unsigned int *a, unsigned long *out)
{
	unsigned long r = 5, v, t0 = npu_cycles();

	if (mode == 0) {
		while (!a[0] && npu_cycles() - t0 < WAIT_CYCLES)
			;
		__asm__ volatile("lr.w %0, (%1)" : "=r"(v) : "r"(w) : "memory");
		a[2] = 1;
		t0 = npu_cycles();
		while (npu_cycles() - t0 < 20000)
			;
		__asm__ volatile("sc.w %0, %2, (%1)" : "=r"(r)
				 : "r"(w), "r"(99l) : "memory");
		out[0] = r;
		out[1] = w[0];
		a[1] = 1;
		return;
	}
	if (mode == 1) {
		unsigned long n = 0, held = 0;

		a[0] = 1;
		while (!a[1] && npu_cycles() - t0 < WAIT_CYCLES) {
			w[0] = (unsigned int)++n;
			held += a[2] != 0;
		}
		out[0] = n;
		out[1] = held;
		return;
	}
	if (mode == 3) {
		w = npu_scratch();
		a = w;
		if (npu_thread_index() == 0)
			w[0] = 11;
	}
	if (npu_thread_index() == 0) {
		__asm__ volatile("lr.w %0, (%1)" : "=r"(v) : "r"(w) : "memory");
		npu_barrier();
		npu_barrier();
		__asm__ volatile("sc.w %0, %2, (%1)" : "=r"(r)
				 : "r"(w), "r"(99l) : "memory");
		out[0] = r;
		out[1] = w[0];
	} else {
		npu_barrier();
		a[0] = 77;
		npu_barrier();
	}
}
