/*
 * npu - virtual NPU PCI device: user queues.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The UQ_* register block of BAR0, the event ring through which the device
 * reports to the driver, the descriptor table, the doorbells of BAR1, the
 * queue commands, and the scheduler that serves the queues on engines of
 * their own (Documentation/hw/npu.rst, "User queues").
 *
 * Locking: uq.lock protects every queue's state, the ready and wait lists
 * and the engines' assignments. Register and doorbell accesses run under
 * the BQL and take uq.lock; engine threads and the wait poller never take
 * the BQL. Guest-memory accesses through an MMU context (packets, the
 * write-back block, waited words) are made without uq.lock held, by the
 * thread that owns the queue at the time: its engine, the poller for a
 * waiting queue's word, or the register side (eng[NPU_UQ_ENGINES]) for a
 * queue on no engine. Descriptor writes are physical and made under the
 * lock, so the descriptor always shows the state of one moment.
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/log.h"
#include "qemu/rcu.h"
#include "qemu/main-loop.h"
#include "qapi/error.h"
#include "npu_base.h"
#include "npu_engine.h"
#include "npu_job.h"
#include "npu_mmu.h"
#include "npu_uq.h"
#include "npu_vtime.h"
#include "trace.h"

bool npu_uq_check_props(NpuState *s, Error **errp)
{
    if (s->uq_n_compute > NPU_UQ_MAX_ENGINES ||
        s->uq_n_copy > NPU_UQ_MAX_ENGINES) {
        error_setg(errp, "npu: uq-compute-engines and uq-copy-engines must "
                   "be 0..%d", NPU_UQ_MAX_ENGINES);
        return false;
    }
    if (s->uq_max_queues < 1 || s->uq_max_queues > 65536) {
        error_setg(errp, "npu: uq-max-queues must be 1..65536");
        return false;
    }
    if (s->uq_db_pages < 1 || s->uq_db_pages > 4096 ||
        !is_power_of_2(s->uq_db_pages)) {
        error_setg(errp, "npu: uq-doorbell-pages must be a power of 2, "
                   "1..4096");
        return false;
    }
    if (s->uq_timeslice_us < 10 || s->uq_timeslice_us > 1000000) {
        error_setg(errp, "npu: uq-timeslice-us must be 10..1000000");
        return false;
    }
    if (s->uq_poll_us > 1000) {
        error_setg(errp, "npu: uq-poll-us must be <= 1000");
        return false;
    }
    if (s->uq_switch_ns > 1000000) {
        error_setg(errp, "npu: uq-switch-ns must be <= 1000000");
        return false;
    }
    if (s->uq_doorbell_poll_us < 10 || s->uq_doorbell_poll_us > 10000000) {
        error_setg(errp, "npu: uq-doorbell-poll-us must be 10..10000000");
        return false;
    }
    if (!s->timing) {
        s->uq_switch_ns = 0;
    }
    return true;
}

/*
 * Append a record to the event ring and raise the user-queue vector. With
 * no event ring programmed nothing is written or raised; a full ring or
 * one that cannot be written drops the record and sets OVERFLOW. uq.lock
 * held.
 */
static void npu_uq_post_locked(NpuState *s, uint8_t kind, uint32_t ctx,
                               uint32_t queue, uint64_t data)
{
    NpuUqState *uq = &s->uq;
    struct npu_uq_event ev = {
        .kind = kind,
        .ctx = cpu_to_le16(ctx),
        .queue = cpu_to_le32(queue),
        .data = cpu_to_le64(data),
    };
    uint32_t next;

    if (!uq->event_size) {
        return;
    }
    next = (uq->event_tail + sizeof(ev)) & (uq->event_size - 1);
    trace_npu_uq_event(kind, queue, data, next == uq->event_head);
    if (next == uq->event_head ||
        npu_phys_rw(s, uq->event_base + uq->event_tail, &ev, sizeof(ev),
                    true) != MEMTX_OK) {
        uq->event_status |= NPU_UQ_EVENT_STS_OVERFLOW;
    } else {
        /* the record before the tail that publishes it */
        smp_wmb();
        qatomic_set(&uq->event_tail, next);
    }
    npu_raise(s, s->nrings + 1);
}

/* A SIGNAL packet found its memory signal armed. */
static void npu_uq_signal_event(NpuRing *r, uint64_t va)
{
    NpuState *s = r->s;

    if (!npu_uq_present(s)) {
        return;
    }
    qemu_mutex_lock(&s->uq.lock);
    if (r->uq_engine) {
        int c = s->uq.cur[r->idx - NPU_UQ_ENG_IDX(0)];

        if (c >= 0) {
            npu_uq_post_locked(s, NPU_UQ_EVENT_SIGNAL, s->uq.q[c].ctx, c, va);
        }
    } else {
        npu_uq_post_locked(s, NPU_UQ_EVENT_SIGNAL, r->context,
                           NPU_UQ_EVENT_RING | r->idx, va);
    }
    qemu_mutex_unlock(&s->uq.lock);
}

/*
 * Queues
 */

/* Guest-memory accesses made holding uq.lock never park (npu_base.c). */
static MemTxResult npu_uq_phys(NpuState *s, uint64_t pa, void *buf,
                               uint64_t len, bool is_write)
{
    MemTxResult r;

    npu_dma_set_noblock(true);
    r = npu_phys_rw(s, pa, buf, len, is_write);
    npu_dma_set_noblock(false);
    return r;
}

static uint64_t npu_uq_desc(NpuState *s, NpuUq *q)
{
    return s->uq.table_base + (uint64_t)NPU_UQD_SIZE * q->idx;
}

/* The status word as the owner and the driver see it. */
static uint32_t npu_uq_status(NpuUq *q, bool off)
{
    uint32_t st = q->status;

    if (q->engine >= 0 && !off) {
        st |= NPU_UQ_STS_RUNNING;
    } else if (q->rptr == q->wptr && (st & NPU_UQ_STS_MAPPED)) {
        st |= NPU_UQ_STS_IDLE;
    }
    if (q->watched) {
        st |= NPU_UQ_STS_WATCHED;
    }
    return st;
}

/*
 * Around each write of the state, the descriptor's state_seq goes odd and
 * back to even, so that a reader of several fields at once (the driver's
 * busy time: busy_ns and run_start_ns) can tell a torn read and retry.
 * uq.lock held.
 */
static void npu_uq_seq_bump(NpuState *s, NpuUq *q)
{
    uint32_t v = cpu_to_le32(++q->state_seq);

    smp_wmb();
    npu_uq_phys(s, npu_uq_desc(s, q) + NPU_UQD_STATE_SEQ, &v, 4, true);
    smp_wmb();
}

/*
 * Write the queue's state (descriptor bytes 0x30..0xaf) inside a
 * state_seq bracket and, if irq is set, then read IRQ_RPTR (after a full
 * barrier: the driver stores IRQ_RPTR, then reads RPTR). IRQ_RPTR, the
 * state and STATE_SEQ are adjacent: one mapping serves all four accesses.
 * uq.lock held.
 */
static void npu_uq_sync_irq_locked(NpuState *s, NpuUq *q, uint64_t *irq)
{
    uint8_t d[NPU_UQD_RUN_START_NS + 8 - NPU_UQD_WPTR];
    const uint64_t span = NPU_UQD_STATE_SEQ + 4 - NPU_UQD_IRQ_RPTR;
    uint64_t desc = npu_uq_desc(s, q), l;
    NpuDma c;

    QEMU_BUILD_BUG_ON(NPU_UQD_IRQ_RPTR + 8 != NPU_UQD_WPTR ||
                      NPU_UQD_RUN_START_NS + 8 != NPU_UQD_STATE_SEQ);
#define D(off) (d + (off) - NPU_UQD_WPTR)
    stq_le_p(D(NPU_UQD_WPTR), q->wptr);
    stq_le_p(D(NPU_UQD_RPTR), q->rptr);
    stl_le_p(D(NPU_UQD_STATUS), npu_uq_status(q, false));
    stl_le_p(D(NPU_UQD_ERROR), q->error);
    stq_le_p(D(NPU_UQD_FAULT), q->fault);
    stl_le_p(D(NPU_UQD_ERROR_INFO), q->error_info);
    stl_le_p(D(NPU_UQD_FAULT_BLOCK), q->fault_block);
    stq_le_p(D(NPU_UQD_FAULT_PC), q->fault_pc);
    stl_le_p(D(NPU_UQD_FAULT_THREAD), q->fault_thread);
    stl_le_p(D(NPU_UQD_FAULT_UNIT), q->fault_unit);
    stq_le_p(D(NPU_UQD_FAULT_ENTRY), q->fault_entry);
    stq_le_p(D(NPU_UQD_IB_VA), q->ib_va);
    stl_le_p(D(NPU_UQD_IB_SIZE), q->ib_size);
    stl_le_p(D(NPU_UQD_IB_OFFSET), q->ib_offset);
    stq_le_p(D(NPU_UQD_PROGRESS_NS), q->progress_ns);
    stq_le_p(D(NPU_UQD_BUSY_NS), q->busy_ns);
    stq_le_p(D(NPU_UQD_CMDS), q->cmds);
    stq_le_p(D(NPU_UQD_BYTES), q->bytes);
    stq_le_p(D(NPU_UQD_OPS), q->ops);
    stq_le_p(D(NPU_UQD_RUN_START_NS), q->run_start_ns);
#undef D
    npu_dma_set_noblock(true);
    l = npu_dma_get(s, &c, desc + NPU_UQD_IRQ_RPTR, span, true);
    if (l == span) {
        uint8_t *p = c.ptr - NPU_UQD_IRQ_RPTR;

        smp_wmb();      /* earlier writes, then seq odd */
        stl_le_p(p + NPU_UQD_STATE_SEQ, ++q->state_seq);
        smp_wmb();      /* seq odd before the state; pairs with the rmb */
        memcpy(p + NPU_UQD_WPTR, d, sizeof(d));
        smp_wmb();      /* the state before seq even */
        stl_le_p(p + NPU_UQD_STATE_SEQ, ++q->state_seq);
        if (irq) {
            smp_mb();   /* RPTR stored, then IRQ_RPTR loaded */
            *irq = ldq_le_p(p + NPU_UQD_IRQ_RPTR);
        }
        npu_dma_put(s, &c, span);
        npu_dma_set_noblock(false);
        return;
    }
    if (l) {
        npu_dma_put(s, &c, 0);
    }
    npu_dma_set_noblock(false);
    /* not one RAM range (or refused): access by access */
    npu_uq_seq_bump(s, q);
    npu_uq_phys(s, desc + NPU_UQD_WPTR, d, sizeof(d), true);
    npu_uq_seq_bump(s, q);
    if (irq) {
        smp_mb();       /* RPTR stored, then IRQ_RPTR loaded */
        *irq = 0;
        npu_uq_phys(s, desc + NPU_UQD_IRQ_RPTR, irq, 8, false);
        *irq = le64_to_cpu(*irq);
    }
}

static void npu_uq_sync_locked(NpuState *s, NpuUq *q)
{
    npu_uq_sync_irq_locked(s, q, NULL);
}

