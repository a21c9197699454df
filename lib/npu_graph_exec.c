/* SPDX-License-Identifier: MIT */
/*
 * npu_graph_exec.c - executable graphs: instantiation, and launch as one
 * DRM_IOCTL_NPU_SUBMIT through the submission layer's primitives (queues,
 * npu_submit, the legacy-stream rules of npu_job.c).
 * Documentation/lib/graphs.rst describes the design.
 *
 * Launch model. Graph jobs run on the executable graph's own queues, one
 * per ring, each with its own timeline syncobj; every job signals the next
 * point of its queue's timeline (points follow submission order, which is
 * queue order). A job waits for a predecessor on another queue through that
 * predecessor's (timeline, point) - a job of the same array - and for one
 * on the same queue by queue order alone. A chain of nodes on one queue is
 * one job (its nodes' packets one after the other in one command buffer).
 * Root jobs wait for the launch's entry dependencies (the stream's previous
 * point, the legacy-stream rules, the previous launch of the same
 * executable graph); the job holding every sink signals the stream's point
 * and the executable graph's done timeline, or, when the sinks are in
 * several jobs, a final zero-length join job waits for them and signals
 * those. Host nodes run on a thread of the launch; the jobs after them are
 * submitted when they return.
 *
 * On a user-queue stream, a graph of kernel, memcpy, memset and empty
 * nodes is no job: its packets, in topological order, go into the command
 * slot, and the launch is a stream operation of one INDIRECT to them
 * (uq_launch, npu_job_submit's user-queue form): no system call.
 *
 * Locking: x->lock (one launch of an exec at a time) -> dev->lock -> the
 * trace lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xf86drm.h>

#include "npu_graph.h"
#include "npu_module.h"
#include "npu_trace.h"

#define EXEC_SLOTS	4		/* launches in flight per exec */
#define SLOT_UQ_LAYOUT	(1ull << 63)	/* slot_gen: uq_launch's layout */
#define MAX_CROSS_DEPS	60
#define JOB_BOS		1024		/* BO handles per job (npu.ko's limit) */
/* job descriptors of one submission round: a job per node at most, the
 * join, and in a packed launch the gates (60 external fences each) */
#define JOBS_CAP(n)	(3 * (n) + 8)
#define JOB_OUTS	4		/* out-syncs reserved per job: queue
					 * point, event, stream point, done */

static _Atomic uint64_t st_launches, st_ioctls, st_jobs;

struct xnode {
	npu_graph_node_type_t type;
	struct npu_graph_node *orig;
	npu_kernel_node_params kp;	/* a built-in's as its code's if coded */
	bool coded;			/* a built-in kernel run as code */
	uint64_t dst_va, src_va, count;
	uint32_t bo[2];
	unsigned nbo;
	int value;
	npu_host_fn_t fn;
	void *user;
	npu_event_t ev;
	uint64_t ev_serial;		/* ev->serial when the node was made */
	int q;				/* Q_COMPUTE / Q_COPY */
	uint32_t ring;			/* ring index within the kind */
	unsigned *preds, npreds;
	bool sink;
	bool xo;			/* has a successor on another queue */
	uint32_t off, size;		/* place in a command slot */
	uint32_t plen;			/* bytes of its packets in a prebuilt
					 * slot (untraced) */
};

/* An executable graph's own queues, one per ring, each with its timeline:
 * a launch's jobs wait behind the previous launch of the same graph only,
 * never behind another graph's job that waits for something else. */
struct gpool {
	uint32_t queue[2][NPU_MAX_RINGS_LIB];
	struct tl *tl[2][NPU_MAX_RINGS_LIB];	/* NULL: no queue on the ring */
	unsigned nq[2];				/* rings of each kind */
};

/* The queues of every packed launch of a device (see submit_ready): one
 * FIFO per ring that all of them share, so their chunks reach every ring
 * in the same order and their semaphore waits cannot wait on each other in
 * a circle. Created on first use, under dev->lock. */
static struct {
	struct device *dev;
	struct gpool pool;
} packed[NPU_MAX_DEVICES];

static void pool_rings(struct device *dev, struct gpool *p);
static int pool_init(struct device *dev, struct gpool *p,
		     bool (*use)[NPU_MAX_RINGS_LIB]);

static struct gpool *packed_pool(struct device *dev)
{
	int i;

	for (i = 0; i < NPU_MAX_DEVICES; i++)
		if (packed[i].dev == dev)
			return &packed[i].pool;
	for (i = 0; i < NPU_MAX_DEVICES && packed[i].dev; i++)
		;
	if (i == NPU_MAX_DEVICES)
		return NULL;
	pool_rings(dev, &packed[i].pool);
	if (pool_init(dev, &packed[i].pool, NULL))
		return NULL;
	packed[i].dev = dev;
	return &packed[i].pool;
}

struct avail_pt {			/* a point to wait for availability */
	struct tl *t;
	uint64_t p;
};

struct launch;

struct npu_graph_exec {
	uint32_t magic;
	struct device *dev;
	struct xnode *x;
	unsigned n;
	bool has_host;
	pthread_mutex_t lock;
	uint64_t launches;
	/* launches on library threads (they use the exec); one destroyed
	 * while any runs (only after a failed wait: the device was lost) is
	 * freed by the last. Under dev->lock. */
	unsigned threads;
	bool destroyed;
	struct tl *done;		/* point n: launch n complete */
	/* the stream point of the latest launch: the job that signals
	 * done's point n signals it too, so once it is known complete
	 * (a synchronize caches that) so is launch n, without a query */
	struct tl *last_tl;		/* a reference */
	uint64_t last_pt;
	struct gpool pool;		/* its queues */
	uint32_t cmd_handle;
	uint8_t *cmd_map;
	uint64_t cmd_va;
	uint32_t slot_size;
	uint32_t chunk_off;		/* packed jobs (see submit_ready) */
	uint32_t sem_handle;		/* a semaphore word per node */
	void *sem_map;
	uint64_t sem_va;
	uint64_t sem_size;
	/* Prebuilt command slots. An untraced launch of a graph without
	 * host nodes lays its packets out the same way every time, so each
	 * of the EXEC_SLOTS command slots keeps the packets its last such
	 * launch wrote: slot_gen[s] == gen says slot s holds the packets of
	 * the current parameters (gen moves on with every
	 * npu_graph_exec_kernel_node_set_params); then a launch only
	 * rewrites the event record packets (their timestamp slot changes
	 * with each record). 0: to be rebuilt. Under x->lock. */
	uint64_t gen;
	uint64_t slot_gen[EXEC_SLOTS];	/* | SLOT_UQ_LAYOUT: uq_launch's */
	/* The point that completes the last launch that used each slot (a
	 * reference): done's point n for a launch through kernel jobs, the
	 * stream's point for one on a user queue. Under x->lock. */
	struct tl *slot_tl[EXEC_SLOTS];
	uint64_t slot_pt[EXEC_SLOTS];
	/* Launch scratch, so that a launch does not allocate: the arrays
	 * of submit_ready (only used within one call, under dev->lock), the
	 * availability list of npu_graph_launch (under x->lock) and, for a
	 * graph without host nodes, its struct launch (under x->lock; a
	 * launch with host nodes outlives the call, it allocates its own). */
	struct drm_npu_job *s_jobs;
	struct drm_npu_sync *s_sy;
	uint32_t *s_bos;
	bool *s_now;
	int *s_job_of;
	uint64_t *s_jpt;
	struct avail_pt *s_avail;
	struct launch *s_L;
};

/* Caller holds dev->lock. */
static void pool_fini(struct device *dev, struct gpool *p)
{
	unsigned q, r;

	for (q = 0; q < 2; q++)
		for (r = 0; r < p->nq[q]; r++) {
			if (!p->tl[q][r])
				continue;
			npu_queue_put(dev, p->queue[q][r], 0, r, 0, false);
			npu_tl_put(dev, p->tl[q][r]);
			p->tl[q][r] = NULL;
		}
}

/* The rings of each kind, no queues yet. */
static void pool_rings(struct device *dev, struct gpool *p)
{
	memset(p, 0, sizeof(*p));
	p->nq[Q_COMPUTE] = dev->prop.compute_rings;
	p->nq[Q_COPY] = dev->prop.copy_rings;
	if (p->nq[Q_COMPUTE] > NPU_MAX_RINGS_LIB)
		p->nq[Q_COMPUTE] = NPU_MAX_RINGS_LIB;
	if (p->nq[Q_COPY] > NPU_MAX_RINGS_LIB)
		p->nq[Q_COPY] = NPU_MAX_RINGS_LIB;
}

/* A queue and its timeline on each ring of use (NULL: every ring); the
 * driver takes 256 queues a file, so a graph makes only those it needs.
 * Caller holds dev->lock. Returns 0 or -1 (errno set; nothing left). */
static int pool_init(struct device *dev, struct gpool *p,
		     bool (*use)[NPU_MAX_RINGS_LIB])
{
	unsigned q, r;

	for (q = 0; q < 2; q++) {
		for (r = 0; r < p->nq[q]; r++) {
			struct drm_npu_queue_create c;

			if (use && !use[q][r])
				continue;
			memset(&c, 0, sizeof(c));
			c.kind = q == Q_COMPUTE ? DRM_NPU_RING_KIND_COMPUTE :
				DRM_NPU_RING_KIND_COPY;
			c.priority = DRM_NPU_PRIORITY_NORMAL;
			c.ring = r;
			errno = npu_queue_get(dev, &c);
			if (errno)
				goto fail;
			p->queue[q][r] = c.queue_id;
			p->tl[q][r] = npu_tl_new(dev);
			if (!p->tl[q][r]) {
				npu_queue_put(dev, c.queue_id, 0, r, 0, false);
				errno = ENOMEM;
				goto fail;
			}
		}
	}
	return 0;
fail:
	{
		int e = errno;

		pool_fini(dev, p);
		errno = e;
	}
	return -1;
}

/* ------------------------------------------------------------------------
 * Instantiation
 */
static uint32_t node_bytes(const struct xnode *x)
{
	uint32_t b = 0;

	switch (x->type) {
	case NPU_GRAPH_NODE_KERNEL:
		b = x->kp.function ? NPU_CMD_LAUNCH_CODE_BYTES(x->kp.nargs) :
				     NPU_CMD_LAUNCH_BYTES(x->kp.nargs);
		break;
	case NPU_GRAPH_NODE_MEMCPY:
		b = NPU_CMD_COPY_BYTES;
		break;
	case NPU_GRAPH_NODE_MEMSET:
		b = NPU_CMD_MEMSET_BYTES;
		break;
	case NPU_GRAPH_NODE_EVENT_RECORD:
		b = NPU_CMD_TS_BYTES;
		break;
	default:
		return 0;
	}
	return (b + NPU_TRACE_BYTES + 7) & ~7u;
}

