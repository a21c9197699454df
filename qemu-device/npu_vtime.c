/*
 * npu - virtual NPU PCI device: deterministic device time (timing=virtual).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The device clock is a virtual clock that advances by modelled durations
 * only. Every engine (each ring, and the compute units as one) is in one
 * of four states:
 *
 *   RUN      executing, at the present (its time is the clock's)
 *   WAIT     done with its present work until a given time (a command's
 *            modelled end, or the compute units' next step)
 *   BLOCKED  a ring in SEM_WAIT, or waiting for its launch's blocks
 *   IDLE     nothing to do
 *
 * The clock moves only when no engine is in RUN: first every ring blocked
 * on a semaphore re-reads it (so a semaphore signalled by another ring at
 * time t releases its waiter at t, however late the waiter's thread would
 * have looked), then the clock jumps to the earliest WAIT time and every
 * engine waiting for that time runs. Engines execute their commands
 * without any wall-clock sleep; a command's start is the later of its
 * ring's previous completion and the present when its ring got the work or
 * was released. So timestamps, overlaps and speed-ups follow from the
 * model alone, whatever the host's load; only work that the host starts or
 * releases while the device runs lands at a time that depends on when the
 * host did it.
 *
 * User-queue engines (npu_uq.c) are engines too, and so is the user-queue
 * scheduler: engines do not pick queues, the scheduler's rounds give them
 * theirs. A round runs at the present, before the clock moves, when a
 * queue became ready or an engine free, or when an engine ran since the
 * words that waiting queues wait for were last read; a queue whose wait is
 * not satisfied blocks its engine until the clock would move, and only
 * then yields it. So a user queue's schedule and times follow from the
 * model alone, as a ring's do.
 *
 * The host reacts to the device (an interrupt, then drm_sched pushes the
 * jobs that waited for it, or the library queues more): so the clock
 * moves forward only once the host has left the device alone (no MMIO
 * write, no interrupt) for vt-settle-us of wall time. Then work that
 * depends on a completion reaches its ring before the clock passes the
 * completion, provided the host reacts within the settle time.
 *
 * Locking: vt_lock protects all of NpuVtime; vt_cond is broadcast whenever
 * an engine is made to run. Lock order: a ring's lock, cu_lock, uq.lock,
 * vt_lock.
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/timer.h"
#include "npu_base.h"
#include "npu_mmu.h"
#include "npu_vtime.h"

#define NPU_VT_POLL_MS  1       /* a deferred move is retried this often */

/*
 * Has the host been quiet for the settle time? Else mark the move
 * deferred: waiting engines then retry every millisecond. vt_lock held.
 */
static bool npu_vt_settled(NpuState *s)
{
    NpuVtime *vt = &s->vt;
    int64_t quiet = qemu_clock_get_ns(QEMU_CLOCK_REALTIME) -
                    qatomic_read(&vt->host_touch);

    if (quiet >= (int64_t)s->vt_settle_us * 1000) {
        vt->deferred = false;
        return true;
    }
    if (!vt->deferred) {
        vt->deferred = true;
        qemu_cond_broadcast(&vt->cond);
    }
    return false;
}

static bool npu_vt_sem_ready(NpuRing *r)
{
    NpuJob job = { .ring = r };
    NpuErr err = { 0 };
    uint64_t v = 0;
    bool read;

    /*
     * vt_lock is held: with the VM stopped the read must not park (a
     * register read of the clock, or pre_save, would wait for vt_lock).
     * An unreadable semaphore, or one not read because the VM stopped,
     * releases the ring: its SEM_WAIT reads it itself and reports a fault
     * or parks.
     */
    npu_dma_set_noblock(true);
    read = npu_vm_rw(&job, r->vt_sem_addr, &v, r->vt_sem_wide ? 8 : 4, false,
                     &err);
    npu_dma_set_noblock(false);
    return !read || npu_sem_passed(le64_to_cpu(v), r->vt_sem_value,
                                   r->vt_sem_wide);
}

/* The ring (or user-queue engine) that is engine e, or NULL. */
static NpuRing *npu_vt_ring(NpuState *s, unsigned e)
{
    if (e < s->nrings) {
        return &s->rings[e];
    }
    if (e >= NPU_UQ_ENG_IDX(0) &&
        e < NPU_UQ_ENG_IDX(s->uq_n_compute + s->uq_n_copy)) {
        return &s->uq.eng[e - NPU_UQ_ENG_IDX(0)];
    }
    return NULL;
}

