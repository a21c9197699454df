// SPDX-License-Identifier: MIT
/*
 * Code 16 and 32 pages apart (args: out, n, pages): thread t loops in
 * kmain's page if t % pages is 0, in far_sum (64 KiB on) if 1, in
 * farther_sum (128 KiB on) if 2, so the threads' pages map to one set of
 * a decoded-code cache of 16 pages. out[t] = the thread's sum.
 */
#include "kernel.h"

__attribute__((noinline, section(".text.far"), aligned(65536)))
static unsigned long far_sum(unsigned long n)
{
	unsigned long acc = 7;

	for (unsigned long i = 0; i < n; i++)
		acc = acc * 3 + (i ^ 0x55);
	return acc;
}

__attribute__((noinline, section(".text.farther"), aligned(65536)))
static unsigned long farther_sum(unsigned long n)
{
	unsigned long acc = 5;

	for (unsigned long i = 0; i < n; i++)
		acc = acc * 7 + (i ^ 0x33);
	return acc;
}

KERNEL void kmain(unsigned long *out, unsigned long n, unsigned long pages)
{
	unsigned t = npu_thread_index();
	unsigned long which = pages > 1 ? t % pages : 0, acc = 1;

	if (which == 1) {
		out[t] = far_sum(n);
		return;
	}
	if (which == 2) {
		out[t] = farther_sum(n);
		return;
	}
	for (unsigned long i = 0; i < n; i++)
		acc = acc * 5 + (i ^ 0xaa);
	out[t] = acc;
}
