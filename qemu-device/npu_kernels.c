/*
 * npu - virtual NPU PCI device: LAUNCH of the diagnostic kernels.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * NOP and TEST_SPIN have k = min(blocks, units) blocks hold whole units in
 * the block dispatcher (npu_cu.c), shared with user kernels, for their
 * modelled time; TEST_HANG holds them until a reset; TEST_FAULT faults.
 * They compute nothing: the device's computation is LAUNCH_CODE.
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "npu_base.h"
#include "npu_cu.h"
#include "npu_job.h"
#include "npu_kernels.h"
#include "npu_mmu.h"

#define NPU_SPIN_MAX_NS     10000000000ull      /* 10 s */

/*
 * The device's diagnostic kernels: no compute (the built-in math is code,
 * libnpu's kernel library, since issue 32). Any other id is BAD_KERNEL.
 */
static bool npu_kernel_nargs(uint32_t kernel, uint32_t *nargs)
{
    switch (kernel) {
    case NPU_KERNEL_NOP:
    case NPU_KERNEL_TEST_HANG:
        *nargs = 0;
        return true;
    case NPU_KERNEL_TEST_SPIN:
    case NPU_KERNEL_TEST_FAULT:
        *nargs = 1;
        return true;
    default:
        return false;
    }
}

/* TEST_FAULT reads va, which its test leaves unmapped: a PAGE_FAULT, or
 * KERNEL_FAULT if the read went through. */
static bool npu_kernel_fault(NpuJob *job, uint64_t va, NpuErr *err)
{
    uint32_t w;

    if (!npu_vm_rw(job, va, &w, 4, false, err)) {
        return false;
    }
    err->code = NPU_ERR_KERNEL_FAULT;
    err->addr = va;
    return false;
}

bool npu_launch(NpuJob *job, const uint32_t *p, unsigned ndw,
                uint64_t pkt_addr, NpuErr *err)
{
    NpuRing *r = job->ring;
    NpuState *s = r->s;
    uint32_t kernel, nargs, need, i;
    uint64_t args[NPU_LAUNCH_MAX_ARGS] = { 0 };
    uint64_t blocks, model;
    int64_t t0;
    unsigned k;

    if (ndw < 6) {
        err->code = NPU_ERR_BAD_PACKET;
        err->addr = pkt_addr;
        return false;
    }
    kernel = p[1];
    nargs = p[5];
    if (nargs > NPU_LAUNCH_MAX_ARGS || ndw != 6 + 2 * nargs ||
        !p[2] || !p[3] || !p[4]) {
        err->code = NPU_ERR_BAD_PACKET;
        err->addr = pkt_addr;
        return false;
    }
    blocks = (uint64_t)p[2] * p[3];
    if (blocks > UINT32_MAX || blocks * p[4] > UINT32_MAX) {
        err->code = NPU_ERR_BAD_PACKET;
        err->addr = pkt_addr;
        return false;
    }
    blocks *= p[4];
    for (i = 0; i < nargs; i++) {
        args[i] = ldq_le_p(p + 6 + 2 * i);
    }
    if (!npu_kernel_nargs(kernel, &need)) {
        err->code = NPU_ERR_BAD_KERNEL;
        err->addr = pkt_addr;
        return false;
    }
    if (nargs < need ||
        (kernel == NPU_KERNEL_TEST_SPIN && args[0] > NPU_SPIN_MAX_NS)) {
        err->code = NPU_ERR_BAD_ARGS;
        err->addr = pkt_addr;
        return false;
    }

    k = MIN(blocks, s->n_cus);
    t0 = npu_job_t0(job);
    if (kernel == NPU_KERNEL_TEST_HANG) {
        /* holds its units until the ring is reset */
        npu_cu_run_fixed(job, k, INT64_MAX);
        return true;
    }
    if (kernel == NPU_KERNEL_TEST_FAULT) {
        return npu_kernel_fault(job, args[0], err);
    }
    /* NOP costs the launch overhead, TEST_SPIN that and its ns */
    model = s->timing ? npu_launch_model_ns(job->ring, t0) : 0;
    if (kernel == NPU_KERNEL_TEST_SPIN) {
        model += args[0];
    }
    if (!npu_cu_run_fixed(job, k, model)) {
        return true;            /* reset while holding units */
    }
    if (npu_complete(job, t0, model, kernel == NPU_KERNEL_TEST_SPIN, 0)) {
        npu_launch_done(job->ring);
    }
    return true;
}
