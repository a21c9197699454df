/* SPDX-License-Identifier: MIT */
/*
 * npu_tune.c - auto-tuning: measure candidate configurations with
 * device-timed events, in isolation and under concurrent load
 * (Documentation/lib/tuning.rst).
 *
 * The tuner is built on the public calls: its own non-blocking streams,
 * timing events around every run, npu_stream_wait_event for fork/join.
 * It reaches inside the library for two things only:
 *  - waiting for the *first* of several event records to complete (one
 *    drmSyncobjTimelineWait without WAIT_ALL), so the host sleeps in the
 *    kernel until there is something to harvest or top up;
 *  - faults: its streams are marked `tune`; npu_check_faults counts the
 *    failed jobs that hit such streams (dev->faults_tune). After a fault
 *    the tuner drains its streams, blames the candidate whose streams are
 *    sticky, and clears the sticky errors only if every job that failed
 *    since npu_tune() began ran on a tuner stream and no other stream
 *    holds a sticky error.
 *
 * Scheduling: a "slot" is a set of cfg->streams streams that runs one
 * candidate at a time, DEPTH runs in flight (so the device never waits
 * for the host between two runs). A slot switches candidates only when
 * it has nothing in flight, so whatever fails on its streams belongs to
 * its current candidate. Isolation uses one slot; under load,
 * cfg->concurrency slots run at once, plus the load streams, each kept
 * DEPTH instances deep while timed work remains.
 */
/* pthread_rwlock_t (the allocation tables' lock, npu_internal.h) */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xf86drm.h>

#include "npu_core.h"

#define DEPTH		2	/* runs in flight per slot, per load stream */
#define DEFAULT_RUNS	10
#define MAX_RETRIES	3	/* sticky refusals of one candidate's enqueue */

enum { C_WAITING = 0, C_ASSIGNED, C_DONE, C_FAILED };

struct run {
	npu_event_t ev[2];		/* start, end: timing events */
	int cand;
	bool timed;
	bool bad;			/* discard (part of it was refused) */
};

struct slot {
	npu_stream_t st[NPU_TUNE_MAX_STREAMS];
	npu_event_t fork, join[NPU_TUNE_MAX_STREAMS];
	struct run run[DEPTH];		/* FIFO of runs in flight */
	unsigned head, n;
	int cand;			/* -1: none */
	bool filler;			/* untimed runs, to keep the load up */
	unsigned warm_left, timed_left;
	unsigned retries;		/* enqueue refused in a row */
};

struct loadq {
	npu_stream_t st;
	npu_event_t ev[DEPTH];
	unsigned head, n;
};

struct tuner {
	const npu_tune_config *cfg;
	npu_tune_enqueue_fn enqueue;
	void *user;
	struct device *dev;
	npu_tune_result *res;
	unsigned n, runs, nstreams, conc, nload;
	int mode;
	uint32_t seen0, tune0, seen_last;
	npu_status_t *failed;		/* per candidate, across modes */
	unsigned char *state;		/* per candidate, this mode */
	float *samples;			/* n * runs, this mode */
	unsigned *nsamples;
	unsigned next;			/* next candidate to assign */
	unsigned pending;		/* candidates neither done nor failed */
	unsigned filler_rr;
	struct slot *slots;
	unsigned nslots;
	struct loadq *loads;
	unsigned nloads;
	bool fault_pending;
	npu_status_t fatal;		/* abort tuning with this */
};

static npu_status_t launch_kernel(unsigned int i, const npu_stream_t *s,
				  unsigned int ns, void *user)
{
	const npu_kernel_node_params *p = (const npu_kernel_node_params *)user + i;

	(void)ns;
	if (p->nargs > NPU_MAX_KERNEL_ARGS)
		return npu_fail(NPU_ERROR_INVALID_CONFIGURATION,
				"candidate %u: %u kernel arguments", i, p->nargs);
	if (p->function) {	/* a user kernel: argument i in args[i] */
		void *a[NPU_MAX_KERNEL_ARGS];
		unsigned k;

		for (k = 0; k < p->nargs; k++)
			a[k] = (void *)&p->args[k];
		return npu_launch_kernel(p->function, p->grid, p->block,
					 p->scratch_bytes, s[0], a);
	}
	return npu_launch(p->kernel, p->grid, p->args, p->nargs, s[0],
			  NPU_LAUNCH_ASYNC);
}

