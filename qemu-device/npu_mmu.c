/*
 * npu - virtual NPU PCI device: MMU (device virtual addresses).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Three-level page tables in guest memory (npu_hw.h), walked with DMA and
 * cached per ring in a small direct-mapped TLB that SET_CONTEXT, the
 * RING_CTRL FLUSH_TLB packet, ring reset and the MMU_INVALIDATE register
 * drop. Only valid leaf entries are cached; faults are never cached.
 *
 * MMU_INVALIDATE is written under the BQL while the ring threads translate
 * without it. The protocol, per ring, with atomics only:
 *
 * - The engine publishes the context its TLB belongs to in mmu_ctx.
 * - Every access through the MMU (one page of npu_vm_rw, one chunk of
 *   the COPY/FILL fast path: its translations and its data transfer, or
 *   one quantum of the compute units running the ring's launch, npu_cu.c,
 *   cut short by a waiting invalidation: npu_cu_yield)
 *   is bracketed by npu_mmu_access_begin/end. Begin stores
 *   mmu_busy = mmu_gen | 1
 *   (the generation as first read), issues a full barrier, reads mmu_gen
 *   again with acquire and drops the TLB if it was filled under another
 *   generation. End stores mmu_busy = 0 with release.
 * - The register handler issues a full barrier, and for every ring whose
 *   mmu_ctx matches adds 2 to mmu_gen (sequentially consistent), then waits
 *   until mmu_busy is 0 or belongs to an access that began with the new
 *   generation.
 *
 * The guest wrote its page tables before the register. Both sides write
 * one variable, fence, then read the other side's variable (mmu_ctx and
 * mmu_busy against the page tables and mmu_gen), so at least one of them
 * sees the other's write: either the handler sees the ring busy in the
 * context and waits for the access to end, or the access sees the new
 * generation (and, through the acquire, the new page tables). An access
 * that saw the old generation finished its data transfer before the
 * handler returns (release/acquire on mmu_busy). Hence: once the register
 * write has completed, no ring uses a translation of that context obtained
 * before it.
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/processor.h"
#include "qemu/rcu.h"
#include "exec/memory.h"
#include "npu_base.h"
#include "npu_mmu.h"
#include "trace.h"

void npu_tlb_flush(NpuRing *r)
{
    unsigned i;

    for (i = 0; i < NPU_TLB_ENTRIES; i++) {
        r->tlb[i].vpn = UINT64_MAX;
        r->tlb[i].pte = 0;
    }
}

/*
 * Switch the ring to another address space (SET_CONTEXT; ring reset with
 * ctx = pt_root = 0). Engine thread, or reset while the engine is idle.
 */
void npu_mmu_set_context(NpuRing *r, uint32_t ctx, uint64_t pt_root)
{
    trace_npu_mmu_context(r->idx, ctx, pt_root);
    /* ordered before the next walk by the barrier in npu_mmu_access_begin */
    qatomic_set(&r->mmu_ctx, ctx);
    r->pt_root = pt_root;
    npu_tlb_flush(r);
}

void npu_mmu_access_begin(NpuRing *r)
{
    uint32_t gen = qatomic_read(&r->mmu_gen);

    qatomic_set(&r->mmu_busy, gen | 1);
    /* publish busy (and mmu_ctx) before reading mmu_gen and page tables */
    smp_mb();
    gen = qatomic_load_acquire(&r->mmu_gen);
    if (gen != r->tlb_gen) {
        npu_tlb_flush(r);
        r->tlb_gen = gen;
    }
}

void npu_mmu_access_end(NpuRing *r)
{
    /* the access's reads and writes are complete before busy is cleared */
    qatomic_store_release(&r->mmu_busy, 0);
}

/*
 * NPU_REG_MMU_INVALIDATE: every ring in context ctx (every ring if ctx is
 * NPU_MMU_INVALIDATE_ALL) drops its cached translations before its next
 * access; returns when no ring is still in an access that began before.
 * Called with the BQL held. Accesses never block (RAM only, no locks), so
 * the wait is short: at most one page or one 64 KiB chunk per ring, or one
 * instruction of the compute units (npu_cu_yield).
 */
