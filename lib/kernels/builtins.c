// SPDX-License-Identifier: MIT
/*
 * builtins.c - libnpu's kernel library: the built-in kernels (npu.h's
 * NPU_K_*) as npu-cc code for the compute units. One thread per block
 * (gemm: up to 2 x 4); the launcher (lib) picks the grid from the sizes:
 *
 *   element-wise     a block per 4096 elements (NPU_BI_EW_BLOCK): whole
 *                    tiles go through the scratchpad by tile DMA, eight
 *                    per copy, and one TEW per tile (fill: one TFILL, one
 *                    copy); the rest is scalar code with the same
 *                    operation in the same rounding
 *   gemm_f32         a thread per 16x64 strip of C (four accumulator tiles
 *                    sharing each A tile), blocks of up to 2 x 4 threads
 *                    sharing each chunk of A and B: TMMA f32 over K,
 *                    the next chunk DMA'd into the other half of the
 *                    scratchpad while the current one multiplies
 *   row-wise         a block per row (softmax), per 16 rows (argmax),
 *                    per 256 columns
 *                    (col_sum: a TEW ADD per row), one block (reduce_sum,
 *                    softmax_xent)
 *
 * Accumulation orders (tests/lib/lib_builtins_diff.c checks them against
 * the host reference): gemm: per element, k increasing from +0, one fused
 * multiply-add per step (TMMA), then alpha * acc + beta * C with each
 * product and the sum rounded; reduce_sum and softmax's denominator:
 * sequential in double; col_sum: rows in order in f32.
 */
#include <math.h>
#include <npu_kernel.h>

#include "builtins.h"

/* a * b + c must round twice, as the element-wise kernels always did */
#pragma clang fp contract(off)

#define NPU_BI_CHUNK	NPU_TILE_CELLS			/* elements */
#define NPU_BI_TILE_B	(NPU_TILE_CELLS * 4)		/* bytes of a tile */
#define NPU_BI_ROW_B	(NPU_TILE_DIM * 4)		/* bytes of its row */
#define NPU_BI_EW_BATCH		8	/* tiles per copy, below */
#define NPU_BI_EW_BUF		(NPU_BI_EW_BATCH * NPU_BI_TILE_B)
#define NPU_BI_EW_SCRATCH	(2 * NPU_BI_EW_BUF + 64)
#define NPU_BI_SMALL_SCRATCH	(3 * NPU_BI_TILE_B + 64)

enum npu_bi_ew {
	BI_SCALE, BI_VADD, BI_SAXPY, BI_RELU, BI_RELU_GRAD,
};

/* Start a copy counted on *bar and return the count to wait for. */
static unsigned bi_copy(struct npu_tdma_barrier *bar, unsigned *issued,
			void *scratch, unsigned long mem, unsigned row_bytes,
			unsigned rows, unsigned long mem_stride, int to_mem)
{
	npu_tdma_2d(bar, scratch, mem, row_bytes, rows, mem_stride,
		    NPU_BI_ROW_B, to_mem);
	return ++*issued;
}

static float bi_scalar(enum npu_bi_ew op, float x, float y, float s)
{
	switch (op) {
	case BI_SCALE:
		return s * x;
	case BI_VADD:
		return x + y;
	case BI_SAXPY:
		return y + s * x;
	case BI_RELU:
		return x > 0 ? x : 0.0f;
	case BI_RELU_GRAD:
		return y > 0 ? x : 0.0f;
	}
	return 0;
}

/* A batch of a block's x and y tiles comes in by one copy each, and its
 * results go out by one (the copies, not the tile ops, cost the most
 * instructions per element).
 * out[i] = op(x[i], y[i], s) for nt whole tiles at i0 (nt <= a batch):
 * x's buffer takes the results. t2 holds s in every cell. */
static void bi_ew_tiles(enum npu_bi_ew op, const float *x, const float *y,
			float *out, unsigned long i0, unsigned nt, char *sp,
			struct npu_tdma_barrier *bar, unsigned *issued)
{
	int two = op == BI_VADD || op == BI_SAXPY || op == BI_RELU_GRAD;
	char *xs = sp, *ys = sp + NPU_BI_EW_BUF;
	unsigned bytes = nt * NPU_BI_TILE_B, want;

