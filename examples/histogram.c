/* SPDX-License-Identifier: MIT */
/*
 * histogram: 256-bin histogram of 200,000 bytes with scratchpad and device
 * atomics (cuda-samples' histogram256), checked against the CPU.
 */
#include "common.h"

int main(void)
{
	enum { N = 200000 };
	unsigned char *data = malloc(N);
	unsigned hist[256], ref[256] = { 0 }, n = N;
	void *dd, *dh, *args[3];
	npu_device_prop p;
	npu_function_t f;
	npu_module_t m;

	print_device();
	CHECK(npu_device_get_properties(&p, 0));
	srand(1);
	for (int i = 0; i < N; i++) {
		data[i] = (unsigned char)(rand() % 97 + rand() % 160);
		ref[data[i]]++;
	}
	m = load_kernels("histogram");
	CHECK(npu_module_get_function(&f, m, "histogram256"));
	CHECK(npu_malloc(&dd, N));
	CHECK(npu_malloc(&dh, sizeof(hist)));
	CHECK(npu_memcpy(dd, data, N, NPU_MEMCPY_HOST_TO_DEVICE));
	CHECK(npu_memset(dh, 0, sizeof(hist)));
	args[0] = &dd;
	args[1] = &n;
	args[2] = &dh;
	CHECK(npu_launch_kernel(f, npu_grid(2 * p.compute_units, 1, 1),
				npu_grid(p.unit_threads, 1, 1), 0, NULL, args));
	CHECK(npu_memcpy(hist, dh, sizeof(hist), NPU_MEMCPY_DEVICE_TO_HOST));
	printf("histogram256 of %d bytes on %u blocks of %u threads: %s\n", N,
	       2 * p.compute_units, p.unit_threads,
	       memcmp(hist, ref, sizeof(hist)) ? "FAILED" : "Test PASSED");
	CHECK(npu_module_unload(m));
	free(data);
	return memcmp(hist, ref, sizeof(hist)) ? 1 : 0;
}