static void launch_scratch_free(struct launch *L);
static struct launch *launch_scratch_new(unsigned n);
#define MAX_ENTRY	(NPU_MAX_RINGS_LIB * 2 + 8)

/* Sync entries submit_ready needs with nentry entry dependencies. */
static unsigned sync_cap(const struct npu_graph_exec *x, unsigned nentry)
{
	unsigned i, cap = 8 + 2 * nentry;

	for (i = 0; i < x->n; i++)
		cap += x->x[i].npreds + nentry + 2 + JOB_OUTS;
	return cap + x->n;
}

static void exec_free(struct npu_graph_exec *x)
{
	unsigned i;

	if (x->x)
		for (i = 0; i < x->n; i++) {
			free(x->x[i].preds);
			if (x->x[i].type == NPU_GRAPH_NODE_KERNEL &&
			    x->x[i].kp.function)
				npu_function_release(x->x[i].kp.function);
		}
	free(x->x);
	free(x->s_jobs);
	free(x->s_sy);
	free(x->s_bos);
	free(x->s_now);
	free(x->s_job_of);
	free(x->s_jpt);
	free(x->s_avail);
	launch_scratch_free(x->s_L);
	if (x->cmd_map)
		npu_host_bo_free(x->dev, x->cmd_handle, x->cmd_map,
				 (uint64_t)x->slot_size * EXEC_SLOTS);
	if (x->sem_map)
		npu_host_bo_free(x->dev, x->sem_handle, x->sem_map, x->sem_size);
	pthread_mutex_lock(&x->dev->lock);
	pool_fini(x->dev, &x->pool);
	if (x->done) {
		npu_tl_put(x->dev, x->done);
		if (x->last_tl)
			npu_tl_put(x->dev, x->last_tl);
	}
	for (i = 0; i < EXEC_SLOTS; i++)
		if (x->slot_tl[i])
			npu_tl_put(x->dev, x->slot_tl[i]);
	pthread_mutex_unlock(&x->dev->lock);
	pthread_mutex_destroy(&x->lock);
	x->magic = 0;
	free(x);
}

npu_status_t npu_graph_instantiate(npu_graph_exec_t *out, npu_graph_t g,
				   unsigned int flags)
{
	struct npu_graph_exec *x;
	struct device *dev;
	struct gpool *pool;
	unsigned *order, *indeg, *pos, i, k, head = 0, tail = 0;
	unsigned *sfirst, *succ = NULL;
	size_t nedges;
	unsigned *load[2];
	bool *passed;
	npu_status_t st = npu_graph_check(g);

	if (st)
		return st;
	if (!out)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "exec pointer is NULL");
	if (flags)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "flags must be 0");
	dev = g->dev;
	/* built-in kernel nodes run the kernel library's code: load it now,
	 * before dev->lock (loading allocates) */
	for (i = 0; i < g->n; i++) {
		if (g->nodes[i]->type != NPU_GRAPH_NODE_KERNEL ||
		    g->nodes[i]->kp.function ||
		    !npu_builtin_coded(g->nodes[i]->kp.kernel))
			continue;
		st = npu_builtin_load(dev);
		if (st)
			return st;
		break;
	}
	x = calloc(1, sizeof(*x));
	order = calloc(g->n + 1, sizeof(*order));
	indeg = calloc(g->n + 1, sizeof(*indeg));
	pos = calloc(g->n + 1, sizeof(*pos));
	sfirst = calloc(g->n + 1, sizeof(*sfirst));
	passed = calloc(g->n + 1, sizeof(*passed));
	load[0] = calloc(NPU_MAX_RINGS_LIB, sizeof(unsigned));
	load[1] = calloc(NPU_MAX_RINGS_LIB, sizeof(unsigned));
	if (!x || !order || !indeg || !pos || !sfirst || !passed || !load[0] ||
	    !load[1]) {
		st = npu_fail(NPU_ERROR_OUT_OF_MEMORY, "instantiate");
		goto fail;
	}
	x->magic = EXEC_MAGIC;
	x->dev = dev;
	pthread_mutex_init(&x->lock, NULL);
	x->n = g->n;
	x->x = calloc(g->n + 1, sizeof(*x->x));
	if (!x->x) {
		st = npu_fail(NPU_ERROR_OUT_OF_MEMORY, "instantiate");
		goto fail;
	}
	/* topological order (Kahn), stable in creation order, over lists of
	 * successors (each node's in creation order, in one array): linear
	 * in nodes and edges */
	nedges = 0;
	for (i = 0; i < g->n; i++) {
		indeg[i] = g->nodes[i]->npreds;
		nedges += indeg[i];
		for (k = 0; k < indeg[i]; k++)
			sfirst[g->nodes[i]->preds[k]->idx + 1]++;
	}
	succ = calloc(nedges + 1, sizeof(*succ));
	if (!succ) {
		st = npu_fail(NPU_ERROR_OUT_OF_MEMORY, "instantiate");
		goto fail;
	}
	for (i = 0; i < g->n; i++)
		sfirst[i + 1] += sfirst[i];
	memcpy(pos, sfirst, g->n * sizeof(*pos));	/* (fill cursors) */
	for (i = 0; i < g->n; i++)
		for (k = 0; k < g->nodes[i]->npreds; k++)
			succ[pos[g->nodes[i]->preds[k]->idx]++] = i;
	for (i = 0; i < g->n; i++)
		if (!indeg[i])
			order[tail++] = i;
	while (head < tail) {
		unsigned u = order[head++];

		for (k = sfirst[u]; k < sfirst[u + 1]; k++)
			if (--indeg[succ[k]] == 0)
				order[tail++] = succ[k];
	}
	if (tail != g->n) {
		st = npu_fail(NPU_ERROR_INVALID_VALUE, "the graph has a cycle");
		goto fail;
	}
	for (i = 0; i < g->n; i++)
		pos[order[i]] = i;
	pthread_mutex_lock(&dev->lock);
	pool = &x->pool;
	pool_rings(dev, pool);
	for (i = 0; i < g->n && !st; i++) {
		struct npu_graph_node *n = g->nodes[order[i]];
		struct xnode *xn = &x->x[i];
		bool pg;
		unsigned cross = 0;

		xn->type = n->type;
		xn->orig = n;
		xn->kp = n->kp;
		if (n->type == NPU_GRAPH_NODE_KERNEL && !n->kp.function) {
			/* a built-in kernel: as npu_launch() runs it */
			xn->coded = npu_builtin_coded(n->kp.kernel);
			if (xn->coded)
				st = npu_builtin_code_params(dev, &n->kp, &xn->kp);
			if (st) {
				xn->kp.function = NULL;
				break;
			}
		}
		/* its module stays loaded while x is (exec_free lets go) */
		if (n->type == NPU_GRAPH_NODE_KERNEL && xn->kp.function) {
			st = npu_function_hold(xn->kp.function);
			if (st) {
				xn->kp.function = NULL;
				break;
			}
		}
		xn->fn = n->fn;
		xn->user = n->user;
		xn->ev = n->ev;
		xn->ev_serial = n->ev_serial;
		xn->value = n->value;
		xn->count = n->count;
		xn->sink = true;
		if (n->type == NPU_GRAPH_NODE_MEMCPY) {
			st = npu_graph_check_copy(dev, n->dst, n->src, n->count, n->kind,
					&xn->dst_va, &xn->src_va, xn->bo, &pg, true);
			xn->nbo = xn->bo[0] == xn->bo[1] ? 1 : 2;
		} else if (n->type == NPU_GRAPH_NODE_MEMSET) {
			st = npu_graph_check_copy(dev, n->dst, n->dst, n->count,
					NPU_MEMCPY_DEVICE_TO_DEVICE, &xn->dst_va,
					&xn->src_va, xn->bo, &pg, true);
			xn->nbo = 1;
		}
		if (st)
			break;
		if (n->type == NPU_GRAPH_NODE_HOST)
			x->has_host = true;
		xn->q = (n->type == NPU_GRAPH_NODE_MEMCPY ||
			 n->type == NPU_GRAPH_NODE_MEMSET) && pool->nq[Q_COPY] ?
			Q_COPY : Q_COMPUTE;
		xn->preds = calloc(n->npreds + 1, sizeof(unsigned));
		if (!xn->preds) {
			st = npu_fail(NPU_ERROR_OUT_OF_MEMORY, "instantiate");
			break;
		}
		xn->npreds = n->npreds;
		xn->ring = UINT32_MAX;
		for (k = 0; k < n->npreds; k++) {
			unsigned p = pos[n->preds[k]->idx];
			struct xnode *xp = &x->x[p];

			xn->preds[k] = p;
			xp->sink = false;
			/* continue a predecessor's queue (a chain) */
			if (xn->ring == UINT32_MAX && !passed[p] &&
			    xp->type != NPU_GRAPH_NODE_HOST && xp->q == xn->q) {
				xn->ring = xp->ring;
				passed[p] = true;
			}
		}
		if (xn->ring == UINT32_MAX) {
			uint32_t r, best = 0;

			for (r = 1; r < pool->nq[xn->q]; r++)
				if (load[xn->q][r] < load[xn->q][best])
					best = r;
			xn->ring = best;
		}
		load[xn->q][xn->ring]++;
		for (k = 0; k < n->npreds; k++) {
			struct xnode *xp = &x->x[xn->preds[k]];

			if (xp->type == NPU_GRAPH_NODE_HOST || xp->q != xn->q ||
			    xp->ring != xn->ring || xn->type == NPU_GRAPH_NODE_HOST) {
				cross++;
				xp->xo = true;
			}
		}
		if (cross > MAX_CROSS_DEPS)
			st = npu_fail(NPU_ERROR_NOT_SUPPORTED,
				      "a node has more than %u dependencies on other queues",
				      MAX_CROSS_DEPS);
		xn->off = x->slot_size;
		xn->size = node_bytes(xn);
		x->slot_size += xn->size;
	}
	if (!st) {
		bool use[2][NPU_MAX_RINGS_LIB];

		memset(use, 0, sizeof(use));
		for (i = 0; i < x->n; i++)
			if (x->x[i].type != NPU_GRAPH_NODE_HOST)
				use[x->x[i].q][x->x[i].ring] = true;
		if (pool_init(dev, pool, use))
			st = npu_fail(NPU_ERROR_OS, "graph queues: %s",
				      npu_strerror(errno));
		/* a graph that may be packed needs the shared queues */
		else if (x->n + 1 > (dev->prop.max_jobs_per_submit ?
				      dev->prop.max_jobs_per_submit : 64) &&
			 !packed_pool(dev))
			st = npu_fail(NPU_ERROR_OS, "graph queues: %s",
				      npu_strerror(errno));
	}
	if (!st) {
		/* launch scratch (see struct npu_graph_exec) */
		x->gen = 1;
		x->s_jobs = calloc(JOBS_CAP(x->n), sizeof(*x->s_jobs));
		x->s_sy = calloc(sync_cap(x, MAX_ENTRY), sizeof(*x->s_sy));
		x->s_bos = calloc(2 * x->n + 2, sizeof(*x->s_bos));
		x->s_now = calloc(x->n + 1, sizeof(*x->s_now));
		x->s_job_of = calloc(x->n + 1, sizeof(*x->s_job_of));
		x->s_jpt = calloc(x->n + 2, sizeof(*x->s_jpt));
		x->s_avail = calloc(2 * x->n + MAX_ENTRY + 64, sizeof(*x->s_avail));
		if (!x->has_host)
			x->s_L = launch_scratch_new(x->n);
		if (!x->s_jobs || !x->s_sy || !x->s_bos || !x->s_now ||
		    !x->s_job_of || !x->s_jpt || !x->s_avail ||
		    (!x->has_host && !x->s_L))
			st = npu_fail(NPU_ERROR_OUT_OF_MEMORY, "instantiate");
	}
	if (!st) {
		unsigned sinks = 0;

		for (i = 0; i < x->n; i++)
			sinks += x->x[i].sink;
		if (sinks > MAX_CROSS_DEPS)
			st = npu_fail(NPU_ERROR_NOT_SUPPORTED,
				      "more than %u nodes without successors; join them with an empty node",
				      MAX_CROSS_DEPS);
	}
	if (!st) {
		void *m;

		/* room for the packed form: semaphore packets around nodes
		 * (a slot's offsets are 32-bit: at most 4 GiB for all slots) */
		uint64_t size = x->slot_size;

		x->chunk_off = x->slot_size;
		for (i = 0; i < x->n; i++)
			size += ((x->x[i].size + 16ull * (x->x[i].npreds + 1)) + 7) & ~7ull;
		if (size > (UINT32_MAX - 4095) / EXEC_SLOTS)
			st = npu_fail(NPU_ERROR_NOT_SUPPORTED,
				      "the graph needs %" PRIu64 " bytes of command buffer per launch",
				      size);
		x->slot_size = (uint32_t)size;
		x->sem_size = ((uint64_t)4 * x->n + 4095) & ~4095ull;
		if (!x->sem_size)
			x->sem_size = 4096;
		if (!st && npu_host_bo(dev, x->sem_size, &x->sem_handle,
				       &x->sem_va, &m))
			st = npu_fail(NPU_ERROR_OUT_OF_MEMORY, "graph semaphores");
		else if (!st)
			x->sem_map = m;
	}
	if (!st) {
		void *m;

		x->slot_size = (x->slot_size + 4095) & ~4095u;
		if (!x->slot_size)
			x->slot_size = 4096;
		if (npu_host_bo(dev, (uint64_t)x->slot_size * EXEC_SLOTS,
				&x->cmd_handle, &x->cmd_va, &m))
			st = npu_fail(NPU_ERROR_OUT_OF_MEMORY, "graph command buffer");
		else
			x->cmd_map = m;
	}
	if (!st) {
		x->done = npu_tl_new(dev);
		if (!x->done)
			st = npu_fail(NPU_ERROR_OS, "syncobj: %s", npu_strerror(errno));
	}
	pthread_mutex_unlock(&dev->lock);
	if (!st && npu_reg_add(x, REG_EXEC))
		st = npu_fail(NPU_ERROR_OUT_OF_MEMORY, "handle registry");
	if (st)
		goto fail;
	free(order);
	free(indeg);
	free(pos);
	free(sfirst);
	free(succ);
	free(passed);
	free(load[0]);
	free(load[1]);
	*out = x;
	return NPU_SUCCESS;
