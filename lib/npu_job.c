// SPDX-License-Identifier: MIT
/*
 * npu_job.c - jobs: room in a stream command ring, dependencies, CUDA legacy-stream rules, submission.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "npu_core.h"

/* Reserve bytes in the stream's command ring. Caller holds dev->lock (it
 * may be dropped while waiting for the device). Returns the offset or -1. */
static int cmd_reserve(struct device *dev, struct npu_stream *s, uint32_t bytes,
		       uint32_t *off)
{
	int pass;

	bytes = (bytes + 7) & ~7u;
	if (bytes > CMD_RING_SIZE / 2)
		return -EINVAL;
	for (pass = 0;; pass++) {
		/* retire completed spans: from the cache first, then (only when
		 * short of space) by asking the kernel */
		while (s->span_count) {
			struct cmd_span *sp = &s->span[s->span_head];

			if (sp->point > s->tl->completed &&
			    (pass == 0 ||
			     (sp->point > s->tl->submitted && !s->uq) ||
			     !npu_tl_done(dev, s->tl, sp->point)))
				break;
			s->span_head = (s->span_head + 1) % CMD_INFLIGHT;
			s->span_count--;
		}
		if (!s->span_count)
			s->cmd_head = 0;
		if (s->span_count < CMD_INFLIGHT) {
			uint32_t tail = s->span_count ? s->span[s->span_head].start : 0;
			uint32_t head = s->cmd_head;

			if (!s->span_count || head > tail) {
				/* free: [head, end) and [0, tail) */
				if (head + bytes <= CMD_RING_SIZE) {
					*off = head;
					return 0;
				}
				if (bytes < tail) {
					*off = 0;
					return 0;
				}
			} else if (head + bytes < tail) {
				*off = head;
				return 0;
			}
		}
		if (pass == 0)
			continue;
		/* full: wait for the oldest span */
		if (npu_tl_wait_locked(dev, s->tl, s->span[s->span_head].point))
			return -EIO;
	}
}

static void cmd_commit(struct npu_stream *s, uint32_t off, uint32_t bytes,
		       uint64_t point, uint32_t kernel, uint64_t entry)
{
	unsigned i = (s->span_head + s->span_count) % CMD_INFLIGHT;

	bytes = (bytes + 7) & ~7u;
	s->span[i].start = off;
	s->span[i].end = off + bytes;
	s->span[i].point = point;
	s->span[i].kernel = kernel;
	s->span[i].entry = entry;
	s->span_count++;
	s->cmd_head = off + bytes;
}

/* Hooks of the capture and the trace (npu_core.h) */
atomic_int npu_capture_active;
const struct npu_capture_hooks *_Atomic npu_capture_hooks;
atomic_int npu_trace_active;
const struct npu_trace_hooks *_Atomic npu_trace_hooks;

npu_status_t npu_job_begin(struct device *dev, struct npu_stream *s,
			   uint32_t max_bytes, struct jobctx *jc)
{
	uint32_t off = 0;
	int r;
	/* profiler trace hook (npu_trace.c): room for two TIMESTAMPs */
	const struct npu_trace_hooks *tr = max_bytes && npu_tracing() ?
					   npu_tracer() : NULL;

	if (tr)
		max_bytes += NPU_TRACE_BYTES;
	memset(jc, 0, sizeof(*jc));
	jc->s = s;
	if (max_bytes && s->tl->word && !s->uq) {
		max_bytes += NPU_CMD_SEM_BYTES;
		jc->word = true;
	}
	if (max_bytes) {
		r = cmd_reserve(dev, s, max_bytes, &off);
		if (r)
			return npu_fail(r == -EINVAL ? NPU_ERROR_INVALID_VALUE :
					NPU_ERROR_OS, "command buffer: %s",
					npu_strerror(-r));
	}
	jc->off = off;
	npu_cmdw_init(&jc->w, s->cmd_map + off, s->cmd_va + off, max_bytes);
	if (tr)
		tr->job_begin(dev, jc);
	return NPU_SUCCESS;
}

