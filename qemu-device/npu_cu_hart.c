/*
 * npu - virtual NPU PCI device: a compute-unit thread's environment.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * What the RISC-V interpreter (npu_rv.c) calls back for a thread of a
 * LAUNCH_CODE block: loads, stores and AMOs through the launch's context
 * MMU and its translation cache, the scratchpad, stack and parameter
 * windows, LR/SC reservations, the device CSRs and printf; and the
 * launch's failure record. Runs on the npu-cu thread.
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/host-utils.h"
#include "qemu/queue.h"
#include "qemu/rcu.h"
#include "qemu/timer.h"
#include "npu_cu_state.h"
#include "npu_cu_hart.h"
#include "npu_mmu.h"
#include "trace.h"

void npu_cu_fail(NpuLaunch *l, uint32_t code, uint64_t addr,
                        const NpuSlot *t, unsigned unit)
{
    if (l->failed) {
        return;
    }
    trace_npu_cu_fault(l->ring->idx, code, addr, t ? t->h.pc : 0);
    l->failed = true;
    l->err.code = code;
    l->err.addr = addr;
    if (t) {
        l->err.cu = true;
        l->err.pc = t->h.pc;
        l->err.block = t->blk->idx;
        l->err.thread = t->tid;
        l->err.unit = unit;
    }
}

/*
 * Memory through the launch's context
 */

/* Free l's superblocks (none may be in use). */
void npu_tb_free_all(NpuLaunch *l)
{
    NpuTb *tb, *nx;

    for (tb = l->tb_all; tb; tb = nx) {
        nx = tb->all_next;
        g_free(tb);
    }
    l->tb_all = NULL;
    l->ntb = 0;
    l->tb_epoch++;
    if (l->tb_hash) {
        memset(l->tb_hash, 0, NPU_TB_HASH * sizeof(l->tb_hash[0]));
    }
}

void npu_launch_flush(NpuLaunch *l)
{
    unsigned i;

    npu_tb_free_all(l);

    for (i = 0; i < NPU_CODE_PAGES; i++) {
        l->code[i].vpn = UINT64_MAX;
        l->code[i].filled = 0;
    }
    l->code_epoch++;
    for (i = 0; i < NPU_DTLB; i++) {
        l->dtlb[i].vpn = UINT64_MAX;
    }
}

uint32_t npu_cu_translate(NpuLaunch *l, uint64_t va, bool is_write,
                                 uint64_t *pte)
{
    uint64_t vpn = va >> NPU_PAGE_SHIFT;
    NpuDtlb *e = &l->dtlb[vpn % NPU_DTLB];
    NpuErr err = { 0 };

    if (e->vpn != vpn) {
        if (!npu_mmu_translate(l->ring, va, false, &e->pte, &err)) {
            e->vpn = UINT64_MAX;
            return err.code;
        }
        e->vpn = vpn;
        e->host = e->pte & NPU_PTE_DEVMEM ?
                  l->ring->s->devmem_ptr + (e->pte & NPU_PTE_ADDR_MASK) :
                  NULL;
    }
    if (is_write && !(e->pte & NPU_PTE_WRITE)) {
        return NPU_ERR_MMU_WRITE;
    }
    *pte = e->pte;
    return 0;
}

/*
 * Access len bytes (within one page) at va; *space gets where they were,
 * *phys (if not NULL) the physical key of the first byte.
 */
uint32_t npu_cu_vm_rw(NpuState *s, NpuLaunch *l, uint64_t va,
                             void *buf, unsigned len, bool is_write,
                             int *space, uint64_t *phys)
{
    uint64_t pte, pa;
    uint32_t code = npu_cu_translate(l, va, is_write, &pte);

    if (code) {
        return code;
    }
    pa = (pte & NPU_PTE_ADDR_MASK) + (va & (NPU_PAGE_SIZE - 1));
    if (phys) {
        *phys = pte & NPU_PTE_DEVMEM ? pa | NPU_PHYS_DEVMEM : pa;
    }
    if (pte & NPU_PTE_DEVMEM) {
        if (is_write) {
            memcpy(s->devmem_ptr + pa, buf, len);
        } else {
            memcpy(buf, s->devmem_ptr + pa, len);
        }
        *space = NPU_SPACE_DEVICE;
        return 0;
    }
    if (npu_phys_rw(s, pa, buf, len, is_write) != MEMTX_OK) {
        return NPU_ERR_BAD_DMA;
    }
    *space = NPU_SPACE_HOST;
    return 0;
}

