// SPDX-License-Identifier: MIT
/*
 * Atomics from many threads of several blocks on one set of words
 * (args: w, swaps, iters). Every thread of the grid, g = its global
 * index, does iters rounds of AMOs and LR/SC compare-exchange loops;
 * swaps[g] gets the sum of the values its exchanges returned.
 */
#include "kernel.h"

struct atom {
	unsigned int add32, cas32;
	int min32, max32;
	unsigned long add64, cas64, minu64, maxu64;
	unsigned long or64, and64, xor64, xchg64;
	unsigned int or32, and32, xor32, xchg32;
};

static void cas_inc32(unsigned int *p)
{
	unsigned int old = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (!__atomic_compare_exchange_n(p, &old, old + 1, 0,
					    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		;
}

static void cas_add64(unsigned long *p, unsigned long v)
{
	unsigned long old = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (!__atomic_compare_exchange_n(p, &old, old + v, 0,
					    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		;
}

KERNEL void kmain(struct atom *w, unsigned long *swaps, unsigned long iters)
{
	unsigned long g = npu_block_index() * npu_block_threads() +
			  npu_thread_index();
	unsigned long sum = 0, i;

	for (i = 0; i < iters; i++) {
		unsigned long k = g * iters + i;

		__atomic_fetch_add(&w->add32, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&w->add64, 0x100000001ul, __ATOMIC_SEQ_CST);
		cas_inc32(&w->cas32);
		cas_add64(&w->cas64, 0x10000000ul);
		__atomic_fetch_min(&w->min32, (int)(k * 7) - 5000,
				   __ATOMIC_RELAXED);
		__atomic_fetch_max(&w->max32, (int)(k * 7) - 5000,
				   __ATOMIC_RELAXED);
		__atomic_fetch_min(&w->minu64, k * 0x9e3779b97f4a7c15ul,
				   __ATOMIC_RELAXED);
		__atomic_fetch_max(&w->maxu64, k * 0x9e3779b97f4a7c15ul,
				   __ATOMIC_RELAXED);
		__atomic_fetch_or(&w->or64, 1ul << (k % 64), __ATOMIC_RELAXED);
		__atomic_fetch_and(&w->and64, ~(1ul << (k % 61)),
				   __ATOMIC_RELAXED);
		__atomic_fetch_xor(&w->xor64, k * 0x2545f4914f6cdd1dul,
				   __ATOMIC_RELAXED);
		__atomic_fetch_or(&w->or32, 1u << (k % 32), __ATOMIC_RELAXED);
		__atomic_fetch_and(&w->and32, ~(1u << (k % 29)),
				   __ATOMIC_RELAXED);
		__atomic_fetch_xor(&w->xor32, (unsigned int)(k * 2654435761u),
				   __ATOMIC_RELAXED);
		sum += __atomic_exchange_n(&w->xchg64, k + 1, __ATOMIC_ACQ_REL);
		sum += (unsigned long)__atomic_exchange_n(&w->xchg32,
							  (unsigned int)(k + 1) << 8,
							  __ATOMIC_ACQ_REL) << 20;
	}
	swaps[g] = sum;
}
