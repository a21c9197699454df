/*
 * npu - virtual NPU PCI device: RV64G instruction set of the compute units.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Decode and execution of one hart's instructions (RV64IMAFD, Zicsr,
 * Zifencei; no compressed instructions), independent of timing: the cycle
 * model (npu_cu.c) decodes an instruction, checks its operands against the
 * thread's scoreboard using the fields below, then executes it. Memory and
 * the custom CSRs are reached through NpuRvOps, so this file knows nothing
 * of the MMU, scratchpads or blocks.
 */
#ifndef HW_MISC_NPU_RV_H
#define HW_MISC_NPU_RV_H

#include <math.h>

/*
 * Internal operations (NpuRvInsn.op): for npu_rv.c and the inline
 * npu_rv_exec_int below.
 */
enum {
    RV_LUI, RV_AUIPC, RV_JAL, RV_JALR,
    RV_BEQ, RV_BNE, RV_BLT, RV_BGE, RV_BLTU, RV_BGEU,
    RV_LB, RV_LH, RV_LW, RV_LD, RV_LBU, RV_LHU, RV_LWU, RV_STORE,
    RV_ADDI, RV_SLTI, RV_SLTIU, RV_XORI, RV_ORI, RV_ANDI,
    RV_SLLI, RV_SRLI, RV_SRAI,
    RV_ADDIW, RV_SLLIW, RV_SRLIW, RV_SRAIW,
    RV_ADD, RV_SUB, RV_SLL, RV_SLT, RV_SLTU, RV_XOR, RV_SRL, RV_SRA,
    RV_OR, RV_AND,
    RV_ADDW, RV_SUBW, RV_SLLW, RV_SRLW, RV_SRAW,
    RV_MUL, RV_MULH, RV_MULHSU, RV_MULHU, RV_DIV, RV_DIVU, RV_REM, RV_REMU,
    RV_MULW, RV_DIVW, RV_DIVUW, RV_REMW, RV_REMUW,
    RV_FENCE, RV_ECALL, RV_EBREAK,
    RV_CSRRW, RV_CSRRS, RV_CSRRC, RV_CSRRWI, RV_CSRRSI, RV_CSRRCI,
    RV_LR, RV_SC, RV_AMOSWAP, RV_AMOADD, RV_AMOXOR, RV_AMOAND, RV_AMOOR,
    RV_AMOMIN, RV_AMOMAX, RV_AMOMINU, RV_AMOMAXU,
    RV_FLW, RV_FLD, RV_FSTORE,
    /* rounded single-precision results (npu_rv_round_s) */
    RV_FADD_S, RV_FSUB_S, RV_FMUL_S, RV_FDIV_S, RV_FSQRT_S,
    RV_FMADD_S, RV_FMSUB_S, RV_FNMSUB_S, RV_FNMADD_S,
    RV_FCVT_S_W, RV_FCVT_S_WU, RV_FCVT_S_L, RV_FCVT_S_LU, RV_FCVT_S_D,
    /* rounded double-precision results (npu_rv_round_d) */
    RV_FADD_D, RV_FSUB_D, RV_FMUL_D, RV_FDIV_D, RV_FSQRT_D,
    RV_FMADD_D, RV_FMSUB_D, RV_FNMSUB_D, RV_FNMADD_D,
    RV_FCVT_D_W, RV_FCVT_D_WU, RV_FCVT_D_L, RV_FCVT_D_LU, RV_FCVT_D_S,
    /* conversions to integers */
    RV_FCVT_W_S, RV_FCVT_WU_S, RV_FCVT_L_S, RV_FCVT_LU_S,
    RV_FCVT_W_D, RV_FCVT_WU_D, RV_FCVT_L_D, RV_FCVT_LU_D,
    /* exact operations */
    RV_FSGNJ_S, RV_FSGNJN_S, RV_FSGNJX_S, RV_FMIN_S, RV_FMAX_S,
    RV_FEQ_S, RV_FLT_S, RV_FLE_S, RV_FCLASS_S, RV_FMV_X_W, RV_FMV_W_X,
    RV_FSGNJ_D, RV_FSGNJN_D, RV_FSGNJX_D, RV_FMIN_D, RV_FMAX_D,
    RV_FEQ_D, RV_FLT_D, RV_FLE_D, RV_FCLASS_D, RV_FMV_X_D, RV_FMV_D_X,
    /*
     * the tensor engine and tile DMA (custom-0, custom-1): decoded here,
     * executed by the compute units (npu_rv_exec does not), which hold
     * the tiles; rd, rs1, rs2 name tiles where the spec says so
     */
    RV_TLOAD, RV_TSTORE, RV_TFILL, RV_TMMA, RV_TEW,
    RV_TDMA_ISSUE, RV_TDMA_WAIT,
};

