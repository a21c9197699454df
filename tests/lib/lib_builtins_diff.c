/* SPDX-License-Identifier: MIT */
/*
 * lib_builtins_diff: libnpu's kernel library (lib/kernels/builtins.c,
 * code for the compute units) against the host reference
 * (tests/common/npu_builtin_ref.h), on the same inputs, over a corpus of
 * shapes: 0 and 1 elements, tile multiples and not, transposes, NaN, Inf,
 * -0 and denormals for the element-wise kernels.
 *
 * What must agree, and why:
 *   fill, scale, vadd, saxpy, relu, relu_grad, bias_add, col_sum,
 *   reduce_sum, argmax, gemm (each block shape): bit for bit, except that
 *   a NaN result only has to be a NaN (the compute units give RISC-V's
 *   canonical NaN where the host's FPU keeps a payload or sign);
 *   softmax, softmax_xent's gradient: within 4 ulp plus 2^-30 (expf of
 *   picolibc against the host's; the sum and division are the same);
 *   softmax_xent's loss: relative 1e-6.
 */
#include "tap.h"
#include "../common/npu_builtin_ref.h"

#include <libgen.h>
#include <limits.h>
#include <math.h>

static npu_module_t mod;
static unsigned rng = 12345;

static unsigned rnd(void)
{
	rng = rng * 1103515245u + 12345u;
	return rng >> 8;
}

static float rnd_f(void)
{
	return ((float)(rnd() % 20001) - 10000.0f) / 1000.0f;
}

/* Finite values, with the IEEE specials mixed in when specials is set. */
static void fill_in(float *p, size_t n, int specials)
{
	static const uint32_t sp[] = { 0x7fc00000, 0xffc00000, 0x7fa00001,
				       0x7f800000, 0xff800000, 0x80000000,
				       0x00000001, 0x80400000, 0x7f7fffff };

	for (size_t i = 0; i < n; i++) {
		p[i] = rnd_f();
		if (specials && rnd() % 7 == 0)
			memcpy(&p[i], &sp[rnd() % 9], 4);
	}
}

static int same_bits(float a, float b)
{
	return (isnan(a) && isnan(b)) || !memcmp(&a, &b, 4);
}

static float ulp(float x)
{
	x = fabsf(x);
	return nextafterf(x, INFINITY) - x;
}

static void *dev_copy(const void *h, size_t bytes)
{
	void *d;

	MUST(npu_malloc(&d, bytes ? bytes : 4));
	if (bytes)
		MUST(npu_memcpy(d, h, bytes, NPU_MEMCPY_HOST_TO_DEVICE));
	return d;
}

static void to_host(void *h, const void *d, size_t bytes)
{
	if (bytes)
		MUST(npu_memcpy(h, d, bytes, NPU_MEMCPY_DEVICE_TO_HOST));
}

static unsigned blocks(uint64_t n, uint64_t per)
{
	return n ? (unsigned)((n + per - 1) / per) : 1;
}

/* the library's code */
static npu_status_t run_code_block(const char *name, unsigned gx,
				   unsigned gy, unsigned bx, unsigned by,
				   void **args)
{
	npu_function_t f;
	npu_status_t st = npu_module_get_function(&f, mod, name);

	if (st)
		return st;
	return npu_parallel_kernel(f, npu_grid(gx, gy, 1), npu_grid(bx, by, 1),
				   0, NULL, args);
}

static npu_status_t run_code(const char *name, unsigned gx, unsigned gy,
			     void **args)
{
	return run_code_block(name, gx, gy, 1, 1, args);
}

enum ew { EW_FILL, EW_SCALE, EW_VADD, EW_SAXPY, EW_RELU, EW_RELU_GRAD };

