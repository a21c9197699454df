// SPDX-License-Identifier: MIT
/*
 * npu_fault.c - faults: failed jobs become sticky errors with a readable cause.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <xf86drm.h>

#include "npu_core.h"

/* ------------------------------------------------------------------------
 * Faults: DRM_IOCTL_NPU_GET_FAULT counts the file's failed jobs. A new
 * failure becomes the sticky error of the stream that owns the queue and of
 * the device. Caller holds dev->lock.
 */
void (*npu_fault_pc_hook)(uint64_t pc, uint64_t entry, char *buf, size_t n);
void (*npu_uq_halted_hook)(struct device *dev);
const char *(*npu_fault_note_hook)(uint64_t entry, uint32_t cause);

/* What the device's error cause (npu_hw.h enum npu_error) means; addr
 * tells which local window a compute unit overran. */
static const char *fault_cause_text(uint32_t cause, uint64_t addr)
{
	static const char *const text[NPU_ERR_COUNT] = {
		[NPU_ERR_NONE] = "no error",
		[NPU_ERR_BAD_OPCODE] = "unknown packet opcode",
		[NPU_ERR_BAD_PACKET] = "bad packet",
		[NPU_ERR_PRIVILEGED] = "privileged packet in a command buffer",
		[NPU_ERR_MMU_FAULT] = "page not mapped",
		[NPU_ERR_MMU_WRITE] = "write to read-only page",
		[NPU_ERR_BAD_DMA] = "physical address outside guest memory",
		[NPU_ERR_DEVMEM_RANGE] = "page table entry past device memory",
		[NPU_ERR_BAD_KERNEL] = "unknown kernel id",
		[NPU_ERR_BAD_ARGS] = "bad kernel arguments",
		[NPU_ERR_RING_CONFIG] = "bad ring configuration",
		[NPU_ERR_NO_CONTEXT] = "no context set",
		[NPU_ERR_KERNEL_FAULT] = "kernel fault",
		[NPU_ERR_CU_ILLEGAL] = "illegal instruction",
		[NPU_ERR_CU_MISALIGNED] = "misaligned access",
		[NPU_ERR_CU_BREAK] = "breakpoint (ebreak)",
	};

	if (cause == NPU_ERR_CU_LOCAL_RANGE) {
		switch (addr & ~(NPU_LOCAL_WINDOW - 1)) {
		case NPU_LOCAL_SCRATCH:
			/* a stack grows down from its window's start into
			 * the scratchpad's far end */
			if (addr >= NPU_LOCAL_STACK - NPU_LOCAL_WINDOW / 2)
				return "stack overflow (access below the "
				       "thread's stack)";
			return "access past the scratchpad";
		case NPU_LOCAL_STACK:
			return "access past the thread's stack";
		case NPU_LOCAL_PARAMS:
			return "access past the arguments (parameter window)";
		default:
			return "access outside scratchpad, stack and arguments";
		}
	}
	return cause < NPU_ERR_COUNT && text[cause] ? text[cause] :
	       "unknown cause";
}

