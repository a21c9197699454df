/* SPDX-License-Identifier: MIT */
/*
 * builtins.h - the kernel library's launch shapes: what the kernels in
 * builtins.c expect of their grid and block, and what npu_builtin_code.c
 * launches them with. Tile sizes come from npu_hw.h.
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

#endif