fail:
	if (x)
		exec_free(x);
	free(order);
	free(indeg);
	free(pos);
	free(sfirst);
	free(succ);
	free(passed);
	free(load[0]);
	free(load[1]);
	return st;
}

static npu_status_t check_exec(npu_graph_exec_t x)
{
	if (!x || !npu_reg_check(x, REG_EXEC))
		return npu_fail(NPU_ERROR_INVALID_HANDLE,
				"%p is not a live executable graph", (void *)x);
	return NPU_SUCCESS;
}

npu_status_t npu_graph_exec_destroy(npu_graph_exec_t x)
{
	npu_status_t st = NPU_SUCCESS;
	struct device *dev;
	bool in_use;

	if (!x || !npu_reg_remove(x, REG_EXEC))
		return npu_fail(NPU_ERROR_INVALID_HANDLE,
				"%p is not a live executable graph", (void *)x);
	dev = x->dev;
	pthread_mutex_lock(&x->lock);
	pthread_mutex_lock(&dev->lock);
	if (x->launches && npu_tl_wait_locked(dev, x->done, x->launches) &&
	    npu_dev_lost(dev))
		st = npu_fail_lost();
	in_use = x->threads;
	x->destroyed = in_use;
	pthread_mutex_unlock(&dev->lock);
	pthread_mutex_unlock(&x->lock);
	if (!in_use)
		exec_free(x);
	return st;
}

/* A launch's thread is done with its exec x and stream s (the launch is
 * freed already): returns x if it was destroyed meanwhile and is now to be
 * freed (exec_free, without dev->lock). Caller holds dev->lock. */
static struct npu_graph_exec *launch_thread_end(struct device *dev,
						struct npu_graph_exec *x,
						struct npu_stream *s)
{
	npu_stream_put_locked(dev, s);
	npu_thread_done(dev);
	return !--x->threads && x->destroyed ? x : NULL;
}

npu_status_t npu_graph_exec_kernel_node_set_params(npu_graph_exec_t x,
						   npu_graph_node_t node,
						   const npu_kernel_node_params *p)
{
	npu_status_t st = check_exec(x);
	unsigned i;

	if (st)
		return st;
	st = npu_graph_check_kparams(p);
	if (st)
		return st;
	pthread_mutex_lock(&x->lock);
	for (i = 0; i < x->n; i++)
		if (x->x[i].orig == node)
			break;
	if (i == x->n || x->x[i].type != NPU_GRAPH_NODE_KERNEL) {
		st = npu_fail(NPU_ERROR_INVALID_VALUE,
			      "node is not a kernel node of the executable graph");
	} else if (x->x[i].coded ? p->function || x->x[i].kp.kernel != p->kernel :
		   x->x[i].kp.function != p->function ||
		   (!p->function && x->x[i].kp.kernel != p->kernel)) {
		st = npu_fail(NPU_ERROR_INVALID_VALUE,
			      "the kernel of a node cannot change");
	} else {
		npu_kernel_node_params kp = *p;

		/* the library is loaded (instantiation routed the node) */
		if (x->x[i].coded)
			st = npu_builtin_code_params(x->dev, p, &kp);
		if (!st) {
			x->x[i].kp = kp;	/* used from the next launch on */
			x->gen++;	/* the prebuilt slots have the old */
		}
	}
	pthread_mutex_unlock(&x->lock);
	return st;
}

npu_status_t npu_graph_get_stats(npu_graph_stats *s)
{
	if (!s)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "stats is NULL");
	s->launches = atomic_load(&st_launches);
	s->submit_ioctls = atomic_load(&st_ioctls);
	s->jobs = atomic_load(&st_jobs);
	return NPU_SUCCESS;
}

/* ------------------------------------------------------------------------
 * Launch
 */
struct launch {
	struct npu_graph_exec *x;
	struct device *dev;
	struct npu_stream *s;
	struct gpool *pool;
	uint64_t n;			/* launch number */
	uint8_t *cmd;
	uint64_t cmd_va;
	struct dep entry[MAX_ENTRY];
	unsigned nentry;
	unsigned slot;			/* command slot: n % EXEC_SLOTS */
	bool owned;			/* allocated for this launch */
	bool on_thread;			/* host_main runs on a helper thread */
	uint64_t P;			/* stream point of the join */
	struct tl *host_tl;
	uint64_t host_pt;
	uint64_t *pt;			/* per node: point signalled, 0 = not yet */
	struct tl **ptl;		/* per node: timeline of that point */
	uint64_t *evpt;			/* event nodes: event point */
	/* event nodes: the timeline of that point (a reference: the event
	 * may be destroyed while the launch is queued) and, for a timed
	 * record, the VA its timestamp goes to */
	struct tl **evtl;
	uint64_t *evts;
	/* the kernel nodes' parameters as of this launch, for a launch that
	 * outlives npu_graph_launch (host nodes): later
	 * npu_graph_exec_kernel_node_set_params calls do not reach it */
	npu_kernel_node_params *kp;
	/* the next free byte of the command slot: each submission round of a
	 * launch (host nodes make several) writes after the earlier rounds,
	 * whose jobs may not have started yet */
	uint32_t at;
	/* user-kernel nodes: this launch's printf buffer and profile slot,
	 * and the packet fields that name them */
	struct ukernel_slots *uks;
	struct npu_pkt_launch_code *extra;
	bool joined;
};

static void launch_scratch_free(struct launch *L)
{
	if (!L)
		return;
	free(L->pt);
	free(L->ptl);
	free(L->evpt);
	free(L->evtl);
	free(L->evts);
	free(L->kp);
	free(L->uks);
	free(L->extra);
	free(L);
}

static struct launch *launch_scratch_new(unsigned n)
{
	struct launch *L = calloc(1, sizeof(*L));

	if (!L)
		return NULL;
	L->pt = calloc(n + 1, sizeof(*L->pt));
	L->ptl = calloc(n + 1, sizeof(*L->ptl));
	L->evpt = calloc(n + 1, sizeof(*L->evpt));
	L->evtl = calloc(n + 1, sizeof(*L->evtl));
	L->evts = calloc(n + 1, sizeof(*L->evts));
	L->uks = calloc(n + 1, sizeof(*L->uks));
	L->extra = calloc(n + 1, sizeof(*L->extra));
	if (!L->pt || !L->ptl || !L->evpt || !L->evtl || !L->evts || !L->uks ||
	    !L->extra) {
		launch_scratch_free(L);
		return NULL;
	}
	return L;
}

/* The kernel nodes' parameters as of now, for a launch that outlives
 * npu_graph_launch. Caller holds x->lock. */
