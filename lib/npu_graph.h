/* SPDX-License-Identifier: MIT */
/*
 * npu_graph.h - internal hooks of graphs (npu_graph.c) and of the profiler
 * trace (npu_trace.c) into the stream and submission code. Every hook is
 * behind one relaxed atomic load, so it costs nothing while no capture is
 * active and the trace is off.
 */
#ifndef NPU_GRAPH_H
#define NPU_GRAPH_H

#include <stdatomic.h>
#include <stdbool.h>

#include "npu_core.h"

/* ---- stream capture (npu_graph.c) ----
 * Called at the top of the public calls, before dev->lock is taken. Each
 * returns true when it handled the call (captured it, or refused it with a
 * capture error); *st is then the call's result. */
extern atomic_int npu_capture_active;	/* number of active captures */

static inline bool npu_capturing(void)
{
	return atomic_load_explicit(&npu_capture_active, memory_order_relaxed) != 0;
}

bool npu_cap_launch(npu_stream_t h, npu_kernel_t kernel, npu_dim3 grid,
		    const uint64_t *args, unsigned nargs, unsigned flags,
		    npu_status_t *st);
/* a user-kernel launch (npu_ukernel.c), as complete node params */
bool npu_cap_kernel_node(npu_stream_t h, const npu_kernel_node_params *p,
			 npu_status_t *st);
bool npu_cap_memcpy(npu_stream_t h, void *dst, const void *src, size_t n,
		    npu_memcpy_kind_t kind, bool sync, npu_status_t *st);
bool npu_cap_memset(npu_stream_t h, void *p, int value, size_t n, bool sync,
		    npu_status_t *st);
bool npu_cap_host_func(npu_stream_t h, npu_host_fn_t fn, void *user,
		       npu_status_t *st);
bool npu_cap_event_record(npu_event_t e, npu_stream_t h, npu_status_t *st);
bool npu_cap_wait_event(npu_stream_t h, npu_event_t e, npu_status_t *st);
/* what: 0 stream synchronize/query of h, 1 device synchronize */
bool npu_cap_sync(npu_stream_t h, int what, npu_status_t *st);

/* ---- command trace (npu_trace.c) ---- */
extern atomic_int npu_trace_active;
#define NPU_TRACE_BYTES	32u		/* two TIMESTAMP packets */

static inline bool npu_tracing(void)
{
	return atomic_load_explicit(&npu_trace_active, memory_order_relaxed) != 0;
}

/* npu_job_begin / npu_job_submit hooks (jc->trace is the slot + 1) */
void npu_trace_job_begin(struct device *dev, struct jobctx *jc);
void npu_trace_job_end(struct device *dev, struct jobctx *jc, int queue);

/* For graph launches: reserve a slot and get its timestamp VAs; returns
 * the slot + 1 or 0 (trace full or off). Caller holds dev->lock. */
uint32_t npu_trace_slot(struct device *dev, uint64_t *va_start);
/* Describe the slot from the packets at cmd[0..len) (without the
 * timestamps); ring is the global ring index. */
void npu_trace_fill(struct device *dev, uint32_t slot, const uint8_t *cmd,
		    uint32_t len, uint32_t ring, struct npu_stream *s, bool graph);
uint32_t npu_ring_global(struct device *dev, int queue, uint32_t ring);
/* npu_event_record / npu_stream_wait_event hooks: the trace links the last
 * traced command before the record to the next one after the wait (flow
 * events in the JSON). Caller holds dev->lock. */
void npu_trace_event_record(struct npu_event *e, struct npu_stream *s);
void npu_trace_event_wait(struct npu_event *e, struct npu_stream *s);

/* modelled ops and bytes of a kernel (same formulas as the device) */
void npu_kernel_cost(uint32_t kernel, const uint64_t *args, unsigned nargs,
		     uint64_t *ops, uint64_t *bytes);

#endif /* NPU_GRAPH_H */
