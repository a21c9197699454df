/* SPDX-License-Identifier: MIT */
/*
 * conformance: C functions compiled twice, for the compute units (RV64G,
 * kernels/isa_conf.c) and for the host (npu-isatest), run over the same
 * inputs: their results and fflags must be bit-identical.
 */
#ifndef NPU_TEST_CONFORMANCE_H
#define NPU_TEST_CONFORMANCE_H

#include <stdint.h>

/* Operand kinds, for the input generator. */
enum conf_kind { CK_INT, CK_F32, CK_F64, CK_I2F, CK_F2I_S, CK_F2I_D };

#define CONF_FNS(X) \
	X(ADD, CK_INT) X(SUB, CK_INT) X(MUL, CK_INT) X(ADDW, CK_INT) \
	X(SUBW, CK_INT) X(MULW, CK_INT) X(MULH, CK_INT) X(MULHU, CK_INT) \
	X(MULHSU, CK_INT) X(DIV, CK_INT) X(DIVU, CK_INT) X(REM, CK_INT) \
	X(REMU, CK_INT) X(DIVW, CK_INT) X(DIVUW, CK_INT) X(REMW, CK_INT) \
	X(REMUW, CK_INT) X(SLL, CK_INT) X(SRL, CK_INT) X(SRA, CK_INT) \
	X(SLLW, CK_INT) X(SRLW, CK_INT) X(SRAW, CK_INT) X(SLT, CK_INT) \
	X(SLTU, CK_INT) X(LB, CK_INT) X(LBU, CK_INT) X(LH, CK_INT) \
	X(LHU, CK_INT) X(LW, CK_INT) X(LWU, CK_INT) X(SEXT_W, CK_INT) \
	X(SEXT_H, CK_INT) X(SEXT_B, CK_INT) X(ZEXT_W, CK_INT) \
	X(FADD_S, CK_F32) X(FSUB_S, CK_F32) X(FMUL_S, CK_F32) \
	X(FDIV_S, CK_F32) X(FSQRT_S, CK_F32) X(FMADD_S, CK_F32) \
	X(FMSUB_S, CK_F32) X(FNMADD_S, CK_F32) X(FNMSUB_S, CK_F32) \
	X(FEQ_S, CK_F32) X(FLT_S, CK_F32) X(FLE_S, CK_F32) \
	X(FSGNJ_S, CK_F32) X(FNEG_S, CK_F32) X(FABS_S, CK_F32) \
	X(FADD_D, CK_F64) X(FSUB_D, CK_F64) X(FMUL_D, CK_F64) \
	X(FDIV_D, CK_F64) X(FSQRT_D, CK_F64) X(FMADD_D, CK_F64) \
	X(FMSUB_D, CK_F64) X(FNMADD_D, CK_F64) X(FNMSUB_D, CK_F64) \
	X(FEQ_D, CK_F64) X(FLT_D, CK_F64) X(FLE_D, CK_F64) \
	X(FSGNJ_D, CK_F64) X(FNEG_D, CK_F64) X(FABS_D, CK_F64) \
	X(CVT_S_D, CK_F64) X(CVT_D_S, CK_F32) \
	X(CVT_S_W, CK_I2F) X(CVT_S_WU, CK_I2F) X(CVT_S_L, CK_I2F) \
	X(CVT_S_LU, CK_I2F) X(CVT_D_W, CK_I2F) X(CVT_D_WU, CK_I2F) \
	X(CVT_D_L, CK_I2F) X(CVT_D_LU, CK_I2F) \
	X(CVT_W_S, CK_F2I_S) X(CVT_WU_S, CK_F2I_S) X(CVT_L_S, CK_F2I_S) \
	X(CVT_LU_S, CK_F2I_S) X(CVT_W_D, CK_F2I_D) X(CVT_WU_D, CK_F2I_D) \
	X(CVT_L_D, CK_F2I_D) X(CVT_LU_D, CK_F2I_D) \
	X(TRUNC_W_S, CK_F2I_S) X(TRUNC_L_D, CK_F2I_D)

#define CONF_ENUM(n, k) CF_##n,
enum conf_fn { CONF_FNS(CONF_ENUM) CF_COUNT };
#undef CONF_ENUM

/* One input (32 bytes) and one result (16 bytes), as the device sees them. */
struct conf_case {
	uint32_t fn;
	uint16_t rm;		/* RISC-V rounding mode 0..4 */
	uint16_t sticky;	/* fflags already set before the operation */
	uint64_t a, b, c;	/* f32 operands in the low 32 bits */
};
struct conf_res {
	uint64_t r;		/* f32 results in the low 32 bits */
	uint32_t flags;		/* fflags: NV 16 DZ 8 OF 4 UF 2 NX 1 */
	uint32_t done;		/* 1 once written */
};

/* Run one case: the result, *flags = the fflags after it (with sticky). */
uint64_t conf_eval(const struct conf_case *k, uint32_t *flags);

#endif