/*
 * Move the clock if no engine runs. A blocked ring whose semaphore passed
 * runs at the present; a blocked user-queue engine runs either way (its
 * queue yields the engine if the word has not passed). Then the user-queue
 * scheduler runs if it has work, or if an engine ran since it last read
 * the words queues wait for. dirty: the caller is an engine (not the
 * scheduler). vt_lock held.
 */
static void npu_vt_advance_from(NpuState *s, bool dirty)
{
    NpuVtime *vt = &s->vt;
    uint64_t next = UINT64_MAX;
    bool woke = false;
    unsigned e;

    vt->uq_dirty |= dirty;
    for (e = 0; e < NPU_VT_ENGINES; e++) {
        if (vt->state[e] == NPU_VT_RUN) {
            return;
        }
    }
    for (e = 0; e < NPU_VT_CU; e++) {
        NpuRing *r = npu_vt_ring(s, e);

        if (r && vt->state[e] == NPU_VT_BLOCKED && r->vt_sem) {
            if (npu_vt_sem_ready(r)) {
                r->vt_yield = false;
            } else if (r->uq_engine) {
                r->vt_yield = true;
            } else {
                continue;
            }
            vt->state[e] = NPU_VT_RUN;
            r->vt = vt->now;
            woke = true;
        }
    }
    if (!woke && (vt->uq_pending ||
                  (vt->uq_dirty && qatomic_read(&s->uq.nwaiting)))) {
        /* npu_uq.c: the scheduler's round at the present */
        vt->uq_pending = false;
        vt->uq_dirty = false;
        vt->state[NPU_VT_UQ] = NPU_VT_RUN;
        woke = true;
    }
    if (woke) {
        qemu_cond_broadcast(&vt->cond);
        return;
    }
    for (e = 0; e < NPU_VT_ENGINES; e++) {
        if (vt->state[e] == NPU_VT_WAIT) {
            next = MIN(next, vt->until[e]);
        }
    }
    if (next == UINT64_MAX || (next > vt->now && !npu_vt_settled(s))) {
        return;
    }
    vt->now = MAX(vt->now, next);
    for (e = 0; e < NPU_VT_ENGINES; e++) {
        if (vt->state[e] == NPU_VT_WAIT && vt->until[e] <= vt->now) {
            NpuRing *r = npu_vt_ring(s, e);

            vt->state[e] = NPU_VT_RUN;
            if (r) {
                r->vt = vt->now;
            }
        }
    }
    qemu_cond_broadcast(&vt->cond);
}

static void npu_vt_advance(NpuState *s)
{
    npu_vt_advance_from(s, true);
}

/* A ring takes up work: it starts at the present. */
void npu_vt_ring_active(NpuRing *r)
{
    NpuVtime *vt = &r->s->vt;

    qemu_mutex_lock(&vt->lock);
    if (vt->state[r->idx] != NPU_VT_RUN) {
        vt->state[r->idx] = NPU_VT_RUN;
        r->vt = MAX(r->vt, vt->now);
    }
    qemu_mutex_unlock(&vt->lock);
}

/* A ring has nothing to do (or was reset). */
void npu_vt_ring_idle(NpuRing *r)
{
    NpuVtime *vt = &r->s->vt;

    qemu_mutex_lock(&vt->lock);
    vt->state[r->idx] = NPU_VT_IDLE;
    r->vt_sem = false;
    npu_vt_advance(r->s);
    qemu_mutex_unlock(&vt->lock);
}

/* Wait while engine e is not running; false if the ring was aborted. */
static bool npu_vt_wait_run(NpuState *s, unsigned e, NpuRing *r)
{
    NpuVtime *vt = &s->vt;

    while (vt->state[e] != NPU_VT_RUN) {
        if (r && npu_aborted(r)) {
            vt->state[e] = NPU_VT_IDLE;
            r->vt_sem = false;
            npu_vt_advance(s);
            return false;
        }
        if (r && r->vt_sem && vt->state[e] == NPU_VT_BLOCKED) {
            /*
             * a semaphore the host may write: look now and then, backing
             * off as npu_exec_sem does (the device's own writes move the
             * clock, which re-reads it in npu_vt_advance)
             */
            int64_t waited = qemu_clock_get_ns(QEMU_CLOCK_REALTIME) -
                             r->vt_sem_since;

            qemu_cond_timedwait(&vt->cond, &vt->lock,
                                MAX(npu_sem_poll_ns(waited) / SCALE_MS,
                                    NPU_VT_POLL_MS));
            if (vt->state[e] == NPU_VT_BLOCKED && npu_vt_sem_ready(r)) {
                vt->state[e] = NPU_VT_RUN;
                r->vt = vt->now;
            }
        } else if (vt->deferred) {
            qemu_cond_timedwait(&vt->cond, &vt->lock, NPU_VT_POLL_MS);
            npu_vt_advance(s);
        } else {
            qemu_cond_wait(&vt->cond, &vt->lock);
        }
    }
    return true;
}

