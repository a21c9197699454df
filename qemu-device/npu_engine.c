/*
 * npu - virtual NPU PCI device: ring command processors.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * One thread per ring fetches packets between HEAD and TAIL from the ring in
 * guest memory, executes them in order, and halts the ring on the first
 * error (recording it in the ring's error registers and raising the error
 * vector). Indirect buffers are fetched through the MMU and may hold only
 * unprivileged packets.
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/rcu.h"
#include "qemu/timer.h"
#include "npu_base.h"
#include "npu_cu.h"
#include "npu_engine.h"
#include "npu_job.h"
#include "npu_kernels.h"
#include "npu_mmu.h"
#include "npu_vtime.h"
#include "trace.h"

#define NPU_CHUNK           (64 * 1024)
#define NPU_COPY_MAX        (1ull << 30)

static bool npu_set_err(NpuErr *err, uint32_t code, uint64_t addr)
{
    err->code = code;
    err->addr = addr;
    return false;
}

static bool npu_exec_copy(NpuJob *job, const uint32_t *p, NpuErr *err)
{
    NpuState *s = job->ring->s;
    uint64_t src = ldq_le_p(p + 2), dst = ldq_le_p(p + 4);
    uint64_t size = ldq_le_p(p + 6);
    uint64_t link = 0, mem = 0, off;
    int64_t t0 = npu_job_t0(job);
    g_autofree uint8_t *buf = NULL;

    if (size > NPU_COPY_MAX) {
        return npu_set_err(err, NPU_ERR_BAD_PACKET, size);
    }
    buf = g_malloc(MIN(size, NPU_CHUNK) + 1);
    for (off = 0; off < size; off += NPU_CHUNK) {
        uint64_t n = MIN(size - off, NPU_CHUNK);
        uint64_t host = job->host_bytes;

        npu_park(s, job->ring);
        if (npu_aborted(job->ring)) {
            return true;
        }
        if (!npu_vm_copy_fast(job, src + off, NULL, dst + off, n) &&
            (!npu_vm_rw(job, src + off, buf, n, false, err) ||
             !npu_vm_rw(job, dst + off, buf, n, true, err))) {
            return false;
        }
        if (job->host_bytes != host) {
            link += n;
        } else {
            mem += n;
        }
    }
    npu_complete(job, t0, s->copy_ns + npu_bytes_ns(s, link, mem), false,
                 size);
    return true;
}

static bool npu_exec_fill(NpuJob *job, const uint32_t *p, NpuErr *err)
{
    NpuState *s = job->ring->s;
    uint32_t value = p[1];
    uint64_t dst = ldq_le_p(p + 2), size = ldq_le_p(p + 4);
    uint64_t link = 0, mem = 0, off;
    int64_t t0 = npu_job_t0(job);
    g_autofree uint32_t *buf = NULL;
    unsigned i;

    if (size % 4 || size > NPU_COPY_MAX) {
        return npu_set_err(err, NPU_ERR_BAD_PACKET, size);
    }
    buf = g_malloc(NPU_CHUNK);
    for (i = 0; i < NPU_CHUNK / 4; i++) {
        stl_le_p(buf + i, value);
    }
    for (off = 0; off < size; off += NPU_CHUNK) {
        uint64_t n = MIN(size - off, NPU_CHUNK);
        uint64_t host = job->host_bytes;

        npu_park(s, job->ring);
        if (npu_aborted(job->ring)) {
            return true;
        }
        if (!npu_vm_copy_fast(job, 0, buf, dst + off, n) &&
            !npu_vm_rw(job, dst + off, buf, n, true, err)) {
            return false;
        }
        if (job->host_bytes != host) {
            link += n;
        } else {
            mem += n;
        }
    }
    npu_complete(job, t0, npu_bytes_ns(s, link, mem), false, size);
    return true;
}

static bool npu_exec_timestamp(NpuJob *job, const uint32_t *p, NpuErr *err)
{
    uint64_t dst = ldq_le_p(p + 2);
    int64_t t0 = npu_job_t0(job);
    NpuRing *r = job->ring;
    uint64_t ts = cpu_to_le64(r->s->vtime ? r->vt : npu_clock(r->s));

    if (!npu_vm_rw(job, dst, &ts, 8, true, err)) {
        return false;
    }
    npu_complete(job, t0, 0, false, 8);
    return true;
}

/*
 * x-signal-delay-us: tests widen the gap between the two halves of an
 * ordering readers depend on (a signal's count and write; a user queue's
 * write-back and descriptor)
 */
