/*
 * npu - virtual NPU PCI device: compute units and the block dispatcher.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * One thread ("npu-cu") runs every compute unit. The compute rings queue
 * launches: LAUNCH_CODE (RISC-V blocks of threads) and LAUNCH (a built-in
 * kernel, computed by the ring thread, whose blocks then hold whole units
 * for their modelled time). The dispatcher places blocks on units as thread
 * slots and scratchpad free up, in launch order: a launch's blocks are all
 * placed before the next launch's, and blocks of several launches (rings,
 * contexts) share a unit.
 *
 * Units advance in lockstep quanta of NPU_CU_QUANTUM cycles. Within a
 * quantum each unit runs its cycle model: in-order, fine-grained
 * multithreaded, one instruction per cycle from the first ready thread
 * after the last one that issued; a per-thread scoreboard holds the cycle
 * at which each register's value is ready. Every thread-cycle of a resident
 * thread is charged to one stall reason (enum npu_stall). The result is a
 * function of the launches and their inputs only, so cycle counts repeat
 * exactly. With the timing model on, cycles are paced to wall time at
 * cu-clock-mhz (the units never run ahead of their modelled time).
 *
 * Locking: cu_lock protects the incoming launches and the launches'
 * cancel and finished flags, which the ring threads use. The queue, the
 * units, the
 * blocks and the rest of each launch belong to the npu-cu thread, which
 * runs a quantum without the lock (so rings can queue and cancel
 * meanwhile); the per-unit counters read by MMIO are atomics. The thread
 * never takes a ring's lock: a launch carries its outcome back to the
 * waiting ring thread. During a quantum the thread uses the MMU state of
 * every ring with a block on a unit, resident at the quantum's start or
 * placed by a refill in it; that ring's thread is blocked in
 * npu_cu_submit_wait() meanwhile, and MMU_INVALIDATE waits for the quantum
 * to end (npu_mmu_access_begin/end, npu_cu_quantum_access) or to let
 * go (npu_cu_yield).
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/host-utils.h"
#include "qemu/queue.h"
#include "qemu/rcu.h"
#include "qemu/timer.h"
#include "npu.h"
#include "trace.h"
#include "npu_rv.h"

#define NPU_CU_QUANTUM      4096        /* cycles between unit switches */
#define NPU_CODE_PAGES      16          /* decoded code pages per launch */
#define NPU_CODE_WAYS       2           /* ... in sets of this many */
#define NPU_DTLB            64          /* data translations per launch */
#define NPU_MEM_QUEUE       8           /* memory requests in flight/unit */
#define NPU_SECTOR          32          /* bytes per memory transaction */
#define NPU_PACE_SLACK_NS   1000000     /* re-anchor when this far behind */
#define NPU_NREGS           64          /* x0-x31, f0-f31 */

/* Latency table in cycles (Documentation/hw/npu.rst, "Cycle model"). */
enum {
    NPU_LAT_ALU = 1,
    NPU_LAT_BRANCH = 2,         /* bubble after a taken branch or jump */
    NPU_LAT_MUL = 3,
    NPU_LAT_DIV = 16,           /* not pipelined */
    NPU_LAT_FP = 4,
    NPU_LAT_FDIV = 16,          /* not pipelined */
    NPU_LAT_LOCAL = 4,          /* scratchpad, stack, params */
    NPU_LAT_DEVICE = 120,
    NPU_LAT_HOST = 800,
    NPU_LAT_AMO = 4,            /* added to the memory latency */
};

typedef struct NpuLaunch NpuLaunch;

/* A decoded instruction and the registers its issue waits for. */
typedef struct NpuCuInsn {
    NpuRvInsn d;                /* d.cls == NPU_RV_NCLASSES: illegal */
    uint8_t regs[4];            /* scoreboard indices: sources, then rd */
    uint8_t nregs;
    /* for npu_cu_issue_simple: */
    uint8_t fast;               /* NPU_CU_FAST_*, 0: not a simple class */
    uint8_t rdi;                /* scoreboard index of rd, NPU_NREGS: none */
    uint8_t lat;                /* rd's latency */
} NpuCuInsn;

#define NPU_CU_FAST         0x01    /* a simple class (npu_cu_is_simple) */
#define NPU_CU_FAST_DIV     0x02    /* ... that uses the integer divider */
#define NPU_CU_FAST_FDIV    0x04    /* ... the FP divide/sqrt unit */
#define NPU_CU_FAST_LOCKSTEP 0x08   /* ... fit for npu_unit_lockstep */

/*
 * A superblock: the decoded instructions from pc up to and including the
 * first branch or jump, or up to the first instruction of another class
 * than the simple ones (npu_cu_is_simple), the page's end or
 * NPU_TB_INSNS; or a single instruction of another class. The one-thread
 * loop runs a simple superblock whole when its inputs are ready (its
 * timing computed once, when it was built: npu_tb_time), else instruction
 * by instruction. Each launch keeps its own, until its translations are
 * dropped (npu_launch_flush); chained to their successors.
 */
#define NPU_TB_INSNS        64
#define NPU_TB_HASH         1024        /* superblocks by pc, per launch */
#define NPU_TB_LIMIT        4096        /* ... built before all are dropped */

/*
 * An instruction of a simple superblock as npu_tb_chain reads it: its
 * handler (NPU_XOP_*: integer operations, branches and the FP operations
 * of NPU_RV_FP_FAST_OPS inline, the rest through npu_rv_exec) and
 * operands.
 */
#define NPU_TB_BRANCHES(X) X(BEQ) X(BNE) X(BLT) X(BGE) X(BLTU) X(BGEU)

enum {
    NPU_XOP_OTHER,              /* npu_rv_exec */
    NPU_XOP_NOP,                /* an integer result for x0 */
    NPU_XOP_END,                /* after the last instruction */
    NPU_XOP_JAL,
    NPU_XOP_JALR,
#define NPU_XOP_ENUM(name, ...) NPU_XOP_##name,
    NPU_RV_INT_OPS(NPU_XOP_ENUM)
    NPU_RV_FP_FAST_OPS(NPU_XOP_ENUM)
    NPU_TB_BRANCHES(NPU_XOP_ENUM)
#undef NPU_XOP_ENUM
    NPU_XOPS
};

typedef struct NpuTbOp {
    const void *handler;        /* npu_tb_chain's label for xop */
    /* branches and JAL: target - NpuTb.pc; FP: the rounding field */
    int32_t imm;
    uint8_t rd, rs1, rs2, rs3;
} NpuTbOp;

static const void *const *npu_tb_handler;      /* by NPU_XOP_* */

typedef struct NpuTb NpuTb;
typedef struct NpuSingle NpuSingle;
typedef struct NpuTbRun NpuTbRun;
static bool npu_tb_chain(NpuSingle *r, NpuTb *tb, NpuTbRun *run);

struct NpuTb {
    uint64_t pc;
    NpuTb *succ[2];             /* next: fall-through, elsewhere (or NULL) */
    NpuTb *all_next;            /* the launch's list of superblocks */
    uint16_t n;                 /* instructions */
    bool simple;                /* of simple classes (else n == 1) */
    /*
     * The timing of a simple superblock entered at cycle c0 with every
     * register it names ready, no branch bubble and the dividers it uses
     * free by c0 (in[], div, fdiv): issue of the last instruction at
     * c0 + cycles - 1; the thread's stall cycles before the issues by
     * reason (waits[]); its register results ready at c0 + out[].off.
     */
    uint16_t cycles;
    uint16_t wait_total;
    uint32_t whole;             /* cycles if simple, else UINT32_MAX */
    bool divs;                  /* div || fdiv */
    uint8_t nin, nout, nwaits;
    uint16_t out_max;           /* the latest out[].off */
    bool div, fdiv;
    uint16_t div_off, fdiv_off;
    uint8_t in[NPU_NREGS];
    struct {
        uint8_t reg, why;
        uint16_t off;
    } out[NPU_NREGS];
    struct {
        uint8_t why;
        uint16_t n;
    } waits[NPU_STALL_COUNT];
    NpuTbOp *ops;               /* simple: n + 1, the last NPU_XOP_END */
    /*
     * npu_unit_lockstep: every instruction fit for it (ls_ok), and the
     * cycles its instructions wait for the one before inside it (WAIT)
     */
    bool ls_ok;
    uint16_t ls_wait;
    /* whole runs in the current npu_tb_chain, not yet in the statistics */
    uint32_t runs;
    NpuTb *ran_next;            /* NpuChain.ran */
    NpuCuInsn insn[];
};

typedef struct NpuBlock {
    NpuLaunch *l;
    uint32_t idx;               /* linear block index */
    uint32_t bx, by, bz;
    uint8_t *scratch;
    uint32_t live;              /* threads that have not ended */
    uint32_t at_barrier;
    int64_t fixed_end;          /* fixed-function block: wall deadline */
    int64_t fixed_start;
    bool direct;                /* placed and freed by its ring's thread */
    uint64_t fixed_end_cycle;   /* ... in cycles (timing=virtual) */
} NpuBlock;

typedef struct NpuSlot {
    NpuBlock *blk;              /* NULL: free */
    NpuLaunch *l;               /* blk->l */
    bool live;                  /* running, not ended */
    bool barrier;               /* waiting at the block barrier */
    uint32_t tid;
    uint32_t tx, ty, tz;
    uint8_t *stack;
    NpuRvHart h;
    /* where h's LR reservation is held: npu_cu_vm_rw's physical key */
    uint64_t reserved_phys;
    uint64_t ready[NPU_NREGS];  /* cycle the register's value is ready */
    uint64_t ready_max;         /* no register is ready later than this */
    uint8_t why[NPU_NREGS];     /* stall reason while waiting for it */
    uint64_t issue_at;          /* no issue before (branch bubble) */
    uint8_t stall;              /* reason of the current cycle */
    /* npu_unit_run_events: waits until wake, charged from since */
    uint64_t wake;
    uint64_t since;
    uint8_t wait_cls;           /* class of the instruction it waits to issue */
    /* the decoded instruction at d_pc, valid while code_epoch is d_epoch */
    const NpuCuInsn *d;
    uint64_t d_pc;
    uint64_t d_epoch;
    uint32_t d_err;
    /* npu_unit_run_single: the superblock at pc, valid in tb_epoch */
    NpuTb *tb;
    uint64_t tb_epoch;
} NpuSlot;

typedef struct NpuUnit {
    NpuSlot *slot;
    uint32_t free_slots;
    uint32_t free_scratch;
    NpuBlock **blocks;          /* resident blocks */
    uint32_t nblocks;
    uint32_t ncode;             /* of which LAUNCH_CODE blocks */
    uint16_t *live;             /* slots of running threads, in order */
    uint32_t nlive;
    NpuLaunch **launches;       /* LAUNCH_CODE launches with blocks here */
    uint32_t *nblocks_of;       /* ... and how many blocks each */
    uint32_t nlaunches;
    uint64_t cycle;
    /* no block since this cycle of the quantum (UINT64_MAX: has one) */
    uint64_t idle_at;
    uint64_t div_free;          /* integer divider free at */
    uint64_t fdiv_free;         /* FP divide/sqrt unit free at */
    uint64_t mem_done[NPU_MEM_QUEUE];
    uint64_t dev_free;          /* device memory share free at, 1/256 cy */
    uint64_t host_free;         /* link share free at, 1/256 cycle */
    uint32_t rr;                /* position in live[] that issued last */
    /* npu_unit_run_events: bit k set when live[k] can issue */
    uint64_t ready_mask;
    uint64_t next_wake;         /* no waiting thread wakes before */
    bool lazy;                  /* live threads charged up to their since */
    uint64_t lazy_at;           /* ... a thread leaving now is charged to */
    bool resched;               /* a barrier released threads */
    uint64_t mem_reqs;          /* memory requests queued (mem_done changed) */
    /* counters, read by MMIO without the npu-cu thread: atomics */
    uint64_t busy_cycles;       /* cycles with a LAUNCH_CODE block */
    uint64_t instrs;
    uint64_t fixed_ns;          /* wall time held by fixed blocks */
} NpuUnit;

typedef struct NpuCodePage {
    uint64_t vpn;               /* UINT64_MAX: empty */
    uint64_t filled;            /* the launch's code_fills when decoded */
    NpuCuInsn *insn;            /* 1024 decoded words */
} NpuCodePage;

typedef struct NpuDtlb {
    uint64_t vpn;               /* UINT64_MAX: empty */
    uint64_t pte;
    uint8_t *host;              /* a device-memory page: where it is */
} NpuDtlb;

struct NpuLaunch {
    NpuRing *ring;
    bool fixed;                 /* built-in kernel: whole-unit blocks */
    int64_t fixed_ns;

    uint32_t flags;
    uint64_t entry;
    uint32_t grid[3];
    uint32_t bdim[3];
    uint32_t nthreads;
    uint32_t scratch;
    uint32_t stack;
    uint64_t stats_va;
    uint64_t trace_va;
    uint32_t trace_bytes;
    uint32_t sample_period;
    uint32_t trace_block;
    uint64_t printf_va;
    uint32_t printf_bytes;
    uint32_t nargs;
    uint8_t params[NPU_CODE_MAX_ARGS * 8];

    uint64_t nblocks;
    uint64_t next_block;        /* next to place */
    uint64_t done_blocks;
    uint32_t resident;

    bool cancel;                /* ring reset: drop the blocks */
    bool failed;
    bool finished;              /* the ring thread may go on */
    NpuErr err;

    uint32_t gen;               /* ring->tlb_gen the caches are valid for */
    uint64_t code_epoch;        /* changes whenever code[] changes */
    uint64_t code_fills;        /* pages decoded into code[] */
    NpuCodePage code[NPU_CODE_PAGES];
    NpuDtlb dtlb[NPU_DTLB];
    NpuTb **tb_hash;            /* NPU_TB_HASH entries, on first use */
    NpuTb *tb_all;              /* every superblock, for freeing */
    uint32_t ntb;
    uint64_t tb_epoch;          /* changes whenever superblocks are freed */

    bool started;
    uint64_t first_cycle;
    uint64_t last_cycle;
    struct npu_launch_stats st;
    uint32_t printf_used;

    uint64_t vt_submit;         /* timing=virtual: ring's present */
    QTAILQ_ENTRY(NpuLaunch) next;
};

struct NpuCuState {
    NpuUnit unit[NPU_MAX_CUS];
    QTAILQ_HEAD(, NpuLaunch) incoming;  /* queued by rings, cu_lock */
    QTAILQ_HEAD(, NpuLaunch) queue;     /* the npu-cu thread's */
    uint64_t cycle;             /* start of the current quantum */
    /* timing=virtual: when the launches that ended this quantum ended */
    uint64_t ended_at;
    bool ended_exact;           /* none failed or was cancelled */
    uint32_t active;            /* units with LAUNCH_CODE blocks */
    uint32_t nreserved;         /* threads holding an LR reservation */
    /*
     * While a quantum runs (in_quantum), the rings whose MMU access the
     * npu-cu thread holds for it: every ring with a block on a unit.
     */
    bool in_quantum;
    uint32_t naccess;
    NpuRing *access[NPU_MAX_RINGS + NPU_UQ_ENGINES];
    bool cancel_pending;        /* a launch was cancelled (atomic) */
    bool stop;
    bool anchored;
    int64_t wall_anchor;
    uint64_t cycle_anchor;
};

/* What one executing instruction did, filled by the memory callbacks. */
typedef struct NpuExec {
    NpuState *s;
    NpuUnit *u;
    NpuSlot *t;
    NpuLaunch *l;
    uint64_t cycle;
    int space;                  /* enum npu_space of the access, or -1 */
    uint64_t phys;              /* physical key of the last access */
    bool barrier;
} NpuExec;

static int64_t npu_now(void)
{
    return npu_time();
}

/* Unit cycles and device ns (timing=virtual: exact, cycles from 0). */
static uint64_t npu_c2ns(NpuState *s, uint64_t c)
{
    return muldiv64(c, 1000, s->cu_clock_mhz);
}

static uint64_t npu_ns2c(NpuState *s, uint64_t ns, bool up)
{
    uint64_t c = muldiv64(ns, s->cu_clock_mhz, 1000);

    return up && npu_c2ns(s, c) < ns ? c + 1 : c;
}

#define NPU_FIXED_FOREVER   NPU_FOREVER_NS

static void npu_cu_fail(NpuLaunch *l, uint32_t code, uint64_t addr,
                        const NpuSlot *t, unsigned unit)
{
    if (l->failed) {
        return;
    }
    trace_npu_cu_fault(l->ring->idx, code, addr, t ? t->h.pc : 0);
    l->failed = true;
    l->err.code = code;
    l->err.addr = addr;
    if (t) {
        l->err.cu = true;
        l->err.pc = t->h.pc;
        l->err.block = t->blk->idx;
        l->err.thread = t->tid;
        l->err.unit = unit;
    }
}

/*
 * Memory through the launch's context
 */

/* Free l's superblocks (none may be in use). */
static void npu_tb_free_all(NpuLaunch *l)
{
    NpuTb *tb, *nx;

    for (tb = l->tb_all; tb; tb = nx) {
        nx = tb->all_next;
        g_free(tb);
    }
    l->tb_all = NULL;
    l->ntb = 0;
    l->tb_epoch++;
    if (l->tb_hash) {
        memset(l->tb_hash, 0, NPU_TB_HASH * sizeof(l->tb_hash[0]));
    }
}

static void npu_launch_flush(NpuLaunch *l)
{
    unsigned i;

    npu_tb_free_all(l);

    for (i = 0; i < NPU_CODE_PAGES; i++) {
        l->code[i].vpn = UINT64_MAX;
        l->code[i].filled = 0;
    }
    l->code_epoch++;
    for (i = 0; i < NPU_DTLB; i++) {
        l->dtlb[i].vpn = UINT64_MAX;
    }
}

static uint32_t npu_cu_translate(NpuLaunch *l, uint64_t va, bool is_write,
                                 uint64_t *pte)
{
    uint64_t vpn = va >> NPU_PAGE_SHIFT;
    NpuDtlb *e = &l->dtlb[vpn % NPU_DTLB];
    NpuErr err = { 0 };

    if (e->vpn != vpn) {
        if (!npu_mmu_translate(l->ring, va, false, &e->pte, &err)) {
            e->vpn = UINT64_MAX;
            return err.code;
        }
        e->vpn = vpn;
        e->host = e->pte & NPU_PTE_DEVMEM ?
                  l->ring->s->devmem_ptr + (e->pte & NPU_PTE_ADDR_MASK) :
                  NULL;
    }
    if (is_write && !(e->pte & NPU_PTE_WRITE)) {
        return NPU_ERR_MMU_WRITE;
    }
    *pte = e->pte;
    return 0;
}

