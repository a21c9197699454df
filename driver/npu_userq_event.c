// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_userq_event.c - what the kernel does for user queues after creation:
 * the device's event ring and its interrupt, USERQ_WAIT_MEM (sleeping until
 * a memory signal or a queue's rptr reaches a value), the fault record of
 * a halted queue, the progress watchdog, and USERQ_SIGNAL (a syncobj fence
 * for a queue position).
 *
 * Every event (SIGNAL, PROGRESS, HALT, OFF, and an overflow) wakes one
 * device-wide wait queue, &npu_device.uq_wq; each sleeper re-checks its own
 * condition. That is simpler than the spec's wait lists keyed by (context,
 * address) and as correct (a wake-up is never lost, since the condition is
 * re-read after arming); it costs spurious wake-ups when many processes
 * sleep at once.
 *
 * Locks: &npu_device.uq_event_lock (spinlock, taken in the interrupt
 * handler) protects the event ring's head and registers; the halt work and
 * the watchdog take &npu_device.uq_lock.
 */
#include <linux/highmem.h>
#include <linux/io.h>
#include <linux/pci.h>
#include <linux/sched/signal.h>
#include <linux/dma-fence-chain.h>
#include <drm/drm_drv.h>
#include <drm/drm_syncobj.h>
#include <drm/drm_utils.h>

#include "npu_mmu.h"
#include "npu_regs.h"
#include "npu_ring.h"
#include "npu_userq_desc.h"
#include "npu_userq_event.h"

/* Event ring: 4096 records of 16 bytes. */
#define NPU_UQ_EVENT_BYTES	SZ_64K
#define NPU_UQ_EVENT_REC	16

/* ---------------------------------------------------------------------- */
/* event ring and interrupt */

/**
 * npu_userq_events_init() - give the device its event ring
 * @ndev: device with a descriptor table, before the interrupts are
 *	requested
 *
 * Return: 0 or -ENOMEM.
 */
int npu_userq_events_init(struct npu_device *ndev)
{
	ndev->uq_events = dma_alloc_coherent(ndev->drm.dev, NPU_UQ_EVENT_BYTES,
					     &ndev->uq_events_dma, GFP_KERNEL);
	if (!ndev->uq_events)
		return -ENOMEM;
	ndev->uq_event_head = 0;
	npu_wr(ndev, NPU_REG_UQ_EVENT_BASE_LO,
	       lower_32_bits(ndev->uq_events_dma));
	npu_wr(ndev, NPU_REG_UQ_EVENT_BASE_HI,
	       upper_32_bits(ndev->uq_events_dma));
	/* also sets HEAD and TAIL to 0 */
	npu_wr(ndev, NPU_REG_UQ_EVENT_SIZE, NPU_UQ_EVENT_BYTES);
	return 0;
}

/**
 * npu_userq_events_fini() - free the event ring
 * @ndev: device, reset (no more DMA) and its interrupts freed, or never
 *	registered
 */
void npu_userq_events_fini(struct npu_device *ndev)
{
	if (ndev->uq_events)
		dma_free_coherent(ndev->drm.dev, NPU_UQ_EVENT_BYTES,
				  ndev->uq_events, ndev->uq_events_dma);
	ndev->uq_events = NULL;
}

/**
 * npu_userq_irq() - the user-queue event vector
 * @irq: irq number
 * @arg: &struct npu_device
 *
 * Consumes every record, wakes the sleepers of USERQ_WAIT_MEM and, for a
 * HALT (or an overflow, which may have dropped one), queues the work that
 * records halted queues in their files.
 *
 * Return: IRQ_HANDLED.
 */
