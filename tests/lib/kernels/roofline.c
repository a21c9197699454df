// SPDX-License-Identifier: MIT
/*
 * Kernels of lib_roofline, one thread each, whose tensor counters can be
 * counted by hand:
 * counted: one tile pair in by DMA, one f32 MMA (C = A x B), two bf16
 *   MMAs on another accumulator, C out by DMA.
 * mma_loop: one tile pair in, n f32 MMAs on it, the accumulator out:
 *   many operations per byte (compute-bound).
 * stream: n tiles of f32 in by DMA, one MMA: few operations per byte
 *   (memory-bound).
 * Dynamic scratchpad: 3 KiB plus 8 bytes for the barrier.
 */
#include <npu_kernel.h>

#define TILE_BYTES	(NPU_TILE_CELLS * 4)
#define ROW_BYTES	(NPU_TILE_DIM * 4)

struct smem {
	struct npu_tdma_barrier bar;
	float a[NPU_TILE_CELLS], b[NPU_TILE_CELLS], c[NPU_TILE_CELLS];
};

static void tile_in(struct smem *s, float *dst, const float *src)
{
	npu_tdma_2d(&s->bar, dst, (unsigned long)src, ROW_BYTES, NPU_TILE_DIM,
		    ROW_BYTES, ROW_BYTES, 0);
}

/* s->a and s->b into tiles 1 and 2. */
static void ab_load(struct smem *s)
{
	npu_tile_load(1, s->a, ROW_BYTES, NPU_TILE_E32);
	npu_tile_load(2, s->b, ROW_BYTES, NPU_TILE_E32);
}

/* A and B in by DMA (the barrier's first two copies), then loaded. */
static void ab_in(struct smem *s, const float *A, const float *B)
{
	s->bar.count = 0;
	tile_in(s, s->a, A);
	tile_in(s, s->b, B);
	npu_tdma_wait(&s->bar, 2);
	ab_load(s);
}

static void c_out(struct smem *s, float *C, unsigned done)
{
	npu_tile_store(0, s->c, ROW_BYTES, NPU_TILE_E32);
	npu_tdma_2d(&s->bar, s->c, (unsigned long)C, ROW_BYTES, NPU_TILE_DIM,
		    ROW_BYTES, ROW_BYTES, 1);
	npu_tdma_wait(&s->bar, done + 1);
}

NPU_KERNEL(counted, (const float *, A), (const float *, B), (float *, C))
{
	struct smem *s = npu_scratch();

	ab_in(s, A, B);
	npu_mma_f32(0, 1, 2);
	npu_mma_bf16(3, 1, 2);
	npu_mma_bf16(3, 1, 2);
	c_out(s, C, 2);
}

NPU_KERNEL(mma_loop, (const float *, A), (const float *, B), (float *, C),
	   (unsigned, n))
{
	struct smem *s = npu_scratch();

	ab_in(s, A, B);
	for (unsigned i = 0; i < n; i++)
		npu_mma_f32(0, 1, 2);
	c_out(s, C, 2);
}

NPU_KERNEL(stream, (const float *, A), (const float *, B), (float *, C),
	   (unsigned, n))
{
	struct smem *s = npu_scratch();

	s->bar.count = 0;
	/* the same scratchpad tile n times: only the traffic matters */
	for (unsigned i = 0; i < n; i++)
		tile_in(s, s->a, A + (unsigned long)i * NPU_TILE_CELLS);
	tile_in(s, s->b, B);
	npu_tdma_wait(&s->bar, n + 1);
	ab_load(s);
	npu_mma_f32(0, 1, 2);
	c_out(s, C, n + 1);
}
