// SPDX-License-Identifier: MIT
/*
 * conformance: see conformance.h. Built freestanding for RV64G (#included
 * by kernels/isa_conf.c) and for the host (x86-64, linked into
 * npu-isatest). Operands are read from volatile variables after the
 * rounding mode is set and results stored to volatile variables before the
 * flags are read, so neither compiler moves the operation across the FP
 * environment accesses.
 *
 * Where C leaves the outcome undefined (division by zero, INT_MIN / -1,
 * out-of-range float-to-integer conversion) the device runs the RISC-V
 * instruction by inline asm and the host a helper with the RISC-V
 * semantics (rv_*). Everything else is the same C on both sides.
 */
#include "conformance.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF	/* a * b + c must not become an fma */
#endif

#ifdef __riscv
/* ---------------------------------------------------- device (RV64G) */
static inline void cf_enter(uint32_t rm, uint32_t sticky)
{
	__asm__ volatile("fsrm %0\n\tfsflags %1" : : "r"((unsigned long)rm),
			 "r"((unsigned long)sticky) : "memory");
}

static inline uint32_t cf_leave(void)
{
	unsigned long f;

	__asm__ volatile("frflags %0\n\tfsrm zero" : "=r"(f) : : "memory");
	return (uint32_t)f;
}

/* RISC-V results are already canonical NaNs: nothing to normalise. */
static inline uint32_t canon_s(uint32_t v)
{
	return v;
}

static inline uint64_t canon_d(uint64_t v)
{
	return v;
}

#define RV_R(insn, a, b) __extension__ ({ \
	uint64_t r_; \
	__asm__ volatile(insn " %0, %1, %2" : "=r"(r_) : "r"(a), "r"(b)); \
	r_; })
#define rv_div(a, b)	RV_R("div", a, b)
#define rv_divu(a, b)	RV_R("divu", a, b)
#define rv_rem(a, b)	RV_R("rem", a, b)
#define rv_remu(a, b)	RV_R("remu", a, b)
#define rv_divw(a, b)	RV_R("divw", a, b)
#define rv_divuw(a, b)	RV_R("divuw", a, b)
#define rv_remw(a, b)	RV_R("remw", a, b)
#define rv_remuw(a, b)	RV_R("remuw", a, b)

/* float/double to integer with the dynamic rounding mode (frm) */
#define RV_CVT(insn, x, rm) __extension__ ({ \
	(void)(rm); \
	uint64_t r_; \
	__asm__ volatile(insn " %0, %1, dyn" : "=r"(r_) : "f"(x) : "memory"); \
	r_; })
#define rv_cvt_w_s(x, rm)	RV_CVT("fcvt.w.s", x, rm)
#define rv_cvt_wu_s(x, rm)	RV_CVT("fcvt.wu.s", x, rm)
#define rv_cvt_l_s(x, rm)	RV_CVT("fcvt.l.s", x, rm)
#define rv_cvt_lu_s(x, rm)	RV_CVT("fcvt.lu.s", x, rm)
#define rv_cvt_w_d(x, rm)	RV_CVT("fcvt.w.d", x, rm)
#define rv_cvt_wu_d(x, rm)	RV_CVT("fcvt.wu.d", x, rm)
#define rv_cvt_l_d(x, rm)	RV_CVT("fcvt.l.d", x, rm)
#define rv_cvt_lu_d(x, rm)	RV_CVT("fcvt.lu.d", x, rm)
#define rv_fma_nv(a, b)		((void)(a), (void)(b))	/* the hardware's */
#define rv_rmm_fix(k, r)	(r)	/* the hardware rounds RMM itself */

#else
/* ------------------------------------------------------- host (x86-64) */
#include <fenv.h>
#include <math.h>