/*
 * The packet the queue executes from now on started at clock ns: in the
 * descriptor at once, so that the driver's per-client busy time counts a
 * long packet while it runs. One 8-byte store outside state_seq: busy_ns
 * does not change with it, so a reader that sees run_start_ns still 0 or
 * already ns reads a consistent pair either way. uq.lock held.
 */
static void npu_uq_run_start_locked(NpuState *s, NpuUq *q, uint64_t ns)
{
    NpuDma c;
    uint64_t l;

    q->run_start_ns = ns;
    npu_dma_set_noblock(true);
    l = npu_dma_get(s, &c, npu_uq_desc(s, q) + NPU_UQD_RUN_START_NS, 8,
                    true);
    if (l) {
        if (l == 8) {
            stq_le_p(c.ptr, ns);        /* one aligned store: never torn */
        }
        npu_dma_put(s, &c, l == 8 ? 8 : 0);
    }
    npu_dma_set_noblock(false);
}

static bool npu_uq_can_run(NpuUq *q)
{
    uint32_t st = q->status;

    return (st & NPU_UQ_STS_MAPPED) && (st & NPU_UQ_STS_RUNNABLE) &&
           !(st & (NPU_UQ_STS_HALTED | NPU_UQ_STS_WAITING)) &&
           q->engine < 0 && !q->ready && q->rptr != q->wptr;
}

/* Put a queue that can run at the tail of its ready list. uq.lock held. */
static void npu_uq_enqueue_locked(NpuState *s, NpuUq *q)
{
    NpuUqState *uq = &s->uq;
    bool copy = q->config & NPU_UQ_CONFIG_COPY;

    if (!npu_uq_can_run(q)) {
        return;
    }
    q->ready = true;
    /* an engine takes it and reads the write-back wptr before it idles;
     * not with timing=virtual, where only doorbells move the clock's
     * decisions */
    q->watched = !s->vtime;
    q->ready_seq = uq->seq + 1;
    qatomic_set(&uq->seq, q->ready_seq);   /* npu_uq_poll reads it */
    QTAILQ_INSERT_TAIL(&uq->ready[q->config & NPU_UQ_CONFIG_COPY]
                                 [NPU_UQ_CONFIG_PRIO(q->config)], q, link);
    if (uq->poller[copy] < 0) {
        qemu_cond_signal(&uq->work[copy]);
    }
}

/* Every engine looks at its state again (a stop, an abort over, the VM
 * running again). uq.lock held. */
static void npu_uq_wake_engines_locked(NpuUqState *uq)
{
    qemu_cond_broadcast(&uq->cond);
    qemu_cond_broadcast(&uq->work[0]);
    qemu_cond_broadcast(&uq->work[1]);
}

/*
 * A queue that can run becomes ready. With timing=virtual it waits on the
 * pending list for the scheduler's round at the present, which lists the
 * queues that became ready at one time in the order of their indices,
 * whatever order the host's threads got there in. uq.lock held.
 */
static void npu_uq_make_ready_locked(NpuState *s, NpuUq *q)
{
    if (!s->vtime) {
        npu_uq_enqueue_locked(s, q);
    } else if (!q->vt_pend && npu_uq_can_run(q)) {
        q->vt_pend = true;
        QTAILQ_INSERT_TAIL(&s->uq.vt_pend, q, link);
        npu_vt_uq_pending(s);
    }
}

/* Waiting queues look at their words again (a kick). uq.lock held. */
static void npu_uq_poke_locked(NpuState *s)
{
    qemu_cond_broadcast(&s->uq.poll_cond);
    if (s->vtime) {
        npu_vt_uq_pending(s);
    }
}

static void npu_uq_unready_locked(NpuState *s, NpuUq *q)
{
    if (q->vt_pend) {
        QTAILQ_REMOVE(&s->uq.vt_pend, q, link);
        q->vt_pend = false;
    }
    if (q->ready) {
        QTAILQ_REMOVE(&s->uq.ready[q->config & NPU_UQ_CONFIG_COPY]
                                  [NPU_UQ_CONFIG_PRIO(q->config)], q, link);
        q->ready = false;
    }
}

static void npu_uq_unwait_locked(NpuState *s, NpuUq *q)
{
    if (q->waiting) {
        QTAILQ_REMOVE(&s->uq.wait_list, q, wlink);
        q->waiting = false;
        qatomic_dec(&s->uq.nwaiting);
        trace_npu_uq_wait(q->idx, 0, q->wait_addr, q->wait_value);
    }
    q->status &= ~NPU_UQ_STS_WAITING;
}

/*
 * Halt a queue: the error fields, HALTED, the descriptor, a HALT event.
 * The caller writes the write-back block. uq.lock held.
 */
static void npu_uq_halt_locked(NpuState *s, NpuUq *q, const NpuErr *err,
                               uint32_t info, uint32_t skip)
{
    trace_npu_uq_halt(q->idx, err->code, err->addr, info);
    npu_uq_unready_locked(s, q);
    q->watched = false;         /* CONTINUE reads the write-back wptr */
    npu_uq_unwait_locked(s, q);
    q->error = err->code;
    q->fault = err->addr;
    q->error_info = info;
    q->fault_pc = err->pc;
    q->fault_block = err->block;
    q->fault_thread = err->thread;
    q->fault_unit = err->unit;
    q->fault_entry = err->entry;
    q->skip = skip;
    /* the error fields are in the descriptor before HALTED is */
    npu_uq_sync_locked(s, q);
    smp_wmb();
    q->status |= NPU_UQ_STS_HALTED;
    npu_uq_sync_locked(s, q);
    npu_uq_post_locked(s, NPU_UQ_EVENT_HALT, q->ctx, q->idx, err->code);
}

/*
 * Write the write-back block of queue qi through the MMU context of mr (a
 * thread's own). A fault halts the queue. uq.lock not held. Engines, the
 * poller and the register side all publish; wb_lock keeps an older state
 * from landing after a newer one.
 */
static void npu_uq_publish(NpuState *s, NpuRing *mr, uint32_t qi, bool off)
{
    NpuUqState *uq = &s->uq;
    NpuUq *q = &uq->q[qi];
    struct npu_uq_wb wb = { 0 };
    NpuJob job = { .ring = mr };
    NpuErr err = { 0 };
    uint64_t va, root;
    uint32_t ctx;

    qemu_mutex_lock(&uq->wb_lock);
    qemu_mutex_lock(&uq->lock);
    if (!(q->status & NPU_UQ_STS_MAPPED) && !q->unmap) {
        qemu_mutex_unlock(&uq->lock);
        qemu_mutex_unlock(&uq->wb_lock);
        return;
    }
    wb.rptr = cpu_to_le64(q->rptr);
    wb.status = cpu_to_le32(npu_uq_status(q, off));
    wb.error = cpu_to_le32(q->error);
    wb.fault = cpu_to_le64(q->fault);
    wb.error_info = cpu_to_le32(q->error_info);
    wb.progress_ns = cpu_to_le64(q->progress_ns);
    va = q->wb_va;
    ctx = q->ctx;
    root = q->pt_root;
    qemu_mutex_unlock(&uq->lock);
    if (s->wb_delay_us && mr == &uq->eng[NPU_UQ_ENGINES + 1]) {
        g_usleep(s->wb_delay_us);       /* x-wb-delay-us: the poller's */
    }

    if (qatomic_read(&mr->mmu_ctx) != ctx || mr->pt_root != root) {
        npu_mmu_set_context(mr, ctx, root);
    }
    if (npu_vm_rw(&job, va, &wb, NPU_UQ_WB_DEVICE_BYTES, true, &err)) {
        qemu_mutex_unlock(&uq->wb_lock);
        return;
    }
    qemu_mutex_lock(&uq->lock);
    if (!(q->status & NPU_UQ_STS_HALTED) && (q->status & NPU_UQ_STS_MAPPED)) {
        npu_uq_halt_locked(s, q, &err, 0, 0);
    }
    qemu_mutex_unlock(&uq->lock);
    qemu_mutex_unlock(&uq->wb_lock);
}

/*
 * The owner's write pointer, from q's write-back block through the MMU
 * context of mr. uq.lock not held. False when it cannot be read (then the
 * publish before it has halted the queue for its wb_va).
 */
static bool npu_uq_read_wb_wptr(NpuState *s, NpuRing *mr, uint32_t qi,
                                uint64_t *w)
{
    NpuUq *q = &s->uq.q[qi];
    NpuJob job = { .ring = mr };
    NpuErr err = { 0 };
    uint64_t va, root, v;
    uint32_t ctx;

    QEMU_BUILD_BUG_ON(offsetof(struct npu_uq_wb, wptr) !=
                      NPU_UQ_WB_DEVICE_BYTES);
    qemu_mutex_lock(&s->uq.lock);
    va = q->wb_va + offsetof(struct npu_uq_wb, wptr);
    ctx = q->ctx;
    root = q->pt_root;
    qemu_mutex_unlock(&s->uq.lock);
    if (qatomic_read(&mr->mmu_ctx) != ctx || mr->pt_root != root) {
        npu_mmu_set_context(mr, ctx, root);
    }
    if (!npu_vm_rw(&job, va, &v, 8, false, &err)) {
        return false;
    }
    *w = le64_to_cpu(v);
    return true;
}

/*
 * The owner's wptr after WATCHED was cleared and a full barrier, for the
 * handshake of npu_uq_watch_end_locked: read once, and if it is not past
 * known, once more NPU_UQ_DRAIN_NS later. One TCG thread runs all vCPUs
 * and compiles the guest's fences away (tcg_gen_mb emits nothing without
 * CF_PARALLEL), so the owner's store can still sit in its host CPU's store
 * buffer when the first read runs while its load of the status has
 * already seen WATCHED: it rings no doorbell, the read misses the store,
 * and the launch is lost. A store buffer drains in far less than the
 * wait; membarrier(2), which would order the vCPU at once, costs about
 * 16 us here while the vCPU runs (an IPI), on every idle transition.
 */
#define NPU_UQ_DRAIN_NS 5000

static bool npu_uq_read_wb_wptr_settled(NpuState *s, NpuRing *mr,
                                        uint32_t qi, uint64_t known,
                                        uint64_t *w)
{
    if (!npu_uq_read_wb_wptr(s, mr, qi, w)) {
        return false;
    }
    if (*w > known) {
        return true;
    }
    /* spun; cut short by a stop, whose vCPU exit drains the buffer too */
    npu_nap_until(s, npu_time() + NPU_UQ_DRAIN_NS, mr);
    return npu_uq_read_wb_wptr(s, mr, qi, w);
}

/*
 * A WATCHED queue that ran out of packets keeps its engine for a moment,
 * reading its owner's wptr, before it clears WATCHED (and the owner rings
 * doorbells): at least this long, or as long as an idle engine of its
 * class would poll (npu_uq_poll), unless another queue becomes ready. A
 * host writing a stream of launches writes one every microsecond or so,
 * but the one TCG thread that runs it also runs the guest's other work.
 */
#define NPU_UQ_LINGER_NS 5000

/*
 * The owner's wptr, read until it is past known (true, *w), another queue
 * becomes ready or q must leave, or the time is up (then *spent, and the
 * engine need not poll before it sleeps). uq.lock held, dropped meanwhile.
 */
