/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * npu_trace.h - tracepoints of the npu driver (events/npu/).
 */
#if !defined(NPU_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define NPU_TRACE_H

#include <linux/tracepoint.h>

#undef TRACE_SYSTEM
#define TRACE_SYSTEM npu
#define TRACE_INCLUDE_FILE npu_trace

TRACE_EVENT(npu_job_submit,
	    TP_PROTO(u32 ctx, u32 queue, u64 fence_seqno, u64 cmd_va,
		     u32 cmd_size),
	    TP_ARGS(ctx, queue, fence_seqno, cmd_va, cmd_size),
	    TP_STRUCT__entry(__field(u32, ctx)
			     __field(u32, queue)
			     __field(u64, fence_seqno)
			     __field(u64, cmd_va)
			     __field(u32, cmd_size)),
	    TP_fast_assign(__entry->ctx = ctx;
			   __entry->queue = queue;
			   __entry->fence_seqno = fence_seqno;
			   __entry->cmd_va = cmd_va;
			   __entry->cmd_size = cmd_size;),
	    TP_printk("ctx=%u queue=%u fence=%llu cmd=%#llx+%u",
		      __entry->ctx, __entry->queue, __entry->fence_seqno,
		      __entry->cmd_va, __entry->cmd_size)
);

TRACE_EVENT(npu_job_run,
	    TP_PROTO(u32 ring, u32 seqno, u32 ctx, u64 cmd_va, u32 cmd_size),
	    TP_ARGS(ring, seqno, ctx, cmd_va, cmd_size),
	    TP_STRUCT__entry(__field(u32, ring)
			     __field(u32, seqno)
			     __field(u32, ctx)
			     __field(u64, cmd_va)
			     __field(u32, cmd_size)),
	    TP_fast_assign(__entry->ring = ring;
			   __entry->seqno = seqno;
			   __entry->ctx = ctx;
			   __entry->cmd_va = cmd_va;
			   __entry->cmd_size = cmd_size;),
	    TP_printk("ring=%u seqno=%u ctx=%u cmd=%#llx+%u", __entry->ring,
		      __entry->seqno, __entry->ctx, __entry->cmd_va,
		      __entry->cmd_size)
);

TRACE_EVENT(npu_job_done,
	    TP_PROTO(u32 ring, u32 seqno, int error),
	    TP_ARGS(ring, seqno, error),
	    TP_STRUCT__entry(__field(u32, ring)
			     __field(u32, seqno)
			     __field(int, error)),
	    TP_fast_assign(__entry->ring = ring;
			   __entry->seqno = seqno;
			   __entry->error = error;),
	    TP_printk("ring=%u seqno=%u error=%d", __entry->ring,
		      __entry->seqno, __entry->error)
);

TRACE_EVENT(npu_fault,
	    TP_PROTO(u32 ring, u32 seqno, u32 ctx, u32 cause, u32 info,
		     u64 addr),
	    TP_ARGS(ring, seqno, ctx, cause, info, addr),
	    TP_STRUCT__entry(__field(u32, ring)
			     __field(u32, seqno)
			     __field(u32, ctx)
			     __field(u32, cause)
			     __field(u32, info)
			     __field(u64, addr)),
	    TP_fast_assign(__entry->ring = ring;
			   __entry->seqno = seqno;
			   __entry->ctx = ctx;
			   __entry->cause = cause;
			   __entry->info = info;
			   __entry->addr = addr;),
	    TP_printk("ring=%u seqno=%u ctx=%u cause=%u info=%#x addr=%#llx",
		      __entry->ring, __entry->seqno, __entry->ctx,
		      __entry->cause, __entry->info, __entry->addr)
);

TRACE_EVENT(npu_ring_reset,
	    TP_PROTO(u32 ring, u32 seqno),
	    TP_ARGS(ring, seqno),
	    TP_STRUCT__entry(__field(u32, ring)
			     __field(u32, seqno)),
	    TP_fast_assign(__entry->ring = ring;
			   __entry->seqno = seqno;),
	    TP_printk("ring=%u guilty_seqno=%u", __entry->ring,
		      __entry->seqno)
);

#endif /* NPU_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#include <trace/define_trace.h>