/* kq: the wait covered kernel-queue work too (npu_check_faults_uq) */
static npu_status_t check_faults(struct device *dev, bool kq)
{
	struct drm_npu_get_fault f;
	struct npu_stream *s, *hit = NULL;
	struct npu_uq *u;
	npu_status_t st;
	const char *kname = NULL;
	uint32_t kid = UINT32_MAX;
	char kbuf[320] = "";
	unsigned nargs;
	int n;
	int settle = 0;

	/* A user queue that halted: the driver records its fault from a
	 * work item, after the queue's status (and USERQ_WAIT_MEM) say
	 * halted. Wait for that record (a bounded while) once per halt. */
	for (u = dev->uqs; u; u = u->dev_next) {
		if (!(npu_uq_wb(u)->status & NPU_UQ_STS_HALTED))
			continue;
		dev->uq_halt_seen = true;
		if (!u->halt_reported) {
			u->halt_reported = true;
			settle = 2000;
		}
	}
	/* Only user queues ran work, and none has ever halted: no fault is
	 * on record (a user queue's fault halts it, and its status says so),
	 * and the ioctl would cost a synchronize's round trip as much as the
	 * rest. A process that has had a fault asks the driver after every
	 * wait. */
	if (!dev->uq_halt_seen && !dev->faults_seen && !npu_dev_lost(dev) &&
	    !(kq && atomic_load_explicit(&dev->kq_submitted,
					 memory_order_relaxed))) {
		for (s = dev->streams; s; s = s->next)
			s->fault_clean = s->tl->completed;
		return dev->sticky;
	}
	if (npu_uq_halted_hook)
		npu_uq_halted_hook(dev);
again:
	memset(&f, 0, sizeof(f));
	if (drmIoctl(dev->fd, DRM_IOCTL_NPU_GET_FAULT, &f)) {
		npu_note_errno(dev, errno);
		if (npu_dev_lost(dev) && dev->sticky != NPU_ERROR_DEVICE_LOST) {
			/* what ran and what did not is unknown: every
			 * stream and the device report the loss */
			dev->sticky = NPU_ERROR_DEVICE_LOST;
			snprintf(dev->sticky_msg, sizeof(dev->sticky_msg), "%s",
				 npu_status_string(NPU_ERROR_DEVICE_LOST));
			for (s = dev->streams; s; s = s->next)
				s->sticky = NPU_ERROR_DEVICE_LOST;
		}
		return dev->sticky;
	}
	if (f.count == dev->faults_seen && settle-- > 0) {
		usleep(1000);
		goto again;
	}
	if (f.count == dev->faults_seen) {
		/* everything complete so far ran without a fault */
		for (s = dev->streams; s; s = s->next)
			s->fault_clean = s->tl->completed;
		return dev->sticky;
	}
	for (s = dev->streams; s; s = s->next)
		if (s->queue[Q_COMPUTE] == f.queue_id || s->queue[Q_COPY] == f.queue_id ||
		    (s->uq && s->uq->id == f.queue_id) ||
		    (s->uq_copy && s->uq_copy->id == f.queue_id))
			hit = s;
	/* the failed jobs since the last check, counted against the tuner
	 * when the latest one ran on a stream of npu_tune() (npu_tune.c) */
	if (hit && hit->tune)
		dev->faults_tune += f.count - dev->faults_seen;
	dev->faults_seen = f.count;
	if (f.kind == DRM_NPU_FAULT_TIMEOUT) {
		st = NPU_ERROR_LAUNCH_TIMEOUT;
		/* the driver does not say which kernel hung: name the
		 * stream's first launch after the last fault-free check */
		if (hit) {
			unsigned i;

			for (i = 0; i < hit->span_count; i++) {
				struct cmd_span *sp =
					&hit->span[(hit->span_head + i) % CMD_INFLIGHT];

				if (sp->point > hit->fault_clean && sp->kernel) {
					kid = sp->kernel - 1;
					break;
				}
			}
		}
	} else if (f.cause == NPU_ERR_MMU_FAULT || f.cause == NPU_ERR_MMU_WRITE ||
		   f.cause == NPU_ERR_KERNEL_FAULT || f.cause == NPU_ERR_BAD_DMA ||
		   f.cause == NPU_ERR_DEVMEM_RANGE) {
		st = NPU_ERROR_ILLEGAL_ADDRESS;
	} else {
		st = NPU_ERROR_LAUNCH_FAILURE;
	}
	if (f.kind != DRM_NPU_FAULT_TIMEOUT && (f.info & 0xff) == NPU_OP_LAUNCH)
		kid = f.info >> 16;
	if (f.kind != DRM_NPU_FAULT_TIMEOUT &&
	    ((f.info & 0xff) == NPU_OP_LAUNCH_CODE ||
	     (f.info & 0xff) == NPU_OP_LAUNCH_CODE_SHORT) && f.pc) {
		char where[160] = "";
		uint64_t entry = f.entry;

		/* the launched kernel (the PC may be in a callee): the device
		 * names it; a driver without f.entry leaves 0, then take the
		 * stream's first user launch after its last fault-free check */
		for (unsigned i = 0; !entry && hit && i < hit->span_count; i++) {
			struct cmd_span *sp =
				&hit->span[(hit->span_head + i) % CMD_INFLIGHT];

			if (sp->point > hit->fault_clean && sp->entry) {
				entry = sp->entry;
				break;
			}
		}
		const char *note = npu_fault_note_hook ?
				   npu_fault_note_hook(entry, f.cause) : NULL;

		if (npu_fault_pc_hook)
			npu_fault_pc_hook(f.pc, entry, where, sizeof(where));
		snprintf(kbuf, sizeof(kbuf), "%s, block %u thread %u%s%s",
			 where[0] ? where : " in a user kernel", f.block,
			 f.thread, note ? ": " : "", note ? note : "");
	} else if (kid != UINT32_MAX) {
		if (npu_kernel_info((npu_kernel_t)kid, &kname, &nargs) == NPU_SUCCESS)
			snprintf(kbuf, sizeof(kbuf), " in kernel %s (id 0x%x)", kname, kid);
		else
			snprintf(kbuf, sizeof(kbuf), " in kernel id 0x%x", kid);
	}
	if (f.kind == DRM_NPU_FAULT_TIMEOUT)
		n = snprintf(dev->sticky_msg, sizeof(dev->sticky_msg),
			     "%s: job%s did not finish within the driver's %u ms "
			     "timeout and was terminated (module parameter "
			     "npu.job_timeout_ms; NPU_MODPARAMS=job_timeout_ms=N "
			     "for tests/guest/run.sh)",
			     npu_status_name(st), kbuf, dev->prop.job_timeout_ms);
	else
		n = snprintf(dev->sticky_msg, sizeof(dev->sticky_msg),
			     "%s: device error %u (%s) at device address 0x%" PRIx64
			     "%s, packet opcode 0x%02x%s",
			     npu_status_name(st), f.cause,
			     fault_cause_text(f.cause, f.addr),
			     (uint64_t)f.addr, kbuf, f.info & 0xff,
			     f.info & 0x100 ? " in a command buffer" : "");
	if (n > 0 && (size_t)n < sizeof(dev->sticky_msg))
		snprintf(dev->sticky_msg + n, sizeof(dev->sticky_msg) - (size_t)n,
			 "; ring %u, stream %p; %u failed job(s) in this process",
			 f.ring, (void *)hit, f.count);
	if (!dev->sticky)
		dev->sticky = st;
	if (hit && !hit->sticky)
		hit->sticky = st;
	return dev->sticky;
}

npu_status_t npu_check_faults(struct device *dev)
{
	return check_faults(dev, true);
}

/* After a wait for work that ran on user queues alone: a fault there
 * halts its queue, which the status word tells, so kernel-queue jobs run
 * by other streams do not make this wait ask the driver (an ioctl, about
 * a third of a host function's round trip). Their faults are reported by
 * the waits that cover them, as CUDA reports an asynchronous error at a
 * later call. */
npu_status_t npu_check_faults_uq(struct device *dev)
{
	return check_faults(dev, false);
}