static bool npu_uq_linger_locked(NpuState *s, NpuRing *e, NpuUq *q,
                                 uint64_t known, uint64_t *w, bool *spent)
{
    NpuUqState *uq = &s->uq;
    uint64_t seq = uq->seq;
    int64_t budget = MAX(NPU_UQ_LINGER_NS, uq->poll_ns[e->copy]);
    int64_t end;
    bool got = false;

    *spent = false;
    qemu_mutex_unlock(&uq->lock);
    end = npu_time() + budget;
    for (;;) {
        if (!npu_uq_read_wb_wptr(s, e, q->idx, w)) {
            break;
        }
        if (*w > known) {
            got = true;
            break;
        }
        if (qatomic_read(&uq->seq) != seq || qatomic_read(&q->leave) ||
            qatomic_read(&s->paused) || qatomic_read(&s->draining) ||
            qatomic_read(&e->abort) || qatomic_read(&e->stop)) {
            break;
        }
        if (npu_time() >= end) {
            *spent = true;
            break;
        }
        cpu_relax();
    }
    qemu_mutex_lock(&uq->lock);
    return got;
}

/*
 * A new write pointer w from the owner (a doorbell write, or the
 * write-back block's wptr read while WATCHED). True if its write-back
 * block needs a publish: the queue halted off any engine, or became
 * ready and WATCHED (the owner's next packets then need no doorbell,
 * without waiting for an engine to take the queue). uq.lock held.
 */
static bool npu_uq_take_wptr_locked(NpuState *s, NpuUq *q, uint64_t w)
{
    bool watched = q->watched;

    if (w <= q->wptr) {
        /* stale; a waiting queue looks at its word again */
        if (q->waiting) {
            q->wait_kick = true;
            npu_uq_poke_locked(s);
        }
    } else if ((w & 3) || w - q->rptr > q->ring_size) {
        NpuErr err = { .code = NPU_ERR_RING_CONFIG, .addr = w };

        if (!(q->status & NPU_UQ_STS_HALTED)) {
            if (q->engine >= 0) {
                q->leave = true;        /* halted at its packet boundary */
            }
            npu_uq_halt_locked(s, q, &err, 0, 0);
            return q->engine < 0;
        }
    } else {
        q->wptr = w;
        /* wptr, and the status: no longer IDLE */
        npu_uq_sync_locked(s, q);
        if (q->waiting) {
            q->wait_kick = true;
            npu_uq_poke_locked(s);
        }
        npu_uq_make_ready_locked(s, q);
        return q->watched && !watched;
    }
    return false;
}

/*
 * q on engine e has run out of packets while WATCHED: clear WATCHED where
 * the owner sees it, then (a full barrier) read the owner's wptr
 * (npu_uq_read_wb_wptr_settled says why twice). The
 * owner stores its wptr, a full barrier, then reads the status: either it
 * sees WATCHED gone and rings the doorbell, or the read here sees its
 * wptr. True if q has packets again (and is WATCHED again). uq.lock held,
 * dropped meanwhile.
 */
static bool npu_uq_watch_end_locked(NpuState *s, NpuRing *e, NpuUq *q,
                                    bool *lingered)
{
    uint64_t w = 0, known = q->wptr;
    bool got;

    /*
     * Still WATCHED: an owner writing its next packets is met without
     * a doorbell or a change of status.
     */
    got = npu_uq_linger_locked(s, e, q, known, &w, lingered);
    if (got && w > q->wptr) {
        trace_npu_uq_wb_wptr(q->idx, w);
        npu_uq_take_wptr_locked(s, q, w);
        if (q->rptr != q->wptr && !(q->status & NPU_UQ_STS_HALTED)) {
            return true;
        }
    }
    known = q->wptr;
    q->watched = false;
    qemu_mutex_unlock(&s->uq.lock);
    npu_uq_publish(s, e, q->idx, false);
    smp_mb();
    got = npu_uq_read_wb_wptr_settled(s, e, q->idx, known, &w);
    qemu_mutex_lock(&s->uq.lock);
    if (got && w > q->wptr) {
        trace_npu_uq_wb_wptr(q->idx, w);
        npu_uq_take_wptr_locked(s, q, w);
    }
    if (q->rptr == q->wptr || (q->status & NPU_UQ_STS_HALTED)) {
        return false;
    }
    q->watched = !s->vtime;
    return true;
}

/*
 * Scheduler
 */

/* A queue of the class that a queue of priority prio should make way for. */
static bool npu_uq_contender_locked(NpuState *s, bool copy, unsigned prio)
{
    NpuUq *q;
    unsigned p;

    for (p = 0; p < NPU_UQ_PRIOS; p++) {
        QTAILQ_FOREACH(q, &s->uq.ready[copy][p], link) {
            if (p >= prio || q->starve >= NPU_UQ_STARVE) {
                return true;
            }
        }
    }
    return false;
}

/* The next queue for a free engine of the class, off its list. */
static NpuUq *npu_uq_pick_locked(NpuState *s, bool copy)
{
    NpuUqState *uq = &s->uq;
    NpuUq *best = NULL, *q;
    unsigned p, prio;

    /* the oldest starving queue first */
    for (p = 0; p < NPU_UQ_PRIOS; p++) {
        QTAILQ_FOREACH(q, &uq->ready[copy][p], link) {
            if (q->starve >= NPU_UQ_STARVE &&
                (!best || q->ready_seq < best->ready_seq)) {
                best = q;
            }
        }
    }
    for (p = NPU_UQ_PRIOS; !best && p-- > 0;) {
        best = QTAILQ_FIRST(&uq->ready[copy][p]);
    }
    if (!best) {
        return NULL;
    }
    npu_uq_unready_locked(s, best);
    prio = NPU_UQ_CONFIG_PRIO(best->config);
    for (p = 0; p < prio; p++) {
        QTAILQ_FOREACH(q, &uq->ready[copy][p], link) {
            q->starve++;
        }
    }
    best->starve = 0;
    return best;
}

/*
 * Engines
 */

/* Packets of no modelled time: a launch's SIGNAL, a TIMESTAMP, padding. */
static bool npu_uq_op_instant(uint32_t op)
{
    return op == NPU_OP_SIGNAL || op == NPU_OP_TIMESTAMP || op == NPU_OP_NOP;
}

/*
 * While more packets are queued, the write-back block and the descriptor
 * are written after at most this many packets or this much device time:
 * the owner sees its ring's room and the driver its fences that late at
 * most, and a busy queue does not write them after every packet. A queue
 * that drains, waits, fails or leaves its engine writes them at once.
 */
#define NPU_UQ_DEFER_MAX    16
#define NPU_UQ_DEFER_NS     20000

/*
 * The descriptor catches up with every packet completed since it was last
 * written (the write-back block must already have), and PROGRESS is posted
 * if rptr passed IRQ_RPTR since then. uq.lock held.
 */
static void npu_uq_progress_locked(NpuState *s, NpuUq *q)
{
    uint64_t irq = 0;

    npu_uq_sync_irq_locked(s, q, &irq);
    if (irq && q->synced_rptr < irq && q->rptr >= irq &&
        (q->status & NPU_UQ_STS_MAPPED)) {
        npu_uq_post_locked(s, NPU_UQ_EVENT_PROGRESS, q->ctx, q->idx,
                           q->rptr);
    }
    q->synced_rptr = q->rptr;
    q->synced_ns = q->progress_ns;
    q->irq_seen = irq;
    q->deferred = 0;
}

/* Write what npu_uq_step deferred. uq.lock held, dropped meanwhile. */
static void npu_uq_flush_deferred_locked(NpuState *s, NpuRing *e, NpuUq *q)
{
    if (!q->deferred) {
        return;
    }
    qemu_mutex_unlock(&s->uq.lock);
    npu_uq_publish(s, e, q->idx, false);
    qemu_mutex_lock(&s->uq.lock);
    npu_uq_progress_locked(s, q);
}

static const char *npu_uq_leave_why(NpuState *s, NpuRing *e, NpuUq *q);

/* rptr passed the IRQ_RPTR read at the last write-back: PROGRESS is due */
static bool npu_uq_irq_passed(NpuUq *q)
{
    return q->irq_seen > q->synced_rptr && q->irq_seen <= q->rptr;
}

/*
 * When q, waiting waited_ns so far, next looks at its word on its own:
 * the backoff of SEM_WAIT, and for an NPU_WAIT_DOORBELL wait (its owner
 * rings the doorbell after writing the word) at least uq-doorbell-poll-us,
 * which only catches an owner that forgot to.
 */
static int64_t npu_uq_wait_poll_ns(NpuState *s, NpuUq *q, int64_t waited_ns)
{
    int64_t ns = npu_sem_poll_ns(waited_ns);

    if (q->wait_doorbell) {
        ns = MAX(ns, (int64_t)s->uq_doorbell_poll_us * SCALE_US);
    }
    return ns;
}

/*
 * Fetch and run the packet at rptr of q on engine e, and the packets of
 * no modelled time right behind it that the same read holds (a launch's
 * SIGNAL): they run in this call, without a second fetch, and share one
 * write of the write-back block and descriptor. Called and returns with
 * uq.lock held (the loop holds it to ask whether the queue must leave),
 * dropped while packets run: the lock is device-wide, and busy engines
 * contend for it, so a launch and its SIGNAL take it only twice.
 */
