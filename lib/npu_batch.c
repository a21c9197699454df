// SPDX-License-Identifier: MIT
/*
 * npu_batch.c - submission of jobs: at once, or deferred and batched by a per-device submit thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>

#include <xf86drm.h>

#include "npu_core.h"

int npu_submit_now(struct device *dev, uint32_t queue_id, uint64_t cmd_va,
		   uint32_t cmd_size, const struct dep *deps, unsigned ndeps,
		   struct tl *const *out, const uint64_t *out_pt, unsigned nout,
		   const uint32_t *bo, unsigned nbo)
{
	struct drm_npu_sync in_inline[INLINE_DEPS], *in = in_inline;
	struct drm_npu_sync outs[2];
	struct drm_npu_job job;
	unsigned i, nin = 0;
	int r;

	if (ndeps > INLINE_DEPS) {
		in = malloc(ndeps * sizeof(*in));
		if (!in)
			return -ENOMEM;
	}
	for (i = 0; i < ndeps; i++) {
		if (deps[i].order_only || deps[i].point <= deps[i].tl->completed)
			continue;
		in[nin].handle = deps[i].tl->handle;
		in[nin].flags = 0;
		in[nin].point = deps[i].point;
		nin++;
	}
	for (i = 0; i < nout; i++) {
		outs[i].handle = out[i]->handle;
		outs[i].flags = 0;
		outs[i].point = out_pt[i];
	}
	memset(&job, 0, sizeof(job));
	job.queue_id = queue_id;
	job.cmd_va = cmd_size ? cmd_va : 0;
	job.cmd_size = cmd_size;
	job.bo_count = nbo;
	job.bo_handles = (uintptr_t)bo;
	job.in_syncs = (uintptr_t)in;
	job.out_syncs = (uintptr_t)outs;
	job.in_sync_count = nin;
	job.out_sync_count = nout;
	r = npu_submit(dev, &job, 1, NULL, NULL);
	if (in != in_inline)
		free(in);
	if (!r)
		for (i = 0; i < nout; i++)
			out[i]->submitted = out_pt[i];
	return r;
}

static struct djob *djob_alloc(struct device *dev)
{
	struct djob *j = dev->free_djobs;

	if (j) {
		dev->free_djobs = j->next;
		dev->nfree_djobs--;
		memset(j, 0, sizeof(*j));
		return j;
	}
	return calloc(1, sizeof(*j));
}

static void djob_free(struct device *dev, struct djob *j)
{
	unsigned i;

	for (i = 0; i < j->ndeps; i++)
		npu_tl_put(dev, j->deps[i].tl);
	for (i = 0; i < j->nout; i++)
		npu_tl_put(dev, j->out[i]);
	if (j->deps != j->inline_deps)
		free(j->deps);
	if (dev->nfree_djobs >= CMD_INFLIGHT) {
		free(j);
		return;
	}
	j->next = dev->free_djobs;
	dev->free_djobs = j;
	dev->nfree_djobs++;
}

int npu_defer_job(struct device *dev, struct npu_stream *s, uint32_t queue_id,
		  uint32_t cmd_off, uint32_t cmd_size, const struct dep *deps,
		  unsigned ndeps, struct tl *const *out, const uint64_t *out_pt,
		  unsigned nout, const uint32_t *bo, unsigned nbo)
{
	struct djob *j = djob_alloc(dev);
	unsigned i;

	if (!j)
		return -ENOMEM;
	j->deps = ndeps <= INLINE_DEPS ? j->inline_deps :
		malloc(ndeps * sizeof(*j->deps));
	if (!j->deps) {
		j->deps = j->inline_deps;
		djob_free(dev, j);
		return -ENOMEM;
	}
	memcpy(j->deps, deps, ndeps * sizeof(*j->deps));
	j->ndeps = ndeps;
	for (i = 0; i < j->ndeps; i++)
		j->deps[i].tl->refs++;
	j->s = s;
	j->queue_id = queue_id;
	j->cmd_off = cmd_off;
	j->cmd_size = cmd_size;
	j->nout = nout;
	for (i = 0; i < nout; i++) {
		j->out[i] = out[i];
		j->out_pt[i] = out_pt[i];
		out[i]->refs++;
	}
	memcpy(j->bo, bo, sizeof(j->bo));
	j->nbo = nbo;
	if (dev->deferred_tail)
		dev->deferred_tail->next = j;
	else
		dev->deferred = j;
	dev->deferred_tail = j;
	if (dev->batch) {
		if (!dev->flusher_started && npu_start_flusher(dev)) {
			/* no thread: fall back to direct submission */
			dev->batch = false;
			npu_flush_deferred(dev);
		} else if (dev->flusher_idle) {
			pthread_cond_signal(&dev->flush_cond);
		}
	}
	return 0;
}