/*
 * Physical key of a byte, for LR reservations: its guest-physical address,
 * its device-memory offset with NPU_PHYS_DEVMEM set, or for the scratchpad
 * and stack windows its host address with NPU_PHYS_LOCAL set (separate
 * address spaces; host addresses are below 2^62). NPU_PHYS_NONE matches
 * no 8-byte granule of any.
 */
#define NPU_PHYS_DEVMEM     (1ull << 63)
#define NPU_PHYS_LOCAL      (1ull << 62)
#define NPU_PHYS_NONE       UINT64_MAX

/*
 * Access len bytes (within one page) at va; *space gets where they were,
 * *phys (if not NULL) the physical key of the first byte.
 */
static uint32_t npu_cu_vm_rw(NpuState *s, NpuLaunch *l, uint64_t va,
                             void *buf, unsigned len, bool is_write,
                             int *space, uint64_t *phys)
{
    uint64_t pte, pa;
    uint32_t code = npu_cu_translate(l, va, is_write, &pte);

    if (code) {
        return code;
    }
    pa = (pte & NPU_PTE_ADDR_MASK) + (va & (NPU_PAGE_SIZE - 1));
    if (phys) {
        *phys = pte & NPU_PTE_DEVMEM ? pa | NPU_PHYS_DEVMEM : pa;
    }
    if (pte & NPU_PTE_DEVMEM) {
        if (is_write) {
            memcpy(s->devmem_ptr + pa, buf, len);
        } else {
            memcpy(buf, s->devmem_ptr + pa, len);
        }
        *space = NPU_SPACE_DEVICE;
        return 0;
    }
    if (npu_phys_rw(s, pa, buf, len, is_write) != MEMTX_OK) {
        return NPU_ERR_BAD_DMA;
    }
    *space = NPU_SPACE_HOST;
    return 0;
}

/* Larger transfers for the device's own records (stats, traces, printf). */
static bool npu_cu_write(NpuState *s, NpuLaunch *l, uint64_t va,
                         const void *buf, uint64_t len)
{
    const uint8_t *p = buf;
    int space;

    while (len) {
        unsigned n = MIN(len, NPU_PAGE_SIZE - (va & (NPU_PAGE_SIZE - 1)));
        uint32_t code = npu_cu_vm_rw(s, l, va, (void *)p, n, true, &space,
                                     NULL);

        if (code) {
            npu_cu_fail(l, code, va, NULL, 0);
            return false;
        }
        va += n;
        p += n;
        len -= n;
    }
    return true;
}

/* The local windows: scratchpad, stack, params. NULL if va is not in one. */
static uint8_t *npu_cu_local(NpuExec *x, uint64_t va, unsigned size,
                             bool is_write, uint32_t *code, int *space)
{
    uint64_t win = va & ~(NPU_LOCAL_WINDOW - 1), off = va - win;
    uint64_t limit;
    uint8_t *base;

    *code = 0;
    if (win == NPU_LOCAL_SCRATCH) {
        base = x->t->blk->scratch;
        limit = x->l->scratch;
        *space = NPU_SPACE_SCRATCH;
    } else if (win == NPU_LOCAL_STACK) {
        base = x->t->stack;
        limit = x->l->stack;
        *space = NPU_SPACE_STACK;
    } else if (win == NPU_LOCAL_PARAMS && !is_write) {
        base = x->l->params;
        limit = x->l->nargs * 8;
        *space = NPU_SPACE_STACK;
    } else {
        *code = win == NPU_LOCAL_PARAMS ? NPU_ERR_CU_LOCAL_RANGE
                                        : NPU_ERR_MMU_FAULT;
        return NULL;
    }
    if (off + size > limit) {
        *code = NPU_ERR_CU_LOCAL_RANGE;
        return NULL;
    }
    return base + off;
}

/*
 * A store to the physical key phys breaks the LR reservations other
 * threads hold on its 8-byte granule: any unit, any launch, any context
 * that maps the same memory, through whatever VA. A store to the same VA
 * in another context (another page) does not.
 */
static void npu_cu_break_reservations(NpuExec *x, uint64_t phys)
{
    NpuState *s = x->s;
    unsigned i, k;

    for (i = 0; i < s->n_cus; i++) {
        NpuUnit *u = &s->cu->unit[i];

        for (k = 0; k < u->nlive; k++) {
            NpuSlot *t = &u->slot[u->live[k]];

            if (t != x->t && t->h.reserved &&
                !((t->reserved_phys ^ phys) & ~7ull)) {
                t->h.reserved = false;
                s->cu->nreserved--;
            }
        }
    }
}

static uint32_t npu_cu_access(NpuExec *x, uint64_t va, unsigned size,
                              uint64_t *val, bool is_write)
{
    uint64_t vpn = va >> NPU_PAGE_SHIFT;
    const NpuDtlb *e = &x->l->dtlb[vpn % NPU_DTLB];
    uint8_t buf[8];
    uint32_t code;

    /*
     * A device-memory page the launch's translation cache holds: a
     * compare and an add (the access is within the page: aligned).
     */
    if (e->vpn == vpn && e->host &&
        (!is_write || (e->pte & NPU_PTE_WRITE)) && !x->s->cu->nreserved) {
        uint64_t off = va & (NPU_PAGE_SIZE - 1);

        x->space = NPU_SPACE_DEVICE;
        x->phys = ((e->pte & NPU_PTE_ADDR_MASK) + off) | NPU_PHYS_DEVMEM;
        if (is_write) {
            stn_le_p(e->host + off, size, *val);
            x->l->st.bytes_written[NPU_SPACE_DEVICE] += size;
        } else {
            *val = ldn_le_p(e->host + off, size);
            x->l->st.bytes_read[NPU_SPACE_DEVICE] += size;
        }
        return 0;
    }
    if (va >> NPU_VA_BITS) {
        uint8_t *p = npu_cu_local(x, va, size, is_write, &code, &x->space);

        if (!p) {
            return code;
        }
        x->phys = NPU_PHYS_LOCAL | (uintptr_t)p;
        if (is_write) {
            stn_le_p(p, size, *val);
            if (x->s->cu->nreserved) {
                npu_cu_break_reservations(x, x->phys);
            }
        } else {
            *val = ldn_le_p(p, size);
        }
    } else if (is_write) {
        stn_le_p(buf, size, *val);
        code = npu_cu_vm_rw(x->s, x->l, va, buf, size, true, &x->space,
                            &x->phys);
        if (code) {
            return code;
        }
        if (x->s->cu->nreserved) {
            npu_cu_break_reservations(x, x->phys);
        }
    } else {
        code = npu_cu_vm_rw(x->s, x->l, va, buf, size, false, &x->space,
                            &x->phys);
        if (code) {
            return code;
        }
        *val = ldn_le_p(buf, size);
    }
    if (is_write) {
        x->l->st.bytes_written[x->space] += size;
    } else {
        x->l->st.bytes_read[x->space] += size;
    }
    return 0;
}

static uint32_t npu_cu_load(void *opaque, uint64_t va, unsigned size,
                            uint64_t *val)
{
    return npu_cu_access(opaque, va, size, val, false);
}

static uint32_t npu_cu_store(void *opaque, uint64_t va, unsigned size,
                             uint64_t val)
{
    return npu_cu_access(opaque, va, size, &val, true);
}

static bool npu_cu_csr_read(void *opaque, unsigned csr, uint64_t *val)
{
    NpuExec *x = opaque;
    NpuSlot *t = x->t;
    NpuLaunch *l = x->l;

    switch (csr) {
    case 0xc00:                 /* cycle */
        *val = x->cycle;
        return true;
    case 0xc01:                 /* time */
        *val = npu_clock(x->s);
        return true;
    case NPU_CSR_BLOCK_X:
        *val = t->blk->bx;
        return true;
    case NPU_CSR_BLOCK_Y:
        *val = t->blk->by;
        return true;
    case NPU_CSR_BLOCK_Z:
        *val = t->blk->bz;
        return true;
    case NPU_CSR_GRID_X:
    case NPU_CSR_GRID_Y:
    case NPU_CSR_GRID_Z:
        *val = l->grid[csr - NPU_CSR_GRID_X];
        return true;
    case NPU_CSR_THREAD_X:
        *val = t->tx;
        return true;
    case NPU_CSR_THREAD_Y:
        *val = t->ty;
        return true;
    case NPU_CSR_THREAD_Z:
        *val = t->tz;
        return true;
    case NPU_CSR_BDIM_X:
    case NPU_CSR_BDIM_Y:
    case NPU_CSR_BDIM_Z:
        *val = l->bdim[csr - NPU_CSR_BDIM_X];
        return true;
    case NPU_CSR_UNIT:
        *val = x->u - x->s->cu->unit;
        return true;
    case NPU_CSR_SLOT:
        *val = t - x->u->slot;
        return true;
    case NPU_CSR_SCRATCH_BYTES:
        *val = l->scratch;
        return true;
    case NPU_CSR_STACK_BYTES:
        *val = l->stack;
        return true;
    case NPU_CSR_NARGS:
        *val = l->nargs;
        return true;
    default:
        return false;
    }
}

/* NPU_CSR_PRINTF: append the thread's record to the launch's buffer. */
static uint32_t npu_cu_printf(NpuExec *x, uint64_t va)
{
    NpuLaunch *l = x->l;
    uint8_t rec[sizeof(struct npu_printf_record) + NPU_PRINTF_MAX_RECORD];
    struct npu_printf_record *h = (void *)rec;
    uint64_t v, off;
    uint32_t bytes, code, i;

    if (va & 7) {
        return NPU_ERR_CU_MISALIGNED;
    }
    code = npu_cu_load(x, va, 4, &v);
    if (code) {
        return code;
    }
    bytes = v;
    if (bytes < 8 || bytes > NPU_PRINTF_MAX_RECORD || bytes % 8) {
        return NPU_ERR_BAD_ARGS;
    }
    for (i = 0; i < bytes; i += 8) {
        code = npu_cu_load(x, va + i, 8, &v);
        if (code) {
            return code;
        }
        stq_le_p(rec + sizeof(*h) + i, v);
    }
    if (!l->printf_va) {
        return 0;
    }
    off = sizeof(struct npu_printf_header) + l->printf_used;
    if (off + sizeof(*h) + bytes > l->printf_bytes) {
        l->st.printf_lost++;
        return 0;
    }
    h->bytes = cpu_to_le32(sizeof(*h) + bytes);
    h->block = cpu_to_le32(x->t->blk->idx);
    h->thread = cpu_to_le32(x->t->tid);
    h->reserved = 0;
    if (!npu_cu_write(x->s, l, l->printf_va + off, rec, sizeof(*h) + bytes)) {
        return l->err.code;
    }
    l->printf_used += sizeof(*h) + bytes;
    l->st.printf_records++;
    return 0;
}

static uint32_t npu_cu_csr_write(void *opaque, unsigned csr, uint64_t val)
{
    NpuExec *x = opaque;

    switch (csr) {
    case NPU_CSR_BARRIER:
        x->barrier = true;
        return 0;
    case NPU_CSR_PRINTF:
        return npu_cu_printf(x, val);
    default:
        return NPU_ERR_CU_ILLEGAL;
    }
}

static const NpuRvOps npu_cu_ops = {
    .load = npu_cu_load,
    .store = npu_cu_store,
    .csr_read = npu_cu_csr_read,
    .csr_write = npu_cu_csr_write,
};

static unsigned npu_reg_index(bool fp, unsigned r)
{
    return fp ? 32 + r : r;
}

/*
 * The registers d's issue waits for (in order: a write waits for an
 * older write of the same register too).
 */
static void npu_cu_deps(NpuCuInsn *ci)
{
    const NpuRvInsn *d = &ci->d;
    unsigned nr = 0;

    if (d->flags & NPU_RV_RS1_X) {
        ci->regs[nr++] = npu_reg_index(false, d->rs1);
    } else if (d->flags & NPU_RV_RS1_F) {
        ci->regs[nr++] = npu_reg_index(true, d->rs1);
    }
    if (d->flags & NPU_RV_RS2_X) {
        ci->regs[nr++] = npu_reg_index(false, d->rs2);
    } else if (d->flags & NPU_RV_RS2_F) {
        ci->regs[nr++] = npu_reg_index(true, d->rs2);
    }
    if (d->flags & NPU_RV_RS3_F) {
        ci->regs[nr++] = npu_reg_index(true, d->rs3);
    }
    ci->rdi = NPU_NREGS;
    if (d->flags & NPU_RV_RD_X) {
        ci->rdi = npu_reg_index(false, d->rd);
        ci->regs[nr++] = ci->rdi;
    } else if (d->flags & NPU_RV_RD_F) {
        ci->rdi = npu_reg_index(true, d->rd);
        ci->regs[nr++] = ci->rdi;
    }
    ci->nregs = nr;
    /* each class's latency, for both issue paths */
    ci->fast = NPU_CU_FAST;
    ci->lat = NPU_LAT_ALU;
    switch (d->cls) {
    case NPU_RV_ALU:
    case NPU_RV_BRANCH:
    case NPU_RV_JUMP:
        break;
    case NPU_RV_MUL:
        ci->lat = NPU_LAT_MUL;
        break;
    case NPU_RV_DIV:
        ci->lat = NPU_LAT_DIV;
        ci->fast |= NPU_CU_FAST_DIV;
        break;
    case NPU_RV_FP:
        ci->lat = NPU_LAT_FP;
        break;
    case NPU_RV_FDIV:
        ci->lat = NPU_LAT_FDIV;
        ci->fast |= NPU_CU_FAST_FDIV;
        break;
    default:
        ci->fast = 0;
        break;
    }
}

/*
 * Can ci (at pc) issue in npu_unit_lockstep: a simple instruction that
 * uses no divider, whose result is ready within 4 cycles, and that can
 * neither fault nor end the thread (no JALR, no branch to a misaligned
 * target or NPU_EXIT_PC, no reserved rounding mode; a dynamic one is
 * checked when it runs)?
 */
static void npu_cu_lockstep_fit(NpuCuInsn *ci, uint64_t pc)
{
    const NpuRvInsn *d = &ci->d;

    if (ci->fast != NPU_CU_FAST || ci->lat > 4 || d->op == RV_JALR ||
        ((d->cls == NPU_RV_BRANCH || d->op == RV_JAL) &&
         ((d->imm & 3) || pc + d->imm == NPU_EXIT_PC)) ||
        (d->cls == NPU_RV_FP && (d->rm == 5 || d->rm == 6))) {
        return;
    }
    ci->fast |= NPU_CU_FAST_LOCKSTEP;
}

/*
 * The decoded-page cache is set-associative, so that the pages of two
 * threads' code that share a set (NPU_CODE_PAGES / NPU_CODE_WAYS pages
 * apart) do not evict each other on every instruction.
 */
static inline NpuCodePage *npu_code_set(NpuLaunch *l, uint64_t vpn)
{
    return &l->code[vpn % (NPU_CODE_PAGES / NPU_CODE_WAYS) * NPU_CODE_WAYS];
}

/* The entry holding page vpn, NULL if none. */
static inline NpuCodePage *npu_code_find(NpuLaunch *l, uint64_t vpn)
{
    NpuCodePage *set = npu_code_set(l, vpn);
    unsigned w;

    for (w = 0; w < NPU_CODE_WAYS; w++) {
        if (set[w].vpn == vpn) {
            return &set[w];
        }
    }
    return NULL;
}

/* Decoded instruction at pc, decoding its page on first use. */
static const NpuCuInsn *npu_cu_fetch(NpuState *s, NpuLaunch *l, uint64_t pc,
                                     uint32_t *code)
{
    uint64_t vpn = pc >> NPU_PAGE_SHIFT;
    NpuCodePage *cp = npu_code_find(l, vpn);
    uint32_t words[NPU_PAGE_SIZE / 4];
    int space;
    unsigned i;

    if (!cp) {
        NpuCodePage *set = npu_code_set(l, vpn);

        /* the way decoded longest ago (an empty one has filled 0) */
        cp = &set[0];
        for (i = 1; i < NPU_CODE_WAYS; i++) {
            if (set[i].filled < cp->filled) {
                cp = &set[i];
            }
        }
        if (pc >> NPU_VA_BITS) {
            *code = NPU_ERR_MMU_FAULT;
            return NULL;
        }
        *code = npu_cu_vm_rw(s, l, pc & ~(NPU_PAGE_SIZE - 1), words,
                             NPU_PAGE_SIZE, false, &space, NULL);
        if (*code) {
            return NULL;
        }
        if (!cp->insn) {
            cp->insn = g_new(NpuCuInsn, NPU_PAGE_SIZE / 4);
        }
        for (i = 0; i < NPU_PAGE_SIZE / 4; i++) {
            NpuCuInsn *ci = &cp->insn[i];
            uint32_t w = le32_to_cpu(words[i]);

            if (!npu_rv_decode(w, &ci->d)) {
                memset(ci, 0, sizeof(*ci));
                ci->d.word = w;
                ci->d.cls = NPU_RV_NCLASSES;
            }
            npu_cu_deps(ci);
            npu_cu_lockstep_fit(ci, (vpn << NPU_PAGE_SHIFT) + 4 * i);
        }
        cp->vpn = vpn;
        cp->filled = ++l->code_fills;
        l->code_epoch++;
    }
    return &cp->insn[(pc & (NPU_PAGE_SIZE - 1)) >> 2];
}

/*
 * Traces
 */

static void npu_cu_trace(NpuState *s, NpuLaunch *l, const NpuSlot *t,
                         unsigned unit, uint64_t cycle, uint8_t kind,
                         uint8_t stall, uint32_t insn, uint64_t addr)
{
    struct npu_cu_trace_record rec;
    uint64_t n = l->st.trace_records;
    uint64_t off = sizeof(struct npu_cu_trace_header) + n * sizeof(rec);

    if (l->failed) {
        return;
    }
    if (off + sizeof(rec) > l->trace_bytes) {
        l->st.trace_lost++;
        return;
    }
    memset(&rec, 0, sizeof(rec));
    rec.cycle = cpu_to_le64(cycle);
    rec.pc = cpu_to_le64(t->h.pc);
    rec.addr = cpu_to_le64(addr);
    rec.insn = cpu_to_le32(insn);
    rec.block = cpu_to_le32(t->blk->idx);
    rec.thread = cpu_to_le16(t->tid);
    rec.unit = unit;
    rec.kind = kind;
    rec.stall = stall;
    if (npu_cu_write(s, l, l->trace_va + off, &rec, sizeof(rec))) {
        l->st.trace_records++;
    }
}

