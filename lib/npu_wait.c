// SPDX-License-Identifier: MIT
/*
 * npu_wait.c - waits on a timeline point: spin on its completion word, then sleep in the kernel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <time.h>

#include <xf86drm.h>

#include "npu_core.h"

/* Wait for one point of a timeline; takes and drops dev->lock around the
 * wait. Caller holds dev->lock and keeps a reference to t.
 * npu_tl_wait_locked first asks the kernel whether the point is complete
 * (SYNCOBJ_QUERY, without dropping the lock when it is);
 * npu_tl_wait_now trusts only the cache and otherwise waits at once: one
 * ioctl instead of two when the point is still pending (a wait on a
 * complete point returns at once). */
int npu_tl_wait_locked(struct device *dev, struct tl *t, uint64_t point)
{
	if (npu_tl_done(dev, t, point))
		return 0;
	return npu_tl_wait_now(dev, t, point);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Watch t's completion word for point (as CUDA spins on completion memory
 * before it sleeps): a short job's end is seen without the interrupt and
 * the wake-up behind a syncobj wait. NPU_DEVICE_SCHEDULE_AUTO watches for
 * dev->spin_ns at most (false: not seen), SPIN and YIELD until the point
 * is complete, whether it succeeded or not. Called without
 * dev->lock, holding a reference to t: the word's slot is reused only once
 * its last point is complete (ts_retire), so a stale look can only be a
 * late one.
 */
static bool word_spin(struct device *dev, const struct tl *t, uint64_t point,
		      unsigned sched)
{
	uint32_t *w = t->word;
	uint32_t h = t->handle;
	bool bounded = sched == NPU_DEVICE_SCHEDULE_AUTO;
	/* a yield is a system call: only now and then, for a thread (the
	 * submit thread) that shares this CPU, unless asked to yield */
	unsigned every = sched == NPU_DEVICE_SCHEDULE_YIELD ? 1 :
			 sched == NPU_DEVICE_SCHEDULE_SPIN ? 1024 : 32;
	uint64_t now = mono_ns(), end = now + dev->spin_ns, look = now;
	unsigned i = 0;

	for (;;) {
		if ((int32_t)(__atomic_load_n(w, __ATOMIC_ACQUIRE) -
			      (uint32_t)point) >= 0)
			return true;
		if (++i % every == 0)
			sched_yield();
		else
			cpu_relax();
		now = mono_ns();
		if (bounded && now >= end)
			return false;
		/* a failed job never writes the word, but its fence is
		 * signalled (with the error): look at the syncobj each ms */
		if (!bounded && now - look >= 1000000) {
			uint64_t v = 0;

			look = now;
			if (!drmSyncobjQuery(dev->fd, &h, &v, 1)) {
				if (v >= point)
					return true;
			} else if (errno == ENODEV) {
				/* device lost: the word will never move;
				 * the caller's wait reports it */
				return false;
			}
		}
	}
}

/* How long a bounded spin on a user queue's signal watches its progress
 * before judging whether the rest fits in the spin. */
#define SPIN_JUDGE_NS 20000ull

/* How long one USERQ_WAIT_MEM may sleep before the signal and the device
 * are looked at again. */
#define UQ_WAIT_SLICE_NS 250000000ull

/* A user-queue point: the device writes it to t's memory signal. Watch
 * the signal, then sleep in USERQ_WAIT_MEM (which arms it) until it
 * passes or the queue halts. Without dev->lock, holding a reference. */