void npu_mmu_invalidate(NpuState *s, uint32_t ctx)
{
    /* the rings, then (with user queues) their engines and MMU contexts */
    unsigned n = s->nrings + (npu_uq_present(s) ? ARRAY_SIZE(s->uq.eng) : 0);
    uint32_t seq;
    unsigned i;

    trace_npu_mmu_invalidate(ctx);
    /* the compute units end their accesses at their next instruction */
    seq = qatomic_inc_fetch(&s->mmu_inval_started);
    qatomic_inc(&s->mmu_waiters);
    /* the guest's page-table writes before reading the rings' state */
    smp_mb();
    for (i = 0; i < n; i++) {
        NpuRing *r = i < s->nrings ? &s->rings[i]
                                   : &s->uq.eng[i - s->nrings];
        uint32_t gen, busy;
        unsigned spins = 0;

        if (ctx != NPU_MMU_INVALIDATE_ALL &&
            qatomic_read(&r->mmu_ctx) != ctx) {
            continue;
        }
        gen = qatomic_add_fetch(&r->mmu_gen, 2);
        while ((busy = qatomic_load_acquire(&r->mmu_busy)) != 0 &&
               busy != (gen | 1)) {
            if (++spins < 1000) {
                cpu_relax();
            } else {
                g_usleep(10);
            }
        }
    }
    qatomic_dec(&s->mmu_waiters);
    qatomic_store_release(&s->mmu_inval_done, seq);
}

static bool npu_fail(NpuRing *r, NpuErr *err, uint32_t code, uint64_t addr)
{
    trace_npu_mmu_fault(r->idx, addr, code);
    err->code = code;
    err->addr = addr;
    return false;
}

/*
 * Walk the upper levels for va: the guest-physical address of its leaf
 * table in *leaf. 0 or the error code; *at is the address at fault.
 */
static uint32_t npu_mmu_leaf_table(NpuRing *r, uint64_t va, uint64_t *leaf,
                                   uint64_t *at)
{
    uint64_t table = r->pt_root;
    int lvl;

    for (lvl = 2; lvl > 0; lvl--) {
        uint64_t pa = table + NPU_PT_INDEX(va, lvl) * 8;
        uint64_t e;

        if (npu_phys_rw(r->s, pa, &e, 8, false) != MEMTX_OK) {
            *at = pa;
            return NPU_ERR_BAD_DMA;
        }
        e = le64_to_cpu(e);
        if (!(e & NPU_PTE_VALID)) {
            *at = va;
            return NPU_ERR_MMU_FAULT;
        }
        table = e & NPU_PTE_ADDR_MASK;
    }
    *leaf = table;
    return 0;
}

/* May the leaf entry pte be used for this access? 0 or the error code. */
static uint32_t npu_mmu_leaf_check(NpuState *s, uint64_t pte, bool is_write)
{
    if (!(pte & NPU_PTE_VALID)) {
        return NPU_ERR_MMU_FAULT;
    }
    if (is_write && !(pte & NPU_PTE_WRITE)) {
        return NPU_ERR_MMU_WRITE;
    }
    if ((pte & NPU_PTE_DEVMEM) &&
        (pte & NPU_PTE_ADDR_MASK) >= s->devmem_size) {
        return NPU_ERR_DEVMEM_RANGE;
    }
    return 0;
}

/*
 * Translate va to its leaf entry in the ring's context, checking
 * permissions and bounds. Inside npu_mmu_access_begin/end.
 */
bool npu_mmu_translate(NpuRing *r, uint64_t va, bool is_write,
                       uint64_t *pte_out, NpuErr *err)
{
    NpuState *s = r->s;
    uint64_t vpn = va >> NPU_PAGE_SHIFT;
    NpuTlbEntry *t = &r->tlb[vpn % NPU_TLB_ENTRIES];
    uint64_t pte, leaf, at;
    uint32_t code;

    if (va >> NPU_VA_BITS) {
        return npu_fail(r, err, NPU_ERR_MMU_FAULT, va);
    }
    if (!r->pt_root) {
        return npu_fail(r, err, NPU_ERR_NO_CONTEXT, va);
    }
    if (t->vpn == vpn) {
        pte = t->pte;
    } else {
        uint64_t pa;

        code = npu_mmu_leaf_table(r, va, &leaf, &at);
        if (code) {
            return npu_fail(r, err, code, at);
        }
        pa = leaf + NPU_PT_INDEX(va, 0) * 8;
        if (npu_phys_rw(s, pa, &pte, 8, false) != MEMTX_OK) {
            return npu_fail(r, err, NPU_ERR_BAD_DMA, pa);
        }
        pte = le64_to_cpu(pte);
        if (!(pte & NPU_PTE_VALID)) {
            return npu_fail(r, err, NPU_ERR_MMU_FAULT, va);
        }
        trace_npu_mmu_walk(r->idx, va, pte);
        t->vpn = vpn;
        t->pte = pte;
    }
    code = npu_mmu_leaf_check(s, pte, is_write);
    if (code) {
        return npu_fail(r, err, code, va);
    }
    *pte_out = pte;
    return true;
}

