// SPDX-License-Identifier: MIT
/*
 * Blocks placed in the middle of a quantum (args: mode, x, flag, out).
 * mode 0: every thread waits until *flag != 0 (bounded), then ends.
 * mode 1: out[0] = *x, out[1] = the unit; then *x = 0xbad.
 */
#include "kernel.h"

KERNEL void kmain(unsigned long mode, volatile unsigned int *x,
		  volatile unsigned int *flag, unsigned long *out)
{
	unsigned long t0 = npu_cycles();

	if (mode == 0) {
		while (!*flag && npu_cycles() - t0 < 4000000000ul)
			;
		return;
	}
	out[1] = npu_unit();
	out[0] = *x;
	*x = 0xbad;
}
