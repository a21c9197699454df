/* SPDX-License-Identifier: MIT */
/*
 * npu_stream.c - streams, events, host functions, device synchronisation.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <xf86drm.h>

#include "npu_core.h"
#include "npu_printf.h"

static void gem_close(struct device *dev, uint32_t handle)
{
	struct drm_gem_close c = { .handle = handle };

	drmIoctl(dev->fd, DRM_IOCTL_GEM_CLOSE, &c);
}

/* The driver charges pinned system memory to the user's RLIMIT_MEMLOCK
 * (Documentation/driver/npu.rst); past it BO_CREATE and USERPTR fail with
 * ENOMEM, which names nothing. Root is taken to have CAP_IPC_LOCK, which
 * the limit spares. */
const char *npu_pin_hint(int err)
{
	static _Thread_local char hint[256];
	struct rlimit rl;

	if (err != ENOMEM || geteuid() == 0 ||
	    getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return "";
	snprintf(hint, sizeof(hint), " (likely past the user's locked-memory "
		 "limit of %llu KiB: RLIMIT_MEMLOCK, `ulimit -l`; raise memlock "
		 "in /etc/security/limits.conf or systemd's LimitMEMLOCK=)",
		 (unsigned long long)rl.rlim_cur >> 10);
	return hint;
}

/* Create a host (shmem) BO and map it. */
int npu_host_bo(struct device *dev, uint64_t size, uint32_t *handle,
		uint64_t *va, void **map)
{
	struct drm_npu_bo_create c = { .size = size };
	void *m;

	if (drmIoctl(dev->fd, DRM_IOCTL_NPU_BO_CREATE, &c))
		return -errno;
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, dev->fd,
		 (off_t)c.mmap_offset);
	if (m == MAP_FAILED) {
		int e = -errno;

		gem_close(dev, c.handle);
		return e;
	}
	if (npu_host_map_add(dev, m, size)) {
		munmap(m, size);
		gem_close(dev, c.handle);
		return -ENOMEM;
	}
	*handle = c.handle;
	*va = c.va;
	*map = m;
	return 0;
}

int npu_host_map_add(struct device *dev, void *map, uint64_t size)
{
	int r = 0;

	pthread_mutex_lock(&dev->maps_lock);
	if (dev->nmaps == dev->maps_cap) {
		unsigned ncap = dev->maps_cap ? dev->maps_cap * 2 : 64;
		struct host_map *nv = realloc(dev->maps, ncap * sizeof(*nv));

		if (nv) {
			dev->maps = nv;
			dev->maps_cap = ncap;
		}
	}
	if (dev->nmaps < dev->maps_cap) {
		dev->maps[dev->nmaps].map = map;
		dev->maps[dev->nmaps++].size = size;
	} else {
		r = -1;
	}
	pthread_mutex_unlock(&dev->maps_lock);
	return r;
}

static void host_map_forget(struct device *dev, void *map)
{
	unsigned i;

	pthread_mutex_lock(&dev->maps_lock);
	for (i = dev->nmaps; i-- > 0;)	/* the newest go first, as a rule */
		if (dev->maps[i].map == map) {
			dev->maps[i] = dev->maps[--dev->nmaps];
			break;
		}
	pthread_mutex_unlock(&dev->maps_lock);
}

void npu_host_maps_release(struct device *dev)
{
	unsigned i;

	pthread_mutex_lock(&dev->maps_lock);
	for (i = 0; i < dev->nmaps; i++)
		munmap(dev->maps[i].map, dev->maps[i].size);
	free(dev->maps);
	dev->maps = NULL;
	dev->nmaps = dev->maps_cap = 0;
	pthread_mutex_unlock(&dev->maps_lock);
}

void npu_host_bo_free(struct device *dev, uint32_t handle, void *map,
		      uint64_t size)
{
	if (map) {
		host_map_forget(dev, map);
		munmap(map, size);
	}
	gem_close(dev, handle);
}

/* ------------------------------------------------------------------------
 * Streams
 */
static uint32_t map_priority(int prio)
{
	if (prio >= 1)
		return DRM_NPU_PRIORITY_LOW;
	if (prio <= -1)
		return DRM_NPU_PRIORITY_HIGH;
	return DRM_NPU_PRIORITY_NORMAL;
}

static int ts_alloc(struct device *dev);
static uint64_t *ts_ptr(struct device *dev, int idx);
static void ts_retire(struct device *dev, int idx, struct tl *t, uint64_t point);

static void uq_free(struct device *dev, struct npu_uq *u);
static void uq_retire_signal(struct device *dev, struct npu_uq *u);

/* Caller holds dev->lock. idle: every job of the stream has completed
 * without a fault, so its queues and command buffer can serve another. */
static void stream_free_resources(struct device *dev, struct npu_stream *s,
				  bool idle)
{
	int q;

	/* a fast launch that found s before it was destroyed ends first */
	npu_spin_lock(&s->lock);
	npu_spin_unlock(&s->lock);
	for (q = 0; q < 2; q++) {
		if (s->queue[q] != UINT32_MAX &&
		    (q == 0 || s->queue[1] != s->queue[0])) {
			npu_queue_put(dev, s->queue[q], s->qkind[q], s->ring[q],
				      s->qprio, idle);
			if (s->ring[q] < NPU_MAX_RINGS_LIB && !s->legacy &&
			    dev->ring_users[q][s->ring[q]])
				dev->ring_users[q][s->ring[q]]--;
		}
	}
	if (s->cmd_map && idle && dev->cmd_pool_n < CMD_POOL_MAX) {
		struct cmd_buf *b = &dev->cmd_pool[dev->cmd_pool_n++];

		b->handle = s->cmd_handle;
		b->va = s->cmd_va;
		b->map = s->cmd_map;
	} else if (s->cmd_map) {
		npu_host_bo_free(dev, s->cmd_handle, s->cmd_map, CMD_RING_SIZE);
	}
	if (s->uq) {
		/* destroyed, the queues write nothing more: their memory
		 * goes (the copy queue's first: it writes the signal in the
		 * compute queue's memory); the timeline may live on (events,
		 * graphs) without them */
		if (s->uq_copy) {
			npu_uq_destroy(dev, s->uq_copy);
			uq_free(dev, s->uq_copy);
			s->uq_copy = NULL;
		}
		npu_uq_destroy(dev, s->uq);
		uq_retire_signal(dev, s->uq);
		uq_free(dev, s->uq);
		s->uq = NULL;
		if (s->tl) {
			s->tl->word = NULL;
			s->tl->sig_va = 0;
			s->tl->uq_id = 0;
			s->tl->uq_status = NULL;
		}
	}
	/* the device may still write the word: the slot waits for the
	 * last point that does */
	if (s->word_idx >= 0)
		ts_retire(dev, s->word_idx, s->tl, s->tl->word_pt);
	if (s->tl) {
		s->tl->lock = NULL;	/* the timeline may outlive s */
		npu_tl_put(dev, s->tl);
	}
	pthread_cond_destroy(&s->cb_cond);
	s->magic = 0;
	free(s);
}

/* The ring of kind q with the fewest streams, scanning round-robin from
 * the last choice so that ties spread out. Caller holds dev->lock. */
static uint32_t pick_ring(struct device *dev, int q, uint32_t nrings)
{
	uint32_t i, best = 0, bu = UINT32_MAX;

	if (nrings > NPU_MAX_RINGS_LIB)
		nrings = NPU_MAX_RINGS_LIB;
	for (i = 0; i < nrings; i++) {
		uint32_t r = (dev->rr[q] + i) % nrings;

		if (dev->ring_users[q][r] < bu) {
			bu = dev->ring_users[q][r];
			best = r;
		}
	}
	dev->rr[q] = best + 1;
	return best;
}

