// SPDX-License-Identifier: MIT
/*
 * npu_timeline.c - timelines (syncobjs with a cache of their points), completion words, waits on points.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include <xf86drm.h>

#include "npu_core.h"

/* ------------------------------------------------------------------------
 * Timelines
 */
struct tl *npu_tl_new(struct device *dev)
{
	struct tl *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	if (drmSyncobjCreate(dev->fd, 0, &t->handle)) {
		free(t);
		return NULL;
	}
	t->refs = 1;
	return t;
}

void npu_tl_put(struct device *dev, struct tl *t)
{
	if (t && --t->refs == 0) {
		drmSyncobjDestroy(dev->fd, t->handle);
		npu_tl_put(dev, t->via);
		free(t);
	}
}

/* Has the device written point (or a later one) to t's completion word?
 * A stream's jobs run in stream order, so a later point covers the earlier
 * ones; points after word_pt (host functions, empty jobs) are not written.
 * Points are compared wrap-safe in 32 bits. */
static bool word_passed(const struct tl *t, uint64_t point)
{
	uint32_t w;

	if (!t->word || point > __atomic_load_n(&t->word_pt, __ATOMIC_RELAXED))
		return false;
	w = __atomic_load_n(t->word, __ATOMIC_ACQUIRE);
	return (int32_t)(w - (uint32_t)point) >= 0;
}

/* Is point complete? Updates the cache. Caller holds dev->lock. */
bool npu_tl_done(struct device *dev, struct tl *t, uint64_t point)
{
	uint64_t v = 0;

	if (point <= t->completed)
		return true;
	if (word_passed(t, point) ||
	    (t->via && point == t->via_ev_pt &&
	     (word_passed(t->via, t->via_pt) ||
	      t->via->completed >= t->via_pt))) {
		t->completed = point;
		return true;
	}
	if (t->uq_status && point <= npu_tl_uq_pt(t) && point > t->k_pt &&
	    (*t->uq_status & NPU_UQ_STS_HALTED)) {
		/* its user queue halted (a fault, a stop): the point never
		 * comes; as a failed job's fence, it counts as done and the
		 * fault check reports why */
		return true;
	}
	if (point > t->submitted)
		return false;
	if (drmSyncobjQuery(dev->fd, &t->handle, &v, 1)) {
		npu_note_errno(dev, errno);
		return false;
	}
	if (v > t->completed)
		t->completed = v;
	return point <= t->completed;
}

/* How long one syncobj wait ioctl may sleep before the device is looked
 * at: a wait the kernel entered before the driver was unbound is not
 * woken by the unbind when its point has no fence yet (a job the library
 * still holds back, a host function's point). */
#define WAIT_SLICE_NS 250000000ll

int npu_syncobj_wait(struct device *dev, uint32_t *handles, uint64_t *points,
		     unsigned n, unsigned flags)
{
	struct timespec ts;
	uint64_t v;
	int r, err;

	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = drmSyncobjTimelineWait(dev->fd, handles, points, n,
					   (int64_t)ts.tv_sec * 1000000000ll +
					   ts.tv_nsec + WAIT_SLICE_NS, flags, NULL);
		err = r == -1 ? errno : -r;
		if (!r || (err != EINTR && err != ETIME))
			break;
		if (err == ETIME && drmSyncobjQuery(dev->fd, handles, &v, 1) &&
		    errno == ENODEV) {
			err = ENODEV;
			break;
		}
	}
	if (r) {
		npu_note_errno(dev, err);
		errno = err;
		return -1;
	}
	return 0;
}

/* Wait (without dev->lock) until (handle, point) is signalled. */
int npu_wait_points(struct device *dev, uint32_t *handles, uint64_t *points,
		    unsigned n)
{
	if (!n)
		return 0;
	return npu_syncobj_wait(dev, handles, points, n,
				DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL |
				DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT);
}

void npu_on_complete(struct device *dev, void (*fn)(struct device *dev))
{
	unsigned i;

	for (i = 0; i < 2; i++)
		if (dev->complete_hooks[i] == fn || !dev->complete_hooks[i]) {
			dev->complete_hooks[i] = fn;
			return;
		}
}

void npu_completed(struct device *dev)
{
	unsigned i;

	for (i = 0; i < 2 && dev->complete_hooks[i]; i++)
		dev->complete_hooks[i](dev);
}
