/* SPDX-License-Identifier: MIT */
/*
 * gemmTensor.h - the shape rules of kernels/gemmTensor.c's GEMMs, shared
 * by the kernels and the programs that launch them (the example, the
 * bench): threads per block and dynamic scratchpad bytes.
 */
#ifndef GEMM_TENSOR_H
#define GEMM_TENSOR_H

#define GEMM_THREAD_TILE	32	/* C rows and columns per thread */
#define GEMM_OUT_BYTES		1024	/* a thread's staging of one C tile */

/* Threads of a BM x BN block: one per 32 x 32 of C. */
static inline unsigned gemm_threads(unsigned BM, unsigned BN)
{
	return BM / GEMM_THREAD_TILE * (BN / GEMM_THREAD_TILE);
}

/* Barrier words (the loads', one per thread), 64-byte aligned. */
static inline unsigned gemm_barrier_bytes(unsigned threads)
{
	return (8 * (1 + threads) + 63) & ~63u;
}

/* Dynamic scratchpad: the barriers, then depth stages of a BM x BK slice
 * of A and a BK x BN slice of B (elem bytes each), which the threads'
 * output staging reuses. */
static inline unsigned long gemm_scratch_bytes(unsigned BM, unsigned BN,
					       unsigned BK, unsigned depth,
					       unsigned elem)
{
	unsigned threads = gemm_threads(BM, BN);
	unsigned long stages = (unsigned long)depth * (BM * BK + BK * BN) * elem;
	unsigned long out = (unsigned long)threads * GEMM_OUT_BYTES;

	return gemm_barrier_bytes(threads) + (stages > out ? stages : out);
}

/* Whether the kernels take this shape (M, N, K multiples of the tile). */
static inline int gemm_shape_ok(unsigned M, unsigned N, unsigned K,
				unsigned BM, unsigned BN, unsigned BK,
				unsigned depth)
{
	return BM && BN && BK && depth && BM % GEMM_THREAD_TILE == 0 &&
	       BN % GEMM_THREAD_TILE == 0 && BK % 16 == 0 && M % BM == 0 &&
	       N % BN == 0 && K % BK == 0;
}

#endif /* GEMM_TENSOR_H */