static bool is_sticky_kind(npu_status_t st)
{
	return st == NPU_ERROR_ILLEGAL_ADDRESS || st == NPU_ERROR_LAUNCH_FAILURE ||
	       st == NPU_ERROR_LAUNCH_TIMEOUT;
}

static npu_status_t dev_sticky(struct device *dev)
{
	npu_status_t st;

	pthread_mutex_lock(&dev->lock);
	st = dev->sticky;
	pthread_mutex_unlock(&dev->lock);
	return st;
}

/* ------------------------------------------------------------------------
 * Setup and teardown
 */
static npu_status_t tune_stream(struct tuner *t, npu_stream_t *out)
{
	struct device *dev;
	struct npu_stream *s;
	npu_status_t st = npu_stream_create(out, NPU_STREAM_NON_BLOCKING, 0);

	if (st)
		return st;
	st = npu_get_stream(*out, &dev, &s);
	if (st)
		return st;
	pthread_mutex_lock(&t->dev->lock);
	s->tune = true;
	pthread_mutex_unlock(&t->dev->lock);
	return NPU_SUCCESS;
}

static void teardown(struct tuner *t)
{
	unsigned i, j;

	for (i = 0; t->slots && i < t->nslots; i++) {
		struct slot *sl = &t->slots[i];

		for (j = 0; j < DEPTH; j++) {
			if (sl->run[j].ev[0])
				npu_event_destroy(sl->run[j].ev[0]);
			if (sl->run[j].ev[1])
				npu_event_destroy(sl->run[j].ev[1]);
		}
		if (sl->fork)
			npu_event_destroy(sl->fork);
		for (j = 0; j < t->nstreams; j++) {
			if (sl->join[j])
				npu_event_destroy(sl->join[j]);
			if (sl->st[j])
				npu_stream_destroy(sl->st[j]);	/* waits */
		}
	}
	for (i = 0; t->loads && i < t->nloads; i++) {
		for (j = 0; j < DEPTH; j++)
			if (t->loads[i].ev[j])
				npu_event_destroy(t->loads[i].ev[j]);
		if (t->loads[i].st)
			npu_stream_destroy(t->loads[i].st);
	}
	free(t->slots);
	free(t->loads);
	t->slots = NULL;
	t->loads = NULL;
	t->nslots = t->nloads = 0;
}

static npu_status_t setup(struct tuner *t, unsigned nslots, unsigned nloads)
{
	npu_status_t st = NPU_SUCCESS;
	unsigned i, j;

	t->slots = calloc(nslots, sizeof(*t->slots));
	t->loads = nloads ? calloc(nloads, sizeof(*t->loads)) : NULL;
	t->nslots = nslots;
	t->nloads = nloads;
	if (!t->slots || (nloads && !t->loads))
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "tuner state");
	for (i = 0; i < nslots && !st; i++) {
		struct slot *sl = &t->slots[i];

		sl->cand = -1;
		for (j = 0; j < t->nstreams && !st; j++)
			st = tune_stream(t, &sl->st[j]);
		for (j = 0; j < DEPTH && !st; j++) {
			st = npu_event_create(&sl->run[j].ev[0], NPU_EVENT_DEFAULT);
			if (!st)
				st = npu_event_create(&sl->run[j].ev[1], NPU_EVENT_DEFAULT);
		}
		if (t->nstreams > 1 && !st)
			st = npu_event_create(&sl->fork, NPU_EVENT_DISABLE_TIMING);
		for (j = 1; j < t->nstreams && !st; j++)
			st = npu_event_create(&sl->join[j], NPU_EVENT_DISABLE_TIMING);
	}
	for (i = 0; i < nloads && !st; i++) {
		st = tune_stream(t, &t->loads[i].st);
		for (j = 0; j < DEPTH && !st; j++)
			st = npu_event_create(&t->loads[i].ev[j],
					      NPU_EVENT_DISABLE_TIMING);
	}
	return st;
}

/* ------------------------------------------------------------------------
 * Candidates
 */
static void fail_candidate(struct tuner *t, int c, npu_status_t st,
			   const char *msg)
{
	if (t->state[c] == C_FAILED)
		return;
	if (t->state[c] != C_DONE)
		t->pending--;
	t->state[c] = C_FAILED;
	t->failed[c] = st;
	snprintf(t->res[c].message, sizeof(t->res[c].message), "%s", msg);
}