	want = bi_copy(bar, issued, xs, (unsigned long)(x + i0), bytes, 1, 0, 0);
	if (two)
		want = bi_copy(bar, issued, ys, (unsigned long)(y + i0), bytes,
			       1, 0, 0);
	npu_tdma_wait(bar, want);
	for (unsigned t = 0; t < nt; t++) {
		char *xt = xs + t * NPU_BI_TILE_B, *yt = ys + t * NPU_BI_TILE_B;

		if (op == BI_RELU_GRAD) {
			/* a select, not arithmetic: x's bits pass unchanged */
			float *xf = (float *)xt, *yf = (float *)yt;

			for (unsigned i = 0; i < NPU_BI_CHUNK; i++)
				xf[i] = yf[i] > 0 ? xf[i] : 0.0f;
			continue;
		}
		npu_tile_load(0, xt, NPU_BI_ROW_B, NPU_TILE_E32);
		if (two)
			npu_tile_load(1, yt, NPU_BI_ROW_B, NPU_TILE_E32);
		switch (op) {
		case BI_SCALE:
			npu_tile_mul(3, 2, 0);
			break;
		case BI_VADD:
			npu_tile_add(3, 0, 1);
			break;
		case BI_SAXPY:
			npu_tile_mul(4, 2, 0);
			npu_tile_add(3, 1, 4);
			break;
		default:	/* BI_RELU */
			npu_tile_relu(3, 0);
			break;
		}
		npu_tile_store(3, xt, NPU_BI_ROW_B, NPU_TILE_E32);
	}
	npu_tdma_wait(bar, bi_copy(bar, issued, xs, (unsigned long)(out + i0),
				   bytes, 1, 0, 1));
}

/* out[i] = op(x[i], y[i], s) for this block's NPU_BI_EW_BLOCK elements:
 * whole tiles through the scratchpad, the rest scalar */
static void bi_elementwise(enum npu_bi_ew op, const float *x, const float *y,
			   float *out, unsigned long n, float s)
{
	unsigned long i0 = (unsigned long)npu_block_index() * NPU_BI_EW_BLOCK;
	unsigned long end;
	char *sp = npu_scratch();
	struct npu_tdma_barrier *bar = (void *)(sp + 2 * NPU_BI_EW_BUF);
	unsigned issued = bar->count;
	int two = op == BI_VADD || op == BI_SAXPY || op == BI_RELU_GRAD;
	union { float f; unsigned u; } sb = { .f = s };

	if (i0 >= n)
		return;
	end = n - i0 < NPU_BI_EW_BLOCK ? n : i0 + NPU_BI_EW_BLOCK;
	npu_tile_fill(2, sb.u, NPU_TILE_E32);
	while (end - i0 >= NPU_BI_CHUNK) {
		unsigned long nt = (end - i0) / NPU_BI_CHUNK;

		nt = nt < NPU_BI_EW_BATCH ? nt : NPU_BI_EW_BATCH;
		bi_ew_tiles(op, x, y, out, i0, (unsigned)nt, sp, bar, &issued);
		i0 += nt * NPU_BI_CHUNK;
	}
	for (unsigned long i = i0; i < end; i++)
		out[i] = bi_scalar(op, x[i], two ? y[i] : 0, s);
}

NPU_KERNEL_EX(bi_fill_f32, NPU_BI_SMALL_SCRATCH, 1, 0, (float *, y),
	      (unsigned long, n), (float, v))
{
	unsigned long i0 = (unsigned long)npu_block_index() * NPU_BI_EW_BLOCK;
	unsigned long end, nt;
	char *sp = npu_scratch();
	struct npu_tdma_barrier *bar = (void *)(sp + NPU_BI_TILE_B);
	unsigned issued = bar->count, want = issued;
	union { float f; unsigned u; } vb = { .f = v };

	if (i0 >= n)
		return;
	end = n - i0 < NPU_BI_EW_BLOCK ? n : i0 + NPU_BI_EW_BLOCK;
	nt = (end - i0) / NPU_BI_CHUNK;
	npu_tile_fill(0, vb.u, NPU_TILE_E32);
	npu_tile_store(0, sp, NPU_BI_ROW_B, NPU_TILE_E32);
	/* one copy: every tile of memory from the same scratchpad tile
	 * (scratchpad stride 0) */
	if (nt) {
		npu_tdma_2d(bar, sp, (unsigned long)(y + i0), NPU_BI_TILE_B,
			    (unsigned)nt, NPU_BI_TILE_B, 0, 1);
		want = ++issued;
	}
	for (unsigned long i = i0 + nt * NPU_BI_CHUNK; i < end; i++)
		y[i] = v;
	npu_tdma_wait(bar, want);
}