static void npu_uq_step(NpuState *s, NpuRing *e, NpuUq *q, unsigned ei)
{
    NpuUqState *uq = &s->uq;
    uint32_t raw[NPU_PKT_MAX_DW];       /* as read, little-endian */
    uint32_t pkt[NPU_PKT_MAX_DW];       /* the packet run, host order */
    uint32_t h = 0, len, info = 0, avail = 0, i, skip = 0, pos = 0;
    uint64_t base, rptr, wptr, off, cmds0, bytes0, ops0, busy0;
    uint32_t size, ib_off;
    /*
     * Doorbell writes before the packet read its word: one after it may
     * have come before the queue was WAITING, when it re-reads nothing.
     */
    uint64_t db0;
    bool ok = false, in_ib;
    bool behind = false;        /* a packet of this call ran before */
    NpuJob job = { .ring = e };
    NpuErr err = { 0 };
    int64_t start = s->vtime ? 0 : npu_time();

    base = q->ring_va;
    size = q->ring_size;
    rptr = q->rptr;
    wptr = q->wptr;
    ib_off = q->ib_offset;
    db0 = q->doorbells;
    /*
     * The packet at rptr starts now, whatever it is: a SIGNAL or padding
     * first in a step counts from here too, a few ns of busy time.
     */
    npu_uq_run_start_locked(s, q, MAX(s->vtime ? e->vt
                                                : npu_clock_at(s, start), 1));
    qemu_mutex_unlock(&uq->lock);

    off = rptr & (size - 1);
    /* the header and what the owner wrote after it, to the ring's end,
     * in one read: a packet costs one access, not two */
    avail = MIN(MIN(wptr - rptr, (uint64_t)NPU_PKT_MAX_DW * 4), size - off);
    avail = MAX(avail, 4);
    if (!npu_vm_rw(&job, base + off, raw, avail, false, &err)) {
        goto done;
    }

next:
    /* a packet at pos of raw; beyond the first, whole inside avail */
    qatomic_set(&e->ib_off, 0);
    h = le32_to_cpu(raw[pos / 4]);
    len = NPU_PKT_LEN(h);
    info = NPU_PKT_OP(h);
    if (!len || len > (wptr - rptr) / 4) {
        /* unusable header: CONTINUE steps over its dword only */
        err.code = NPU_ERR_BAD_PACKET;
        err.addr = base + off;
        skip = 4;
        goto done;
    }
    skip = len * 4;
    trace_npu_uq_packet(q->idx, rptr, NPU_PKT_OP(h), len);
    if (NPU_PKT_OP(h) == NPU_OP_NOP) {
        ok = true;
        goto done;
    }
    len = MIN(len, NPU_PKT_MAX_DW);
    if (pos + len * 4 <= avail) {
        for (i = 0; i < len; i++) {
            pkt[i] = le32_to_cpu(raw[pos / 4 + i]);
        }
    } else {
        /* the first packet only: the rest wraps to the ring's start */
        memcpy(pkt, raw, avail);
        if (!npu_vm_rw(&job, base, (uint8_t *)pkt + avail, len * 4 - avail,
                       false, &err)) {
            goto done;
        }
        for (i = 0; i < len; i++) {
            pkt[i] = le32_to_cpu(pkt[i]);
        }
    }
    qemu_mutex_lock(&e->lock);
    cmds0 = e->cmds;
    bytes0 = e->bytes;
    ops0 = e->ops;
    busy0 = e->busy_ns;
    e->running = true;
    qemu_mutex_unlock(&e->lock);
    if (!npu_uq_op_instant(NPU_PKT_OP(h))) {
        job.now = start;        /* the first packet of the step */
    } else if (behind) {
        npu_job_behind(&job, e->cmd_end);
    }
    e->ib_resume = NPU_PKT_OP(h) == NPU_OP_INDIRECT ? ib_off : 0;
    e->cmd_end = 0;
    ok = npu_uq_exec(&job, pkt, NPU_PKT_LEN(h), base + off, &err, &info);
    qemu_mutex_lock(&e->lock);
    e->running = false;
    if (qatomic_read(&e->cmd_start)) {
        e->busy_ns += MAX(npu_time() - qatomic_read(&e->cmd_start), 0);
        qatomic_set(&e->cmd_start, 0);
    }
    e->ib_resume = 0;
    qemu_mutex_lock(&uq->lock);
    q->run_start_ns = 0;
    q->cmds += e->cmds - cmds0;
    q->bytes += e->bytes - bytes0;
    q->ops += e->ops - ops0;
    q->busy_ns += e->busy_ns - busy0;
    qemu_mutex_unlock(&e->lock);
    goto locked;                /* uq.lock kept for what follows */

done:
    qemu_mutex_lock(&uq->lock);
    q->run_start_ns = 0;
locked:
    in_ib = info & 0x100;
    if (qatomic_read(&e->abort) || qatomic_read(&e->stop)) {
        /* STOP, RESET or a device reset: the command sets the state */
        q->skip = skip;
        return;
    }
    if (!ok || err.code || job.preempt || job.yield) {
        npu_uq_flush_deferred_locked(s, e, q);
    }
    if (in_ib) {
        q->ib_va = ldq_le_p(pkt + 2);
        q->ib_size = pkt[1];
        q->ib_offset = qatomic_read(&e->ib_off);
    }
    if (!ok || err.code) {
        npu_uq_halt_locked(s, q, &err, info, skip);
    } else if (job.preempt) {
        /* off between two packets of the IB; it resumes at ib_offset */
        npu_uq_sync_locked(s, q);
    } else if (job.yield) {
        q->status |= NPU_UQ_STS_WAITING;
        q->waiting = true;
        q->wait_addr = job.wait_addr;
        q->wait_value = job.wait_value;
        q->wait_wide = job.wait_wide;
        q->wait_doorbell = job.wait_doorbell;
        q->wait_kick = q->doorbells != db0;
        q->wait_since = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
        q->wait_next = q->wait_since + npu_uq_wait_poll_ns(s, q, 0);
        QTAILQ_INSERT_TAIL(&uq->wait_list, q, wlink);
        qatomic_inc(&uq->nwaiting);
        trace_npu_uq_wait(q->idx, 1, q->wait_addr, q->wait_value);
        npu_uq_sync_locked(s, q);
        npu_uq_poke_locked(s);
    } else {
        uint32_t nh = 0;

        q->rptr += skip;
        q->ib_va = 0;
        q->ib_size = 0;
        q->ib_offset = 0;
        /* the packet's end as npu_complete read it, if it did */
        q->progress_ns = s->vtime ? e->vt :
                         e->cmd_end ? npu_clock_at(s, e->cmd_end)
                                    : npu_clock(s);
        pos += skip;
        if (q->rptr < q->wptr && pos + 4 <= avail) {
            nh = le32_to_cpu(raw[pos / 4]);
        }
        /*
         * The next packet, when the read above holds it and it takes no
         * modelled time (a launch's SIGNAL), runs first: the two share
         * one write of the write-back block and descriptor. Not across
         * an IRQ_RPTR known to lie here.
         */
        if (nh && npu_uq_op_instant(NPU_PKT_OP(nh)) &&
            q->deferred < NPU_UQ_DEFER_MAX &&
            !npu_uq_irq_passed(q)) {
            q->deferred++;
            /* whole in the read, and nothing makes the queue leave */
            if (NPU_PKT_LEN(nh) &&
                pos + NPU_PKT_LEN(nh) * 4 <= avail &&
                !npu_uq_leave_why(s, e, q)) {
                rptr = q->rptr;
                wptr = q->wptr;
                db0 = q->doorbells;
                off = rptr & (size - 1);
                job = (NpuJob){ .ring = e };
                behind = true;
                err = (NpuErr){ 0 };
                ok = false;
                info = 0;
                skip = 0;
                qemu_mutex_unlock(&uq->lock);
                goto next;
            }
            return;
        }
        if (q->rptr < q->wptr && q->deferred < NPU_UQ_DEFER_MAX &&
            q->progress_ns - q->synced_ns < NPU_UQ_DEFER_NS &&
            !npu_uq_irq_passed(q)) {
            q->deferred++;      /* more to run: written after it */
            return;
        }
        /*
         * The write-back block first, then the descriptor and the
         * PROGRESS event: whoever waits on the descriptor's rptr
         * (WAIT_MEM_RPTR, USERQ_SIGNAL's fences) then finds the
         * write-back block as far.
         */
        qemu_mutex_unlock(&uq->lock);
        npu_uq_publish(s, e, q->idx, false);
        npu_signal_delay(s);
        qemu_mutex_lock(&uq->lock);
        npu_uq_progress_locked(s, q);
        return;
    }
    qemu_mutex_unlock(&uq->lock);
    npu_uq_publish(s, e, q->idx, false);
    qemu_mutex_lock(&uq->lock);
}

static const char npu_uq_why_empty[] = "empty";
static const char npu_uq_why_wait[] = "wait";
static const char npu_uq_why_slice[] = "slice";
static const char npu_uq_why_pause[] = "pause";

/* Why the queue on an engine must leave it now, or NULL. uq.lock held. */
static const char *npu_uq_leave_why(NpuState *s, NpuRing *e, NpuUq *q)
{
    int64_t slice0 = e->uq_slice0;

    if (e->stop || qatomic_read(&e->abort) || q->leave) {
        return "command";
    }
    if (q->status & NPU_UQ_STS_HALTED) {
        return "halt";
    }
    if (q->status & NPU_UQ_STS_WAITING) {
        return npu_uq_why_wait;
    }
    if (q->rptr == q->wptr) {
        return npu_uq_why_empty;
    }
    if (qatomic_read(&s->paused) || qatomic_read(&s->draining)) {
        return npu_uq_why_pause; /* a snapshot or migration: see npu.c */
    }
    /* the clock only when someone waits for the engine */
    if (npu_uq_contender_locked(s, e->copy, NPU_UQ_CONFIG_PRIO(q->config)) &&
        (s->vtime ? (int64_t)e->vt : npu_time()) - slice0 >=
        (int64_t)s->uq_timeslice_us * SCALE_US) {
        return npu_uq_why_slice;
    }
    return NULL;
}

/*
 * An engine whose queue has just gone idle watches, without sleeping, for
 * up to uq-poll-us, for a queue made ready (uq.seq moves): a launch right
 * after a completion, the round trip of a synchronous caller, then finds
 * an engine awake instead of waking a sleeping host thread (tens of
 * microseconds on a busy host). One engine of a class at a time; a queue
 * made ready meanwhile signals no one (the watcher takes it). uq.lock
 * held, dropped while watching.
 */
#define NPU_UQ_POLL_MIN_NS  2000

/* The watch of class copy doubles, up to uq-poll-us. uq.lock held. */
static void npu_uq_poll_grow(NpuState *s, bool copy)
{
    int64_t *p = &s->uq.poll_ns[copy];

    *p = MIN(MAX(*p * 2, NPU_UQ_POLL_MIN_NS),
             (int64_t)s->uq_poll_us * SCALE_US);
}

static void npu_uq_poll(NpuState *s, NpuRing *e)
{
    NpuUqState *uq = &s->uq;
    uint64_t seq = uq->seq;
    int64_t end = npu_time() + uq->poll_ns[e->copy];
    bool came;

    uq->poller[e->copy] = e->idx - NPU_UQ_ENG_IDX(0);
    qemu_mutex_unlock(&uq->lock);
    while (!(came = qatomic_read(&uq->seq) != seq) &&
           !qatomic_read(&e->stop) && !qatomic_read(&e->abort) &&
           !qatomic_read(&s->paused) && npu_time() < end) {
        cpu_relax();
    }
    qemu_mutex_lock(&uq->lock);
    uq->poller[e->copy] = -1;
    if (came) {
        npu_uq_poll_grow(s, e->copy);
    } else {
        uq->poll_ns[e->copy] /= 2;
        if (uq->poll_ns[e->copy] < NPU_UQ_POLL_MIN_NS) {
            uq->poll_ns[e->copy] = 0;
        }
    }
}

/* An idle engine woke for work after sleeping slept_ns: had it watched
 * that long it would have caught it, so the watch grows. uq.lock held. */
static void npu_uq_poll_woke(NpuState *s, NpuRing *e, int64_t slept_ns)
{
    if (slept_ns < (int64_t)s->uq_poll_us * SCALE_US) {
        npu_uq_poll_grow(s, e->copy);
    }
}

