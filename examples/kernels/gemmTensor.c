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
 * one of `depth` stages of the scratchpad; step kt + depth goes into the
 * stage step kt used as soon as every thread has loaded its tiles from it:
 * the last thread to arrive on the stage's count issues the copies, so no
 * thread waits for another but for the data (no block barrier per step).
 * Each block also brings its share of A panels into the L2 ahead of the
 * blocks that will read them (prefetch_l2()).
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

/* Scratchpad (gemmTensor.h): barrier words (the loads', the prefetches',
 * then one per thread for its output), the stages' arrival counts, the
 * prefetches' discard row, then the stages; each thread's output staging
 * reuses the stages once the last k-step is done. */
#define BAR_LOADS	0
#define BAR_PREFETCH	1
#define BAR_OUT(tid)	(2 + (tid))

/* k-steps ahead of the stage fetch that the first row of blocks
 * prefetches its own panel (prefetch_l2) */
#define PREFETCH_AHEAD	3

struct gemm_shape {
	unsigned M, N, K, BM, BN, BK, KT, depth, esize, elem, threads;
	struct npu_tdma_barrier *bars;
	unsigned *arrived;
	unsigned char *discard, *stage;
	unsigned long stage_bytes, a_bytes;
};

/*
 * The blocks of a row of C all read its panel of A (BM rows), each from
 * its own scratchpad; the first to ask for a sector pays device memory for
 * it, the others get it from the L2. Left alone, one unit pays for every
 * sector of a panel, at the start of its block, while its own previous
 * block's C still goes out on its share of device memory. So each block
 * brings its 1/grid_x share of the panel's rows into the L2 ahead of need
 * (a copy whose rows all land on one discard row of the scratchpad):
 * - blocks of the first row (the L2 is cold): of their own panel, k-step
 *   kt + PREFETCH_AHEAD while the stage fetch of step kt goes;
 * - every block, in the second half of its k-steps (when its share of
 *   device memory is free again): the next row's panel, two k-steps a
 *   step.
 * Only the timing depends on it: what the L2 serves, not what is copied.
 */
static void prefetch_l2(const struct gemm_shape *g, const unsigned char *A,
			unsigned row0, unsigned kt)
{
	unsigned share = g->BM / npu_grid_x(), half = g->KT / 2, p;
	unsigned long bytes = (unsigned long)g->BK * g->elem;

	if (2 * bytes > GEMM_DISCARD_BYTES)	/* k-steps past 256 bytes */
		return;
	if (npu_block_y() == 0 && kt + PREFETCH_AHEAD < g->KT) {
		p = kt + PREFETCH_AHEAD;
	} else if (kt >= half && row0 + g->BM < g->M) {
		row0 += g->BM;
		p = 2 * (kt - half);
		if (p + 1 < g->KT)
			bytes *= 2;
	} else {
		return;
	}
	if (share)
		npu_tdma_2d(&g->bars[BAR_PREFETCH], g->discard,
			    (unsigned long)(A + ((unsigned long)(row0 + npu_block_x() * share) *
						  g->K + (unsigned long)p * g->BK) * g->elem),
			    bytes, share, (unsigned long)g->K * g->elem, 0, 0);
}

/* The DMA of k-step kt's slices of A and B into its stage (issued in step
 * order: two copies per step on the loads' barrier word), and the L2
 * prefetch that goes with it. */
static void fetch(const struct gemm_shape *g, const void *a, const void *b,
		  unsigned row0, unsigned col0, unsigned kt)
{
	const unsigned char *A = a, *B = b;
	unsigned char *s = g->stage + (kt % g->depth) * g->stage_bytes;
	unsigned long k0 = (unsigned long)kt * g->BK;

	npu_tdma_2d(&g->bars[BAR_LOADS], s,
		    (unsigned long)(A + ((unsigned long)row0 * g->K + k0) * g->elem),
		    g->BK * g->elem, g->BM, (unsigned long)g->K * g->elem,
		    g->BK * g->elem, 0);
	npu_tdma_2d(&g->bars[BAR_LOADS], s + g->a_bytes,
		    (unsigned long)(B + (k0 * g->N + col0) * g->elem),
		    g->BN * g->elem, g->BK, (unsigned long)g->N * g->elem,
		    g->BN * g->elem, 0);
	prefetch_l2(g, A, row0, kt);
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

/*
 * Step kt: this thread's 2 x 2 accumulators += its 32 rows of the stage's
 * A slice x its 32 columns of the B slice, 16 of k at a time: 4 tile loads
 * feed 4 MMAs, each A and B tile used twice. Right after its last tile
 * load the thread arrives on the stage's count; the last of the block to
 * arrive refills the stage with step kt + depth (every thread has read
 * it, and a thread arrives at step kt + 1 only after its refill of kt).
 */
static inline __attribute__((always_inline)) void
compute(const struct gemm_shape *g, const void *A, const void *B,
	unsigned row0, unsigned col0, unsigned kt, unsigned r0, unsigned c0,
	int bf16)
{
	unsigned si = kt % g->depth;
	const unsigned char *s = g->stage + si * g->stage_bytes;
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
		if (kk + T == g->BK &&
		    npu_atomic_add(&g->arrived[si], 1) + 1 ==
		    g->threads * (kt / g->depth + 1) &&
		    kt + g->depth < g->KT)
			fetch(g, A, B, row0, col0, kt + g->depth);
		MMA(bf16, ACC(1, 0), TA(1), TB(0));
		MMA(bf16, ACC(1, 1), TA(1), TB(1));
	}
}