/* Something was refused: a sticky error (then handle the fault and try
 * again) or a real failure of our own call (then stop). */
static void refused(struct tuner *t, npu_status_t st)
{
	if (dev_sticky(t->dev) || is_sticky_kind(st))
		t->fault_pending = true;
	else if (!t->fatal)
		t->fatal = st;
}

/* Queue one run of the slot's candidate: start event, fork, the
 * candidate, join, end event. */
static void issue_run(struct tuner *t, struct slot *sl)
{
	struct run *r = &sl->run[(sl->head + sl->n) % DEPTH];
	npu_stream_t s0 = sl->st[0];
	npu_status_t st, cst;
	bool bad = false;
	unsigned j;

	st = npu_event_record(r->ev[0], s0);
	if (st) {
		refused(t, st);
		return;
	}
	if (t->nstreams > 1) {
		st = npu_event_record(sl->fork, s0);
		for (j = 1; j < t->nstreams && !st; j++)
			st = npu_stream_wait_event(sl->st[j], sl->fork, 0);
		if (st) {
			refused(t, st);
			bad = true;
		}
	}
	cst = bad ? NPU_SUCCESS : t->enqueue((unsigned)sl->cand, sl->st,
					     t->nstreams, t->user);
	if (cst && (is_sticky_kind(cst) || dev_sticky(t->dev)) &&
	    sl->retries++ < MAX_RETRIES) {
		/* refused because of a sticky error (maybe another tuner's,
		 * already cleared): find whose it is, then run it again */
		t->fault_pending = true;
		bad = true;
	} else if (cst) {
		fail_candidate(t, sl->cand, cst, npu_last_error_message());
	} else {
		sl->retries = 0;
	}
	for (j = 1; j < t->nstreams; j++) {
		st = npu_event_record(sl->join[j], sl->st[j]);
		if (!st)
			st = npu_stream_wait_event(s0, sl->join[j], 0);
		if (st) {
			refused(t, st);
			bad = true;
		}
	}
	st = npu_event_record(r->ev[1], s0);
	if (st) {
		refused(t, st);
		return;				/* not in flight */
	}
	r->cand = sl->cand;
	r->timed = !sl->filler && !sl->warm_left;
	r->bad = bad;
	sl->n++;
	if (bad || sl->filler)
		return;				/* a bad run is run again */
	if (sl->warm_left)
		sl->warm_left--;
	else
		sl->timed_left--;
}

static bool slot_finished(struct tuner *t, struct slot *sl)
{
	if (sl->cand < 0 || t->state[sl->cand] == C_FAILED)
		return true;
	if (sl->filler)
		return t->pending == 0;
	return !sl->warm_left && !sl->timed_left;
}

/* Give the slot its next candidate, or a filler; false if none. */
static bool assign(struct tuner *t, struct slot *sl)
{
	unsigned k;

	while (t->next < t->n && t->state[t->next] != C_WAITING)
		t->next++;
	if (t->next < t->n) {
		sl->cand = (int)t->next++;
		sl->filler = false;
		sl->warm_left = t->cfg->warmup;
		sl->timed_left = t->runs;
		sl->retries = 0;
		t->state[sl->cand] = C_ASSIGNED;
		return true;
	}
	sl->cand = -1;
	if (t->mode != NPU_TUNE_MODE_UNDER_LOAD || !t->pending)
		return false;
	for (k = 0; k < t->n; k++) {
		unsigned c = (t->filler_rr + k) % t->n;

		if (t->state[c] != C_FAILED) {
			t->filler_rr = c + 1;
			sl->cand = (int)c;
			sl->filler = true;
			return true;
		}
	}
	return false;
}

static void issue_load(struct tuner *t, unsigned i)
{
	struct loadq *lq = &t->loads[i];
	npu_status_t st;

	st = t->cfg->load(i, &lq->st, 1, t->cfg->load_user);
	if (st) {
		if (dev_sticky(t->dev)) {
			t->fault_pending = true;
		} else if (!t->fatal) {
			char msg[256];

			snprintf(msg, sizeof(msg), "%s", npu_last_error_message());
			t->fatal = npu_fail(st, "npu_tune: the load function "
					    "failed: %s", msg);
		}
		return;
	}
	st = npu_event_record(lq->ev[(lq->head + lq->n) % DEPTH], lq->st);
	if (st) {
		refused(t, st);
		return;
	}
	lq->n++;
}

