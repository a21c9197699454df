/* SPDX-License-Identifier: MIT */
/*
 * npu_trace.h - what the graph launch and the teardown use of the command
 * trace (npu_trace.c); jobs and events reach it through npu_trace_hooks.
 */
#ifndef NPU_TRACE_H
#define NPU_TRACE_H

#include "npu_core.h"

/* For graph launches: reserve a slot and get its timestamp VAs; returns
 * the slot + 1 or 0 (trace full or off). Caller holds dev->lock. */
uint32_t npu_trace_slot(struct device *dev, uint64_t *va_start);
/* Describe the slot from the packets at cmd[0..len) (without the
 * timestamps); ring is the global ring index. */
void npu_trace_fill(struct device *dev, uint32_t slot, const uint8_t *cmd,
		    uint32_t len, uint32_t ring, struct npu_stream *s, bool graph);
uint32_t npu_ring_global(struct device *dev, int queue, uint32_t ring);
/* NPU_TRACE=<file>: write the JSON of the trace (teardown, first) */
void npu_trace_at_unload(void);

#endif /* NPU_TRACE_H */
