/*
 * npu - virtual NPU PCI device: the base layer below the engines.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * What every engine (npu_engine.c, npu_uq.c, npu_cu.c, npu_mmu.c ...)
 * shares: the device clock, the VM run state they park on, waits for a
 * deadline, bus-master DMA restricted to RAM, and raising interrupts.
 * The device's top (npu.c: PCI function, registers, reset, migration)
 * sets up what these use; nothing here calls an engine or the top.
 * Documentation/hw/npu.rst, "Implementation notes", has the layers.
 */

#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "qemu/rcu.h"
#include "qemu/timer.h"
#include "exec/memory.h"
#include "hw/pci/pci.h"
#include "sysemu/cpu-timers.h"
#include "npu_base.h"
#include "trace.h"
#ifdef CONFIG_LINUX
#include <sys/prctl.h>
#endif

/*
 * Device time, ns: the VM's clock without icount (QEMU_CLOCK_VIRTUAL on
 * TCG and KVM), which runs at host rate and stands still while the VM is
 * stopped. Read directly because under icount or qtest QEMU_CLOCK_VIRTUAL
 * follows instructions or clock_step, not the host, and the timing model
 * paces commands in host time.
 */
int64_t npu_time(void)
{
    return cpu_get_clock();
}

/* The device clock at device time t (npu_time), without timing=virtual. */
uint64_t npu_clock_at(NpuState *s, int64_t t)
{
    return t - qatomic_read(&s->clock_base);
}

/*
 * The device clock, ns: device time since reset, or with timing=virtual
 * the virtual clock (npu_vtime.c moves it).
 */
uint64_t npu_clock(NpuState *s)
{
    uint64_t now;

    if (!s->vtime) {
        return npu_clock_at(s, npu_time());
    }
    qemu_mutex_lock(&s->vt.lock);
    now = s->vt.now;
    qemu_mutex_unlock(&s->vt.lock);
    return now;
}

/*
 * The host wrote a register or is sent an interrupt: timing=virtual holds
 * its clock until the host has been quiet for vt-settle-us (npu_vtime.c).
 */
void npu_host_touch(NpuState *s)
{
    if (s->vtime) {
        qatomic_set(&s->vt.host_touch,
                    qemu_clock_get_ns(QEMU_CLOCK_REALTIME));
    }
}

void npu_raise(NpuState *s, unsigned vector)
{
    npu_host_touch(s);
    qatomic_or(&s->irq_pending, 1u << vector);
    qemu_bh_schedule(s->irq_bh);
}

bool npu_aborted(NpuRing *r)
{
    return qatomic_read(&r->abort) || qatomic_read(&r->stop);
}

/*
 * Run state
 */

/* The run state changed: parked engines look again. */
void npu_run_kick(NpuState *s)
{
    qemu_mutex_lock(&s->run_lock);
    qemu_cond_broadcast(&s->run_cond);
    qemu_mutex_unlock(&s->run_lock);
}

/*
 * While the VM is stopped, wait until it runs again, the ring r (if any)
 * is aborted, or a reset is under way (it must not wait for parked
 * engines).
 */
void npu_park(NpuState *s, NpuRing *r)
{
    if (!qatomic_read(&s->paused)) {
        return;
    }
    qemu_mutex_lock(&s->run_lock);
    while (qatomic_read(&s->paused) && !qatomic_read(&s->resetting) &&
           !(r && npu_aborted(r))) {
        qemu_cond_wait(&s->run_cond, &s->run_lock);
    }
    qemu_mutex_unlock(&s->run_lock);
}

/*
 * Bracket every guest-memory access. The stop handler sets paused, then
 * waits for dma_active to drop to 0; an access sets dma_active, then reads
 * paused: one of the two sees the other (both fence between write and
 * read), so no access starts after the handler returned. While stopped an
 * access parks; during a reset it is refused (the reset discards it).
 * Accesses nest on a thread (a page-table walk inside a mapped copy): only
 * the outermost one counts, so an inner one never parks while the outer
 * one keeps the stop handler waiting.
 */
static __thread unsigned npu_dma_depth;
static __thread bool npu_dma_noblock;

/*
 * While set, an access on this thread is refused instead of parked when
 * the VM is stopped: for accesses made holding a lock that the main loop
 * may need meanwhile (timing=virtual reads semaphores under vt_lock).
 */
void npu_dma_set_noblock(bool on)
{
    npu_dma_noblock = on;
}

static void npu_dma_exit(NpuState *s)
{
    if (--npu_dma_depth) {
        return;
    }
    if (qatomic_fetch_dec(&s->dma_active) == 1 &&
        qatomic_read(&s->paused)) {
        npu_run_kick(s);
    }
}