NPU_KERNEL_EX(bi_scale_f32, NPU_BI_EW_SCRATCH, 1, 0, (const float *, x),
	      (float *, y), (unsigned long, n), (float, s))
{
	bi_elementwise(BI_SCALE, x, 0, y, n, s);
}

NPU_KERNEL_EX(bi_vadd_f32, NPU_BI_EW_SCRATCH, 1, 0, (const float *, a),
	      (const float *, b), (float *, c), (unsigned long, n))
{
	bi_elementwise(BI_VADD, a, b, c, n, 0);
}

NPU_KERNEL_EX(bi_saxpy_f32, NPU_BI_EW_SCRATCH, 1, 0, (const float *, x),
	      (float *, y), (unsigned long, n), (float, s))
{
	bi_elementwise(BI_SAXPY, x, y, y, n, s);
}

NPU_KERNEL_EX(bi_relu_f32, NPU_BI_EW_SCRATCH, 1, 0, (const float *, x),
	      (float *, y), (unsigned long, n))
{
	bi_elementwise(BI_RELU, x, 0, y, n, 0);
}

NPU_KERNEL_EX(bi_relu_grad_f32, NPU_BI_EW_SCRATCH, 1, 0, (const float *, g),
	      (const float *, x), (float *, out), (unsigned long, n))
{
	bi_elementwise(BI_RELU_GRAD, g, x, out, n, 0);
}

/* x (rows x cols) += bias (cols) in place: a block per 16x16 tile, one
 * ADDROW; an edge tile's copies move its rows and columns only (the rest
 * of the tile is not stored) */
NPU_KERNEL_EX(bi_bias_add_f32, NPU_BI_SMALL_SCRATCH, 1, 0, (float *, x),
	      (const float *, bias), (unsigned long, rows),
	      (unsigned long, cols))
{
	unsigned long r0 = (unsigned long)npu_block_y() * NPU_TILE_DIM;
	unsigned long c0 = (unsigned long)npu_block_x() * NPU_TILE_DIM;
	char *sp = npu_scratch();
	struct npu_tdma_barrier *bar = (void *)(sp + 3 * NPU_BI_TILE_B);
	unsigned issued = bar->count, want, rs, cb;

	if (r0 >= rows || c0 >= cols)
		return;
	rs = rows - r0 < NPU_TILE_DIM ? (unsigned)(rows - r0) : NPU_TILE_DIM;
	cb = cols - c0 < NPU_TILE_DIM ? (unsigned)(cols - c0) * 4 : NPU_BI_ROW_B;
	bi_copy(bar, &issued, sp, (unsigned long)(x + r0 * cols + c0), cb, rs,
		cols * 4, 0);
	want = bi_copy(bar, &issued, sp + NPU_BI_TILE_B,
		       (unsigned long)(bias + c0), cb, 1, 0, 0);
	npu_tdma_wait(bar, want);
	npu_tile_load(0, sp, NPU_BI_ROW_B, NPU_TILE_E32);
	npu_tile_load(1, sp + NPU_BI_TILE_B, NPU_BI_ROW_B, NPU_TILE_E32);
	npu_tile_addrow(2, 0, 1);
	npu_tile_store(2, sp + 2 * NPU_BI_TILE_B, NPU_BI_ROW_B, NPU_TILE_E32);
	want = bi_copy(bar, &issued, sp + 2 * NPU_BI_TILE_B,
		       (unsigned long)(x + r0 * cols + c0), cb, rs, cols * 4, 1);
	npu_tdma_wait(bar, want);
}