static npu_kernel_node_params *kp_snapshot(struct npu_graph_exec *x)
{
	npu_kernel_node_params *kp = malloc((x->n + 1) * sizeof(*kp));
	unsigned i;

	for (i = 0; kp && i < x->n; i++)
		if (x->x[i].type == NPU_GRAPH_NODE_KERNEL)
			kp[i] = x->x[i].kp;
	return kp;
}

/* The launch state: the exec's own for a graph without host nodes (the
 * launch ends within npu_graph_launch, under x->lock), else a new one (it
 * lives on in the host-node thread). Returned cleared. */
static struct launch *launch_get(struct npu_graph_exec *x)
{
	struct launch *L = x->s_L;

	if (!L) {
		L = launch_scratch_new(x->n);
		if (!L)
			return NULL;
		L->owned = true;
		L->kp = kp_snapshot(x);
		if (!L->kp) {
			launch_scratch_free(L);
			return NULL;
		}
	} else {
		uint64_t *pt = L->pt, *evpt = L->evpt, *evts = L->evts;
		struct tl **ptl = L->ptl, **evtl = L->evtl;
		struct ukernel_slots *uks = L->uks;
		struct npu_pkt_launch_code *extra = L->extra;

		memset(L, 0, sizeof(*L));
		memset(pt, 0, (x->n + 1) * sizeof(*pt));
		memset(ptl, 0, (x->n + 1) * sizeof(*ptl));
		memset(evpt, 0, (x->n + 1) * sizeof(*evpt));
		memset(evtl, 0, (x->n + 1) * sizeof(*evtl));
		memset(evts, 0, (x->n + 1) * sizeof(*evts));
		L->pt = pt;
		L->ptl = ptl;
		L->evpt = evpt;
		L->evtl = evtl;
		L->evts = evts;
		L->uks = uks;
		L->extra = extra;
	}
	/* no slots yet: ints of all ones are -1 */
	memset(L->uks, 0xff, (x->n + 1) * sizeof(*L->uks));
	return L;
}

static void launch_release(struct launch *L)
{
	if (L->owned)
		launch_scratch_free(L);
}

/* The event timelines a launch holds. Caller holds dev->lock. */
static void launch_put_events(struct launch *L)
{
	unsigned i;

	for (i = 0; i < L->x->n; i++)
		if (L->evtl[i]) {
			npu_tl_put(L->dev, L->evtl[i]);
			L->evtl[i] = NULL;
		}
}

static void launch_free(struct launch *L)
{
	unsigned i;

	launch_put_events(L);
	for (i = 0; i < L->nentry; i++)
		npu_tl_put(L->dev, L->entry[i].tl);
	if (L->host_tl)
		npu_tl_put(L->dev, L->host_tl);
	npu_tl_put(L->dev, L->s->tl);
	launch_release(L);
}

/* Write node i's packets with w (npu_cmd.h). */
static void put_node(struct launch *L, unsigned i, struct npu_cmdw *w)
{
	struct xnode *xn = &L->x->x[i];
	const npu_kernel_node_params *kp = L->kp ? &L->kp[i] : &xn->kp;

	switch (xn->type) {
	case NPU_GRAPH_NODE_KERNEL: {
		const uint32_t g[3] = { kp->grid.x, kp->grid.y, kp->grid.z };

		if (kp->function)
			npu_ukernel_packet(w, kp->function, kp->grid, kp->block,
					   kp->scratch_bytes, kp->args,
					   &L->extra[i]);
		else
			npu_cmd_launch(w, (uint32_t)kp->kernel, g, kp->args,
				       kp->nargs);
		break;
	}
	case NPU_GRAPH_NODE_MEMCPY:
		npu_cmd_copy(w, xn->src_va, xn->dst_va, xn->count);
		break;
	case NPU_GRAPH_NODE_MEMSET:
		npu_cmd_memset(w, xn->dst_va, (uint8_t)xn->value, xn->count);
		break;
	case NPU_GRAPH_NODE_EVENT_RECORD:
		if (L->evts[i])
			npu_cmd_timestamp(w, L->evts[i]);
		break;
	default:
		break;
	}
}

/* Packets of node i, bracketed by trace TIMESTAMPs when tracing; returns
 * their bytes. */
static uint32_t put_traced(struct launch *L, unsigned i, struct npu_cmdw *w,
			   bool tracing)
{
	struct xnode *xn = &L->x->x[i];
	struct device *dev = L->dev;
	uint32_t start = w->len, body, slot = 0;
	uint64_t tva;

	if (tracing && (xn->type == NPU_GRAPH_NODE_KERNEL ||
			xn->type == NPU_GRAPH_NODE_MEMCPY ||
			xn->type == NPU_GRAPH_NODE_MEMSET))
		slot = npu_trace_slot(dev, &tva);
	if (!slot) {
		put_node(L, i, w);
		return w->len - start;
	}
	npu_cmd_timestamp(w, tva);
	body = w->len;
	put_node(L, i, w);
	npu_trace_fill(dev, slot, w->buf + body, w->len - body,
		       npu_ring_global(dev, xn->q, xn->ring), L->s, true);
	npu_cmd_timestamp(w, tva + 8);
	return w->len - start;
}

/* A user-kernel node whose packet names this launch's printf buffer: it is
 * written by every launch, never kept from a prebuilt slot. (While the
 * profiler runs no slot is prebuilt.) */
static bool per_launch(const struct xnode *xn)
{
	return xn->type == NPU_GRAPH_NODE_KERNEL && xn->kp.function &&
	       xn->kp.function->mod->uses_printf;
}

/* Each user-kernel node's printf buffer and profile slot for this launch,
 * as for a stream launch (npu_ukernel_slots_take); a node for which no
 * printf buffer is left (every one is held by this or other launches being
 * queued) runs without one, and that is said on stderr. Caller holds
 * dev->lock (dropped while waiting for a buffer). */
static npu_status_t launch_slots_take(struct launch *L)
{
	struct npu_graph_exec *x = L->x;
	unsigned i, printless = 0;

	for (i = 0; i < x->n; i++) {
		struct xnode *xn = &x->x[i];
		bool none;
		npu_status_t st;

		if (xn->type != NPU_GRAPH_NODE_KERNEL || !xn->kp.function)
			continue;
		st = npu_ukernel_slots_take(L->dev, xn->kp.function,
					    xn->kp.block, xn->kp.scratch_bytes,
					    true, &L->extra[i], &L->uks[i],
					    &none);
		if (st)
			return st;
		printless += none;
	}
	if (printless)
		fprintf(stderr, "npu: %u kernel node(s) of a graph launch ran "
			"without a printf buffer (all were in use by launches "
			"being queued): their printf output is lost\n",
			printless);
	return NPU_SUCCESS;
}

/* Once the launch is queued, its nodes' slots are complete with the
 * launch's stream point (the join signals it after every node), in stream
 * order with the stream's other launches; else they are given back. */
static void launch_slots_end(struct launch *L, bool queued)
{
	unsigned i;

	for (i = 0; i < L->x->n; i++) {
		if (queued)
			npu_ukernel_slots_track(L->dev, &L->uks[i], L->s->tl,
						L->P);
		npu_ukernel_slots_cancel(L->dev, &L->uks[i]);
	}
}

static bool same_queue(const struct xnode *a, const struct xnode *b)
{
	return a->type != NPU_GRAPH_NODE_HOST && b->type != NPU_GRAPH_NODE_HOST &&
	       a->q == b->q && a->ring == b->ring;
}

/* One call of submit_ready: the jobs it builds in the exec's scratch
 * arrays (used only within the call, which holds dev->lock throughout). */
struct round {
	struct launch *L;
	struct drm_npu_job *jobs;
	struct drm_npu_sync *sy;	/* the jobs' in- and out-syncs */
	uint32_t *bos;			/* the jobs' BO handles */
	bool *now;			/* node submitted by this call */
	int *job_of;			/* node -> its job (merged form) */
	struct gpool *used;		/* the queues the jobs go to */
	unsigned nj, ns, nb;		/* jobs, syncs, BO handles used */
	unsigned nready, nmerged, ngates, maxj;
	bool tracing, chunked, join_now;
};

/* Clear the scratch arrays as far as used; the ready set, in topological
 * order: the device nodes not yet submitted whose predecessors are. */
static void round_start(struct round *R, struct launch *L)
{
	struct npu_graph_exec *x = L->x;
	unsigned i, k;

	memset(R, 0, sizeof(*R));
	R->L = L;
	R->maxj = npu_submit_max(L->dev);
	R->jobs = x->s_jobs;
	R->now = x->s_now;
	R->sy = x->s_sy;
	R->bos = x->s_bos;
	R->job_of = x->s_job_of;
	R->used = L->pool;
	R->tracing = npu_tracing();
	memset(R->jobs, 0, (x->n + 2) * sizeof(*R->jobs));	/* (packed: all) */
	memset(R->now, 0, (x->n + 1) * sizeof(*R->now));
	memset(R->sy, 0, sync_cap(x, L->nentry) * sizeof(*R->sy));
	for (i = 0; i < x->n; i++) {
		struct xnode *xn = &x->x[i];
		bool ready = !L->pt[i] && xn->type != NPU_GRAPH_NODE_HOST;

		for (k = 0; k < xn->npreds && ready; k++)
			ready = L->pt[xn->preds[k]] != 0 || R->now[xn->preds[k]];
		R->now[i] = ready;
		R->nready += ready;
	}
}

/* One job per node, except that a node whose predecessors are all in the
 * open job of its queue joins that job, as long as no node of that job
 * has a successor on another queue (that successor would wait for the
 * whole job): chains collapse into one job without delaying anybody.
 * Packets of one command buffer run one after the other on the ring (each
 * completes before the next starts, see Documentation/hw/npu.rst, "Ring
 * protocol"), so no barrier is needed between the merged nodes. A node
 * that needs a fence of its own ends the open job: an event record (its
 * event's timeline is signalled with the job's fence) and a node with a
 * successor on another queue; an event wait (an in-fence) and a root (the
 * entry fences) start one; host nodes are no jobs. A job also ends before
 * its BO handles would exceed the driver's limit. Sets R->job_of and
 * R->nmerged. */
static void round_merge(struct round *R)
{
	struct npu_graph_exec *x = R->L->x;
	int open_j[2][NPU_MAX_RINGS_LIB];
	unsigned open_bo[2][NPU_MAX_RINGS_LIB];
	unsigned i, k;

	memset(open_j, 0xff, sizeof(open_j));
	memset(open_bo, 0, sizeof(open_bo));
	for (i = 0; i < x->n; i++) {
		struct xnode *xn = &x->x[i];
		int *o = &open_j[xn->q][xn->ring];
		unsigned *ob = &open_bo[xn->q][xn->ring];
		bool merge = *o >= 0 && xn->npreds &&
			xn->type != NPU_GRAPH_NODE_EVENT_WAIT &&
			*ob + xn->nbo <= JOB_BOS;

		if (!R->now[i])
			continue;
		for (k = 0; k < xn->npreds && merge; k++)
			merge = R->now[xn->preds[k]] &&
				R->job_of[xn->preds[k]] == *o;
		R->job_of[i] = merge ? *o : (int)R->nmerged++;
		*o = R->job_of[i];
		*ob = merge ? *ob + xn->nbo : xn->nbo;
		if (xn->xo || xn->type == NPU_GRAPH_NODE_EVENT_RECORD)
			*o = -1;
	}
}

