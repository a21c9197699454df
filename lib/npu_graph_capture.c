/* SPDX-License-Identifier: MIT */
/*
 * npu_graph_capture.c - stream capture (cudaStreamBeginCapture and its
 * rules): while a stream captures, the enqueue calls reach this file
 * through the capture hooks of npu_core.h and add nodes to the capture's
 * graph instead of running. Documentation/lib/graphs.rst describes it.
 *
 * Locking: cap_lock (capture state) is taken before dev->lock (the capture
 * hooks run before the calls lock the device).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xf86drm.h>

#include "npu_graph.h"

/* ------------------------------------------------------------------------
 * Stream capture
 */
struct capture {
	struct device *dev;
	struct npu_graph *g;
	npu_stream_capture_mode_t mode;
	pthread_t thread;
	struct npu_stream *origin;
	bool invalid;
};

struct capstream {			/* a stream taking part in a capture */
	struct capstream *next;
	struct npu_stream *s;
	struct capture *c;
	struct npu_graph_node **front;	/* the next node depends on these */
	unsigned nfront, cap;
};

struct capevent {			/* an event recorded during capture */
	struct capevent *next;
	struct npu_event *e;
	struct capture *c;
	struct npu_graph_node **front;
	unsigned nfront;
};

static pthread_mutex_t cap_lock = PTHREAD_MUTEX_INITIALIZER;
static struct capstream *capstreams;
static struct capevent *capevents;

static struct capstream *cs_find(struct npu_stream *s)
{
	struct capstream *c;

	for (c = capstreams; c; c = c->next)
		if (c->s == s)
			return c;
	return NULL;
}

static struct capevent *ce_find(struct npu_event *e)
{
	struct capevent *c;

	for (c = capevents; c; c = c->next)
		if (c->e == e)
			return c;
	return NULL;
}

static int front_set(struct capstream *cs, struct npu_graph_node **v, unsigned n)
{
	if (n > cs->cap) {
		struct npu_graph_node **nf = realloc(cs->front, n * sizeof(*nf));

		if (!nf)
			return -1;
		cs->front = nf;
		cs->cap = n;
	}
	if (n)
		memcpy(cs->front, v, n * sizeof(*v));
	cs->nfront = n;
	return 0;
}

static int front_add(struct capstream *cs, struct npu_graph_node **v, unsigned n)
{
	unsigned i, k;

	for (i = 0; i < n; i++) {
		for (k = 0; k < cs->nfront; k++)
			if (cs->front[k] == v[i])
				break;
		if (k < cs->nfront)
			continue;
		if (cs->nfront == cs->cap) {
			unsigned nc = cs->cap ? 2 * cs->cap : 4;
			struct npu_graph_node **nf = realloc(cs->front, nc * sizeof(*nf));

			if (!nf)
				return -1;
			cs->front = nf;
			cs->cap = nc;
		}
		cs->front[cs->nfront++] = v[i];
	}
	return 0;
}

static void invalidate(struct capture *c)
{
	c->invalid = true;
}

/* Invalidate the captures of dev that forbid unsafe calls from this thread
 * (GLOBAL: any thread; THREAD_LOCAL: the capturing thread; RELAXED: none);
 * true if there was one. Caller holds cap_lock. */
static bool invalidate_global(struct device *dev)
{
	struct capstream *cs;
	bool any = false;

	for (cs = capstreams; cs; cs = cs->next)
		if (cs->c->dev == dev && cs->c->mode != NPU_STREAM_CAPTURE_MODE_RELAXED &&
		    (cs->c->mode == NPU_STREAM_CAPTURE_MODE_GLOBAL ||
		     pthread_equal(cs->c->thread, pthread_self()))) {
			invalidate(cs->c);
			any = true;
		}
	return any;
}

/* Work on the legacy stream would wait for every blocking stream: while a
 * blocking stream captures, that is an implicit dependency on the capture,
 * refused in every capture mode (as CUDA). Invalidates those captures;
 * returns whether there was one. Caller holds cap_lock. */
static bool invalidate_blocking(struct device *dev)
{
	struct capstream *cs;
	bool any = false;

	for (cs = capstreams; cs; cs = cs->next)
		if (cs->c->dev == dev && !cs->s->legacy &&
		    !(cs->s->flags & NPU_STREAM_NON_BLOCKING)) {
			invalidate(cs->c);
			any = true;
		}
	return any;
}