static void fill(struct tuner *t)
{
	unsigned i;

	for (i = 0; i < t->nloads && t->pending; i++)
		while (t->loads[i].n < DEPTH && !t->fault_pending && !t->fatal)
			issue_load(t, i);
	for (i = 0; i < t->nslots; i++) {
		struct slot *sl = &t->slots[i];

		while (sl->n < DEPTH && !t->fault_pending && !t->fatal) {
			if (slot_finished(t, sl)) {
				if (sl->n || !assign(t, sl))
					break;
				continue;
			}
			issue_run(t, sl);
		}
	}
}

/* ------------------------------------------------------------------------
 * Waiting, harvesting, faults
 */
static bool ev_done(struct device *dev, npu_event_t e)
{
	return npu_tl_done(dev, e->tl, npu_tl_next(e->tl));
}

/* Block until the oldest run of some slot or load instance completes. */
static npu_status_t wait_any(struct tuner *t)
{
	uint32_t h[2 * NPU_TUNE_MAX_STREAMS + NPU_TUNE_MAX_STREAMS];
	uint64_t pt[2 * NPU_TUNE_MAX_STREAMS + NPU_TUNE_MAX_STREAMS];
	unsigned n = 0, i;
	int r;

	pthread_mutex_lock(&t->dev->lock);
	for (i = 0; i < t->nslots; i++) {
		struct slot *sl = &t->slots[i];
		npu_event_t e;

		if (!sl->n)
			continue;
		e = sl->run[sl->head].ev[1];
		npu_tl_bridge(t->dev, e->tl, e->tl->next);	/* user queues */
		h[n] = e->tl->handle;
		pt[n++] = e->tl->next;
	}
	for (i = 0; i < t->nloads; i++) {
		struct loadq *lq = &t->loads[i];
		npu_event_t e;

		if (!lq->n)
			continue;
		e = lq->ev[lq->head];
		npu_tl_bridge(t->dev, e->tl, e->tl->next);
		h[n] = e->tl->handle;
		pt[n++] = e->tl->next;
	}
	pthread_mutex_unlock(&t->dev->lock);
	if (!n)
		return NPU_SUCCESS;
	/* in slices that notice device loss (npu_syncobj_wait) */
	r = npu_syncobj_wait(t->dev, h, pt, n,
			     DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT);
	return r ? npu_fail_wait(t->dev) : NPU_SUCCESS;
}

/* Wait for every stream of the tuner. */
static void drain(struct tuner *t)
{
	struct device *dev = t->dev;
	struct npu_stream *s;
	unsigned i, j;

	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < t->nslots; i++)
		for (j = 0; j < t->nstreams; j++) {
			s = t->slots[i].st[j];
			npu_tl_wait_locked(dev, s->tl, npu_tl_next(s->tl));
		}
	for (i = 0; i < t->nloads; i++) {
		s = t->loads[i].st;
		npu_tl_wait_locked(dev, s->tl, npu_tl_next(s->tl));
	}
	pthread_mutex_unlock(&dev->lock);
}

/* Discard the runs of the slot that are not taken yet; the slot runs
 * them again. */
static void rerun_in_flight(struct tuner *t, struct slot *sl)
{
	unsigned k;

	for (k = 0; k < sl->n; k++) {
		struct run *r = &sl->run[(sl->head + k) % DEPTH];

		if (r->bad)
			continue;
		r->bad = true;
		if (sl->filler || r->cand != sl->cand ||
		    t->state[r->cand] != C_ASSIGNED)
			continue;
		if (r->timed)
			sl->timed_left++;
		else
			sl->warm_left++;
	}
}

/* A job failed somewhere, or a sticky error appeared: drain, blame, clear
 * what is ours, or stop. */