/*
 * The leaf entries of the n pages from page-aligned va, each as
 * npu_mmu_translate would give it (from the TLB if cached there, else from
 * the page table, then cached), but reading the entries of one leaf table
 * at once: a long copy walks once per run of pages, not once per page.
 * False, with nothing recorded, if any page would fault. Inside
 * npu_mmu_access_begin/end.
 */
#define NPU_PTE_RUN 32

static bool npu_mmu_translate_run(NpuRing *r, uint64_t va, unsigned n,
                                  bool is_write, uint64_t *ptes)
{
    uint64_t e[NPU_PTE_RUN], leaf, at;
    unsigned i = 0, j, k;

    if (!r->pt_root || va >> NPU_VA_BITS ||
        (va + (uint64_t)n * NPU_PAGE_SIZE - 1) >> NPU_VA_BITS) {
        return false;
    }
    while (i < n) {
        uint64_t v = va + (uint64_t)i * NPU_PAGE_SIZE;
        uint64_t vpn = v >> NPU_PAGE_SHIFT;
        NpuTlbEntry *t = &r->tlb[vpn % NPU_TLB_ENTRIES];
        unsigned idx = NPU_PT_INDEX(v, 0);

        if (t->vpn == vpn) {
            ptes[i] = t->pte;
            if (npu_mmu_leaf_check(r->s, ptes[i++], is_write)) {
                return false;
            }
            continue;
        }
        k = MIN(MIN(n - i, NPU_PTE_RUN), 512 - idx);
        if (npu_mmu_leaf_table(r, v, &leaf, &at) ||
            npu_phys_rw(r->s, leaf + idx * 8, e, k * 8, false) != MEMTX_OK) {
            return false;
        }
        for (j = 0; j < k; j++, i++) {
            t = &r->tlb[(vpn + j) % NPU_TLB_ENTRIES];
            if (t->vpn == vpn + j) {
                ptes[i] = t->pte;
            } else {
                ptes[i] = le64_to_cpu(e[j]);
                if (!(ptes[i] & NPU_PTE_VALID)) {
                    return false;
                }
                trace_npu_mmu_walk(r->idx, v + (uint64_t)j * NPU_PAGE_SIZE,
                                   ptes[i]);
                t->vpn = vpn + j;
                t->pte = ptes[i];
            }
            if (npu_mmu_leaf_check(r->s, ptes[i], is_write)) {
                return false;
            }
        }
    }
    return true;
}

/*
 * Read or write len bytes at device virtual address va, page by page.
 * Bytes are accounted as device-memory or host-link traffic in job.
 */
bool npu_vm_rw(NpuJob *job, uint64_t va, void *buf, uint64_t len,
               bool is_write, NpuErr *err)
{
    NpuState *s = job->ring->s;
    uint8_t *p = buf;

    while (len) {
        uint64_t off = va & (NPU_PAGE_SIZE - 1);
        uint64_t n = MIN(len, NPU_PAGE_SIZE - off);
        uint64_t pte, addr;
        bool ok = true;

        npu_mmu_access_begin(job->ring);
        if (!npu_mmu_translate(job->ring, va, is_write, &pte, err)) {
            ok = false;
        } else if (pte & NPU_PTE_DEVMEM) {
            /* the page lies entirely inside device memory (checked) */
            addr = (pte & NPU_PTE_ADDR_MASK) + off;
            if (is_write) {
                memcpy(s->devmem_ptr + addr, p, n);
            } else {
                memcpy(p, s->devmem_ptr + addr, n);
            }
            job->dev_bytes += n;
        } else {
            addr = (pte & NPU_PTE_ADDR_MASK) + off;
            if (npu_phys_rw(s, addr, p, n, is_write) != MEMTX_OK) {
                ok = npu_fail(job->ring, err, NPU_ERR_BAD_DMA, addr);
            } else {
                job->host_bytes += n;
            }
        }
        npu_mmu_access_end(job->ring);
        if (!ok) {
            return false;
        }
        va += n;
        p += n;
        len -= n;
    }
    return true;
}

