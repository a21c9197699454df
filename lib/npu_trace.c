/* SPDX-License-Identifier: MIT */
/*
 * npu_trace.c - profiling: device counters, the command trace (TIMESTAMP
 * packets around every command, into a pinned buffer), Chrome trace JSON
 * with flow events for cross-stream event dependencies, and the profile
 * report with its roofline verdicts.
 * Documentation/lib/profiling.rst describes the design.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xf86drm.h>

#include "npu_core.h"
#include "npu_json.h"
#include "npu_kprofile.h"
#include "npu_module.h"
#include "npu_trace.h"

struct trec {
	struct device *dev;
	uint32_t ring;
	uint8_t valid, graph, kind;
	uint32_t kernel;
	npu_dim3 grid, block;
	char name[32];			/* user kernels */
	uint64_t stream_id;
	uint64_t bytes, ops;
};

static struct {
	struct device *dev;
	uint32_t handle;
	uint64_t *map;
	uint64_t va;
	npu_device_counters start;	/* counters at npu_profiler_start */
	bool have_start;
} tdev[NPU_MAX_DEVICES];

/* tlock nests inside dev->lock */
static pthread_mutex_t tlock = PTHREAD_MUTEX_INITIALIZER;
static struct trec *recs;
static unsigned nrec, ndropped;
static const void *sids[1024];		/* stream pointer -> id - 1 */
static unsigned nsids;
static char *env_path;

/*
 * Cross-stream dependencies for the JSON's flow events: the last valid
 * slot (+1) of each stream id, the slot each recorded event follows (keyed
 * by event and record point, so a reused event address is not confused),
 * and every wait: from the source slot to the next slot on the waiting
 * stream (0 until that command is traced).
 */
#define TRACE_EVENTS	256
static uint32_t last_slot[1025];
static struct {
	const void *event;
	uint64_t point;
	uint32_t slot;
	uint64_t stream_id;
} evsrc[TRACE_EVENTS];
static unsigned nevsrc;
struct trace_dep {
	uint32_t src, dst;
	uint64_t dst_stream;
};
static struct trace_dep *deps;
static unsigned ndeps, npending;

static int tdev_index(struct device *dev, bool create)
{
	int i;

	for (i = 0; i < NPU_MAX_DEVICES; i++)
		if (tdev[i].dev == dev)
			return i;
	if (!create)
		return -1;
	for (i = 0; i < NPU_MAX_DEVICES; i++)
		if (!tdev[i].dev) {
			void *m;

			if (npu_host_bo(dev, 16ull * NPU_TRACE_CAPACITY,
					&tdev[i].handle, &tdev[i].va, &m))
				return -1;
			tdev[i].map = m;
			tdev[i].dev = dev;
			return i;
		}
	return -1;
}

static uint64_t stream_id(struct npu_stream *s)
{
	unsigned i;

	if (!s || s->legacy)
		return 0;
	for (i = 0; i < nsids; i++)
		if (sids[i] == s)
			return i + 1;
	if (nsids < sizeof(sids) / sizeof(sids[0]))
		sids[nsids++] = s;
	return nsids;
}

uint32_t npu_ring_global(struct device *dev, int queue, uint32_t ring)
{
	if (queue == Q_COPY && dev->prop.copy_rings)
		return dev->prop.compute_rings + ring;
	return ring;
}

/* modelled ops and bytes of a kernel (same formulas as the device) */
static void kernel_cost(uint32_t k, const uint64_t *a, unsigned nargs,
		     uint64_t *ops, uint64_t *bytes)
{
	uint64_t o = 0, b = 0, n, r, c;

#define A(i) ((i) < nargs ? a[i] : 0)
	switch (k) {
	case NPU_K_FILL_F32:		n = A(1); o = n; b = 4 * n; break;
	case NPU_K_SCALE_F32:
	case NPU_K_RELU_F32:		n = A(2); o = n; b = 8 * n; break;
	case NPU_K_SAXPY_F32:		n = A(2); o = 2 * n; b = 12 * n; break;
	case NPU_K_VADD_F32:		n = A(3); o = n; b = 12 * n; break;
	case NPU_K_RELU_GRAD_F32:	n = A(3); o = n; b = 12 * n; break;
	case NPU_K_REDUCE_SUM_F32:	n = A(2); o = n; b = 4 * n + 4; break;
	case NPU_K_GEMM_F32: {
		uint64_t m = A(3), nn = A(4), kk = A(5);

		o = 2 * m * nn * kk + 3 * m * nn;
		b = 4 * (m * kk + kk * nn + 2 * m * nn);
		break;
	}
	case NPU_K_BIAS_ADD_F32:
		r = A(2); c = A(3); o = r * c; b = 4 * (2 * r * c + c); break;
	case NPU_K_SOFTMAX_F32:
		r = A(2); c = A(3); o = 4 * r * c; b = 8 * r * c; break;
	case NPU_K_SOFTMAX_XENT_F32:
		r = A(4); c = A(5); o = 6 * r * c; b = 4 * (2 * r * c + 2 * r); break;
	case NPU_K_COL_SUM_F32:
		r = A(2); c = A(3); o = r * c; b = 4 * (r * c + c); break;
	case NPU_K_ARGMAX_F32:
		r = A(2); c = A(3); o = r * c; b = 4 * (r * c + r); break;
	default:
		break;
	}
#undef A
	*ops = o;
	*bytes = b;
}

