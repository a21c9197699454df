/*
 * npu - virtual NPU PCI device: MMU (device virtual addresses).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Three-level page tables in guest memory (npu_hw.h), walked with DMA and
 * cached per ring in a small direct-mapped TLB that SET_CONTEXT, the
 * RING_CTRL FLUSH_TLB packet and ring reset drop. Only valid leaf entries are
 * cached; faults are never cached.
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "npu.h"

void npu_tlb_flush(NpuRing *r)
{
    unsigned i;

    for (i = 0; i < NPU_TLB_ENTRIES; i++) {
        r->tlb[i].vpn = UINT64_MAX;
        r->tlb[i].pte = 0;
    }
}

static bool npu_fail(NpuErr *err, uint32_t code, uint64_t addr)
{
    err->code = code;
    err->addr = addr;
    return false;
}

/* Translate va to its leaf entry, checking permissions and bounds. */
static bool npu_translate(NpuJob *job, uint64_t va, bool is_write,
                          uint64_t *pte_out, NpuErr *err)
{
    NpuRing *r = job->ring;
    NpuState *s = r->s;
    uint64_t vpn = va >> NPU_PAGE_SHIFT;
    NpuTlbEntry *t = &r->tlb[vpn % NPU_TLB_ENTRIES];
    uint64_t pte;
    int lvl;

    if (va >> NPU_VA_BITS) {
        return npu_fail(err, NPU_ERR_MMU_FAULT, va);
    }
    if (!r->pt_root) {
        return npu_fail(err, NPU_ERR_NO_CONTEXT, va);
    }
    if (t->vpn == vpn) {
        pte = t->pte;
    } else {
        uint64_t table = r->pt_root;

        for (lvl = 2; ; lvl--) {
            uint64_t pa = table + NPU_PT_INDEX(va, lvl) * 8;
            uint64_t e;

            if (npu_phys_rw(s, pa, &e, 8, false) != MEMTX_OK) {
                return npu_fail(err, NPU_ERR_BAD_DMA, pa);
            }
            e = le64_to_cpu(e);
            if (!(e & NPU_PTE_VALID)) {
                return npu_fail(err, NPU_ERR_MMU_FAULT, va);
            }
            if (lvl == 0) {
                pte = e;
                break;
            }
            table = e & NPU_PTE_ADDR_MASK;
        }
        t->vpn = vpn;
        t->pte = pte;
    }
    if (is_write && !(pte & NPU_PTE_WRITE)) {
        return npu_fail(err, NPU_ERR_MMU_WRITE, va);
    }
    if ((pte & NPU_PTE_DEVMEM) &&
        (pte & NPU_PTE_ADDR_MASK) >= s->devmem_size) {
        return npu_fail(err, NPU_ERR_DEVMEM_RANGE, va);
    }
    *pte_out = pte;
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

        if (!npu_translate(job, va, is_write, &pte, err)) {
            return false;
        }
        addr = (pte & NPU_PTE_ADDR_MASK) + off;
        if (pte & NPU_PTE_DEVMEM) {
            /* the page lies entirely inside device memory (checked) */
            if (is_write) {
                memcpy(s->devmem_ptr + addr, p, n);
            } else {
                memcpy(p, s->devmem_ptr + addr, n);
            }
            job->dev_bytes += n;
        } else {
            if (npu_phys_rw(s, addr, p, n, is_write) != MEMTX_OK) {
                return npu_fail(err, NPU_ERR_BAD_DMA, addr);
            }
            job->host_bytes += n;
        }
        va += n;
        p += n;
        len -= n;
    }
    return true;
}
