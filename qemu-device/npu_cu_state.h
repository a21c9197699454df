/*
 * npu - virtual NPU PCI device: the compute units' state, shared by
 * npu_cu.c (the dispatcher, quanta, pacing, virtual time, launches and
 * migration), npu_cu_unit.c (the cycle model and the engines that run
 * it) and npu_cu_hart.c (a thread's memory accesses, CSRs and printf).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_MISC_NPU_CU_STATE_H
#define HW_MISC_NPU_CU_STATE_H

#include "qemu/queue.h"
#include "npu_base.h"
#include "npu_rv.h"
#include "npu_tensor.h"

#define NPU_CU_QUANTUM      4096        /* cycles between unit switches */
#define NPU_CODE_PAGES      16          /* decoded code pages per launch */
#define NPU_CODE_WAYS       2           /* ... in sets of this many */
#define NPU_DTLB            64          /* data translations per launch */
#define NPU_TRACE_STAGE     64          /* trace records written at once */
#define NPU_MEM_QUEUE       8           /* memory requests in flight/unit */
#define NPU_SECTOR          32          /* bytes per memory transaction */
#define NPU_L2_LINE         128         /* bytes per L2 tag */
#define NPU_L2_WAYS         16
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
    /* the tensor engine ("Tensor timing and counters"): see npu_cu_tensor.c */
    NPU_LAT_TFILL = 4,
    /* TLOAD, TSTORE hold the tile port a cycle per 64 bytes of the tile */
    NPU_TILE_PORT_BYTES = 64,
    NPU_LAT_TENSOR_EXTRA = 4,   /* result ready after the pipe is done */
};

/* Stall reasons with the tensor engine's: enum npu_stall and MIO_THROTTLE */
#define NPU_STALL_REASONS   (NPU_STALL_MIO_THROTTLE + 1)

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
 * NPU_TB_INSNS; or a single instruction of another class. A simple one
 * that ends in a conditional branch goes on past it, up to the next end
 * (one side exit: `side`, the superblock up to the branch, is what ran
 * when the branch was taken). The one-thread
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
    NPU_XOP_JAL_IN,             /* a jump the superblock goes on past */
#define NPU_XOP_ENUM(name, ...) NPU_XOP_##name,
    NPU_RV_INT_OPS(NPU_XOP_ENUM)
    NPU_RV_FP_FAST_OPS(NPU_XOP_ENUM)
    NPU_TB_BRANCHES(NPU_XOP_ENUM)
#define NPU_XOP_SIDE_ENUM(name) NPU_XOP_S##name,
    NPU_TB_BRANCHES(NPU_XOP_SIDE_ENUM)    /* taken: leave by NpuTb.side */
#undef NPU_XOP_SIDE_ENUM
#undef NPU_XOP_ENUM
    NPU_XOPS
};

typedef struct NpuTbOp {
    const void *handler;        /* npu_tb_chain's label for xop */
    /* branches and JAL: target - NpuTb.pc; FP: the rounding field */
    int32_t imm;
    uint8_t rd, rs1, rs2, rs3;
} NpuTbOp;


typedef struct NpuTb NpuTb;

struct NpuTb {
    uint64_t pc;
    uint64_t end;               /* the pc after its last instruction */
    NpuTb *succ[2];             /* next: fall-through, elsewhere (or NULL) */
    NpuTb *all_next;            /* the launch's list of superblocks */
    /*
     * A JAL the superblock goes on past, to its target (NPU_TB_NO_JUMP if
     * none): the instructions after it are jump_delta bytes further on
     * than their index says (npu_tb_pc).
     */
    int64_t jump_delta;
    uint16_t jump;
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
    /* simple: instruction i's issue cycle and the reason of its wait */
    uint16_t *issue_off;
    uint8_t *why_before;        /* NPU_STALL_SELECTED: none */
    /*
     * npu_unit_lockstep: simple, every instruction fit for it (ls_ok); the
     * cycles its instructions wait for the one before inside it, for a
     * result (WAIT) and after its inner jump (BRANCH_RESOLVING)
     */
    bool ls_ok;
    uint16_t ls_wait;
    uint16_t ls_bubble;
    /* whole runs in the current npu_tb_chain, not yet in the statistics */
    uint32_t runs;
    NpuTb *ran_next;            /* NpuChain.ran */
    NpuTb *side;                /* up to its side exit's branch, or NULL */
    NpuCuInsn insn[];
};

#define NPU_TB_NO_JUMP  UINT16_MAX

/* The pc of tb's instruction i */
static inline uint64_t npu_tb_pc(const NpuTb *tb, unsigned i)
{
    return tb->pc + 4 * (uint64_t)i + (i > tb->jump ? tb->jump_delta : 0);
}

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
    /* its threads have ended; its tile DMA copies complete then (0: no) */
    uint64_t drain_until;
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
    /* tile registers: NULL until the thread first uses one (all zero) */
    NpuTile *tiles;
    uint64_t tile_ready[NPU_TILE_REGS];
    uint8_t tile_why[NPU_TILE_REGS];
} NpuSlot;

