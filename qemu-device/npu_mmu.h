/*
 * npu - virtual NPU PCI device: the MMU (npu_mmu.c), device virtual
 * addresses of a ring's or a user queue's context.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_MISC_NPU_MMU_H
#define HW_MISC_NPU_MMU_H

#include "npu_base.h"

void npu_tlb_flush(NpuRing *r);
void npu_mmu_access_begin(NpuRing *r);
void npu_mmu_access_end(NpuRing *r);
bool npu_mmu_translate(NpuRing *r, uint64_t va, bool is_write,
                       uint64_t *pte_out, NpuErr *err);
void npu_mmu_set_context(NpuRing *r, uint32_t ctx, uint64_t pt_root);
void npu_mmu_invalidate(NpuState *s, uint32_t ctx);
bool npu_vm_rw(NpuJob *job, uint64_t va, void *buf, uint64_t len,
               bool is_write, NpuErr *err);
/* A mapping of npu_vm_map_one. */
typedef struct NpuVmMap {
    bool dev;                   /* device memory: nothing to release */
    NpuDma dma;
} NpuVmMap;

uint8_t *npu_vm_map_one(NpuJob *job, uint64_t va, uint64_t len,
                        bool is_write, NpuVmMap *m);
void npu_vm_unmap_one(NpuJob *job, NpuVmMap *m, uint64_t written,
                      uint64_t accessed);
bool npu_vm_copy_fast(NpuJob *job, uint64_t src, const void *src_buf,
                      uint64_t dst, uint64_t len);

#endif
