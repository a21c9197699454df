// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_job.c - queues (scheduler entities), SUBMIT and the scheduler
 * backend.
 *
 * SUBMIT takes an array of jobs. Under the file's submit_lock every job is
 * first validated and initialised with its dependencies, in array order;
 * only when all of them are ready is each one armed, pushed and its
 * out-syncs installed (arm and push of a job are never separated by another
 * arm, which load-balanced entities require). A job that depends on an
 * earlier job of the same array waits on a proxy fence that the earlier
 * job's finished fence signals once that job is pushed. Before the push,
 * the reservation objects of every BO the jobs use are locked together and
 * a fence slot is reserved for each job that uses them; each job's finished
 * fence is added to them between its arm and its push. On any error all
 * prepared jobs are cleaned up: nothing is queued, nothing is signalled.
 */
#include <linux/capability.h>
#include <linux/delay.h>
#include <linux/dma-fence-chain.h>
#include <linux/dma-resv.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/uaccess.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_syncobj.h>

#include "npu_gem.h"
#include "npu_job.h"
#include "npu_mmu.h"
#include "npu_ring.h"
#include "npu_trace.h"

/* ---------------------------------------------------------------------- */
/* files */

static void npu_file_release(struct kref *ref)
{
	struct npu_file *nfile = container_of(ref, struct npu_file, ref);

	npu_ctx_put(nfile->ctx);
	mutex_destroy(&nfile->vm_lock);
	mutex_destroy(&nfile->submit_lock);
	kfree(nfile);
}

/**
 * npu_file_put() - drop a reference to a file's driver state
 * @nfile: file state
 */
void npu_file_put(struct npu_file *nfile)
{
	kref_put(&nfile->ref, npu_file_release);
}

/* ---------------------------------------------------------------------- */
/* queues */

static void npu_queue_release(struct kref *ref)
{
	struct npu_queue *q = container_of(ref, struct npu_queue, ref);

	/* waits for queued jobs to reach the ring, kills the rest */
	drm_sched_entity_destroy(&q->entity);
	/*
	 * The scheduler thread may still be between popping our last job and
	 * completing entity_idle, and would touch the freed entity. 6.1's
	 * drm_sched_entity_fini() waits for that only when it finds jobs to
	 * kill, and its wait consumes the completion (complete(), not
	 * complete_all()): waiting again would never return. Its kills mark
	 * the last job -ESRCH. Kernels with complete_all() return at once.
	 */
	if (!q->last_pushed || READ_ONCE(q->last_pushed->error) != -ESRCH)
		wait_for_completion(&q->entity.entity_idle);
	dma_fence_put(q->last_pushed);
	atomic_dec(&q->ctx->queues);
	npu_ctx_put(q->ctx);
	kfree(q);
}

static void npu_queue_put(struct npu_queue *q)
{
	kref_put(&q->ref, npu_queue_release);
}

static struct npu_queue *npu_queue_lookup(struct npu_file *nfile, u32 id)
{
	struct npu_queue *q;

	xa_lock(&nfile->queues);
	q = xa_load(&nfile->queues, id);
	if (q && !kref_get_unless_zero(&q->ref))
		q = NULL;
	xa_unlock(&nfile->queues);
	return q;
}

static const enum drm_sched_priority npu_prio_map[] = {
	[DRM_NPU_PRIORITY_LOW] = NPU_SCHED_PRIORITY_LOW,
	[DRM_NPU_PRIORITY_NORMAL] = DRM_SCHED_PRIORITY_NORMAL,
	[DRM_NPU_PRIORITY_HIGH] = DRM_SCHED_PRIORITY_HIGH,
};

/**
 * npu_ioctl_queue_create() - DRM_IOCTL_NPU_QUEUE_CREATE
 * @dev: DRM device
 * @data: &struct drm_npu_queue_create
 * @file: DRM file
 *
 * Return: 0 or a negative errno.
 */
