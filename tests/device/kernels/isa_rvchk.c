// SPDX-License-Identifier: MIT
/*
 * RISC-V specific edge cases by inline asm (args: out): each check stores
 * its result and the fflags it raised; npu-isatest holds the expected
 * values. Single-precision operands are given NaN-boxed unless a check
 * is about boxing.
 */
#include "kernel.h"

#define BOX(x)		(0xffffffff00000000ul | (x))
#define QNAN_S		0x7fc00001ul	/* quiet, with a payload */
#define SNAN_S		0x7f800001ul
#define QNAN_D		0x7ff8000000000123ul
#define SNAN_D		0x7ff0000000000001ul

struct chk {
	unsigned long r;
	unsigned long flags;
};

/* f[rd] = op f[rs1], f[rs2]; then moved to x with mv (fmv.x.w / fmv.x.d) */
#define FF2(ins, mv, a, b) __extension__ ({ \
	unsigned long r_; \
	__asm__ volatile("fmv.d.x ft0, %1\n\tfmv.d.x ft1, %2\n\t" ins \
			 " ft2, ft0, ft1\n\t" mv " %0, ft2" \
			 : "=r"(r_) : "r"(a), "r"(b) : "ft0", "ft1", "ft2"); \
	r_; })
#define FF3(ins, mv, a, b, c) __extension__ ({ \
	unsigned long r_; \
	__asm__ volatile("fmv.d.x ft0, %1\n\tfmv.d.x ft1, %2\n\t" \
			 "fmv.d.x ft3, %3\n\t" ins " ft2, ft0, ft1, ft3\n\t" \
			 mv " %0, ft2" \
			 : "=r"(r_) : "r"(a), "r"(b), "r"(c) \
			 : "ft0", "ft1", "ft2", "ft3"); \
	r_; })
#define FF1(ins, mv, a) __extension__ ({ \
	unsigned long r_; \
	__asm__ volatile("fmv.d.x ft0, %1\n\t" ins " ft2, ft0\n\t" \
			 mv " %0, ft2" : "=r"(r_) : "r"(a) : "ft0", "ft2"); \
	r_; })
/* x[rd] = op f[rs1] (, f[rs2]) */
#define XF1(ins, a) __extension__ ({ \
	unsigned long r_; \
	__asm__ volatile("fmv.d.x ft0, %1\n\t" ins " %0, ft0" \
			 : "=r"(r_) : "r"(a) : "ft0"); \
	r_; })
#define XF2(ins, a, b) __extension__ ({ \
	unsigned long r_; \
	__asm__ volatile("fmv.d.x ft0, %1\n\tfmv.d.x ft1, %2\n\t" ins \
			 " %0, ft0, ft1" : "=r"(r_) : "r"(a), "r"(b) \
			 : "ft0", "ft1"); \
	r_; })
#define XX2(ins, a, b) __extension__ ({ \
	unsigned long r_; \
	__asm__ volatile(ins " %0, %1, %2" : "=r"(r_) : "r"(a), "r"(b)); \
	r_; })

static inline void begin(unsigned long rm)
{
	__asm__ volatile("fsrm %0\n\tfsflags zero" : : "r"(rm) : "memory");
}

static inline void put(struct chk **o, unsigned long r)
{
	unsigned long f;

	__asm__ volatile("frflags %0" : "=r"(f) : : "memory");
	(*o)->r = r;
	(*o)->flags = f;
	(*o)++;
}

#define CHK(rm, expr) do { begin(rm); put(&o, (expr)); } while (0)

