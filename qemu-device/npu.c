/*
 * npu - virtual NPU PCI device: PCI function, registers, engine threads,
 * interrupts, reset and migration: the device's top.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Every ring is an independent command processor running on its own
 * QemuThread; see npu_engine.c (packets), npu_mmu.c (address translation),
 * npu_cu.c (compute units, block dispatcher), npu_rv.c (their RV64G
 * instructions), npu_vtime.c (timing=virtual), npu_kernels.c (diagnostic
 * kernels) and npu_base.c (what they share: clock, waits, DMA, interrupts).
 * Documentation/hw/npu.rst is the description of the device seen by
 * software.
 *
 * Locking: the BQL serialises register accesses. Each ring has a mutex
 * protecting its registers, taken by the MMIO handlers and briefly by the
 * ring's engine thread. Lock order: ring lock, then reg_lock or cu_lock.
 * sem_lock (rings sleeping in SEM_WAIT) is a leaf.
 * MMU_INVALIDATE takes no lock: it synchronises with the engines through
 * atomics (npu_mmu.c).
 * Engine threads never take the BQL; interrupts they raise are delivered by
 * a bottom half, and their DMA is restricted to RAM (npu_dma_map in
 * npu_base.c, used by npu_phys_rw and the COPY/FILL fast path in
 * npu_mmu.c), checked and done on one translation, so they never dispatch
 * an MMIO access.
 */

#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/log.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "qapi/error.h"
#include "exec/memory.h"
#include "hw/pci/pci.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "sysemu/runstate.h"
#include "migration/vmstate.h"
#include "npu_base.h"
#include "npu_cu.h"
#include "npu_engine.h"
#include "npu_mmu.h"
#include "npu_uq.h"
#include "npu_vtime.h"
#include "trace.h"

/*
 * Interrupts: engine threads raise them (npu_raise), this bottom half
 * delivers them.
 */

static void npu_irq_bh(void *opaque)
{
    NpuState *s = opaque;
    PCIDevice *pdev = PCI_DEVICE(s);
    uint32_t pending;

    /* stopped: no MSI-X writes; the resume handler reschedules */
    if (qatomic_read(&s->paused)) {
        return;
    }
    pending = qatomic_xchg(&s->irq_pending, 0);

    while (pending) {
        unsigned v = ctz32(pending);

        pending &= pending - 1;
        if (msix_enabled(pdev) && v < s->nvec) {
            trace_npu_irq(v);
            msix_notify(pdev, v);
        }
    }
}

static void npu_resetting(NpuState *s, int delta)
{
    qatomic_add(&s->resetting, delta);
    if (delta > 0) {
        npu_run_kick(s);
    }
}

/*
 * Migration
 *
 * What a ring does inside a command lives on its engine's stack (and, for
 * a launch, in the compute units), so the device is saved only with every
 * ring at a command boundary: idle, between packets, or in a SEM_WAIT
 * that has not seen its value yet. Such a SEM_WAIT has done nothing, so
 * the saved HEAD stays on it (or on the INDIRECT holding it, with the
 * offset in the IB to resume at) and the destination runs it again.
 *
 * A stop for a snapshot or a migration (RUN_STATE_SAVE_VM,
 * RUN_STATE_FINISH_MIGRATE) first drains: with the vCPUs paused the
 * rings start no new packet, and what they run finishes, as a block
 * device completes its requests in flight at a stop; modelled durations
 * are cut short (the device clock stands still with the VM's). Guest RAM
 * written meanwhile is marked dirty as always; device memory, which the
 * engines write directly, is marked dirty as a whole, so a migration
 * sends it once more in its final pass. A launch that does not finish
 * within NPU_DRAIN_MS (an endless kernel), or a ring the VM was stopped
 * in (stop, then savevm or migrate: nothing drained), fails the save in
 * pre_save; the VM can go on and the save be tried again.
 */
#define NPU_DRAIN_MS    5000

/* A ring at a command boundary; ring lock held. */
static bool npu_ring_quiet(NpuRing *r)
{
    return !r->running || r->sem_wait;
}

static bool npu_quiet(NpuState *s, unsigned *busy)
{
    unsigned i;

    for (i = 0; i < s->nrings; i++) {
        NpuRing *r = &s->rings[i];
        bool q;

        qemu_mutex_lock(&r->lock);
        q = npu_ring_quiet(r);
        qemu_mutex_unlock(&r->lock);
        if (!q) {
            *busy = i;
            return false;
        }
    }
    return npu_uq_quiet(s, busy);
}

/*
 * Let every ring reach a command boundary (BQL held, vCPUs paused). The
 * engines never take the BQL. Polls every millisecond: a drain happens
 * once per snapshot or migration.
 */
static void npu_drain(NpuState *s)
{
    int64_t t0 = qemu_clock_get_us(QEMU_CLOCK_REALTIME), t;
    unsigned busy = 0;
    bool quiet;

    qatomic_set(&s->draining, 1);
    /* the units may be idle until a fixed block's end: look again */
    qemu_mutex_lock(&s->cu_lock);
    qemu_cond_broadcast(&s->cu_cond);
    qemu_mutex_unlock(&s->cu_lock);
    for (;;) {
        quiet = npu_quiet(s, &busy);
        t = qemu_clock_get_us(QEMU_CLOCK_REALTIME) - t0;
        if (quiet || t >= NPU_DRAIN_MS * 1000) {
            break;
        }
        g_usleep(1000);
    }
    trace_npu_drain(quiet, quiet ? -1 : (int)busy, t);
}

static int npu_pre_save(void *opaque)
{
    NpuState *s = opaque;
    int64_t end = qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + 100;
    unsigned i, busy = 0;

    /* a ring that saw its semaphore just now finishes the SEM_WAIT */
    while (!npu_quiet(s, &busy)) {
        if (qemu_clock_get_ms(QEMU_CLOCK_REALTIME) >= end) {
            error_report("npu: ring %u is inside a command (a launch still "
                         "running, or the VM was stopped before the save "
                         "began); let the VM run and save again", busy);
            return -EBUSY;
        }
        g_usleep(1000);
    }
    for (i = 0; i < s->nrings; i++) {
        NpuRing *r = &s->rings[i];

        qemu_mutex_lock(&r->lock);
        s->mig_ib_resume[i] = r->running ? qatomic_read(&r->ib_off) : 0;
        trace_npu_ring_save(i, r->head, r->tail, s->mig_ib_resume[i]);
        qemu_mutex_unlock(&r->lock);
    }
    s->mig_clock = npu_clock(s);
    npu_cu_migrate(s, false);
    return 0;
}