/* PC samples of thread t at the sample points in [c, c + n). */
static void __attribute__((noinline))
npu_cu_sample(NpuState *s, NpuSlot *t, unsigned unit, uint64_t c, uint64_t n,
              uint8_t stall)
{
    NpuLaunch *l = t->l;
    /* any period, not only powers of two (ROUND_UP assumes one) */
    uint64_t p = QEMU_ALIGN_UP(c, l->sample_period);

    for (; p < c + n; p += l->sample_period) {
        npu_cu_trace(s, l, t, unit, p, NPU_CU_TRACE_SAMPLE, stall, 0, 0);
    }
}

/*
 * The cycle model of one unit
 */

/* Memory space an access at va falls in (for latency), -1 if it faults. */
static int npu_cu_space_of(NpuLaunch *l, uint64_t va)
{
    uint64_t pte;

    if (va >> NPU_VA_BITS) {
        return NPU_SPACE_SCRATCH;       /* all local windows: on the unit */
    }
    if (npu_cu_translate(l, va, false, &pte)) {
        return -1;
    }
    return pte & NPU_PTE_DEVMEM ? NPU_SPACE_DEVICE : NPU_SPACE_HOST;
}

/*
 * Earliest cycle >= c at which t can issue its next instruction d, and the
 * stall reason until then. A fetch fault issues at once (and faults).
 */
static inline uint64_t npu_cu_ready(NpuUnit *u, NpuSlot *t,
                                    const NpuCuInsn *ci, uint64_t c,
                                    uint8_t *why)
{
    uint64_t when = MAX(c, t->issue_at);
    const NpuRvInsn *d = ci ? &ci->d : NULL;
    unsigned i;

    *why = t->issue_at > c ? NPU_STALL_BRANCH_RESOLVING : NPU_STALL_SELECTED;
    if (t->barrier) {
        *why = NPU_STALL_BARRIER;
        return UINT64_MAX;
    }
    if (!d || d->cls == NPU_RV_NCLASSES) {
        return when;
    }
    for (i = 0; i < ci->nregs; i++) {
        if (t->ready[ci->regs[i]] > when) {
            when = t->ready[ci->regs[i]];
            *why = t->why[ci->regs[i]];
        }
    }
    if (d->cls == NPU_RV_DIV && u->div_free > when) {
        when = u->div_free;
        *why = NPU_STALL_MATH_PIPE_THROTTLE;
    }
    if (d->cls == NPU_RV_FDIV && u->fdiv_free > when) {
        when = u->fdiv_free;
        *why = NPU_STALL_MATH_PIPE_THROTTLE;
    }
    if (d->cls == NPU_RV_LOAD || d->cls == NPU_RV_STORE ||
        d->cls == NPU_RV_AMO) {
        uint64_t va = t->h.x[d->rs1] + d->imm;
        uint64_t first = UINT64_MAX;
        unsigned busy = 0;

        if (d->cls == NPU_RV_AMO) {
            va = t->h.x[d->rs1];
        }
        for (i = 0; i < NPU_MEM_QUEUE; i++) {
            if (u->mem_done[i] > when) {
                busy++;
                first = MIN(first, u->mem_done[i]);
            }
        }
        /* only a full queue needs the space: a translation saved */
        if (busy == NPU_MEM_QUEUE &&
            npu_cu_space_of(t->l, va) >= NPU_SPACE_DEVICE) {
            when = first;
            *why = NPU_STALL_LG_THROTTLE;
        }
    }
    return when;
}

/* Queue a memory request of the unit; returns the cycle its data is back. */
static uint64_t npu_cu_mem_request(NpuState *s, NpuUnit *u, int space,
                                   uint64_t c)
{
    NpuCuState *cs = s->cu;
    uint64_t *chan, start, per, lat;
    unsigned i, slot = 0;

    if (space == NPU_SPACE_DEVICE) {
        chan = &u->dev_free;
        per = ((uint64_t)NPU_SECTOR * MAX(cs->active, 1) * s->cu_clock_mhz
               << 8) / s->mem_bw;
        lat = NPU_LAT_DEVICE;
    } else {
        chan = &u->host_free;
        per = ((uint64_t)NPU_SECTOR * MAX(cs->active, 1) * s->cu_clock_mhz
               << 8) / s->link_bw;
        lat = NPU_LAT_HOST;
    }
    start = MAX(c << 8, *chan);
    *chan = start + MAX(per, 1);
    lat += (start >> 8) - c;
    for (i = 1; i < NPU_MEM_QUEUE; i++) {
        if (u->mem_done[i] < u->mem_done[slot]) {
            slot = i;
        }
    }
    u->mem_done[slot] = c + lat;
    u->mem_reqs++;
    return c + lat;
}

static void npu_block_free(NpuState *s, NpuUnit *u, NpuBlock *b);

static inline void npu_slot_settle(NpuSlot *t, uint64_t c);

/* Live positions below n as a mask (n <= 64). */
static inline uint64_t npu_live_bits(unsigned n)
{
    return n >= 64 ? ~0ull : (1ull << n) - 1;
}

/* Take slot i off the unit's list of running threads. */
static void npu_unit_unlive(NpuUnit *u, unsigned i)
{
    unsigned k;

    for (k = 0; k < u->nlive; k++) {
        if (u->live[k] == i) {
            if (u->lazy) {
                npu_slot_settle(&u->slot[i], u->lazy_at);
            }
            /* the positions after k move down by one */
            u->ready_mask = (u->ready_mask & npu_live_bits(k)) |
                            ((u->ready_mask >> 1) & ~npu_live_bits(k));
            memmove(&u->live[k], &u->live[k + 1],
                    (u->nlive - k - 1) * sizeof(u->live[0]));
            u->nlive--;
            if (u->rr >= k && u->rr) {
                u->rr--;
            }
            return;
        }
    }
}

/* Count a block of l as resident on u (add > 0) or gone (add < 0). */
static void npu_unit_launch(NpuUnit *u, NpuLaunch *l, int add)
{
    unsigned i;

    for (i = 0; i < u->nlaunches && u->launches[i] != l; i++) {
        continue;
    }
    if (i == u->nlaunches) {
        u->launches[i] = l;
        u->nblocks_of[i] = 0;
        u->nlaunches++;
    }
    u->nblocks_of[i] += add;
    if (!u->nblocks_of[i]) {
        u->nlaunches--;
        u->launches[i] = u->launches[u->nlaunches];
        u->nblocks_of[i] = u->nblocks_of[u->nlaunches];
    }
}

/* Thread t ended: its block may end, or a barrier may now be complete. */
static void npu_cu_thread_end(NpuState *s, NpuUnit *u, NpuSlot *t,
                              uint64_t c)
{
    NpuBlock *b = t->blk;
    unsigned i;

    npu_unit_unlive(u, t - u->slot);
    t->live = false;
    b->live--;
    if (b->live && b->at_barrier == b->live) {
        for (i = 0; i < s->cu_threads; i++) {
            if (u->slot[i].blk == b && u->slot[i].barrier) {
                u->slot[i].barrier = false;
                u->slot[i].issue_at = c + 1;
            }
        }
        b->at_barrier = 0;
        u->resched = true;
    }
    if (!b->live) {
        b->l->last_cycle = MAX(b->l->last_cycle, c + 1);
        npu_block_free(s, u, b);
    }
}

/*
 * A failed launch's threads stop at once, on every unit; its blocks go at
 * the end of the quantum (npu_cu_reap).
 */
static void npu_cu_stop_launch(NpuState *s, NpuLaunch *l)
{
    unsigned i, k;

    for (i = 0; i < s->n_cus; i++) {
        NpuUnit *u = &s->cu->unit[i];

        for (k = 0; k < u->nlive;) {
            NpuSlot *t = &u->slot[u->live[k]];

            if (t->l == l) {
                npu_unit_unlive(u, u->live[k]);
                t->live = false;
            } else {
                k++;
            }
        }
    }
}

static void npu_cu_issue_one(NpuState *s, NpuUnit *u, NpuSlot *t,
                             const NpuCuInsn *ci, uint32_t fetch_err,
                             uint64_t c);

/* Issue d for t at cycle c. */
static void npu_cu_issue(NpuState *s, NpuUnit *u, NpuSlot *t,
                         const NpuCuInsn *ci, uint32_t fetch_err, uint64_t c)
{
    NpuLaunch *l = t->l;

    npu_cu_issue_one(s, u, t, ci, fetch_err, c);
    if (l->failed) {
        npu_cu_stop_launch(s, l);
    }
}

static void npu_cu_issue_one(NpuState *s, NpuUnit *u, NpuSlot *t,
                             const NpuCuInsn *ci, uint32_t fetch_err,
                             uint64_t c)
{
    const NpuRvInsn *d = ci ? &ci->d : NULL;
    NpuLaunch *l = t->l;
    unsigned unit = u - s->cu->unit;
    NpuExec x = { .s = s, .u = u, .t = t, .l = l, .cycle = c, .space = -1,
                  .phys = NPU_PHYS_NONE };
    uint64_t fault = 0, maddr = 0, pc = t->h.pc, lat = NPU_LAT_ALU;
    uint8_t why = NPU_STALL_WAIT;
    bool reserved = t->h.reserved;
    uint32_t res;

    if (!d) {
        npu_cu_fail(l, fetch_err, pc, t, unit);
        return;
    }
    if (d->cls == NPU_RV_NCLASSES) {
        npu_cu_fail(l, NPU_ERR_CU_ILLEGAL, pc, t, unit);
        return;
    }
    res = npu_rv_exec(&t->h, d, &npu_cu_ops, &x, &fault, &maddr);
    if (t->h.reserved && npu_rv_is_lr(d)) {
        /* where the LR's load read: x.phys */
        t->reserved_phys = x.phys;
    }
    if (t->h.reserved != reserved) {
        s->cu->nreserved += t->h.reserved ? 1 : -1;
    }
    if (res && res != NPU_RV_ECALL) {
        npu_cu_fail(l, res, fault, t, unit);
        return;
    }
    if ((l->flags & NPU_CODE_ITRACE) && t->blk->idx == l->trace_block) {
        NpuRvHart after = t->h;

        t->h.pc = pc;
        npu_cu_trace(s, l, t, unit, c, NPU_CU_TRACE_INSN, NPU_STALL_SELECTED,
                     d->word, maddr);
        t->h = after;
    }
    qatomic_set(&u->instrs, u->instrs + 1);
    l->st.instructions++;
    if (res == NPU_RV_ECALL) {
        npu_cu_thread_end(s, u, t, c);
        return;
    }

    switch (d->cls) {
    case NPU_RV_BRANCH:
    case NPU_RV_JUMP:
        if (t->h.pc != pc + 4) {
            t->issue_at = c + 1 + NPU_LAT_BRANCH;
        }
        break;
    case NPU_RV_MUL:
    case NPU_RV_FP:
        lat = ci->lat;          /* decoded once (npu_cu_deps) */
        break;
    case NPU_RV_DIV:
        lat = ci->lat;
        why = NPU_STALL_SHORT_SCOREBOARD;
        u->div_free = c + lat;
        break;
    case NPU_RV_FDIV:
        lat = ci->lat;
        why = NPU_STALL_SHORT_SCOREBOARD;
        u->fdiv_free = c + lat;
        break;
    case NPU_RV_LOAD:
    case NPU_RV_STORE:
    case NPU_RV_AMO:
        if (x.space == NPU_SPACE_DEVICE || x.space == NPU_SPACE_HOST) {
            lat = npu_cu_mem_request(s, u, x.space, c) - c;
            why = NPU_STALL_LONG_SCOREBOARD;
        } else {
            lat = NPU_LAT_LOCAL;
            why = NPU_STALL_SHORT_SCOREBOARD;
        }
        if (d->cls == NPU_RV_AMO) {
            lat += NPU_LAT_AMO;
        }
        break;
    default:
        break;
    }
    if (d->flags & (NPU_RV_RD_X | NPU_RV_RD_F)) {
        unsigned r = npu_reg_index(d->flags & NPU_RV_RD_F, d->rd);

        t->ready[r] = MAX(t->ready[r], c + lat);
        t->ready_max = MAX(t->ready_max, t->ready[r]);
        t->why[r] = why;
    }
    if (x.barrier) {
        NpuBlock *b = t->blk;

        t->barrier = true;
        if (++b->at_barrier == b->live) {
            unsigned i;

            for (i = 0; i < s->cu_threads; i++) {
                if (u->slot[i].blk == b) {
                    u->slot[i].barrier = false;
                    u->slot[i].issue_at = MAX(u->slot[i].issue_at, c + 1);
                }
            }
            b->at_barrier = 0;
            u->resched = true;
        }
    }
    if (t->h.pc == NPU_EXIT_PC) {
        npu_cu_thread_end(s, u, t, c);
    }
}

/*
 * The instruction classes that reach neither memory, CSRs, the block nor
 * the thread's end (except a jump to NPU_EXIT_PC, which the caller sees):
 * ALU, branches, jumps, MUL, DIV, FP and FP divide (NpuCuInsn.fast).
 * npu_cu_issue_simple issues them without npu_cu_issue's bookkeeping.
 */

/*
 * Is ci (NULL: a fetch fault) of a simple class, on a thread that is not
 * traced (an untraced launch, or another block than the traced one)?
 */
static inline bool npu_cu_is_simple(const NpuSlot *t, const NpuCuInsn *ci)
{
    return ci && (ci->fast & NPU_CU_FAST) &&
           (!(t->l->flags & NPU_CODE_ITRACE) ||
            t->blk->idx != t->l->trace_block);
}

/*
 * The timing of a simple instruction (npu_cu_issue_simple below): ci
 * issued at c; moved is true when it was a taken branch or a jump (pc not
 * advanced by 4).
 */
static inline QEMU_ALWAYS_INLINE void
npu_cu_time_simple(NpuUnit *u, NpuSlot *t, const NpuCuInsn *ci, uint64_t c,
                   bool moved)
{
    if (moved) {
        t->issue_at = c + 1 + NPU_LAT_BRANCH;
    }
    if (unlikely(ci->fast & (NPU_CU_FAST_DIV | NPU_CU_FAST_FDIV))) {
        if (ci->fast & NPU_CU_FAST_DIV) {
            u->div_free = c + NPU_LAT_DIV;
        } else {
            u->fdiv_free = c + NPU_LAT_FDIV;
        }
    }
    if (ci->rdi < NPU_NREGS) {
        t->ready[ci->rdi] = MAX(t->ready[ci->rdi], c + ci->lat);
        t->ready_max = MAX(t->ready_max, t->ready[ci->rdi]);
        t->why[ci->rdi] = ci->fast & (NPU_CU_FAST_DIV | NPU_CU_FAST_FDIV) ?
                          NPU_STALL_SHORT_SCOREBOARD : NPU_STALL_WAIT;
    }
}

/*
 * Issue a simple instruction (npu_cu_is_simple) for t at cycle c, as
 * npu_cu_issue_one does except for the counters: the caller adds the
 * instruction to l->st.instructions and u->instrs, and ends the thread if
 * its pc is now NPU_EXIT_PC. False if it faults: then nothing of it is
 * committed, and the caller issues it through npu_cu_issue (which faults
 * the same way).
 */
static inline QEMU_ALWAYS_INLINE bool
npu_cu_issue_simple(NpuUnit *u, NpuSlot *t, const NpuCuInsn *ci, uint64_t c)
{
    const NpuRvInsn *d = &ci->d;
    uint64_t fault, maddr, pc = t->h.pc;

    if (!npu_rv_exec_int(&t->h, d) &&
        npu_rv_exec(&t->h, d, &npu_cu_ops, NULL, &fault, &maddr)) {
        return false;
    }
    npu_cu_time_simple(u, t, ci, c, t->h.pc != pc + 4);
    return true;
}

/* Account n cycles from c: every live thread under its current reason. */
static inline void npu_cu_charge(NpuState *s, NpuUnit *u, uint64_t c,
                                 uint64_t n)
{
    NpuCuState *cs = s->cu;
    unsigned i, unit = u - cs->unit;

    for (i = 0; i < u->nlaunches; i++) {
        u->launches[i]->st.unit_cycles += n;
    }
    for (i = 0; i < u->nlive; i++) {
        NpuSlot *t = &u->slot[u->live[i]];
        NpuLaunch *l = t->l;

        l->st.thread_cycles += n;
        l->st.stall[t->stall] += n;
        if (l->sample_period && !l->failed) {
            npu_cu_sample(s, t, unit, c, n, t->stall);
        }
    }
    if (u->ncode) {
        qatomic_set(&u->busy_cycles, u->busy_cycles + n);
    }
}

/* t's decoded instruction at its pc (a fetch fault: NULL, t->d_err). */
static inline const NpuCuInsn *npu_slot_decode(NpuState *s, NpuSlot *t,
                                               NpuLaunch *l)
{
    if (t->d_pc != t->h.pc || t->d_epoch != l->code_epoch) {
        uint64_t vpn = t->h.pc >> NPU_PAGE_SHIFT;
        NpuCodePage *cp;

        if (t->d && t->d_epoch == l->code_epoch &&
            vpn == t->d_pc >> NPU_PAGE_SHIFT) {
            /* still in the decoded page: no cache lookup */
            t->d += (ptrdiff_t)((t->h.pc & (NPU_PAGE_SIZE - 1)) >> 2) -
                    (ptrdiff_t)((t->d_pc & (NPU_PAGE_SIZE - 1)) >> 2);
            t->d_pc = t->h.pc;
            return t->d;
        }
        cp = npu_code_find(l, vpn);

        if (cp) {
            t->d = &cp->insn[(t->h.pc & (NPU_PAGE_SIZE - 1)) >> 2];
            t->d_err = 0;
        } else {
            t->d = npu_cu_fetch(s, l, t->h.pc, &t->d_err);
        }
        t->d_pc = t->h.pc;
        t->d_epoch = l->code_epoch;
    }
    return t->d;
}