static inline void cf_enter(uint32_t rm, uint32_t sticky)
{
	static const int mode[5] = {
		FE_TONEAREST, FE_TOWARDZERO, FE_DOWNWARD, FE_UPWARD, FE_TONEAREST
	};

	fesetround(mode[rm < 5 ? rm : 0]);
	feclearexcept(FE_ALL_EXCEPT);
	feraiseexcept((sticky & 16 ? FE_INVALID : 0) |
		      (sticky & 8 ? FE_DIVBYZERO : 0) |
		      (sticky & 4 ? FE_OVERFLOW : 0) |
		      (sticky & 2 ? FE_UNDERFLOW : 0) |
		      (sticky & 1 ? FE_INEXACT : 0));
}

/* fetestexcept() in RISC-V fflags bit order */
static inline uint32_t cf_leave(void)
{
	int ex = fetestexcept(FE_ALL_EXCEPT);

	fesetround(FE_TONEAREST);
	return (ex & FE_INVALID ? 16 : 0) | (ex & FE_DIVBYZERO ? 8 : 0) |
	       (ex & FE_OVERFLOW ? 4 : 0) | (ex & FE_UNDERFLOW ? 2 : 0) |
	       (ex & FE_INEXACT ? 1 : 0);
}

/*
 * x86 propagates a NaN operand's payload (quietened), RISC-V always
 * returns the canonical NaN: the host's NaN results are normalised to it.
 */
static inline uint32_t canon_s(uint32_t v)
{
	return (v & 0x7fffffffu) > 0x7f800000u ? 0x7fc00000u : v;
}

static inline uint64_t canon_d(uint64_t v)
{
	return (v & ~(1ull << 63)) > 0x7ff0000000000000ull ?
	       0x7ff8000000000000ull : v;
}

/* The RISC-V results where C has none (M extension, "Division"). */
static uint64_t rv_div(int64_t a, int64_t b)
{
	if (!b)
		return ~0ull;
	if (a == INT64_MIN && b == -1)
		return (uint64_t)a;
	return (uint64_t)(a / b);
}

static uint64_t rv_rem(int64_t a, int64_t b)
{
	if (!b)
		return (uint64_t)a;
	if (a == INT64_MIN && b == -1)
		return 0;
	return (uint64_t)(a % b);
}

static uint64_t rv_divu(uint64_t a, uint64_t b)
{
	return b ? a / b : ~0ull;
}

static uint64_t rv_remu(uint64_t a, uint64_t b)
{
	return b ? a % b : a;
}

static uint64_t rv_divw(uint64_t a, uint64_t b)
{
	int32_t x = (int32_t)a, y = (int32_t)b;

	if (!y)
		return ~0ull;
	if (x == INT32_MIN && y == -1)
		return (uint64_t)(int64_t)x;
	return (uint64_t)(int64_t)(x / y);
}

static uint64_t rv_remw(uint64_t a, uint64_t b)
{
	int32_t x = (int32_t)a, y = (int32_t)b;

	if (!y)
		return (uint64_t)(int64_t)x;
	if (x == INT32_MIN && y == -1)
		return 0;
	return (uint64_t)(int64_t)(x % y);
}

static uint64_t rv_divuw(uint64_t a, uint64_t b)
{
	uint32_t x = (uint32_t)a, y = (uint32_t)b;

	return (uint64_t)(int64_t)(int32_t)(y ? x / y : 0xffffffffu);
}

static uint64_t rv_remuw(uint64_t a, uint64_t b)
{
	uint32_t x = (uint32_t)a, y = (uint32_t)b;

	return (uint64_t)(int64_t)(int32_t)(y ? x % y : x);
}

/*
 * fcvt.{w,wu,l,lu}: round in mode rm (4 = ties away), saturate out of
 * range and NaN with NV, NX when inexact; 32-bit results sign-extended.
 * The host raises the flags itself (the caller reads them after).
 */
