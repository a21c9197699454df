/* SPDX-License-Identifier: MIT */
/*
 * streamPriorities - port of CUDA's StreamPriorities sample: a low and a
 * high priority stream that share the device. Each gets a burst of
 * kernels; the high priority stream's burst is queued second. The time
 * each stream needs (device events) shows how priority orders the work.
 */
#include "common.h"

#define KERNELS 16
#define SPIN_NS 5000000ull		/* 5 ms each */

int main(void)
{
	npu_stream_t lo, hi;
	npu_event_t la, lb, ha, hb;
	int least, greatest, plo, phi, i;
	uint64_t arg[1] = { SPIN_NS };
	float lms, hms, lend, hend, hstart;

	print_device();
	CHECK(npu_stream_priority_range(&least, &greatest));
	printf("stream priorities: least %d, greatest %d\n", least, greatest);
	CHECK(npu_stream_create(&lo, NPU_STREAM_NON_BLOCKING, least));
	CHECK(npu_stream_create(&hi, NPU_STREAM_NON_BLOCKING, greatest));
	CHECK(npu_stream_get_priority(lo, &plo));
	CHECK(npu_stream_get_priority(hi, &phi));
	CHECK(npu_event_create(&la, 0));
	CHECK(npu_event_create(&lb, 0));
	CHECK(npu_event_create(&ha, 0));
	CHECK(npu_event_create(&hb, 0));

	CHECK(npu_event_record(la, lo));
	for (i = 0; i < KERNELS; i++)
		CHECK(npu_launch(NPU_K_TEST_SPIN, npu_grid(8, 1, 1), arg, 1, lo, 0));
	CHECK(npu_event_record(lb, lo));
	CHECK(npu_event_record(ha, hi));
	for (i = 0; i < KERNELS; i++)
		CHECK(npu_launch(NPU_K_TEST_SPIN, npu_grid(8, 1, 1), arg, 1, hi, 0));
	CHECK(npu_event_record(hb, hi));
	CHECK(npu_device_synchronize());
	CHECK(npu_event_elapsed_time(&lms, la, lb));
	CHECK(npu_event_elapsed_time(&hms, ha, hb));
	CHECK(npu_event_elapsed_time(&lend, la, lb));
	CHECK(npu_event_elapsed_time(&hstart, la, ha));
	CHECK(npu_event_elapsed_time(&hend, la, hb));
	printf("%d kernels of %.0f ms over 8 blocks per stream (all units)\n",
	       KERNELS, SPIN_NS / 1e6);
	printf("  low priority  (%2d): queued first,  ran %.2f ms, done at +%.2f ms\n",
	       plo, lms, lend);
	printf("  high priority (%2d): queued second, ran %.2f ms, started at +%.2f ms,"
	       " done at +%.2f ms\n", phi, hms, hstart, hend);
	printf("note: priority orders jobs waiting for the same ring; streams on\n"
	       "different rings compete for compute units as equals\n");
	CHECK(npu_stream_destroy(lo));
	CHECK(npu_stream_destroy(hi));
	npu_event_destroy(la);
	npu_event_destroy(lb);
	npu_event_destroy(ha);
	npu_event_destroy(hb);
	return 0;
}