/*
 * A quantum's units run for as long as they need: with every thread
 * PC-sampled, hundreds of thousands of trace records. A register write
 * that waits for them with the BQL held (MMU_INVALIDATE, a ring or device
 * reset) must not wait that long, so between two instructions of a unit
 * the quantum lets go. For an invalidation it ends its MMU accesses, stays
 * out until the writes under way have completed (their handlers wait only
 * for accesses that never wait for the units; NPU_CU_YIELD_NS is a safety
 * net), then begins them again and drops the launches' translations.
 * For a reset it cancels the launches of the rings being reset, drops
 * their blocks and finishes them, as the quantum's end would. The cycle
 * model does not see it.
 */
#define NPU_CU_YIELD_NS (100 * SCALE_MS)

static void npu_launch_finish(NpuState *s, NpuLaunch *l);

static void npu_cu_yield(NpuState *s)
{
    NpuCuState *cs = s->cu;
    NpuLaunch *l, *nx;
    unsigned i, j;
    bool aborted = false;

    if (qatomic_read(&s->mmu_waiters)) {
        int64_t until = npu_now() + NPU_CU_YIELD_NS;
        uint32_t seq = qatomic_read(&s->mmu_inval_started);

        trace_npu_cu_yield(cs->naccess, 0);
        for (i = 0; i < cs->naccess; i++) {
            npu_mmu_access_end(cs->access[i]);
        }
        /* the writes under way, not later ones (no starvation) */
        while ((int32_t)(qatomic_load_acquire(&s->mmu_inval_done) - seq) < 0
               && npu_now() < until) {
            g_usleep(10);
        }
        for (i = 0; i < cs->naccess; i++) {
            npu_mmu_access_begin(cs->access[i]);
        }
        QTAILQ_FOREACH(l, &cs->queue, next) {
            if (!l->fixed && l->resident && l->gen != l->ring->tlb_gen) {
                npu_launch_flush(l);
                l->gen = l->ring->tlb_gen;
            }
        }
    }
    if (qatomic_read(&s->resetting)) {
        /* the ring thread would cancel, once it runs: do it now */
        QTAILQ_FOREACH(l, &cs->queue, next) {
            aborted |= !l->fixed && !qatomic_read(&l->cancel) &&
                       npu_aborted(l->ring);
        }
    }
    if (!aborted && !qatomic_read(&cs->cancel_pending)) {
        return;
    }
    qemu_mutex_lock(&s->cu_lock);
    qatomic_set(&cs->cancel_pending, false);
    trace_npu_cu_yield(cs->naccess, 1);
    QTAILQ_FOREACH(l, &cs->queue, next) {
        if (!l->fixed && !l->cancel && npu_aborted(l->ring)) {
            l->cancel = true;
        }
    }
    for (i = 0; i < s->n_cus; i++) {
        NpuUnit *u = &cs->unit[i];

        for (j = 0; j < u->nblocks;) {
            NpuBlock *b = u->blocks[j];

            if (!b->direct && !b->l->fixed && b->l->cancel) {
                npu_block_free(s, u, b);    /* moves the last block here */
            } else {
                j++;
            }
        }
    }
    QTAILQ_FOREACH_SAFE(l, &cs->queue, next, nx) {
        if (l->cancel && !l->fixed && !l->resident) {
            npu_launch_finish(s, l);
        }
    }
    qemu_mutex_unlock(&s->cu_lock);
}

/*
 * Superblocks (NpuTb)
 */

/*
 * The timing of simple superblock tb, by the per-instruction model itself
 * (npu_cu_ready, npu_cu_time_simple) run on a thread and a unit whose
 * registers and dividers are all ready at cycle 0: what the one-thread
 * loop would do from any cycle c0 at which everything tb names is ready,
 * shifted by c0. Its last instruction's own bubble (a taken branch)
 * depends on the run and is left to the caller.
 */
static void npu_tb_time(NpuTb *tb)
{
    g_autofree NpuSlot *t = g_new0(NpuSlot, 1);
    NpuUnit u = { 0 };
    uint64_t c = 0, named = 0, written = 0, waits[NPU_STALL_COUNT] = { 0 };
    unsigned i, k;

    for (i = 0; i < tb->n; i++) {
        const NpuCuInsn *ci = &tb->insn[i];
        uint64_t when;
        uint8_t why;

        for (k = 0; k < ci->nregs; k++) {
            if (!(named & (1ull << ci->regs[k]))) {
                named |= 1ull << ci->regs[k];
                tb->in[tb->nin++] = ci->regs[k];
            }
        }
        if (ci->rdi < NPU_NREGS) {
            written |= 1ull << ci->rdi;
        }
        when = npu_cu_ready(&u, t, ci, c, &why);
        if (when > c) {
            waits[why] += when - c;
            tb->wait_total += when - c;
            c = when;
        }
        npu_cu_time_simple(&u, t, ci, c, false);
        c++;
    }
    tb->cycles = c;
    /* results ready by the block's end need no update: nothing waits */
    for (k = 0; k < NPU_NREGS; k++) {
        if ((written & (1ull << k)) && t->ready[k] > c) {
            tb->out[tb->nout].reg = k;
            tb->out[tb->nout].why = t->why[k];
            tb->out[tb->nout].off = t->ready[k];
            tb->out_max = MAX(tb->out_max, t->ready[k]);
            tb->nout++;
        }
    }
    for (k = 0; k < NPU_STALL_COUNT; k++) {
        if (waits[k]) {
            tb->waits[tb->nwaits].why = k;
            tb->waits[tb->nwaits].n = waits[k];
            tb->nwaits++;
        }
    }
    tb->div = u.div_free != 0;
    tb->div_off = u.div_free;
    tb->fdiv = u.fdiv_free != 0;
    tb->divs = tb->div || tb->fdiv;
    tb->fdiv_off = u.fdiv_free;
}

/*
 * In npu_unit_lockstep, for a thread whose older results are all ready:
 * the cycles after ci's issue before next (fit for the lockstep too) can
 * issue, and their reason in *why: a taken branch's or jump's bubble
 * (moved), then ci's result if next waits for it (a result ready by the
 * next cycle cannot delay it). npu_cu_ready's answer, without its
 * general checks.
 */
static inline unsigned npu_ls_wait_after(const NpuCuInsn *ci, bool moved,
                                         const NpuCuInsn *next, uint8_t *why)
{
    unsigned when = moved ? 1 + NPU_LAT_BRANCH : 1, k;

    *why = moved ? NPU_STALL_BRANCH_RESOLVING : NPU_STALL_SELECTED;
    for (k = 0; ci->rdi < NPU_NREGS && ci->lat > when && k < next->nregs;
         k++) {
        if (next->regs[k] == ci->rdi) {
            when = ci->lat;
            *why = NPU_STALL_WAIT;  /* npu_cu_time_simple's, no divider */
            break;
        }
    }
    return when - 1;
}

/* npu_tb_chain's handler for simple instruction ci */
static uint8_t npu_tb_xop(const NpuCuInsn *ci)
{
    switch (ci->d.op) {
#define NPU_XOP_INT(name, ...) \
    case RV_##name: \
        return ci->rdi < NPU_NREGS ? NPU_XOP_##name : NPU_XOP_NOP;
    NPU_RV_INT_OPS(NPU_XOP_INT)
#undef NPU_XOP_INT
#define NPU_XOP_BRANCH(name) \
    case RV_##name: \
        return NPU_XOP_##name;
    NPU_TB_BRANCHES(NPU_XOP_BRANCH)
#undef NPU_XOP_BRANCH
#define NPU_XOP_FP(name, ...) \
    case RV_##name: \
        return NPU_XOP_##name;
    NPU_RV_FP_FAST_OPS(NPU_XOP_FP)
#undef NPU_XOP_FP
    case RV_JAL:
        return NPU_XOP_JAL;
    case RV_JALR:
        return NPU_XOP_JALR;
    default:
        return NPU_XOP_OTHER;
    }
}

/*
 * Build the superblock at pc; NULL if its first instruction cannot be
 * fetched or is illegal (the caller's decode reports it).
 */
static NpuTb *npu_tb_build(NpuState *s, NpuLaunch *l, uint64_t pc)
{
    NpuCuInsn insn[NPU_TB_INSNS];
    bool simple = true;
    unsigned n = 0;
    NpuTb *tb;

    while (n < NPU_TB_INSNS) {
        uint64_t p = pc + 4 * n;
        const NpuCuInsn *ci;
        uint32_t err;

        if (n && !(p & (NPU_PAGE_SIZE - 1))) {
            break;                      /* the next page is fetched later */
        }
        ci = npu_cu_fetch(s, l, p, &err);
        if (!ci || ci->d.cls == NPU_RV_NCLASSES) {
            break;
        }
        if (!(ci->fast & NPU_CU_FAST)) {
            if (!n) {
                insn[n++] = *ci;
                simple = false;
            }
            break;
        }
        insn[n++] = *ci;
        if (ci->d.cls == NPU_RV_BRANCH || ci->d.cls == NPU_RV_JUMP) {
            break;
        }
    }
    if (!n) {
        return NULL;
    }
    if (l->ntb >= NPU_TB_LIMIT) {
        npu_tb_free_all(l);
    }
    tb = g_malloc0(sizeof(*tb) + n * sizeof(tb->insn[0]) +
                   (simple ? (n + 1) * sizeof(NpuTbOp) : 0));
    tb->pc = pc;
    tb->n = n;
    tb->simple = simple;
    tb->whole = UINT32_MAX;
    memcpy(tb->insn, insn, n * sizeof(insn[0]));
    if (simple) {
        unsigned i;

        tb->ops = (NpuTbOp *)&tb->insn[n];
        if (!npu_tb_handler) {
            npu_tb_chain(NULL, NULL, NULL);
        }
        for (i = 0; i < n; i++) {
            const NpuRvInsn *d = &insn[i].d;
            uint8_t xop = npu_tb_xop(&insn[i]);
            int64_t imm = d->imm;

            if (xop >= NPU_XOP_BEQ || xop == NPU_XOP_JAL) {
                /* a misaligned target faults: on the general path */
                imm += 4 * i;
                xop = (pc + imm) & 3 ? NPU_XOP_OTHER : xop;
            } else if (xop >= NPU_XOP_FADD_D && xop <= NPU_XOP_FNMADD_S) {
                imm = d->rm;
            }
            if (imm != (int32_t)imm) {
                xop = NPU_XOP_OTHER;
            }
            tb->ops[i] = (NpuTbOp) {
                .handler = npu_tb_handler[xop], .imm = imm,
                .rd = d->rd, .rs1 = d->rs1, .rs2 = d->rs2, .rs3 = d->rs3,
            };
        }
        tb->ops[n].handler = npu_tb_handler[NPU_XOP_END];
        tb->ls_ok = true;
        for (i = 0; i < n; i++) {
            uint8_t why;

            tb->ls_ok &= !!(insn[i].fast & NPU_CU_FAST_LOCKSTEP);
            if (i + 1 < n) {
                tb->ls_wait += npu_ls_wait_after(&insn[i], false,
                                                 &insn[i + 1], &why);
            }
        }
        npu_tb_time(tb);
        tb->whole = tb->cycles;
    }
    tb->all_next = l->tb_all;
    l->tb_all = tb;
    l->ntb++;
    return tb;
}

/* The superblock at pc (built on first use), NULL as npu_tb_build. */
static NpuTb *npu_tb_get(NpuState *s, NpuLaunch *l, uint64_t pc)
{
    NpuTb **e, *tb;

    if (!l->tb_hash) {
        l->tb_hash = g_new0(NpuTb *, NPU_TB_HASH);
    }
    e = &l->tb_hash[(pc >> 2) & (NPU_TB_HASH - 1)];
    if (*e && (*e)->pc == pc) {
        return *e;
    }
    tb = npu_tb_build(s, l, pc);
    if (tb) {
        *e = tb;
    }
    return tb;
}

/*
 * The general loop below with one live thread, of the unit's one launch:
 * no round robin, and charging a cycle is three counters of that launch
 * (the unit's busy cycles are added once, at the end). The same cycles,
 * stall reasons, samples and issue order (the same steps: a jump to the
 * wake-up, then the issue's cycle); returns when a second thread could
 * appear (never within a run), the thread ends or end is reached.
 * The cycles it issues in and the simple instructions it retires are
 * counted in locals (NpuSingle's sel, insns) and added to the launch's
 * statistics and the unit's instruction count before anything else can
 * read them: before an instruction goes through npu_cu_issue, when the
 * thread ends or the launch fails, and on return.
 *
 * It runs superblocks: a simple one whose inputs are ready when its first
 * instruction can issue, that ends before end and holds no PC sample
 * point runs whole, its timing taken from npu_tb_time; any other one
 * instruction by instruction. A traced thread decodes one instruction
 * at a time.
 */
struct NpuSingle {
    NpuState *s;
    NpuUnit *u;
    NpuSlot *t;
    NpuLaunch *l;
    uint64_t end;
    uint64_t sel;               /* issue cycles not yet in l->st */
    uint64_t insns;             /* simple instructions not yet counted */
    uint64_t busy;              /* the unit's busy cycles, added at return */
    uint64_t sample;            /* next PC sample point, UINT64_MAX: none */
    uint32_t period;
    unsigned unit;
};

static inline void npu_single_flush(NpuSingle *r)
{
    NpuLaunch *l = r->l;

    l->st.unit_cycles += r->sel;
    l->st.thread_cycles += r->sel;
    l->st.stall[NPU_STALL_SELECTED] += r->sel;
    l->st.instructions += r->insns;
    if (r->insns) {
        qatomic_set(&r->u->instrs, r->u->instrs + r->insns);
    }
    r->sel = 0;
    r->insns = 0;
}

/*
 * After the thread's instruction issued at c: its end (pc NPU_EXIT_PC) or
 * its launch's failure, with the counts flushed first.
 */
static inline void npu_single_after(NpuSingle *r, uint64_t c)
{
    NpuSlot *t = r->t;
    NpuLaunch *l = r->l;

    if (unlikely(t->h.pc == NPU_EXIT_PC || l->failed)) {
        npu_single_flush(r);
        if (t->h.pc == NPU_EXIT_PC) {
            npu_cu_thread_end(r->s, r->u, t, c);
        }
        if (l->failed) {
            npu_cu_stop_launch(r->s, l);
        }
    }
}

/* n stall cycles of the thread for reason why (not sampled here) */
static inline void npu_single_stall(NpuSingle *r, uint8_t why, uint64_t n)
{
    NpuLaunch *l = r->l;

    l->st.unit_cycles += n;
    l->st.thread_cycles += n;
    l->st.stall[why] += n;
    r->busy += n;
}

/*
 * Wait from the unit's cycle until d can issue; the cycle it issues at in
 * *at, false if end comes first.
 */
static inline bool npu_single_wait(NpuSingle *r, const NpuCuInsn *d,
                                   uint64_t *at)
{
    NpuUnit *u = r->u;
    NpuSlot *t = r->t;
    uint64_t c = u->cycle, when, n;
    uint8_t why;

    when = npu_cu_ready(u, t, d, c, &why);
    if (when > c) {
        /* nothing can issue: jump to the wake-up */
        t->stall = why;
        n = MIN(when, r->end) - c;
        npu_single_stall(r, why, n);
        if (r->sample < c + n) {
            npu_cu_sample(r->s, t, r->unit, c, n, t->stall);
            r->sample = QEMU_ALIGN_UP(c + n, r->period);
        }
        c += n;
        u->cycle = c;
        if (c >= r->end) {
            return false;
        }
        /* npu_cu_ready(c) would now return c: nothing it reads changed */
    }
    *at = c;
    return true;
}

/* The issue cycle c of the thread (after npu_single_wait). */
static inline void npu_single_select(NpuSingle *r, uint64_t c)
{
    r->t->stall = NPU_STALL_SELECTED;
    r->sel++;
    r->busy++;
    if (r->sample <= c) {
        npu_cu_sample(r->s, r->t, r->unit, c, 1, NPU_STALL_SELECTED);
        r->sample = QEMU_ALIGN_UP(c + 1, r->period);
    }
    r->u->cycle = c + 1;
}

/* Issue d (fetch error ferr) at c, after npu_single_wait. */
static inline void npu_single_issue(NpuSingle *r, const NpuCuInsn *d,
                                    uint32_t ferr, uint64_t c)
{
    NpuSlot *t = r->t;

    npu_single_select(r, c);
    if (likely(npu_cu_is_simple(t, d)) &&
        likely(npu_cu_issue_simple(r->u, t, d, c))) {
        r->insns++;
        npu_single_after(r, c);
        return;
    }
    npu_single_flush(r);
    npu_cu_issue(r->s, r->u, t, d, ferr, c);
}

/* The thread can go on in this loop. */
static inline bool npu_single_goes_on(NpuSingle *r)
{
    return r->u->cycle < r->end && r->u->nlive == 1 && r->t->live &&
           !r->t->barrier;
}

/*
 * Simple superblock tb's first i instructions retired (executed by
 * npu_tb_chain from c0) and the next one faulted on the short path:
 * charge the i one by one, then issue it through npu_cu_issue, as
 * without superblocks.
 */
static void npu_tb_fault(NpuSingle *r, const NpuTb *tb, unsigned i)
{
    uint64_t c = 0;
    unsigned k;

    for (k = 0; k < i; k++) {
        npu_single_wait(r, &tb->insn[k], &c);
        npu_single_select(r, c);
        npu_cu_time_simple(r->u, r->t, &tb->insn[k], c, false);
        r->insns++;
    }
    if (npu_single_wait(r, &tb->insn[i], &c)) {
        npu_single_issue(r, &tb->insn[i], 0, c);
    }
}

/* t's superblock at its pc, NULL if none (see npu_tb_build). */
static inline NpuTb *npu_slot_tb(NpuState *s, NpuSlot *t)
{
    NpuLaunch *l = t->l;

    if (!t->tb || t->tb_epoch != l->tb_epoch || t->tb->pc != t->h.pc) {
        t->tb = npu_tb_get(s, l, t->h.pc);
        t->tb_epoch = l->tb_epoch;
    }
    return t->tb;
}

static inline NpuTb *npu_single_tb(NpuSingle *r)
{
    return npu_slot_tb(r->s, r->t);
}

/*
 * After tb ran whole: the superblock at the thread's pc (NULL if none),
 * chained to tb.
 */