/*
 * The ring's command that started at r->vt_start ends no earlier than
 * model_ns after it (and not before the ring's present): wait for the
 * clock to get there. False if the ring was reset meanwhile.
 */
bool npu_vt_complete(NpuRing *r, uint64_t model_ns)
{
    NpuState *s = r->s;
    NpuVtime *vt = &s->vt;
    uint64_t end = MAX(r->vt, r->vt_start + MIN(model_ns, UINT64_MAX / 4));
    bool ok = true;

    qemu_mutex_lock(&vt->lock);
    if (end > vt->now) {
        vt->state[r->idx] = NPU_VT_WAIT;
        vt->until[r->idx] = end;
        npu_vt_advance(s);
        ok = npu_vt_wait_run(s, r->idx, r);
    }
    if (ok) {
        r->vt = MAX(end, vt->now);
    }
    qemu_mutex_unlock(&vt->lock);
    return ok;
}

/*
 * SEM_WAIT found the semaphore at addr short of value: block until it is
 * there (re-read whenever the clock would move, and every
 * NPU_VT_POLL_MS for writes by the host). False if the ring was reset.
 */
bool npu_vt_sem_block(NpuRing *r, uint64_t addr, uint64_t value, bool wide)
{
    NpuState *s = r->s;
    NpuVtime *vt = &s->vt;
    bool ok;

    qemu_mutex_lock(&vt->lock);
    r->vt_sem = true;
    r->vt_sem_addr = addr;
    r->vt_sem_value = value;
    r->vt_sem_wide = wide;
    r->vt_sem_since = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    vt->state[r->idx] = NPU_VT_BLOCKED;
    npu_vt_advance(s);
    ok = npu_vt_wait_run(s, r->idx, r);
    r->vt_sem = false;
    qemu_mutex_unlock(&vt->lock);
    return ok;
}

/*
 * The units look at their queue as soon as the clock allows: at the
 * present, unless they have simulated past it. vt_lock held.
 */
static void npu_vt_cu_wake(NpuState *s)
{
    NpuVtime *vt = &s->vt;
    uint64_t when = MAX(vt->now, vt->cu_time);

    if (vt->state[NPU_VT_CU] == NPU_VT_IDLE ||
        (vt->state[NPU_VT_CU] == NPU_VT_WAIT && vt->until[NPU_VT_CU] > when)) {
        vt->state[NPU_VT_CU] = NPU_VT_WAIT;
        vt->until[NPU_VT_CU] = when;
    }
}

/*
 * Work for the units was queued. Running units may have taken their queue
 * already (and be about to go idle), and units not yet at their first step
 * will set their state themselves: both find cu_look at their next step.
 * vt_lock held.
 */
static void npu_vt_cu_look(NpuState *s)
{
    s->vt.cu_look = true;
    npu_vt_cu_wake(s);
}

/*
 * A ring hands work to the compute units and blocks until they finish it
 * (npu_vt_cu_finished() then sets when). The units, if idle or only
 * holding fixed-function blocks, look at the queue at the present.
 */
void npu_vt_cu_submit(NpuRing *r)
{
    NpuState *s = r->s;
    NpuVtime *vt = &s->vt;

    qemu_mutex_lock(&vt->lock);
    r->vt_sem = false;
    vt->state[r->idx] = NPU_VT_BLOCKED;
    npu_vt_cu_look(s);
    npu_vt_advance(s);
    qemu_mutex_unlock(&vt->lock);
}

/* A launch was cancelled: the units look at their queue at the present. */
void npu_vt_cu_poke(NpuState *s)
{
    NpuVtime *vt = &s->vt;

    qemu_mutex_lock(&vt->lock);
    npu_vt_cu_look(s);
    npu_vt_advance(s);
    qemu_mutex_unlock(&vt->lock);
}

