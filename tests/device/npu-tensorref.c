// SPDX-License-Identifier: MIT
/*
 * npu-tensorref: the host reference of the tensor engine and tile DMA
 * (tests/common/npu_tensor_ref.c) against hand-computed results of
 * Documentation/hw/npu.rst, "Tensor engine and tile DMA": every MMA type
 * with its edge values (signed zeros, denormals, Inf, NaN, overflow in the
 * f32 accumulation, the accumulation order, s8 extremes, s32 wrap), the
 * element-wise ops, tile loads and stores (stride, transpose, faults) and
 * DMA geometry and faults. Needs no device: the reference is what the
 * device's tensor engine is checked against (issue 32; npu-tensortest).
 * Usage: npu-tensorref. Prints TAP.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kselftest.h"
#include "npu_half.h"
#include "npu_tensor_ref.h"

#define DIM		NPU_TILE_DIM
#define SCR		NPU_LOCAL_SCRATCH
#define NAN_C		0x7fc00000u
#define PINF		0x7f800000u
#define NINF		0xff800000u
#define NZERO		0x80000000u
#define ONE		0x3f800000u
#define FLT_MAX_BITS	0x7f7fffffu

static void check(int cond, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ksft_test_result(cond, "%s\n", buf);
}

static uint32_t fbits(float f)
{
	return npu_f32_bits(f);
}

static struct npu_ref_tile zero_tile(void)
{
	struct npu_ref_tile t;

	memset(&t, 0, sizeof(t));
	return t;
}

/* C[0][0] after one MMA of type whose row 0 of A and column 0 of B are
 * given (n entries, the rest 0), C[0][0] starting at c0. */
static uint32_t mma00(unsigned type, uint32_t c0, const uint32_t *a,
		      const uint32_t *b, unsigned n)
{
	struct npu_ref_tile A = zero_tile(), B = zero_tile(), C = zero_tile();

	C.cell[0][0] = c0;
	for (unsigned k = 0; k < n; k++) {
		A.cell[0][k] = a[k];
		B.cell[k][0] = b[k];
	}
	npu_ref_mma(&C, &A, &B, type);
	return C.cell[0][0];
}

#define MMA00(type, c0, want, ...) do { \
	const uint32_t ab_[][2] = { __VA_ARGS__ }; \
	uint32_t a_[DIM], b_[DIM], got_; \
	unsigned n_ = sizeof(ab_) / sizeof(ab_[0]); \
	for (unsigned i_ = 0; i_ < n_; i_++) { \
		a_[i_] = ab_[i_][0]; \
		b_[i_] = ab_[i_][1]; \
	} \
	got_ = mma00(type, c0, a_, b_, n_); \
	check(got_ == (uint32_t)(want), "%s: %s: %#x (want %#x)", #type, \
	      what, got_, (uint32_t)(want)); \
} while (0)