static bool npu_dma_enter(NpuState *s)
{
    if (npu_dma_depth) {
        npu_dma_depth++;
        return true;
    }
    for (;;) {
        npu_dma_depth = 1;
        qatomic_inc(&s->dma_active);
        /* dma_active before paused; pairs with npu_vm_state_change */
        smp_mb();
        if (!qatomic_read(&s->paused)) {
            return true;
        }
        npu_dma_exit(s);
        if (qatomic_read(&s->resetting) || npu_dma_noblock) {
            return false;
        }
        npu_park(s, NULL);
    }
}

/*
 * Waiting for a deadline. Engine threads run with a timer slack of 1 ns
 * (npu_engine_thread_init), so a sleep wakes only as late as the host's
 * timer interrupt and scheduler make it: a few microseconds on a quiet
 * host (the default slack of 50 us would stretch every short command to
 * about that). Commands are modelled in microseconds (launch-ns 4 us,
 * copy-ns 2 us): a wait of at most NPU_SPIN_MAX_NS is spun, as every
 * command's last 100 us used to be, so short commands keep their
 * precision. A longer one sleeps until a margin before its deadline and
 * spins the margin: the thread's recent worst wake-up lateness (it rises
 * to a late wake-up at once and decays by 1/16 per sleep) plus
 * NPU_SPIN_MIN_NS, at most NPU_SPIN_MAX_NS; on a quiet host about 10 us.
 * Documentation/hw/npu.rst, "Waiting out modelled time", has numbers.
 */
#define NPU_SPIN_MIN_NS     5000
#define NPU_SPIN_MAX_NS     100000
#define NPU_SLICE_NS        1000000     /* a reset is noticed this fast */

static __thread int64_t npu_late_ns = NPU_SPIN_MAX_NS;

static __thread bool npu_dma_cache_on;

void npu_engine_thread_init(void)
{
#ifdef CONFIG_LINUX
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
    npu_dma_cache_on = true;
}

static bool npu_nap_stop(NpuState *s, NpuRing *r)
{
    return qatomic_read(&s->paused) || qatomic_read(&s->draining) ||
           (r && npu_aborted(r));
}

/*
 * One step towards deadline (device time): sleep up to a slice, or spin
 * out the margin; returns early when the VM stops, a drain begins or the
 * ring r (if any) is aborted. Callers loop.
 */
void npu_nap_until(NpuState *s, int64_t deadline, NpuRing *r)
{
    int64_t now = npu_time(), d = deadline - now;
    int64_t margin = MIN(npu_late_ns + NPU_SPIN_MIN_NS, NPU_SPIN_MAX_NS);

    if (d > NPU_SPIN_MAX_NS && d - margin >= 1000) {
        int64_t want = MIN(d - margin, NPU_SLICE_NS) / 1000;
        int64_t late;

        g_usleep(want);
        late = npu_time() - (now + want * 1000);
        /* a stop freezes device time: that is not lateness */
        if (late >= 0 && !qatomic_read(&s->paused)) {
            late = MIN(late, NPU_SPIN_MAX_NS);
            npu_late_ns = late > npu_late_ns ? late
                          : npu_late_ns - (npu_late_ns - late) / 16;
        }
        return;
    }
    while (npu_time() < deadline && !npu_nap_stop(s, r)) {
        cpu_relax();
    }
}

/*
 * Sleep until device time reaches deadline; false if aborted. A drain for
 * migration cuts finite waits short.
 */
bool npu_sleep_until(NpuRing *r, int64_t deadline)
{
    for (;;) {
        int64_t now;

        if (npu_aborted(r)) {
            return false;
        }
        now = npu_time();
        if (now >= deadline || (qatomic_read(&r->s->draining) &&
                                deadline - now < NPU_FOREVER_NS)) {
            return true;
        }
        if (qatomic_read(&r->s->paused)) {
            npu_park(r->s, r);
            continue;
        }
        npu_nap_until(r->s, deadline, r);
    }
}

/* A command completed: wake rings waiting on a semaphore to look again. */
void npu_sem_kick(NpuState *s)
{
    /* the command's writes before sem_waiters; pairs with npu_exec_sem */
    smp_mb();
    if (qatomic_read(&s->sem_waiters)) {
        qemu_mutex_lock(&s->sem_lock);
        qatomic_inc(&s->sem_gen);
        qemu_cond_broadcast(&s->sem_cond);
        qemu_mutex_unlock(&s->sem_lock);
    }
    s->uq_hooks->kick(s);
}

/*
 * Whether an engine may access mr directly: plain RAM only (device memory
 * counts), and no writes to ROM.
 */
