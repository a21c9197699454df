/* SPDX-License-Identifier: MIT */
/*
 * npu_printf.h - device printf buffers and their formatting (npu_printf.c).
 * Every function here is called with dev->lock held.
 */
#ifndef NPU_PRINTF_H
#define NPU_PRINTF_H

#include "npu_internal.h"

/* A buffer for one launch of kernel (waits for the oldest if all are in
 * use); then npu_printf_track() once the launch is submitted, or
 * npu_printf_cancel() if it was not. */
npu_status_t npu_printf_slot(struct device *dev, const char *kernel,
			     int *slot, uint64_t *va, uint32_t *bytes);
void npu_printf_track(struct device *dev, int slot, struct tl *tl,
		      uint64_t point);
void npu_printf_cancel(struct device *dev, int slot);
/* Queue what completed launches printed, in submission order. */
void npu_printf_flush(struct device *dev);
/* Write the queued text to stdout. Called without dev->lock: stdout may
 * block (a full pipe) and must stall no other thread's call. */

#endif /* NPU_PRINTF_H */