static void test_elementwise(enum ew op, uint64_t n)
{
	static const char *const names[] = { "fill_f32", "scale_f32",
		"vadd_f32", "saxpy_f32", "relu_f32", "relu_grad_f32" };
	static const enum npu_ref_ew ref[] = { NPU_REF_FILL, NPU_REF_SCALE,
		NPU_REF_VADD, NPU_REF_SAXPY, NPU_REF_RELU, NPU_REF_RELU_GRAD };
	size_t bytes = n * 4;
	float *x = malloc(bytes + 4), *y = malloc(bytes + 4);
	float *want = malloc(bytes + 4), *got = malloc(bytes + 4);
	float s = op == EW_FILL ? -0.0f : 1.7f;
	char name[32];
	void *dx, *dy, *dz;
	void *args[4];
	unsigned bad = 0;
	npu_status_t st;

	fill_in(x, n, 1);
	fill_in(y, n, 1);
	dx = dev_copy(x, bytes);
	dy = dev_copy(y, bytes);
	dz = dev_copy(y, bytes);
	snprintf(name, sizeof(name), "bi_%s", names[op]);
	switch (op) {
	case EW_FILL:
		args[0] = &dz, args[1] = &n, args[2] = &s;
		break;
	case EW_SCALE:
	case EW_SAXPY:
		args[0] = &dx, args[1] = &dz, args[2] = &n, args[3] = &s;
		break;
	case EW_RELU:
		args[0] = &dx, args[1] = &dz, args[2] = &n;
		break;
	case EW_VADD:
	case EW_RELU_GRAD:
		args[0] = &dx, args[1] = &dy, args[2] = &dz, args[3] = &n;
		break;
	}
	npu_ref_elementwise_f32(ref[op], x, y, want, n, s);
	st = run_code(name, blocks(n, 4096), 1, args);
	to_host(got, dz, bytes);
	for (uint64_t i = 0; i < n; i++)
		if (!same_bits(got[i], want[i]) && !bad++)
			tap_diag("  %s n=%llu [%llu]: code %a (0x%08x), "
				 "reference %a",
				 names[op], (unsigned long long)n,
				 (unsigned long long)i, got[i],
				 *(uint32_t *)&got[i], want[i]);
	tap_ok(!st && !bad, "%s, %llu elements with NaN/Inf/-0/"
	       "denormals: bit-identical (NaN as NaN), %u differ", names[op],
	       (unsigned long long)n, bad);
	npu_free(dx);
	npu_free(dy);
	npu_free(dz);
	free(x), free(y), free(want), free(got);
}

static void test_bias_add(uint64_t rows, uint64_t cols)
{
	size_t n = rows * cols;
	float *x = malloc(n * 4 + 4), *b = malloc(cols * 4 + 4);
	float *want = malloc(n * 4 + 4), *got = malloc(n * 4 + 4);
	void *dx, *db, *args[4] = { &dx, &db, &rows, &cols };
	unsigned bad = 0;
	npu_status_t st;

	fill_in(x, n, 1);
	fill_in(b, cols, 1);
	dx = dev_copy(x, n * 4);
	db = dev_copy(b, cols * 4);
	memcpy(want, x, n * 4);
	npu_ref_bias_add_f32(want, b, rows, cols);
	st = run_code("bi_bias_add_f32", blocks(cols, 16), blocks(rows, 16),
		       args);
	to_host(got, dx, n * 4);
	for (size_t i = 0; i < n; i++)
		bad += !same_bits(got[i], want[i]);
	tap_ok(!st && !bad, "bias_add_f32 %llux%llu: bit-identical, "
	       "%u differ", (unsigned long long)rows, (unsigned long long)cols,
	       bad);
	npu_free(dx);
	npu_free(db);
	free(x), free(b), free(want), free(got);
}

