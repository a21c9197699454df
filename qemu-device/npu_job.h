/*
 * npu - virtual NPU PCI device: a command's end (npu_job.c), shared by
 * the engines that execute commands.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_MISC_NPU_JOB_H
#define HW_MISC_NPU_JOB_H

#include "npu_base.h"

uint64_t npu_bytes_ns(NpuState *s, uint64_t host_bytes, uint64_t dev_bytes);
uint64_t npu_launch_model_ns(NpuRing *r, int64_t t0);
void npu_launch_done(NpuRing *r);
void npu_launch_cold(NpuRing *r);
bool npu_complete(NpuJob *job, int64_t t0, uint64_t model_ns, bool force,
                  uint64_t bytes);

#endif