/* Free the memory of destroyed streams' queues whose waits are done.
 * Caller holds dev->lock. */
static void uq_reap_zombies(struct device *dev)
{
	unsigned z = 0, i;

	while (z < dev->uq_nzombies) {
		struct uq_zombie *zz = &dev->uq_zombies[z];

		for (i = 0; i < zz->nwaits; i++)
			if (!npu_tl_done(dev, zz->waits[i].tl, zz->waits[i].point))
				break;
		if (i < zz->nwaits) {
			z++;
			continue;
		}
		for (i = 0; i < zz->nwaits; i++)
			npu_tl_put(dev, zz->waits[i].tl);
		free(zz->waits);
		npu_host_bo_free(dev, zz->handle, zz->mem, UQ_MEM_SIZE);
		*zz = dev->uq_zombies[--dev->uq_nzombies];
	}
}

/*
 * A destroyed stream's queue u (compute class: its memory holds the
 * stream's signal). Another stream's queue may hold a WAIT_MEM64 on that
 * signal, written before the stream went (stream_wait_event) and not yet
 * run: its memory then stays, with the signal's last value, until each
 * such stream has done the point it had now (the wait is before it).
 * u->mem taken (NULL) if so. Caller holds dev->lock; u's stream is off
 * dev->streams.
 */
static void uq_retire_signal(struct device *dev, struct npu_uq *u)
{
	struct npu_stream *w;
	struct uq_zombie z = { .handle = u->mem_handle, .mem = u->mem };
	unsigned cap = 0;

	uq_reap_zombies(dev);
	for (w = dev->streams; w; w = w->next) {
		/* a fast launch may move w's point meanwhile: it writes no
		 * wait (those take dev->lock), so any point from now on does */
		uint64_t pt = npu_tl_next(w->tl);

		if (!w->uq || npu_tl_done(dev, w->tl, pt))
			continue;
		if (z.nwaits == cap) {
			struct dep *nw = realloc(z.waits, (cap ? 2 * cap : 4) *
						 sizeof(*nw));

			if (!nw)	/* kept for good: better than read freed */
				goto keep;
			z.waits = nw;
			cap = cap ? 2 * cap : 4;
		}
		z.waits[z.nwaits].tl = w->tl;
		z.waits[z.nwaits].point = pt;
		z.waits[z.nwaits].order_only = false;
		w->tl->refs++;
		z.nwaits++;
	}
	if (!z.nwaits)
		return;		/* no queue can read it: uq_free frees it */
	if (dev->uq_nzombies == dev->uq_zombies_cap) {
		unsigned nc = dev->uq_zombies_cap ? 2 * dev->uq_zombies_cap : 8;
		struct uq_zombie *nz = realloc(dev->uq_zombies, nc * sizeof(*nz));

		if (!nz)
			goto keep;
		dev->uq_zombies = nz;
		dev->uq_zombies_cap = nc;
	}
	dev->uq_zombies[dev->uq_nzombies++] = z;
	u->mem = NULL;
	return;
keep:
	/* without memory for the list the signal's memory is leaked, never
	 * freed under a queue that reads it */
	while (z.nwaits)
		npu_tl_put(dev, z.waits[--z.nwaits].tl);
	free(z.waits);
	u->mem = NULL;
}

static void uq_free(struct device *dev, struct npu_uq *u)
{
	struct npu_uq **pp;

	for (pp = &dev->uqs; *pp; pp = &(*pp)->dev_next)
		if (*pp == u) {
			*pp = u->dev_next;
			break;
		}
	npu_host_bo_free(dev, u->ring_handle, u->ring, UQ_RING_SIZE);
	if (u->mem)	/* else kept by uq_retire_signal */
		npu_host_bo_free(dev, u->mem_handle, u->mem, UQ_MEM_SIZE);
	free(u);
}

/* A user queue of kind for s (its memory, the queue, the file's doorbell
 * page on first use). NULL and *err = -errno on failure. Caller holds
 * dev->lock. */
static struct npu_uq *uq_new(struct device *dev, struct npu_stream *s,
			     uint32_t kind, int *err)
{
	struct npu_uq *u = calloc(1, sizeof(*u));
	uint64_t off;
	int r;

	uq_reap_zombies(dev);
	if (!u) {
		*err = -ENOMEM;
		return NULL;
	}
	r = npu_host_bo(dev, UQ_RING_SIZE, &u->ring_handle, &u->ring_va,
			(void **)&u->ring);
	if (r)
		goto fail;
	r = npu_host_bo(dev, UQ_MEM_SIZE, &u->mem_handle, &u->mem_va,
			(void **)&u->mem);
	if (r)
		goto fail_ring;
	r = npu_uq_create(dev, u, kind, map_priority(s->priority), &off);
	if (r)
		goto fail_mem;
	if (!dev->uq_db_page) {
		void *m = mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, dev->fd,
			       (off_t)off);

		if (m == MAP_FAILED) {
			r = -errno;
			goto fail_queue;
		}
		r = npu_uq_guard_doorbell(dev, m);
		if (r || npu_host_map_add(dev, m, 4096)) {
			if (!r)
				npu_uq_unguard(m);
			munmap(m, 4096);
			r = r ? r : -ENOMEM;
			goto fail_queue;
		}
		dev->uq_db_page = m;
		dev->uq_db_offset = off;
	}
	u->db = (volatile uint64_t *)((char *)dev->uq_db_page +
				      (uintptr_t)u->db);
	u->dev_next = dev->uqs;
	dev->uqs = u;
	return u;
fail_queue:
	npu_uq_destroy(dev, u);
fail_mem:
	npu_host_bo_free(dev, u->mem_handle, u->mem, UQ_MEM_SIZE);
fail_ring:
	npu_host_bo_free(dev, u->ring_handle, u->ring, UQ_RING_SIZE);
fail:
	free(u);
	*err = r;
	return NULL;
}

/* A user queue for s, and s's timeline on its memory signal. 0 or
 * -errno: then s runs on kernel queues. Caller holds dev->lock. */
static int stream_uq(struct device *dev, struct npu_stream *s)
{
	int r = 0;
	struct npu_uq *u = uq_new(dev, s, DRM_NPU_RING_KIND_COMPUTE, &r);

	if (!u)
		return r;
	u->sig = (uint64_t *)(u->mem + UQ_SIG_OFF);
	s->uq = u;
	s->tl->sig_va = u->mem_va + UQ_SIG_OFF;
	s->tl->word = (uint32_t *)(u->mem + UQ_SIG_OFF);
	s->tl->word_va = s->tl->sig_va;
	s->tl->uq_status = &npu_uq_wb(u)->status;
	return 0;
}

void npu_stream_uq_copy(struct device *dev, struct npu_stream *s)
{
	int r = 0;

	if (!s->uq || s->uq_copy || s->uq_copy_failed ||
	    !((dev->uq_engines >> 8) & 0xff))
		return;
	s->uq_copy = uq_new(dev, s, DRM_NPU_RING_KIND_COPY, &r);
	if (!s->uq_copy) {
		/* copies stay on the compute-class queue */
		s->uq_copy_failed = true;
		if (getenv("NPU_DEBUG"))
			fprintf(stderr, "libnpu: copies on the stream's compute "
				"queue: copy queue: %s\n", npu_strerror(-r));
		return;
	}
	/* the stream's one signal, in its compute queue's memory */
	s->uq_copy->sig = s->uq->sig;
}

