/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * npu_base.h - the base header of the npu DRM accelerator driver: its
 * limits and the structures every part shares (device, rings, contexts,
 * buffer objects, mappings, queues, files, jobs, user queues). It has no
 * .c file of its own; each .c file declares what it offers in its own
 * header (npu_mmu.c in npu_mmu.h, ...), which includes this one.
 *
 * Object graph (arrows are counted references):
 *
 *   npu_file --> npu_ctx <-- npu_mapping --> npu_bo (GEM)
 *      ^                         ^
 *      +-------- npu_job --------+      (a job pins what it uses)
 *
 * Documentation/driver/npu.rst describes the architecture, the locking and
 * the layering of the files.
 */
#ifndef NPU_BASE_H
#define NPU_BASE_H

#include <linux/dma-fence.h>
#include <linux/interrupt.h>
#include <linux/kref.h>
#include <linux/llist.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <drm/drm_device.h>
#include <drm/drm_file.h>
#include <drm/drm_gem_shmem_helper.h>
#include <drm/drm_mm.h>
#include <drm/gpu_scheduler.h>

#include "npu_compat.h"
#include "npu_hw.h"
#include "drm/npu_accel.h"

#define NPU_DRIVER_NAME		"npu"
#define NPU_DRIVER_DESC		"npu virtual NPU accelerator"

/* Submission limits (also reported by GET_PARAM). */
#define NPU_MAX_JOBS		64	/* jobs in one SUBMIT */
#define NPU_MAX_JOB_BOS		1024	/* BO handles of one job */
#define NPU_MAX_JOB_SYNCS	64	/* in or out syncs of one job */
#define NPU_MAX_QUEUES		256	/* queues of one file */
#define NPU_MAX_CTXS		64	/* extra contexts of one file */
#define NPU_MAX_BO_SIZE		BIT_ULL(32)	/* 4 GiB per BO */
/* User queue ids: past the kernel queues' ids, one per doorbell of a page */
#define NPU_USERQ_IDS	XA_LIMIT(NPU_MAX_QUEUES + 1, \
				 NPU_MAX_QUEUES + NPU_UQ_DOORBELLS_PER_PAGE)

/*
 * uAPI arrays carry their element size: the smallest accepted is the size
 * of the element's first version (older user space), the largest a page.
 */
#define NPU_JOB_SIZE_V1		56	/* drm_npu_job up to out_sync_count */
#define NPU_SYNC_SIZE_V1	16	/* drm_npu_sync */
#define NPU_RING_COUNTERS_SIZE_V1 32	/* drm_npu_ring_counters */
#define NPU_MAX_STRIDE		4096

/* Device VA layout of a context: nothing below 1 MiB (catches NULL). */
#define NPU_VA_START		BIT_ULL(20)
#define NPU_VA_END		BIT_ULL(NPU_VA_BITS)
#define NPU_VA_GUARD		NPU_PAGE_SIZE	/* unmapped gap after each BO */

/* Ring buffers: every job takes one fixed 64-byte slot (16 dwords). */
#define NPU_RING_BYTES		(16 * 1024)
#define NPU_JOB_SLOT_DW		16
/*
 * Jobs on one ring at a time (< slots). Enough to keep a ring busy while the
 * interrupt of the previous job is handled, few enough that queue
 * priorities decide what runs next when a ring is contended.
 */
#define NPU_RING_CREDITS	8
#define NPU_FENCE_SLOT		64	/* bytes between two rings' seqnos */

struct npu_device;
struct npu_file;