/* ------------------------------------------------------------------------
 * GEMM: C = alpha * op(A) op(B) + beta * C, op(A) M x K, op(B) K x N
 *
 * A block of TX x TY threads (its launch's block shape, at most 2 x 4)
 * computes 16 TY rows by 64 TX columns of C; thread (x, y) its 16x64
 * strip at row 16 y, column 64 x, in four accumulator tiles sharing each
 * A tile. K goes in chunks of KC (64 on a 1 x 1 block; less on larger
 * ones, so that two stages fit): thread 0 copies a chunk's A (R = 16 TY
 * rows of op(A)) and B (W = 64 TX columns of op(B)) into the stage the
 * tensor engine is not reading, one 2-D copy each, and every thread
 * multiplies from it, so that a larger block reads each chunk of memory
 * once for more of C. Layouts in a stage, as stored:
 *   A      R rows of KC (row KC*4 bytes); thread y's tile t at
 *          16 y * KC*4 + t*64
 *   A^T    KC k-rows of R (row R*4); tile at t*16 * R*4 + y*64, loaded
 *          transposed
 *   B      KC k-rows of W (row W*4); thread x's tile (t, q) at
 *          t*16 * W*4 + (64 x + 16 q)*4
 *   B^T    W j-rows of KC (row KC*4); tile at (64 x + 16 q) * KC*4 +
 *          t*64, loaded transposed
 * A chunk whose k does not fill its last tile is zeroed first: k past K
 * then adds fma(0, 0, acc) = acc (acc is never -0), as a k-loop would not.
 * Rows of A past M and columns of B past N hold whatever was there: they
 * only reach rows and columns of C that are not stored. Each element's
 * order is the same on every block shape: k increasing, one TMMA step.
 */
#define GEMM_COLS	NPU_BI_GEMM_COLS	/* four column tiles */
#define GEMM_MAX_TX	NPU_BI_GEMM_MAX_TX
#define GEMM_MAX_TY	NPU_BI_GEMM_MAX_TY
#define GEMM_KC_MAX	64	/* k per chunk */
#define GEMM_STAGES_B	(48 * 1024)	/* both stages */
#define GEMM_OUT_B	(NPU_TILE_DIM * GEMM_COLS * 4)	/* a strip of C */
#define GEMM_BARS	(1 + GEMM_MAX_TX * GEMM_MAX_TY)
#define GEMM_SCRATCH	(GEMM_STAGES_B + GEMM_BARS * 8)

struct gemm_op {
	const float *p;
	unsigned long ld;	/* elements between stored rows */
	int trans;		/* stored as (cols of op) x (rows of op) */
};

/* The block's part of C and its stages */
struct gemm_block {
	unsigned long i0, j0;	/* first row, column */
	unsigned long ms, nw;	/* rows, columns of it within C */
	unsigned long rows, cols;	/* R = 16 TY, W = 64 TX */
	unsigned long kc;	/* KC */
	unsigned long stage_b, a_b;	/* bytes of a stage, of its A */
};

static unsigned long bi_min(unsigned long a, unsigned long b)
{
	return a < b ? a : b;
}

/* Thread 0: issue the copies of the chunk at k0 (kc of k) into stage st,
 * counted on bar. */
