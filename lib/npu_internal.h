/* SPDX-License-Identifier: MIT */
/*
 * npu_internal.h - private structures of libnpu.
 *
 * Locking: each device has one mutex (dev->lock) that protects every
 * stream, event, timeline, allocation table and the deferred-job list of
 * the device. It is held while a job is built and submitted (one ioctl) and
 * never while waiting for the device. Handle validation reads the handle
 * registry without a lock (npu_handle.c: its writers take the registry's
 * lock, and a thread's last handle found live stays live until the next
 * removal, a counter).
 *
 * A stream on a user queue also has its own lock (s->lock, a spin lock:
 * struct npu_spin), so that the common launch needs no device-wide lock:
 * a launch on a non-legacy user-queue stream whose last job is on its
 * compute queue, with no new legacy-stream work to wait for, no capture,
 * no tracing, no sticky error, writes its packets straight into the ring
 * under s->lock alone
 * (npu_uq_fast_begin/_end, npu_core.h); so does an async copy or memset
 * between device and pinned memory whose stream's last job is on its copy
 * queue (npu_mem.c; its pointer check reads the allocation tables under
 * their own rwlocks, struct alloc_table). s->lock protects what such a
 * launch writes: the ring and wptr of s->uq, s->uq->last_pt, and the
 * submission fields of s->tl (next, uq_id, uq_pt, uq_wptr, uq_status,
 * word_pt), plus what it reads to decide: s->last_queue, s->legacy_seen,
 * the queue's restart. Every other writer of those holds dev->lock *and*
 * s->lock (order: dev->lock, then s->lock; never dev->lock dropped while
 * a stream lock is held; never two stream locks but under dev->lock).
 * Readers under dev->lock alone see next and uq_pt grow under them: they
 * read them with atomic loads, and next is stored last (release), so a
 * point read from next is covered by uq_pt; npu_tl_bridge, which needs
 * uq_pt and uq_wptr as one pair, takes the stream's lock (t->lock).
 *
 * Ordering model: every stream and every event owns a *timeline* (a DRM
 * timeline syncobj). Each job a stream submits signals the next point of
 * the stream's timeline and waits on the points it depends on (the
 * stream's previous point when it ran on another queue, the legacy-stream
 * rules, events). A point is "submitted" when its fence exists in the
 * syncobj. Host functions make points that are signalled from user space
 * later; a job that depends on a not-yet-submitted point is *deferred*: it
 * is kept in dev->deferred (its command buffer is already written) and
 * submitted by whoever submits the missing point. So the kernel never sees
 * a wait-before-signal, and every wait in the library uses
 * DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT.
 */
#ifndef NPU_INTERNAL_H
#define NPU_INTERNAL_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdbool.h>

#pragma GCC visibility push(default)
#include "npu.h"
#pragma GCC visibility pop

#define NPU_MAX_DEVICES		8
#define NPU_MAX_RINGS_LIB	16
#define STREAM_MAGIC		0x5354524dU	/* "STRM" */
#define EVENT_MAGIC		0x45564e54U	/* "EVNT" */
#define CMD_RING_SIZE		(64u * 1024)
#define CMD_POOL_MAX		16	/* idle command buffers kept */
#define QUEUE_POOL_MAX		32	/* idle queues kept (of 256 a file has) */
#define CMD_INFLIGHT		512		/* jobs per stream ring */
#define INLINE_COPY_MAX		4096		/* pageable H2D inline */
#define STAGING_SIZE		(4u << 20)
#define STAGING_MAX		8
#define TS_CHUNK_BYTES		(64u * 1024)
#define TS_EVENTS_PER_CHUNK	(TS_CHUNK_BYTES / 8)	/* one slot each */
#define TS_MAX_CHUNKS		256
#define INLINE_DEPS		8
#define NPU_WAIT_SPIN_US	500	/* default of NPU_WAIT_SPIN_US */

enum { Q_COMPUTE = 0, Q_COPY = 1, Q_NONE = -1 };

/* A spinning thread's pause: the sibling hyperthread goes on meanwhile. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

/*
 * The lock of a stream's launch fast path. It is held for a few stores
 * (a launch's packets and the stream's point; rarely across one ioctl, a
 * bridge to a syncobj, npu_tl_bridge), so a thread that finds it
 * taken spins, yielding now and then in case its holder was preempted,
 * rather than sleeping. Inline: under emulation (TCG) a call into libc
 * costs as much as the stores it protects, and a launch takes it once.
 */
