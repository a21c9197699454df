/* SPDX-License-Identifier: MIT */
/*
 * npu_core.h - internal interfaces shared by the libnpu source files.
 */
#ifndef NPU_CORE_H
#define NPU_CORE_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu_cmd.h"
#include "npu_hw.h"
#include "drm/npu_accel.h"
#include "npu_internal.h"

#define NPU_EXPORT __attribute__((visibility("default")))

enum { REG_STREAM = 1, REG_EVENT = 2 };

/* One job being built: its packets are written with w (npu_cmd.h), over
 * the room npu_job_begin reserved at offset off of the stream's command
 * ring. */
struct jobctx {
	struct npu_stream *s;
	uint32_t off;
	struct npu_cmdw w;
	struct dep *deps;
	struct dep inline_deps[INLINE_DEPS];
	unsigned ndeps, cap;
	uint32_t bo[2];
	unsigned nbo;
	uint32_t kernel;		/* kernel id + 1 for launches */
	uint64_t entry;			/* a user kernel's entry, or 0 */
	bool no_implicit;		/* legacy fan-in barrier: own order only */
	uint32_t trace;			/* profiler trace slot + 1 (npu_trace.c) */
	bool word;			/* room for the completion word's packet */
	/* packets outside the stream's command ring, run through one
	 * INDIRECT (a graph launch's command slot); user queues only */
	uint64_t ext_va;
	uint32_t ext_len;
};

