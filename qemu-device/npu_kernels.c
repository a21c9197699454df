/*
 * npu - virtual NPU PCI device: LAUNCH, compute units and built-in kernels.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * A launch copies its operands through the MMU into host buffers, computes,
 * writes the results back, then has k = min(blocks, units) fixed-function
 * blocks hold whole units in the block dispatcher (npu_cu.c), shared with
 * user kernels, until its modelled duration has passed.
 */

#include "qemu/osdep.h"
#include <math.h>
#include "qemu/bswap.h"
#include "qemu/host-utils.h"
#include "qemu/timer.h"
#include "npu_base.h"
#include "npu_cu.h"
#include "npu_job.h"
#include "npu_kernels.h"
#include "npu_mmu.h"

#define NPU_ABORT_MACS      (1u << 16)  /* work between looks at abort */
#define NPU_SPIN_MAX_NS     10000000000ull      /* 10 s */
#define NPU_XENT_MIN_P      1e-30f              /* clamp inside log() */


static bool npu_kernel_nargs(uint32_t kernel, uint32_t *nargs)
{
    static const uint8_t n[] = {
        [NPU_KERNEL_NOP] = 0,
        [NPU_KERNEL_FILL_F32] = 3,
        [NPU_KERNEL_SCALE_F32] = 4,
        [NPU_KERNEL_VADD_F32] = 4,
        [NPU_KERNEL_SAXPY_F32] = 4,
        [NPU_KERNEL_RELU_F32] = 3,
        [NPU_KERNEL_GEMM_F32] = 9,
        [NPU_KERNEL_BIAS_ADD_F32] = 4,
        [NPU_KERNEL_REDUCE_SUM_F32] = 3,
        [NPU_KERNEL_SOFTMAX_F32] = 4,
        [NPU_KERNEL_RELU_GRAD_F32] = 4,
        [NPU_KERNEL_SOFTMAX_XENT_F32] = 6,
        [NPU_KERNEL_COL_SUM_F32] = 4,
        [NPU_KERNEL_ARGMAX_F32] = 4,
    };

    if (kernel < ARRAY_SIZE(n)) {
        *nargs = n[kernel];
        return true;
    }
    switch (kernel) {
    case NPU_KERNEL_TEST_SPIN:
    case NPU_KERNEL_TEST_FAULT:
        *nargs = 1;
        return true;
    case NPU_KERNEL_TEST_HANG:
        *nargs = 0;
        return true;
    default:
        return false;
    }
}

static float npu_f32(uint64_t arg)
{
    uint32_t bits = arg;
    float f;

    memcpy(&f, &bits, 4);
    return f;
}

/* rows * cols within limit (both may be 0) */
static bool npu_dims_ok(uint64_t rows, uint64_t cols, uint64_t limit)
{
    return rows <= limit && cols <= limit && rows * cols <= limit;
}

/* Validate sizes before any unit is taken. */
static bool npu_kernel_args_ok(uint32_t kernel, const uint64_t *a)
{
    switch (kernel) {
    case NPU_KERNEL_FILL_F32:
        return a[1] <= NPU_KERNEL_MAX_ELEMS;
    case NPU_KERNEL_SCALE_F32:
    case NPU_KERNEL_SAXPY_F32:
    case NPU_KERNEL_RELU_F32:
        return a[2] <= NPU_KERNEL_MAX_ELEMS;
    case NPU_KERNEL_VADD_F32:
    case NPU_KERNEL_RELU_GRAD_F32:
        return a[3] <= NPU_KERNEL_MAX_ELEMS;
    case NPU_KERNEL_REDUCE_SUM_F32:
        return a[2] <= NPU_KERNEL_MAX_ELEMS;
    case NPU_KERNEL_GEMM_F32: {
        uint64_t m = a[3], n = a[4], k = a[5];

        return npu_dims_ok(m, k, NPU_KERNEL_GEMM_MAX_ELEMS) &&
               npu_dims_ok(k, n, NPU_KERNEL_GEMM_MAX_ELEMS) &&
               npu_dims_ok(m, n, NPU_KERNEL_GEMM_MAX_ELEMS) &&
               (m * n == 0 || k <= NPU_KERNEL_GEMM_MAX_MACS / (m * n)) &&
               !(a[6] & ~(uint64_t)(NPU_GEMM_TRANS_A | NPU_GEMM_TRANS_B));
    }
    case NPU_KERNEL_BIAS_ADD_F32:
    case NPU_KERNEL_SOFTMAX_F32:
    case NPU_KERNEL_COL_SUM_F32:
    case NPU_KERNEL_ARGMAX_F32:
        return npu_dims_ok(a[2], a[3], NPU_KERNEL_MAX_ELEMS) &&
               (kernel != NPU_KERNEL_ARGMAX_F32 || a[3] || !a[2]);
    case NPU_KERNEL_SOFTMAX_XENT_F32:
        return npu_dims_ok(a[4], a[5], NPU_KERNEL_MAX_ELEMS) && (a[5] || !a[4]);
    case NPU_KERNEL_TEST_SPIN:
        return a[0] <= NPU_SPIN_MAX_NS;
    default:
        return true;
    }
}

