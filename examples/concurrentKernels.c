/* SPDX-License-Identifier: MIT */
/*
 * concurrentKernels - port of CUDA's concurrentKernels sample: N kernels of
 * a fixed device duration in N streams, then a last kernel in stream 0 that
 * waits for all of them through events. Serial execution would take
 * N * duration; concurrent execution on several rings and compute units
 * takes about one duration.
 */
#include "common.h"

#define NKERNELS 4
#define SPIN_NS 50000000ull		/* 50 ms of device time each */

int main(void)
{
	npu_stream_t s[NKERNELS];
	npu_event_t done[NKERNELS], a, b;
	uint64_t arg[1] = { SPIN_NS };
	float ms;
	int i;

	print_device();
	for (i = 0; i < NKERNELS; i++) {
		CHECK(npu_stream_create(&s[i], NPU_STREAM_NON_BLOCKING, 0));
		CHECK(npu_event_create(&done[i], NPU_EVENT_DISABLE_TIMING));
	}
	CHECK(npu_event_create(&a, 0));
	CHECK(npu_event_create(&b, 0));
	CHECK(npu_event_record(a, s[0]));
	for (i = 1; i < NKERNELS; i++)
		CHECK(npu_stream_wait_event(s[i], a, 0));
	for (i = 0; i < NKERNELS; i++) {
		CHECK(npu_launch(NPU_K_TEST_SPIN, npu_grid(1, 1, 1), arg, 1, s[i], 0));
		CHECK(npu_event_record(done[i], s[i]));
		if (i)
			CHECK(npu_stream_wait_event(s[0], done[i], 0));
	}
	CHECK(npu_event_record(b, s[0]));
	CHECK(npu_event_synchronize(b));
	CHECK(npu_event_elapsed_time(&ms, a, b));
	printf("%d kernels of %.0f ms each\n", NKERNELS, SPIN_NS / 1e6);
	printf("  expected if serial:     %.1f ms\n", NKERNELS * SPIN_NS / 1e6);
	printf("  measured (device time): %.1f ms -> %.2f kernels ran at once on average\n",
	       ms, NKERNELS * SPIN_NS / 1e6 / ms);
	printf("%s\n", ms < NKERNELS * SPIN_NS / 1e6 * 0.75 ? "PASSED (concurrent)" :
	       "NOTE: kernels did not overlap");
	for (i = 0; i < NKERNELS; i++) {
		CHECK(npu_stream_destroy(s[i]));
		npu_event_destroy(done[i]);
	}
	npu_event_destroy(a);
	npu_event_destroy(b);
	return 0;
}