static void gemm_fetch(struct npu_tdma_barrier *bar, char *st,
		       const struct gemm_op *a, const struct gemm_op *b,
		       const struct gemm_block *g, unsigned long k0,
		       unsigned long kc)
{
	char *sa = st, *sb = st + g->a_b;

	if (kc % NPU_TILE_DIM) {
		npu_tile_zero(7);
		for (unsigned long o = 0; o < g->stage_b; o += NPU_BI_TILE_B)
			npu_tile_store(7, st + o, NPU_BI_ROW_B, NPU_TILE_E32);
	}
	if (a->trans)	/* kc rows of k, ms columns of i */
		npu_tdma_2d(bar, sa, (unsigned long)(a->p + k0 * a->ld + g->i0),
			    (unsigned)g->ms * 4, (unsigned)kc, a->ld * 4,
			    (unsigned)g->rows * 4, 0);
	else		/* ms rows of i, kc columns of k */
		npu_tdma_2d(bar, sa, (unsigned long)(a->p + g->i0 * a->ld + k0),
			    (unsigned)kc * 4, (unsigned)g->ms, a->ld * 4,
			    (unsigned)g->kc * 4, 0);
	if (b->trans)	/* nw rows of j, kc columns of k */
		npu_tdma_2d(bar, sb, (unsigned long)(b->p + g->j0 * b->ld + k0),
			    (unsigned)kc * 4, (unsigned)g->nw, b->ld * 4,
			    (unsigned)g->kc * 4, 0);
	else		/* kc rows of k, nw columns of j */
		npu_tdma_2d(bar, sb, (unsigned long)(b->p + k0 * b->ld + g->j0),
			    (unsigned)g->nw * 4, (unsigned)kc, b->ld * 4,
			    (unsigned)g->cols * 4, 0);
}

/* B's k-tile t, column tile q of thread x's strip, of a stage into t5 */
static inline __attribute__((always_inline)) void
gemm_load_b(const char *sb, const struct gemm_block *g,
			unsigned long t, unsigned long x, unsigned q, int trans)
{
	unsigned long j = x * GEMM_COLS + q * NPU_TILE_DIM;

	if (trans)
		npu_tile_load_t(5, sb + j * g->kc * 4 + t * NPU_TILE_DIM * 4,
				g->kc * 4, NPU_TILE_E32);
	else
		npu_tile_load(5, sb + t * NPU_TILE_DIM * g->cols * 4 + j * 4,
			      g->cols * 4, NPU_TILE_E32);
}

/* This thread's accumulators += its part of one stage's chunk (nt
 * k-tiles, nq column tiles). */
static inline __attribute__((always_inline)) void
gemm_chunk(const char *cur, const struct gemm_block *g,
		       const struct gemm_op *a, const struct gemm_op *b,
		       unsigned long x, unsigned long y, unsigned long nt,
		       unsigned nq)
{
	const char *sb = cur + g->a_b;

	for (unsigned long t = 0; t < nt; t++) {
		if (a->trans)
			npu_tile_load_t(4, cur + t * NPU_TILE_DIM * g->rows * 4 +
					y * NPU_TILE_DIM * 4, g->rows * 4,
					NPU_TILE_E32);
		else
			npu_tile_load(4, cur + y * NPU_TILE_DIM * g->kc * 4 +
				      t * NPU_TILE_DIM * 4, g->kc * 4,
				      NPU_TILE_E32);
		/* tile registers are named by constants: unrolled */
		gemm_load_b(sb, g, t, x, 0, b->trans);
		npu_mma_f32(0, 4, 5);
		if (nq > 1) {
			gemm_load_b(sb, g, t, x, 1, b->trans);
			npu_mma_f32(1, 4, 5);
		}
		if (nq > 2) {
			gemm_load_b(sb, g, t, x, 2, b->trans);
			npu_mma_f32(2, 4, 5);
		}
		if (nq > 3) {
			gemm_load_b(sb, g, t, x, 3, b->trans);
			npu_mma_f32(3, 4, 5);
		}
	}
}

/* C = alpha * acc + (beta * C, or + 0: -0 becomes +0, as before) for a
 * thread's strip (ms rows, nw columns at c), through its 4 KiB at out by
 * one copy each way on its own barrier word. */
