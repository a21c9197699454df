/*
 * npu - virtual NPU PCI device: LAUNCH of the diagnostic kernels
 * (npu_kernels.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_MISC_NPU_KERNELS_H
#define HW_MISC_NPU_KERNELS_H

#include "npu_base.h"

bool npu_launch(NpuJob *job, const uint32_t *pkt, unsigned ndw,
                uint64_t pkt_addr, NpuErr *err);

#endif
