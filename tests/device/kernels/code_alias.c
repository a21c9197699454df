// SPDX-License-Identifier: MIT
/*
 * Code 16 pages apart (args: out, n): even threads loop in kmain's page,
 * odd ones in far_sum, 64 KiB further on, so the two loops' pages share
 * an entry of a 16-page decoded-code cache. out[t] = the thread's sum.
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

KERNEL void kmain(unsigned long *out, unsigned long n)
{
	unsigned t = npu_thread_index();
	unsigned long acc = 1;

	if (t & 1) {
		out[t] = far_sum(n);
		return;
	}
	for (unsigned long i = 0; i < n; i++)
		acc = acc * 5 + (i ^ 0xaa);
	out[t] = acc;
}