struct npu_spin {
	atomic_int held;
};

static inline void npu_spin_lock(struct npu_spin *l)
{
	unsigned i = 0;

	while (atomic_exchange_explicit(&l->held, 1, memory_order_acquire))
		while (atomic_load_explicit(&l->held, memory_order_relaxed))
			if (++i % 64 == 0)
				sched_yield();
			else
				cpu_relax();
}

static inline void npu_spin_unlock(struct npu_spin *l)
{
	atomic_store_explicit(&l->held, 0, memory_order_release);
}

struct tl {				/* refcounted timeline syncobj */
	uint32_t handle;
	int refs;
	uint64_t next;			/* last point assigned */
	uint64_t submitted;		/* last point whose fence exists */
	uint64_t completed;		/* cache: last point seen signalled */
	/* completion word (streams): the device writes each job's point
	 * there last (SEM_SIGNAL), so a wait can see it without an interrupt */
	uint32_t *word;			/* NULL: none */
	uint64_t word_va;
	uint64_t word_pt;		/* last point whose job writes it */
	/* event timelines: point via_ev_pt is signalled by the job that
	 * writes via_pt to stream timeline via's word, so that word tells
	 * it complete too (refs held on via) */
	struct tl *via;
	uint64_t via_pt, via_ev_pt;
	/* user queues (npu_uq.c): point uq_pt of this timeline completes
	 * when queue uq_id's rptr reaches uq_wptr, and is not in the
	 * syncobj until npu_tl_bridge puts it there (uq_id 0: none). A
	 * stream's timeline on a user queue has a memory signal (struct
	 * npu_signal at sig_va, word = its value's low half): every point
	 * <= uq_pt and > k_pt is written there (by the device, or by the
	 * host thread for a host function) */
	uint32_t uq_id;
	uint64_t uq_pt, uq_wptr;
	uint64_t sig_va;		/* 0: no memory signal */
	const volatile uint32_t *uq_status;	/* its queue's, write-back */
	uint64_t k_pt;			/* last point a kernel job signals */
	/* a live stream's timeline: that stream's lock (s->lock), held by
	 * every writer of next and the uq_ fields above (NULL: dev->lock
	 * alone, as for events) */
	struct npu_spin *lock;
};

/* A stream's user queue (npu_uq.c): its ring, and a page holding the
 * write-back block (offset 0), the stream's memory signal (offset 64). */
#define UQ_RING_SIZE		(128u * 1024)
#define UQ_MEM_SIZE		4096u
#define UQ_SIG_OFF		64u
#define UQ_REL_OFF		128u	/* u64: host functions released */
struct npu_uq {
	uint32_t id;
	uint32_t ring_handle, mem_handle;
	uint8_t *ring;
	uint64_t ring_va;
	uint8_t *mem;
	uint64_t mem_va;
	volatile uint64_t *db;		/* the queue's doorbell */
	uint64_t wptr;			/* bytes written (published or not) */
	uint64_t wait_va;		/* USERQ_WAIT's counter */
	uint64_t last_pt;		/* stream point of the last job in it */
	uint32_t kind;			/* DRM_NPU_RING_KIND_COMPUTE or _COPY */
	uint64_t *sig;			/* the stream's memory signal's value */
	uint64_t releases;		/* host functions queued on it */
	bool halted;			/* seen halted or stopped */
	bool halt_reported;		/* its fault record was waited for */
	bool halt_released;		/* its signal raised past the halt */
	struct npu_uq *dev_next;	/* the device's queues (dev->uqs) */
};

struct dep {
	struct tl *tl;
	uint64_t point;
	bool order_only;		/* submit after, but no fence wait */
};

struct djob {				/* a deferred job */
	struct djob *next;
	struct npu_stream *s;
	uint32_t queue_id;
	uint32_t cmd_off, cmd_size;
	unsigned ndeps;
	struct dep *deps;		/* refs held; inline_deps or heap */
	struct dep inline_deps[INLINE_DEPS];
	unsigned nout;
	struct tl *out[2];		/* refs held */
	uint64_t out_pt[2];
	uint32_t bo[2];
	unsigned nbo;
};

