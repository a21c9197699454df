/*
 * npu - virtual NPU PCI device: RV64G interpreter of the compute units.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Decodes and executes RV64IMAFD + Zicsr + Zifencei (32-bit encodings
 * only) for one hart; see npu_rv.h. Memory and the device CSRs are reached
 * through NpuRvOps.
 *
 * Floating point uses the host's IEEE 754 arithmetic under <fenv.h>: the
 * operation runs on volatile operands (so gcc neither folds it nor moves it
 * across the fenv calls) with the host rounding mode set to the RISC-V one
 * and the host exception flags cleared; the flags it raised become fflags.
 * The host exception flags are not preserved (QEMU keeps no state in them;
 * softfloat has its own), the host rounding mode is restored. Everything
 * the host does differently from RISC-V is done by hand: NaN results are
 * canonical, NaN boxing, min/max, compares, classification and conversions
 * to integers (x86 returns "integer indefinite" there).
 *
 * RMM (round to nearest, ties to max magnitude) has no host mode: the
 * operation is rounded to nearest-even, and when that was inexact the exact
 * result is compared with the midpoints next to the rounded one, in a type
 * of at least 113 significand bits (binary128) where the comparison is
 * exact (products of doubles fit; sums and fused sums are checked with an
 * error-free TwoSum). Only a tie rounds differently from RNE, and a tie
 * never changes the exception flags. Square roots never tie.
 */

#include "qemu/osdep.h"
#include <math.h>
#include <fenv.h>
#include "npu_hw.h"
#include "npu_rv.h"

/* A type exact for the RMM tie checks (>= 113 significand bits). */
#if defined(__SIZEOF_FLOAT128__)
typedef __float128 npu_rv_wide;
#else
#include <float.h>
typedef long double npu_rv_wide;
#if LDBL_MANT_DIG < 113
#error "npu_rv.c needs a binary128 type for RMM rounding"
#endif
#endif

/* Standard CSRs handled here. */
#define RV_CSR_FFLAGS      0x001
#define RV_CSR_FRM         0x002
#define RV_CSR_FCSR        0x003
#define RV_CSR_INSTRET     0xc02

/* ------------------------------------------------------------------------
 * Decoder
 */

static int64_t npu_rv_imm_i(uint32_t w)
{
    return (int32_t)w >> 20;
}

static int64_t npu_rv_imm_s(uint32_t w)
{
    return (int32_t)((w & 0xfe000000) | ((w >> 7) & 0x1f) << 20) >> 20;
}

static int64_t npu_rv_imm_b(uint32_t w)
{
    /* imm[12|10:5] in w[31:25], imm[4:1|11] in w[11:7] */
    uint32_t v = (w & 0x80000000) | (w & 0x80) << 23 |
                 ((w >> 1) & 0x3f000000) | ((w << 12) & 0x00f00000);

    return (int32_t)v >> 19;
}

static int64_t npu_rv_imm_j(uint32_t w)
{
    /* imm[20|10:1|11|19:12] in w[31:12] */
    uint32_t v = (w & 0x80000000) | (w & 0xff000) << 11 |
                 (w & 0x100000) << 2 | ((w >> 9) & 0x3ff000);

    return (int32_t)v >> 11;
}

static void npu_rv_set(NpuRvInsn *d, unsigned op, unsigned cls, unsigned flags)
{
    d->op = op;
    d->cls = cls;
    d->flags = flags;
}

static bool npu_rv_decode_op_imm(uint32_t w, unsigned f3, NpuRvInsn *d)
{
    static const uint8_t ops[8] = {
        RV_ADDI, RV_SLLI, RV_SLTI, RV_SLTIU, RV_XORI, RV_SRLI, RV_ORI, RV_ANDI
    };
    unsigned op = ops[f3];

    d->imm = npu_rv_imm_i(w);
    if (f3 == 1 || f3 == 5) {
        unsigned hi = w >> 26;      /* imm[11:6] */

        d->imm &= 0x3f;
        if (f3 == 5 && hi == 0x10) {
            op = RV_SRAI;
        } else if (hi != 0) {
            return false;
        }
    }
    npu_rv_set(d, op, NPU_RV_ALU, NPU_RV_RS1_X);
    return true;
}

static bool npu_rv_decode_op_imm32(uint32_t w, unsigned f3, NpuRvInsn *d)
{
    unsigned hi = w >> 25;          /* imm[11:5] */

    d->imm = npu_rv_imm_i(w);
    switch (f3) {
    case 0:
        npu_rv_set(d, RV_ADDIW, NPU_RV_ALU, NPU_RV_RS1_X);
        return true;
    case 1:
        if (hi != 0) {
            return false;
        }
        npu_rv_set(d, RV_SLLIW, NPU_RV_ALU, NPU_RV_RS1_X);
        break;
    case 5:
        if (hi == 0) {
            npu_rv_set(d, RV_SRLIW, NPU_RV_ALU, NPU_RV_RS1_X);
        } else if (hi == 0x20) {
            npu_rv_set(d, RV_SRAIW, NPU_RV_ALU, NPU_RV_RS1_X);
        } else {
            return false;
        }
        break;
    default:
        return false;
    }
    d->imm &= 0x1f;
    return true;
}

static bool npu_rv_decode_op(uint32_t w, unsigned f3, NpuRvInsn *d)
{
    static const uint8_t base[8] = {
        RV_ADD, RV_SLL, RV_SLT, RV_SLTU, RV_XOR, RV_SRL, RV_OR, RV_AND
    };
    static const uint8_t muldiv[8] = {
        RV_MUL, RV_MULH, RV_MULHSU, RV_MULHU, RV_DIV, RV_DIVU, RV_REM, RV_REMU
    };
    unsigned f7 = w >> 25;
    unsigned fl = NPU_RV_RS1_X | NPU_RV_RS2_X;

    if (f7 == 0) {
        npu_rv_set(d, base[f3], NPU_RV_ALU, fl);
    } else if (f7 == 0x20 && f3 == 0) {
        npu_rv_set(d, RV_SUB, NPU_RV_ALU, fl);
    } else if (f7 == 0x20 && f3 == 5) {
        npu_rv_set(d, RV_SRA, NPU_RV_ALU, fl);
    } else if (f7 == 1) {
        npu_rv_set(d, muldiv[f3], f3 < 4 ? NPU_RV_MUL : NPU_RV_DIV, fl);
    } else {
        return false;
    }
    return true;
}