/* Load n 32-bit words at va into a new host buffer (host byte order). */
static void *npu_load(NpuJob *job, uint64_t va, uint64_t n, NpuErr *err)
{
    uint32_t *buf = g_try_malloc(n * 4 + 4);
    uint64_t i;

    if (!buf) {
        err->code = NPU_ERR_BAD_ARGS;
        err->addr = va;
        return NULL;
    }
    if (!npu_vm_rw(job, va, buf, n * 4, false, err)) {
        g_free(buf);
        return NULL;
    }
    for (i = 0; i < n; i++) {
        buf[i] = le32_to_cpu(buf[i]);
    }
    return buf;
}

/* Store n 32-bit words from buf (clobbered) at va. */
static bool npu_store(NpuJob *job, uint64_t va, void *buf, uint64_t n,
                      NpuErr *err)
{
    uint32_t *w = buf;
    uint64_t i;

    for (i = 0; i < n; i++) {
        w[i] = cpu_to_le32(w[i]);
    }
    return npu_vm_rw(job, va, buf, n * 4, true, err);
}

static float *npu_alloc(uint64_t n, uint64_t va, NpuErr *err)
{
    float *p = g_try_malloc0(n * 4 + 4);

    if (!p) {
        err->code = NPU_ERR_BAD_ARGS;
        err->addr = va;
    }
    return p;
}

static bool npu_k_gemm(NpuJob *job, const uint64_t *a, NpuErr *err)
{
    uint64_t va_a = a[0], va_b = a[1], va_c = a[2];
    uint64_t m = a[3], n = a[4], k = a[5], i, j, l;
    bool ta = a[6] & NPU_GEMM_TRANS_A, tb = a[6] & NPU_GEMM_TRANS_B;
    float alpha = npu_f32(a[7]), beta = npu_f32(a[8]);
    g_autofree float *A = NULL, *B = NULL, *C = NULL, *opa = NULL;
    g_autofree float *opb = NULL, *acc = NULL;

    if (!m || !n) {
        return true;
    }
    A = npu_load(job, va_a, m * k, err);
    B = A ? npu_load(job, va_b, k * n, err) : NULL;
    if (!B) {
        return false;
    }
    if (beta != 0.0f) {
        C = npu_load(job, va_c, m * n, err);
    } else {
        C = npu_alloc(m * n, va_c, err);
    }
    acc = C ? npu_alloc(n, va_c, err) : NULL;
    if (!acc) {
        return false;
    }
    /* op(A) as M x K and op(B) as K x N, row major */
    if (ta) {
        opa = npu_alloc(m * k, va_a, err);
        if (!opa) {
            return false;
        }
        for (i = 0; i < m; i++) {
            for (l = 0; l < k; l++) {
                opa[i * k + l] = A[l * m + i];
            }
        }
    }
    if (tb) {
        opb = npu_alloc(k * n, va_b, err);
        if (!opb) {
            return false;
        }
        for (l = 0; l < k; l++) {
            for (j = 0; j < n; j++) {
                opb[l * n + j] = B[j * k + l];
            }
        }
    }
    {
        const float *pa = ta ? opa : A, *pb = tb ? opb : B;

        uint64_t since_check = 0;

        for (i = 0; i < m; i++) {
            memset(acc, 0, n * sizeof(float));
            for (l = 0; l < k; l++) {
                float x = pa[i * k + l];
                const float *brow = pb + l * n;

                /* a reset waits for this: look every NPU_ABORT_MACS */
                since_check += n;
                if (since_check >= NPU_ABORT_MACS) {
                    since_check = 0;
                    if (npu_aborted(job->ring)) {
                        return true;
                    }
                }
                for (j = 0; j < n; j++) {
                    acc[j] += x * brow[j];
                }
            }
            for (j = 0; j < n; j++) {
                float c = beta != 0.0f ? beta * C[i * n + j] : 0.0f;

                C[i * n + j] = alpha * acc[j] + c;
            }
        }
    }
    job->ops = 2 * m * n * k + 3 * m * n;
    return npu_store(job, va_c, C, m * n, err);
}