/* How a call on a stream that does not capture synchronizes */
enum { SYNC_NONE, SYNC_STREAM, SYNC_DEVICE };

/* The rules for work on s (not capturing) while captures are active:
 * a device synchronize, or a synchronous call on the legacy stream, where
 * a capture forbids it; the legacy stream while a blocking stream
 * captures. Returns true (and *st) when refused. Caller holds cap_lock. */
static bool outside_refused(struct device *dev, struct npu_stream *s, int sync,
			    npu_status_t *st)
{
	if ((sync == SYNC_DEVICE || (s->legacy && sync == SYNC_STREAM)) &&
	    invalidate_global(dev)) {
		*st = npu_fail(NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED,
			       "synchronous operation while a stream captures; the capture is invalidated");
		return true;
	}
	if (s->legacy && invalidate_blocking(dev)) {
		*st = npu_fail(NPU_ERROR_STREAM_CAPTURE_IMPLICIT,
			       "legacy stream used while a blocking stream captures; the capture is invalidated");
		return true;
	}
	return false;
}

/* Common part of the enqueue hooks. Returns: 1 and *cs for a capturing
 * stream (cap_lock held on return), 0 (not handled, lock released), or -1
 * (handled with *st, lock released). */
static int cap_enter(npu_stream_t h, struct capstream **csp, npu_status_t *st,
		     int sync)
{
	struct device *dev;
	struct npu_stream *s;
	struct capstream *cs;

	if (npu_get_stream(h, &dev, &s)) {
		npu_get_last_error();	/* the call itself reports it */
		return 0;
	}
	pthread_mutex_lock(&cap_lock);
	cs = cs_find(s);
	if (cs) {
		if (cs->c->invalid) {
			pthread_mutex_unlock(&cap_lock);
			*st = npu_fail(NPU_ERROR_STREAM_CAPTURE_INVALIDATED,
				       "the stream's capture was invalidated earlier");
			return -1;
		}
		*csp = cs;
		return 1;
	}
	if (outside_refused(dev, s, sync, st)) {
		pthread_mutex_unlock(&cap_lock);
		return -1;
	}
	pthread_mutex_unlock(&cap_lock);
	return 0;
}

/* Add node n after the stream's frontier; it becomes the frontier. Caller
 * holds cap_lock. */
static npu_status_t cap_node(struct capstream *cs, struct npu_graph_node *n)
{
	unsigned i;

	for (i = 0; i < cs->nfront; i++)
		if (npu_graph_add_pred(n, cs->front[i]) < 0)
			return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "capture");
	if (front_set(cs, &n, 1))
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "capture");
	return NPU_SUCCESS;
}

static bool cap_done(struct capstream *cs, npu_graph_node_t n, npu_status_t st,
		     npu_status_t *out)
{
	if (!st)
		st = cap_node(cs, n);
	if (st)
		invalidate(cs->c);
	pthread_mutex_unlock(&cap_lock);
	*out = st;
	return true;
}

static bool cap_launch(npu_stream_t h, npu_kernel_t kernel, npu_dim3 grid,
		    const uint64_t *args, unsigned nargs, unsigned flags,
		    npu_status_t *st)
{
	struct capstream *cs = NULL;
	npu_kernel_node_params p;
	npu_graph_node_t n = NULL;
	npu_status_t r;
	int e = cap_enter(h, &cs, st, (flags & NPU_LAUNCH_SYNC_DEVICE) ? SYNC_DEVICE :
			  (flags & NPU_LAUNCH_SYNC) ? SYNC_STREAM : SYNC_NONE);

	if (e <= 0)
		return e < 0;
	if (flags & (NPU_LAUNCH_SYNC | NPU_LAUNCH_SYNC_DEVICE)) {
		invalidate(cs->c);
		pthread_mutex_unlock(&cap_lock);
		*st = npu_fail(NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED,
			       "a synchronous launch on a capturing stream; the capture is invalidated");
		return true;
	}
	memset(&p, 0, sizeof(p));
	p.kernel = kernel;
	p.grid = grid;
	p.nargs = nargs;
	if (nargs > NPU_MAX_KERNEL_ARGS || (nargs && !args)) {
		pthread_mutex_unlock(&cap_lock);
		*st = npu_fail(NPU_ERROR_INVALID_VALUE, "bad arguments");
		return true;
	}
	if (nargs)
		memcpy(p.args, args, 8 * nargs);
	r = npu_graph_add_kernel_node(&n, cs->c->g, NULL, 0, &p);
	return cap_done(cs, n, r, st);
}

