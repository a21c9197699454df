// SPDX-License-Identifier: MIT
/*
 * npu-isatest: the compute units' instruction set over qtest: conformance
 * of RV64G against the host (differential), RISC-V specific edge cases,
 * atomics, faults and where they are reported, LAUNCH_CODE validation,
 * and fuzzing of code and launch packets.
 * Usage: npu-isatest <qemu-system-x86_64>. Prints TAP 13. Kernels are read
 * from the kernels/ directory beside this program.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conformance.h"
#include "devlib.h"

#define FZ_CODE_VA	0x5000000000ull	/* fuzz code pages */
#define FZ_PAGES	16
#define ARRAY_N(a)	(sizeof(a) / sizeof((a)[0]))

static unsigned cu_threads;
static const char *inst_opts;	/* the current instance's device options */

/* ----------------------------------------------------- conformance */

static const char *const conf_name[] = {
#define CONF_NAME(n, k) #n,
	CONF_FNS(CONF_NAME)
#undef CONF_NAME
};
static const uint8_t conf_kind[] = {
#define CONF_KIND(n, k) k,
	CONF_FNS(CONF_KIND)
#undef CONF_KIND
};

static const uint64_t int_edges[] = {
	0, 1, 2, 3, 7, ~0ull, ~1ull, 0x8000000000000000ull,
	0x7fffffffffffffffull, 0x80000000ull, 0x7fffffffull, 0xffffffffull,
	0xffffffff80000000ull, 0x100000000ull, 0x8000ull, 0x7fffull,
	0xffffull, 0x80ull, 0x7full, 0xffull, 31, 32, 33, 63, 64, 65,
	0x123456789abcdef0ull, 0xfedcba9876543210ull, 10, ~9ull,
};
static const uint32_t f32_edges[] = {
	0, 0x80000000, 0x3f800000, 0xbf800000, 0x7f800000, 0xff800000,
	0x7fc00000, 0xffc00000, 0x7fc12345, 0x7f800001, 0xff812345,
	0x00800000, 0x80800000, 0x7f7fffff, 0xff7fffff, 0x00000001,
	0x80000001, 0x007fffff, 0x3f000000, 0x3fc00000, 0x40200000,
	0xc0200000, 0x4b800001, 0x4f000000, 0xcf000000, 0x4f800000,
	0x5f000000, 0xdf000000, 0x5f800000, 0x4effffff, 0x33800000,
	0x34000000, 0x40490fdb, 0x1e3ce508, 0x0c000000,
};
static const uint64_t f64_edges[] = {
	0, 0x8000000000000000ull, 0x3ff0000000000000ull,
	0xbff0000000000000ull, 0x7ff0000000000000ull, 0xfff0000000000000ull,
	0x7ff8000000000000ull, 0xfff8000000000000ull, 0x7ff8000000012345ull,
	0x7ff0000000000001ull, 0xfff0000000054321ull, 0x0010000000000000ull,
	0x8010000000000000ull, 0x7fefffffffffffffull, 0xffefffffffffffffull,
	0x0000000000000001ull, 0x8000000000000001ull, 0x000fffffffffffffull,
	0x3fe0000000000000ull, 0x3ff8000000000000ull, 0x4004000000000000ull,
	0xc004000000000000ull, 0x41e0000000000000ull, 0xc1e0000000000000ull,
	0x41dfffffffc00000ull, 0x41efffffffe00000ull, 0x41f0000000000000ull,
	0x43e0000000000000ull, 0xc3e0000000000000ull, 0x43f0000000000000ull,
	0x3ca0000000000000ull, 0x4340000000000001ull, 0x400921fb54442d18ull,
	0x47efffffe0000000ull, 0x36a0000000000000ull, 0x3810000000000000ull,
};

static uint64_t gen_int(void)
{
	switch (rnd() % 6) {
	case 0:
	case 1:
		return int_edges[rnd() % (sizeof(int_edges) / 8)];
	case 2:
		return rnd64() >> (rnd() % 64);
	case 3:
		return -(rnd64() >> (rnd() % 64));
	case 4:
		return (uint64_t)(int64_t)(int32_t)rnd();
	default:
		return rnd64();
	}
}

static uint64_t gen_f32(void)
{
	switch (rnd() % 5) {
	case 0:
	case 1:
		return f32_edges[rnd() % (sizeof(f32_edges) / 4)];
	case 2: {
		float f = frand();	/* small values: exact sums, ties */

		return fbits(f);
	}
	case 3:	/* near 1.0 and the integers */
		return (rnd() & 0x80000000) | (0x3f000000 + rnd() % 0x10000000);
	default:
		return rnd();
	}
}

static uint64_t gen_f64(void)
{
	switch (rnd() % 5) {
	case 0:
	case 1:
		return f64_edges[rnd() % (sizeof(f64_edges) / 8)];
	case 2: {
		double d = (double)frand() + (rnd() % 2 ? 0x1p-40 * (rnd() % 7) : 0);

		uint64_t u;

		memcpy(&u, &d, 8);
		return u;
	}
	case 3:
		return (rnd64() & 0x800fffffffffffffull) |
		       (uint64_t)(0x3e0 + rnd() % 0x80) << 52;
	default:
		return rnd64();
	}
}

/* Float operands that convert near the integer ranges' ends. */
static uint64_t gen_f2i(int dbl)
{
	if (rnd() % 3)
		return dbl ? gen_f64() : gen_f32();
	if (dbl) {
		double d = (double)(int64_t)gen_int() + (rnd() % 4) * 0.25;
		uint64_t u;

		if (rnd() % 2)
			d = (double)(int32_t)gen_int() + (int)(rnd() % 5 - 2) * 0.5;
		memcpy(&u, &d, 8);
		return u;
	} else {
		float f = (float)(int64_t)gen_int();

		if (rnd() % 2)
			f = (float)(int32_t)(rnd() % 200 - 100) * 0.25f;
		return fbits(f);
	}
}

static void gen_case(struct conf_case *k, unsigned fn)
{
	k->fn = fn;
	k->rm = 0;
	switch (conf_kind[fn]) {
	case CK_INT:
		k->a = gen_int();
		k->b = gen_int();
		break;
	case CK_F32:
		k->a = gen_f32();
		k->b = gen_f32();
		k->c = gen_f32();
		k->rm = rnd() % 5;
		break;
	case CK_F64:
		k->a = gen_f64();
		k->b = gen_f64();
		k->c = gen_f64();
		k->rm = rnd() % 5;
		break;
	case CK_I2F:
		k->a = gen_int();
		k->rm = rnd() % 5;
		break;
	default:
		k->a = gen_f2i(conf_kind[fn] == CK_F2I_D);
		k->rm = rnd() % 5;
		break;
	}
	/* b near half an ulp of a: ties in sums, for the rounding modes */
	if (rnd() % 4 == 0 && (fn == CF_FADD_S || fn == CF_FSUB_S)) {
		uint32_t e = (k->a >> 23) & 0xff;

		if (e > 30 && e < 250)
			k->b = (uint64_t)(rnd() & 0x80000000) |
			       (e - 24 - rnd() % 2) << 23 |
			       (rnd() % 4 ? 0 : rnd() & 0x7fffff);
	}
	if (rnd() % 4 == 0 && (fn == CF_FADD_D || fn == CF_FSUB_D)) {
		uint64_t e = (k->a >> 52) & 0x7ff;

		if (e > 60 && e < 2000)
			k->b = (rnd64() & (1ull << 63)) |
			       (e - 53 - rnd() % 2) << 52 |
			       (rnd() % 4 ? 0 : rnd64() & 0xfffffffffffffull);
	}
	/*
	 * Flags already set: half the floating-point cases start with NX
	 * (the compute units' fast path for operations that can add no new
	 * flag), some with others.
	 */
	if (conf_kind[fn] != CK_INT)
		k->sticky = rnd() % 2 ? 1 : rnd() % 4 ? 0 : rnd() % 32;
	/* no RMM for the fused multiply-adds (see conformance.c) */
	if (k->rm == 4 && ((fn >= CF_FMADD_S && fn <= CF_FNMSUB_S) ||
			   (fn >= CF_FMADD_D && fn <= CF_FNMSUB_D)))
		k->rm = 0;
}

/*
 * The cases run by threads threads of one block: 16 take the scheduler's
 * paths for several threads, 1 the one-thread loop and its superblocks.
 */