irqreturn_t npu_userq_irq(int irq, void *arg)
{
	struct npu_device *ndev = arg;
	bool halt = false;
	u32 head, tail, sts;

	spin_lock(&ndev->uq_event_lock);
	head = ndev->uq_event_head;
	tail = npu_rd(ndev, NPU_REG_UQ_EVENT_TAIL);
	/* the records are written before TAIL moves */
	dma_rmb();
	/* a TAIL the ring cannot have would never be reached */
	if (tail >= NPU_UQ_EVENT_BYTES || (tail & (NPU_UQ_EVENT_REC - 1)))
		tail = head;
	while (head != tail) {
		const struct npu_uq_event *ev = ndev->uq_events + head;

		if (READ_ONCE(ev->kind) == NPU_UQ_EVENT_HALT)
			halt = true;
		head = (head + NPU_UQ_EVENT_REC) & (NPU_UQ_EVENT_BYTES - 1);
	}
	ndev->uq_event_head = head;
	npu_wr(ndev, NPU_REG_UQ_EVENT_HEAD, head);
	sts = npu_rd(ndev, NPU_REG_UQ_EVENT_STATUS);
	if (sts) {
		/* a dropped record: every queue may have halted */
		npu_wr(ndev, NPU_REG_UQ_EVENT_STATUS, sts);
		halt = true;
	}
	spin_unlock(&ndev->uq_event_lock);

	wake_up_all(&ndev->uq_wq);
	if (halt || !list_empty(&ndev->uq_fences))
		schedule_work(&ndev->uq_halt_work);
	return IRQ_HANDLED;
}

/**
 * npu_userq_halt_work() - record newly halted user queues in their files,
 *	and signal the USERQ_SIGNAL fences the queues have passed
 * @work: &npu_device.uq_halt_work
 *
 * GET_FAULT then reports the queue (kind DEVICE, ring 0xffffffff, the
 * cause, info and address from the descriptor), once per halt.
 */
void npu_userq_halt_work(struct work_struct *work)
{
	struct npu_device *ndev = container_of(work, struct npu_device,
					       uq_halt_work);
	struct npu_userq *uq;
	unsigned long index;
	int idx;

	if (!drm_dev_enter(&ndev->drm, &idx))
		return;
	mutex_lock(&ndev->uq_lock);
	xa_for_each(&ndev->uq_queues, index, uq) {
		u32 sts = npu_uqd_rd32(ndev, index, NPU_UQD_STATUS);

		struct drm_npu_get_fault where = {};

		if (!(sts & NPU_UQ_STS_HALTED) || uq->halt_seen)
			continue;
		uq->halt_seen = true;
		/* a compute-unit fault's place, as a kernel ring reports it */
		if (ndev->features & NPU_FEATURE_USER_CODE) {
			where.pc = npu_uqd_rd64(ndev, index, NPU_UQD_FAULT_PC);
			where.block = npu_uqd_rd32(ndev, index,
						   NPU_UQD_FAULT_BLOCK);
			where.thread = npu_uqd_rd32(ndev, index,
						    NPU_UQD_FAULT_THREAD);
			where.unit = npu_uqd_rd32(ndev, index,
						  NPU_UQD_FAULT_UNIT);
			where.entry = npu_uqd_rd64(ndev, index,
						   NPU_UQD_FAULT_ENTRY);
		}
		npu_fault_record(uq->nfile, DRM_NPU_FAULT_DEVICE, uq->id,
				 0xffffffff,
				 npu_uqd_rd32(ndev, index, NPU_UQD_ERROR),
				 npu_uqd_rd32(ndev, index, NPU_UQD_ERROR_INFO),
				 npu_uqd_rd64(ndev, index, NPU_UQD_FAULT),
				 &where);
	}
	npu_userq_fences_check(ndev);
	mutex_unlock(&ndev->uq_lock);
	drm_dev_exit(idx);
}

/* ---------------------------------------------------------------------- */
/* watchdog */

static unsigned long npu_userq_watchdog_period(void)
{
	return max(msecs_to_jiffies(READ_ONCE(npu_job_timeout_ms)) / 4, 1UL);
}

/**
 * npu_userq_watchdog_kick() - make sure the watchdog runs (a queue exists)
 * @ndev: device
 */
void npu_userq_watchdog_kick(struct npu_device *ndev)
{
	if (!delayed_work_pending(&ndev->uq_watchdog))
		schedule_delayed_work(&ndev->uq_watchdog,
				      npu_userq_watchdog_period());
}

/**
 * npu_userq_watchdog() - stop queues that run without progress
 * @work: &npu_device.uq_watchdog.work
 *
 * Each quarter of the job timeout, every mapped queue's rptr and cmds are
 * sampled from its descriptor. A queue that has been RUNNING (on an
 * engine, not waiting on memory) with neither moving for the job timeout of
 * host time is stopped (UQ_CMD STOP); its file's fault record gets kind
 * TIMEOUT and its waiters -ECANCELED. Other queues run on.
 */