static void test_gemm(uint64_t m, uint64_t n, uint64_t k, uint64_t flags,
		      float alpha, float beta)
{
	float *A = malloc(m * k * 4 + 4), *B = malloc(k * n * 4 + 4);
	float *C = malloc(m * n * 4 + 4);
	float *got = malloc(m * n * 4 + 4), *ref = malloc(m * n * 4 + 4);
	void *dA, *dB, *dC;
	void *args[9] = { &dA, &dB, &dC, &m, &n, &k, &flags, &alpha, &beta };
	unsigned refbad = 0;
	npu_status_t st2;

	fill_in(A, m * k, 0);
	fill_in(B, k * n, 0);
	fill_in(C, m * n, 0);
	dA = dev_copy(A, m * k * 4);
	dB = dev_copy(B, k * n * 4);
	dC = dev_copy(C, m * n * 4);
	st2 = run_code("bi_gemm_f32", blocks(n, 64), blocks(m, 16), args);
	to_host(got, dC, m * n * 4);
	memcpy(ref, C, m * n * 4);
	npu_ref_gemm_f32(A, B, ref, m, n, k, flags, alpha, beta);
	for (uint64_t i = 0; i < m * n; i++)
		refbad += !same_bits(got[i], ref[i]);
	tap_ok(!st2 && !refbad, "gemm_f32 %llux%llux%llu flags %llu alpha %g "
	       "beta %g: bit-identical to the host reference, %u differ",
	       (unsigned long long)m, (unsigned long long)n,
	       (unsigned long long)k, (unsigned long long)flags, alpha, beta,
	       refbad);
	/* a block of bx x by threads shares each chunk of A and B: every
	 * shape the library may pick gives the same bits */
	{
		static const unsigned shape[][2] = { { 2, 1 }, { 1, 4 },
						     { 2, 2 }, { 2, 4 } };
		unsigned shape_bad = 0;
		npu_status_t sst = NPU_SUCCESS;

		for (size_t s = 0; s < sizeof(shape) / sizeof(shape[0]); s++) {
			unsigned bx = shape[s][0], by = shape[s][1];

			if (m && n)
				MUST(npu_memcpy(dC, C, m * n * 4,
						NPU_MEMCPY_HOST_TO_DEVICE));
			if (!sst)
				sst = run_code_block("bi_gemm_f32",
						     blocks(n, 64 * bx),
						     blocks(m, 16 * by), bx, by,
						     args);
			to_host(got, dC, m * n * 4);
			for (uint64_t i = 0; i < m * n; i++)
				if (!same_bits(got[i], ref[i]) && !shape_bad++)
					tap_diag("  blocks of %ux%u: [%llu] %a, "
						 "reference %a", bx, by,
						 (unsigned long long)i, got[i],
						 ref[i]);
		}
		tap_ok(!sst && !shape_bad, "gemm_f32 %llux%llux%llu flags %llu "
		       "alpha %g beta %g on blocks of 2x1, 1x4, 2x2 and 2x4 "
		       "threads: bit-identical to the host reference, %u "
		       "differ", (unsigned long long)m, (unsigned long long)n,
		       (unsigned long long)k, (unsigned long long)flags, alpha,
		       beta, shape_bad);
	}
	npu_free(dA);
	npu_free(dB);
	npu_free(dC);
	free(A), free(B), free(C), free(got), free(ref);
}

/* reduce_sum, col_sum, argmax (bit-identical) and softmax (ulps) */
static void test_rows(uint64_t rows, uint64_t cols)
{
	size_t n = rows * cols;
	float *x = malloc(n * 4 + 4), *want = malloc(n * 4 + 8);
	float *got = malloc(n * 4 + 8), sum;
	void *dx, *dy;
	unsigned bad = 0;
	npu_status_t st;

	fill_in(x, n, 0);
	dx = dev_copy(x, n * 4);
	MUST(npu_malloc(&dy, n * 4 + 8));
	{
		void *args[3] = { &dx, &dy, &n };

		st = run_code("bi_reduce_sum_f32", 1, 1, args);
		to_host(got, dy, 4);
		sum = npu_ref_reduce_sum_f32(x, n);
		tap_ok(!st && same_bits(got[0], sum), "reduce_sum_f32 of %zu: "
		       "bit-identical to the reference (%a, %a)", n, got[0],
		       sum);
	}
	{
		void *args[4] = { &dx, &dy, &rows, &cols };

		st = run_code("bi_col_sum_f32", blocks(cols, 256), 1, args);
		to_host(got, dy, cols * 4);
		bad = 0;
		npu_ref_col_sum_f32(x, want, rows, cols);
		for (uint64_t c = 0; c < cols; c++)
			bad += !same_bits(got[c], want[c]);
		tap_ok(!st && !bad, "col_sum_f32 %llux%llu: bit-identical to "
		       "the reference, %u differ", (unsigned long long)rows,
		       (unsigned long long)cols, bad);
		if (cols) {
			st = run_code("bi_argmax_f32", blocks(rows, 16), 1, args);
			to_host(got, dy, rows * 4);
			bad = 0;
			for (uint64_t r = 0; r < rows; r++)
				bad += ((uint32_t *)got)[r] !=
				       npu_ref_argmax_f32(x + r * cols, cols);
			tap_ok(!st && !bad, "argmax_f32 %llux%llu: identical "
			       "to the reference, %u differ",
			       (unsigned long long)rows,
			       (unsigned long long)cols, bad);
		}
		st = run_code("bi_softmax_f32", blocks(rows, 1), 1, args);
		to_host(got, dy, n * 4);
		for (uint64_t r = 0; r < rows && cols; r++)
			npu_ref_softmax_row_f32(x + r * cols, want + r * cols,
						cols);
		bad = 0;
		for (size_t i = 0; i < n; i++)
			bad += !(fabsf(got[i] - want[i]) <=
				 4 * ulp(want[i]) + ldexpf(1, -30));
		tap_ok(!st && !bad, "softmax_f32 %llux%llu: within 4 ulp of "
		       "the reference, %u outside", (unsigned long long)rows,
		       (unsigned long long)cols, bad);
	}
	npu_free(dx);
	npu_free(dy);
	free(x), free(want), free(got);
}

