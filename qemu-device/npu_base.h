/*
 * npu - virtual NPU PCI device: the device's state and the base layer
 * (npu_base.c) that every engine uses.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The hardware interface (registers, packets, page tables, kernels) is
 * include/npu_hw.h; Documentation/hw/npu.rst describes the behaviour and,
 * in "Implementation notes", which file may call which.
 */
#ifndef HW_MISC_NPU_BASE_H
#define HW_MISC_NPU_BASE_H

#include "hw/pci/pci.h"
#include "exec/memory.h"
#include "qemu/thread.h"
#include "qemu/queue.h"
#include "npu_hw.h"

#define TYPE_NPU "npu"
OBJECT_DECLARE_SIMPLE_TYPE(NpuState, NPU)

#define NPU_SIGNAL_LOCKS    16

typedef struct NpuState NpuState;

/* Direct-mapped translation cache of one ring (dropped by FLUSH_TLB). */
#define NPU_TLB_ENTRIES 64

typedef struct NpuTlbEntry {
    uint64_t vpn;       /* VA >> 12, UINT64_MAX when empty */
    uint64_t pte;       /* leaf entry */
} NpuTlbEntry;

/*
 * Outcome of a command: error code and faulting address; for a fault of a
 * LAUNCH_CODE thread also where it happened (cu set).
 */
typedef struct NpuErr {
    uint32_t code;
    uint64_t addr;
    bool cu;
    uint64_t pc;
    uint32_t block;
    uint32_t thread;
    uint32_t unit;
    uint64_t entry;             /* LAUNCH_CODE entry of a unit fault */
} NpuErr;

typedef struct NpuCuState NpuCuState;

#define NPU_UQ_ENGINES      (2 * NPU_UQ_MAX_ENGINES)
#define NPU_UQ_ENG_IDX(e)   (NPU_MAX_RINGS + (e))

/*
 * Deterministic device time (npu_vtime.c): engines are the rings, the
 * user-queue engines (at NPU_UQ_ENG_IDX), the compute units and the
 * user-queue scheduler.
 */
#define NPU_VT_CU       (NPU_MAX_RINGS + NPU_UQ_ENGINES)
#define NPU_VT_UQ       (NPU_VT_CU + 1)
#define NPU_VT_ENGINES  (NPU_VT_UQ + 1)
enum { NPU_VT_IDLE, NPU_VT_RUN, NPU_VT_WAIT, NPU_VT_BLOCKED };

typedef struct NpuVtime {
    QemuMutex lock;             /* protects everything here */
    QemuCond cond;              /* an engine was made to run */
    uint64_t now;               /* the device clock, ns */
    uint64_t cu_time;           /* how far the units have simulated, ns */
    uint8_t state[NPU_VT_ENGINES];
    uint64_t until[NPU_VT_ENGINES];     /* NPU_VT_WAIT: until when */
    bool deferred;              /* a move waits for the host to settle */
    bool cu_look;               /* work queued since the units took theirs */
    /*
     * user queues: the scheduler has work (a queue became ready, an
     * engine free), and an engine ran since its last look at the words
     * waiting queues wait for (uq_dirty)
     */
    bool uq_pending;
    bool uq_dirty;
    int64_t host_touch;         /* last MMIO write or IRQ, wall ns; atomic */
} NpuVtime;

