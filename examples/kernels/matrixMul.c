// SPDX-License-Identifier: MIT
/*
 * matrixMul's kernels: C (M x N) = A (M x K) * B (K x N), row-major.
 * sgemm_naive: one element of C per thread, every operand from device
 * memory. sgemm_tiled: a block computes a T x T tile of C, staging T x T
 * tiles of A and B in the scratchpad (2 * T * T floats of dynamic
 * scratchpad); its P threads compute T * T / P elements each.
 */
#include <npu_kernel.h>

#define MAX_PER_THREAD	64

NPU_KERNEL(sgemm_naive, (const float *, A), (const float *, B), (float *, C),
	   (unsigned, M), (unsigned, N), (unsigned, K))
{
	unsigned i = npu_block_index() * npu_block_threads() + npu_thread_index();
	unsigned r = i / N, c = i % N;
	float s = 0;

	if (r >= M)
		return;
	for (unsigned k = 0; k < K; k++)
		s += A[r * K + k] * B[k * N + c];
	C[r * N + c] = s;
}

NPU_KERNEL(sgemm_tiled, (const float *, A), (const float *, B), (float *, C),
	   (unsigned, M), (unsigned, N), (unsigned, K), (unsigned, T))
{
	float *As = npu_scratch(), *Bs = As + T * T;
	unsigned P = npu_block_threads(), tid = npu_thread_index();
	unsigned row0 = npu_block_y() * T, col0 = npu_block_x() * T;
	unsigned per = T * T / P;
	float acc[MAX_PER_THREAD];

	for (unsigned o = 0; o < per; o++)
		acc[o] = 0;
	for (unsigned k0 = 0; k0 < K; k0 += T) {
		for (unsigned e = tid; e < T * T; e += P) {
			unsigned r = e / T, c = e % T;

			As[e] = row0 + r < M && k0 + c < K ?
				A[(row0 + r) * K + k0 + c] : 0;
			Bs[e] = k0 + r < K && col0 + c < N ?
				B[(k0 + r) * N + col0 + c] : 0;
		}
		npu_barrier();
		for (unsigned o = 0; o < per; o++) {
			unsigned e = tid + o * P, r = e / T, c = e % T;
			float s = 0;

			for (unsigned k = 0; k < T; k++)
				s += As[r * T + k] * Bs[k * T + c];
			acc[o] += s;
		}
		npu_barrier();
	}
	for (unsigned o = 0; o < per; o++) {
		unsigned e = tid + o * P, r = row0 + e / T, c = col0 + e % T;

		if (r < M && c < N)
			C[r * N + c] = acc[o];
	}
}