/* Caller holds dev->lock. */
uint32_t npu_trace_slot(struct device *dev, uint64_t *va_start)
{
	uint32_t slot = 0;
	int d;

	pthread_mutex_lock(&tlock);
	if (!npu_tracing())
		goto out;
	if (!recs) {
		recs = calloc(NPU_TRACE_CAPACITY, sizeof(*recs));
		if (!recs)
			goto out;
	}
	d = tdev_index(dev, true);
	if (d < 0 || nrec >= NPU_TRACE_CAPACITY) {
		ndropped++;
		goto out;
	}
	memset(&recs[nrec], 0, sizeof(recs[nrec]));
	recs[nrec].dev = dev;
	tdev[d].map[2 * nrec] = tdev[d].map[2 * nrec + 1] = 0;
	*va_start = tdev[d].va + 16ull * nrec;
	slot = ++nrec;
out:
	pthread_mutex_unlock(&tlock);
	return slot;
}

static void trace_job_begin(struct device *dev, struct jobctx *jc)
{
	uint64_t va;
	uint32_t slot = npu_trace_slot(dev, &va);

	if (!slot)
		return;
	npu_cmd_timestamp(&jc->w, va);
	jc->trace = slot;
}

void npu_trace_fill(struct device *dev, uint32_t slot, const uint8_t *cmd,
		    uint32_t len, uint32_t ring, struct npu_stream *s, bool graph)
{
	struct trec *r;
	uint32_t off = 0;
	bool any = false;

	(void)dev;
	pthread_mutex_lock(&tlock);
	r = &recs[slot - 1];
	while (off + 4 <= len) {
		uint32_t h, ndw;

		memcpy(&h, cmd + off, 4);
		ndw = NPU_PKT_LEN(h);
		if (!ndw)
			break;
		switch (NPU_PKT_OP(h)) {
		case NPU_OP_LAUNCH: {
			struct npu_pkt_launch p;
			uint64_t args[NPU_LAUNCH_MAX_ARGS], o, b;
			unsigned na;

			memcpy(&p, cmd + off, sizeof(p));
			na = p.nargs > NPU_LAUNCH_MAX_ARGS ? NPU_LAUNCH_MAX_ARGS : p.nargs;
			memcpy(args, cmd + off + sizeof(p), 8 * na);
			r->kind = NPU_TRACE_KERNEL;
			r->kernel = p.kernel;
			r->grid = npu_grid(p.grid[0], p.grid[1], p.grid[2]);
			kernel_cost(p.kernel, args, na, &o, &b);
			r->ops += o;
			r->bytes += b;
			any = true;
			break;
		}
		case NPU_OP_LAUNCH_CODE:
		case NPU_OP_LAUNCH_CODE_SHORT: {
			/* the short form is the full one's head */
			struct npu_pkt_launch_code_short p;

			memcpy(&p, cmd + off, sizeof(p));
			r->kind = NPU_TRACE_KERNEL;
			r->kernel = (uint32_t)NPU_TRACE_USER_KERNEL;
			r->grid = npu_grid(p.grid[0], p.grid[1], p.grid[2]);
			r->block = npu_grid(p.block[0], p.block[1], p.block[2]);
			if (!npu_module_kernel_name(p.entry, r->name, sizeof(r->name)))
				snprintf(r->name, sizeof(r->name), "user kernel");
			any = true;
			break;
		}
		case NPU_OP_COPY: {
			struct npu_pkt_copy p;

			memcpy(&p, cmd + off, sizeof(p));
			if (!any)
				r->kind = NPU_TRACE_COPY;
			r->bytes += p.size;
			any = true;
			break;
		}
		case NPU_OP_FILL: {
			struct npu_pkt_fill p;

			memcpy(&p, cmd + off, sizeof(p));
			if (!any)
				r->kind = NPU_TRACE_FILL;
			r->bytes += p.size;
			any = true;
			break;
		}
		default:
			break;
		}
		off += 4 * ndw;
	}
	r->ring = ring;
	r->stream_id = stream_id(s);
	r->graph = graph;
	r->valid = any;
	if (any && r->stream_id < sizeof(last_slot) / sizeof(last_slot[0])) {
		unsigned i;

		last_slot[r->stream_id] = slot;
		for (i = 0; npending && i < ndeps; i++)
			if (!deps[i].dst && deps[i].dst_stream == r->stream_id) {
				deps[i].dst = slot;
				npending--;
			}
	}
	pthread_mutex_unlock(&tlock);
}

