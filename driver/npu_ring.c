// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_ring.c - hardware rings: programming, seqno fences, the ring and
 * error interrupt handlers (npu_drv.c requests the vectors), device errors,
 * fault records and ring resets.
 *
 * Every job occupies one 64-byte slot of its ring:
 *
 *   SET_CONTEXT(ctx, pt_root)   4 dw
 *   RING_CTRL(FLUSH_TLB)        1 dw
 *   INDIRECT(cmd_va, cmd_size)  4 dw  (NOP when cmd_size == 0)
 *   FENCE(seqno, fence word, IRQ) 4 dw
 *   NOP padding                 3 dw
 *
 * so packets never straddle the end of the ring. The ring's MSI-X vector
 * fires after the fence write; the handler retires every job whose seqno has
 * passed, in order (npu_seqno_passed() is wrap-safe).
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <drm/drm_drv.h>
#include <drm/drm_print.h>

#include "npu_regs.h"
#include "npu_ring.h"
#include "npu_trace.h"

/*
 * A hang detector, not a budget: the interpreted compute units run a
 * user's first kernel for seconds, so the default is what GPU drivers
 * used for compute queues (see Documentation/driver/npu.rst).
 */
unsigned int npu_job_timeout_ms = 60000;

/* 0 would time every job out at once */
static int npu_param_set_timeout(const char *val,
				 const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, UINT_MAX);
}

static const struct kernel_param_ops npu_timeout_ops = {
	.set = npu_param_set_timeout,
	.get = param_get_uint,
};

module_param_cb(job_timeout_ms, &npu_timeout_ops, &npu_job_timeout_ms, 0444);
MODULE_PARM_DESC(job_timeout_ms,
		 "Job timeout before the ring is reset, ms, >= 1 (default 60000)");

static const char *npu_fence_get_driver_name(struct dma_fence *fence)
{
	return NPU_DRIVER_NAME;
}

static const char *npu_fence_get_timeline_name(struct dma_fence *fence)
{
	return "npu-ring";
}

static const struct dma_fence_ops npu_fence_ops = {
	.get_driver_name = npu_fence_get_driver_name,
	.get_timeline_name = npu_fence_get_timeline_name,
};

/**
 * npu_fence_alloc() - allocate an uninitialised hardware fence
 * @gfp: allocation flags
 *
 * Return: the fence or NULL.
 */
struct npu_fence *npu_fence_alloc(gfp_t gfp)
{
	return kzalloc(sizeof(struct npu_fence), gfp);
}

/**
 * npu_fault_record() - record an error hit by a job of @nfile
 * @nfile: file
 * @kind: DRM_NPU_FAULT_*
 * @queue_id: queue of the job
 * @ring: ring index
 * @cause: enum npu_error
 * @info: opcode or kernel id
 * @addr: faulting address
 * @where: for a compute-unit thread's fault, its pc, block, thread, unit and
 *	the launched kernel's entry (the other fields of @where are ignored);
 *	NULL otherwise
 */
void npu_fault_record(struct npu_file *nfile, u32 kind, u32 queue_id,
		      u32 ring, u32 cause, u32 info, u64 addr,
		      const struct drm_npu_get_fault *where)
{
	unsigned long flags;

	spin_lock_irqsave(&nfile->fault_lock, flags);
	nfile->fault.count++;
	nfile->fault.kind = kind;
	nfile->fault.queue_id = queue_id;
	nfile->fault.ring = ring;
	nfile->fault.cause = cause;
	nfile->fault.info = info;
	nfile->fault.addr = addr;
	nfile->fault.pc = where ? where->pc : 0;
	nfile->fault.block = where ? where->block : 0;
	nfile->fault.thread = where ? where->thread : 0;
	nfile->fault.unit = where ? where->unit : 0;
	nfile->fault.entry = where ? where->entry : 0;
	spin_unlock_irqrestore(&nfile->fault_lock, flags);
}

static inline u32 npu_ring_slot_mask(void)
{
	return NPU_RING_BYTES - 1;
}