static int sig_wait(struct device *dev, const uint32_t *word,
		    const volatile uint32_t *status, uint64_t sig_va,
		    uint32_t uq_id, uint32_t handle, uint64_t point,
		    unsigned sched, bool spin)
{
	bool bounded = sched == NPU_DEVICE_SCHEDULE_AUTO;
	unsigned every = sched == NPU_DEVICE_SCHEDULE_YIELD ? 1 :
			 sched == NPU_DEVICE_SCHEDULE_SPIN ? 1024 : 32;
	uint64_t now = mono_ns(), end = now + dev->spin_ns, look = now;
	uint64_t t0 = now;
	uint32_t w0 = __atomic_load_n(word, __ATOMIC_RELAXED);
	bool judged = false;
	unsigned i = 0;
	int r;

	/* as word_spin, but a halted queue (it never writes the signal)
	 * ends the spin: the wait below then says why */
	while (spin && !(*status & NPU_UQ_STS_HALTED)) {
		uint32_t w = __atomic_load_n(word, __ATOMIC_ACQUIRE);

		if ((int32_t)(w - (uint32_t)point) >= 0)
			return 0;
		if (++i % every == 0)
			sched_yield();
		else
			cpu_relax();
		now = mono_ns();
		if (bounded && now >= end)
			break;
		/* once, after SPIN_JUDGE_NS: at the rate the points have
		 * passed, will the rest pass within the spin? If not, sleep
		 * now: a spinning thread takes its CPU from the threads that
		 * feed other queues and, on a small host, from the device */
		if (bounded && !judged && now - t0 >= SPIN_JUDGE_NS) {
			uint64_t passed = (uint32_t)(w - w0);
			uint64_t left = (uint32_t)((uint32_t)point - w);

			judged = true;
			if (passed &&
			    left * (now - t0) / passed > end - now)
				break;
		}
		/* an unplugged device never writes the signal nor the
		 * status: an ioctl each ms says whether it is still there
		 * (the sleeping wait below then reports the loss) */
		if (!bounded && now - look >= 1000000) {
			uint64_t v;

			look = now;
			if (drmSyncobjQuery(dev->fd, &handle, &v, 1) &&
			    errno == ENODEV)
				break;
		}
	}
	for (;;) {
		if ((int32_t)(__atomic_load_n(word, __ATOMIC_ACQUIRE) -
			      (uint32_t)point) >= 0)
			return 0;
		r = npu_uq_wait_mem(dev, sig_va, point, uq_id, UQ_WAIT_SLICE_NS);
		if (!r)
			return 0;
		if (r == -ETIME || r == -EINTR) {
			if (npu_dev_lost(dev)) {
				errno = ENODEV;
				return -1;
			}
			/* the signal may wait on a queue that halted (then
			 * it never comes): release that queue's waiters */
			pthread_mutex_lock(&dev->lock);
			npu_uq_release_halted(dev);
			pthread_mutex_unlock(&dev->lock);
			continue;
		}
		/* the queue halted (a fault) or was stopped: the point never
		 * comes; as a failed job's fence it ends the wait, and the
		 * caller's fault check says why */
		if (r == -ECANCELED)
			return 0;
		errno = -r;
		return -1;
	}
}

int npu_tl_wait_now(struct device *dev, struct tl *t, uint64_t point)
{
	uint32_t h = t->handle;
	unsigned sched;
	bool spin;
	int r = 0;

	if (!point || point <= t->completed)
		return 0;
	if (t->via && point == t->via_ev_pt &&
	    (t->via->sig_va || t->via->completed >= t->via_pt) &&
	    t->via_pt > t->via->k_pt) {
		/* an event recorded on a user queue: its stream's signal */
		struct tl *v = t->via;

		v->refs++;
		r = npu_tl_wait_now(dev, v, t->via_pt);
		npu_tl_put(dev, v);
		if (!r && point > t->completed)
			t->completed = point;
		return r;
	}
	if (t->sig_va && point <= npu_tl_uq_pt(t) && point > t->k_pt) {
		sched = dev->sched;
		spin = sched != NPU_DEVICE_SCHEDULE_BLOCKING_SYNC &&
		       (sched != NPU_DEVICE_SCHEDULE_AUTO || dev->spin_ns);
		const uint32_t *word = t->word;
		const volatile uint32_t *status = t->uq_status;
		uint64_t va = t->sig_va;
		uint32_t id = t->uq_id;

		t->refs++;
		pthread_mutex_unlock(&dev->lock);
		r = sig_wait(dev, word, status, va, id, h, point, sched, spin);
		pthread_mutex_lock(&dev->lock);
		if (!r && point > t->completed)
			t->completed = point;
		npu_tl_put(dev, t);
		return r;
	}
	if (point > t->submitted)
		npu_flush_now(dev);
	sched = dev->sched;
	spin = t->word && point <= __atomic_load_n(&t->word_pt, __ATOMIC_RELAXED) &&
	       sched != NPU_DEVICE_SCHEDULE_BLOCKING_SYNC &&
	       (sched != NPU_DEVICE_SCHEDULE_AUTO || dev->spin_ns);
	t->refs++;
	pthread_mutex_unlock(&dev->lock);
	if (!spin || !word_spin(dev, t, point, sched))
		r = npu_wait_points(dev, &h, &point, 1);
	pthread_mutex_lock(&dev->lock);
	if (!r && point > t->completed)
		t->completed = point;
	npu_tl_put(dev, t);
	return r;
}