static void conformance_with(unsigned threads)
{
	const unsigned per_fn = 2048, n = CF_COUNT * per_fn;
	struct conf_case *cases = calloc(n, sizeof(*cases));
	struct conf_res *res = calloc(n, sizeof(*res));
	struct buf cb = alloc_buf((uint64_t)n * sizeof(*cases), 1, 0);
	struct buf rb = alloc_buf((uint64_t)n * sizeof(*res), 1, 1);
	struct launch l = {
		.block = { threads }, .stack = 1024, .nargs = 3,
		.args = { cb.va, rb.va, n },
	};
	struct pk p = { .n = 0 };
	unsigned bad_fn = 0, bad_total = 0, shown = 0, pairs = 0;
	uint64_t t0 = host_ns();
	bool ran;

	rng_state = 0x15a7e57;
	for (unsigned fn = 0; fn < CF_COUNT; fn++) {
		struct conf_case *k = cases + fn * per_fn;
		unsigned i = 0;

		/* every pair of edge values first where there are two operands */
		if (conf_kind[fn] == CK_INT) {
			for (unsigned a = 0; a < ARRAY_N(int_edges); a++)
				for (unsigned b = 0; b < ARRAY_N(int_edges); b++, i++) {
					k[i].fn = fn;
					k[i].a = int_edges[a];
					k[i].b = int_edges[b];
				}
		} else if (conf_kind[fn] == CK_F32 || conf_kind[fn] == CK_F64) {
			/* c from the edges too, for the fused multiply-adds */
			unsigned ne = conf_kind[fn] == CK_F32 ?
				      ARRAY_N(f32_edges) : ARRAY_N(f64_edges);

			for (unsigned a = 0; a < ne; a++)
				for (unsigned b = 0; b < ne; b++, i++) {
					gen_case(&k[i], fn);
					k[i].a = conf_kind[fn] == CK_F32 ?
						 f32_edges[a] : f64_edges[a];
					k[i].b = conf_kind[fn] == CK_F32 ?
						 f32_edges[b] : f64_edges[b];
					if (rnd() % 2)
						k[i].c = conf_kind[fn] == CK_F32 ?
							 f32_edges[rnd() % ne] :
							 f64_edges[rnd() % ne];
				}
		}
		pairs += i;
		for (; i < per_fn; i++)
			gen_case(&k[i], fn);
	}
	buf_write(&cb, 0, cases, (uint64_t)n * sizeof(*cases));
	load_kernel("isa_conf", 1);
	pk_fill(&p, rb.va, (uint64_t)n * sizeof(*res), 0);
	pk_launch_code(&p, &l);
	ran = ring_run(0, &p, 60000);
	ok(ran, "conformance: %u cases (%u functions, %u edge pairs) ran on "
	   "%u thread(s) of the device in one launch (%.1f s)", n, CF_COUNT,
	   pairs, threads, (host_ns() - t0) / 1e9);
	if (!ran)
		expect_error(0, 0, ~0ull, ~0u);
	buf_read(&rb, 0, res, (uint64_t)n * sizeof(*res));
	for (unsigned fn = 0; fn < CF_COUNT; fn++) {
		unsigned bad = 0;

		for (unsigned i = fn * per_fn; i < (fn + 1) * per_fn; i++) {
			uint32_t fl;
			uint64_t want = conf_eval(&cases[i], &fl);

			if (res[i].done == 1 && res[i].r == want &&
			    res[i].flags == fl)
				continue;
			bad++;
			if (shown++ < 40)
				diag("%s rm %u sticky 0x%x a 0x%llx b 0x%llx "
				     "c 0x%llx: device 0x%llx flags 0x%x%s, "
				     "host 0x%llx flags 0x%x",
				     conf_name[fn], cases[i].rm, cases[i].sticky,
				     (unsigned long long)cases[i].a,
				     (unsigned long long)cases[i].b,
				     (unsigned long long)cases[i].c,
				     (unsigned long long)res[i].r, res[i].flags,
				     res[i].done == 1 ? "" : " (not written)",
				     (unsigned long long)want, fl);
		}
		if (bad) {
			bad_fn++;
			bad_total += bad;
			diag("%s: %u of %u cases differ", conf_name[fn], bad, per_fn);
		}
	}
	ok(ran && !bad_total, "conformance: RV64G (%u thread(s)) and host "
	   "results and fflags bit-identical for %u cases (%u mismatches in "
	   "%u functions)", threads, n, bad_total, bad_fn);
	free(cases);
	free(res);
}

static void test_conformance(void)
{
	conformance_with(16);
	conformance_with(1);
}

/* ------------------------------------------------ RISC-V edge cases */

struct chk_want {
	const char *what;
	uint64_t r, flags;
};

#define NV 16
#define DZ 8
#define OF 4
#define NX 1
static const struct chk_want chk_want[] = {
	{ "fadd.s of unboxed 1.0: canonical NaN", 0x7fc00000, 0 },
	{ "fadd.s of boxed 1.0", 0x40000000, 0 },
	{ "flw boxes (fmv.x.d)", 0xffffffff3f800000ull, 0 },
	{ "fmv.w.x boxes (fmv.x.d)", 0xffffffff12345678ull, 0 },
	{ "fmv.x.w sign-extends the low word", 0xffffffff87654321ull, 0 },
	{ "fadd.s RMM tie 1 + 2^-24", 0x3f800001, NX },
	{ "fadd.s RNE tie 1 + 2^-24", 0x3f800000, NX },
	{ "fadd.s RMM tie -1 - 2^-24", 0xffffffffbf800001ull, NX },
	{ "fcvt.w.s RMM 2.5", 3, NX },
	{ "fcvt.w.s RNE 2.5", 2, NX },
	{ "fcvt.w.s RMM -2.5", ~2ull, NX },
	{ "fcvt.w.s RNE 3.5", 4, NX },
	{ "fmin.s -0, +0", 0xffffffff80000000ull, 0 },
	{ "fmax.s -0, +0", 0, 0 },
	{ "fmin.s qNaN, 1", 0x3f800000, 0 },
	{ "fmin.s sNaN, 1", 0x3f800000, NV },
	{ "fmax.s qNaN, qNaN: canonical", 0x7fc00000, 0 },
	{ "fmax.d sNaN, 2", 0x4000000000000000ull, NV },
	{ "fclass.s -inf", 1 << 0, 0 },
	{ "fclass.s -1", 1 << 1, 0 },
	{ "fclass.s -subnormal", 1 << 2, 0 },
	{ "fclass.s -0", 1 << 3, 0 },
	{ "fclass.s +0", 1 << 4, 0 },
	{ "fclass.s +subnormal", 1 << 5, 0 },
	{ "fclass.s 1", 1 << 6, 0 },
	{ "fclass.s +inf", 1 << 7, 0 },
	{ "fclass.s sNaN", 1 << 8, 0 },
	{ "fclass.s qNaN", 1 << 9, 0 },
	{ "fclass.s unboxed: qNaN", 1 << 9, 0 },
	{ "fclass.d sNaN", 1 << 8, 0 },
	{ "fclass.d -subnormal", 1 << 2, 0 },
	{ "div 5 / 0", ~0ull, 0 },
	{ "divu 5 / 0", ~0ull, 0 },
	{ "rem 5 % 0", 5, 0 },
	{ "remu 5 % 0", 5, 0 },
	{ "div INT64_MIN / -1", 0x8000000000000000ull, 0 },
	{ "rem INT64_MIN % -1", 0, 0 },
	{ "divw INT32_MIN / -1", 0xffffffff80000000ull, 0 },
	{ "remw INT32_MIN % -1", 0, 0 },
	{ "divuw 5 / 0 (upper bits ignored)", ~0ull, 0 },
	{ "remuw 0x80000000 % 0", 0xffffffff80000000ull, 0 },
	{ "divw 7 / 0", ~0ull, 0 },
	{ "fcvt.w.s NaN", 0x7fffffff, NV },
	{ "fcvt.wu.s -1", 0, NV },
	{ "fcvt.l.d 1e30", 0x7fffffffffffffffull, NV },
	{ "fcvt.wu.s 2^32", ~0ull, NV },
	{ "fcvt.wu.s 3e9 (sign-extended)", 0xffffffffb2d05e00ull, 0 },
	{ "fcvt.lu.d RTZ -0.5", 0, NX },
	{ "fcvt.w.d -2^31 - 1024", 0xffffffff80000000ull, NV },
	{ "fsqrt.s -1", 0x7fc00000, NV },
	{ "fdiv.s 1 / 0", 0x7f800000, DZ },
	{ "fdiv.d 0 / 0", 0x7ff8000000000000ull, NV },
	{ "fadd.d qNaN (payload) + 1: canonical", 0x7ff8000000000000ull, 0 },
	{ "fadd.d sNaN + 1", 0x7ff8000000000000ull, NV },
	{ "fcvt.s.d 1e300", 0x7f800000, OF | NX },
	{ "fcvt.d.s sNaN", 0x7ff8000000000000ull, NV },
	{ "fmadd.s inf * 0 + qNaN", 0x7fc00000, NV },
	{ "fmadd.d inf * 0 + 0", 0x7ff8000000000000ull, NV },
	{ "feq.s sNaN", 0, NV },
	{ "feq.s qNaN", 0, 0 },
	{ "flt.s qNaN", 0, NV },
	{ "fle.d 1, 1", 1, 0 },
	{ "feq.d -0, +0", 1, 0 },
	{ "fmul.s exact subnormal result", 0x00400000, 0 },
	{ "fmul.d RNE overflow", 0x7ff0000000000000ull, OF | NX },
	{ "fmul.d RDN overflow", 0x7fefffffffffffffull, OF | NX },
	{ "fadd.s RTZ overflow", 0x7f7fffff, OF | NX },
	{ "fcsr = frm << 5 | fflags", 0x61, NX },
	{ "fsflags returns the old flags", 0x1f, 0 },
	{ "frrm", 2, 0 },
	{ "csrrsi/csrrci fflags", 8, DZ },
	{ "mulhsu -1, 2", ~0ull, 0 },
	{ "mulhu -1, -1", 0xfffffffffffffffeull, 0 },
	{ "mulh INT64_MIN, INT64_MIN", 0x4000000000000000ull, 0 },
	{ "addw overflow", 0xffffffff80000000ull, 0 },
	{ "sraw 0x80000000, 31", ~0ull, 0 },
	{ "srlw 0x80000000, 31", 1, 0 },
	{ "sllw 1, 63 (5-bit shift amount)", 0xffffffff80000000ull, 0 },
	{ "sra INT64_MIN, 65 (6-bit shift amount)", 0xc000000000000000ull, 0 },
	{ "sc.w without reservation fails, no store", 0x10000000bull, 0 },
	{ "lr.w, sc.w succeeds and stores", 0xb00000021ull, 0 },
	{ "amomax.w returns the old word sign-extended", ~4ull, 0 },
	{ "amomax.w signed: max(-5, 3)", 3, 0 },
	{ "amomaxu.w unsigned: max(0xfffffffb, 3)", 0xfffffffb, 0 },
	{ "amoadd.w wraps, returns sign-extended", 0x8000000000000000ull, 0 },
	{ "instret counts 3 between rdinstret", 3, 0 },
};