typedef struct NpuRing {
    NpuState *s;
    unsigned idx;
    bool copy;                  /* copy engine (no LAUNCH) */
    /*
     * A user-queue engine (npu_uq.c) is an NpuRing too (its MMU context,
     * TLB, abort flag and counters), idx NPU_UQ_ENG_IDX(e); waits yield.
     */
    bool uq_engine;
    int64_t uq_slice0;          /* engine: when its queue got it */
    char name[16];

    QemuThread thread;
    QemuMutex lock;             /* protects everything below */
    QemuCond cond;              /* doorbell, reset handshake */

    /* registers */
    uint64_t base;
    uint32_t size;
    uint32_t head;
    uint32_t tail;
    bool enabled;
    bool halted;
    uint32_t fence;
    uint32_t context;
    uint32_t error;
    uint32_t error_ctx;
    uint64_t fault;
    uint32_t error_info;
    uint64_t fault_pc;
    uint32_t fault_block;
    uint32_t fault_thread;
    uint32_t fault_unit;
    uint64_t fault_entry;
    uint64_t busy_ns;
    /*
     * BUSY also counts the command executing: cmd_start is the host ns
     * it started (0 = none; atomic, set by the engine), busy_seen the
     * highest BUSY read, which keeps the register monotonic when the
     * command's own accounting (npu_complete) starts a little later.
     */
    int64_t cmd_start;
    uint64_t busy_seen;
    /*
     * timing=virtual: the ring's present and its command's start (the
     * engine's own), and the semaphore it is blocked on (under vt.lock).
     */
    uint64_t vt;
    uint64_t vt_start;
    bool vt_sem;
    uint64_t vt_sem_addr;
    uint64_t vt_sem_value;
    bool vt_sem_wide;           /* WAIT_MEM64: a u64, compared unsigned */
    int64_t vt_sem_since;       /* wall ns it blocked at */
    bool vt_yield;              /* user-queue engine: its wait yields */
    uint64_t cmds;
    uint64_t bytes;
    uint64_t ops;

    /* engine control */
    bool running;               /* engine is executing a packet */
    bool sem_wait;              /* ... a SEM_WAIT still waiting: restartable */
    bool stop;                  /* unrealize: thread exits */
    bool abort;                 /* reset: give up the current packet */

    /*
     * MMU invalidation (NPU_REG_MMU_INVALIDATE): shared between the engine
     * and the register handler without a lock, accessed with atomics only
     * (the protocol is described in npu_mmu.c).
     */
    uint32_t mmu_ctx;           /* context of the TLB entries (engine sets) */
    uint32_t mmu_gen;           /* += 2 by each invalidation of the ring */
    uint32_t mmu_busy;          /* mmu_gen | 1 during an access, else 0 */

    /*
     * Engine-private state: only the ring's thread touches it, except
     * reset, which runs while the engine is not executing.
     */
    uint64_t pt_root;
    uint32_t ib_off;            /* byte offset of the IB packet executing */
    uint32_t ib_resume;         /* the INDIRECT at HEAD resumes here */
    /*
     * Device ns at which the engine's last launch ended, 0 once the engine
     * idled since: the next launch was set up meanwhile unless 0
     * (npu_launch_model_ns).
     */
    int64_t launch_end;
    /*
     * Device ns at which npu_complete ended the ring's last command (0
     * with timing=virtual); a user-queue engine clears it before each
     * packet, so non-zero there means the packet ended through it.
     */
    int64_t cmd_end;
    /*
     * The record of the ring's fixed-function launch on free units
     * (npu_cu_run_fixed): one command at a time, so one record, kept for
     * the next instead of a few kilobytes allocated and zeroed per launch.
     */
    struct NpuLaunch *fixed_launch;
    uint32_t tlb_gen;           /* mmu_gen the TLB entries are valid for */
    NpuTlbEntry tlb[NPU_TLB_ENTRIES];
} NpuRing;