void npu_userq_watchdog(struct work_struct *work)
{
	struct npu_device *ndev = container_of(to_delayed_work(work),
					       struct npu_device, uq_watchdog);
	unsigned long timeout = msecs_to_jiffies(READ_ONCE(npu_job_timeout_ms));
	struct npu_userq *uq;
	unsigned long index;
	bool stopped = false, any;
	int idx;

	if (!drm_dev_enter(&ndev->drm, &idx))
		return;
	mutex_lock(&ndev->uq_lock);
	xa_for_each(&ndev->uq_queues, index, uq) {
		u32 sts = npu_uqd_rd32(ndev, index, NPU_UQD_STATUS);
		u64 rptr = npu_uqd_rd64(ndev, index, NPU_UQD_RPTR);
		u64 cmds = npu_uqd_rd64(ndev, index, NPU_UQD_CMDS);

		bool running = (sts & NPU_UQ_STS_RUNNING) &&
			       !(sts & NPU_UQ_STS_HALTED);

		/* the clock starts at the first sample that sees it run */
		if (!running || !uq->wd_running || rptr != uq->wd_rptr ||
		    cmds != uq->wd_cmds) {
			uq->wd_running = running;
			uq->wd_rptr = rptr;
			uq->wd_cmds = cmds;
			uq->wd_since = jiffies;
			continue;
		}
		/* strictly after: a jiffy may have begun before the sample */
		if (!time_after(jiffies, uq->wd_since + timeout))
			continue;
		drm_warn(&ndev->drm,
			 "user queue %u (pid %d): no progress for %u ms, stopped\n",
			 uq->id, uq->ctx->pid, npu_job_timeout_ms);
		npu_uq_cmd(ndev, NPU_UQ_CMD_STOP, index);
		/* the HALT event of the STOP is this timeout, not a fault */
		uq->halt_seen = true;
		uq->wd_running = false;
		npu_fault_record(uq->nfile, DRM_NPU_FAULT_TIMEOUT, uq->id,
				 0xffffffff, NPU_ERR_STOPPED, 0, rptr, NULL);
		/* the fault is recorded before QUERY reports STOPPED */
		smp_store_release(&uq->stopped, true);
		stopped = true;
	}
	/* also the deadlines of the USERQ_SIGNAL fences */
	npu_userq_fences_check(ndev);
	any = !xa_empty(&ndev->uq_queues);
	mutex_unlock(&ndev->uq_lock);
	drm_dev_exit(idx);
	if (stopped)
		wake_up_all(&ndev->uq_wq);
	if (any)
		schedule_delayed_work(&ndev->uq_watchdog,
				      npu_userq_watchdog_period());
}

/* ---------------------------------------------------------------------- */
/* USERQ_WAIT_MEM */

/**
 * struct npu_wait_mem - one USERQ_WAIT_MEM sleeper
 * @ndev: device
 * @map: mapping holding the memory signal (referenced), NULL for an rptr
 *	wait
 * @off: offset of the signal in the mapped BO
 * @uq: queue whose stop ends the wait (referenced), or NULL
 * @value: value waited for
 */
struct npu_wait_mem {
	struct npu_device *ndev;
	struct npu_mapping *map;
	u64 off;
	struct npu_userq *uq;
	u64 value;
};

/*
 * Arming a memory signal: its armed count and wake_value change together
 * under this lock, for every device (an imported BO's signal can be armed
 * through two), so that wake_value stays at or below the value every
 * sleeper waits for: the first sleeper sets it, later ones lower it, and
 * one that leaves keeps it (a lower one only costs interrupts).
 */
static DEFINE_SPINLOCK(npu_signal_arm_lock);

/* Does a sleeper for @value set wake_value (@armed sleepers, @wake now)? */
static bool npu_signal_lowers_wake(u32 armed, u64 wake, u64 value)
{
	return !armed || wake > value;
}

/*
 * The signal's value, after adding @arm (1, -1 or 0: only read) to its
 * armed word; arming also lowers its wake_value to the value waited for.
 * Through the kernel's own mapping of the BO: system pages pinned for the
 * BO's life, or device memory through the BAR.
 */
