/*
 * npu - virtual NPU PCI device: the compute units' tensor engine and tile
 * DMA.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Per thread, the tile registers and their scoreboard; per unit, the
 * tensor pipe, the tile port and the tile DMA engine with its copies in
 * flight (Documentation/hw/npu.rst, "Tensor engine and tile DMA"). The
 * arithmetic is npu_tensor.c's; memory goes through npu_cu_hart.c. A
 * copy moves its bytes when it issues (the spec leaves the destination
 * unspecified until it completes) and is counted on its barrier, or
 * reports its fault, at its completion cycle: npu_cu_tdma_retire, which
 * the cycle model calls before every instruction that can see it. Runs
 * on the npu-cu thread.
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "npu_cu_state.h"
#include "npu_cu_hart.h"
#include "npu_cu_tensor.h"
#include "trace.h"

static unsigned npu_tew_cycles(unsigned op)
{
    return op == NPU_TEW_EXP || op == NPU_TEW_RCP ? 64 : 16;
}

/* Does TEW op read tb? */
static bool npu_tew_binary(unsigned op)
{
    return op < NPU_TEW_RELU;
}

static NpuTile *npu_slot_tiles(NpuSlot *t)
{
    if (!t->tiles) {
        t->tiles = g_new0(NpuTile, NPU_TILE_REGS);
    }
    return t->tiles;
}

/* Is the 8-byte barrier word at va in the block's scratchpad? */
static bool npu_tdma_barrier_ok(const NpuLaunch *l, uint64_t va,
                                uint32_t *code)
{
    if (va & 7) {
        *code = NPU_ERR_CU_MISALIGNED;
        return false;
    }
    if (va < NPU_LOCAL_SCRATCH || l->scratch < 8 ||
        va - NPU_LOCAL_SCRATCH > l->scratch - 8) {
        *code = NPU_ERR_CU_LOCAL_RANGE;
        return false;
    }
    return true;
}

/*
 * TDMA.WAIT's release: the cycle at which the copies in flight bring the
 * count of t's barrier word at off to target (now if it is there),
 * UINT64_MAX if they do not.
 */
static uint64_t npu_tdma_release(const NpuUnit *u, const NpuSlot *t,
                                 uint64_t off, uint32_t target, uint64_t now)
{
    uint32_t count = ldl_le_p(t->blk->scratch + off);
    unsigned i;

    if ((int32_t)(count - target) >= 0) {
        return now;
    }
    for (i = 0; i < u->ntdma; i++) {
        const NpuTdma *m = &u->tdma[i];

        if (m->blk == t->blk && m->barrier_off == off && !m->err &&
            (int32_t)(++count - target) >= 0) {
            return MAX(now, m->done);
        }
    }
    return UINT64_MAX;
}

uint64_t npu_cu_tensor_ready(const NpuUnit *u, const NpuSlot *t,
                             const NpuRvInsn *d, uint64_t when, uint8_t *why)
{
    uint8_t tiles[3];
    unsigned n = 0, i;
    bool accumulates = false;

    switch (d->op) {
    case RV_TDMA_ISSUE:
        if (u->ntdma == NPU_TDMA_INFLIGHT && u->tdma[0].done > when) {
            *why = NPU_STALL_MIO_THROTTLE;
            return u->tdma[0].done;
        }
        return when;
    case RV_TDMA_WAIT: {
        uint64_t va = t->h.x[d->rs1], at;
        uint32_t code;

        if (!npu_tdma_barrier_ok(t->l, va, &code)) {
            return when;                /* it faults when it issues */
        }
        at = npu_tdma_release(u, t, va - NPU_LOCAL_SCRATCH,
                              t->h.x[d->rs2], when);
        if (at > when) {
            *why = NPU_STALL_LONG_SCOREBOARD;
        }
        return at;
    }
    case RV_TLOAD:
    case RV_TFILL:
    case RV_TSTORE:
        tiles[n++] = d->rd;
        break;
    case RV_TMMA:
        tiles[n++] = d->rs1;
        tiles[n++] = d->rs2;
        /* the array keeps the accumulator of the TMMA before it */
        accumulates = u->mma_slot == t && u->mma_tc == d->rd &&
                      u->mma_type == d->funct7;
        if (!accumulates) {
            tiles[n++] = d->rd;
        }
        break;
    default:                            /* RV_TEW */
        tiles[n++] = d->rs1;
        if (npu_tew_binary(d->funct7)) {
            tiles[n++] = d->rs2;
        }
        tiles[n++] = d->rd;
        break;
    }
    for (i = 0; i < n; i++) {
        if (t->tile_ready[tiles[i]] > when) {
            when = t->tile_ready[tiles[i]];
            *why = t->tile_why[tiles[i]];
        }
    }
    if ((d->op == RV_TMMA || d->op == RV_TEW) && u->tensor_free > when) {
        when = u->tensor_free;
        *why = NPU_STALL_MATH_PIPE_THROTTLE;
    }
    if ((d->op == RV_TLOAD || d->op == RV_TSTORE) && u->port_free > when) {
        when = u->port_free;
        *why = NPU_STALL_MIO_THROTTLE;
    }
    return when;
}