/* A loaded ring that the device's own operation can never produce. */
static const char *npu_mig_check_ring(NpuState *s, unsigned i)
{
    NpuRing *r = &s->rings[i];

    if (i >= s->nrings) {
        /* absent rings are never written: all zero */
        if (r->base || r->size || r->head || r->tail || r->enabled ||
            r->halted || r->fence || r->context || r->pt_root ||
            r->error || r->error_ctx || r->fault || r->error_info ||
            r->fault_pc || r->fault_block || r->fault_thread ||
            r->fault_unit || r->fault_entry || r->busy_ns || r->cmds ||
            r->bytes || r->ops || r->vt || s->mig_ib_resume[i]) {
            return "an absent ring's state";
        }
        return NULL;
    }
    /* base, size and tail are the guest's: the engine checks them */
    if (r->head >= NPU_RING_SIZE_MAX || r->head % 4) {
        return "ring HEAD";
    }
    if (r->pt_root & (NPU_PAGE_SIZE - 1)) {
        return "ring page-table root";
    }
    if (r->error >= NPU_ERR_COUNT) {
        return "ring ERROR";
    }
    if (r->busy_ns >= NPU_MIG_MAX_COUNT || r->cmds >= NPU_MIG_MAX_COUNT ||
        r->bytes >= NPU_MIG_MAX_COUNT || r->ops >= NPU_MIG_MAX_COUNT ||
        r->vt >= NPU_MIG_MAX_COUNT) {
        return "ring counter or clock";
    }
    if (s->mig_ib_resume[i] % 4 || s->mig_ib_resume[i] >= NPU_IB_MAX_SIZE) {
        return "IB resume offset";
    }
    return NULL;
}

/*
 * Check every loaded field (post_load, before any is used): the name of
 * the first one out of range, or NULL. A stream is input like a register
 * write: a counter near 2^64 would wrap in the cycle model (cycle +
 * quantum) and stall the units for good, a stray bit would raise an
 * interrupt of no ring. Fields that are only read back (SCRATCH, FENCE,
 * CONTEXT, the fault reports) may hold anything; ring BASE/SIZE/TAIL,
 * which the guest writes freely, are checked where used (npu_ring_step).
 */
static const char *npu_mig_check(NpuState *s)
{
    uint32_t ring_bits = (uint32_t)((1ull << s->nrings) - 1);
    unsigned i;

    if (s->err_pending & ~ring_bits) {
        return "ERR_PENDING";
    }
    /* one vector per ring, the error vector, the user-queue vector */
    if (s->irq_pending & ~(uint32_t)((1ull << s->nvec) - 1)) {
        return "pending interrupts";
    }
    if (s->mig_clock >= NPU_MIG_MAX_COUNT ||
        s->vt.cu_time >= NPU_MIG_MAX_COUNT) {
        return "device clock";
    }
    if (s->mig_cu_cycle >= NPU_MIG_MAX_COUNT) {
        return "compute-unit cycle";
    }
    for (i = 0; i < NPU_MAX_CUS; i++) {
        if (i >= s->n_cus) {
            if (s->mig_cu_busy_cycles[i] || s->mig_cu_instrs[i] ||
                s->mig_cu_fixed_ns[i]) {
                return "an absent compute unit's counters";
            }
            continue;
        }
        if (s->mig_cu_busy_cycles[i] >= NPU_MIG_MAX_COUNT ||
            s->mig_cu_instrs[i] >= NPU_MIG_MAX_COUNT ||
            s->mig_cu_fixed_ns[i] >= NPU_MIG_MAX_COUNT) {
            return "compute-unit counter";
        }
    }
    for (i = 0; i < NPU_MAX_RINGS; i++) {
        const char *bad = npu_mig_check_ring(s, i);

        if (bad) {
            return bad;
        }
    }
    return NULL;
}

/*
 * The loaded registers are in place (the engines were reset before the
 * load and wait for work); restore what derives from them. The rings run
 * again when the VM does (npu_vm_state_change).
 */
static int npu_post_load(void *opaque, int version_id)
{
    NpuState *s = opaque;
    const char *bad = npu_mig_check(s);
    unsigned i;

    if (bad) {
        error_report("npu: migration stream refused: %s out of range", bad);
        return -EINVAL;
    }
    if (s->vtime) {
        qemu_mutex_lock(&s->vt.lock);
        s->vt.now = s->mig_clock;
        qemu_mutex_unlock(&s->vt.lock);
    } else {
        qatomic_set(&s->clock_base, npu_time() - s->mig_clock);
    }
    npu_cu_migrate(s, true);
    for (i = 0; i < s->nrings; i++) {
        NpuRing *r = &s->rings[i];

        qemu_mutex_lock(&r->lock);
        r->ib_resume = s->mig_ib_resume[i];
        npu_mmu_set_context(r, r->context, r->pt_root);
        trace_npu_ring_load(i, r->head, r->tail, r->ib_resume);
        qemu_mutex_unlock(&r->lock);
        qemu_cond_broadcast(&r->cond);
    }
    return 0;
}