static u64 npu_signal_access(struct npu_wait_mem *w, int arm)
{
	struct npu_bo *bo = w->map->bo;
	struct page **pages = NULL;
	u64 value = 0;

	if (bo->kind == NPU_BO_SHMEM)
		pages = bo->base.pages;
	else if (bo->kind == NPU_BO_USERPTR)
		pages = bo->pages;

	if (pages) {
		void *p = kmap_local_page(pages[w->off >> PAGE_SHIFT]);
		struct npu_signal *sig = p + offset_in_page(w->off);

		if (arm) {
			spin_lock(&npu_signal_arm_lock);
			if (arm > 0 &&
			    npu_signal_lowers_wake(READ_ONCE(sig->armed),
						   READ_ONCE(sig->wake_value),
						   w->value))
				WRITE_ONCE(sig->wake_value, w->value);
			WRITE_ONCE(sig->armed, READ_ONCE(sig->armed) + arm);
			spin_unlock(&npu_signal_arm_lock);
			/* armed is visible before value is read (the
			 * device's order: value, barrier, armed)
			 */
			npu_mb_device(w->ndev);
		}
		value = READ_ONCE(sig->value);
		kunmap_local(p);
	} else if (bo->kind == NPU_BO_DEVMEM) {
		void __iomem *sig = w->ndev->devmem_bar + bo->devmem.start +
				    w->off;
		void __iomem *armed = sig + offsetof(struct npu_signal, armed);
		void __iomem *wake = sig +
				     offsetof(struct npu_signal, wake_value);

		if (arm) {
			spin_lock(&npu_signal_arm_lock);
			if (arm > 0 &&
			    npu_signal_lowers_wake(readl(armed), readq(wake),
						   w->value))
				writeq(w->value, wake);
			writel(readl(armed) + arm, armed);
			spin_unlock(&npu_signal_arm_lock);
			npu_mb_device(w->ndev);	/* as above */
		}
		value = readq(sig);
	}
	return value;
}

/* 0: reached; -ECANCELED: queue stopped; -ENODEV; 1: not yet. */
static int npu_wait_mem_check(struct npu_wait_mem *w)
{
	struct npu_device *ndev = w->ndev;
	u64 now;
	int idx, ret = 1;

	if (!drm_dev_enter(&ndev->drm, &idx))
		return -ENODEV;
	if (w->map)
		now = npu_signal_access(w, 0);
	else
		now = npu_uqd_rd64(ndev, w->uq->index, NPU_UQD_RPTR);
	/* a destroyed queue's descriptor may be another queue's by now */
	smp_rmb();
	if (w->uq && READ_ONCE(w->uq->dead))
		ret = -ECANCELED;
	else if (now >= w->value)
		ret = 0;
	else if (w->uq && (READ_ONCE(w->uq->stopped) ||
			   (npu_uqd_rd32(ndev, w->uq->index, NPU_UQD_STATUS) &
			    NPU_UQ_STS_HALTED)))
		ret = -ECANCELED;
	drm_dev_exit(idx);
	return ret;
}

/* Ask for a PROGRESS event when @uq's rptr reaches @value. */
static void npu_wait_mem_arm_rptr(struct npu_device *ndev,
				  struct npu_userq *uq, u64 value)
{
	u64 cur, rptr;
	int idx;

	mutex_lock(&ndev->uq_lock);
	if (!READ_ONCE(uq->dead) && drm_dev_enter(&ndev->drm, &idx)) {
		cur = npu_uqd_rd64(ndev, uq->index, NPU_UQD_IRQ_RPTR);
		rptr = npu_uqd_rd64(ndev, uq->index, NPU_UQD_RPTR);
		/* keep an earlier request that is still ahead */
		if (!cur || cur <= rptr || value < cur)
			npu_uqd_wr64(ndev, uq->index, NPU_UQD_IRQ_RPTR, value);
		/* the device writes rptr, then reads irq_rptr */
		npu_mb_device(ndev);
		drm_dev_exit(idx);
	}
	mutex_unlock(&ndev->uq_lock);
}

static int npu_wait_mem_lookup(struct npu_file *nfile,
			       const struct drm_npu_userq_wait_mem *args,
			       struct npu_wait_mem *w)
{
	struct npu_ctx *ctx;
	int ret = 0;

	mutex_lock(&nfile->vm_lock);
	if (args->queue_id) {
		w->uq = xa_load(&nfile->userqs, args->queue_id);
		if (!w->uq) {
			ret = -ENOENT;
			goto out;
		}
		kref_get(&w->uq->ref);
	}
	if (args->flags & DRM_NPU_WAIT_MEM_RPTR)
		goto out;
	ctx = npu_file_ctx_lookup(nfile, args->ctx_id);
	if (!ctx) {
		ret = -ENOENT;
		goto out;
	}
	w->map = npu_ctx_find_va(ctx, args->addr, sizeof(struct npu_signal));
	if (!w->map)
		ret = -ENOENT;
	else if (!(npu_ctx_va_pte(ctx, args->addr) & NPU_PTE_WRITE))
		ret = -EACCES;
	else if (w->map->bo->kind == NPU_BO_IMPORT)
		ret = -EINVAL;	/* no kernel mapping of another device's */
	else
		w->off = args->addr - w->map->node.start;
	npu_ctx_put(ctx);
out:
	mutex_unlock(&nfile->vm_lock);
	return ret;
}