static void *npu_uq_engine_thread(void *opaque)
{
    NpuRing *e = opaque;
    NpuState *s = e->s;
    NpuUqState *uq = &s->uq;
    unsigned ei = e->idx - NPU_UQ_ENG_IDX(0);
    int last = -1;
    bool freed = false, vt_idle = false, polled = false, watched;
    bool lingered = false;      /* the queue that left used a poll's time */
    uint64_t wb_wptr, known;
    int64_t slept = -1;         /* ns of the last sleep before work, -1 */

    rcu_register_thread();
    npu_engine_thread_init();
    qemu_mutex_lock(&uq->lock);
    while (!e->stop) {
        const char *why;
        NpuUq *q = NULL;

        if (s->vtime) {
            /* the scheduler's round gives the engine its queue */
            if (uq->cur[ei] < 0) {
                if (!vt_idle || freed) {
                    npu_vt_uq_idle(e, freed);
                    vt_idle = true;
                    freed = false;
                }
                npu_engine_thread_idle();
                qemu_cond_wait(&uq->cond, &uq->lock);
                continue;
            }
            q = &uq->q[uq->cur[ei]];
            vt_idle = false;
        } else if (qatomic_read(&e->abort) || qatomic_read(&s->paused) ||
                   qatomic_read(&s->draining) ||
                   !(q = npu_uq_pick_locked(s, e->copy))) {
            if (!polled && uq->poll_ns[e->copy] &&
                uq->poller[e->copy] < 0 &&
                !qatomic_read(&e->abort) && !qatomic_read(&s->paused) &&
                !qatomic_read(&s->draining)) {
                npu_uq_poll(s, e);
                polled = true;
                continue;
            }
            npu_engine_thread_idle();
            slept = npu_time();
            qemu_cond_wait(&uq->work[e->copy], &uq->lock);
            slept = npu_time() - slept;
            continue;
        } else {
            if (slept >= 0 && s->uq_poll_us) {
                npu_uq_poll_woke(s, e, slept);
            }
            slept = -1;
            q->engine = ei;
            uq->cur[ei] = q->idx;
            polled = false;
            lingered = false;
        }
        trace_npu_uq_switch(ei, last, q->idx, "dispatch");
        q->deferred = 0;        /* a reset or MAP may have moved rptr */
        q->synced_rptr = q->rptr;
        npu_uq_sync_locked(s, q);
        qemu_mutex_unlock(&uq->lock);

        if (qatomic_read(&e->mmu_ctx) != q->ctx || e->pt_root != q->pt_root) {
            npu_mmu_set_context(e, q->ctx, q->pt_root);
        }
        if (last != (int)q->idx && last >= 0 && s->uq_switch_ns) {
            /* saving one queue's state and loading the next one's */
            if (s->vtime) {
                e->vt_start = e->vt;
                npu_vt_complete(e, s->uq_switch_ns);
            } else {
                npu_sleep_until(e, npu_time() + s->uq_switch_ns);
            }
        }
        last = q->idx;
        npu_uq_publish(s, e, q->idx, false);
        e->uq_slice0 = s->vtime ? (int64_t)e->vt : npu_time();
        qemu_mutex_lock(&uq->lock);
        for (;;) {
            why = npu_uq_leave_why(s, e, q);
            if (why == npu_uq_why_empty && q->watched &&
                npu_uq_watch_end_locked(s, e, q, &lingered)) {
                continue;
            }
            if (why) {
                break;
            }
            npu_uq_step(s, e, q, ei);
        }
        trace_npu_uq_switch(ei, q->idx, -1, why);
        npu_launch_cold(e);
        /* A queue that waits, or leaves for another's turn or a pause,
         * comes back to an engine and stays WATCHED. One a command takes
         * off loses WATCHED, and the owner's wptr is read after the
         * status that says so (as in npu_uq_watch_end_locked). */
        watched = q->watched && why != npu_uq_why_wait &&
                  why != npu_uq_why_slice && why != npu_uq_why_pause;
        if (watched) {
            q->watched = false;
        }
        wb_wptr = 0;
        known = q->wptr;
        qemu_mutex_unlock(&uq->lock);
        if (!qatomic_read(&e->abort) && !e->stop) {
            npu_uq_publish(s, e, q->idx, true);
            if (watched) {
                smp_mb();
                npu_uq_read_wb_wptr_settled(s, e, q->idx, known, &wb_wptr);
            }
        }
        qemu_mutex_lock(&uq->lock);
        q->engine = -1;
        uq->cur[ei] = -1;
        q->leave = false;
        freed = true;
        polled = lingered;      /* it watched as long as a poll would */
        if (q->unmap) {
            q->unmap = false;
            uq->db_queue[q->doorbell] = 0;
            q->status &= ~NPU_UQ_STS_MAPPED;
            uq->nmapped--;
        }
        if (q->off_event) {
            q->off_event = false;
            npu_uq_post_locked(s, NPU_UQ_EVENT_OFF, q->ctx, q->idx, 0);
        }
        if (!qatomic_read(&e->abort)) {
            if (wb_wptr > q->wptr) {
                trace_npu_uq_wb_wptr(q->idx, wb_wptr);
                if (npu_uq_take_wptr_locked(s, q, wb_wptr)) {
                    qemu_mutex_unlock(&uq->lock);
                    npu_uq_publish(s, e, q->idx, false);
                    qemu_mutex_lock(&uq->lock);
                }
            }
            npu_uq_progress_locked(s, q);   /* published above */
            npu_uq_make_ready_locked(s, q);
        }
        /* commands waiting for the queue to be off its engine */
        qemu_cond_broadcast(&uq->cond);
    }
    qemu_mutex_unlock(&uq->lock);
    npu_engine_thread_idle();
    rcu_unregister_thread();
    return NULL;
}

/* Between two packets of an IB: must the queue on engine e leave it? */
static bool npu_uq_should_leave(NpuRing *e)
{
    NpuUqState *uq = &e->s->uq;
    int c;
    bool leave;

    qemu_mutex_lock(&uq->lock);
    c = uq->cur[e->idx - NPU_UQ_ENG_IDX(0)];
    leave = c >= 0 && npu_uq_leave_why(e->s, e, &uq->q[c]);
    qemu_mutex_unlock(&uq->lock);
    return leave;
}

/*
 * Waiting queues: the poller re-reads the words they wait for, at once
 * after a device write or a doorbell/KICK, else with the rings' backoff.
 */

typedef struct NpuUqLook {
    uint32_t qi;
    uint32_t ctx;
    uint64_t root;
    uint64_t addr;
    uint64_t value;
    bool wide;
    bool passed;
    bool publish;               /* released or halted: write-back */
    NpuErr err;
} NpuUqLook;

#define NPU_UQ_LOOKS 64

