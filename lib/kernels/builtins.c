// SPDX-License-Identifier: MIT
/*
 * builtins.c - libnpu's kernel library: the built-in kernels (enum
 * npu_kernel) as npu-cc code for the compute units. One thread per block;
 * the launcher (lib) picks the grid from the sizes:
 *
 *   element-wise     a block per 4096 elements (NPU_BI_EW_BLOCK): whole
 *                    tiles go through the scratchpad by tile DMA and one
 *                    TEW (or TFILL) per tile; the rest is scalar code with
 *                    the same operation in the same rounding
 *   gemm_f32         a block per 16x64 strip of C (four accumulator tiles
 *                    sharing each A tile): TMMA f32 over K in steps of 16,
 *                    the next A and B tiles DMA'd into the other half of
 *                    the scratchpad while the current ones multiply
 *   row-wise         a block per row (softmax, cross-entropy, argmax), per
 *                    16 columns (col_sum), one block (reduce_sum)
 *
 * Accumulation orders (tests/lib/lib_builtins_diff.c checks them against
 * the host reference): gemm: per element, k increasing from +0, one fused
 * multiply-add per step (TMMA), then alpha * acc + beta * C with each
 * product and the sum rounded; reduce_sum and softmax's denominator:
 * sequential in double; col_sum: rows in order in f32.
 */
#include <math.h>
#include <npu_kernel.h>

/* a * b + c must round twice, as the element-wise kernels always did */
#pragma clang fp contract(off)

#define NPU_BI_CHUNK	NPU_TILE_CELLS			/* elements */
#define NPU_BI_TILE_B	(NPU_TILE_CELLS * 4)		/* bytes of a tile */
#define NPU_BI_ROW_B	(NPU_TILE_DIM * 4)		/* bytes of its row */
#define NPU_BI_EW_SCRATCH	(3 * NPU_BI_TILE_B + 64)
#define NPU_BI_EW_BLOCK		(16 * NPU_BI_CHUNK)	/* elements per block */

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

/* out[i] = op(x[i], y[i], s) for the whole tile at i0 */
static void bi_ew_tile(enum npu_bi_ew op, const float *x, const float *y,
		       float *out, unsigned long i0, unsigned sb, char *sp,
		       struct npu_tdma_barrier *bar, unsigned *issued)
{
	int two = op == BI_VADD || op == BI_SAXPY || op == BI_RELU_GRAD;
	unsigned want;

	want = bi_copy(bar, issued, sp, (unsigned long)(x + i0),
		       NPU_BI_TILE_B, 1, 0, 0);
	if (two)
		want = bi_copy(bar, issued, sp + NPU_BI_TILE_B,
			       (unsigned long)(y + i0), NPU_BI_TILE_B, 1, 0, 0);
	npu_tdma_wait(bar, want);
	npu_tile_load(0, sp, NPU_BI_ROW_B, NPU_TILE_E32);
	if (two)
		npu_tile_load(1, sp + NPU_BI_TILE_B, NPU_BI_ROW_B, NPU_TILE_E32);
	switch (op) {
	case BI_SCALE:
		npu_tile_fill(2, sb, NPU_TILE_E32);
		npu_tile_mul(3, 2, 0);
		break;
	case BI_VADD:
		npu_tile_add(3, 0, 1);
		break;
	case BI_SAXPY:
		npu_tile_fill(2, sb, NPU_TILE_E32);
		npu_tile_mul(2, 2, 0);
		npu_tile_add(3, 1, 2);
		break;
	case BI_RELU:
		npu_tile_relu(3, 0);
		break;
	case BI_RELU_GRAD:
		/* a select, not arithmetic: x's bits pass unchanged */
		for (unsigned i = 0; i < NPU_BI_CHUNK; i++) {
			float *xs = (float *)sp, *ys = (float *)(sp + NPU_BI_TILE_B);

			xs[i] = ys[i] > 0 ? xs[i] : 0.0f;
		}
		npu_tile_load(3, sp, NPU_BI_ROW_B, NPU_TILE_E32);
		break;
	}
	npu_tile_store(3, sp + 2 * NPU_BI_TILE_B, NPU_BI_ROW_B, NPU_TILE_E32);
	want = bi_copy(bar, issued, sp + 2 * NPU_BI_TILE_B,
		       (unsigned long)(out + i0), NPU_BI_TILE_B, 1, 0, 1);
	npu_tdma_wait(bar, want);
}

