/* SPDX-License-Identifier: MIT */
/*
 * simpleStreams - port of CUDA's simpleStreams sample: the same work (a
 * compute-heavy kernel on each chunk of an array, then a copy of the chunk
 * back to pinned memory) done in one stream and split over 4 streams, timed
 * with device events. The sample's init_array kernel loops to be compute
 * bound; here a TEST_SPIN of fixed device time plays that part next to the
 * fill that produces the data. With several streams the copies of one
 * chunk overlap the kernels of the others, and the kernels run on several
 * rings at once.
 */
#include "common.h"

#define NSTREAMS 4
#define COMPUTE_NS 40000000ull		/* 40 ms of "compute" for the array */

static void compute(npu_stream_t s, uint64_t ns)
{
	uint64_t a[1] = { ns };

	CHECK(npu_launch(NPU_K_TEST_SPIN, npu_grid(1, 1, 1), a, 1, s, 0));
}

int main(void)
{
	const int n = 4 << 20;
	const size_t bytes = (size_t)n * 4;
	const int chunk = n / NSTREAMS;
	npu_stream_t s[NSTREAMS];
	npu_event_t a, b;
	float *h, ms_one, ms_many;
	void *d;
	int i, k, errors = 0;

	print_device();
	CHECK(npu_host_alloc((void **)&h, bytes, 0));
	CHECK(npu_malloc(&d, bytes));
	for (i = 0; i < NSTREAMS; i++)
		CHECK(npu_stream_create(&s[i], 0, 0));
	CHECK(npu_event_create(&a, 0));
	CHECK(npu_event_create(&b, 0));

	/* warm up */
	CHECK(npu_memset(d, 0, bytes));

	/* one stream: kernel over everything, then one copy back */
	uint64_t all[3] = { npu_arg_ptr(d), (uint64_t)n, npu_arg_f32(1.0f) };

	CHECK(npu_event_record(a, s[0]));
	compute(s[0], COMPUTE_NS);
	CHECK(npu_launch(NPU_K_FILL_F32, npu_grid(32, 1, 1), all, 3, s[0], 0));
	CHECK(npu_memcpy_async(h, d, bytes, NPU_MEMCPY_DEVICE_TO_HOST, s[0]));
	CHECK(npu_event_record(b, s[0]));
	CHECK(npu_event_synchronize(b));
	CHECK(npu_event_elapsed_time(&ms_one, a, b));

	/* NSTREAMS streams: chunk k's kernel and copy in stream k */
	CHECK(npu_event_record(a, NULL));	/* legacy: orders before all */
	for (k = 0; k < NSTREAMS; k++) {
		char *dc = (char *)d + (size_t)k * chunk * 4;
		uint64_t part[3] = { npu_arg_ptr(dc), (uint64_t)chunk, npu_arg_f32(2.0f) };

		compute(s[k], COMPUTE_NS / NSTREAMS);
		CHECK(npu_launch(NPU_K_FILL_F32, npu_grid(8, 1, 1), part, 3, s[k], 0));
		CHECK(npu_memcpy_async(h + (size_t)k * chunk, dc, (size_t)chunk * 4,
				       NPU_MEMCPY_DEVICE_TO_HOST, s[k]));
	}
	CHECK(npu_event_record(b, NULL));	/* legacy: waits for all */
	CHECK(npu_event_synchronize(b));
	CHECK(npu_event_elapsed_time(&ms_many, a, b));

	for (i = 0; i < n; i++)
		if (h[i] != 2.0f)
			errors++;
	printf("%.0f ms of compute + fill + copy back of %zu MiB:\n",
	       COMPUTE_NS / 1e6, bytes >> 20);
	printf("  1 stream:  %.2f ms (device time)\n", ms_one);
	printf("  %d streams: %.2f ms (device time), speed-up %.2fx\n", NSTREAMS,
	       ms_many, ms_one / ms_many);
	printf("%s: %d wrong values\n", errors ? "FAILED" : "PASSED", errors);
	for (i = 0; i < NSTREAMS; i++)
		CHECK(npu_stream_destroy(s[i]));
	npu_event_destroy(a);
	npu_event_destroy(b);
	npu_free(d);
	npu_host_free(h);
	return errors ? 1 : 0;
}