struct hostcb {
	struct hostcb *next;
	npu_host_fn_t fn;
	void *user;
	uint64_t wait_point;		/* stream point to wait for (0: none) */
	uint64_t signal_point;		/* stream point to signal after fn */
	uint64_t release;		/* user queue: its release count */
};

struct cmd_span {
	uint32_t start, end;
	uint64_t point;
	uint32_t kernel;		/* kernel id + 1 of a launch, or 0 */
	uint64_t entry;			/* a user kernel's entry, or 0 */
};

struct device;

struct npu_stream {
	uint32_t magic;
	struct device *dev;
	/* protects the submission state of a user-queue stream (see the top
	 * of this file): uq's ring, wptr and last_pt, tl's next and uq_
	 * fields, last_queue, legacy_seen; taken after dev->lock */
	struct npu_spin lock;
	struct npu_stream *next;	/* dev->streams */
	unsigned flags;
	int priority;
	bool legacy;
	struct tl *tl;
	uint32_t queue[2];		/* Q_COMPUTE, Q_COPY queue ids */
	uint32_t ring[2];
	uint32_t qkind[2], qprio;	/* what the queues were made with */
	int last_queue;			/* queue of the last job or Q_NONE */
	uint64_t legacy_seen;		/* legacy point this stream waits on */
	uint64_t waited_by_legacy;	/* our point the legacy stream waits on */
	uint64_t legacy_pending;	/* ... once the job being submitted is */
	/* command buffer ring (host BO) */
	uint32_t cmd_handle;
	uint8_t *cmd_map;
	uint64_t cmd_va;
	uint32_t cmd_head;
	struct cmd_span span[CMD_INFLIGHT];	/* not zeroed: see span_count */
	unsigned span_head, span_count;		/* (stream_new zeroes from here) */
	int word_idx;			/* slot of tl->word (-1: none) */
	struct npu_uq *uq;		/* its user queue, or NULL (kernel) */
	/* its copy-class user queue for copies and memsets, made on the
	 * first one (NULL: none yet, or copies stay on uq) */
	struct npu_uq *uq_copy;
	bool uq_copy_failed;		/* making it failed: copies on uq */
	unsigned qflags;		/* NPU_STREAM_*_QUEUE it was made with */
	/* sticky error */
	npu_status_t sticky;
	bool tune;			/* a stream of npu_tune() (npu_tune.c) */
	uint64_t fault_clean;		/* points <= this are known fault-free */
	/* host function thread */
	bool cb_started, cb_stop;
	pthread_t cb_thread;
	pthread_cond_t cb_cond;
	struct hostcb *cb_head, *cb_tail;
	/* graph launches on library threads that use this stream; a stream
	 * destroyed while any runs (only after a failed wait: the device
	 * was lost) is freed by the last (npu_stream_put_locked) */
	unsigned threads;
	bool destroyed;
};

struct npu_event {
	uint32_t magic;
	struct device *dev;
	unsigned flags;
	bool imported;
	/* The latest record only (CUDA's semantics): a record whose
	 * predecessor is not known complete gets a fresh timeline and
	 * timestamp slot (npu_event_begin_record), so that it waits for
	 * nothing recorded before it. */
	struct tl *tl;			/* point next = the latest record */
	int ts_index;			/* slot in the timestamp pool */
	uint64_t serial;		/* unique per process: a new event at a
					 * freed one's address is another event */
};

struct alloc {
	uint64_t key;			/* device VA or host address */
	uint64_t size;			/* bytes of the key range */
	uint64_t va;			/* device VA of key */
	uint32_t handle;
	void *map;			/* host mapping (pinned) */
	uint64_t map_size;
	void *user;			/* npu_host_register() pointer */
};

struct alloc_table {
	struct alloc *v;
	unsigned n, cap;
	/* written (tab_insert, tab_remove) with dev->lock and this held for
	 * writing; read with either: the copy and memset fast path
	 * (npu_mem.c) checks its pointers without dev->lock */
	pthread_rwlock_t lock;
};

struct staging {
	uint32_t handle;
	void *map;
	uint64_t va;
	struct tl *tl;			/* busy until (tl, point) signals */
	uint64_t point;
};