static void handle_fault(struct tuner *t)
{
	struct device *dev = t->dev;
	struct npu_stream *s;
	npu_status_t load_st = NPU_SUCCESS, other;
	char msg[sizeof(dev->sticky_msg)];
	bool foreign, tune_sticky = false;
	unsigned i, j, blamed = 0;

	drain(t);
	pthread_mutex_lock(&dev->lock);
	npu_check_faults(dev);
	snprintf(msg, sizeof(msg), "%s", dev->sticky_msg);
	for (i = 0; i < t->nslots; i++) {
		struct slot *sl = &t->slots[i];

		for (j = 0; j < t->nstreams; j++) {
			s = sl->st[j];
			if (s->sticky && sl->cand >= 0) {
				fail_candidate(t, sl->cand, s->sticky, msg);
				blamed++;
				break;
			}
		}
	}
	/* The driver reports only the latest failure: if more jobs failed
	 * than streams were found sticky, a run not yet taken may have
	 * failed unnoticed. Take none of them; they run again (a candidate
	 * that faults again is then blamed). */
	if (dev->faults_seen - t->seen_last > blamed)
		for (i = 0; i < t->nslots; i++)
			rerun_in_flight(t, &t->slots[i]);
	for (i = 0; i < t->nloads; i++) {
		s = t->loads[i].st;
		if (s->sticky && !load_st)
			load_st = s->sticky;
	}
	foreign = dev->faults_seen - t->seen0 != dev->faults_tune - t->tune0;
	other = dev->sticky;
	for (s = dev->streams; s; s = s->next) {
		if (!s->sticky)
			continue;
		if (s->tune) {
			tune_sticky = true;
		} else {
			foreign = true;
			other = s->sticky;
		}
	}
	if (dev->sticky && !tune_sticky)
		foreign = true;
	if (foreign) {
		/* someone else's failure: report it like any call would */
		pthread_mutex_unlock(&dev->lock);
		if (!t->fatal)
			t->fatal = npu_fail_sticky(dev, other ? other :
						   NPU_ERROR_LAUNCH_FAILURE);
		return;
	}
	dev->sticky = NPU_SUCCESS;
	dev->sticky_msg[0] = 0;
	for (i = 0; i < t->nslots; i++)
		for (j = 0; j < t->nstreams; j++) {
			s = t->slots[i].st[j];
			s->sticky = NPU_SUCCESS;
		}
	for (i = 0; i < t->nloads; i++) {
		s = t->loads[i].st;
		s->sticky = NPU_SUCCESS;
	}
	t->seen_last = dev->faults_seen;
	pthread_mutex_unlock(&dev->lock);
	t->fault_pending = false;
	if (load_st && !t->fatal)
		t->fatal = npu_fail(load_st, "the tuning load failed: %s", msg);
}

/* Take the completed runs and load instances. */
static void harvest(struct tuner *t)
{
	struct device *dev = t->dev;
	unsigned done[NPU_TUNE_MAX_STREAMS], ldone[NPU_TUNE_MAX_STREAMS];
	unsigned i, k;
	bool fault;

	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < t->nslots; i++) {
		struct slot *sl = &t->slots[i];

		for (k = 0; k < sl->n; k++)
			if (!ev_done(dev, sl->run[(sl->head + k) % DEPTH].ev[1]))
				break;
		done[i] = k;
	}
	for (i = 0; i < t->nloads; i++) {
		struct loadq *lq = &t->loads[i];

		for (k = 0; k < lq->n; k++)
			if (!ev_done(dev, lq->ev[(lq->head + k) % DEPTH]))
				break;
		ldone[i] = k;
	}
	/* refresh the streams' completion caches, so that the check below
	 * marks their work so far fault-free (the library names a hung
	 * kernel as the first launch after that point) */
	for (i = 0; i < t->nslots; i++)
		for (k = 0; k < t->nstreams; k++) {
			struct npu_stream *s = t->slots[i].st[k];

			npu_tl_done(dev, s->tl, s->tl->submitted);
		}
	/* after the completions: a failed job is recorded before its fence
	 * signals, so a fault of any run seen complete is visible here */
	npu_check_faults(dev);
	fault = dev->faults_seen != t->seen_last || dev->sticky;
	pthread_mutex_unlock(&dev->lock);
	if (fault) {
		handle_fault(t);	/* drains: everything is complete */
		for (i = 0; i < t->nslots; i++)
			done[i] = t->slots[i].n;
		for (i = 0; i < t->nloads; i++)
			ldone[i] = t->loads[i].n;
	}
	for (i = 0; i < t->nloads; i++) {
		t->loads[i].head = (t->loads[i].head + ldone[i]) % DEPTH;
		t->loads[i].n -= ldone[i];
	}
	for (i = 0; i < t->nslots; i++) {
		struct slot *sl = &t->slots[i];

		for (k = 0; k < done[i]; k++) {
			struct run *r = &sl->run[sl->head];
			float ms = 0;
			npu_status_t st;
			int c = r->cand;

			sl->head = (sl->head + 1) % DEPTH;
			sl->n--;
			/* a bad run was not counted: it is run again */
			if (r->bad || !r->timed || t->state[c] != C_ASSIGNED)
				continue;
			st = npu_event_elapsed_time(&ms, r->ev[0], r->ev[1]);
			if (st) {
				fail_candidate(t, c, st, npu_last_error_message());
				continue;
			}
			t->samples[(size_t)c * t->runs + t->nsamples[c]++] = ms;
			if (t->nsamples[c] == t->runs) {
				t->state[c] = C_DONE;
				t->pending--;
			}
		}
	}
}

