// SPDX-License-Identifier: MIT
/*
 * npu_tensor_ref.c - host reference of the tensor engine and tile DMA; see
 * npu_tensor_ref.h and Documentation/hw/npu.rst. Needs the host's IEEE
 * arithmetic in round-to-nearest-even and no contraction of a*b+c (built
 * with -ffp-contract=off): the only fused operation is the fmaf() the spec
 * asks for.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu_half.h"
#include "npu_tensor_ref.h"

#define DIM		NPU_TILE_DIM
#define CANON_NAN	0x7fc00000u

static uint32_t f2u(float f) { return npu_f32_bits(f); }
static float u2f(uint32_t u) { return npu_bits_f32(u); }

/* two's complement from the low bits, without implementation-defined casts */
static int32_t s8_of(uint32_t cell)
{
	return (int32_t)((cell & 0xffu) ^ 0x80u) - 0x80;
}

static int64_t s32_of(uint32_t cell)
{
	return (int64_t)(cell ^ 0x80000000u) - 0x80000000;
}

static uint32_t canon(float f)
{
	return isnan(f) ? CANON_NAN : f2u(f);
}

/* Is [addr, addr + n) inside the scratchpad? (n >= 1) */
static int in_scratch(const struct npu_ref_scratch *s, uint64_t addr,
		      uint64_t n)
{
	return addr >= NPU_LOCAL_SCRATCH && n <= s->size &&
	       addr - NPU_LOCAL_SCRATCH <= s->size - n;
}

/* The checks TLOAD and TSTORE share: 0 or the fault. */
static int tile_mem_check(const struct npu_ref_scratch *s, uint64_t addr,
			  uint64_t stride, unsigned funct7, uint64_t *fault)
{
	unsigned esize = funct7 & 3;
	uint64_t w = 1u << esize;

	if (esize > NPU_TILE_E32 || (funct7 & ~(3u | NPU_TILE_TRANS)))
		return NPU_ERR_CU_ILLEGAL;
	if (addr % w) {
		*fault = addr;
		return NPU_ERR_CU_MISALIGNED;
	}
	if (stride % w) {
		*fault = addr + stride;
		return NPU_ERR_CU_MISALIGNED;
	}
	for (unsigned r = 0; r < DIM; r++)
		for (unsigned c = 0; c < DIM; c++) {
			uint64_t e = addr + r * stride + c * w;

			if (!in_scratch(s, e, w)) {
				*fault = e;
				return NPU_ERR_CU_LOCAL_RANGE;
			}
		}
	return NPU_ERR_NONE;
}

int npu_ref_tload(struct npu_ref_tile *t, const struct npu_ref_scratch *s,
		  uint64_t addr, uint64_t stride, unsigned funct7,
		  uint64_t *fault)
{
	unsigned w = 1u << (funct7 & 3), trans = !!(funct7 & NPU_TILE_TRANS);
	int err = tile_mem_check(s, addr, stride, funct7, fault);

	if (err)
		return err;
	for (unsigned r = 0; r < DIM; r++)
		for (unsigned c = 0; c < DIM; c++) {
			const uint8_t *p = s->bytes + (addr - NPU_LOCAL_SCRATCH) +
					   r * stride + c * w;
			uint32_t v = 0;

			for (unsigned i = 0; i < w; i++)	/* little endian */
				v |= (uint32_t)p[i] << (8 * i);
			if (trans)
				t->cell[c][r] = v;
			else
				t->cell[r][c] = v;
		}
	return NPU_ERR_NONE;
}

int npu_ref_tstore(const struct npu_ref_tile *t,
		   const struct npu_ref_scratch *s, uint64_t addr,
		   uint64_t stride, unsigned funct7, uint64_t *fault)
{
	unsigned w = 1u << (funct7 & 3), trans = !!(funct7 & NPU_TILE_TRANS);
	int err = tile_mem_check(s, addr, stride, funct7, fault);

	if (err)
		return err;
	/* r then c: with overlapping rows the last write wins */
	for (unsigned r = 0; r < DIM; r++)
		for (unsigned c = 0; c < DIM; c++) {
			uint8_t *p = s->bytes + (addr - NPU_LOCAL_SCRATCH) +
				     r * stride + c * w;
			uint32_t v = trans ? t->cell[c][r] : t->cell[r][c];

			for (unsigned i = 0; i < w; i++)
				p[i] = (uint8_t)(v >> (8 * i));
		}
	return NPU_ERR_NONE;
}

void npu_ref_tfill(struct npu_ref_tile *t, uint64_t value,
		   enum npu_tile_esize esize)
{
	uint32_t v = esize == NPU_TILE_E8 ? (uint8_t)value :
		     esize == NPU_TILE_E16 ? (uint16_t)value : (uint32_t)value;