static int npu_uq_idx_cmp(const void *a, const void *b)
{
    const NpuUq *x = *(NpuUq * const *)a, *y = *(NpuUq * const *)b;

    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * timing=virtual: the scheduler's round, at the present with the clock
 * held. The queues that became ready join their ready lists in the order
 * of their indices, then every free engine, in the order of the engines,
 * gets the queue the policy picks for it. uq.lock held.
 */
static void npu_uq_vt_dispatch_locked(NpuState *s)
{
    NpuUqState *uq = &s->uq;
    g_autofree NpuUq **pend = NULL;
    unsigned n = 0, i, ei;
    bool assigned = false;
    NpuUq *q;

    QTAILQ_FOREACH(q, &uq->vt_pend, link) {
        n++;
    }
    pend = g_new(NpuUq *, MAX(n, 1));
    for (i = 0; i < n; i++) {
        q = QTAILQ_FIRST(&uq->vt_pend);
        QTAILQ_REMOVE(&uq->vt_pend, q, link);
        q->vt_pend = false;
        pend[i] = q;
    }
    qsort(pend, n, sizeof(*pend), npu_uq_idx_cmp);
    for (i = 0; i < n; i++) {
        npu_uq_enqueue_locked(s, pend[i]);
    }
    if (qatomic_read(&s->paused) || qatomic_read(&s->draining)) {
        return;
    }
    for (ei = 0; ei < s->uq_n_compute + s->uq_n_copy; ei++) {
        NpuRing *e = &uq->eng[ei];

        if (uq->cur[ei] >= 0 || qatomic_read(&e->abort) || e->stop ||
            !(q = npu_uq_pick_locked(s, e->copy))) {
            continue;
        }
        q->engine = ei;
        uq->cur[ei] = q->idx;
        npu_vt_uq_assign(e);
        assigned = true;
    }
    if (assigned) {
        qemu_cond_broadcast(&uq->cond);
    }
}

static void *npu_uq_poll_thread(void *opaque)
{
    NpuState *s = opaque;
    NpuUqState *uq = &s->uq;
    NpuRing *mr = &uq->eng[NPU_UQ_ENGINES + 1];
    unsigned cap = NPU_UQ_LOOKS;
    g_autofree NpuUqLook *look = g_new(NpuUqLook, cap);

    rcu_register_thread();
    npu_engine_thread_init();
    qemu_mutex_lock(&uq->lock);
    while (!uq->stop) {
        int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
        int64_t next = INT64_MAX;
        bool kick = uq->kick, round = false;
        unsigned n = 0, i;
        NpuUq *q;

        if (qatomic_read(&s->paused)) {
            npu_engine_thread_idle();
            qemu_cond_wait(&uq->poll_cond, &uq->lock);
            continue;
        }
        if (s->vtime) {
            /* a round looks at every waiting queue's word */
            round = npu_vt_uq_round(s);
            if (round && uq->nwaiting > cap) {
                cap = uq->nwaiting;
                look = g_renew(NpuUqLook, look, cap);
            }
        }
        uq->kick = false;
        QTAILQ_FOREACH(q, &uq->wait_list, wlink) {
            if ((round || kick || q->wait_kick || now >= q->wait_next) &&
                n < cap) {
                look[n++] = (NpuUqLook) {
                    .qi = q->idx, .ctx = q->ctx, .root = q->pt_root,
                    .addr = q->wait_addr, .value = q->wait_value,
                    .wide = q->wait_wide,
                };
                q->wait_kick = false;
            } else {
                next = MIN(next, q->wait_next);
            }
        }
        if (n) {
            qemu_mutex_unlock(&uq->lock);
            for (i = 0; i < n; i++) {
                NpuJob job = { .ring = mr };
                uint64_t v = 0;

                if (qatomic_read(&mr->mmu_ctx) != look[i].ctx ||
                    mr->pt_root != look[i].root) {
                    npu_mmu_set_context(mr, look[i].ctx, look[i].root);
                }
                smp_mb();
                if (npu_vm_rw(&job, look[i].addr, &v, look[i].wide ? 8 : 4,
                              false, &look[i].err)) {
                    look[i].passed = npu_sem_passed(le64_to_cpu(v),
                                                    look[i].value,
                                                    look[i].wide);
                }
            }
            qemu_mutex_lock(&uq->lock);
            now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
            for (i = 0; i < n; i++) {
                q = &uq->q[look[i].qi];
                if (!q->waiting || q->wait_addr != look[i].addr ||
                    q->wait_value != look[i].value) {
                    continue;           /* stopped, reset or unmapped */
                }
                if (look[i].err.code) {
                    npu_uq_halt_locked(s, q, &look[i].err, 0, 0);
                    look[i].publish = true;
                } else if (look[i].passed) {
                    npu_uq_unwait_locked(s, q);
                    npu_uq_sync_locked(s, q);
                    npu_uq_make_ready_locked(s, q);
                    look[i].publish = true;
                } else {
                    q->wait_next = now +
                        npu_uq_wait_poll_ns(s, q, now - q->wait_since);
                }
            }
            qemu_mutex_unlock(&uq->lock);
            for (i = 0; i < n; i++) {
                if (look[i].publish) {
                    npu_uq_publish(s, mr, look[i].qi, false);
                }
            }
            qemu_mutex_lock(&uq->lock);
            if (!round) {
                continue;
            }
        }
        if (round) {
            npu_uq_vt_dispatch_locked(s);
            npu_vt_uq_round_end(s);
            continue;
        }
        if (s->vtime) {
            /* rounds, and the host's writes to waited words */
            qemu_mutex_unlock(&uq->lock);
            npu_vt_uq_sleep(s, next, &uq->stop);
            qemu_mutex_lock(&uq->lock);
        } else if (next == INT64_MAX) {
            npu_engine_thread_idle();
            qemu_cond_wait(&uq->poll_cond, &uq->lock);
        } else if (next - now < SCALE_MS) {
            /* condition variables time out in whole milliseconds */
            qemu_mutex_unlock(&uq->lock);
            g_usleep(MAX(next - now, SCALE_US) / SCALE_US);
            qemu_mutex_lock(&uq->lock);
        } else {
            qemu_cond_timedwait(&uq->poll_cond, &uq->lock,
                                (next - now) / SCALE_MS);
        }
    }
    qemu_mutex_unlock(&uq->lock);
    npu_engine_thread_idle();
    rcu_unregister_thread();
    return NULL;
}

/* The device wrote memory: waiting queues look again (npu_sem_kick). */
static void npu_uq_kick(NpuState *s)
{
    if (!qatomic_read(&s->uq.nwaiting)) {
        return;
    }
    qemu_mutex_lock(&s->uq.lock);
    s->uq.kick = true;
    qemu_cond_broadcast(&s->uq.poll_cond);
    qemu_mutex_unlock(&s->uq.lock);
}

/* The VM runs again: engines and the poller look for work. */
void npu_uq_run_kick(NpuState *s)
{
    if (!npu_uq_present(s)) {
        return;
    }
    qemu_mutex_lock(&s->uq.lock);
    npu_uq_wake_engines_locked(&s->uq);
    qemu_cond_broadcast(&s->uq.poll_cond);
    if (s->vtime) {
        npu_vt_uq_pending(s);
    }
    qemu_mutex_unlock(&s->uq.lock);
}

/*
 * Migration: a stop for a save lets every queue leave its engine at a
 * packet boundary (inside an IB too: draining counts as a reason to
 * leave), so the saved state is the queues' alone; false while an engine
 * still runs a packet.
 */
bool npu_uq_quiet(NpuState *s, unsigned *busy)
{
    unsigned e;
    bool quiet = true;

    if (!npu_uq_present(s)) {
        return true;
    }
    qemu_mutex_lock(&s->uq.lock);
    for (e = 0; e < s->uq_n_compute + s->uq_n_copy; e++) {
        if (s->uq.cur[e] >= 0) {
            *busy = NPU_UQ_ENG_IDX(e);
            quiet = false;
            break;
        }
    }
    qemu_mutex_unlock(&s->uq.lock);
    return quiet;
}

static int npu_uq_ready_cmp(const void *a, const void *b)
{
    const NpuUq *x = *(NpuUq * const *)a, *y = *(NpuUq * const *)b;

    return x->ready_seq < y->ready_seq ? -1 : x->ready_seq > y->ready_seq;
}

/*
 * After a load (the device was reset first: no queue on an engine): the
 * doorbell bindings, the ready lists in their saved order and the wait
 * list, from the loaded queues. A queue the device could not have in this
 * state refuses the stream.
 */
int npu_uq_post_load(NpuState *s)
{
    NpuUqState *uq = &s->uq;
    uint32_t ndb = s->uq_db_pages * NPU_UQ_DOORBELLS_PER_PAGE;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    g_autofree NpuUq **rq = g_new(NpuUq *, s->uq_max_queues);
    unsigned i, p, nready = 0;
    int ret = 0;

    qemu_mutex_lock(&uq->lock);
    memset(uq->db_queue, 0, ndb * sizeof(uint32_t));
    for (p = 0; p < NPU_UQ_PRIOS; p++) {
        QTAILQ_INIT(&uq->ready[0][p]);
        QTAILQ_INIT(&uq->ready[1][p]);
    }
    QTAILQ_INIT(&uq->wait_list);
    QTAILQ_INIT(&uq->vt_pend);
    uq->nmapped = 0;
    qatomic_set(&uq->nwaiting, 0);
    uq->seq = 0;
    for (i = 0; i < s->uq_max_queues; i++) {
        NpuUq *q = &uq->q[i];
        bool ready = q->ready, waiting = q->waiting;

        q->idx = i;
        q->engine = -1;
        q->ready = false;
        q->vt_pend = false;
        q->watched = false;
        q->waiting = false;
        q->leave = false;
        q->unmap = false;
        q->off_event = false;
        if (!(q->status & NPU_UQ_STS_MAPPED)) {
            continue;
        }
        if (i >= uq->table_entries || q->doorbell >= ndb ||
            uq->db_queue[q->doorbell] || !is_power_of_2(q->ring_size) ||
            q->ring_size < NPU_UQ_RING_SIZE_MIN ||
            q->ring_size > NPU_UQ_RING_SIZE_MAX ||
            (q->config & ~NPU_UQ_CONFIG_ALL) ||
            NPU_UQ_CONFIG_PRIO(q->config) >= NPU_UQ_PRIOS ||
            q->wptr < q->rptr || q->wptr - q->rptr > q->ring_size ||
            (q->status & ~(NPU_UQ_STS_MAPPED | NPU_UQ_STS_RUNNABLE |
                           NPU_UQ_STS_WAITING | NPU_UQ_STS_HALTED)) ||
            waiting != !!(q->status & NPU_UQ_STS_WAITING) ||
            (ready && waiting)) {
            error_report("npu: migration stream refused: user queue %u", i);
            ret = -EINVAL;
            break;
        }
        uq->db_queue[q->doorbell] = i + 1;
        uq->nmapped++;
        uq->seq = MAX(uq->seq, q->ready_seq);
        if (waiting) {
            q->waiting = true;
            q->wait_doorbell = false;   /* not migrated: polls as usual */
            q->wait_since = now;
            q->wait_next = now;
            QTAILQ_INSERT_TAIL(&uq->wait_list, q, wlink);
            qatomic_inc(&uq->nwaiting);
        } else if (ready) {
            rq[nready++] = q;
        }
    }
    if (!ret) {
        qsort(rq, nready, sizeof(*rq), npu_uq_ready_cmp);
        for (i = 0; i < nready; i++) {
            uint64_t seq = rq[i]->ready_seq;

            npu_uq_enqueue_locked(s, rq[i]);
            rq[i]->ready_seq = seq;
        }
        if (s->vtime) {
            npu_vt_uq_pending(s);
        }
    }
    qemu_mutex_unlock(&uq->lock);
    return ret;
}

/*
 * Queue commands (UQ_CMD, BQL held)
 */

/*
 * Abort what engine ei runs for q and wait until q is off it, as a ring
 * reset does. uq.lock held.
 */
static void npu_uq_abort_locked(NpuState *s, NpuUq *q)
{
    NpuUqState *uq = &s->uq;
    NpuRing *e;

    if (q->engine < 0) {
        return;
    }
    e = &uq->eng[q->engine];
    qatomic_set(&e->abort, true);
    qemu_cond_broadcast(&uq->cond);
    qemu_mutex_unlock(&uq->lock);
    npu_sem_kick(s);
    if (s->vtime) {
        npu_vt_kick(s);                 /* an engine waiting for the clock */
    }
    qemu_mutex_lock(&s->cu_lock);
    qemu_cond_broadcast(&s->cu_cond);   /* a launch waiting for units */
    qemu_mutex_unlock(&s->cu_lock);
    qemu_mutex_lock(&uq->lock);
    while (q->engine >= 0) {
        qemu_cond_wait(&uq->cond, &uq->lock);
    }
    qatomic_set(&e->abort, false);
    npu_uq_wake_engines_locked(uq);
}

/* Check and load descriptor qi for MAP. uq.lock held. */
static uint32_t npu_uq_map_locked(NpuState *s, NpuUq *q)
{
    NpuUqState *uq = &s->uq;
    uint8_t d[NPU_UQD_RPTR + 8];
    uint32_t page, db, ndb = s->uq_db_pages * NPU_UQ_DOORBELLS_PER_PAGE;

    if (q->status & NPU_UQ_STS_MAPPED) {
        return NPU_ERR_RING_CONFIG;
    }
    if (npu_uq_phys(s, npu_uq_desc(s, q), d, sizeof(d), false) != MEMTX_OK) {
        return NPU_ERR_BAD_DMA;
    }
    q->ring_va = ldq_le_p(d + NPU_UQD_RING_VA);
    q->ring_size = ldl_le_p(d + NPU_UQD_RING_SIZE);
    q->config = ldl_le_p(d + NPU_UQD_CONFIG);
    q->wb_va = ldq_le_p(d + NPU_UQD_WB_VA);
    q->ctx = ldl_le_p(d + NPU_UQD_CTX);
    q->doorbell = ldl_le_p(d + NPU_UQD_DOORBELL);
    q->pt_root = ldq_le_p(d + NPU_UQD_PT_ROOT);
    q->wptr = ldq_le_p(d + NPU_UQD_WPTR);
    q->rptr = ldq_le_p(d + NPU_UQD_RPTR);
    page = q->doorbell >> 9;
    db = q->doorbell;
    if ((q->ring_va & (NPU_PAGE_SIZE - 1)) ||
        q->ring_va + q->ring_size <= q->ring_va ||
        q->ring_va + q->ring_size > (1ull << NPU_VA_BITS) ||
        q->ring_size < NPU_UQ_RING_SIZE_MIN ||
        q->ring_size > NPU_UQ_RING_SIZE_MAX ||
        !is_power_of_2(q->ring_size) ||
        (q->wb_va & (NPU_UQ_WB_SIZE - 1)) ||
        (q->config & ~NPU_UQ_CONFIG_ALL) ||
        NPU_UQ_CONFIG_PRIO(q->config) >= NPU_UQ_PRIOS ||
        ((q->config & NPU_UQ_CONFIG_COPY) ? !s->uq_n_copy :
                                            !s->uq_n_compute) ||
        page >= s->uq_db_pages || db >= ndb || (db >> 21) ||
        uq->db_queue[db] || !q->ctx ||
        q->wptr < q->rptr || q->wptr - q->rptr > q->ring_size ||
        (q->wptr & 3) || (q->rptr & 3)) {
        return NPU_ERR_RING_CONFIG;
    }
    if (q->pt_root & (NPU_PAGE_SIZE - 1)) {
        return NPU_ERR_BAD_PACKET;
    }
    q->status = NPU_UQ_STS_MAPPED | NPU_UQ_STS_RUNNABLE;
    q->error = 0;
    q->fault = 0;
    q->error_info = 0;
    q->fault_block = 0;
    q->fault_pc = 0;
    q->fault_thread = 0;
    q->fault_unit = 0;
    q->fault_entry = 0;
    q->ib_va = 0;
    q->ib_size = 0;
    q->ib_offset = 0;
    q->progress_ns = 0;
    q->busy_ns = 0;
    q->run_start_ns = 0;
    q->state_seq = 0;
    q->cmds = 0;
    q->bytes = 0;
    q->ops = 0;
    q->skip = 0;
    q->starve = 0;
    q->leave = false;
    q->unmap = false;
    q->off_event = false;
    uq->db_queue[db] = q->idx + 1;
    uq->nmapped++;
    npu_uq_sync_locked(s, q);
    npu_uq_make_ready_locked(s, q);
    return 0;
}

/* Off the scheduler: on no engine, in no list. uq.lock held. */
static void npu_uq_unmap_locked(NpuState *s, NpuUq *q)
{
    npu_uq_unready_locked(s, q);
    npu_uq_unwait_locked(s, q);
    q->watched = false;
    s->uq.db_queue[q->doorbell] = 0;
    q->status = 0;
    s->uq.nmapped--;
    npu_uq_sync_locked(s, q);
}

static uint32_t npu_uq_cmd(NpuState *s, uint32_t op, uint32_t qi)
{
    NpuUqState *uq = &s->uq;
    NpuErr stopped = { .code = NPU_ERR_STOPPED };
    uint32_t ret = 0;
    bool publish = false;
    NpuUq *q;

    if (qi >= uq->table_entries || !uq->table_base) {
        return NPU_ERR_RING_CONFIG;
    }
    q = &uq->q[qi];
    trace_npu_uq_map(op, qi, q->status);
    if (op != NPU_UQ_CMD_MAP && !(q->status & NPU_UQ_STS_MAPPED)) {
        return NPU_ERR_RING_CONFIG;
    }
    switch (op) {
    case NPU_UQ_CMD_MAP:
        ret = npu_uq_map_locked(s, q);
        publish = !ret;
        break;
    case NPU_UQ_CMD_UNMAP:
    case NPU_UQ_CMD_SUSPEND:
        q->status &= ~NPU_UQ_STS_RUNNABLE;
        npu_uq_unready_locked(s, q);
        if (q->engine < 0) {
            q->watched = false;         /* RUN reads the wb wptr */
        }
        if (q->engine >= 0) {
            /* off at the next packet boundary, then an OFF event */
            q->leave = true;
            q->off_event = true;
            q->unmap = op == NPU_UQ_CMD_UNMAP;
            qemu_cond_broadcast(&uq->cond);
            break;
        }
        if (op == NPU_UQ_CMD_UNMAP) {
            npu_uq_unmap_locked(s, q);
        } else {
            npu_uq_sync_locked(s, q);
            publish = true;
        }
        break;
    case NPU_UQ_CMD_RUN:
        q->status |= NPU_UQ_STS_RUNNABLE;
        npu_uq_sync_locked(s, q);
        npu_uq_make_ready_locked(s, q);
        publish = true;
        break;
    case NPU_UQ_CMD_STOP:
    case NPU_UQ_CMD_RESET:
        q->skip = 0;
        npu_uq_abort_locked(s, q);
        /* an unmap the aborted packet held back takes effect now */
        if (q->unmap) {
            q->unmap = false;
            q->leave = false;
            npu_uq_unmap_locked(s, q);
            break;
        }
        q->leave = false;
        if (q->waiting) {
            q->skip = 0;        /* a wait that never started is not skipped */
        }
        if (op == NPU_UQ_CMD_STOP) {
            npu_uq_halt_locked(s, q, &stopped, 0, q->skip);
        } else {
            npu_uq_unready_locked(s, q);
            npu_uq_unwait_locked(s, q);
            q->watched = false;
            q->rptr = q->wptr;
            q->ib_va = 0;
            q->ib_size = 0;
            q->ib_offset = 0;
            q->skip = 0;
            q->status &= ~NPU_UQ_STS_HALTED;
            q->error = 0;
            q->fault = 0;
            q->error_info = 0;
            q->fault_block = 0;
            q->fault_pc = 0;
            q->fault_thread = 0;
            q->fault_unit = 0;
            q->fault_entry = 0;
            npu_uq_sync_locked(s, q);
        }
        publish = true;
        break;
    case NPU_UQ_CMD_CONTINUE:
        if (q->status & NPU_UQ_STS_HALTED) {
            q->status &= ~NPU_UQ_STS_HALTED;
            if (q->skip) {
                /* past the failed packet (an INDIRECT: the rest of it) */
                q->rptr = MIN(q->rptr + q->skip, q->wptr);
                q->skip = 0;
                q->ib_va = 0;
                q->ib_size = 0;
                q->ib_offset = 0;
            }
            npu_uq_sync_locked(s, q);
            npu_uq_make_ready_locked(s, q);
            publish = true;
        }
        break;
    case NPU_UQ_CMD_KICK:
        if (q->waiting) {
            q->wait_kick = true;
            npu_uq_poke_locked(s);
        }
        break;
    default:
        ret = NPU_ERR_BAD_OPCODE;
        break;
    }
    if (!ret && (q->status & NPU_UQ_STS_MAPPED)) {
        /* every command leaves the descriptor current (also after a time
         * without bus mastering, when the device could not write it) */
        npu_uq_sync_locked(s, q);
    }
    if (publish && q->engine < 0) {
        qemu_mutex_unlock(&uq->lock);
        npu_uq_publish(s, &uq->eng[NPU_UQ_ENGINES], qi, false);
        qemu_mutex_lock(&uq->lock);
    }
    if (!ret && (op == NPU_UQ_CMD_RUN || op == NPU_UQ_CMD_CONTINUE) &&
        !q->watched && q->engine < 0 && !s->vtime) {
        uint64_t w = 0;

        /* what the owner wrote while it saw the queue WATCHED, before a
         * SUSPEND or a halt took it off the scheduler */
        qemu_mutex_unlock(&uq->lock);
        npu_uq_read_wb_wptr(s, &uq->eng[NPU_UQ_ENGINES], qi, &w);
        qemu_mutex_lock(&uq->lock);
        if (w > q->wptr && (q->status & NPU_UQ_STS_MAPPED)) {
            trace_npu_uq_wb_wptr(qi, w);
            publish = npu_uq_take_wptr_locked(s, q, w);
            if (publish) {
                qemu_mutex_unlock(&uq->lock);
                npu_uq_publish(s, &uq->eng[NPU_UQ_ENGINES], qi, false);
                qemu_mutex_lock(&uq->lock);
            }
        }
    }
    return ret;
}

/*
 * Doorbells (BAR1, BQL held)
 */

static uint64_t npu_uq_db_read(void *opaque, hwaddr addr, unsigned size)
{
    return 0;
}

static void npu_uq_db_write(void *opaque, hwaddr addr, uint64_t w,
                            unsigned size)
{
    NpuState *s = opaque;
    NpuUqState *uq = &s->uq;
    uint32_t db = addr / 8, qi;
    bool publish = false;
    NpuUq *q;

    npu_host_touch(s);
    if (size != 8 || (addr & 7)) {
        qemu_log_mask(LOG_GUEST_ERROR, "npu: doorbell write of %u bytes at "
                      "0x%" HWADDR_PRIx ": ignored\n", size, addr);
        return;
    }
    qemu_mutex_lock(&uq->lock);
    qi = uq->db_queue[db];
    trace_npu_uq_doorbell(db, (int)qi - 1, w);
    if (!qi || !uq->table_base) {
        qemu_mutex_unlock(&uq->lock);
        qemu_log_mask(LOG_GUEST_ERROR, "npu: write to unbound doorbell %u\n",
                      db);
        return;
    }
    q = &uq->q[qi - 1];
    q->doorbells++;
    publish = npu_uq_take_wptr_locked(s, q, w);
    qemu_mutex_unlock(&uq->lock);
    if (publish) {
        npu_uq_publish(s, &uq->eng[NPU_UQ_ENGINES], qi - 1, false);
    }
}

static const MemoryRegionOps npu_uq_db_ops = {
    .read = npu_uq_db_read,
    .write = npu_uq_db_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
    },
};