int npu_ioctl_queue_create(struct drm_device *dev, void *data,
			   struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(dev);
	struct npu_file *nfile = file->driver_priv;
	struct drm_npu_queue_create *args = data;
	struct drm_gpu_scheduler **list;
	struct drm_gpu_scheduler *one;
	u32 first, count, id;
	struct npu_queue *q;
	int ret;

	if (args->kind == DRM_NPU_RING_KIND_COMPUTE) {
		first = 0;
		count = ndev->num_compute;
		list = ndev->sched_lists[DRM_NPU_RING_KIND_COMPUTE];
	} else if (args->kind == DRM_NPU_RING_KIND_COPY) {
		first = ndev->num_compute;
		count = ndev->num_copy;
		list = ndev->sched_lists[DRM_NPU_RING_KIND_COPY];
	} else {
		return -EINVAL;
	}
	if (args->priority > DRM_NPU_PRIORITY_HIGH || args->queue_id ||
	    args->pad)
		return -EINVAL;
	/* drm_sched serves higher run queues first: others could starve */
	if (args->priority == DRM_NPU_PRIORITY_HIGH && !capable(CAP_SYS_NICE))
		return -EACCES;
	if (!count)
		return -ENODEV;
	if (args->ring != DRM_NPU_RING_ANY && args->ring >= count)
		return -EINVAL;

	q = kzalloc(sizeof(*q), GFP_KERNEL);
	if (!q)
		return -ENOMEM;
	kref_init(&q->ref);
	q->kind = args->kind;
	q->priority = args->priority;
	q->ring = args->ring;
	if (args->ring == DRM_NPU_RING_ANY) {
		ret = drm_sched_entity_init(&q->entity,
					    npu_prio_map[args->priority],
					    list, count, NULL);
	} else {
		one = &ndev->rings[first + args->ring].sched;
		ret = drm_sched_entity_init(&q->entity,
					    npu_prio_map[args->priority],
					    &one, 1, NULL);
	}
	if (ret) {
		kfree(q);
		return ret;
	}

	/* vm_lock: CTX_DESTROY must see the queue counted or the id gone */
	mutex_lock(&nfile->vm_lock);
	q->ctx = npu_file_ctx_lookup(nfile, args->ctx_id);
	if (q->ctx)
		atomic_inc(&q->ctx->queues);
	mutex_unlock(&nfile->vm_lock);
	if (!q->ctx) {
		drm_sched_entity_destroy(&q->entity);
		kfree(q);
		return -ENOENT;
	}

	ret = xa_alloc(&nfile->queues, &id, q, XA_LIMIT(1, NPU_MAX_QUEUES),
		       GFP_KERNEL);
	if (ret) {
		npu_queue_put(q);
		return ret == -EBUSY ? -ENOSPC : ret;
	}
	q->id = id;
	args->queue_id = id;
	return 0;
}

/**
 * npu_ioctl_queue_destroy() - DRM_IOCTL_NPU_QUEUE_DESTROY
 * @dev: DRM device
 * @data: &struct drm_npu_queue_destroy
 * @file: DRM file
 *
 * Jobs already submitted to the queue still run.
 *
 * Return: 0 or a negative errno.
 */
int npu_ioctl_queue_destroy(struct drm_device *dev, void *data,
			    struct drm_file *file)
{
	struct npu_file *nfile = file->driver_priv;
	struct drm_npu_queue_destroy *args = data;
	struct npu_queue *q;

	if (args->pad)
		return -EINVAL;
	q = xa_erase(&nfile->queues, args->queue_id);
	if (!q)
		return -ENOENT;
	npu_queue_put(q);
	return 0;
}

/**
 * npu_queues_destroy() - destroy every queue of a closing file
 * @nfile: file state
 */
void npu_queues_destroy(struct npu_file *nfile)
{
	struct npu_queue *q;
	unsigned long id;

	xa_for_each(&nfile->queues, id, q) {
		xa_erase(&nfile->queues, id);
		npu_queue_put(q);
	}
	xa_destroy(&nfile->queues);
}

