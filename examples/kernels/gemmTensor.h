/* SPDX-License-Identifier: MIT */
/*
 * gemmTensor.h - the shape rules of kernels/gemmTensor.c's GEMMs, shared
 * by the kernels and the programs that launch them (the example, the
 * bench): threads per block and dynamic scratchpad bytes.
 */
#ifndef GEMM_TENSOR_H
#define GEMM_TENSOR_H

#define GEMM_THREAD_TILE	32	/* C rows and columns per thread */
#define GEMM_OUT_BYTES		2048	/* a thread's staging of two C tiles */

/* Threads of a BM x BN block: one per 32 x 32 of C. */
static inline unsigned gemm_threads(unsigned BM, unsigned BN)
{
	return BM / GEMM_THREAD_TILE * (BN / GEMM_THREAD_TILE);
}

/* Synchronization words: the barrier words (the loads', the L2
 * prefetches', one per thread for its output), then one arrival count per
 * stage; then the prefetches' discard row (at most 2 k-steps of a row of
 * A: 512 bytes); the stages start 64-byte aligned after it. */
#define GEMM_DISCARD_BYTES	512

static inline unsigned gemm_discard_offset(unsigned threads, unsigned depth)
{
	return (8 * (2 + threads) + 4 * depth + 7) & ~7u;
}

static inline unsigned gemm_sync_bytes(unsigned threads, unsigned depth)
{
	return (gemm_discard_offset(threads, depth) + GEMM_DISCARD_BYTES +
		63) & ~63u;
}

/* Dynamic scratchpad: the synchronization words, then depth stages of a
 * BM x BK slice of A and a BK x BN slice of B (elem bytes each), which
 * the threads' output staging reuses. */
static inline unsigned long gemm_scratch_bytes(unsigned BM, unsigned BN,
					       unsigned BK, unsigned depth,
					       unsigned elem)
{
	unsigned threads = gemm_threads(BM, BN);
	unsigned long stages = (unsigned long)depth * (BM * BK + BK * BN) * elem;
	unsigned long out = (unsigned long)threads * GEMM_OUT_BYTES;

	return gemm_sync_bytes(threads, depth) + (stages > out ? stages : out);
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