/* VM change-state handler (BQL held). */
static void npu_vm_state_change(void *opaque, bool running, RunState state)
{
    NpuState *s = opaque;
    unsigned i;

    trace_npu_run_state(running, state);
    if (!running) {
        bool save = state == RUN_STATE_SAVE_VM ||
                    state == RUN_STATE_FINISH_MIGRATE;

        if (save) {
            npu_drain(s);
        }
        qemu_mutex_lock(&s->run_lock);
        qatomic_set(&s->paused, true);
        /* paused before dma_active; pairs with npu_dma_enter */
        smp_mb();
        /* accesses never block: this waits for one access at most */
        while (qatomic_read(&s->dma_active)) {
            qemu_cond_wait(&s->run_cond, &s->run_lock);
        }
        qemu_mutex_unlock(&s->run_lock);
        /* paused before draining ends: no new packet in between */
        qatomic_set(&s->draining, 0);
        if (save) {
            memory_region_set_dirty(&s->devmem, 0, s->devmem_size);
        }
        return;
    }
    qemu_mutex_lock(&s->run_lock);
    qatomic_set(&s->paused, false);
    qemu_cond_broadcast(&s->run_cond);
    qemu_mutex_unlock(&s->run_lock);
    for (i = 0; i < s->nrings; i++) {
        NpuRing *r = &s->rings[i];

        qemu_mutex_lock(&r->lock);
        qemu_cond_broadcast(&r->cond);
        qemu_mutex_unlock(&r->lock);
    }
    qemu_mutex_lock(&s->cu_lock);
    qemu_cond_broadcast(&s->cu_cond);
    qemu_mutex_unlock(&s->cu_lock);
    npu_uq_run_kick(s);
    if (qatomic_read(&s->irq_pending)) {
        qemu_bh_schedule(s->irq_bh);
    }
}

/* Wake every ring sleeping in SEM_WAIT (a reset: they give up). */
static void npu_sem_wake(NpuState *s)
{
    qemu_mutex_lock(&s->sem_lock);
    qemu_cond_broadcast(&s->sem_cond);
    qemu_mutex_unlock(&s->sem_lock);
}

/*
 * Reset
 */

/* Abort what the ring runs and wait for its engine to let go. BQL held. */
static void npu_ring_reset(NpuRing *r, bool counters)
{
    NpuState *s = r->s;

    trace_npu_ring_reset(r->idx);
    npu_resetting(s, 1);
    qemu_mutex_lock(&r->lock);
    qatomic_set(&r->abort, true);
    qemu_cond_broadcast(&r->cond);
    npu_vt_ring_reset(r);               /* a ring waiting for the clock */
    npu_sem_wake(s);                    /* ... or on a semaphore */
    qemu_mutex_lock(&s->cu_lock);
    qemu_cond_broadcast(&s->cu_cond);   /* a ring thread waiting for units */
    qemu_mutex_unlock(&s->cu_lock);
    while (r->running) {
        qemu_cond_wait(&r->cond, &r->lock);
    }
    r->head = 0;
    r->tail = 0;
    r->enabled = false;
    r->halted = false;
    r->context = 0;
    r->error = 0;
    r->error_ctx = 0;
    r->fault = 0;
    r->error_info = 0;
    r->fault_pc = 0;
    r->fault_block = 0;
    r->fault_thread = 0;
    r->fault_unit = 0;
    r->fault_entry = 0;
    r->sem_wait = false;
    r->ib_resume = 0;
    npu_mmu_set_context(r, 0, 0);
    if (counters) {
        r->base = 0;
        r->size = 0;
        r->fence = 0;
        r->busy_ns = 0;
        r->busy_seen = 0;
        r->cmds = 0;
        r->bytes = 0;
        r->ops = 0;
    }
    qemu_mutex_lock(&s->reg_lock);
    s->err_pending &= ~(1u << r->idx);
    qemu_mutex_unlock(&s->reg_lock);
    qatomic_and(&s->irq_pending, ~(1u << r->idx));
    qatomic_set(&r->abort, false);
    qemu_mutex_unlock(&r->lock);
    npu_resetting(s, -1);
}

static void npu_device_reset(NpuState *s)
{
    unsigned i;

    trace_npu_device_reset();
    for (i = 0; i < s->nrings; i++) {
        npu_ring_reset(&s->rings[i], true);
    }
    npu_uq_reset(s);
    npu_cu_reset(s);
    npu_vt_reset(s);
    qemu_mutex_lock(&s->reg_lock);
    s->err_pending = 0;
    s->scratch = 0;
    s->clock_hi_latch = 0;
    qatomic_set(&s->clock_base, npu_time());
    qemu_mutex_unlock(&s->reg_lock);
    qatomic_set(&s->irq_pending, 0);
}

static void npu_qdev_reset(DeviceState *dev)
{
    npu_device_reset(NPU(dev));
}

/*
 * Registers
 */

static uint64_t npu_ring_read(NpuRing *r, hwaddr off)
{
    uint64_t v = 0;

    qemu_mutex_lock(&r->lock);
    switch (off) {
    case NPU_RING_BASE_LO:
        v = (uint32_t)r->base;
        break;
    case NPU_RING_BASE_HI:
        v = r->base >> 32;
        break;
    case NPU_RING_SIZE:
        v = r->size;
        break;
    case NPU_RING_HEAD:
        v = r->head;
        break;
    case NPU_RING_TAIL:
        v = r->tail;
        break;
    case NPU_RING_CONTROL:
        v = r->enabled ? NPU_RING_CTL_ENABLE : 0;
        break;
    case NPU_RING_STATUS:
        v = (r->head == r->tail && !r->running ? NPU_RING_STS_IDLE : 0) |
            (r->halted ? NPU_RING_STS_HALTED : 0) |
            (r->enabled ? NPU_RING_STS_ENABLED : 0);
        break;
    case NPU_RING_KIND:
        v = r->copy ? NPU_RING_KIND_COPY : NPU_RING_KIND_COMPUTE;
        break;
    case NPU_RING_FENCE:
        v = r->fence;
        break;
    case NPU_RING_CONTEXT:
        v = r->context;
        break;
    case NPU_RING_ERROR:
        v = r->error;
        break;
    case NPU_RING_ERROR_CTX:
        v = r->error_ctx;
        break;
    case NPU_RING_FAULT_LO:
        v = (uint32_t)r->fault;
        break;
    case NPU_RING_FAULT_HI:
        v = r->fault >> 32;
        break;
    case NPU_RING_ERROR_INFO:
        v = r->error_info;
        break;
    case NPU_RING_FAULT_PC_LO:
        v = (uint32_t)r->fault_pc;
        break;
    case NPU_RING_FAULT_PC_HI:
        v = r->fault_pc >> 32;
        break;
    case NPU_RING_FAULT_BLOCK:
        v = r->fault_block;
        break;
    case NPU_RING_FAULT_THREAD:
        v = r->fault_thread;
        break;
    case NPU_RING_FAULT_UNIT:
        v = r->fault_unit;
        break;
    case NPU_RING_FAULT_ENTRY_LO:
        v = (uint32_t)r->fault_entry;
        break;
    case NPU_RING_FAULT_ENTRY_HI:
        v = r->fault_entry >> 32;
        break;
    case NPU_RING_BUSY_LO:
        v = (uint32_t)npu_ring_busy(r);
        break;
    case NPU_RING_BUSY_HI:
        v = npu_ring_busy(r) >> 32;
        break;
    case NPU_RING_CMDS_LO:
        v = (uint32_t)r->cmds;
        break;
    case NPU_RING_CMDS_HI:
        v = r->cmds >> 32;
        break;
    case NPU_RING_BYTES_LO:
        v = (uint32_t)r->bytes;
        break;
    case NPU_RING_BYTES_HI:
        v = r->bytes >> 32;
        break;
    case NPU_RING_OPS_LO:
        v = (uint32_t)r->ops;
        break;
    case NPU_RING_OPS_HI:
        v = r->ops >> 32;
        break;
    default:
        qemu_log_mask(LOG_GUEST_ERROR, "npu: read of unknown ring %u "
                      "register 0x%" HWADDR_PRIx "\n", r->idx, off);
        break;
    }
    qemu_mutex_unlock(&r->lock);
    return v;
}