/* Instruction classes: what the cycle model charges latency for. */
enum {
    NPU_RV_ALU,         /* integer ALU, LUI/AUIPC, FENCE, FENCE.I */
    NPU_RV_BRANCH,      /* conditional branches */
    NPU_RV_JUMP,        /* JAL, JALR */
    NPU_RV_MUL,         /* MUL* */
    NPU_RV_DIV,         /* DIV*, REM* (not pipelined) */
    NPU_RV_FP,          /* F/D add, mul, fma, compare, convert, move, sign */
    NPU_RV_FDIV,        /* F/D divide and square root (not pipelined) */
    NPU_RV_LOAD,        /* integer and FP loads */
    NPU_RV_STORE,       /* integer and FP stores */
    NPU_RV_AMO,         /* LR, SC, AMO* */
    NPU_RV_CSR,         /* CSR* */
    NPU_RV_SYSTEM,      /* ECALL, EBREAK */
    NPU_RV_TENSOR,      /* TLOAD, TSTORE, TFILL, TMMA, TEW */
    NPU_RV_TDMA,        /* TDMA.ISSUE, TDMA.WAIT */
    NPU_RV_NCLASSES
};

/* NpuRvInsn.flags: which register files the operands live in. */
#define NPU_RV_RD_X     0x01    /* writes x[rd] (rd != 0) */
#define NPU_RV_RD_F     0x02    /* writes f[rd] */
#define NPU_RV_RS1_X    0x04    /* reads x[rs1] */
#define NPU_RV_RS1_F    0x08
#define NPU_RV_RS2_X    0x10
#define NPU_RV_RS2_F    0x20
#define NPU_RV_RS3_F    0x40    /* fused multiply-add */

/* A decoded instruction. */
typedef struct NpuRvInsn {
    uint32_t word;
    uint16_t op;        /* internal operation, private to npu_rv.c */
    uint8_t cls;        /* NPU_RV_* class */
    uint8_t flags;      /* NPU_RV_RD_* / _RS*_ */
    uint8_t rd, rs1, rs2, rs3;
    uint8_t size;       /* loads, stores, AMOs: access bytes (1..8) */
    uint8_t rm;         /* FP rounding-mode field */
    uint8_t funct7;     /* tensor instructions: esize | trans, type, op */
    int64_t imm;
} NpuRvInsn;

/* Architectural state of one hart (thread). */
typedef struct NpuRvHart {
    uint64_t x[32];     /* x[0] reads 0 */
    uint64_t f[32];     /* single-precision values NaN-boxed */
    uint64_t pc;
    uint32_t fcsr;      /* frm << 5 | fflags */
    uint64_t instret;
    bool reserved;      /* LR reservation valid */
    uint64_t reserved_addr;
} NpuRvHart;

/*
 * Outcome of a memory or CSR callback and of npu_rv_exec(): 0 = done, else
 * an npu_error code (NPU_ERR_MMU_FAULT, NPU_ERR_CU_MISALIGNED, ...) with the
 * address in *fault_addr.
 */