/* Tile td is written by an instruction other than a TMMA into it. */
static void npu_tile_written(NpuUnit *u, NpuSlot *t, unsigned td,
                             uint64_t ready, uint8_t why)
{
    if (u->mma_slot == t && u->mma_tc == td) {
        u->mma_slot = NULL;
    }
    t->tile_ready[td] = MAX(t->tile_ready[td], ready);
    t->tile_why[td] = why;
}

/* The local window bytes [va, va + len) of thread t, or NULL. */
static uint8_t *npu_tdma_local(const NpuExec *x, uint64_t va, uint64_t len)
{
    uint64_t win = va & ~(NPU_LOCAL_WINDOW - 1), off = va - win, limit;
    uint8_t *base;

    if (npu_cu_window(x, win, &base, &limit) < 0) {
        return NULL;
    }
    return limit >= len && off <= limit - len ? base + off : NULL;
}

/* Row (p, r) of a copy on each side */
static uint64_t npu_tdma_mem_row(const struct npu_tdma_desc *dc, uint64_t p,
                                 uint64_t r)
{
    return dc->mem + p * dc->mem_stride[1] + r * dc->mem_stride[0];
}

static uint64_t npu_tdma_scratch_row(const struct npu_tdma_desc *dc,
                                     uint64_t p, uint64_t r)
{
    return dc->scratch + p * dc->scratch_stride[1] +
           r * dc->scratch_stride[0];
}

/*
 * The checks at TDMA.ISSUE after the descriptor's own: every row's
 * scratchpad side, then every row's memory side, in copy order.
 */
static uint32_t npu_tdma_check_rows(const NpuLaunch *l,
                                    const struct npu_tdma_desc *dc,
                                    uint64_t *fault)
{
    uint64_t n = dc->size[0], p, r;

    for (p = 0; p < dc->size[2]; p++) {
        for (r = 0; r < dc->size[1]; r++) {
            uint64_t a = npu_tdma_scratch_row(dc, p, r);

            if (a >= NPU_LOCAL_SCRATCH && n <= l->scratch &&
                a - NPU_LOCAL_SCRATCH <= l->scratch - n) {
                continue;
            }
            /* the first byte outside: the row's, or the end's */
            *fault = a >= NPU_LOCAL_SCRATCH &&
                     a - NPU_LOCAL_SCRATCH < l->scratch ?
                     NPU_LOCAL_SCRATCH + l->scratch : a;
            return NPU_ERR_CU_LOCAL_RANGE;
        }
    }
    for (p = 0; p < dc->size[2]; p++) {
        for (r = 0; r < dc->size[1]; r++) {
            uint64_t a = npu_tdma_mem_row(dc, p, r);

            if (a < (1ull << NPU_VA_BITS) && (1ull << NPU_VA_BITS) - a >= n) {
                continue;
            }
            *fault = a < (1ull << NPU_VA_BITS) ? 1ull << NPU_VA_BITS : a;
            return NPU_ERR_MMU_FAULT;
        }
    }
    return 0;
}

