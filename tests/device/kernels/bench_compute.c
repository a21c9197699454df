// SPDX-License-Identifier: MIT
/* npu-isabench's kernel: out[0] = bench_compute(n, seed). */
#include "kernel.h"
#include "bench_compute.h"

KERNEL void kmain(unsigned long *out, unsigned long n, unsigned long seed)
{
	out[npu_thread_index()] = bench_compute(n, seed);
}