/* ---------------------------------------------------------------------- */
/* jobs */

static void npu_job_release(struct npu_job *job)
{
	struct npu_device *ndev = job->ndev;

	npu_ctx_untrack_job(job->ctx, job);
	dma_fence_put(job->hw_fence);
	kfree(job->spare_fence);
	npu_ctx_put(job->ctx);
	npu_file_put(job->nfile);
	kfree(job);
	atomic_dec(&ndev->jobs_alive);
	wake_up_all(&ndev->jobs_wq);
}

static struct dma_fence *npu_sched_run_job(struct drm_sched_job *sched_job)
{
	struct npu_ring *ring = container_of(sched_job->sched, struct npu_ring,
					     sched);
	struct npu_job *job = to_npu_job(sched_job);
	int error = sched_job->s_fence->finished.error;
	struct dma_fence *fence;
	bool cookie;

	if (error)		/* its queue was killed: the scheduler ends it */
		return ERR_PTR(error);
	/* lockdep: nothing here may wait for a fence or allocate with reclaim */
	cookie = dma_fence_begin_signalling();
	fence = npu_ring_run(ring, job);
	dma_fence_end_signalling(cookie);
	return fence;
}

static enum drm_gpu_sched_stat
npu_sched_timedout_job(struct drm_sched_job *sched_job)
{
	struct npu_ring *ring = container_of(sched_job->sched, struct npu_ring,
					     sched);
	struct npu_job *job = to_npu_job(sched_job);
	bool unplugged;
	bool cookie;

	/* the jobs on the ring wait for this reset: it signals fences */
	cookie = dma_fence_begin_signalling();
	drm_sched_stop(&ring->sched, sched_job);
	/* debugfs test knob: lets a job complete in this window */
	if (ring->ndev->reset_delay_ms)
		msleep(ring->ndev->reset_delay_ms);
	unplugged = npu_ring_reset(ring, job);
	npu_sched_start(&ring->sched);
	dma_fence_end_signalling(cookie);
	return unplugged ? DRM_GPU_SCHED_STAT_ENODEV :
			   DRM_GPU_SCHED_STAT_NOMINAL;
}

/**
 * npu_jobs_free_work() - release the jobs the scheduler freed
 * @work: &npu_device.free_work
 */
void npu_jobs_free_work(struct work_struct *work)
{
	struct npu_device *ndev = container_of(work, struct npu_device,
					       free_work);
	struct llist_node *list = llist_del_all(&ndev->free_jobs);
	struct npu_job *job, *tmp;

	list = llist_reverse_order(list);
	llist_for_each_entry_safe(job, tmp, list, free_node)
		npu_job_release(job);
}

/*
 * Releasing a job can unmap and free its buffers (ctx->lock, a wait for the
 * TLB invalidation, reservation locks). Where the scheduler frees jobs on
 * the thread that also runs them (6.1), that would hold up the fences of
 * every later job of the ring, and a lock holder waiting on one of them in
 * reclaim would deadlock: the release runs in a worker instead.
 */
static void npu_sched_free_job(struct drm_sched_job *sched_job)
{
	struct npu_job *job = to_npu_job(sched_job);
	struct npu_device *ndev = job->ndev;

	drm_sched_job_cleanup(sched_job);
	if (llist_add(&job->free_node, &ndev->free_jobs))
		queue_work(system_wq, &ndev->free_work);
}

const struct drm_sched_backend_ops npu_sched_ops = {
	.run_job = npu_sched_run_job,
	.timedout_job = npu_sched_timedout_job,
	.free_job = npu_sched_free_job,
};

/*
 * Proxy fence: stands for the finished fence of an earlier job of the same
 * SUBMIT, which does not exist before that job is armed.
 */
struct npu_proxy {
	struct dma_fence base;
	spinlock_t lock;	/* of @base */
	struct dma_fence_cb cb;
};