void npu_signal_delay(NpuState *s)
{
    if (s->signal_delay_us) {
        g_usleep(s->signal_delay_us);
    }
}

/* SEM_SIGNAL: the 32-bit value to addr after every earlier command. */
static bool npu_exec_sem_signal(NpuJob *job, const uint32_t *p, NpuErr *err)
{
    uint64_t addr = ldq_le_p(p + 2);
    int64_t t0 = npu_job_t0(job);
    uint32_t v = cpu_to_le32(p[1]);

    if (addr & 3) {
        return npu_set_err(err, NPU_ERR_BAD_PACKET, addr);
    }
    /*
     * Accounted before the write: whoever has seen the value reads
     * counters that include this command. Earlier commands' writes are
     * visible before the signal; waiters look again after it.
     */
    if (!npu_complete(job, t0, 0, false, 4)) {
        return true;
    }
    npu_signal_delay(job->ring->s);
    smp_mb();
    if (!npu_vm_rw(job, addr, &v, 4, true, err)) {
        return false;
    }
    npu_sem_kick(job->ring->s);
    return true;
}

/*
 * SIGNAL: the clock to the memory signal's timestamp, then the value, then
 * (after a full barrier) a look at armed and wake_value, which a waiter
 * sets before it reads value again: either it sees the value or the device
 * sees them. Only a value that reaches wake_value raises the event, so a
 * stream's signals before the one its host thread sleeps for cost none.
 */