typedef struct NpuRvOps {
    /* size is 1, 2, 4 or 8; values in host order, zero-extended */
    uint32_t (*load)(void *opaque, uint64_t va, unsigned size, uint64_t *val);
    uint32_t (*store)(void *opaque, uint64_t va, unsigned size, uint64_t val);
    /*
     * CSRs other than fflags/frm/fcsr/instret, which npu_rv.c handles:
     * read returns false for a CSR that does not exist (illegal
     * instruction); write returns an npu_error code, 0 when done.
     */
    bool (*csr_read)(void *opaque, unsigned csr, uint64_t *val);
    uint32_t (*csr_write)(void *opaque, unsigned csr, uint64_t val);
} NpuRvOps;

/* Is d an LR (LR.W or LR.D: AMO major opcode, funct5 00010)? */
static inline bool npu_rv_is_lr(const NpuRvInsn *d)
{
    return (d->word & 0x7f) == 0x2f && (d->word >> 27) == 0x02;
}

/* Is the conditional branch op (RV_BEQ..RV_BGEU) taken for a, b? */
static inline bool npu_rv_taken(unsigned op, uint64_t a, uint64_t b)
{
    switch (op) {
    case RV_BEQ:
        return a == b;
    case RV_BNE:
        return a != b;
    case RV_BLT:
        return (int64_t)a < (int64_t)b;
    case RV_BGE:
        return (int64_t)a >= (int64_t)b;
    case RV_BLTU:
        return a < b;
    default:
        return a >= b;
    }
}

/*
 * The integer operations with a register result, each once: name and
 * result from a = x[rs1], b = x[rs2], imm (int64_t) and pc. Expanded by
 * npu_rv_exec_int_at below and by the compute units' superblock executor.
 */
#define NPU_RV_INT_OPS(X) \
    X(LUI, imm) \
    X(AUIPC, pc + imm) \
    X(ADDI, a + imm) \
    X(SLTI, (int64_t)a < imm) \
    X(SLTIU, a < (uint64_t)imm) \
    X(XORI, a ^ imm) \
    X(ORI, a | imm) \
    X(ANDI, a & imm) \
    X(SLLI, a << imm) \
    X(SRLI, a >> imm) \
    X(SRAI, (int64_t)a >> imm) \
    X(ADDIW, (int32_t)(a + imm)) \
    X(SLLIW, (int32_t)((uint32_t)a << imm)) \
    X(SRLIW, (int32_t)((uint32_t)a >> imm)) \
    X(SRAIW, (int32_t)a >> imm) \
    X(ADD, a + b) \
    X(SUB, a - b) \
    X(SLL, a << (b & 63)) \
    X(SLT, (int64_t)a < (int64_t)b) \
    X(SLTU, a < b) \
    X(XOR, a ^ b) \
    X(SRL, a >> (b & 63)) \
    X(SRA, (int64_t)a >> (b & 63)) \
    X(OR, a | b) \
    X(AND, a & b) \
    X(ADDW, (int32_t)(a + b)) \
    X(SUBW, (int32_t)(a - b)) \
    X(SLLW, (int32_t)((uint32_t)a << (b & 31))) \
    X(SRLW, (int32_t)((uint32_t)a >> (b & 31))) \
    X(SRAW, (int32_t)a >> (b & 31)) \
    X(MUL, a * b) \
    X(MULH, ((__int128)(int64_t)a * (int64_t)b) >> 64) \
    X(MULHSU, ((__int128)(int64_t)a * (unsigned __int128)b) >> 64) \
    X(MULHU, ((unsigned __int128)a * b) >> 64) \
    X(MULW, (int32_t)(a * b))

/* fflags bits */
#define RV_FFLAG_NX        0x01
#define RV_FFLAG_UF        0x02
#define RV_FFLAG_OF        0x04
#define RV_FFLAG_DZ        0x08
#define RV_FFLAG_NV        0x10

#define RV_RM_RNE          0
#define RV_RM_RMM          4
#define RV_RM_DYN          7

#define RV_BOX_S           0xffffffff00000000ull