/*
 * The L2's sectors of device memory [phys, phys + len) that a copy of
 * launch l reads: how many it serves (present, in a line l brought in).
 * A missing sector is brought in (its line in place of its set's least
 * recently used, if the line is missing too); a miss fills only the
 * sectors read, as a GPU's sectored L2 does.
 */
static uint64_t npu_l2_read(NpuCuState *cs, const NpuLaunch *l,
                            uint64_t phys, uint64_t len)
{
    uint64_t sec = phys / NPU_SECTOR, end = (phys + len - 1) / NPU_SECTOR;
    uint64_t hits = 0;

    while (sec <= end) {
        uint64_t line = sec * NPU_SECTOR / NPU_L2_LINE;
        uint64_t next = (line + 1) * (NPU_L2_LINE / NPU_SECTOR);
        uint64_t n = MIN(end + 1, next) - sec;
        uint8_t want = ((1u << n) - 1) << (sec % (NPU_L2_LINE / NPU_SECTOR));
        /* a multiplicative hash: strided rows spread over the sets */
        uint64_t set = (line * 0x9e3779b97f4a7c15ull) >> (64 - cs->l2_set_bits);
        NpuL2Line *w = &cs->l2[set * NPU_L2_WAYS], *victim = w;
        unsigned i;

        cs->l2_clock++;
        for (i = 0; i < NPU_L2_WAYS; i++) {
            if (w[i].launch == l->l2_id && w[i].line == line) {
                break;
            }
            if (w[i].used < victim->used) {
                victim = &w[i];
            }
        }
        if (i < NPU_L2_WAYS) {
            w[i].used = cs->l2_clock;
            hits += ctpop8(w[i].sectors & want);
            w[i].sectors |= want;
        } else {
            *victim = (NpuL2Line) {
                .line = line, .launch = l->l2_id, .used = cs->l2_clock,
                .sectors = want,
            };
        }
        sec += n;
    }
    return hits;
}

/*
 * Move the copy's bytes now, through the launch's context. Returns 0 or
 * the first memory-side fault (its VA in *fault); counts its memory-side
 * sectors and whether the first byte is in host memory (*host).
 */
static uint32_t npu_tdma_move(NpuExec *x, const struct npu_tdma_desc *dc,
                              uint64_t *sectors, uint64_t *l2_hits,
                              bool *host, uint64_t *fault)
{
    NpuState *s = x->s;
    NpuLaunch *l = x->l;
    bool to_mem = dc->flags & NPU_TDMA_TO_MEM;
    uint64_t n = dc->size[0], p, r;
    bool first = true;

    *sectors = 0;
    *l2_hits = 0;
    *host = false;
    for (p = 0; p < dc->size[2]; p++) {
        for (r = 0; r < dc->size[1]; r++) {
            uint64_t va = npu_tdma_mem_row(dc, p, r);
            uint8_t *sp = x->t->blk->scratch +
                          (npu_tdma_scratch_row(dc, p, r) - NPU_LOCAL_SCRATCH);
            uint64_t done = 0;

            *sectors += (va + n - 1) / NPU_SECTOR - va / NPU_SECTOR + 1;
            while (done < n) {
                uint64_t a = va + done;
                unsigned len = MIN(n - done,
                                   NPU_PAGE_SIZE - (a & (NPU_PAGE_SIZE - 1)));
                uint64_t phys;
                int space;
                uint32_t code = npu_cu_vm_rw(s, l, a, sp + done, len, to_mem,
                                             &space, &phys);

                if (code) {
                    *fault = a;
                    return code;
                }
                if (first) {
                    *host = space == NPU_SPACE_HOST;
                    first = false;
                }
                if (to_mem) {
                    npu_cu_break_range(s, phys, len);
                    l->tdma_bytes_written += len;
                } else {
                    if (s->cu->l2 && space == NPU_SPACE_DEVICE && !*host) {
                        *l2_hits += npu_l2_read(s->cu, l, phys, len);
                    }
                    npu_cu_break_range(s, NPU_PHYS_LOCAL |
                                       (uintptr_t)(sp + done), len);
                    l->tdma_bytes_read += len;
                }
                done += len;
            }
        }
    }
    return 0;
}