/* Does a stream made with flags run on a user queue? */
static bool stream_wants_uq(const struct device *dev, unsigned flags)
{
	if (!dev->uq_ok || (flags & NPU_STREAM_KERNEL_QUEUE))
		return false;
	return (flags & NPU_STREAM_USER_QUEUE) || dev->uq_default;
}

/* Caller holds dev->lock. */
static npu_status_t stream_new(struct device *dev, unsigned flags, int prio,
			       bool legacy, struct npu_stream **out)
{
	struct npu_stream *s = malloc(sizeof(*s));
	int q, r;

	if (!s)
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "stream");
	/* all but the command spans, which span_count says are unused:
	 * zeroing those 12 KiB was most of a stream's creation */
	memset(s, 0, offsetof(struct npu_stream, span));
	memset(&s->span_head, 0, sizeof(*s) - offsetof(struct npu_stream, span_head));
	atomic_init(&s->lock.held, 0);
	s->magic = STREAM_MAGIC;
	s->dev = dev;
	s->flags = flags & NPU_STREAM_NON_BLOCKING;
	s->qflags = flags & (NPU_STREAM_USER_QUEUE | NPU_STREAM_KERNEL_QUEUE);
	s->priority = prio;
	s->legacy = legacy;
	s->last_queue = Q_NONE;
	s->queue[0] = s->queue[1] = UINT32_MAX;
	s->word_idx = -1;
	pthread_cond_init(&s->cb_cond, NULL);
	s->tl = npu_tl_new(dev);
	if (!s->tl) {
		stream_free_resources(dev, s, false);
		return npu_fail(NPU_ERROR_OS, "drmSyncobjCreate: %s", npu_strerror(errno));
	}
	s->tl->lock = &s->lock;
	/* a user queue when asked for and there are any, else kernel
	 * queues (the debug message says why) */
	if (stream_wants_uq(dev, flags)) {
		r = stream_uq(dev, s);
		if (r && getenv("NPU_DEBUG"))
			fprintf(stderr, "libnpu: stream on kernel queues: "
				"user queue: %s\n", npu_strerror(-r));
	}
	/* a completion word from the timestamp pool; without one, waits
	 * just block in the kernel */
	s->word_idx = s->uq ? -1 : ts_alloc(dev);
	if (s->word_idx >= 0) {
		s->tl->word = (uint32_t *)ts_ptr(dev, s->word_idx);
		*s->tl->word = 0;
		s->tl->word_va = npu_event_ts_va(dev, s->word_idx);
	}
	for (q = 0; q < 2; q++) {
		struct drm_npu_queue_create c;
		uint32_t nrings = q == Q_COMPUTE ? dev->prop.compute_rings :
					dev->prop.copy_rings;
		uint32_t kind = q == Q_COMPUTE ? DRM_NPU_RING_KIND_COMPUTE :
					DRM_NPU_RING_KIND_COPY;

		if (!nrings) {		/* no copy rings: copies on compute */
			s->queue[q] = s->queue[Q_COMPUTE];
			s->ring[q] = s->ring[Q_COMPUTE];
			continue;
		}
		memset(&c, 0, sizeof(c));
		c.kind = kind;
		c.priority = map_priority(prio);
		c.ring = legacy ? 0 : pick_ring(dev, q, nrings);
		r = npu_queue_get(dev, &c);
		if (r == EACCES && c.priority == DRM_NPU_PRIORITY_HIGH) {
			/* high needs CAP_SYS_NICE: the default instead */
			prio = s->priority = 0;
			c.priority = map_priority(prio);
			r = npu_queue_get(dev, &c);
		}
		if (r) {
			stream_free_resources(dev, s, false);
			return npu_fail(r == ENOMEM ? NPU_ERROR_OUT_OF_MEMORY :
					NPU_ERROR_OS, "DRM_IOCTL_NPU_QUEUE_CREATE: %s",
					npu_strerror(r));
		}
		s->queue[q] = c.queue_id;
		s->ring[q] = c.ring;
		s->qkind[q] = kind;
		s->qprio = c.priority;
		/* the legacy stream does not count: user streams spread
		 * over all rings, starting after the legacy stream's */
		if (c.ring < NPU_MAX_RINGS_LIB && !legacy)
			dev->ring_users[q][c.ring]++;
	}
	if (dev->cmd_pool_n) {
		struct cmd_buf *b = &dev->cmd_pool[--dev->cmd_pool_n];

		s->cmd_handle = b->handle;
		s->cmd_va = b->va;
		s->cmd_map = b->map;
		r = 0;
	} else {
		r = npu_host_bo(dev, CMD_RING_SIZE, &s->cmd_handle, &s->cmd_va,
				(void **)&s->cmd_map);
	}
	if (r) {
		s->cmd_map = NULL;
		stream_free_resources(dev, s, false);
		return npu_fail(r == -ENOMEM ? NPU_ERROR_OUT_OF_MEMORY : NPU_ERROR_OS,
				"command buffer BO: %s%s", npu_strerror(-r),
				npu_pin_hint(-r));
	}
	s->next = dev->streams;
	dev->streams = s;
	*out = s;
	return NPU_SUCCESS;
}

/* The legacy stream of dev, made on first use. It runs on ring 0 of each
 * kind; device open starts the other streams' round-robin after it. */
static npu_status_t legacy_stream(struct device *dev, struct npu_stream **out)
{
	struct npu_stream *s;
	npu_status_t st = NPU_SUCCESS;

	pthread_mutex_lock(&dev->lock);
	s = dev->legacy;
	if (!s) {
		st = stream_new(dev, 0, 0, true, &s);
		if (!st)
			dev->legacy = s;
	}
	pthread_mutex_unlock(&dev->lock);
	*out = s;
	return st;
}

/* npu_get_stream (npu_core.h) when h is not the thread's last live
 * stream: NULL, another handle, a dead one. */
npu_status_t npu_get_stream_slow(npu_stream_t h, struct device **dev,
				 struct npu_stream **s)
{
	npu_status_t st;

	*s = NULL;
	*dev = NULL;
	if (!h) {
		st = npu_cur_dev(dev);
		if (st)
			return st;
		*s = (*dev)->legacy;
		return *s ? NPU_SUCCESS : legacy_stream(*dev, s);
	}
	if (!npu_reg_check(h, REG_STREAM))
		return npu_fail(NPU_ERROR_INVALID_HANDLE,
				"stream %p is not a live stream", (void *)h);
	if (npu_dev_lost(h->dev))
		return npu_fail_lost();
	*s = h;
	*dev = h->dev;
	return NPU_SUCCESS;
}

npu_status_t npu_stream_priority_range(int *least, int *greatest)
{
	if (least)
		*least = 1;
	if (greatest)
		*greatest = -1;
	return NPU_SUCCESS;
}

