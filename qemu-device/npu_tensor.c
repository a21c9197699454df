/*
 * npu - virtual NPU PCI device: the tensor engine's arithmetic.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The host's own IEEE arithmetic gives the spec's results: the caller's
 * thread rounds to nearest even (npu_rv_host_rounds_nearest), denormals
 * are kept, and each operation below is one C operation or one fmaf()
 * (no expression the compiler could contract). Only the NaNs differ from
 * the host's, so every float result goes through npu_tensor_canon.
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/bswap.h"
#include <math.h>
#include "npu_tensor.h"
#include "npu_rv.h"

#define DIM                 NPU_TILE_DIM

/* A float result's bits, any NaN as RISC-V's canonical one. */
static inline uint32_t npu_tensor_canon(float v)
{
    return isnan(v) ? RV_CANON_NAN_S : npu_rv_bits_f(v);
}

/* Is [addr, addr + w) inside the scratchpad window's first size bytes? */
static inline bool npu_tensor_in_scratch(uint64_t addr, unsigned w,
                                         uint64_t size)
{
    return addr >= NPU_LOCAL_SCRATCH && size >= w &&
           addr - NPU_LOCAL_SCRATCH <= size - w;
}

uint32_t npu_tensor_tile_mem(NpuTile *t, bool store, uint8_t *base,
                             uint64_t size, uint64_t addr, uint64_t stride,
                             unsigned funct7, uint64_t *fault)
{
    unsigned w = 1u << (funct7 & 3);
    bool trans = funct7 & NPU_TILE_TRANS;
    unsigned r, c;

    if (addr & (w - 1)) {
        *fault = addr;
        return NPU_ERR_CU_MISALIGNED;
    }
    if (stride & (w - 1)) {
        *fault = addr + stride;
        return NPU_ERR_CU_MISALIGNED;
    }
    /* every element first: a faulting instruction changes nothing */
    for (r = 0; r < DIM; r++) {
        uint64_t row = addr + r * stride;

        /* the row's elements are contiguous: check its ends, then each */
        if (npu_tensor_in_scratch(row, w, size) &&
            npu_tensor_in_scratch(row + (DIM - 1) * w, w, size)) {
            continue;
        }
        for (c = 0; c < DIM; c++) {
            if (!npu_tensor_in_scratch(row + c * w, w, size)) {
                *fault = row + c * w;
                return NPU_ERR_CU_LOCAL_RANGE;
            }
        }
    }
    for (r = 0; r < DIM; r++) {
        uint8_t *p = base + (addr - NPU_LOCAL_SCRATCH + r * stride);

        for (c = 0; c < DIM; c++, p += w) {
            uint32_t *cell = trans ? &t->cell[c][r] : &t->cell[r][c];

            if (store) {
                stn_le_p(p, w, *cell);
            } else {
                *cell = ldn_le_p(p, w);
            }
        }
    }
    return 0;
}

void npu_tensor_fill(NpuTile *t, uint64_t value, unsigned esize)
{
    uint32_t v = esize == NPU_TILE_E8 ? (uint8_t)value :
                 esize == NPU_TILE_E16 ? (uint16_t)value : (uint32_t)value;
    unsigned r, c;

    for (r = 0; r < DIM; r++) {
        for (c = 0; c < DIM; c++) {
            t->cell[r][c] = v;
        }
    }
}

uint32_t npu_tensor_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    unsigned e = (h >> 10) & 0x1f, m = h & 0x3ff;

    if (e == 0) {
        /* zero or subnormal: m * 2^-24, exact in f32 (a normal there) */
        return sign | npu_rv_bits_f((float)m / 16777216.0f);
    }
    if (e == 0x1f) {
        return sign | 0x7f800000u | m << 13;
    }
    return sign | (e - 15 + 127) << 23 | m << 13;
}

/* m >> sh rounded to nearest, ties to even (1 <= sh < 32) */
static uint32_t npu_tensor_shift_rne(uint32_t m, unsigned sh)
{
    uint32_t q = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);

    return q + (rem > half || (rem == half && (q & 1)));
}