/**
 * npu_ioctl_userq_wait_mem() - DRM_IOCTL_NPU_USERQ_WAIT_MEM
 * @dev: DRM device
 * @data: &struct drm_npu_userq_wait_mem
 * @file: DRM file
 *
 * Return: 0, -ETIME, -ERESTARTSYS, -ECANCELED or another negative errno.
 */
int npu_ioctl_userq_wait_mem(struct drm_device *dev, void *data,
			     struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(dev);
	struct drm_npu_userq_wait_mem *args = data;
	struct npu_wait_mem w = { .ndev = ndev, .value = args->value };
	bool rptr = args->flags & DRM_NPU_WAIT_MEM_RPTR;
	long left;
	int ret, idx;

	if (args->pad || (args->flags & ~DRM_NPU_WAIT_MEM_RPTR))
		return -EINVAL;
	if (rptr ? args->addr || !args->queue_id :
	    !IS_ALIGNED(args->addr, NPU_SIGNAL_ALIGN) || !args->addr)
		return -EINVAL;
	if (!ndev->uq_entries)
		return -ENODEV;
	ret = npu_wait_mem_lookup(file->driver_priv, args, &w);
	if (ret)
		goto out;

	/* arm, then re-read: the device either sees armed or we the value */
	if (rptr) {
		npu_wait_mem_arm_rptr(ndev, w.uq, args->value);
	} else {
		if (!drm_dev_enter(dev, &idx)) {
			ret = -ENODEV;
			goto out;
		}
		npu_signal_access(&w, 1);
		drm_dev_exit(idx);
	}
	left = drm_timeout_abs_to_jiffies(args->timeout_ns);
	left = wait_event_interruptible_timeout(ndev->uq_wq,
						npu_wait_mem_check(&w) <= 0,
						left);
	ret = npu_wait_mem_check(&w);
	if (ret > 0)
		ret = left < 0 ? left : -ETIME;
	if (!rptr && drm_dev_enter(dev, &idx)) {
		npu_signal_access(&w, -1);
		drm_dev_exit(idx);
	}
out:
	npu_mapping_put(w.map);
	if (w.uq)
		npu_userq_put(w.uq);
	return ret;
}

/* ---------------------------------------------------------------------- */
/* USERQ_SIGNAL: a dma_fence for a position of a user queue */

/**
 * struct npu_uq_fence - fence that signals when a queue's rptr passes @wptr
 * @base: dma fence (context: the queue, lock: &npu_device.uq_fence_lock)
 * @link: entry in &npu_device.uq_fences while pending
 * @index: descriptor index of the queue
 * @uq: the queue (not referenced: the queue signals its fences before it
 *	is freed)
 * @wptr: position
 * @deadline: jiffies after which it signals -ETIMEDOUT in any case
 */
struct npu_uq_fence {
	struct dma_fence base;
	struct list_head link;
	u32 index;
	struct npu_userq *uq;
	u64 wptr;
	unsigned long deadline;
};

static const char *npu_uq_fence_driver_name(struct dma_fence *f)
{
	return "npu";
}

static const char *npu_uq_fence_timeline_name(struct dma_fence *f)
{
	return "userq";
}

static const struct dma_fence_ops npu_uq_fence_ops = {
	.get_driver_name = npu_uq_fence_driver_name,
	.get_timeline_name = npu_uq_fence_timeline_name,
};

/* Signal @f with @error (0: done) and drop the list's reference. */
static void npu_uq_fence_done(struct npu_device *ndev, struct npu_uq_fence *f,
			      int error)
{
	lockdep_assert_held(&ndev->uq_fence_lock);

	list_del(&f->link);
	if (error)
		dma_fence_set_error(&f->base, error);
	dma_fence_signal_locked(&f->base);
	dma_fence_put(&f->base);
}