static const char *npu_proxy_driver_name(struct dma_fence *f)
{
	return NPU_DRIVER_NAME;
}

static const char *npu_proxy_timeline_name(struct dma_fence *f)
{
	return "npu-submit";
}

static const struct dma_fence_ops npu_proxy_ops = {
	.get_driver_name = npu_proxy_driver_name,
	.get_timeline_name = npu_proxy_timeline_name,
};

static struct npu_proxy *npu_proxy_create(void)
{
	struct npu_proxy *px = kzalloc(sizeof(*px), GFP_KERNEL);

	if (!px)
		return NULL;
	spin_lock_init(&px->lock);
	dma_fence_init(&px->base, &npu_proxy_ops, &px->lock,
		       dma_fence_context_alloc(1), 1);
	return px;
}

static void npu_proxy_signal(struct dma_fence *f, struct dma_fence_cb *cb)
{
	struct npu_proxy *px = container_of(cb, struct npu_proxy, cb);

	if (f->error)
		dma_fence_set_error(&px->base, f->error);
	dma_fence_signal(&px->base);
	dma_fence_put(&px->base);	/* the callback's reference */
}

/* Make @px follow @done (infallible). */
static void npu_proxy_attach(struct npu_proxy *px, struct dma_fence *done)
{
	dma_fence_get(&px->base);
	if (dma_fence_add_callback(done, &px->cb, npu_proxy_signal))
		npu_proxy_signal(done, &px->cb);	/* already signalled */
}

/* An out-sync prepared by the validation pass. */
struct npu_out_sync {
	struct drm_syncobj *syncobj;
	struct dma_fence_chain *chain;
	u32 handle;
	u64 point;
};

/* Per-job state of one SUBMIT while it is being prepared. */
struct npu_pending {
	struct npu_job *job;
	struct npu_queue *queue;
	struct npu_out_sync *outs;
	struct npu_proxy *proxy;
	u32 nouts;
	bool inited;
};

/* Bytes between the entries of a job's arrays (0: the first version's). */
static u32 npu_sync_stride(const struct drm_npu_job *desc)
{
	return desc->sync_stride ?: sizeof(struct drm_npu_sync);
}

static u32 npu_bo_handle_stride(const struct drm_npu_job *desc)
{
	return desc->bo_handle_stride ?: sizeof(u32);
}

/* Entry @i of a user array of structs @stride bytes apart. */
static int npu_copy_entry(void *dst, size_t size, u64 array, u32 i,
			  u32 stride)
{
	int ret = copy_struct_from_user(dst, size,
					u64_to_user_ptr(array) +
					(size_t)i * stride, stride);

	return ret == -E2BIG ? -EINVAL : ret;
}

static int npu_job_add_maps(struct npu_job *job, struct drm_file *file,
			    const struct drm_npu_job *desc)
{
	u32 n = desc->bo_count + (desc->cmd_size ? 1 : 0);
	u32 stride = npu_bo_handle_stride(desc);
	u32 i, handle;
	int ret;

	if (!n)
		return 0;
	job->maps = kvcalloc(n, sizeof(*job->maps), GFP_KERNEL);
	if (!job->maps)
		return -ENOMEM;

	if (desc->cmd_size) {
		job->maps[0] = npu_ctx_find_va(job->ctx, desc->cmd_va,
					       desc->cmd_size);
		if (!job->maps[0])
			return -EINVAL;
		job->nmaps = 1;
	}
	for (i = 0; i < desc->bo_count; i++) {
		struct drm_gem_object *obj;
		struct npu_mapping *map;

		ret = npu_copy_entry(&handle, sizeof(handle), desc->bo_handles,
				     i, stride);
		if (ret)
			return ret;
		obj = drm_gem_object_lookup(file, handle);
		if (!obj)
			return -ENOENT;
		map = npu_bo_find_mapping(to_npu_bo(obj), job->ctx);
		drm_gem_object_put(obj);
		if (!map)
			return -ENOENT;
		job->maps[job->nmaps++] = map;
	}
	return 0;
}