/* A tile DMA copy in flight on its unit (its bytes already moved). */
typedef struct NpuTdma {
    NpuLaunch *l;
    NpuBlock *blk;
    uint64_t done;              /* completion cycle */
    uint64_t barrier_off;       /* the barrier word in blk's scratchpad */
    /* a memory-side fault, reported at done for the TDMA.ISSUE */
    uint32_t err;
    uint64_t fault;
    uint64_t pc;
    uint32_t tid;
} NpuTdma;

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
    uint64_t mem_first;         /* the earliest of mem_done[] */
    uint64_t dev_free;          /* device memory share free at, 1/256 cy */
    uint64_t host_free;         /* link share free at, 1/256 cycle */
    uint64_t l2_free;           /* L2 share free at, 1/256 cycle */
    /* the tensor engine: pipe and tile port free at */
    uint64_t tensor_free;
    uint64_t port_free;
    /* the TMMA last in the pipe, for back-to-back accumulation */
    const NpuSlot *mma_slot;    /* NULL: another op since */
    uint8_t mma_tc, mma_type;
    /* tile DMA: copies in flight, in issue (= completion) order */
    NpuTdma tdma[NPU_TDMA_INFLIGHT];
    uint32_t ntdma;
    uint64_t tdma_changes;      /* copies issued plus copies completed */
    uint64_t tdma_sent;         /* the last copy's last sector sent at */
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
    bool fixed;                 /* diagnostic kernel: whole-unit blocks */
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
    /*
     * The last trace_staged of st.trace_records, not yet in memory: their
     * pages were translated for writing when staged, and they are written
     * before the quantum's MMU access ends (npu_trace_flush).
     */
    uint32_t trace_staged;
    struct npu_cu_trace_record trace_stage[NPU_TRACE_STAGE];
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
    /*
     * thread-cycles by reason (into st.stall[] at the launch's end: all
     * but MIO_THROTTLE), and the tensor engine's counters (written with
     * NPU_CODE_STATS_TENSOR as struct npu_launch_stats_tensor)
     */
    uint64_t stall[NPU_STALL_REASONS];
    uint64_t tensor_cycles;
    uint64_t mma[NPU_MMA_TYPES];
    uint64_t tdma_copies;
    uint64_t tdma_bytes_read;
    uint64_t tdma_bytes_written;
    uint64_t l2_hit_sectors;
    uint64_t l2_id;             /* the L2's lines of this launch carry it */
    uint32_t printf_used;

    uint64_t vt_submit;         /* timing=virtual: ring's present */
    QTAILQ_ENTRY(NpuLaunch) next;
};

/*
 * An L2 line's tag (npu_cu_tensor.c). The L2 is timing only: data always
 * comes from memory, the tags say which copies' sectors it serves.
 */
typedef struct NpuL2Line {
    uint64_t line;              /* physical address / NPU_L2_LINE */
    uint64_t launch;            /* l2_id of the launch that brought it; 0 */
    uint64_t used;              /* l2_clock at its last access */
    uint8_t sectors;            /* bit s: its 32-byte sector s is present */
} NpuL2Line;

struct NpuCuState {
    NpuUnit unit[NPU_MAX_CUS];
    /* the L2: 1 << l2_set_bits sets of NPU_L2_WAYS, at least 32 (l2-kib
     * >= 64); NULL: l2-kib=0 */
    NpuL2Line *l2;
    unsigned l2_set_bits;
    uint64_t l2_clock;          /* accesses so far, for LRU */
    uint64_t l2_launches;       /* l2_ids given out (atomic) */
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
    /*
     * The dispatcher's (npu_cu.c, above the model): between two
     * instructions of a quantum, let go for an MMU invalidation, a reset
     * or a cancelled launch.
     */
    void (*yield)(NpuState *s);
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

static inline int64_t npu_now(void)
{
    return npu_time();
}

/* Unit cycles and device ns (timing=virtual: exact, cycles from 0). */
static inline uint64_t npu_c2ns(NpuState *s, uint64_t c)
{
    return muldiv64(c, 1000, s->cu_clock_mhz);
}

static inline uint64_t npu_ns2c(NpuState *s, uint64_t ns, bool up)
{
    uint64_t c = muldiv64(ns, s->cu_clock_mhz, 1000);

    return up && npu_c2ns(s, c) < ns ? c + 1 : c;
}

/*
 * Cycles, in 1/256, between two 32-byte sectors on a unit's share of a
 * bandwidth of bw_mbps (device memory, the link, the L2), shared equally
 * by the units with RISC-V blocks; at least 1.
 */
static inline uint64_t npu_sector_slot(NpuState *s, uint32_t bw_mbps)
{
    return MAX(((uint64_t)NPU_SECTOR * MAX(s->cu->active, 1) *
                s->cu_clock_mhz << 8) / bw_mbps, 1);
}

#define NPU_FIXED_FOREVER   NPU_FOREVER_NS

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

#endif
