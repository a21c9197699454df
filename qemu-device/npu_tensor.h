/*
 * npu - virtual NPU PCI device: the tensor engine's arithmetic.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * What TLOAD, TSTORE, TFILL, TMMA and TEW compute on tile registers
 * (Documentation/hw/npu.rst, "Tensor engine and tile DMA"), bit for bit,
 * independent of timing, threads and the MMU: the compute units' cycle
 * model calls these for an instruction that issues.
 */
#ifndef HW_MISC_NPU_TENSOR_H
#define HW_MISC_NPU_TENSOR_H

#include "npu_hw.h"

/* One tile register: 16 rows of 16 32-bit cells, [row][column]. */
typedef struct NpuTile {
    uint32_t cell[NPU_TILE_DIM][NPU_TILE_DIM];
} NpuTile;

/*
 * TLOAD (store false) or TSTORE of tile t at addr with stride, funct7 the
 * instruction's (esize | trans), against the scratchpad of size bytes at
 * base (window address NPU_LOCAL_SCRATCH). Returns 0, or the error with
 * *fault = the FAULT value; a faulting one changes nothing.
 */
uint32_t npu_tensor_tile_mem(NpuTile *t, bool store, uint8_t *base,
                             uint64_t size, uint64_t addr, uint64_t stride,
                             unsigned funct7, uint64_t *fault);

/* TFILL: every cell = the low 8 << esize bits of value. */
void npu_tensor_fill(NpuTile *t, uint64_t value, unsigned esize);

/* TMMA: c += a x b for enum npu_mma_type type (c may be a or b). */
void npu_tensor_mma(NpuTile *c, const NpuTile *a, const NpuTile *b,
                    unsigned type);

/* TEW op (enum npu_tew_op) of a and b into d (d may be a or b). */
void npu_tensor_tew(NpuTile *d, const NpuTile *a, const NpuTile *b,
                    unsigned op);

/* One-element results, for the above (RNE, canonical NaN). */
uint32_t npu_tensor_exp_f32(uint32_t x);
uint16_t npu_tensor_f32_to_f16(uint32_t x);
uint16_t npu_tensor_f32_to_bf16(uint32_t x);
uint32_t npu_tensor_f16_to_f32(uint16_t h);

#endif