static void test_mma_float(void)
{
	const char *what;

	/* f16: 1.0 = 0x3c00, 2.0 = 0x4000, 65504 = 0x7bff, 2^-24 = 0x0001 */
	what = "1*2 + 2*2 + C=0.5";
	MMA00(NPU_MMA_F16, 0x3f000000, 0x40d00000, { 0x3c00, 0x4000 },
	      { 0x4000, 0x4000 });
	/* 65504^2 = 4190209 * 2^10, exact; from k = 5 the partial sums need
	 * 25 and 26 bits and round (RNE): 67043332 * 2^10, not 67043344 */
	what = "16 x 65504^2: sum rounded per step";
	MMA00(NPU_MMA_F16, 0, 0x517fc001, { 0x7bff, 0x7bff }, { 0x7bff, 0x7bff },
	      { 0x7bff, 0x7bff }, { 0x7bff, 0x7bff }, { 0x7bff, 0x7bff },
	      { 0x7bff, 0x7bff }, { 0x7bff, 0x7bff }, { 0x7bff, 0x7bff },
	      { 0x7bff, 0x7bff }, { 0x7bff, 0x7bff }, { 0x7bff, 0x7bff },
	      { 0x7bff, 0x7bff }, { 0x7bff, 0x7bff }, { 0x7bff, 0x7bff },
	      { 0x7bff, 0x7bff }, { 0x7bff, 0x7bff });
	what = "denormal x denormal = 2^-48, kept";
	MMA00(NPU_MMA_F16, 0, 0x27800000, { 0x0001, 0x0001 });
	what = "-denormal x denormal onto -0 = -2^-48";
	MMA00(NPU_MMA_F16, NZERO, 0xa7800000, { 0x8001, 0x0001 });
	what = "Inf x 0 = canonical NaN";
	MMA00(NPU_MMA_F16, 0, NAN_C, { 0x7c00, 0x0000 });
	what = "Inf x 1 + -Inf x 1 = canonical NaN";
	MMA00(NPU_MMA_F16, 0, NAN_C, { 0x7c00, 0x3c00 }, { 0xfc00, 0x3c00 });
	what = "-NaN with payload in A = canonical NaN";
	MMA00(NPU_MMA_F16, ONE, NAN_C, { 0xfe01, 0x3c00 });
	what = "C = -Inf, finite products: -Inf";
	MMA00(NPU_MMA_F16, NINF, NINF, { 0x3c00, 0x3c00 });
	what = "C = -0, +0 x +0 products: +0";
	MMA00(NPU_MMA_F16, NZERO, 0, { 0, 0 });
	what = "C = -0, -0 x +0 in every k: -0";
	MMA00(NPU_MMA_F16, NZERO, NZERO, { 0x8000, 0 }, { 0x8000, 0 },
	      { 0x8000, 0 }, { 0x8000, 0 }, { 0x8000, 0 }, { 0x8000, 0 },
	      { 0x8000, 0 }, { 0x8000, 0 }, { 0x8000, 0 }, { 0x8000, 0 },
	      { 0x8000, 0 }, { 0x8000, 0 }, { 0x8000, 0 }, { 0x8000, 0 },
	      { 0x8000, 0 }, { 0x8000, 0 });
	what = "cell's upper 16 bits ignored";
	MMA00(NPU_MMA_F16, 0, 0x40000000, { 0xffff3c00, 0x12344000 });

	/* bf16: the upper half of an f32 */
	what = "1.5 x -2 + C=1 = -2";
	MMA00(NPU_MMA_BF16, ONE, 0xc0000000, { 0x3fc0, 0xc000 });
	what = "denormal 2^-133 x 1 = 2^-133 (f32 denormal)";
	MMA00(NPU_MMA_BF16, 0, 0x00010000, { 0x0001, 0x3f80 });
	what = "-2^-126 x 2^-126 in k=15 onto +0 rounds to -0";
	MMA00(NPU_MMA_BF16, 0, NZERO, { 0, 0 }, { 0, 0 }, { 0, 0 }, { 0, 0 },
	      { 0, 0 }, { 0, 0 }, { 0, 0 }, { 0, 0 }, { 0, 0 }, { 0, 0 },
	      { 0, 0 }, { 0, 0 }, { 0, 0 }, { 0, 0 }, { 0, 0 },
	      { 0x8080, 0x0080 });
	what = "2^-126 x 2^-126 onto 2^-149 stays 2^-149 (exact product)";
	MMA00(NPU_MMA_BF16, 0x00000001, 0x00000001, { 0x0080, 0x0080 });
	what = "2^127 x 2^127 overflows to +Inf";
	MMA00(NPU_MMA_BF16, 0, PINF, { 0x7f00, 0x7f00 });
	what = "sNaN 0x7f81 = canonical NaN";
	MMA00(NPU_MMA_BF16, 0, NAN_C, { 0x7f81, 0x3f80 });

	/* f32 */
	what = "fused: (1+2^-23)(1-2^-23) - 1 = -2^-46, one rounding";
	MMA00(NPU_MMA_F32, 0xbf800000, 0xa8800000, { 0x3f800001, 0x3f7ffffe });
	what = "order: 2^24 + 1 (tie: 2^24) - 2^24 = 0, not 1";
	MMA00(NPU_MMA_F32, 0x4b800000, 0, { ONE, ONE }, { 0x4b800000, 0xbf800000 });
	what = "RNE ties to even: 1 + 2^-24 = 1";
	MMA00(NPU_MMA_F32, ONE, ONE, { 0x33800000, ONE });
	what = "RNE ties to even: (1+2^-23) + 2^-24 = 1+2^-22";
	MMA00(NPU_MMA_F32, 0x3f800001, 0x3f800002, { 0x33800000, ONE });
	what = "FLT_MAX + FLT_MAX = +Inf, then - FLT_MAX stays +Inf";
	MMA00(NPU_MMA_F32, 0, PINF, { FLT_MAX_BITS, ONE }, { FLT_MAX_BITS, ONE },
	      { FLT_MAX_BITS, 0xbf800000 });
	what = "-FLT_MAX x 2 = -Inf";
	MMA00(NPU_MMA_F32, 0, NINF, { 0xff7fffff, 0x40000000 });
	/* -2^-149 x 0.5 = -2^-150 is a tie between -0 and -2^-149: -0 ... */
	what = "-2^-149 x 0.5 in k=15 rounds to -0";
	MMA00(NPU_MMA_F32, 0, NZERO, { 0, 0 }, { 0, 0 }, { 0, 0 }, { 0, 0 },
	      { 0, 0 }, { 0, 0 }, { 0, 0 }, { 0, 0 }, { 0, 0 }, { 0, 0 },
	      { 0, 0 }, { 0, 0 }, { 0, 0 }, { 0, 0 }, { 0, 0 },
	      { 0x80000001, 0x3f000000 });
	/* ... and in k=0 the later +0 x +0 steps make it -0 + +0 = +0 */
	what = "-2^-149 x 0.5 in k=0, then +0 products: +0";
	MMA00(NPU_MMA_F32, 0, 0, { 0x80000001, 0x3f000000 });
	what = "3 x 2^-150 rounds to 2^-148 (1.5 ulp of min denormal: to even)";
	MMA00(NPU_MMA_F32, 0, 0x00000002, { 0x00000003, 0x3f000000 });
	what = "full precision, no TF32: (1+2^-23) x 1 + 0";
	MMA00(NPU_MMA_F32, 0, 0x3f800001, { 0x3f800001, ONE });
	what = "NaN in C stays canonical NaN";
	MMA00(NPU_MMA_F32, 0xffc00123, NAN_C, { ONE, ONE });
}