static uint32_t npu_tdma_issue(NpuExec *x, uint64_t va, uint64_t *fault)
{
    NpuState *s = x->s;
    NpuUnit *u = x->u;
    NpuSlot *t = x->t;
    NpuLaunch *l = x->l;
    struct npu_tdma_desc dc;
    const uint8_t *dp;
    uint64_t sectors = 0, hits = 0, start, per, per_l2, last, lat, *chan;
    uint32_t code, err = 0;
    bool host = false;
    NpuTdma *m;
    unsigned i;

    *fault = va;
    if (va & 7) {
        return NPU_ERR_CU_MISALIGNED;
    }
    dp = npu_tdma_local(x, va, sizeof(dc));
    if (!dp) {
        return NPU_ERR_CU_LOCAL_RANGE;
    }
    dc.mem = ldq_le_p(dp);
    dc.scratch = ldq_le_p(dp + 8);
    dc.barrier = ldq_le_p(dp + 16);
    dc.mem_stride[0] = ldq_le_p(dp + 24);
    dc.mem_stride[1] = ldq_le_p(dp + 32);
    dc.scratch_stride[0] = ldl_le_p(dp + 40);
    dc.scratch_stride[1] = ldl_le_p(dp + 44);
    for (i = 0; i < 3; i++) {
        dc.size[i] = ldl_le_p(dp + 48 + 4 * i);
    }
    dc.flags = ldl_le_p(dp + 60);
    if ((dc.flags & ~NPU_TDMA_TO_MEM) ||
        (uint64_t)dc.size[1] * dc.size[2] > NPU_TDMA_MAX_ROWS) {
        *fault = t->h.pc;
        return NPU_ERR_BAD_ARGS;
    }
    *fault = dc.barrier;
    if (!npu_tdma_barrier_ok(l, dc.barrier, &code)) {
        return code;
    }
    if (!dc.size[0] || !dc.size[1] || !dc.size[2]) {
        dc.size[0] = dc.size[1] = dc.size[2] = 0;   /* nothing, unchecked */
    } else {
        code = npu_tdma_check_rows(l, &dc, fault);
        if (code) {
            return code;
        }
        err = npu_tdma_move(x, &dc, &sectors, &hits, &host, fault);
    }

    /*
     * The engine sends one sector per slot of the unit's share of the
     * memory (or link) bandwidth, after the copy before it, on the same
     * share as the threads' requests; the sectors the L2 serves go on the
     * unit's share of the L2's bandwidth, beside them.
     */
    if (host) {
        chan = &u->host_free;
        per = npu_sector_slot(s, s->link_bw);
        lat = NPU_LAT_HOST;
    } else {
        chan = &u->dev_free;
        per = npu_sector_slot(s, s->mem_bw);
        lat = NPU_LAT_DEVICE;
    }
    per_l2 = npu_sector_slot(s, s->l2_bw);
    start = MAX(x->cycle, u->tdma_sent) << 8;
    last = start;
    if (sectors && s->cu->l2 && !host && (dc.flags & NPU_TDMA_TO_MEM)) {
        /*
         * The L2 takes the write in at its share; writing it back takes
         * the device-memory share after it, which the copy does not wait
         * for (the unit's later device-memory sectors do).
         */
        uint64_t first = MAX(start, u->l2_free);

        u->l2_free = first + sectors * per_l2;
        last = u->l2_free - per_l2;
        *chan = MAX(*chan, first) + sectors * per;
    } else if (sectors > hits) {
        uint64_t first = MAX(start, *chan);

        last = first + (sectors - hits - 1) * per;
        *chan = last + per;
    }
    if (hits) {
        uint64_t first = MAX(start, u->l2_free);

        u->l2_free = first + hits * per_l2;
        last = MAX(last, u->l2_free - per_l2);
        l->l2_hit_sectors += hits;
    }
    u->tdma_sent = last >> 8;
    /* npu_cu_tensor_ready held the issue while 4 were in flight */
    assert(u->ntdma < NPU_TDMA_INFLIGHT);
    u->tdma_changes++;
    m = &u->tdma[u->ntdma++];
    *m = (NpuTdma) {
        .l = l, .blk = t->blk, .barrier_off = dc.barrier - NPU_LOCAL_SCRATCH,
        .err = err, .fault = *fault, .pc = t->h.pc, .tid = t->tid,
        /* in issue order: never before the copy ahead of it */
        .done = MAX((last >> 8) + lat, u->ntdma > 1 ? m[-1].done : 0),
    };
    l->tdma_copies++;
    trace_npu_cu_tdma_issue(u - s->cu->unit, dc.mem, dc.scratch,
                            (uint64_t)dc.size[0] * dc.size[1] * dc.size[2],
                            dc.flags, sectors, hits, m->done);
    return 0;
}