/* One user queue (npu_uq.c), under NpuUqState.lock. */
typedef struct NpuUq NpuUq;
struct NpuUq {
    /* loaded from the descriptor at MAP */
    uint64_t ring_va;
    uint32_t ring_size;
    uint32_t config;
    uint64_t wb_va;
    uint32_t ctx;
    uint32_t doorbell;
    uint64_t pt_root;
    /* state (descriptor bytes 0x30..0xa7) */
    uint64_t wptr;
    uint64_t rptr;
    uint32_t status;            /* MAPPED, RUNNABLE, WAITING, HALTED */
    uint32_t error;
    uint64_t fault;
    uint32_t error_info;
    uint32_t fault_block;
    uint64_t fault_pc;
    uint32_t fault_thread;
    uint32_t fault_unit;
    uint64_t fault_entry;
    uint64_t ib_va;
    uint32_t ib_size;
    uint32_t ib_offset;
    uint64_t progress_ns;
    uint64_t busy_ns;
    uint64_t cmds;
    uint64_t bytes;
    uint64_t ops;
    uint64_t run_start_ns;      /* clock at the executing packet's start */
    uint32_t state_seq;         /* NPU_UQD_STATE_SEQ: odd while writing */
    /* scheduler */
    uint32_t idx;
    int engine;                 /* engine it is on, -1 if none */
    bool ready;                 /* on its ready list */
    bool waiting;               /* on the wait list */
    bool leave;                 /* SUSPEND/UNMAP/STOP: leave the engine */
    bool unmap;                 /* ... and unmap when off */
    bool off_event;             /* post OFF when off the engine */
    bool vt_pend;               /* timing=virtual: on the pending list */
    bool watched;               /* WATCHED: the write-back wptr is read
                                 * before the queue can go idle */
    uint32_t skip;              /* bytes CONTINUE skips (failed packet) */
    /*
     * Packets completed since the write-back block and descriptor were
     * last written (npu_uq_step defers them while more packets are
     * queued), the rptr and progress_ns they were last written with, and
     * the IRQ_RPTR read then.
     */
    uint32_t deferred;
    uint64_t synced_rptr;
    uint64_t synced_ns;
    uint64_t irq_seen;
    uint32_t starve;            /* higher-priority dispatches waited */
    uint64_t ready_seq;         /* order it became ready */
    uint64_t wait_addr;
    uint64_t wait_value;
    bool wait_wide;
    /*
     * NPU_WAIT_DOORBELL: the owner's doorbell says the word was written,
     * so the poller looks on its own only every uq-doorbell-poll-us. Not
     * migrated: a migrated wait polls at the usual rate.
     */
    bool wait_doorbell;
    bool wait_kick;             /* re-read the word now */
    uint64_t doorbells;         /* doorbell writes so far (uq.lock) */
    int64_t wait_since;         /* wall ns */
    int64_t wait_next;
    QTAILQ_ENTRY(NpuUq) link;   /* ready list */
    QTAILQ_ENTRY(NpuUq) wlink;  /* wait list */
};

#define NPU_UQ_STARVE       8   /* higher dispatches before a queue starves */

/*
 * User queues (npu_uq.c): the UQ_* register block, the event ring, and
 * (with engines) the queues and their scheduler. lock protects all of it.
 */
typedef struct NpuUqState {
    QemuMutex lock;
    /*
     * Held from reading a queue's state to writing its write-back block
     * (npu_uq_publish), so the last state read is the last written; taken
     * before lock.
     */
    QemuMutex wb_lock;
    QemuCond cond;              /* engines: a command, an assignment of
                                 * the scheduler's round (timing=virtual);
                                 * commands: engine left */
    /*
     * Idle engines of a class ([copy]) wait here for a ready queue: one
     * is woken per queue made ready, not all (a doorbell woke all 8
     * compute engines' threads to race for one queue).
     */
    QemuCond work[2];
    /* the engine of a class watching for a ready queue without sleeping
     * (uq-poll-us), -1 if none: a queue made ready then wakes nobody */
    int poller[2];
    /* how long it watches (ns), adapted as QEMU's AioContext polls:
     * halved when nothing came, doubled up to uq-poll-us when work came
     * while it watched or soon after it slept, so a host too busy to
     * run the guest promptly stops paying for a watcher */
    int64_t poll_ns[2];
    QemuCond poll_cond;         /* the wait poller: a kick */
    QemuThread poll_thread;
    bool stop;
    NpuUq *q;                   /* uq_max_queues of them */
    uint32_t *db_queue;         /* per doorbell: queue index + 1, 0 none */
    unsigned nmapped;
    unsigned nwaiting;          /* atomic reads by npu_sem_kick */
    bool kick;                  /* a device write: re-read every wait */
    uint64_t seq;
    QTAILQ_HEAD(, NpuUq) ready[2][NPU_UQ_PRIOS];   /* [copy][prio] */
    QTAILQ_HEAD(, NpuUq) wait_list;
    /* timing=virtual: queues that became ready, listed by the scheduler */
    QTAILQ_HEAD(, NpuUq) vt_pend;
    /* engines (compute first), then the register side's and the poller's
     * MMU contexts */
    NpuRing eng[NPU_UQ_ENGINES + 2];
    int cur[NPU_UQ_ENGINES];    /* queue on engine e, -1 if none */
    uint64_t event_base;
    uint32_t event_size;
    uint32_t event_head;
    uint32_t event_tail;
    uint32_t event_status;
    uint64_t table_base;
    uint32_t table_entries;
    uint32_t cmd_status;
} NpuUqState;