/*
 * The engine thread is woken after the ring lock is dropped: woken while the
 * lock is still held, it would run only to block on the lock again (two
 * context switches instead of one on the doorbell path). The waiter checks
 * its condition under the lock, so no wake-up is lost.
 */
static void npu_ring_write(NpuRing *r, hwaddr off, uint32_t val)
{
    bool wake = false;

    qemu_mutex_lock(&r->lock);
    switch (off) {
    case NPU_RING_BASE_LO:
        r->base = deposit64(r->base, 0, 32, val);
        break;
    case NPU_RING_BASE_HI:
        r->base = deposit64(r->base, 32, 32, val);
        break;
    case NPU_RING_SIZE:
        r->size = val;
        break;
    case NPU_RING_TAIL:
        trace_npu_ring_doorbell(r->idx, val);
        r->tail = val;
        wake = true;
        break;
    case NPU_RING_CONTROL:
        if (val & NPU_RING_CTL_RESET) {
            qemu_mutex_unlock(&r->lock);
            npu_ring_reset(r, false);
            return;
        }
        r->enabled = val & NPU_RING_CTL_ENABLE;
        if (val & NPU_RING_CTL_RESUME) {
            r->halted = false;
        }
        wake = true;
        break;
    default:
        qemu_log_mask(LOG_GUEST_ERROR, "npu: write 0x%x to read-only or "
                      "unknown ring %u register 0x%" HWADDR_PRIx "\n",
                      val, r->idx, off);
        break;
    }
    qemu_mutex_unlock(&r->lock);
    if (wake) {
        qemu_cond_broadcast(&r->cond);
    }
}

static uint64_t npu_mmio_read_reg(NpuState *s, hwaddr addr)
{
    uint64_t v = 0;

    if (addr >= NPU_UQ_REGS_BASE && addr < NPU_UQ_REGS_END) {
        return npu_uq_read(s, addr);
    }
    if (addr >= NPU_RING_BASE(0)) {
        unsigned idx = (addr - NPU_RING_BASE(0)) / 0x100;

        if (idx < s->nrings) {
            return npu_ring_read(&s->rings[idx], addr & 0xff);
        }
        return 0;
    }
    if (addr >= NPU_REG_CU_CYCLES_LO(0)) {
        unsigned cu = (addr - NPU_REG_CU_CYCLES_LO(0)) / 16;

        if (cu < s->n_cus && addr < NPU_REG_CU_CYCLES_LO(NPU_MAX_CUS)) {
            v = npu_cu_counter(s, cu, addr & 8 ? 2 : 1);
            return addr & 4 ? v >> 32 : (uint32_t)v;
        }
        return 0;
    }
    if (addr >= NPU_REG_CU_BUSY_LO(0)) {
        unsigned cu = (addr - NPU_REG_CU_BUSY_LO(0)) / 8;

        if (cu < s->n_cus && addr < NPU_REG_CU_BUSY_LO(NPU_MAX_CUS)) {
            v = npu_cu_counter(s, cu, 0);
            return addr & 4 ? v >> 32 : (uint32_t)v;
        }
        return 0;
    }
    switch (addr) {
    case NPU_REG_ID:
        return NPU_ID_MAGIC;
    case NPU_REG_VERSION:
        return NPU_VERSION;
    case NPU_REG_CAPS:
        return s->n_compute | s->n_copy << 8 | s->n_cus << 16;
    case NPU_REG_FEATURES:
        return (s->timing ? NPU_FEATURE_TIMING : 0) | NPU_FEATURE_USER_CODE |
               NPU_FEATURE_TENSOR |
               (s->vtime ? NPU_FEATURE_VIRTUAL_TIME : 0) |
               (npu_uq_present(s) ? NPU_FEATURE_USER_QUEUES : 0);
    case NPU_REG_DEVMEM_SIZE_LO:
        return (uint32_t)s->devmem_size;
    case NPU_REG_DEVMEM_SIZE_HI:
        return s->devmem_size >> 32;
    case NPU_REG_CLOCK_HZ:
        return 1000000000;
    case NPU_REG_CLOCK_LO:
        v = npu_clock(s);
        qemu_mutex_lock(&s->reg_lock);
        s->clock_hi_latch = v >> 32;
        qemu_mutex_unlock(&s->reg_lock);
        return (uint32_t)v;
    case NPU_REG_CLOCK_HI:
        qemu_mutex_lock(&s->reg_lock);
        v = s->clock_hi_latch;
        qemu_mutex_unlock(&s->reg_lock);
        return v;
    case NPU_REG_ERR_PENDING:
        qemu_mutex_lock(&s->reg_lock);
        v = s->err_pending;
        qemu_mutex_unlock(&s->reg_lock);
        return v;
    case NPU_REG_SCRATCH:
        return s->scratch;
    case NPU_REG_LINK_BW_MBPS:
        return s->link_bw;
    case NPU_REG_MEM_BW_MBPS:
        return s->mem_bw;
    case NPU_REG_CU_MOPS:
        return s->cu_mops;
    case NPU_REG_LAUNCH_NS:
        return s->launch_ns;
    case NPU_REG_COPY_NS:
        return s->copy_ns;
    case NPU_REG_CU_THREADS:
        return s->cu_threads;
    case NPU_REG_CU_SCRATCH:
        return s->cu_scratch_kib * 1024u;
    case NPU_REG_CU_CLOCK_MHZ:
        return s->cu_clock_mhz;
    case NPU_REG_L2_KIB:
        return s->l2_kib;
    case NPU_REG_L2_BW_MBPS:
        return s->l2_bw;
    case NPU_REG_RESET:
    case NPU_REG_MMU_INVALIDATE:
        return 0;
    default:
        qemu_log_mask(LOG_GUEST_ERROR, "npu: read of unknown register 0x%"
                      HWADDR_PRIx "\n", addr);
        return 0;
    }
}