static inline NpuTb *npu_single_next(NpuSingle *r, NpuTb *tb)
{
    NpuSlot *t = r->t;
    NpuLaunch *l = r->l;
    unsigned k = t->h.pc != tb->pc + 4 * tb->n;
    NpuTb *nx = tb->succ[k];

    if (!nx || nx->pc != t->h.pc) {
        uint64_t epoch = l->tb_epoch;

        nx = npu_tb_get(r->s, l, t->h.pc);
        if (l->tb_epoch == epoch) {
            tb->succ[k] = nx;   /* else tb is gone */
        }
    }
    t->tb = nx;
    t->tb_epoch = l->tb_epoch;
    return nx;
}

/*
 * What a chain of whole superblocks (npu_tb_chain) keeps aside until it
 * stops (npu_chain_sync): the unit's cycle and the thread's branch bubble;
 * the branch-resolving cycles before superblocks; the superblocks that
 * ran, each counting its runs (their issue and stall cycles are added to
 * the statistics once per chain: the sums are the same); and the results
 * of the last one, written to the thread's ready cycles only when the
 * next superblock could still find one of them pending.
 */
typedef struct NpuChain {
    uint64_t cycle;             /* the unit's */
    uint64_t issue_at;          /* the thread's */
    uint64_t ready_max;         /* the thread's */
    uint64_t bubble;
    NpuTb *ran;                 /* by ran_next */
    const NpuTb *last;          /* its out[] not yet in the thread's ready[] */
    uint64_t last_c0;           /* ... relative to this cycle */
    bool selected;              /* a superblock ran: the thread issued */
} NpuChain;

/* The last superblock's pending results into the thread's ready cycles. */
static inline void npu_chain_results(NpuChain *ch, NpuSlot *t)
{
    const NpuTb *tb = ch->last;
    unsigned k;

    for (k = 0; k < tb->nout; k++) {
        t->ready[tb->out[k].reg] = ch->last_c0 + tb->out[k].off;
        t->why[tb->out[k].reg] = tb->out[k].why;
    }
    ch->last = NULL;
}

/* Everything the chain kept aside into the unit, the thread and r. */
static void npu_chain_sync(NpuSingle *r, NpuChain *ch)
{
    NpuLaunch *l = r->l;
    NpuTb *tb;
    unsigned k;

    if (ch->last) {
        npu_chain_results(ch, r->t);
    }
    r->u->cycle = ch->cycle;
    r->t->issue_at = ch->issue_at;
    r->t->ready_max = ch->ready_max;
    if (ch->selected) {
        r->t->stall = NPU_STALL_SELECTED;
    }
    if (ch->bubble) {
        npu_single_stall(r, NPU_STALL_BRANCH_RESOLVING, ch->bubble);
        ch->bubble = 0;
    }
    for (tb = ch->ran; tb; tb = tb->ran_next) {
        uint64_t n = tb->runs;

        for (k = 0; k < tb->nwaits; k++) {
            l->st.stall[tb->waits[k].why] += tb->waits[k].n * n;
        }
        l->st.unit_cycles += tb->wait_total * n;
        l->st.thread_cycles += tb->wait_total * n;
        r->sel += tb->n * n;
        r->insns += tb->n * n;
        r->busy += tb->cycles * n;
        tb->runs = 0;
    }
    ch->ran = NULL;
}

/*
 * Run simple superblocks whole, tb first, then its successors, for as
 * long as each fits from the cycle its first instruction can issue at
 * (the end of a branch bubble, charged as npu_single_wait would): every
 * register it names ready, the dividers it uses free, its end within
 * the quantum and before the next PC sample point. Returns false if tb
 * itself did not fit.
 * Executing a superblock involves no timing: each handler jumps straight
 * to the next one's (direct threading), and pc and instret are counted at
 * its end (only the last instruction can branch); its timing is
 * npu_tb_time's, kept aside in an NpuChain. npu_tb_fault takes over at
 * an instruction that faults on the short path.
 */
/*
 * npu_tb_chain's other use: run one simple superblock on hart h, without
 * timing (npu_unit_lockstep). Out: npc, the next pc; or NPU_RV_NOT_INT
 * when the instruction at stop faulted on the short path (the ones before
 * it retired, nothing of it is committed, h->pc is its pc).
 */
struct NpuTbRun {
    NpuRvHart *h;
    bool fp_host;               /* npu_rv_host_rounds_nearest() */
    uint64_t npc;
    unsigned stop;
};