static void test_rvchk(void)
{
	const unsigned n = sizeof(chk_want) / sizeof(chk_want[0]);
	struct buf out = alloc_buf(4096, 1, 1), mem = alloc_buf(4096, 1, 1);
	struct launch l = { .stack = 256, .nargs = 2, .args = { out.va, mem.va } };
	struct pk p = { .n = 0 };
	uint64_t got[2 * 128];
	unsigned bad = 0;
	bool ran;

	load_kernel("isa_rvchk", 1);
	pk_launch_code(&p, &l);
	ran = ring_run(0, &p, 10000);
	if (!ran)
		expect_error(0, 0, ~0ull, ~0u);
	buf_read(&out, 0, got, sizeof(got));
	for (unsigned i = 0; i < n; i++) {
		if (got[2 * i] != chk_want[i].r ||
		    got[2 * i + 1] != chk_want[i].flags) {
			bad++;
			diag("%s: got 0x%llx flags 0x%llx, want 0x%llx flags 0x%llx",
			     chk_want[i].what, (unsigned long long)got[2 * i],
			     (unsigned long long)got[2 * i + 1],
			     (unsigned long long)chk_want[i].r,
			     (unsigned long long)chk_want[i].flags);
		}
	}
	ok(ran && got[2 * n] == 0x454e44 && got[2 * n + 1] == n && !bad,
	   "RISC-V edge cases (NaN boxing, RMM, min/max, fclass, division, "
	   "conversions, fflags, fcsr, LR/SC, AMOs, instret): %u checks, %u wrong",
	   n, bad);
}

/* ----------------------------------------------------------- atomics */

struct atom {
	uint32_t add32, cas32;
	int32_t min32, max32;
	uint64_t add64, cas64, minu64, maxu64;
	uint64_t or64, and64, xor64, xchg64;
	uint32_t or32, and32, xor32, xchg32;
};

static void test_atomics(void)
{
	const unsigned blocks = 6, threads = 16, iters = 150;
	const unsigned nt = blocks * threads;
	uint64_t total = (uint64_t)nt * iters, sum = 0, want_sum = 0;
	struct buf wb = alloc_buf(4096, 1, 1), sb = alloc_buf(nt * 8, 1, 1);
	struct atom a = {
		.min32 = INT32_MAX, .max32 = INT32_MIN, .minu64 = ~0ull,
		.and64 = ~0ull, .and32 = ~0u,
	}, w = a, got;
	struct launch l = {
		.grid = { blocks }, .block = { threads }, .stack = 256,
		.nargs = 3, .args = { wb.va, sb.va, iters },
	};
	struct pk p = { .n = 0 };
	uint64_t swaps[6 * 16];
	bool ran;

	for (uint64_t k = 0; k < total; k++) {
		int32_t v = (int32_t)(uint32_t)(k * 7) - 5000;
		uint64_t u = k * 0x9e3779b97f4a7c15ull;

		w.add32++;
		w.cas32++;
		w.add64 += 0x100000001ull;
		w.cas64 += 0x10000000ull;
		w.min32 = v < w.min32 ? v : w.min32;
		w.max32 = v > w.max32 ? v : w.max32;
		w.minu64 = u < w.minu64 ? u : w.minu64;
		w.maxu64 = u > w.maxu64 ? u : w.maxu64;
		w.or64 |= 1ull << (k % 64);
		w.and64 &= ~(1ull << (k % 61));
		w.xor64 ^= k * 0x2545f4914f6cdd1dull;
		w.or32 |= 1u << (k % 32);
		w.and32 &= ~(1u << (k % 29));
		w.xor32 ^= (uint32_t)(k * 2654435761u);
		want_sum += (k + 1) + ((uint64_t)((uint32_t)(k + 1) << 8) << 20);
	}
	buf_write(&wb, 0, &a, sizeof(a));
	load_kernel("isa_atomic", 1);
	pk_launch_code(&p, &l);
	ran = ring_run(0, &p, 30000);
	if (!ran)
		expect_error(0, 0, ~0ull, ~0u);
	buf_read(&wb, 0, &got, sizeof(got));
	buf_read(&sb, 0, swaps, nt * 8);
	for (unsigned g = 0; g < nt; g++)
		sum += swaps[g];
	sum += got.xchg64 + ((uint64_t)got.xchg32 << 20);
	got.xchg64 = w.xchg64;
	got.xchg32 = w.xchg32;
	if (memcmp(&got, &w, sizeof(w)))
		diag("add32 %u/%u cas32 %u/%u add64 %llx/%llx cas64 %llx/%llx "
		     "min32 %d/%d max32 %d/%d minu64 %llx/%llx maxu64 %llx/%llx "
		     "or64 %llx/%llx and64 %llx/%llx xor64 %llx/%llx "
		     "or32 %x/%x and32 %x/%x xor32 %x/%x (got/want)",
		     got.add32, w.add32, got.cas32, w.cas32,
		     (unsigned long long)got.add64, (unsigned long long)w.add64,
		     (unsigned long long)got.cas64, (unsigned long long)w.cas64,
		     got.min32, w.min32, got.max32, w.max32,
		     (unsigned long long)got.minu64, (unsigned long long)w.minu64,
		     (unsigned long long)got.maxu64, (unsigned long long)w.maxu64,
		     (unsigned long long)got.or64, (unsigned long long)w.or64,
		     (unsigned long long)got.and64, (unsigned long long)w.and64,
		     (unsigned long long)got.xor64, (unsigned long long)w.xor64,
		     got.or32, w.or32, got.and32, w.and32, got.xor32, w.xor32);
	ok(ran && got.add32 == w.add32 && got.add64 == w.add64 &&
	   got.min32 == w.min32 && got.max32 == w.max32 &&
	   got.minu64 == w.minu64 && got.maxu64 == w.maxu64 &&
	   got.or64 == w.or64 && got.and64 == w.and64 && got.xor64 == w.xor64 &&
	   got.or32 == w.or32 && got.and32 == w.and32 && got.xor32 == w.xor32,
	   "atomics: %u threads x %u rounds (%u blocks): AMO add/min/max/and/"
	   "or/xor on 32 and 64 bits exact (add32 %u)", nt, iters, blocks,
	   got.add32);
	if (got.cas32 != w.cas32 || got.cas64 != w.cas64)
		diag("LR/SC compare-exchange loops lost %u of %u increments (32 "
		     "bit) and %llu of %llu (64 bit): an SC succeeded after "
		     "another thread stored to the reserved word", w.cas32 -
		     got.cas32, w.cas32,
		     (unsigned long long)((w.cas64 - got.cas64) / 0x10000000),
		     (unsigned long long)(w.cas64 / 0x10000000));
	ok(ran && got.cas32 == w.cas32 && got.cas64 == w.cas64,
	   "atomics: compare-exchange loops (LR/SC) from %u threads: counters "
	   "exact (32 bit %u of %u, 64 bit 0x%llx of 0x%llx)", nt, got.cas32,
	   w.cas32, (unsigned long long)got.cas64,
	   (unsigned long long)w.cas64);
	ok(ran && sum == want_sum, "atomics: exchanges conserve the values "
	   "(sum 0x%llx, want 0x%llx)", (unsigned long long)sum,
	   (unsigned long long)want_sum);
}

