/*
 * npu - virtual NPU PCI device: a compute-unit thread's environment
 * (npu_cu_hart.c), used by the cycle model and the dispatcher.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_MISC_NPU_CU_HART_H
#define HW_MISC_NPU_CU_HART_H

#include "npu_cu_state.h"

extern const NpuRvOps npu_cu_ops;       /* opaque: an NpuExec */
void npu_cu_fail(NpuLaunch *l, uint32_t code, uint64_t addr,
                 const NpuSlot *t, unsigned unit);
void npu_tb_free_all(NpuLaunch *l);
void npu_launch_flush(NpuLaunch *l);
uint32_t npu_cu_translate(NpuLaunch *l, uint64_t va, bool is_write,
                          uint64_t *pte);
uint32_t npu_cu_vm_rw(NpuState *s, NpuLaunch *l, uint64_t va, void *buf,
                      unsigned len, bool is_write, int *space,
                      uint64_t *phys);
void npu_trace_flush(NpuState *s, NpuLaunch *l);
void npu_cu_break_range(NpuState *s, uint64_t phys, uint64_t len);
bool npu_cu_write(NpuState *s, NpuLaunch *l, uint64_t va, const void *buf,
                  uint64_t len);

#endif