	for (unsigned r = 0; r < DIM; r++)
		for (unsigned c = 0; c < DIM; c++)
			t->cell[r][c] = v;
}

/* An input cell of a float MMA, widened to f32 (exact). */
static float mma_in(uint32_t cell, unsigned type)
{
	switch (type) {
	case NPU_MMA_F16:
		return npu_f16_to_f32((uint16_t)cell);
	case NPU_MMA_BF16:
		return npu_bf16_to_f32((uint16_t)cell);
	default:
		return u2f(cell);
	}
}

int npu_ref_mma(struct npu_ref_tile *c, const struct npu_ref_tile *a,
		const struct npu_ref_tile *b, unsigned type)
{
	struct npu_ref_tile out;

	if (type >= NPU_MMA_TYPES)
		return -1;
	for (unsigned i = 0; i < DIM; i++)
		for (unsigned j = 0; j < DIM; j++) {
			uint32_t acc = c->cell[i][j];

			for (unsigned k = 0; k < DIM; k++) {
				uint32_t x = a->cell[i][k], y = b->cell[k][j];

				if (type == NPU_MMA_S8)
					acc += (uint32_t)(s8_of(x) * s8_of(y));
				else if (type == NPU_MMA_S32)
					acc += (uint32_t)(s32_of(x) * s32_of(y));
				else	/* one rounding per step, increasing k */
					acc = canon(fmaf(mma_in(x, type),
							 mma_in(y, type),
							 u2f(acc)));
			}
			out.cell[i][j] = acc;
		}
	*c = out;		/* every input read before any result lands */
	return 0;
}

/* RISC-V fmax.s: -0 < +0; one NaN gives the other operand. */
static uint32_t rv_fmax(uint32_t x, uint32_t y)
{
	float a = u2f(x), b = u2f(y);

	if (isnan(a) && isnan(b))
		return CANON_NAN;
	if (isnan(a))
		return y;
	if (isnan(b))
		return x;
	if (a == 0 && b == 0)
		return (x & y) >> 31 ? x : 0;	/* -0 only if both are */
	return a > b ? x : y;
}

/* e^x correctly rounded: expl() has 40 bits beyond f32's, and an input
 * whose result comes that close to a rounding boundary stops the test
 * rather than risk a wrong reference. Past expl()'s own range (x > 11356)
 * the result is +Inf without any doubt. */
uint32_t npu_ref_exp_f32(uint32_t x)
{
	float a = u2f(x), f, g;
	long double y, mid;

	if (isnan(a))
		return CANON_NAN;
	if (isinf(a))
		return a > 0 ? x : 0;
	y = expl((long double)a);
	if (isinf(y))
		return 0x7f800000;		/* far past f32's range */
	f = (float)y;
	if (isinf(f))
		mid = 0x1p128L - 0x1p103L;	/* FLT_MAX + half an ulp */
	else if ((long double)f == y)
		return f2u(f);			/* exact: x = 0 */
	else {
		g = nextafterf(f, (long double)f < y ? INFINITY : 0);
		mid = ((long double)f + (long double)g) / 2;
	}
	if (fabsl(y - mid) <= y * 0x1p-58L) {
		fprintf(stderr, "npu_ref_exp_f32(%#x): too close to call\n", x);
		abort();
	}
	return f2u(f);
}

static uint32_t tew1(unsigned op, uint32_t x, uint32_t y)
{
	float a = u2f(x), b = u2f(y);

	switch (op) {
	case NPU_TEW_ADD:
	case NPU_TEW_ADDROW:
		return canon(a + b);
	case NPU_TEW_SUB:
		return canon(a - b);
	case NPU_TEW_MUL:
		return canon(a * b);
	case NPU_TEW_MAX:
		return rv_fmax(x, y);
	case NPU_TEW_RELU:
		return rv_fmax(x, 0);
	case NPU_TEW_EXP:
		return npu_ref_exp_f32(x);
	case NPU_TEW_RCP:
		return canon(1.0f / a);
	case NPU_TEW_CVTF16:
		return isnan(a) ? 0x7e00u : npu_f16_from_f32(a);
	default:		/* NPU_TEW_CVTBF16 */
		return isnan(a) ? 0x7fc0u : npu_bf16_from_f32(a);
	}
}

