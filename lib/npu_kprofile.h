/* SPDX-License-Identifier: MIT */
/*
 * npu_kprofile.h - profiles of user kernels (npu_kprofile.c). The slot
 * functions and npu_kprofile_harvest() are called with dev->lock held.
 */
#ifndef NPU_KPROFILE_H
#define NPU_KPROFILE_H

#include <stdio.h>

#include "npu_internal.h"

/* Buffers for one profiled launch of f (false: none free, not profiled);
 * then npu_kprofile_track() once submitted, or npu_kprofile_cancel(). */
bool npu_kprofile_slot(struct device *dev, npu_function_t f,
		       unsigned block_threads, uint64_t scratch, int *slot,
		       uint64_t *stats_va, uint64_t *trace_va,
		       uint32_t *trace_bytes, uint32_t *period);
void npu_kprofile_track(struct device *dev, int slot, struct tl *tl,
			uint64_t point);
void npu_kprofile_cancel(struct device *dev, int slot);
/* Add the completed launches to their kernels' profiles. */
void npu_kprofile_harvest(struct device *dev);
/* The user-kernel section of npu_profile_report() (takes dev->lock). */
void npu_kprofile_report(struct device *dev, FILE *f);
/* Whether any profiled kernel's measured device time exceeds its
 * modelled time (cycles at the unit clock) by more than the tolerance;
 * the sums of both over those kernels (takes dev->lock). */
bool npu_kprofile_host_bound(struct device *dev, double *measured_ms,
			     double *modelled_ms);
/* npu_profiler_start(): profiles start from zero. */
void npu_kprofile_reset(void);

#endif /* NPU_KPROFILE_H */