/* ------------------------------------------------------------------------
 * Phases and statistics
 */
static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

static void stats(struct tuner *t, unsigned c, npu_tune_stats *o)
{
	float *v = t->samples + (size_t)c * t->runs;
	unsigned n = t->nsamples[c], i;
	double sum = 0;

	memset(o, 0, sizeof(*o));
	o->runs = n;
	o->status = t->state[c] == C_FAILED ? t->failed[c] :
		    t->state[c] == C_DONE ? NPU_SUCCESS : NPU_ERROR_NOT_READY;
	if (t->state[c] == C_FAILED) {
		o->runs = 0;
		return;
	}
	if (!n)
		return;
	qsort(v, n, sizeof(*v), cmp_float);
	for (i = 0; i < n; i++)
		sum += v[i];
	o->min_ms = v[0];
	o->max_ms = v[n - 1];
	o->median_ms = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	o->mean_ms = (float)(sum / n);
}

static npu_status_t phase(struct tuner *t, int mode)
{
	unsigned c, i;
	bool busy;

	t->mode = mode;
	t->next = 0;
	t->pending = 0;
	t->filler_rr = 0;
	for (c = 0; c < t->n; c++) {
		t->nsamples[c] = 0;
		t->state[c] = t->failed[c] ? C_FAILED : C_WAITING;
		if (!t->failed[c])
			t->pending++;
	}
	t->fatal = setup(t, mode == NPU_TUNE_MODE_UNDER_LOAD ? t->conc : 1,
			 mode == NPU_TUNE_MODE_UNDER_LOAD ? t->nload : 0);
	while (!t->fatal) {
		fill(t);
		if (t->fatal)
			break;
		if (t->fault_pending) {
			harvest(t);	/* sees the sticky error, handles it */
			if (t->fault_pending && !t->fatal)
				handle_fault(t);
			continue;
		}
		busy = false;
		for (i = 0; i < t->nslots; i++)
			busy |= t->slots[i].n > 0;
		for (i = 0; i < t->nloads; i++)
			busy |= t->loads[i].n > 0;
		if (!busy)
			break;		/* nothing left to run */
		t->fatal = wait_any(t);
		if (!t->fatal)
			harvest(t);
	}
	if (t->fatal)
		drain(t);
	teardown(t);
	for (c = 0; c < t->n; c++)
		stats(t, c, &t->res[c].mode[mode]);
	return t->fatal;
}

static npu_status_t check_config(const npu_tune_config *cfg,
				 const npu_tune_result *results)
{
	if (!cfg || !results)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "npu_tune: %s is NULL",
				!cfg ? "config" : "results");
	if (!cfg->candidates || cfg->candidates > NPU_TUNE_MAX_CANDIDATES)
		return npu_fail(NPU_ERROR_INVALID_VALUE,
				"npu_tune: %u candidates (1..%u)", cfg->candidates,
				NPU_TUNE_MAX_CANDIDATES);
	if (!cfg->enqueue == !cfg->kernels)
		return npu_fail(NPU_ERROR_INVALID_VALUE,
				"npu_tune: give exactly one of enqueue and kernels");
	if (cfg->modes & ~(NPU_TUNE_ISOLATED | NPU_TUNE_UNDER_LOAD))
		return npu_fail(NPU_ERROR_INVALID_VALUE,
				"npu_tune: unknown modes 0x%x", cfg->modes);
	if (cfg->flags)
		return npu_fail(NPU_ERROR_INVALID_VALUE,
				"npu_tune: unknown flags 0x%x", cfg->flags);
	if (cfg->runs > NPU_TUNE_MAX_RUNS || cfg->warmup > NPU_TUNE_MAX_RUNS)
		return npu_fail(NPU_ERROR_INVALID_VALUE,
				"npu_tune: %u runs, %u warmup runs (at most %u)",
				cfg->runs, cfg->warmup, NPU_TUNE_MAX_RUNS);
	if (cfg->streams > NPU_TUNE_MAX_STREAMS ||
	    cfg->concurrency > NPU_TUNE_MAX_STREAMS ||
	    cfg->load_streams > NPU_TUNE_MAX_STREAMS)
		return npu_fail(NPU_ERROR_INVALID_VALUE,
				"npu_tune: streams %u, concurrency %u, load "
				"streams %u (each at most %u)", cfg->streams,
				cfg->concurrency, cfg->load_streams,
				NPU_TUNE_MAX_STREAMS);
	if (cfg->load_streams && !cfg->load)
		return npu_fail(NPU_ERROR_INVALID_VALUE,
				"npu_tune: load_streams without a load function");
	return NPU_SUCCESS;
}

