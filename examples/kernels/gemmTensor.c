// SPDX-License-Identifier: MIT
/*
 * gemmTensor's kernels: C (M x N, f32) = A (M x K) * B (K x N), row-major,
 * on the tensor engine, with the tile DMA fetching the next k-steps' tiles
 * of A and B while the tensor pipe works on the current ones
 * (Documentation/lib/kernels.rst, "A double-buffered tiled GEMM").
 *
 * gemm_bf16: A and B hold bfloat16 (uint16_t bits); gemm_f32: f32.
 * A block computes a BM x BN tile of C, one thread per 32 x 32 of it (a
 * 2 x 2 group of 16 x 16 accumulator tiles), so BM * BN / 1024 threads.
 * Each k-step brings a BM x BK slice of A and a BK x BN slice of B into
 * one of `depth` stages of the scratchpad; step kt + depth is issued into
 * the stage step kt used as soon as every thread is done with it.
 * M % BM, N % BN, K % BK must be 0; BM, BN multiples of 32, BK of 16.
 * Dynamic scratchpad: gemm_scratch_bytes() (gemmTensor.h).
 */
#include <npu_kernel.h>

#include "gemmTensor.h"

#define T		NPU_TILE_DIM

/* tile registers: four accumulators, two A tiles, two B tiles */
#define ACC(i, j)	((i) * 2 + (j))
#define TA(i)		(4 + (i))
#define TB(j)		(6 + (j))

/* Scratchpad: barrier words (the loads', then one per thread for its
 * output), then the stages; each thread's output tile reuses the stages
 * once the last k-step is done. */
struct gemm_shape {
	unsigned M, N, K, BM, BN, BK, depth, esize, elem;
	struct npu_tdma_barrier *bars;
	unsigned char *stage;
	unsigned long stage_bytes, a_bytes;
};


/* Thread 0: the DMA of k-step kt's slices of A and B into its stage. */
static void fetch(const struct gemm_shape *g, const void *a, const void *b,
		  unsigned row0, unsigned col0, unsigned kt)
{
	const unsigned char *A = a, *B = b;
	unsigned char *s = g->stage + (kt % g->depth) * g->stage_bytes;
	unsigned long k0 = (unsigned long)kt * g->BK;

	npu_tdma_2d(&g->bars[0], s,
		    (unsigned long)(A + ((unsigned long)row0 * g->K + k0) * g->elem),
		    g->BK * g->elem, g->BM, (unsigned long)g->K * g->elem,
		    g->BK * g->elem, 0);
	npu_tdma_2d(&g->bars[0], s + g->a_bytes,
		    (unsigned long)(B + (k0 * g->N + col0) * g->elem),
		    g->BN * g->elem, g->BK, (unsigned long)g->N * g->elem,
		    g->BN * g->elem, 0);
}

/* One MMA of the kernel's type (the branch folds away: inlined with a
 * constant). */
#define MMA(bf16, c, a, b)						\
	do {								\
		if (bf16)						\
			npu_mma_bf16(c, a, b);				\
		else							\
			npu_mma_f32(c, a, b);				\
	} while (0)

/* This thread's 2 x 2 accumulators += its 32 rows of stage s's A slice x
 * its 32 columns of the B slice, 16 of k at a time: 4 tile loads feed 4
 * MMAs, each A and B tile used twice. */
static inline __attribute__((always_inline)) void
compute(const struct gemm_shape *g, const unsigned char *s, unsigned r0,
	unsigned c0, int bf16)
{
	unsigned a_stride = g->BK * g->elem, b_stride = g->BN * g->elem;
	const unsigned char *a = s + (unsigned long)r0 * a_stride;
	const unsigned char *b = s + g->a_bytes + (unsigned long)c0 * g->elem;

	for (unsigned kk = 0; kk < g->BK; kk += T) {
		const unsigned char *ak = a + kk * g->elem;
		const unsigned char *bk = b + (unsigned long)kk * b_stride;

		npu_tile_load(TA(0), ak, a_stride, g->esize);
		npu_tile_load(TB(0), bk, b_stride, g->esize);
		MMA(bf16, ACC(0, 0), TA(0), TB(0));
		npu_tile_load(TB(1), bk + T * g->elem, b_stride, g->esize);
		MMA(bf16, ACC(0, 1), TA(0), TB(1));
		npu_tile_load(TA(1), ak + (unsigned long)T * a_stride, a_stride,
			      g->esize);
		MMA(bf16, ACC(1, 0), TA(1), TB(0));
		MMA(bf16, ACC(1, 1), TA(1), TB(1));
	}
}

/* A 16 x 16 f32 tile from the scratchpad to C (row stride N), the n-th
 * copy on bar; waited for, as the next tile reuses the scratchpad. */