static npu_status_t jc_add_dep(struct jobctx *jc, struct tl *t, uint64_t point,
			       bool order_only)
{
	if (!point || (!order_only && point <= t->completed))
		return NPU_SUCCESS;
	if (jc->ndeps == jc->cap) {
		unsigned ncap = jc->cap ? jc->cap * 2 : 16;
		struct dep *nd;

		if (jc->deps == jc->inline_deps || !jc->deps) {
			nd = malloc(ncap * sizeof(*nd));
			if (nd && jc->ndeps)
				memcpy(nd, jc->inline_deps, jc->ndeps * sizeof(*nd));
		} else {
			nd = realloc(jc->deps, ncap * sizeof(*nd));
		}
		if (!nd)
			return NPU_ERROR_OUT_OF_MEMORY;
		jc->deps = nd;
		jc->cap = ncap;
	}
	jc->deps[jc->ndeps].tl = t;
	jc->deps[jc->ndeps].point = point;
	jc->deps[jc->ndeps].order_only = order_only;
	jc->ndeps++;
	return NPU_SUCCESS;
}

npu_status_t npu_job_wait(struct jobctx *jc, struct tl *t, uint64_t point)
{
	if (!jc->deps) {
		jc->deps = jc->inline_deps;
		jc->cap = INLINE_DEPS;
	}
	return jc_add_dep(jc, t, point, false);
}

npu_status_t npu_job_order_after(struct jobctx *jc, struct tl *t, uint64_t point)
{
	if (!jc->deps) {
		jc->deps = jc->inline_deps;
		jc->cap = INLINE_DEPS;
	}
	return jc_add_dep(jc, t, point, true);
}

/* The implicit dependencies of a stream's next operation: its own previous
 * point, and CUDA's legacy-stream rules. When the previous point is a job of
 * the same queue, queue order is enough: once that job is submitted nothing
 * is needed, and before, the job is only submitted after it (order only; a
 * fence wait would hold it in the driver until that job has finished and
 * its interrupt was handled, instead of behind it on the ring). */
static npu_status_t jc_wait(void *jc, struct tl *t, uint64_t point)
{
	return npu_job_wait(jc, t, point);
}

static npu_status_t add_stream_deps(struct device *dev, struct jobctx *jc,
				    int queue)
{
	struct npu_stream *s = jc->s;
	npu_status_t st;
	uint64_t prev = s->tl->next;

	if (prev && (queue == Q_NONE || queue != s->last_queue)) {
		st = npu_job_wait(jc, s->tl, prev);
		if (st)
			return st;
	} else if (prev && s->tl->submitted < prev) {
		st = npu_job_order_after(jc, s->tl, prev);
		if (st)
			return st;
	}
	if (jc->no_implicit)
		return NPU_SUCCESS;
	return npu_legacy_deps(dev, s, jc_wait, jc);
}

npu_status_t npu_legacy_deps(struct device *dev, struct npu_stream *s,
			     npu_status_t (*wait)(void *arg, struct tl *t,
						  uint64_t point),
			     void *arg)
{
	struct npu_stream *b;
	npu_status_t st;

	if (s->legacy) {
		for (b = dev->streams; b; b = b->next) {
			/* b's fast launches move next meanwhile: what is
			 * waited for is what npu_legacy_deps_commit records */
			uint64_t n;

			if (b->legacy || (b->flags & NPU_STREAM_NON_BLOCKING))
				continue;
			n = __atomic_load_n(&b->tl->next, __ATOMIC_ACQUIRE);
			b->legacy_pending = n;
			if (n > b->waited_by_legacy) {
				st = wait(arg, b->tl, n);
				if (st)
					return st;
			}
		}
	} else if (!(s->flags & NPU_STREAM_NON_BLOCKING) && dev->legacy) {
		struct tl *l = dev->legacy->tl;

		if (l->next > s->legacy_seen) {
			st = wait(arg, l, l->next);
			if (st)
				return st;
		}
	}
	return NPU_SUCCESS;
}

/* A job takes at most 64 in-fences (driver limit). Before a legacy-stream
 * job that would wait on more than LEGACY_FANIN (for a graph launch, keep)
 * blocking streams, empty barrier jobs on the legacy stream absorb them
 * LEGACY_FANIN at a time; the job itself then waits on the last barrier
 * through stream order. */
#define LEGACY_FANIN 48

static bool legacy_candidate(const struct npu_stream *b)
{
	uint64_t n = __atomic_load_n(&b->tl->next, __ATOMIC_ACQUIRE);

	return !b->legacy && !(b->flags & NPU_STREAM_NON_BLOCKING) &&
	       n > b->waited_by_legacy && n > b->tl->completed;
}