/**
 * struct npu_ring - one hardware ring (command processor) of the device
 * @ndev: owning device
 * @index: global ring index (compute rings first, then copy rings)
 * @kind: DRM_NPU_RING_KIND_*
 * @irq: Linux irq number of the ring's MSI-X vector
 * @name: "compute0", "copy1", ...
 * @sched: the ring's scheduler; one entity per queue feeds it
 * @vaddr: CPU address of the ring buffer (DMA coherent)
 * @dma: bus address of the ring buffer
 * @fence_cpu: CPU address of the 32-bit word the FENCE packet writes
 * @fence_dma: its bus address
 * @fence_context: dma_fence context of the hardware fences
 * @lock: protects @tail, @seqno, @pending, the ring contents and the
 *	ring's registers; taken from the irq handlers (irqsave)
 * @fence_lock: lock handed to dma_fence_init() for the hardware fences
 * @tail: next byte offset the driver writes
 * @seqno: seqno of the last job emitted
 * @completed: seqno of the last job retired
 * @pending: jobs on the hardware, oldest first (&npu_job.node)
 * @stats_submitted: jobs written to the ring
 * @stats_completed: jobs retired without error
 * @stats_failed: jobs retired with an error
 * @stats_faults: device errors reported for this ring
 * @stats_resets: job timeouts recovered from (a ring reset, or none when
 *	the timed-out job turned out to have completed)
 * @last_done_ns: when the ring's last job retired (the next one's start if
 *	it was queued behind it)
 */
struct npu_ring {
	struct npu_device *ndev;
	u32 index;
	u32 kind;
	int irq;
	char name[16];
	struct drm_gpu_scheduler sched;
	u32 *vaddr;
	dma_addr_t dma;
	u32 *fence_cpu;
	dma_addr_t fence_dma;
	u64 fence_context;
	spinlock_t lock;	/* tail, seqno, pending, ring regs */
	spinlock_t fence_lock;	/* of the hardware dma_fences */
	u32 tail;
	u32 seqno;
	u32 completed;
	struct list_head pending;
	u64 stats_submitted;
	u64 stats_completed;
	u64 stats_failed;
	u64 stats_faults;
	u64 stats_resets;
	u64 last_done_ns;
};

