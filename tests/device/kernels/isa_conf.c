// SPDX-License-Identifier: MIT
/*
 * Instruction conformance: run the table of conformance.c cases (args:
 * cases, results, n); thread t of the block takes cases t, t + T, ...
 */
#include "kernel.h"
#include "../conformance.c"

KERNEL void kmain(const struct conf_case *cases, struct conf_res *res,
		  unsigned long n)
{
	unsigned long i;

	for (i = npu_thread_index(); i < n; i += npu_block_threads()) {
		uint32_t fl;

		res[i].r = conf_eval(&cases[i], &fl);
		res[i].flags = fl;
		res[i].done = 1;
	}
}