static bool npu_dma_allowed(MemoryRegion *mr, bool is_write)
{
    return memory_region_is_ram(mr) && !memory_region_is_ram_device(mr) &&
           !(is_write && (mr->readonly || mr->rom_device));
}

/*
 * Map [pa, pa + len) of the bus-master address space for an engine: one
 * translation, kept in cache, giving a host pointer to as much of the range
 * as is contiguous RAM (returned, > 0). 0 when the start is not RAM the
 * engine may use: unassigned (bus mastering off), MMIO, ROM for a write.
 * The engine threads run without the BQL, so nothing here may dispatch an
 * MMIO access; and the access must use this translation, never a second
 * one, which could see bus mastering turned off in between and land in
 * unassigned memory (dispatched under the BQL). Release with
 * npu_dma_unmap().
 */
uint64_t npu_dma_map(NpuState *s, MemoryRegionCache *cache, uint64_t pa,
                     uint64_t len, bool is_write)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));
    int64_t l;

    *cache = MEMORY_REGION_CACHE_INVALID;
    if (!len || pa + len < pa || !npu_dma_enter(s)) {
        return 0;
    }
    WITH_RCU_READ_LOCK_GUARD() {
        l = address_space_cache_init(cache, as, pa, len, is_write);
    }
    if (l <= 0 || !cache->ptr || !npu_dma_allowed(cache->mrs.mr, is_write)) {
        address_space_cache_destroy(cache);
        npu_dma_exit(s);
        return 0;
    }
    return l;
}

/*
 * Release a mapping; written says how many bytes from its start were
 * written (marked dirty for migration and TCG's code cache).
 */
void npu_dma_unmap(NpuState *s, MemoryRegionCache *cache, uint64_t written)
{
    if (written) {
        address_space_cache_invalidate(cache, 0, written);
    }
    address_space_cache_destroy(cache);
    npu_dma_exit(s);
}

/*
 * An engine thread keeps its last translations of guest pages (a small
 * direct-mapped cache, like a TLB in front of the bus): a ring's packets,
 * a queue's descriptor and write-back block and a stream's signals are
 * touched on every packet, and a fresh translation costs more than the
 * access. An entry is good while the bus-master address space still has
 * the flatview it was made from: the entry holds a reference on that
 * flatview, so the pointer cannot be reused by another one, and any
 * change to the address space (bus mastering off, a BAR or RAM moved)
 * replaces the flatview. Only without an IOMMU: its mappings change
 * without a new flatview. Idle threads drop theirs
 * (npu_engine_thread_idle), so old flatviews are not kept alive.
 *
 * Two ways per set: a queue's descriptor page and a stream's signal page,
 * both touched by every launch, can fall in one set; direct-mapped, they
 * evicted each other on every launch.
 */
#define NPU_DMA_CACHE_SETS      8
#define NPU_DMA_CACHE_WAYS      2
#define NPU_DMA_CACHE_ENTRIES   (NPU_DMA_CACHE_SETS * NPU_DMA_CACHE_WAYS)
#define NPU_DMA_CACHE_PAGE      4096

typedef struct NpuDmaCacheEntry {
    NpuState *s;
    uint64_t pa;                /* the mapped range, in bus addresses */
    uint64_t len;
    uint64_t used;              /* npu_dma_cache_clock at the last hit */
    MemoryRegionCache map;      /* valid while map.mrs.mr is set */
} NpuDmaCacheEntry;

static __thread NpuDmaCacheEntry npu_dma_cache[NPU_DMA_CACHE_ENTRIES];
static __thread uint64_t npu_dma_cache_clock;

static void npu_dma_cache_drop_entry(NpuDmaCacheEntry *e)
{
    if (e->map.mrs.mr) {
        address_space_cache_destroy(&e->map);
    }
    e->s = NULL;
    e->len = 0;
    e->used = 0;
}

/* This thread is about to sleep: let go of its translations. */
void npu_engine_thread_idle(void)
{
    unsigned i;

    for (i = 0; i < NPU_DMA_CACHE_ENTRIES; i++) {
        npu_dma_cache_drop_entry(&npu_dma_cache[i]);
    }
}

/*
 * The cached mapping holding pa, made if needed: returns the bytes of
 * [pa, pa + len) it covers, 0 if pa cannot be mapped for is_write (the
 * caller then falls back to a one-time mapping). Inside npu_dma_enter.
 */