/**
 * struct npu_device - one npu PCI function
 * @drm: DRM device (refcounted; outlives the PCI binding while files are
 *	open)
 * @pdev: PCI device
 * @regs: BAR0 registers; only touched inside drm_dev_enter()/exit()
 * @devmem_bar: write-combined mapping of the device memory BAR (used to
 *	clear new device-memory BOs), or NULL
 * @devmem_bar_size: bytes mapped at @devmem_bar; device-memory BOs inside
 *	this part of the BAR can be mmapped by user space
 * @devmem_size: bytes of device memory handed out: NPU_REG_DEVMEM_SIZE, but
 *	no more than @devmem_bar_size (new BOs are cleared through the BAR)
 * @version: NPU_REG_VERSION
 * @caps: NPU_REG_CAPS
 * @features: NPU_REG_FEATURES
 * @clock_hz: NPU_REG_CLOCK_HZ
 * @num_rings: compute + copy rings
 * @num_compute: compute rings
 * @num_copy: copy rings
 * @num_cus: compute units
 * @cu_threads: thread slots per unit (NPU_REG_CU_THREADS), 0 if the units
 *	run no user code (no NPU_FEATURE_USER_CODE)
 * @cu_scratch: scratchpad bytes per unit (NPU_REG_CU_SCRATCH)
 * @cu_clock_mhz: unit clock (NPU_REG_CU_CLOCK_MHZ)
 * @rings: the rings, @num_rings of them
 * @sched_lists: schedulers of the compute / copy rings, for load-balanced
 *	queues (entities keep a pointer to the list)
 * @scheds_ready: the rings' schedulers are initialised
 * @fence_page: CPU address of the page holding every ring's fence word
 * @fence_page_dma: its bus address
 * @err_irq: Linux irq number of the error vector
 * @irqs_on: interrupts requested (cleared on removal)
 * @devmem_lock: protects @devmem_mm
 * @devmem_mm: allocator of device memory
 * @ctx_ida: context ids (1..)
 * @ctx_lock: protects @ctx_list and @user_ctxs
 * @ctx_list: live contexts (&npu_ctx.link), for debugfs and removal
 * @user_ctxs: live contexts per user, indexed by uid in the initial user
 *	namespace (xa_mk_value() counts; no entry for none), bounded by the
 *	max_user_contexts parameter
 * @bo_lock: protects @bo_list
 * @bo_list: BOs whose pages are mapped for the device (&npu_bo.dev_link),
 *	unmapped on removal
 * @jobs_alive: jobs created and not yet freed
 * @jobs_wq: woken whenever a job is freed (npu_rings_fini() waits here for
 *	@jobs_alive to drop to 0)
 * @free_jobs: jobs the scheduler is done with (&npu_job.free_node)
 * @free_work: releases @free_jobs in process context, off the scheduler's
 *	thread: the release takes &npu_ctx.lock and may wait for the device
 * @sched_wq: per-CPU high-priority workqueue running the schedulers'
 *	run_job and free_job work (kernels whose scheduler uses a workqueue)
 * @reset_delay_ms: debugfs test knob: a timed-out ring waits this long
 *	between stopping its scheduler and its reset
 * @uq_lock: protects the user-queue registers (a command and its status),
 *	the descriptor table, @uq_db_used and @user_userqs (npu_userq.c);
 *	taken after &npu_file.vm_lock
 * @uq_table: CPU address of the user-queue descriptor table, NULL without
 *	user queues or once the device is removed
 * @uq_table_dma: its bus address
 * @uq_entries: descriptors in the table
 * @uq_ida: descriptor indices in use (the ida has its own lock)
 * @uq_engines: NPU_REG_UQ_ENGINES
 * @uq_db_pages: pages of the doorbell BAR
 * @uq_db_base: bus address of the doorbell BAR
 * @uq_db_used: doorbell pages given to files
 * @user_userqs: user queues per user, as @user_ctxs, bounded by the
 *	max_user_userqs parameter
 * @uq_queues: descriptor index -> &struct npu_userq of every mapped queue
 *	(changed under @uq_lock; the xarray has its own lock)
 * @uq_events: CPU address of the user-queue event ring
 * @uq_events_dma: its bus address
 * @uq_event_lock: protects @uq_event_head and the event registers; taken
 *	in the user-queue interrupt handler
 * @uq_event_head: next record the driver reads
 * @uq_irq: Linux irq number of the user-queue event vector, 0 if none
 * @uq_wq: woken by every user-queue event, queue destruction, watchdog
 *	stop and removal; USERQ_WAIT_MEM sleeps here and re-checks
 * @uq_halt_work: records halted queues in their files' fault records
 * @uq_watchdog: stops queues that run without progress for the job timeout
 * @uq_fence_lock: protects @uq_fences; the lock of the USERQ_SIGNAL fences
 * @uq_fences: pending USERQ_SIGNAL fences (npu_userq_event.c)
 * @uq_waits: USERQ_WAIT requests not yet written, in request order;
 *	protected by @uq_fence_lock
 * @uq_wait_work: writes the wait counters of completed USERQ_WAITs
 */
struct npu_device {
	struct drm_device drm;
	struct pci_dev *pdev;
	void __iomem *regs;
	void __iomem *devmem_bar;
	resource_size_t devmem_bar_size;
	u64 devmem_size;
	u32 version;
	u32 caps;
	u32 features;
	u32 clock_hz;
	u32 num_rings;
	u32 num_compute;
	u32 num_copy;
	u32 num_cus;
	u32 cu_threads;
	u32 cu_scratch;
	u32 cu_clock_mhz;
	struct npu_ring rings[NPU_MAX_RINGS];
	struct drm_gpu_scheduler *sched_lists[2][NPU_MAX_RINGS];
	bool scheds_ready;
	void *fence_page;
	dma_addr_t fence_page_dma;
	int err_irq;
	bool irqs_on;
	struct mutex devmem_lock;	/* devmem_mm */
	struct drm_mm devmem_mm;
	struct ida ctx_ida;
	struct mutex ctx_lock;		/* ctx_list, user_ctxs */
	struct list_head ctx_list;
	struct xarray user_ctxs;
	struct mutex bo_lock;		/* bo_list */
	struct list_head bo_list;
	atomic_t jobs_alive;
	wait_queue_head_t jobs_wq;
	struct llist_head free_jobs;
	struct work_struct free_work;
	struct workqueue_struct *sched_wq;
	u32 reset_delay_ms;
	struct mutex uq_lock;	/* UQ_CMD, table, uq_db_used, user_userqs */
	void *uq_table;
	dma_addr_t uq_table_dma;
	u32 uq_entries;
	struct ida uq_ida;
	u32 uq_engines;
	u32 uq_db_pages;
	resource_size_t uq_db_base;
	unsigned long *uq_db_used;
	struct xarray user_userqs;
	struct xarray uq_queues;
	void *uq_events;
	dma_addr_t uq_events_dma;
	spinlock_t uq_event_lock;	/* uq_event_head, UQ_EVENT_* */
	u32 uq_event_head;
	int uq_irq;
	wait_queue_head_t uq_wq;
	struct work_struct uq_halt_work;
	struct delayed_work uq_watchdog;
	spinlock_t uq_fence_lock;	/* uq_fences, the fences */
	struct list_head uq_fences;
	struct list_head uq_waits;
	struct work_struct uq_wait_work;
};

