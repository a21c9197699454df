// SPDX-License-Identifier: MIT
/*
 * A tunable SGEMM for lib_tune_space: C (M x N) = A (M x K) * B (K x N),
 * row-major. A block of P threads computes a TM x TN tile of C, staging
 * TM x TK tiles of A and TK x TN tiles of B in the scratchpad. The tuner
 * builds it with -DTM=.. -DTN=.. -DTK=.. -DP=..; M, N, K must be
 * multiples of the tiles, and TM * TN a multiple of P.
 */
#include <npu_kernel.h>

#ifndef TM
#define TM 4
#endif
#ifndef TN
#define TN 4
#endif
#ifndef TK
#define TK 4
#endif
#ifndef P
#define P 4
#endif

#define PER (TM * TN / P)	/* elements of C per thread */

NPU_KERNEL_EX(sgemm, (TM * TK + TK * TN) * 4, P, 0, (const float *, A),
	      (const float *, B), (float *, C), (unsigned, M), (unsigned, N),
	      (unsigned, K))
{
	float *As = npu_scratch(), *Bs = As + TM * TK;
	unsigned tid = npu_thread_index();
	unsigned row0 = npu_block_y() * TM, col0 = npu_block_x() * TN;
	float acc[PER];

	(void)M;
	for (unsigned o = 0; o < PER; o++)
		acc[o] = 0;
	for (unsigned k0 = 0; k0 < K; k0 += TK) {
		for (unsigned e = tid; e < TM * TK; e += P)
			As[e] = A[(row0 + e / TK) * K + k0 + e % TK];
		for (unsigned e = tid; e < TK * TN; e += P)
			Bs[e] = B[(k0 + e / TN) * N + col0 + e % TN];
		npu_barrier();
		for (unsigned o = 0; o < PER; o++) {
			unsigned e = tid + o * P, r = e / TN, c = e % TN;
			float s = 0;

			for (unsigned k = 0; k < TK; k++)
				s += As[r * TK + k] * Bs[k * TN + c];
			acc[o] += s;
		}
		npu_barrier();
	}
	for (unsigned o = 0; o < PER; o++) {
		unsigned e = tid + o * P;

		C[(row0 + e / TN) * N + col0 + e % TN] = acc[o];
	}
}
