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

/* The element-wise kernels, one rounding per operation (saxpy: the
 * product, then the sum). A NaN result need only be a NaN: the compute
 * units give RISC-V's canonical NaN where the host keeps a payload. */
enum npu_ref_ew { NPU_REF_FILL, NPU_REF_SCALE, NPU_REF_VADD, NPU_REF_SAXPY,
		  NPU_REF_RELU, NPU_REF_RELU_GRAD };

/* z from x and y (fill: z = s; scale: z = s * x; vadd: z = x + y; saxpy:
 * z = y + s * x; relu: z = x > 0 ? x : +0; relu_grad, x the gradient dy
 * and y the input: z = y > 0 ? x : +0) */
static inline void npu_ref_elementwise_f32(enum npu_ref_ew op, const float *x,
					   const float *y, float *z, uint64_t n,
					   float s)
{
	for (uint64_t i = 0; i < n; i++) {
		switch (op) {
		case NPU_REF_FILL:
			z[i] = s;
			break;
		case NPU_REF_SCALE:
			z[i] = s * x[i];
			break;
		case NPU_REF_VADD:
			z[i] = x[i] + y[i];
			break;
		case NPU_REF_SAXPY: {
			float p = s * x[i];

			z[i] = y[i] + p;
			break;
		}
		case NPU_REF_RELU:
			z[i] = x[i] > 0 ? x[i] : 0.0f;
			break;
		case NPU_REF_RELU_GRAD:
			z[i] = y[i] > 0 ? x[i] : 0.0f;
			break;
		}
	}
}

/* x[r][c] += b[c] */
static inline void npu_ref_bias_add_f32(float *x, const float *b,
					uint64_t rows, uint64_t cols)
{
	for (uint64_t r = 0; r < rows; r++)
		for (uint64_t c = 0; c < cols; c++)
			x[r * cols + c] += b[c];
}

/* one row's softmax: the max in f32, e = expf(x - max), their sum in
 * double in order, each e / sum in double rounded to f32 (the device's
 * expf may differ from the host's by a few ulp) */
static inline void npu_ref_softmax_row_f32(const float *x, float *y,
					   uint64_t cols)
{
	float mx = x[0];
	double sum = 0;

	for (uint64_t c = 1; c < cols; c++)
		mx = x[c] > mx ? x[c] : mx;
	for (uint64_t c = 0; c < cols; c++) {
		y[c] = expf(x[c] - mx);
		sum += y[c];
	}
	for (uint64_t c = 0; c < cols; c++)
		y[c] = (float)(y[c] / sum);
}

/* grad = (softmax(x) - onehot(label)) / rows per row; returns the mean
 * of -log(max(p[label], 1e-30)) in double (labels below cols) */
static inline float npu_ref_softmax_xent_f32(const float *x,
					     const uint32_t *lab, float *g,
					     uint64_t rows, uint64_t cols)
{
	double loss = 0;

	for (uint64_t r = 0; r < rows; r++) {
		float *gr = g + r * cols;
		float p;

		npu_ref_softmax_row_f32(x + r * cols, gr, cols);
		p = gr[lab[r]];
		loss -= log(p > 1e-30f ? p : 1e-30f);
		gr[lab[r]] -= 1.0f;
		for (uint64_t c = 0; c < cols; c++)
			gr[c] /= (float)rows;
	}
	return rows ? (float)(loss / rows) : 0.0f;
}

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