static void test_mma_int(void)
{
	const char *what;
	struct npu_ref_tile A = zero_tile(), B = zero_tile(), C = zero_tile();
	unsigned bad = 0;

	what = "16 x (-128 x -128) = 262144";
	MMA00(NPU_MMA_S8, 0, 262144, { 0x80, 0x80 }, { 0x80, 0x80 }, { 0x80, 0x80 },
	      { 0x80, 0x80 }, { 0x80, 0x80 }, { 0x80, 0x80 }, { 0x80, 0x80 },
	      { 0x80, 0x80 }, { 0x80, 0x80 }, { 0x80, 0x80 }, { 0x80, 0x80 },
	      { 0x80, 0x80 }, { 0x80, 0x80 }, { 0x80, 0x80 }, { 0x80, 0x80 },
	      { 0x80, 0x80 });
	what = "-128 x 127 + 127 x 127 + C=-1 = -16256 + 16129 - 1 = -128";
	MMA00(NPU_MMA_S8, 0xffffffff, 0xffffff80, { 0x80, 0x7f }, { 0x7f, 0x7f });
	what = "only the low 8 bits: 0x1ff x 0x2ff = -1 x -1";
	MMA00(NPU_MMA_S8, 0, 1, { 0x1ff, 0x2ff });
	what = "INT32_MAX + 1 wraps to INT32_MIN";
	MMA00(NPU_MMA_S8, 0x7fffffff, 0x80000000, { 1, 1 });
	what = "s32: 2^16 x 2^16 keeps the low 32 bits (0) + 5";
	MMA00(NPU_MMA_S32, 5, 5, { 0x10000, 0x10000 });
	what = "s32: -1 x INT32_MIN = 2^31 wraps to INT32_MIN";
	MMA00(NPU_MMA_S32, 0, 0x80000000, { 0xffffffff, 0x80000000 });
	what = "s32: 0x7fffffff^2 = 2^62 - 2^32 + 1, low bits 1";
	MMA00(NPU_MMA_S32, 0, 1, { 0x7fffffff, 0x7fffffff });

	/* indexing: A[i][k] = 16i + k, B[k][j] = k + j, C[i][j] = 7; then
	 * C = 7 + sum_k (16i + k)(k + j) = 7 + 16i(120 + 16j) + 1240 + 120j */
	for (unsigned i = 0; i < DIM; i++)
		for (unsigned k = 0; k < DIM; k++) {
			A.cell[i][k] = 16 * i + k;
			B.cell[i][k] = i + k;
			C.cell[i][k] = 7;
		}
	npu_ref_mma(&C, &A, &B, NPU_MMA_S32);
	for (unsigned i = 0; i < DIM; i++)
		for (unsigned j = 0; j < DIM; j++)
			bad += C.cell[i][j] !=
			       7 + 16 * i * (120 + 16 * j) + 1240 + 120 * j;
	check(!bad, "s32 16x16x16: C[i][j] = 7 + 16i(120+16j) + 1240 + 120j "
	      "(%u cells wrong)", bad);

	/* C may be A: every input is read first. A = B = I*2, C = A: C = 2I + 4I */
	A = zero_tile();
	for (unsigned i = 0; i < DIM; i++)
		A.cell[i][i] = 2;
	npu_ref_mma(&A, &A, &A, NPU_MMA_S8);
	bad = 0;
	for (unsigned i = 0; i < DIM; i++)
		for (unsigned j = 0; j < DIM; j++)
			bad += A.cell[i][j] != (i == j ? 6u : 0u);
	check(!bad, "s8 with tc = ta = tb: 2I + 2I x 2I = 6I (%u wrong)", bad);
	check(npu_ref_mma(&C, &A, &B, NPU_MMA_TYPES) == -1,
	      "type %u is not defined", NPU_MMA_TYPES);
}

/* op applied to a one-row tile whose row 0 is a[] (b[] likewise). */
static void tew_row(unsigned op, const uint32_t *a, const uint32_t *b,
		    uint32_t *out)
{
	struct npu_ref_tile A = zero_tile(), B = zero_tile(), D;

	for (unsigned c = 0; c < DIM; c++) {
		A.cell[0][c] = a[c];
		B.cell[0][c] = b ? b[c] : 0;
	}
	npu_ref_tew(&D, &A, &B, op);
	memcpy(out, D.cell[0], sizeof(D.cell[0]));
}