/* The merged form: build the jobs round_merge chose (their fences), then
 * lay their packets out contiguously. */
static void round_build_merged(struct round *R)
{
	struct launch *L = R->L;
	struct npu_graph_exec *x = L->x;
	struct drm_npu_job *jobs = R->jobs;
	struct drm_npu_sync *sy = R->sy;
	uint64_t *jpt = x->s_jpt;
	uint32_t at = L->at;
	unsigned i, k, jj;
	/* An untraced launch of a graph without host nodes (every node is
	 * submitted by this one call) always lays its packets out the same
	 * way: the slot may hold them already (see struct npu_graph_exec); an
	 * event record node's length must still be the one built (its event
	 * has timing or not). */
	bool pre = !R->tracing && !x->has_host && !L->owned && R->nready == x->n;
	bool valid = pre && x->slot_gen[L->slot] == x->gen;

	for (i = 0; i < x->n && valid; i++)
		if (x->x[i].type == NPU_GRAPH_NODE_EVENT_RECORD &&
		    x->x[i].plen != (L->evts[i] ? NPU_CMD_TS_BYTES : 0u)) {
			x->gen++;	/* every slot's layout is off */
			valid = false;
		}
	memset(jpt, 0, (x->n + 2) * sizeof(*jpt));
	for (i = 0; i < x->n; i++) {
		struct xnode *xn = &x->x[i];
		struct drm_npu_job *j;
		uint32_t in0;

		if (!R->now[i])
			continue;
		if (R->job_of[i] < (int)R->nj) {
			j = &jobs[R->job_of[i]];
		} else {
			j = &jobs[R->nj++];	/* job_of[i] == nj - 1 */
			j->queue_id = L->pool->queue[xn->q][xn->ring];
			in0 = R->ns;
			if (!xn->npreds)
				for (k = 0; k < L->nentry; k++) {
					sy[R->ns].handle = L->entry[k].tl->handle;
					sy[R->ns++].point = L->entry[k].point;
				}
			for (k = 0; k < xn->npreds; k++) {
				if (L->ptl[xn->preds[k]] ==
				    L->pool->tl[xn->q][xn->ring])
					continue;	/* queue order */
				sy[R->ns].handle = L->ptl[xn->preds[k]]->handle;
				sy[R->ns++].point = L->pt[xn->preds[k]];
			}
			if (xn->type == NPU_GRAPH_NODE_EVENT_WAIT && L->evpt[i]) {
				sy[R->ns].handle = L->evtl[i]->handle;
				sy[R->ns++].point = L->evpt[i];
			}
			j->in_syncs = (uintptr_t)&sy[in0];
			j->in_sync_count = R->ns - in0;
			jpt[R->job_of[i]] = ++L->pool->tl[xn->q][xn->ring]->next;
			j->out_syncs = (uintptr_t)&sy[R->ns];
			sy[R->ns].handle = L->pool->tl[xn->q][xn->ring]->handle;
			sy[R->ns].point = jpt[R->job_of[i]];
			/* room for an event and the join's two points */
			R->ns += JOB_OUTS;
			j->out_sync_count = 1;
		}
		if (xn->type == NPU_GRAPH_NODE_EVENT_RECORD) {
			struct drm_npu_sync *o2 = (struct drm_npu_sync *)(uintptr_t)j->out_syncs;

			o2[1].handle = L->evtl[i]->handle;
			o2[1].point = L->evpt[i];
			j->out_sync_count = 2;
		}
		L->ptl[i] = L->pool->tl[xn->q][xn->ring];
		L->pt[i] = jpt[R->job_of[i]];
	}
	for (jj = 0; jj < R->nj; jj++) {
		uint32_t base = at;
		unsigned b0 = R->nb;
		struct npu_cmdw w;

		npu_cmdw_init(&w, L->cmd + base, L->cmd_va + base,
			      x->slot_size - base);
		for (i = 0; i < x->n; i++) {
			if (!R->now[i] || R->job_of[i] != (int)jj)
				continue;
			if (valid && x->x[i].type != NPU_GRAPH_NODE_EVENT_RECORD &&
			    !per_launch(&x->x[i])) {
				npu_cmd_reserve(&w, x->x[i].plen);	/* prebuilt */
			} else {
				k = put_traced(L, i, &w, R->tracing);
				if (pre)
					x->x[i].plen = k;
			}
			/* every node's BOs stay mapped until the job is done */
			for (k = 0; k < x->x[i].nbo; k++)
				if (R->nb == b0 || R->bos[R->nb - 1] != x->x[i].bo[k])
					R->bos[R->nb++] = x->x[i].bo[k];
		}
		jobs[jj].cmd_va = w.len ? L->cmd_va + base : 0;
		jobs[jj].cmd_size = w.len;
		jobs[jj].bo_handles = (uintptr_t)&R->bos[b0];
		jobs[jj].bo_count = R->nb - b0;
		at = (base + w.len + 7) & ~7u;
	}
	L->at = at;
	/* the slot now holds this layout, or something else */
	x->slot_gen[L->slot] = pre ? x->gen : 0;
}

/* The packed form's gates: every external dependency of the launch, at
 * most MAX_CROSS_DEPS in-fences a gate job, the gates one after the other
 * on one queue (queue order): the last one completes after all of them.
 * Returns the last gate's point on pp's first compute timeline. */
static uint64_t round_gates(struct round *R, struct gpool *pp)
{
	struct launch *L = R->L;
	struct npu_graph_exec *x = L->x;
	struct drm_npu_sync *sy = R->sy;
	struct tl *gtl = pp->tl[Q_COMPUTE][0];
	unsigned f0 = R->ns, nf, g, i, k;
	uint64_t gpt = 0;

	for (k = 0; k < L->nentry; k++) {
		sy[R->ns].handle = L->entry[k].tl->handle;
		sy[R->ns++].point = L->entry[k].point;
	}
	for (i = 0; i < x->n; i++) {
		struct xnode *xn = &x->x[i];

		if (!R->now[i])
			continue;
		if (xn->type == NPU_GRAPH_NODE_EVENT_WAIT && L->evpt[i]) {
			sy[R->ns].handle = L->evtl[i]->handle;
			sy[R->ns++].point = L->evpt[i];
		}
		/* host predecessors (earlier phases) and predecessors
		 * submitted by earlier calls: fences, at the gate */
		for (k = 0; k < xn->npreds; k++) {
			unsigned p = xn->preds[k];

			if (R->now[p] || L->ptl[p] == pp->tl[xn->q][xn->ring])
				continue;
			sy[R->ns].handle = L->ptl[p]->handle;
			sy[R->ns++].point = L->pt[p];
		}
	}
	nf = R->ns - f0;
	for (g = 0; g == 0 || g * MAX_CROSS_DEPS < nf; g++) {
		struct drm_npu_job *gate = &R->jobs[R->nj++];
		unsigned c = nf - g * MAX_CROSS_DEPS;

		if (nf < g * MAX_CROSS_DEPS)
			c = 0;
		gate->queue_id = pp->queue[Q_COMPUTE][0];
		gate->in_syncs = (uintptr_t)&sy[f0 + g * MAX_CROSS_DEPS];
		gate->in_sync_count = c < MAX_CROSS_DEPS ? c : MAX_CROSS_DEPS;
		gpt = ++gtl->next;
		gate->out_syncs = (uintptr_t)&sy[R->ns];
		sy[R->ns].handle = gtl->handle;
		sy[R->ns++].point = gpt;
		gate->out_sync_count = 1;
	}
	R->ngates = R->nj;
	return gpt;
}

/* The packed form's chunks of ring (q, rr), cnt nodes in nch jobs at most:
 * each waits for the gate (gtl, gpt), its nodes' edges to other rings are
 * semaphores. A chunk signals one event: it ends after an event record. */
static void round_chunks(struct round *R, struct gpool *pp, unsigned q,
			 unsigned rr, unsigned cnt, unsigned nch, uint64_t gpt)
{
	struct launch *L = R->L;
	struct npu_graph_exec *x = L->x;
	struct drm_npu_sync *sy = R->sy;
	struct tl *gtl = pp->tl[Q_COMPUTE][0];
	unsigned size = (cnt + nch - 1) / nch, done_ = 0, i, k;
	uint32_t n32 = (uint32_t)L->n, base = 0;
	struct drm_npu_job *j = NULL;
	struct npu_cmdw w = { 0 };

	for (i = 0; i < x->n; i++) {
		struct xnode *xn = &x->x[i];

		if (!R->now[i] || xn->q != (int)q || xn->ring != rr)
			continue;
		if (!j) {
			j = &R->jobs[R->nj++];
			j->queue_id = pp->queue[q][rr];
			j->in_syncs = (uintptr_t)&sy[R->ns];
			sy[R->ns].handle = gtl->handle;
			sy[R->ns++].point = gpt;
			j->in_sync_count = 1;
			j->out_syncs = (uintptr_t)&sy[R->ns];
			sy[R->ns].handle = pp->tl[q][rr]->handle;
			sy[R->ns++].point = ++pp->tl[q][rr]->next;
			j->out_sync_count = 1;
			j->bo_handles = (uintptr_t)&R->bos[R->nb];
			base = L->at;
			npu_cmdw_init(&w, L->cmd + base, L->cmd_va + base,
				      x->slot_size - base);
		}
		for (k = 0; k < xn->nbo; k++)
			if (j->bo_count < JOB_BOS &&
			    (!j->bo_count || R->bos[R->nb - 1] != xn->bo[k])) {
				R->bos[R->nb++] = xn->bo[k];
				j->bo_count++;
			}
		for (k = 0; k < xn->npreds; k++) {
			unsigned p = xn->preds[k];

			if (!R->now[p] || same_queue(&x->x[p], xn))
				continue;
			npu_cmd_sem_wait(&w, x->sem_va + 4ull * p, n32);
		}
		put_traced(L, i, &w, R->tracing);
		npu_cmd_sem_signal(&w, x->sem_va + 4ull * i, n32);
		L->ptl[i] = pp->tl[q][rr];
		if (xn->type == NPU_GRAPH_NODE_EVENT_RECORD &&
		    j->out_sync_count < 2) {
			struct drm_npu_sync *o = (struct drm_npu_sync *)(uintptr_t)j->out_syncs;

			/* (one event record per chunk signals its timeline) */
			o[1].handle = L->evtl[i]->handle;
			o[1].point = L->evpt[i];
			R->ns++;
			j->out_sync_count = 2;
		}
		if (++done_ % size == 0 || done_ == cnt ||
		    xn->type == NPU_GRAPH_NODE_EVENT_RECORD) {
			struct drm_npu_sync *o = (struct drm_npu_sync *)(uintptr_t)j->out_syncs;
			unsigned m;

			j->cmd_va = L->cmd_va + base;
			j->cmd_size = w.len;
			/* every node of the chunk is done at the chunk's
			 * point */
			for (m = 0; m <= i; m++)
				if (R->now[m] && L->ptl[m] == pp->tl[q][rr] &&
				    !L->pt[m])
					L->pt[m] = o[0].point;
			L->at = (base + w.len + 7) & ~7u;
			j = NULL;
		}
	}
}