npu_status_t npu_legacy_fanin(struct device *dev, struct npu_stream *s,
			      int queue, unsigned keep)
{
	struct npu_stream *b, *chunk[LEGACY_FANIN];
	uint64_t pts[LEGACY_FANIN];
	unsigned n = 0, k, i;
	npu_status_t st;

	for (b = dev->streams; b; b = b->next)
		n += legacy_candidate(b);
	while (n > keep) {
		struct jobctx jc;

		memset(&jc, 0, sizeof(jc));
		jc.s = s;
		jc.no_implicit = true;
		for (b = dev->streams, k = 0; b && k < LEGACY_FANIN; b = b->next) {
			if (!legacy_candidate(b))
				continue;
			pts[k] = __atomic_load_n(&b->tl->next, __ATOMIC_ACQUIRE);
			st = npu_job_wait(&jc, b->tl, pts[k]);
			if (st) {
				npu_job_abort(&jc);
				return st;
			}
			chunk[k++] = b;
		}
		st = npu_job_submit(dev, &jc, queue, NULL, 0, NULL);
		if (st)
			return st;
		for (i = 0; i < k; i++)
			chunk[i]->waited_by_legacy = pts[i];
		n -= k;
	}
	return NPU_SUCCESS;
}

void npu_legacy_deps_commit(struct device *dev, struct npu_stream *s)
{
	struct npu_stream *b;

	if (s->legacy) {
		for (b = dev->streams; b; b = b->next)
			if (!b->legacy && !(b->flags & NPU_STREAM_NON_BLOCKING) &&
			    b->legacy_pending > b->waited_by_legacy)
				b->waited_by_legacy = b->legacy_pending;
	} else if (!(s->flags & NPU_STREAM_NON_BLOCKING) && dev->legacy) {
		s->legacy_seen = dev->legacy->tl->next;
	}
}

static void jc_release(struct jobctx *jc)
{
	if (jc->deps && jc->deps != jc->inline_deps)
		free(jc->deps);
	jc->deps = NULL;
}

void npu_job_abort(struct jobctx *jc)
{
	jc_release(jc);
}

/* A stream whose queue halted gets a new queue once the halt has been
 * reported (sticky errors stop the work before it gets here until
 * npu_device_reset); before, -EIO. Caller holds dev->lock. */
int npu_uq_revive(struct device *dev, struct npu_stream *s, struct npu_uq *u)
{
	int r;

	if (!npu_uq_halted(u))
		return 0;
	if (!u->halt_reported) {	/* first report the halt */
		npu_check_faults(dev);
		return -EIO;
	}
	r = npu_uq_restart(dev, u, s->qprio);
	if (r)
		return r;
	if (s->tl->uq_status == &npu_uq_wb(u)->status) {
		s->tl->uq_id = u->id;
		s->tl->uq_wptr = 0;
	}
	return 0;
}

/* Where a user-queue job waits for a point: a memory word and the value
 * its WAIT_MEM64 waits for. */
/* The status of a driver call's failure (-errno r) that made a job fail,
 * on either queue kind. */
static npu_status_t driver_status(int r)
{
	return r == -ENOMEM ? NPU_ERROR_OUT_OF_MEMORY :
	       r == -EINVAL ? NPU_ERROR_INVALID_VALUE :
	       r == -ENODEV ? NPU_ERROR_DEVICE_LOST : NPU_ERROR_OS;
}

struct uq_wait {
	uint64_t addr, value;
};

/* The wait a user queue needs for dependency d, if any (0: none, 1: *w).
 * Points of user queues are memory signals; a point only a syncobj has
 * goes through USERQ_WAIT (a system call, for work from kernel queues:
 * graph launches, imported events, streams on kernel queues). Caller
 * holds dev->lock, which a point not yet in the kernel (held back behind
 * a host function of a kernel-queue stream) drops until the point is
 * submitted. */
