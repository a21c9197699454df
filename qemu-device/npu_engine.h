/*
 * npu - virtual NPU PCI device: the ring command processors and the
 * packet execution that user queues share (npu_engine.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_MISC_NPU_ENGINE_H
#define HW_MISC_NPU_ENGINE_H

#include "npu_base.h"

void *npu_ring_thread(void *opaque);
bool npu_uq_exec(NpuJob *job, const uint32_t *p, unsigned ndw,
                 uint64_t pkt_addr, NpuErr *err, uint32_t *info);
void npu_signal_delay(NpuState *s);

#endif