/* A copy's memory-side fault ends its launch: FAULT_PC = the TDMA.ISSUE */
static void npu_tdma_fault(NpuState *s, NpuUnit *u, const NpuTdma *m)
{
    NpuLaunch *l = m->l;

    if (l->failed) {
        return;
    }
    npu_cu_fail(l, m->err, m->fault, NULL, 0);
    l->err.cu = true;
    l->err.pc = m->pc;
    l->err.block = m->blk->idx;
    l->err.thread = m->tid;
    l->err.unit = u - s->cu->unit;
}

NpuLaunch *npu_cu_tdma_retire(NpuState *s, NpuUnit *u, uint64_t c)
{
    while (u->ntdma && u->tdma[0].done <= c) {
        NpuTdma m = u->tdma[0];

        u->ntdma--;
        u->tdma_changes++;
        memmove(&u->tdma[0], &u->tdma[1], u->ntdma * sizeof(u->tdma[0]));
        if (m.l->failed || m.l->cancel) {
            continue;
        }
        if (m.err) {
            npu_tdma_fault(s, u, &m);
            return m.l;
        } else {
            uint8_t *w = m.blk->scratch + m.barrier_off;

            stl_le_p(w, ldl_le_p(w) + 1);
            npu_cu_break_range(s, NPU_PHYS_LOCAL | (uintptr_t)w, 4);
        }
    }
    return NULL;
}

uint64_t npu_cu_tdma_block_busy(const NpuUnit *u, const NpuBlock *b)
{
    uint64_t last = 0;
    unsigned i;

    for (i = 0; i < u->ntdma; i++) {
        if (u->tdma[i].blk == b) {
            last = MAX(last, u->tdma[i].done);
        }
    }
    return last;
}

void npu_cu_tensor_block_gone(NpuState *s, NpuUnit *u, NpuBlock *b)
{
    unsigned i, k = 0;

    for (i = 0; i < s->cu_threads; i++) {
        NpuSlot *t = &u->slot[i];

        if (t->blk == b) {
            g_free(t->tiles);
            t->tiles = NULL;
            if (u->mma_slot == t) {
                u->mma_slot = NULL;
            }
        }
    }
    for (i = 0; i < u->ntdma; i++) {
        NpuTdma *m = &u->tdma[i];

        if (m->blk != b) {
            u->tdma[k++] = *m;
            continue;
        }
        u->tdma_changes++;
        if (!m->l->failed && !m->l->cancel) {
            m->l->last_cycle = MAX(m->l->last_cycle, m->done);
            if (m->err) {
                npu_tdma_fault(s, u, m);
            }
        }
    }
    u->ntdma = k;
}