static bool npu_exec_signal(NpuJob *job, const uint32_t *p, NpuErr *err)
{
    NpuRing *r = job->ring;
    NpuState *s = r->s;
    uint64_t addr = ldq_le_p(p + 2), value = ldq_le_p(p + 4);
    int64_t t0 = npu_job_t0(job);
    uint64_t ts, v, now = value;
    struct {
        uint32_t armed;
        uint32_t reserved;
        uint64_t wake_value;
    } arm;
    bool write = true, ok = true;
    uint8_t *sig;
    NpuVmMap m;
    QemuMutex *lock;

    QEMU_BUILD_BUG_ON(offsetof(struct npu_signal, wake_value) !=
                      offsetof(struct npu_signal, armed) + 8);

    if (addr & (NPU_SIGNAL_ALIGN - 1)) {
        return npu_set_err(err, NPU_ERR_BAD_PACKET, addr);
    }
    /* the timestamp is the signal's start; accounted as SEM_SIGNAL is */
    ts = cpu_to_le64(s->vtime ? r->vt : npu_clock_at(s, t0));
    if (!npu_complete(job, t0, 0, false, 16)) {
        return true;
    }
    npu_signal_delay(s);
    smp_mb();
    /*
     * The accesses through one mapping; access by access below only when
     * the signal cannot be mapped (a fault, memory that is not RAM), to
     * report the access that fails.
     */
    sig = npu_vm_map_one(job, addr, sizeof(struct npu_signal), true, &m);
    if (sig) {
        uint64_t accessed = 8 + sizeof(arm);

        lock = &s->signal_lock[(uintptr_t)sig / NPU_SIGNAL_ALIGN %
                               NPU_SIGNAL_LOCKS];
        qemu_mutex_lock(lock);
        if (NPU_PKT_FLAGS(p[0]) & NPU_SIGNAL_MAX) {
            v = ldq_le_p(sig + offsetof(struct npu_signal, value));
            write = v <= value;
            now = write ? value : v;
            accessed += 8;
        }
        if (write) {
            stq_le_p(sig + offsetof(struct npu_signal, timestamp),
                     le64_to_cpu(ts));
            smp_wmb();  /* the timestamp before the value it belongs to */
            stq_le_p(sig + offsetof(struct npu_signal, value), value);
            accessed += 8;
        }
        qemu_mutex_unlock(lock);
        smp_mb();       /* value stored, then armed loaded: see the waiter */
        memcpy(&arm, sig + offsetof(struct npu_signal, armed), sizeof(arm));
        npu_vm_unmap_one(job, &m, write ? 16 : 0, accessed);
        goto signalled;
    }
    /* not RAM (or a fault ahead): no host address to stripe by */
    lock = &s->signal_lock[0];
    qemu_mutex_lock(lock);
    if (NPU_PKT_FLAGS(p[0]) & NPU_SIGNAL_MAX) {
        if (!npu_vm_rw(job, addr + offsetof(struct npu_signal, value), &v, 8,
                       false, err)) {
            qemu_mutex_unlock(lock);
            return false;
        }
        write = le64_to_cpu(v) <= value;
        now = write ? value : le64_to_cpu(v);
    }
    v = cpu_to_le64(value);
    if (write) {
        ok = npu_vm_rw(job, addr + offsetof(struct npu_signal, timestamp),
                       &ts, 8, true, err);
        smp_wmb();
        ok = ok && npu_vm_rw(job, addr + offsetof(struct npu_signal, value),
                             &v, 8, true, err);
    }
    qemu_mutex_unlock(lock);
    if (!ok) {
        return false;
    }
    smp_mb();
    if (!npu_vm_rw(job, addr + offsetof(struct npu_signal, armed), &arm,
                   sizeof(arm), false, err)) {
        return false;
    }
signalled:
    trace_npu_signal(r->idx, addr, value, le32_to_cpu(arm.armed));
    if (npu_aborted(r)) {
        return true;
    }
    if (arm.armed && now >= le64_to_cpu(arm.wake_value)) {
        s->uq_hooks->signal_event(r, addr);
    }
    npu_sem_kick(s);
    return true;
}

/*
 * SEM_WAIT (wide false: a u32 compared wrap-safe) and WAIT_MEM64 (wide: a
 * u64 compared unsigned): until the word at addr has reached value.
 */