static void trace_job_end(struct device *dev, struct jobctx *jc, int queue)
{
	int d;

	if (queue != Q_COMPUTE && queue != Q_COPY)
		return;
	npu_trace_fill(dev, jc->trace, jc->w.buf + NPU_CMD_TS_BYTES,
		       jc->w.len - NPU_CMD_TS_BYTES,
		       npu_ring_global(dev, queue, jc->s->ring[queue]), jc->s,
		       false);
	pthread_mutex_lock(&tlock);
	d = tdev_index(dev, false);
	pthread_mutex_unlock(&tlock);
	if (d >= 0)
		npu_cmd_timestamp(&jc->w, tdev[d].va + 16ull * (jc->trace - 1) + 8);
}

static void trace_event_record(struct npu_event *e, struct npu_stream *s)
{
	uint64_t sid;
	unsigned i;

	pthread_mutex_lock(&tlock);
	sid = stream_id(s);
	for (i = 0; i < nevsrc; i++)
		if (evsrc[i].event == e)
			break;
	if (i == nevsrc) {
		if (nevsrc < TRACE_EVENTS)
			nevsrc++;
		else
			i = (unsigned)(sid % TRACE_EVENTS);	/* table full: reuse */
	}
	evsrc[i].event = e;
	evsrc[i].point = e->tl->next;
	evsrc[i].stream_id = sid;
	evsrc[i].slot = sid < sizeof(last_slot) / sizeof(last_slot[0]) ?
			last_slot[sid] : 0;
	pthread_mutex_unlock(&tlock);
}

static void trace_event_wait(struct npu_event *e, struct npu_stream *s)
{
	uint64_t sid;
	unsigned i;

	pthread_mutex_lock(&tlock);
	sid = stream_id(s);
	for (i = 0; i < nevsrc; i++)
		if (evsrc[i].event == e && evsrc[i].point == e->tl->next)
			break;
	if (i == nevsrc || !evsrc[i].slot || evsrc[i].stream_id == sid)
		goto out;	/* unknown, nothing traced before it, same stream */
	if (!deps) {
		deps = calloc(NPU_TRACE_CAPACITY, sizeof(*deps));
		if (!deps)
			goto out;
	}
	if (ndeps >= NPU_TRACE_CAPACITY)
		goto out;
	deps[ndeps].src = evsrc[i].slot;
	deps[ndeps].dst = 0;
	deps[ndeps].dst_stream = sid;
	ndeps++;
	npending++;
out:
	pthread_mutex_unlock(&tlock);
}

static const struct npu_trace_hooks trace_hooks = {
	.job_begin = trace_job_begin,
	.job_end = trace_job_end,
	.event_record = trace_event_record,
	.event_wait = trace_event_wait,
};

/* Switch the trace on: hooks first, so that whoever sees it on finds them. */
static void trace_on(void)
{
	atomic_store(&npu_trace_hooks, &trace_hooks);
	atomic_store(&npu_trace_active, 1);
}

/* ------------------------------------------------------------------------
 * Counters
 */
static npu_status_t read_counters(struct device *dev, npu_device_counters *c)
{
	struct drm_npu_ring_counters rc[NPU_MAX_RINGS], ue[NPU_MAX_UQ_ENGINES];
	struct drm_npu_counters a;
	unsigned i, ne;

	if (!(dev->prop.features & NPU_FEATURE_COUNTERS))
		return npu_fail(NPU_ERROR_NOT_SUPPORTED,
				"the device has no counters");
	memset(&a, 0, sizeof(a));
	memset(c, 0, sizeof(*c));
	a.rings = (uintptr_t)rc;
	a.ring_count = NPU_MAX_RINGS;
	a.cu_busy_ns = (uintptr_t)c->cu_busy_ns;
	a.cu_count = NPU_MAX_UNITS;
	a.uq_engines = (uintptr_t)ue;
	a.uq_engine_count = NPU_MAX_UQ_ENGINES;
	if (drmIoctl(dev->fd, DRM_IOCTL_NPU_COUNTERS, &a))
		return npu_fail(NPU_ERROR_OS, "DRM_IOCTL_NPU_COUNTERS: %s",
				strerror(errno));
	c->compute_rings = dev->prop.compute_rings;
	c->copy_rings = dev->prop.copy_rings;
	c->compute_units = a.cu_count < NPU_MAX_UNITS ? a.cu_count : NPU_MAX_UNITS;
	c->clock = a.clock;
	for (i = 0; i < a.ring_count && i < NPU_MAX_RINGS; i++) {
		c->ring[i].busy_ns = rc[i].busy_ns;
		c->ring[i].commands = rc[i].commands;
		c->ring[i].bytes = rc[i].bytes;
		c->ring[i].ops = rc[i].ops;
	}
	/* the user-queue engines, compute first (an older driver says 0);
	 * DRM_NPU_PARAM_USERQ_ENGINES: compute [7:0], copy [15:8] */
	ne = a.uq_engine_count < NPU_MAX_UQ_ENGINES ? a.uq_engine_count :
		NPU_MAX_UQ_ENGINES;
	if (ne) {
		c->uq_compute_engines = dev->uq_engines & 0xff;
		c->uq_copy_engines = (dev->uq_engines >> 8) & 0xff;
		if (c->uq_compute_engines + c->uq_copy_engines != ne)
			c->uq_compute_engines = c->uq_copy_engines = ne = 0;
	}
	for (i = 0; i < ne; i++) {
		c->uq_engine[i].busy_ns = ue[i].busy_ns;
		c->uq_engine[i].commands = ue[i].commands;
		c->uq_engine[i].bytes = ue[i].bytes;
		c->uq_engine[i].ops = ue[i].ops;
	}
	return NPU_SUCCESS;
}