/*
 * Write len bytes at va page by page; a page that cannot be written fails
 * the launch. Returns the bytes written before it.
 */
static uint64_t npu_cu_write_pages(NpuState *s, NpuLaunch *l, uint64_t va,
                                   const void *buf, uint64_t len)
{
    const uint8_t *p = buf;
    uint64_t done = 0;
    int space;

    while (done < len) {
        unsigned n = MIN(len - done,
                         NPU_PAGE_SIZE - ((va + done) & (NPU_PAGE_SIZE - 1)));
        uint32_t code = npu_cu_vm_rw(s, l, va + done, (void *)(p + done), n,
                                     true, &space, NULL);

        if (code) {
            npu_cu_fail(l, code, va + done, NULL, 0);
            break;
        }
        done += n;
    }
    return done;
}

/* Larger transfers for the device's own records (stats, traces, printf). */
bool npu_cu_write(NpuState *s, NpuLaunch *l, uint64_t va,
                         const void *buf, uint64_t len)
{
    return npu_cu_write_pages(s, l, va, buf, len) == len;
}

/*
 * Write l's staged trace records (npu_cu_trace). A page that fails now
 * fails the launch as npu_cu_write does, and the records from that page
 * on are not counted, as if each had been written on its own.
 */
void npu_trace_flush(NpuState *s, NpuLaunch *l)
{
    uint64_t first = l->st.trace_records - l->trace_staged;
    uint64_t bytes = l->trace_staged * sizeof(l->trace_stage[0]);
    uint64_t va = l->trace_va + sizeof(struct npu_cu_trace_header) +
                  first * sizeof(l->trace_stage[0]);
    uint64_t done = npu_cu_write_pages(s, l, va, l->trace_stage, bytes);

    l->trace_staged = 0;
    if (done < bytes) {
        l->st.trace_records = first + done / sizeof(l->trace_stage[0]);
    }
}

/* The local windows: scratchpad, stack, params. NULL if va is not in one. */
static uint8_t *npu_cu_local(NpuExec *x, uint64_t va, unsigned size,
                             bool is_write, uint32_t *code, int *space)
{
    uint64_t win = va & ~(NPU_LOCAL_WINDOW - 1), off = va - win;
    uint64_t limit;
    uint8_t *base;
    int sp = npu_cu_window(x, win, &base, &limit);

    *code = 0;
    if (sp >= 0) {
        *space = sp;
    } else if (win == NPU_LOCAL_PARAMS && !is_write) {
        base = x->l->params;
        limit = x->l->nargs * 8;
        *space = NPU_SPACE_STACK;
    } else {
        *code = win == NPU_LOCAL_PARAMS ? NPU_ERR_CU_LOCAL_RANGE
                                        : NPU_ERR_MMU_FAULT;
        return NULL;
    }
    if (off + size > limit) {
        *code = NPU_ERR_CU_LOCAL_RANGE;
        return NULL;
    }
    return base + off;
}

/*
 * A store to the physical key phys breaks the LR reservations other
 * threads hold on its 8-byte granule: any unit, any launch, any context
 * that maps the same memory, through whatever VA. A store to the same VA
 * in another context (another page) does not.
 */
static void npu_cu_break_reservations(NpuExec *x, uint64_t phys)
{
    NpuState *s = x->s;
    unsigned i, k;

    for (i = 0; i < s->n_cus; i++) {
        NpuUnit *u = &s->cu->unit[i];

        for (k = 0; k < u->nlive; k++) {
            NpuSlot *t = &u->slot[u->live[k]];

            if (t != x->t && t->h.reserved &&
                !((t->reserved_phys ^ phys) & ~7ull)) {
                t->h.reserved = false;
                s->cu->nreserved--;
            }
        }
    }
}