static bool npu_exec_wait(NpuJob *job, uint64_t addr, uint64_t value,
                          bool wide, NpuErr *err)
{
    NpuRing *r = job->ring;
    NpuState *s = r->s;
    unsigned len = wide ? 8 : 4;
    int64_t t0, w0;
    uint64_t v;
    uint32_t gen;
    unsigned polls = 0;
    bool ok = true, seen = false;

    if (addr & (len - 1)) {
        return npu_set_err(err, NPU_ERR_BAD_PACKET, addr);
    }
    if (r->uq_engine) {
        /* a user queue looks once; unsatisfied, it yields its engine */
        smp_mb();
        v = 0;
        if (!npu_vm_rw(job, addr, &v, len, false, err)) {
            return false;
        }
        if (!npu_sem_passed(le64_to_cpu(v), value, wide)) {
            /*
             * timing=virtual: the word is read again when the clock would
             * move, so a write at the present releases it on its engine
             */
            int passed = s->vtime ? npu_vt_uq_block(r, addr, value, wide) : 0;

            if (passed < 0) {
                return true;    /* aborted */
            }
            if (passed) {
                smp_mb();
                npu_complete(job, npu_time(), 0, false, len);
                return true;
            }
            job->yield = true;
            job->wait_addr = addr;
            job->wait_value = value;
            job->wait_wide = wide;
            return true;
        }
        smp_mb();
        npu_complete(job, npu_time(), 0, false, len);
        return true;
    }
    trace_npu_ring_sem_wait(r->idx, addr, value);
    /*
     * Until the value is seen this command has no effect, so a snapshot
     * may record the ring as not having started it (npu.c, "Migration").
     * The ring thread clears sem_wait again.
     */
    qemu_mutex_lock(&r->lock);
    r->sem_wait = true;
    qemu_mutex_unlock(&r->lock);
    /*
     * A guest CPU's write to the semaphore cannot notify the device (it is
     * plain RAM, as on real hardware, whose semaphore units poll too), so
     * the ring polls, with a backoff: after a quarter of the time waited
     * so far, between NPU_SEM_POLL_MIN_NS and NPU_SEM_POLL_MAX_NS. A
     * release by the host is seen at most a quarter of its wait (or 10 ms)
     * late, and a long wait costs the host 100 looks a second. The
     * device's own writes do notify: every completed command bumps
     * sem_gen and wakes sem_cond (npu_sem_kick), so a SEM_SIGNAL from
     * another ring releases a sleeping waiter at once. QEMU's condition
     * variables time out in whole milliseconds, so sleeps shorter than
     * that (the first 4 ms of a wait) are plain sleeps.
     */
    qatomic_inc(&s->sem_waiters);
    w0 = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    for (;;) {
        int64_t poll;

        gen = qatomic_read(&s->sem_gen);
        /* sem_gen before the semaphore; pairs with npu_sem_kick */
        smp_mb();
        v = 0;
        if (!npu_vm_rw(job, addr, &v, len, false, err)) {
            ok = false;
            break;
        }
        polls++;
        if (npu_sem_passed(le64_to_cpu(v), value, wide)) {
            seen = true;
            qemu_mutex_lock(&r->lock);
            r->sem_wait = false;
            qemu_mutex_unlock(&r->lock);
            break;
        }
        if (npu_aborted(r)) {
            break;
        }
        if (s->vtime) {
            if (!npu_vt_sem_block(r, addr, value, wide)) {
                break;
            }
            continue;
        }
        poll = npu_sem_poll_ns(qemu_clock_get_ns(QEMU_CLOCK_REALTIME) - w0);
        if (poll < SCALE_MS) {
            g_usleep(poll / SCALE_US);
            continue;
        }
        qemu_mutex_lock(&s->sem_lock);
        if (qatomic_read(&s->sem_gen) == gen && !npu_aborted(r)) {
            qemu_cond_timedwait(&s->sem_cond, &s->sem_lock, poll / SCALE_MS);
        }
        qemu_mutex_unlock(&s->sem_lock);
    }
    qatomic_dec(&s->sem_waiters);
    trace_npu_ring_sem_done(r->idx, qemu_clock_get_ns(QEMU_CLOCK_REALTIME) - w0,
                            polls);
    if (!seen) {
        return ok;              /* a fault, or the ring was reset */
    }
    /* later commands' accesses happen after the semaphore was seen */
    smp_mb();
    t0 = npu_time();
    npu_complete(job, t0, 0, false, len);
    return true;
}

static bool npu_exec_fence(NpuJob *job, const uint32_t *p, NpuErr *err)
{
    NpuRing *r = job->ring;
    NpuState *s = r->s;
    uint32_t seqno = cpu_to_le32(p[1]);
    uint64_t addr = ldq_le_p(p + 2);
    int64_t t0 = npu_job_t0(job);

    if ((NPU_PKT_FLAGS(p[0]) & ~NPU_FENCE_IRQ) || (addr & 3)) {
        return npu_set_err(err, NPU_ERR_BAD_PACKET, addr);
    }
    /* earlier commands' writes are visible before the seqno */
    smp_mb();
    if (npu_phys_rw(s, addr, &seqno, 4, true) != MEMTX_OK) {
        return npu_set_err(err, NPU_ERR_BAD_DMA, addr);
    }
    if (npu_aborted(r)) {
        return true;
    }
    trace_npu_ring_fence(r->idx, p[1], !!(NPU_PKT_FLAGS(p[0]) & NPU_FENCE_IRQ));
    qemu_mutex_lock(&r->lock);
    r->fence = p[1];
    qemu_mutex_unlock(&r->lock);
    if (NPU_PKT_FLAGS(p[0]) & NPU_FENCE_IRQ) {
        npu_raise(s, r->idx);
    }
    npu_complete(job, t0, 0, false, 4);
    return true;
}