static bool npu_rv_decode_op32(uint32_t w, unsigned f3, NpuRvInsn *d)
{
    unsigned f7 = w >> 25;
    unsigned fl = NPU_RV_RS1_X | NPU_RV_RS2_X;

    switch (f7 << 3 | f3) {
    case 0x00 << 3 | 0:
        npu_rv_set(d, RV_ADDW, NPU_RV_ALU, fl);
        break;
    case 0x20 << 3 | 0:
        npu_rv_set(d, RV_SUBW, NPU_RV_ALU, fl);
        break;
    case 0x00 << 3 | 1:
        npu_rv_set(d, RV_SLLW, NPU_RV_ALU, fl);
        break;
    case 0x00 << 3 | 5:
        npu_rv_set(d, RV_SRLW, NPU_RV_ALU, fl);
        break;
    case 0x20 << 3 | 5:
        npu_rv_set(d, RV_SRAW, NPU_RV_ALU, fl);
        break;
    case 0x01 << 3 | 0:
        npu_rv_set(d, RV_MULW, NPU_RV_MUL, fl);
        break;
    case 0x01 << 3 | 4:
        npu_rv_set(d, RV_DIVW, NPU_RV_DIV, fl);
        break;
    case 0x01 << 3 | 5:
        npu_rv_set(d, RV_DIVUW, NPU_RV_DIV, fl);
        break;
    case 0x01 << 3 | 6:
        npu_rv_set(d, RV_REMW, NPU_RV_DIV, fl);
        break;
    case 0x01 << 3 | 7:
        npu_rv_set(d, RV_REMUW, NPU_RV_DIV, fl);
        break;
    default:
        return false;
    }
    return true;
}

static bool npu_rv_decode_system(uint32_t w, unsigned f3, NpuRvInsn *d)
{
    static const uint8_t csr_ops[8] = {
        0, RV_CSRRW, RV_CSRRS, RV_CSRRC, 0, RV_CSRRWI, RV_CSRRSI, RV_CSRRCI
    };

    if (f3 == 0) {
        /* ECALL and EBREAK only: the rest is privileged */
        if (w == 0x00000073) {
            npu_rv_set(d, RV_ECALL, NPU_RV_SYSTEM, 0);
            return true;
        }
        if (w == 0x00100073) {
            npu_rv_set(d, RV_EBREAK, NPU_RV_SYSTEM, 0);
            return true;
        }
        return false;
    }
    if (f3 == 4) {
        return false;
    }
    d->imm = w >> 20;               /* CSR number */
    npu_rv_set(d, csr_ops[f3], NPU_RV_CSR, f3 < 4 ? NPU_RV_RS1_X : 0);
    return true;
}

static bool npu_rv_decode_amo(uint32_t w, unsigned f3, NpuRvInsn *d)
{
    unsigned fl = NPU_RV_RS1_X | NPU_RV_RS2_X;
    unsigned op;

    if (f3 != 2 && f3 != 3) {
        return false;
    }
    d->size = f3 == 2 ? 4 : 8;
    switch (w >> 27) {
    case 0x02:
        if (d->rs2 != 0) {
            return false;
        }
        op = RV_LR;
        fl = NPU_RV_RS1_X;
        break;
    case 0x03:
        op = RV_SC;
        break;
    case 0x01:
        op = RV_AMOSWAP;
        break;
    case 0x00:
        op = RV_AMOADD;
        break;
    case 0x04:
        op = RV_AMOXOR;
        break;
    case 0x0c:
        op = RV_AMOAND;
        break;
    case 0x08:
        op = RV_AMOOR;
        break;
    case 0x10:
        op = RV_AMOMIN;
        break;
    case 0x14:
        op = RV_AMOMAX;
        break;
    case 0x18:
        op = RV_AMOMINU;
        break;
    case 0x1c:
        op = RV_AMOMAXU;
        break;
    default:
        return false;
    }
    npu_rv_set(d, op, NPU_RV_AMO, fl);
    return true;
}

/* OP-FP (opcode 0x53) */
static bool npu_rv_decode_op_fp(uint32_t w, unsigned f3, NpuRvInsn *d)
{
    unsigned f7 = w >> 25;
    bool dbl = f7 & 1;
    unsigned rs2 = d->rs2;
    unsigned ff = NPU_RV_RD_F | NPU_RV_RS1_F;  /* f[rd] = op(f[rs1]) */
    unsigned ff2 = ff | NPU_RV_RS2_F;
    unsigned xf = NPU_RV_RD_X | NPU_RV_RS1_F;  /* x[rd] = op(f[rs1]) */
    unsigned fx = NPU_RV_RD_F | NPU_RV_RS1_X;  /* f[rd] = op(x[rs1]) */
    bool uses_rm = false;

    switch (f7 & ~1) {
    case 0x00:
        npu_rv_set(d, dbl ? RV_FADD_D : RV_FADD_S, NPU_RV_FP, ff2);
        uses_rm = true;
        break;
    case 0x04:
        npu_rv_set(d, dbl ? RV_FSUB_D : RV_FSUB_S, NPU_RV_FP, ff2);
        uses_rm = true;
        break;
    case 0x08:
        npu_rv_set(d, dbl ? RV_FMUL_D : RV_FMUL_S, NPU_RV_FP, ff2);
        uses_rm = true;
        break;
    case 0x0c:
        npu_rv_set(d, dbl ? RV_FDIV_D : RV_FDIV_S, NPU_RV_FDIV, ff2);
        uses_rm = true;
        break;
    case 0x2c:
        if (rs2 != 0) {
            return false;
        }
        npu_rv_set(d, dbl ? RV_FSQRT_D : RV_FSQRT_S, NPU_RV_FDIV, ff);
        uses_rm = true;
        break;
    case 0x10:
        if (f3 > 2) {
            return false;
        }
        npu_rv_set(d, (dbl ? RV_FSGNJ_D : RV_FSGNJ_S) + f3, NPU_RV_FP, ff2);
        break;
    case 0x14:
        if (f3 > 1) {
            return false;
        }
        npu_rv_set(d, (dbl ? RV_FMIN_D : RV_FMIN_S) + f3, NPU_RV_FP, ff2);
        break;
    case 0x20:
        /* fcvt.s.d (f7 0x20, rs2 1), fcvt.d.s (f7 0x21, rs2 0) */
        if (rs2 != (dbl ? 0 : 1)) {
            return false;
        }
        npu_rv_set(d, dbl ? RV_FCVT_D_S : RV_FCVT_S_D, NPU_RV_FP, ff);
        uses_rm = true;
        break;
    case 0x50:
        if (f3 > 2) {
            return false;
        }
        /* f3: 0 fle, 1 flt, 2 feq */
        npu_rv_set(d, (dbl ? RV_FLE_D : RV_FLE_S) - f3, NPU_RV_FP,
                   xf | NPU_RV_RS2_F);
        break;
    case 0x60:
        if (rs2 > 3) {
            return false;
        }
        npu_rv_set(d, (dbl ? RV_FCVT_W_D : RV_FCVT_W_S) + rs2, NPU_RV_FP, xf);
        uses_rm = true;
        break;
    case 0x68:
        if (rs2 > 3) {
            return false;
        }
        npu_rv_set(d, (dbl ? RV_FCVT_D_W : RV_FCVT_S_W) + rs2, NPU_RV_FP, fx);
        uses_rm = true;
        break;
    case 0x70:
        if (rs2 != 0 || f3 > 1) {
            return false;
        }
        if (f3 == 0) {
            npu_rv_set(d, dbl ? RV_FMV_X_D : RV_FMV_X_W, NPU_RV_FP, xf);
        } else {
            npu_rv_set(d, dbl ? RV_FCLASS_D : RV_FCLASS_S, NPU_RV_FP, xf);
        }
        break;
    case 0x78:
        if (rs2 != 0 || f3 != 0) {
            return false;
        }
        npu_rv_set(d, dbl ? RV_FMV_D_X : RV_FMV_W_X, NPU_RV_FP, fx);
        break;
    default:
        return false;
    }
    if (uses_rm && (f3 == 5 || f3 == 6)) {
        return false;
    }
    return true;
}