npu_status_t npu_device_get_counters_v2(npu_device_counters *c)
{
	struct device *dev;
	npu_status_t st;

	if (!c)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "counters is NULL");
	st = npu_cur_dev(&dev);
	if (st)
		return st;
	return read_counters(dev, c);
}

/* The symbol of programs built before the user-queue engines: their
 * struct ends where uq_compute_engines begins. */
#undef npu_device_get_counters
NPU_EXPORT npu_status_t npu_device_get_counters(npu_device_counters *c);
npu_status_t npu_device_get_counters(npu_device_counters *c)
{
	npu_device_counters all;
	npu_status_t st;

	if (!c)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "counters is NULL");
	st = npu_device_get_counters_v2(&all);
	if (!st)
		memcpy(c, &all, offsetof(npu_device_counters, uq_compute_engines));
	return st;
}

/* ------------------------------------------------------------------------
 * Start / stop
 */
npu_status_t npu_profiler_start(void)
{
	struct device *dev;
	npu_status_t st = npu_cur_dev(&dev);
	int d;

	if (st)
		return st;
	pthread_mutex_lock(&dev->lock);
	pthread_mutex_lock(&tlock);
	if (!recs)
		recs = calloc(NPU_TRACE_CAPACITY, sizeof(*recs));
	d = tdev_index(dev, true);
	if (!recs || d < 0) {
		pthread_mutex_unlock(&tlock);
		pthread_mutex_unlock(&dev->lock);
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "trace buffer");
	}
	/* a new trace; records of commands still in flight from an earlier
	 * trace would land in reused slots, so the caller should synchronize
	 * first (documented) */
	nrec = 0;
	ndropped = 0;
	ndeps = 0;
	npending = 0;
	nevsrc = 0;
	memset(last_slot, 0, sizeof(last_slot));
	npu_kprofile_reset();
	tdev[d].have_start = read_counters(dev, &tdev[d].start) == NPU_SUCCESS;
	trace_on();
	pthread_mutex_unlock(&tlock);
	pthread_mutex_unlock(&dev->lock);
	return NPU_SUCCESS;
}

npu_status_t npu_profiler_stop(void)
{
	atomic_store(&npu_trace_active, 0);
	return NPU_SUCCESS;
}

/* ------------------------------------------------------------------------
 * Reading the trace
 */
static int dev_ordinal(struct device *dev)
{
	int n = 0, i;

	if (npu_device_count(&n))
		return 0;
	for (i = 0; i < n; i++) {
		struct device *d;

		if (!npu_dev_by_ordinal(i, &d) && d == dev)
			return i;
	}
	return 0;
}

/* Snapshot of the valid records; waits for every device that has some. */
static const char *kname(uint32_t k)
{
	const char *n = NULL;

	if (npu_kernel_info((npu_kernel_t)k, &n, NULL) || !n)
		return "kernel";
	return n;
}