npu_status_t npu_stream_create(npu_stream_t *out, unsigned int flags,
			       int priority)
{
	struct device *dev;
	struct npu_stream *s;
	npu_status_t st;

	if (!out)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "stream pointer is NULL");
	if (flags & ~(NPU_STREAM_NON_BLOCKING | NPU_STREAM_USER_QUEUE |
		      NPU_STREAM_KERNEL_QUEUE) ||
	    ((flags & NPU_STREAM_USER_QUEUE) && (flags & NPU_STREAM_KERNEL_QUEUE)))
		return npu_fail(NPU_ERROR_INVALID_VALUE, "unknown stream flags 0x%x",
				flags);
	st = npu_cur_dev(&dev);
	if (st)
		return st;
	if (priority > 1)
		priority = 1;
	if (priority < -1)
		priority = -1;
	pthread_mutex_lock(&dev->lock);
	st = stream_new(dev, flags, priority, false, &s);
	pthread_mutex_unlock(&dev->lock);
	if (st)
		return st;
	if (npu_reg_add(s, REG_STREAM)) {
		struct npu_stream **pp;

		pthread_mutex_lock(&dev->lock);
		for (pp = &dev->streams; *pp; pp = &(*pp)->next)
			if (*pp == s) {
				*pp = s->next;
				break;
			}
		stream_free_resources(dev, s, true);
		pthread_mutex_unlock(&dev->lock);
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "handle registry");
	}
	*out = s;
	return NPU_SUCCESS;
}

/* An empty job that applies the stream's implicit dependencies (legacy
 * rules) so that a host-side wait on the stream's last point covers them.
 * Caller holds dev->lock. */
static npu_status_t stream_barrier(struct device *dev, struct npu_stream *s)
{
	struct jobctx jc;
	npu_status_t st;
	bool need = false;
	struct npu_stream *b;

	if (s->legacy) {
		for (b = dev->streams; b; b = b->next)
			if (!b->legacy && !(b->flags & NPU_STREAM_NON_BLOCKING) &&
			    __atomic_load_n(&b->tl->next, __ATOMIC_ACQUIRE) >
			    b->waited_by_legacy)	/* b may launch meanwhile */
				need = true;
	} else if (!(s->flags & NPU_STREAM_NON_BLOCKING) && dev->legacy) {
		need = dev->legacy->tl->next > s->legacy_seen;
	}
	if (!need)
		return NPU_SUCCESS;
	st = npu_job_begin(dev, s, 0, &jc);
	if (st)
		return st;
	return npu_job_submit(dev, &jc, s->last_queue == Q_NONE ? Q_COMPUTE :
			      s->last_queue, NULL, 0, NULL);
}

static npu_status_t sticky_of(struct device *dev, struct npu_stream *s)
{
	npu_status_t st = s && s->sticky ? s->sticky : dev->sticky;

	return st ? npu_fail_sticky(dev, st) : NPU_SUCCESS;
}

/* After s's work completed: a stream on a user queue that ran no kernel
 * job looks at user-queue faults alone (npu_check_faults_uq). */
static void stream_check_faults(struct device *dev, const struct npu_stream *s)
{
	if (s->uq && !s->legacy && !s->tl->k_pt)
		npu_check_faults_uq(dev);
	else
		npu_check_faults(dev);
}

/* Wait for a stream's work. Caller holds dev->lock. */
npu_status_t npu_stream_sync_locked(struct device *dev, struct npu_stream *s)
{
	/* A blocking stream's own work already waited for the legacy work
	 * before it; legacy work queued after it is not the stream's (CUDA):
	 * only the legacy stream's synchronize takes the rules in. */
	npu_status_t st = s->legacy ? stream_barrier(dev, s) : NPU_SUCCESS;

	if (st)
		return st;
	/* one wait ioctl, no query first (the point is usually pending) */
	if (npu_tl_wait_now(dev, s->tl, npu_tl_next(s->tl)))
		return npu_fail_wait(dev);
	stream_check_faults(dev, s);
	npu_completed(dev);
	return sticky_of(dev, s);
}

npu_status_t npu_stream_synchronize(npu_stream_t h)
{
	struct device *dev;
	struct npu_stream *s;
	npu_status_t st;

	if (npu_capturing()) {	/* stream capture hook (npu_core.h) */
		npu_status_t cst;

		if (npu_capture()->sync(h, 0, &cst))
			return cst;
	}
	st = npu_get_stream(h, &dev, &s);
	if (st)
		return st;
	pthread_mutex_lock(&dev->lock);
	st = npu_stream_sync_locked(dev, s);
	pthread_mutex_unlock(&dev->lock);
	npu_printf_output();
	return st;
}

npu_status_t npu_stream_query(npu_stream_t h)
{
	struct device *dev;
	struct npu_stream *s;
	npu_status_t st;
	bool done;

	if (npu_capturing()) {	/* stream capture hook (npu_core.h) */
		npu_status_t cst;

		if (npu_capture()->sync(h, 0, &cst))
			return cst;
	}
	st = npu_get_stream(h, &dev, &s);
	if (st)
		return st;
	pthread_mutex_lock(&dev->lock);
	done = npu_tl_done(dev, s->tl, npu_tl_next(s->tl));
	if (done && s->legacy) {
		struct npu_stream *b;

		for (b = dev->streams; b && done; b = b->next)
			if (!b->legacy && !(b->flags & NPU_STREAM_NON_BLOCKING))
				done = npu_tl_done(dev, b->tl, npu_tl_next(b->tl));
	}
	if (done) {
		stream_check_faults(dev, s);
		npu_completed(dev);
		st = sticky_of(dev, s);
	} else {
		st = NPU_ERROR_NOT_READY;
	}
	pthread_mutex_unlock(&dev->lock);
	npu_printf_output();
	return st;
}

npu_status_t npu_stream_get_priority(npu_stream_t h, int *priority)
{
	struct device *dev;
	struct npu_stream *s;
	npu_status_t st = npu_get_stream(h, &dev, &s);

	if (st)
		return st;
	if (!priority)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "priority is NULL");
	*priority = s->priority;
	return NPU_SUCCESS;
}

npu_status_t npu_stream_get_flags(npu_stream_t h, unsigned int *flags)
{
	struct device *dev;
	struct npu_stream *s;
	npu_status_t st = npu_get_stream(h, &dev, &s);

	if (st)
		return st;
	if (!flags)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "flags is NULL");
	*flags = s->flags;
	if (s->qflags)		/* asked for one: where it runs */
		*flags |= s->uq ? NPU_STREAM_USER_QUEUE : NPU_STREAM_KERNEL_QUEUE;
	return NPU_SUCCESS;
}