uint16_t npu_tensor_f32_to_f16(uint32_t x)
{
    uint16_t sign = (x >> 16) & 0x8000;
    uint32_t a = x & 0x7fffffffu, mant = a & 0x7fffff;
    int e = (int)(a >> 23) - 127 + 15;      /* binary16 biased exponent */
    uint32_t h;

    if (a > 0x7f800000u) {
        return 0x7e00;
    }
    if (e >= 31) {
        return sign | 0x7c00;               /* Inf, or beyond 65504 */
    }
    if (e <= 0) {
        /* subnormal: the value in units of 2^-24, rounded */
        unsigned sh = 14 - e;

        if (a < 0x00800000u || sh >= 25) {
            return sign;                    /* below half of 2^-24 */
        }
        return sign | npu_tensor_shift_rne(mant | 0x800000, sh);
    }
    /* a carry out of the mantissa goes into the exponent, up to Inf */
    h = npu_tensor_shift_rne((uint32_t)e << 23 | mant, 13);
    return sign | MIN(h, 0x7c00u);
}

uint16_t npu_tensor_f32_to_bf16(uint32_t x)
{
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return 0x7fc0;
    }
    return (x + 0x7fff + ((x >> 16) & 1)) >> 16;
}

/*
 * e^x, correctly rounded: the host's expl() has 40 more bits than f32, so
 * one more rounding to f32 is the correct one for every input whose
 * result is not within 2^-40 of an f32 rounding boundary (the spec leaves
 * how to the implementation: "Open points").
 */
uint32_t npu_tensor_exp_f32(uint32_t x)
{
    float a = npu_rv_f_of(x);

    if (isnan(a)) {
        return RV_CANON_NAN_S;
    }
    if (isinf(a)) {
        return a > 0 ? x : 0;
    }
    return npu_rv_bits_f((float)expl((long double)a));
}

/* A float TMMA input cell, widened to f32 (exact) */
static inline float npu_tensor_mma_in(uint32_t cell, unsigned type)
{
    switch (type) {
    case NPU_MMA_F16:
        return npu_rv_f_of(npu_tensor_f16_to_f32(cell));
    case NPU_MMA_BF16:
        return npu_rv_f_of(cell << 16);
    default:
        return npu_rv_f_of(cell);
    }
}

/*
 * The float MMA's steps: acc[i][j] = fma(a[i][k], b[k][j], acc[i][j]) for
 * k increasing, one rounding per step; once NaN, NaN. Looping i, k, j
 * keeps every element's order and makes the j loop a row of independent
 * fused multiply-adds: with the host's FMA instructions (checked once)
 * the compiler inlines and vectorises them, where fmaf() is a call per
 * step, most of a GEMM's time on the tensor engine. Same results: both
 * are the IEEE fused multiply-add.
 */
#define NPU_TENSOR_MMA_STEPS(fma)                                       \
    for (unsigned i_ = 0; i_ < DIM; i_++) {                             \
        for (unsigned k_ = 0; k_ < DIM; k_++) {                         \
            for (unsigned j_ = 0; j_ < DIM; j_++) {                     \
                acc[i_][j_] = fma(a[i_][k_], b[k_][j_], acc[i_][j_]);   \
            }                                                           \
        }                                                               \
    }

static void npu_tensor_mma_steps_call(float acc[DIM][DIM],
                                      const float a[DIM][DIM],
                                      const float b[DIM][DIM])
{
    NPU_TENSOR_MMA_STEPS(fmaf)
}

#if defined(__x86_64__) && defined(__GNUC__)
static void __attribute__((target("fma")))
npu_tensor_mma_steps_fma(float acc[DIM][DIM], const float a[DIM][DIM],
                         const float b[DIM][DIM])
{
    NPU_TENSOR_MMA_STEPS(__builtin_fmaf)
}
#endif

static void npu_tensor_mma_steps(float acc[DIM][DIM], const float a[DIM][DIM],
                                 const float b[DIM][DIM])
{
#if defined(__x86_64__) && defined(__GNUC__)
    static int has_fma = -1;    /* units' threads may race: same value */
    int fma = qatomic_read(&has_fma);

    if (fma < 0) {
        __builtin_cpu_init();
        fma = !!__builtin_cpu_supports("fma");
        qatomic_set(&has_fma, fma);
    }
    if (fma) {
        npu_tensor_mma_steps_fma(acc, a, b);
        return;
    }
#endif
    npu_tensor_mma_steps_call(acc, a, b);
}