/* slots, if not NULL, gets each record's slot + 1 (free() it) */
static npu_status_t snapshot(npu_trace_record **out, size_t *n, uint32_t **slots)
{
	npu_trace_record *v;
	uint32_t *sl = NULL;
	size_t k = 0;
	unsigned i, cnt;
	int d, ord[NPU_MAX_DEVICES];

	for (d = 0; d < NPU_MAX_DEVICES; d++) {
		struct device *dev = tdev[d].dev;

		ord[d] = 0;
		if (!dev)
			continue;
		pthread_mutex_lock(&dev->lock);
		pthread_mutex_unlock(&dev->lock);
		ord[d] = dev_ordinal(dev);
	}
	/* wait for the traced work: every device with a trace buffer */
	{
		int cur = 0;

		npu_device_get(&cur);
		for (d = 0; d < NPU_MAX_DEVICES; d++)
			if (tdev[d].dev && !npu_device_set(ord[d]))
				npu_device_synchronize();
		npu_device_set(cur);
	}
	pthread_mutex_lock(&tlock);
	cnt = nrec;
	v = calloc(cnt ? cnt : 1, sizeof(*v));
	if (slots)
		sl = calloc(cnt ? cnt : 1, sizeof(*sl));
	if (!v || (slots && !sl)) {
		pthread_mutex_unlock(&tlock);
		free(v);
		free(sl);
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "trace records");
	}
	for (i = 0; i < cnt; i++) {
		struct trec *r = &recs[i];
		npu_trace_record *o = &v[k];
		uint64_t t0, t1;

		if (!r->valid)
			continue;
		d = tdev_index(r->dev, false);
		if (d < 0)
			continue;
		t0 = ((volatile uint64_t *)tdev[d].map)[2 * i];
		t1 = ((volatile uint64_t *)tdev[d].map)[2 * i + 1];
		if (!t0 || !t1)
			continue;	/* never ran (failed or still queued) */
		memset(o, 0, sizeof(*o));
		o->device = ord[d];
		o->ring = r->ring;
		o->kind = (npu_trace_kind_t)r->kind;
		o->kernel = (npu_kernel_t)r->kernel;
		o->grid = r->grid;
		o->block = r->block;
		if (r->kind == NPU_TRACE_KERNEL)
			snprintf(o->name, sizeof(o->name), "%s", r->name[0] ?
				 r->name : kname(r->kernel));
		o->stream_id = r->stream_id;
		o->graph = r->graph;
		o->bytes = r->bytes;
		o->ops = r->ops;
		o->start = t0;
		o->end = t1;
		if (sl)
			sl[k] = i + 1;
		k++;
	}
	pthread_mutex_unlock(&tlock);
	*out = v;
	*n = k;
	if (slots)
		*slots = sl;
	return NPU_SUCCESS;
}

npu_status_t npu_trace_get_records(npu_trace_record *records, size_t *count)
{
	npu_trace_record *v;
	size_t n;
	npu_status_t st;

	if (!count)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "count is NULL");
	st = snapshot(&v, &n, NULL);
	if (st)
		return st;
	if (records) {
		if (n > *count)
			n = *count;
		memcpy(records, v, n * sizeof(*v));
	}
	*count = n;
	free(v);
	return NPU_SUCCESS;
}

/* One row of the report's engine table: the counters' growth since s0. */
static void engine_row(FILE *f, const char *name, const npu_ring_counters *now,
		       const npu_ring_counters *s0, double el_ns)
{
	double busy = (double)(now->busy_ns - s0->busy_ns);

	fprintf(f, "%-16s %12.3f %6.1f %10" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n",
		name, busy / 1e6, el_ns > 0 ? 100.0 * busy / el_ns : 0.0,
		now->commands - s0->commands, now->bytes - s0->bytes,
		now->ops - s0->ops);
}

static void ring_name(char *buf, size_t sz, const npu_device_prop *p, uint32_t r)
{
	if (r < p->compute_rings)
		snprintf(buf, sz, "compute ring %u", r);
	else
		snprintf(buf, sz, "copy ring %u", r - p->compute_rings);
}

static void rec_name(char *buf, size_t sz, const npu_trace_record *r)
{
	if (r->kind == NPU_TRACE_KERNEL)
		snprintf(buf, sz, "%s", r->name);
	else if (r->kind == NPU_TRACE_FILL)
		snprintf(buf, sz, "memset %" PRIu64 " B", r->bytes);
	else
		snprintf(buf, sz, "copy %" PRIu64 " B", r->bytes);
}

/* A metadata event naming lane (pid, tid); sort >= 0 also orders it. */
static void put_lane(FILE *f, int pid, uint64_t tid, const char *name, int64_t sort)
{
	fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%" PRIu64
		",\"args\":{\"name\":", pid, tid);
	npu_json_put_string(f, name);
	fputs("}}", f);
	if (sort >= 0)
		fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,"
			"\"tid\":%" PRIu64 ",\"args\":{\"sort_index\":%" PRId64 "}}",
			pid, tid, sort);
}

/* The middle of record r in microseconds from t0: a flow event there is
 * inside r's box in every viewer, whatever it does with equal times. */
static double rec_mid_us(const npu_trace_record *r, uint64_t t0)
{
	npu_device_prop p;

	if (npu_device_get_properties(&p, r->device) || !p.clock_hz)
		return 0;
	return ((double)(r->start - t0) + (double)(r->end - r->start) / 2) * 1e6 /
	       (double)p.clock_hz;
}