npu_status_t npu_stream_destroy(npu_stream_t h)
{
	struct device *dev;
	struct npu_stream *s, **pp;
	npu_status_t st;

	if (!h || !npu_reg_remove(h, REG_STREAM))
		return npu_fail(NPU_ERROR_INVALID_HANDLE,
				"stream %p is not a live stream", (void *)h);
	s = h;
	dev = s->dev;
	if (npu_capturing())	/* stream capture hook (npu_core.h) */
		npu_capture()->stream_gone(s);
	pthread_mutex_lock(&dev->lock);
	npu_tl_wait_locked(dev, s->tl, npu_tl_next(s->tl));
	npu_stream_stop_thread(dev, s);
	npu_check_faults(dev);
	st = s->sticky;
	if (st)		/* the message under the lock that guards it */
		npu_fail_sticky(dev, st);
	for (pp = &dev->streams; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	/* after a failed wait, work that names s may remain */
	npu_deferred_drop_stream(dev, s);
	if (s->threads)
		s->destroyed = true;
	else
		stream_free_resources(dev, s, !st && !dev->sticky);
	pthread_mutex_unlock(&dev->lock);
	return st;
}

void npu_stream_put_locked(struct device *dev, struct npu_stream *s)
{
	if (!--s->threads && s->destroyed)
		stream_free_resources(dev, s, false);
}

void npu_stream_stop_thread(struct device *dev, struct npu_stream *s)
{
	if (!s->cb_started)
		return;
	s->cb_stop = true;
	pthread_cond_signal(&s->cb_cond);
	pthread_mutex_unlock(&dev->lock);
	pthread_join(s->cb_thread, NULL);
	pthread_mutex_lock(&dev->lock);
	s->cb_started = false;
	s->cb_stop = false;
}

/* ------------------------------------------------------------------------
 * Device synchronisation
 */
npu_status_t npu_dev_sync_locked(struct device *dev)
{
	struct npu_stream *s;
	unsigned n = 0, i;
	struct tl **tls;
	uint32_t *h;
	uint64_t *pt;
	npu_status_t st;
	int r;

	st = dev->legacy ? stream_barrier(dev, dev->legacy) : NPU_SUCCESS;
	if (st)
		return st;
	for (s = dev->streams; s; s = s->next)
		n++;
	tls = calloc(n, sizeof(*tls));
	h = calloc(n, sizeof(*h));
	pt = calloc(n, sizeof(*pt));
	if (!tls || !h || !pt) {
		free(tls);
		free(h);
		free(pt);
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "device synchronize");
	}
	n = 0;
	for (s = dev->streams; s; s = s->next) {
		uint64_t next = npu_tl_next(s->tl);	/* s may launch now */

		if (!next || next <= s->tl->completed)
			continue;
		tls[n] = s->tl;
		s->tl->refs++;
		h[n] = s->tl->handle;
		pt[n] = next;
		n++;
	}
	/* points of user queues are memory signals, not (yet) in their
	 * syncobjs: waited for one by one (the waits drop the lock) */
	r = 0;
	for (i = 0; i < n && !r; i++)
		if (tls[i]->sig_va && pt[i] <= npu_tl_uq_pt(tls[i]) &&
		    pt[i] > tls[i]->k_pt)
			r = npu_tl_wait_now(dev, tls[i], pt[i]);
	if (!r) {
		unsigned k = 0;

		/* the rest in one syncobj wait (h, pt, tls compacted) */
		for (i = 0; i < n; i++)
			if (pt[i] > tls[i]->completed) {
				h[k] = h[i];
				pt[k] = pt[i];
				tls[k] = tls[i];
				k++;
			} else {
				npu_tl_put(dev, tls[i]);
			}
		n = k;
		pthread_mutex_unlock(&dev->lock);
		r = npu_wait_points(dev, h, pt, n);
		pthread_mutex_lock(&dev->lock);
	}
	for (i = 0; i < n; i++) {
		if (!r && pt[i] > tls[i]->completed)
			tls[i]->completed = pt[i];
		npu_tl_put(dev, tls[i]);
	}
	free(tls);
	free(h);
	free(pt);
	if (r)
		return npu_fail_wait(dev);
	npu_check_faults(dev);
	npu_completed(dev);
	return sticky_of(dev, NULL);
}

npu_status_t npu_device_synchronize(void)
{
	struct device *dev;
	npu_status_t st;

	if (npu_capturing()) {	/* stream capture hook (npu_core.h) */
		npu_status_t cst;

		if (npu_capture()->sync(NULL, 1, &cst))
			return cst;
	}
	st = npu_cur_dev(&dev);
	if (st)
		return st;
	pthread_mutex_lock(&dev->lock);
	st = npu_dev_sync_locked(dev);
	pthread_mutex_unlock(&dev->lock);
	npu_printf_output();
	return st;
}

npu_status_t npu_device_reset(void)
{
	struct device *dev;
	struct npu_stream *s;
	npu_status_t st = npu_cur_dev(&dev);

	if (st)
		return st;
	pthread_mutex_lock(&dev->lock);
	st = npu_dev_sync_locked(dev);
	if (st == NPU_ERROR_OUT_OF_MEMORY || st == NPU_ERROR_OS) {
		pthread_mutex_unlock(&dev->lock);
		return st;
	}
	dev->sticky = NPU_SUCCESS;
	dev->sticky_msg[0] = 0;
	for (s = dev->streams; s; s = s->next)
		s->sticky = NPU_SUCCESS;
	pthread_mutex_unlock(&dev->lock);
	return NPU_SUCCESS;
}

/* ------------------------------------------------------------------------
 * Host functions
 */
/* Write a host function's point to the stream's completion word, unless
 * the device already wrote a later one there (the next job may have run
 * between the signal and this store). */