static void test_xent(uint64_t rows, uint64_t cols)
{
	size_t n = rows * cols;
	float *x = malloc(n * 4 + 4), *want = malloc(n * 4 + 4);
	float *got = malloc(n * 4 + 4), lw = 0, lg = 0;
	uint32_t *lab = malloc(rows * 4 + 4);
	void *dx, *dl, *dg, *dloss;
	void *args[6] = { &dx, &dl, &dg, &dloss, &rows, &cols };
	unsigned bad = 0;
	npu_status_t st2;

	fill_in(x, n, 0);
	for (uint64_t r = 0; r < rows; r++)
		lab[r] = rnd() % cols;
	dx = dev_copy(x, n * 4);
	dl = dev_copy(lab, rows * 4);
	MUST(npu_malloc(&dg, n * 4 + 4));
	MUST(npu_malloc(&dloss, 4));
	lw = npu_ref_softmax_xent_f32(x, lab, want, rows, cols);
	st2 = run_code("bi_softmax_xent_f32", 1, 1, args);
	to_host(got, dg, n * 4);
	to_host(&lg, dloss, 4);
	for (size_t i = 0; i < n; i++)
		bad += !(fabsf(got[i] - want[i]) <=
			 4 * ulp(want[i]) + ldexpf(1, -30));
	tap_ok(!st2 && !bad && fabsf(lg - lw) <= 1e-6f * fabsf(lw) +
	       ldexpf(1, -30), "softmax_xent_f32 %llux%llu: gradient within 4 "
	       "ulp of the reference (%u outside), loss %.9g vs %.9g", (unsigned long long)rows,
	       (unsigned long long)cols, bad, lg, lw);
	npu_free(dx);
	npu_free(dl);
	npu_free(dg);
	npu_free(dloss);
	free(x), free(want), free(got), free(lab);
}

int main(void)
{
	static const uint64_t ew_n[] = { 0, 1, 17, 255, 256, 257, 1000, 4096,
					   4097, 9000 };
	static const uint64_t gemm[][3] = {
		{ 0, 5, 3 }, { 1, 1, 1 }, { 3, 4, 0 }, { 16, 16, 16 },
		{ 17, 33, 15 }, { 40, 24, 50 }, { 64, 10, 128 }, { 5, 70, 33 },
		{ 20, 130, 40 }, { 130, 300, 70 }, { 64, 128, 96 },
	};
	static const uint64_t shapes[][2] = {
		{ 1, 1 }, { 3, 10 }, { 16, 16 }, { 17, 33 }, { 64, 10 },
		{ 5, 128 }, { 40, 300 },
	};
	char self[PATH_MAX], path[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	npu_device_prop prop;

	self[len > 0 ? len : 0] = 0;
	tap_need_device();
	MUST(npu_device_get_properties(&prop, 0));
	if (!(prop.features & NPU_FEATURE_USER_KERNELS)) {
		tap_ok(0, "the device runs code kernels");
		return tap_done();
	}
	snprintf(path, sizeof(path), "%s/kernels/builtins.npu", dirname(self));
	ST(npu_module_load(&mod, path), NPU_SUCCESS, "load %s", path);
	if (!mod)
		return tap_done();
	for (unsigned op = EW_FILL; op <= EW_RELU_GRAD; op++)
		for (size_t i = 0; i < sizeof(ew_n) / sizeof(ew_n[0]); i++)
			test_elementwise((enum ew)op, ew_n[i]);
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		test_bias_add(shapes[i][0], shapes[i][1]);
		test_rows(shapes[i][0], shapes[i][1]);
		test_xent(shapes[i][0], shapes[i][1]);
	}
	test_bias_add(0, 7);
	for (size_t i = 0; i < sizeof(gemm) / sizeof(gemm[0]); i++)
		for (uint64_t fl = 0; fl < 4; fl++) {
			test_gemm(gemm[i][0], gemm[i][1], gemm[i][2], fl, 1.0f,
				  0.0f);
			test_gemm(gemm[i][0], gemm[i][1], gemm[i][2], fl, 0.5f,
				  -2.0f);
		}
	npu_module_unload(mod);
	return tap_done();
}
