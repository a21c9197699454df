/*
 * npu - virtual NPU PCI device: user queues (npu_uq.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_MISC_NPU_UQ_H
#define HW_MISC_NPU_UQ_H

#include "npu_base.h"

#define NPU_UQ_REGS_BASE    NPU_REG_UQ_MAX_QUEUES
#define NPU_UQ_REGS_END     NPU_REG_UQ_ENGINE_CNT(2 * NPU_UQ_MAX_ENGINES)

bool npu_uq_check_props(NpuState *s, Error **errp);
void npu_uq_realize(NpuState *s);
void npu_uq_unrealize(NpuState *s);
void npu_uq_reset(NpuState *s);
uint32_t npu_uq_read(NpuState *s, hwaddr addr);
void npu_uq_write(NpuState *s, hwaddr addr, uint32_t val);
void npu_uq_run_kick(NpuState *s);
bool npu_uq_quiet(NpuState *s, unsigned *busy);
int npu_uq_post_load(NpuState *s);

#endif