static void gemm_store(struct npu_tdma_barrier *bar, char *out, float *c,
		       unsigned long N, unsigned long ms, unsigned long nw,
		       float alpha, float beta)
{
	union { float f; unsigned u; } al = { .f = alpha }, be = { .f = beta };
	unsigned nq = (unsigned)((nw + NPU_TILE_DIM - 1) / NPU_TILE_DIM);

	npu_tile_fill(6, al.u, NPU_TILE_E32);
	if (beta != 0.0f) {
		npu_tile_fill(4, be.u, NPU_TILE_E32);
		npu_tdma_2d(bar, out, (unsigned long)c, (unsigned)nw * 4,
			    (unsigned)ms, N * 4, GEMM_COLS * 4, 0);
		npu_tdma_wait(bar, 1);
	} else {
		npu_tile_zero(7);
	}
	for (unsigned q = 0; q < nq; q++) {
		char *cq = out + q * NPU_TILE_DIM * 4;

		if (beta != 0.0f) {
			npu_tile_load(7, cq, GEMM_COLS * 4, NPU_TILE_E32);
			npu_tile_mul(7, 4, 7);
		}
		switch (q) {
		case 0:
			npu_tile_mul(5, 6, 0);
			break;
		case 1:
			npu_tile_mul(5, 6, 1);
			break;
		case 2:
			npu_tile_mul(5, 6, 2);
			break;
		default:
			npu_tile_mul(5, 6, 3);
			break;
		}
		npu_tile_add(5, 5, 7);
		npu_tile_store(5, cq, GEMM_COLS * 4, NPU_TILE_E32);
	}
	npu_tdma_2d(bar, out, (unsigned long)c, (unsigned)nw * 4, (unsigned)ms,
		    N * 4, GEMM_COLS * 4, 1);
	npu_tdma_wait(bar, beta != 0.0f ? 2 : 1);
}

/* The kernel on a tx x ty block (inlined: a 1 x 1 block's strides and
 * chunk fold to constants) */
static inline __attribute__((always_inline)) void
gemm_run(unsigned long tx, unsigned long ty, const float *A, const float *B,
	 float *C, unsigned long M, unsigned long N, unsigned long K,
	 unsigned long flags, float alpha, float beta)
{
	unsigned long x = npu_thread_x(), y = npu_thread_y();
	unsigned long tid = y * tx + x, chunks, i0, j0, ms = 0, nw = 0;
	char *sp = npu_scratch();
	struct npu_tdma_barrier *bars = (void *)(sp + GEMM_STAGES_B);
	struct gemm_op a = { A, flags & NPU_BI_GEMM_TRANS_A ? M : K,
			     !!(flags & NPU_BI_GEMM_TRANS_A) };
	struct gemm_op b = { B, flags & NPU_BI_GEMM_TRANS_B ? K : N,
			     !!(flags & NPU_BI_GEMM_TRANS_B) };
	struct gemm_block g;
	unsigned nq = 0;
	int active;

	g.rows = ty * NPU_TILE_DIM;
	g.cols = tx * GEMM_COLS;
	g.i0 = (unsigned long)npu_block_y() * g.rows;
	g.j0 = (unsigned long)npu_block_x() * g.cols;
	if (g.i0 >= M || g.j0 >= N)	/* the whole block */
		return;
	g.ms = bi_min(M - g.i0, g.rows);
	g.nw = bi_min(N - g.j0, g.cols);
	/* two stages in GEMM_STAGES_B, k in whole tiles */
	g.kc = bi_min(GEMM_STAGES_B / 2 / (4 * (g.rows + g.cols)) /
		      NPU_TILE_DIM * NPU_TILE_DIM, GEMM_KC_MAX);
	g.a_b = g.rows * g.kc * 4;
	g.stage_b = g.a_b + g.kc * g.cols * 4;
	i0 = g.i0 + y * NPU_TILE_DIM;
	j0 = g.j0 + x * GEMM_COLS;
	active = i0 < M && j0 < N;
	if (active) {
		ms = bi_min(M - i0, NPU_TILE_DIM);
		nw = bi_min(N - j0, GEMM_COLS);
		nq = (unsigned)((nw + NPU_TILE_DIM - 1) / NPU_TILE_DIM);
	}
	chunks = (K + g.kc - 1) / g.kc;
	bars[1 + tid].count = 0;
	/* accumulators t0..t3 (one per column tile), A in t4, B in t5 */
	npu_tile_zero(0);
	npu_tile_zero(1);
	npu_tile_zero(2);
	npu_tile_zero(3);
	if (tid == 0) {
		bars[0].count = 0;
		if (chunks)
			gemm_fetch(&bars[0], sp, &a, &b, &g, 0, bi_min(K, g.kc));
	}
	if (tx * ty > 1)
		npu_barrier();	/* the barrier words are set */
	for (unsigned long c = 0; c < chunks; c++) {
		char *cur = sp + (c & 1) * g.stage_b;
		unsigned long kc = bi_min(K - c * g.kc, g.kc);

		/* chunk c's two copies are the only ones in flight */
		npu_tdma_wait(&bars[0], (unsigned)(2 * (c + 1)));
		/* the other stage's chunk is done: every thread passed the
		 * barrier below */
		if (tid == 0 && c + 1 < chunks)
			gemm_fetch(&bars[0], sp + (~c & 1) * g.stage_b, &a, &b,
				   &g, (c + 1) * g.kc,
				   bi_min(K - (c + 1) * g.kc, g.kc));
		if (active)
			gemm_chunk(cur, &g, &a, &b, x, y,
				   (kc + NPU_TILE_DIM - 1) / NPU_TILE_DIM, nq);
		if (tx * ty > 1)	/* every thread is done with stage c & 1 */
			npu_barrier();
	}
	/* the stages are idle now: a strip's 4 KiB each */
	if (active)
		gemm_store(&bars[1 + tid], sp + tid * GEMM_OUT_B,
			   C + i0 * N + j0, N, ms, nw, alpha, beta);
}