/**
 * npu_userq_fences_cancel() - fail every pending fence of a queue
 * @ndev: device
 * @uq: queue being destroyed, or NULL for every queue (removal)
 * @error: -ECANCELED, or -ENODEV
 */
void npu_userq_fences_cancel(struct npu_device *ndev, struct npu_userq *uq,
			     int error)
{
	struct npu_uq_fence *f, *tmp;
	unsigned long flags;

	spin_lock_irqsave(&ndev->uq_fence_lock, flags);
	list_for_each_entry_safe(f, tmp, &ndev->uq_fences, link)
		if (!uq || f->uq == uq)
			npu_uq_fence_done(ndev, f, error);
	spin_unlock_irqrestore(&ndev->uq_fence_lock, flags);
}

/**
 * npu_userq_fences_check() - signal the fences whose position was passed,
 *	fail those of halted queues and those past their deadline, and ask
 *	for a PROGRESS event at the next pending position of each queue
 * @ndev: device, inside drm_dev_enter(), &npu_device.uq_lock held (so the
 *	queues of the fences are mapped)
 */
void npu_userq_fences_check(struct npu_device *ndev)
{
	struct npu_uq_fence *f, *tmp;
	unsigned long flags;
	bool again;

	lockdep_assert_held(&ndev->uq_lock);
	do {
		again = false;
		spin_lock_irqsave(&ndev->uq_fence_lock, flags);
		list_for_each_entry_safe(f, tmp, &ndev->uq_fences, link) {
			u32 sts = npu_uqd_rd32(ndev, f->index, NPU_UQD_STATUS);
			u64 rptr = npu_uqd_rd64(ndev, f->index, NPU_UQD_RPTR);
			u64 irq;

			if (rptr >= f->wptr) {
				npu_uq_fence_done(ndev, f, 0);
			} else if (READ_ONCE(f->uq->stopped)) {
				npu_uq_fence_done(ndev, f, -ETIMEDOUT);
			} else if (sts & NPU_UQ_STS_HALTED) {
				npu_uq_fence_done(ndev, f, -EFAULT);
			} else if (time_after(jiffies, f->deadline)) {
				npu_uq_fence_done(ndev, f, -ETIMEDOUT);
			} else {
				irq = npu_uqd_rd64(ndev, f->index,
						   NPU_UQD_IRQ_RPTR);
				if (!irq || irq <= rptr || f->wptr < irq) {
					npu_uqd_wr64(ndev, f->index,
						     NPU_UQD_IRQ_RPTR, f->wptr);
					/* then re-read rptr: no crossing lost */
					npu_mb_device(ndev);
					again = true;
				}
			}
		}
		spin_unlock_irqrestore(&ndev->uq_fence_lock, flags);
	} while (again);
}

/**
 * npu_ioctl_userq_signal() - DRM_IOCTL_NPU_USERQ_SIGNAL
 * @dev: DRM device
 * @data: &struct drm_npu_userq_signal
 * @file: DRM file
 *
 * Return: 0 or a negative errno.
 */
