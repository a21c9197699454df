/* SPDX-License-Identifier: MIT */
/*
 * asyncAPI - port of CUDA's asyncAPI sample: queue a copy in, a kernel and a
 * copy out on the default stream without blocking the CPU, and count how
 * much CPU work gets done while the device works (polling an event).
 */
#include "common.h"

int main(void)
{
	const int n = 4 << 20;		/* 16 MiB of floats */
	const float value = 26.0f;
	size_t bytes = (size_t)n * 4;
	float *h;
	void *d;
	npu_event_t start, stop;
	unsigned long counter = 0;
	float gpu_ms;
	double t0, issue_ms;
	int i, errors = 0;

	print_device();
	CHECK(npu_host_alloc((void **)&h, bytes, 0));
	memset(h, 0, bytes);
	CHECK(npu_malloc(&d, bytes));
	CHECK(npu_memset(d, 255, bytes));
	CHECK(npu_event_create(&start, 0));
	CHECK(npu_event_create(&stop, 0));
	CHECK(npu_device_synchronize());

	/* y = value everywhere, then y = y * 1 + ... : fill then scale by 1 */
	uint64_t fill[3] = { npu_arg_ptr(d), (uint64_t)n, arg_f(value) };

	t0 = host_ms();
	CHECK(npu_event_record(start, NULL));
	CHECK(npu_memcpy_async(d, h, bytes, NPU_MEMCPY_HOST_TO_DEVICE, NULL));
	CHECK(npu_parallel_async(NPU_K_FILL_F32, npu_grid(64, 1, 1), fill, 3, NULL));
	CHECK(npu_memcpy_async(h, d, bytes, NPU_MEMCPY_DEVICE_TO_HOST, NULL));
	CHECK(npu_event_record(stop, NULL));
	issue_ms = host_ms() - t0;

	/* the CPU keeps working while the device runs */
	while (npu_event_query(stop) == NPU_ERROR_NOT_READY)
		counter++;
	CHECK(npu_event_elapsed_time(&gpu_ms, start, stop));

	printf("time spent executing by the device: %.2f ms (device clock)\n", gpu_ms);
	printf("time spent by the CPU in npu calls: %.2f ms\n", issue_ms);
	printf("CPU executed %lu iterations while waiting for the device\n", counter);
	for (i = 0; i < n; i++)
		if (h[i] != value)
			errors++;
	printf("%s: %d wrong values\n", errors ? "FAILED" : "PASSED", errors);
	npu_event_destroy(start);
	npu_event_destroy(stop);
	npu_free(d);
	npu_host_free(h);
	return errors ? 1 : 0;
}