static void tew_case(unsigned op, const char *name, uint32_t x, uint32_t y,
		     uint32_t want)
{
	uint32_t a[DIM] = { x }, b[DIM] = { y }, out[DIM];

	tew_row(op, a, b, out);
	check(out[0] == want, "TEW %s(%#x, %#x) = %#x (want %#x)", name, x, y,
	      out[0], want);
}

static void test_tew(void)
{
	uint32_t a[DIM], b[DIM], out[DIM];
	struct npu_ref_tile A = zero_tile(), B = zero_tile(), D;
	unsigned bad = 0;

	tew_case(NPU_TEW_ADD, "ADD", ONE, 0x40000000, 0x40400000);
	tew_case(NPU_TEW_ADD, "ADD", PINF, NINF, NAN_C);
	tew_case(NPU_TEW_ADD, "ADD", 0xffc00001, ONE, NAN_C);
	tew_case(NPU_TEW_ADD, "ADD", NZERO, NZERO, NZERO);
	/* FLT_MAX + 2^103 (half an ulp): the tie goes to the even 2^128 */
	tew_case(NPU_TEW_ADD, "ADD", FLT_MAX_BITS, 0x73000000, PINF);
	tew_case(NPU_TEW_SUB, "SUB", ONE, ONE, 0);
	tew_case(NPU_TEW_SUB, "SUB", 0x00800000, 0x00000001, 0x007fffff);
	tew_case(NPU_TEW_MUL, "MUL", 0x3f800001, 0x3f800001, 0x3f800002);
	tew_case(NPU_TEW_MUL, "MUL", 0, PINF, NAN_C);
	tew_case(NPU_TEW_MUL, "MUL", NZERO, ONE, NZERO);
	tew_case(NPU_TEW_MAX, "MAX", NZERO, 0, 0);
	tew_case(NPU_TEW_MAX, "MAX", 0, NZERO, 0);
	tew_case(NPU_TEW_MAX, "MAX", NZERO, NZERO, NZERO);
	tew_case(NPU_TEW_MAX, "MAX", 0x7fc00001, 0xc0000000, 0xc0000000);
	tew_case(NPU_TEW_MAX, "MAX", 0x7f800001, 0xffc00000, NAN_C);
	tew_case(NPU_TEW_RELU, "RELU", 0xc0000000, 0, 0);
	tew_case(NPU_TEW_RELU, "RELU", NZERO, 0, 0);
	tew_case(NPU_TEW_RELU, "RELU", 0xffc00000, 0, 0);
	tew_case(NPU_TEW_RELU, "RELU", 0x00000001, 0, 0x00000001);
	tew_case(NPU_TEW_EXP, "EXP", 0, 0, ONE);
	tew_case(NPU_TEW_EXP, "EXP", NZERO, 0, ONE);
	tew_case(NPU_TEW_EXP, "EXP", ONE, 0, 0x402df854);	/* e */
	tew_case(NPU_TEW_EXP, "EXP", 0xbf800000, 0, 0x3ebc5ab2); /* 1/e */
	tew_case(NPU_TEW_EXP, "EXP", 0x3f317218, 0, 0x40000000); /* ln 2 */
	/* near ties, checked with 60-digit decimal arithmetic: e^x lies 0.4997
	 * and 0.4996 ulp above these results (glibc's expf rounds them up) */
	tew_case(NPU_TEW_EXP, "EXP", 0x3c6ba654, 0, 0x3f81dab4);
	tew_case(NPU_TEW_EXP, "EXP", 0x41a14356, 0, 0x4e077487);
	tew_case(NPU_TEW_EXP, "EXP", NINF, 0, 0);
	tew_case(NPU_TEW_EXP, "EXP", PINF, 0, PINF);
	tew_case(NPU_TEW_EXP, "EXP", 0x42b20000, 0, PINF);	/* e^89 */
	tew_case(NPU_TEW_EXP, "EXP", 0xc2d00000, 0, 0);	/* e^-104 < 2^-150 */
	tew_case(NPU_TEW_EXP, "EXP", 0x7fc00001, 0, NAN_C);
	tew_case(NPU_TEW_RCP, "RCP", 0x40400000, 0, 0x3eaaaaab);	/* 1/3 */
	tew_case(NPU_TEW_RCP, "RCP", NZERO, 0, NINF);
	tew_case(NPU_TEW_RCP, "RCP", PINF, 0, 0);
	tew_case(NPU_TEW_RCP, "RCP", 0x7f000000, 0, 0x00400000);	/* 2^-127 */
	tew_case(NPU_TEW_CVTF16, "CVTF16", 0x477fe000, 0, 0x7bff);	/* 65504 */
	tew_case(NPU_TEW_CVTF16, "CVTF16", 0x477fefff, 0, 0x7bff);	/* < 65520 */
	tew_case(NPU_TEW_CVTF16, "CVTF16", 0x477ff000, 0, 0x7c00);	/* 65520: Inf */
	tew_case(NPU_TEW_CVTF16, "CVTF16", 0x33000000, 0, 0x0000);	/* 2^-25 tie */
	tew_case(NPU_TEW_CVTF16, "CVTF16", 0x33400000, 0, 0x0001);	/* 1.5*2^-25 */
	tew_case(NPU_TEW_CVTF16, "CVTF16", 0xb3c00000, 0, 0x8002);	/* -1.5*2^-24: even */
	tew_case(NPU_TEW_CVTF16, "CVTF16", 0xffc00123, 0, 0x7e00);
	tew_case(NPU_TEW_CVTBF16, "CVTBF16", 0x3f808000, 0, 0x3f80);	/* tie, even */
	tew_case(NPU_TEW_CVTBF16, "CVTBF16", 0x3f818000, 0, 0x3f82);	/* tie, up */
	tew_case(NPU_TEW_CVTBF16, "CVTBF16", 0x7f7fffff, 0, 0x7f80);	/* to Inf */
	tew_case(NPU_TEW_CVTBF16, "CVTBF16", 0xff800001, 0, 0x7fc0);

	/* ROWSUM in column order: 2^24 then fifteen 1s, each a tie to 2^24 */
	a[0] = 0x4b800000;
	for (unsigned c = 1; c < DIM; c++)
		a[c] = ONE;
	tew_row(NPU_TEW_ROWSUM, a, NULL, out);
	for (unsigned c = 0; c < DIM; c++)
		bad += out[c] != 0x4b800000;
	check(!bad, "ROWSUM 2^24 + 15 x 1 in order = 2^24, in every column");
	/* ones first: 15 + 2^24 is a tie between 2^24 + 14 and + 16: + 16 */
	for (unsigned c = 0; c < DIM - 1; c++)
		a[c] = ONE;
	a[DIM - 1] = 0x4b800000;
	tew_row(NPU_TEW_ROWSUM, a, NULL, out);
	check(out[5] == 0x4b800008, "ROWSUM 15 x 1 + 2^24 = 2^24 + 16 (%#x)",
	      out[5]);
	for (unsigned c = 0; c < DIM; c++)
		a[c] = NZERO;
	tew_row(NPU_TEW_ROWSUM, a, NULL, out);
	check(out[3] == NZERO, "ROWSUM of sixteen -0 = -0");
	a[7] = 0;
	tew_row(NPU_TEW_ROWMAX, a, NULL, out);
	check(out[0] == 0 && out[15] == 0, "ROWMAX of -0s and one +0 = +0");
	for (unsigned c = 0; c < DIM; c++)
		a[c] = 0xffc00000 + c;
	tew_row(NPU_TEW_ROWMAX, a, NULL, out);
	check(out[9] == NAN_C, "ROWMAX of NaNs = canonical NaN");
	a[11] = 0xc0400000;
	a[2] = 0xc0800000;
	tew_row(NPU_TEW_ROWMAX, a, NULL, out);
	check(out[9] == 0xc0400000, "ROWMAX of NaNs, -3 and -4 = -3");

	/* ADDROW: row 0 of b onto every row; td may be ta */
	for (unsigned r = 0; r < DIM; r++)
		for (unsigned c = 0; c < DIM; c++) {
			A.cell[r][c] = fbits(r);
			B.cell[r][c] = r ? PINF : fbits(16 * c);
		}
	npu_ref_tew(&A, &A, &B, NPU_TEW_ADDROW);
	bad = 0;
	for (unsigned r = 0; r < DIM; r++)
		for (unsigned c = 0; c < DIM; c++)
			bad += A.cell[r][c] != fbits(r + 16 * c);
	check(!bad, "ADDROW: a[r][c] + b[0][c], rows 1..15 of b unused");
	(void)b;
	(void)D;
	check(npu_ref_tew(&D, &A, &B, NPU_TEW_OPS) == -1, "op %u is not defined",
	      NPU_TEW_OPS);
}

