/*
 * npu - virtual NPU PCI device: the compute units' tensor engine and tile
 * DMA (npu_cu_tensor.c), used by the cycle model.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_MISC_NPU_CU_TENSOR_H
#define HW_MISC_NPU_CU_TENSOR_H

#include "npu_cu_state.h"

/*
 * The earliest cycle >= when at which t can issue d (a tensor or tile DMA
 * instruction; its integer registers are ready by when), and *why until
 * then if later. UINT64_MAX: a TDMA.WAIT that no copy in flight releases.
 */
uint64_t npu_cu_tensor_ready(const NpuUnit *u, const NpuSlot *t,
                             const NpuRvInsn *d, uint64_t when, uint8_t *why);

/*
 * Execute d (a tensor or tile DMA instruction) for x->t at x->cycle and
 * take the units it occupies: as npu_rv_exec, 0 with the pc advanced, or
 * an error with *fault; *maddr = the address it names (traces).
 */
uint32_t npu_cu_tensor_exec(NpuExec *x, const NpuRvInsn *d, uint64_t *fault,
                            uint64_t *maddr);

/*
 * Complete u's copies due by cycle c: their barriers counted, or a
 * memory-side fault reported. Returns the launch that failed with the
 * first faulting one (the rest then wait for the next call), else NULL.
 */
NpuLaunch *npu_cu_tdma_retire(NpuState *s, NpuUnit *u, uint64_t c);

/* The completion cycle of the last of b's copies in flight on u, 0: none. */
uint64_t npu_cu_tdma_block_busy(const NpuUnit *u, const NpuBlock *b);

/*
 * Block b leaves unit u: copies of it still in flight (a failed or
 * cancelled launch's; any other block waits for its copies) complete now
 * (their faults reported unless its launch failed or was cancelled; the
 * launch's last cycle covers them) and leave the engine; its threads'
 * tiles go.
 */
void npu_cu_tensor_block_gone(NpuState *s, NpuUnit *u, NpuBlock *b);

#endif