static uint64_t rv_cvt(double v, uint32_t rm, int sgn, int bits)
{
	volatile double one = 1.0, zero = 0.0, tiny = 1e-300;
	double r, lo, hi;

	if (v != v) {
		volatile double nv = zero / zero;

		(void)nv;
		if (!sgn)
			return ~0ull;
		return bits == 32 ? 0x7fffffffull : 0x7fffffffffffffffull;
	}
	switch (rm) {
	case 1:
		r = trunc(v);
		break;
	case 2:
		r = floor(v);
		break;
	case 3:
		r = ceil(v);
		break;
	case 4:
		r = round(v);
		break;
	default:
		r = nearbyint(v);	/* to nearest even: the mode is RNE */
		break;
	}
	lo = sgn ? (bits == 32 ? -0x1p31 : -0x1p63) : 0;
	hi = sgn ? (bits == 32 ? 0x1p31 : 0x1p63) : (bits == 32 ? 0x1p32 : 0x1p64);
	feclearexcept(FE_ALL_EXCEPT);
	if (r < lo || r >= hi) {
		volatile double nv = zero / zero;

		(void)nv;
		if (sgn) {
			if (v < 0)
				return bits == 32 ? (uint64_t)(int64_t)INT32_MIN :
				       (uint64_t)INT64_MIN;
			return bits == 32 ? 0x7fffffffull : 0x7fffffffffffffffull;
		}
		return v < 0 ? 0 : ~0ull;
	}
	if (r != v) {
		volatile double nx = one + tiny;

		(void)nx;
	}
	if (sgn)
		return (uint64_t)(int64_t)r;
	if (bits == 32)
		return (uint64_t)(int64_t)(int32_t)(uint32_t)r;
	return (uint64_t)r;
}

/*
 * inf * 0 in a fused multiply-add raises NV even when the addend is a
 * quiet NaN on RISC-V; IEEE 754 leaves that case open and glibc's fma()
 * does not raise it.
 */
static void rv_fma_nv(double a, double b)
{
	if ((isinf(a) && b == 0) || (a == 0 && isinf(b))) {
		volatile double zero = 0.0, nv = zero / zero;

		(void)nv;
	}
}

/*
 * RMM (round to nearest, ties to max magnitude) has no x86 mode: the host
 * runs those cases in RNE (which raises the same flags: a tie is always
 * inexact and never changes overflow or tininess) and then moves a result
 * whose exact value lies halfway to the neighbour of larger magnitude.
 * The exact value comes from a wider type: f32 operations in double, f64
 * ones in binary128, integers in 128 bits. Sums whose exponents are too
 * far apart to be exact are too far from a midpoint to tie; quotients
 * round to a midpoint only when they are one. Square roots never tie;
 * fused multiply-adds are not run in RMM.
 */
static uint64_t bits_of_f(float f)
{
	union { float f; uint32_t u; } x = { .f = f };

	return x.u;
}

static uint64_t bits_of_d(double f)
{
	union { double f; uint64_t u; } x = { .f = f };

	return x.u;
}

static float rmm_s(double x, float rn)
{
	float o = (double)rn < x ? nextafterf(rn, INFINITY) : nextafterf(rn, -INFINITY);

	if (isinf(rn) || isnan(rn) || (double)rn == x)
		return rn;
	if (x - (double)rn == (double)o - x)
		return fabsf(o) > fabsf(rn) ? o : rn;
	return rn;
}

static double rmm_d(__float128 x, double rn)
{
	double o = (__float128)rn < x ? nextafter(rn, INFINITY) : nextafter(rn, -INFINITY);

	if (isinf(rn) || isnan(rn) || (__float128)rn == x)
		return rn;
	if (x - (__float128)rn == (__float128)o - x)
		return fabs(o) > fabs(rn) ? o : rn;
	return rn;
}