/*
 * Realize, reset, unrealize
 */

static const NpuUqHooks npu_uq_hooks = {
    .kick = npu_uq_kick,
    .signal_event = npu_uq_signal_event,
    .should_leave = npu_uq_should_leave,
};

void npu_uq_realize(NpuState *s)
{
    NpuUqState *uq = &s->uq;
    unsigned i, p;

    s->uq_hooks = &npu_uq_hooks;
    qemu_mutex_init(&uq->lock);
    qemu_mutex_init(&uq->wb_lock);
    qemu_cond_init(&uq->cond);
    qemu_cond_init(&uq->work[0]);
    qemu_cond_init(&uq->work[1]);
    uq->poller[0] = uq->poller[1] = -1;
    uq->poll_ns[0] = uq->poll_ns[1] = (int64_t)s->uq_poll_us * SCALE_US;
    qemu_cond_init(&uq->poll_cond);
    if (!npu_uq_present(s)) {
        return;
    }
    memory_region_init_io(&s->doorbells, OBJECT(s), &npu_uq_db_ops, s,
                          "npu-doorbells", s->uq_db_pages * NPU_PAGE_SIZE);
    pci_register_bar(PCI_DEVICE(s), NPU_BAR_DOORBELL,
                     PCI_BASE_ADDRESS_SPACE_MEMORY, &s->doorbells);
    uq->q = g_new0(NpuUq, s->uq_max_queues);
    for (i = 0; i < s->uq_max_queues; i++) {
        uq->q[i].idx = i;
        uq->q[i].engine = -1;
    }
    uq->db_queue = g_new0(uint32_t,
                          s->uq_db_pages * NPU_UQ_DOORBELLS_PER_PAGE);
    for (p = 0; p < NPU_UQ_PRIOS; p++) {
        QTAILQ_INIT(&uq->ready[0][p]);
        QTAILQ_INIT(&uq->ready[1][p]);
    }
    QTAILQ_INIT(&uq->wait_list);
    QTAILQ_INIT(&uq->vt_pend);
    for (i = 0; i < NPU_UQ_ENGINES + 2; i++) {
        NpuRing *e = &uq->eng[i];

        memset(e, 0, sizeof(*e));
        e->s = s;
        e->idx = NPU_UQ_ENG_IDX(i);
        e->uq_engine = true;
        e->copy = i >= s->uq_n_compute;
        qemu_mutex_init(&e->lock);
        qemu_cond_init(&e->cond);
        npu_tlb_flush(e);
        if (i < NPU_UQ_ENGINES) {
            uq->cur[i] = -1;
        }
        if (i < s->uq_n_compute + s->uq_n_copy) {
            snprintf(e->name, sizeof(e->name), "npu-uq%u", i);
            qemu_thread_create(&e->thread, e->name, npu_uq_engine_thread, e,
                               QEMU_THREAD_JOINABLE);
        }
    }
    qemu_thread_create(&uq->poll_thread, "npu-uq-poll", npu_uq_poll_thread,
                       s, QEMU_THREAD_JOINABLE);
}