static uint64_t npu_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    uint64_t v;

    /*
     * A register read is a full barrier for the CPU that reads (it runs on
     * that vCPU's thread), whose own fences single-threaded TCG may have
     * compiled away: its earlier stores are visible to the device's
     * threads before its later loads (hw spec, "Memory order").
     */
    smp_mb();
    v = npu_mmio_read_reg(opaque, addr);

    trace_npu_mmio_read(addr, v);
    return v;
}

static void npu_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                           unsigned size)
{
    NpuState *s = opaque;

    trace_npu_mmio_write(addr, val);
    npu_host_touch(s);
    if (addr >= NPU_UQ_REGS_BASE && addr < NPU_UQ_REGS_END) {
        npu_uq_write(s, addr, val);
        return;
    }
    if (addr >= NPU_RING_BASE(0)) {
        unsigned idx = (addr - NPU_RING_BASE(0)) / 0x100;

        if (idx < s->nrings) {
            npu_ring_write(&s->rings[idx], addr & 0xff, val);
        } else {
            qemu_log_mask(LOG_GUEST_ERROR, "npu: write to absent ring %u\n",
                          idx);
        }
        return;
    }
    switch (addr) {
    case NPU_REG_RESET:
        if (val == NPU_RESET_MAGIC) {
            npu_device_reset(s);
        } else {
            qemu_log_mask(LOG_GUEST_ERROR, "npu: bad reset magic 0x%x\n",
                          (uint32_t)val);
        }
        break;
    case NPU_REG_ERR_PENDING:
        qemu_mutex_lock(&s->reg_lock);
        s->err_pending &= ~(uint32_t)val;
        qemu_mutex_unlock(&s->reg_lock);
        break;
    case NPU_REG_SCRATCH:
        s->scratch = val;
        break;
    case NPU_REG_MMU_INVALIDATE:
        npu_mmu_invalidate(s, val);
        break;
    default:
        qemu_log_mask(LOG_GUEST_ERROR, "npu: write 0x%x to read-only or "
                      "unknown register 0x%" HWADDR_PRIx "\n",
                      (uint32_t)val, addr);
        break;
    }
}