/* Expected length in dwords of a fixed-size packet, 0 if variable. */
static unsigned npu_pkt_len(uint32_t op)
{
    switch (op) {
    case NPU_OP_COPY:
        return 8;
    case NPU_OP_FILL:
    case NPU_OP_SIGNAL:
    case NPU_OP_WAIT_MEM64:
        return 6;
    case NPU_OP_TIMESTAMP:
    case NPU_OP_SEM_WAIT:
    case NPU_OP_SEM_SIGNAL:
    case NPU_OP_INDIRECT:
    case NPU_OP_SET_CONTEXT:
    case NPU_OP_FENCE:
        return 4;
    case NPU_OP_RING_CTRL:
        return 1;
    default:
        return 0;
    }
}

static bool npu_op_known(uint32_t op)
{
    switch (op) {
    case NPU_OP_NOP:
    case NPU_OP_COPY:
    case NPU_OP_FILL:
    case NPU_OP_LAUNCH:
    case NPU_OP_LAUNCH_CODE:
    case NPU_OP_LAUNCH_CODE_SHORT:
    case NPU_OP_TIMESTAMP:
    case NPU_OP_SEM_WAIT:
    case NPU_OP_SEM_SIGNAL:
    case NPU_OP_SIGNAL:
    case NPU_OP_WAIT_MEM64:
    case NPU_OP_INDIRECT:
    case NPU_OP_SET_CONTEXT:
    case NPU_OP_FENCE:
    case NPU_OP_RING_CTRL:
        return true;
    default:
        return false;
    }
}

static bool npu_exec_packet(NpuJob *job, const uint32_t *p, unsigned ndw,
                            bool in_ib, uint64_t pkt_addr, NpuErr *err,
                            uint32_t *info);

static bool npu_exec_indirect(NpuJob *job, const uint32_t *p, NpuErr *err,
                              uint32_t *info)
{
    uint32_t size = p[1];
    uint64_t va = ldq_le_p(p + 2);
    g_autofree uint32_t *ib = NULL;
    NpuRing *r = job->ring;
    unsigned ndw, off = r->ib_resume / 4, first = off;
    int64_t prev_end = 0;       /* the previous packet's end (device time) */

    /* a migrated ring resumes its IB where it stopped (npu.c, post_load) */
    r->ib_resume = 0;
    if (size % 4 || size > NPU_IB_MAX_SIZE || NPU_PKT_FLAGS(p[0]) ||
        (off && off >= size / 4)) {
        return npu_set_err(err, NPU_ERR_BAD_PACKET, va);
    }
    if (!size) {
        return true;
    }
    ib = g_malloc(size);
    if (!npu_vm_rw(job, va, ib, size, false, err)) {
        return false;
    }
    ndw = size / 4;
    while (off < ndw) {
        uint32_t h = le32_to_cpu(ib[off]);
        unsigned len = NPU_PKT_LEN(h);
        uint32_t pkt[NPU_PKT_MAX_DW];
        unsigned i;

        *info = NPU_PKT_OP(h) | 0x100;
        if (npu_aborted(job->ring)) {
            return true;
        }
        if (r->uq_engine && off != first &&
            r->s->uq_hooks->should_leave(r)) {
            /* a user queue switches between the packets of an IB too */
            qatomic_set(&r->ib_off, off * 4);
            job->preempt = true;
            return true;
        }
        if (!len || len > ndw - off) {
            return npu_set_err(err, NPU_ERR_BAD_PACKET, va + off * 4);
        }
        if (NPU_PKT_OP(h) == NPU_OP_NOP) {
            off += len;
            continue;
        }
        for (i = 0; i < MIN(len, NPU_PKT_MAX_DW); i++) {
            pkt[i] = le32_to_cpu(ib[off + i]);
        }
        qatomic_set(&r->ib_off, off * 4);
        npu_job_behind(job, prev_end);
        r->cmd_end = 0;
        if (!npu_exec_packet(job, pkt, len, true, va + off * 4, err, info)) {
            return false;
        }
        prev_end = r->cmd_end;  /* 0 on the virtual clock */
        if (job->yield) {
            return true;        /* a user queue waits at ib_off */
        }
        off += len;
    }
    return true;
}

