/*
 * npu - virtual NPU PCI device: the compute units (npu_cu.c) as the
 * rings, the diagnostic kernels and the device's top see them.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_MISC_NPU_CU_H
#define HW_MISC_NPU_CU_H

#include "npu_base.h"

void npu_cu_init(NpuState *s);
void npu_cu_fini(NpuState *s);
void npu_cu_reset(NpuState *s);
uint64_t npu_cu_counter(NpuState *s, unsigned cu, unsigned which);
void npu_cu_migrate(NpuState *s, bool load);
bool npu_cu_run_fixed(NpuJob *job, uint32_t blocks, uint64_t ns);
bool npu_launch_code(NpuJob *job, const uint32_t *p, unsigned ndw,
                     bool full, uint64_t pkt_addr, NpuErr *err);

#endif