static void word_raise(uint32_t *w, uint32_t point)
{
	uint32_t cur = __atomic_load_n(w, __ATOMIC_RELAXED);

	while ((int32_t)(cur - point) < 0 &&
	       !__atomic_compare_exchange_n(w, &cur, point, false,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

/* The same for a user queue's 64-bit memory signal. The queue cannot
 * pass the function's wait before the release that follows this store,
 * so the device never writes a lower point after it. */
static void sig_raise(uint64_t *sig, uint64_t point)
{
	uint64_t cur = __atomic_load_n(sig, __ATOMIC_RELAXED);

	while (cur < point &&
	       !__atomic_compare_exchange_n(sig, &cur, point, false,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

static void *cb_main(void *arg)
{
	struct npu_stream *s = arg;
	struct device *dev = s->dev;

	npu_thread_is_lib();
	pthread_mutex_lock(&dev->lock);
	for (;;) {
		struct hostcb *cb;
		bool run, waited;

		while (!s->cb_head && !s->cb_stop)
			pthread_cond_wait(&s->cb_cond, &dev->lock);
		cb = s->cb_head;
		if (!cb)
			break;
		/* a failed wait (the device was lost): the work before the
		 * function may not have run, so neither does the function,
		 * and its point is not marked complete */
		waited = !cb->wait_point ||
			 !npu_tl_wait_locked(dev, s->tl, cb->wait_point);
		stream_check_faults(dev, s);
		run = waited && !s->sticky && !dev->sticky;
		pthread_mutex_unlock(&dev->lock);
		if (run)
			cb->fn(cb->user);
		pthread_mutex_lock(&dev->lock);
		if (s->uq) {
			/* the point is complete now: a synchronize spinning
			 * on the signal sees it at once, not after the queue
			 * has woken and run its SIGNAL (which writes the same
			 * value and wakes sleepers in USERQ_WAIT_MEM) */
			if (waited)
				sig_raise(s->uq->sig, cb->signal_point);
			/* release the queue's wait: it signals the point */
			__atomic_store_n((uint64_t *)(s->uq->mem + UQ_REL_OFF),
					 cb->release, __ATOMIC_RELEASE);
			npu_uq_kick(s->uq);
		} else if (waited) {
			drmSyncobjTimelineSignal(dev->fd, &s->tl->handle,
						 &cb->signal_point, 1);
			s->tl->submitted = cb->signal_point;
			if (s->tl->word)
				word_raise(s->tl->word, (uint32_t)cb->signal_point);
		}
		s->cb_head = cb->next;
		if (!s->cb_head)
			s->cb_tail = NULL;
		free(cb);
		npu_flush_deferred(dev);
	}
	pthread_mutex_unlock(&dev->lock);
	return NULL;
}

npu_status_t npu_launch_host_func(npu_stream_t h, npu_host_fn_t fn, void *user)
{
	struct device *dev;
	struct npu_stream *s;
	struct hostcb *cb;
	npu_status_t st;

	if (npu_capturing()) {	/* stream capture hook (npu_core.h) */
		npu_status_t cst;

		if (fn && npu_capture()->host_func(h, fn, user, &cst))
			return cst;
	}
	st = npu_get_stream(h, &dev, &s);
	if (st)
		return st;
	if (!fn)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "host function is NULL");
	cb = calloc(1, sizeof(*cb));
	if (!cb)
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "host function");
	pthread_mutex_lock(&dev->lock);
	if (dev->sticky) {
		st = npu_fail_sticky(dev, dev->sticky);
		goto fail;
	}
	st = stream_barrier(dev, s);
	if (st)
		goto fail;
	/* s's point and queue are written below under dev->lock alone */
	npu_stream_claim(s);
	if (!s->cb_started) {
		if (pthread_create(&s->cb_thread, NULL, cb_main, s)) {
			st = npu_fail(NPU_ERROR_OS, "pthread_create: %s",
				      npu_strerror(errno));
			goto fail;
		}
		s->cb_started = true;
	}
	if (s->uq) {
		/* on the queue: wait for the host thread's release, then
		 * signal the function's point (no system call) */
		struct npu_uq *u = s->uq;
		struct npu_cmdw w;
		int r = npu_uq_revive(dev, s, u);

		if (!r)
			r = npu_uq_reserve(dev, u, NPU_CMD_WAIT64_BYTES +
					   NPU_CMD_SIGNAL_BYTES, &w);
		if (r) {
			st = npu_fail(NPU_ERROR_LAUNCH_FAILURE, "user queue: %s",
				      npu_strerror(-r));
			goto fail;
		}
		cb->release = ++u->releases;
		/* the host thread rings the doorbell after each release
		 * (npu_uq_kick): a device that knows the flag (1.2) need
		 * not poll the word */
		npu_cmd_wait_mem64(&w, u->mem_va + UQ_REL_OFF, cb->release,
				   dev->prop.revision >= NPU_WAIT_DOORBELL_VERSION ?
				   NPU_WAIT_DOORBELL : 0);
		npu_cmd_signal(&w, s->tl->sig_va, s->tl->next + 1);
		npu_uq_commit(u, &w);
		s->tl->uq_id = u->id;
		s->tl->uq_pt = s->tl->next + 1;
		s->tl->uq_wptr = u->wptr;
		s->tl->uq_status = &npu_uq_wb(u)->status;
		u->last_pt = s->tl->next + 1;
	}
	cb->fn = fn;
	cb->user = user;
	cb->wait_point = s->tl->next;
	cb->signal_point = s->tl->next + 1;
	__atomic_store_n(&s->tl->next, cb->signal_point, __ATOMIC_RELEASE);
	if (s->tl->word)	/* cb_main writes it after the signal */
		s->tl->word_pt = cb->signal_point;
	s->last_queue = Q_NONE;
	if (s->cb_tail)
		s->cb_tail->next = cb;
	else
		s->cb_head = cb;
	s->cb_tail = cb;
	pthread_mutex_unlock(&dev->lock);
	/* after the unlock: a host thread woken on this CPU runs at once
	 * instead of blocking on dev->lock (the stream, and so its cb_cond,
	 * lives until npu_stream_destroy, which may not race a launch) */
	pthread_cond_signal(&s->cb_cond);
	return NPU_SUCCESS;
fail:
	pthread_mutex_unlock(&dev->lock);
	free(cb);
	return st;
}

/* ------------------------------------------------------------------------
 * Events
 */
/* Give every slot of a destroyed event whose last record is done back to
 * the free list, with the zombie's timeline reference (its syncobj). All
 * of them, not just one: a done zombie kept would hold its timeline until
 * the free list next ran dry. Caller holds dev->lock. */
static void ts_reap_zombies(struct device *dev)
{
	unsigned z = 0;

	while (z < dev->ts_nzombies) {
		struct ts_zombie *zz = &dev->ts_zombies[z];

		if (npu_tl_done(dev, zz->tl, zz->point)) {
			dev->ts_free[dev->ts_nfree++] = zz->index;
			npu_tl_put(dev, zz->tl);
			*zz = dev->ts_zombies[--dev->ts_nzombies];
		} else {
			z++;
		}
	}
}

static int ts_alloc(struct device *dev)
{
	if (!dev->ts_nfree)
		ts_reap_zombies(dev);
	if (!dev->ts_nfree) {
		unsigned c = dev->ts_nchunks, i;
		int *nf;

		if (c == TS_MAX_CHUNKS)
			return -1;
		if (npu_host_bo(dev, TS_CHUNK_BYTES, &dev->ts_chunk[c].handle,
				&dev->ts_chunk[c].va, (void **)&dev->ts_chunk[c].map))
			return -1;
		nf = realloc(dev->ts_free, (dev->ts_free_cap + TS_EVENTS_PER_CHUNK) *
			     sizeof(int));
		if (!nf) {
			npu_host_bo_free(dev, dev->ts_chunk[c].handle,
					 dev->ts_chunk[c].map, TS_CHUNK_BYTES);
			return -1;
		}
		dev->ts_free = nf;
		dev->ts_free_cap += TS_EVENTS_PER_CHUNK;
		dev->ts_nchunks++;
		for (i = TS_EVENTS_PER_CHUNK; i > 0; i--)
			dev->ts_free[dev->ts_nfree++] = (int)(c * TS_EVENTS_PER_CHUNK + i - 1);
	}
	return dev->ts_free[--dev->ts_nfree];
}

static uint64_t *ts_ptr(struct device *dev, int idx)
{
	unsigned c = (unsigned)idx / TS_EVENTS_PER_CHUNK;
	unsigned e = (unsigned)idx % TS_EVENTS_PER_CHUNK;

	return dev->ts_chunk[c].map + e;
}

uint64_t npu_event_ts_va(struct device *dev, int idx)
{
	unsigned c = (unsigned)idx / TS_EVENTS_PER_CHUNK;
	unsigned e = (unsigned)idx % TS_EVENTS_PER_CHUNK;

	return dev->ts_chunk[c].va + 8 * e;
}

/* Give back a timestamp slot whose last record is (t, point): at once when
 * that is done, else once it is (a pending record still writes the slot).
 * Caller holds dev->lock. */
static void ts_retire(struct device *dev, int idx, struct tl *t, uint64_t point)
{
	if (idx < 0)
		return;
	if (npu_tl_done(dev, t, point)) {
		dev->ts_free[dev->ts_nfree++] = idx;
		return;
	}
	if (dev->ts_nzombies == dev->ts_zombies_cap)
		ts_reap_zombies(dev);	/* before the list grows */
	if (dev->ts_nzombies == dev->ts_zombies_cap) {
		unsigned nc = dev->ts_zombies_cap ? 2 * dev->ts_zombies_cap : 16;
		struct ts_zombie *nz = realloc(dev->ts_zombies, nc * sizeof(*nz));

		if (nz) {
			dev->ts_zombies = nz;
			dev->ts_zombies_cap = nc;
		}
	}
	if (dev->ts_nzombies < dev->ts_zombies_cap) {
		struct ts_zombie *zz = &dev->ts_zombies[dev->ts_nzombies++];

		zz->index = idx;
		zz->tl = t;
		zz->point = point;
		t->refs++;
	}
	/* (without memory for the list the slot is leaked, not reused) */
}

npu_status_t npu_event_begin_record(struct device *dev, struct npu_event *e)
{
	struct event_record r;
	npu_status_t st = npu_event_prepare_record(dev, e, &r);

	if (!st)
		npu_event_end_record(dev, e, &r, true);
	return st;
}

npu_status_t npu_event_prepare_record(struct device *dev, struct npu_event *e,
				      struct event_record *r)
{
	r->tl = e->tl;
	r->ts_index = e->ts_index;
	r->fresh = false;
	if (!e->tl->next || e->tl->next <= e->tl->completed)
		return NPU_SUCCESS;
	r->tl = npu_tl_new(dev);
	if (!r->tl)
		return npu_fail(NPU_ERROR_OS, "syncobj: %s", npu_strerror(errno));
	if (e->ts_index >= 0) {
		r->ts_index = ts_alloc(dev);
		if (r->ts_index < 0) {
			npu_tl_put(dev, r->tl);
			return npu_fail(NPU_ERROR_OUT_OF_MEMORY,
					"event timestamp slot");
		}
	}
	r->fresh = true;
	return NPU_SUCCESS;
}

void npu_event_end_record(struct device *dev, struct npu_event *e,
			  struct event_record *r, bool submitted)
{
	if (!r->fresh)
		return;
	if (!submitted) {	/* e keeps its previous record */
		npu_tl_put(dev, r->tl);
		if (r->ts_index >= 0)
			dev->ts_free[dev->ts_nfree++] = r->ts_index;
		return;
	}
	ts_retire(dev, e->ts_index, e->tl, e->tl->next);
	npu_tl_put(dev, e->tl);
	e->tl = r->tl;
	e->ts_index = r->ts_index;
}

static npu_status_t event_new(struct device *dev, unsigned flags, bool timing,
			      struct npu_event **out)
{
	struct npu_event *e = calloc(1, sizeof(*e));

	if (!e)
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "event");
	static _Atomic uint64_t serials;

	e->magic = EVENT_MAGIC;
	e->dev = dev;
	e->flags = flags;
	e->ts_index = -1;
	e->serial = atomic_fetch_add(&serials, 1) + 1;
	pthread_mutex_lock(&dev->lock);
	e->tl = npu_tl_new(dev);
	if (e->tl && timing)
		e->ts_index = ts_alloc(dev);
	if (!e->tl || (timing && e->ts_index < 0)) {
		if (e->tl)
			npu_tl_put(dev, e->tl);
		pthread_mutex_unlock(&dev->lock);
		free(e);
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "event resources");
	}
	pthread_mutex_unlock(&dev->lock);
	*out = e;
	return NPU_SUCCESS;
}

static void event_free(struct device *dev, struct npu_event *e)
{
	pthread_mutex_lock(&dev->lock);
	ts_retire(dev, e->ts_index, e->tl, e->tl->next);
	npu_tl_put(dev, e->tl);
	pthread_mutex_unlock(&dev->lock);
	e->magic = 0;
	free(e);
}

npu_status_t npu_event_create(npu_event_t *out, unsigned int flags)
{
	struct device *dev;
	struct npu_event *e;
	npu_status_t st;

	if (!out)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "event pointer is NULL");
	if (flags & ~(NPU_EVENT_BLOCKING_SYNC | NPU_EVENT_DISABLE_TIMING))
		return npu_fail(NPU_ERROR_INVALID_VALUE, "unknown event flags 0x%x",
				flags);
	st = npu_cur_dev(&dev);
	if (st)
		return st;
	st = event_new(dev, flags, !(flags & NPU_EVENT_DISABLE_TIMING), &e);
	if (st)
		return st;
	if (npu_reg_add(e, REG_EVENT)) {
		event_free(dev, e);
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "handle registry");
	}
	*out = e;
	return NPU_SUCCESS;
}