/*
 * The tensor engine's instructions (custom-0) and the tile DMA's
 * (custom-1), R-type, with every encoding the spec leaves undefined
 * illegal: a tile number above 7, esize 3, stray funct7 bits, an unknown
 * type or op, rs2 not 0 where it is unused.
 */
static bool npu_rv_decode_tensor(uint32_t w, unsigned f3, NpuRvInsn *d)
{
    unsigned f7 = w >> 25;

    d->funct7 = f7;
    if ((w & 0x7f) == NPU_OPC_TDMA) {
        if (f7) {
            return false;
        }
        if (f3 == NPU_TDMA_ISSUE) {
            if (d->rd || d->rs2) {
                return false;
            }
            npu_rv_set(d, RV_TDMA_ISSUE, NPU_RV_TDMA, NPU_RV_RS1_X);
            return true;
        }
        if (f3 == NPU_TDMA_WAIT) {
            npu_rv_set(d, RV_TDMA_WAIT, NPU_RV_TDMA,
                       (d->rd ? NPU_RV_RD_X : 0) | NPU_RV_RS1_X |
                       NPU_RV_RS2_X);
            return true;
        }
        return false;
    }
    if (d->rd >= NPU_TILE_REGS) {
        return false;
    }
    switch (f3) {
    case NPU_TENSOR_TLOAD:
    case NPU_TENSOR_TSTORE:
        if ((f7 & ~(3u | NPU_TILE_TRANS)) || (f7 & 3) > NPU_TILE_E32) {
            return false;
        }
        npu_rv_set(d, f3 == NPU_TENSOR_TLOAD ? RV_TLOAD : RV_TSTORE,
                   NPU_RV_TENSOR, NPU_RV_RS1_X | NPU_RV_RS2_X);
        return true;
    case NPU_TENSOR_TFILL:
        if (f7 > NPU_TILE_E32 || d->rs2) {
            return false;
        }
        npu_rv_set(d, RV_TFILL, NPU_RV_TENSOR, NPU_RV_RS1_X);
        return true;
    case NPU_TENSOR_TMMA:
        if (f7 >= NPU_MMA_TYPES || d->rs1 >= NPU_TILE_REGS ||
            d->rs2 >= NPU_TILE_REGS) {
            return false;
        }
        npu_rv_set(d, RV_TMMA, NPU_RV_TENSOR, 0);
        return true;
    case NPU_TENSOR_TEW:
        if (f7 >= NPU_TEW_OPS || d->rs1 >= NPU_TILE_REGS ||
            d->rs2 >= NPU_TILE_REGS ||
            (f7 >= NPU_TEW_RELU && d->rs2)) {
            return false;
        }
        npu_rv_set(d, RV_TEW, NPU_RV_TENSOR, 0);
        return true;
    default:
        return false;
    }
}

bool npu_rv_decode(uint32_t w, NpuRvInsn *d)
{
    unsigned f3 = (w >> 12) & 7;
    unsigned fl;

    memset(d, 0, sizeof(*d));
    d->word = w;
    d->rd = (w >> 7) & 0x1f;
    d->rs1 = (w >> 15) & 0x1f;
    d->rs2 = (w >> 20) & 0x1f;
    d->rs3 = w >> 27;
    d->rm = f3;

    switch (w & 0x7f) {
    case 0x37:
        npu_rv_set(d, RV_LUI, NPU_RV_ALU, 0);
        d->imm = (int32_t)(w & 0xfffff000);
        break;
    case 0x17:
        npu_rv_set(d, RV_AUIPC, NPU_RV_ALU, 0);
        d->imm = (int32_t)(w & 0xfffff000);
        break;
    case 0x6f:
        npu_rv_set(d, RV_JAL, NPU_RV_JUMP, 0);
        d->imm = npu_rv_imm_j(w);
        break;
    case 0x67:
        if (f3 != 0) {
            return false;
        }
        npu_rv_set(d, RV_JALR, NPU_RV_JUMP, NPU_RV_RS1_X);
        d->imm = npu_rv_imm_i(w);
        break;
    case 0x63:
        if (f3 == 2 || f3 == 3) {
            return false;
        }
        /* f3: 0 beq, 1 bne, 4 blt, 5 bge, 6 bltu, 7 bgeu */
        npu_rv_set(d, RV_BEQ + (f3 < 4 ? f3 : f3 - 2), NPU_RV_BRANCH,
                   NPU_RV_RS1_X | NPU_RV_RS2_X);
        d->imm = npu_rv_imm_b(w);
        break;
    case 0x03: {
        static const uint8_t ops[7] = {
            RV_LB, RV_LH, RV_LW, RV_LD, RV_LBU, RV_LHU, RV_LWU
        };

        if (f3 == 7) {
            return false;
        }
        npu_rv_set(d, ops[f3], NPU_RV_LOAD, NPU_RV_RS1_X);
        d->size = 1 << (f3 & 3);
        d->imm = npu_rv_imm_i(w);
        break;
    }
    case 0x23:
        if (f3 > 3) {
            return false;
        }
        npu_rv_set(d, RV_STORE, NPU_RV_STORE, NPU_RV_RS1_X | NPU_RV_RS2_X);
        d->size = 1 << f3;
        d->imm = npu_rv_imm_s(w);
        break;
    case 0x13:
        if (!npu_rv_decode_op_imm(w, f3, d)) {
            return false;
        }
        break;
    case 0x1b:
        if (!npu_rv_decode_op_imm32(w, f3, d)) {
            return false;
        }
        break;
    case 0x33:
        if (!npu_rv_decode_op(w, f3, d)) {
            return false;
        }
        break;
    case 0x3b:
        if (!npu_rv_decode_op32(w, f3, d)) {
            return false;
        }
        break;
    case 0x0f:
        /* FENCE, FENCE.I: nothing to order on one in-order hart */
        if (f3 > 1) {
            return false;
        }
        npu_rv_set(d, RV_FENCE, NPU_RV_ALU, 0);
        break;
    case 0x73:
        if (!npu_rv_decode_system(w, f3, d)) {
            return false;
        }
        break;
    case 0x2f:
        if (!npu_rv_decode_amo(w, f3, d)) {
            return false;
        }
        break;
    case 0x07:
        if (f3 != 2 && f3 != 3) {
            return false;
        }
        npu_rv_set(d, f3 == 2 ? RV_FLW : RV_FLD, NPU_RV_LOAD,
                   NPU_RV_RD_F | NPU_RV_RS1_X);
        d->size = f3 == 2 ? 4 : 8;
        d->imm = npu_rv_imm_i(w);
        break;
    case 0x27:
        if (f3 != 2 && f3 != 3) {
            return false;
        }
        npu_rv_set(d, RV_FSTORE, NPU_RV_STORE, NPU_RV_RS1_X | NPU_RV_RS2_F);
        d->size = f3 == 2 ? 4 : 8;
        d->imm = npu_rv_imm_s(w);
        break;
    case 0x43:
    case 0x47:
    case 0x4b:
    case 0x4f: {
        /* fmadd, fmsub, fnmsub, fnmadd; fmt 0 = S, 1 = D */
        unsigned fmt = (w >> 25) & 3;
        unsigned k = ((w & 0x7f) - 0x43) >> 2;

        if (fmt > 1 || f3 == 5 || f3 == 6) {
            return false;
        }
        npu_rv_set(d, (fmt ? RV_FMADD_D : RV_FMADD_S) + k, NPU_RV_FP,
                   NPU_RV_RD_F | NPU_RV_RS1_F | NPU_RV_RS2_F | NPU_RV_RS3_F);
        break;
    }
    case 0x53:
        if (!npu_rv_decode_op_fp(w, f3, d)) {
            return false;
        }
        break;
    case NPU_OPC_TENSOR:
    case NPU_OPC_TDMA:
        /* their fields are theirs: no x-register conventions below */
        return npu_rv_decode_tensor(w, f3, d);
    default:
        return false;
    }

    /* Which instructions write x[rd]; x0 as destination is no write. */
    fl = d->flags;
    switch (d->cls) {
    case NPU_RV_ALU:
    case NPU_RV_JUMP:
    case NPU_RV_MUL:
    case NPU_RV_DIV:
    case NPU_RV_LOAD:
    case NPU_RV_AMO:
    case NPU_RV_CSR:
        if (d->op != RV_FENCE && !(fl & NPU_RV_RD_F)) {
            fl |= NPU_RV_RD_X;
        }
        break;
    default:
        break;
    }
    if (d->rd == 0) {
        fl &= ~NPU_RV_RD_X;
    }
    d->flags = fl;
    /* register fields that are not operands read as 0 */
    if (!(fl & (NPU_RV_RS2_X | NPU_RV_RS2_F))) {
        d->rs2 = 0;
    }
    if (!(fl & NPU_RV_RS3_F)) {
        d->rs3 = 0;
    }
    return true;
}