static bool cap_memcpy(npu_stream_t h, void *dst, const void *src, size_t count,
		    npu_memcpy_kind_t kind, bool sync, npu_status_t *st)
{
	struct capstream *cs = NULL;
	npu_graph_node_t n = NULL;
	uint64_t a, b;
	uint32_t bo[2];
	bool pg = false;
	npu_status_t r;
	int e = cap_enter(h, &cs, st, sync ? SYNC_STREAM : SYNC_NONE);

	if (e <= 0)
		return e < 0;
	r = npu_graph_check_copy(cs->c->dev, dst, src, count, kind, &a, &b, bo, &pg, false);
	if (r && pg) {
		invalidate(cs->c);
		pthread_mutex_unlock(&cap_lock);
		*st = npu_fail(NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED,
			       "a copy to or from pageable memory cannot be captured; the capture is invalidated");
		return true;
	}
	if (!r)
		r = npu_graph_add_memcpy_node(&n, cs->c->g, NULL, 0, dst, src,
					      count, kind);
	return cap_done(cs, n, r, st);
}

static bool cap_memset(npu_stream_t h, void *p, int value, size_t count, bool sync,
		    npu_status_t *st)
{
	struct capstream *cs = NULL;
	npu_graph_node_t n = NULL;
	npu_status_t r;
	int e = cap_enter(h, &cs, st, sync ? SYNC_STREAM : SYNC_NONE);

	if (e <= 0)
		return e < 0;
	r = npu_graph_add_memset_node(&n, cs->c->g, NULL, 0, p, value, count);
	return cap_done(cs, n, r, st);
}

static bool cap_host_func(npu_stream_t h, npu_host_fn_t fn, void *user,
		       npu_status_t *st)
{
	struct capstream *cs = NULL;
	npu_graph_node_t n = NULL;
	npu_status_t r;
	int e = cap_enter(h, &cs, st, SYNC_NONE);

	if (e <= 0)
		return e < 0;
	r = npu_graph_add_host_node(&n, cs->c->g, NULL, 0, fn, user);
	return cap_done(cs, n, r, st);
}

static bool cap_event_record(npu_event_t ev, npu_stream_t h, npu_status_t *st)
{
	struct capstream *cs = NULL;
	struct capevent *ce;
	int e;

	if (!ev || !npu_reg_check(ev, REG_EVENT))
		return false;
	e = cap_enter(h, &cs, st, SYNC_NONE);
	if (e < 0)
		return true;
	if (e == 0) {
		/* a normal record replaces a capture-time one */
		pthread_mutex_lock(&cap_lock);
		ce = ce_find(ev);
		if (ce) {
			struct capevent **pp;

			for (pp = &capevents; *pp != ce; pp = &(*pp)->next)
				;
			*pp = ce->next;
			free(ce->front);
			free(ce);
		}
		pthread_mutex_unlock(&cap_lock);
		return false;
	}
	/* inside a capture the event marks the stream's frontier (fork/join) */
	ce = ce_find(ev);
	if (!ce) {
		ce = calloc(1, sizeof(*ce));
		if (!ce) {
			invalidate(cs->c);
			pthread_mutex_unlock(&cap_lock);
			*st = npu_fail(NPU_ERROR_OUT_OF_MEMORY, "capture");
			return true;
		}
		ce->e = ev;
		ce->next = capevents;
		capevents = ce;
	}
	free(ce->front);
	ce->front = cs->nfront ? malloc(cs->nfront * sizeof(*ce->front)) : NULL;
	ce->nfront = ce->front ? cs->nfront : 0;
	if (ce->front)
		memcpy(ce->front, cs->front, cs->nfront * sizeof(*ce->front));
	ce->c = cs->c;
	pthread_mutex_unlock(&cap_lock);
	*st = NPU_SUCCESS;
	return true;
}

