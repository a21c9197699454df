/*
 * npu - virtual NPU PCI device: compute units and the block dispatcher.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * One thread ("npu-cu") runs every compute unit. The compute rings queue
 * launches: LAUNCH_CODE (RISC-V blocks of threads) and LAUNCH (a
 * diagnostic kernel, whose blocks hold whole units for their modelled
 * time). The dispatcher places blocks on units as thread
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
#include "npu_cu_state.h"
#include "npu_cu.h"
#include "npu_cu_hart.h"
#include "npu_cu_unit.h"
#include "npu_job.h"
#include "npu_mmu.h"
#include "npu_vtime.h"
#include "trace.h"

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

/*
 * Write the staged trace records of the resident launches: their pages
 * were translated in the MMU access that is about to end.
 */
static void npu_cu_flush_traces(NpuState *s)
{
    NpuLaunch *l;

    QTAILQ_FOREACH(l, &s->cu->queue, next) {
        if (l->trace_staged) {
            npu_trace_flush(s, l);
        }
    }
}

/*
 * Between two instructions of a quantum (the model calls it through
 * NpuCuState.yield): let go for an MMU invalidation, a reset or a
 * cancelled launch.
 */
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
        npu_cu_flush_traces(s);
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
 * Dispatcher
 */

/*
 * Does a block of l fit on u? A fixed-function block needs an empty unit;
 * a LAUNCH_CODE block needs thread slots and scratchpad, on a unit that
 * holds no fixed-function block.
 */
static bool npu_unit_fits_fixed(const NpuUnit *u)
{
    return !u->nblocks;
}

