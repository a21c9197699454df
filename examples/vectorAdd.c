/* SPDX-License-Identifier: MIT */
/*
 * vectorAdd (cuda-samples' vectorAdd with a user kernel): C = A + B over
 * 50,000 floats, the block size from the occupancy calculator, the result
 * checked against the CPU.
 */
#include "common.h"

int main(void)
{
	enum { N = 50000 };
	float *a = malloc(N * 4), *b = malloc(N * 4), *c = malloc(N * 4);
	void *da, *db, *dc, *args[4];
	unsigned n = N, bad = 0;
	int min_grid, block;
	npu_function_t f;
	npu_module_t m;

	print_device();
	for (int i = 0; i < N; i++) {
		a[i] = rand() / (float)RAND_MAX;
		b[i] = rand() / (float)RAND_MAX;
	}
	m = load_kernels("vectorAdd");
	CHECK(npu_module_get_function(&f, m, "vectorAdd"));
	CHECK(npu_occupancy_max_potential_block_size(&min_grid, &block, f, 0, 0));
	CHECK(npu_malloc(&da, N * 4));
	CHECK(npu_malloc(&db, N * 4));
	CHECK(npu_malloc(&dc, N * 4));
	CHECK(npu_memcpy(da, a, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	CHECK(npu_memcpy(db, b, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	args[0] = &da;
	args[1] = &db;
	args[2] = &dc;
	args[3] = &n;
	printf("vectorAdd of %d elements: %d blocks of %d threads (the grid "
	       "that fills the device: %d blocks)\n", N, (N + block - 1) / block,
	       block, min_grid);
	CHECK(npu_launch_kernel(f, npu_grid((N + block - 1) / block, 1, 1),
				npu_grid(block, 1, 1), 0, NULL, args));
	CHECK(npu_memcpy(c, dc, N * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	for (int i = 0; i < N; i++)
		bad += fabsf(a[i] + b[i] - c[i]) > 1e-5f;
	printf("%s: %u mismatches\n", bad ? "FAILED" : "Test PASSED", bad);
	CHECK(npu_free(da));
	CHECK(npu_free(db));
	CHECK(npu_free(dc));
	CHECK(npu_module_unload(m));
	free(a);
	free(b);
	free(c);
	return bad ? 1 : 0;
}