struct device {
	pthread_mutex_t lock;
	bool open;
	int fd;
	char node[64];
	npu_device_prop prop;
	/* made on first use (npu_stream.c), under lock; read without it */
	struct npu_stream *_Atomic legacy;
	struct npu_stream *streams;	/* all, legacy included */
	unsigned rr[2];			/* round-robin ring choice */
	unsigned ring_users[2][NPU_MAX_RINGS_LIB];
	/* command buffers of destroyed streams, idle, for the next streams:
	 * creating and mapping a BO costs milliseconds, a stream should not */
	struct cmd_buf {
		uint32_t handle;
		uint64_t va;
		void *map;
	} cmd_pool[CMD_POOL_MAX];
	unsigned cmd_pool_n;
	/* idle queues of destroyed streams: one is reused by a new stream
	 * that wants its kind, ring and priority */
	struct idle_queue {
		uint32_t id, kind, ring, priority;
	} queue_pool[QUEUE_POOL_MAX];
	unsigned queue_pool_n;
	struct djob *deferred, *deferred_tail;
	struct djob *free_djobs;	/* recycled, so enqueue never mallocs */
	unsigned nfree_djobs;		/* ... at most CMD_INFLIGHT kept: a
					 * burst's jobs go back to malloc */
	/* batched submission (see npu_batch.c) */
	bool batch;			/* jobs go through the submit thread */
	uint64_t spin_ns;		/* how long a stream wait watches the
					 * completion word before it blocks
					 * (NPU_DEVICE_SCHEDULE_AUTO) */
	_Atomic unsigned sched;		/* NPU_DEVICE_SCHEDULE_* */
	bool flusher_started, flusher_idle;
	pthread_t flusher;
	pthread_cond_t flush_cond;
	struct drm_npu_job *bjobs;
	struct drm_npu_sync *bsyncs;
	unsigned bsyncs_cap;
	bool batch_busy;		/* a batch is built and not yet done:
					 * bjobs/bsyncs in use, order pending */
	struct djob **wait_batch;	/* a waiter's batch (npu_flush_now) */
	/* user queues: the default unless NPU_QUEUES=kernel, and whether
	 * the driver has them; the file's doorbell page, mapped on first use */
	bool uq_default, uq_ok;
	uint32_t uq_engines;		/* DRM_NPU_PARAM_USERQ_ENGINES */
	void *uq_db_page;
	uint64_t uq_db_offset;		/* its mmap offset */
	struct npu_uq *uqs;		/* every live user queue, for a query's
					 * halt check without a walk of streams */
	/* the memory (signal) of destroyed streams' user queues that other
	 * queues may still read: freed when each wait is done */
	struct uq_zombie {
		uint32_t handle;
		uint8_t *mem;
		unsigned nwaits;
		struct dep *waits;	/* timeline refs held */
	} *uq_zombies;
	unsigned uq_nzombies, uq_zombies_cap;
	/* the kernel library (npu_builtin_code.c): its module once loaded,
	 * and its kernels by built-in id (NULL where none) */
	struct npu_module *_Atomic kernel_lib;
	npu_function_t kernel_fn[NPU_K_ARGMAX_F32 + 1];
	/* errors */
	_Atomic bool lost;		/* an ioctl failed with ENODEV: the
					 * driver was unbound (lock-free) */
	npu_status_t sticky;		/* written under lock; the launch
					 * fast path reads it lock-free */
	char sticky_msg[512];
	uint32_t faults_seen;
	uint32_t faults_tune;		/* of those, on npu_tune() streams */
	/* faults that only DRM_IOCTL_NPU_GET_FAULT tells of may be on
	 * record (npu_check_faults): a job went through the kernel queues
	 * (the submit thread sets it lock-free), or a user queue halted
	 * (under lock); both for good */
	_Atomic bool kq_submitted;
	bool uq_halt_seen;
	/* memory */
	struct alloc_table dmem, hmem;
	/* the device VA window [va_lo, va_hi) the driver hands addresses
	 * out of (npu_memcpy's pointer rule, npu_mem.c) */
	uint64_t va_lo, va_hi;
	struct staging staging[STAGING_MAX];
	unsigned nstaging;
	/* timestamp pool */
	struct {
		uint32_t handle;
		uint64_t *map;
		uint64_t va;
	} ts_chunk[TS_MAX_CHUNKS];
	unsigned ts_nchunks;
	int *ts_free;
	unsigned ts_nfree, ts_free_cap;
	struct ts_zombie {		/* slots of destroyed events whose */
		int index;		/* last record is still pending */
		struct tl *tl;
		uint64_t point;
	} *ts_zombies;
	unsigned ts_nzombies, ts_zombies_cap;
	struct printf_pool *printf_pool;	/* device printf (npu_printf.c) */
	void (*complete_hooks[2])(struct device *dev);	/* npu_on_complete */
	/* teardown (npu_unload.c): what must be gone before the
	 * library's code is unmapped (dlclose) */
	int pid;			/* the process that opened the device */
	bool flusher_stop;
	unsigned nthreads;		/* helper threads running (graph host
					 * nodes, npu_thread_start) */
	pthread_cond_t thread_cond;	/* nthreads dropped */
	pthread_t *threads_done;	/* finished, to be joined */
	unsigned nthreads_done, threads_done_cap;
	pthread_mutex_t maps_lock;	/* host mappings of the device file */
	struct host_map {
		void *map;
		uint64_t size;
	} *maps;
	unsigned nmaps, maps_cap;
};