NPU_EXPORT npu_status_t npu_tune(const npu_tune_config *cfg,
				 npu_tune_result *results, int *best)
{
	npu_status_t saved = npu_peek_last_error(), st;
	struct tuner t;
	unsigned modes, c, m;

	st = check_config(cfg, results);
	if (st)
		return st;
	memset(&t, 0, sizeof(t));
	st = npu_cur_dev(&t.dev);
	if (st)
		return st;
	t.cfg = cfg;
	t.res = results;
	t.n = cfg->candidates;
	t.runs = cfg->runs ? cfg->runs : DEFAULT_RUNS;
	t.nstreams = cfg->streams ? cfg->streams : 1;
	t.conc = cfg->concurrency ? cfg->concurrency :
		 t.n < t.dev->prop.compute_rings ? t.n : t.dev->prop.compute_rings;
	if (!t.conc)
		t.conc = 1;
	t.nload = cfg->load ? (cfg->load_streams ? cfg->load_streams : 1) : 0;
	if (!cfg->load && t.conc < 2 && (!cfg->modes ||
					 (cfg->modes & NPU_TUNE_UNDER_LOAD)))
		return npu_fail(NPU_ERROR_INVALID_VALUE,
				"npu_tune: under-load mode without any load (no "
				"load function, concurrency 1)");
	/* an idle device, and any sticky error reported before we start */
	st = npu_device_synchronize();
	if (st)
		return st;
	t.enqueue = cfg->enqueue ? cfg->enqueue : launch_kernel;
	t.user = cfg->enqueue ? cfg->user : (void *)cfg->kernels;
	modes = cfg->modes ? cfg->modes : NPU_TUNE_ISOLATED | NPU_TUNE_UNDER_LOAD;

	t.failed = calloc(t.n, sizeof(*t.failed));
	t.state = calloc(t.n, sizeof(*t.state));
	t.nsamples = calloc(t.n, sizeof(*t.nsamples));
	t.samples = calloc((size_t)t.n * t.runs, sizeof(*t.samples));
	if (!t.failed || !t.state || !t.nsamples || !t.samples) {
		st = npu_fail(NPU_ERROR_OUT_OF_MEMORY, "npu_tune: %u candidates",
			      t.n);
		goto out;
	}
	for (c = 0; c < t.n; c++) {
		memset(&results[c], 0, sizeof(results[c]));
		for (m = 0; m < NPU_TUNE_MODES; m++)
			results[c].mode[m].status = NPU_ERROR_NOT_READY;
	}
	pthread_mutex_lock(&t.dev->lock);
	t.seen0 = t.seen_last = t.dev->faults_seen;
	t.tune0 = t.dev->faults_tune;
	pthread_mutex_unlock(&t.dev->lock);

	for (m = 0; m < NPU_TUNE_MODES && !st; m++)
		if (modes & (1u << m))
			st = phase(&t, (int)m);
out:
	if (best)
		for (m = 0; m < NPU_TUNE_MODES; m++) {
			best[m] = -1;
			for (c = 0; !st && c < t.n; c++) {
				const npu_tune_stats *s = &results[c].mode[m];

				if (s->status == NPU_SUCCESS && s->runs &&
				    (best[m] < 0 ||
				     s->median_ms < results[best[m]].mode[m].median_ms))
					best[m] = (int)c;
			}
		}
	free(t.failed);
	free(t.state);
	free(t.nsamples);
	free(t.samples);
	if (!st)
		npu_set_last_error(saved);
	return st;
}