static const MemoryRegionOps npu_mmio_ops = {
    .read = npu_mmio_read,
    .write = npu_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    /* 64-bit accesses are split into two 32-bit ones, low half first */
    .valid = {
        .min_access_size = 4,
        .max_access_size = 8,
    },
    .impl = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

/*
 * Realize / unrealize
 */

static void npu_stop_threads(NpuState *s, unsigned n)
{
    unsigned i;

    npu_resetting(s, 1);                /* parked engines go on, to exit */
    for (i = 0; i < n; i++) {
        NpuRing *r = &s->rings[i];

        qemu_mutex_lock(&r->lock);
        qatomic_set(&r->stop, true);
        qemu_cond_broadcast(&r->cond);
        qemu_mutex_unlock(&r->lock);
    }
    /* ring threads waiting in the dispatcher cancel their launches */
    npu_vt_kick(s);
    npu_sem_wake(s);
    qemu_mutex_lock(&s->cu_lock);
    qemu_cond_broadcast(&s->cu_cond);
    qemu_mutex_unlock(&s->cu_lock);
    for (i = 0; i < n; i++) {
        qemu_thread_join(&s->rings[i].thread);
    }
    for (i = 0; i < n; i++) {
        qemu_cond_destroy(&s->rings[i].cond);
        qemu_mutex_destroy(&s->rings[i].lock);
    }
}

static bool npu_check_props(NpuState *s, Error **errp)
{
    const char *mode = s->timing_mode ? s->timing_mode : "on";

    if (!strcmp(mode, "on") || !strcmp(mode, "true")) {
        s->timing = true;
        s->vtime = false;
    } else if (!strcmp(mode, "off") || !strcmp(mode, "false")) {
        s->timing = false;
        s->vtime = false;
    } else if (!strcmp(mode, "virtual")) {
        s->timing = true;
        s->vtime = true;
    } else {
        error_setg(errp, "npu: timing must be on, off or virtual");
        return false;
    }
    if (s->n_compute < 1 || s->n_compute > NPU_MAX_RINGS) {
        error_setg(errp, "npu: compute-rings must be 1..%d", NPU_MAX_RINGS);
        return false;
    }
    if (s->n_copy > NPU_MAX_RINGS - s->n_compute) {
        error_setg(errp, "npu: compute-rings + copy-rings must be <= %d",
                   NPU_MAX_RINGS);
        return false;
    }
    if (s->n_cus < 1 || s->n_cus > NPU_MAX_CUS) {
        error_setg(errp, "npu: compute-units must be 1..%d", NPU_MAX_CUS);
        return false;
    }
    if (s->devmem_size < 1 * MiB || s->devmem_size > 16 * GiB ||
        !is_power_of_2(s->devmem_size)) {
        error_setg(errp, "npu: devmem-size must be a power of 2 between "
                   "1 MiB and 16 GiB");
        return false;
    }
    if (!s->link_bw || !s->mem_bw || !s->cu_mops) {
        error_setg(errp, "npu: link-bw-mbps, mem-bw-mbps and cu-mops must "
                   "be non-zero");
        return false;
    }
    if (s->launch_ns > 1000000000 || s->launch_gap_ns > 1000000000 ||
        s->copy_ns > 1000000000) {
        error_setg(errp, "npu: launch-ns, launch-gap-ns and copy-ns must be "
                   "<= 1e9");
        return false;
    }
    if (s->cu_threads < 1 || s->cu_threads > NPU_CODE_MAX_THREADS) {
        error_setg(errp, "npu: cu-threads must be 1..%d",
                   NPU_CODE_MAX_THREADS);
        return false;
    }
    if (s->cu_scratch_kib > 16 * 1024) {
        error_setg(errp, "npu: cu-scratch-kib must be <= 16384");
        return false;
    }
    if (s->cu_clock_mhz < 1 || s->cu_clock_mhz > 10000) {
        error_setg(errp, "npu: cu-clock-mhz must be 1..10000");
        return false;
    }
    if (s->l2_kib && (s->l2_kib < 64 || s->l2_kib > 65536 ||
                      !is_power_of_2(s->l2_kib))) {
        error_setg(errp, "npu: l2-kib must be 0 (no L2) or a power of two "
                   "in 64..65536");
        return false;
    }
    if (!s->l2_bw) {
        error_setg(errp, "npu: l2-bw-mbps must be >= 1");
        return false;
    }
    if (s->vt_settle_us > 1000000) {
        error_setg(errp, "npu: vt-settle-us must be <= 1000000");
        return false;
    }
    if (s->vt_cu_idle_delay_us > 1000000) {
        error_setg(errp, "npu: x-vt-cu-idle-delay-us must be <= 1000000");
        return false;
    }
    if (s->signal_delay_us > 1000000) {
        error_setg(errp, "npu: x-signal-delay-us must be <= 1000000");
        return false;
    }
    if (s->wb_delay_us > 1000000) {
        error_setg(errp, "npu: x-wb-delay-us must be <= 1000000");
        return false;
    }
    return npu_uq_check_props(s, errp);
}

static void npu_realize(PCIDevice *pdev, Error **errp)
{
    NpuState *s = NPU(pdev);
    Error *local_err = NULL;
    unsigned i;

    if (!npu_check_props(s, errp)) {
        return;
    }
    s->nrings = s->n_compute + s->n_copy;

    memory_region_init_io(&s->mmio, OBJECT(s), &npu_mmio_ops, s, "npu-regs",
                          NPU_REGS_SIZE);
    pci_register_bar(pdev, NPU_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->mmio);

    /*
     * Device memory migrates as RAM. Its id is dropped again at unrealize
     * (not at finalize), so a new instance can be plugged at the same
     * address before the old one is finalized.
     */
    memory_region_init_ram_nomigrate(&s->devmem, OBJECT(s), "npu-devmem",
                                     s->devmem_size, &local_err);
    if (local_err) {
        error_propagate(errp, local_err);
        return;
    }
    vmstate_register_ram(&s->devmem, DEVICE(s));
    s->devmem_ptr = memory_region_get_ram_ptr(&s->devmem);
    pci_register_bar(pdev, NPU_BAR_DEVMEM,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64 |
                     PCI_BASE_ADDRESS_MEM_PREFETCH, &s->devmem);

    /* with user queues, vector nrings + 1 is their event vector */
    s->nvec = s->nrings + 1 + npu_uq_present(s);
    if (msix_init_exclusive_bar(pdev, s->nvec, NPU_BAR_MSIX, errp)) {
        return;
    }
    for (i = 0; i < s->nvec; i++) {
        msix_vector_use(pdev, i);
    }

    s->dma_direct = pci_device_iommu_address_space(pdev) ==
                    &address_space_memory;
    qemu_mutex_init(&s->reg_lock);
    npu_vt_init(s);
    npu_uq_realize(s);                  /* its engines take part in vtime */
    qemu_mutex_init(&s->cu_lock);
    qemu_cond_init(&s->cu_cond);
    s->irq_bh = qemu_bh_new(npu_irq_bh, s);
    s->clock_base = npu_time();
    qemu_mutex_init(&s->run_lock);
    qemu_cond_init(&s->run_cond);
    qemu_mutex_init(&s->sem_lock);
    for (i = 0; i < NPU_SIGNAL_LOCKS; i++) {
        qemu_mutex_init(&s->signal_lock[i]);
    }
    qemu_cond_init(&s->sem_cond);
    s->paused = !runstate_is_running();
    s->vmse = qdev_add_vm_change_state_handler(DEVICE(s), npu_vm_state_change,
                                               s);

    for (i = 0; i < s->nrings; i++) {
        NpuRing *r = &s->rings[i];

        memset(r, 0, sizeof(*r));
        r->s = s;
        r->idx = i;
        r->copy = i >= s->n_compute;
        snprintf(r->name, sizeof(r->name), "npu-ring%u", i);
        qemu_mutex_init(&r->lock);
        qemu_cond_init(&r->cond);
        npu_tlb_flush(r);
        qemu_thread_create(&r->thread, r->name, npu_ring_thread, r,
                           QEMU_THREAD_JOINABLE);
    }
    npu_cu_init(s);
}

static void npu_exit(PCIDevice *pdev)
{
    NpuState *s = NPU(pdev);
    unsigned i;

    qemu_del_vm_change_state_handler(s->vmse);
    vmstate_unregister_ram(&s->devmem, DEVICE(s));
    npu_stop_threads(s, s->nrings);
    npu_uq_unrealize(s);                /* its engines launch on the units */
    npu_cu_fini(s);
    npu_vt_fini(s);
    qemu_bh_delete(s->irq_bh);
    s->irq_bh = NULL;
    qemu_cond_destroy(&s->cu_cond);
    qemu_mutex_destroy(&s->cu_lock);
    qemu_mutex_destroy(&s->reg_lock);
    qemu_cond_destroy(&s->run_cond);
    qemu_mutex_destroy(&s->run_lock);
    qemu_cond_destroy(&s->sem_cond);
    qemu_mutex_destroy(&s->sem_lock);
    for (i = 0; i < NPU_SIGNAL_LOCKS; i++) {
        qemu_mutex_destroy(&s->signal_lock[i]);
    }
    msix_uninit_exclusive_bar(pdev);
}

static Property npu_properties[] = {
    DEFINE_PROP_UINT32("compute-rings", NpuState, n_compute, 8),
    DEFINE_PROP_UINT32("copy-rings", NpuState, n_copy, 2),
    DEFINE_PROP_UINT32("compute-units", NpuState, n_cus, 8),
    DEFINE_PROP_SIZE("devmem-size", NpuState, devmem_size, 1 * GiB),
    DEFINE_PROP_STRING("timing", NpuState, timing_mode),
    DEFINE_PROP_UINT32("link-bw-mbps", NpuState, link_bw, 4000),
    DEFINE_PROP_UINT32("mem-bw-mbps", NpuState, mem_bw, 32000),
    DEFINE_PROP_UINT32("cu-mops", NpuState, cu_mops, 2000),
    DEFINE_PROP_UINT32("launch-ns", NpuState, launch_ns, 4000),
    DEFINE_PROP_UINT32("launch-gap-ns", NpuState, launch_gap_ns, 500),
    DEFINE_PROP_UINT32("copy-ns", NpuState, copy_ns, 2000),
    DEFINE_PROP_UINT32("cu-threads", NpuState, cu_threads, 16),
    DEFINE_PROP_UINT32("cu-scratch-kib", NpuState, cu_scratch_kib, 64),
    DEFINE_PROP_UINT32("cu-clock-mhz", NpuState, cu_clock_mhz, 1000),
    DEFINE_PROP_UINT32("l2-kib", NpuState, l2_kib, 4096),
    DEFINE_PROP_UINT32("l2-bw-mbps", NpuState, l2_bw, 128000),
    DEFINE_PROP_UINT32("vt-settle-us", NpuState, vt_settle_us, 5000),
    DEFINE_PROP_UINT32("uq-compute-engines", NpuState, uq_n_compute, 8),
    DEFINE_PROP_UINT32("uq-copy-engines", NpuState, uq_n_copy, 2),
    DEFINE_PROP_UINT32("uq-max-queues", NpuState, uq_max_queues, 1024),
    DEFINE_PROP_UINT32("uq-doorbell-pages", NpuState, uq_db_pages, 256),
    DEFINE_PROP_UINT32("uq-timeslice-us", NpuState, uq_timeslice_us, 1000),
    DEFINE_PROP_UINT32("uq-switch-ns", NpuState, uq_switch_ns, 1000),
    DEFINE_PROP_UINT32("uq-poll-us", NpuState, uq_poll_us, 50),
    DEFINE_PROP_UINT32("uq-doorbell-poll-us", NpuState, uq_doorbell_poll_us,
                       1000),
    DEFINE_PROP_UINT32("x-vt-cu-idle-delay-us", NpuState,
                       vt_cu_idle_delay_us, 0),
    DEFINE_PROP_UINT32("x-signal-delay-us", NpuState, signal_delay_us, 0),
    DEFINE_PROP_UINT32("x-wb-delay-us", NpuState, wb_delay_us, 0),
    DEFINE_PROP_END_OF_LIST(),
};

static bool npu_ring_fault_entry_needed(void *opaque)
{
    NpuRing *r = opaque;

    return r->fault_entry != 0;
}

/* FAULT_ENTRY came later: a subsection, sent only when it is set */
static const VMStateDescription vmstate_npu_ring_fault_entry = {
    .name = "npu/ring/fault_entry",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = npu_ring_fault_entry_needed,
    .fields = (VMStateField[]) {
        VMSTATE_UINT64(fault_entry, NpuRing),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_npu_ring = {
    .name = "npu/ring",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_UINT64(base, NpuRing),
        VMSTATE_UINT32(size, NpuRing),
        VMSTATE_UINT32(head, NpuRing),
        VMSTATE_UINT32(tail, NpuRing),
        VMSTATE_BOOL(enabled, NpuRing),
        VMSTATE_BOOL(halted, NpuRing),
        VMSTATE_UINT32(fence, NpuRing),
        VMSTATE_UINT32(context, NpuRing),
        VMSTATE_UINT64(pt_root, NpuRing),
        VMSTATE_UINT32(error, NpuRing),
        VMSTATE_UINT32(error_ctx, NpuRing),
        VMSTATE_UINT64(fault, NpuRing),
        VMSTATE_UINT32(error_info, NpuRing),
        VMSTATE_UINT64(fault_pc, NpuRing),
        VMSTATE_UINT32(fault_block, NpuRing),
        VMSTATE_UINT32(fault_thread, NpuRing),
        VMSTATE_UINT32(fault_unit, NpuRing),
        VMSTATE_UINT64(busy_ns, NpuRing),
        VMSTATE_UINT64(cmds, NpuRing),
        VMSTATE_UINT64(bytes, NpuRing),
        VMSTATE_UINT64(ops, NpuRing),
        VMSTATE_UINT64(vt, NpuRing),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * []) {
        &vmstate_npu_ring_fault_entry,
        NULL
    },
};

static bool npu_uq_needed(void *opaque)
{
    return npu_uq_present(opaque);
}

static int npu_uq_vm_post_load(void *opaque, int version_id)
{
    return npu_uq_post_load(opaque);
}

/* A user queue's state and its place in the scheduler. */
static const VMStateDescription vmstate_npu_uq_queue = {
    .name = "npu/uq/queue",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (VMStateField[]) {
        VMSTATE_UINT64(ring_va, NpuUq),
        VMSTATE_UINT32(ring_size, NpuUq),
        VMSTATE_UINT32(config, NpuUq),
        VMSTATE_UINT64(wb_va, NpuUq),
        VMSTATE_UINT32(ctx, NpuUq),
        VMSTATE_UINT32(doorbell, NpuUq),
        VMSTATE_UINT64(pt_root, NpuUq),
        VMSTATE_UINT64(wptr, NpuUq),
        VMSTATE_UINT64(rptr, NpuUq),
        VMSTATE_UINT32(status, NpuUq),
        VMSTATE_UINT32(error, NpuUq),
        VMSTATE_UINT64(fault, NpuUq),
        VMSTATE_UINT32(error_info, NpuUq),
        VMSTATE_UINT32(fault_block, NpuUq),
        VMSTATE_UINT64(fault_pc, NpuUq),
        VMSTATE_UINT32(fault_thread, NpuUq),
        VMSTATE_UINT32(fault_unit, NpuUq),
        VMSTATE_UINT64(fault_entry, NpuUq),
        VMSTATE_UINT64(ib_va, NpuUq),
        VMSTATE_UINT32(ib_size, NpuUq),
        VMSTATE_UINT32(ib_offset, NpuUq),
        VMSTATE_UINT64(progress_ns, NpuUq),
        VMSTATE_UINT64(busy_ns, NpuUq),
        VMSTATE_UINT64(cmds, NpuUq),
        VMSTATE_UINT64(bytes, NpuUq),
        VMSTATE_UINT64(ops, NpuUq),
        VMSTATE_UINT32(skip, NpuUq),
        VMSTATE_UINT32(starve, NpuUq),
        VMSTATE_BOOL(ready, NpuUq),
        VMSTATE_UINT64(ready_seq, NpuUq),
        VMSTATE_BOOL(waiting, NpuUq),
        VMSTATE_UINT64(wait_addr, NpuUq),
        VMSTATE_UINT64(wait_value, NpuUq),
        VMSTATE_BOOL(wait_wide, NpuUq),
        VMSTATE_END_OF_LIST()
    },
};

/* The UQ_* registers (present only with user-queue engines). */
static const VMStateDescription vmstate_npu_uq = {
    .name = "npu/uq",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = npu_uq_needed,
    .post_load = npu_uq_vm_post_load,
    .fields = (VMStateField[]) {
        VMSTATE_UINT32_EQUAL(uq_n_compute, NpuState, NULL),
        VMSTATE_UINT32_EQUAL(uq_n_copy, NpuState, NULL),
        VMSTATE_UINT32_EQUAL(uq_max_queues, NpuState, NULL),
        VMSTATE_UINT32_EQUAL(uq_db_pages, NpuState, NULL),
        VMSTATE_UINT64(uq.event_base, NpuState),
        VMSTATE_UINT32(uq.event_size, NpuState),
        VMSTATE_UINT32(uq.event_head, NpuState),
        VMSTATE_UINT32(uq.event_tail, NpuState),
        VMSTATE_UINT32(uq.event_status, NpuState),
        VMSTATE_UINT64(uq.table_base, NpuState),
        VMSTATE_UINT32(uq.table_entries, NpuState),
        VMSTATE_UINT32(uq.cmd_status, NpuState),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(uq.q, NpuState, uq_max_queues,
                                             vmstate_npu_uq_queue, NpuUq),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * Registers, counters and clock, with the rings at command boundaries
 * (see "Migration"); device memory is RAM and migrates as such; the TLBs
 * are caches and start empty.
 */
static const VMStateDescription vmstate_npu = {
    .name = "npu",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = npu_pre_save,
    .post_load = npu_post_load,
    .fields = (VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, NpuState),
        VMSTATE_MSIX(parent_obj, NpuState),
        VMSTATE_UINT32_EQUAL(n_compute, NpuState, NULL),
        VMSTATE_UINT32_EQUAL(n_copy, NpuState, NULL),
        VMSTATE_UINT32_EQUAL(n_cus, NpuState, NULL),
        VMSTATE_UINT64_EQUAL(devmem_size, NpuState, NULL),
        VMSTATE_UINT32(err_pending, NpuState),
        VMSTATE_UINT32(scratch, NpuState),
        VMSTATE_UINT32(clock_hi_latch, NpuState),
        VMSTATE_UINT32(irq_pending, NpuState),
        VMSTATE_UINT64(mig_clock, NpuState),
        VMSTATE_UINT64(vt.cu_time, NpuState),
        VMSTATE_UINT64(mig_cu_cycle, NpuState),
        VMSTATE_UINT64_ARRAY(mig_cu_busy_cycles, NpuState, NPU_MAX_CUS),
        VMSTATE_UINT64_ARRAY(mig_cu_instrs, NpuState, NPU_MAX_CUS),
        VMSTATE_UINT64_ARRAY(mig_cu_fixed_ns, NpuState, NPU_MAX_CUS),
        VMSTATE_UINT32_ARRAY(mig_ib_resume, NpuState, NPU_MAX_RINGS),
        VMSTATE_STRUCT_ARRAY(rings, NpuState, NPU_MAX_RINGS, 1,
                             vmstate_npu_ring, NpuRing),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * []) {
        &vmstate_npu_uq,
        NULL
    },
};

static void npu_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = npu_realize;
    k->exit = npu_exit;
    k->vendor_id = NPU_PCI_VENDOR_ID;
    k->device_id = NPU_PCI_DEVICE_ID;
    k->revision = NPU_PCI_REVISION;
    k->class_id = NPU_PCI_CLASS;
    dc->desc = "Virtual NPU (compute and copy rings, MMU, compute units)";
    dc->reset = npu_qdev_reset;
    dc->vmsd = &vmstate_npu;
    device_class_set_props(dc, npu_properties);
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo npu_info = {
    .name = TYPE_NPU,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(NpuState),
    .class_init = npu_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { },
    },
};

static void npu_register_types(void)
{
    type_register_static(&npu_info);
}

type_init(npu_register_types)