/*
 * A host pointer to [va, va + len), inside one page, for several accesses
 * in a row (a SIGNAL's fields) in one MMU access, until npu_vm_unmap_one.
 * NULL, with nothing held and no error recorded, if the page faults or is
 * not RAM: the caller then goes through npu_vm_rw, which reports it.
 */
uint8_t *npu_vm_map_one(NpuJob *job, uint64_t va, uint64_t len,
                        bool is_write, NpuVmMap *m)
{
    NpuState *s = job->ring->s;
    uint64_t off = va & (NPU_PAGE_SIZE - 1), pte, addr, l;
    NpuErr err = { 0 };

    if (!len || off + len > NPU_PAGE_SIZE) {
        return NULL;
    }
    npu_mmu_access_begin(job->ring);
    if (npu_mmu_translate(job->ring, va, is_write, &pte, &err)) {
        addr = (pte & NPU_PTE_ADDR_MASK) + off;
        m->dev = pte & NPU_PTE_DEVMEM;
        if (m->dev) {
            return s->devmem_ptr + addr;  /* inside devmem (checked) */
        }
        l = npu_dma_get(s, &m->dma, addr, len, is_write);
        if (l == len) {
            return m->dma.ptr;
        }
        if (l) {
            npu_dma_put(s, &m->dma, 0);
        }
    }
    npu_mmu_access_end(job->ring);
    return NULL;
}

/*
 * End a mapping of npu_vm_map_one: written bytes from its start were
 * written, accessed bytes count as traffic as npu_vm_rw counts them.
 */
void npu_vm_unmap_one(NpuJob *job, NpuVmMap *m, uint64_t written,
                      uint64_t accessed)
{
    if (m->dev) {
        job->dev_bytes += accessed;
    } else {
        npu_dma_put(job->ring->s, &m->dma, written);
        job->host_bytes += accessed;
    }
    npu_mmu_access_end(job->ring);
}

/*
 * Fast path for COPY and FILL: one memcpy between host pointers instead of a
 * copy into a bounce buffer and another out of it.
 */

#define NPU_FAST_SEGS 32
#define NPU_FAST_PAGES 32          /* a 64 KiB chunk, unaligned: 17 */

typedef struct NpuSeg {
    uint8_t *ptr;
    MemoryRegionCache map;      /* guest RAM mapping (mapped set) */
    bool mapped;
    uint64_t pa;
    uint64_t len;
    bool dev;
} NpuSeg;

static void npu_segs_unmap(NpuState *s, NpuSeg *seg, unsigned nseg,
                           bool is_write, bool done)
{
    unsigned i;

    for (i = 0; i < nseg; i++) {
        if (seg[i].mapped) {
            npu_dma_unmap(s, &seg[i].map, is_write && done ? seg[i].len : 0);
            seg[i].mapped = false;
        }
    }
}

/*
 * Translate [va, va + len) into runs of contiguous device memory or guest
 * RAM and get a host pointer for each. False (nothing mapped, no error
 * recorded) if any page faults, is not RAM or cannot be mapped whole: the
 * caller then takes the page-by-page path, which reports the error.
 */
static bool npu_vm_map(NpuJob *job, uint64_t va, uint64_t len, bool is_write,
                       NpuSeg *seg, unsigned *nseg_out)
{
    NpuState *s = job->ring->s;
    uint64_t ptes[NPU_FAST_PAGES];
    unsigned nseg = 0, npages, i;

    npages = ((va & (NPU_PAGE_SIZE - 1)) + len + NPU_PAGE_SIZE - 1) >>
             NPU_PAGE_SHIFT;
    if (npages > NPU_FAST_PAGES ||
        !npu_mmu_translate_run(job->ring, va & ~(NPU_PAGE_SIZE - 1), npages,
                               is_write, ptes)) {
        return false;
    }
    for (i = 0; len; i++) {
        uint64_t off = va & (NPU_PAGE_SIZE - 1);
        uint64_t n = MIN(len, NPU_PAGE_SIZE - off);
        uint64_t pte = ptes[i], addr;
        bool dev;

        addr = (pte & NPU_PTE_ADDR_MASK) + off;
        dev = pte & NPU_PTE_DEVMEM;
        if (nseg && seg[nseg - 1].dev == dev &&
            seg[nseg - 1].pa + seg[nseg - 1].len == addr) {
            seg[nseg - 1].len += n;
        } else {
            if (nseg == NPU_FAST_SEGS) {
                return false;
            }
            seg[nseg].pa = addr;
            seg[nseg].len = n;
            seg[nseg].dev = dev;
            seg[nseg].mapped = false;
            seg[nseg].ptr = NULL;
            nseg++;
        }
        va += n;
        len -= n;
    }

    for (i = 0; i < nseg; i++) {
        NpuSeg *g = &seg[i];

        if (g->dev) {
            if (g->pa + g->len < g->pa || g->pa + g->len > s->devmem_size) {
                goto fail;
            }
            g->ptr = s->devmem_ptr + g->pa;
            continue;
        }
        if (npu_dma_map(s, &g->map, g->pa, g->len, is_write) < g->len) {
            if (g->map.mrs.mr) {
                npu_dma_unmap(s, &g->map, 0);
            }
            goto fail;
        }
        g->mapped = true;
        g->ptr = g->map.ptr;
    }
    *nseg_out = nseg;
    return true;

fail:
    npu_segs_unmap(s, seg, nseg, is_write, false);
    return false;
}