/*
 * What the code the engines share tells the user queues (npu_uq.c), which
 * sit above it; npu_uq_realize sets the table.
 */
typedef struct NpuUqHooks {
    /* the device wrote memory: waiting queues look again */
    void (*kick)(NpuState *s);
    /* a SIGNAL packet found its memory signal armed */
    void (*signal_event)(NpuRing *r, uint64_t va);
    /* between two packets of an IB: must the queue on engine e leave it? */
    bool (*should_leave)(NpuRing *e);
} NpuUqHooks;

struct NpuState {
    PCIDevice parent_obj;

    MemoryRegion mmio;
    MemoryRegion doorbells;     /* BAR1, with user queues */
    MemoryRegion devmem;
    uint8_t *devmem_ptr;

    /* properties */
    uint32_t n_compute;
    uint32_t n_copy;
    uint32_t n_cus;
    uint64_t devmem_size;
    char *timing_mode;          /* property: on, off or virtual */
    bool timing;                /* the timing model is on */
    bool vtime;                 /* ... with the virtual device clock */
    uint32_t link_bw;
    uint32_t mem_bw;
    uint32_t cu_mops;
    uint32_t launch_ns;
    uint32_t launch_gap_ns;     /* a launch right behind another one */
    uint32_t copy_ns;
    uint32_t cu_threads;
    uint32_t cu_scratch_kib;
    uint32_t cu_clock_mhz;
    uint32_t l2_kib;            /* the units' shared L2 (timing only) */
    uint32_t l2_bw;
    uint32_t vt_settle_us;       /* timing=virtual: host quiet time */
    uint32_t vt_cu_idle_delay_us; /* debug: widens the units' idle step */
    uint32_t signal_delay_us;   /* debug: widens a signal's two halves */
    uint32_t wb_delay_us;       /* debug: widens the poller's wb write */
    uint32_t uq_n_compute;      /* user-queue engines */
    uint32_t uq_n_copy;
    uint32_t uq_max_queues;
    uint32_t uq_db_pages;
    uint32_t uq_timeslice_us;
    uint32_t uq_poll_us;        /* an engine left idle watches for work */
    uint32_t uq_doorbell_poll_us; /* NPU_WAIT_DOORBELL waits' own looks */
    uint32_t uq_switch_ns;

    unsigned nrings;
    unsigned nvec;              /* MSI-X vectors: nrings + 1 (+ 1 with UQ) */
    NpuRing rings[NPU_MAX_RINGS];

    /* global registers */
    QemuMutex reg_lock;         /* err_pending, clock latch, scratch */
    uint32_t err_pending;
    uint32_t scratch;
    uint32_t clock_hi_latch;
    int64_t clock_base;         /* npu_time() at reset */

    /*
     * Compute units and the block dispatcher shared by the compute rings
     * (npu_cu.c): cu_lock protects the launch queue and the units' state,
     * cu_cond signals a launch queued, cancelled or finished.
     */
    QemuMutex cu_lock;
    QemuCond cu_cond;
    QemuThread cu_thread;
    NpuCuState *cu;