/* an integer's RMM rounding, from its RNE rounding rn and neighbour o */
static double rmm_i(__int128 x, double rn, double o)
{
	__int128 d1 = x - (__int128)rn, d2 = (__int128)o - x;

	if (d1 && (d1 < 0 ? -d1 : d1) == (d2 < 0 ? -d2 : d2))
		return fabs(o) > fabs(rn) ? o : rn;
	return rn;
}

static uint64_t rv_rmm_fix(const struct conf_case *k, uint64_t r)
{
	union { uint32_t u; float f; } a = { .u = (uint32_t)k->a },
		b = { .u = (uint32_t)k->b }, fr = { .u = (uint32_t)r };
	union { uint64_t u; double f; } da = { .u = k->a }, db = { .u = k->b },
		dr = { .u = r };
	__int128 ix;
	float fo;
	double o;

	if (k->rm != 4)
		return r;
	switch (k->fn) {
	case CF_FADD_S:
		return canon_s(bits_of_f(rmm_s((double)a.f + b.f, fr.f)));
	case CF_FSUB_S:
		return canon_s(bits_of_f(rmm_s((double)a.f - b.f, fr.f)));
	case CF_FMUL_S:
		return canon_s(bits_of_f(rmm_s((double)a.f * b.f, fr.f)));
	case CF_FDIV_S:
		return canon_s(bits_of_f(rmm_s((double)a.f / b.f, fr.f)));
	case CF_CVT_S_D:
		return canon_s(bits_of_f(rmm_s(da.f, fr.f)));
	case CF_FADD_D:
		return canon_d(bits_of_d(rmm_d((__float128)da.f + db.f, dr.f)));
	case CF_FSUB_D:
		return canon_d(bits_of_d(rmm_d((__float128)da.f - db.f, dr.f)));
	case CF_FMUL_D:
		return canon_d(bits_of_d(rmm_d((__float128)da.f * db.f, dr.f)));
	case CF_FDIV_D:
		return canon_d(bits_of_d(rmm_d((__float128)da.f / db.f, dr.f)));
	case CF_CVT_S_W:
	case CF_CVT_S_WU:
	case CF_CVT_S_L:
	case CF_CVT_S_LU:
		ix = k->fn == CF_CVT_S_W ? (__int128)(int32_t)k->a :
		     k->fn == CF_CVT_S_WU ? (__int128)(uint32_t)k->a :
		     k->fn == CF_CVT_S_L ? (__int128)(int64_t)k->a :
		     (__int128)k->a;
		fo = (__int128)fr.f < ix ? nextafterf(fr.f, INFINITY) :
		     nextafterf(fr.f, -INFINITY);
		return bits_of_f((float)rmm_i(ix, fr.f, fo));
	case CF_CVT_D_W:
	case CF_CVT_D_WU:
	case CF_CVT_D_L:
	case CF_CVT_D_LU:
		ix = k->fn == CF_CVT_D_W ? (__int128)(int32_t)k->a :
		     k->fn == CF_CVT_D_WU ? (__int128)(uint32_t)k->a :
		     k->fn == CF_CVT_D_L ? (__int128)(int64_t)k->a :
		     (__int128)k->a;
		o = (__int128)dr.f < ix ? nextafter(dr.f, INFINITY) :
		    nextafter(dr.f, -INFINITY);
		return bits_of_d(rmm_i(ix, dr.f, o));
	default:
		return r;
	}
}

#define rv_cvt_w_s(x, rm)	rv_cvt(x, rm, 1, 32)
#define rv_cvt_wu_s(x, rm)	rv_cvt(x, rm, 0, 32)
#define rv_cvt_l_s(x, rm)	rv_cvt(x, rm, 1, 64)
#define rv_cvt_lu_s(x, rm)	rv_cvt(x, rm, 0, 64)
#define rv_cvt_w_d(x, rm)	rv_cvt(x, rm, 1, 32)
#define rv_cvt_wu_d(x, rm)	rv_cvt(x, rm, 0, 32)
#define rv_cvt_l_d(x, rm)	rv_cvt(x, rm, 1, 64)
#define rv_cvt_lu_d(x, rm)	rv_cvt(x, rm, 0, 64)
#endif