static void npu_ring_emit_job(struct npu_ring *ring, struct npu_job *job)
{
	u32 *p = ring->vaddr + ring->tail / 4;
	u32 *start = p;

	lockdep_assert_held(&ring->lock);

	*p++ = NPU_PKT_HDR(NPU_OP_SET_CONTEXT, 0, 4);
	*p++ = job->ctx->id;
	*p++ = lower_32_bits(job->ctx->root_dma);
	*p++ = upper_32_bits(job->ctx->root_dma);
	*p++ = NPU_PKT_HDR(NPU_OP_RING_CTRL, NPU_RING_CTRL_FLUSH_TLB, 1);
	if (job->cmd_size) {
		*p++ = NPU_PKT_HDR(NPU_OP_INDIRECT, 0, 4);
		*p++ = job->cmd_size;
		*p++ = lower_32_bits(job->cmd_va);
		*p++ = upper_32_bits(job->cmd_va);
	} else {
		*p++ = NPU_PKT_HDR(NPU_OP_NOP, 0, 4);
		*p++ = 0;
		*p++ = 0;
		*p++ = 0;
	}
	*p++ = NPU_PKT_HDR(NPU_OP_FENCE, NPU_FENCE_IRQ, 4);
	*p++ = job->seqno;
	*p++ = lower_32_bits(ring->fence_dma);
	*p++ = upper_32_bits(ring->fence_dma);
	*p++ = NPU_PKT_HDR(NPU_OP_NOP, 0, 3);
	*p++ = 0;
	*p++ = 0;
	WARN_ON(p - start != NPU_JOB_SLOT_DW);

	ring->tail = (ring->tail + NPU_JOB_SLOT_DW * 4) & npu_ring_slot_mask();
}

/**
 * npu_ring_run() - write a job into its ring and ring the doorbell
 * @ring: ring chosen by the scheduler
 * @job: job
 *
 * Called from the scheduler's run_job, once per job.
 *
 * Return: the job's hardware fence (a reference for the scheduler), or an
 * ERR_PTR.
 */
struct dma_fence *npu_ring_run(struct npu_ring *ring, struct npu_job *job)
{
	struct npu_device *ndev = ring->ndev;
	struct npu_fence *f;
	unsigned long flags;
	int idx;

	f = job->spare_fence;
	job->spare_fence = NULL;
	if (!f)
		f = npu_fence_alloc(GFP_NOWAIT);
	if (!f)
		return ERR_PTR(-ENOMEM);
	f->ring_index = ring->index;

	if (!drm_dev_enter(&ndev->drm, &idx)) {
		kfree(f);
		return ERR_PTR(-ENODEV);
	}

	spin_lock_irqsave(&ring->lock, flags);
	job->seqno = ++ring->seqno;
	job->ring = ring;
	job->run_ns = ktime_get_ns();
	dma_fence_init(&f->base, &npu_fence_ops, &ring->fence_lock,
		       ring->fence_context, job->seqno);
	job->hw_fence = dma_fence_get(&f->base);
	npu_ring_emit_job(ring, job);
	list_add_tail(&job->node, &ring->pending);
	job->on_ring = true;
	ring->stats_submitted++;
	trace_npu_job_run(ring->index, job->seqno, job->ctx->id, job->cmd_va,
			  job->cmd_size);
	/* writel orders the ring and page-table writes before the doorbell */
	npu_ring_wr(ring, NPU_RING_TAIL, ring->tail);
	spin_unlock_irqrestore(&ring->lock, flags);

	drm_dev_exit(idx);
	return &f->base;
}

/* Retire one job: unlink it and signal its hardware fence. */
static void npu_ring_retire_job(struct npu_ring *ring, struct npu_job *job,
				int error)
{
	struct dma_fence *f = dma_fence_get(job->hw_fence);
	u64 now = ktime_get_ns();

	lockdep_assert_held(&ring->lock);

	/* fdinfo: busy from its start (behind the previous job: its end) */
	atomic64_add(now - max(job->run_ns, ring->last_done_ns),
		     &job->nfile->engine_ns[ring->kind ==
					    DRM_NPU_RING_KIND_COPY]);
	ring->last_done_ns = now;
	list_del_init(&job->node);
	job->on_ring = false;
	if (error && !f->error)
		dma_fence_set_error(f, error);
	/*
	 * Kernels whose scheduler does not propagate the parent's error
	 * (6.1) need it on the finished fence; it is not signalled yet.
	 */
	if (f->error && !job->base.s_fence->finished.error)
		dma_fence_set_error(&job->base.s_fence->finished, f->error);
	if (f->error)
		ring->stats_failed++;
	else
		ring->stats_completed++;
	ring->completed = job->seqno;
	trace_npu_job_done(ring->index, job->seqno, f->error);
	/* may free @job (scheduler free worker): do not touch it after */
	dma_fence_signal(f);
	dma_fence_put(f);
}