/* Signal points from the host so that nobody waits forever for a job that
 * could not be submitted. */
static void signal_from_host(struct device *dev, struct tl *const *out,
			     const uint64_t *pt, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		drmSyncobjTimelineSignal(dev->fd, &out[i]->handle,
					 (uint64_t *)&pt[i], 1);
		out[i]->submitted = pt[i];
	}
}

/* The driver refused deferred job j (errno): its points are signalled from
 * the host so that nobody waits for ever, and its stream and the device
 * report the failure; a refusal because the device is gone is the loss. */
static void batch_failed(struct device *dev, struct djob *j)
{
	int err = errno;
	npu_status_t st = npu_dev_lost(dev) ? NPU_ERROR_DEVICE_LOST :
			  NPU_ERROR_LAUNCH_FAILURE;

	signal_from_host(dev, j->out, j->out_pt, j->nout);
	if (!j->s->sticky)
		j->s->sticky = st;
	if (!dev->sticky) {
		dev->sticky = st;
		if (st == NPU_ERROR_DEVICE_LOST)
			snprintf(dev->sticky_msg, sizeof(dev->sticky_msg), "%s",
				 npu_status_string(st));
		else
			snprintf(dev->sticky_msg, sizeof(dev->sticky_msg),
				 "NPU_ERROR_LAUNCH_FAILURE: the driver refused a job: %s",
				 npu_strerror(err));
	}
}

/* Submit every deferred job whose dependencies are now submitted. Caller
 * holds dev->lock. */
void npu_flush_deferred(struct device *dev)
{
	bool progress = true;

	if (dev->batch) {
		/* only for work: a woken flusher that finds none still costs
		 * a wake-up, a yield and two lock round trips, on the path of
		 * every host function on any stream */
		if (dev->flusher_idle && dev->deferred)
			pthread_cond_signal(&dev->flush_cond);
		return;
	}
	while (progress && dev->deferred) {
		struct djob **pp = &dev->deferred, *j;

		progress = false;
		dev->deferred_tail = NULL;
		while ((j = *pp)) {
			unsigned i;
			bool ready = true;

			for (i = 0; i < j->ndeps && ready; i++)
				ready = npu_dep_ready(&j->deps[i]);
			if (!ready) {
				dev->deferred_tail = j;
				pp = &j->next;
				continue;
			}
			*pp = j->next;
			if (npu_submit_now(dev, j->queue_id, j->s->cmd_va + j->cmd_off,
					   j->cmd_size, j->deps, j->ndeps, j->out,
					   j->out_pt, j->nout, j->bo, j->nbo))
				batch_failed(dev, j);
			djob_free(dev, j);
			progress = true;
		}
	}
}

/* ------------------------------------------------------------------------
 * Batched submission. With dev->batch (the default; NPU_SUBMIT=direct turns
 * it off) an enqueue only writes the command buffer and appends the job to
 * dev->deferred; a per-device submit thread takes every job that is ready,
 * in order, and submits up to DRM_NPU_PARAM_MAX_JOBS of them with one
 * DRM_IOCTL_NPU_SUBMIT (the driver resolves waits on points signalled by
 * earlier jobs of the same array). While the thread is inside the ioctl,
 * new launches accumulate, so a burst of launches costs a fraction of an
 * ioctl each, and the first launch after idle reaches the device after one
 * thread wake-up (or none: a waiter submits the ready jobs itself when the
 * thread has no batch under way, npu_flush_now). Points are marked
 * submitted when a job is taken into a batch; that is safe because one
 * batch is under way at a time, batches are taken in order, and every
 * wait uses WAIT_FOR_SUBMIT (or, for USERQ_WAIT, which has no such flag,
 * waits for the batch first: npu_batch_wait_idle).
 */
static unsigned collect_batch(struct device *dev, struct djob **out, unsigned max)
{
	struct djob **pp = &dev->deferred, *j;
	unsigned n = 0, i;

	dev->deferred_tail = NULL;
	while ((j = *pp)) {
		bool ready = n < max;

		for (i = 0; i < j->ndeps && ready; i++)
			ready = npu_dep_ready(&j->deps[i]);
		if (!ready) {
			dev->deferred_tail = j;
			pp = &j->next;
			continue;
		}
		*pp = j->next;
		for (i = 0; i < j->nout; i++)
			j->out[i]->submitted = j->out_pt[i];
		out[n++] = j;
	}
	return n;
}