/* ------------------------------------------------------- both sides */

union f32u {
	float f;
	uint32_t u;
};
union f64u {
	double f;
	uint64_t u;
};

static inline float f32(uint64_t v)
{
	union f32u x = { .u = (uint32_t)v };

	return x.f;
}

static inline double f64(uint64_t v)
{
	union f64u x = { .u = v };

	return x.f;
}

static inline uint64_t bits32(float f)
{
	union f32u x = { .f = f };

	return x.u;
}

static inline uint64_t bits64(double f)
{
	union f64u x = { .f = f };

	return x.u;
}

/* A word in memory read back with narrower signed and unsigned loads. */
union cf_mem {
	uint64_t q;
	int8_t b[8];
	uint8_t ub[8];
	int16_t h[4];
	uint16_t uh[4];
	int32_t w[2];
	uint32_t uw[2];
};

static uint64_t conf_int(uint32_t fn, uint64_t a, uint64_t b)
{
	volatile union cf_mem m = { .q = a };
	int64_t sa = (int64_t)a, sb = (int64_t)b;

	switch (fn) {
	case CF_ADD:
		return a + b;
	case CF_SUB:
		return a - b;
	case CF_MUL:
		return a * b;
	case CF_ADDW:
		return (uint64_t)(int64_t)(int32_t)(uint32_t)(a + b);
	case CF_SUBW:
		return (uint64_t)(int64_t)(int32_t)(uint32_t)(a - b);
	case CF_MULW:
		return (uint64_t)(int64_t)(int32_t)((uint32_t)a * (uint32_t)b);
	case CF_MULH:
		return (uint64_t)(((__int128)sa * sb) >> 64);
	case CF_MULHU:
		return (uint64_t)(((unsigned __int128)a * b) >> 64);
	case CF_MULHSU:
		return (uint64_t)(((__int128)sa * (__int128)(unsigned __int128)b) >> 64);
	case CF_DIV:
		if (b && !(sa == INT64_MIN && sb == -1))
			return (uint64_t)(sa / sb);
		return rv_div(a, b);
	case CF_REM:
		if (b && !(sa == INT64_MIN && sb == -1))
			return (uint64_t)(sa % sb);
		return rv_rem(a, b);
	case CF_DIVU:
		return b ? a / b : rv_divu(a, b);
	case CF_REMU:
		return b ? a % b : rv_remu(a, b);
	case CF_DIVW:
		if ((int32_t)b && !((int32_t)a == INT32_MIN && (int32_t)b == -1))
			return (uint64_t)(int64_t)((int32_t)a / (int32_t)b);
		return rv_divw(a, b);
	case CF_REMW:
		if ((int32_t)b && !((int32_t)a == INT32_MIN && (int32_t)b == -1))
			return (uint64_t)(int64_t)((int32_t)a % (int32_t)b);
		return rv_remw(a, b);
	case CF_DIVUW:
		if ((uint32_t)b)
			return (uint64_t)(int64_t)(int32_t)((uint32_t)a / (uint32_t)b);
		return rv_divuw(a, b);
	case CF_REMUW:
		if ((uint32_t)b)
			return (uint64_t)(int64_t)(int32_t)((uint32_t)a % (uint32_t)b);
		return rv_remuw(a, b);
	case CF_SLL:
		return a << (b & 63);
	case CF_SRL:
		return a >> (b & 63);
	case CF_SRA:
		return (uint64_t)(sa >> (b & 63));
	case CF_SLLW:
		return (uint64_t)(int64_t)(int32_t)((uint32_t)a << (b & 31));
	case CF_SRLW:
		return (uint64_t)(int64_t)(int32_t)((uint32_t)a >> (b & 31));
	case CF_SRAW:
		return (uint64_t)(int64_t)((int32_t)a >> (b & 31));
	case CF_SLT:
		return sa < sb;
	case CF_SLTU:
		return a < b;
	case CF_LB:
		return (uint64_t)(int64_t)m.b[b & 7];
	case CF_LBU:
		return m.ub[b & 7];
	case CF_LH:
		return (uint64_t)(int64_t)m.h[b & 3];
	case CF_LHU:
		return m.uh[b & 3];
	case CF_LW:
		return (uint64_t)(int64_t)m.w[b & 1];
	case CF_LWU:
		return m.uw[b & 1];
	case CF_SEXT_W:
		return (uint64_t)(int64_t)(int32_t)a;
	case CF_SEXT_H:
		return (uint64_t)(int64_t)(int16_t)a;
	case CF_SEXT_B:
		return (uint64_t)(int64_t)(int8_t)a;
	case CF_ZEXT_W:
		return (uint32_t)a;
	default:
		return 0xbad;
	}
}