/* RISC-V's canonical NaNs */
#define RV_CANON_NAN_S     0x7fc00000u
#define RV_CANON_NAN_D     0x7ff8000000000000ull

/* Register bits as host floating point and back */
static inline double npu_rv_d_of(uint64_t v)
{
    double r;

    memcpy(&r, &v, 8);
    return r;
}

static inline uint64_t npu_rv_bits_d(double v)
{
    uint64_t r;

    memcpy(&r, &v, 8);
    return r;
}

static inline float npu_rv_f_of(uint32_t v)
{
    float r;

    memcpy(&r, &v, 4);
    return r;
}

static inline uint32_t npu_rv_bits_f(float v)
{
    uint32_t r;

    memcpy(&r, &v, 4);
    return r;
}

/*
 * Floating-point operations the host's own arithmetic can retire exactly
 * when npu_rv_fp_fast_ok holds and the result is npu_rv_fp_fast_*_result:
 * name, precision (d: double, s: single), operands, result from a, b, c
 * (f[rs1], f[rs2], f[rs3] as host values). The rest go through npu_rv_exec().
 */
#define NPU_RV_FP_FAST_OPS(X) \
    X(FADD_D, d, 2, a + b) \
    X(FSUB_D, d, 2, a - b) \
    X(FMUL_D, d, 2, a * b) \
    X(FMADD_D, d, 3, fma(a, b, c)) \
    X(FMSUB_D, d, 3, fma(a, b, -c)) \
    X(FNMSUB_D, d, 3, fma(-a, b, c)) \
    X(FNMADD_D, d, 3, fma(-a, b, -c)) \
    X(FADD_S, s, 2, a + b) \
    X(FSUB_S, s, 2, a - b) \
    X(FMUL_S, s, 2, a * b) \
    X(FMADD_S, s, 3, fmaf(a, b, c)) \
    X(FMSUB_S, s, 3, fmaf(a, b, -c)) \
    X(FNMSUB_S, s, 3, fmaf(-a, b, c)) \
    X(FNMADD_S, s, 3, fmaf(-a, b, -c))

/*
 * May an operation with rounding field rm take the host's arithmetic?
 * The host thread rounds to nearest even outside npu_rv_exec()
 * (npu_rv_host_rounds_nearest), so the mode must be RNE; and the only
 * flag a normal result of finite operands can raise, NX, must already be
 * set (fflags are sticky), so the flags cannot change.
 */
static inline QEMU_ALWAYS_INLINE bool npu_rv_fp_fast_ok(const NpuRvHart *h,
                                                        unsigned rm)
{
    return (h->fcsr & RV_FFLAG_NX) &&
           (rm == RV_RM_RNE || (rm == RV_RM_DYN && !(h->fcsr >> 5)));
}

/*
 * Results npu_rv_fp_fast_ok operations may commit: finite (so were the
 * operands: no NV, no OF) and above the smallest normal binade (so no
 * UF, whether tininess is detected before or after rounding).
 */
static inline bool npu_rv_fp_fast_d_result(uint64_t v)
{
    unsigned e = (v >> 52) & 0x7ff;

    return e >= 2 && e != 0x7ff;
}

static inline bool npu_rv_fp_fast_s_result(uint32_t v)
{
    unsigned e = (v >> 23) & 0xff;

    return e >= 2 && e != 0xff;
}

/* Single-precision operands the fast path reads (nops of them): NaN-boxed */
static inline QEMU_ALWAYS_INLINE bool
npu_rv_fp_fast_s_boxed(unsigned nops, uint64_t a, uint64_t b, uint64_t c)
{
    return (a & b & (nops == 3 ? c : RV_BOX_S)) >> 32 == 0xffffffffu;
}

/* Does this host thread round to nearest even (the fast path's premise)? */
bool npu_rv_host_rounds_nearest(void);

/* npu_rv_exec_int_at's result for an instruction it does not execute */
#define NPU_RV_NOT_INT  1ull

