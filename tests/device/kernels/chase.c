// SPDX-License-Identifier: MIT
/* Follow a linked list of n pointers: every load waits for the last one. */
#include "kernel.h"

KERNEL void kmain(unsigned long *head, unsigned long n, unsigned long *out)
{
	unsigned long *p = head;

	for (unsigned long i = 0; i < n; i++)
		p = (unsigned long *)*p;
	out[npu_thread_index()] = (unsigned long)p;
}