static uint64_t conf_f32(uint32_t fn, uint32_t rm, uint64_t ua, uint64_t ub,
			uint64_t uc)
{
	volatile float a = f32(ua), b = f32(ub), c = f32(uc);
	volatile float r;
	volatile int t;

	switch (fn) {
	case CF_FADD_S:
		r = a + b;
		break;
	case CF_FSUB_S:
		r = a - b;
		break;
	case CF_FMUL_S:
		r = a * b;
		break;
	case CF_FDIV_S:
		r = a / b;
		break;
	case CF_FSQRT_S:
		r = __builtin_sqrtf(a);
		break;
	case CF_FMADD_S:
		r = __builtin_fmaf(a, b, c);
		rv_fma_nv(a, b);
		break;
	case CF_FMSUB_S:
		r = __builtin_fmaf(a, b, -c);
		rv_fma_nv(a, b);
		break;
	case CF_FNMADD_S:
		r = __builtin_fmaf(-a, b, -c);
		rv_fma_nv(a, b);
		break;
	case CF_FNMSUB_S:
		r = __builtin_fmaf(-a, b, c);
		rv_fma_nv(a, b);
		break;
	case CF_FEQ_S:
		t = a == b;
		return t;
	case CF_FLT_S:
		t = a < b;
		return t;
	case CF_FLE_S:
		t = a <= b;
		return t;
	/* sign injection is no arithmetic: NaN payloads stay (no canon_s) */
	case CF_FSGNJ_S:
		r = __builtin_copysignf(a, b);
		return bits32(r);
	case CF_FNEG_S:
		r = -a;
		return bits32(r);
	case CF_FABS_S:
		r = __builtin_fabsf(a);
		return bits32(r);
	case CF_CVT_D_S: {
		volatile double d = a;

		return canon_d(bits64(d));
	}
	case CF_CVT_W_S:
		return rv_cvt_w_s(a, rm);
	case CF_CVT_WU_S:
		return rv_cvt_wu_s(a, rm);
	case CF_CVT_L_S:
		return rv_cvt_l_s(a, rm);
	case CF_CVT_LU_S:
		return rv_cvt_lu_s(a, rm);
	case CF_TRUNC_W_S:
		/* well-defined C: only in-range values are converted */
		if (a > -2147483904.0f && a < 2147483648.0f)
			return (uint64_t)(int64_t)(int32_t)a;
		return 0;
	default:
		return 0xbad;
	}
	return canon_s(bits32(r));
}