/* Target of JAL or JALR (op) at pc, NPU_RV_NOT_INT if misaligned. */
static inline QEMU_ALWAYS_INLINE uint64_t
npu_rv_jump_target(unsigned op, uint64_t a, int64_t imm, uint64_t pc)
{
    uint64_t npc = op == RV_JAL ? pc + imm : (a + imm) & ~1ull;

    return npc & 3 ? NPU_RV_NOT_INT : npc;
}

/* Next pc after branch op at pc, NPU_RV_NOT_INT if taken and misaligned. */
static inline QEMU_ALWAYS_INLINE uint64_t
npu_rv_branch_next(unsigned op, uint64_t a, uint64_t b, int64_t imm,
                   uint64_t pc)
{
    uint64_t npc = npu_rv_taken(op, a, b) ? pc + imm : pc + 4;

    return npc & 3 ? NPU_RV_NOT_INT : npc;
}

/*
 * The part of npu_rv_exec() that the compute units' fast path inlines:
 * integer ALU operations, LUI/AUIPC, MUL, MULH*, MULW, jumps and
 * conditional branches to an aligned target, for d at pc (the caller
 * keeps h->pc and h->instret). Returns the next pc when d retired;
 * NPU_RV_NOT_INT (not a pc), with nothing committed, for any other
 * instruction or a misaligned target (npu_rv_exec() does those).
 */
static inline QEMU_ALWAYS_INLINE uint64_t
npu_rv_exec_int_at(NpuRvHart *h, const NpuRvInsn *d, uint64_t pc)
{
    uint64_t a = h->x[d->rs1], b = h->x[d->rs2];
    uint64_t npc = pc + 4, r;
    int64_t imm = d->imm;

    switch (d->op) {
#define NPU_RV_INT_CASE(name, expr) \
    case RV_##name: \
        r = (expr); \
        break;
    NPU_RV_INT_OPS(NPU_RV_INT_CASE)
#undef NPU_RV_INT_CASE
    case RV_JAL:
    case RV_JALR:
        npc = npu_rv_jump_target(d->op, a, imm, pc);
        if (npc == NPU_RV_NOT_INT) {
            return npc;
        }
        r = pc + 4;
        break;
    case RV_BEQ:
    case RV_BNE:
    case RV_BLT:
    case RV_BGE:
    case RV_BLTU:
    case RV_BGEU:
        return npu_rv_branch_next(d->op, a, b, imm, pc);
    default:
        return NPU_RV_NOT_INT;
    }
    if (d->rd) {
        h->x[d->rd] = r;
    }
    return npc;
}

/*
 * npu_rv_exec_int_at at h->pc, which it advances: true when d retired (as
 * npu_rv_exec() returning 0), false with nothing committed.
 */
static inline QEMU_ALWAYS_INLINE bool npu_rv_exec_int(NpuRvHart *h,
                                                   const NpuRvInsn *d)
{
    uint64_t npc = npu_rv_exec_int_at(h, d, h->pc);

    if (npc == NPU_RV_NOT_INT) {
        return false;
    }
    h->pc = npc;
    h->instret++;
    return true;
}

/* Decode word; false if it is not an RV64G instruction we execute. */
bool npu_rv_decode(uint32_t word, NpuRvInsn *d);

/* Results of npu_rv_exec(), besides 0 (executed, pc advanced). */
#define NPU_RV_ECALL    0x100   /* ECALL: the thread ends (pc not advanced) */

/*
 * Execute d (decoded from the word at h->pc) on h. Returns 0 when it
 * retired (h->pc is the next PC, instret counted), NPU_RV_ECALL, or an
 * npu_error code with the faulting address (the data address, or the PC
 * for an illegal instruction) in *fault_addr; nothing of a faulting
 * instruction is committed. *mem_addr gets the data address of a load,
 * store or AMO (for traces).
 */
uint32_t npu_rv_exec(NpuRvHart *h, const NpuRvInsn *d, const NpuRvOps *ops,
                     void *opaque, uint64_t *fault_addr, uint64_t *mem_addr);

#endif