/* npu_stream.c: pinned host BOs (command rings, staging) and handle lookup */
int npu_host_bo(struct device *dev, uint64_t size, uint32_t *handle,
		uint64_t *va, void **map);
/* What to add to the message of a pin that failed with errno err: when
 * RLIMIT_MEMLOCK is the likely cause, the setting that fixes it, else "". */
const char *npu_pin_hint(int err);
void npu_host_bo_free(struct device *dev, uint32_t handle, void *map,
		      uint64_t size);
/* npu_mem.c: make the first size bytes (page multiple) of the npu_malloc
 * allocation at devptr read-only for the device (code of a module); 0, or
 * -1 with errno set. */
int npu_mem_protect(struct device *dev, void *devptr, uint64_t size);
/* Remember a mapping of the device file made elsewhere (imports), so that
 * teardown unmaps it; npu_host_bo_free forgets it. */
int npu_host_map_add(struct device *dev, void *map, uint64_t size);
/* Teardown: unmap every remembered mapping (the device file is released
 * only once no mapping holds it). */
void npu_host_maps_release(struct device *dev);
/* Teardown: stop s's host function thread (its queue is empty). Caller
 * holds dev->lock. */
void npu_stream_stop_thread(struct device *dev, struct npu_stream *s);
/* A library thread that used s (s->threads) is done with it; frees a
 * stream destroyed meanwhile. Caller holds dev->lock. */
void npu_stream_put_locked(struct device *dev, struct npu_stream *s);
/* Wait for s's work / the device's work (error: the sticky one). Caller
 * holds dev->lock, which the waits drop and retake. */
npu_status_t npu_stream_sync_locked(struct device *dev, struct npu_stream *s);
npu_status_t npu_dev_sync_locked(struct device *dev);

/* npu_stream.c: before a new record of e (a stream's or a graph node's),
 * give e a fresh timeline and timestamp slot if its latest record is not
 * known complete; the new record is then point e->tl->next + 1. Caller
 * holds dev->lock. */
npu_status_t npu_event_begin_record(struct device *dev, struct npu_event *e);
/* The same in two steps, for a record that may still fail after it: r is
 * the timeline and slot the record uses (e's own if its latest record is
 * complete); npu_event_end_record() gives them to e once the record is
 * submitted, or drops them (e keeps its previous record). */
struct event_record {
	struct tl *tl;
	int ts_index;
	bool fresh;		/* r's tl and slot are not e's */
};
npu_status_t npu_event_prepare_record(struct device *dev, struct npu_event *e,
				      struct event_record *r);
void npu_event_end_record(struct device *dev, struct npu_event *e,
			  struct event_record *r, bool submitted);
uint64_t npu_event_ts_va(struct device *dev, int ts_index);

/* npu_mem.c: device (1) / host (0) / either (-1) side of each copy end */
npu_status_t npu_copy_kind_sides(npu_memcpy_kind_t kind, int *dst_dev,
				 int *src_dev);

#endif /* NPU_INTERNAL_H */
