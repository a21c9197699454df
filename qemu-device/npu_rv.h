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