/**
 * npu_rings_running_ns() - time so far of @nfile's jobs executing now
 * @ndev: device
 * @nfile: file
 * @ns: adds the compute rings' ([0]) and copy rings' ([1]) share
 *
 * The oldest job on a ring is the one executing; it is counted from where
 * npu_ring_retire_job() will count it, so fdinfo's engine time grows while
 * a long job runs and does not jump back when it retires.
 */
void npu_rings_running_ns(struct npu_device *ndev, struct npu_file *nfile,
			  u64 ns[2])
{
	u64 now = ktime_get_ns();
	unsigned long flags;
	struct npu_job *job;
	u32 r;

	for (r = 0; r < ndev->num_rings; r++) {
		struct npu_ring *ring = &ndev->rings[r];
		u64 start;

		spin_lock_irqsave(&ring->lock, flags);
		job = list_first_entry_or_null(&ring->pending, struct npu_job,
					       node);
		if (job && job->nfile == nfile) {
			start = max(job->run_ns, ring->last_done_ns);
			if (now > start)
				ns[ring->kind == DRM_NPU_RING_KIND_COPY] +=
					now - start;
		}
		spin_unlock_irqrestore(&ring->lock, flags);
	}
}

/* Retire the jobs the device has finished. */
static void npu_ring_retire(struct npu_ring *ring)
{
	struct npu_job *job, *tmp;
	u32 seq = READ_ONCE(*ring->fence_cpu);

	lockdep_assert_held(&ring->lock);

	list_for_each_entry_safe(job, tmp, &ring->pending, node) {
		if (!npu_seqno_passed(seq, job->seqno))
			break;
		npu_ring_retire_job(ring, job, 0);
	}
}

/**
 * npu_ring_irq() - handler of a ring's MSI-X vector (requested in
 * npu_drv.c): retire the jobs whose fence the device wrote
 * @irq: the vector's irq number
 * @arg: the &struct npu_ring
 *
 * Return: IRQ_HANDLED.
 */
irqreturn_t npu_ring_irq(int irq, void *arg)
{
	struct npu_ring *ring = arg;
	unsigned long flags;

	spin_lock_irqsave(&ring->lock, flags);
	npu_ring_retire(ring);
	spin_unlock_irqrestore(&ring->lock, flags);
	return IRQ_HANDLED;
}

/* Device error on @ring: blame the running job, then let the ring go on. */
static void npu_ring_handle_error(struct npu_ring *ring)
{
	struct drm_npu_get_fault where = {};
	u32 cause, ctx, info;
	struct npu_job *job;
	u64 addr;

	lockdep_assert_held(&ring->lock);

	cause = npu_ring_rd(ring, NPU_RING_ERROR);
	ctx = npu_ring_rd(ring, NPU_RING_ERROR_CTX);
	info = npu_ring_rd(ring, NPU_RING_ERROR_INFO);
	addr = npu_rd64(ring->ndev, NPU_RING_BASE(ring->index) +
			NPU_RING_FAULT_LO);
	if (ring->ndev->features & NPU_FEATURE_USER_CODE) {
		where.pc = npu_rd64(ring->ndev, NPU_RING_BASE(ring->index) +
				    NPU_RING_FAULT_PC_LO);
		where.block = npu_ring_rd(ring, NPU_RING_FAULT_BLOCK);
		where.thread = npu_ring_rd(ring, NPU_RING_FAULT_THREAD);
		where.unit = npu_ring_rd(ring, NPU_RING_FAULT_UNIT);
		where.entry = npu_rd64(ring->ndev, NPU_RING_BASE(ring->index) +
				       NPU_RING_FAULT_ENTRY_LO);
	}
	ring->stats_faults++;

	/* finished jobs first: the oldest remaining one is the culprit */
	npu_ring_retire(ring);
	job = list_first_entry_or_null(&ring->pending, struct npu_job, node);
	trace_npu_fault(ring->index, job ? job->seqno : 0, ctx, cause, info,
			addr);
	if (job) {
		if (!job->hw_fence->error)
			dma_fence_set_error(job->hw_fence, -EFAULT);
		npu_fault_record(job->nfile, DRM_NPU_FAULT_DEVICE,
				 job->queue_id, ring->index, cause, info, addr,
				 &where);
	}
	dev_dbg(ring->ndev->drm.dev,
		"%s: error %u ctx %u info %#x addr %#llx\n", ring->name,
		cause, ctx, info, addr);

	npu_wr(ring->ndev, NPU_REG_ERR_PENDING, BIT(ring->index));
	npu_ring_wr(ring, NPU_RING_CONTROL,
		    NPU_RING_CTL_ENABLE | NPU_RING_CTL_RESUME);
}