/*
 * A write of len bytes from the physical key phys that is not one
 * thread's store (a tile store, a tile DMA copy, a barrier word's count):
 * it breaks the reservations of every thread on the granules it covers.
 */
void npu_cu_break_range(NpuState *s, uint64_t phys, uint64_t len)
{
    uint64_t first = phys & ~7ull, last = (phys + len - 1) & ~7ull;
    unsigned i, k;

    if (!s->cu->nreserved || !len) {
        return;
    }
    for (i = 0; i < s->n_cus; i++) {
        NpuUnit *u = &s->cu->unit[i];

        for (k = 0; k < u->nlive; k++) {
            NpuSlot *t = &u->slot[u->live[k]];
            uint64_t g = t->reserved_phys & ~7ull;

            if (t->h.reserved && g >= first && g <= last) {
                t->h.reserved = false;
                s->cu->nreserved--;
            }
        }
    }
}

static uint32_t npu_cu_access(NpuExec *x, uint64_t va, unsigned size,
                              uint64_t *val, bool is_write)
{
    uint64_t vpn = va >> NPU_PAGE_SHIFT;
    const NpuDtlb *e = &x->l->dtlb[vpn % NPU_DTLB];
    uint8_t buf[8];
    uint32_t code;

    /*
     * A device-memory page the launch's translation cache holds: a
     * compare and an add (the access is within the page: aligned).
     */
    if (e->vpn == vpn && e->host &&
        (!is_write || (e->pte & NPU_PTE_WRITE)) && !x->s->cu->nreserved) {
        uint64_t off = va & (NPU_PAGE_SIZE - 1);

        x->space = NPU_SPACE_DEVICE;
        x->phys = ((e->pte & NPU_PTE_ADDR_MASK) + off) | NPU_PHYS_DEVMEM;
        if (is_write) {
            stn_le_p(e->host + off, size, *val);
            x->l->st.bytes_written[NPU_SPACE_DEVICE] += size;
        } else {
            *val = ldn_le_p(e->host + off, size);
            x->l->st.bytes_read[NPU_SPACE_DEVICE] += size;
        }
        return 0;
    }
    if (va >> NPU_VA_BITS) {
        uint8_t *p = npu_cu_local(x, va, size, is_write, &code, &x->space);

        if (!p) {
            return code;
        }
        x->phys = NPU_PHYS_LOCAL | (uintptr_t)p;
        if (is_write) {
            stn_le_p(p, size, *val);
            if (x->s->cu->nreserved) {
                npu_cu_break_reservations(x, x->phys);
            }
        } else {
            *val = ldn_le_p(p, size);
        }
    } else if (is_write) {
        stn_le_p(buf, size, *val);
        code = npu_cu_vm_rw(x->s, x->l, va, buf, size, true, &x->space,
                            &x->phys);
        if (code) {
            return code;
        }
        if (x->s->cu->nreserved) {
            npu_cu_break_reservations(x, x->phys);
        }
    } else {
        code = npu_cu_vm_rw(x->s, x->l, va, buf, size, false, &x->space,
                            &x->phys);
        if (code) {
            return code;
        }
        *val = ldn_le_p(buf, size);
    }
    if (is_write) {
        x->l->st.bytes_written[x->space] += size;
    } else {
        x->l->st.bytes_read[x->space] += size;
    }
    return 0;
}

static uint32_t npu_cu_load(void *opaque, uint64_t va, unsigned size,
                            uint64_t *val)
{
    return npu_cu_access(opaque, va, size, val, false);
}

static uint32_t npu_cu_store(void *opaque, uint64_t va, unsigned size,
                             uint64_t val)
{
    return npu_cu_access(opaque, va, size, &val, true);
}