    NpuVtime vt;
    NpuUqState uq;
    const NpuUqHooks *uq_hooks;

    /*
     * SEM_WAIT (npu_engine.c): a ring that has waited a while sleeps on
     * sem_cond; every command that completes bumps sem_gen and wakes it
     * if sem_waiters says someone waits (a write by the device itself may
     * be what it waits for). sem_gen and sem_waiters are atomics.
     */
    /*
     * SIGNALs of all engines: a NPU_SIGNAL_MAX read-compare-write is
     * atomic against the others' writes to the same signal. Striped by
     * the signal's host address (npu_exec_signal), so that engines
     * signalling different signals do not serialise.
     */
    QemuMutex signal_lock[NPU_SIGNAL_LOCKS];
    QemuMutex sem_lock;
    QemuCond sem_cond;
    uint32_t sem_gen;
    int sem_waiters;

    /* interrupts raised by engine threads, delivered by a bottom half */
    QEMUBH *irq_bh;
    uint32_t irq_pending;       /* atomic bitmap of vectors */

    /*
     * VM run state (npu.c, npu_vm_state_change): while the VM is stopped
     * engines park before any guest-memory access, between packets and
     * between compute-unit quanta. paused, dma_active and resetting are
     * atomics; run_cond (with run_lock) signals resume, a reset, or the
     * end of the last access.
     */
    QemuMutex run_lock;
    QemuCond run_cond;
    bool paused;
    int dma_active;             /* guest-memory accesses under way */
    /*
     * Bus-master DMA goes straight to system memory (no IOMMU): a
     * translation then lasts as long as its flatview (npu_dma_get).
     */
    bool dma_direct;
    int resetting;              /* resets (and unrealize) under way */
    /* MMU_INVALIDATE writes waiting for a ring (atomic): units let go */
    int mmu_waiters;
    /* MMU_INVALIDATE writes started and completed (atomic; BQL orders) */
    uint32_t mmu_inval_started;
    uint32_t mmu_inval_done;
    VMChangeStateEntry *vmse;
    /*
     * Migration (npu.c, "Migration"): a stop for a snapshot or migration
     * first lets every ring reach a command boundary (draining, atomic);
     * the vmstate carries the clock, the units' counters and where each
     * ring's INDIRECT resumes in these copies.
     */
    int draining;
    uint64_t mig_clock;
    uint64_t mig_cu_cycle;
    uint64_t mig_cu_busy_cycles[NPU_MAX_CUS];
    uint64_t mig_cu_instrs[NPU_MAX_CUS];
    uint64_t mig_cu_fixed_ns[NPU_MAX_CUS];
    uint32_t mig_ib_resume[NPU_MAX_RINGS];
};

/*
 * Loaded clocks and counters must be below this (npu_post_load): 2^62 ns is
 * 146 years, and the cycle model adds quanta to the cycle without wrapping.
 */
#define NPU_MIG_MAX_COUNT (1ull << 62)

/*
 * SEM_WAIT on a semaphore the host may write looks again after a quarter
 * of the (wall) time it has waited, 10 us .. 10 ms (npu_engine.c).
 */
#define NPU_SEM_POLL_MIN_NS     10000
#define NPU_SEM_POLL_MAX_NS     10000000

static inline int64_t npu_sem_poll_ns(int64_t waited_ns)
{
    return MIN(MAX(waited_ns / 4, NPU_SEM_POLL_MIN_NS), NPU_SEM_POLL_MAX_NS);
}

/*
 * A semaphore word v (the low 32 bits of it for SEM_WAIT, compared
 * wrap-safe; all 64 for WAIT_MEM64, unsigned) satisfies a wait for value.
 */
static inline bool npu_sem_passed(uint64_t v, uint64_t value, bool wide)
{
    return wide ? v >= value : npu_seqno_passed((uint32_t)v, (uint32_t)value);
}

/* A modelled duration this long never ends by itself (TEST_HANG). */
#define NPU_FOREVER_NS  (INT64_MAX / 8)