static bool npu_tb_chain(NpuSingle *r, NpuTb *tb, NpuTbRun *run)
{
    static const void *const handler[NPU_XOPS] = {
        [NPU_XOP_OTHER] = &&x_other,
        [NPU_XOP_NOP] = &&x_nop,
        [NPU_XOP_END] = &&x_end,
        [NPU_XOP_JAL] = &&x_JAL,
        [NPU_XOP_JALR] = &&x_JALR,
#define NPU_XOP_LABEL(name, ...) [NPU_XOP_##name] = &&x_##name,
        NPU_RV_INT_OPS(NPU_XOP_LABEL)
        NPU_RV_FP_FAST_OPS(NPU_XOP_LABEL)
        NPU_TB_BRANCHES(NPU_XOP_LABEL)
#undef NPU_XOP_LABEL
    };
    NpuSlot *t = NULL;
    NpuUnit *u = NULL;
    NpuLaunch *l = NULL;
    uint64_t *x, *f, c0 = 0, npc, fault, maddr, lim = 0, fall;
    NpuRvHart *h;
    NpuChain ch;
    const NpuTbOp *ops, *o;
    unsigned by_exec;           /* retired by npu_rv_exec, which counts */
    unsigned k;
    bool fp_host, failed = false;
    NpuTb *nx;

    if (run) {
        h = run->h;
        x = h->x;
        f = h->f;
        fp_host = run->fp_host;
        ops = o = tb->ops;
        by_exec = 0;
        goto *o->handler;
    }
    if (!r) {
        /* npu_tb_build's first call: the labels for NpuTbOp.handler */
        npu_tb_handler = handler;
        return false;
    }
    t = r->t;
    u = r->u;
    l = r->l;
    h = &t->h;
    x = h->x;
    f = h->f;
    lim = MIN(r->end, r->sample);
    ch = (NpuChain) {
        .cycle = u->cycle, .issue_at = t->issue_at, .ready_max = t->ready_max,
    };
    fp_host = npu_rv_host_rounds_nearest();
    /* set on this thread only, by instructions that are not simple */
    failed = l->failed;

#define NPU_TB_PC       (tb->pc + ((uint64_t)(o - ops) << 2))
#define NPU_TB_NEXT     goto *(++o)->handler

next_block:
    c0 = MAX(ch.cycle, ch.issue_at);
    if (c0 + tb->whole > lim) {
        goto no_fit;
    }
    if (ch.ready_max > c0) {
        if (ch.last && ch.last_c0 + ch.last->out_max > c0) {
            npu_chain_results(&ch, t);
        }
        for (k = 0; k < tb->nin; k++) {
            if (t->ready[tb->in[k]] > c0) {
                goto no_fit;
            }
        }
    }
    if (unlikely(tb->divs) &&
        ((tb->div && u->div_free > c0) || (tb->fdiv && u->fdiv_free > c0))) {
        goto no_fit;
    }
    ch.bubble += c0 - ch.cycle;
    ch.cycle = c0;
    ops = o = tb->ops;
    by_exec = 0;
    goto *o->handler;

#define NPU_XOP_INT(name, expr) \
x_##name: \
    { \
        uint64_t a = x[o->rs1], b = x[o->rs2], pc = NPU_TB_PC; \
        int64_t imm = o->imm; \
        \
        (void)a, (void)b, (void)pc, (void)imm; \
        x[o->rd] = (expr); \
    } \
    NPU_TB_NEXT;
    NPU_RV_INT_OPS(NPU_XOP_INT)
#undef NPU_XOP_INT
#define NPU_XOP_BRANCH(name) \
x_##name: \
    if (npu_rv_taken(RV_##name, x[o->rs1], x[o->rs2])) { \
        npc = tb->pc + o->imm; \
        goto out; \
    } \
    goto x_end;
    NPU_TB_BRANCHES(NPU_XOP_BRANCH)
#undef NPU_XOP_BRANCH
#define NPU_XOP_FP_d(nops, expr) \
    { \
        double a = npu_rv_d_of(f[o->rs1]), b = npu_rv_d_of(f[o->rs2]); \
        double c = npu_rv_d_of(f[o->rs3]); \
        uint64_t v = npu_rv_bits_d(expr); \
        \
        (void)b, (void)c; \
        if (npu_rv_fp_fast_d_result(v)) { \
            f[o->rd] = v; \
            NPU_TB_NEXT; \
        } \
    }
#define NPU_XOP_FP_s(nops, expr) \
    if (npu_rv_fp_fast_s_boxed(nops, f[o->rs1], f[o->rs2], f[o->rs3])) { \
        float a = npu_rv_f_of(f[o->rs1]), b = npu_rv_f_of(f[o->rs2]); \
        float c = npu_rv_f_of(f[o->rs3]); \
        uint32_t v = npu_rv_bits_f(expr); \
        \
        (void)b, (void)c; \
        if (npu_rv_fp_fast_s_result(v)) { \
            f[o->rd] = RV_BOX_S | v; \
            NPU_TB_NEXT; \
        } \
    }
#define NPU_XOP_FP(name, prec, nops, expr) \
x_##name: \
    if (fp_host && npu_rv_fp_fast_ok(h, o->imm)) { \
        NPU_XOP_FP_##prec(nops, expr) \
    } \
    goto x_other;
    NPU_RV_FP_FAST_OPS(NPU_XOP_FP)
#undef NPU_XOP_FP
#undef NPU_XOP_FP_s
#undef NPU_XOP_FP_d
x_JAL:
    npc = tb->pc + o->imm;
    if (o->rd) {
        x[o->rd] = NPU_TB_PC + 4;
    }
    goto out;
x_JALR:
    npc = npu_rv_jump_target(RV_JALR, x[o->rs1], o->imm, NPU_TB_PC);
    if (npc == NPU_RV_NOT_INT) {
        goto stop;
    }
    if (o->rd) {
        x[o->rd] = NPU_TB_PC + 4;
    }
    goto out;
x_nop:
    NPU_TB_NEXT;
x_other:
    h->pc = NPU_TB_PC;
    if (npu_rv_exec(h, &tb->insn[o - ops].d, &npu_cu_ops, NULL, &fault,
                    &maddr)) {
        goto stop;
    }
    by_exec++;
    NPU_TB_NEXT;
x_end:
    npc = tb->pc + 4 * tb->n;
out:
    h->pc = npc;
    h->instret += tb->n - by_exec;
    if (run) {
        run->npc = npc;
        return true;
    }
    /* tb ran whole from c0: its timing is npu_tb_time's */
    if (!tb->runs++) {
        tb->ran_next = ch.ran;
        ch.ran = tb;
    }
    ch.selected = true;
    /* the previous superblock's results were ready by c0, or are in ready[] */
    ch.last = tb;
    ch.last_c0 = c0;
    ch.ready_max = MAX(ch.ready_max, c0 + tb->out_max);
    if (unlikely(tb->divs)) {
        if (tb->div) {
            u->div_free = c0 + tb->div_off;
        }
        if (tb->fdiv) {
            u->fdiv_free = c0 + tb->fdiv_off;
        }
    }
    ch.cycle = c0 + tb->cycles;
    fall = tb->pc + 4 * tb->n;
    k = npc != fall;
    if (k) {
        ch.issue_at = ch.cycle + NPU_LAT_BRANCH;
    }
    if (unlikely(npc == NPU_EXIT_PC || failed)) {
        npu_chain_sync(r, &ch);
        npu_single_after(r, ch.cycle - 1);
        return true;
    }
    /* nothing else npu_single_goes_on reads changes in a superblock */
    if (ch.cycle >= r->end) {
        nx = tb->succ[k] && tb->succ[k]->pc == npc ? tb->succ[k] : NULL;
        npu_chain_sync(r, &ch);
        t->tb = nx;
        t->tb_epoch = l->tb_epoch;
        return true;
    }
    nx = tb->succ[k];
    if (unlikely(!nx || nx->pc != npc)) {
        /* npu_tb_get may free every superblock: nothing kept aside */
        npu_chain_sync(r, &ch);
        t->tb = tb;
        t->tb_epoch = l->tb_epoch;
        nx = npu_single_next(r, tb);
        if (!nx || l->failed) {
            return true;
        }
    }
    tb = nx;
    goto next_block;

no_fit:
    npu_chain_sync(r, &ch);
    t->tb = tb;
    t->tb_epoch = l->tb_epoch;
    return ch.selected;
stop:
    /* nothing of the instruction at o is committed */
    h->pc = NPU_TB_PC;
    h->instret += (o - ops) - by_exec;
    if (run) {
        run->npc = NPU_RV_NOT_INT;
        run->stop = o - ops;
        return false;
    }
    npu_chain_sync(r, &ch);
    t->tb = tb;
    t->tb_epoch = l->tb_epoch;
    npu_tb_fault(r, tb, o - ops);
    return true;
#undef NPU_TB_PC
#undef NPU_TB_NEXT
}

static void npu_unit_run_single(NpuState *s, NpuUnit *u, uint64_t end)
{
    NpuSlot *t = &u->slot[u->live[0]];
    NpuLaunch *l = t->l;
    NpuSingle r = {
        .s = s, .u = u, .t = t, .l = l, .end = end,
        .period = l->sample_period,
        .sample = l->sample_period ?
                  QEMU_ALIGN_UP(u->cycle, l->sample_period) : UINT64_MAX,
        .unit = u - s->cu->unit,
    };
    bool traced = (l->flags & NPU_CODE_ITRACE) &&
                  t->blk->idx == l->trace_block;

    u->rr = 0;
    while (npu_single_goes_on(&r)) {
        NpuTb *tb = traced ? NULL : npu_single_tb(&r);
        uint64_t c;
        unsigned i;

        if (!tb) {
            const NpuCuInsn *d = npu_slot_decode(s, t, l);

            if (npu_single_wait(&r, d, &c)) {
                npu_single_issue(&r, d, t->d_err, c);
            }
            continue;
        }
        if (npu_tb_chain(&r, tb, NULL)) {
            continue;
        }
        /*
         * Wait for the first instruction (a load's result, say); then the
         * superblock may run whole from there.
         */
        if (!npu_single_wait(&r, &tb->insn[0], &c)) {
            break;
        }
        if (tb->simple && npu_tb_chain(&r, tb, NULL)) {
            continue;
        }
        /* instruction by instruction, as long as the thread goes on */
        npu_single_issue(&r, &tb->insn[0], 0, c);
        for (i = 1; i < tb->n && npu_single_goes_on(&r) &&
                    t->h.pc == tb->pc + 4 * i; i++) {
            if (!npu_single_wait(&r, &tb->insn[i], &c)) {
                break;
            }
            npu_single_issue(&r, &tb->insn[i], 0, c);
        }
        if (i == tb->n && t->live && t->h.pc != NPU_EXIT_PC && !l->failed) {
            npu_single_next(&r, tb);
        }
    }
    npu_single_flush(&r);
    qatomic_set(&u->busy_cycles, u->busy_cycles + r.busy);
}

/*
 * The event-driven form of the loop in npu_unit_run. A live thread either
 * can issue (its live[] position's bit in ready_mask; charged
 * NOT_SELECTED) or waits until t->wake for the reason t->stall. What
 * npu_cu_ready reads changes only when the thread issues, when the
 * dividers or the memory queue take a request, at a barrier release and
 * in npu_cu_yield, so a thread is looked at again only then, at the next
 * cycle; its cycles are charged when its reason changes or it leaves
 * (npu_slot_settle, from t->since), not every cycle. The same cycles,
 * stall reasons, issue order and samples as the loop (its cycles are
 * visited in the same steps: one at a time while a thread can issue, else
 * a jump to the first wake-up); not over 64 thread slots.
 */
static inline void npu_slot_settle(NpuSlot *t, uint64_t c)
{
    t->l->st.thread_cycles += c - t->since;
    t->l->st.stall[t->stall] += c - t->since;
    t->since = c;
}

/* From cycle c on, t's cycles go to reason why. */
static inline void npu_slot_reason(NpuSlot *t, uint8_t why, uint64_t c)
{
    if (t->stall != why) {
        npu_slot_settle(t, c);
        t->stall = why;
    }
}

/* Can the thread at live position k issue at c, else until when and why. */
static void npu_unit_look(NpuState *s, NpuUnit *u, unsigned k, uint64_t c)
{
    NpuSlot *t = &u->slot[u->live[k]];
    const NpuCuInsn *d = NULL;
    uint64_t when;
    uint8_t why;

    if (!t->barrier) {
        d = npu_slot_decode(s, t, t->l);
    }
    t->wait_cls = d ? d->d.cls : NPU_RV_NCLASSES;
    when = npu_cu_ready(u, t, d, c, &why);
    if (when <= c) {
        npu_slot_reason(t, NPU_STALL_NOT_SELECTED, c);
        u->ready_mask |= 1ull << k;
    } else {
        npu_slot_reason(t, why, c);
        u->ready_mask &= ~(1ull << k);
        t->wake = when;
        u->next_wake = MIN(u->next_wake, when);
    }
}

static void npu_unit_look_all(NpuState *s, NpuUnit *u, uint64_t c)
{
    unsigned k;

    u->ready_mask = 0;
    u->next_wake = UINT64_MAX;
    for (k = 0; k < u->nlive; k++) {
        npu_unit_look(s, u, k, c);
    }
}

/* Waiting threads whose wake-up is c can issue from c. */
static void npu_unit_wake(NpuUnit *u, uint64_t c)
{
    uint64_t waiting = ~u->ready_mask & npu_live_bits(u->nlive);

    u->next_wake = UINT64_MAX;
    while (waiting) {
        unsigned k = ctz64(waiting);
        NpuSlot *t = &u->slot[u->live[k]];

        waiting &= waiting - 1;
        if (t->wake <= c) {
            npu_slot_reason(t, NPU_STALL_NOT_SELECTED, t->wake);
            u->ready_mask |= 1ull << k;
        } else {
            u->next_wake = MIN(u->next_wake, t->wake);
        }
    }
}

/* n cycles of the unit: its launches' unit cycles and its busy cycles. */
static inline void npu_unit_charge(NpuUnit *u, uint64_t n)
{
    unsigned i;

    for (i = 0; i < u->nlaunches; i++) {
        u->launches[i]->st.unit_cycles += n;
    }
    if (u->ncode) {
        qatomic_set(&u->busy_cycles, u->busy_cycles + n);
    }
}

static void npu_unit_settle_all(NpuUnit *u, uint64_t c)
{
    unsigned k;

    for (k = 0; k < u->nlive; k++) {
        npu_slot_settle(&u->slot[u->live[k]], c);
    }
}

/* The first cycle a waiting thread wakes up at (UINT64_MAX: none). */
static uint64_t npu_unit_first_wake(NpuUnit *u)
{
    uint64_t waiting = ~u->ready_mask & npu_live_bits(u->nlive);
    uint64_t first = UINT64_MAX;

    while (waiting) {
        first = MIN(first, u->slot[u->live[ctz64(waiting)]].wake);
        waiting &= waiting - 1;
    }
    return first;
}

/* The first PC sample point >= c of the unit's launches. */
static uint64_t npu_unit_next_sample(NpuUnit *u, uint64_t c)
{
    uint64_t next = UINT64_MAX;
    unsigned i;

    for (i = 0; i < u->nlaunches; i++) {
        uint32_t period = u->launches[i]->sample_period;

        if (period) {
            next = MIN(next, QEMU_ALIGN_UP(c, period));
        }
    }
    return next;
}

/*
 * PC samples in [c, c + n), as npu_cu_charge takes them: thread by thread
 * in live order. The thread at live position pick issues at c.
 */
static void npu_unit_sample(NpuState *s, NpuUnit *u, uint64_t c, uint64_t n,
                            int pick)
{
    unsigned k, unit = u - s->cu->unit;

    for (k = 0; k < u->nlive; k++) {
        NpuSlot *t = &u->slot[u->live[k]];

        if (t->l->sample_period && !t->l->failed) {
            npu_cu_sample(s, t, unit, c, n,
                          (int)k == pick ? NPU_STALL_SELECTED : t->stall);
        }
    }
}

/*
 * A thread's part of a lockstep run (npu_unit_lockstep), kept aside until
 * the run's end is known: the instructions it issued, its cycles by
 * reason, and the last one (a copy: superblocks and decoded pages may go).
 */
typedef struct NpuLsPart {
    NpuRvHart h0;               /* the hart before the run */
    uint64_t first;             /* the cycle of its first turn */
    uint64_t issued;
    uint64_t broke;             /* turn of an instruction not fit, or ~0 */
    uint64_t stall[NPU_STALL_COUNT];
    uint64_t cycles;            /* thread cycles */
    NpuCuInsn last;
    bool last_moved;
} NpuLsPart;

/*
 * Thread t's turns from p->first, every n cycles, before limit: each
 * issues its next instruction while that is fit for the lockstep. Whole
 * superblocks whose instructions all are run at once (npu_tb_chain's run
 * mode), their waits taken from the superblock (ls_wait); others one
 * instruction at a time. The cycles are charged as npu_unit_run_events
 * would: before the first turn, t's current reason; between two turns,
 * the wait after the first (npu_ls_wait_after), then NOT_SELECTED.
 */
static void npu_ls_run(NpuState *s, NpuSlot *t, NpuLsPart *p, unsigned n,
                       uint64_t limit, bool fp_host)
{
    NpuLaunch *l = t->l;
    uint64_t at = p->first;
    bool frm_ok = ((t->h.fcsr >> 5) & 7) <= 4;
    const NpuCuInsn *prev = NULL;
    NpuCuInsn prev_copy;
    bool prev_moved = false;
    NpuTb *tb = NULL, *from = NULL;
    unsigned i = 0;             /* tb->insn[i] is at the thread's pc */

    p->h0 = t->h;
    p->issued = 0;
    p->broke = ~0ull;
    memset(p->stall, 0, sizeof(p->stall));
    p->cycles = 0;
    while (at < limit) {
        const NpuCuInsn *ci;
        uint64_t pc = t->h.pc, epoch;
        uint8_t why;
        unsigned w;

        if (!tb || tb->pc + 4 * i != pc) {
            /* superblocks may go: keep prev */
            if (prev && prev != &prev_copy) {
                prev_copy = *prev;
                prev = &prev_copy;
            }
            epoch = l->tb_epoch;
            tb = npu_tb_get(s, l, pc);
            if (from && l->tb_epoch == epoch) {
                from->succ[prev_moved] = tb;
            }
            i = 0;
        }
        from = NULL;
        ci = tb ? &tb->insn[i] : NULL;
        if (!ci || !(ci->fast & NPU_CU_FAST_LOCKSTEP) ||
            (ci->d.cls == NPU_RV_FP && ci->d.rm == 7 && !frm_ok)) {
            p->broke = at;
            break;
        }
        /* the cycles since the last issue */
        if (!prev) {
            p->stall[t->stall] += at - t->since;
            p->cycles += at - t->since;
        } else {
            w = npu_ls_wait_after(prev, prev_moved, ci, &why);
            p->stall[why] += w;
            p->stall[NPU_STALL_NOT_SELECTED] += n - 1 - w;
            p->cycles += n - 1;
        }
        if (!i && tb->simple && tb->ls_ok && frm_ok &&
            at + (uint64_t)(tb->n - 1) * n < limit) {
            NpuTbRun run = { .h = &t->h, .fp_host = fp_host };

            npu_tb_chain(NULL, tb, &run);
            assert(run.npc != NPU_RV_NOT_INT);  /* npu_cu_lockstep_fit */
            p->stall[NPU_STALL_WAIT] += tb->ls_wait;
            p->stall[NPU_STALL_NOT_SELECTED] +=
                (uint64_t)(tb->n - 1) * (n - 1) - tb->ls_wait;
            p->stall[NPU_STALL_SELECTED] += tb->n;
            p->cycles += tb->n + (uint64_t)(tb->n - 1) * (n - 1);
            p->issued += tb->n;
            at += (uint64_t)tb->n * n;
            prev = &tb->insn[tb->n - 1];
            prev_moved = run.npc != tb->pc + 4 * tb->n;
            from = tb;
            tb = tb->succ[prev_moved];
        } else {
            uint64_t fault, maddr;

            if (!npu_rv_exec_int(&t->h, &ci->d)) {
                uint32_t res = npu_rv_exec(&t->h, &ci->d, &npu_cu_ops, NULL,
                                           &fault, &maddr);

                assert(!res);           /* npu_cu_lockstep_fit */
            }
            p->stall[NPU_STALL_SELECTED]++;
            p->cycles++;
            p->issued++;
            at += n;
            prev = ci;
            prev_moved = t->h.pc != pc + 4;
            i++;
        }
    }
    if (prev) {
        p->last = *prev;
        p->last_moved = prev_moved;
    }
}

/*
 * Round robin in lockstep. When n >= 4 running threads can all issue at
 * c, with no result pending, and their next instructions are fit for it
 * (npu_cu_lockstep_fit: latencies of at most 4, no divider), every
 * thread can issue at each of its turns: the unit issues every cycle,
 * taking the threads in live order after u->rr, and a thread waits for
 * its last result or branch bubble (at most 4 cycles), then
 * NOT_SELECTED, until its next turn. That goes on until a thread's next
 * instruction at its turn is not fit, the quantum ends or a PC sample
 * point comes. Simple instructions touch nothing but their thread's
 * registers, so the threads are run one after the other, each for all
 * its turns before that end (npu_ls_run); a thread that stops early moves
 * the end earlier, and a thread already run past it runs again from its
 * saved hart, for its turns before the end. Then each thread's last
 * issue and the wait after it are the per-instruction model's
 * (npu_cu_time_simple, npu_cu_ready). Returns the cycles run, 0 if it
 * does not apply.
 */
static uint64_t npu_unit_lockstep(NpuState *s, NpuUnit *u, uint64_t c,
                                  uint64_t end, uint64_t sample)
{
    unsigned n = u->nlive, pos0, j, k;
    uint64_t limit = MIN(end, sample), ran;
    NpuLsPart part[64];         /* ready_mask: at most 64 live threads */
    bool fp_host = npu_rv_host_rounds_nearest();

    if (n < 4 || n > ARRAY_SIZE(part) || u->ready_mask != npu_live_bits(n)) {
        return 0;
    }
    for (k = 0; k < n; k++) {
        NpuSlot *t = &u->slot[u->live[k]];

        if (((t->l->flags & NPU_CODE_ITRACE) &&
             t->blk->idx == t->l->trace_block) || t->ready_max > c) {
            return 0;
        }
        t->wake = 0;
    }
    pos0 = u->rr + 1 >= n ? 0 : u->rr + 1;
    /* thread j of the turn order is at live position (pos0 + j) % n */
    for (j = 0; j < n; j++) {
        NpuSlot *t = &u->slot[u->live[(pos0 + j) % n]];

        part[j].first = c + j;
        npu_ls_run(s, t, &part[j], n, limit, fp_host);
        if (part[j].broke < limit) {
            limit = part[j].broke;
        }
    }
    ran = limit - c;
    for (j = 0; j < n; j++) {
        NpuSlot *t = &u->slot[u->live[(pos0 + j) % n]];
        NpuLsPart *p = &part[j];
        uint64_t turns = limit > p->first ? (limit - p->first + n - 1) / n : 0;
        NpuLaunch *l = t->l;
        const NpuCuInsn *next;
        uint64_t at, when;
        uint8_t why;

        if (p->issued > turns) {
            t->h = p->h0;
            npu_ls_run(s, t, p, n, limit, fp_host);
            assert(p->issued == turns);
        }
        if (!p->issued) {
            continue;
        }
        for (k = 0; k < NPU_STALL_COUNT; k++) {
            l->st.stall[k] += p->stall[k];
        }
        l->st.thread_cycles += p->cycles;
        l->st.instructions += p->issued;
        /* its last issue, and the wait after it, as the general loop's */
        at = p->first + (p->issued - 1) * n;
        t->since = at + 1;
        npu_cu_time_simple(u, t, &p->last, at, p->last_moved);
        next = npu_slot_decode(s, t, l);
        if (next && (next->fast & NPU_CU_FAST_LOCKSTEP)) {
            when = at + 1 + npu_ls_wait_after(&p->last, p->last_moved, next,
                                              &why);
        } else {
            when = npu_cu_ready(u, t, next, at + 1, &why);
        }
        t->wake = 0;
        t->stall = NPU_STALL_NOT_SELECTED;
        if (when > at + 1) {
            t->stall = why;
            t->wake = when;
        }
    }
    /* waits that ended by now were NOT_SELECTED from their end */
    for (k = 0; k < n; k++) {
        NpuSlot *t = &u->slot[u->live[k]];

        if (t->wake && t->wake <= limit) {
            npu_slot_reason(t, NPU_STALL_NOT_SELECTED, t->wake);
        }
    }
    if (ran) {
        u->rr = (pos0 + (ran - 1)) % n;
        qatomic_set(&u->instrs, u->instrs + ran);
        npu_unit_charge(u, ran);
    }
    return ran;
}

/* out of line: npu_unit_run_single's code stays as it was (isa_mips) */
static void __attribute__((noinline))
npu_unit_run_events(NpuState *s, NpuUnit *u, uint64_t end)
{
    uint64_t c = u->cycle, sample = npu_unit_next_sample(u, c);
    unsigned k;

    for (k = 0; k < u->nlive; k++) {
        u->slot[u->live[k]].since = c;
    }
    u->resched = false;
    npu_unit_look_all(s, u, c);
    u->lazy = true;
    while (c < end && u->nlive) {
        uint64_t div_free, fdiv_free, mem_reqs, m;
        const NpuCuInsn *pick_d;
        uint32_t classes = 0;
        unsigned pick, nlive;
        NpuSlot *pt;

        if (unlikely(qatomic_read(&s->mmu_waiters) ||
                     qatomic_read(&s->resetting) ||
                     qatomic_read(&s->cu->cancel_pending))) {
            npu_unit_settle_all(u, c);
            u->lazy = false;
            npu_cu_yield(s);
            if (!u->nlive) {
                break;
            }
            /* translations may have gone: look at everyone again */
            npu_unit_look_all(s, u, c);
            u->lazy = true;
            sample = npu_unit_next_sample(u, c);
        }
        if (c >= u->next_wake) {
            npu_unit_wake(u, c);
        }
        if (u->ready_mask == npu_live_bits(u->nlive)) {
            uint64_t ran = npu_unit_lockstep(s, u, c, end, sample);

            if (ran) {
                c += ran;
                u->cycle = c;
                npu_unit_look_all(s, u, c);
                continue;
            }
        }
        if (!u->ready_mask) {
            /*
             * nothing can issue: jump to the first wake-up (exactly: the
             * samples of a jump are in thread order, not cycle order)
             */
            uint64_t to;

            u->next_wake = npu_unit_first_wake(u);
            to = MAX(MIN(u->next_wake, end), c + 1);
            npu_unit_charge(u, to - c);
            if (sample < to) {
                npu_unit_sample(s, u, c, to - c, -1);
                sample = npu_unit_next_sample(u, to);
            }
            c = to;
            u->cycle = c;
            continue;
        }
        /* round robin: the first that can issue after the last to issue */
        m = u->ready_mask & ~npu_live_bits(u->rr + 1);
        pick = ctz64(m ? m : u->ready_mask);
        pt = &u->slot[u->live[pick]];
        npu_unit_charge(u, 1);
        if (sample <= c) {
            npu_unit_sample(s, u, c, 1, pick);
            sample = npu_unit_next_sample(u, c + 1);
        }
        npu_slot_settle(pt, c);
        pt->l->st.thread_cycles++;
        pt->l->st.stall[NPU_STALL_SELECTED]++;
        pt->since = c + 1;
        u->rr = pick;
        u->cycle = c + 1;
        pick_d = npu_slot_decode(s, pt, pt->l);
        div_free = u->div_free;
        fdiv_free = u->fdiv_free;
        mem_reqs = u->mem_reqs;
        nlive = u->nlive;
        /* a thread that leaves in the issue was charged for cycle c */
        u->lazy_at = c + 1;
        if (likely(npu_cu_is_simple(pt, pick_d)) &&
            likely(npu_cu_issue_simple(u, pt, pick_d, c))) {
            NpuLaunch *pl = pt->l;

            pl->st.instructions++;
            qatomic_set(&u->instrs, u->instrs + 1);
            if (unlikely(pt->h.pc == NPU_EXIT_PC)) {
                npu_cu_thread_end(s, u, pt, c);
            }
            if (unlikely(pl->failed)) {
                npu_cu_stop_launch(s, pl);
            }
        } else {
            npu_cu_issue(s, u, pt, pick_d, pt->d_err, c);
        }
        c++;
        if (u->resched || u->nlive != nlive) {
            u->resched = false;
            npu_unit_look_all(s, u, c);
            continue;
        }
        npu_unit_look(s, u, pick, c);
        if (u->div_free != div_free) {
            classes |= 1u << NPU_RV_DIV;
        }
        if (u->fdiv_free != fdiv_free) {
            classes |= 1u << NPU_RV_FDIV;
        }
        if (u->mem_reqs != mem_reqs) {
            classes |= 1u << NPU_RV_LOAD | 1u << NPU_RV_STORE |
                       1u << NPU_RV_AMO;
        }
        for (k = 0; classes && k < u->nlive; k++) {
            if (k != pick && (classes >> u->slot[u->live[k]].wait_cls & 1)) {
                npu_unit_look(s, u, k, c);
            }
        }
    }
    npu_unit_settle_all(u, c);
    u->lazy = false;
}


/* Run unit u from its current cycle up to end. */
static void npu_unit_run(NpuState *s, NpuUnit *u, uint64_t end)
{
    /* see npu_unit_run_single for when it applies */
    if (u->nlive == 1 && u->nlaunches == 1 &&
        u->launches[0] == u->slot[u->live[0]].l &&
        !u->slot[u->live[0]].barrier) {
        npu_unit_run_single(s, u, end);
    }
    if (u->cycle < end && u->nlive && s->cu_threads <= 64) {
        npu_unit_run_events(s, u, end);
    }
    while (u->cycle < end && u->nlive) {
        uint64_t c = u->cycle, wake = UINT64_MAX;
        const NpuCuInsn *pick_d;
        NpuSlot *pt;
        uint32_t nl;
        int pick = -1;
        unsigned k, pos;

        if (unlikely(qatomic_read(&s->mmu_waiters) ||
                     qatomic_read(&s->resetting) ||
                     qatomic_read(&s->cu->cancel_pending))) {
            npu_cu_yield(s);
            if (!u->nlive) {
                break;
            }
        }
        nl = u->nlive;
        pos = u->rr + 1 >= nl ? 0 : u->rr + 1;
        for (k = 0; k < nl; k++, pos = pos + 1 == nl ? 0 : pos + 1) {
            NpuSlot *t = &u->slot[u->live[pos]];
            NpuLaunch *l = t->l;
            const NpuCuInsn *d = NULL;
            uint64_t when;

            if (!t->barrier) {
                d = npu_slot_decode(s, t, l);
            }
            when = npu_cu_ready(u, t, d, c, &t->stall);
            if (when <= c) {
                if (pick < 0) {
                    pick = pos;
                    t->stall = NPU_STALL_SELECTED;
                } else {
                    t->stall = NPU_STALL_NOT_SELECTED;
                }
            } else {
                wake = MIN(wake, when);
            }
        }
        if (pick < 0) {
            /* nothing can issue: jump to the first wake-up */
            uint64_t to = MIN(wake, end);

            if (to <= c) {
                to = c + 1;
            }
            npu_cu_charge(s, u, c, to - c);
            u->cycle = to;
            continue;
        }
        npu_cu_charge(s, u, c, 1);
        u->rr = pick;
        u->cycle = c + 1;
        /*
         * Decode the pick again: a thread after it in the scan whose code
         * is NPU_CODE_PAGES pages away may have decoded its page into the
         * same entry, over the pick's instructions.
         */
        pt = &u->slot[u->live[pick]];
        pick_d = npu_slot_decode(s, pt, pt->l);
        npu_cu_issue(s, u, pt, pick_d, pt->d_err, c);
    }
    u->idle_at = !u->nblocks && u->cycle < end ? u->cycle : UINT64_MAX;
    if (u->cycle < end) {
        u->cycle = end;
    }
}

/*
 * Dispatcher
 */

static void npu_block_free(NpuState *s, NpuUnit *u, NpuBlock *b)
{
    NpuLaunch *l = b->l;
    unsigned i;

    for (i = 0; i < s->cu_threads; i++) {
        NpuSlot *t = &u->slot[i];

        if (t->blk == b) {
            if (t->live) {
                npu_unit_unlive(u, i);
            }
            if (t->h.reserved) {
                t->h.reserved = false;
                s->cu->nreserved--;
            }
            g_free(t->stack);
            t->stack = NULL;
            t->blk = NULL;
            t->live = false;
            t->barrier = false;
            u->free_slots++;
        }
    }
    for (i = 0; i < u->nblocks; i++) {
        if (u->blocks[i] == b) {
            u->blocks[i] = u->blocks[--u->nblocks];
            break;
        }
    }
    if (l->fixed) {
        qatomic_set(&u->fixed_ns,
                    u->fixed_ns + MAX(npu_now() - b->fixed_start, 0));
        if (s->vtime) {
            l->last_cycle = MAX(l->last_cycle,
                                MIN(b->fixed_end_cycle, s->cu->cycle));
        }
    } else {
        u->ncode--;
        u->free_scratch += l->scratch;
        npu_unit_launch(u, l, -1);
    }
    l->resident--;
    l->done_blocks++;
    g_free(b->scratch);
    g_free(b);
}

/*
 * Does a block of l fit on u? A fixed-function block needs an empty unit;
 * a LAUNCH_CODE block needs thread slots and scratchpad, on a unit that
 * holds no fixed-function block.
 */
static bool npu_unit_fits(const NpuUnit *u, const NpuLaunch *l)
{
    if (l->fixed) {
        return !u->nblocks;
    }
    return u->free_slots >= l->nthreads && u->free_scratch >= l->scratch &&
           u->nblocks == u->ncode;
}

/*
 * A block of l is about to run in the current quantum: hold l's ring in
 * an MMU access until the quantum ends (once per ring), and drop l's own
 * cached translations and code if the ring's were dropped since they were
 * filled. Every block runs inside such an access, whether it was resident
 * at the quantum's start or placed by a refill in the middle of it (a
 * launch that had no block until then: MMU_INVALIDATE may have found its
 * ring idle and returned, so its caches are checked here).
 */
static void npu_cu_quantum_access(NpuCuState *cs, NpuLaunch *l)
{
    unsigned i;

    for (i = 0; i < cs->naccess && cs->access[i] != l->ring; i++) {
        continue;
    }
    if (i == cs->naccess) {
        npu_mmu_access_begin(l->ring);
        cs->access[cs->naccess++] = l->ring;
    }
    if (l->gen != l->ring->tlb_gen) {
        npu_launch_flush(l);
        l->gen = l->ring->tlb_gen;
    }
}

/* Place the next block of l on unit u at the unit's cycle, if it fits. */
static bool npu_block_place(NpuState *s, NpuUnit *u, NpuLaunch *l)
{
    g_autofree uint8_t **stacks = NULL;
    uint8_t *scratch = NULL;
    uint64_t c;
    NpuBlock *b;
    uint64_t idx = l->next_block;
    unsigned i, k, tid = 0;

    if (u->cycle < s->cu->cycle) {
        u->cycle = s->cu->cycle;        /* an idle unit catches up */
    }
    c = u->cycle;
    if (!npu_unit_fits(u, l)) {
        return false;
    }
    if (!l->fixed) {
        /*
         * Host memory for the block's scratchpad and stacks: at the
         * largest settings that is gigabytes, so a failure fails the
         * launch instead of QEMU.
         */
        stacks = g_new0(uint8_t *, l->nthreads);
        scratch = g_try_malloc0(MAX(l->scratch, 1));
        for (i = 0; scratch && i < l->nthreads; i++) {
            stacks[i] = g_try_malloc0(MAX(l->stack, 1));
            if (!stacks[i]) {
                break;
            }
        }
        if (!scratch || i < l->nthreads) {
            for (i = 0; i < l->nthreads; i++) {
                g_free(stacks[i]);
            }
            g_free(scratch);
            npu_cu_fail(l, NPU_ERR_BAD_ARGS, 0, NULL, 0);
            return false;
        }
    }
    if (!l->fixed && s->cu->in_quantum) {
        trace_npu_cu_place_in_quantum(l->ring->idx, idx);
        npu_cu_quantum_access(s->cu, l);
    }
    b = g_new0(NpuBlock, 1);
    b->l = l;
    b->idx = idx;
    u->blocks[u->nblocks++] = b;
    l->next_block++;
    l->resident++;
    l->st.blocks++;
    if (!l->started) {
        l->started = true;
        l->first_cycle = c;
        l->st.start_ns = s->vtime ? npu_c2ns(s, c) : npu_clock(s);
    }
    if (l->fixed) {
        b->fixed_start = npu_now();
        b->fixed_end = b->fixed_start + l->fixed_ns;
        b->fixed_end_cycle = l->fixed_ns >= NPU_FIXED_FOREVER ? UINT64_MAX :
                             c + npu_ns2c(s, l->fixed_ns, true);
        return true;
    }
    b->bx = idx % l->grid[0];
    b->by = idx / l->grid[0] % l->grid[1];
    b->bz = idx / l->grid[0] / l->grid[1];
    b->live = l->nthreads;
    b->scratch = scratch;
    u->free_scratch -= l->scratch;
    u->ncode++;
    for (i = 0; i < s->cu_threads && tid < l->nthreads; i++) {
        NpuSlot *t = &u->slot[i];

        if (t->blk) {
            continue;
        }
        memset(t, 0, sizeof(*t));
        t->blk = b;
        t->l = l;
        t->live = true;
        t->tid = tid;
        t->tx = tid % l->bdim[0];
        t->ty = tid / l->bdim[0] % l->bdim[1];
        t->tz = tid / l->bdim[0] / l->bdim[1];
        t->stack = stacks[tid];
        t->h.pc = l->entry;
        t->h.x[1] = NPU_EXIT_PC;
        t->h.x[2] = NPU_LOCAL_STACK + l->stack;
        for (k = 0; k < 8; k++) {       /* a0..a7 */
            t->h.x[10 + k] = ldq_le_p(l->params + 8 * k);
        }
        t->issue_at = c;
        t->since = c;
        t->d_pc = UINT64_MAX;
        u->free_slots--;
        tid++;
        /* keep live[] in slot order (the round robin's order) */
        for (k = u->nlive; k && u->live[k - 1] > i; k--) {
            u->live[k] = u->live[k - 1];
        }
        u->live[k] = i;
        u->nlive++;
    }
    npu_unit_launch(u, l, 1);
    return true;
}

/*
 * Unit with the most free thread slots that can take l's next block; not
 * one that became idle in this quantum (npu_cu_refill_idle places there).
 */
static NpuUnit *npu_cu_pick_unit(NpuState *s, NpuLaunch *l)
{
    NpuUnit *best = NULL;
    unsigned i;

    for (i = 0; i < s->n_cus; i++) {
        NpuUnit *u = &s->cu->unit[i];

        if (!npu_unit_fits(u, l) ||
            (s->cu->in_quantum && u->idle_at != UINT64_MAX)) {
            continue;
        }
        if (!best || u->free_slots > best->free_slots) {
            best = u;
        }
    }
    return best;
}

/* Has a queued launch blocks left to place? */
static bool npu_cu_waiting(NpuState *s)
{
    NpuLaunch *l;

    QTAILQ_FOREACH(l, &s->cu->queue, next) {
        if (l->next_block < l->nblocks) {
            return true;
        }
    }
    return false;
}

/*
 * Place blocks in launch order; a launch goes only when the older ones
 * have all their blocks placed.
 */
static void npu_cu_dispatch(NpuState *s)
{
    NpuLaunch *l;

    QTAILQ_FOREACH(l, &s->cu->queue, next) {
        if (l->cancel || l->failed) {
            continue;
        }
        while (l->next_block < l->nblocks) {
            NpuUnit *u = npu_cu_pick_unit(s, l);

            if (!u) {
                return;
            }
            if (!npu_block_place(s, u, l)) {
                break;
            }
        }
    }
}

/*
 * Blocks start when room frees up. The units run a quantum one after the
 * other, so a unit that became idle at cycle f (its last block ended) has
 * seen nothing of the units after it by then. So once every unit has run
 * the quantum, the idle units take the waiting blocks in the order they
 * became idle (then by index), each as the dispatcher would place them
 * (launch order; only while it has as many free thread slots as any unit
 * that fits), at its idle cycle, and run again from there. Built-in
 * kernels' blocks wait for the next dispatch.
 */
static void npu_cu_refill_idle(NpuState *s, uint64_t end)
{
    NpuCuState *cs = s->cu;

    while (npu_cu_waiting(s)) {
        NpuUnit *u = NULL;
        NpuLaunch *l;
        bool placed = false;
        unsigned i;

        for (i = 0; i < s->n_cus; i++) {
            NpuUnit *v = &cs->unit[i];

            if (v->idle_at < end && (!u || v->idle_at < u->idle_at)) {
                u = v;
            }
        }
        if (!u) {
            return;
        }
        u->cycle = u->idle_at;
        u->idle_at = UINT64_MAX;
        qemu_mutex_lock(&s->cu_lock);
        QTAILQ_FOREACH(l, &cs->queue, next) {
            if (l->cancel || l->failed) {
                continue;
            }
            while (l->next_block < l->nblocks) {
                NpuUnit *best = npu_cu_pick_unit(s, l);

                if (l->fixed || !npu_unit_fits(u, l) ||
                    u->free_slots < best->free_slots) {
                    goto out;
                }
                if (!npu_block_place(s, u, l)) {
                    break;
                }
                placed = true;
            }
        }
out:
        qemu_mutex_unlock(&s->cu_lock);
        if (placed) {
            npu_unit_run(s, u, end);
        } else {
            u->cycle = end;
        }
    }
}

/* Write the launch's records; then the ring thread may go on. */
static void npu_launch_finish(NpuState *s, NpuLaunch *l)
{
    if (!l->fixed && !l->failed && !l->cancel) {
        npu_mmu_access_begin(l->ring);
        if (l->gen != l->ring->tlb_gen) {
            npu_launch_flush(l);
            l->gen = l->ring->tlb_gen;
        }
        l->st.start_cycle = l->first_cycle;
        l->st.cycles = l->last_cycle - l->first_cycle;
        l->st.end_ns = s->vtime ? npu_c2ns(s, l->last_cycle) : npu_clock(s);
        if (l->trace_va) {
            struct npu_cu_trace_header h = {
                .magic = cpu_to_le32(NPU_CU_TRACE_MAGIC),
                .record_bytes = cpu_to_le32(sizeof(struct npu_cu_trace_record)),
                .records = cpu_to_le64(l->st.trace_records),
                .lost = cpu_to_le64(l->st.trace_lost),
            };

            npu_cu_write(s, l, l->trace_va, &h, sizeof(h));
        }
        if (l->printf_va) {
            struct npu_printf_header h = {
                .used = cpu_to_le32(l->printf_used),
                .lost = cpu_to_le32(l->st.printf_lost),
            };

            npu_cu_write(s, l, l->printf_va, &h, sizeof(h));
        }
        if (l->stats_va && !l->failed) {
            uint64_t buf[sizeof(l->st) / 8];
            unsigned i;

            memcpy(buf, &l->st, sizeof(buf));
            for (i = 0; i < ARRAY_SIZE(buf); i++) {
                buf[i] = cpu_to_le64(buf[i]);
            }
            npu_cu_write(s, l, l->stats_va, buf, sizeof(buf));
        }
        npu_mmu_access_end(l->ring);
    }
    trace_npu_cu_launch_done(l->ring->idx, l->failed, l->cancel,
                             l->last_cycle - l->first_cycle);
    if (s->vtime && !l->cancel) {
        npu_vt_cu_finished(l->ring, npu_c2ns(s, l->last_cycle));
    }
    if (l->failed || l->cancel) {
        s->cu->ended_exact = false;
    } else {
        s->cu->ended_at = MAX(s->cu->ended_at, l->last_cycle);
    }
    QTAILQ_REMOVE(&s->cu->queue, l, next);
    l->finished = true;
    qemu_cond_broadcast(&s->cu_cond);
}

/*
 * Drop the resident blocks of failed and cancelled launches; finish the
 * launches that are done.
 */
static void npu_cu_reap(NpuState *s, int64_t now)
{
    NpuLaunch *l, *nx;
    unsigned i, j;

    for (i = 0; i < s->n_cus; i++) {
        NpuUnit *u = &s->cu->unit[i];

        for (j = 0; j < u->nblocks;) {
            NpuBlock *b = u->blocks[j];

            /* a drain for migration ends what has an end (npu.c) */
            bool ended = s->vtime ? b->fixed_end_cycle <= s->cu->cycle
                                  : now >= b->fixed_end ||
                                    (qatomic_read(&s->draining) &&
                                     b->l->fixed_ns < NPU_FIXED_FOREVER);

            if (b->direct) {
                j++;
            } else if (b->l->cancel || b->l->failed ||
                       (b->l->fixed && ended)) {
                npu_block_free(s, u, b);        /* moves the last block here */
            } else {
                j++;
            }
        }
    }
    QTAILQ_FOREACH_SAFE(l, &s->cu->queue, next, nx) {
        if (((l->cancel || l->failed) && !l->resident) ||
            l->done_blocks == l->nblocks) {
            npu_launch_finish(s, l);
        }
    }
}

static void npu_cu_pace(NpuState *s)
{
    NpuCuState *cs = s->cu;
    int64_t now = npu_now(), target;

    if (!s->timing || qatomic_read(&s->draining)) {
        cs->anchored = false;
        return;
    }
    if (!cs->anchored) {
        cs->anchored = true;
        cs->wall_anchor = now;
        cs->cycle_anchor = cs->cycle;
        return;
    }
    target = cs->wall_anchor +
             (int64_t)((cs->cycle - cs->cycle_anchor) * 1000 /
                       s->cu_clock_mhz);
    if (now > target + NPU_PACE_SLACK_NS) {
        /* the host is slower than the model: do not catch up later */
        cs->wall_anchor = now;
        cs->cycle_anchor = cs->cycle;
    } else if (target > now) {
        qemu_mutex_unlock(&s->cu_lock);
        g_usleep((target - now) / 1000 + 1);
        qemu_mutex_lock(&s->cu_lock);
    }
}

/* Wait for work: a new launch, a cancel, or the next fixed block's end. */
static void npu_cu_idle(NpuState *s)
{
    int64_t deadline = INT64_MAX, now;
    unsigned i, j;

    for (i = 0; i < s->n_cus; i++) {
        NpuUnit *u = &s->cu->unit[i];

        for (j = 0; j < u->nblocks; j++) {
            if (!u->blocks[j]->direct) {
                deadline = MIN(deadline, u->blocks[j]->fixed_end);
            }
        }
    }
    s->cu->anchored = false;
    if (deadline == INT64_MAX) {
        qemu_cond_wait(&s->cu_cond, &s->cu_lock);
        return;
    }
    now = npu_now();
    if (deadline - now > 2 * SCALE_MS) {
        /* new work wakes the wait; the last millisecond is napped */
        qemu_cond_timedwait(&s->cu_cond, &s->cu_lock,
                            MIN((deadline - now) / SCALE_MS - 1, 1000));
    } else if (deadline > now) {
        qemu_mutex_unlock(&s->cu_lock);
        npu_nap_until(s, deadline, NULL);
        qemu_mutex_lock(&s->cu_lock);
    }
}

/*
 * Move the launches the rings queued to the thread's own queue, ordered by
 * the time their rings queued them, then by ring (with timing=virtual,
 * rings queueing at the same time may do so in any order on the host).
 */
static void npu_cu_take_incoming(NpuCuState *cs)
{
    while (!QTAILQ_EMPTY(&cs->incoming)) {
        NpuLaunch *l, *first = QTAILQ_FIRST(&cs->incoming);

        QTAILQ_FOREACH(l, &cs->incoming, next) {
            if (l->vt_submit < first->vt_submit ||
                (l->vt_submit == first->vt_submit &&
                 l->ring->idx < first->ring->idx)) {
                first = l;
            }
        }
        QTAILQ_REMOVE(&cs->incoming, first, next);
        QTAILQ_INSERT_TAIL(&cs->queue, first, next);
    }
}

/* Run every unit from the current cycle to end (cu_lock held, dropped). */
static void npu_cu_run_units(NpuState *s, uint64_t end)
{
    NpuCuState *cs = s->cu;
    unsigned i;
    NpuLaunch *l;

    /*
     * One MMU access per ring for the quantum (see npu_mmu.c): the rings of
     * the resident launches now, those of launches placed by a refill
     * below when their first block is placed (npu_block_place).
     */
    cs->naccess = 0;
    QTAILQ_FOREACH(l, &cs->queue, next) {
        if (!l->fixed && l->resident) {
            npu_cu_quantum_access(cs, l);
        }
    }
    for (i = 0; i < s->n_cus; i++) {
        cs->unit[i].idle_at = UINT64_MAX;
    }
    cs->in_quantum = true;
    /* the quantum runs unlocked: rings queue and cancel meanwhile */
    qemu_mutex_unlock(&s->cu_lock);
    for (i = 0; i < s->n_cus; i++) {
        NpuUnit *u = &cs->unit[i];

        if (u->cycle < cs->cycle) {
            u->cycle = cs->cycle;
        }
        npu_unit_run(s, u, end);
        /*
         * blocks that ended freed room: refill within the quantum, the
         * units that became idle at their idle cycle, below
         */
        if (npu_cu_waiting(s)) {
            qemu_mutex_lock(&s->cu_lock);
            npu_cu_dispatch(s);
            qemu_mutex_unlock(&s->cu_lock);
        }
    }
    npu_cu_refill_idle(s, end);
    qemu_mutex_lock(&s->cu_lock);
    cs->in_quantum = false;
    for (i = 0; i < cs->naccess; i++) {
        npu_mmu_access_end(cs->access[i]);
    }
    cs->naccess = 0;
    cs->cycle = end;
}

static unsigned npu_cu_count_active(NpuState *s)
{
    unsigned i, n = 0;

    for (i = 0; i < s->n_cus; i++) {
        n += s->cu->unit[i].ncode != 0;
    }
    return n;
}

/* The earliest end of a fixed-function block, in cycles (timing=virtual). */
static uint64_t npu_cu_next_fixed(NpuState *s)
{
    uint64_t next = UINT64_MAX;
    unsigned i, j;

    for (i = 0; i < s->n_cus; i++) {
        NpuUnit *u = &s->cu->unit[i];

        for (j = 0; j < u->nblocks; j++) {
            if (u->blocks[j]->l->fixed) {
                next = MIN(next, u->blocks[j]->fixed_end_cycle);
            }
        }
    }
    return next;
}

/*
 * timing=virtual: units left with nothing to run were idle from the end of
 * the last launch that ended in the quantum, so their time goes back to
 * it. The next launch then starts when its ring queues it, not at the
 * next quantum: a launch's time is its own, not rounded up to quanta.
 */
static void npu_cu_rewind_idle(NpuState *s)
{
    NpuCuState *cs = s->cu;
    unsigned i;

    if (!cs->ended_exact || cs->ended_at >= cs->cycle ||
        !QTAILQ_EMPTY(&cs->queue) || !QTAILQ_EMPTY(&cs->incoming)) {
        return;
    }
    trace_npu_cu_rewind(cs->cycle, cs->ended_at);
    cs->cycle = cs->ended_at;
    for (i = 0; i < s->n_cus; i++) {
        cs->unit[i].cycle = cs->cycle;
    }
}

/*
 * timing=virtual: the units are one engine of the virtual clock. They go
 * on only when the clock has reached them and no ring runs, take the
 * launches queued until then, and simulate up to the earliest time a ring
 * waits for (a launch queued later starts at the next step: at most one
 * quantum late, deterministically).
 */
static void npu_cu_loop_virtual(NpuState *s)
{
    NpuCuState *cs = s->cu;
    uint64_t want = UINT64_MAX;         /* cycle the units wait for */

    qemu_mutex_unlock(&s->cu_lock);
    for (;;) {
        uint64_t now, horizon, end, next;

        if (!npu_vt_cu_step(s, npu_c2ns(s, cs->cycle),
                            want == UINT64_MAX ? UINT64_MAX
                                               : npu_c2ns(s, want),
                            &now, &horizon, &cs->stop)) {
            break;
        }
        qemu_mutex_lock(&s->cu_lock);
        if (want != UINT64_MAX && now >= npu_c2ns(s, want)) {
            cs->cycle = MAX(cs->cycle, want);
        } else {
            cs->cycle = MAX(cs->cycle, npu_ns2c(s, now, false));
        }
        npu_cu_take_incoming(cs);
        npu_cu_reap(s, 0);
        npu_cu_dispatch(s);
        cs->active = npu_cu_count_active(s);
        next = npu_cu_next_fixed(s);
        if (!cs->active) {
            want = next;
            qemu_mutex_unlock(&s->cu_lock);
            continue;
        }
        end = cs->cycle + NPU_CU_QUANTUM;
        if (horizon != UINT64_MAX) {
            end = MIN(end, MAX(npu_ns2c(s, horizon, true), cs->cycle + 1));
        }
        end = MIN(end, MAX(next, cs->cycle + 1));
        cs->ended_at = cs->cycle;
        cs->ended_exact = true;
        npu_cu_run_units(s, end);
        npu_cu_reap(s, 0);
        npu_cu_rewind_idle(s);
        want = cs->cycle;
        qemu_mutex_unlock(&s->cu_lock);
    }
    qemu_mutex_lock(&s->cu_lock);
}

static void *npu_cu_thread(void *opaque)
{
    NpuState *s = opaque;
    NpuCuState *cs = s->cu;

    rcu_register_thread();
    npu_engine_thread_init();
    qemu_mutex_lock(&s->cu_lock);
    if (s->vtime) {
        npu_cu_loop_virtual(s);
    }
    while (!cs->stop) {
        /* VM stopped: park, unless a reset needs the units to cancel */
        if (qatomic_read(&s->paused) && !qatomic_read(&s->resetting)) {
            qemu_cond_wait(&s->cu_cond, &s->cu_lock);
            continue;
        }
        npu_cu_take_incoming(cs);
        npu_cu_reap(s, npu_now());
        npu_cu_dispatch(s);
        cs->active = npu_cu_count_active(s);
        if (!cs->active) {
            npu_cu_idle(s);
            continue;
        }
        npu_cu_run_units(s, cs->cycle + NPU_CU_QUANTUM);
        npu_cu_pace(s);
    }
    /* unrealize: release every waiting ring thread */
    npu_cu_take_incoming(cs);
    while (!QTAILQ_EMPTY(&cs->queue)) {
        QTAILQ_FIRST(&cs->queue)->cancel = true;
        npu_cu_reap(s, INT64_MAX);
    }
    qemu_mutex_unlock(&s->cu_lock);
    rcu_unregister_thread();
    return NULL;
}

/*
 * Ring side
 */

/* Queue l and wait until it finished or the ring is reset; false if reset. */
static bool npu_cu_submit_wait(NpuState *s, NpuRing *r, NpuLaunch *l)
{
    bool cancelled;

    npu_launch_flush(l);
    l->gen = UINT32_MAX;
    l->vt_submit = r->vt;
    qemu_mutex_lock(&s->cu_lock);
    QTAILQ_INSERT_TAIL(&s->cu->incoming, l, next);
    qemu_cond_broadcast(&s->cu_cond);
    if (s->vtime) {
        npu_vt_cu_submit(r);
    }
    while (!l->finished) {
        if (npu_aborted(r) && !l->cancel) {
            l->cancel = true;
            qatomic_set(&s->cu->cancel_pending, true);
            qemu_cond_broadcast(&s->cu_cond);
            if (s->vtime) {
                npu_vt_cu_poke(s);
            }
        }
        qemu_cond_wait(&s->cu_cond, &s->cu_lock);
    }
    cancelled = l->cancel;
    qemu_mutex_unlock(&s->cu_lock);
    if (s->vtime && !cancelled && !npu_vt_cu_wait(r)) {
        return false;
    }
    return !cancelled;
}

static void npu_launch_free(NpuLaunch *l)
{
    unsigned i;

    for (i = 0; i < NPU_CODE_PAGES; i++) {
        g_free(l->code[i].insn);
    }
    npu_tb_free_all(l);
    g_free(l->tb_hash);
    g_free(l);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(NpuLaunch, npu_launch_free)

/*
 * The common case without a round trip through the npu-cu thread (which
 * costs two thread wake-ups per launch): nothing is queued and enough
 * units are empty, so the ring's thread holds them itself, sleeping out
 * the time as other commands do. A unit holding a fixed-function block has
 * no LAUNCH_CODE block, so the npu-cu thread's quantum never touches it;
 * cu_lock covers the placing and freeing. False if it does not apply.
 */
static bool npu_cu_run_fixed_direct(NpuState *s, NpuLaunch *l, bool *ok)
{
    NpuCuState *cs = s->cu;
    NpuUnit *held[NPU_MAX_CUS];
    unsigned i, n = 0, k;

    qemu_mutex_lock(&s->cu_lock);
    if (!QTAILQ_EMPTY(&cs->incoming) || !QTAILQ_EMPTY(&cs->queue)) {
        qemu_mutex_unlock(&s->cu_lock);
        return false;
    }
    for (i = 0; i < s->n_cus && n < l->nblocks; i++) {
        if (npu_unit_fits(&cs->unit[i], l)) {
            held[n++] = &cs->unit[i];
        }
    }
    if (n < l->nblocks) {
        qemu_mutex_unlock(&s->cu_lock);
        return false;
    }
    for (k = 0; k < n; k++) {
        npu_block_place(s, held[k], l);
        held[k]->blocks[held[k]->nblocks - 1]->direct = true;
    }
    qemu_mutex_unlock(&s->cu_lock);

    *ok = npu_sleep_until(l->ring, npu_now() + l->fixed_ns);

    qemu_mutex_lock(&s->cu_lock);
    for (k = 0; k < n; k++) {
        NpuUnit *u = held[k];

        for (i = 0; i < u->nblocks; i++) {
            if (u->blocks[i]->l == l) {
                npu_block_free(s, u, u->blocks[i]);
                break;
            }
        }
    }
    /* units freed: launches queued meanwhile may go now */
    if (!QTAILQ_EMPTY(&cs->incoming) || !QTAILQ_EMPTY(&cs->queue)) {
        qemu_cond_broadcast(&s->cu_cond);
    }
    qemu_mutex_unlock(&s->cu_lock);
    return true;
}

/*
 * A built-in kernel's blocks: each holds a whole unit for ns of wall time
 * (its modelled duration still to run). False if the ring was reset.
 */
bool npu_cu_run_fixed(NpuJob *job, uint32_t blocks, uint64_t ns)
{
    NpuRing *r = job->ring;
    NpuState *s = r->s;
    NpuLaunch *l = g_new0(NpuLaunch, 1);
    bool ok;

    l->ring = r;
    l->fixed = true;
    l->fixed_ns = MIN(ns, INT64_MAX / 4);
    l->nblocks = MAX(blocks, 1);
    if (!s->vtime && npu_cu_run_fixed_direct(s, l, &ok)) {
        npu_launch_free(l);
        return ok;
    }
    ok = npu_cu_submit_wait(s, r, l);
    npu_launch_free(l);
    return ok;
}

static bool npu_bad_field(NpuErr *err, uint64_t pkt_addr, unsigned dw)
{
    err->code = NPU_ERR_BAD_PACKET;
    err->addr = pkt_addr + 4 * dw;
    return false;
}

/*
 * LAUNCH_CODE (full) or LAUNCH_CODE_SHORT: validate every field, then run
 * the grid. The short form is the full one's first 12 dwords: its absent
 * fields read as 0, which is always valid.
 */
bool npu_launch_code(NpuJob *job, const uint32_t *p, unsigned ndw,
                     bool full, uint64_t pkt_addr, NpuErr *err)
{
    NpuRing *r = job->ring;
    NpuState *s = r->s;
    g_autoptr(NpuLaunch) l = NULL;
    unsigned head = full ? NPU_PKT_LAUNCH_CODE_DW :
                           NPU_PKT_LAUNCH_CODE_SHORT_DW;
    uint64_t blocks, threads;
    int64_t t0 = npu_now();
    unsigned i;
    bool ok;

    if (ndw < head || (!full && (ndw - head) % 2)) {
        return npu_bad_field(err, pkt_addr, 0);
    }
    l = g_new0(NpuLaunch, 1);
    l->ring = r;
    l->flags = p[1];
    l->entry = p[2] | (uint64_t)p[3] << 32;
    for (i = 0; i < 3; i++) {
        l->grid[i] = p[4 + i];
        l->bdim[i] = p[7 + i];
    }
    l->scratch = p[10];
    l->stack = p[11];
    if (full) {
        l->stats_va = p[12] | (uint64_t)p[13] << 32;
        l->trace_va = p[14] | (uint64_t)p[15] << 32;
        l->trace_bytes = p[16];
        l->sample_period = p[17];
        l->trace_block = p[18];
        l->nargs = p[19];
        l->printf_va = p[20] | (uint64_t)p[21] << 32;
        l->printf_bytes = p[22];
    } else {
        l->nargs = (ndw - head) / 2;
    }

    if (l->nargs > NPU_CODE_MAX_ARGS) {
        return npu_bad_field(err, pkt_addr, full ? 19 : 0);
    }
    if (ndw != head + 2 * l->nargs) {
        return npu_bad_field(err, pkt_addr, 0);
    }
    if (l->flags & ~(full ? NPU_CODE_FLAGS_ALL : 0)) {
        return npu_bad_field(err, pkt_addr, 1);
    }
    if ((l->entry & 3) || (l->entry >> NPU_VA_BITS)) {
        return npu_bad_field(err, pkt_addr, 2);
    }
    blocks = 1;
    threads = 1;
    for (i = 0; i < 3; i++) {
        if (!l->grid[i]) {
            return npu_bad_field(err, pkt_addr, 4 + i);
        }
        blocks *= l->grid[i];
        if (blocks > UINT32_MAX) {
            return npu_bad_field(err, pkt_addr, 4 + i);
        }
        if (!l->bdim[i]) {
            return npu_bad_field(err, pkt_addr, 7 + i);
        }
        threads *= l->bdim[i];
        if (threads > s->cu_threads) {
            return npu_bad_field(err, pkt_addr, 7 + i);
        }
    }
    if (l->scratch > s->cu_scratch_kib * 1024u) {
        return npu_bad_field(err, pkt_addr, 10);
    }
    if ((l->stack % 16) || l->stack > NPU_CODE_MAX_STACK) {
        return npu_bad_field(err, pkt_addr, 11);
    }
    if (l->stats_va & 7) {
        return npu_bad_field(err, pkt_addr, 12);
    }
    if (l->trace_va & 7) {
        return npu_bad_field(err, pkt_addr, 14);
    }
    if (l->trace_bytes > NPU_CODE_MAX_TRACE ||
        (l->trace_va &&
         l->trace_bytes < sizeof(struct npu_cu_trace_header))) {
        return npu_bad_field(err, pkt_addr, 16);
    }
    if (l->sample_period && !l->trace_va) {
        return npu_bad_field(err, pkt_addr, 17);
    }
    if ((l->flags & NPU_CODE_ITRACE) &&
        (!l->trace_va || l->trace_block >= blocks)) {
        return npu_bad_field(err, pkt_addr, 18);
    }
    if (l->printf_va & 7) {
        return npu_bad_field(err, pkt_addr, 20);
    }
    if (l->printf_bytes > NPU_CODE_MAX_PRINTF ||
        (l->printf_va &&
         l->printf_bytes < sizeof(struct npu_printf_header))) {
        return npu_bad_field(err, pkt_addr, 22);
    }
    if (full && p[23]) {
        return npu_bad_field(err, pkt_addr, 23);
    }
    for (i = 0; i < l->nargs; i++) {
        stl_le_p(l->params + 8 * i, p[head + 2 * i]);
        stl_le_p(l->params + 8 * i + 4, p[head + 1 + 2 * i]);
    }
    l->nblocks = blocks;
    l->nthreads = threads;

    ok = npu_cu_submit_wait(s, r, l);
    if (!ok) {
        return true;            /* reset: the ring is being torn down */
    }
    if (l->failed) {
        *err = l->err;
        return false;
    }
    job->host_bytes += l->st.bytes_read[NPU_SPACE_HOST] +
                       l->st.bytes_written[NPU_SPACE_HOST];
    job->dev_bytes += l->st.bytes_read[NPU_SPACE_DEVICE] +
                      l->st.bytes_written[NPU_SPACE_DEVICE];
    job->ops = l->st.instructions;
    npu_complete(job, t0, s->launch_ns, false,
                 job->host_bytes + job->dev_bytes);
    return true;
}

/*
 * Device side
 */

/* which: 0 = busy ns (CU_BUSY), 1 = busy cycles, 2 = instructions */
uint64_t npu_cu_counter(NpuState *s, unsigned cu, unsigned which)
{
    NpuUnit *u = &s->cu->unit[cu];
    uint64_t v;

    switch (which) {
    case 0:
        v = qatomic_read(&u->fixed_ns) +
            qatomic_read(&u->busy_cycles) * 1000 / s->cu_clock_mhz;
        break;
    case 1:
        v = qatomic_read(&u->busy_cycles);
        break;
    default:
        v = qatomic_read(&u->instrs);
        break;
    }
    return v;
}

/*
 * Migration: copy the units' counters and the device cycle to the
 * vmstate's fields (load: back). The units are idle: every ring is at a
 * command boundary or in a SEM_WAIT.
 */
void npu_cu_migrate(NpuState *s, bool load)
{
    NpuCuState *cs = s->cu;
    unsigned i;

    qemu_mutex_lock(&s->cu_lock);
    if (load) {
        cs->cycle = s->mig_cu_cycle;
        cs->anchored = false;
    } else {
        s->mig_cu_cycle = cs->cycle;
    }
    for (i = 0; i < s->n_cus; i++) {
        NpuUnit *u = &cs->unit[i];

        if (load) {
            qatomic_set(&u->busy_cycles, s->mig_cu_busy_cycles[i]);
            qatomic_set(&u->instrs, s->mig_cu_instrs[i]);
            qatomic_set(&u->fixed_ns, s->mig_cu_fixed_ns[i]);
            u->cycle = cs->cycle;
        } else {
            s->mig_cu_busy_cycles[i] = qatomic_read(&u->busy_cycles);
            s->mig_cu_instrs[i] = qatomic_read(&u->instrs);
            s->mig_cu_fixed_ns[i] = qatomic_read(&u->fixed_ns);
        }
    }
    qemu_mutex_unlock(&s->cu_lock);
}

/* Device reset, after every ring was reset (no launch is queued). */
void npu_cu_reset(NpuState *s)
{
    unsigned i;

    for (i = 0; i < s->n_cus; i++) {
        NpuUnit *u = &s->cu->unit[i];

        qatomic_set(&u->busy_cycles, 0);
        qatomic_set(&u->instrs, 0);
        qatomic_set(&u->fixed_ns, 0);
    }
}

void npu_cu_init(NpuState *s)
{
    NpuCuState *cs = g_new0(NpuCuState, 1);
    unsigned i;

    QTAILQ_INIT(&cs->incoming);
    QTAILQ_INIT(&cs->queue);
    for (i = 0; i < s->n_cus; i++) {
        NpuUnit *u = &cs->unit[i];

        u->slot = g_new0(NpuSlot, s->cu_threads);
        u->blocks = g_new0(NpuBlock *, s->cu_threads);
        u->live = g_new0(uint16_t, s->cu_threads);
        u->launches = g_new0(NpuLaunch *, s->cu_threads);
        u->nblocks_of = g_new0(uint32_t, s->cu_threads);
        u->free_slots = s->cu_threads;
        u->free_scratch = s->cu_scratch_kib * 1024u;
    }
    s->cu = cs;
    qemu_thread_create(&s->cu_thread, "npu-cu", npu_cu_thread, s,
                       QEMU_THREAD_JOINABLE);
}

/* Unrealize, after the ring threads have stopped. */
void npu_cu_fini(NpuState *s)
{
    NpuCuState *cs = s->cu;
    unsigned i;

    qemu_mutex_lock(&s->cu_lock);
    qatomic_set(&cs->stop, true);
    qemu_cond_broadcast(&s->cu_cond);
    qemu_mutex_unlock(&s->cu_lock);
    npu_vt_kick(s);
    qemu_thread_join(&s->cu_thread);
    for (i = 0; i < s->n_cus; i++) {
        g_free(cs->unit[i].slot);
        g_free(cs->unit[i].blocks);
        g_free(cs->unit[i].live);
        g_free(cs->unit[i].launches);
        g_free(cs->unit[i].nblocks_of);
    }
    g_free(cs);
    s->cu = NULL;
}