/* Accumulators (i, 0) and (i, 1), side by side in the thread's 2 KiB of
 * staging, to C's 16 rows from C (row stride N): copy i + 1 on bar;
 * waited for, as the next pair reuses the staging. */
static inline __attribute__((always_inline)) void
c_out(struct npu_tdma_barrier *bar, unsigned char *out, float *C, unsigned N,
      unsigned i)
{
	npu_tile_store(ACC(i, 0), out, 2 * T * 4, NPU_TILE_E32);
	npu_tile_store(ACC(i, 1), out + T * 4, 2 * T * 4, NPU_TILE_E32);
	npu_tdma_2d(bar, out, (unsigned long)C, 2 * T * 4, T,
		    (unsigned long)N * 4, 2 * T * 4, 1);
	npu_tdma_wait(bar, i + 1);
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
		.KT = K / BK,
		.depth = depth, .elem = elem,
		.esize = bf16 ? NPU_TILE_E16 : NPU_TILE_E32,
		.threads = npu_block_threads(),
		.bars = npu_scratch(),
		.discard = (unsigned char *)npu_scratch() +
			   gemm_discard_offset(npu_block_threads(), depth),
		.stage = (unsigned char *)npu_scratch() +
			 gemm_sync_bytes(npu_block_threads(), depth),
		.a_bytes = (unsigned long)BM * BK * elem,
	};
	unsigned tid = npu_thread_index(), per_row = BN / GEMM_THREAD_TILE;
	unsigned row0 = npu_block_y() * BM, col0 = npu_block_x() * BN;
	unsigned r0 = tid / per_row * GEMM_THREAD_TILE, c0 = tid % per_row * GEMM_THREAD_TILE;
	unsigned KT = K / BK, kt;
	unsigned char *out;

	g.stage_bytes = g.a_bytes + (unsigned long)BK * BN * elem;
	g.arrived = (unsigned *)(g.bars + BAR_OUT(g.threads));
	g.bars[BAR_OUT(tid)].count = 0;
	if (tid == 0) {		/* fill the pipeline: steps 0 .. depth-1 */
		g.bars[BAR_LOADS].count = 0;
		g.bars[BAR_PREFETCH].count = 0;
		for (kt = 0; kt < depth; kt++)
			g.arrived[kt] = 0;
		for (kt = 0; kt < depth && kt < KT; kt++)
			fetch(&g, A, B, row0, col0, kt);
	}
	npu_tile_zero(ACC(0, 0));
	npu_tile_zero(ACC(0, 1));
	npu_tile_zero(ACC(1, 0));
	npu_tile_zero(ACC(1, 1));
	npu_barrier();		/* the synchronization words are set */
	for (kt = 0; kt < KT; kt++) {
		/* copies complete in issue order: 2 per step */
		npu_tdma_wait(&g.bars[BAR_LOADS], 2 * (kt + 1));
		compute(&g, A, B, row0, col0, kt, r0, c0, bf16);
	}
	npu_barrier();		/* every thread is done with the stages */
	/* C: two accumulators at a time through this thread's 2 KiB of the
	 * (now free) stages, then a DMA to memory on its own barrier word */
	out = g.stage + (unsigned long)tid * GEMM_OUT_BYTES;
	C += (unsigned long)(row0 + r0) * N + col0 + c0;
	c_out(&g.bars[BAR_OUT(tid)], out, C, N, 0);
	c_out(&g.bars[BAR_OUT(tid)], out, C + (unsigned long)T * N, N, 1);
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