static void npu_softmax_row(const float *x, float *y, uint64_t cols)
{
    float mx = x[0];
    double sum = 0;
    uint64_t c;

    for (c = 1; c < cols; c++) {
        mx = MAX(mx, x[c]);
    }
    for (c = 0; c < cols; c++) {
        y[c] = expf(x[c] - mx);
        sum += y[c];
    }
    for (c = 0; c < cols; c++) {
        y[c] = (float)(y[c] / sum);
    }
}

/* Run the kernel; operands go through the MMU. */
static bool npu_kernel_run(NpuJob *job, uint32_t kernel, const uint64_t *a,
                           NpuErr *err)
{
    g_autofree float *x = NULL, *y = NULL, *z = NULL;
    uint64_t i, n, rows, cols, r, c;

    switch (kernel) {
    case NPU_KERNEL_NOP:
        return true;
    case NPU_KERNEL_FILL_F32: {
        float v = npu_f32(a[2]);

        n = a[1];
        y = npu_alloc(n, a[0], err);
        if (!y) {
            return false;
        }
        for (i = 0; i < n; i++) {
            y[i] = v;
        }
        job->ops = n;
        return npu_store(job, a[0], y, n, err);
    }
    case NPU_KERNEL_SCALE_F32:
    case NPU_KERNEL_SAXPY_F32:
    case NPU_KERNEL_RELU_F32: {
        float s = kernel == NPU_KERNEL_RELU_F32 ? 0 : npu_f32(a[3]);

        n = a[2];
        x = npu_load(job, a[0], n, err);
        if (!x) {
            return false;
        }
        if (kernel == NPU_KERNEL_SAXPY_F32) {
            y = npu_load(job, a[1], n, err);
            if (!y) {
                return false;
            }
            for (i = 0; i < n; i++) {
                y[i] += s * x[i];
            }
            job->ops = 2 * n;
            return npu_store(job, a[1], y, n, err);
        }
        for (i = 0; i < n; i++) {
            x[i] = kernel == NPU_KERNEL_RELU_F32 ? (x[i] > 0 ? x[i] : 0.0f)
                                                 : s * x[i];
        }
        job->ops = n;
        return npu_store(job, a[1], x, n, err);
    }
    case NPU_KERNEL_VADD_F32:
        n = a[3];
        x = npu_load(job, a[0], n, err);
        y = x ? npu_load(job, a[1], n, err) : NULL;
        if (!y) {
            return false;
        }
        for (i = 0; i < n; i++) {
            x[i] += y[i];
        }
        job->ops = n;
        return npu_store(job, a[2], x, n, err);
    case NPU_KERNEL_RELU_GRAD_F32:
        n = a[3];
        x = npu_load(job, a[0], n, err);
        y = x ? npu_load(job, a[1], n, err) : NULL;
        if (!y) {
            return false;
        }
        for (i = 0; i < n; i++) {
            x[i] = y[i] > 0 ? x[i] : 0.0f;
        }
        job->ops = n;
        return npu_store(job, a[2], x, n, err);
    case NPU_KERNEL_GEMM_F32:
        return npu_k_gemm(job, a, err);
    case NPU_KERNEL_BIAS_ADD_F32:
        rows = a[2];
        cols = a[3];
        x = npu_load(job, a[0], rows * cols, err);
        y = x ? npu_load(job, a[1], cols, err) : NULL;
        if (!y) {
            return false;
        }
        for (r = 0; r < rows; r++) {
            for (c = 0; c < cols; c++) {
                x[r * cols + c] += y[c];
            }
        }
        job->ops = rows * cols;
        return npu_store(job, a[0], x, rows * cols, err);
    case NPU_KERNEL_REDUCE_SUM_F32: {
        double sum = 0;

        n = a[2];
        x = npu_load(job, a[0], n, err);
        y = x ? npu_alloc(1, a[1], err) : NULL;
        if (!y) {
            return false;
        }
        for (i = 0; i < n; i++) {
            sum += x[i];
        }
        y[0] = sum;
        job->ops = n;
        return npu_store(job, a[1], y, 1, err);
    }
    case NPU_KERNEL_SOFTMAX_F32:
        rows = a[2];
        cols = a[3];
        x = npu_load(job, a[0], rows * cols, err);
        y = x ? npu_alloc(rows * cols, a[1], err) : NULL;
        if (!y) {
            return false;
        }
        for (r = 0; r < rows; r++) {
            npu_softmax_row(x + r * cols, y + r * cols, cols);
        }
        job->ops = 4 * rows * cols;
        return npu_store(job, a[1], y, rows * cols, err);
    case NPU_KERNEL_SOFTMAX_XENT_F32: {
        g_autofree uint32_t *lab = NULL;
        double loss = 0;

        rows = a[4];
        cols = a[5];
        x = npu_load(job, a[0], rows * cols, err);
        lab = x ? npu_load(job, a[1], rows, err) : NULL;
        y = lab ? npu_alloc(rows * cols, a[2], err) : NULL;
        z = y ? npu_alloc(1, a[3], err) : NULL;
        if (!z) {
            return false;
        }
        for (r = 0; r < rows; r++) {
            float *g = y + r * cols;

            if (lab[r] >= cols) {
                err->code = NPU_ERR_BAD_ARGS;
                err->addr = a[1] + r * 4;
                return false;
            }
            npu_softmax_row(x + r * cols, g, cols);
            loss -= log(MAX(g[lab[r]], NPU_XENT_MIN_P));
            g[lab[r]] -= 1.0f;
            for (c = 0; c < cols; c++) {
                g[c] /= (float)rows;
            }
        }
        z[0] = rows ? loss / rows : 0;
        job->ops = 6 * rows * cols;
        return npu_store(job, a[2], y, rows * cols, err) &&
               npu_store(job, a[3], z, 1, err);
    }
    case NPU_KERNEL_COL_SUM_F32:
        rows = a[2];
        cols = a[3];
        x = npu_load(job, a[0], rows * cols, err);
        y = x ? npu_alloc(cols, a[1], err) : NULL;
        if (!y) {
            return false;
        }
        for (r = 0; r < rows; r++) {
            for (c = 0; c < cols; c++) {
                y[c] += x[r * cols + c];
            }
        }
        job->ops = rows * cols;
        return npu_store(job, a[1], y, cols, err);
    case NPU_KERNEL_ARGMAX_F32: {
        g_autofree uint32_t *out = NULL;

        rows = a[2];
        cols = a[3];
        x = npu_load(job, a[0], rows * cols, err);
        out = x ? (uint32_t *)npu_alloc(rows, a[1], err) : NULL;
        if (!out) {
            return false;
        }
        for (r = 0; r < rows; r++) {
            const float *row = x + r * cols;
            uint32_t best = 0;

            for (c = 1; c < cols; c++) {
                if (row[c] > row[best]) {
                    best = c;
                }
            }
            out[r] = best;
        }
        job->ops = rows * cols;
        return npu_store(job, a[1], out, rows, err);
    }
    case NPU_KERNEL_TEST_SPIN:
        return true;
    case NPU_KERNEL_TEST_HANG:
        return true;            /* the units are held in npu_launch() */
    case NPU_KERNEL_TEST_FAULT: {
        uint32_t w;

        if (!npu_vm_rw(job, a[0], &w, 4, false, err)) {
            return false;
        }
        err->code = NPU_ERR_KERNEL_FAULT;
        err->addr = a[0];
        return false;
    }
    }
    err->code = NPU_ERR_BAD_KERNEL;
    return false;
}

