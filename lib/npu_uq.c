// SPDX-License-Identifier: MIT
/*
 * npu_uq.c - user-mode queues: a stream's ring in its own memory, packets
 * written there and published with one doorbell store (no system call),
 * memory signals waited on by spinning and then in USERQ_WAIT_MEM, and
 * the bridges to syncobjs (USERQ_SIGNAL, USERQ_WAIT) for whatever still
 * speaks them: kernel-queue jobs, exported events, graph launches.
 *
 * The queue's memory (ring, write-back block and signal page) is
 * allocated by the stream code above (npu_stream.c), which also maps the
 * file's doorbell page; this file knows the ioctls and the ring.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <xf86drm.h>

#include "npu_core.h"

static uint64_t uq_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int npu_uq_create(struct device *dev, struct npu_uq *u, uint32_t kind,
		  uint32_t priority, uint64_t *mmap_offset)
{
	struct drm_npu_userq_create c;

	npu_uq_halted_hook = npu_uq_release_halted;
	memset(&c, 0, sizeof(c));
	c.kind = kind;
	c.priority = priority;
	c.ring_va = u->ring_va;
	c.ring_size = UQ_RING_SIZE;
	c.wb_va = u->mem_va;
	if (drmIoctl(dev->fd, DRM_IOCTL_NPU_USERQ_CREATE, &c)) {
		npu_note_errno(dev, errno);
		return -errno;
	}
	u->id = c.queue_id;
	u->kind = kind;
	u->wait_va = c.wait_va;
	u->wptr = 0;
	u->last_pt = 0;
	u->halted = false;
	*mmap_offset = c.mmap_offset;
	u->db = (volatile uint64_t *)(uintptr_t)c.doorbell_offset;
	return 0;
}

void npu_uq_destroy(struct device *dev, struct npu_uq *u)
{
	struct drm_npu_userq_destroy d = { .queue_id = u->id };
	const volatile struct npu_uq_wb *wb = npu_uq_wb(u);
	/* The driver STOPs the queue it destroys, which halts it: that halt
	 * is no fault. A queue that had halted already, or had packets left
	 * (a fault or the driver's watchdog may halt it meanwhile), may have
	 * one for GET_FAULT to tell; one that had run all it was given and
	 * not halted has none. */
	bool may_fault = u->id && ((wb->status & NPU_UQ_STS_HALTED) ||
		__atomic_load_n(&wb->rptr, __ATOMIC_ACQUIRE) != u->wptr);

	if (u->id && drmIoctl(dev->fd, DRM_IOCTL_NPU_USERQ_DESTROY, &d))
		npu_note_errno(dev, errno);
	if (may_fault && (wb->status & NPU_UQ_STS_HALTED))
		dev->uq_halt_seen = true;
	u->id = 0;
}

bool npu_uq_halted(struct npu_uq *u)
{
	if (!u->halted &&
	    (npu_uq_wb(u)->status & NPU_UQ_STS_HALTED))
		u->halted = true;
	return u->halted;
}

/* The rest of u's ring, from its write pointer to its end, as one NOP
 * (npu_uq_room: packets do not cross the end). */
void npu_uq_wrap(struct npu_uq *u)
{
	uint32_t off = (uint32_t)(u->wptr & (UQ_RING_SIZE - 1));
	struct npu_cmdw w;

	npu_cmdw_init(&w, u->ring + off, u->ring_va + off, UQ_RING_SIZE - off);
	npu_cmd_nop(&w, UQ_RING_SIZE - off);
	u->wptr += UQ_RING_SIZE - off;
}

/*
 * Room for bytes (a multiple of 8) of packets at the ring's write pointer,
 * contiguous: when they would cross the ring's end, a NOP fills the rest
 * of it first. Waits (holding dev->lock) while the device has not read far
 * enough. w covers the room; npu_uq_commit publishes it.
 */