static void c_out(struct npu_tdma_barrier *bar, unsigned char *out, float *C,
		  unsigned N, unsigned n)
{
	npu_tdma_2d(bar, out, (unsigned long)C, T * 4, T, (unsigned long)N * 4,
		    T * 4, 1);
	npu_tdma_wait(bar, n);
}

/* The pipeline over k, then C out through the scratchpad. */
static inline __attribute__((always_inline)) void
gemm(const void *A, const void *B, float *C, unsigned M, unsigned N,
     unsigned K, unsigned BM, unsigned BN, unsigned BK, unsigned depth,
     int bf16)
{
	unsigned elem = bf16 ? 2 : 4;
	struct gemm_shape g = {
		.M = M, .N = N, .K = K, .BM = BM, .BN = BN, .BK = BK,
		.depth = depth, .elem = elem,
		.esize = bf16 ? NPU_TILE_E16 : NPU_TILE_E32,
		.bars = npu_scratch(),
		.stage = (unsigned char *)npu_scratch() + gemm_barrier_bytes(npu_block_threads()),
		.a_bytes = (unsigned long)BM * BK * elem,
	};
	unsigned tid = npu_thread_index(), per_row = BN / GEMM_THREAD_TILE;
	unsigned row0 = npu_block_y() * BM, col0 = npu_block_x() * BN;
	unsigned r0 = tid / per_row * GEMM_THREAD_TILE, c0 = tid % per_row * GEMM_THREAD_TILE;
	unsigned KT = K / BK, kt;
	unsigned char *out;

	g.stage_bytes = g.a_bytes + (unsigned long)BK * BN * elem;
	g.bars[1 + tid].count = 0;
	if (tid == 0) {		/* fill the pipeline: steps 0 .. depth-1 */
		g.bars[0].count = 0;
		for (kt = 0; kt < depth && kt < KT; kt++)
			fetch(&g, A, B, row0, col0, kt);
	}
	npu_tile_zero(ACC(0, 0));
	npu_tile_zero(ACC(0, 1));
	npu_tile_zero(ACC(1, 0));
	npu_tile_zero(ACC(1, 1));
	npu_barrier();		/* the barrier words are set */
	for (kt = 0; kt < KT; kt++) {
		/* copies complete in issue order: 2 per step */
		npu_tdma_wait(&g.bars[0], 2 * (kt + 1));
		compute(&g, g.stage + (kt % depth) * g.stage_bytes, r0, c0, bf16);
		npu_barrier();	/* every thread is done with this stage */
		if (tid == 0 && kt + depth < KT)
			fetch(&g, A, B, row0, col0, kt + depth);
	}
	/* C: each accumulator through this thread's 1 KiB of the (now
	 * free) stages, then a DMA to memory on its own barrier word */
	out = g.stage + (unsigned long)tid * GEMM_OUT_BYTES;
	C += (unsigned long)(row0 + r0) * N + col0 + c0;
	npu_tile_store(ACC(0, 0), out, T * 4, NPU_TILE_E32);
	c_out(&g.bars[1 + tid], out, C, N, 1);
	npu_tile_store(ACC(0, 1), out, T * 4, NPU_TILE_E32);
	c_out(&g.bars[1 + tid], out, C + T, N, 2);
	npu_tile_store(ACC(1, 0), out, T * 4, NPU_TILE_E32);
	c_out(&g.bars[1 + tid], out, C + (unsigned long)T * N, N, 3);
	npu_tile_store(ACC(1, 1), out, T * 4, NPU_TILE_E32);
	c_out(&g.bars[1 + tid], out, C + (unsigned long)T * N + T, N, 4);
}

NPU_KERNEL(gemm_bf16, (const unsigned short *, A),
	   (const unsigned short *, B), (float *, C), (unsigned, M),
	   (unsigned, N), (unsigned, K), (unsigned, BM), (unsigned, BN),
	   (unsigned, BK), (unsigned, depth))
{
	gemm(A, B, C, M, N, K, BM, BN, BK, depth, 1);
}

NPU_KERNEL(gemm_f32, (const float *, A), (const float *, B), (float *, C),
	   (unsigned, M), (unsigned, N), (unsigned, K), (unsigned, BM),
	   (unsigned, BN), (unsigned, BK), (unsigned, depth))
{
	gemm(A, B, C, M, N, K, BM, BN, BK, depth, 0);
}

/*
 * One point of a tuning space (npu_tune_space builds this file with
 * -DTILE_M=.. -DTILE_N=.. -DTILE_K=.. -DDEPTH=.. -DBF16=0|1): the same
 * GEMM with its shape fixed at compile time, so the index arithmetic
 * folds.
 */
#ifdef TILE_M
NPU_KERNEL(gemm_point, (const void *, A), (const void *, B), (float *, C),
	   (unsigned, M), (unsigned, N), (unsigned, K))
{
	gemm(A, B, C, M, N, K, TILE_M, TILE_N, TILE_K, DEPTH, BF16);
}
#endif
