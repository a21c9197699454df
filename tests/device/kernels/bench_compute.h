/* SPDX-License-Identifier: MIT */
/*
 * The compute-bound loop of npu-isabench, compiled twice: for the device
 * (kernels/bench_compute.c) and for the host (npu-isabench.c), so the two
 * run the same C. Integer and FP work with serial dependences only, so the
 * host compiler cannot vectorise it away.
 */
#ifndef NPU_BENCH_COMPUTE_H
#define NPU_BENCH_COMPUTE_H

static unsigned long bench_compute(unsigned long n, unsigned long seed)
{
	unsigned long x = seed | 1, acc = 0;
	double f = 1.0;

	for (unsigned long i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		acc += (x * 0x9e3779b97f4a7c15ul) >> 29;
		if (x & 0x100)
			f = f * 0.5 + 1.0;
	}
	return acc + (unsigned long)(f * 1000);
}

#endif