/* The packed form (more jobs than one SUBMIT takes): the gates, then the
 * chunks of each ring, in proportion to its nodes. */
static void round_build_packed(struct round *R)
{
	struct launch *L = R->L;
	struct npu_graph_exec *x = L->x;
	unsigned per_q[2][NPU_MAX_RINGS_LIB], budget = R->maxj - 2, q, rr, i;
	struct gpool *pp;
	uint64_t gpt;

	memset(R->jobs, 0, JOBS_CAP(x->n) * sizeof(*R->jobs));
	x->slot_gen[L->slot] = 0;
	pp = packed_pool(L->dev);	/* made by npu_graph_instantiate */
	R->used = pp;
	gpt = round_gates(R, pp);
	memset(per_q, 0, sizeof(per_q));
	for (i = 0; i < x->n; i++)
		if (R->now[i])
			per_q[x->x[i].q][x->x[i].ring]++;
	for (q = 0; q < 2; q++)
		for (rr = 0; rr < NPU_MAX_RINGS_LIB; rr++) {
			unsigned cnt = per_q[q][rr], nch;

			if (!cnt)
				continue;
			nch = (unsigned)((uint64_t)budget * cnt / R->nready);
			round_chunks(R, pp, q, rr, cnt, nch ? nch : 1, gpt);
		}
}

/* When every sink is in one job of this call, that job completes after
 * every node (each node is an ancestor of a sink, reached through packet
 * order, queue order or an in-fence) and after the entry dependencies
 * (through the roots): it signals the stream's point and the done point
 * itself, and no join job is needed (a chain is then one job in all). */
static void round_join_in_sink(struct round *R)
{
	struct launch *L = R->L;
	struct npu_graph_exec *x = L->x;
	struct drm_npu_job *j;
	struct drm_npu_sync *o;
	unsigned i;
	int sj = -1;

	for (i = 0; i < x->n && sj != -2; i++) {
		if (!x->x[i].sink)
			continue;
		if (!R->now[i] || (sj >= 0 && R->job_of[i] != sj))
			sj = -2;
		else
			sj = R->job_of[i];
	}
	if (sj < 0)
		return;
	j = &R->jobs[sj];
	o = (struct drm_npu_sync *)(uintptr_t)j->out_syncs;
	o[j->out_sync_count].handle = L->s->tl->handle;
	o[j->out_sync_count++].point = L->P;
	o[j->out_sync_count].handle = x->done->handle;
	o[j->out_sync_count++].point = L->n;
	L->joined = true;
	R->join_now = true;
	/* The whole launch is this one job (a chain) and no later phase
	 * refers to its nodes: the ring timeline's point is waited on by
	 * nobody, so the job does not signal it (one syncobj point less in
	 * the SUBMIT) and the point is given back. */
	if (R->nj == 1 && !x->has_host && o[0].handle == L->ptl[0]->handle &&
	    L->ptl[0]->next == o[0].point) {
		struct tl *rt = L->ptl[0];

		for (i = 0; i < x->n; i++) {
			L->ptl[i] = L->s->tl;
			L->pt[i] = L->P;
		}
		rt->next--;
		memmove(o, o + 1, (j->out_sync_count - 1) * sizeof(*o));
		j->out_sync_count--;
	}
}

/* A join job on the stream's compute queue: waits for every sink (or, for
 * an empty graph, the entry dependencies), signals the stream's point and
 * the done point. */
static void round_join_job(struct round *R)
{
	struct launch *L = R->L;
	struct npu_graph_exec *x = L->x;
	struct drm_npu_sync *sy = R->sy;
	struct drm_npu_job *j = &R->jobs[R->nj++];
	unsigned in0 = R->ns, i, k;

	j->queue_id = L->s->queue[Q_COMPUTE];
	for (i = 0; i < x->n; i++)
		if (x->x[i].sink) {
			sy[R->ns].handle = L->ptl[i]->handle;
			sy[R->ns++].point = L->pt[i];
		}
	if (!x->n)
		for (k = 0; k < L->nentry; k++) {
			sy[R->ns].handle = L->entry[k].tl->handle;
			sy[R->ns++].point = L->entry[k].point;
		}
	j->in_syncs = (uintptr_t)&sy[in0];
	j->in_sync_count = R->ns - in0;
	j->out_syncs = (uintptr_t)&sy[R->ns];
	sy[R->ns].handle = L->s->tl->handle;
	sy[R->ns++].point = L->P;
	sy[R->ns].handle = x->done->handle;
	sy[R->ns++].point = L->n;
	j->out_sync_count = 2;
	L->joined = true;
	R->join_now = true;
}

/* One ioctl; several in order only if the driver's limit is below the
 * smallest packing (never with the default 64). Points of jobs not
 * queued are signalled from the host (nobody may wait forever); those
 * queued now exist in the kernel. Returns 0 or -errno. */
static int round_submit(struct round *R)
{
	struct launch *L = R->L;
	struct npu_graph_exec *x = L->x;
	struct device *dev = L->dev;
	struct drm_npu_job *jobs = R->jobs;
	/* the gates but the last go first (the rest fits one call) */
	unsigned first = R->ngates > 1 ? R->ngates - 1 : 0, n2 = 0, c1 = 0;
	unsigned c2 = 0, sent = 0, i, k, q;
	int r;

	r = npu_submit(dev, jobs, first, &sent, &c1);
	if (!r) {
		r = npu_submit(dev, jobs + first, R->nj - first, &n2, &c2);
		sent += n2;
	}
	atomic_fetch_add(&st_ioctls, c1 + c2);
	atomic_fetch_add(&st_jobs, sent);
	for (i = sent; i < R->nj; i++) {
		struct drm_npu_sync *o = (struct drm_npu_sync *)(uintptr_t)jobs[i].out_syncs;

		for (k = 0; k < jobs[i].out_sync_count; k++) {
			uint64_t pt = o[k].point;

			drmSyncobjTimelineSignal(dev->fd, &o[k].handle, &pt, 1);
		}
	}
	for (q = 0; q < 2 && R->nj; q++)
		for (k = 0; k < R->used->nq[q]; k++)
			if (R->used->tl[q][k])
				R->used->tl[q][k]->submitted = R->used->tl[q][k]->next;
	for (i = 0; i < x->n; i++) {
		struct xnode *xn = &x->x[i];

		if (R->now[i] && xn->type == NPU_GRAPH_NODE_EVENT_RECORD &&
		    L->evpt[i] > L->evtl[i]->submitted)
			L->evtl[i]->submitted = L->evpt[i];
	}
	if (R->join_now) {
		if (L->P > L->s->tl->submitted)
			L->s->tl->submitted = L->P;
		if (L->n > x->done->submitted)
			x->done->submitted = L->n;
	}
	if (R->nj)
		npu_flush_deferred(dev);
	return r;
}

/* Submit every device node whose predecessors have all been submitted (or,
 * for host nodes, have returned), and the join once every sink is.
 *
 * Normally each chain of nodes on one queue is one job (round_merge) and
 * all go in one DRM_IOCTL_NPU_SUBMIT.
 * When there are more than the driver takes in one call
 * (DRM_NPU_PARAM_MAX_JOBS), the nodes of each queue are packed into a few
 * jobs ("chunks") and edges between queues inside the launch become device
 * semaphores (SEM_SIGNAL after a node, SEM_WAIT before its successor on
 * another ring), so the launch is still one ioctl. A gate job first waits
 * for every external dependency, and every chunk waits for the gate: a
 * chunk reaches its ring only when nothing outside the launch can hold it
 * up, and each ring runs its chunks in topological order, so the
 * semaphore waits cannot deadlock. Caller holds dev->lock. */
static npu_status_t submit_ready(struct launch *L)
{
	struct npu_graph_exec *x = L->x;
	struct device *dev = L->dev;
	bool all_sinks = true;
	struct round R;
	unsigned i;
	int r;

	round_start(&R, L);
	round_merge(&R);
	R.chunked = R.nmerged + 1 > R.maxj && R.maxj >= 4;
	if (!R.chunked)
		round_build_merged(&R);
	else
		round_build_packed(&R);
	for (i = 0; i < x->n; i++)
		if (x->x[i].sink && !L->pt[i])
			all_sinks = false;
	if (all_sinks && !L->joined && !R.chunked && x->n)
		round_join_in_sink(&R);
	if (all_sinks && !L->joined)
		round_join_job(&R);
	r = round_submit(&R);
	if (r) {
		if (!dev->sticky) {
			dev->sticky = NPU_ERROR_LAUNCH_FAILURE;
			snprintf(dev->sticky_msg, sizeof(dev->sticky_msg),
				 "NPU_ERROR_LAUNCH_FAILURE: the driver refused a graph launch: %s",
				 npu_strerror(-r));
		}
		return npu_fail(NPU_ERROR_LAUNCH_FAILURE,
				"DRM_IOCTL_NPU_SUBMIT (graph): %s", npu_strerror(-r));
	}
	return NPU_SUCCESS;
}