/* out[i] = op(x[i], y[i], s) for this block's NPU_BI_EW_BLOCK elements:
 * whole tiles through the scratchpad, the rest scalar */
static void bi_elementwise(enum npu_bi_ew op, const float *x, const float *y,
			   float *out, unsigned long n, float s)
{
	unsigned long i0 = (unsigned long)npu_block_index() * NPU_BI_EW_BLOCK;
	unsigned long end;
	char *sp = npu_scratch();
	struct npu_tdma_barrier *bar = (void *)(sp + 3 * NPU_BI_TILE_B);
	unsigned issued = bar->count;
	int two = op == BI_VADD || op == BI_SAXPY || op == BI_RELU_GRAD;
	union { float f; unsigned u; } sb = { .f = s };

	if (i0 >= n)
		return;
	end = n - i0 < NPU_BI_EW_BLOCK ? n : i0 + NPU_BI_EW_BLOCK;
	for (; end - i0 >= NPU_BI_CHUNK; i0 += NPU_BI_CHUNK)
		bi_ew_tile(op, x, y, out, i0, sb.u, sp, bar, &issued);
	for (unsigned long i = i0; i < end; i++)
		out[i] = bi_scalar(op, x[i], two ? y[i] : 0, s);
}

NPU_KERNEL_EX(bi_fill_f32, NPU_BI_EW_SCRATCH, 1, 0, (float *, y),
	      (unsigned long, n), (float, v))
{
	unsigned long i0 = (unsigned long)npu_block_index() * NPU_BI_EW_BLOCK;
	unsigned long end;
	char *sp = npu_scratch();
	struct npu_tdma_barrier *bar = (void *)(sp + 3 * NPU_BI_TILE_B);
	unsigned issued = bar->count, want = issued;
	union { float f; unsigned u; } vb = { .f = v };

	if (i0 >= n)
		return;
	end = n - i0 < NPU_BI_EW_BLOCK ? n : i0 + NPU_BI_EW_BLOCK;
	npu_tile_fill(0, vb.u, NPU_TILE_E32);
	npu_tile_store(0, sp, NPU_BI_ROW_B, NPU_TILE_E32);
	/* every copy reads the same tile: no wait between them */
	for (; end - i0 >= NPU_BI_CHUNK; i0 += NPU_BI_CHUNK)
		want = bi_copy(bar, &issued, sp, (unsigned long)(y + i0),
			       NPU_BI_TILE_B, 1, 0, 1);
	for (unsigned long i = i0; i < end; i++)
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

/* x (rows x cols) += bias (cols) in place: a block per row chunk of a
 * 16-column strip, ADDROW on whole tiles, scalar at the edges */
NPU_KERNEL_EX(bi_bias_add_f32, NPU_BI_EW_SCRATCH, 1, 0, (float *, x),
	      (const float *, bias), (unsigned long, rows),
	      (unsigned long, cols))
{
	unsigned long r0 = (unsigned long)npu_block_y() * NPU_TILE_DIM;
	unsigned long c0 = (unsigned long)npu_block_x() * NPU_TILE_DIM;
	char *sp = npu_scratch();
	struct npu_tdma_barrier *bar = (void *)(sp + 3 * NPU_BI_TILE_B);
	unsigned issued = bar->count, want;

	if (r0 >= rows || c0 >= cols)
		return;
	if (rows - r0 < NPU_TILE_DIM || cols - c0 < NPU_TILE_DIM) {
		for (unsigned long r = r0; r < rows && r < r0 + NPU_TILE_DIM; r++)
			for (unsigned long c = c0;
			     c < cols && c < c0 + NPU_TILE_DIM; c++)
				x[r * cols + c] += bias[c];
		return;
	}
	bi_copy(bar, &issued, sp, (unsigned long)(x + r0 * cols + c0),
		NPU_BI_ROW_B, NPU_TILE_DIM, cols * 4, 0);
	want = bi_copy(bar, &issued, sp + NPU_BI_TILE_B,
		       (unsigned long)(bias + c0), NPU_BI_ROW_B, 1, 0, 0);
	npu_tdma_wait(bar, want);
	npu_tile_load(0, sp, NPU_BI_ROW_B, NPU_TILE_E32);
	npu_tile_load(1, sp + NPU_BI_TILE_B, NPU_BI_ROW_B, NPU_TILE_E32);
	npu_tile_addrow(2, 0, 1);
	npu_tile_store(2, sp + 2 * NPU_BI_TILE_B, NPU_BI_ROW_B, NPU_TILE_E32);
	want = bi_copy(bar, &issued, sp + 2 * NPU_BI_TILE_B,
		       (unsigned long)(x + r0 * cols + c0), NPU_BI_ROW_B,
		       NPU_TILE_DIM, cols * 4, 1);
	npu_tdma_wait(bar, want);
}

/* ------------------------------------------------------------------------
 * GEMM: C = alpha * op(A) op(B) + beta * C, op(A) M x K, op(B) K x N
 */
#define GEMM_STRIP	4	/* column tiles of C per block */
#define GEMM_COLS	(GEMM_STRIP * NPU_TILE_DIM)
#define GEMM_BUF	((1 + GEMM_STRIP) * NPU_BI_TILE_B)	/* A, B tiles */
#define GEMM_SCRATCH	(2 * GEMM_BUF + NPU_BI_TILE_B + 64)

struct gemm_op {
	const float *p;
	unsigned long ld;	/* elements between stored rows */
	int trans;		/* stored as (cols of op) x (rows of op) */
};

static unsigned long bi_min(unsigned long a, unsigned long b)
{
	return a < b ? a : b;
}

/* Copy op's tile at (r0, c0), rs x cs valid, into buf (zero padded). */
static void gemm_fetch(struct npu_tdma_barrier *bar, unsigned *issued,
		       char *buf, const struct gemm_op *o, unsigned long r0,
		       unsigned long c0, unsigned long rs, unsigned long cs)
{
	if (rs < NPU_TILE_DIM || cs < NPU_TILE_DIM) {
		npu_tile_zero(7);
		npu_tile_store(7, buf, NPU_BI_ROW_B, NPU_TILE_E32);
	}
	if (o->trans)
		bi_copy(bar, issued, buf,
			(unsigned long)(o->p + c0 * o->ld + r0), rs * 4, cs,
			o->ld * 4, 0);
	else
		bi_copy(bar, issued, buf,
			(unsigned long)(o->p + r0 * o->ld + c0), cs * 4, rs,
			o->ld * 4, 0);
}

/* Step k0's A tile and the strip's B tiles into buf (A, then B by B). */
static void gemm_fetch_strip(struct npu_tdma_barrier *bar, unsigned *issued,
			     char *buf, const struct gemm_op *a,
			     const struct gemm_op *b, unsigned long i0,
			     unsigned long j0, unsigned long k0,
			     unsigned long ms, const unsigned long *ns,
			     unsigned nq, unsigned long ks)
{
	gemm_fetch(bar, issued, buf, a, i0, k0, ms, ks);
	for (unsigned q = 0; q < nq; q++)
		gemm_fetch(bar, issued, buf + (1 + q) * NPU_BI_TILE_B, b, k0,
			   j0 + q * NPU_TILE_DIM, ks, ns[q]);
}

static void gemm_tile_load(int t, char *buf, int trans)
{
	if (trans)
		npu_tile_load_t(t, buf, NPU_BI_ROW_B, NPU_TILE_E32);
	else
		npu_tile_load(t, buf, NPU_BI_ROW_B, NPU_TILE_E32);
}

NPU_KERNEL_EX(bi_gemm_f32, GEMM_SCRATCH, 1, 0, (const float *, A),
	      (const float *, B), (float *, C), (unsigned long, M),
	      (unsigned long, N), (unsigned long, K), (unsigned long, flags),
	      (float, alpha), (float, beta))
{
	unsigned long i0 = (unsigned long)npu_block_y() * NPU_TILE_DIM;
	unsigned long j0 = (unsigned long)npu_block_x() * GEMM_COLS;
	char *sp = npu_scratch(), *cbuf = sp + 2 * GEMM_BUF;
	struct npu_tdma_barrier *bar = (void *)(cbuf + NPU_BI_TILE_B);
	unsigned issued = bar->count, want[2] = { 0, 0 };
	struct gemm_op a = { A, flags & NPU_GEMM_TRANS_A ? M : K,
			     !!(flags & NPU_GEMM_TRANS_A) };
	struct gemm_op b = { B, flags & NPU_GEMM_TRANS_B ? K : N,
			     !!(flags & NPU_GEMM_TRANS_B) };
	unsigned long ms, ns[GEMM_STRIP], steps;
	union { float f; unsigned u; } al = { .f = alpha }, be = { .f = beta };
	unsigned q, nq = 0;

	if (i0 >= M || j0 >= N)
		return;
	steps = (K + NPU_TILE_DIM - 1) / NPU_TILE_DIM;
	ms = bi_min(M - i0, NPU_TILE_DIM);
	for (q = 0; q < GEMM_STRIP && j0 + q * NPU_TILE_DIM < N; q++, nq++)
		ns[q] = bi_min(N - j0 - q * NPU_TILE_DIM, NPU_TILE_DIM);
	/* accumulators t0..t3 (one per column tile), A in t4, B in t5 */
	npu_tile_zero(0);
	npu_tile_zero(1);
	npu_tile_zero(2);
	npu_tile_zero(3);
	if (steps) {
		gemm_fetch_strip(bar, &issued, sp, &a, &b, i0, j0, 0, ms, ns, nq,
				 bi_min(K, NPU_TILE_DIM));
		want[0] = issued;
	}
	/* copies complete in any order: wait for all issued so far */
	for (unsigned long s = 0; s < steps; s++) {
		char *cur = sp + (s & 1) * GEMM_BUF;
		char *nxt = sp + (~s & 1) * GEMM_BUF;

		npu_tdma_wait(bar, want[s & 1]);
		if (s + 1 < steps) {
			unsigned long k1 = (s + 1) * NPU_TILE_DIM;

			gemm_fetch_strip(bar, &issued, nxt, &a, &b, i0, j0, k1,
					 ms, ns, nq, bi_min(K - k1, NPU_TILE_DIM));
			want[~s & 1] = issued;
		}
		gemm_tile_load(4, cur, a.trans);
		/* tile registers are named by constants: unrolled */
		gemm_tile_load(5, cur + NPU_BI_TILE_B, b.trans);
		npu_mma_f32(0, 4, 5);
		if (nq > 1) {
			gemm_tile_load(5, cur + 2 * NPU_BI_TILE_B, b.trans);
			npu_mma_f32(1, 4, 5);
		}
		if (nq > 2) {
			gemm_tile_load(5, cur + 3 * NPU_BI_TILE_B, b.trans);
			npu_mma_f32(2, 4, 5);
		}
		if (nq > 3) {
			gemm_tile_load(5, cur + 4 * NPU_BI_TILE_B, b.trans);
			npu_mma_f32(3, 4, 5);
		}
	}
	/* C = alpha * acc + (beta * C, or + 0: -0 becomes +0, as before) */
	npu_tile_fill(6, al.u, NPU_TILE_E32);
	if (beta != 0.0f)
		npu_tile_fill(4, be.u, NPU_TILE_E32);
	else
		npu_tile_zero(7);
	for (q = 0; q < nq; q++) {
		float *cq = C + i0 * N + j0 + q * NPU_TILE_DIM;

		if (beta != 0.0f) {
			npu_tdma_wait(bar, bi_copy(bar, &issued, cbuf,
						   (unsigned long)cq,
						   ns[q] * 4, ms, N * 4, 0));
			npu_tile_load(7, cbuf, NPU_BI_ROW_B, NPU_TILE_E32);
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
		npu_tile_store(5, cbuf, NPU_BI_ROW_B, NPU_TILE_E32);
		npu_tdma_wait(bar, bi_copy(bar, &issued, cbuf,
					   (unsigned long)cq, ns[q] * 4, ms,
					   N * 4, 1));
	}
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

NPU_KERNEL_EX(bi_col_sum_f32, 0, 1, 0, (const float *, x), (float *, y),
	      (unsigned long, rows), (unsigned long, cols))
{
	unsigned long c0 = (unsigned long)npu_block_index() * NPU_TILE_DIM;

	for (unsigned long c = c0; c < cols && c < c0 + NPU_TILE_DIM; c++) {
		float s = 0;

		for (unsigned long r = 0; r < rows; r++)
			s += x[r * cols + c];
		y[c] = s;
	}
}

NPU_KERNEL_EX(bi_argmax_f32, 0, 1, 0, (const float *, x), (unsigned *, out),
	      (unsigned long, rows), (unsigned long, cols))
{
	unsigned long r = npu_block_index();
	const float *row = x + r * cols;
	unsigned best = 0;

	if (r >= rows)
		return;
	for (unsigned long c = 1; c < cols; c++)
		if (row[c] > row[best])
			best = c;
	out[r] = best;
}