npu_status_t npu_trace_write_json(const char *path)
{
	npu_trace_record *v;
	uint32_t *slots;
	size_t n, i;
	npu_status_t st;
	FILE *f;
	uint64_t t0 = UINT64_MAX;
	bool seen_ring[NPU_MAX_DEVICES][NPU_MAX_RINGS];
	uint64_t max_sid[NPU_MAX_DEVICES];
	size_t *at_slot;
	struct trace_dep *links;
	unsigned k, nslots, nlinks, flows = 0;
	int d;

	if (!path)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "path is NULL");
	st = snapshot(&v, &n, &slots);
	if (st)
		return st;
	pthread_mutex_lock(&tlock);
	nslots = nrec;
	at_slot = calloc(nslots + 1, sizeof(*at_slot));	/* slot + 1 -> index + 1 */
	pthread_mutex_unlock(&tlock);
	f = at_slot ? fopen(path, "w") : NULL;
	if (!f) {
		st = at_slot ? npu_fail(NPU_ERROR_OS, "%s: %s", path, strerror(errno)) :
			       npu_fail(NPU_ERROR_OUT_OF_MEMORY, "trace JSON");
		free(at_slot);
		free(slots);
		free(v);
		return st;
	}
	memset(seen_ring, 0, sizeof(seen_ring));
	memset(max_sid, 0, sizeof(max_sid));
	for (i = 0; i < n; i++) {
		if (v[i].start < t0)
			t0 = v[i].start;
		if (v[i].device < NPU_MAX_DEVICES) {
			if (v[i].ring < NPU_MAX_RINGS)
				seen_ring[v[i].device][v[i].ring] = true;
			if (v[i].stream_id + 1 > max_sid[v[i].device])
				max_sid[v[i].device] = v[i].stream_id + 1;
		}
	}
	fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"source\":\"libnpu\",\"clock\":\"device\"},\n\"traceEvents\":[\n");
	fprintf(f, "{\"ph\":\"M\",\"name\":\"clock_sync\",\"pid\":0,\"tid\":0,\"args\":{}}");
	for (d = 0; d < NPU_MAX_DEVICES; d++) {
		npu_device_prop p;
		uint32_t r;
		uint64_t s;
		char nb[96];

		if (!max_sid[d] && !seen_ring[d][0])
			continue;
		if (npu_device_get_properties(&p, d))
			continue;
		snprintf(nb, sizeof(nb), "npu%d %s", d, p.name);
		fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":", d);
		npu_json_put_string(f, nb);
		fputs("}}", f);
		for (r = 0; r < NPU_MAX_RINGS; r++) {
			if (!seen_ring[d][r])
				continue;
			ring_name(nb, sizeof(nb), &p, r);
			put_lane(f, d, 1 + r, nb, r);
		}
		for (s = 0; s < max_sid[d]; s++) {
			if (s)
				snprintf(nb, sizeof(nb), "stream %" PRIu64, s);
			else
				snprintf(nb, sizeof(nb), "legacy stream");
			put_lane(f, d, 1000 + s, nb, (int64_t)(100 + s));
		}
	}
	for (i = 0; i < n; i++) {
		npu_trace_record *r = &v[i];
		npu_device_prop p;
		double hz, ts, dur;
		char nb[64], rb[32];
		int lane;

		if (slots[i] <= nslots)
			at_slot[slots[i]] = i + 1;
		if (npu_device_get_properties(&p, r->device))
			continue;
		hz = (double)p.clock_hz;
		ts = (double)(r->start - t0) * 1e6 / hz;
		dur = (double)(r->end - r->start) * 1e6 / hz;
		rec_name(nb, sizeof(nb), r);
		ring_name(rb, sizeof(rb), &p, r->ring);
		for (lane = 0; lane < 2; lane++) {
			fputs(",\n{\"ph\":\"X\",\"name\":", f);
			npu_json_put_string(f, nb);
			fprintf(f, ",\"cat\":\"%s\",\"pid\":%d,\"tid\":%" PRIu64
				",\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"kind\":\"%s\",\"grid\":[%u,%u,%u],\"bytes\":%" PRIu64
				",\"ops\":%" PRIu64 ",\"stream\":%" PRIu64 ",\"ring\":\"%s\",\"graph\":%u,\"start_tick\":%" PRIu64
				",\"end_tick\":%" PRIu64 "}}",
				lane ? "stream" : "ring", r->device,
				lane ? (uint64_t)1000 + r->stream_id : (uint64_t)1 + r->ring,
				ts, dur,
				r->kind == NPU_TRACE_KERNEL ? "kernel" :
				r->kind == NPU_TRACE_FILL ? "memset" : "copy",
				r->grid.x, r->grid.y, r->grid.z, r->bytes, r->ops,
				r->stream_id, rb, r->graph, r->start, r->end);
		}
	}
	/* Flow events: "s" on the command before an event record, "f" on
	 * the first command after the wait ("bp":"e": the enclosing slice),
	 * both on the stream lanes. The links are copied out first: the
	 * device lookups below must not run under tlock. */
	pthread_mutex_lock(&tlock);
	nlinks = ndeps;
	links = malloc((nlinks ? nlinks : 1) * sizeof(*links));
	if (links && nlinks)	/* deps is NULL until a wait is traced */
		memcpy(links, deps, nlinks * sizeof(*links));
	else
		nlinks = 0;
	pthread_mutex_unlock(&tlock);
	for (k = 0; k < nlinks; k++) {
		const npu_trace_record *a, *b;

		if (!links[k].dst || links[k].src > nslots || links[k].dst > nslots ||
		    !at_slot[links[k].src] || !at_slot[links[k].dst])
			continue;	/* an end never ran or was not traced */
		a = &v[at_slot[links[k].src] - 1];
		b = &v[at_slot[links[k].dst] - 1];
		flows++;
		fprintf(f, ",\n{\"ph\":\"s\",\"name\":\"event\",\"cat\":\"dependency\",\"id\":%u,"
			"\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":%.3f}", flows, a->device,
			(uint64_t)1000 + a->stream_id, rec_mid_us(a, t0));
		fprintf(f, ",\n{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"event\",\"cat\":\"dependency\","
			"\"id\":%u,\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":%.3f}", flows, b->device,
			(uint64_t)1000 + b->stream_id, rec_mid_us(b, t0));
	}
	free(links);
	fprintf(f, "\n]}\n");
	free(at_slot);
	free(slots);
	free(v);
	if (fclose(f))
		return npu_fail(NPU_ERROR_OS, "%s: %s", path, strerror(errno));
	return NPU_SUCCESS;
}

