/*
 * npu - virtual NPU PCI device: user queues.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The UQ_* register block of BAR0 and the event ring through which the
 * device reports to the driver (Documentation/hw/npu.rst, "User queues").
 * Register accesses run under the BQL; engine threads post events too, so
 * everything here is under uq.lock.
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/log.h"
#include "qapi/error.h"
#include "npu.h"
#include "trace.h"

bool npu_uq_present(NpuState *s)
{
    return s->uq_n_compute + s->uq_n_copy > 0;
}

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
    if (s->uq_switch_ns > 1000000) {
        error_setg(errp, "npu: uq-switch-ns must be <= 1000000");
        return false;
    }
    if (s->vtime) {
        /* user queues do not take part in the virtual clock yet */
        s->uq_n_compute = 0;
        s->uq_n_copy = 0;
    }
    if (!s->timing) {
        s->uq_switch_ns = 0;
    }
    return true;
}

void npu_uq_realize(NpuState *s)
{
    qemu_mutex_init(&s->uq.lock);
}

void npu_uq_unrealize(NpuState *s)
{
    qemu_mutex_destroy(&s->uq.lock);
}

void npu_uq_reset(NpuState *s)
{
    NpuUqState *uq = &s->uq;

    qemu_mutex_lock(&uq->lock);
    uq->event_base = 0;
    uq->event_size = 0;
    uq->event_head = 0;
    uq->event_tail = 0;
    uq->event_status = 0;
    uq->table_base = 0;
    uq->table_entries = 0;
    uq->cmd_status = 0;
    qemu_mutex_unlock(&uq->lock);
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
void npu_uq_signal_event(NpuRing *r, uint64_t va)
{
    NpuState *s = r->s;

    if (!npu_uq_present(s)) {
        return;
    }
    qemu_mutex_lock(&s->uq.lock);
    npu_uq_post_locked(s, NPU_UQ_EVENT_SIGNAL, r->context,
                       NPU_UQ_EVENT_RING | r->idx, va);
    qemu_mutex_unlock(&s->uq.lock);
}

uint32_t npu_uq_read(NpuState *s, hwaddr addr)
{
    NpuUqState *uq = &s->uq;
    uint32_t v = 0;

    if (!npu_uq_present(s)) {
        return 0;
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
            v = NPU_UQ_ENGINE_IDLE;
        }
        break;
    }
    qemu_mutex_unlock(&uq->lock);
    return v;
}

/* A write to a register that only changes while no queue is mapped. */
static bool npu_uq_config_ok(NpuState *s, hwaddr addr)
{
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
        uq->cmd_status = NPU_ERR_BAD_OPCODE;
        qemu_log_mask(LOG_UNIMP, "npu: UQ_CMD is not implemented yet\n");
        break;
    default:
        qemu_log_mask(LOG_GUEST_ERROR, "npu: write 0x%x to read-only or "
                      "unknown UQ register 0x%" HWADDR_PRIx "\n", val, addr);
        break;
    }
    qemu_mutex_unlock(&uq->lock);
}