static uint64_t conf_f64(uint32_t fn, uint32_t rm, uint64_t ua, uint64_t ub,
			 uint64_t uc)
{
	volatile double a = f64(ua), b = f64(ub), c = f64(uc);
	volatile double r;
	volatile int t;

	switch (fn) {
	case CF_FADD_D:
		r = a + b;
		break;
	case CF_FSUB_D:
		r = a - b;
		break;
	case CF_FMUL_D:
		r = a * b;
		break;
	case CF_FDIV_D:
		r = a / b;
		break;
	case CF_FSQRT_D:
		r = __builtin_sqrt(a);
		break;
	case CF_FMADD_D:
		r = __builtin_fma(a, b, c);
		rv_fma_nv(a, b);
		break;
	case CF_FMSUB_D:
		r = __builtin_fma(a, b, -c);
		rv_fma_nv(a, b);
		break;
	case CF_FNMADD_D:
		r = __builtin_fma(-a, b, -c);
		rv_fma_nv(a, b);
		break;
	case CF_FNMSUB_D:
		r = __builtin_fma(-a, b, c);
		rv_fma_nv(a, b);
		break;
	case CF_FEQ_D:
		t = a == b;
		return t;
	case CF_FLT_D:
		t = a < b;
		return t;
	case CF_FLE_D:
		t = a <= b;
		return t;
	case CF_FSGNJ_D:
		r = __builtin_copysign(a, b);
		return bits64(r);
	case CF_FNEG_D:
		r = -a;
		return bits64(r);
	case CF_FABS_D:
		r = __builtin_fabs(a);
		return bits64(r);
	case CF_CVT_S_D: {
		volatile float s = (float)a;

		return canon_s(bits32(s));
	}
	case CF_CVT_W_D:
		return rv_cvt_w_d(a, rm);
	case CF_CVT_WU_D:
		return rv_cvt_wu_d(a, rm);
	case CF_CVT_L_D:
		return rv_cvt_l_d(a, rm);
	case CF_CVT_LU_D:
		return rv_cvt_lu_d(a, rm);
	case CF_TRUNC_L_D:
		if (a > -0x1.0000000000001p63 && a < 0x1p63)
			return (uint64_t)(int64_t)a;
		return 0;
	default:
		return 0xbad;
	}
	return canon_d(bits64(r));
}

/* Integer to float: rounded in the current mode on both sides. */
static uint64_t conf_i2f(uint32_t fn, uint64_t ua)
{
	volatile uint64_t a = ua;
	volatile float s;
	volatile double d;

	switch (fn) {
	case CF_CVT_S_W:
		s = (float)(int32_t)a;
		return bits32(s);
	case CF_CVT_S_WU:
		s = (float)(uint32_t)a;
		return bits32(s);
	case CF_CVT_S_L:
		s = (float)(int64_t)a;
		return bits32(s);
	case CF_CVT_S_LU:
		s = (float)a;
		return bits32(s);
	case CF_CVT_D_W:
		d = (double)(int32_t)a;
		return bits64(d);
	case CF_CVT_D_WU:
		d = (double)(uint32_t)a;
		return bits64(d);
	case CF_CVT_D_L:
		d = (double)(int64_t)a;
		return bits64(d);
	case CF_CVT_D_LU:
		d = (double)a;
		return bits64(d);
	default:
		return 0xbad;
	}
}

uint64_t conf_eval(const struct conf_case *k, uint32_t *flags)
{
	volatile uint64_t r;

	cf_enter(k->rm, k->sticky);
	if (k->fn < CF_FADD_S)
		r = conf_int(k->fn, k->a, k->b);
	else if (k->fn < CF_FADD_D || k->fn == CF_CVT_D_S ||
		 (k->fn >= CF_CVT_W_S && k->fn <= CF_CVT_LU_S) ||
		 k->fn == CF_TRUNC_W_S)
		r = conf_f32(k->fn, k->rm, k->a, k->b, k->c);
	else if (k->fn < CF_CVT_S_W || k->fn >= CF_CVT_W_D)
		r = conf_f64(k->fn, k->rm, k->a, k->b, k->c);
	else
		r = conf_i2f(k->fn, k->a);
	*flags = cf_leave() | k->sticky;	/* fflags are sticky */
	return rv_rmm_fix(k, r);
}