/* An SC must fail after another thread stored to the reserved word. */
static void test_lrsc(void)
{
	struct buf wb = alloc_buf(4096, 1, 1), ob = alloc_buf(4096, 1, 1);
	struct launch l = {
		.block = { 2 }, .stack = 256, .nargs = 2,
		.args = { wb.va, ob.va },
	};
	struct pk p = { .n = 0 };
	uint32_t init[2] = { 11, 22 };
	uint64_t o[4];
	bool ran;

	buf_write(&wb, 0, init, sizeof(init));
	load_kernel("isa_lrsc", 1);
	pk_launch_code(&p, &l);
	ran = ring_run(0, &p, 10000);
	if (!ran)
		expect_error(0, 0, ~0ull, ~0u);
	buf_read(&ob, 0, o, sizeof(o));
	ok(ran && o[0] != 0 && o[1] == 77, "LR/SC: thread 0's sc.w after "
	   "thread 1's sw to the reserved word fails (sc.w returned %llu, "
	   "word %llu; want nonzero, 77)", (unsigned long long)o[0],
	   (unsigned long long)o[1]);
	ok(ran && o[2] != 0 && o[3] == 66, "LR/SC: thread 0's sc.w after "
	   "thread 1's LR/SC to the reserved word fails (sc.w returned %llu, "
	   "word %llu; want nonzero, 66)", (unsigned long long)o[2],
	   (unsigned long long)o[3]);
}

/*
 * A second address space: a copy of the main root table in which va (the
 * only page of its 1 GiB region) maps to pte instead. Returns its root.
 */
static uint64_t second_context(uint64_t va, uint64_t pte)
{
	int root = pt_used++, l1, l0;

	if (root >= PT_MAX) {
		fprintf(stderr, "out of page tables\n");
		exit(2);
	}
	memcpy(pt[root], pt[0], sizeof(pt[root]));
	pt[root][NPU_PT_INDEX(va, 2)] = 0;
	l1 = pt_child(root, NPU_PT_INDEX(va, 2));
	l0 = pt_child(l1, NPU_PT_INDEX(va, 1));
	pt[l0][NPU_PT_INDEX(va, 0)] = pte;
	pt_dirty[root] = pt_dirty[l0] = 1;
	pt_sync();
	return pt_pa(root);
}

#define LRSC_VA		0x7000000000ull	/* a 1 GiB region of its own */

/*
 * LR/SC reservations are held on physical memory: a store by another
 * context to the same VA (another page) leaves a reservation alone; a
 * store to the reserved word through another VA breaks it.
 */
static void test_lrsc_phys(void)
{
	struct buf pa = alloc_buf(4096, 0, 1), pb = alloc_buf(4096, 0, 1);
	struct buf sync = alloc_buf(4096, 0, 1);
	struct buf oa = alloc_buf(4096, 0, 1), ob = alloc_buf(4096, 0, 1);
	const uint32_t other = CTX_ID + 1;
	uint32_t init = 11, wa, wb, zero[3] = { 0, 0, 0 };
	uint64_t o[2], stores[2], alias, root2;
	struct pk p = { .n = 0 };
	bool ran;

	load_kernel("lrsc_phys", 1);
	pt_map(LRSC_VA, NPU_PTE_VALID | NPU_PTE_WRITE | pa.base);
	pt_sync();
	root2 = second_context(LRSC_VA,
			       NPU_PTE_VALID | NPU_PTE_WRITE | pb.base);
	buf_write(&pa, 0, &init, 4);
	buf_write(&pb, 0, &init, 4);
	buf_write(&sync, 0, zero, sizeof(zero));
	wr(NPU_REG_MMU_INVALIDATE, NPU_MMU_INVALIDATE_ALL);

	/* ring 1 in the other context stores to LRSC_VA (its page pb) */
	pk_ctx(&p, other, root2);
	pk_launch_code(&p, &(struct launch){
		.block = { 1 }, .stack = 256, .nargs = 4,
		.args = { 1, LRSC_VA, sync.va, ob.va } });
	pk_fence(&p, ++seqno[1], fence_pa(1), 0);
	ring_submit(1, &p);
	p.n = 0;
	pk_launch_code(&p, &(struct launch){
		.block = { 1 }, .stack = 256, .nargs = 4,
		.args = { 0, LRSC_VA, sync.va, oa.va } });
	ran = ring_run(0, &p, 20000);
	ran &= ring_wait(1, 20000) == (NPU_RING_STS_IDLE | NPU_RING_STS_ENABLED)
	       && rrd(1, NPU_RING_FENCE) == seqno[1];
	buf_read(&oa, 0, o, sizeof(o));
	buf_read(&ob, 0, stores, sizeof(stores));
	buf_read(&pa, 0, &wa, 4);
	buf_read(&pb, 0, &wb, 4);
	ok(ran && o[0] == 0 && wa == 99 && stores[1] > 0 &&
	   wb == (uint32_t)stores[0],
	   "LR/SC: another context's stores to the same VA (another page), "
	   "%llu of them while the reservation was held, leave it (sc.w "
	   "returned %llu, word %u; want 0, 99)",
	   (unsigned long long)stores[1], (unsigned long long)o[0], wa);
	p.n = 0;
	pk_ctx(&p, CTX_ID, PT_PA);
	ring_submit(1, &p);
	ring_wait(1, 2000);

	/* the reserved word through a second VA of the same page */
	alias = va_next;
	va_next += 4096;
	pt_map(alias, NPU_PTE_VALID | NPU_PTE_WRITE | pa.base);
	pt_sync();
	buf_write(&pa, 0, &init, 4);
	p.n = 0;
	pk_launch_code(&p, &(struct launch){
		.block = { 2 }, .stack = 256, .nargs = 4,
		.args = { 2, pa.va, alias, oa.va } });
	ran = ring_run(0, &p, 10000);
	if (!ran)
		expect_error(0, 0, ~0ull, ~0u);
	buf_read(&oa, 0, o, sizeof(o));
	ok(ran && o[0] != 0 && o[1] == 77, "LR/SC: a store to the reserved "
	   "word through another VA of its page breaks the reservation (sc.w "
	   "returned %llu, word %llu; want nonzero, 77)",
	   (unsigned long long)o[0], (unsigned long long)o[1]);

	/* the same on the block's scratchpad */
	p.n = 0;
	pk_launch_code(&p, &(struct launch){
		.block = { 2 }, .stack = 256, .scratch = 64, .nargs = 4,
		.args = { 3, 0, 0, oa.va } });
	ran = ring_run(0, &p, 10000);
	if (!ran)
		expect_error(0, 0, ~0ull, ~0u);
	buf_read(&oa, 0, o, sizeof(o));
	ok(ran && o[0] != 0 && o[1] == 77, "LR/SC: another thread's store to "
	   "the reserved scratchpad word breaks the reservation (sc.w "
	   "returned %llu, word %llu; want nonzero, 77)",
	   (unsigned long long)o[0], (unsigned long long)o[1]);
}

/* ------------------------------------------------------------ faults */

enum {
	M_NONE, M_GOOD, M_ILLEGAL, M_MRET, M_EBREAK, M_LOAD_MIS, M_STORE_MIS,
	M_AMO_MIS, M_JUMP_MIS, M_MMU, M_RO, M_SCRATCH, M_STACK, M_PARAMS,
	M_CSR_WO, M_CSR_RO, M_BAD_RM, M_FETCH, M_LOOP, M_SECRET, M_PEEK,
};

/* A good launch on ring r: 3 blocks of 8 threads write g * 0x10001 + 5. */
static bool good_launch(int r)
{
	struct buf out = alloc_buf(4096, 1, 1);
	struct launch l = {
		.grid = { 3 }, .block = { 4, 2 }, .stack = 256,
		.nargs = 4, .args = { M_GOOD, 0, 0, out.va },
	};
	struct pk p = { .n = 0 };
	uint64_t got[24];

	pk_launch_code(&p, &l);
	if (!ring_run(r, &p, 10000))
		return false;
	buf_read(&out, 0, got, sizeof(got));
	for (unsigned g = 0; g < 24; g++)
		if (got[g] != g * 0x10001ull + 5)
			return false;
	return true;
}