#define to_npu_device(d) container_of(d, struct npu_device, drm)

/**
 * struct npu_pt - one page table (512 entries) and its children
 * @entries: CPU address of the table (DMA coherent, 4 KiB)
 * @dma: bus address written into the parent entry / SET_CONTEXT
 * @child: next-level tables (NULL for level 0)
 * @used: valid entries in this table
 * @spare: entry in a list of tables allocated ahead of a mapping, until it
 *	is linked into the tree
 */
struct npu_pt {
	u64 *entries;
	dma_addr_t dma;
	struct npu_pt **child;
	u32 used;
	struct list_head spare;
};

/**
 * struct npu_ctx - a device address space
 * @ref: references: the file (default context) or its context id (extra
 *	contexts), every mapping, every queue, every job
 * @ndev: device
 * @id: context id written in SET_CONTEXT (1..), device-wide
 * @lock: protects @root (all page tables), @va_mm and the mappings' nodes;
 *	nothing is allocated under it (job teardown takes it)
 * @root: level-2 page table, NULL once the device is removed
 * @root_dma: bus address of @root, for SET_CONTEXT
 * @va_mm: allocator of device virtual addresses
 * @link: entry in &npu_device.ctx_list
 * @pid: process that created it (debugfs)
 * @uid: real user of the creator, charged for the context in
 *	&npu_device.user_ctxs
 * @queues: queues created on the context (CTX_DESTROY refuses while > 0)
 * @binds: mappings made by BO_MAP (&npu_mapping.ctx_link); protected by
 *	the owning file's &npu_file.vm_lock
 * @track_lock: protects @next_seq, @jobs, @retiring and the mapping
 *	references of the pushed jobs (&npu_job.maps)
 * @next_seq: sequence number the next pushed job of the context gets
 * @jobs: pushed jobs not yet freed, in push order (&npu_job.ctx_link)
 * @retiring: unbound mappings waiting for the jobs pushed before their
 *	unbinding to signal, in unbinding order (&npu_mapping.ctx_link)
 * @reaping: reaps that took references off @jobs or @retiring and have not
 *	dropped them all yet, protected by @track_lock
 * @reap_wq: woken when @reaping drops to 0 (npu_ctx_reap_wait())
 * @wait_map: the owning file's wait page, mapped read-only at the
 *	context's first user queue (npu_userq.c); protected by the file's
 *	&npu_file.vm_lock
 */
struct npu_ctx {
	struct kref ref;
	struct npu_device *ndev;
	u32 id;
	struct mutex lock;	/* page tables, va_mm */
	struct npu_pt *root;
	dma_addr_t root_dma;
	struct drm_mm va_mm;
	struct list_head link;
	pid_t pid;
	kuid_t uid;
	atomic_t queues;
	struct list_head binds;
	spinlock_t track_lock;	/* next_seq, jobs, retiring, jobs' maps, reaping */
	u64 next_seq;
	struct list_head jobs;
	struct list_head retiring;
	u32 reaping;
	wait_queue_head_t reap_wq;
	struct npu_mapping *wait_map;
};