/*
 * Proxy fence of the earlier job of this submission that signals
 * (handle, point), or NULL when there is none. -ENOMEM as ERR_PTR.
 */
static struct dma_fence *npu_find_local_fence(struct npu_pending *p, u32 n,
					      u32 handle, u64 point)
{
	u64 best_point = U64_MAX;
	int best = -1;
	u32 i, k;

	for (i = 0; i < n; i++) {
		for (k = 0; k < p[i].nouts; k++) {
			struct npu_out_sync *o = &p[i].outs[k];

			if (o->handle != handle)
				continue;
			if (!point && !o->point) {
				/* binary: the latest signaller wins */
				best = i;
			} else if (point && o->point >= point &&
				   o->point < best_point) {
				best = i;
				best_point = o->point;
			}
		}
	}
	if (best < 0)
		return NULL;
	if (!p[best].proxy) {
		p[best].proxy = npu_proxy_create();
		if (!p[best].proxy)
			return ERR_PTR(-ENOMEM);
	}
	return dma_fence_get(&p[best].proxy->base);
}

static int npu_job_add_in_syncs(struct npu_pending *p, u32 idx,
				struct drm_file *file,
				const struct drm_npu_job *desc)
{
	struct npu_job *job = p[idx].job;
	struct drm_npu_sync s;
	struct dma_fence *f;
	u32 i;
	int ret;

	for (i = 0; i < desc->in_sync_count; i++) {
		ret = npu_copy_entry(&s, sizeof(s), desc->in_syncs, i,
				     npu_sync_stride(desc));
		if (ret)
			return ret;
		if (s.flags)
			return -EINVAL;
		f = npu_find_local_fence(p, idx, s.handle, s.point);
		if (IS_ERR(f))
			return PTR_ERR(f);
		if (f) {
			ret = drm_sched_job_add_dependency(&job->base, f);
			if (ret)
				return ret;
			/* a timeline may also have earlier points pending */
			if (!s.point)
				continue;
			if (drm_syncobj_find_fence(file, s.handle, s.point, 0,
						   &f))
				continue;
		} else {
			ret = drm_syncobj_find_fence(file, s.handle, s.point,
						     0, &f);
			if (ret)
				return ret;
		}
		ret = drm_sched_job_add_dependency(&job->base, f);
		if (ret)
			return ret;
	}
	return 0;
}

static int npu_job_get_out_syncs(struct npu_pending *pj, struct drm_file *file,
				 const struct drm_npu_job *desc)
{
	struct drm_npu_sync s;
	u32 i;
	int ret;

	if (!desc->out_sync_count)
		return 0;
	pj->outs = kcalloc(desc->out_sync_count, sizeof(*pj->outs),
			   GFP_KERNEL);
	if (!pj->outs)
		return -ENOMEM;
	for (i = 0; i < desc->out_sync_count; i++) {
		struct npu_out_sync *o = &pj->outs[i];

		ret = npu_copy_entry(&s, sizeof(s), desc->out_syncs, i,
				     npu_sync_stride(desc));
		if (ret)
			return ret;
		if (s.flags)
			return -EINVAL;
		o->syncobj = drm_syncobj_find(file, s.handle);
		if (!o->syncobj)
			return -ENOENT;
		pj->nouts++;
		o->handle = s.handle;
		o->point = s.point;
		if (s.point) {
			o->chain = dma_fence_chain_alloc();
			if (!o->chain)
				return -ENOMEM;
		}
	}
	return 0;
}