int npu_uq_reserve(struct device *dev, struct npu_uq *u, uint32_t bytes,
		   struct npu_cmdw *w)
{
	uint32_t off = (uint32_t)(u->wptr & (UQ_RING_SIZE - 1));
	uint32_t pad = off + bytes > UQ_RING_SIZE ? UQ_RING_SIZE - off : 0;
	uint64_t need = u->wptr + pad + bytes - UQ_RING_SIZE;
	const volatile struct npu_uq_wb *wb = npu_uq_wb(u);
	unsigned i = 0;

	if (bytes > UQ_RING_SIZE / 2)
		return -EINVAL;
	while (u->wptr + pad + bytes > UQ_RING_SIZE &&
	       __atomic_load_n(&wb->rptr, __ATOMIC_ACQUIRE) < need) {
		struct drm_npu_userq_wait_mem m;

		if (npu_uq_halted(u))
			return -EIO;
		if (++i < 1000) {
			sched_yield();
			continue;
		}
		memset(&m, 0, sizeof(m));
		m.value = need;
		m.timeout_ns = (int64_t)(uq_now_ns() + 250000000ull);
		m.queue_id = u->id;
		m.flags = DRM_NPU_WAIT_MEM_RPTR;
		if (drmIoctl(dev->fd, DRM_IOCTL_NPU_USERQ_WAIT_MEM, &m) &&
		    errno != ETIME && errno != EINTR) {
			npu_note_errno(dev, errno);
			return -errno;
		}
	}
	npu_uq_room(u, bytes, w);
	return 0;
}

/* The owner wrote memory a waiting queue may wait on: an old doorbell
 * value makes a WAITING queue re-read it (no system call). The published
 * wptr of the write-back block, not u->wptr: a fast launch on the queue's
 * stream may be moving that one (npu_internal.h), and a kick need not
 * publish anything. */
void npu_uq_kick(struct npu_uq *u)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	*u->db = __atomic_load_n(&npu_uq_wb(u)->wptr, __ATOMIC_ACQUIRE);
}

/*
 * The doorbell page after device loss: unplug zaps its mapping, and the
 * next store to it raises SIGBUS (no ioctl to fail with ENODEV first). A
 * SIGBUS handler knows the library's doorbell pages: a fault in one maps
 * a private anonymous page in its place (the store, restarted, and every
 * later one land there harmlessly) and marks the device lost, as an
 * ENODEV would. Any other SIGBUS goes to the handler the process had.
 */
static struct {
	void *_Atomic page;
	struct device *_Atomic dev;
} uq_guard[NPU_MAX_DEVICES];
static struct sigaction uq_bus_prev;
static bool uq_bus_installed;
static _Atomic pid_t uq_guard_pid;	/* a fork child has no doorbells */
static pthread_mutex_t uq_guard_lock = PTHREAD_MUTEX_INITIALIZER;

static void uq_on_sigbus(int sig, siginfo_t *si, void *uctx)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	int i, e = errno;

	for (i = 0; si->si_code > 0 && getpid() == atomic_load(&uq_guard_pid) &&
		    i < NPU_MAX_DEVICES; i++) {
		uintptr_t p = (uintptr_t)atomic_load(&uq_guard[i].page);
		struct device *d = atomic_load(&uq_guard[i].dev);

		if (!p || a - p >= 4096)
			continue;
		if (mmap((void *)p, 4096, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
		    MAP_FAILED)
			break;
		atomic_store_explicit(&d->lost, true, memory_order_release);
		errno = e;
		return;
	}
	errno = e;
	if (uq_bus_prev.sa_flags & SA_SIGINFO) {
		uq_bus_prev.sa_sigaction(sig, si, uctx);
	} else if (uq_bus_prev.sa_handler != SIG_DFL &&
		   uq_bus_prev.sa_handler != SIG_IGN) {
		uq_bus_prev.sa_handler(sig);
	} else {
		/* the default action: the faulting access, restarted,
		 * raises it again (a sent signal is raised again) */
		struct sigaction dfl;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigaction(SIGBUS, &dfl, NULL);
		if (si->si_code <= 0)
			raise(SIGBUS);
	}
}