static uint64_t npu_dma_cache_get(NpuState *s, uint64_t pa, uint64_t len,
                                  bool is_write, NpuDmaCacheEntry **out)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));
    uint64_t page = pa & ~(uint64_t)(NPU_DMA_CACHE_PAGE - 1);
    NpuDmaCacheEntry *set, *e;
    unsigned w;
    int64_t l;

    set = &npu_dma_cache[(pa / NPU_DMA_CACHE_PAGE) % NPU_DMA_CACHE_SETS *
                         NPU_DMA_CACHE_WAYS];
    for (w = 0; w < NPU_DMA_CACHE_WAYS; w++) {
        e = &set[w];
        /* the current flatview is compared, never dereferenced */
        if (e->map.mrs.mr && e->s == s && pa - e->pa < e->len &&
            e->map.fv == qatomic_read(&as->current_map) &&
            (!is_write || e->map.is_write)) {
            e->used = ++npu_dma_cache_clock;
            *out = e;
            return MIN(len, e->pa + e->len - pa);
        }
    }
    /* the way used least recently makes room */
    e = &set[0];
    for (w = 1; w < NPU_DMA_CACHE_WAYS; w++) {
        if (set[w].used < e->used) {
            e = &set[w];
        }
    }
    npu_dma_cache_drop_entry(e);
    WITH_RCU_READ_LOCK_GUARD() {
        l = address_space_cache_init(&e->map, as, page, NPU_DMA_CACHE_PAGE,
                                     is_write);
    }
    if (l <= (int64_t)(pa - page) || !e->map.ptr ||
        !npu_dma_allowed(e->map.mrs.mr, is_write)) {
        npu_dma_cache_drop_entry(e);
        return 0;
    }
    e->s = s;
    e->pa = page;
    e->len = l;
    e->used = ++npu_dma_cache_clock;
    *out = e;
    return MIN(len, page + l - pa);
}

/*
 * Map the start of [pa, pa + len) for one access of an engine: returns
 * how many bytes from pa are mapped at d->ptr (> 0), or 0 as npu_dma_map
 * does. On an engine thread the mapping comes from its cache; elsewhere
 * it is made for this access. Release with npu_dma_put().
 */
uint64_t npu_dma_get(NpuState *s, NpuDma *d, uint64_t pa, uint64_t len,
                     bool is_write)
{
    NpuDmaCacheEntry *e;
    uint64_t l;

    if (npu_dma_cache_on && s->dma_direct && len && pa + len >= pa) {
        if (!npu_dma_enter(s)) {
            return 0;
        }
        l = npu_dma_cache_get(s, pa, len, is_write, &e);
        if (l) {
            d->map = &e->map;
            d->off = pa - e->pa;
            d->ptr = (uint8_t *)e->map.ptr + d->off;
            return l;
        }
        npu_dma_exit(s);
    }
    l = npu_dma_map(s, &d->own, pa, len, is_write);
    d->map = &d->own;
    d->off = 0;
    d->ptr = l ? d->own.ptr : NULL;
    return l;
}

/* Release a mapping of npu_dma_get; written as for npu_dma_unmap. */
void npu_dma_put(NpuState *s, NpuDma *d, uint64_t written)
{
    if (d->map == &d->own) {
        npu_dma_unmap(s, &d->own, written);
        return;
    }
    if (written) {
        address_space_cache_invalidate(d->map, d->off, written);
    }
    npu_dma_exit(s);
}

/* Bus-master DMA restricted to RAM (see npu_dma_map). */
MemTxResult npu_phys_rw(NpuState *s, uint64_t pa, void *buf, uint64_t len,
                        bool is_write)
{
    uint8_t *p = buf;

    if (pa + len < pa) {
        return MEMTX_DECODE_ERROR;
    }
    /* ordered after the engine's earlier accesses, as pci_dma_rw is */
    smp_mb();
    while (len) {
        NpuDma d;
        uint64_t l = npu_dma_get(s, &d, pa, len, is_write);

        if (!l) {
            trace_npu_dma_fault(pa, len, is_write);
            return MEMTX_DECODE_ERROR;
        }
        if (is_write) {
            memcpy(d.ptr, p, l);
        } else {
            memcpy(p, d.ptr, l);
        }
        npu_dma_put(s, &d, is_write ? l : 0);
        pa += l;
        p += l;
        len -= l;
    }
    return MEMTX_OK;
}

/*
 * NPU_RING_BUSY (and a user-queue engine's BUSY): finished commands' time
 * and the executing one's so far. r->lock held.
 */
uint64_t npu_ring_busy(NpuRing *r)
{
    int64_t start = qatomic_read(&r->cmd_start);
    uint64_t v = r->busy_ns;

    if (start) {
        v += MAX(npu_time() - start, 0);
    }
    r->busy_seen = MAX(r->busy_seen, v);
    return r->busy_seen;
}