/* The compute units finished r's launch at end_ns. npu-cu thread. */
void npu_vt_cu_finished(NpuRing *r, uint64_t end_ns)
{
    NpuVtime *vt = &r->s->vt;

    qemu_mutex_lock(&vt->lock);
    if (vt->state[r->idx] == NPU_VT_BLOCKED) {
        vt->state[r->idx] = NPU_VT_WAIT;
        vt->until[r->idx] = MAX(end_ns, vt->now);
    }
    qemu_mutex_unlock(&vt->lock);
}

/* The ring waits for the time its launch ended. False if reset. */
bool npu_vt_cu_wait(NpuRing *r)
{
    NpuState *s = r->s;
    NpuVtime *vt = &s->vt;
    bool ok;

    qemu_mutex_lock(&vt->lock);
    npu_vt_advance(s);
    ok = npu_vt_wait_run(s, r->idx, r);
    if (ok) {
        r->vt = MAX(r->vt, vt->now);
    }
    qemu_mutex_unlock(&vt->lock);
    return ok;
}

/*
 * The compute units reached cu_ns and next need the clock at until_ns
 * (UINT64_MAX: nothing to do until work arrives). Returns the present
 * once they may go on, with every ring quiet, and the earliest time any
 * ring waits for (the horizon the units may simulate up to) in *horizon.
 * False when stop is set.
 */
bool npu_vt_cu_step(NpuState *s, uint64_t cu_ns, uint64_t until_ns,
                    uint64_t *now, uint64_t *horizon, const bool *stop)
{
    NpuVtime *vt = &s->vt;
    unsigned e;

    if (until_ns == UINT64_MAX && s->vt_cu_idle_delay_us) {
        /*
         * debug knob: the units took their queue and are about to go idle;
         * stay in that window a while, as a busy host may make them
         */
        g_usleep(s->vt_cu_idle_delay_us);
    }
    qemu_mutex_lock(&vt->lock);
    vt->cu_time = cu_ns;
    if (until_ns == UINT64_MAX) {
        vt->state[NPU_VT_CU] = NPU_VT_IDLE;
    } else {
        vt->state[NPU_VT_CU] = NPU_VT_WAIT;
        vt->until[NPU_VT_CU] = MAX(until_ns, cu_ns);
    }
    if (vt->cu_look) {
        npu_vt_cu_wake(s);
    }
    npu_vt_advance(s);
    while (vt->state[NPU_VT_CU] != NPU_VT_RUN && !qatomic_read(stop)) {
        if (vt->deferred) {
            qemu_cond_timedwait(&vt->cond, &vt->lock, NPU_VT_POLL_MS);
            npu_vt_advance(s);
        } else {
            qemu_cond_timedwait(&vt->cond, &vt->lock, 100);
        }
    }
    vt->cu_look = false;                /* they take their queue now */
    *now = vt->now;
    *horizon = UINT64_MAX;
    for (e = 0; e < NPU_VT_CU; e++) {
        if (vt->state[e] == NPU_VT_WAIT) {
            *horizon = MIN(*horizon, vt->until[e]);
        }
    }
    qemu_mutex_unlock(&vt->lock);
    return !qatomic_read(stop);
}

/* Wake the npu-cu thread (unrealize). */
void npu_vt_kick(NpuState *s)
{
    qemu_mutex_lock(&s->vt.lock);
    qemu_cond_broadcast(&s->vt.cond);
    qemu_mutex_unlock(&s->vt.lock);
}

/* A ring was reset: whatever it waited for, it is idle at the present. */
void npu_vt_ring_reset(NpuRing *r)
{
    NpuVtime *vt = &r->s->vt;

    qemu_mutex_lock(&vt->lock);
    qemu_cond_broadcast(&vt->cond);
    qemu_mutex_unlock(&vt->lock);
}

/* Device reset: the clock restarts at 0. No engine is running. */
void npu_vt_reset(NpuState *s)
{
    NpuVtime *vt = &s->vt;
    unsigned e;

    qemu_mutex_lock(&vt->lock);
    vt->now = 0;
    vt->cu_time = 0;
    vt->uq_pending = false;
    vt->uq_dirty = false;
    for (e = 0; e < NPU_VT_CU; e++) {
        NpuRing *r = npu_vt_ring(s, e);

        if (r) {
            r->vt = 0;
            r->vt_start = 0;
        }
        if (vt->state[e] != NPU_VT_RUN) {
            vt->state[e] = NPU_VT_IDLE;
        }
    }
    qemu_cond_broadcast(&vt->cond);
    qemu_mutex_unlock(&vt->lock);
}