/* ------------------------------------------------------------------------
 * Roofline and report
 */
static int verdict(const npu_device_prop *p, uint64_t ops, uint64_t bytes,
		   uint32_t blocks, double *ridge)
{
	uint32_t units = blocks < p->compute_units ? blocks : p->compute_units;
	double peak_ops, peak_bw;

	if (!units)
		units = 1;
	peak_ops = (double)p->cu_mops * 1e6 * units;
	peak_bw = (double)p->mem_bw_mbps * 1e6;
	*ridge = peak_bw > 0 ? peak_ops / peak_bw : 0;
	if (!bytes)
		return ops > 0;
	return (double)ops / (double)bytes > *ridge;
}

npu_status_t npu_kernel_roofline(const npu_kernel_node_params *kp,
				 int *compute_bound, uint64_t *ops,
				 uint64_t *bytes)
{
	struct device *dev;
	uint64_t o, b;
	double ridge;
	npu_status_t st;

	if (!kp || !compute_bound)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "NULL argument");
	if (npu_kernel_info(kp->kernel, NULL, NULL))
		return npu_fail(NPU_ERROR_INVALID_KERNEL, "unknown kernel");
	st = npu_cur_dev(&dev);
	if (st)
		return st;
	kernel_cost((uint32_t)kp->kernel, kp->args,
			kp->nargs > NPU_MAX_KERNEL_ARGS ? NPU_MAX_KERNEL_ARGS : kp->nargs,
			&o, &b);
	*compute_bound = verdict(&dev->prop, o, b,
				 kp->grid.x * kp->grid.y * kp->grid.z, &ridge);
	if (ops)
		*ops = o;
	if (bytes)
		*bytes = b;
	return NPU_SUCCESS;
}

struct kagg {
	uint32_t kernel;
	npu_dim3 grid;
	uint64_t calls, ticks, ops, bytes;
};