void npu_tensor_mma(NpuTile *c, const NpuTile *a, const NpuTile *b,
                    unsigned type)
{
    NpuTile out;
    unsigned i, j, k;

    if (type == NPU_MMA_S8 || type == NPU_MMA_S32) {
        for (i = 0; i < DIM; i++) {
            for (j = 0; j < DIM; j++) {
                uint32_t acc = c->cell[i][j];

                for (k = 0; k < DIM; k++) {
                    uint32_t x = a->cell[i][k], y = b->cell[k][j];

                    if (type == NPU_MMA_S8) {
                        x = (uint32_t)(int32_t)(int8_t)x;
                        y = (uint32_t)(int32_t)(int8_t)y;
                    }
                    /* the low 32 bits of the product, wrapping sum */
                    acc += x * y;
                }
                out.cell[i][j] = acc;
            }
        }
        *c = out;
        return;
    }
    {
        float fa[DIM][DIM], fb[DIM][DIM], acc[DIM][DIM];

        /* widen once; every input is read before any result is written */
        for (i = 0; i < DIM; i++) {
            for (k = 0; k < DIM; k++) {
                fa[i][k] = npu_tensor_mma_in(a->cell[i][k], type);
                fb[i][k] = npu_tensor_mma_in(b->cell[i][k], type);
            }
        }
        for (i = 0; i < DIM; i++) {
            for (j = 0; j < DIM; j++) {
                acc[i][j] = npu_rv_f_of(c->cell[i][j]);
            }
        }
        npu_tensor_mma_steps(acc, fa, fb);
        for (i = 0; i < DIM; i++) {
            for (j = 0; j < DIM; j++) {
                out.cell[i][j] = npu_tensor_canon(acc[i][j]);
            }
        }
        *c = out;
    }
}

/* RISC-V fmax.s: -0 < +0; one NaN operand gives the other. */
static uint32_t npu_tensor_fmax(uint32_t x, uint32_t y)
{
    float a = npu_rv_f_of(x), b = npu_rv_f_of(y);

    if (isnan(a)) {
        return isnan(b) ? RV_CANON_NAN_S : y;
    }
    if (isnan(b)) {
        return x;
    }
    if (a == b) {
        return x >> 31 ? y : x;             /* +0 over -0 */
    }
    return a > b ? x : y;
}

/* One element of the ops that work cell by cell. */
static uint32_t npu_tensor_tew1(unsigned op, uint32_t x, uint32_t y)
{
    float a = npu_rv_f_of(x), b = npu_rv_f_of(y), r;

    switch (op) {
    case NPU_TEW_ADD:
    case NPU_TEW_ADDROW:
        r = a + b;
        break;
    case NPU_TEW_SUB:
        r = a - b;
        break;
    case NPU_TEW_MUL:
        r = a * b;
        break;
    case NPU_TEW_MAX:
        return npu_tensor_fmax(x, y);
    case NPU_TEW_RELU:
        return npu_tensor_fmax(x, 0);
    case NPU_TEW_EXP:
        return npu_tensor_exp_f32(x);
    case NPU_TEW_RCP:
        r = 1.0f / a;
        break;
    case NPU_TEW_CVTF16:
        return npu_tensor_f32_to_f16(x);
    default:                                /* NPU_TEW_CVTBF16 */
        return npu_tensor_f32_to_bf16(x);
    }
    return npu_tensor_canon(r);
}

void npu_tensor_tew(NpuTile *d, const NpuTile *a, const NpuTile *b,
                    unsigned op)
{
    NpuTile out;
    unsigned r, c;

    for (r = 0; r < DIM; r++) {
        if (op == NPU_TEW_ROWMAX || op == NPU_TEW_ROWSUM) {
            uint32_t acc = a->cell[r][0];

            for (c = 1; c < DIM; c++) {
                if (op == NPU_TEW_ROWMAX) {
                    acc = npu_tensor_fmax(acc, a->cell[r][c]);
                } else {
                    acc = npu_tensor_canon(npu_rv_f_of(acc) +
                                           npu_rv_f_of(a->cell[r][c]));
                }
            }
            for (c = 0; c < DIM; c++) {
                out.cell[r][c] = acc;
            }
            continue;
        }
        for (c = 0; c < DIM; c++) {
            out.cell[r][c] = npu_tensor_tew1(op, a->cell[r][c],
                                             op == NPU_TEW_ADDROW ?
                                             b->cell[0][c] : b->cell[r][c]);
        }
    }
    *d = out;
}
