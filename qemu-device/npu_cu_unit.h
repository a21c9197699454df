/*
 * npu - virtual NPU PCI device: one compute unit's step through a quantum
 * and its blocks (npu_cu_unit.c), used by the dispatcher.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_MISC_NPU_CU_UNIT_H
#define HW_MISC_NPU_CU_UNIT_H

#include "npu_cu_state.h"

void npu_unit_launch(NpuUnit *u, NpuLaunch *l, int add);
void npu_block_free(NpuState *s, NpuUnit *u, NpuBlock *b);
void npu_unit_run(NpuState *s, NpuUnit *u, uint64_t end);

#endif