/* Can j run as the tail of the driver job that ends with p? Consecutive
 * jobs of one stream on one queue, back to back in its command ring, that
 * wait for nothing but the stream's own earlier points and list no BOs:
 * one job then signals the later point, which also satisfies every wait
 * for the earlier one (a timeline point is reached by any later one). */
static bool coalesces(struct device *dev, const struct djob *p,
		      const struct djob *j, uint32_t bytes)
{
	unsigned k;

	if (j->s != p->s || j->queue_id != p->queue_id || !j->cmd_size ||
	    !p->cmd_size || j->cmd_off != p->cmd_off + p->cmd_size ||
	    j->nbo || p->nbo || j->nout != 1 || p->nout != 1 ||
	    j->out[0] != p->out[0] ||
	    bytes + j->cmd_size > dev->prop.max_cmd_size)
		return false;
	for (k = 0; k < j->ndeps; k++) {
		const struct dep *d = &j->deps[k];

		if (d->order_only || d->point <= d->tl->completed)
			continue;
		if (d->tl != p->out[0] || d->point > p->out_pt[0])
			return false;
	}
	return true;
}

/* Fill dev->bjobs from the n deferred jobs; returns the number of driver
 * jobs (coalesced ones count once) or a negative errno. */
static int build_batch(struct device *dev, struct djob **b, unsigned n)
{
	unsigned i, k, total = 0, at = 0, m = 0, out_at = 0;
	struct drm_npu_job *job = NULL;

	for (i = 0; i < n; i++)
		total += b[i]->ndeps + b[i]->nout;
	if (total > dev->bsyncs_cap) {
		struct drm_npu_sync *ns = realloc(dev->bsyncs, total * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		dev->bsyncs = ns;
		dev->bsyncs_cap = total;
	}
	for (i = 0; i < n; i++) {
		struct djob *j = b[i];
		unsigned in0 = at;

		if (job && coalesces(dev, b[i - 1], j, job->cmd_size)) {
			job->cmd_size += j->cmd_size;
			dev->bsyncs[out_at].point = j->out_pt[0];
			continue;
		}
		job = &dev->bjobs[m++];
		memset(job, 0, sizeof(*job));
		for (k = 0; k < j->ndeps; k++) {
			if (j->deps[k].order_only ||
			    j->deps[k].point <= j->deps[k].tl->completed)
				continue;
			dev->bsyncs[at].handle = j->deps[k].tl->handle;
			dev->bsyncs[at].flags = 0;
			dev->bsyncs[at].point = j->deps[k].point;
			at++;
		}
		job->in_syncs = (uintptr_t)&dev->bsyncs[in0];
		job->in_sync_count = at - in0;
		job->out_syncs = (uintptr_t)&dev->bsyncs[at];
		job->out_sync_count = j->nout;
		out_at = at;
		for (k = 0; k < j->nout; k++, at++) {
			dev->bsyncs[at].handle = j->out[k]->handle;
			dev->bsyncs[at].flags = 0;
			dev->bsyncs[at].point = j->out_pt[k];
		}
		job->queue_id = j->queue_id;
		job->cmd_va = j->cmd_size ? j->s->cmd_va + j->cmd_off : 0;
		job->cmd_size = j->cmd_size;
		job->bo_count = j->nbo;
		job->bo_handles = (uintptr_t)j->bo;
	}
	return (int)m;
}

/*
 * Submit the batch b[0..n), just collected under dev->lock: one SUBMIT, or
 * job by job when the driver refuses the array, so that only a bad job
 * fails. unlock: the ioctl runs without dev->lock (the submit thread);
 * batch_busy keeps every other submitter out until the batch is done, so
 * batches reach the driver in order. Caller holds dev->lock.
 */
static void submit_batch(struct device *dev, struct djob **b, unsigned n,
			 bool unlock)
{
	unsigned i;
	int r, m;

	dev->batch_busy = true;
	m = build_batch(dev, b, n);
	if (unlock)
		pthread_mutex_unlock(&dev->lock);
	/* at most batch_max jobs: one ioctl, all or nothing */
	r = m < 0 ? m : npu_submit(dev, dev->bjobs, (unsigned)m, NULL, NULL);
	if (unlock)
		pthread_mutex_lock(&dev->lock);
	if (r) {
		for (i = 0; i < n; i++) {
			struct djob *j = b[i];

			if (npu_submit_now(dev, j->queue_id,
				       j->s->cmd_va + j->cmd_off, j->cmd_size,
				       j->deps, j->ndeps, j->out, j->out_pt,
				       j->nout, j->bo, j->nbo))
				batch_failed(dev, j);
		}
	}
	for (i = 0; i < n; i++)
		djob_free(dev, b[i]);
	dev->batch_busy = false;
	pthread_cond_broadcast(&dev->thread_cond);	/* npu_deferred_drop_stream */
}

void npu_batch_wait_idle(struct device *dev)
{
	while (dev->batch_busy)
		pthread_cond_wait(&dev->thread_cond, &dev->lock);
}

void npu_deferred_drop_stream(struct device *dev, struct npu_stream *s)
{
	struct djob **pp = &dev->deferred, *j;

	npu_batch_wait_idle(dev);
	dev->deferred_tail = NULL;
	while ((j = *pp)) {
		if (j->s != s) {
			dev->deferred_tail = j;
			pp = &j->next;
			continue;
		}
		*pp = j->next;
		signal_from_host(dev, j->out, j->out_pt, j->nout);
		djob_free(dev, j);
	}
}

static unsigned batch_max(const struct device *dev)
{
	unsigned max = npu_submit_max(dev);

	return max > 64 ? 64 : max;
}

/*
 * A thread about to wait for a point that is still deferred submits the
 * ready jobs itself, holding dev->lock through the ioctl, unless the
 * submit thread has a batch under way: the wait does not pay for waking
 * that thread. Caller holds dev->lock.
 */
void npu_flush_now(struct device *dev)
{
	unsigned n;

	if (!dev->batch || dev->batch_busy || !dev->deferred || !dev->wait_batch)
		return;
	n = collect_batch(dev, dev->wait_batch, batch_max(dev));
	if (n)
		submit_batch(dev, dev->wait_batch, n, false);
}

static void *flusher_main(void *arg)
{
	struct device *dev = arg;
	unsigned max = batch_max(dev);
	bool idle_once = false;
	struct djob **b;

	npu_thread_is_lib();
	b = calloc(max, sizeof(*b));
	pthread_mutex_lock(&dev->lock);
	if (!b) {
		/* no batch array: submit directly from now on, and what is
		 * queued already, rather than leave it queued for ever */
		dev->batch = false;
		npu_flush_deferred(dev);
		pthread_mutex_unlock(&dev->lock);
		return NULL;
	}
	while (!dev->flusher_stop) {	/* teardown stops it */
		unsigned n;

		/* a waiter's batch (npu_flush_now) may be under way */
		n = dev->batch_busy ? 0 : collect_batch(dev, b, max);
		if (!n && !idle_once) {
			/* let a caller that is still queueing add more before
			 * we sleep and it has to wake us */
			idle_once = true;
			pthread_mutex_unlock(&dev->lock);
			sched_yield();
			pthread_mutex_lock(&dev->lock);
			continue;
		}
		idle_once = false;
		if (!n) {
			dev->flusher_idle = true;
			pthread_cond_wait(&dev->flush_cond, &dev->lock);
			dev->flusher_idle = false;
			continue;
		}
		submit_batch(dev, b, n, true);
	}
	pthread_mutex_unlock(&dev->lock);
	free(b);
	return NULL;
}

int npu_start_flusher(struct device *dev)
{
	unsigned max = dev->prop.max_jobs_per_submit, i;

	/* stock the free list so that bursts do not allocate */
	for (i = 0; i < CMD_INFLIGHT; i++) {
		struct djob *j = calloc(1, sizeof(*j));

		if (!j)
			break;
		j->next = dev->free_djobs;
		dev->free_djobs = j;
		dev->nfree_djobs++;
	}
	if (!max || max > 64)
		max = 64;
	if (!dev->bjobs) {
		dev->bjobs = calloc(max, sizeof(*dev->bjobs));
		if (!dev->bjobs)
			return -1;
	}
	if (!dev->wait_batch)	/* without it waiters leave it to the thread */
		dev->wait_batch = calloc(max, sizeof(*dev->wait_batch));
	if (pthread_create(&dev->flusher, NULL, flusher_main, dev))
		return -1;
	dev->flusher_started = true;
	return 0;
}
