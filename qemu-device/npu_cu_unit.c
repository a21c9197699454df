/*
 * npu - virtual NPU PCI device: the compute units' cycle model.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * One unit's step through a quantum (npu_unit_run): decoding into
 * per-launch code pages, the per-instruction model (npu_cu_ready,
 * npu_cu_issue, npu_cu_time_simple: an in-order, fine-grained
 * multithreaded core with a per-thread scoreboard, every thread-cycle
 * charged to one stall reason), and the engines that give exactly its
 * results faster: the one-thread loop with superblocks, the event-driven
 * loop, and the lockstep round robin (Documentation/hw/npu.rst,
 * "Scheduling"). Runs on the npu-cu thread.
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/host-utils.h"
#include "qemu/queue.h"
#include "qemu/rcu.h"
#include "qemu/timer.h"
#include "npu_cu_state.h"
#include "npu_cu_hart.h"
#include "npu_cu_tensor.h"
#include "npu_cu_unit.h"
#include "trace.h"

static const void *const *npu_tb_handler;      /* by NPU_XOP_* */

typedef struct NpuSingle NpuSingle;
typedef struct NpuTbRun NpuTbRun;
static bool npu_tb_chain(NpuSingle *r, NpuTb *tb, NpuTbRun *run);

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
    uint64_t va = l->trace_va + off, pte;

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
    /* staged if its pages can be written (a DMA per record is slow) */
    if (!npu_cu_translate(l, va, true, &pte) &&
        !npu_cu_translate(l, va + sizeof(rec) - 1, true, &pte)) {
        l->trace_stage[l->trace_staged++] = rec;
        l->st.trace_records++;
        if (l->trace_staged == NPU_TRACE_STAGE) {
            npu_trace_flush(s, l);
        }
        return;
    }
    /* the records before it first; then it faults, as it would alone */
    npu_trace_flush(s, l);
    if (npu_cu_write(s, l, va, &rec, sizeof(rec))) {
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

        if (d->cls == NPU_RV_AMO) {
            va = t->h.x[d->rs1];
        }
        /* full at when: every request in flight; a translation saved */
        if (u->mem_first > when &&
            npu_cu_space_of(t->l, va) >= NPU_SPACE_DEVICE) {
            when = u->mem_first;
            *why = NPU_STALL_LG_THROTTLE;
        }
    }
    if (d->cls == NPU_RV_TENSOR || d->cls == NPU_RV_TDMA) {
        when = npu_cu_tensor_ready(u, t, d, when, why);
    }
    return when;
}

/* Are all of the unit's memory requests still in flight at cycle c? */
static inline bool npu_mem_full(const NpuUnit *u, uint64_t c)
{
    return u->mem_first > c;
}

/* Queue a memory request of the unit; returns the cycle its data is back. */
static uint64_t npu_cu_mem_request(NpuState *s, NpuUnit *u, int space,
                                   uint64_t c)
{
    uint64_t *chan, start, per, lat;
    unsigned i, slot = 0;

    if (space == NPU_SPACE_DEVICE) {
        chan = &u->dev_free;
        per = npu_sector_slot(s, s->mem_bw);
        lat = NPU_LAT_DEVICE;
    } else {
        chan = &u->host_free;
        per = npu_sector_slot(s, s->link_bw);
        lat = NPU_LAT_HOST;
    }
    start = MAX(c << 8, *chan);
    *chan = start + per;
    lat += (start >> 8) - c;
    for (i = 1; i < NPU_MEM_QUEUE; i++) {
        if (u->mem_done[i] < u->mem_done[slot]) {
            slot = i;
        }
    }
    u->mem_done[slot] = c + lat;
    u->mem_first = u->mem_done[0];
    for (i = 1; i < NPU_MEM_QUEUE; i++) {
        u->mem_first = MIN(u->mem_first, u->mem_done[i]);
    }
    u->mem_reqs++;
    return c + lat;
}

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
void npu_unit_launch(NpuUnit *u, NpuLaunch *l, int add)
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