int npu_ioctl_userq_signal(struct drm_device *dev, void *data,
			   struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(dev);
	struct npu_file *nfile = file->driver_priv;
	struct drm_npu_userq_signal *args = data;
	struct dma_fence_chain *chain = NULL;
	struct drm_syncobj *syncobj;
	struct npu_uq_fence *f;
	struct npu_userq *uq;
	unsigned long flags;
	u64 cur;
	int idx, ret = 0;

	if (args->flags || args->pad)
		return -EINVAL;
	syncobj = drm_syncobj_find(file, args->handle);
	if (!syncobj)
		return -ENOENT;
	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (args->point)
		chain = dma_fence_chain_alloc();
	if (!f || (args->point && !chain)) {
		ret = -ENOMEM;
		goto out_free;
	}

	mutex_lock(&nfile->vm_lock);
	uq = xa_load(&nfile->userqs, args->queue_id);
	if (!uq) {
		ret = -ENOENT;
		goto out_unlock;
	}
	if (!drm_dev_enter(dev, &idx)) {
		ret = -ENODEV;
		goto out_unlock;
	}
	mutex_lock(&ndev->uq_lock);
	cur = npu_uqd_rd64(ndev, uq->index, NPU_UQD_WPTR);
	if (READ_ONCE(uq->stopped) ||
	    (npu_uqd_rd32(ndev, uq->index, NPU_UQD_STATUS) &
	     NPU_UQ_STS_HALTED))
		ret = -ECANCELED;
	else if (args->wptr > cur)
		ret = -EINVAL;
	if (!ret) {
		f->index = uq->index;
		f->uq = uq;
		f->wptr = args->wptr ?: cur;
		f->deadline = jiffies +
			      msecs_to_jiffies(READ_ONCE(npu_job_timeout_ms));
		dma_fence_init(&f->base, &npu_uq_fence_ops,
			       &ndev->uq_fence_lock, uq->fence_context,
			       ++uq->fence_seqno);
		/* one reference for the list, one for the syncobj */
		dma_fence_get(&f->base);
		spin_lock_irqsave(&ndev->uq_fence_lock, flags);
		list_add_tail(&f->link, &ndev->uq_fences);
		spin_unlock_irqrestore(&ndev->uq_fence_lock, flags);
		npu_userq_fences_check(ndev);
	}
	mutex_unlock(&ndev->uq_lock);
	drm_dev_exit(idx);
	mutex_unlock(&nfile->vm_lock);
	if (ret)
		goto out_free;

	npu_userq_watchdog_kick(ndev);	/* deadlines are checked there */
	if (chain)
		drm_syncobj_add_point(syncobj, chain, &f->base, args->point);
	else
		drm_syncobj_replace_fence(syncobj, &f->base);
	dma_fence_put(&f->base);
	drm_syncobj_put(syncobj);
	return 0;

out_unlock:
	mutex_unlock(&nfile->vm_lock);
out_free:
	dma_fence_chain_free(chain);
	kfree(f);
	drm_syncobj_put(syncobj);
	return ret;
}

/* ---------------------------------------------------------------------- */
/* USERQ_WAIT: a queue's wait counter released by syncobj fences */

/**
 * struct npu_uq_waiter - one USERQ_WAIT request
 * @link: entry in &npu_device.uq_waits until its value is written
 * @ndev: device
 * @uq: the queue (referenced: a request outlives a destroyed queue until
 *	its fences signal, as dma-fences do in bounded time)
 * @value: the wait-counter value it releases
 * @pending: fences not yet signalled, plus one while being set up
 * @n: entries in @cbs
 * @cbs: one callback per fence
 */
struct npu_uq_waiter {
	struct list_head link;
	struct npu_device *ndev;
	struct npu_userq *uq;
	u64 value;
	atomic_t pending;
	u32 n;
	struct npu_uq_wait_cb {
		struct dma_fence_cb cb;
		struct dma_fence *fence;
		struct npu_uq_waiter *w;
	} cbs[];
};

static void npu_uq_waiter_arrive(struct npu_uq_waiter *w)
{
	if (atomic_dec_and_test(&w->pending))
		schedule_work(&w->ndev->uq_wait_work);
}

static void npu_uq_wait_fence_cb(struct dma_fence *f, struct dma_fence_cb *cb)
{
	/* an error still releases the wait (the spec's open question) */
	npu_uq_waiter_arrive(container_of(cb, struct npu_uq_wait_cb, cb)->w);
}

static void npu_uq_waiter_free(struct npu_uq_waiter *w)
{
	u32 i;

	for (i = 0; i < w->n; i++)
		dma_fence_put(w->cbs[i].fence);
	npu_userq_put(w->uq);
	kfree(w);
}

/**
 * npu_userq_wait_work() - write the wait counters of completed USERQ_WAITs
 *	and kick their queues
 * @work: &npu_device.uq_wait_work
 *
 * In request order per queue: a completed request waits for the earlier
 * ones of its queue, so the counter only grows.
 */
void npu_userq_wait_work(struct work_struct *work)
{
	struct npu_device *ndev = container_of(work, struct npu_device,
					       uq_wait_work);
	struct npu_uq_waiter *w, *tmp;
	LIST_HEAD(done);
	int idx;
	bool dev;

	dev = drm_dev_enter(&ndev->drm, &idx);
	mutex_lock(&ndev->uq_lock);
	spin_lock_irq(&ndev->uq_fence_lock);
	list_for_each_entry(w, &ndev->uq_waits, link)
		w->uq->wait_blocked = false;
	list_for_each_entry_safe(w, tmp, &ndev->uq_waits, link) {
		if (w->uq->wait_blocked || atomic_read(&w->pending)) {
			w->uq->wait_blocked = true;
			continue;
		}
		list_move_tail(&w->link, &done);
		if (READ_ONCE(w->uq->dead))
			continue;
		npu_wait_counter_write(w->uq, w->value);
		if (dev) {
			/* the counter is in memory before the queue looks */
			wmb();
			npu_uq_cmd(ndev, NPU_UQ_CMD_KICK, w->uq->index);
		}
	}
	spin_unlock_irq(&ndev->uq_fence_lock);
	mutex_unlock(&ndev->uq_lock);
	if (dev)
		drm_dev_exit(idx);
	list_for_each_entry_safe(w, tmp, &done, link)
		npu_uq_waiter_free(w);
}

