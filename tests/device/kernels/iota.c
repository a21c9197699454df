// SPDX-License-Identifier: MIT
/* out[g] = g * mul + add for every thread g of the grid (1-D). */
#include "kernel.h"

KERNEL void kmain(unsigned int *out, unsigned long mul, unsigned long add)
{
	unsigned g = npu_block_index() * npu_block_threads() +
		     npu_thread_index();

	out[g] = g * mul + add;
}