npu_status_t npu_event_destroy(npu_event_t e)
{
	if (!e || !npu_reg_remove(e, REG_EVENT))
		return npu_fail(NPU_ERROR_INVALID_HANDLE,
				"event %p is not a live event", (void *)e);
	if (npu_capturing())	/* stream capture hook (npu_core.h) */
		npu_capture()->event_gone(e);
	event_free(e->dev, e);
	return NPU_SUCCESS;
}

static npu_status_t get_event(npu_event_t e)
{
	if (!e || !npu_reg_check(e, REG_EVENT))
		return npu_fail(NPU_ERROR_INVALID_HANDLE,
				"event %p is not a live event", (void *)e);
	if (npu_dev_lost(e->dev))
		return npu_fail_lost();
	return NPU_SUCCESS;
}

npu_status_t npu_event_record(npu_event_t e, npu_stream_t h)
{
	struct device *dev;
	struct npu_stream *s;
	struct jobctx jc;
	struct event_record rec;
	npu_status_t st = get_event(e);
	uint64_t gen;
	int queue;

	if (st)
		return st;
	if (npu_capturing()) {	/* stream capture hook (npu_core.h) */
		npu_status_t cst;

		if (npu_capture()->event_record(e, h, &cst))
			return cst;
	}
	st = npu_get_stream(h, &dev, &s);
	if (st)
		return st;
	if (e->dev != dev)
		return npu_fail(NPU_ERROR_INVALID_HANDLE,
				"event and stream belong to different devices");
	pthread_mutex_lock(&dev->lock);
	if (dev->sticky) {
		st = npu_fail_sticky(dev, dev->sticky);
		goto out;
	}
	/* e takes the new record only once it is submitted: a failed record
	 * leaves e as it was (as CUDA's) */
	st = npu_event_prepare_record(dev, e, &rec);
	if (st)
		goto out;
	st = npu_job_begin(dev, s, rec.ts_index >= 0 ? NPU_CMD_TS_BYTES : 0,
			   &jc);
	if (st) {
		npu_event_end_record(dev, e, &rec, false);
		goto out;
	}
	gen = rec.tl->next + 1;
	if (rec.ts_index >= 0)
		npu_cmd_timestamp(&jc.w, npu_event_ts_va(dev, rec.ts_index));
	queue = s->last_queue == Q_NONE ? Q_COMPUTE : s->last_queue;
	st = npu_job_submit(dev, &jc, queue, rec.tl, gen, NULL);
	npu_event_end_record(dev, e, &rec, !st);
	if (!st && npu_tracing())	/* trace hook (npu_core.h) */
		npu_tracer()->event_record(e, s);
out:
	pthread_mutex_unlock(&dev->lock);
	return st;
}

/* Has a user queue of dev halted (read from memory)? */
static bool uq_any_halted(struct device *dev)
{
	struct npu_uq *u;

	for (u = dev->uqs; u; u = u->dev_next)
		if (npu_uq_halted(u))
			return true;
	return false;
}

npu_status_t npu_event_query(npu_event_t e)
{
	struct device *dev;
	npu_status_t st = get_event(e);
	bool known;

	if (st)
		return st;
	dev = e->dev;
	pthread_mutex_lock(&dev->lock);
	known = e->tl->next <= e->tl->completed;
	if (!known && e->tl->via && e->tl->via->sig_va &&
	    e->tl->next == e->tl->via_ev_pt && !uq_any_halted(dev))
		/* recorded on a user queue, which halts at a fault: its
		 * signal passing says the work before it ran clean; no
		 * queue of the device halted, so no fault check (ioctl) */
		known = true;
	if (!npu_tl_done(dev, e->tl, npu_tl_next(e->tl))) {
		st = NPU_ERROR_NOT_READY;
	} else {
		/* ask the driver for faults only when the completion is news */
		if (!known)
			npu_check_faults(dev);
		npu_completed(dev);
		st = sticky_of(dev, NULL);
	}
	pthread_mutex_unlock(&dev->lock);
	npu_printf_output();
	return st;
}