/*
 * User queues (npu_uq.c). An engine that finds its queue's word short of
 * the value blocks like a ring in SEM_WAIT; when the clock would move the
 * word is read again: passed, the queue goes on (1); not, it yields the
 * engine (0). -1 if the engine was aborted.
 */
int npu_vt_uq_block(NpuRing *e, uint64_t addr, uint64_t value, bool wide)
{
    NpuState *s = e->s;
    NpuVtime *vt = &s->vt;
    int ret;

    qemu_mutex_lock(&vt->lock);
    e->vt_sem = true;
    e->vt_yield = false;
    e->vt_sem_addr = addr;
    e->vt_sem_value = value;
    e->vt_sem_wide = wide;
    e->vt_sem_since = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    vt->state[e->idx] = NPU_VT_BLOCKED;
    npu_vt_advance(s);
    ret = !npu_vt_wait_run(s, e->idx, e) ? -1 : !e->vt_yield;
    e->vt_sem = false;
    qemu_mutex_unlock(&vt->lock);
    return ret;
}

/*
 * A user-queue engine has no queue; freed: it just left one (the
 * scheduler may give it another). uq.lock held.
 */
void npu_vt_uq_idle(NpuRing *e, bool freed)
{
    NpuVtime *vt = &e->s->vt;

    qemu_mutex_lock(&vt->lock);
    vt->state[e->idx] = NPU_VT_IDLE;
    e->vt_sem = false;
    vt->uq_pending |= freed;
    npu_vt_advance(e->s);
    qemu_mutex_unlock(&vt->lock);
}

/* The scheduler gave engine e a queue: it runs from the present. */
void npu_vt_uq_assign(NpuRing *e)
{
    NpuVtime *vt = &e->s->vt;

    qemu_mutex_lock(&vt->lock);
    vt->state[e->idx] = NPU_VT_RUN;
    e->vt = MAX(e->vt, vt->now);
    qemu_mutex_unlock(&vt->lock);
}

/* The scheduler has work: a round before the clock moves. uq.lock held. */
void npu_vt_uq_pending(NpuState *s)
{
    NpuVtime *vt = &s->vt;

    qemu_mutex_lock(&vt->lock);
    vt->uq_pending = true;
    npu_vt_advance_from(s, false);
    qemu_mutex_unlock(&vt->lock);
}

/* Is a scheduler round due (the clock held for it)? uq.lock held. */
bool npu_vt_uq_round(NpuState *s)
{
    bool run;

    qemu_mutex_lock(&s->vt.lock);
    run = s->vt.state[NPU_VT_UQ] == NPU_VT_RUN;
    qemu_mutex_unlock(&s->vt.lock);
    return run;
}

/* The scheduler's round is over: the clock may move. */
void npu_vt_uq_round_end(NpuState *s)
{
    NpuVtime *vt = &s->vt;

    qemu_mutex_lock(&vt->lock);
    vt->state[NPU_VT_UQ] = NPU_VT_IDLE;
    npu_vt_advance_from(s, false);
    qemu_mutex_unlock(&vt->lock);
}

/*
 * The scheduler sleeps until a round is due, stop is set, or the wall
 * clock reaches deadline (ns, INT64_MAX: none). uq.lock not held.
 */
void npu_vt_uq_sleep(NpuState *s, int64_t deadline, const bool *stop)
{
    NpuVtime *vt = &s->vt;

    qemu_mutex_lock(&vt->lock);
    while (vt->state[NPU_VT_UQ] != NPU_VT_RUN && !qatomic_read(stop)) {
        int64_t left = deadline - qemu_clock_get_ns(QEMU_CLOCK_REALTIME);

        if (deadline == INT64_MAX) {
            qemu_cond_wait(&vt->cond, &vt->lock);
        } else if (left <= 0) {
            break;
        } else {
            qemu_cond_timedwait(&vt->cond, &vt->lock,
                                MAX(left / SCALE_MS, 1));
        }
    }
    qemu_mutex_unlock(&vt->lock);
}

void npu_vt_init(NpuState *s)
{
    qemu_mutex_init(&s->vt.lock);
    qemu_cond_init(&s->vt.cond);
}

void npu_vt_fini(NpuState *s)
{
    qemu_cond_destroy(&s->vt.cond);
    qemu_mutex_destroy(&s->vt.lock);
}