int npu_ref_tew(struct npu_ref_tile *d, const struct npu_ref_tile *a,
		const struct npu_ref_tile *b, unsigned op)
{
	struct npu_ref_tile out;

	if (op >= NPU_TEW_OPS)
		return -1;
	for (unsigned r = 0; r < DIM; r++) {
		uint32_t row = a->cell[r][0];

		for (unsigned c = 1; c < DIM; c++) {
			if (op == NPU_TEW_ROWMAX)
				row = rv_fmax(row, a->cell[r][c]);
			else if (op == NPU_TEW_ROWSUM)
				row = canon(u2f(row) + u2f(a->cell[r][c]));
		}
		for (unsigned c = 0; c < DIM; c++) {
			if (op == NPU_TEW_ROWMAX || op == NPU_TEW_ROWSUM)
				out.cell[r][c] = row;
			else if (op == NPU_TEW_ADDROW)
				out.cell[r][c] = tew1(op, a->cell[r][c],
						      b->cell[0][c]);
			else
				out.cell[r][c] = tew1(op, a->cell[r][c],
						      b->cell[r][c]);
		}
	}
	*d = out;
	return 0;
}

/* Offsets of row (p, r) on both sides. */
static uint64_t mem_row(const struct npu_tdma_desc *d, uint32_t p, uint32_t r)
{
	return d->mem + p * d->mem_stride[1] + r * d->mem_stride[0];
}

static uint64_t scratch_row(const struct npu_tdma_desc *d, uint32_t p,
			    uint32_t r)
{
	return d->scratch + (uint64_t)p * d->scratch_stride[1] +
	       (uint64_t)r * d->scratch_stride[0];
}

#define VA_LIMIT	(1ull << 39)

int npu_ref_tdma(const struct npu_tdma_desc *d, struct npu_ref_scratch *s,
		 struct npu_ref_mem *m, uint64_t *fault, int *fault_pc)
{
	uint64_t n = d->size[0];
	uint32_t count;
	uint8_t *cnt;

	*fault_pc = 0;
	if (d->flags & ~(uint32_t)NPU_TDMA_TO_MEM) {
		*fault_pc = 1;
		return NPU_ERR_BAD_ARGS;
	}
	*fault = d->barrier;
	if (d->barrier % 8)
		return NPU_ERR_CU_MISALIGNED;
	if (!in_scratch(s, d->barrier, 8))
		return NPU_ERR_CU_LOCAL_RANGE;
	/* issue-time checks: the first bad byte in copy order, per side */
	for (int side = 0; side < 2 && n; side++)
		for (uint32_t p = 0; p < d->size[2]; p++)
			for (uint32_t r = 0; r < d->size[1]; r++) {
				uint64_t a;

				if (side == 0) {
					a = scratch_row(d, p, r);
					if (in_scratch(s, a, n))
						continue;
					*fault = in_scratch(s, a, 1) ?
						 NPU_LOCAL_SCRATCH + s->size : a;
					return NPU_ERR_CU_LOCAL_RANGE;
				}
				a = mem_row(d, p, r);
				if (a < VA_LIMIT && VA_LIMIT - a >= n)
					continue;
				*fault = a < VA_LIMIT ? VA_LIMIT : a;
				return NPU_ERR_MMU_FAULT;
			}
	/* the copy, byte by byte in order: later bytes win on overlap */
	for (uint32_t p = 0; p < d->size[2] && n; p++)
		for (uint32_t r = 0; r < d->size[1]; r++)
			for (uint64_t i = 0; i < n; i++) {
				uint64_t va = mem_row(d, p, r) + i;
				uint8_t *sp = s->bytes + (scratch_row(d, p, r) + i -
							  NPU_LOCAL_SCRATCH);

				if (va < m->va || va - m->va >= m->size) {
					*fault = va;
					return NPU_ERR_MMU_FAULT;
				}
				if (d->flags & NPU_TDMA_TO_MEM)
					m->bytes[va - m->va] = *sp;
				else
					*sp = m->bytes[va - m->va];
			}
	cnt = s->bytes + (d->barrier - NPU_LOCAL_SCRATCH);
	count = (uint32_t)cnt[0] | (uint32_t)cnt[1] << 8 |
		(uint32_t)cnt[2] << 16 | (uint32_t)cnt[3] << 24;
	count++;
	for (unsigned i = 0; i < 4; i++)
		cnt[i] = (uint8_t)(count >> (8 * i));
	return NPU_ERR_NONE;
}

uint64_t npu_ref_tdma_sectors(const struct npu_tdma_desc *d)
{
	uint64_t n = d->size[0], sectors = 0;

	for (uint32_t p = 0; p < d->size[2] && n; p++)
		for (uint32_t r = 0; r < d->size[1]; r++) {
			uint64_t a = mem_row(d, p, r);

			sectors += (a + n - 1) / 32 - a / 32 + 1;
		}
	return sectors;
}