static int npu_job_prepare(struct npu_file *nfile, struct drm_file *file,
			   struct npu_pending *p, u32 idx,
			   const struct drm_npu_job *desc)
{
	struct npu_device *ndev = nfile->ndev;
	struct npu_pending *pj = &p[idx];
	struct npu_job *job;
	int ret;

	if (desc->flags)
		return -EINVAL;
	if (desc->cmd_size % 4 || desc->cmd_size > NPU_IB_MAX_SIZE)
		return -EINVAL;
	if (desc->bo_count > NPU_MAX_JOB_BOS ||
	    desc->in_sync_count > NPU_MAX_JOB_SYNCS ||
	    desc->out_sync_count > NPU_MAX_JOB_SYNCS)
		return -EINVAL;
	if ((desc->sync_stride &&
	     (desc->sync_stride < NPU_SYNC_SIZE_V1 ||
	      desc->sync_stride > NPU_MAX_STRIDE)) ||
	    (desc->bo_handle_stride &&
	     (desc->bo_handle_stride < sizeof(u32) ||
	      desc->bo_handle_stride > NPU_MAX_STRIDE)))
		return -EINVAL;

	pj->queue = npu_queue_lookup(nfile, desc->queue_id);
	if (!pj->queue)
		return -ENOENT;

	job = kzalloc(sizeof(*job), GFP_KERNEL);
	if (!job)
		return -ENOMEM;
	atomic_inc(&ndev->jobs_alive);
	job->ndev = ndev;
	kref_get(&nfile->ref);
	job->nfile = nfile;
	job->ctx = npu_ctx_get(pj->queue->ctx);
	/* what older jobs have signalled for must not be reachable by this one */
	npu_ctx_reap(job->ctx);
	job->queue_id = desc->queue_id;
	job->cmd_va = desc->cmd_va;
	job->cmd_size = desc->cmd_size;
	INIT_LIST_HEAD(&job->node);
	INIT_LIST_HEAD(&job->ctx_link);
	pj->job = job;

	job->spare_fence = npu_fence_alloc(GFP_KERNEL);
	if (!job->spare_fence)
		return -ENOMEM;
	ret = npu_job_add_maps(job, file, desc);
	if (ret)
		return ret;
	ret = npu_job_get_out_syncs(pj, file, desc);
	if (ret)
		return ret;

	ret = npu_sched_job_init(&job->base, &pj->queue->entity, nfile,
				 nfile->client_id);
	if (ret)
		return ret;
	pj->inited = true;

	return npu_job_add_in_syncs(p, idx, file, desc);
}

static void npu_pending_cleanup(struct npu_pending *pj)
{
	u32 i;

	if (pj->job) {
		if (pj->inited)
			drm_sched_job_cleanup(&pj->job->base);
		npu_job_release(pj->job);
	}
	for (i = 0; i < pj->nouts; i++) {
		drm_syncobj_put(pj->outs[i].syncobj);
		dma_fence_chain_free(pj->outs[i].chain);
	}
	kfree(pj->outs);
	if (pj->proxy)
		dma_fence_put(&pj->proxy->base);
}

/*
 * Reservation objects of one SUBMIT: one entry per distinct dma_resv among
 * the BOs of all its jobs (listed BOs and command buffers; a PRIME import
 * has its exporter's), with a GEM reference that keeps the object, hence
 * the resv, alive while it is locked, and the number of fence slots it
 * needs: one per (job, BO) pair naming it.
 */
struct npu_resv_entry {
	struct drm_gem_object *obj;
	u32 slots;
};

struct npu_resvs {
	struct ww_acquire_ctx ticket;
	struct npu_resv_entry *e;
	u32 count;
	bool locked;
};

/* sort() order: by address of the reservation object */
static int npu_resv_entry_cmp(const void *a, const void *b)
{
	const struct npu_resv_entry *x = a, *y = b;
	uintptr_t rx = (uintptr_t)x->obj->resv, ry = (uintptr_t)y->obj->resv;

	return rx < ry ? -1 : rx > ry;
}