/*
 * A block leaves unit u: it ended, its launch failed or was cancelled, or
 * a fixed-function block's time is up.
 */
void npu_block_free(NpuState *s, NpuUnit *u, NpuBlock *b)
{
    NpuLaunch *l = b->l;
    unsigned i;

    npu_cu_tensor_block_gone(s, u, b);
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
        uint64_t busy = npu_cu_tdma_block_busy(u, b);

        b->l->last_cycle = MAX(b->l->last_cycle, c + 1);
        if (busy > c + 1) {
            /* a block does not end while a copy it issued is in flight */
            b->drain_until = busy;
            return;
        }
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
    /* tile DMA copies due by now complete before anything can see them */
    if (unlikely(u->ntdma) && u->tdma[0].done <= c) {
        NpuLaunch *failed;

        while ((failed = npu_cu_tdma_retire(s, u, c))) {
            if (failed != l) {
                npu_cu_stop_launch(s, failed);
            }
        }
        if (l->failed) {
            return;
        }
    }
    if (d->cls == NPU_RV_TENSOR || d->cls == NPU_RV_TDMA) {
        res = npu_cu_tensor_exec(&x, d, &fault, &maddr);
    } else {
        res = npu_rv_exec(&t->h, d, &npu_cu_ops, &x, &fault, &maddr);
    }
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
    case NPU_RV_TDMA:
        /* TDMA.WAIT's count, read as a scratchpad load */
        lat = NPU_LAT_LOCAL;
        why = NPU_STALL_SHORT_SCOREBOARD;
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
        l->stall[t->stall] += n;
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
        tb->why_before[i] = NPU_STALL_SELECTED;
        if (when > c) {
            waits[why] += when - c;
            tb->wait_total += when - c;
            tb->why_before[i] = why;
            c = when;
        }
        tb->issue_off[i] = c;
        npu_cu_time_simple(&u, t, ci, c, i == tb->jump);
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
 * Fetch the superblock's instructions into insn[n..] from pc on: up to
 * the first branch or jump, the page's end, NPU_TB_INSNS or an
 * instruction of another class than the simple ones (which is kept only
 * as the first, alone: *simple false). A jump's target (jumped) may start
 * a page. Returns the new count.
 */
static unsigned npu_tb_fetch(NpuState *s, NpuLaunch *l, uint64_t pc,
                             NpuCuInsn *insn, unsigned n, bool jumped,
                             bool *simple)
{
    uint64_t p = pc;

    *simple = true;
    for (; n < NPU_TB_INSNS; p += 4) {
        const NpuCuInsn *ci;
        uint32_t err;

        if (n && (p != pc || !jumped) && !(p & (NPU_PAGE_SIZE - 1))) {
            break;                      /* the next page is fetched later */
        }
        ci = npu_cu_fetch(s, l, p, &err);
        if (!ci || ci->d.cls == NPU_RV_NCLASSES) {
            break;
        }
        if (!(ci->fast & NPU_CU_FAST)) {
            if (!n) {
                insn[n++] = *ci;
                *simple = false;
            }
            break;
        }
        insn[n++] = *ci;
        if (ci->d.cls == NPU_RV_BRANCH || ci->d.cls == NPU_RV_JUMP) {
            break;
        }
    }
    return n;
}

/*
 * A superblock of the n instructions insn[] at pc, on l's list. side: the
 * index of a conditional branch that leaves by NpuTb.side when taken, or
 * -1.
 */
static NpuTb *npu_tb_new(NpuLaunch *l, uint64_t pc, const NpuCuInsn *insn,
                         unsigned n, bool simple, int side, int jump,
                         int64_t jump_delta)
{
    NpuTb *tb = g_malloc0(sizeof(*tb) + n * sizeof(tb->insn[0]) +
                          (simple ? (n + 1) * sizeof(NpuTbOp) +
                                    n * (sizeof(*tb->issue_off) +
                                         sizeof(*tb->why_before)) : 0));

    tb->pc = pc;
    tb->n = n;
    tb->jump = jump < 0 ? NPU_TB_NO_JUMP : jump;
    tb->jump_delta = jump < 0 ? 0 : jump_delta;
    tb->end = npu_tb_pc(tb, n - 1) + 4;
    tb->simple = simple;
    tb->whole = UINT32_MAX;
    memcpy(tb->insn, insn, n * sizeof(insn[0]));
    if (simple) {
        unsigned i;

        tb->ops = (NpuTbOp *)&tb->insn[n];
        tb->issue_off = (uint16_t *)&tb->ops[n + 1];
        tb->why_before = (uint8_t *)&tb->issue_off[n];
        if (!npu_tb_handler) {
            npu_tb_chain(NULL, NULL, NULL);
        }
        for (i = 0; i < n; i++) {
            const NpuRvInsn *d = &insn[i].d;
            uint8_t xop = npu_tb_xop(&insn[i]);
            int64_t imm = d->imm;

            if (i == tb->jump) {
                xop = d->rd ? NPU_XOP_JAL_IN : NPU_XOP_NOP;
            } else if (xop >= NPU_XOP_BEQ || xop == NPU_XOP_JAL) {
                /* a misaligned target faults: on the general path */
                imm += npu_tb_pc(tb, i) - pc;
                xop = (pc + imm) & 3 ? NPU_XOP_OTHER : xop;
            } else if (xop >= NPU_XOP_FADD_D && xop <= NPU_XOP_FNMADD_S) {
                imm = d->rm;
            }
            if (imm != (int32_t)imm) {
                xop = NPU_XOP_OTHER;
            }
            if ((int)i == side && xop != NPU_XOP_OTHER) {
                /* (an OTHER branch faults if taken: never leaves here) */
                xop += NPU_XOP_SBEQ - NPU_XOP_BEQ;
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
                unsigned w = npu_ls_wait_after(&insn[i], i == tb->jump,
                                               &insn[i + 1], &why);

                if (why == NPU_STALL_BRANCH_RESOLVING) {
                    tb->ls_bubble += w;
                } else {
                    tb->ls_wait += w;
                }
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

/*
 * Build the superblock at pc; NULL if its first instruction cannot be
 * fetched or is illegal (the caller's decode reports it). One that ends
 * in a conditional branch goes on past it (its fall-through), if what
 * follows is simple: taken branches then cost a chain step, not-taken
 * ones nothing.
 */
static NpuTb *npu_tb_build(NpuState *s, NpuLaunch *l, uint64_t pc)
{
    NpuCuInsn insn[NPU_TB_INSNS];
    bool simple;
    unsigned n, m;
    int side = -1, jump = -1;
    int64_t delta = 0;
    uint64_t next;
    NpuTb *tb;

    n = npu_tb_fetch(s, l, pc, insn, 0, false, &simple);
    if (!n) {
        return NULL;
    }
    if (l->ntb + 2 > NPU_TB_LIMIT) {
        npu_tb_free_all(l);
    }
    next = pc + 4 * n;
    /* only simple ones after the first: simple stays true */
    while (simple && n < NPU_TB_INSNS) {
        const NpuRvInsn *d = &insn[n - 1].d;
        uint64_t to = next - 4 + d->imm;

        if (side < 0 && d->cls == NPU_RV_BRANCH) {
            m = npu_tb_fetch(s, l, next, insn, n, false, &simple);
            side = m > n ? (int)n - 1 : -1;
        } else if (jump < 0 && d->op == RV_JAL && !(to & 3) &&
                   to != NPU_EXIT_PC) {
            m = npu_tb_fetch(s, l, to, insn, n, true, &simple);
            if (m > n) {
                jump = n - 1;
                delta = to - next;
                next = to;
            }
        } else {
            break;
        }
        if (m == n) {
            break;
        }
        next += 4 * (m - n);
        n = m;
    }
    if (side < 0) {
        return npu_tb_new(l, pc, insn, n, simple, -1, jump, delta);
    }
    tb = npu_tb_new(l, pc, insn, n, true, side, jump, delta);
    tb->side = npu_tb_new(l, pc, insn, side + 1, true, -1,
                          jump < side ? jump : -1, delta);
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
    l->stall[NPU_STALL_SELECTED] += r->sel;
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
    l->stall[why] += n;
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
        npu_cu_time_simple(r->u, r->t, &tb->insn[k], c, k == tb->jump);
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
    unsigned k = t->h.pc != tb->end;
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
 * the branch-resolving cycles before superblocks (what the superblocks
 * that ran leave of the cycles since `since`); the superblocks that ran,
 * each counting its runs (their retired instructions, issue and stall
 * cycles are added once per chain: the sums are the same); and the results
 * of the last one, written to the thread's ready cycles only when the
 * next superblock could still find one of them pending.
 */
typedef struct NpuChain {
    uint64_t cycle;             /* the unit's */
    uint64_t issue_at;          /* the thread's */
    uint64_t ready_max;         /* the thread's */
    uint64_t since;             /* cycle: since then bubbles and ran's runs */
    NpuTb *ran;                 /* by ran_next; their instret not yet added */
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
    uint64_t bubble = ch->cycle - ch->since;
    NpuTb *tb;
    unsigned k;

    if (ch->last) {
        npu_chain_results(ch, r->t);
    }
    r->u->cycle = ch->cycle;
    r->t->issue_at = ch->issue_at;
    r->t->ready_max = ch->ready_max;
    ch->selected |= ch->ran != NULL;
    if (ch->selected) {
        r->t->stall = NPU_STALL_SELECTED;
    }
    for (tb = ch->ran; tb; tb = tb->ran_next) {
        uint64_t n = tb->runs;

        for (k = 0; k < tb->nwaits; k++) {
            l->stall[tb->waits[k].why] += tb->waits[k].n * n;
        }
        l->st.unit_cycles += tb->wait_total * n;
        l->st.thread_cycles += tb->wait_total * n;
        r->t->h.instret += tb->n * n;
        r->sel += tb->n * n;
        r->insns += tb->n * n;
        r->busy += tb->cycles * n;
        bubble -= tb->cycles * n;
        tb->runs = 0;
    }
    if (bubble) {
        npu_single_stall(r, NPU_STALL_BRANCH_RESOLVING, bubble);
    }
    ch->since = ch->cycle;
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
 * The PC samples of simple superblock tb, which ran whole from c0 after a
 * branch bubble (the thread's pc is now its successor's): in the bubble
 * BRANCH_RESOLVING at tb's first instruction; then, at each instruction's
 * issue cycle (npu_tb_time), SELECTED at its pc, and before it the reason
 * of its wait; as npu_single_wait and npu_single_select would sample.
 */
static void npu_tb_samples(NpuSingle *r, const NpuTb *tb, uint64_t c0)
{
    NpuSlot *t = r->t;
    uint64_t npc = t->h.pc, p, end = c0 + tb->cycles;
    unsigned i = 0;

    for (p = r->sample; p < end; p += r->period) {
        uint8_t why = NPU_STALL_BRANCH_RESOLVING;

        t->h.pc = tb->pc;
        if (p >= c0) {
            while (c0 + tb->issue_off[i] < p) {
                i++;
            }
            t->h.pc = npu_tb_pc(tb, i);
            why = c0 + tb->issue_off[i] == p ? NPU_STALL_SELECTED
                                             : tb->why_before[i];
        }
        npu_cu_sample(r->s, t, r->unit, p, 1, why);
    }
    t->h.pc = npc;
    r->sample = QEMU_ALIGN_UP(end, r->period);
}

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
    NpuTb *tb;                  /* what ran: tb, or its side */
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
        [NPU_XOP_JAL_IN] = &&x_JAL_IN,
#define NPU_XOP_LABEL(name, ...) [NPU_XOP_##name] = &&x_##name,
        NPU_RV_INT_OPS(NPU_XOP_LABEL)
        NPU_RV_FP_FAST_OPS(NPU_XOP_LABEL)
        NPU_TB_BRANCHES(NPU_XOP_LABEL)
#undef NPU_XOP_LABEL
#define NPU_XOP_SIDE_LABEL(name) [NPU_XOP_S##name] = &&x_S##name,
        NPU_TB_BRANCHES(NPU_XOP_SIDE_LABEL)
#undef NPU_XOP_SIDE_LABEL
    };
    NpuSlot *t = NULL;
    NpuUnit *u = NULL;
    NpuLaunch *l = NULL;
    uint64_t *x, *f, c0 = 0, npc, fault, maddr, lim = 0;
    NpuRvHart *h;
    NpuChain ch;
    const NpuTbOp *ops, *o;
    unsigned k;
    bool fp_host, failed = false;
    NpuTb *nx;

    if (run) {
        h = run->h;
        x = h->x;
        f = h->f;
        fp_host = run->fp_host;
        ops = o = tb->ops;
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
    lim = r->end;
    ch = (NpuChain) {
        .cycle = u->cycle, .issue_at = t->issue_at, .ready_max = t->ready_max,
        .since = u->cycle,
    };
    fp_host = npu_rv_host_rounds_nearest();
    /* set on this thread only, by instructions that are not simple */
    failed = l->failed;

#define NPU_TB_PC       npu_tb_pc(tb, o - ops)
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
    ch.cycle = c0;
    ops = o = tb->ops;
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
    /* taken: what ran is the superblock up to here, tb->side */
#define NPU_XOP_SIDE(name) \
x_S##name: \
    if (npu_rv_taken(RV_##name, x[o->rs1], x[o->rs2])) { \
        npc = tb->pc + o->imm; \
        tb = tb->side; \
        goto out; \
    } \
    NPU_TB_NEXT;
    NPU_TB_BRANCHES(NPU_XOP_SIDE)
#undef NPU_XOP_SIDE
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
x_JAL_IN:
    x[o->rd] = NPU_TB_PC + 4;
    NPU_TB_NEXT;
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
    h->instret--;               /* npu_rv_exec counted it; so does out */
    NPU_TB_NEXT;
x_end:
    npc = tb->end;
    k = 0;
    goto out_k;
out:
    k = npc != tb->end;
out_k:
    h->pc = npc;
    if (run) {
        h->instret += tb->n;
        run->npc = npc;
        run->tb = tb;
        return true;
    }
    /* the chain adds tb->n to instret per run (npu_chain_sync) */
    /* tb ran whole from c0: its timing is npu_tb_time's */
    if (unlikely(r->sample < c0 + tb->cycles)) {
        npu_tb_samples(r, tb, c0);
    }
    if (!tb->runs++) {
        tb->ran_next = ch.ran;
        ch.ran = tb;
    }
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
    if (k) {
        ch.issue_at = ch.cycle + NPU_LAT_BRANCH;
    }
    nx = tb->succ[k];
    if (likely(nx && nx->pc == npc && !failed && ch.cycle < lim)) {
        tb = nx;                /* NPU_EXIT_PC has no superblock */
        goto next_block;
    }
    if (unlikely(npc == NPU_EXIT_PC || failed)) {
        npu_chain_sync(r, &ch);
        npu_single_after(r, ch.cycle - 1);
        return true;
    }
    /* nothing else npu_single_goes_on reads changes in a superblock */
    if (ch.cycle >= r->end) {
        nx = nx && nx->pc == npc ? nx : NULL;
        npu_chain_sync(r, &ch);
        t->tb = nx;
        t->tb_epoch = l->tb_epoch;
        return true;
    }
    /* npu_tb_get may free every superblock: nothing kept aside */
    npu_chain_sync(r, &ch);
    t->tb = tb;
    t->tb_epoch = l->tb_epoch;
    nx = npu_single_next(r, tb);
    if (!nx || l->failed) {
        return true;
    }
    tb = nx;
    goto next_block;

no_fit:
    if (tb->side) {
        tb = tb->side;          /* up to the side exit, it may fit */
        goto next_block;
    }
    npu_chain_sync(r, &ch);
    t->tb = tb;
    t->tb_epoch = l->tb_epoch;
    return ch.selected;
stop:
    /* nothing of the instruction at o is committed */
    h->pc = NPU_TB_PC;
    h->instret += o - ops;
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
                    t->h.pc == npu_tb_pc(tb, i); i++) {
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
    t->l->stall[t->stall] += c - t->since;
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
static inline QEMU_ALWAYS_INLINE void
npu_unit_look(NpuState *s, NpuUnit *u, unsigned k, uint64_t c)
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
 * After t issued ci at cycle at (moved: it branched; its timing applied by
 * npu_cu_time_simple): until when, and why, t waits before its next
 * instruction next, as npu_unit_look would find it.
 */
static void npu_ls_wait_next(NpuUnit *u, NpuSlot *t, const NpuCuInsn *ci,
                             bool moved, const NpuCuInsn *next, uint64_t at)
{
    uint64_t when;
    uint8_t why;

    if (next && (next->fast & NPU_CU_FAST_LOCKSTEP)) {
        when = at + 1 + npu_ls_wait_after(ci, moved, next, &why);
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

/* The lockstep ended at cycle at: waits ended by then were NOT_SELECTED. */
static void npu_ls_end(NpuUnit *u, uint64_t at)
{
    unsigned k;

    for (k = 0; k < u->nlive; k++) {
        NpuSlot *t = &u->slot[u->live[k]];

        if (t->wake && t->wake <= at) {
            npu_slot_reason(t, NPU_STALL_NOT_SELECTED, t->wake);
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
    uint64_t stall[NPU_STALL_REASONS];
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

        if (!tb || npu_tb_pc(tb, i) != pc) {
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
        if (!i && tb->ls_ok && frm_ok &&
            at + (uint64_t)(tb->n - 1) * n < limit) {
            NpuTbRun run = { .h = &t->h, .fp_host = fp_host };

            npu_tb_chain(NULL, tb, &run);
            assert(run.npc != NPU_RV_NOT_INT);  /* npu_cu_lockstep_fit */
            tb = run.tb;
            p->stall[NPU_STALL_WAIT] += tb->ls_wait;
            p->stall[NPU_STALL_BRANCH_RESOLVING] += tb->ls_bubble;
            p->stall[NPU_STALL_NOT_SELECTED] +=
                (uint64_t)(tb->n - 1) * (n - 1) - tb->ls_wait -
                tb->ls_bubble;
            p->stall[NPU_STALL_SELECTED] += tb->n;
            p->cycles += tb->n + (uint64_t)(tb->n - 1) * (n - 1);
            p->issued += tb->n;
            at += (uint64_t)tb->n * n;
            prev = &tb->insn[tb->n - 1];
            prev_moved = run.npc != tb->end;
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
 * The lockstep (npu_unit_lockstep) turn by turn: each turn's thread
 * decodes, runs and times its instruction as npu_unit_run_events would.
 * For runs that stop after a few turns (a load comes).
 */
static uint64_t npu_ls_steps(NpuState *s, NpuUnit *u, uint64_t c,
                             uint64_t limit)
{
    unsigned n = u->nlive, pos;
    uint64_t at = c, ran = 0;

    pos = u->rr + 1 >= n ? 0 : u->rr + 1;
    for (; at < limit; at++, pos = pos + 1 == n ? 0 : pos + 1) {
        NpuSlot *t = &u->slot[u->live[pos]];
        NpuLaunch *l = t->l;
        const NpuCuInsn *ci = npu_slot_decode(s, t, l), *next;
        uint64_t pc = t->h.pc, fault, maddr;

        if (!ci || !(ci->fast & NPU_CU_FAST_LOCKSTEP) || t->wake > at ||
            (ci->d.cls == NPU_RV_FP && ci->d.rm == 7 &&
             ((t->h.fcsr >> 5) & 7) > 4)) {
            break;
        }
        if (t->wake) {
            npu_slot_reason(t, NPU_STALL_NOT_SELECTED, t->wake);
        }
        if (!npu_rv_exec_int(&t->h, &ci->d)) {
            uint32_t res = npu_rv_exec(&t->h, &ci->d, &npu_cu_ops, NULL,
                                       &fault, &maddr);

            assert(!res);               /* npu_cu_lockstep_fit */
        }
        /* issued at its turn, as npu_unit_run_events charges it */
        npu_slot_settle(t, at);
        l->st.thread_cycles++;
        l->stall[NPU_STALL_SELECTED]++;
        l->st.instructions++;
        t->since = at + 1;
        npu_cu_time_simple(u, t, ci, at, t->h.pc != pc + 4);
        /*
         * and looked at in the next cycle. For a next instruction fit for
         * the lockstep only what ci did can be pending: its branch bubble
         * and its result (older results were ready by this turn): what
         * npu_cu_ready would find, without its general checks.
         */
        if (t->h.pc == pc + 4 && (t->h.pc & (NPU_PAGE_SIZE - 1))) {
            /* the next word of ci's decoded page */
            next = t->d = ci + 1;
            t->d_pc = t->h.pc;
        } else {
            next = npu_slot_decode(s, t, l);
        }
        npu_ls_wait_next(u, t, ci, t->h.pc != pc + 4, next, at);
        u->rr = pos;
        ran++;
    }
    npu_ls_end(u, at);
    if (ran) {
        qatomic_set(&u->instrs, u->instrs + ran);
        npu_unit_charge(u, ran);
    }
    return ran;
}

/*
 * The lockstep (npu_unit_lockstep) thread by thread: each runs all its
 * turns before the end (npu_ls_run), whole superblocks at once; a thread
 * that stops early moves the end earlier, and a thread already run past
 * it runs again from its saved hart for its turns before it. Then each
 * thread's last issue and the wait after it are the per-instruction
 * model's (npu_cu_time_simple, npu_cu_ready).
 */
static uint64_t npu_ls_blocks(NpuState *s, NpuUnit *u, uint64_t c,
                              uint64_t limit)
{
    unsigned n = u->nlive, pos0, j, k;
    uint64_t ran;
    NpuLsPart part[64];         /* ready_mask: at most 64 live threads */
    bool fp_host = npu_rv_host_rounds_nearest();

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
        uint64_t at;

        if (p->issued > turns) {
            t->h = p->h0;
            npu_ls_run(s, t, p, n, limit, fp_host);
            assert(p->issued == turns);
        }
        if (!p->issued) {
            continue;
        }
        for (k = 0; k < NPU_STALL_REASONS; k++) {
            l->stall[k] += p->stall[k];
        }
        l->st.thread_cycles += p->cycles;
        l->st.instructions += p->issued;
        /* its last issue, and the wait after it, as the general loop's */
        at = p->first + (p->issued - 1) * n;
        t->since = at + 1;
        npu_cu_time_simple(u, t, &p->last, at, p->last_moved);
        npu_ls_wait_next(u, t, &p->last, p->last_moved,
                         npu_slot_decode(s, t, l), at);
    }
    npu_ls_end(u, limit);
    if (ran) {
        u->rr = (pos0 + (ran - 1)) % n;
        qatomic_set(&u->instrs, u->instrs + ran);
        npu_unit_charge(u, ran);
    }
    return ran;
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
 * registers, so when every thread is at the start of a superblock whose
 * instructions all are fit, the threads run one after the other
 * (npu_ls_blocks); otherwise turn by turn (npu_ls_steps). Returns the
 * cycles run, 0 if the lockstep does not apply.
 */
static uint64_t npu_unit_lockstep(NpuState *s, NpuUnit *u, uint64_t c,
                                  uint64_t end, uint64_t sample)
{
    unsigned n = u->nlive, k;
    bool blocks = true;

    if (n < 4 || n > 64 || u->ready_mask != npu_live_bits(n)) {
        return 0;
    }
    for (k = 0; k < n; k++) {
        NpuSlot *t = &u->slot[u->live[k]];
        NpuTb *tb;

        if (((t->l->flags & NPU_CODE_ITRACE) &&
             t->blk->idx == t->l->trace_block) || t->ready_max > c) {
            return 0;
        }
        t->wake = 0;
        if (blocks) {
            tb = npu_slot_tb(s, t);
            blocks = tb && tb->ls_ok;
        }
    }
    return blocks ? npu_ls_blocks(s, u, c, MIN(end, sample))
                  : npu_ls_steps(s, u, c, MIN(end, sample));
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
        uint64_t div_free, fdiv_free, mem_reqs, m, tensor_free, port_free;
        uint64_t tdma_changes;
        const NpuCuInsn *pick_d;
        uint32_t classes = 0;
        unsigned pick, nlive;
        NpuSlot *pt;

        if (unlikely(qatomic_read(&s->mmu_waiters) ||
                     qatomic_read(&s->resetting) ||
                     qatomic_read(&s->cu->cancel_pending))) {
            npu_unit_settle_all(u, c);
            u->lazy = false;
            s->cu->yield(s);
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
        pt->l->stall[NPU_STALL_SELECTED]++;
        pt->since = c + 1;
        u->rr = pick;
        u->cycle = c + 1;
        pick_d = npu_slot_decode(s, pt, pt->l);
        div_free = u->div_free;
        fdiv_free = u->fdiv_free;
        mem_reqs = u->mem_reqs;
        tensor_free = u->tensor_free;
        port_free = u->port_free;
        tdma_changes = u->tdma_changes;
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
        /* the tensor pipe, the tile port, the copies in flight */
        if (u->tensor_free != tensor_free || u->port_free != port_free ||
            u->tdma_changes != tdma_changes) {
            classes |= 1u << NPU_RV_TENSOR | 1u << NPU_RV_TDMA;
        }
        /*
         * A request can only fill the queue (it was not full at c, or the
         * request would have waited): the threads' memory instructions
         * see a change only if it is full now.
         */
        if (u->mem_reqs != mem_reqs && npu_mem_full(u, c)) {
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


/*
 * Blocks whose threads have all ended leave when their last copy has
 * completed, if that is by end; a unit with nothing else to run spends
 * the cycles until then on them (those of the last one: up to end).
 */
static void npu_unit_drain(NpuState *s, NpuUnit *u, uint64_t end)
{
    for (;;) {
        NpuBlock *first = NULL;
        unsigned i;

        for (i = 0; i < u->nblocks; i++) {
            NpuBlock *b = u->blocks[i];

            if (b->drain_until &&
                (!first || b->drain_until < first->drain_until)) {
                first = b;
            }
        }
        if (!first) {
            return;
        }
        if (!u->nlive && u->cycle < MIN(first->drain_until, end)) {
            npu_unit_charge(u, MIN(first->drain_until, end) - u->cycle);
            u->cycle = MIN(first->drain_until, end);
        }
        if (first->drain_until > end) {
            return;
        }
        npu_block_free(s, u, first);
    }
}

/* Run unit u from its current cycle up to end. */
void npu_unit_run(NpuState *s, NpuUnit *u, uint64_t end)
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
            s->cu->yield(s);
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
    npu_unit_drain(s, u, end);
    u->idle_at = !u->nblocks && u->cycle < end ? u->cycle : UINT64_MAX;
    if (u->cycle < end) {
        u->cycle = end;
    }
}