static bool cap_wait_event(npu_stream_t h, npu_event_t ev, npu_status_t *st)
{
	struct device *dev;
	struct npu_stream *s;
	struct capstream *cs;
	struct capevent *ce;
	npu_graph_node_t n = NULL;
	npu_status_t r;

	if (!ev || !npu_reg_check(ev, REG_EVENT) || npu_get_stream(h, &dev, &s)) {
		npu_get_last_error();
		return false;
	}
	pthread_mutex_lock(&cap_lock);
	cs = cs_find(s);
	ce = ce_find(ev);
	if (cs && cs->c->invalid) {
		pthread_mutex_unlock(&cap_lock);
		*st = npu_fail(NPU_ERROR_STREAM_CAPTURE_INVALIDATED,
			       "the stream's capture was invalidated earlier");
		return true;
	}
	if (ce && ce->c->invalid && !cs) {
		pthread_mutex_unlock(&cap_lock);
		*st = npu_fail(NPU_ERROR_STREAM_CAPTURE_INVALIDATED,
			       "the event's capture was invalidated earlier");
		return true;
	}
	if (ce && cs && ce->c != cs->c) {
		invalidate(cs->c);
		pthread_mutex_unlock(&cap_lock);
		*st = npu_fail(NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED,
			       "the event was recorded in another capture");
		return true;
	}
	if (ce && cs) {			/* join */
		r = front_add(cs, ce->front, ce->nfront) ?
			npu_fail(NPU_ERROR_OUT_OF_MEMORY, "capture") : NPU_SUCCESS;
		if (r)
			invalidate(cs->c);
		pthread_mutex_unlock(&cap_lock);
		*st = r;
		return true;
	}
	if (ce) {			/* fork: s joins the capture */
		if (s->legacy) {
			invalidate(ce->c);
			pthread_mutex_unlock(&cap_lock);
			*st = npu_fail(NPU_ERROR_STREAM_CAPTURE_IMPLICIT,
				       "the legacy stream cannot join a capture");
			return true;
		}
		cs = calloc(1, sizeof(*cs));
		if (!cs || front_set(cs, ce->front, ce->nfront)) {
			free(cs);
			invalidate(ce->c);
			pthread_mutex_unlock(&cap_lock);
			*st = npu_fail(NPU_ERROR_OUT_OF_MEMORY, "capture");
			return true;
		}
		cs->s = s;
		cs->c = ce->c;
		cs->next = capstreams;
		capstreams = cs;
		pthread_mutex_unlock(&cap_lock);
		*st = NPU_SUCCESS;
		return true;
	}
	if (cs) {			/* an event from outside: a wait node */
		r = npu_graph_add_event_wait_node(&n, cs->c->g, NULL, 0, ev);
		return cap_done(cs, n, r, st);
	}
	pthread_mutex_unlock(&cap_lock);
	return false;
}

static bool cap_sync(npu_stream_t h, int what, npu_status_t *st)
{
	struct device *dev;
	struct npu_stream *s = NULL;
	struct capstream *cs;
	bool handled = false;

	if (what == 1) {
		if (npu_cur_dev(&dev))
			return false;
	} else if (npu_get_stream(h, &dev, &s)) {
		npu_get_last_error();
		return false;
	}
	pthread_mutex_lock(&cap_lock);
	cs = s ? cs_find(s) : NULL;
	if (cs) {
		invalidate(cs->c);
		*st = npu_fail(NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED,
			       "synchronize or query of a capturing stream; the capture is invalidated");
		handled = true;
	} else if ((what == 1 || s->legacy) && invalidate_global(dev)) {
		*st = npu_fail(what == 1 ? NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED :
			       NPU_ERROR_STREAM_CAPTURE_IMPLICIT,
			       "synchronization with a capturing stream; the capture is invalidated");
		handled = true;
	}
	pthread_mutex_unlock(&cap_lock);
	return handled;
}

static const struct npu_capture_hooks capture_hooks;
static void capture_drop(struct capture *c);