npu_status_t npu_profile_report(FILE *f)
{
	struct device *dev;
	npu_device_counters now;
	npu_trace_record *v;
	struct kagg *agg;
	size_t n, i, na = 0;
	npu_status_t st;
	double el_ns, hz;
	int d;
	unsigned r;

	if (!f)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "file is NULL");
	st = npu_cur_dev(&dev);
	if (st)
		return st;
	st = snapshot(&v, &n, NULL);
	if (st)
		return st;
	hz = (double)dev->prop.clock_hz;
	fprintf(f, "== npu profile: %s ==\n", dev->prop.name);
	pthread_mutex_lock(&dev->lock);
	pthread_mutex_lock(&tlock);
	d = tdev_index(dev, false);
	pthread_mutex_unlock(&tlock);
	st = read_counters(dev, &now);
	pthread_mutex_unlock(&dev->lock);
	if (!st && d >= 0 && tdev[d].have_start) {
		const npu_device_counters *s0 = &tdev[d].start;
		double occ = 0, meas_ms, mod_ms;

		el_ns = (double)(now.clock - s0->clock) * 1e9 / hz;
		fprintf(f, "interval: %.3f ms of device time since npu_profiler_start\n",
			el_ns / 1e6);
		fprintf(f, "%-16s %12s %6s %10s %14s %14s\n", "engine", "busy ms",
			"util%", "commands", "bytes", "ops");
		for (r = 0; r < now.compute_rings + now.copy_rings && r < NPU_MAX_RINGS; r++) {
			char nb[32];

			ring_name(nb, sizeof(nb), &dev->prop, r);
			engine_row(f, nb, &now.ring[r], &s0->ring[r], el_ns);
		}
		/* user-queue engines: those that ran something */
		for (r = 0; r < now.uq_compute_engines + now.uq_copy_engines; r++) {
			char nb[32];

			if (now.uq_engine[r].commands == s0->uq_engine[r].commands &&
			    now.uq_engine[r].busy_ns == s0->uq_engine[r].busy_ns)
				continue;
			if (r < now.uq_compute_engines)
				snprintf(nb, sizeof(nb), "uq compute %u", r);
			else
				snprintf(nb, sizeof(nb), "uq copy %u", r - now.uq_compute_engines);
			engine_row(f, nb, &now.uq_engine[r], &s0->uq_engine[r], el_ns);
		}
		for (r = 0; r < now.compute_units; r++)
			occ += (double)(now.cu_busy_ns[r] - s0->cu_busy_ns[r]);
		/* the units' busy time is modelled (cycles at the unit
		 * clock); the interval is the device clock's, which under
		 * timing=on follows the host while it interprets the units */
		if (now.compute_units && el_ns > 0)
			fprintf(f, "compute units busy: %.1f%% (mean of %u units: "
				"modelled busy time over the interval)\n",
				100.0 * occ / (el_ns * now.compute_units), now.compute_units);
		if (npu_kprofile_host_bound(dev, &meas_ms, &mod_ms))
			fprintf(f, "host-bound: user kernels took %.1fx their "
				"modelled time (%.3f ms measured, %.3f ms "
				"modelled): the host interpreted the units "
				"slower than the model, so the interval, the "
				"engines' busy time and the units' busy share "
				"above count the host's time; see timing=virtual "
				"under the user kernels\n", meas_ms / mod_ms,
				meas_ms, mod_ms);
	} else {
		fprintf(f, "(no counters)\n");
	}
	agg = calloc(n ? n : 1, sizeof(*agg));
	if (!agg) {
		free(v);
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "report");
	}
	for (i = 0; i < n; i++) {
		size_t k;

		/* user kernels have their own section (npu_kprofile.c) */
		if (v[i].kind != NPU_TRACE_KERNEL ||
		    v[i].kernel == NPU_TRACE_USER_KERNEL)
			continue;
		for (k = 0; k < na; k++)
			if (agg[k].kernel == (uint32_t)v[i].kernel &&
			    !memcmp(&agg[k].grid, &v[i].grid, sizeof(npu_dim3)))
				break;
		if (k == na) {
			agg[na].kernel = (uint32_t)v[i].kernel;
			agg[na].grid = v[i].grid;
			na++;
		}
		agg[k].calls++;
		agg[k].ticks += v[i].end - v[i].start;
		agg[k].ops += v[i].ops;
		agg[k].bytes += v[i].bytes;
	}
	fprintf(f, "%zu traced commands\n", n);
	if (na) {
		double ridge1 = 0;

		verdict(&dev->prop, 1, 1, 1, &ridge1);
		fprintf(f, "roofline: %u units x %u Mops/s vs %u MB/s: ridge %.2f ops/byte per unit used\n",
			dev->prop.compute_units, dev->prop.cu_mops,
			dev->prop.mem_bw_mbps, ridge1);
		fprintf(f, "%-18s %-12s %6s %11s %14s %14s %8s %7s %s\n", "kernel", "grid",
			"calls", "device ms", "ops", "bytes", "ops/B", "ridge", "verdict");
	}
	for (i = 0; i < na; i++) {
		char g[32];
		double ridge;
		int cb = verdict(&dev->prop, agg[i].ops, agg[i].bytes,
				 agg[i].grid.x * agg[i].grid.y * agg[i].grid.z, &ridge);

		snprintf(g, sizeof(g), "%ux%ux%u", agg[i].grid.x, agg[i].grid.y,
			 agg[i].grid.z);
		fprintf(f, "%-18s %-12s %6" PRIu64 " %11.3f %14" PRIu64 " %14" PRIu64
			" %8.2f %7.2f %s\n", kname(agg[i].kernel), g, agg[i].calls,
			(double)agg[i].ticks * 1e3 / hz, agg[i].ops, agg[i].bytes,
			agg[i].bytes ? (double)agg[i].ops / (double)agg[i].bytes : 0.0,
			ridge, !agg[i].ops && !agg[i].bytes ? "n/a (no modelled work)" :
			cb ? "compute-bound" : "memory-bound");
	}
	if (ndropped)
		fprintf(f, "%u commands not traced (buffer full)\n", ndropped);
	npu_kprofile_report(dev, f);
	free(agg);
	free(v);
	return NPU_SUCCESS;
}

/* NPU_TRACE=<file>: trace from the first command, write JSON at exit or
 * unload: called by the teardown (npu_unload.c) before the devices close,
 * which at dlclose runs before atexit handlers would. Only in the process
 * that started the trace: a forked child's exit must neither overwrite
 * the parent's file nor submit on the parent's queues, nor take a lock
 * another thread held at the fork. */
static pid_t env_pid;

void npu_trace_at_unload(void)
{
	if (getpid() != env_pid)
		return;
	if (env_path && nrec)
		npu_trace_write_json(env_path);
	free(env_path);
	env_path = NULL;
}

__attribute__((constructor)) static void env_init(void)
{
	const char *p = getenv("NPU_TRACE");

	if (!p || !*p)
		return;
	env_path = strdup(p);
	if (!env_path)
		return;
	env_pid = getpid();
	trace_on();
}
