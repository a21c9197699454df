/* SPDX-License-Identifier: MIT */
/*
 * npu_builtin_ref.h - host reference of the built-in kernels as libnpu's
 * kernel library (lib/kernels/builtins.c) defines them, for the tests:
 * the one place their arithmetic is written down on the host.
 *
 * Build with -ffp-contract=off (or for a target without FMA): every
 * a * b + c below rounds twice unless it is an explicit fmaf().
 */
#ifndef NPU_BUILTIN_REF_H
#define NPU_BUILTIN_REF_H

#include <math.h>
#include <stdint.h>

#include "npu.h"

/* C = alpha * op(A) op(B) + beta * C (C not read when beta is 0): per
 * element, acc from +0 over k increasing, one fused multiply-add per step
 * (TMMA f32, Documentation/hw/npu.rst "MMA arithmetic", for finite
 * inputs), then alpha * acc + (beta * C, or +0), each operation rounded. */
static inline void npu_ref_gemm_f32(const float *A, const float *B, float *C,
				    uint64_t m, uint64_t n, uint64_t k,
				    uint64_t flags, float alpha, float beta)
{
	for (uint64_t i = 0; i < m; i++)
		for (uint64_t j = 0; j < n; j++) {
			float acc = 0.0f, t;

			for (uint64_t l = 0; l < k; l++) {
				float a = flags & NPU_GEMM_TRANSPOSE_A ?
					  A[l * m + i] : A[i * k + l];
				float b = flags & NPU_GEMM_TRANSPOSE_B ?
					  B[j * k + l] : B[l * n + j];

				acc = fmaf(a, b, acc);
			}
			t = alpha * acc;
			C[i * n + j] = t + (beta != 0.0f ? beta * C[i * n + j] :
					    0.0f);
		}
}

/* a sequential sum in double, rounded to f32 once */
static inline float npu_ref_reduce_sum_f32(const float *x, uint64_t n)
{
	double s = 0;

	for (uint64_t i = 0; i < n; i++)
		s += x[i];
	return (float)s;
}

/* y[c] = sum over rows in order, in f32 from +0 */
static inline void npu_ref_col_sum_f32(const float *x, float *y,
				       uint64_t rows, uint64_t cols)
{
	for (uint64_t c = 0; c < cols; c++) {
		float s = 0.0f;

		for (uint64_t r = 0; r < rows; r++)
			s += x[r * cols + c];
		y[c] = s;
	}
}

/* the first index of the largest element (NaN never wins) */
static inline uint32_t npu_ref_argmax_f32(const float *row, uint64_t cols)
{
	uint32_t best = 0;

	for (uint64_t c = 1; c < cols; c++)
		if (row[c] > row[best])
			best = (uint32_t)c;
	return best;
}

#endif