/*
 * Execute one packet (p holds min(ndw, NPU_PKT_MAX_DW) dwords in host
 * order). On error fill err and return false; info gets the opcode, bit 8
 * set inside an IB, and for LAUNCH the kernel id in bits 31:16.
 */
static bool npu_exec_packet(NpuJob *job, const uint32_t *p, unsigned ndw,
                            bool in_ib, uint64_t pkt_addr, NpuErr *err,
                            uint32_t *info)
{
    NpuRing *r = job->ring;
    uint32_t op = NPU_PKT_OP(p[0]);
    unsigned want = npu_pkt_len(op);

    *info = op | (in_ib ? 0x100 : 0);
    job->host_bytes = job->dev_bytes = job->ops = 0;
    job->work_end = 0;
    r->vt_start = r->vt;

    if (!npu_op_known(op)) {
        return npu_set_err(err, NPU_ERR_BAD_OPCODE, pkt_addr);
    }
    if (in_ib && NPU_OP_IS_PRIVILEGED(op)) {
        return npu_set_err(err, NPU_ERR_PRIVILEGED, pkt_addr);
    }
    if (op == NPU_OP_NOP) {
        return true;
    }
    if ((want && ndw != want) || ndw > NPU_PKT_MAX_DW) {
        return npu_set_err(err, NPU_ERR_BAD_PACKET, pkt_addr);
    }
    if (op == NPU_OP_SIGNAL ? NPU_PKT_FLAGS(p[0]) & ~NPU_SIGNAL_MAX :
        op == NPU_OP_WAIT_MEM64 ? NPU_PKT_FLAGS(p[0]) & ~NPU_WAIT_DOORBELL :
        op != NPU_OP_FENCE && op != NPU_OP_RING_CTRL && NPU_PKT_FLAGS(p[0])) {
        return npu_set_err(err, NPU_ERR_BAD_PACKET, pkt_addr);
    }
    if ((op == NPU_OP_LAUNCH || op == NPU_OP_LAUNCH_CODE ||
         op == NPU_OP_LAUNCH_CODE_SHORT) && r->copy) {
        return npu_set_err(err, NPU_ERR_BAD_PACKET, pkt_addr);
    }
    if (!NPU_OP_IS_PRIVILEGED(op) || op == NPU_OP_INDIRECT) {
        if (!r->pt_root) {
            return npu_set_err(err, NPU_ERR_NO_CONTEXT, pkt_addr);
        }
    }

    job->t0 = 0;
    job->t0_at_end = false;
    if (!r->s->vtime && op != NPU_OP_INDIRECT && op != NPU_OP_SET_CONTEXT &&
        op != NPU_OP_RING_CTRL && op != NPU_OP_SEM_WAIT &&
        op != NPU_OP_WAIT_MEM64) {
        /* NPU_RING_BUSY counts it from now (a stall is not busy time) */
        job->t0 = job->now ? job->now : npu_time();
        job->t0_at_end = job->now && job->now_at_end;
        qatomic_set(&r->cmd_start, job->t0);
    }
    job->now = 0;
    job->now_at_end = false;
    switch (op) {
    case NPU_OP_COPY:
        return npu_exec_copy(job, p, err);
    case NPU_OP_FILL:
        return npu_exec_fill(job, p, err);
    case NPU_OP_LAUNCH:
        if (ndw >= 2) {
            *info |= (p[1] & 0xffff) << 16;
        }
        return npu_launch(job, p, ndw, pkt_addr, err);
    case NPU_OP_LAUNCH_CODE:
    case NPU_OP_LAUNCH_CODE_SHORT:
        if (npu_launch_code(job, p, ndw, op == NPU_OP_LAUNCH_CODE, pkt_addr,
                            err)) {
            return true;
        }
        if (err->cu) {
            /* the launched kernel, whatever function the PC is in */
            err->entry = p[2] | (uint64_t)p[3] << 32;
        }
        return false;
    case NPU_OP_TIMESTAMP:
        return npu_exec_timestamp(job, p, err);
    case NPU_OP_SEM_WAIT:
        return npu_exec_wait(job, ldq_le_p(p + 2), p[1], false, err);
    case NPU_OP_SEM_SIGNAL:
        return npu_exec_sem_signal(job, p, err);
    case NPU_OP_WAIT_MEM64:
        job->wait_doorbell = NPU_PKT_FLAGS(p[0]) & NPU_WAIT_DOORBELL;
        return npu_exec_wait(job, ldq_le_p(p + 2), ldq_le_p(p + 4), true, err);
    case NPU_OP_SIGNAL:
        return npu_exec_signal(job, p, err);
    case NPU_OP_INDIRECT:
        return npu_exec_indirect(job, p, err, info);
    case NPU_OP_SET_CONTEXT: {
        uint64_t root = ldq_le_p(p + 2);

        if (root & (NPU_PAGE_SIZE - 1)) {
            return npu_set_err(err, NPU_ERR_BAD_PACKET, root);
        }
        npu_mmu_set_context(r, p[1], root);
        qemu_mutex_lock(&r->lock);
        r->context = p[1];
        qemu_mutex_unlock(&r->lock);
        return true;
    }
    case NPU_OP_FENCE:
        return npu_exec_fence(job, p, err);
    case NPU_OP_RING_CTRL:
        if (NPU_PKT_FLAGS(p[0]) & ~NPU_RING_CTRL_FLUSH_TLB) {
            return npu_set_err(err, NPU_ERR_BAD_PACKET, pkt_addr);
        }
        if (NPU_PKT_FLAGS(p[0]) & NPU_RING_CTRL_FLUSH_TLB) {
            npu_tlb_flush(r);
        }
        return true;
    }
    return npu_set_err(err, NPU_ERR_BAD_OPCODE, pkt_addr);
}

