/* SPDX-License-Identifier: MIT */
/*
 * reduction: the sum of 100,000 floats, a tree per block in the
 * scratchpad with the block barrier, partial sums added on the host
 * (cuda-samples' reduction), checked against the CPU in double.
 */
#include "common.h"

int main(void)
{
	enum { N = 100000 };
	float *x = malloc(N * 4), part[64];
	void *dx, *dp, *args[3];
	unsigned n = N, blocks;
	double ref = 0, sum = 0;
	npu_device_prop p;
	npu_function_t f;
	npu_module_t m;

	print_device();
	CHECK(npu_device_get_properties(&p, 0));
	for (int i = 0; i < N; i++) {
		x[i] = (float)((i % 1000) - 500) / 250.0f;
		ref += x[i];
	}
	blocks = 4 * p.compute_units < 64 ? 4 * p.compute_units : 64;
	m = load_kernels("reduction");
	CHECK(npu_module_get_function(&f, m, "reduce_sum"));
	CHECK(npu_malloc(&dx, N * 4));
	CHECK(npu_malloc(&dp, sizeof(part)));
	CHECK(npu_memcpy(dx, x, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	args[0] = &dx;
	args[1] = &n;
	args[2] = &dp;
	CHECK(npu_launch_kernel(f, npu_grid(blocks, 1, 1),
				npu_grid(p.unit_threads, 1, 1),
				p.unit_threads * 4, NULL, args));
	CHECK(npu_memcpy(part, dp, blocks * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	for (unsigned i = 0; i < blocks; i++)
		sum += part[i];
	printf("reduce_sum of %d floats on %u blocks of %u threads: %.4f "
	       "(CPU %.4f): %s\n", N, blocks, p.unit_threads, sum, ref,
	       fabs(sum - ref) < 1e-2 * (1 + fabs(ref)) ? "Test PASSED" :
	       "FAILED");
	CHECK(npu_module_unload(m));
	free(x);
	return fabs(sum - ref) < 1e-2 * (1 + fabs(ref)) ? 0 : 1;
}