static bool npu_unit_fits(const NpuUnit *u, const NpuLaunch *l)
{
    if (l->fixed) {
        return npu_unit_fits_fixed(u);
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
    /* the quantum's end wrote them; a cancelled launch's are dropped */
    l->trace_staged = 0;
    if (!l->fixed && !l->failed && !l->cancel) {
        npu_mmu_access_begin(l->ring);
        if (l->gen != l->ring->tlb_gen) {
            npu_launch_flush(l);
            l->gen = l->ring->tlb_gen;
        }
        l->st.start_cycle = l->first_cycle;
        l->st.cycles = l->last_cycle - l->first_cycle;
        memcpy(l->st.stall, l->stall, sizeof(l->st.stall));
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
            struct {
                struct npu_launch_stats st;
                struct npu_launch_stats_tensor tensor;
            } rec = { .st = l->st };
            uint64_t buf[sizeof(rec) / 8];
            unsigned i, n = sizeof(l->st) / 8;

            QEMU_BUILD_BUG_ON(sizeof(rec) != sizeof(l->st) +
                              sizeof(rec.tensor));
            if (l->flags & NPU_CODE_STATS_TENSOR) {
                rec.tensor = (struct npu_launch_stats_tensor) {
                    .stall_mio_throttle = l->stall[NPU_STALL_MIO_THROTTLE],
                    .tensor_cycles = l->tensor_cycles,
                    .tdma_copies = l->tdma_copies,
                    .tdma_bytes_read = l->tdma_bytes_read,
                    .tdma_bytes_written = l->tdma_bytes_written,
                    .l2_hit_sectors = l->l2_hit_sectors,
                };
                memcpy(rec.tensor.mma, l->mma, sizeof(l->mma));
                n = ARRAY_SIZE(buf);
            }
            memcpy(buf, &rec, sizeof(buf));
            for (i = 0; i < n; i++) {
                buf[i] = cpu_to_le64(buf[i]);
            }
            npu_cu_write(s, l, l->stats_va, buf, n * 8);
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
        npu_engine_thread_idle();
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
    npu_cu_flush_traces(s);
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
    npu_engine_thread_idle();
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
/*
 * Up to n units that fixed-function blocks fit on now, into held, if no
 * launch is queued to go first (0 then). cu_lock held.
 */
static unsigned npu_cu_fixed_units_locked(NpuState *s, unsigned n,
                                          NpuUnit **held)
{
    NpuCuState *cs = s->cu;
    unsigned i, got = 0;

    if (!QTAILQ_EMPTY(&cs->incoming) || !QTAILQ_EMPTY(&cs->queue)) {
        return 0;
    }
    for (i = 0; i < s->n_cus && got < n; i++) {
        if (npu_unit_fits_fixed(&cs->unit[i])) {
            held[got++] = &cs->unit[i];
        }
    }
    return got;
}

/*
 * l's blocks on free units at once, for l->fixed_ns from start (the
 * command's start); false if the units are not free. *end gets the time
 * the blocks' hold ended. Engine thread, no lock held.
 */
static bool npu_cu_run_fixed_direct(NpuState *s, NpuLaunch *l, int64_t start,
                                    int64_t *end, bool *ok)
{
    NpuCuState *cs = s->cu;
    NpuUnit *held[NPU_MAX_CUS];
    unsigned i, n, k;

    qemu_mutex_lock(&s->cu_lock);
    n = npu_cu_fixed_units_locked(s, l->nblocks, held);
    if (n < l->nblocks) {
        qemu_mutex_unlock(&s->cu_lock);
        return false;
    }
    for (k = 0; k < n; k++) {
        npu_block_place(s, held[k], l);
        held[k]->blocks[held[k]->nblocks - 1]->direct = true;
    }
    qemu_mutex_unlock(&s->cu_lock);

    /*
     * The time counts from the command's start: placing the blocks is
     * inside it, not added to it (unless they were placed after it).
     */
    *end = MAX(start + l->fixed_ns, npu_now());
    *ok = npu_sleep_until(l->ring, *end);

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
 * Blocks of no modelled time hold their units for none: that n units are
 * free now (and nothing queued goes first) is all they need, without
 * placing and freeing them.
 */
static bool npu_cu_free_now(NpuState *s, uint32_t n)
{
    NpuUnit *held[NPU_MAX_CUS];
    bool free;

    qemu_mutex_lock(&s->cu_lock);
    free = npu_cu_fixed_units_locked(s, n, held) >= n;
    qemu_mutex_unlock(&s->cu_lock);
    return free;
}

static void npu_fixed_launch_init(NpuLaunch *l, NpuRing *r, uint32_t blocks,
                                  uint64_t ns)
{
    l->ring = r;
    l->fixed = true;
    l->fixed_ns = MIN(ns, INT64_MAX / 4);
    l->nblocks = MAX(blocks, 1);
}

/*
 * r's fixed-function record, as new. Placing and freeing fixed blocks
 * change only the fields zeroed here (a fixed launch has no code,
 * translations or trace), so the record need not be freed and zeroed
 * whole for each launch. Engine thread.
 */
static NpuLaunch *npu_fixed_launch_reset(NpuRing *r, uint32_t blocks,
                                         uint64_t ns)
{
    NpuLaunch *l = r->fixed_launch;

    if (!l) {
        l = r->fixed_launch = g_new0(NpuLaunch, 1);
    } else {
        l->next_block = 0;
        l->done_blocks = 0;
        l->resident = 0;
        l->cancel = false;
        l->failed = false;
        l->finished = false;
        l->err = (NpuErr){ 0 };
        l->started = false;
        l->first_cycle = 0;
        l->last_cycle = 0;
        memset(&l->st, 0, sizeof(l->st));
    }
    npu_fixed_launch_init(l, r, blocks, ns);
    return l;
}

/*
 * A diagnostic kernel's blocks: each holds a whole unit for ns of wall time
 * (its modelled duration still to run). False if the ring was reset.
 */
bool npu_cu_run_fixed(NpuJob *job, uint32_t blocks, uint64_t ns)
{
    NpuRing *r = job->ring;
    NpuState *s = r->s;
    NpuLaunch *l;
    int64_t end;
    bool ok;

    if (!s->vtime && !ns && npu_cu_free_now(s, MAX(blocks, 1))) {
        return true;
    }
    if (!s->vtime) {
        l = npu_fixed_launch_reset(r, blocks, ns);
        if (npu_cu_run_fixed_direct(s, l, job->t0 ? job->t0 : npu_now(),
                                    &end, &ok)) {
            job->work_end = ok ? end : 0;
            return ok;
        }
    }
    l = g_new0(NpuLaunch, 1);
    npu_fixed_launch_init(l, r, blocks, ns);
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
    l->l2_id = qatomic_fetch_inc(&s->cu->l2_launches) + 1;
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
    if (npu_complete(job, t0, npu_launch_model_ns(job->ring, t0), false,
                     job->host_bytes + job->dev_bytes)) {
        npu_launch_done(job->ring);
    }
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
    cs->yield = npu_cu_yield;
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
    if (s->l2_kib) {
        uint64_t lines = (uint64_t)s->l2_kib * 1024 / NPU_L2_LINE;

        cs->l2_set_bits = ctz64(lines / NPU_L2_WAYS);
        cs->l2 = g_new0(NpuL2Line, lines);
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
    for (i = 0; i < NPU_MAX_RINGS; i++) {
        g_free(s->rings[i].fixed_launch);
    }
    for (i = 0; i < NPU_UQ_ENGINES + 2; i++) {
        g_free(s->uq.eng[i].fixed_launch);
    }
    g_free(cs->l2);
    g_free(cs);
    s->cu = NULL;
}