static bool npu_segs_overlap(const NpuSeg *a, unsigned na, const NpuSeg *b,
                             unsigned nb)
{
    unsigned i, j;

    for (i = 0; i < na; i++) {
        for (j = 0; j < nb; j++) {
            if (a[i].ptr < b[j].ptr + b[j].len &&
                b[j].ptr < a[i].ptr + a[i].len) {
                return true;
            }
        }
    }
    return false;
}

static void npu_segs_account(NpuJob *job, const NpuSeg *seg, unsigned nseg)
{
    unsigned i;

    for (i = 0; i < nseg; i++) {
        if (seg[i].dev) {
            job->dev_bytes += seg[i].len;
        } else {
            job->host_bytes += seg[i].len;
        }
    }
}

static bool npu_vm_copy_fast_access(NpuJob *job, uint64_t src,
                                    const void *src_buf, uint64_t dst,
                                    uint64_t len)
{
    NpuState *s = job->ring->s;
    NpuSeg sseg[NPU_FAST_SEGS], dseg[NPU_FAST_SEGS];
    unsigned ns = 0, nd = 0, i = 0, j;
    uint64_t soff = 0;

    if (!len) {
        return false;
    }
    if (src_buf) {
        sseg[0].ptr = (uint8_t *)src_buf;
        sseg[0].mapped = false;
        sseg[0].len = len;
        ns = 1;
    } else if (!npu_vm_map(job, src, len, false, sseg, &ns)) {
        return false;
    }
    if (!npu_vm_map(job, dst, len, true, dseg, &nd)) {
        npu_segs_unmap(s, sseg, ns, false, false);
        return false;
    }
    if (npu_segs_overlap(sseg, ns, dseg, nd)) {
        npu_segs_unmap(s, dseg, nd, true, false);
        npu_segs_unmap(s, sseg, ns, false, false);
        return false;
    }
    for (j = 0; j < nd; j++) {
        uint64_t doff = 0;

        while (doff < dseg[j].len) {
            uint64_t n = MIN(dseg[j].len - doff, sseg[i].len - soff);

            memcpy(dseg[j].ptr + doff, sseg[i].ptr + soff, n);
            doff += n;
            soff += n;
            if (soff == sseg[i].len) {
                i++;
                soff = 0;
            }
        }
    }
    if (!src_buf) {
        npu_segs_account(job, sseg, ns);
    }
    npu_segs_account(job, dseg, nd);
    npu_segs_unmap(s, dseg, nd, true, true);
    npu_segs_unmap(s, sseg, ns, false, true);
    return true;
}

/*
 * Copy len bytes from device virtual address src (or, if src_buf is set,
 * from src_buf) to device virtual address dst directly between host
 * pointers, accounting the bytes as npu_vm_rw would. False if the fast path
 * does not apply (a page faults or is not plain RAM, or source and
 * destination overlap); nothing has been written then. The translations
 * and the copy are one access (see MMU_INVALIDATE above).
 */
bool npu_vm_copy_fast(NpuJob *job, uint64_t src, const void *src_buf,
                      uint64_t dst, uint64_t len)
{
    bool done;

    npu_mmu_access_begin(job->ring);
    done = npu_vm_copy_fast_access(job, src, src_buf, dst, len);
    npu_mmu_access_end(job->ring);
    return done;
}