static int uq_dep(struct device *dev, struct npu_stream *s, struct npu_uq *u,
		  const struct dep *d, struct uq_wait *w)
{
	struct tl *t = d->tl;
	uint64_t p = d->point;
	int r;

	if (d->order_only)	/* queue order, or a fresh event timeline */
		return 0;
	if (t == s->tl && p <= u->last_pt)
		return 0;	/* an earlier job of this queue */
	if (t == s->tl && t->sig_va && p <= npu_tl_uq_pt(t) && p > t->k_pt) {
		/* an earlier job of the stream's other queue (copy or
		 * compute class): the device waits for it on the stream's
		 * signal, unless it has passed (read from memory) */
		if (__atomic_load_n(u->sig, __ATOMIC_ACQUIRE) >= p)
			return 0;
		w->addr = t->sig_va;
		w->value = p;
		return 1;
	}
	if (npu_tl_done(dev, t, p))
		return 0;
	if (t->via && p == t->via_ev_pt && t->via->sig_va &&
	    t->via_pt > t->via->k_pt) {
		w->addr = t->via->sig_va;	/* recorded on a user queue */
		w->value = t->via_pt;
		return 1;
	}
	if (t->sig_va && p <= npu_tl_uq_pt(t) && p > t->k_pt) {
		w->addr = t->sig_va;
		w->value = p;
		return 1;
	}
	if (p > t->submitted) {
		npu_flush_now(dev);
		npu_flush_deferred(dev);
	}
	if (p > t->submitted) {
		/* until its fence exists (not until it signals) */
		uint32_t h = t->handle;

		t->refs++;
		pthread_mutex_unlock(&dev->lock);
		r = npu_syncobj_wait(dev, &h, &p, 1,
				     DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT |
				     DRM_SYNCOBJ_WAIT_FLAGS_WAIT_AVAILABLE);
		pthread_mutex_lock(&dev->lock);
		npu_tl_put(dev, t);
		if (r)
			return -EIO;
	} else if (dev->batch_busy) {
		/* taken into the batch under way, maybe not yet in the kernel:
		 * USERQ_WAIT refuses a point not yet submitted */
		t->refs++;
		npu_batch_wait_idle(dev);
		npu_tl_put(dev, t);
	}
	r = npu_uq_wait_syncobj(dev, u, t->handle, p, &w->value);
	if (r)
		return r;
	w->addr = u->wait_va;
	return 1;
}

/* npu_job_submit on a user queue: its waits (WAIT_MEM64), the job's
 * packets (an INDIRECT to them in the command ring), and a SIGNAL of the
 * stream's point to the stream's memory signal, then one doorbell store.
 * No system call unless a dependency is only in a syncobj. */
