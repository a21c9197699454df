// SPDX-License-Identifier: MIT
/*
 * npu_queue.c - the kernel queues of streams and graphs, and the one SUBMIT ioctl.
 */
#define _GNU_SOURCE
#include <errno.h>

#include <xf86drm.h>

#include "npu_core.h"

/* ------------------------------------------------------------------------
 * Queues: streams and executable graphs take theirs here. Idle queues of
 * destroyed streams are kept for the next user of the same kind, ring and
 * priority (creating one costs an ioctl; a file has a limited number).
 */
static void queue_destroy(struct device *dev, uint32_t id)
{
	struct drm_npu_queue_destroy d = { .queue_id = id };

	drmIoctl(dev->fd, DRM_IOCTL_NPU_QUEUE_DESTROY, &d);
}

int npu_queue_get(struct device *dev, struct drm_npu_queue_create *c)
{
	unsigned i;
	int r;

	for (i = 0; i < dev->queue_pool_n; i++) {
		struct idle_queue *iq = &dev->queue_pool[i];

		if (iq->kind == c->kind && iq->ring == c->ring &&
		    iq->priority == c->priority) {
			c->queue_id = iq->id;
			*iq = dev->queue_pool[--dev->queue_pool_n];
			return 0;
		}
	}
	r = drmIoctl(dev->fd, DRM_IOCTL_NPU_QUEUE_CREATE, c) ? errno : 0;
	if (r && r != EACCES && dev->queue_pool_n) {
		/* out of queues: give back the idle ones and try again */
		while (dev->queue_pool_n)
			queue_destroy(dev, dev->queue_pool[--dev->queue_pool_n].id);
		r = drmIoctl(dev->fd, DRM_IOCTL_NPU_QUEUE_CREATE, c) ? errno : 0;
	}
	return r;
}

void npu_queue_put(struct device *dev, uint32_t id, uint32_t kind,
		   uint32_t ring, uint32_t priority, bool idle)
{
	struct idle_queue *iq;

	if (!idle || dev->queue_pool_n >= QUEUE_POOL_MAX) {
		queue_destroy(dev, id);
		return;
	}
	iq = &dev->queue_pool[dev->queue_pool_n++];
	iq->id = id;
	iq->kind = kind;
	iq->ring = ring;
	iq->priority = priority;
}

/* ------------------------------------------------------------------------
 * Submission
 */
unsigned npu_submit_max(const struct device *dev)
{
	return dev->prop.max_jobs_per_submit ? dev->prop.max_jobs_per_submit : 64;
}

int npu_submit(struct device *dev, struct drm_npu_job *jobs, unsigned n,
	       unsigned *sent, unsigned *ioctls)
{
	unsigned max = npu_submit_max(dev), done = 0, calls = 0;
	int r = 0;

	atomic_store_explicit(&dev->kq_submitted, true, memory_order_relaxed);
	while (done < n && !r) {
		struct drm_npu_submit sub = {
			.jobs = (uintptr_t)&jobs[done],
			.job_count = n - done < max ? n - done : max,
			.job_stride = sizeof(*jobs),
		};

		r = drmIoctl(dev->fd, DRM_IOCTL_NPU_SUBMIT, &sub) ? -errno : 0;
		if (r)
			npu_note_errno(dev, -r);
		calls++;
		if (!r)
			done += sub.job_count;
	}
	if (sent)
		*sent = done;
	if (ioctls)
		*ioctls = calls;
	return r;
}