/**
 * npu_ioctl_userq_wait() - DRM_IOCTL_NPU_USERQ_WAIT
 * @dev: DRM device
 * @data: &struct drm_npu_userq_wait
 * @file: DRM file
 *
 * Return: 0 or a negative errno.
 */
int npu_ioctl_userq_wait(struct drm_device *dev, void *data,
			 struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(dev);
	struct npu_file *nfile = file->driver_priv;
	struct drm_npu_userq_wait *args = data;
	u32 stride = args->sync_stride ?: NPU_SYNC_SIZE_V1;
	struct npu_uq_waiter *w;
	struct npu_userq *uq;
	unsigned long flags;
	u32 i;
	int ret = 0;

	if (args->flags || !args->count || args->count > NPU_MAX_JOB_SYNCS ||
	    stride < NPU_SYNC_SIZE_V1 || stride > NPU_MAX_STRIDE)
		return -EINVAL;
	w = kzalloc(struct_size(w, cbs, args->count), GFP_KERNEL);
	if (!w)
		return -ENOMEM;
	w->ndev = ndev;
	for (i = 0; i < args->count; i++) {
		struct drm_npu_sync s;
		void __user *p = u64_to_user_ptr(args->syncs) +
				 (size_t)i * stride;

		if (copy_from_user(&s, p, sizeof(s))) {
			ret = -EFAULT;
			goto err;
		}
		if (s.flags) {
			ret = -EINVAL;
			goto err;
		}
		/* -EINVAL for a point not yet submitted, as SUBMIT */
		ret = drm_syncobj_find_fence(file, s.handle, s.point, 0,
					     &w->cbs[i].fence);
		if (ret)
			goto err;
		w->n = i + 1;
	}

	mutex_lock(&nfile->vm_lock);
	uq = xa_load(&nfile->userqs, args->queue_id);
	if (!uq) {
		mutex_unlock(&nfile->vm_lock);
		ret = -ENOENT;
		goto err;
	}
	kref_get(&uq->ref);
	w->uq = uq;
	w->value = ++uq->wait_next;
	atomic_set(&w->pending, w->n + 1);
	spin_lock_irqsave(&ndev->uq_fence_lock, flags);
	list_add_tail(&w->link, &ndev->uq_waits);
	spin_unlock_irqrestore(&ndev->uq_fence_lock, flags);
	mutex_unlock(&nfile->vm_lock);

	args->value = w->value;
	for (i = 0; i < w->n; i++) {
		w->cbs[i].w = w;
		if (dma_fence_add_callback(w->cbs[i].fence, &w->cbs[i].cb,
					   npu_uq_wait_fence_cb))
			npu_uq_waiter_arrive(w);	/* already signalled */
	}
	npu_uq_waiter_arrive(w);
	return 0;

err:
	for (i = 0; i < w->n; i++)
		dma_fence_put(w->cbs[i].fence);
	kfree(w);
	return ret;
}

/**
 * npu_userq_waits_fini() - drop the USERQ_WAIT requests still pending
 * @ndev: device whose last reference goes: every file is closed, so no
 *	request is added and every queue is dead
 */
void npu_userq_waits_fini(struct npu_device *ndev)
{
	struct npu_uq_waiter *w, *tmp;
	u32 i;

	cancel_work_sync(&ndev->uq_wait_work);
	/* the fences' callbacks may still run, and only queue the work */
	list_for_each_entry(w, &ndev->uq_waits, link)
		for (i = 0; i < w->n; i++)
			dma_fence_remove_callback(w->cbs[i].fence,
						  &w->cbs[i].cb);
	cancel_work_sync(&ndev->uq_wait_work);
	list_for_each_entry_safe(w, tmp, &ndev->uq_waits, link) {
		list_del(&w->link);
		npu_uq_waiter_free(w);
	}
}