npu_status_t npu_stream_begin_capture(npu_stream_t h, npu_stream_capture_mode_t mode)
{
	struct device *dev;
	struct npu_stream *s;
	struct capstream *cs;
	struct capture *c;
	npu_status_t st = npu_get_stream(h, &dev, &s);

	if (st)
		return st;
	if ((unsigned)mode > NPU_STREAM_CAPTURE_MODE_RELAXED)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "unknown capture mode %d",
				(int)mode);
	if (s->legacy)
		return npu_fail(NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED,
				"the legacy stream cannot be captured");
	c = calloc(1, sizeof(*c));
	cs = calloc(1, sizeof(*cs));
	if (!c || !cs) {
		free(c);
		free(cs);
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "capture");
	}
	st = npu_graph_new(dev, &c->g);
	if (st) {
		free(c);
		free(cs);
		return st;
	}
	c->dev = dev;
	c->mode = mode;
	c->thread = pthread_self();
	c->origin = s;
	cs->s = s;
	cs->c = c;
	pthread_mutex_lock(&cap_lock);
	if (cs_find(s)) {
		pthread_mutex_unlock(&cap_lock);
		npu_graph_destroy(c->g);
		free(c);
		free(cs);
		return npu_fail(NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED,
				"the stream is already capturing");
	}
	cs->next = capstreams;
	capstreams = cs;
	/* the hooks first: whoever sees a capture active finds them */
	atomic_store(&npu_capture_hooks, &capture_hooks);
	atomic_fetch_add(&npu_capture_active, 1);
	pthread_mutex_unlock(&cap_lock);
	return NPU_SUCCESS;
}

/* Mark the ancestors of v[0..n) (and themselves). */
static void mark_up(struct npu_graph *g, bool *seen, struct npu_graph_node **v,
		    unsigned n)
{
	unsigned *stack = malloc((g->n + 1) * sizeof(*stack)), sp = 0, i;

	if (!stack)
		return;
	for (i = 0; i < n; i++)
		if (!seen[v[i]->idx]) {
			seen[v[i]->idx] = true;
			stack[sp++] = v[i]->idx;
		}
	while (sp) {
		struct npu_graph_node *x = g->nodes[stack[--sp]];

		for (i = 0; i < x->npreds; i++)
			if (!seen[x->preds[i]->idx]) {
				seen[x->preds[i]->idx] = true;
				stack[sp++] = x->preds[i]->idx;
			}
	}
	free(stack);
}

npu_status_t npu_stream_end_capture(npu_stream_t h, npu_graph_t *graph)
{
	struct device *dev;
	struct npu_stream *s;
	struct capstream *cs;
	struct capture *c;
	npu_status_t st = npu_get_stream(h, &dev, &s);
	bool *seen;

	if (st)
		return st;
	if (!graph)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "graph pointer is NULL");
	*graph = NULL;
	pthread_mutex_lock(&cap_lock);
	cs = cs_find(s);
	if (!cs || cs->c->origin != s) {
		pthread_mutex_unlock(&cap_lock);
		return npu_fail(NPU_ERROR_STREAM_CAPTURE_UNMATCHED,
				"the stream is not the origin of a capture");
	}
	c = cs->c;
	if (c->mode == NPU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
	    !pthread_equal(c->thread, pthread_self())) {
		pthread_mutex_unlock(&cap_lock);
		return npu_fail(NPU_ERROR_STREAM_CAPTURE_WRONG_THREAD,
				"a thread-local capture must end on its thread");
	}
	if (c->invalid) {
		st = npu_fail(NPU_ERROR_STREAM_CAPTURE_INVALIDATED,
			      "the capture was invalidated by an earlier error");
	} else {
		/* every other stream's last work must lead into the origin */
		seen = calloc(c->g->n + 1, sizeof(*seen));
		if (!seen) {
			st = npu_fail(NPU_ERROR_OUT_OF_MEMORY, "capture");
		} else {
			struct capstream *o;

			mark_up(c->g, seen, cs->front, cs->nfront);
			for (o = capstreams; o && !st; o = o->next) {
				unsigned i;

				if (o->c != c || o == cs)
					continue;
				for (i = 0; i < o->nfront; i++)
					if (!seen[o->front[i]->idx])
						st = npu_fail(NPU_ERROR_STREAM_CAPTURE_UNJOINED,
							      "a stream forked into the capture was not joined back into the origin stream");
			}
			free(seen);
		}
	}
	capture_drop(c);
	pthread_mutex_unlock(&cap_lock);
	if (st)
		npu_graph_destroy(c->g);
	else
		*graph = c->g;
	free(c);
	return st;
}

/* End capture c on every stream and event that took part; the caller then
 * owns c and its graph. Caller holds cap_lock. */