static void test_faults(void)
{
	struct buf ro = alloc_buf(4096, 1, 0);
	static const struct {
		unsigned mode, err;
		const char *what;
	} fc[] = {
		{ M_ILLEGAL, NPU_ERR_CU_ILLEGAL, "illegal instruction (.word 0)" },
		{ M_MRET, NPU_ERR_CU_ILLEGAL, "privileged mret" },
		{ M_EBREAK, NPU_ERR_CU_BREAK, "ebreak" },
		{ M_LOAD_MIS, NPU_ERR_CU_MISALIGNED, "misaligned ld" },
		{ M_STORE_MIS, NPU_ERR_CU_MISALIGNED, "misaligned sw" },
		{ M_AMO_MIS, NPU_ERR_CU_MISALIGNED, "misaligned amoadd.w" },
		{ M_JUMP_MIS, NPU_ERR_CU_MISALIGNED, "misaligned jalr target" },
		{ M_MMU, NPU_ERR_MMU_FAULT, "store to an unmapped VA" },
		{ M_RO, NPU_ERR_MMU_WRITE, "store to a read-only page" },
		{ M_SCRATCH, NPU_ERR_CU_LOCAL_RANGE, "store past the scratchpad" },
		{ M_STACK, NPU_ERR_CU_LOCAL_RANGE, "store past the stack" },
		{ M_PARAMS, NPU_ERR_CU_LOCAL_RANGE, "store to the params window" },
		{ M_CSR_WO, NPU_ERR_CU_ILLEGAL, "read of write-only CSR 0x8c0" },
		{ M_CSR_RO, NPU_ERR_CU_ILLEGAL, "write of read-only CSR 0xcc0" },
		{ M_BAD_RM, NPU_ERR_CU_ILLEGAL, "fadd.s with frm = 5 (reserved)" },
		{ M_FETCH, NPU_ERR_MMU_FAULT, "jump to unmapped code" },
	};

	load_kernel("isa_fault", 1);
	for (unsigned i = 0; i < sizeof(fc) / sizeof(fc[0]); i++) {
		struct buf out = alloc_buf(4096, 1, 1);
		uint64_t addr = 0, want_fault, o[3], fpc, unit;
		struct launch l = {
			.grid = { 3 }, .block = { 4, 2 }, .stack = 256,
			.scratch = 256, .nargs = 5,
			.args = { fc[i].mode, 2, 5, out.va, 0 },
		};
		struct pk p = { .n = 0 };
		uint32_t fb, ft;
		bool good;

		switch (fc[i].mode) {
		case M_LOAD_MIS:
			addr = out.va + 0x101;
			break;
		case M_STORE_MIS:
			addr = out.va + 0x102;
			break;
		case M_AMO_MIS:
			addr = out.va + 0x106;
			break;
		case M_MMU:
			addr = out.va + 4096 + 0x40;	/* the guard page */
			break;
		case M_FETCH:
			addr = out.va + 4096;
			break;
		case M_RO:
			addr = ro.va + 0x18;
			break;
		case M_SCRATCH:
			addr = NPU_LOCAL_SCRATCH + 256;
			break;
		case M_STACK:
			addr = NPU_LOCAL_STACK + 256;
			break;
		case M_PARAMS:
			addr = NPU_LOCAL_PARAMS + 8;
			break;
		}
		l.args[4] = addr;
		pk_launch_code(&p, &l);
		ring_submit(0, &p);
		ring_wait(0, 10000);
		buf_read(&out, 0, o, sizeof(o));
		want_fault = fc[i].mode == M_JUMP_MIS ? o[2] : addr ? addr : o[0];
		good = expect_error(0, fc[i].err, want_fault, NPU_OP_LAUNCH_CODE);
		fpc = rrd64(0, NPU_RING_FAULT_PC_LO);
		fb = rrd(0, NPU_RING_FAULT_BLOCK);
		ft = rrd(0, NPU_RING_FAULT_THREAD);
		unit = rrd(0, NPU_RING_FAULT_UNIT);
		if (fpc != o[0] || fb != 2 || ft != 5 || unit != o[1] || !o[0])
			diag("%s: FAULT_PC 0x%llx (want 0x%llx) BLOCK %u THREAD %u "
			     "UNIT %llu (want 2, 5, %llu)", fc[i].what,
			     (unsigned long long)fpc, (unsigned long long)o[0],
			     fb, ft, (unsigned long long)unit,
			     (unsigned long long)o[1]);
		good = good && fpc == o[0] && o[0] && fb == 2 && ft == 5 &&
		       unit == o[1];
		ring_resume(0);
		ok(good && good_launch(0), "fault: %s halts with error %u, FAULT "
		   "0x%llx, FAULT_PC/BLOCK/THREAD/UNIT name the instruction; "
		   "after resume a good launch runs", fc[i].what, fc[i].err,
		   (unsigned long long)want_fault);
	}
}

/*
 * Faults of instructions the units issue on their fast path (a jump, an
 * FP operation; EBREAK for comparison) by a block's only thread: the
 * fault names the instruction, as with several threads (test_faults).
 */
static void test_faults_one_thread(void)
{
	static const struct {
		unsigned mode, err;
		const char *what;
	} fc[] = {
		{ M_JUMP_MIS, NPU_ERR_CU_MISALIGNED, "misaligned jalr target" },
		{ M_BAD_RM, NPU_ERR_CU_ILLEGAL, "fadd.s with frm = 5 (reserved)" },
		{ M_EBREAK, NPU_ERR_CU_BREAK, "ebreak" },
	};

	load_kernel("isa_fault", 1);
	for (unsigned i = 0; i < sizeof(fc) / sizeof(fc[0]); i++) {
		struct buf out = alloc_buf(4096, 1, 1);
		struct launch l = {
			.grid = { 3 }, .block = { 1 }, .stack = 256,
			.nargs = 5, .args = { fc[i].mode, 2, 0, out.va, 0 },
		};
		struct pk p = { .n = 0 };
		uint64_t o[3], want_fault, fpc, unit;
		uint32_t fb, ft;
		bool good;

		pk_launch_code(&p, &l);
		ring_submit(0, &p);
		ring_wait(0, 10000);
		buf_read(&out, 0, o, sizeof(o));
		want_fault = fc[i].mode == M_JUMP_MIS ? o[2] : o[0];
		good = expect_error(0, fc[i].err, want_fault, NPU_OP_LAUNCH_CODE);
		fpc = rrd64(0, NPU_RING_FAULT_PC_LO);
		fb = rrd(0, NPU_RING_FAULT_BLOCK);
		ft = rrd(0, NPU_RING_FAULT_THREAD);
		unit = rrd(0, NPU_RING_FAULT_UNIT);
		if (fpc != o[0] || fb != 2 || ft != 0 || unit != o[1] || !o[0])
			diag("%s: FAULT_PC 0x%llx (want 0x%llx) BLOCK %u THREAD %u "
			     "UNIT %llu (want 2, 0, %llu)", fc[i].what,
			     (unsigned long long)fpc, (unsigned long long)o[0],
			     fb, ft, (unsigned long long)unit,
			     (unsigned long long)o[1]);
		good = good && fpc == o[0] && o[0] && fb == 2 && ft == 0 &&
		       unit == o[1];
		ring_resume(0);
		ok(good && good_launch(0), "fault, one thread a block: %s halts "
		   "with error %u, FAULT_PC/BLOCK/THREAD/UNIT name the "
		   "instruction; after resume a good launch runs", fc[i].what,
		   fc[i].err);
	}
}

/* Ring 0 halted by a fault: ring 1 still runs; then ring 0 resumes. */
static void test_fault_other_ring(void)
{
	struct buf out = alloc_buf(4096, 1, 1);
	struct launch l = {
		.grid = { 2 }, .block = { 4 }, .stack = 256, .nargs = 4,
		.args = { M_EBREAK, 1, 3, out.va },
	};
	struct pk p = { .n = 0 };
	bool halted, other;

	load_kernel("isa_fault", 1);
	pk_launch_code(&p, &l);
	ring_submit(0, &p);
	halted = ring_wait(0, 5000) & NPU_RING_STS_HALTED;
	other = good_launch(1);
	halted = halted && (rrd(0, NPU_RING_STATUS) & NPU_RING_STS_HALTED) &&
		 rrd(0, NPU_RING_ERROR) == NPU_ERR_CU_BREAK;
	ring_resume(0);
	ok(halted && other && good_launch(0), "ring 0 halted by a kernel's "
	   "EBREAK while ring 1 runs a kernel to completion; ring 0 resumes");
}

/* A kernel in an endless loop is stopped by a ring reset. */
static void test_loop_reset(void)
{
	struct buf out = alloc_buf(4096, 1, 1);
	struct launch l = {
		.grid = { 2 }, .block = { 4 }, .stack = 256, .nargs = 4,
		.args = { M_LOOP, 1, 2, out.va },
	};
	struct pk p = { .n = 0 };
	uint32_t busy, after;

	load_kernel("isa_fault", 1);
	pk_launch_code(&p, &l);
	ring_submit(0, &p);
	usleep(300000);
	busy = rrd(0, NPU_RING_STATUS);
	ring_reset(0);
	after = ring_wait(0, 5000);
	if (q->dead)
		diag("QEMU stopped answering during the ring reset");
	ok(!(busy & (NPU_RING_STS_IDLE | NPU_RING_STS_HALTED)) &&
	   after == (NPU_RING_STS_IDLE | NPU_RING_STS_ENABLED) &&
	   good_launch(0), "endless kernel (%s): still running after 300 ms "
	   "(status 0x%x), a ring reset stops it (status 0x%x), then a good "
	   "launch runs", inst_opts, busy, after);
}