uint32_t npu_cu_tensor_exec(NpuExec *x, const NpuRvInsn *d, uint64_t *fault,
                            uint64_t *maddr)
{
    NpuUnit *u = x->u;
    NpuSlot *t = x->t;
    NpuLaunch *l = x->l;
    NpuRvHart *h = &t->h;
    uint64_t c = x->cycle, a = h->x[d->rs1], b = h->x[d->rs2];
    NpuTile *tiles;
    uint32_t code;
    unsigned busy;

    *maddr = 0;
    switch (d->op) {
    case RV_TLOAD:
    case RV_TSTORE: {
        bool store = d->op == RV_TSTORE;
        uint64_t bytes = NPU_TILE_CELLS << (d->funct7 & 3);
        uint64_t port = bytes / NPU_TILE_PORT_BYTES;

        *maddr = a;
        code = npu_tensor_tile_mem(&npu_slot_tiles(t)[d->rd], store,
                                   t->blk->scratch, l->scratch, a, b,
                                   d->funct7, fault);
        if (code) {
            return code;
        }
        if (store) {
            l->st.bytes_written[NPU_SPACE_SCRATCH] += bytes;
            if (x->s->cu->nreserved) {
                unsigned r;

                for (r = 0; r < NPU_TILE_DIM; r++) {
                    npu_cu_break_range(x->s, NPU_PHYS_LOCAL |
                        (uintptr_t)(t->blk->scratch +
                                    (a + r * b - NPU_LOCAL_SCRATCH)),
                        bytes / NPU_TILE_DIM);
                }
            }
        } else {
            l->st.bytes_read[NPU_SPACE_SCRATCH] += bytes;
            npu_tile_written(u, t, d->rd, c + port + NPU_LAT_TENSOR_EXTRA,
                             NPU_STALL_SHORT_SCOREBOARD);
        }
        u->port_free = c + port;
        break;
    }
    case RV_TFILL:
        npu_tensor_fill(&npu_slot_tiles(t)[d->rd], a, d->funct7);
        npu_tile_written(u, t, d->rd, c + NPU_LAT_TFILL, NPU_STALL_WAIT);
        break;
    case RV_TMMA:
        tiles = npu_slot_tiles(t);
        npu_tensor_mma(&tiles[d->rd], &tiles[d->rs1], &tiles[d->rs2],
                       d->funct7);
        busy = NPU_MMA_CYCLES(d->funct7);
        u->tensor_free = c + busy;
        t->tile_ready[d->rd] = MAX(t->tile_ready[d->rd],
                                   c + busy + NPU_LAT_TENSOR_EXTRA);
        t->tile_why[d->rd] = NPU_STALL_WAIT;
        u->mma_slot = t;
        u->mma_tc = d->rd;
        u->mma_type = d->funct7;
        l->tensor_cycles += busy;
        l->mma[d->funct7]++;
        break;
    case RV_TEW:
        tiles = npu_slot_tiles(t);
        npu_tensor_tew(&tiles[d->rd], &tiles[d->rs1], &tiles[d->rs2],
                       d->funct7);
        busy = npu_tew_cycles(d->funct7);
        u->tensor_free = c + busy;
        u->mma_slot = NULL;
        npu_tile_written(u, t, d->rd, c + busy + NPU_LAT_TENSOR_EXTRA,
                         NPU_STALL_WAIT);
        l->tensor_cycles += busy;
        break;
    case RV_TDMA_ISSUE:
        *maddr = a;
        code = npu_tdma_issue(x, a, fault);
        if (code) {
            return code;
        }
        break;
    default: {                          /* RV_TDMA_WAIT */
        uint64_t off = a - NPU_LOCAL_SCRATCH;
        uint32_t count;

        *maddr = a;
        *fault = a;
        if (!npu_tdma_barrier_ok(l, a, &code)) {
            return code;
        }
        /* issued once the count is there (npu_cu_tensor_ready) */
        count = ldl_le_p(t->blk->scratch + off);
        if (d->rd) {
            h->x[d->rd] = count;
        }
        l->st.bytes_read[NPU_SPACE_SCRATCH] += 4;
        break;
    }
    }
    h->pc += 4;
    h->instret++;
    return 0;
}