KERNEL void kmain(struct chk *out, unsigned int *mem)
{
	struct chk *o = out;
	unsigned long v, w;

	/* NaN boxing */
	CHK(0, FF2("fadd.s", "fmv.x.w", 0x3f800000ul, 0x3f800000ul));
	CHK(0, FF2("fadd.s", "fmv.x.w", BOX(0x3f800000ul), BOX(0x3f800000ul)));
	begin(0);
	mem[0] = 0x3f800000;
	__asm__ volatile("flw ft0, 0(%1)\n\tfmv.x.d %0, ft0"
			 : "=r"(v) : "r"(mem) : "ft0", "memory");
	put(&o, v);
	begin(0);
	__asm__ volatile("fmv.w.x ft0, %1\n\tfmv.x.d %0, ft0"
			 : "=r"(v) : "r"(0x12345678ul) : "ft0");
	put(&o, v);
	CHK(0, XF1("fmv.x.w", 0x0123456787654321ul));
	/* rounding: RMM and RNE on an exact tie */
	CHK(4, FF2("fadd.s", "fmv.x.w", BOX(0x3f800000ul), BOX(0x33800000ul)));
	CHK(0, FF2("fadd.s", "fmv.x.w", BOX(0x3f800000ul), BOX(0x33800000ul)));
	CHK(4, FF2("fadd.s", "fmv.x.w", BOX(0xbf800000ul), BOX(0xb3800000ul)));
	CHK(4, XF1("fcvt.w.s", BOX(0x40200000ul)));		/* 2.5 */
	CHK(0, XF1("fcvt.w.s", BOX(0x40200000ul)));
	CHK(4, XF1("fcvt.w.s", BOX(0xc0200000ul)));		/* -2.5 */
	CHK(0, XF1("fcvt.w.s", BOX(0x40600000ul)));		/* 3.5 */
	/* min / max */
	CHK(0, FF2("fmin.s", "fmv.x.w", BOX(0x80000000ul), BOX(0)));
	CHK(0, FF2("fmax.s", "fmv.x.w", BOX(0x80000000ul), BOX(0)));
	CHK(0, FF2("fmin.s", "fmv.x.w", BOX(QNAN_S), BOX(0x3f800000ul)));
	CHK(0, FF2("fmin.s", "fmv.x.w", BOX(SNAN_S), BOX(0x3f800000ul)));
	CHK(0, FF2("fmax.s", "fmv.x.w", BOX(QNAN_S), BOX(QNAN_S)));
	CHK(0, FF2("fmax.d", "fmv.x.d", SNAN_D, 0x4000000000000000ul));
	/* fclass.s: -inf -1 -denorm -0 +0 +denorm 1 +inf sNaN qNaN */
	CHK(0, XF1("fclass.s", BOX(0xff800000ul)));
	CHK(0, XF1("fclass.s", BOX(0xbf800000ul)));
	CHK(0, XF1("fclass.s", BOX(0x80000001ul)));
	CHK(0, XF1("fclass.s", BOX(0x80000000ul)));
	CHK(0, XF1("fclass.s", BOX(0)));
	CHK(0, XF1("fclass.s", BOX(0x007ffffful)));
	CHK(0, XF1("fclass.s", BOX(0x3f800000ul)));
	CHK(0, XF1("fclass.s", BOX(0x7f800000ul)));
	CHK(0, XF1("fclass.s", BOX(SNAN_S)));
	CHK(0, XF1("fclass.s", BOX(QNAN_S)));
	CHK(0, XF1("fclass.s", 0x3f800000ul));			/* unboxed */
	CHK(0, XF1("fclass.d", SNAN_D));
	CHK(0, XF1("fclass.d", 1ul << 63 | 0xffffffffffffful));
	/* division edge cases */
	CHK(0, XX2("div", 5l, 0l));
	CHK(0, XX2("divu", 5l, 0l));
	CHK(0, XX2("rem", 5l, 0l));
	CHK(0, XX2("remu", 5l, 0l));
	CHK(0, XX2("div", 0x8000000000000000ul, -1l));
	CHK(0, XX2("rem", 0x8000000000000000ul, -1l));
	CHK(0, XX2("divw", 0x80000000ul, -1l));
	CHK(0, XX2("remw", 0x80000000ul, -1l));
	CHK(0, XX2("divuw", 5l, 0xffffffff00000000ul));
	CHK(0, XX2("remuw", 0x80000000ul, 0l));
	CHK(0, XX2("divw", 7l, 0l));
	/* float to integer out of range */
	CHK(0, XF1("fcvt.w.s", BOX(QNAN_S)));
	CHK(0, XF1("fcvt.wu.s", BOX(0xbf800000ul)));		/* -1 */
	CHK(0, XF1("fcvt.l.d", 0x46293e5939a08ceaul));		/* 1e30 */
	CHK(0, XF1("fcvt.wu.s", BOX(0x4f800000ul)));		/* 2^32 */
	CHK(0, XF1("fcvt.wu.s", BOX(0x4f32d05eul)));		/* 3e9 */
	CHK(1, XF1("fcvt.lu.d", 0xbfe0000000000000ul));		/* -0.5 */
	CHK(0, XF1("fcvt.w.d", 0xc1e0000000200000ul));		/* -2^31 - 1 */
	/* NaNs and exceptions */
	CHK(0, FF1("fsqrt.s", "fmv.x.w", BOX(0xbf800000ul)));
	CHK(0, FF2("fdiv.s", "fmv.x.w", BOX(0x3f800000ul), BOX(0)));
	CHK(0, FF2("fdiv.d", "fmv.x.d", 0ul, 0ul));
	CHK(0, FF2("fadd.d", "fmv.x.d", QNAN_D, 0x3ff0000000000000ul));
	CHK(0, FF2("fadd.d", "fmv.x.d", SNAN_D, 0x3ff0000000000000ul));
	CHK(0, FF1("fcvt.s.d", "fmv.x.w", 0x7e37e43c8800759cul));	/* 1e300 */
	CHK(0, FF1("fcvt.d.s", "fmv.x.d", BOX(SNAN_S)));
	CHK(0, FF3("fmadd.s", "fmv.x.w", BOX(0x7f800000ul), BOX(0),
		   BOX(QNAN_S)));
	CHK(0, FF3("fmadd.d", "fmv.x.d", 0x7ff0000000000000ul, 0ul, 0ul));
	CHK(0, XF2("feq.s", BOX(SNAN_S), BOX(0)));
	CHK(0, XF2("feq.s", BOX(QNAN_S), BOX(0)));
	CHK(0, XF2("flt.s", BOX(QNAN_S), BOX(0)));
	CHK(0, XF2("fle.d", 0x3ff0000000000000ul, 0x3ff0000000000000ul));
	CHK(0, XF2("feq.d", 0x8000000000000000ul, 0ul));	/* -0 == +0 */
	CHK(0, FF2("fmul.s", "fmv.x.w", BOX(0x00800000ul), BOX(0x3f000000ul)));
	CHK(0, FF2("fmul.d", "fmv.x.d", 0x7fefffffffffffff, 0x4000000000000000));
	CHK(2, FF2("fmul.d", "fmv.x.d", 0x7fefffffffffffff, 0x4000000000000000));
	CHK(1, FF2("fadd.s", "fmv.x.w", BOX(0x7f7ffffful), BOX(0x7f7ffffful)));
	/* fcsr: frm and fflags fields, and csrrs accumulation */
	begin(3);
	__asm__ volatile("csrwi fflags, 1\n\tcsrr %0, fcsr" : "=r"(v));
	put(&o, v);
	begin(0);
	__asm__ volatile("csrwi fflags, 0x1f\n\tfsflags %0, zero" : "=r"(v));
	put(&o, v);
	begin(2);
	__asm__ volatile("frrm %0" : "=r"(v));
	put(&o, v);
	begin(0);
	__asm__ volatile("csrrsi zero, fflags, 8\n\tcsrrci zero, fflags, 0\n\t"
			 "csrrs %0, fflags, zero" : "=r"(v));
	put(&o, v);
	/* integer */
	CHK(0, XX2("mulhsu", -1l, 2l));
	CHK(0, XX2("mulhu", -1l, -1l));
	CHK(0, XX2("mulh", 0x8000000000000000ul, 0x8000000000000000ul));
	CHK(0, XX2("addw", 0x7ffffffful, 1l));
	CHK(0, XX2("sraw", 0x80000000ul, 31l));
	CHK(0, XX2("srlw", 0x80000000ul, 31l));
	CHK(0, XX2("sllw", 1l, 63l));		/* shamt uses 5 bits */
	CHK(0, XX2("sra", 0x8000000000000000ul, 65l));
	/* LR/SC and AMOs on mem[0..3] */
	begin(0);
	mem[0] = 11;
	__asm__ volatile("sc.w %0, %2, (%1)" : "=r"(v) : "r"(mem), "r"(22l)
			 : "memory");
	put(&o, v << 32 | mem[0]);
	begin(0);
	__asm__ volatile("lr.w %0, (%2)\n\tsc.w %1, %3, (%2)"
			 : "=&r"(w), "=&r"(v) : "r"(mem), "r"(33l) : "memory");
	put(&o, v << 48 | w << 32 | mem[0]);
	begin(0);
	mem[1] = 0xfffffffb;	/* -5 */
	__asm__ volatile("amomax.w %0, %2, (%1)" : "=r"(v)
			 : "r"(mem + 1), "r"(3l) : "memory");
	put(&o, v);
	CHK(0, mem[1]);
	mem[1] = 0xfffffffb;
	__asm__ volatile("amomaxu.w %0, %2, (%1)" : "=r"(v)
			 : "r"(mem + 1), "r"(3l) : "memory");
	CHK(0, mem[1]);
	mem[2] = 0x80000000;
	__asm__ volatile("amoadd.w %0, %2, (%1)" : "=r"(v)
			 : "r"(mem + 2), "r"(0x80000000l) : "memory");
	CHK(0, v << 32 | mem[2]);
	/* instret: csrr, nop, nop, csrr */
	begin(0);
	__asm__ volatile("rdinstret %0\n\tnop\n\tnop\n\trdinstret %1"
			 : "=&r"(v), "=r"(w));
	put(&o, w - v);
	o->r = 0x454e44;	/* end marker */
	o->flags = (unsigned long)(o - out);
}