/*
 * One packet of a user queue (p as for npu_exec_packet): packets that name
 * guest-physical addresses or the ring's context are privileged there,
 * INDIRECT is not (its buffer runs in the queue's context).
 */
bool npu_uq_exec(NpuJob *job, const uint32_t *p, unsigned ndw,
                 uint64_t pkt_addr, NpuErr *err, uint32_t *info)
{
    uint32_t op = NPU_PKT_OP(p[0]);

    *info = op;
    if (NPU_OP_IS_PRIVILEGED(op) && op != NPU_OP_INDIRECT &&
        npu_op_known(op)) {
        return npu_set_err(err, NPU_ERR_PRIVILEGED, pkt_addr);
    }
    return npu_exec_packet(job, p, ndw, false, pkt_addr, err, info);
}

static bool npu_ring_config_ok(uint64_t base, uint32_t size, uint32_t head,
                               uint32_t tail)
{
    return size >= NPU_RING_SIZE_MIN && size <= NPU_RING_SIZE_MAX &&
           is_power_of_2(size) && !(base & (NPU_PAGE_SIZE - 1)) &&
           base + size > base && head < size && !(head & 3) &&
           tail < size && !(tail & 3);
}

/*
 * Fetch and execute the packet at head. Returns the new head; on error fills
 * err and info.
 */