/* Kinds of buffer object. */
enum npu_bo_kind {
	NPU_BO_SHMEM,	/* system memory, shmem backed, mmap-able */
	NPU_BO_DEVMEM,	/* device-local memory */
	NPU_BO_USERPTR,	/* pinned user pages */
	NPU_BO_IMPORT,	/* dma-buf of another device */
};

/**
 * struct npu_bo - a buffer object
 * @base: shmem GEM object; for non-shmem kinds only @base.base is used
 * @kind: enum npu_bo_kind
 * @flags: DRM_NPU_BO_* / userptr flags it was made with
 * @read_only: device mappings are read-only
 * @sgt: DMA addresses of the pages (shmem: owned by the helper)
 * @devmem: range of device memory (DEVMEM)
 * @pages: pinned user pages (USERPTR)
 * @npages: entries in @pages
 * @pin_mm: USERPTR: the mm whose &mm_struct.pinned_vm is charged with the
 *	BO's pages (held by mmgrab()), NULL if not charged
 * @pin_user: SHMEM: the user whose &user_struct.locked_vm is charged with
 *	the BO's pinned pages (held by get_uid()), NULL if not charged
 * @maps_lock: protects @maps
 * @maps: mappings of the BO in contexts that hold a handle to it
 *	(&npu_mapping.bo_link)
 * @dev_link: entry in &npu_device.bo_list while its pages are mapped for
 *	the device
 */
struct npu_bo {
	struct drm_gem_shmem_object base;
	enum npu_bo_kind kind;
	u32 flags;
	bool read_only;
	struct sg_table *sgt;
	struct drm_mm_node devmem;
	struct page **pages;
	unsigned long npages;
	struct mm_struct *pin_mm;
	struct user_struct *pin_user;
	struct mutex maps_lock;	/* maps, npu_mapping.handles */
	struct list_head maps;
	struct list_head dev_link;
};

static inline struct npu_bo *to_npu_bo(struct drm_gem_object *obj)
{
	return container_of(obj, struct npu_bo, base.base);
}

/**
 * struct npu_mapping - a BO mapped at a VA in a context
 * @ref: references: the handle(s) of the file or the BO_MAP binding,
 *	every job using it
 * @ctx: context (referenced)
 * @bo: BO (GEM reference)
 * @node: VA range (&npu_ctx.va_mm): BO size plus a guard page, or exactly
 *	the BO size for a fixed address
 * @size: mapped bytes
 * @handles: default context: handles of the file that name the BO; extra
 *	context: 1 while bound by BO_MAP; 0: the mapping only lives on for
 *	jobs that still use it. Written under &npu_bo.maps_lock, always with
 *	WRITE_ONCE(); read with READ_ONCE() without that lock (VA lookup,
 *	debugfs): a lookup racing with the last close may still find the
 *	mapping, and its reference keeps the range mapped until dropped
 * @bo_link: entry in &npu_bo.maps while @handles > 0
 * @ctx_link: entry in &npu_ctx.binds while bound by BO_MAP, then in
 *	&npu_ctx.retiring until the jobs pushed before it was unbound signal
 * @retire_seq: &npu_ctx.next_seq when it was unbound
 * @userq_pins: user queues whose ring or write-back block it holds
 *	(BO_UNMAP refuses while > 0); protected by the owning file's
 *	&npu_file.vm_lock
 */
struct npu_mapping {
	struct kref ref;
	struct npu_ctx *ctx;
	struct npu_bo *bo;
	struct drm_mm_node node;
	u64 size;
	u32 handles;
	struct list_head bo_link;
	struct list_head ctx_link;
	u64 retire_seq;
	u32 userq_pins;
};

/* npu_mapping_create() flags */
#define NPU_MAP_FIXED		BIT(0)	/* at the given VA */
#define NPU_MAP_READ_ONLY	BIT(1)	/* no device writes */