bool npu_launch(NpuJob *job, const uint32_t *p, unsigned ndw,
                uint64_t pkt_addr, NpuErr *err)
{
    NpuRing *r = job->ring;
    NpuState *s = r->s;
    uint32_t kernel, nargs, need, i;
    uint64_t args[NPU_LAUNCH_MAX_ARGS] = { 0 };
    uint64_t blocks, model, compute_ns, mem_ns;
    int64_t t0, hold;
    unsigned k;
    bool ok;

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
    if (nargs < need || !npu_kernel_args_ok(kernel, args)) {
        err->code = NPU_ERR_BAD_ARGS;
        err->addr = pkt_addr;
        return false;
    }

    k = MIN(blocks, s->n_cus);
    t0 = npu_time();
    if (kernel == NPU_KERNEL_TEST_HANG) {
        /* holds its units until the ring is reset */
        npu_cu_run_fixed(job, k, INT64_MAX);
        return true;
    }
    ok = npu_kernel_run(job, kernel, args, err);
    if (!ok || npu_aborted(r)) {
        return ok;
    }
    if (kernel == NPU_KERNEL_TEST_SPIN) {
        model = (s->timing ? s->launch_ns : 0) + args[0];
    } else {
        compute_ns = job->ops / k * 1000 / s->cu_mops;
        mem_ns = npu_bytes_ns(s, job->host_bytes, job->dev_bytes);
        model = s->launch_ns + MAX(compute_ns, mem_ns);
    }
    if (!s->timing && kernel != NPU_KERNEL_TEST_SPIN) {
        model = 0;
    }
    /* the units are held for what the computation left of the model */
    hold = MAX((int64_t)MIN(model, INT64_MAX / 4) -
               (s->vtime ? 0 : npu_time() - t0),
               0);
    if (!npu_cu_run_fixed(job, k, hold)) {
        return true;            /* reset while holding units */
    }
    npu_complete(job, t0, model, kernel == NPU_KERNEL_TEST_SPIN,
                 job->host_bytes + job->dev_bytes);
    return ok;
}