/* Host nodes, in topological order, on a thread of the launch. */
static void *host_main(void *arg)
{
	struct launch *L = arg;
	struct npu_graph_exec *x = L->x, *gone = NULL;
	struct npu_stream *s = L->s;
	struct device *dev = L->dev;
	bool on_thread = L->on_thread;
	unsigned i, k;

	if (on_thread)
		npu_thread_is_lib();
	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < x->n; i++) {
		struct xnode *xn = &x->x[i];
		uint32_t h[MAX_CROSS_DEPS + NPU_MAX_RINGS_LIB * 2 + 8];
		uint64_t p[MAX_CROSS_DEPS + NPU_MAX_RINGS_LIB * 2 + 8];
		unsigned nw = 0;
		bool run;

		if (xn->type != NPU_GRAPH_NODE_HOST)
			continue;
		if (!xn->npreds)
			for (k = 0; k < L->nentry; k++) {
				h[nw] = L->entry[k].tl->handle;
				p[nw++] = L->entry[k].point;
			}
		for (k = 0; k < xn->npreds && nw < MAX_CROSS_DEPS + 8; k++) {
			h[nw] = L->ptl[xn->preds[k]]->handle;
			p[nw++] = L->pt[xn->preds[k]];
		}
		pthread_mutex_unlock(&dev->lock);
		npu_wait_points(dev, h, p, nw);
		pthread_mutex_lock(&dev->lock);
		npu_check_faults(dev);
		run = !dev->sticky;
		pthread_mutex_unlock(&dev->lock);
		if (run)
			xn->fn(xn->user);
		pthread_mutex_lock(&dev->lock);
		L->pt[i] = ++L->host_pt;
		L->ptl[i] = L->host_tl;
		drmSyncobjTimelineSignal(dev->fd, &L->host_tl->handle, &L->pt[i], 1);
		L->host_tl->submitted = L->pt[i];
		submit_ready(L);
	}
	if (!L->joined)
		submit_ready(L);
	launch_free(L);
	if (on_thread)		/* for teardown: joined later */
		gone = launch_thread_end(dev, x, s);
	pthread_mutex_unlock(&dev->lock);
	if (gone)
		exec_free(gone);
	return NULL;
}

static void add_entry(struct launch *L, struct tl *t, uint64_t point)
{
	unsigned i;

	if (!point || point <= t->completed)
		return;
	/* a point of a user queue: into its syncobj (the launch is a job) */
	npu_tl_bridge(L->dev, t, point);
	for (i = 0; i < L->nentry; i++)
		if (L->entry[i].tl == t) {
			if (point > L->entry[i].point)
				L->entry[i].point = point;
			return;
		}
	if (L->nentry < sizeof(L->entry) / sizeof(L->entry[0])) {
		t->refs++;
		L->entry[L->nentry].tl = t;
		L->entry[L->nentry].order_only = false;
		L->entry[L->nentry++].point = point;
	}
}

/* npu_legacy_deps' callback: an entry dependency of launch L */
static npu_status_t entry_wait(void *L, struct tl *t, uint64_t point)
{
	npu_tl_done(((struct launch *)L)->dev, t, point);
	add_entry(L, t, point);
	return NPU_SUCCESS;
}

/* Wait until (t, point) has a fence in the kernel (not for its
 * completion). Caller holds dev->lock; it is dropped while waiting. */
/* A launch that could not be queued in full: signal from the host every
 * point it reserved and did not submit (its event records, and unless the
 * join went in, the stream's point and the exec's done point), so that no
 * later wait blocks forever; the error is the device's sticky one. Caller
 * holds dev->lock. */
static void launch_abandon(struct launch *L, bool reserved)
{
	struct device *dev = L->dev;
	unsigned i;

	for (i = 0; i < L->x->n; i++) {
		struct tl *t = L->evtl[i];
		uint64_t pt = L->evpt[i];

		if (L->x->x[i].type == NPU_GRAPH_NODE_EVENT_RECORD && t &&
		    pt > t->submitted) {
			drmSyncobjTimelineSignal(dev->fd, &t->handle, &pt, 1);
			t->submitted = pt;
		}
	}
	if (!reserved || L->joined)
		return;
	drmSyncobjTimelineSignal(dev->fd, &L->s->tl->handle, &L->P, 1);
	if (L->P > L->s->tl->submitted)
		L->s->tl->submitted = L->P;
	drmSyncobjTimelineSignal(dev->fd, &L->x->done->handle, &L->n, 1);
	if (L->n > L->x->done->submitted)
		L->x->done->submitted = L->n;
	L->joined = true;
}

static void wait_available(struct device *dev, struct tl *t, uint64_t point)
{
	uint32_t h = t->handle;

	if (!point || npu_tl_done(dev, t, point))
		return;
	npu_tl_bridge(dev, t, point);	/* a user queue's point */
	t->refs++;
	pthread_mutex_unlock(&dev->lock);
	npu_syncobj_wait(dev, &h, &point, 1,
			 DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT |
			 DRM_SYNCOBJ_WAIT_FLAGS_WAIT_AVAILABLE);
	pthread_mutex_lock(&dev->lock);
	npu_tl_put(dev, t);
}


/* Is every entry point of a launch submitted (or complete)? The jobs the
 * submit thread has ready are submitted first, as for a waiter. Caller
 * holds dev->lock. */
static bool entries_available(struct device *dev, const struct avail_pt *a,
			      unsigned n)
{
	unsigned i;

	npu_flush_now(dev);
	for (i = 0; i < n; i++)
		if (a[i].p > a[i].t->submitted && a[i].p > a[i].t->completed)
			return false;
	return true;
}

struct deferred_launch {
	struct launch *L;
	unsigned navail;
	struct avail_pt avail[];
};

/* A deferred launch, on a helper thread: wait until its entry points are
 * submitted (a host function on a stream it follows has returned), then
 * submit it as npu_graph_launch would have. */
static void *deferred_main(void *arg)
{
	struct deferred_launch *D = arg;
	struct launch *L = D->L;
	struct npu_graph_exec *x = L->x, *gone;
	struct npu_stream *s = L->s;
	struct device *dev = L->dev;
	npu_status_t st;
	unsigned i;

	npu_thread_is_lib();
	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < D->navail; i++) {
		wait_available(dev, D->avail[i].t, D->avail[i].p);
		npu_tl_put(dev, D->avail[i].t);
	}
	free(D);
	st = dev->sticky ? dev->sticky : submit_ready(L);
	if (st)
		launch_abandon(L, true);
	launch_slots_end(L, !st);
	if (L->x->has_host && !st) {
		/* the host nodes run on this thread, which host_main ends */
		pthread_mutex_unlock(&dev->lock);
		host_main(L);
		return NULL;
	}
	launch_free(L);
	gone = launch_thread_end(dev, x, s);
	pthread_mutex_unlock(&dev->lock);
	if (gone)
		exec_free(gone);
	return NULL;
}

/* Hand launch L, whose entry points avail[0..n) are not all submitted, to
 * a helper thread. The exec's own launch state goes with it, with the
 * parameters as of now, and the exec gets a new one. Returns false when no
 * thread could be had (the caller then waits itself). Caller holds x->lock
 * and dev->lock. */
static bool launch_defer(struct launch *L, const struct avail_pt *avail,
			 unsigned n)
{
	struct npu_graph_exec *x = L->x;
	struct launch *fresh = NULL;
	struct deferred_launch *D;
	unsigned i;

	D = malloc(sizeof(*D) + n * sizeof(D->avail[0]));
	if (!D)
		return false;
	if (!L->owned) {
		fresh = launch_scratch_new(x->n);
		L->kp = fresh ? kp_snapshot(x) : NULL;
		if (!L->kp) {
			launch_scratch_free(fresh);
			free(D);
			return false;
		}
		L->owned = true;
	}
	L->on_thread = true;
	D->L = L;
	D->navail = n;
	for (i = 0; i < n; i++) {
		D->avail[i] = avail[i];
		avail[i].t->refs++;
	}
	if (!npu_thread_start(L->dev, deferred_main, D)) {
		x->threads++;
		L->s->threads++;
	} else {
		for (i = 0; i < n; i++)
			npu_tl_put(L->dev, avail[i].t);
		free(D);
		L->on_thread = false;
		if (fresh) {		/* the exec's own state again */
			free(L->kp);
			L->kp = NULL;
			L->owned = false;
			launch_scratch_free(fresh);
		}
		return false;
	}
	if (fresh)
		x->s_L = fresh;
	/* the slot's packets are rewritten by the thread */
	x->slot_gen[L->slot] = 0;
	return true;
}

/* Launch L's command slot (of EXEC_SLOTS): wait for the launch that used
 * it last. Caller holds x->lock and dev->lock (dropped while waiting). */
static npu_status_t slot_wait(struct launch *L)
{
	struct npu_graph_exec *x = L->x;
	unsigned slot = (unsigned)(L->n % EXEC_SLOTS);

	if (x->slot_tl[slot] &&
	    npu_tl_wait_locked(L->dev, x->slot_tl[slot], x->slot_pt[slot]))
		return npu_fail_wait(L->dev);
	L->slot = slot;
	L->cmd = x->cmd_map + slot * x->slot_size;
	L->cmd_va = x->cmd_va + slot * x->slot_size;
	return NPU_SUCCESS;
}

/* Launch L is queued: its stream point (L->P) is the exec's latest, and
 * (t, pt) completes it, which frees its slot. Caller holds x->lock and
 * dev->lock. */
static void set_last(struct launch *L, struct tl *t, uint64_t pt)
{
	struct npu_graph_exec *x = L->x;

	L->s->tl->refs++;
	if (x->last_tl)
		npu_tl_put(L->dev, x->last_tl);
	x->last_tl = L->s->tl;
	x->last_pt = L->P;
	t->refs++;
	if (x->slot_tl[L->slot])
		npu_tl_put(L->dev, x->slot_tl[L->slot]);
	x->slot_tl[L->slot] = t;
	x->slot_pt[L->slot] = pt;
}

/* Can a launch of x on stream s be one INDIRECT on the stream's user
 * queue? Device nodes only (a compute-class queue runs COPY, FILL and
 * LAUNCH packets), and no trace or kernel profile (their TIMESTAMPs and
 * slots belong to kernel jobs). */
static bool uq_path(const struct npu_graph_exec *x, const struct npu_stream *s)
{
	unsigned i;

	if (!s->uq || !s->tl->sig_va || x->has_host || npu_tracing())
		return false;
	for (i = 0; i < x->n; i++)
		switch (x->x[i].type) {
		case NPU_GRAPH_NODE_KERNEL:
		case NPU_GRAPH_NODE_MEMCPY:
		case NPU_GRAPH_NODE_MEMSET:
		case NPU_GRAPH_NODE_EMPTY:
			break;
		default:
			return false;
		}
	return true;
}

/* A launch on the stream's user queue: every node's packets into the
 * command slot, in the exec's topological order (parallel branches run
 * one after the other, in stream order), then through npu_job_submit's
 * user-queue form: WAIT_MEM64s for the entry dependencies, one INDIRECT
 * to the slot, a SIGNAL of the stream's next point, which also stands for
 * done's point n (as an event recorded there). No system call unless a
 * dependency is only in a syncobj. Caller holds x->lock and dev->lock. */