int npu_uq_guard_doorbell(struct device *dev, void *page)
{
	int i, r = -ENOSPC;

	pthread_mutex_lock(&uq_guard_lock);
	if (!uq_bus_installed) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = uq_on_sigbus;
		sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGBUS, &sa, &uq_bus_prev)) {
			r = -errno;
			goto out;
		}
		uq_bus_installed = true;
	}
	atomic_store(&uq_guard_pid, getpid());
	for (i = 0; i < NPU_MAX_DEVICES; i++)
		if (!atomic_load(&uq_guard[i].page)) {
			atomic_store(&uq_guard[i].dev, dev);
			atomic_store(&uq_guard[i].page, page);
			r = 0;
			break;
		}
out:
	pthread_mutex_unlock(&uq_guard_lock);
	return r;
}

void npu_uq_unguard(void *page)
{
	struct sigaction cur;
	int i;

	pthread_mutex_lock(&uq_guard_lock);
	for (i = 0; i < NPU_MAX_DEVICES; i++)
		if (!page || atomic_load(&uq_guard[i].page) == page)
			atomic_store(&uq_guard[i].page, NULL);
	/* the handler is in this library's code: not left behind it (unless
	 * the process installed its own since) */
	if (!page && uq_bus_installed && !sigaction(SIGBUS, NULL, &cur) &&
	    (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == uq_on_sigbus)
		sigaction(SIGBUS, &uq_bus_prev, NULL);
	if (!page)
		uq_bus_installed = false;
	pthread_mutex_unlock(&uq_guard_lock);
}

/* A halted queue's waiters released: the stream's signal raised to the
 * queue's last point (its other queue may wait for that). */
static bool uq_release(struct npu_uq *u)
{
	if (!u || u->halt_released || !npu_uq_halted(u))
		return false;
	u->halt_released = true;
	if (__atomic_load_n(u->sig, __ATOMIC_ACQUIRE) < u->last_pt)
		__atomic_store_n(u->sig, u->last_pt, __ATOMIC_RELEASE);
	return true;
}

void npu_uq_release_halted(struct device *dev)
{
	struct npu_stream *s;
	bool any = false;

	/* s->lock: a fast launch on s writes last_pt and wptr */
	for (s = dev->streams; s; s = s->next) {
		if (!s->uq)
			continue;
		npu_spin_lock(&s->lock);
		any |= uq_release(s->uq);
		any |= uq_release(s->uq_copy);
		npu_spin_unlock(&s->lock);
	}
	for (s = dev->streams; any && s; s = s->next) {
		if (!s->uq)
			continue;
		npu_spin_lock(&s->lock);
		if (!s->uq->halted)
			npu_uq_kick(s->uq);
		if (s->uq_copy && !s->uq_copy->halted)
			npu_uq_kick(s->uq_copy);
		npu_spin_unlock(&s->lock);
	}
}

int npu_uq_wait_mem(struct device *dev, uint64_t addr, uint64_t value,
		    uint32_t queue_id, uint64_t slice_ns)
{
	struct drm_npu_userq_wait_mem m;

	memset(&m, 0, sizeof(m));
	m.addr = addr;
	m.value = value;
	m.timeout_ns = (int64_t)(uq_now_ns() + slice_ns);
	m.queue_id = queue_id;
	if (drmIoctl(dev->fd, DRM_IOCTL_NPU_USERQ_WAIT_MEM, &m)) {
		int e = errno;

		if (e != ETIME && e != EINTR)
			npu_note_errno(dev, e);
		return -e;
	}
	return 0;
}

/* The device's wptr of queue id made the library's: USERQ_SIGNAL names
 * a wptr the device must have accepted, and a WATCHED queue takes a new
 * one from its write-back block only when it gets there (a doorbell of
 * the same value is a no-op). The wptr published in the write-back block
 * covers every point recorded as the queue's (npu_uq_commit stores it
 * first), and it is read without the stream's lock: a doorbell of an
 * older value than one a fast launch rang meanwhile is ignored (hw spec,
 * Doorbells). */
static int tl_bridge(struct device *dev, struct tl *t, uint64_t point);

static void uq_publish_wptr(struct device *dev, uint32_t id)
{
	struct npu_uq *u;

	for (u = dev->uqs; u; u = u->dev_next)
		if (u->id == id) {
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			*u->db = __atomic_load_n(&npu_uq_wb(u)->wptr,
						 __ATOMIC_ACQUIRE);
			return;
		}
}

int npu_tl_bridge(struct device *dev, struct tl *t, uint64_t point)
{
	int r;

	if (!t->lock)
		return tl_bridge(dev, t, point);
	/* a stream's: its fast launches move uq_pt and uq_wptr together */
	npu_spin_lock(t->lock);
	r = tl_bridge(dev, t, point);
	npu_spin_unlock(t->lock);
	return r;
}

static int tl_bridge(struct device *dev, struct tl *t, uint64_t point)
{
	struct drm_npu_userq_signal sig;
	int e;

	if (point <= t->submitted || !t->uq_id || point > t->uq_pt)
		return 0;
	if (npu_tl_done(dev, t, point))
		goto cpu_signal;	/* complete (its queue may be gone) */
	uq_publish_wptr(dev, t->uq_id);
	memset(&sig, 0, sizeof(sig));
	sig.queue_id = t->uq_id;
	sig.wptr = t->uq_wptr;
	sig.handle = t->handle;
	sig.point = t->uq_pt;
	if (drmIoctl(dev->fd, DRM_IOCTL_NPU_USERQ_SIGNAL, &sig)) {
		e = errno;
		npu_note_errno(dev, e);
		/* the queue halted or was stopped (or is gone after that):
		 * the point never comes. Its syncobj point ends waits as a
		 * failed job's fence does; the fault check says why. */
		if (e == ECANCELED || e == ENOENT)
			goto cpu_signal;
		return -e;
	}
	t->submitted = t->uq_pt;
	return 0;
cpu_signal:
	if (drmSyncobjTimelineSignal(dev->fd, &t->handle, &point, 1)) {
		npu_note_errno(dev, errno);
		return -errno;
	}
	t->submitted = point;
	return 0;
}

int npu_uq_wait_syncobj(struct device *dev, struct npu_uq *u, uint32_t handle,
			uint64_t point, uint64_t *value)
{
	struct drm_npu_sync s;
	struct drm_npu_userq_wait w;

	memset(&s, 0, sizeof(s));
	s.handle = handle;
	s.point = point;
	memset(&w, 0, sizeof(w));
	w.queue_id = u->id;
	w.count = 1;
	w.syncs = (uintptr_t)&s;
	w.sync_stride = sizeof(s);
	if (drmIoctl(dev->fd, DRM_IOCTL_NPU_USERQ_WAIT, &w)) {
		npu_note_errno(dev, errno);
		return -errno;
	}
	*value = w.value;
	return 0;
}

int npu_uq_restart(struct device *dev, struct npu_uq *u, uint32_t priority)
{
	uint64_t off, done = u->last_pt;
	int r;

	npu_uq_destroy(dev, u);
	memset(u->mem, 0, NPU_UQ_WB_SIZE);
	/* what the halted queue left undone failed: count it as done (the
	 * stream's other queue may have signalled later points already) */
	if (__atomic_load_n(u->sig, __ATOMIC_ACQUIRE) < done)
		__atomic_store_n(u->sig, done, __ATOMIC_RELEASE);
	__atomic_store_n((uint64_t *)(u->mem + UQ_REL_OFF), u->releases,
			 __ATOMIC_RELEASE);
	r = npu_uq_create(dev, u, u->kind, priority, &off);
	if (r)
		return r;
	u->db = (volatile uint64_t *)((char *)dev->uq_db_page +
				      (uintptr_t)u->db);
	u->last_pt = done;
	u->halt_reported = false;
	u->halt_released = false;
	return 0;
}