/**
 * struct npu_queue - a submission queue (scheduler entity)
 * @ref: references: the file's xarray, submits in progress
 * @entity: scheduler entity, bound to one ring or load-balanced
 * @id: queue id
 * @kind: DRM_NPU_RING_KIND_*
 * @priority: DRM_NPU_PRIORITY_*
 * @ring: ring index within @kind, or DRM_NPU_RING_ANY
 * @ctx: context its jobs run in (referenced, counted in &npu_ctx.queues)
 * @last_pushed: finished fence of the last job pushed to @entity
 *	(referenced; written under &npu_file.submit_lock)
 */
struct npu_queue {
	struct kref ref;
	struct drm_sched_entity entity;
	struct npu_ctx *ctx;
	struct dma_fence *last_pushed;
	u32 id;
	u32 kind;
	u32 priority;
	u32 ring;
};

/**
 * struct npu_file - driver state of one open file
 * @ref: references: the DRM file, every job
 * @ndev: device
 * @ctx: the file's default address space (context id 0 in the uAPI)
 * @vm_lock: protects the extra contexts' &npu_ctx.binds, the user queues
 *	(@userqs, @nuserqs, @doorbell, @doorbells_used, the mappings'
 *	&npu_mapping.userq_pins) and serialises CTX_DESTROY, BO_MAP,
 *	BO_UNMAP and the USERQ ioctls; taken before &npu_bo.maps_lock
 * @ctxs: extra context id -> &struct npu_ctx (xarray has its own lock)
 * @client_id: DRM client id, for the scheduler
 * @queues: queue id -> &struct npu_queue (xarray has its own lock)
 * @submit_lock: serialises SUBMIT so that jobs are armed and pushed in
 *	the same order on each entity
 * @fault_lock: protects @fault (taken from the error irq)
 * @fault: errors hit by the file's jobs
 * @engine_ns: time the file's jobs occupied compute rings ([0]) and copy
 *	rings ([1]), from the start of each job on its ring to its retirement,
 *	and its destroyed user queues' busy time (fdinfo drm-engine-* adds
 *	the running jobs' time so far and the live user queues')
 * @userqs: user queue id -> struct npu_userq (npu_userq.c)
 * @nuserqs: entries in @userqs
 * @doorbell: the file's doorbell page (a GEM object), NULL until its first
 *	user queue
 * @doorbells_used: doorbells of @doorbell bound to the file's queues
 * @wait_bo: the file's wait page (one u64 wait counter per doorbell), made
 *	with @doorbell
 */
struct npu_file {
	struct kref ref;
	struct npu_device *ndev;
	struct npu_ctx *ctx;
	struct mutex vm_lock;		/* extra contexts' binds */
	struct xarray ctxs;
	u64 client_id;
	struct xarray queues;
	struct mutex submit_lock;	/* arm..push order of SUBMIT */
	spinlock_t fault_lock;		/* fault */
	struct drm_npu_get_fault fault;
	atomic64_t engine_ns[2];
	struct xarray userqs;
	u32 nuserqs;
	struct drm_gem_object *doorbell;
	DECLARE_BITMAP(doorbells_used, NPU_UQ_DOORBELLS_PER_PAGE);
	struct npu_bo *wait_bo;
};

/**
 * struct npu_job - one job: a command buffer run on a ring
 * @base: scheduler job
 * @ndev: device
 * @nfile: owning file (referenced; receives fault records)
 * @ctx: context the job runs in (referenced)
 * @queue_id: queue it was submitted to (fault records)
 * @cmd_va: command buffer VA
 * @cmd_size: command buffer bytes (0: fence only)
 * @maps: mappings the job uses (referenced), @nmaps of them; once the job
 *	is pushed, protected by &npu_ctx.track_lock and dropped when it and
 *	the older jobs of the context have signalled (npu_ctx_reap()) or when
 *	it is freed
 * @nmaps: entries in @maps
 * @ring: ring the job ran on (set by run_job)
 * @hw_fence: hardware fence (referenced), set by run_job
 * @spare_fence: fence allocated at submit, used by run_job
 * @seqno: seqno on its ring
 * @run_ns: when run_job wrote it to the ring
 * @node: entry in &npu_ring.pending, protected by &npu_ring.lock
 * @ctx_seq: position in the context's push order
 * @ctx_link: entry in &npu_ctx.jobs from push to free
 * @done: finished fence, referenced while on &npu_ctx.jobs
 * @on_ring: @node is linked
 * @free_node: entry in &npu_device.free_jobs
 */