NPU_KERNEL_EX(bi_gemm_f32, GEMM_SCRATCH, GEMM_MAX_TX * GEMM_MAX_TY, 0,
	      (const float *, A), (const float *, B), (float *, C),
	      (unsigned long, M), (unsigned long, N), (unsigned long, K),
	      (unsigned long, flags), (float, alpha), (float, beta))
{
	unsigned long tx = npu_bdim_x(), ty = npu_bdim_y();

	/* the library launches at most 2 x 4 (GEMM_MAX_TX x _TY) */
	if (tx > GEMM_MAX_TX || ty > GEMM_MAX_TY || npu_bdim_z() != 1)
		__builtin_debugtrap();
	if (tx == 1 && ty == 1)
		gemm_run(1, 1, A, B, C, M, N, K, flags, alpha, beta);
	else
		gemm_run(tx, ty, A, B, C, M, N, K, flags, alpha, beta);
}

/* ------------------------------------------------------------------------
 * Row-wise and reductions: scalar code, orders as the header says
 */
NPU_KERNEL_EX(bi_reduce_sum_f32, 0, 1, 0, (const float *, x), (float *, y),
	      (unsigned long, n))
{
	double sum = 0;

	for (unsigned long i = 0; i < n; i++)
		sum += x[i];
	*y = (float)sum;
}

static void bi_softmax_row(const float *x, float *y, unsigned long cols)
{
	float mx = x[0];
	double sum = 0;

	for (unsigned long c = 1; c < cols; c++)
		mx = x[c] > mx ? x[c] : mx;
	for (unsigned long c = 0; c < cols; c++) {
		y[c] = expf(x[c] - mx);
		sum += y[c];
	}
	for (unsigned long c = 0; c < cols; c++)
		y[c] = (float)(y[c] / sum);
}

NPU_KERNEL_EX(bi_softmax_f32, 0, 1, 0, (const float *, x), (float *, y),
	      (unsigned long, rows), (unsigned long, cols))
{
	unsigned long r = npu_block_index();

	if (r < rows && cols)
		bi_softmax_row(x + r * cols, y + r * cols, cols);
}

/* grad = (softmax(x) - onehot(label)) / rows; loss = -(sum of log p[label]
 * in row order, in double) / rows. One block: the loss is one sum. */
NPU_KERNEL_EX(bi_softmax_xent_f32, 0, 1, 0, (const float *, x),
	      (const unsigned *, label), (float *, grad), (float *, loss),
	      (unsigned long, rows), (unsigned long, cols))
{
	double l = 0;

	for (unsigned long r = 0; r < rows; r++) {
		float *g = grad + r * cols, p;
		unsigned lab = label[r];

		if (lab >= cols) {
			/* a bad label stops the launch (CU_BREAK) */
			__builtin_debugtrap();
			return;
		}
		bi_softmax_row(x + r * cols, g, cols);
		p = g[lab];
		l -= log(p > 1e-30f ? p : 1e-30f);
		g[lab] -= 1.0f;
		for (unsigned long c = 0; c < cols; c++)
			g[c] /= (float)rows;
	}
	*loss = rows ? (float)(l / rows) : 0;
}