/**
 * npu_error_irq() - handler of the error vector (requested in npu_drv.c):
 * blame the running job of each ring in error, then let the ring go on
 * @irq: the vector's irq number
 * @arg: the &struct npu_device
 *
 * Return: IRQ_HANDLED, or IRQ_NONE when no error is pending.
 */
irqreturn_t npu_error_irq(int irq, void *arg)
{
	struct npu_device *ndev = arg;
	unsigned long flags;
	u32 pending;
	int r;

	pending = npu_rd(ndev, NPU_REG_ERR_PENDING);
	if (!pending)
		return IRQ_NONE;
	for (r = 0; r < ndev->num_rings; r++) {
		struct npu_ring *ring = &ndev->rings[r];

		if (!(pending & BIT(r)))
			continue;
		spin_lock_irqsave(&ring->lock, flags);
		npu_ring_handle_error(ring);
		spin_unlock_irqrestore(&ring->lock, flags);
	}
	/* bits of rings we do not drive */
	pending &= ~GENMASK(ndev->num_rings - 1, 0);
	if (pending)
		npu_wr(ndev, NPU_REG_ERR_PENDING, pending);
	return IRQ_HANDLED;
}

static void npu_ring_hw_program(struct npu_ring *ring)
{
	lockdep_assert_held(&ring->lock);

	npu_ring_wr(ring, NPU_RING_CONTROL, NPU_RING_CTL_RESET);
	npu_wr(ring->ndev, NPU_REG_ERR_PENDING, BIT(ring->index));
	ring->tail = 0;
	npu_ring_wr(ring, NPU_RING_BASE_LO, lower_32_bits(ring->dma));
	npu_ring_wr(ring, NPU_RING_BASE_HI, upper_32_bits(ring->dma));
	npu_ring_wr(ring, NPU_RING_SIZE, NPU_RING_BYTES);
	npu_ring_wr(ring, NPU_RING_TAIL, 0);
	npu_ring_wr(ring, NPU_RING_CONTROL, NPU_RING_CTL_ENABLE);
}

/**
 * npu_ring_fail_all() - retire every job on the ring with @error
 * @ring: ring, whose hardware is stopped or gone
 * @error: negative errno for the fences
 */
void npu_ring_fail_all(struct npu_ring *ring, int error)
{
	struct npu_job *job, *tmp;
	unsigned long flags;

	spin_lock_irqsave(&ring->lock, flags);
	list_for_each_entry_safe(job, tmp, &ring->pending, node)
		npu_ring_retire_job(ring, job, error);
	spin_unlock_irqrestore(&ring->lock, flags);
}

/**
 * npu_ring_reset() - recover a ring after a job timeout
 * @ring: ring whose scheduler is stopped (drm_sched_stop())
 * @bad: the job that timed out
 *
 * First clears ENABLE, so that the ring starts no further packet (the one
 * it is executing goes on), then reads FENCE. If @bad has completed after
 * all (between the timeout and now), the job behind it may be executing
 * already: a reset would abort it part-way, and running it again from its
 * start would repeat its side effects (semaphore signals, atomics). So
 * nothing is reset: finished jobs retire, ENABLE is set again and the ring
 * goes on where it stopped.
 *
 * Otherwise @bad is still on the ring and, with fetching stopped, nothing
 * behind it can have started: the ring is reset and its jobs are sorted by
 * the last seqno the device wrote. Jobs that finished retire as they would
 * have; @bad, unless it finished during the reset, retires with
 * -ETIMEDOUT; the jobs queued behind it are written to the reprogrammed
 * ring again, with the hardware fences they have. Nothing runs twice.
 * Finally every job on the scheduler's pending list gets its hardware
 * fence back as parent (which drm_sched_stop() dropped), for
 * drm_sched_start(). Once the device is gone, every job on the ring fails
 * with -ENODEV instead.
 *
 * Return: true if the device is gone.
 */