npu_status_t npu_event_synchronize(npu_event_t e)
{
	struct device *dev;
	npu_status_t st = get_event(e);

	if (st)
		return st;
	dev = e->dev;
	pthread_mutex_lock(&dev->lock);
	if (e->tl->next && npu_tl_wait_locked(dev, e->tl, npu_tl_next(e->tl))) {
		st = npu_fail_wait(dev);
	} else {
		npu_check_faults(dev);
		npu_completed(dev);
		st = sticky_of(dev, NULL);
	}
	pthread_mutex_unlock(&dev->lock);
	npu_printf_output();
	return st;
}

npu_status_t npu_stream_wait_event(npu_stream_t h, npu_event_t e,
				   unsigned int flags)
{
	struct device *dev;
	struct npu_stream *s;
	struct jobctx jc;
	npu_status_t st = get_event(e);

	if (st)
		return st;
	if (npu_capturing()) {	/* stream capture hook (npu_core.h) */
		npu_status_t cst;

		if (!flags && npu_capture()->wait_event(h, e, &cst))
			return cst;
	}
	st = npu_get_stream(h, &dev, &s);
	if (st)
		return st;
	if (flags)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "unknown flags 0x%x", flags);
	if (e->dev != dev)
		return npu_fail(NPU_ERROR_INVALID_HANDLE,
				"event and stream belong to different devices");
	pthread_mutex_lock(&dev->lock);
	if (dev->sticky) {
		st = npu_fail_sticky(dev, dev->sticky);
		goto out;
	}
	if (e->tl->next && npu_tracing())	/* trace hook (npu_core.h) */
		npu_tracer()->event_wait(e, s);
	if (!e->tl->next || e->tl->next <= e->tl->completed)
		goto out;		/* never recorded or complete */
	st = npu_job_begin(dev, s, 0, &jc);
	if (st)
		goto out;
	st = npu_job_wait(&jc, e->tl, e->tl->next);
	if (st) {
		npu_job_abort(&jc);
		st = npu_fail(st, "out of memory");
		goto out;
	}
	st = npu_job_submit(dev, &jc, s->last_queue == Q_NONE ? Q_COMPUTE :
			    s->last_queue, NULL, 0, NULL);
out:
	pthread_mutex_unlock(&dev->lock);
	return st;
}

npu_status_t npu_event_timestamp(npu_event_t e, uint64_t *ticks)
{
	struct device *dev;
	npu_status_t st = get_event(e);

	if (st)
		return st;
	if (!ticks)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "ticks is NULL");
	dev = e->dev;
	pthread_mutex_lock(&dev->lock);
	if (!e->tl->next || e->ts_index < 0)
		st = npu_fail(NPU_ERROR_INVALID_HANDLE,
			      "event was never recorded or has timing disabled");
	else if (!npu_tl_done(dev, e->tl, npu_tl_next(e->tl)))
		st = NPU_ERROR_NOT_READY;
	else
		*ticks = *(volatile uint64_t *)ts_ptr(dev, e->ts_index);
	pthread_mutex_unlock(&dev->lock);
	return st;
}

npu_status_t npu_event_elapsed_time(float *ms, npu_event_t a, npu_event_t b)
{
	uint64_t t0, t1;
	npu_status_t st;

	if (!ms)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "ms is NULL");
	st = get_event(a);
	if (!st)
		st = get_event(b);
	if (st)
		return st;
	if (a->dev != b->dev)
		return npu_fail(NPU_ERROR_INVALID_HANDLE,
				"events belong to different devices");
	st = npu_event_timestamp(a, &t0);
	if (!st)
		st = npu_event_timestamp(b, &t1);
	if (st)
		return st;
	*ms = (float)((double)(int64_t)(t1 - t0) * 1e3 / (double)a->dev->prop.clock_hz);
	return NPU_SUCCESS;
}

npu_status_t npu_event_export_fd(npu_event_t e, int *fd)
{
	struct device *dev;
	npu_status_t st = get_event(e);
	uint32_t tmp;
	int r;

	if (st)
		return st;
	if (!fd)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "fd is NULL");
	dev = e->dev;
	pthread_mutex_lock(&dev->lock);
	r = drmSyncobjCreate(dev->fd, e->tl->next ? 0 : DRM_SYNCOBJ_CREATE_SIGNALED,
			     &tmp);
	if (r) {
		st = npu_fail(NPU_ERROR_OS, "drmSyncobjCreate: %s", npu_strerror(errno));
		goto out;
	}
	if (e->tl->next) {
		uint64_t p = e->tl->next;

		/* the record may still be on its way to the kernel */
		struct tl *t = e->tl;

		/* or on a user queue: into the syncobj (USERQ_SIGNAL) */
		npu_tl_bridge(dev, t, p);
		t->refs++;
		pthread_mutex_unlock(&dev->lock);
		npu_syncobj_wait(dev, &t->handle, &p, 1,
				 DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT |
				 DRM_SYNCOBJ_WAIT_FLAGS_WAIT_AVAILABLE);
		pthread_mutex_lock(&dev->lock);
		r = drmSyncobjTransfer(dev->fd, tmp, 0, t->handle, p, 0);
		npu_tl_put(dev, t);
		if (r) {
			st = npu_fail(NPU_ERROR_OS, "drmSyncobjTransfer: %s",
				      npu_strerror(errno));
			drmSyncobjDestroy(dev->fd, tmp);
			goto out;
		}
	}
	r = drmSyncobjExportSyncFile(dev->fd, tmp, fd);
	if (r)
		st = npu_fail(NPU_ERROR_OS, "drmSyncobjExportSyncFile: %s",
			      npu_strerror(errno));
	drmSyncobjDestroy(dev->fd, tmp);
out:
	pthread_mutex_unlock(&dev->lock);
	return st;
}

npu_status_t npu_event_import_fd(npu_event_t *out, int fd)
{
	struct device *dev;
	struct npu_event *e;
	npu_status_t st;
	uint32_t tmp;

	if (!out || fd < 0)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "bad event pointer or fd");
	st = npu_cur_dev(&dev);
	if (st)
		return st;
	st = event_new(dev, NPU_EVENT_DISABLE_TIMING, false, &e);
	if (st)
		return st;
	e->imported = true;
	pthread_mutex_lock(&dev->lock);
	if (drmSyncobjCreate(dev->fd, 0, &tmp)) {
		st = npu_fail(NPU_ERROR_OS, "drmSyncobjCreate: %s", npu_strerror(errno));
	} else {
		if (drmSyncobjImportSyncFile(dev->fd, tmp, fd))
			st = npu_fail(NPU_ERROR_INVALID_VALUE,
				      "fd %d is not a sync_file: %s", fd,
				      npu_strerror(errno));
		else if (drmSyncobjTransfer(dev->fd, e->tl->handle, 1, tmp, 0, 0))
			st = npu_fail(NPU_ERROR_OS, "drmSyncobjTransfer: %s",
				      npu_strerror(errno));
		drmSyncobjDestroy(dev->fd, tmp);
	}
	if (!st)
		e->tl->next = e->tl->submitted = 1;
	pthread_mutex_unlock(&dev->lock);
	if (!st && npu_reg_add(e, REG_EVENT))
		st = npu_fail(NPU_ERROR_OUT_OF_MEMORY, "handle registry");
	if (st) {
		event_free(dev, e);
		return st;
	}
	*out = e;
	return NPU_SUCCESS;
}