struct npu_job {
	struct drm_sched_job base;
	struct npu_device *ndev;
	struct npu_file *nfile;
	struct npu_ctx *ctx;
	u32 queue_id;
	u64 cmd_va;
	u32 cmd_size;
	struct npu_mapping **maps;
	u32 nmaps;
	struct npu_ring *ring;
	struct dma_fence *hw_fence;
	struct npu_fence *spare_fence;
	u32 seqno;
	u64 run_ns;
	struct list_head node;
	u64 ctx_seq;
	struct list_head ctx_link;
	struct dma_fence *done;
	bool on_ring;
	struct llist_node free_node;
};

#define to_npu_job(j) container_of(j, struct npu_job, base)

/**
 * struct npu_fence - hardware fence of one job run on a ring
 * @base: dma fence (context = ring, seqno = ring seqno)
 * @ring_index: ring it belongs to (names only)
 */
struct npu_fence {
	struct dma_fence base;
	u32 ring_index;
};

/**
 * struct npu_userq - one user-mode queue (npu_userq.c)
 * @ref: references: &npu_file.userqs until destroyed, each USERQ_WAIT_MEM
 *	sleeping on it
 * @nfile: owning file (not referenced: the queue is destroyed before the
 *	file is released, and only looked at while in &npu_device.uq_queues)
 * @ctx: context it runs in (referenced)
 * @ring_map: mapping holding the ring (referenced, pinned)
 * @wb_map: mapping holding the write-back block (referenced, pinned)
 * @uid: real user charged for the queue
 * @id: uAPI id
 * @index: descriptor index on the device
 * @doorbell: doorbell index in the file's page
 * @kind: DRM_NPU_RING_KIND_* of its engines (fdinfo's engine class)
 * @dead: destroyed: waiters return -ECANCELED (written under
 *	&npu_device.uq_lock, read with READ_ONCE())
 * @stopped: stopped by the watchdog, after its fault was recorded (written
 *	with smp_store_release(); USERQ_QUERY reads it with smp_load_acquire(),
 *	waiters with READ_ONCE())
 * @halt_seen: its halt was recorded in the file's fault record
 *	(&npu_device.uq_lock)
 * @wd_running: watchdog: the last sample saw it on an engine
 *	(&npu_device.uq_lock)
 * @wd_rptr: watchdog: rptr at the last sample (&npu_device.uq_lock)
 * @wd_cmds: watchdog: cmds at the last sample (&npu_device.uq_lock)
 * @wd_since: watchdog: jiffies since when the queue has been running
 *	without progress (&npu_device.uq_lock)
 * @fence_context: dma_fence context of its USERQ_SIGNAL fences
 * @fence_seqno: seqno of its last USERQ_SIGNAL fence (&npu_device.uq_lock)
 * @wait_bo: the file's wait page (referenced)
 * @wait_next: last wait-counter value USERQ_WAIT handed out
 *	(&npu_file.vm_lock)
 * @wait_blocked: scratch of npu_userq_wait_work() (&npu_device.uq_lock)
 */
struct npu_userq {
	struct kref ref;
	struct npu_file *nfile;
	struct npu_ctx *ctx;
	struct npu_mapping *ring_map;
	struct npu_mapping *wb_map;
	kuid_t uid;
	u32 id;
	u32 index;
	u32 doorbell;
	u32 kind;
	bool dead;
	bool stopped;
	bool halt_seen;
	bool wd_running;
	u64 wd_rptr;
	u64 wd_cmds;
	unsigned long wd_since;
	u64 fence_context;
	u64 fence_seqno;
	struct npu_bo *wait_bo;
	u64 wait_next;
	bool wait_blocked;
};

#endif /* NPU_BASE_H */