/* A later launch's blocks never see an earlier block's scratchpad. */
static void test_scratch_isolation(void)
{
	struct buf out = alloc_buf(4096, 1, 1);
	struct launch l = {
		.grid = { 16 }, .block = { 8 }, .stack = 256, .scratch = 8192,
		.nargs = 4, .args = { M_SECRET, 0, 0, out.va },
	};
	struct pk p = { .n = 0 };
	uint64_t got[128], leaked = 0;
	bool ran;

	load_kernel("isa_fault", 1);
	pk_launch_code(&p, &l);
	l.args[0] = M_PEEK;
	pk_launch_code(&p, &l);
	ran = ring_run(0, &p, 10000);
	buf_read(&out, 0, got, sizeof(got));
	for (unsigned g = 0; g < 128; g++)
		leaked |= got[g];
	ok(ran && !leaked, "scratchpad isolation: 16 blocks write a secret, "
	   "the next launch's 16 blocks read zeros (OR of all: 0x%llx)",
	   (unsigned long long)leaked);
}

/* ------------------------------------------------ launch validation */

static void test_validation(void)
{
	struct buf sb = alloc_buf(4096, 1, 1);
	static const struct {
		unsigned dw;
		uint32_t val;
		const char *what;
	} bad[] = {
		{ 1, NPU_CODE_FLAGS_ALL + 1, "unknown flag" },
		{ 2, (uint32_t)DEVTEST_CODE_VA + 2, "entry not 4-aligned" },
		{ 3, 0x80, "entry at 2^39" },
		{ 4, 0, "grid x 0" },
		{ 5, 0, "grid y 0" },
		{ 6, 0, "grid z 0" },
		{ 7, 0, "block x 0" },
		{ 8, 0, "block y 0" },
		{ 9, 0, "block z 0" },
		{ 7, 17, "block x > CU_THREADS" },
		{ 10, 64 * 1024 + 1, "scratch > CU_SCRATCH" },
		{ 11, 8, "stack not a multiple of 16" },
		{ 11, NPU_CODE_MAX_STACK + 16, "stack > 64 KiB" },
		{ 12, 4, "stats not 8-aligned" },
		{ 14, 4, "trace not 8-aligned" },
		{ 16, NPU_CODE_MAX_TRACE + 1, "trace_bytes > max" },
		{ 17, 100, "sample_period without trace" },
		{ 18, 0, "ITRACE without trace" },
		{ 19, 17, "nargs > 16" },
		{ 19, 3, "nargs != header's" },
		{ 20, 4, "printf not 8-aligned" },
		{ 22, NPU_CODE_MAX_PRINTF + 1, "printf_bytes > max" },
		{ 23, 1, "reserved != 0" },
		/* fields that need another field */
		{ 5, 0x10000, "grid x * y = 2^32" },
		{ 9, 2, "block 4 x 4 x 2 > CU_THREADS" },
		{ 16, 16, "trace set, trace_bytes < its header" },
		{ 18, 3, "ITRACE, trace_block >= blocks" },
		{ 22, 4, "printf set, printf_bytes < its header" },
		{ 0, 26, "header length != 24 + 2 * nargs" },
		{ 0, 20, "header length < 24" },
	};
	unsigned nb = 0;

	load_kernel("isa_fault", 1);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct launch l = {
			.grid = { 1 }, .block = { 1 }, .stack = 256, .nargs = 2,
			.args = { M_NONE, ~0ull },
		};
		struct pk p = { .n = 0 };
		uint64_t pkt = RING_PA(0) + tail[0];
		unsigned want_dw = bad[i].dw;

		pk_launch_code(&p, &l);
		switch (i) {
		case 23:
			p.dw[4] = 0x10000;
			break;
		case 24:
			p.dw[7] = 4;
			p.dw[8] = 4;
			break;
		case 25:
			p.dw[14] = (uint32_t)sb.va;
			p.dw[15] = sb.va >> 32;
			break;
		case 26:
			p.dw[1] = NPU_CODE_ITRACE;
			p.dw[14] = (uint32_t)sb.va;
			p.dw[15] = sb.va >> 32;
			p.dw[16] = 4096;
			break;
		case 27:
			p.dw[20] = (uint32_t)sb.va;
			p.dw[21] = sb.va >> 32;
			break;
		case 17:
			p.dw[1] = NPU_CODE_ITRACE;
			break;
		}
		if (bad[i].dw == 0) {
			/* a shorter header: the rest of the packet becomes a NOP */
			p.dw[0] = NPU_PKT_HDR(NPU_OP_LAUNCH_CODE, 0, bad[i].val);
			p.dw[bad[i].val] = NPU_PKT_HDR(NPU_OP_NOP, 0,
						       p.n - bad[i].val);
		} else {
			p.dw[bad[i].dw] = bad[i].val;
		}
		if (bad[i].dw == 3)
			want_dw = 2;	/* the entry's first dword */
		if (i == 19)
			want_dw = 0;	/* the header's length is what is wrong */
		ring_submit(0, &p);
		if (!expect_error(0, NPU_ERR_BAD_PACKET, pkt + 4 * want_dw,
				  NPU_OP_LAUNCH_CODE)) {
			diag("LAUNCH_CODE %s: want FAULT = packet 0x%llx + 4 * %u",
			     bad[i].what, (unsigned long long)pkt, want_dw);
			nb++;
		}
		ring_resume(0);
	}
	ok(!nb, "LAUNCH_CODE validation: %zu bad fields each halt with "
	   "BAD_PACKET, FAULT = packet address + 4 * the field's dword "
	   "(%u wrong)", sizeof(bad) / sizeof(bad[0]), nb);
	ok(good_launch(0), "LAUNCH_CODE validation: a good launch runs after");
}

/*
 * LAUNCH_CODE_SHORT: the same launch in 12 + 2n dwords runs the same
 * threads with the same arguments; its own fields are checked like the
 * full packet's, its length and flags as the short form defines them.
 */
static void test_short_launch(void)
{
	struct buf out = alloc_buf(4096, 1, 1);
	static const struct {
		unsigned dw;
		uint32_t val;
		const char *what;
	} bad[] = {
		{ 1, NPU_CODE_ITRACE, "flags set (no trace field)" },
		{ 4, 0, "grid x 0" },
		{ 7, 17, "block x > CU_THREADS" },
		{ 11, 8, "stack not a multiple of 16" },
		{ 0, 11, "header length < 12" },
		{ 0, 15, "odd argument dwords" },
		{ 0, 12 + 2 * 17, "17 arguments" },
	};
	struct launch l = {
		.grid = { 3 }, .block = { 4, 2 }, .stack = 256,
		.nargs = 4, .args = { M_GOOD, 0, 0, out.va },
	};
	struct pk p = { .n = 0 };
	uint64_t got[24];
	unsigned g, nb = 0, wrong = 0;
	bool ran;

	load_kernel("isa_fault", 1);
	pk_launch_code_short(&p, &l);
	ok(p.n == NPU_PKT_LAUNCH_CODE_SHORT_DW + 8 &&
	   p.n + 12 == NPU_PKT_LAUNCH_CODE_DW + 8,
	   "LAUNCH_CODE_SHORT of 4 arguments: %u dwords, 12 fewer than "
	   "LAUNCH_CODE's", p.n);
	ran = ring_run(0, &p, 10000);
	buf_read(&out, 0, got, sizeof(got));
	for (g = 0; g < 24; g++)
		wrong += got[g] != g * 0x10001ull + 5;
	ok(ran && !wrong, "LAUNCH_CODE_SHORT runs 3 blocks of 4x2 threads "
	   "with its 4 arguments (%u of 24 results wrong)", wrong);

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct launch b = {
			.grid = { 1 }, .block = { 1 }, .stack = 256, .nargs = 2,
			.args = { M_NONE, ~0ull },
		};
		struct pk q = { .n = 0 };
		uint64_t pkt = RING_PA(0) + tail[0];

		if (bad[i].dw == 0 && bad[i].val > 16)
			b.nargs = NPU_CODE_MAX_ARGS;
		pk_launch_code_short(&q, &b);
		while (bad[i].dw == 0 && q.n < bad[i].val)
			pk_qw(&q, 0);
		if (bad[i].dw == 0) {
			/* a header that says val dwords; pad to it with NOP */
			q.dw[0] = NPU_PKT_HDR(NPU_OP_LAUNCH_CODE_SHORT, 0,
					      bad[i].val);
			if (bad[i].val < q.n)
				q.dw[bad[i].val] = NPU_PKT_HDR(NPU_OP_NOP, 0,
							       q.n - bad[i].val);
		} else {
			q.dw[bad[i].dw] = bad[i].val;
		}
		ring_submit(0, &q);
		if (!expect_error(0, NPU_ERR_BAD_PACKET, pkt + 4 * bad[i].dw,
				  NPU_OP_LAUNCH_CODE_SHORT)) {
			diag("LAUNCH_CODE_SHORT %s: want FAULT = packet 0x%llx "
			     "+ 4 * %u", bad[i].what, (unsigned long long)pkt,
			     bad[i].dw);
			nb++;
		}
		ring_resume(0);
	}
	ok(!nb, "LAUNCH_CODE_SHORT validation: %zu bad fields each halt with "
	   "BAD_PACKET at the field (%u wrong)", sizeof(bad) / sizeof(bad[0]),
	   nb);
	ok(good_launch(0), "LAUNCH_CODE_SHORT validation: a good launch runs "
	   "after");
}