static bool npu_cu_csr_read(void *opaque, unsigned csr, uint64_t *val)
{
    NpuExec *x = opaque;
    NpuSlot *t = x->t;
    NpuLaunch *l = x->l;

    switch (csr) {
    case 0xc00:                 /* cycle */
        *val = x->cycle;
        return true;
    case 0xc01:                 /* time */
        *val = npu_clock(x->s);
        return true;
    case NPU_CSR_BLOCK_X:
        *val = t->blk->bx;
        return true;
    case NPU_CSR_BLOCK_Y:
        *val = t->blk->by;
        return true;
    case NPU_CSR_BLOCK_Z:
        *val = t->blk->bz;
        return true;
    case NPU_CSR_GRID_X:
    case NPU_CSR_GRID_Y:
    case NPU_CSR_GRID_Z:
        *val = l->grid[csr - NPU_CSR_GRID_X];
        return true;
    case NPU_CSR_THREAD_X:
        *val = t->tx;
        return true;
    case NPU_CSR_THREAD_Y:
        *val = t->ty;
        return true;
    case NPU_CSR_THREAD_Z:
        *val = t->tz;
        return true;
    case NPU_CSR_BDIM_X:
    case NPU_CSR_BDIM_Y:
    case NPU_CSR_BDIM_Z:
        *val = l->bdim[csr - NPU_CSR_BDIM_X];
        return true;
    case NPU_CSR_UNIT:
        *val = x->u - x->s->cu->unit;
        return true;
    case NPU_CSR_SLOT:
        *val = t - x->u->slot;
        return true;
    case NPU_CSR_SCRATCH_BYTES:
        *val = l->scratch;
        return true;
    case NPU_CSR_STACK_BYTES:
        *val = l->stack;
        return true;
    case NPU_CSR_NARGS:
        *val = l->nargs;
        return true;
    default:
        return false;
    }
}

/* NPU_CSR_PRINTF: append the thread's record to the launch's buffer. */
static uint32_t npu_cu_printf(NpuExec *x, uint64_t va)
{
    NpuLaunch *l = x->l;
    uint8_t rec[sizeof(struct npu_printf_record) + NPU_PRINTF_MAX_RECORD];
    struct npu_printf_record *h = (void *)rec;
    uint64_t v, off;
    uint32_t bytes, code, i;

    if (va & 7) {
        return NPU_ERR_CU_MISALIGNED;
    }
    code = npu_cu_load(x, va, 4, &v);
    if (code) {
        return code;
    }
    bytes = v;
    if (bytes < 8 || bytes > NPU_PRINTF_MAX_RECORD || bytes % 8) {
        return NPU_ERR_BAD_ARGS;
    }
    for (i = 0; i < bytes; i += 8) {
        code = npu_cu_load(x, va + i, 8, &v);
        if (code) {
            return code;
        }
        stq_le_p(rec + sizeof(*h) + i, v);
    }
    if (!l->printf_va) {
        return 0;
    }
    off = sizeof(struct npu_printf_header) + l->printf_used;
    if (off + sizeof(*h) + bytes > l->printf_bytes) {
        l->st.printf_lost++;
        return 0;
    }
    h->bytes = cpu_to_le32(sizeof(*h) + bytes);
    h->block = cpu_to_le32(x->t->blk->idx);
    h->thread = cpu_to_le32(x->t->tid);
    h->reserved = 0;
    if (!npu_cu_write(x->s, l, l->printf_va + off, rec, sizeof(*h) + bytes)) {
        return l->err.code;
    }
    l->printf_used += sizeof(*h) + bytes;
    l->st.printf_records++;
    return 0;
}

static uint32_t npu_cu_csr_write(void *opaque, unsigned csr, uint64_t val)
{
    NpuExec *x = opaque;

    switch (csr) {
    case NPU_CSR_BARRIER:
        x->barrier = true;
        return 0;
    case NPU_CSR_PRINTF:
        return npu_cu_printf(x, val);
    default:
        return NPU_ERR_CU_ILLEGAL;
    }
}

const NpuRvOps npu_cu_ops = {
    .load = npu_cu_load,
    .store = npu_cu_store,
    .csr_read = npu_cu_csr_read,
    .csr_write = npu_cu_csr_write,
};
