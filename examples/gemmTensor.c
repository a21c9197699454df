/* SPDX-License-Identifier: MIT */
/*
 * gemmTensor: the double-buffered tiled GEMM of kernels/gemmTensor.c
 * (Documentation/lib/kernels.rst teaches it) for bf16 -> f32 and f32:
 * C = A x B at n^3, checked bit for bit against a host reference (the
 * tensor engine's order: one fused multiply-add per k, k increasing),
 * then one profiled launch of each for its place on the roofline.
 * Usage: gemmTensor [n [BM BN BK depth]] (default 128 64 64 16 2); with
 * GEMM_REPORT set in the environment it also prints the profiler's report
 * (stall reasons, tensor pipe, tile DMA, hot spots) after each launch.
 */
#include "common.h"

#include <math.h>
#include <stdlib.h>
#include "kernels/gemmTensor.h"

static uint16_t to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return (uint16_t)(u >> 16);	/* the inputs below are exact in bf16 */
}

static float from_bf16(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* C = A x B as the tensor engine computes it. */
static void reference(const float *a, const float *b, float *c, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < n; j++) {
			float acc = 0;

			for (unsigned k = 0; k < n; k++)
				acc = fmaf(a[(size_t)i * n + k], b[(size_t)k * n + j], acc);
			c[(size_t)i * n + j] = acc;
		}
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 128;
	unsigned BM = argc > 5 ? (unsigned)atoi(argv[2]) : 64;
	unsigned BN = argc > 5 ? (unsigned)atoi(argv[3]) : 64;
	unsigned BK = argc > 5 ? (unsigned)atoi(argv[4]) : 16;
	unsigned depth = argc > 5 ? (unsigned)atoi(argv[5]) : 2;
	size_t e = (size_t)n * n;
	float *a = malloc(e * 4), *b = malloc(e * 4), *ref = malloc(e * 4);
	float *c = malloc(e * 4);
	uint16_t *a16 = malloc(e * 2), *b16 = malloc(e * 2);
	void *dA, *dB, *dC, *dA16, *dB16;
	npu_function_t fn[2];
	npu_module_t mod;
	npu_device_prop p;
	int failed = 0;

	print_device();
	CHECK(npu_device_get_properties(&p, 0));
	if (!gemm_shape_ok(n, n, n, BM, BN, BK, depth) ||
	    gemm_threads(BM, BN) > p.unit_threads ||
	    gemm_scratch_bytes(BM, BN, BK, depth, 2) > p.unit_scratch_bytes) {
		fprintf(stderr, "gemmTensor: n %u with BM %u BN %u BK %u depth %u "
			"does not fit (BM, BN multiples of 32 dividing n, BK of "
			"16, BM*BN/1024 <= %u threads, scratchpad %lu > %u): "
			"choose other arguments\n", n, BM, BN, BK, depth,
			p.unit_threads, gemm_scratch_bytes(BM, BN, BK, depth, 2),
			p.unit_scratch_bytes);
		return 2;
	}
	for (size_t i = 0; i < e; i++) {	/* multiples of 1/8: exact in bf16 */
		a16[i] = to_bf16((float)((int)(i * 7 % 17) - 8) / 8);
		b16[i] = to_bf16((float)((int)(i * 5 % 13) - 6) / 8);
		a[i] = from_bf16(a16[i]);
		b[i] = from_bf16(b16[i]);
	}
	reference(a, b, ref, n);
	mod = load_kernels("gemmTensor");
	CHECK(npu_module_get_function(&fn[0], mod, "gemm_bf16"));
	CHECK(npu_module_get_function(&fn[1], mod, "gemm_f32"));
	CHECK(npu_malloc(&dA, e * 4));
	CHECK(npu_malloc(&dB, e * 4));
	CHECK(npu_malloc(&dC, e * 4));
	CHECK(npu_malloc(&dA16, e * 2));
	CHECK(npu_malloc(&dB16, e * 2));
	CHECK(npu_memcpy(dA, a, e * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	CHECK(npu_memcpy(dB, b, e * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	CHECK(npu_memcpy(dA16, a16, e * 2, NPU_MEMCPY_HOST_TO_DEVICE));
	CHECK(npu_memcpy(dB16, b16, e * 2, NPU_MEMCPY_HOST_TO_DEVICE));
	for (int t = 0; t < 2; t++) {
		unsigned elem = t ? 4 : 2;
		void *args[] = { t ? &dA : &dA16, t ? &dB : &dB16, &dC, &n, &n,
				 &n, &BM, &BN, &BK, &depth };
		npu_kernel_roofline_profile r;
		size_t nr = 1, bad = 0;
		double t0;

		if (gemm_scratch_bytes(BM, BN, BK, depth, elem) >
		    p.unit_scratch_bytes) {
			printf("%s %u^3, tiles %ux%ux%u, depth %u: skipped "
			       "(scratchpad %lu > %u)\n", t ? "f32" : "bf16", n,
			       BM, BN, BK, depth,
			       gemm_scratch_bytes(BM, BN, BK, depth, elem),
			       p.unit_scratch_bytes);
			continue;
		}

		CHECK(npu_memset(dC, 0xff, e * 4));
		CHECK(npu_profiler_start());
		t0 = host_ms();
		CHECK(npu_launch_kernel(fn[t], npu_grid(n / BN, n / BM, 1),
					npu_grid(gemm_threads(BM, BN), 1, 1),
					(unsigned)gemm_scratch_bytes(BM, BN, BK,
								     depth, elem),
					NULL, args));
		CHECK(npu_device_synchronize());
		t0 = host_ms() - t0;
		CHECK(npu_profiler_stop());
		CHECK(npu_memcpy(c, dC, e * 4, NPU_MEMCPY_DEVICE_TO_HOST));
		for (size_t i = 0; i < e; i++)
			bad += memcmp(&c[i], &ref[i], 4) != 0;
		CHECK(npu_profile_get_roofline(&r, &nr));
		if (getenv("GEMM_REPORT"))
			CHECK(npu_profile_report(stdout));
		printf("%s %u^3, tiles %ux%ux%u, depth %u: %zu of %zu elements "
		       "differ from the reference; host %.1f ms; modelled %.3f ms, "
		       "%.1f GFLOP/s of %.1f peak (%.1f%%), %.1f FLOP/byte "
		       "(ridge %.1f): %s\n", t ? "f32" : "bf16", n, BM, BN, BK,
		       depth, bad, e, t0, r.modelled_ms, r.achieved_gflops,
		       r.peak_gflops, 100 * r.peak_fraction,
		       r.arithmetic_intensity, r.ridge,
		       r.compute_bound ? "compute-bound" : "memory-bound");
		failed |= bad != 0 || nr != 1;
	}
	CHECK(npu_module_unload(mod));
	printf(failed ? "Test FAILED\n" : "Test PASSED\n");
	return failed;
}