static npu_status_t uq_launch(struct launch *L)
{
	struct npu_graph_exec *x = L->x;
	struct device *dev = L->dev;
	struct npu_stream *s = L->s;
	struct npu_cmdw w;
	struct jobctx jc;
	npu_status_t st;
	unsigned i;
	bool valid;

	st = launch_slots_take(L);
	if (!st)
		st = slot_wait(L);
	if (st)
		goto out;
	/* the slot may hold these packets from an earlier launch on a user
	 * queue (struct npu_graph_exec): only printf kernels are rewritten,
	 * unless one's length changed, which moves everything after it */
	valid = x->slot_gen[L->slot] == (x->gen | SLOT_UQ_LAYOUT);
	npu_cmdw_init(&w, L->cmd, L->cmd_va, x->slot_size);
	for (i = 0; i < x->n; i++) {
		uint32_t at = w.len;

		if (valid && !per_launch(&x->x[i])) {
			npu_cmd_reserve(&w, x->x[i].plen);
			continue;
		}
		put_node(L, i, &w);
		if (valid && w.len - at != x->x[i].plen)
			valid = false;	/* the rest is rewritten */
		x->x[i].plen = w.len - at;
	}
	x->slot_gen[L->slot] = npu_cmdw_full(&w) ? 0 : x->gen | SLOT_UQ_LAYOUT;
	if (npu_cmdw_full(&w)) {
		st = npu_fail(NPU_ERROR_INVALID_VALUE, "graph command slot full");
		goto out;
	}
	st = npu_job_begin(dev, s, 0, &jc);
	if (st)
		goto out;
	jc.ext_va = L->cmd_va;
	jc.ext_len = w.len;
	/* the previous launch of x, unless stream order covers it */
	if (x->launches && x->last_tl != s->tl) {
		if (x->last_tl && x->last_pt <= x->last_tl->completed &&
		    x->done->completed < x->launches)
			x->done->completed = x->launches;
		st = npu_job_wait(&jc, x->done, x->launches);
		if (st) {
			npu_job_abort(&jc);
			st = npu_fail(st, "out of memory");
			goto out;
		}
	}
	st = npu_job_submit(dev, &jc, Q_COMPUTE, x->done, L->n, &L->P);
	if (st)
		goto out;
	x->launches = L->n;
	set_last(L, s->tl, L->P);
	atomic_fetch_add(&st_launches, 1);
out:
	launch_slots_end(L, !st);
	return st;
}

npu_status_t npu_graph_launch(npu_graph_exec_t x, npu_stream_t h)
{
	struct device *dev;
	struct npu_stream *s;
	struct launch *L;
	npu_status_t st = check_exec(x);
	unsigned i;
	struct avail_pt *avail;
	unsigned navail = 0;

	if (st)
		return st;
	st = npu_get_stream(h, &dev, &s);
	if (st)
		return st;
	if (x->dev != dev)
		return npu_fail(NPU_ERROR_INVALID_HANDLE,
				"graph and stream belong to different devices");
	/* into a capture (not supported), or onto the legacy stream while a
	 * blocking stream captures: refused (stream capture hook, npu_core.h) */
	if (npu_capturing() && npu_capture()->uncaptured(h, false, &st))
		return st;
	/* no allocation for a graph without host nodes: the launch state
	 * and the lists are the exec's, under x->lock */
	pthread_mutex_lock(&x->lock);
	avail = x->s_avail;
	L = launch_get(x);
	if (!L) {
		pthread_mutex_unlock(&x->lock);
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "graph launch");
	}
	pthread_mutex_lock(&dev->lock);
	if (dev->sticky) {
		st = npu_fail_sticky(dev, dev->sticky);
		goto fail;
	}
	L->x = x;
	L->dev = dev;
	L->s = s;
	L->pool = &x->pool;
	L->n = x->launches + 1;
	if (uq_path(x, s)) {
		st = uq_launch(L);
		launch_release(L);
		pthread_mutex_unlock(&dev->lock);
		pthread_mutex_unlock(&x->lock);
		return st;
	}
	if (x->has_host) {
		L->host_tl = npu_tl_new(dev);
		if (!L->host_tl) {
			st = npu_fail(NPU_ERROR_OS, "syncobj: %s", npu_strerror(errno));
			goto fail;
		}
	}
	/* before the entry dependencies: it may wait for a printf buffer */
	st = launch_slots_take(L);
	if (st)
		goto fail;
	st = slot_wait(L);
	if (st)
		goto fail;
	L->cmd = x->cmd_map + L->slot * x->slot_size;
	L->cmd_va = x->cmd_va + L->slot * x->slot_size;
	L->at = x->chunk_off;
	/* s's point is read and reserved below under dev->lock alone */
	npu_stream_claim(s);
	/* entry dependencies: stream order, legacy rules, previous launch */
	npu_tl_done(dev, s->tl, s->tl->next);
	add_entry(L, s->tl, s->tl->next);
	if (s->legacy) {
		/* room for the stream's own point and the previous launch */
		st = npu_legacy_fanin(dev, s, Q_COMPUTE, MAX_ENTRY - 2);
		if (st)
			goto fail;
		npu_tl_done(dev, s->tl, s->tl->next);
		add_entry(L, s->tl, s->tl->next);
	}
	npu_legacy_deps(dev, s, entry_wait, L);
	if (x->launches) {
		/* known complete (the usual case after a synchronize): no
		 * in-fence for it. The stream point of that launch is
		 * signalled by the same job as done's point: when the
		 * stream's cache has it, no SYNCOBJ_QUERY is needed. */
		if (x->last_tl && x->last_pt <= x->last_tl->completed &&
		    x->done->completed < x->launches)
			x->done->completed = x->launches;
		npu_tl_done(dev, x->done, x->launches);
		add_entry(L, x->done, x->launches);
	}
	for (i = 0; i < L->nentry; i++) {
		avail[navail].t = L->entry[i].tl;
		avail[navail++].p = L->entry[i].point;
	}
	/* Events. Nothing may change before every check passed: a failed
	 * launch leaves the events and the legacy ordering as they were.
	 * Every event must still be the one the graph was made with. */
	for (i = 0; i < x->n; i++) {
		struct xnode *xn = &x->x[i];

		if ((xn->type == NPU_GRAPH_NODE_EVENT_WAIT ||
		     xn->type == NPU_GRAPH_NODE_EVENT_RECORD) &&
		    (!npu_reg_check(xn->ev, REG_EVENT) ||
		     xn->ev->serial != xn->ev_serial)) {
			st = npu_fail(NPU_ERROR_INVALID_HANDLE,
				      "an event of the graph was destroyed");
			goto fail;
		}
	}
	/* waits see the latest record before this launch */
	for (i = 0; i < x->n; i++) {
		struct xnode *xn = &x->x[i];
		struct npu_event *e = xn->ev;

		if (xn->type == NPU_GRAPH_NODE_EVENT_WAIT && e->tl->next &&
		    !npu_tl_done(dev, e->tl, e->tl->next)) {
			npu_tl_bridge(dev, e->tl, e->tl->next);
			L->evpt[i] = e->tl->next;
			L->evtl[i] = e->tl;
			e->tl->refs++;
			avail[navail].t = e->tl;
			avail[navail++].p = e->tl->next;
		}
	}
	/* records: a fresh timeline for an event whose last record is
	 * pending (this can fail: then no point is reserved yet) */
	for (i = 0; i < x->n; i++) {
		struct xnode *xn = &x->x[i];
		struct npu_event *e = xn->ev;

		if (xn->type != NPU_GRAPH_NODE_EVENT_RECORD)
			continue;
		st = npu_event_begin_record(dev, e);
		if (st)
			goto fail;
		if (e->tl->next) {
			avail[navail].t = e->tl;
			avail[navail++].p = e->tl->next;
		}
	}
	/* from here on nothing fails: reserve the records' points */
	for (i = 0; i < x->n; i++) {
		struct xnode *xn = &x->x[i];
		struct npu_event *e = xn->ev;

		if (xn->type != NPU_GRAPH_NODE_EVENT_RECORD)
			continue;
		L->evpt[i] = ++e->tl->next;
		L->evtl[i] = e->tl;
		e->tl->refs++;
		if (e->ts_index >= 0)
			L->evts[i] = npu_event_ts_va(dev, e->ts_index);
	}
	npu_legacy_deps_commit(dev, s);
	/* reserve the stream point: later work of the stream follows it */
	L->P = __atomic_add_fetch(&s->tl->next, 1, __ATOMIC_RELEASE);
	s->tl->k_pt = L->P;	/* a kernel job's point, on any stream */
	s->last_queue = Q_NONE;
	s->tl->refs++;
	x->launches = L->n;
	set_last(L, x->done, L->n);
	/* an entry point that waits for the host (a host function still to
	 * return): the launch is submitted later, on a helper thread, and
	 * npu_graph_launch returns now, as any enqueue does */
	if (!entries_available(dev, avail, navail) &&
	    launch_defer(L, avail, navail)) {
		atomic_fetch_add(&st_launches, 1);
		pthread_mutex_unlock(&dev->lock);
		pthread_mutex_unlock(&x->lock);
		return NPU_SUCCESS;
	}
	for (i = 0; i < navail; i++) {
		avail[i].t->refs++;
		wait_available(dev, avail[i].t, avail[i].p);
		npu_tl_put(dev, avail[i].t);
	}
	st = submit_ready(L);
	if (st)
		launch_abandon(L, true);
	launch_slots_end(L, !st);
	atomic_fetch_add(&st_launches, 1);
	if (x->has_host && !st) {
		/* a joinable thread the device counts, so that teardown
		 * (dlclose) can wait for it */
		L->on_thread = true;
		if (!npu_thread_start(dev, host_main, L)) {
			x->threads++;
			L->s->threads++;
		} else {
			/* run them here instead */
			L->on_thread = false;
			pthread_mutex_unlock(&dev->lock);
			host_main(L);
			pthread_mutex_lock(&dev->lock);
		}
		L = NULL;
	}
	if (L)
		launch_free(L);
	pthread_mutex_unlock(&dev->lock);
	pthread_mutex_unlock(&x->lock);
	return st;
fail:
	if (L->x) {
		launch_slots_end(L, false);
		launch_abandon(L, false);
		launch_put_events(L);
	}
	if (L->host_tl)
		npu_tl_put(dev, L->host_tl);
	for (i = 0; i < L->nentry; i++)
		npu_tl_put(dev, L->entry[i].tl);
	launch_release(L);
	pthread_mutex_unlock(&dev->lock);
	pthread_mutex_unlock(&x->lock);
	return st;
}