void npu_uq_unrealize(NpuState *s)
{
    NpuUqState *uq = &s->uq;
    unsigned i, n = s->uq_n_compute + s->uq_n_copy;

    if (npu_uq_present(s)) {
        qemu_mutex_lock(&uq->lock);
        uq->stop = true;
        for (i = 0; i < n; i++) {
            qatomic_set(&uq->eng[i].stop, true);
        }
        npu_uq_wake_engines_locked(uq);
        qemu_cond_broadcast(&uq->poll_cond);
        qemu_mutex_unlock(&uq->lock);
        npu_sem_kick(s);
        npu_vt_kick(s);
        qemu_mutex_lock(&s->cu_lock);
        qemu_cond_broadcast(&s->cu_cond);
        qemu_mutex_unlock(&s->cu_lock);
        for (i = 0; i < n; i++) {
            qemu_thread_join(&uq->eng[i].thread);
        }
        qemu_thread_join(&uq->poll_thread);
        for (i = 0; i < NPU_UQ_ENGINES + 2; i++) {
            qemu_cond_destroy(&uq->eng[i].cond);
            qemu_mutex_destroy(&uq->eng[i].lock);
        }
        g_free(uq->q);
        g_free(uq->db_queue);
    }
    qemu_cond_destroy(&uq->poll_cond);
    qemu_cond_destroy(&uq->cond);
    qemu_cond_destroy(&uq->work[0]);
    qemu_cond_destroy(&uq->work[1]);
    qemu_mutex_destroy(&uq->wb_lock);
    qemu_mutex_destroy(&uq->lock);
}

/*
 * Device reset: every queue's packet aborted, every queue unmapped, the
 * registers cleared; the descriptors are not written after the abort.
 */
void npu_uq_reset(NpuState *s)
{
    NpuUqState *uq = &s->uq;
    unsigned i, p;

    qemu_mutex_lock(&uq->lock);
    if (npu_uq_present(s)) {
        /* nothing can be dispatched or released while engines let go */
        for (i = 0; i < s->uq_max_queues; i++) {
            npu_uq_unready_locked(s, &uq->q[i]);
            npu_uq_unwait_locked(s, &uq->q[i]);
            uq->q[i].status &= ~NPU_UQ_STS_RUNNABLE;
        }
        for (i = 0; i < s->uq_max_queues; i++) {
            NpuUq *q = &uq->q[i];

            if (q->engine >= 0) {
                q->unmap = false;
                q->off_event = false;
                npu_uq_abort_locked(s, q);
            }
        }
        for (i = 0; i < s->uq_max_queues; i++) {
            NpuUq *q = &uq->q[i];

            memset(q, 0, sizeof(*q));
            q->idx = i;
            q->engine = -1;
        }
        memset(uq->db_queue, 0, s->uq_db_pages * NPU_UQ_DOORBELLS_PER_PAGE *
                                sizeof(uint32_t));
        for (p = 0; p < NPU_UQ_PRIOS; p++) {
            QTAILQ_INIT(&uq->ready[0][p]);
            QTAILQ_INIT(&uq->ready[1][p]);
        }
        QTAILQ_INIT(&uq->wait_list);
        QTAILQ_INIT(&uq->vt_pend);
        qatomic_set(&uq->nwaiting, 0);
        for (i = 0; i < NPU_UQ_ENGINES + 2; i++) {
            npu_mmu_set_context(&uq->eng[i], 0, 0);
        }
    }
    uq->nmapped = 0;
    uq->kick = false;
    uq->event_base = 0;
    uq->event_size = 0;
    uq->event_head = 0;
    uq->event_tail = 0;
    uq->event_status = 0;
    uq->table_base = 0;
    uq->table_entries = 0;
    uq->cmd_status = 0;
    qemu_mutex_unlock(&uq->lock);
    /* the engine counters, each under its engine's lock (see above) */
    for (i = 0; i < s->uq_n_compute + s->uq_n_copy; i++) {
        NpuRing *r = &uq->eng[i];

        qemu_mutex_lock(&r->lock);
        r->busy_ns = 0;
        r->busy_seen = 0;
        r->cmds = 0;
        r->bytes = 0;
        r->ops = 0;
        qemu_mutex_unlock(&r->lock);
    }
}

/*
 * UQ_ENGINE_CNT(e): the engine's own counters, under its lock (taken
 * without uq.lock: the engines take uq.lock inside their own).
 */
static uint32_t npu_uq_read_counter(NpuState *s, hwaddr addr)
{
    unsigned e = (addr - NPU_REG_UQ_ENGINE_CNT(0)) / 0x20;
    hwaddr off = (addr - NPU_REG_UQ_ENGINE_CNT(0)) % 0x20;
    NpuRing *r;
    uint64_t v;

    if (e >= s->uq_n_compute + s->uq_n_copy) {
        return 0;
    }
    r = &s->uq.eng[e];
    qemu_mutex_lock(&r->lock);
    switch (off & ~7) {
    case NPU_UQ_ENGINE_BUSY_LO:
        v = npu_ring_busy(r);
        break;
    case NPU_UQ_ENGINE_CMDS_LO:
        v = r->cmds;
        break;
    case NPU_UQ_ENGINE_BYTES_LO:
        v = r->bytes;
        break;
    default:
        v = r->ops;
        break;
    }
    qemu_mutex_unlock(&r->lock);
    return off & 4 ? v >> 32 : (uint32_t)v;
}

uint32_t npu_uq_read(NpuState *s, hwaddr addr)
{
    NpuUqState *uq = &s->uq;
    uint32_t v = 0;

    if (!npu_uq_present(s)) {
        return 0;
    }
    if (addr >= NPU_REG_UQ_ENGINE_CNT(0)) {
        return npu_uq_read_counter(s, addr);
    }
    qemu_mutex_lock(&uq->lock);
    switch (addr) {
    case NPU_REG_UQ_MAX_QUEUES:
        v = s->uq_max_queues;
        break;
    case NPU_REG_UQ_ENGINES:
        v = s->uq_n_compute | s->uq_n_copy << 8;
        break;
    case NPU_REG_UQ_DOORBELL_PAGES:
        v = s->uq_db_pages;
        break;
    case NPU_REG_UQ_TIMESLICE_US:
        v = s->uq_timeslice_us;
        break;
    case NPU_REG_UQ_TABLE_BASE_LO:
        v = uq->table_base;
        break;
    case NPU_REG_UQ_TABLE_BASE_HI:
        v = uq->table_base >> 32;
        break;
    case NPU_REG_UQ_TABLE_ENTRIES:
        v = uq->table_entries;
        break;
    case NPU_REG_UQ_SWITCH_NS:
        v = s->uq_switch_ns;
        break;
    case NPU_REG_UQ_EVENT_BASE_LO:
        v = uq->event_base;
        break;
    case NPU_REG_UQ_EVENT_BASE_HI:
        v = uq->event_base >> 32;
        break;
    case NPU_REG_UQ_EVENT_SIZE:
        v = uq->event_size;
        break;
    case NPU_REG_UQ_EVENT_HEAD:
        v = uq->event_head;
        break;
    case NPU_REG_UQ_EVENT_TAIL:
        v = uq->event_tail;
        break;
    case NPU_REG_UQ_EVENT_STATUS:
        v = uq->event_status;
        break;
    case NPU_REG_UQ_CMD_STATUS:
        v = uq->cmd_status;
        break;
    default:
        if (addr >= NPU_REG_UQ_ENGINE_QUEUE(0) &&
            addr < NPU_REG_UQ_ENGINE_QUEUE(s->uq_n_compute + s->uq_n_copy)) {
            int c = uq->cur[(addr - NPU_REG_UQ_ENGINE_QUEUE(0)) / 4];

            v = c < 0 ? NPU_UQ_ENGINE_IDLE : c;
        }
        break;
    }
    qemu_mutex_unlock(&uq->lock);
    return v;
}

/* A write to a register that only changes while no queue is mapped. */
static bool npu_uq_config_ok(NpuState *s, hwaddr addr)
{
    if (s->uq.nmapped) {
        qemu_log_mask(LOG_GUEST_ERROR, "npu: UQ register 0x%" HWADDR_PRIx
                      " written while queues are mapped: ignored\n", addr);
        return false;
    }
    return true;
}

void npu_uq_write(NpuState *s, hwaddr addr, uint32_t val)
{
    NpuUqState *uq = &s->uq;

    if (!npu_uq_present(s)) {
        qemu_log_mask(LOG_GUEST_ERROR, "npu: write to UQ register 0x%"
                      HWADDR_PRIx " without user queues\n", addr);
        return;
    }
    qemu_mutex_lock(&uq->lock);
    switch (addr) {
    case NPU_REG_UQ_TABLE_BASE_LO:
        if (npu_uq_config_ok(s, addr)) {
            uq->table_base = deposit64(uq->table_base, 0, 32,
                                       val & ~(uint32_t)(NPU_PAGE_SIZE - 1));
        }
        break;
    case NPU_REG_UQ_TABLE_BASE_HI:
        if (npu_uq_config_ok(s, addr)) {
            uq->table_base = deposit64(uq->table_base, 32, 32, val);
        }
        break;
    case NPU_REG_UQ_TABLE_ENTRIES:
        if (npu_uq_config_ok(s, addr)) {
            uq->table_entries = MIN(val, s->uq_max_queues);
        }
        break;
    case NPU_REG_UQ_EVENT_BASE_LO:
        if (npu_uq_config_ok(s, addr)) {
            uq->event_base = deposit64(uq->event_base, 0, 32,
                                       val & ~(uint32_t)(NPU_PAGE_SIZE - 1));
        }
        break;
    case NPU_REG_UQ_EVENT_BASE_HI:
        if (npu_uq_config_ok(s, addr)) {
            uq->event_base = deposit64(uq->event_base, 32, 32, val);
        }
        break;
    case NPU_REG_UQ_EVENT_SIZE:
        if (!npu_uq_config_ok(s, addr)) {
            break;
        }
        if (val && (!is_power_of_2(val) || val < NPU_UQ_EVENT_SIZE_MIN ||
                    val > NPU_UQ_EVENT_SIZE_MAX)) {
            qemu_log_mask(LOG_GUEST_ERROR, "npu: bad UQ_EVENT_SIZE 0x%x\n",
                          val);
            break;
        }
        uq->event_size = val;
        uq->event_head = 0;
        uq->event_tail = 0;
        break;
    case NPU_REG_UQ_EVENT_HEAD:
        if (uq->event_size) {
            uq->event_head = val & (uq->event_size - 1) &
                             ~(uint32_t)(sizeof(struct npu_uq_event) - 1);
        }
        break;
    case NPU_REG_UQ_EVENT_STATUS:
        uq->event_status &= ~val;
        break;
    case NPU_REG_UQ_CMD:
        uq->cmd_status = npu_uq_cmd(s, val & 0xff, val >> 8);
        break;
    default:
        qemu_log_mask(LOG_GUEST_ERROR, "npu: write 0x%x to read-only or "
                      "unknown UQ register 0x%" HWADDR_PRIx "\n", val, addr);
        break;
    }
    qemu_mutex_unlock(&uq->lock);
}