/* -------------------------------------------------------------- fuzz */

static const uint8_t rv_major[] = {
	0x03, 0x07, 0x0f, 0x13, 0x17, 0x1b, 0x23, 0x27, 0x2f, 0x33, 0x37,
	0x3b, 0x43, 0x47, 0x4b, 0x4f, 0x53, 0x53, 0x53, 0x13, 0x13, 0x33,
	0x63, 0x67, 0x6f, 0x73,
};

/* One random code word in style s: 0 any, 1 valid major opcodes. */
static uint32_t fuzz_word(unsigned s)
{
	uint32_t w = rnd();

	if (s == 0 || rnd() % 16 == 0)
		return w;
	if (rnd() % 24 == 0)
		return 0x00008067;	/* ret */
	w = (w & ~0x7fu) | rv_major[rnd() % sizeof(rv_major)];
	if ((w & 0x7f) == 0x63 || (w & 0x7f) == 0x6f)
		w &= 0x7fffffff;	/* forward branches and jumps only */
	if ((w & 0x7f) == 0x73 && rnd() % 2)
		w = (w & 0x000fffff) | (0xcc0 + rnd() % 0x14) << 20;
	return w;
}

/* Wait for ring r to go idle, resuming its halts through check(); reset
 * it when HEAD has not moved for stuck_ms. Returns false on a reset. */
static bool fuzz_drain(int r, int stuck_ms, uint32_t *halts,
		       bool (*check)(int r, uint32_t head))
{
	uint32_t head = rrd(r, NPU_RING_HEAD);
	uint64_t moved = host_ns();

	for (;;) {
		uint32_t st = rrd(r, NPU_RING_STATUS), h;

		if (st & NPU_RING_STS_HALTED) {
			(*halts)++;
			check(r, rrd(r, NPU_RING_HEAD));
			ring_resume(r);
			continue;
		}
		if (st & NPU_RING_STS_IDLE)
			return true;
		h = rrd(r, NPU_RING_HEAD);
		if (h != head) {
			head = h;
			moved = host_ns();
		} else if (host_ns() - moved > stuck_ms * 1000000ull) {
			ring_reset(r);
			return false;
		}
		usleep(100);
	}
}

static unsigned fz_bad_halts;

static bool code_halt_check(int r, uint32_t head)
{
	uint32_t e = rrd(r, NPU_RING_ERROR);
	uint32_t b = rrd(r, NPU_RING_FAULT_BLOCK), t = rrd(r, NPU_RING_FAULT_THREAD);
	bool good = (e == NPU_ERR_MMU_FAULT || e == NPU_ERR_MMU_WRITE ||
		     e == NPU_ERR_BAD_ARGS || (e >= NPU_ERR_CU_ILLEGAL &&
						e <= NPU_ERR_CU_BREAK)) &&
		    b == 0 && t < 4;

	(void)head;
	if (!good && fz_bad_halts++ < 10)
		diag("random code: error %u FAULT 0x%llx PC 0x%llx block %u "
		     "thread %u", e, (unsigned long long)rrd64(r, NPU_RING_FAULT_LO),
		     (unsigned long long)rrd64(r, NPU_RING_FAULT_PC_LO), b, t);
	return good;
}

static void test_fuzz_code(void)
{
	const unsigned batches = 100, per = 110;
	uint64_t save = va_next, t0 = host_ns();
	struct buf code, data;
	uint32_t *words = malloc(FZ_PAGES * 4096);
	uint32_t halts = 0, pkt_bytes;
	unsigned iters = 0, hangs = 0;

	data = alloc_buf(16384, 1, 1);
	va_next = FZ_CODE_VA;
	code = alloc_buf(FZ_PAGES * 4096, 1, 0);
	va_next = save;
	rng_state = 0xc0de;
	fz_bad_halts = 0;
	for (unsigned b = 0; b < batches && !q->dead; b++) {
		struct pk p = { .n = 0 };
		uint32_t start = tail[0];

		for (unsigned i = 0; i < FZ_PAGES * 1024; i++)
			words[i] = fuzz_word(i / 1024 % 2 ? 1 : b % 2);
		buf_write(&code, 0, words, FZ_PAGES * 4096);
		wr(NPU_REG_MMU_INVALIDATE, NPU_MMU_INVALIDATE_ALL);
		for (unsigned i = 0; i < per; i++) {
			struct launch l = {
				.entry = code.va + 4 * (rnd() % (FZ_PAGES * 1024)),
				.grid = { 1 }, .block = { 1 + rnd() % 4 },
				.stack = 512, .scratch = 512, .nargs = 2,
				.args = { data.va + 8 * (rnd() % 2048), rnd64() },
			};

			pk_launch_code(&p, &l);
		}
		pkt_bytes = 4 * p.n / per;
		ring_submit(0, &p);
		if (fuzz_drain(0, 50, &halts, code_halt_check)) {
			iters += per;
		} else {
			/* the hung launch counts; those after it never ran */
			hangs++;
			iters += 1 + ((rrd(0, NPU_RING_HEAD) - start) % RING_BYTES) /
				 pkt_bytes;
		}
	}
	free(words);
	ok(!q->dead && qt_alive(q) && iters >= 10000 && !fz_bad_halts &&
	   good_launch(0), "fuzz: %u launches of random code (%u halts, %u "
	   "stuck and reset, %u unexpected errors) in %.1f s; QEMU alive, "
	   "a good kernel runs after", iters, halts, hangs, fz_bad_halts,
	   (host_ns() - t0) / 1e9);
}

/* Random LAUNCH_CODE packets; the host predicts the bad fields. */
#define FZ_MAX_PK	64
static struct {
	uint32_t off, ndw;	/* ring offset, dwords */
	uint32_t bad;		/* bit dw: field dw is bad */
	bool halted;
} fzp[FZ_MAX_PK];
static unsigned fzp_n, fz_wrong;
static uint32_t fz_ring_base;

static uint32_t predict(const uint32_t *p, uint32_t ndw)
{
	uint32_t bad = 0, nargs = p[19], flags = p[1];
	uint64_t entry = p[2] | (uint64_t)p[3] << 32, blocks = 1, threads = 1;
	uint64_t trace = p[14] | (uint64_t)p[15] << 32;
	uint64_t printf_va = p[20] | (uint64_t)p[21] << 32;

	if (nargs > NPU_CODE_MAX_ARGS)
		bad |= 1u << 19;
	else if (ndw != NPU_PKT_LAUNCH_CODE_DW + 2 * nargs)
		bad |= 1u << 0;
	if (flags & ~NPU_CODE_FLAGS_ALL)
		bad |= 1u << 1;
	if ((entry & 3) || (entry >> NPU_VA_BITS))
		bad |= 1u << 2;
	for (unsigned i = 0; i < 3; i++) {
		if (!p[4 + i])
			bad |= 1u << (4 + i);
		blocks *= p[4 + i] ? p[4 + i] : 1;
		if (blocks > UINT32_MAX) {
			bad |= 1u << (4 + i);
			blocks = 1ull << 40;	/* saturate */
		}
		if (!p[7 + i])
			bad |= 1u << (7 + i);
		threads *= p[7 + i] ? p[7 + i] : 1;
		if (threads > cu_threads) {
			bad |= 1u << (7 + i);
			threads = 1ull << 40;
		}
	}
	if (p[10] > 64 * 1024)
		bad |= 1u << 10;
	if (p[11] % 16 || p[11] > NPU_CODE_MAX_STACK)
		bad |= 1u << 11;
	if (p[12] & 7)
		bad |= 1u << 12;
	if (trace & 7)
		bad |= 1u << 14;
	if (p[16] > NPU_CODE_MAX_TRACE ||
	    (trace && p[16] < sizeof(struct npu_cu_trace_header)))
		bad |= 1u << 16;
	if (p[17] && !trace)
		bad |= 1u << 17;
	if ((flags & NPU_CODE_ITRACE) && (!trace || p[18] >= blocks))
		bad |= 1u << 18;
	if (printf_va & 7)
		bad |= 1u << 20;
	if (p[22] > NPU_CODE_MAX_PRINTF ||
	    (printf_va && p[22] < sizeof(struct npu_printf_header)))
		bad |= 1u << 22;
	if (p[23])
		bad |= 1u << 23;
	return bad;
}

static uint32_t fuzz_dword(void)
{
	static const uint32_t edge[] = {
		0, 1, 2, 3, 4, 8, 15, 16, 17, 24, 64, 1024, 4096, 65535, 65536,
		65537, NPU_CODE_MAX_PRINTF, NPU_CODE_MAX_PRINTF + 1,
		NPU_CODE_MAX_TRACE, NPU_CODE_MAX_TRACE + 1, 0x10000000,
		0x7fffffff, 0x80000000, 0xffffffff,
	};

	return rnd() % 2 ? edge[rnd() % ARRAY_N(edge)] : rnd();
}

