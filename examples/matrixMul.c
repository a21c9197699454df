/* SPDX-License-Identifier: MIT */
/*
 * matrixMul: SGEMM as user kernels, naive (every operand from device
 * memory) and tiled (tiles staged in the scratchpad), over tile sizes and
 * threads per block; each result checked against the CPU, device times
 * from events, and the tiled kernels' speed-up over the naive one.
 */
#include "common.h"

/* 48^3: the naive kernel is one job and must end well inside the driver's
 * job timeout when the host is busy (64^3 took 1.97 s of the 2 s under
 * load); 48 is still a multiple of every tile size. */
#define M 48
#define N 48
#define K 48

static float A[M * K], B[K * N], C[M * N], ref[M * N];

static int check(const char *what)
{
	int bad = 0;

	for (int i = 0; i < M * N; i++)
		bad += fabsf(C[i] - ref[i]) > 1e-3f * (1 + fabsf(ref[i]));
	if (bad)
		printf("%s: %d mismatches\n", what, bad);
	return bad;
}

int main(void)
{
	static const unsigned tiles[] = { 4, 8, 16 }, threads[] = { 4, 8, 16 };
	unsigned m = M, n = N, k = K, t;
	npu_function_t naive, tiled;
	npu_event_t e0, e1;
	void *dA, *dB, *dC, *args[7];
	float naive_ms, best_ms = 0;
	int bad = 0, block;
	npu_device_prop p;
	npu_module_t mod;

	print_device();
	CHECK(npu_device_get_properties(&p, 0));
	for (int i = 0; i < M * K; i++)
		A[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
	for (int i = 0; i < K * N; i++)
		B[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
	for (int r = 0; r < M; r++)
		for (int c = 0; c < N; c++) {
			float s = 0;

			for (int j = 0; j < K; j++)
				s += A[r * K + j] * B[j * N + c];
			ref[r * N + c] = s;
		}
	mod = load_kernels("matrixMul");
	CHECK(npu_module_get_function(&naive, mod, "sgemm_naive"));
	CHECK(npu_module_get_function(&tiled, mod, "sgemm_tiled"));
	CHECK(npu_malloc(&dA, sizeof(A)));
	CHECK(npu_malloc(&dB, sizeof(B)));
	CHECK(npu_malloc(&dC, sizeof(C)));
	CHECK(npu_memcpy(dA, A, sizeof(A), NPU_MEMCPY_HOST_TO_DEVICE));
	CHECK(npu_memcpy(dB, B, sizeof(B), NPU_MEMCPY_HOST_TO_DEVICE));
	CHECK(npu_event_create(&e0, 0));
	CHECK(npu_event_create(&e1, 0));
	args[0] = &dA;
	args[1] = &dB;
	args[2] = &dC;
	args[3] = &m;
	args[4] = &n;
	args[5] = &k;
	args[6] = &t;

	block = (int)p.unit_threads;
	CHECK(npu_memset(dC, 0, sizeof(C)));
	CHECK(npu_event_record(e0, NULL));
	CHECK(npu_launch_kernel(naive, npu_grid(M * N / block, 1, 1),
				npu_grid(block, 1, 1), 0, NULL, args));
	CHECK(npu_event_record(e1, NULL));
	CHECK(npu_memcpy(C, dC, sizeof(C), NPU_MEMCPY_DEVICE_TO_HOST));
	bad += check("naive");
	naive_ms = event_ms(e0, e1);
	printf("sgemm %dx%dx%d naive, %d threads per block: %8.3f ms\n", M, N, K,
	       block, naive_ms);
	for (unsigned i = 0; i < sizeof(tiles) / sizeof(tiles[0]); i++)
		for (unsigned j = 0; j < sizeof(threads) / sizeof(threads[0]); j++) {
			unsigned P = threads[j];
			float ms;

			t = tiles[i];
			if (P > p.unit_threads || (t * t) % P || t * t / P > 64 ||
			    2 * t * t * 4 > p.unit_scratch_bytes)
				continue;
			CHECK(npu_memset(dC, 0, sizeof(C)));
			CHECK(npu_event_record(e0, NULL));
			CHECK(npu_launch_kernel(tiled, npu_grid(N / t, M / t, 1),
						npu_grid(P, 1, 1), 2 * t * t * 4,
						NULL, args));
			CHECK(npu_event_record(e1, NULL));
			CHECK(npu_memcpy(C, dC, sizeof(C), NPU_MEMCPY_DEVICE_TO_HOST));
			bad += check("tiled");
			ms = event_ms(e0, e1);
			if (!best_ms || ms < best_ms)
				best_ms = ms;
			printf("sgemm %dx%dx%d tile %2u, %2u threads per block: %8.3f "
			       "ms (%.2fx the naive kernel)\n", M, N, K, t, P, ms,
			       naive_ms / ms);
		}
	printf("best tiled: %.2fx faster than naive\n", naive_ms / best_ms);
	printf("%s\n", bad ? "FAILED" : "Test PASSED");
	CHECK(npu_module_unload(mod));
	return bad ? 1 : 0;
}