/* ------------------------------------------------------------------------
 * Floating point helpers
 */

/* A single-precision operand: not NaN-boxed reads as the canonical NaN */
static inline uint32_t npu_rv_unbox(uint64_t v)
{
    return (v >> 32) == 0xffffffffu ? (uint32_t)v : RV_CANON_NAN_S;
}

static inline bool npu_rv_is_snan_s(uint32_t v)
{
    return (v & 0x7f800000u) == 0x7f800000u && (v & 0x7fffffu) &&
           !(v & 0x400000u);
}

static inline bool npu_rv_is_snan_d(uint64_t v)
{
    return (v & 0x7ff0000000000000ull) == 0x7ff0000000000000ull &&
           (v & 0xfffffffffffffull) && !(v & 0x8000000000000ull);
}

static inline bool npu_rv_is_nan_s(uint32_t v)
{
    return (v & 0x7fffffffu) > 0x7f800000u;
}

static inline bool npu_rv_is_nan_d(uint64_t v)
{
    return (v & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
}

/* Host rounding mode per RISC-V rm; RMM rounds to nearest, then fixes ties */
static const int npu_rv_fe_round[5] = {
    FE_TONEAREST, FE_TOWARDZERO, FE_DOWNWARD, FE_UPWARD, FE_TONEAREST
};

/*
 * Clearing and reading the host exception flags: on x86-64, float and
 * double arithmetic (and glibc's fma) run in SSE, and MXCSR is much cheaper
 * to reach than feclearexcept()'s x87 environment reload.
 */
#if defined(__x86_64__) && defined(__SSE2_MATH__)
static inline void npu_rv_fp_clear(void)
{
    __builtin_ia32_ldmxcsr(__builtin_ia32_stmxcsr() & ~0x3fu);
}

/* fegetround() as SSE arithmetic sees it: MXCSR.RC [14:13] as FE_* */
static inline int npu_rv_fp_round(void)
{
    QEMU_BUILD_BUG_ON(FE_DOWNWARD != 0x400 || FE_UPWARD != 0x800 ||
                      FE_TOWARDZERO != 0xc00 || FE_TONEAREST != 0);
    return (__builtin_ia32_stmxcsr() >> 3) & 0xc00;
}

static inline unsigned npu_rv_fp_flags(void)
{
    unsigned m = __builtin_ia32_stmxcsr();

    /* MXCSR: IE 0x01, DE 0x02 (not IEEE), ZE 0x04, OE 0x08, UE 0x10, PE 0x20 */
    return (m & 0x01 ? RV_FFLAG_NV : 0) | (m & 0x04 ? RV_FFLAG_DZ : 0) |
           (m & 0x08 ? RV_FFLAG_OF : 0) | (m & 0x10 ? RV_FFLAG_UF : 0) |
           (m & 0x20 ? RV_FFLAG_NX : 0);
}
#else
static unsigned npu_rv_host_flags(int ex)
{
    return (ex & FE_INVALID ? RV_FFLAG_NV : 0) |
           (ex & FE_DIVBYZERO ? RV_FFLAG_DZ : 0) |
           (ex & FE_OVERFLOW ? RV_FFLAG_OF : 0) |
           (ex & FE_UNDERFLOW ? RV_FFLAG_UF : 0) |
           (ex & FE_INEXACT ? RV_FFLAG_NX : 0);
}

static inline void npu_rv_fp_clear(void)
{
    feclearexcept(FE_ALL_EXCEPT);
}

static inline int npu_rv_fp_round(void)
{
    return fegetround();
}

static inline unsigned npu_rv_fp_flags(void)
{
    return npu_rv_host_flags(fetestexcept(FE_ALL_EXCEPT));
}
#endif

bool npu_rv_host_rounds_nearest(void)
{
    return npu_rv_fp_round() == FE_TONEAREST;
}

/*
 * Enter the host FP environment for rm; returns the mode to restore.
 * Clearing the host flags is slow (MXCSR writes cost tens of ns), and
 * needless when every flag set in the host is already set in the hart's
 * fflags (known): the operation's flags are ORed into fflags anyway. Only
 * RMM must see whether this operation alone was inexact.
 */
static inline int npu_rv_fp_enter(unsigned rm, unsigned known)
{
    int old = npu_rv_fp_round();

    if (old != npu_rv_fe_round[rm]) {
        fesetround(npu_rv_fe_round[rm]);
    }
    if (rm == RV_RM_RMM || (npu_rv_fp_flags() & ~known)) {
        npu_rv_fp_clear();
    }
    return old;
}

static inline void npu_rv_fp_leave(unsigned rm, int old)
{
    if (old != npu_rv_fe_round[rm]) {
        fesetround(old);
    }
}

/* Is s + t exactly m? (TwoSum: s + t = u + err exactly, rounding to even) */
static bool npu_rv_wide_sum_is(npu_rv_wide s, npu_rv_wide t, npu_rv_wide m)
{
    npu_rv_wide u = s + t;
    npu_rv_wide tv = u - s;
    npu_rv_wide err = (s - (u - tv)) + (t - tv);

    return u == m && err == 0;
}

/*
 * Is the exact result of op on (a, b, c) (doubles, or singles widened
 * exactly; integer conversions use ia) equal to m?
 */
static bool npu_rv_exact_is(unsigned op, double a, double b, double c,
                            uint64_t ia, npu_rv_wide m)
{
    npu_rv_wide wa = a, wb = b, wc = c;

    switch (op) {
    case RV_FADD_S:
    case RV_FADD_D:
        return npu_rv_wide_sum_is(wa, wb, m);
    case RV_FSUB_S:
    case RV_FSUB_D:
        return npu_rv_wide_sum_is(wa, -wb, m);
    case RV_FMUL_S:
    case RV_FMUL_D:
        return wa * wb == m;
    case RV_FDIV_S:
    case RV_FDIV_D:
        return m * wb == wa;
    case RV_FMADD_S:
    case RV_FMADD_D:
        return npu_rv_wide_sum_is(wa * wb, wc, m);
    case RV_FMSUB_S:
    case RV_FMSUB_D:
        return npu_rv_wide_sum_is(wa * wb, -wc, m);
    case RV_FNMSUB_S:
    case RV_FNMSUB_D:
        return npu_rv_wide_sum_is(-(wa * wb), wc, m);
    case RV_FNMADD_S:
    case RV_FNMADD_D:
        return npu_rv_wide_sum_is(-(wa * wb), -wc, m);
    case RV_FCVT_S_W:
    case RV_FCVT_D_W:
        return (npu_rv_wide)(int32_t)ia == m;
    case RV_FCVT_S_WU:
    case RV_FCVT_D_WU:
        return (npu_rv_wide)(uint32_t)ia == m;
    case RV_FCVT_S_L:
    case RV_FCVT_D_L:
        return (npu_rv_wide)(int64_t)ia == m;
    case RV_FCVT_S_LU:
    case RV_FCVT_D_LU:
        return (npu_rv_wide)ia == m;
    case RV_FCVT_S_D:
        return wa == m;
    default:
        /* square roots are never halfway between two floats */
        return false;
    }
}

/*
 * r is the inexact round-to-nearest-even result: if the exact result is
 * halfway between r and a neighbour, RMM takes the one of larger magnitude.
 */
static double npu_rv_rmm_fix_d(unsigned op, double a, double b, double c,
                               uint64_t ia, double r)
{
    double up = nextafter(r, INFINITY), dn = nextafter(r, -INFINITY);

    if (isinf(r)) {
        return r;
    }
    if (fabs(up) > fabs(r) &&
        npu_rv_exact_is(op, a, b, c, ia, ((npu_rv_wide)r + up) / 2)) {
        return up;
    }
    if (fabs(dn) > fabs(r) &&
        npu_rv_exact_is(op, a, b, c, ia, ((npu_rv_wide)r + dn) / 2)) {
        return dn;
    }
    return r;
}

static float npu_rv_rmm_fix_s(unsigned op, double a, double b, double c,
                              uint64_t ia, float r)
{
    float up = nextafterf(r, INFINITY), dn = nextafterf(r, -INFINITY);

    if (isinf(r)) {
        return r;
    }
    if (fabsf(up) > fabsf(r) &&
        npu_rv_exact_is(op, a, b, c, ia, ((npu_rv_wide)r + up) / 2)) {
        return up;
    }
    if (fabsf(dn) > fabsf(r) &&
        npu_rv_exact_is(op, a, b, c, ia, ((npu_rv_wide)r + dn) / 2)) {
        return dn;
    }
    return r;
}

/* inf * 0 in a fused multiply-add is invalid even when the addend is qNaN */
static inline bool npu_rv_fma_inf_zero(double a, double b)
{
    return (isinf(a) && b == 0) || (a == 0 && isinf(b));
}

/* Rounded operations with a single-precision result; returns the boxed bits */
static uint64_t npu_rv_round_s(unsigned op, uint64_t ua, uint64_t ub,
                               uint64_t uc, unsigned rm, unsigned *fflags)
{
    volatile float a = npu_rv_f_of(npu_rv_unbox(ua));
    volatile float b = npu_rv_f_of(npu_rv_unbox(ub));
    volatile float c = npu_rv_f_of(npu_rv_unbox(uc));
    volatile double ad = npu_rv_d_of(ua);
    volatile int64_t il = ua;
    volatile uint64_t ul = ua;
    volatile int32_t iw = ua;
    volatile uint32_t uw = ua;
    volatile float r;
    int old;
    unsigned ex;

    old = npu_rv_fp_enter(rm, *fflags);
    switch (op) {
    case RV_FADD_S:
        r = a + b;
        break;
    case RV_FSUB_S:
        r = a - b;
        break;
    case RV_FMUL_S:
        r = a * b;
        break;
    case RV_FDIV_S:
        r = a / b;
        break;
    case RV_FSQRT_S:
        r = sqrtf(a);
        break;
    case RV_FMADD_S:
        r = fmaf(a, b, c);
        break;
    case RV_FMSUB_S:
        r = fmaf(a, b, -c);
        break;
    case RV_FNMSUB_S:
        r = fmaf(-a, b, c);
        break;
    case RV_FNMADD_S:
        r = fmaf(-a, b, -c);
        break;
    case RV_FCVT_S_W:
        r = iw;
        break;
    case RV_FCVT_S_WU:
        r = uw;
        break;
    case RV_FCVT_S_L:
        r = il;
        break;
    case RV_FCVT_S_LU:
        r = ul;
        break;
    case RV_FCVT_S_D:
        r = ad;
        break;
    default:
        g_assert_not_reached();
    }
    ex = npu_rv_fp_flags();
    if (rm == RV_RM_RMM && (ex & RV_FFLAG_NX)) {
        double da = op == RV_FCVT_S_D ? ad : a;

        r = npu_rv_rmm_fix_s(op, da, b, c, ua, r);
    }
    npu_rv_fp_leave(rm, old);

    if (op >= RV_FMADD_S && op <= RV_FNMADD_S && npu_rv_fma_inf_zero(a, b)) {
        ex |= RV_FFLAG_NV;
    }
    *fflags |= ex;
    if (isnan(r)) {
        return RV_BOX_S | RV_CANON_NAN_S;
    }
    return RV_BOX_S | npu_rv_bits_f(r);
}

/* Rounded operations with a double-precision result */
static uint64_t npu_rv_round_d(unsigned op, uint64_t ua, uint64_t ub,
                               uint64_t uc, unsigned rm, unsigned *fflags)
{
    volatile double a = npu_rv_d_of(ua), b = npu_rv_d_of(ub);
    volatile double c = npu_rv_d_of(uc);
    volatile float as = npu_rv_f_of(npu_rv_unbox(ua));
    volatile int64_t il = ua;
    volatile uint64_t ul = ua;
    volatile int32_t iw = ua;
    volatile uint32_t uw = ua;
    volatile double r;
    int old;
    unsigned ex;

    old = npu_rv_fp_enter(rm, *fflags);
    switch (op) {
    case RV_FADD_D:
        r = a + b;
        break;
    case RV_FSUB_D:
        r = a - b;
        break;
    case RV_FMUL_D:
        r = a * b;
        break;
    case RV_FDIV_D:
        r = a / b;
        break;
    case RV_FSQRT_D:
        r = sqrt(a);
        break;
    case RV_FMADD_D:
        r = fma(a, b, c);
        break;
    case RV_FMSUB_D:
        r = fma(a, b, -c);
        break;
    case RV_FNMSUB_D:
        r = fma(-a, b, c);
        break;
    case RV_FNMADD_D:
        r = fma(-a, b, -c);
        break;
    case RV_FCVT_D_W:
        r = iw;
        break;
    case RV_FCVT_D_WU:
        r = uw;
        break;
    case RV_FCVT_D_L:
        r = il;
        break;
    case RV_FCVT_D_LU:
        r = ul;
        break;
    case RV_FCVT_D_S:
        r = as;
        break;
    default:
        g_assert_not_reached();
    }
    ex = npu_rv_fp_flags();
    if (rm == RV_RM_RMM && (ex & RV_FFLAG_NX)) {
        r = npu_rv_rmm_fix_d(op, a, b, c, ua, r);
    }
    npu_rv_fp_leave(rm, old);

    if (op >= RV_FMADD_D && op <= RV_FNMADD_D && npu_rv_fma_inf_zero(a, b)) {
        ex |= RV_FFLAG_NV;
    }
    *fflags |= ex;
    if (isnan(r)) {
        return RV_CANON_NAN_D;
    }
    return npu_rv_bits_d(r);
}

/*
 * Float to integer: round v (a double, or a single widened exactly) to an
 * integer in mode rm by hand, then saturate. is_signed/bits select the
 * destination; the result is sign-extended from bits.
 */
static uint64_t npu_rv_cvt_to_int(double v, unsigned rm, bool is_signed,
                                  unsigned bits, unsigned *fflags)
{
    double r, lo, hi;

    if (isnan(v)) {
        *fflags |= RV_FFLAG_NV;
        if (!is_signed) {
            return UINT64_MAX;      /* also 0xffffffff sign-extended */
        }
        return bits == 32 ? INT32_MAX : INT64_MAX;
    }
    switch (rm) {
    case 0: {
        double t = trunc(v);

        r = round(v);
        if (fabs(v - t) == 0.5) {
            r = 2 * round(v / 2);   /* halfway: to even */
        }
        break;
    }
    case 1:
        r = trunc(v);
        break;
    case 2:
        r = floor(v);
        break;
    case 3:
        r = ceil(v);
        break;
    default:
        r = round(v);               /* halfway away from zero: RMM */
        break;
    }
    if (is_signed) {
        lo = bits == 32 ? -0x1p31 : -0x1p63;
        hi = bits == 32 ? 0x1p31 : 0x1p63;
    } else {
        lo = 0;
        hi = bits == 32 ? 0x1p32 : 0x1p64;
    }
    if (r < lo || r >= hi) {
        *fflags |= RV_FFLAG_NV;
        if (is_signed) {
            if (v < 0) {
                return bits == 32 ? (uint64_t)INT32_MIN : (uint64_t)INT64_MIN;
            }
            return bits == 32 ? INT32_MAX : INT64_MAX;
        }
        return v < 0 ? 0 : UINT64_MAX;
    }
    if (r != v) {
        *fflags |= RV_FFLAG_NX;
    }
    if (is_signed) {
        return (uint64_t)(int64_t)r;
    }
    if (bits == 32) {
        return (uint64_t)(int32_t)(uint32_t)r;
    }
    return (uint64_t)r;
}

/* fmin/fmax on raw bits (sign and magnitude ordered as integers) */
static uint64_t npu_rv_fminmax(uint64_t a, uint64_t b, bool is_max, bool dbl,
                               unsigned *fflags)
{
    bool na = dbl ? npu_rv_is_nan_d(a) : npu_rv_is_nan_s(a);
    bool nb = dbl ? npu_rv_is_nan_d(b) : npu_rv_is_nan_s(b);
    uint64_t sign = dbl ? 1ull << 63 : 1ull << 31;
    bool a_lt_b;

    if (dbl ? (npu_rv_is_snan_d(a) || npu_rv_is_snan_d(b)) :
              (npu_rv_is_snan_s(a) || npu_rv_is_snan_s(b))) {
        *fflags |= RV_FFLAG_NV;
    }
    if (na && nb) {
        return dbl ? RV_CANON_NAN_D : RV_CANON_NAN_S;
    }
    if (na) {
        return b;
    }
    if (nb) {
        return a;
    }
    if ((a ^ b) & sign) {
        a_lt_b = (a & sign) != 0;   /* negative (incl. -0) is smaller */
    } else if (a & sign) {
        a_lt_b = a > b;
    } else {
        a_lt_b = a < b;
    }
    return a_lt_b != is_max ? a : b;
}

static uint64_t npu_rv_fclass(uint64_t v, bool dbl)
{
    bool neg;
    uint64_t exp, man, exp_max;

    if (dbl) {
        neg = v >> 63;
        exp = (v >> 52) & 0x7ff;
        man = v & 0xfffffffffffffull;
        exp_max = 0x7ff;
    } else {
        neg = (v >> 31) & 1;
        exp = (v >> 23) & 0xff;
        man = v & 0x7fffff;
        exp_max = 0xff;
    }
    if (exp == exp_max) {
        if (man == 0) {
            return neg ? 1 << 0 : 1 << 7;
        }
        if (dbl ? npu_rv_is_snan_d(v) : npu_rv_is_snan_s(v)) {
            return 1 << 8;
        }
        return 1 << 9;
    }
    if (exp == 0) {
        if (man == 0) {
            return neg ? 1 << 3 : 1 << 4;
        }
        return neg ? 1 << 2 : 1 << 5;
    }
    return neg ? 1 << 1 : 1 << 6;
}

/* feq (quiet), flt and fle (signalling) */
static uint64_t npu_rv_fcompare(unsigned op, uint64_t ua, uint64_t ub, bool dbl,
                                unsigned *fflags)
{
    bool nan = dbl ? (npu_rv_is_nan_d(ua) || npu_rv_is_nan_d(ub)) :
                     (npu_rv_is_nan_s(ua) || npu_rv_is_nan_s(ub));
    double a, b;

    if (nan) {
        if (op != RV_FEQ_S && op != RV_FEQ_D) {
            *fflags |= RV_FFLAG_NV;
        } else if (dbl ? (npu_rv_is_snan_d(ua) || npu_rv_is_snan_d(ub)) :
                         (npu_rv_is_snan_s(ua) || npu_rv_is_snan_s(ub))) {
            *fflags |= RV_FFLAG_NV;
        }
        return 0;
    }
    a = dbl ? npu_rv_d_of(ua) : npu_rv_f_of(ua);
    b = dbl ? npu_rv_d_of(ub) : npu_rv_f_of(ub);
    switch (op) {
    case RV_FEQ_S:
    case RV_FEQ_D:
        return a == b;
    case RV_FLT_S:
    case RV_FLT_D:
        return a < b;
    default:
        return a <= b;
    }
}

/* ------------------------------------------------------------------------
 * CSRs
 */

static uint32_t npu_rv_csr_op(NpuRvHart *h, const NpuRvInsn *d,
                              const NpuRvOps *ops, void *opaque,
                              uint64_t *val)
{
    unsigned csr = d->imm;
    bool imm = d->op >= RV_CSRRWI;
    unsigned kind = imm ? d->op - RV_CSRRWI : d->op - RV_CSRRW;
    uint64_t src = imm ? d->rs1 : h->x[d->rs1];
    bool wr = kind == 0 || d->rs1 != 0;
    bool rd = kind != 0 || d->rd != 0;
    uint64_t old = 0, nv;
    uint32_t err;

    if (wr && (csr >> 10) == 3) {
        return NPU_ERR_CU_ILLEGAL;      /* read-only CSR */
    }
    switch (csr) {
    case RV_CSR_FFLAGS:
    case RV_CSR_FRM:
    case RV_CSR_FCSR:
        if (csr == RV_CSR_FFLAGS) {
            old = h->fcsr & 0x1f;
        } else if (csr == RV_CSR_FRM) {
            old = (h->fcsr >> 5) & 7;
        } else {
            old = h->fcsr & 0xff;
        }
        nv = kind == 0 ? src : kind == 1 ? old | src : old & ~src;
        if (wr) {
            if (csr == RV_CSR_FFLAGS) {
                h->fcsr = (h->fcsr & ~0x1fu) | (nv & 0x1f);
            } else if (csr == RV_CSR_FRM) {
                h->fcsr = (h->fcsr & 0x1f) | (nv & 7) << 5;
            } else {
                h->fcsr = nv & 0xff;
            }
        }
        *val = old;
        return 0;
    case RV_CSR_INSTRET:
        *val = h->instret;
        return 0;
    default:
        break;
    }
    if (csr >= 0xc80 && csr <= 0xc9f) {
        return NPU_ERR_CU_ILLEGAL;      /* RV32-only high halves */
    }
    if (rd && !ops->csr_read(opaque, csr, &old)) {
        return NPU_ERR_CU_ILLEGAL;
    }
    if (wr) {
        nv = kind == 0 ? src : kind == 1 ? old | src : old & ~src;
        err = ops->csr_write(opaque, csr, nv);
        if (err) {
            return err;
        }
    }
    *val = old;
    return 0;
}

/* ------------------------------------------------------------------------
 * Execution
 */

static inline uint64_t npu_rv_amo_value(unsigned op, uint64_t old, uint64_t src,
                                        unsigned size)
{
    int64_t so = size == 4 ? (int32_t)old : (int64_t)old;
    int64_t ss = size == 4 ? (int32_t)src : (int64_t)src;
    uint64_t uo = size == 4 ? (uint32_t)old : old;
    uint64_t us = size == 4 ? (uint32_t)src : src;

    switch (op) {
    case RV_AMOSWAP:
        return src;
    case RV_AMOADD:
        return old + src;
    case RV_AMOXOR:
        return old ^ src;
    case RV_AMOAND:
        return old & src;
    case RV_AMOOR:
        return old | src;
    case RV_AMOMIN:
        return so < ss ? old : src;
    case RV_AMOMAX:
        return so > ss ? old : src;
    case RV_AMOMINU:
        return uo < us ? old : src;
    default:
        return uo > us ? old : src;
    }
}

/* Signed division with the RISC-V results for /0 and overflow */
static inline int64_t npu_rv_div_s(int64_t a, int64_t b)
{
    if (b == 0) {
        return -1;
    }
    if (b == -1) {
        return -(uint64_t)a;        /* INT64_MIN / -1 = INT64_MIN */
    }
    return a / b;
}

static inline int64_t npu_rv_rem_s(int64_t a, int64_t b)
{
    if (b == 0) {
        return a;
    }
    if (b == -1) {
        return 0;
    }
    return a % b;
}

uint32_t npu_rv_exec(NpuRvHart *h, const NpuRvInsn *d, const NpuRvOps *ops,
                     void *opaque, uint64_t *fault_addr, uint64_t *mem_addr)
{
    uint64_t *x = h->x;
    uint64_t *f = h->f;
    uint64_t a = x[d->rs1], b = x[d->rs2];
    uint64_t pc = h->pc, npc = pc + 4;
    uint64_t r, addr, v;
    unsigned rm, fflags = 0;
    uint32_t err;

    *mem_addr = 0;
    if (npu_rv_exec_int(h, d)) {
        return 0;
    }
    switch (d->op) {
    case RV_JAL:
        npc = pc + d->imm;
        r = pc + 4;
        if (npc & 3) {
            *fault_addr = npc;
            return NPU_ERR_CU_MISALIGNED;
        }
        break;
    case RV_JALR:
        npc = (a + d->imm) & ~1ull;
        r = pc + 4;
        if (npc & 3) {
            *fault_addr = npc;
            return NPU_ERR_CU_MISALIGNED;
        }
        break;
    case RV_BEQ:
    case RV_BNE:
    case RV_BLT:
    case RV_BGE:
    case RV_BLTU:
    case RV_BGEU:
        if (npu_rv_taken(d->op, a, b)) {
            goto branch;
        }
        goto retire;

    case RV_LB:
    case RV_LH:
    case RV_LW:
    case RV_LD:
    case RV_LBU:
    case RV_LHU:
    case RV_LWU:
    case RV_FLW:
    case RV_FLD:
        addr = a + d->imm;
        *mem_addr = addr;
        if (addr & (d->size - 1)) {
            *fault_addr = addr;
            return NPU_ERR_CU_MISALIGNED;
        }
        err = ops->load(opaque, addr, d->size, &v);
        if (err) {
            *fault_addr = addr;
            return err;
        }
        switch (d->op) {
        case RV_LB:
            r = (int8_t)v;
            break;
        case RV_LH:
            r = (int16_t)v;
            break;
        case RV_LW:
            r = (int32_t)v;
            break;
        case RV_FLW:
            f[d->rd] = RV_BOX_S | (uint32_t)v;
            goto retire;
        case RV_FLD:
            f[d->rd] = v;
            goto retire;
        default:
            r = v;
            break;
        }
        break;
    case RV_STORE:
    case RV_FSTORE:
        addr = a + d->imm;
        *mem_addr = addr;
        if (addr & (d->size - 1)) {
            *fault_addr = addr;
            return NPU_ERR_CU_MISALIGNED;
        }
        v = d->op == RV_FSTORE ? f[d->rs2] : b;
        if (d->size < 8) {
            v &= (1ull << (d->size * 8)) - 1;
        }
        err = ops->store(opaque, addr, d->size, v);
        if (err) {
            *fault_addr = addr;
            return err;
        }
        goto retire;

    case RV_DIV:
        r = npu_rv_div_s(a, b);
        break;
    case RV_DIVU:
        r = b ? a / b : UINT64_MAX;
        break;
    case RV_REM:
        r = npu_rv_rem_s(a, b);
        break;
    case RV_REMU:
        r = b ? a % b : a;
        break;
    case RV_DIVW:
        r = (int32_t)npu_rv_div_s((int32_t)a, (int32_t)b);
        break;
    case RV_DIVUW:
        r = (int32_t)((uint32_t)b ? (uint32_t)a / (uint32_t)b : UINT32_MAX);
        break;
    case RV_REMW:
        r = (int32_t)npu_rv_rem_s((int32_t)a, (int32_t)b);
        break;
    case RV_REMUW:
        r = (int32_t)((uint32_t)b ? (uint32_t)a % (uint32_t)b : (uint32_t)a);
        break;

    case RV_FENCE:
        goto retire;
    case RV_ECALL:
        return NPU_RV_ECALL;
    case RV_EBREAK:
        *fault_addr = pc;
        return NPU_ERR_CU_BREAK;

    case RV_CSRRW:
    case RV_CSRRS:
    case RV_CSRRC:
    case RV_CSRRWI:
    case RV_CSRRSI:
    case RV_CSRRCI:
        err = npu_rv_csr_op(h, d, ops, opaque, &r);
        if (err) {
            *fault_addr = pc;
            return err;
        }
        break;

    case RV_LR:
    case RV_SC:
    case RV_AMOSWAP:
    case RV_AMOADD:
    case RV_AMOXOR:
    case RV_AMOAND:
    case RV_AMOOR:
    case RV_AMOMIN:
    case RV_AMOMAX:
    case RV_AMOMINU:
    case RV_AMOMAXU:
        addr = a;
        *mem_addr = addr;
        if (addr & (d->size - 1)) {
            *fault_addr = addr;
            return NPU_ERR_CU_MISALIGNED;
        }
        if (d->op == RV_SC) {
            if (h->reserved && h->reserved_addr == addr) {
                if (d->size == 4) {
                    b = (uint32_t)b;
                }
                err = ops->store(opaque, addr, d->size, b);
                if (err) {
                    *fault_addr = addr;
                    return err;
                }
                r = 0;
            } else {
                r = 1;
            }
            h->reserved = false;
            break;
        }
        err = ops->load(opaque, addr, d->size, &v);
        if (err) {
            *fault_addr = addr;
            return err;
        }
        if (d->op == RV_LR) {
            h->reserved = true;
            h->reserved_addr = addr;
        } else {
            uint64_t nv = npu_rv_amo_value(d->op, v, b, d->size);

            if (d->size == 4) {
                nv = (uint32_t)nv;
            }
            err = ops->store(opaque, addr, d->size, nv);
            if (err) {
                *fault_addr = addr;
                return err;
            }
        }
        r = d->size == 4 ? (uint64_t)(int32_t)v : v;
        break;

    /* Floating point: exact operations first, then rounded ones */
    case RV_FSGNJ_S:
    case RV_FSGNJN_S:
    case RV_FSGNJX_S: {
        uint32_t fa = npu_rv_unbox(f[d->rs1]), fb = npu_rv_unbox(f[d->rs2]);
        uint32_t s = d->op == RV_FSGNJ_S ? fb : d->op == RV_FSGNJN_S ?
                     ~fb : fa ^ fb;

        f[d->rd] = RV_BOX_S | (fa & 0x7fffffffu) | (s & 0x80000000u);
        goto retire;
    }
    case RV_FSGNJ_D:
    case RV_FSGNJN_D:
    case RV_FSGNJX_D: {
        uint64_t fa = f[d->rs1], fb = f[d->rs2];
        uint64_t s = d->op == RV_FSGNJ_D ? fb : d->op == RV_FSGNJN_D ?
                     ~fb : fa ^ fb;

        f[d->rd] = (fa & ~(1ull << 63)) | (s & (1ull << 63));
        goto retire;
    }
    case RV_FMIN_S:
    case RV_FMAX_S:
        v = RV_BOX_S | npu_rv_fminmax(npu_rv_unbox(f[d->rs1]),
                                      npu_rv_unbox(f[d->rs2]),
                                      d->op == RV_FMAX_S, false, &fflags);
        goto write_f;
    case RV_FMIN_D:
    case RV_FMAX_D:
        v = npu_rv_fminmax(f[d->rs1], f[d->rs2], d->op == RV_FMAX_D, true,
                           &fflags);
        goto write_f;
    case RV_FEQ_S:
    case RV_FLT_S:
    case RV_FLE_S:
        r = npu_rv_fcompare(d->op, npu_rv_unbox(f[d->rs1]),
                            npu_rv_unbox(f[d->rs2]), false, &fflags);
        goto write_x_flags;
    case RV_FEQ_D:
    case RV_FLT_D:
    case RV_FLE_D:
        r = npu_rv_fcompare(d->op, f[d->rs1], f[d->rs2], true, &fflags);
        goto write_x_flags;
    case RV_FCLASS_S:
        r = npu_rv_fclass(npu_rv_unbox(f[d->rs1]), false);
        break;
    case RV_FCLASS_D:
        r = npu_rv_fclass(f[d->rs1], true);
        break;
    case RV_FMV_X_W:
        r = (int32_t)f[d->rs1];
        break;
    case RV_FMV_X_D:
        r = f[d->rs1];
        break;
    case RV_FMV_W_X:
        f[d->rd] = RV_BOX_S | (uint32_t)a;
        goto retire;
    case RV_FMV_D_X:
        f[d->rd] = a;
        goto retire;
    case RV_TLOAD ... RV_TDMA_WAIT:
        /* the compute units execute these (they hold the tiles) */
        *fault_addr = pc;
        return NPU_ERR_CU_ILLEGAL;

    default:
        /* rounded operations: resolve the rounding mode */
        rm = d->rm == RV_RM_DYN ? (h->fcsr >> 5) & 7 : d->rm;
        if (rm > RV_RM_RMM) {
            *fault_addr = pc;
            return NPU_ERR_CU_ILLEGAL;
        }
        /* the helpers add to the flags the hart already has */
        fflags = h->fcsr & 0x1f;
        if (d->op >= RV_FADD_S && d->op <= RV_FCVT_S_D) {
            bool from_x = d->op >= RV_FCVT_S_W && d->op <= RV_FCVT_S_LU;

            v = npu_rv_round_s(d->op, from_x ? a : f[d->rs1], f[d->rs2],
                               f[d->rs3], rm, &fflags);
            goto write_f;
        }
        if (d->op >= RV_FADD_D && d->op <= RV_FCVT_D_S) {
            bool from_x = d->op >= RV_FCVT_D_W && d->op <= RV_FCVT_D_LU;

            v = npu_rv_round_d(d->op, from_x ? a : f[d->rs1], f[d->rs2],
                               f[d->rs3], rm, &fflags);
            goto write_f;
        }
        if (d->op >= RV_FCVT_W_S && d->op <= RV_FCVT_LU_D) {
            unsigned k = (d->op - RV_FCVT_W_S) & 3;
            double src = d->op <= RV_FCVT_LU_S ?
                         npu_rv_f_of(npu_rv_unbox(f[d->rs1])) :
                         npu_rv_d_of(f[d->rs1]);

            r = npu_rv_cvt_to_int(src, rm, !(k & 1), k < 2 ? 32 : 64, &fflags);
            goto write_x_flags;
        }
        g_assert_not_reached();
    }

    /* integer result */
    if (d->rd) {
        x[d->rd] = r;
    }
    goto retire;

write_x_flags:
    if (d->rd) {
        x[d->rd] = r;
    }
    h->fcsr |= fflags;
    goto retire;

write_f:
    f[d->rd] = v;
    h->fcsr |= fflags;
    goto retire;

branch:
    npc = pc + d->imm;
    if (npc & 3) {
        *fault_addr = npc;
        return NPU_ERR_CU_MISALIGNED;
    }

retire:
    h->pc = npc;
    h->instret++;
    return 0;
}
