/* SPDX-License-Identifier: MIT */
/*
 * builtins.h - the kernel library's launch shapes, flags and size limits:
 * what the kernels in builtins.c expect of their grid and block, and what
 * npu_builtin_code.c launches them with and checks. Tile sizes come from
 * npu_hw.h.
 */
#ifndef NPU_BUILTINS_H
#define NPU_BUILTINS_H

/* element-wise kernels: elements per block (one thread) */
#define NPU_BI_EW_BLOCK		(16 * NPU_TILE_CELLS)

/* gemm_f32: columns of C per thread (its strip is 16 rows of them), and
 * the largest block of threads, x by y */
#define NPU_BI_GEMM_COLS	(4 * NPU_TILE_DIM)
#define NPU_BI_GEMM_MAX_TX	2
#define NPU_BI_GEMM_MAX_TY	4

/* gemm_f32's flags (npu.h's NPU_GEMM_TRANSPOSE_A / _B, which the kernels
 * cannot include): use the transpose of A / B as stored */
#define NPU_BI_GEMM_TRANS_A	0x1
#define NPU_BI_GEMM_TRANS_B	0x2

/* Size limits of the built-ins (the device's while it ran them):
 * npu_launch() and graph nodes refuse larger ones (npu_builtin_check). */
#define NPU_BI_MAX_ELEMS	(1ull << 24)	/* per operand */
#define NPU_BI_GEMM_MAX_ELEMS	(1ull << 22)	/* per matrix */
#define NPU_BI_GEMM_MAX_MACS	(1ull << 30)	/* m * n * k */

#endif