bool npu_ring_reset(struct npu_ring *ring, struct npu_job *bad)
{
	struct npu_device *ndev = ring->ndev;
	struct drm_sched_job *sched_job;
	struct npu_job *job, *tmp;
	unsigned long flags;
	bool hw;
	int idx;
	u32 seq;

	trace_npu_ring_reset(ring->index, bad ? bad->seqno : 0);
	dev_warn(ndev->drm.dev, "%s: job timeout, resetting the ring\n",
		 ring->name);

	spin_lock_irqsave(&ring->lock, flags);
	hw = drm_dev_enter(&ndev->drm, &idx);
	if (hw) {
		npu_ring_wr(ring, NPU_RING_CONTROL, 0);
		/* the register: the device sets it after the fence word */
		seq = npu_ring_rd(ring, NPU_RING_FENCE);
		if (bad && npu_seqno_passed(seq, bad->seqno)) {
			npu_ring_retire(ring);
			ring->stats_resets++;
			npu_ring_wr(ring, NPU_RING_CONTROL, NPU_RING_CTL_ENABLE);
			drm_dev_exit(idx);
			spin_unlock_irqrestore(&ring->lock, flags);
			goto reattach;
		}
		npu_ring_wr(ring, NPU_RING_CONTROL, NPU_RING_CTL_RESET);
		seq = READ_ONCE(*ring->fence_cpu);
	} else {
		/* removal freed the fence page and failed what was pending */
		seq = ring->completed;
	}
	list_for_each_entry_safe(job, tmp, &ring->pending, node) {
		if (npu_seqno_passed(seq, job->seqno)) {
			npu_ring_retire_job(ring, job, 0);
		} else if (job == bad) {
			npu_fault_record(bad->nfile, DRM_NPU_FAULT_TIMEOUT,
					 bad->queue_id, ring->index, 0, 0, 0,
					 NULL);
			npu_ring_retire_job(ring, job, -ETIMEDOUT);
		}
	}
	ring->stats_resets++;
	if (hw) {
		npu_ring_hw_program(ring);
		list_for_each_entry(job, &ring->pending, node)
			npu_ring_emit_job(ring, job);
		npu_ring_wr(ring, NPU_RING_TAIL, ring->tail);
		drm_dev_exit(idx);
	} else {
		list_for_each_entry_safe(job, tmp, &ring->pending, node)
			npu_ring_retire_job(ring, job, -ENODEV);
	}
	spin_unlock_irqrestore(&ring->lock, flags);

reattach:
	/* the scheduler is stopped: its pending list holds still */
	list_for_each_entry(sched_job, &ring->sched.pending_list, list) {
		job = to_npu_job(sched_job);
		if (!sched_job->s_fence->parent && job->hw_fence)
			sched_job->s_fence->parent = dma_fence_get(job->hw_fence);
	}
	return !hw;
}

/**
 * npu_rings_hw_start() - program and enable every ring
 * @ndev: device (registers mapped)
 */
void npu_rings_hw_start(struct npu_device *ndev)
{
	unsigned long flags;
	int r;

	for (r = 0; r < ndev->num_rings; r++) {
		struct npu_ring *ring = &ndev->rings[r];

		spin_lock_irqsave(&ring->lock, flags);
		npu_ring_hw_program(ring);
		spin_unlock_irqrestore(&ring->lock, flags);
	}
}

/**
 * npu_rings_hw_stop() - stop every ring (device removal)
 * @ndev: device (registers still mapped)
 */
void npu_rings_hw_stop(struct npu_device *ndev)
{
	int r;

	for (r = 0; r < ndev->num_rings; r++)
		npu_ring_wr(&ndev->rings[r], NPU_RING_CONTROL,
			    NPU_RING_CTL_RESET);
}

/**
 * npu_rings_init() - allocate the rings and start their schedulers
 * @ndev: device with num_rings known
 * @ops: the schedulers' backend (npu_job.c)
 *
 * Return: 0 or a negative errno.
 */