#define SCR_BYTES	4096
static uint8_t scratch_buf[SCR_BYTES];
static struct npu_ref_scratch scr = { scratch_buf, SCR_BYTES };

/* byte o of the scratchpad pattern */
static uint8_t spat(uint64_t o)
{
	return (uint8_t)(o * 7 + 3);
}

static void scratch_pattern(void)
{
	for (unsigned i = 0; i < SCR_BYTES; i++)
		scratch_buf[i] = spat(i);
}

static uint32_t le(const uint8_t *p, unsigned w)
{
	uint32_t v = 0;

	for (unsigned i = 0; i < w; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

static void test_tile_mem(void)
{
	struct npu_ref_tile t, u, before;
	uint64_t fault = 0;
	unsigned bad = 0;
	int err;

	scratch_pattern();
	/* e16 from offset 6, rows 40 bytes apart: T[1][2] is at 6+40+4 = 50,
	 * bytes 50*7+3 = 0x161 and 0x168: 0x6861 */
	err = npu_ref_tload(&t, &scr, SCR + 6, 40, NPU_TILE_E16, &fault);
	for (unsigned r = 0; r < DIM; r++)
		for (unsigned c = 0; c < DIM; c++)
			bad += t.cell[r][c] != le(scratch_buf + 6 + 40 * r + 2 * c, 2);
	check(!err && t.cell[1][2] == 0x6861 && !bad,
	      "TLOAD e16 stride 40: T[1][2] = %#x (want 0x6861), %u cells off",
	      t.cell[1][2], bad);
	err = npu_ref_tload(&t, &scr, SCR + 6, 40, NPU_TILE_E16 | NPU_TILE_TRANS,
			    &fault);
	check(!err && t.cell[2][1] == 0x6861 && t.cell[1][2] ==
	      le(scratch_buf + 6 + 80 + 2, 2), "TLOAD e16 transposed: T[2][1] = "
	      "%#x (want 0x6861)", t.cell[2][1]);
	/* byte 36 is 36*7+3 = 255: zero-extended, not sign-extended */
	err = npu_ref_tload(&t, &scr, SCR + 36, 0, NPU_TILE_E8, &fault);
	check(!err && t.cell[0][0] == 0xff && t.cell[15][0] == 0xff &&
	      t.cell[7][1] == spat(37), "TLOAD e8 stride 0: every row the "
	      "same, 0xff zero-extended (%#x)", t.cell[0][0]);
	/* a negative stride is a wrapped 64-bit one: rows go down */
	err = npu_ref_tload(&t, &scr, SCR + 1024, (uint64_t)-64, NPU_TILE_E32,
			    &fault);
	check(!err && t.cell[15][0] == le(scratch_buf + 64, 4) &&
	      t.cell[0][3] == le(scratch_buf + 1036, 4),
	      "TLOAD e32 stride -64: T[15][0] from offset 64");

	/* TSTORE with stride 0: the last row (15) wins */
	for (unsigned r = 0; r < DIM; r++)
		for (unsigned c = 0; c < DIM; c++)
			t.cell[r][c] = 0xab00 + 16 * r + c;
	err = npu_ref_tstore(&t, &scr, SCR + 100, 0, NPU_TILE_E8, &fault);
	check(!err && scratch_buf[100] == 240 && scratch_buf[115] == 255 &&
	      scratch_buf[116] == spat(116) && scratch_buf[99] == spat(99),
	      "TSTORE e8 stride 0: row 15 (240..255) is left, low byte only");
	/* transposed store, transposed load: the same tile */
	err = npu_ref_tstore(&t, &scr, SCR + 2048, 68, NPU_TILE_E32 |
			     NPU_TILE_TRANS, &fault);
	err |= npu_ref_tload(&u, &scr, SCR + 2048, 68, NPU_TILE_E32 |
			     NPU_TILE_TRANS, &fault);
	check(!err && !memcmp(&t, &u, sizeof(t)) &&
	      le(scratch_buf + 2048 + 68 + 0, 4) == t.cell[0][1] &&
	      le(scratch_buf + 2048 + 68 * 2 + 4 * 3, 4) == t.cell[3][2] &&
	      le(scratch_buf + 2048 + 64, 4) == spat(2048 + 64) +
	      (uint32_t)spat(2049 + 64) * 256 + (uint32_t)spat(2050 + 64) *
	      65536 + (uint32_t)spat(2051 + 64) * 16777216,
	      "TSTORE e32 transposed, stride 68: memory (r, c) = T[c][r], the "
	      "gap untouched, and back");

	/* faults: nothing changes */
	before = t;
	err = npu_ref_tload(&t, &scr, SCR + 7, 40, NPU_TILE_E16, &fault);
	check(err == NPU_ERR_CU_MISALIGNED && fault == SCR + 7,
	      "TLOAD e16 at an odd address: CU_MISALIGNED, FAULT = it");
	err = npu_ref_tload(&t, &scr, SCR + 8, 6, NPU_TILE_E32, &fault);
	check(err == NPU_ERR_CU_MISALIGNED && fault == SCR + 14,
	      "TLOAD e32 with stride 6: CU_MISALIGNED, FAULT = addr + stride");
	/* row 15 starts 60 bytes before the end: its element 15 is outside */
	err = npu_ref_tload(&t, &scr, SCR + SCR_BYTES - 15 * 64 - 60, 64,
			    NPU_TILE_E32, &fault);
	check(err == NPU_ERR_CU_LOCAL_RANGE && fault == SCR + SCR_BYTES,
	      "TLOAD past the scratchpad: CU_LOCAL_RANGE at the first element "
	      "outside (%#llx)", (unsigned long long)fault);
	err = npu_ref_tstore(&t, &scr, 0x1000, 64, NPU_TILE_E32, &fault);
	check(err == NPU_ERR_CU_LOCAL_RANGE && fault == 0x1000,
	      "TSTORE to a device VA: CU_LOCAL_RANGE (tiles reach the "
	      "scratchpad only)");
	err = npu_ref_tload(&t, &scr, SCR, 64, 3, &fault);
	err = err == NPU_ERR_CU_ILLEGAL ?
	      npu_ref_tload(&t, &scr, SCR, 64, 8 | NPU_TILE_E8, &fault) : 0;
	check(err == NPU_ERR_CU_ILLEGAL && !memcmp(&t, &before, sizeof(t)),
	      "esize 3 and funct7 bit 3: CU_ILLEGAL; no faulting load changed "
	      "the tile");

	npu_ref_tfill(&t, 0x12345678, NPU_TILE_E16);
	npu_ref_tfill(&u, 0x12345678, NPU_TILE_E8);
	check(t.cell[0][0] == 0x5678 && t.cell[15][15] == 0x5678 &&
	      u.cell[9][4] == 0x78, "TFILL keeps the element's low bits");
}

#define MEM_VA		0x100000ull
#define MEM_BYTES	8192
static uint8_t mem_buf[MEM_BYTES];
static struct npu_ref_mem mem = { mem_buf, MEM_VA, MEM_BYTES };

static uint8_t mpat(uint64_t o)
{
	return (uint8_t)(o * 13 + 1);
}

static uint32_t count_at(unsigned off)
{
	return le(scratch_buf + off, 4);
}

static struct npu_tdma_desc desc(uint64_t m, uint64_t s, uint32_t x,
				 uint32_t y, uint32_t z)
{
	struct npu_tdma_desc d = {
		.mem = m, .scratch = s, .barrier = SCR,
		.size = { x, y, z },
	};

	return d;
}

static void test_tdma(void)
{
	struct npu_tdma_desc d;
	uint64_t fault;
	unsigned bad = 0;
	int err, pc;

	memset(scratch_buf, 0, sizeof(scratch_buf));
	for (unsigned i = 0; i < MEM_BYTES; i++)
		mem_buf[i] = mpat(i);

	d = desc(MEM_VA + 5, SCR + 64, 100, 1, 1);
	err = npu_ref_tdma(&d, &scr, &mem, &fault, &pc);
	for (unsigned i = 0; i < 100; i++)
		bad += scratch_buf[64 + i] != mpat(5 + i);
	check(!err && !bad && !scratch_buf[164] && !scratch_buf[63] &&
	      count_at(0) == 1, "1-D: 100 bytes from VA+5, count 1");

	d = desc(MEM_VA + 17, SCR + 200, 8, 4, 1);
	d.mem_stride[0] = 100;
	d.scratch_stride[0] = 16;
	err = npu_ref_tdma(&d, &scr, &mem, &fault, &pc);
	bad = 0;
	for (unsigned r = 0; r < 4; r++)
		for (unsigned b = 0; b < 16; b++)
			bad += scratch_buf[200 + 16 * r + b] !=
			       (b < 8 ? mpat(17 + 100 * r + b) : 0);
	check(!err && !bad && count_at(0) == 2,
	      "2-D: 4 rows of 8, 100 apart, into rows 16 apart; gaps kept");

	d = desc(MEM_VA, SCR + 512, 4, 3, 2);
	d.mem_stride[0] = 32;
	d.mem_stride[1] = 1000;
	d.scratch_stride[0] = 4;
	d.scratch_stride[1] = 12;
	d.barrier = SCR + 8;
	err = npu_ref_tdma(&d, &scr, &mem, &fault, &pc);
	bad = 0;
	for (unsigned p = 0; p < 2; p++)
		for (unsigned r = 0; r < 3; r++)
			for (unsigned b = 0; b < 4; b++)
				bad += scratch_buf[512 + 12 * p + 4 * r + b] !=
				       mpat(1000 * p + 32 * r + b);
	check(!err && !bad && scratch_buf[512 + 24] == 0 && count_at(8) == 1 &&
	      count_at(0) == 2, "3-D: 2 planes of 3 rows of 4, packed; its own "
	      "barrier word");

	/* scratchpad -> memory: scratch 512.. holds the 3-D result */
	d = desc(MEM_VA + 4096, SCR + 512, 6, 2, 1);
	d.mem_stride[0] = 10;
	d.scratch_stride[0] = 6;
	d.flags = NPU_TDMA_TO_MEM;
	err = npu_ref_tdma(&d, &scr, &mem, &fault, &pc);
	bad = 0;
	for (unsigned r = 0; r < 2; r++)
		for (unsigned b = 0; b < 10; b++)
			bad += mem_buf[4096 + 10 * r + b] != (b < 6 ?
			       scratch_buf[512 + 6 * r + b] : mpat(4096 + 10 * r + b));
	check(!err && !bad && count_at(0) == 3,
	      "to memory: 2 rows of 6, rows 10 apart in memory");

	/* destinations overlap: row 1 lands 4 bytes after row 0 and wins */
	d = desc(MEM_VA + 300, SCR + 1024, 8, 2, 1);
	d.mem_stride[0] = 50;
	d.scratch_stride[0] = 4;
	err = npu_ref_tdma(&d, &scr, &mem, &fault, &pc);
	check(!err && scratch_buf[1024 + 3] == mpat(303) &&
	      scratch_buf[1024 + 4] == mpat(350) &&
	      scratch_buf[1024 + 11] == mpat(357),
	      "overlapping rows in the destination: the later row wins");

	memset(scratch_buf + 1100, 0xee, 4);
	d = desc(MEM_VA, SCR + 1100, 0, 5, 5);
	err = npu_ref_tdma(&d, &scr, &mem, &fault, &pc);
	check(!err && scratch_buf[1100] == 0xee && count_at(0) == 5,
	      "size 0: nothing copied, still counted");
	memset(scratch_buf + 16, 0xff, 4);
	d = desc(MEM_VA, SCR + 1100, 1, 1, 1);
	d.barrier = SCR + 16;
	err = npu_ref_tdma(&d, &scr, &mem, &fault, &pc);
	check(!err && count_at(16) == 0 && scratch_buf[20] == 0,
	      "count 0xffffffff wraps to 0; reserved word untouched");

	/* faults at issue: nothing copied, nothing counted */
	memset(scratch_buf + 2000, 0, 64);
	d = desc(MEM_VA, SCR + 2000, 8, 1, 1);
	d.flags = 2;
	err = npu_ref_tdma(&d, &scr, &mem, &fault, &pc);
	check(err == NPU_ERR_BAD_ARGS && pc, "flags bit 1: BAD_ARGS at the PC");
	d.flags = 0;
	d.barrier = SCR + 4;
	err = npu_ref_tdma(&d, &scr, &mem, &fault, &pc);
	check(err == NPU_ERR_CU_MISALIGNED && fault == SCR + 4,
	      "barrier not 8-aligned: CU_MISALIGNED");
	d.barrier = SCR + SCR_BYTES;
	err = npu_ref_tdma(&d, &scr, &mem, &fault, &pc);
	check(err == NPU_ERR_CU_LOCAL_RANGE && fault == SCR + SCR_BYTES,
	      "barrier past the scratchpad: CU_LOCAL_RANGE");
	d = desc(MEM_VA, SCR + SCR_BYTES - 6, 8, 1, 1);
	err = npu_ref_tdma(&d, &scr, &mem, &fault, &pc);
	check(err == NPU_ERR_CU_LOCAL_RANGE && fault == SCR + SCR_BYTES,
	      "a scratchpad row crossing the end: FAULT = the first byte out");
	d = desc((1ull << 39) - 4, SCR + 4000, 8, 3, 1);
	d.scratch_stride[0] = 50;
	err = npu_ref_tdma(&d, &scr, &mem, &fault, &pc);
	check(err == NPU_ERR_CU_LOCAL_RANGE && fault == SCR + 4100,
	      "row 2 starts outside (and memory is >= 2^39 too): the "
	      "scratchpad side is checked first, FAULT = %#llx",
	      (unsigned long long)fault);
	d.size[1] = 1;
	err = npu_ref_tdma(&d, &scr, &mem, &fault, &pc);
	check(err == NPU_ERR_MMU_FAULT && fault == 1ull << 39,
	      "memory side crossing 2^39: MMU_FAULT at 2^39");
	check(count_at(0) == 5 && !scratch_buf[2000] && !scratch_buf[4000],
	      "no fault at issue counted or copied");
	/* sectors the cycle model charges: bytes 5..104 touch sectors 0..3;
	 * rows at 17, 117, 217, 317 (8 bytes) touch 1, 1, 2 and 2 */
	d = desc(MEM_VA + 5, SCR, 100, 1, 1);
	check(npu_ref_tdma_sectors(&d) == 4, "1-D bytes 5..104: 4 sectors");
	d = desc(MEM_VA + 17, SCR, 8, 4, 1);
	d.mem_stride[0] = 100;
	check(npu_ref_tdma_sectors(&d) == 6, "2-D rows at 17+100r: 6 sectors");
	d = desc(MEM_VA, SCR, 1024, 2, 3);
	d.mem_stride[0] = 4096;
	d.mem_stride[1] = 64;
	check(npu_ref_tdma_sectors(&d) == 192, "3-D 6 aligned KiB rows: 192 "
	      "sectors");
	d = desc(MEM_VA + 31, SCR, 2, 1, 1);
	check(npu_ref_tdma_sectors(&d) == 2, "2 bytes across a boundary: 2");
	d.size[0] = 0;
	check(npu_ref_tdma_sectors(&d) == 0, "size 0: no sectors");

	/* a fault while copying: unmapped past the buffer */
	d = desc(MEM_VA + MEM_BYTES - 4, SCR + 3000, 8, 1, 1);
	err = npu_ref_tdma(&d, &scr, &mem, &fault, &pc);
	check(err == NPU_ERR_MMU_FAULT && fault == MEM_VA + MEM_BYTES &&
	      count_at(0) == 5, "unmapped memory: MMU_FAULT at its first byte, "
	      "not counted");
}

int main(void)
{
	ksft_print_header();
	test_mma_float();
	test_mma_int();
	test_tew();
	test_tile_mem();
	test_tdma();
	ksft_set_plan(ksft_test_num());
	ksft_print_cnts();
	return ksft_get_fail_cnt() ? KSFT_FAIL : KSFT_PASS;
}