static void capture_drop(struct capture *c)
{
	struct capstream **pp;
	struct capevent **pe;

	for (pp = &capstreams; *pp;) {
		if ((*pp)->c == c) {
			struct capstream *d = *pp;

			*pp = d->next;
			free(d->front);
			free(d);
		} else {
			pp = &(*pp)->next;
		}
	}
	for (pe = &capevents; *pe;) {
		if ((*pe)->c == c) {
			struct capevent *d = *pe;

			*pe = d->next;
			free(d->front);
			free(d);
		} else {
			pe = &(*pe)->next;
		}
	}
	atomic_fetch_sub(&npu_capture_active, 1);
}

/* npu_stream_destroy of a stream taking part in a capture (the hook of
 * npu_core.h): the origin's capture ends, its graph is discarded; a
 * stream forked into a capture leaves it, and the capture, which can no
 * longer be joined, is invalidated. */
static void cap_stream_gone(struct npu_stream *s)
{
	struct capstream *cs, **pp;
	struct capture *ended = NULL;

	pthread_mutex_lock(&cap_lock);
	cs = cs_find(s);
	if (cs && cs->c->origin == s) {
		ended = cs->c;
		capture_drop(ended);
	} else if (cs) {
		invalidate(cs->c);
		for (pp = &capstreams; *pp != cs; pp = &(*pp)->next)
			;
		*pp = cs->next;
		free(cs->front);
		free(cs);
	}
	pthread_mutex_unlock(&cap_lock);
	if (ended) {
		npu_graph_destroy(ended->g);
		free(ended);
	}
}

/* npu_event_destroy (the hook of npu_core.h): forget e's capture-time
 * record; the nodes that followed it stay in the capture. */
static void cap_event_gone(struct npu_event *e)
{
	struct capevent *ce, **pp;

	pthread_mutex_lock(&cap_lock);
	ce = ce_find(e);
	if (ce) {
		for (pp = &capevents; *pp != ce; pp = &(*pp)->next)
			;
		*pp = ce->next;
		free(ce->front);
		free(ce);
	}
	pthread_mutex_unlock(&cap_lock);
}

npu_status_t npu_stream_is_capturing(npu_stream_t h,
				     npu_stream_capture_status_t *status)
{
	struct device *dev;
	struct npu_stream *s;
	struct capstream *cs;
	npu_status_t st = npu_get_stream(h, &dev, &s);

	if (st)
		return st;
	if (!status)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "status is NULL");
	pthread_mutex_lock(&cap_lock);
	cs = cs_find(s);
	*status = !cs ? NPU_STREAM_CAPTURE_STATUS_NONE :
		cs->c->invalid ? NPU_STREAM_CAPTURE_STATUS_INVALIDATED :
		NPU_STREAM_CAPTURE_STATUS_ACTIVE;
	pthread_mutex_unlock(&cap_lock);
	return NPU_SUCCESS;
}

static bool cap_kernel_node(npu_stream_t h, const npu_kernel_node_params *p,
			 npu_status_t *st)
{
	struct capstream *cs = NULL;
	npu_graph_node_t n = NULL;
	npu_status_t r;
	int e = cap_enter(h, &cs, st, SYNC_NONE);

	if (e <= 0)
		return e < 0;
	r = npu_graph_add_kernel_node(&n, cs->c->g, NULL, 0, p);
	return cap_done(cs, n, r, st);
}

/* Work that runs now and cannot be captured (the hook of npu_core.h):
 * refused on a capturing stream, and by the rules for streams outside a
 * capture. */
static bool cap_uncaptured(npu_stream_t h, bool sync_device, npu_status_t *st)
{
	struct device *dev;
	struct npu_stream *s;
	bool refused = true;

	if (npu_get_stream(h, &dev, &s)) {
		npu_get_last_error();	/* the call itself reports it */
		return false;
	}
	pthread_mutex_lock(&cap_lock);
	if (cs_find(s))
		*st = npu_fail(NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED,
			       "this operation cannot be captured");
	else
		refused = outside_refused(dev, s, sync_device ? SYNC_DEVICE : SYNC_NONE,
					  st);
	pthread_mutex_unlock(&cap_lock);
	return refused;
}

static const struct npu_capture_hooks capture_hooks = {
	.launch = cap_launch,
	.kernel_node = cap_kernel_node,
	.memcpy = cap_memcpy,
	.memset = cap_memset,
	.host_func = cap_host_func,
	.event_record = cap_event_record,
	.wait_event = cap_wait_event,
	.sync = cap_sync,
	.uncaptured = cap_uncaptured,
	.stream_gone = cap_stream_gone,
	.event_gone = cap_event_gone,
};
