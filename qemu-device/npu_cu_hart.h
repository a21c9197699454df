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

/*
 * The scratchpad or stack window of thread x->t at win (a multiple of
 * NPU_LOCAL_WINDOW): its bytes in *base, their number in *limit; returns
 * its enum npu_space, or -1 (*base, *limit untouched) if win is neither.
 */
static inline int npu_cu_window(const NpuExec *x, uint64_t win,
                                uint8_t **base, uint64_t *limit)
{
    if (win == NPU_LOCAL_SCRATCH) {
        *base = x->t->blk->scratch;
        *limit = x->l->scratch;
        return NPU_SPACE_SCRATCH;
    }
    if (win == NPU_LOCAL_STACK) {
        *base = x->t->stack;
        *limit = x->l->stack;
        return NPU_SPACE_STACK;
    }
    return -1;
}

#endif