/* y[c] = the sum over rows in order, in f32 from +0: a block per 256
 * columns; each row's columns come in as one tile (16 rows of 16) and one
 * TEW ADD per row adds them to the accumulator tile (fadd.s's rounding) */
#define COLSUM_COLS	NPU_TILE_CELLS
#define COLSUM_ROWS	32	/* rows per copy */
#define COLSUM_SCRATCH	(COLSUM_ROWS * NPU_BI_TILE_B + 64)

NPU_KERNEL_EX(bi_col_sum_f32, COLSUM_SCRATCH, 1, 0, (const float *, x),
	      (float *, y), (unsigned long, rows), (unsigned long, cols))
{
	unsigned long c0 = (unsigned long)npu_block_index() * COLSUM_COLS;
	char *sp = npu_scratch();
	struct npu_tdma_barrier *bar = (void *)(sp + COLSUM_ROWS * NPU_BI_TILE_B);
	unsigned issued = bar->count;
	unsigned long w;

	if (c0 >= cols)
		return;
	w = bi_min(cols - c0, COLSUM_COLS);
	npu_tile_zero(0);
	for (unsigned long r0 = 0; r0 < rows; r0 += COLSUM_ROWS) {
		unsigned nr = (unsigned)bi_min(rows - r0, COLSUM_ROWS);

		/* row r of the copy at sp + r tiles */
		npu_tdma_2d(bar, sp, (unsigned long)(x + r0 * cols + c0),
			    (unsigned)w * 4, nr, cols * 4, NPU_BI_TILE_B, 0);
		npu_tdma_wait(bar, ++issued);
		for (unsigned r = 0; r < nr; r++) {
			npu_tile_load(1, sp + r * NPU_BI_TILE_B, NPU_BI_ROW_B,
				      NPU_TILE_E32);
			npu_tile_add(0, 0, 1);
		}
	}
	npu_tile_store(0, sp, NPU_BI_ROW_B, NPU_TILE_E32);
	npu_tdma_wait(bar, bi_copy(bar, &issued, sp, (unsigned long)(y + c0),
				   (unsigned)w * 4, 1, 0, 1));
}

/* a block per 16 rows; rows of up to 256 columns come in by one copy
 * (the compare loop then reads the scratchpad), longer ones are read in
 * place */
#define ARGMAX_ROWS	16
#define ARGMAX_BYTES	(16u << 10)
#define ARGMAX_SCRATCH	(ARGMAX_BYTES + 64)

static unsigned bi_argmax_row(const float *row, unsigned long cols)
{
	unsigned best = 0;

	for (unsigned long c = 1; c < cols; c++)
		if (row[c] > row[best])
			best = c;
	return best;
}

NPU_KERNEL_EX(bi_argmax_f32, ARGMAX_SCRATCH, 1, 0, (const float *, x),
	      (unsigned *, out), (unsigned long, rows), (unsigned long, cols))
{
	unsigned long r0 = (unsigned long)npu_block_index() * ARGMAX_ROWS;
	char *sp = npu_scratch();
	struct npu_tdma_barrier *bar = (void *)(sp + ARGMAX_BYTES);
	unsigned issued = bar->count, nr;

	if (r0 >= rows)
		return;
	nr = (unsigned)bi_min(rows - r0, ARGMAX_ROWS);
	if (cols * 4 * ARGMAX_ROWS > ARGMAX_BYTES) {
		for (unsigned r = 0; r < nr; r++)
			out[r0 + r] = bi_argmax_row(x + (r0 + r) * cols, cols);
		return;
	}
	npu_tdma_wait(bar, bi_copy(bar, &issued, sp,
				   (unsigned long)(x + r0 * cols),
				   (unsigned)(nr * cols * 4), 1, 0, 0));
	for (unsigned r = 0; r < nr; r++)
		out[r0 + r] = bi_argmax_row((const float *)sp + r * cols, cols);
}