int npu_rings_init(struct npu_device *ndev,
		   const struct drm_sched_backend_ops *ops)
{
	struct device *dev = ndev->drm.dev;
	int r, ret;

	ndev->fence_page = dma_alloc_coherent(dev, PAGE_SIZE,
					      &ndev->fence_page_dma,
					      GFP_KERNEL);
	if (!ndev->fence_page)
		return -ENOMEM;

	/*
	 * Where the scheduler runs from a workqueue, give it one that is
	 * per-CPU and high-priority, shared by every ring: run_job then
	 * executes on the CPU that pushed the job, as soon as SUBMIT returns,
	 * and free_job on the CPU that took the interrupt. The scheduler's
	 * default (an unbound ordered queue per ring) wakes a worker on
	 * another CPU instead: an IPI and a wake-up from idle on the way from
	 * SUBMIT to the doorbell.
	 */
	if (NPU_SCHED_USES_WQ) {
		ndev->sched_wq = alloc_workqueue("npu-sched",
						 WQ_HIGHPRI | WQ_MEM_RECLAIM,
						 0);
		if (!ndev->sched_wq) {
			ret = -ENOMEM;
			goto err_wq;
		}
	}

	for (r = 0; r < ndev->num_rings; r++) {
		struct npu_ring *ring = &ndev->rings[r];
		struct drm_sched_init_args args = {
			.ops = ops,
			.credit_limit = NPU_RING_CREDITS,
			.hang_limit = 0,
			.timeout = msecs_to_jiffies(npu_job_timeout_ms),
			.name = ring->name,
			.dev = dev,
		};

		ring->ndev = ndev;
		ring->index = r;
		ring->kind = r < ndev->num_compute ? DRM_NPU_RING_KIND_COMPUTE :
						     DRM_NPU_RING_KIND_COPY;
		snprintf(ring->name, sizeof(ring->name), "npu-%s%u",
			 ring->kind == DRM_NPU_RING_KIND_COMPUTE ? "compute" :
								   "copy",
			 ring->kind == DRM_NPU_RING_KIND_COMPUTE ? r :
							r - ndev->num_compute);
		spin_lock_init(&ring->lock);
		spin_lock_init(&ring->fence_lock);
		INIT_LIST_HEAD(&ring->pending);
		ring->fence_context = dma_fence_context_alloc(1);
		ring->fence_cpu = ndev->fence_page + r * NPU_FENCE_SLOT;
		ring->fence_dma = ndev->fence_page_dma + r * NPU_FENCE_SLOT;
		ring->vaddr = dma_alloc_coherent(dev, NPU_RING_BYTES, &ring->dma,
						 GFP_KERNEL);
		if (!ring->vaddr) {
			ret = -ENOMEM;
			goto err;
		}
		npu_sched_init_args_fill(&args, ndev->sched_wq);
		ret = drm_sched_init(&ring->sched, &args);
		if (ret) {
			dma_free_coherent(dev, NPU_RING_BYTES, ring->vaddr,
					  ring->dma);
			ring->vaddr = NULL;
			goto err;
		}
	}
	ndev->scheds_ready = true;
	return 0;

err:
	while (r--) {
		struct npu_ring *ring = &ndev->rings[r];

		drm_sched_fini(&ring->sched);
		dma_free_coherent(dev, NPU_RING_BYTES, ring->vaddr, ring->dma);
		ring->vaddr = NULL;
	}
	if (ndev->sched_wq) {
		destroy_workqueue(ndev->sched_wq);
		ndev->sched_wq = NULL;
	}
err_wq:
	dma_free_coherent(dev, PAGE_SIZE, ndev->fence_page,
			  ndev->fence_page_dma);
	ndev->fence_page = NULL;
	return ret;
}

/**
 * npu_rings_hw_fini() - free the rings' DMA memory
 * @ndev: device, stopped and unplugged (device removal) or never
 *	registered (probe failure)
 *
 * Everything that touches the ring buffers or the fence page does so
 * inside drm_dev_enter(), or from the interrupt handlers, which are gone.
 */
void npu_rings_hw_fini(struct npu_device *ndev)
{
	struct device *dev = ndev->drm.dev;
	int r;

	for (r = 0; r < ndev->num_rings; r++) {
		struct npu_ring *ring = &ndev->rings[r];

		if (!ring->vaddr)
			continue;
		dma_free_coherent(dev, NPU_RING_BYTES, ring->vaddr, ring->dma);
		ring->vaddr = NULL;
	}
	if (ndev->fence_page)
		dma_free_coherent(dev, PAGE_SIZE, ndev->fence_page,
				  ndev->fence_page_dma);
	ndev->fence_page = NULL;
}

/**
 * npu_rings_fini() - stop the schedulers (last reference to the device)
 * @ndev: device; every file is closed, so no entity is left
 */
void npu_rings_fini(struct npu_device *ndev)
{
	int r;

	if (!ndev->scheds_ready)
		return;
	/* jobs still on their way out of the schedulers */
	wait_event_timeout(ndev->jobs_wq, !atomic_read(&ndev->jobs_alive),
			   msecs_to_jiffies(5000));
	for (r = 0; r < ndev->num_rings; r++)
		drm_sched_fini(&ndev->rings[r].sched);
	/* the schedulers' last free_job calls queued work */
	flush_work(&ndev->free_work);
	if (ndev->sched_wq) {
		destroy_workqueue(ndev->sched_wq);
		ndev->sched_wq = NULL;
	}
	npu_rings_hw_fini(ndev);
	ndev->scheds_ready = false;
}