/*
 * A LAUNCH_CODE packet: 4 in 10 valid (with stats, traces and printf
 * buffers at times), 4 in 10 valid but for one or two random fields,
 * 2 in 10 random in every field. Valid launches run isa_fault's M_NONE.
 */
static void fuzz_launch_packet(struct pk *p, const struct buf *db)
{
	unsigned start = p->n, nargs = rnd() % 17, kind = rnd() % 10;
	uint64_t v;
	uint32_t *d;

	pk_dw(p, NPU_PKT_HDR(NPU_OP_LAUNCH_CODE, 0,
			     NPU_PKT_LAUNCH_CODE_DW + 2 * nargs));
	for (unsigned i = 1; i < NPU_PKT_LAUNCH_CODE_DW + 2 * nargs; i++)
		pk_dw(p, 0);
	d = p->dw + start;
	d[2] = (uint32_t)DEVTEST_CODE_VA;
	d[3] = DEVTEST_CODE_VA >> 32;
	for (unsigned i = 0; i < 3; i++)
		d[4 + i] = 1 + rnd() % 3;
	d[7] = 1 + rnd() % 4;
	d[8] = 1 + rnd() % 2;
	d[9] = 1;
	d[10] = rnd() % 8192;
	d[11] = 16 * (rnd() % 64);
	if (rnd() % 2) {
		v = db->va + 8 * (rnd() % 64);
		d[12] = (uint32_t)v;
		d[13] = v >> 32;
	}
	if (rnd() % 3 == 0) {
		v = db->va + 4096;
		d[14] = (uint32_t)v;
		d[15] = v >> 32;
		d[16] = 24 + rnd() % 4072;
		d[17] = rnd() % 2 ? 0 : 1 + rnd() % 300;
		if (rnd() % 2) {
			d[1] = NPU_CODE_ITRACE;
			d[18] = rnd() % (d[4] * d[5] * d[6]);
		}
	}
	if (rnd() % 3 == 0) {
		v = db->va + 8192;
		d[20] = (uint32_t)v;
		d[21] = v >> 32;
		d[22] = 8 + rnd() % 4088;
	}
	d[19] = nargs;
	for (unsigned i = 0; i < 2 * nargs; i++)
		d[24 + i] = rnd();
	if (kind >= 8) {
		for (unsigned i = 1; i < NPU_PKT_LAUNCH_CODE_DW; i++)
			if (rnd() % 2)
				d[i] = fuzz_dword();
	} else if (kind >= 4) {
		for (unsigned n = 1 + rnd() % 2; n; n--)
			d[1 + rnd() % (NPU_PKT_LAUNCH_CODE_DW - 1)] = fuzz_dword();
	}
	/* arguments: mode M_NONE, no chosen block: the kernel just returns */
	if (nargs > 0)
		d[24] = d[25] = 0;
	if (nargs > 1)
		d[26] = d[27] = ~0u;
	/* a valid grid stays small: the launches must end */
	if ((uint64_t)d[4] * d[5] * d[6] > 64 &&
	    (uint64_t)d[4] * d[5] * d[6] <= UINT32_MAX)
		d[6] = 0;
}

static bool pkt_halt_check(int r, uint32_t head)
{
	uint32_t e = rrd(r, NPU_RING_ERROR);
	uint64_t f = rrd64(r, NPU_RING_FAULT_LO);

	for (unsigned i = 0; i < fzp_n; i++) {
		uint32_t end = (fzp[i].off + 4 * fzp[i].ndw) % RING_BYTES;
		uint64_t pa = fz_ring_base + fzp[i].off;

		if (end != head)
			continue;
		fzp[i].halted = true;
		if (e == NPU_ERR_BAD_PACKET) {
			uint32_t dw = (uint32_t)((f - pa) / 4);

			if (f < pa || dw >= 32 || !(fzp[i].bad & (1u << dw)) ||
			    (f - pa) % 4) {
				if (fz_wrong++ < 10)
					diag("packet %u: BAD_PACKET FAULT 0x%llx "
					     "(dword %d), predicted bad 0x%x", i,
					     (unsigned long long)f,
					     (int)((int64_t)(f - pa) / 4),
					     fzp[i].bad);
				return false;
			}
			return true;
		}
		if (fzp[i].bad) {
			if (fz_wrong++ < 10)
				diag("packet %u: error %u FAULT 0x%llx, predicted "
				     "bad fields 0x%x", i, e,
				     (unsigned long long)f, fzp[i].bad);
			return false;
		}
		return true;
	}
	if (fz_wrong++ < 10)
		diag("halt at HEAD 0x%x matches no packet (error %u)", head, e);
	return false;
}

static void test_fuzz_packets(void)
{
	const unsigned iters = 10240;
	struct buf db = alloc_buf(16384, 1, 1);
	uint64_t t0 = host_ns();
	uint32_t halts = 0;
	unsigned done = 0, invalid = 0, resets = 0, missed = 0;

	load_kernel("isa_fault", 1);
	rng_state = 0xbadc0de;
	fz_wrong = 0;
	fz_ring_base = RING_PA(0);
	while (done < iters && !q->dead) {
		struct pk p = { .n = 0 };

		fzp_n = 0;
		while (fzp_n < FZ_MAX_PK && p.n < 3000) {
			unsigned s = p.n;

			fuzz_launch_packet(&p, &db);
			fzp[fzp_n].off = (tail[0] + 4 * s) % RING_BYTES;
			fzp[fzp_n].ndw = p.n - s;
			fzp[fzp_n].bad = predict(p.dw + s, p.n - s);
			fzp[fzp_n].halted = false;
			invalid += !!fzp[fzp_n].bad;
			fzp_n++;
		}
		ring_submit(0, &p);
		if (!fuzz_drain(0, 3000, &halts, pkt_halt_check)) {
			resets++;
			diag("random packets: ring 0 stuck, reset");
		}
		for (unsigned i = 0; i < fzp_n; i++)
			if (fzp[i].bad && !fzp[i].halted && missed++ < 10)
				diag("packet with bad fields 0x%x did not halt",
				     fzp[i].bad);
		done += fzp_n;
	}
	ok(!q->dead && qt_alive(q) && !fz_wrong && !missed && !resets &&
	   good_launch(0), "fuzz: %u random LAUNCH_CODE packets (%u predicted "
	   "bad, %u halts, %u wrong, %u missed, %u stuck) in %.1f s; QEMU "
	   "alive, a good launch runs after", done, invalid, halts, fz_wrong,
	   missed, resets, (host_ns() - t0) / 1e9);
}

/* ------------------------------------------------------------- main */

/*
 * Three instances: the main one without pacing (the interpreter runs flat
 * out), one for the endless kernel (if a ring reset cannot stop it, QEMU
 * stops answering and only that instance is lost), and one whose units
 * are paced at 20 MHz for the random code, which may loop and then needs
 * a ring reset.
 */
static const struct {
	const char *name;
	int inst;
	void (*fn)(void);
} tests[] = {
	{ "conformance", 0, test_conformance },
	{ "rvchk", 0, test_rvchk },
	{ "atomics", 0, test_atomics },
	{ "lrsc", 0, test_lrsc },
	{ "lrsc_phys", 0, test_lrsc_phys },
	{ "faults", 0, test_faults },
	{ "faults_one_thread", 0, test_faults_one_thread },
	{ "fault_other_ring", 0, test_fault_other_ring },
	{ "scratch_isolation", 0, test_scratch_isolation },
	{ "validation", 0, test_validation },
	{ "short_launch", 0, test_short_launch },
	{ "fuzz_packets", 0, test_fuzz_packets },
	{ "loop_reset", 1, test_loop_reset },
	{ "loop_reset_paced", 2, test_loop_reset },
	{ "fuzz_code", 2, test_fuzz_code },
};

static void run_all(void)
{
	static const char *const inst_opt[] = {
		"timing=off", "timing=off", "cu-clock-mhz=20",
	};
	static const char *const inst_name[] = {
		"main instance", "endless-kernel instance", "paced instance",
	};
	/* NPU_ISATEST=name,name runs only those (for debugging) */
	const char *only = getenv("NPU_ISATEST");

	for (int inst = 0; inst < 3; inst++) {
		bool started = false;

		for (unsigned i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
			if (tests[i].inst != inst ||
			    (only && !strstr(only, tests[i].name)))
				continue;
			if (!started) {
				start(inst_opt[inst], 0);
				cu_threads = rd(NPU_REG_CU_THREADS);
				started = true;
			}
			inst_opts = inst_opt[inst];
			diag("%s (%s)", tests[i].name, inst_opts);
			tests[i].fn();
		}
		if (started)
			stop(inst_name[inst]);
	}
}

int main(int argc, char **argv)
{
	return devtest_main(argc, argv, run_all);
}