/* The longest packet the device reads whole (LAUNCH_CODE, 16 arguments). */
#define NPU_PKT_MAX_DW      (NPU_PKT_LAUNCH_CODE_DW + 2 * NPU_CODE_MAX_ARGS)

/* One command's accounting, filled in while it runs. */
typedef struct NpuJob {
    NpuRing *ring;
    /* a user queue's unsatisfied wait yields its engine: what it waits for */
    bool yield;
    bool preempt;               /* a user queue leaves its engine in an IB */
    bool wait_wide;
    bool wait_doorbell;         /* WAIT_MEM64's NPU_WAIT_DOORBELL */
    uint64_t wait_addr;
    uint64_t wait_value;
    uint64_t host_bytes;        /* bytes moved over the host link */
    uint64_t dev_bytes;         /* bytes moved in device memory */
    uint64_t ops;
    int64_t t0;                 /* device time the packet started, or 0 */
    bool t0_at_end;             /* ... the end of the packet before it */
    /*
     * Device time read by the caller just before the packet (0: none),
     * its start; at_end: the end of the packet right before it. Used by
     * the next npu_exec_packet, which clears them: one clock read less.
     */
    int64_t now;
    bool now_at_end;
    /*
     * Device time the packet's work ended, if its caller knows it (0:
     * npu_complete reads the clock): the host work after it, such as
     * freeing a diagnostic kernel's units, is not the packet's time.
     */
    int64_t work_end;
} NpuJob;

/* The device has user queues (npu_uq.c). */
static inline bool npu_uq_present(NpuState *s)
{
    return s->uq_n_compute + s->uq_n_copy > 0;
}

/* npu_base.c */
int64_t npu_time(void);
uint64_t npu_ring_busy(NpuRing *r);
uint64_t npu_clock(NpuState *s);
uint64_t npu_clock_at(NpuState *s, int64_t t);
void npu_host_touch(NpuState *s);
void npu_raise(NpuState *s, unsigned vector);
bool npu_aborted(NpuRing *r);
void npu_run_kick(NpuState *s);
void npu_park(NpuState *s, NpuRing *r);
void npu_dma_set_noblock(bool on);
bool npu_sleep_until(NpuRing *r, int64_t deadline);
void npu_nap_until(NpuState *s, int64_t deadline, NpuRing *r);
void npu_engine_thread_init(void);
void npu_engine_thread_idle(void);
void npu_sem_kick(NpuState *s);
uint64_t npu_dma_map(NpuState *s, MemoryRegionCache *cache, uint64_t pa,
                     uint64_t len, bool is_write);
void npu_dma_unmap(NpuState *s, MemoryRegionCache *cache, uint64_t written);

/* A mapping of guest RAM for one access (npu_dma_get .. npu_dma_put). */
typedef struct NpuDma {
    uint8_t *ptr;               /* host pointer of the first byte */
    MemoryRegionCache *map;     /* the thread's cached mapping, or &own */
    uint64_t off;               /* of ptr inside *map */
    MemoryRegionCache own;      /* a mapping made for this access */
} NpuDma;

uint64_t npu_dma_get(NpuState *s, NpuDma *d, uint64_t pa, uint64_t len,
                     bool is_write);
void npu_dma_put(NpuState *s, NpuDma *d, uint64_t written);
MemTxResult npu_phys_rw(NpuState *s, uint64_t pa, void *buf, uint64_t len,
                        bool is_write);

/*
 * job's next packet runs right behind one that ended at end (device
 * time; 0: not known): it starts there, and the host work in between is
 * inside its time.
 */
static inline void npu_job_behind(NpuJob *job, int64_t end)
{
    if (end) {
        job->now = end;
        job->now_at_end = true;
    }
}

/* When the job's packet started: read once per packet, not per use. */
static inline int64_t npu_job_t0(NpuJob *job)
{
    return job->t0 ? job->t0 : npu_time();
}

#endif