/* Collect the distinct reservation objects of the prepared jobs. */
static int npu_resvs_collect(struct npu_resvs *rs, struct npu_pending *p,
			     u32 n)
{
	struct npu_resv_entry *e;
	u32 total = 0, i, k, m = 0;

	for (i = 0; i < n; i++)
		total += p[i].job->nmaps;
	if (!total)
		return 0;
	e = kvmalloc_array(total, sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		for (k = 0; k < p[i].job->nmaps; k++)
			e[m++].obj = &p[i].job->maps[k]->bo->base.base;
	sort(e, total, sizeof(*e), npu_resv_entry_cmp, NULL);
	for (i = 0; i < total; i++) {
		if (rs->count && e[i].obj->resv == e[rs->count - 1].obj->resv) {
			e[rs->count - 1].slots++;
			continue;
		}
		e[rs->count].obj = e[i].obj;
		e[rs->count].slots = 1;
		drm_gem_object_get(e[i].obj);
		rs->count++;
	}
	rs->e = e;
	return 0;
}

static void npu_resvs_unlock(struct npu_resvs *rs)
{
	u32 i;

	if (!rs->locked)
		return;
	for (i = 0; i < rs->count; i++)
		dma_resv_unlock(rs->e[i].obj->resv);
	ww_acquire_fini(&rs->ticket);
	rs->locked = false;
}

/*
 * Lock every reservation object of the SUBMIT (wound/wait: on -EDEADLK drop
 * them all, wait for the contended one, start again) and reserve the fence
 * slots, so that adding the fences in the push phase cannot fail. No user
 * memory may be touched from here to npu_resvs_fini() (the fault path
 * takes the mmap lock, then reservation locks).
 */
static int npu_resvs_lock(struct npu_resvs *rs)
{
	int count = rs->count, contended = -1, ret, i, j;

	if (!count)
		return 0;
	ww_acquire_init(&rs->ticket, &reservation_ww_class);
retry:
	if (contended >= 0) {
		ret = dma_resv_lock_slow_interruptible(rs->e[contended].obj->resv,
						       &rs->ticket);
		if (ret)
			goto err_fini;
	}
	for (i = 0; i < count; i++) {
		if (i == contended)
			continue;
		ret = dma_resv_lock_interruptible(rs->e[i].obj->resv,
						  &rs->ticket);
		if (!ret)
			continue;
		/* holding 0 .. i - 1 (contended among them or after them) */
		for (j = 0; j < i; j++)
			dma_resv_unlock(rs->e[j].obj->resv);
		if (contended > i)
			dma_resv_unlock(rs->e[contended].obj->resv);
		if (ret != -EDEADLK)
			goto err_fini;
		contended = i;
		goto retry;
	}
	ww_acquire_done(&rs->ticket);
	rs->locked = true;

	for (i = 0; i < count; i++) {
		ret = dma_resv_reserve_fences(rs->e[i].obj->resv,
					      rs->e[i].slots);
		if (ret) {
			npu_resvs_unlock(rs);
			return ret;
		}
	}
	return 0;

err_fini:
	ww_acquire_fini(&rs->ticket);
	return ret;
}

/* Unlock and drop the references; may free BOs, so no lock may be held. */
static void npu_resvs_fini(struct npu_resvs *rs)
{
	u32 i;

	npu_resvs_unlock(rs);
	for (i = 0; i < rs->count; i++)
		drm_gem_object_put(rs->e[i].obj);
	kvfree(rs->e);
}

/*
 * The job's finished fence goes into the reservation object of every BO it
 * uses: WRITE usage through a writable mapping, READ through a read-only
 * one (read-only userptr). BO_WAIT, dma-buf poll and other drivers sharing
 * the buffer see it; npu itself does not wait for fences it finds there
 * (jobs are ordered explicitly, with syncobjs).
 */
static void npu_job_add_resv_fences(struct npu_job *job,
				    struct dma_fence *done)
{
	u32 i;

	for (i = 0; i < job->nmaps; i++) {
		struct npu_bo *bo = job->maps[i]->bo;

		dma_resv_add_fence(bo->base.base.resv, done,
				   bo->read_only ? DMA_RESV_USAGE_READ :
						   DMA_RESV_USAGE_WRITE);
	}
}

static void npu_job_commit(struct npu_pending *pj)
{
	struct npu_job *job = pj->job;
	struct dma_fence *done;
	u32 i;

	lockdep_assert_held(&job->nfile->submit_lock);

	drm_sched_job_arm(&job->base);
	npu_ctx_track_job(job->ctx, job);
	done = dma_fence_get(&job->base.s_fence->finished);
	npu_job_add_resv_fences(job, done);
	trace_npu_job_submit(job->ctx->id, job->queue_id, done->seqno,
			     job->cmd_va, job->cmd_size);
	dma_fence_put(pj->queue->last_pushed);
	pj->queue->last_pushed = dma_fence_get(done);
	drm_sched_entity_push_job(&job->base);
	pj->job = NULL;		/* owned by the scheduler now */
	if (pj->proxy)
		npu_proxy_attach(pj->proxy, done);

	for (i = 0; i < pj->nouts; i++) {
		struct npu_out_sync *o = &pj->outs[i];

		if (o->chain) {
			drm_syncobj_add_point(o->syncobj, o->chain, done,
					      o->point);
			o->chain = NULL;
		} else {
			drm_syncobj_replace_fence(o->syncobj, done);
		}
	}
	dma_fence_put(done);
}

/**
 * npu_ioctl_submit() - DRM_IOCTL_NPU_SUBMIT
 * @dev: DRM device
 * @data: &struct drm_npu_submit
 * @file: DRM file
 *
 * Return: 0 or a negative errno; on error nothing was queued.
 */
int npu_ioctl_submit(struct drm_device *dev, void *data,
		     struct drm_file *file)
{
	struct npu_file *nfile = file->driver_priv;
	struct drm_npu_submit *args = data;
	void __user *ujobs = u64_to_user_ptr(args->jobs);
	struct npu_resvs rs = { };
	struct npu_pending *p;
	struct drm_npu_job desc;
	u32 i, n = 0;
	int ret = 0;

	if (args->flags || args->pad)
		return -EINVAL;
	if (!args->job_count || args->job_count > NPU_MAX_JOBS)
		return -EINVAL;
	/* older user space knows a shorter struct: the rest reads as 0 */
	if (args->job_stride < NPU_JOB_SIZE_V1 ||
	    args->job_stride > NPU_MAX_STRIDE)
		return -EINVAL;

	p = kcalloc(args->job_count, sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;

	mutex_lock(&nfile->submit_lock);
	for (i = 0; i < args->job_count; i++) {
		ret = copy_struct_from_user(&desc, sizeof(desc),
					    ujobs + (size_t)i * args->job_stride,
					    args->job_stride);
		if (ret) {
			if (ret == -E2BIG)
				ret = -EINVAL;
			break;
		}
		n = i + 1;
		ret = npu_job_prepare(nfile, file, p, i, &desc);
		if (ret)
			break;
	}
	if (!ret)
		ret = npu_resvs_collect(&rs, p, args->job_count);
	if (!ret)
		ret = npu_resvs_lock(&rs);
	if (!ret) {
		for (i = 0; i < args->job_count; i++)
			npu_job_commit(&p[i]);
	}
	npu_resvs_fini(&rs);
	for (i = 0; i < n; i++)
		npu_pending_cleanup(&p[i]);
	mutex_unlock(&nfile->submit_lock);
	/*
	 * QUEUE_DESTROY may have run meanwhile, leaving the last reference of
	 * a queue to us: its release waits until the queue's jobs reached a
	 * ring, which may take as long as their dependencies. Not under
	 * submit_lock, which every other SUBMIT of the file needs (and one of
	 * them may be what those dependencies wait for).
	 */
	for (i = 0; i < n; i++)
		if (p[i].queue)
			npu_queue_put(p[i].queue);
	kfree(p);
	return ret;
}