static npu_status_t uq_job_submit(struct device *dev, struct jobctx *jc,
				  int queue, struct tl *ev, uint64_t ev_point,
				  uint64_t *point)
{
	struct npu_stream *s = jc->s;
	/* copies and memsets on the copy-class queue (copy engines), once
	 * the stream has one (npu_stream_uq_copy) */
	struct npu_uq *u = queue == Q_COPY && s->uq_copy ? s->uq_copy : s->uq;
	struct uq_wait inline_w[INLINE_DEPS + 1], *wv = inline_w;
	uint64_t pt, cur, own = 0;
	bool own_wait = false;
	struct npu_cmdw w;
	unsigned nw = 0, i;
	uint32_t bytes;
	int r;

	if (npu_cmdw_full(&jc->w)) {
		jc_release(jc);
		return npu_fail(NPU_ERROR_INVALID_VALUE, "command buffer full");
	}
	if (jc->ndeps > INLINE_DEPS) {
		wv = malloc((jc->ndeps + 1) * sizeof(*wv));
		if (!wv) {
			jc_release(jc);
			return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "user queue waits");
		}
	}
	for (i = 0; i < jc->ndeps; i++) {
		if (jc->deps[i].tl == s->tl)
			continue;	/* the stream's own order: below */
		r = uq_dep(dev, s, u, &jc->deps[i], &wv[nw]);
		if (r < 0)
			goto wait_failed;
		nw += r;
	}
	/* The stream's last point, read once no wait above dropped dev->lock
	 * any more: a wait that did let another thread queue work on s, and
	 * its job release s to fast launches (npu_stream_claim again). Its
	 * wait (one: a later point of s covers the earlier ones) is
	 * wv[nw], if the point is not this queue's. */
	for (;;) {
		struct dep d = { .tl = s->tl };

		npu_stream_claim(s);
		cur = s->tl->next;
		if (cur <= own)
			break;
		own = d.point = cur;
		if (cur <= u->last_pt)
			continue;
		r = uq_dep(dev, s, u, &d, &wv[nw]);
		if (r < 0)
			goto wait_failed;
		own_wait = own_wait || r;
	}
	nw += own_wait;
	pt = cur + 1;
	bytes = nw * NPU_CMD_WAIT64_BYTES + NPU_CMD_SIGNAL_BYTES +
		(jc->w.len ? NPU_CMD_INDIRECT_BYTES : 0) +
		(jc->ext_len ? NPU_CMD_INDIRECT_BYTES : 0);
	r = npu_uq_revive(dev, s, u);
	if (!r)
		r = npu_uq_reserve(dev, u, bytes, &w);
	if (r) {
		if (wv != inline_w)
			free(wv);
		jc_release(jc);
		if (r == -EIO) {
			npu_check_faults(dev);
			return npu_fail_sticky(dev, dev->sticky ? dev->sticky :
					       NPU_ERROR_LAUNCH_FAILURE);
		}
		return npu_fail(driver_status(r), "user queue: %s", npu_strerror(-r));
	}
	for (i = 0; i < nw; i++)
		npu_cmd_wait_mem64(&w, wv[i].addr, wv[i].value, 0);
	if (wv != inline_w)
		free(wv);
	if (jc->w.len)
		npu_cmd_indirect(&w, s->cmd_va + jc->off, jc->w.len);
	if (jc->ext_len)
		npu_cmd_indirect(&w, jc->ext_va, jc->ext_len);
	npu_cmd_signal(&w, s->tl->sig_va, pt);
	npu_uq_commit(u, &w);

	if (!jc->no_implicit)
		npu_legacy_deps_commit(dev, s);
	/* the queue that signals the stream's last point (its earlier
	 * points are then signalled too: it waited for them); next last,
	 * for readers of another stream's timeline (npu_internal.h) */
	s->tl->uq_id = u->id;
	__atomic_store_n(&s->tl->uq_pt, pt, __ATOMIC_RELAXED);
	s->tl->uq_wptr = u->wptr;
	s->tl->uq_status = &npu_uq_wb(u)->status;
	__atomic_store_n(&s->tl->word_pt, pt, __ATOMIC_RELAXED);
	__atomic_store_n(&s->tl->next, pt, __ATOMIC_RELEASE);
	u->last_pt = pt;
	if (ev) {
		ev->next = ev_point;
		npu_tl_put(dev, ev->via);
		ev->via = s->tl;
		s->tl->refs++;
		ev->via_pt = pt;
		ev->via_ev_pt = ev_point;
		ev->uq_id = u->id;
		ev->uq_pt = ev_point;
		ev->uq_wptr = u->wptr;
	}
	if (jc->w.len)
		cmd_commit(s, jc->off, jc->w.len, pt, jc->kernel, jc->entry);
	npu_stream_release(s, queue);	/* the fast path again */
	jc_release(jc);
	if (point)
		*point = pt;
	/* the doorbell store faulted: the driver was unbound */
	if (npu_dev_lost(dev))
		return npu_fail_lost();
	return NPU_SUCCESS;
wait_failed:
	if (wv != inline_w)
		free(wv);
	jc_release(jc);
	return npu_fail(r == -EIO ? npu_fail_wait(dev) : driver_status(r),
			"user queue wait: %s", npu_strerror(-r));
}

void npu_stream_claim(struct npu_stream *s)
{
	if (!s->uq || s->legacy)	/* no fast launch on these */
		return;
	npu_spin_lock(&s->lock);
	s->last_queue = Q_NONE;
	npu_spin_unlock(&s->lock);
}

void npu_stream_release(struct npu_stream *s, int queue)
{
	if (!s->uq || s->legacy) {
		s->last_queue = queue;
		return;
	}
	/* the unlock publishes what dev->lock code wrote to the fast path */
	npu_spin_lock(&s->lock);
	s->last_queue = queue;
	npu_spin_unlock(&s->lock);
}

/* Finish a job: the packets written with jc->w. queue is Q_COMPUTE
 * or Q_COPY. ev/ev_point: an extra timeline point to signal (event record).
 * On success *point is the stream point the job signals. Caller holds
 * dev->lock. */
npu_status_t npu_job_submit(struct device *dev, struct jobctx *jc, int queue,
			    struct tl *ev, uint64_t ev_point, uint64_t *point)
{
	struct npu_stream *s = jc->s;
	struct tl *out[2];
	uint64_t out_pt[2];
	unsigned nout = 1, i;
	bool ready = true;
	npu_status_t st;
	int r;