static uint32_t npu_ring_step(NpuRing *r, uint64_t base, uint32_t size,
                              uint32_t head, uint32_t tail, NpuErr *err,
                              uint32_t *info)
{
    NpuState *s = r->s;
    NpuJob job = { .ring = r };
    uint32_t pkt[NPU_PKT_MAX_DW];
    uint32_t h, len, avail, next, first, i;

    *info = 0;
    qatomic_set(&r->ib_off, 0);
    if (!npu_ring_config_ok(base, size, head, tail)) {
        npu_set_err(err, NPU_ERR_RING_CONFIG, base);
        return head;
    }
    if (npu_phys_rw(s, base + head, &h, 4, false) != MEMTX_OK) {
        npu_set_err(err, NPU_ERR_BAD_DMA, base + head);
        return head;
    }
    h = le32_to_cpu(h);
    len = NPU_PKT_LEN(h);
    avail = ((tail - head) & (size - 1)) / 4;
    *info = NPU_PKT_OP(h);
    if (!len || len > avail) {
        /* unusable header: step over its dword only */
        npu_set_err(err, NPU_ERR_BAD_PACKET, base + head);
        return (head + 4) & (size - 1);
    }
    next = (head + len * 4) & (size - 1);
    trace_npu_ring_packet(r->idx, head, NPU_PKT_OP(h), len);
    if (NPU_PKT_OP(h) == NPU_OP_NOP) {
        return next;
    }
    /* read the packet (up to the largest one), wrapping at the ring end */
    len = MIN(len, NPU_PKT_MAX_DW);
    first = MIN(len * 4, size - head);
    if (npu_phys_rw(s, base + head, pkt, first, false) != MEMTX_OK ||
        (first < len * 4 &&
         npu_phys_rw(s, base, (uint8_t *)pkt + first, len * 4 - first,
                     false) != MEMTX_OK)) {
        npu_set_err(err, NPU_ERR_BAD_DMA, base + head);
        return next;
    }
    for (i = 0; i < len; i++) {
        pkt[i] = le32_to_cpu(pkt[i]);
    }
    npu_exec_packet(&job, pkt, NPU_PKT_LEN(h), false, base + head, err, info);
    return next;
}

void *npu_ring_thread(void *opaque)
{
    NpuRing *r = opaque;
    NpuState *s = r->s;

    rcu_register_thread();
    npu_engine_thread_init();
    qemu_mutex_lock(&r->lock);
    while (!r->stop) {
        uint64_t base;
        uint32_t size, head, tail, next, info = 0;
        NpuErr err = { 0 };

        if (r->abort || !r->enabled || r->halted || r->head == r->tail ||
            qatomic_read(&s->paused) || qatomic_read(&s->draining)) {
            if (s->vtime) {
                npu_vt_ring_idle(r);
            }
            npu_launch_cold(r);
            npu_engine_thread_idle();
            qemu_cond_wait(&r->cond, &r->lock);
            continue;
        }
        if (s->vtime) {
            npu_vt_ring_active(r);
        }
        base = r->base;
        size = r->size;
        head = r->head;
        tail = r->tail;
        r->running = true;
        qemu_mutex_unlock(&r->lock);

        next = npu_ring_step(r, base, size, head, tail, &err, &info);

        qemu_mutex_lock(&r->lock);
        r->running = false;
        if (qatomic_read(&r->cmd_start)) {
            /* failed or aborted: busy until then, as BUSY showed it */
            r->busy_ns += MAX(npu_time() - qatomic_read(&r->cmd_start), 0);
            qatomic_set(&r->cmd_start, 0);
        }
        r->sem_wait = false;
        r->ib_resume = 0;
        if (!r->abort && !r->stop) {
            r->head = next;
            if (err.code) {
                trace_npu_ring_halt(r->idx, err.code, r->context, err.addr,
                                    info, err.entry);
                r->halted = true;
                r->error = err.code;
                r->error_ctx = r->context;
                r->fault = err.addr;
                r->error_info = info;
                r->fault_pc = err.pc;
                r->fault_block = err.block;
                r->fault_thread = err.thread;
                r->fault_unit = err.unit;
                r->fault_entry = err.entry;
                qemu_mutex_lock(&s->reg_lock);
                s->err_pending |= 1u << r->idx;
                qemu_mutex_unlock(&s->reg_lock);
                npu_raise(s, s->nrings);
            }
        }
        qemu_cond_broadcast(&r->cond);
    }
    qemu_mutex_unlock(&r->lock);
    npu_engine_thread_idle();
    rcu_unregister_thread();
    return NULL;
}