npu_status_t npu_fail(npu_status_t st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
npu_status_t npu_fail_sticky(struct device *dev, npu_status_t st);
/* Device loss: an ioctl of dev's file failed with err; ENODEV (the driver
 * was unbound) marks dev lost for good. npu_dev_lost() is lock-free;
 * npu_fail_lost() reports NPU_ERROR_DEVICE_LOST. */
void npu_note_errno(struct device *dev, int err);
static inline bool npu_dev_lost(struct device *dev)
{
	return atomic_load_explicit(&dev->lost, memory_order_acquire);
}
npu_status_t npu_fail_lost(void);
/* A failed wait on dev's timelines (errno): NPU_ERROR_DEVICE_LOST once the
 * device is lost, else NPU_ERROR_OS. */
npu_status_t npu_fail_wait(struct device *dev);
/* drmSyncobjTimelineWait without a time limit, in slices that look for
 * device loss (0, or -1 and errno). Without dev->lock. */
int npu_syncobj_wait(struct device *dev, uint32_t *handles, uint64_t *points,
		     unsigned n, unsigned flags);
void npu_set_last_error(npu_status_t st);	/* status only, no message */
/* strerror for a library used from many threads (strerror_r) */
const char *npu_strerror(int e);

/* The built-in kernels (npu_builtin.c): id (npu.h), name, argument count. */
struct npu_kinfo {
	uint32_t id;
	const char *name;
	unsigned nargs;
};
const struct npu_kinfo *npu_kernel_find(uint32_t id);	/* NULL: none */

/* The built-in kernels as code (npu_builtin_code.c). Whether kernel is
 * the kernel library's code (the math) rather than a device diagnostic;
 * the library's size limits on k's arguments a; the kernel library loaded
 * on dev (not under dev->lock); a math kernel's params as the code's
 * (function, grid, block), the library loaded on dev. Each status
 * function sets the error it returns. */
bool npu_builtin_coded(npu_kernel_t kernel);
npu_status_t npu_builtin_check(const struct npu_kinfo *k, const uint64_t *a);
npu_status_t npu_builtin_load(struct device *dev);
npu_status_t npu_builtin_code_params(struct device *dev,
				     const npu_kernel_node_params *in,
				     npu_kernel_node_params *out);

/* What a wait that saw work complete runs next (device printf's output,
 * kernel profiles): registered by npu_printf.c and npu_kprofile.c when
 * they first track a launch, so that the stream code below them need not
 * know them. Caller holds dev->lock. */
void npu_on_complete(struct device *dev, void (*fn)(struct device *dev));
void npu_completed(struct device *dev);

int npu_reg_add(const void *p, int type);
bool npu_reg_remove(const void *p, int type);
/* Handles removed so far, and the thread's last handle found live: it
 * stays live until the next removal, so a thread that launches on its
 * stream again and again checks it with two loads and no call.
 * initial-exec: read at a fixed offset from the thread pointer instead of
 * through __tls_get_addr; 16 bytes of the static TLS that glibc keeps for
 * libraries loaded later, as Mesa's are. */
#define NPU_REG_TLS __thread __attribute__((tls_model("initial-exec")))
extern atomic_uint npu_reg_removals;
extern NPU_REG_TLS const void *npu_reg_last;
extern NPU_REG_TLS int npu_reg_last_type;
extern NPU_REG_TLS unsigned npu_reg_last_removals;
/* Is p a live handle of type? The registry's table when p is not the
 * thread's last one (npu_reg_check). */
bool npu_reg_check_slow(const void *p, int type);
static inline bool npu_reg_cached(const void *p, int type)
{
	return p && p == npu_reg_last && type == npu_reg_last_type &&
	       npu_reg_last_removals ==
	       atomic_load_explicit(&npu_reg_removals, memory_order_acquire);
}

static inline bool npu_reg_check(const void *p, int type)
{
	return npu_reg_cached(p, type) || npu_reg_check_slow(p, type);
}

/* Resolve a stream handle (NULL: the legacy stream of the current
 * device); the thread's last live stream without a call. */
npu_status_t npu_get_stream_slow(npu_stream_t h, struct device **dev,
				 struct npu_stream **s);
static inline npu_status_t npu_get_stream(npu_stream_t h, struct device **dev,
					  struct npu_stream **s)
{
	if (npu_reg_cached(h, REG_STREAM) && !npu_dev_lost(h->dev)) {
		*s = h;
		*dev = h->dev;
		return NPU_SUCCESS;
	}
	return npu_get_stream_slow(h, dev, s);
}

/* Helper threads of the library (graph host nodes): fn runs on a new
 * joinable thread, counted by dev, and ends with npu_thread_done(dev)
 * under dev->lock, right before it unlocks and returns; teardown waits
 * for the count to drop and joins them. Caller holds dev->lock. */
int npu_thread_start(struct device *dev, void *(*fn)(void *), void *arg);
void npu_thread_done(struct device *dev);
/* Called first by every thread the library starts: teardown must not be
 * run by one of them (exit() from a host function). */
void npu_thread_is_lib(void);
/* Teardown (npu_unload.c): wait for the helper threads, stop the submit
 * thread (drops and retakes dev->lock), then close the device file once
 * the layers above have released their mappings. Caller holds dev->lock. */
void npu_dev_stop_threads(struct device *dev);
void npu_dev_close(struct device *dev);
/* The devices this process opened (for teardown): the i-th, or NULL. */
struct device *npu_dev_opened(int i);
bool npu_thread_in_lib(void);		/* running on a library thread */

npu_status_t npu_dev_by_ordinal(int ordinal, struct device **out);
npu_status_t npu_cur_dev(struct device **out);
int npu_get_param(struct device *dev, uint32_t param, uint64_t *value);

struct tl *npu_tl_new(struct device *dev);
void npu_tl_put(struct device *dev, struct tl *t);
bool npu_tl_done(struct device *dev, struct tl *t, uint64_t point);
int npu_tl_wait_locked(struct device *dev, struct tl *t, uint64_t point);
int npu_tl_wait_now(struct device *dev, struct tl *t, uint64_t point);
int npu_wait_points(struct device *dev, uint32_t *handles, uint64_t *points,
		    unsigned n);

npu_status_t npu_check_faults(struct device *dev);
npu_status_t npu_check_faults_uq(struct device *dev);
/* Describes a user kernel's fault PC (" in kernel k (file) at pc ...
 * (file.c:12)", and the function holding pc if it is not k): entry is the
 * launched kernel's entry when the library knows it, else 0. Set by
 * npu_module.c once a module is loaded. */
extern void (*npu_fault_pc_hook)(uint64_t pc, uint64_t entry, char *buf,
				 size_t n);
/* npu_uq_release_halted, for npu_check_faults: set by npu_uq.c at its
 * first user queue (user queues are a layer above the faults). */
extern void (*npu_uq_halted_hook)(struct device *dev);
/* Why the code of the launched kernel at entry stopped with cause, when
 * it did so on purpose (NULL: no note): set by npu_builtin_code.c once
 * its kernel library is loaded. */
extern const char *(*npu_fault_note_hook)(uint64_t entry, uint32_t cause);
void npu_flush_now(struct device *dev);
void npu_flush_deferred(struct device *dev);
/* Forget s's deferred jobs (their points signalled from the host) and wait
 * until no batch under way can name s: a stream destroyed after a failed
 * wait (the device was lost) still has them. Caller holds dev->lock. */
void npu_deferred_drop_stream(struct device *dev, struct npu_stream *s);
/* Wait until no batch is under way: its points are marked submitted when
 * it is taken, but are in the kernel only once its SUBMIT returns. For a
 * caller that names them in an ioctl without WAIT_FOR_SUBMIT (USERQ_WAIT).
 * Drops dev->lock while it waits. Caller holds dev->lock. */
void npu_batch_wait_idle(struct device *dev);
int npu_start_flusher(struct device *dev);

/* ---- Hooks of the layers above ----
 * Stream capture (npu_graph_capture.c) takes over the enqueue calls of a
 * capturing stream, and the command trace (npu_trace.c) watches jobs and
 * events. Each installs its hooks when it is first switched on; the code
 * below calls them through these tables, never by name, so the files stay
 * a DAG. Every check is one relaxed atomic load while they are off. */

/* Called at the top of the public calls, before dev->lock is taken. Each
 * returns true when it handled the call (captured it, or refused it with
 * a capture error); *st is then the call's result. */
struct npu_capture_hooks {
	bool (*launch)(npu_stream_t h, npu_kernel_t kernel, npu_dim3 grid,
		       const uint64_t *args, unsigned nargs, unsigned flags,
		       npu_status_t *st);
	/* a user-kernel launch (npu_ukernel.c), as complete node params */
	bool (*kernel_node)(npu_stream_t h, const npu_kernel_node_params *p,
			    npu_status_t *st);
	bool (*memcpy)(npu_stream_t h, void *dst, const void *src, size_t n,
		       npu_memcpy_kind_t kind, bool sync, npu_status_t *st);
	bool (*memset)(npu_stream_t h, void *p, int value, size_t n, bool sync,
		       npu_status_t *st);
	bool (*host_func)(npu_stream_t h, npu_host_fn_t fn, void *user,
			  npu_status_t *st);
	bool (*event_record)(npu_event_t e, npu_stream_t h, npu_status_t *st);
	bool (*wait_event)(npu_stream_t h, npu_event_t e, npu_status_t *st);
	/* what: 0 stream synchronize/query of h, 1 device synchronize */
	bool (*sync)(npu_stream_t h, int what, npu_status_t *st);
	/* work that runs now and cannot be captured (stream memory
	 * operations, graph launches, the instruction trace), on h and, with
	 * sync_device, followed by a device synchronize: refused on a
	 * capturing stream, and where a capture forbids it (legacy stream
	 * while a blocking stream captures; a device synchronize) */
	bool (*uncaptured)(npu_stream_t h, bool sync_device, npu_status_t *st);
	/* s or e is being destroyed (already out of the registry): s leaves
	 * its capture (the origin ends it, another stream invalidates it); a
	 * capture-time record of e is forgotten */
	void (*stream_gone)(struct npu_stream *s);
	void (*event_gone)(struct npu_event *e);
};

extern atomic_int npu_capture_active;	/* number of active captures */
/* set once, before npu_capture_active first rises */
extern const struct npu_capture_hooks *_Atomic npu_capture_hooks;

/* Acquire: a capture seen active has its hooks installed (they are set
 * before the count first rises, and never unset). */
static inline bool npu_capturing(void)
{
	return atomic_load_explicit(&npu_capture_active, memory_order_acquire) != 0;
}

/* The capture hooks; only once npu_capturing() has returned true. */
static inline const struct npu_capture_hooks *npu_capture(void)
{
	return atomic_load_explicit(&npu_capture_hooks, memory_order_relaxed);
}

/* Called with dev->lock held. job_end runs for every job job_begin gave a
 * slot (jc->trace), also after the trace was switched off. */
struct npu_trace_hooks {
	/* room reserved by npu_job_begin: two TIMESTAMP packets */
#define NPU_TRACE_BYTES	32u
	void (*job_begin)(struct device *dev, struct jobctx *jc);
	void (*job_end)(struct device *dev, struct jobctx *jc, int queue);
	/* npu_event_record / npu_stream_wait_event: the trace links the last
	 * traced command before the record to the next one after the wait */
	void (*event_record)(struct npu_event *e, struct npu_stream *s);
	void (*event_wait)(struct npu_event *e, struct npu_stream *s);
};

extern atomic_int npu_trace_active;
/* set once, before npu_trace_active is first set */
extern const struct npu_trace_hooks *_Atomic npu_trace_hooks;

static inline bool npu_tracing(void)
{
	return atomic_load_explicit(&npu_trace_active, memory_order_relaxed) != 0;
}

static inline const struct npu_trace_hooks *npu_tracer(void)
{
	return atomic_load_explicit(&npu_trace_hooks, memory_order_acquire);
}

/* A queue (c->kind, ring, priority in; c->queue_id out): an idle one of
 * the same kind, ring and priority if there is one. Returns 0 or errno.
 * npu_queue_put keeps it for reuse when idle (every job it ran completed
 * without a fault), else destroys it. Caller holds dev->lock. */
int npu_queue_get(struct device *dev, struct drm_npu_queue_create *c);
void npu_queue_put(struct device *dev, uint32_t id, uint32_t kind,
		   uint32_t ring, uint32_t priority, bool idle);

/* The one DRM_IOCTL_NPU_SUBMIT of the library: jobs[0..n) in order, in
 * calls of at most npu_submit_max(dev) jobs. Returns 0 or -errno of the
 * call that failed; *sent (if not NULL) jobs were queued, *ioctls (if not
 * NULL) calls were made. Caller holds dev->lock, or owns the jobs' batch
 * (the submit thread). */
unsigned npu_submit_max(const struct device *dev);
int npu_submit(struct device *dev, struct drm_npu_job *jobs, unsigned n,
	       unsigned *sent, unsigned *ioctls);

/* User queues (npu_uq.c). npu_uq_create makes the queue on u's memory
 * (ring_va, mem_va set by the caller) and says where the file's doorbell
 * page is mapped (*mmap_offset; u->db is then the doorbell's offset in
 * it, which the caller turns into a pointer). 0 or -errno. */
int npu_uq_create(struct device *dev, struct npu_uq *u, uint32_t kind,
		  uint32_t priority, uint64_t *mmap_offset);
void npu_uq_destroy(struct device *dev, struct npu_uq *u);
static inline const volatile struct npu_uq_wb *npu_uq_wb(const struct npu_uq *u)
{
	return (const volatile struct npu_uq_wb *)u->mem;
}
bool npu_uq_halted(struct npu_uq *u);
/* Room for bytes (multiple of 8) in u's ring, written with w; then
 * npu_uq_commit publishes them with one doorbell store. Caller holds
 * dev->lock. */
int npu_uq_reserve(struct device *dev, struct npu_uq *u, uint32_t bytes,
		   struct npu_cmdw *w);
/* The packets written with w into u: the new wptr in the write-back
 * block, then a full barrier, then the doorbell only if the device does
 * not watch the queue (an engine serving it reads that wptr before it
 * goes idle; the hw spec's Doorbells). A busy queue's launch thus costs
 * no MMIO write. Inline: it is on every fast launch. */
static inline void npu_uq_commit(struct npu_uq *u, const struct npu_cmdw *w)
{
	struct npu_uq_wb *wb = (struct npu_uq_wb *)u->mem;

	u->wptr += (w->len + 7) & ~7u;
	__atomic_store_n(&wb->wptr, u->wptr, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!(__atomic_load_n(&wb->status, __ATOMIC_RELAXED) &
	      NPU_UQ_STS_WATCHED))
		*u->db = u->wptr;
}
/* w for bytes at the write pointer, the device known to have read far
 * enough: npu_uq_wrap fills the rest of the ring with a NOP first when
 * they would cross its end. */
void npu_uq_wrap(struct npu_uq *u);
static inline void npu_uq_room(struct npu_uq *u, uint32_t bytes,
			       struct npu_cmdw *w)
{
	uint32_t off = (uint32_t)(u->wptr & (UQ_RING_SIZE - 1));

	if (__builtin_expect(off + bytes > UQ_RING_SIZE, 0)) {
		npu_uq_wrap(u);
		off = 0;
	}
	npu_cmdw_init(w, u->ring + off, u->ring_va + off, bytes);
}

/* npu_uq_reserve without waiting: -EAGAIN when the device has not read
 * far enough (the caller takes the slow path). Caller holds the stream's
 * lock (dev->lock not needed). */
static inline int npu_uq_reserve_nowait(struct npu_uq *u, uint32_t bytes,
					struct npu_cmdw *w)
{
	uint32_t off = (uint32_t)(u->wptr & (UQ_RING_SIZE - 1));
	uint32_t pad = off + bytes > UQ_RING_SIZE ? UQ_RING_SIZE - off : 0;

	if (bytes > UQ_RING_SIZE / 2 ||
	    (u->wptr + pad + bytes > UQ_RING_SIZE &&
	     __atomic_load_n(&npu_uq_wb(u)->rptr, __ATOMIC_ACQUIRE) <
	     u->wptr + pad + bytes - UQ_RING_SIZE))
		return -EAGAIN;
	npu_uq_room(u, bytes, w);
	return 0;
}
/* A new queue for u after a halt (its memory reused, the work it left
 * counted as done), once the error was reported. 0 or -errno. */
int npu_uq_restart(struct device *dev, struct npu_uq *u, uint32_t priority);
/* npu_job.c: s's user queue again after a halt (npu_uq_restart) once the
 * halt was reported; -EIO before (the fault check ran). Caller holds
 * dev->lock. */
int npu_uq_revive(struct device *dev, struct npu_stream *s, struct npu_uq *u);
/* t's last point, read where a fast launch of t's stream may move it
 * (npu_internal.h) */
static inline uint64_t npu_tl_next(const struct tl *t)
{
	return __atomic_load_n(&t->next, __ATOMIC_ACQUIRE);
}

/* t's uq_pt, which a fast launch of t's stream may move meanwhile (a
 * point read from t->next is covered by it: npu_internal.h) */
static inline uint64_t npu_tl_uq_pt(const struct tl *t)
{
	return __atomic_load_n(&t->uq_pt, __ATOMIC_RELAXED);
}

struct uq_fast {
	struct npu_stream *s;
	struct npu_uq *u;
	struct npu_cmdw w;
};
/* The launch fast path of a user-queue stream, under s->lock alone
 * (the locking rules: npu_internal.h). npu_uq_fast_begin returns
 * false (nothing held, nothing written) unless the job may take it: s
 * is a non-legacy user-queue stream whose last job went to the same queue
 * (queue: Q_COMPUTE for a launch, Q_COPY for a copy or memset, which run
 * on s->uq_copy once s has one), there is no legacy-stream work it must
 * wait for, no capture, no tracing, no sticky error, its queue is not
 * halted and has room for bytes of packets (plus the stream's SIGNAL)
 * now. Then s->lock is held and f->w has room for bytes; npu_uq_fast_end
 * writes the SIGNAL of the stream's next point, publishes (one doorbell
 * store at most) and lets go, npu_uq_fast_abort lets go without
 * publishing anything. Inline: the whole of a fast launch is one function
 * (under TCG a call and its register saves cost more than the packet). */
static inline bool npu_uq_fast_begin(struct device *dev,
				     struct npu_stream *s, int queue,
				     uint32_t bytes, struct uq_fast *f)
{
	struct npu_uq *u = s->uq;
	struct npu_stream *l;

	/* read without a lock: a capture, a trace, a sticky error that
	 * begins while the launch runs is concurrent with it (the launch
	 * may go first); a set one sends it to the slow path */
	if (!u || s->legacy || npu_capturing() || npu_tracing() ||
	    __atomic_load_n(&dev->sticky, __ATOMIC_RELAXED) || npu_dev_lost(dev))
		return false;
	npu_spin_lock(&s->lock);
	/* the legacy stream's point: made under dev->lock, read here with an
	 * acquire load; legacy work queued since s last waited for it takes
	 * the slow path (it waits on the device for that work) */
	l = atomic_load_explicit(&dev->legacy, memory_order_acquire);
	/* s->uq_copy is made (once) under dev->lock before the stream's
	 * first copy, which claims s: a last job on Q_COPY says it is set */
	if (s->last_queue == Q_COPY && queue == Q_COPY && s->uq_copy)
		u = s->uq_copy;
	if (s->last_queue != queue || s->tl->uq_id != u->id ||
	    (!(s->flags & NPU_STREAM_NON_BLOCKING) && l &&
	     __atomic_load_n(&l->tl->next, __ATOMIC_ACQUIRE) > s->legacy_seen) ||
	    (__atomic_load_n(&npu_uq_wb(u)->status, __ATOMIC_ACQUIRE) &
	     NPU_UQ_STS_HALTED) ||
	    npu_uq_reserve_nowait(u, bytes + NPU_CMD_SIGNAL_BYTES, &f->w)) {
		npu_spin_unlock(&s->lock);
		return false;
	}
	f->s = s;
	f->u = u;
	return true;
}

static inline npu_status_t npu_uq_fast_end(struct device *dev,
					    struct uq_fast *f)
{
	struct npu_stream *s = f->s;
	struct npu_uq *u = f->u;
	struct tl *t = s->tl;
	uint64_t pt = t->next + 1;

	/* the stream's last job is on this queue: ring order is its only
	 * dependency */
	npu_cmd_signal(&f->w, t->sig_va, pt);
	if (__builtin_expect(npu_cmdw_full(&f->w), 0)) {
		npu_spin_unlock(&s->lock);
		return npu_fail(NPU_ERROR_INVALID_VALUE, "user queue packet "
				"larger than its room");
	}
	npu_uq_commit(u, &f->w);
	u->last_pt = pt;
	/* readers under dev->lock alone see next last: a point read from it
	 * is covered by uq_pt and word_pt (npu_internal.h) */
	__atomic_store_n(&t->uq_wptr, u->wptr, __ATOMIC_RELAXED);
	__atomic_store_n(&t->uq_pt, pt, __ATOMIC_RELAXED);
	__atomic_store_n(&t->word_pt, pt, __ATOMIC_RELAXED);
	__atomic_store_n(&t->next, pt, __ATOMIC_RELEASE);
	npu_spin_unlock(&s->lock);
	/* the doorbell store faulted: the driver was unbound */
	if (npu_dev_lost(dev))
		return npu_fail_lost();
	return NPU_SUCCESS;
}

static inline void npu_uq_fast_abort(struct uq_fast *f)
{
	npu_spin_unlock(&f->s->lock);
}
/* Before dev->lock code changes user-queue stream s's submission state:
 * waits for a fast launch on s to finish and turns the fast path off
 * (s->last_queue = Q_NONE) until a job on s's compute queue turns it on
 * again (npu_stream_release). Caller holds dev->lock, and no stream lock.
 * No-op for a stream on kernel queues. */
void npu_stream_claim(struct npu_stream *s);
void npu_stream_release(struct npu_stream *s, int queue);
/* npu_stream.c: s's copy-class user queue (s->uq_copy), made before s's
 * first copy when s is on a user queue and the device has copy engines;
 * when making it fails, copies stay on s->uq. Caller holds dev->lock. */
void npu_stream_uq_copy(struct device *dev, struct npu_stream *s);
/* Memory a waiting queue may wait on was written by the host. */
void npu_uq_kick(struct npu_uq *u);
/* Each newly halted queue of dev: what it left undone counts as done in
 * its signal (as npu_uq_restart does), and every queue of dev is kicked,
 * so that queues waiting on that signal go on (a failed job's fence ends
 * the waits of kernel jobs). Caller holds dev->lock. */
void npu_uq_release_halted(struct device *dev);
/* dev's doorbell page, mapped at page: a store to it after the driver was
 * unbound (SIGBUS) then marks dev lost instead of killing the process.
 * 0 or -errno. npu_uq_unguard forgets the page before it is unmapped;
 * with NULL (the library's unload) every page, and SIGBUS goes back to
 * the handler the process had before. */
int npu_uq_guard_doorbell(struct device *dev, void *page);
void npu_uq_unguard(void *page);
/* Sleep until the memory signal at addr reaches value, at most slice_ns;
 * queue_id (or 0): its halt ends the wait (-ECANCELED). 0 or -errno. */
int npu_uq_wait_mem(struct device *dev, uint64_t addr, uint64_t value,
		    uint32_t queue_id, uint64_t slice_ns);
/* Put t's point (a user-queue point not yet in the syncobj) into its
 * syncobj with USERQ_SIGNAL, so that kernel jobs and syncobj waits see it.
 * 0 or -errno. Caller holds dev->lock, not t->lock (a stream's timeline:
 * taken here, for uq_pt and uq_wptr as one pair). */
int npu_tl_bridge(struct device *dev, struct tl *t, uint64_t point);
/* A syncobj point queue u must wait for: *value is what its WAIT_MEM64 on
 * u->wait_va waits for (USERQ_WAIT). 0 or -errno. */
int npu_uq_wait_syncobj(struct device *dev, struct npu_uq *u, uint32_t handle,
			uint64_t point, uint64_t *value);

/* Is d's point submitted (in the kernel), so that a job may wait on it? */
static inline bool npu_dep_ready(const struct dep *d)
{
	return d->tl->submitted >= d->point;
}

/* Submit one job now (npu_batch.c): cmd_size bytes at cmd_va on queue
 * queue_id, waiting on deps (all submitted; order-only ones and complete
 * ones are left out), signalling out[i] at out_pt[i], with BO handles
 * bo[0..nbo). Returns 0 or -errno. Caller holds dev->lock. */
int npu_submit_now(struct device *dev, uint32_t queue_id, uint64_t cmd_va,
		   uint32_t cmd_size, const struct dep *deps, unsigned ndeps,
		   struct tl *const *out, const uint64_t *out_pt, unsigned nout,
		   const uint32_t *bo, unsigned nbo);
/* The same job (its commands at cmd_off of s's command ring), deferred:
 * submitted by the submit thread (dev->batch) or by npu_flush_deferred
 * once its dependencies are submitted. Takes references to the
 * timelines. Returns 0 or -ENOMEM. Caller holds dev->lock. */
int npu_defer_job(struct device *dev, struct npu_stream *s, uint32_t queue_id,
		  uint32_t cmd_off, uint32_t cmd_size, const struct dep *deps,
		  unsigned ndeps, struct tl *const *out, const uint64_t *out_pt,
		  unsigned nout, const uint32_t *bo, unsigned nbo);

npu_status_t npu_job_begin(struct device *dev, struct npu_stream *s,
			   uint32_t max_bytes, struct jobctx *jc);
npu_status_t npu_job_wait(struct jobctx *jc, struct tl *t, uint64_t point);
npu_status_t npu_job_order_after(struct jobctx *jc, struct tl *t,
				 uint64_t point);
npu_status_t npu_job_submit(struct device *dev, struct jobctx *jc, int queue,
			    struct tl *ev, uint64_t ev_point, uint64_t *point);
void npu_job_abort(struct jobctx *jc);
/* Barrier jobs on the legacy stream s until at most keep blocking streams
 * are left for s's next job to wait on. Caller holds dev->lock. */
npu_status_t npu_legacy_fanin(struct device *dev, struct npu_stream *s,
			      int queue, unsigned keep);
/* CUDA's legacy-stream rules for a new job of s: wait(arg, t, point) for
 * each point it must wait for (on the legacy stream: every blocking
 * stream's last point; on a blocking stream: the legacy stream's). Once
 * the job is queued, npu_legacy_deps_commit records them as waited for.
 * Stream jobs (npu_job_submit) and graph launches both use these. Caller
 * holds dev->lock. */
npu_status_t npu_legacy_deps(struct device *dev, struct npu_stream *s,
			     npu_status_t (*wait)(void *arg, struct tl *t,
						  uint64_t point),
			     void *arg);
void npu_legacy_deps_commit(struct device *dev, struct npu_stream *s);

/* Device printf text: queue it (with or without dev->lock held), and
 * write what is queued to stdout (without dev->lock: stdout may block). */
void npu_printf_queue(const char *text, size_t len);
void npu_printf_output(void);

#endif /* NPU_CORE_H */