	if (jc->trace)		/* profiler trace hook (npu_trace.c) */
		npu_tracer()->job_end(dev, jc, queue);
	/* from here s's point and dependencies are read and written under
	 * dev->lock alone: no fast launch on s until the job is queued */
	npu_stream_claim(s);
	if (!jc->deps) {
		jc->deps = jc->inline_deps;
		jc->cap = INLINE_DEPS;
	}
	if (s->legacy && !jc->no_implicit && !s->uq) {
		st = npu_legacy_fanin(dev, s, queue, LEGACY_FANIN);
		if (st) {
			jc_release(jc);
			return st;
		}
	}
	st = add_stream_deps(dev, jc, queue);
	if (st) {
		jc_release(jc);
		return npu_fail(st, "out of memory");
	}
	if (s->uq)
		return uq_job_submit(dev, jc, queue, ev, ev_point, point);
	if (jc->ext_len) {	/* a user queue's form only */
		jc_release(jc);
		return npu_fail(NPU_ERROR_INVALID_VALUE, "packets outside the command ring");
	}
	out[0] = s->tl;
	out_pt[0] = s->tl->next + 1;
	if (jc->word) {		/* last: the job's point to the completion word */
		npu_cmd_sem_signal(&jc->w, s->tl->word_va, (uint32_t)out_pt[0]);
	}
	if (npu_cmdw_full(&jc->w)) {	/* more packets than npu_job_begin's room */
		jc_release(jc);
		return npu_fail(NPU_ERROR_INVALID_VALUE, "command buffer full");
	}
	if (ev) {
		out[1] = ev;
		out_pt[1] = ev_point;
		nout = 2;
		if (ev->next > ev->submitted) {
			st = npu_job_order_after(jc, ev, ev->next);
			if (st) {
				jc_release(jc);
				return npu_fail(st, "out of memory");
			}
		}
	}
	/* points of user queues the job waits for: into their syncobjs */
	for (i = 0; i < jc->ndeps; i++) {
		r = npu_tl_bridge(dev, jc->deps[i].tl, jc->deps[i].point);
		if (r) {
			jc_release(jc);
			return npu_fail(NPU_ERROR_OS, "DRM_IOCTL_NPU_USERQ_SIGNAL: %s",
					npu_strerror(-r));
		}
	}
	if (dev->batch)
		ready = false;		/* the submit thread submits it */
	for (i = 0; i < jc->ndeps && ready; i++)
		ready = npu_dep_ready(&jc->deps[i]);
	if (ready) {
		r = npu_submit_now(dev, s->queue[queue], s->cmd_va + jc->off,
				   jc->w.len, jc->deps, jc->ndeps, out, out_pt,
				   nout, jc->bo, jc->nbo);
		if (r) {
			jc_release(jc);
			return npu_fail(driver_status(r),
					"DRM_IOCTL_NPU_SUBMIT: %s", npu_strerror(-r));
		}
	} else if (npu_defer_job(dev, s, s->queue[queue], jc->off, jc->w.len,
				 jc->deps, jc->ndeps, out, out_pt, nout, jc->bo,
				 jc->nbo)) {
		jc_release(jc);
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "deferred job");
	}
	if (!jc->no_implicit)
		npu_legacy_deps_commit(dev, s);
	/* release: the fast path reads the legacy stream's lock-free */
	__atomic_store_n(&s->tl->next, out_pt[0], __ATOMIC_RELEASE);
	if (jc->word)
		s->tl->word_pt = out_pt[0];
	if (ev) {
		ev->next = ev_point;
		/* a synchronize that saw the stream's word has seen this
		 * record too: so must the event's queries (CUDA) */
		npu_tl_put(dev, ev->via);
		ev->via = NULL;
		if (jc->word) {
			ev->via = s->tl;
			s->tl->refs++;
			ev->via_pt = out_pt[0];
			ev->via_ev_pt = ev_point;
		}
	}
	s->last_queue = queue;
	if (jc->w.len)
		cmd_commit(s, jc->off, jc->w.len, out_pt[0], jc->kernel,
			   jc->entry);
	jc_release(jc);
	if (point)
		*point = out_pt[0];
	return NPU_SUCCESS;
}
