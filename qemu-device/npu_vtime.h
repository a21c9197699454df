/*
 * npu - virtual NPU PCI device: deterministic device time
 * (timing=virtual, npu_vtime.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_MISC_NPU_VTIME_H
#define HW_MISC_NPU_VTIME_H

#include "npu_base.h"

void npu_vt_init(NpuState *s);
void npu_vt_fini(NpuState *s);
void npu_vt_reset(NpuState *s);
void npu_vt_ring_reset(NpuRing *r);
void npu_vt_kick(NpuState *s);
void npu_vt_ring_active(NpuRing *r);
void npu_vt_ring_idle(NpuRing *r);
bool npu_vt_complete(NpuRing *r, uint64_t model_ns);
bool npu_vt_sem_block(NpuRing *r, uint64_t addr, uint64_t value, bool wide);
void npu_vt_cu_submit(NpuRing *r);
void npu_vt_cu_poke(NpuState *s);
void npu_vt_cu_finished(NpuRing *r, uint64_t end_ns);
bool npu_vt_cu_wait(NpuRing *r);
bool npu_vt_cu_step(NpuState *s, uint64_t cu_ns, uint64_t until_ns,
                    uint64_t *now, uint64_t *horizon, const bool *stop);
int npu_vt_uq_block(NpuRing *e, uint64_t addr, uint64_t value, bool wide);
void npu_vt_uq_idle(NpuRing *e, bool freed);
void npu_vt_uq_assign(NpuRing *e);
void npu_vt_uq_pending(NpuState *s);
bool npu_vt_uq_round(NpuState *s);
void npu_vt_uq_round_end(NpuState *s);
void npu_vt_uq_sleep(NpuState *s, int64_t deadline, const bool *stop);

#endif
