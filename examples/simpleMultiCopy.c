/* SPDX-License-Identifier: MIT */
/*
 * simpleMultiCopy - port of CUDA's simpleMultiCopy sample: a pipeline of
 * copy in -> kernel -> copy out over several buffers and streams, so that
 * the two copy engines and the compute units work at the same time.
 * Compares a serial run with the overlapped run (device events).
 */
#include "common.h"

#define STREAMS 4
#define ITERS 16

int main(void)
{
	const int n = 1 << 20;			/* 4 MiB per buffer */
	const size_t bytes = (size_t)n * 4;
	npu_stream_t s[STREAMS];
	float *in[STREAMS], *out[STREAMS];
	void *din[STREAMS], *dout[STREAMS];
	npu_event_t a, b;
	float serial_ms, overlap_ms;
	int i, k, errors = 0;

	print_device();
	for (k = 0; k < STREAMS; k++) {
		CHECK(npu_stream_create(&s[k], NPU_STREAM_NON_BLOCKING, 0));
		CHECK(npu_host_alloc((void **)&in[k], bytes, 0));
		CHECK(npu_host_alloc((void **)&out[k], bytes, 0));
		CHECK(npu_malloc(&din[k], bytes));
		CHECK(npu_malloc(&dout[k], bytes));
		for (i = 0; i < n; i++)
			in[k][i] = (float)(i % 1000) + (float)k;
	}
	CHECK(npu_event_create(&a, 0));
	CHECK(npu_event_create(&b, 0));

	for (int pass = 0; pass < 2; pass++) {
		int ns = pass == 0 ? 1 : STREAMS;

		CHECK(npu_device_synchronize());
		CHECK(npu_event_record(a, s[0]));
		for (k = 1; k < ns; k++)
			CHECK(npu_stream_wait_event(s[k], a, 0));
		for (int it = 0; it < ITERS; it++) {
			int j = it % ns, bidx = it % STREAMS;
			uint64_t sc[4] = { npu_arg_ptr(din[bidx]), npu_arg_ptr(dout[bidx]),
					   (uint64_t)n, npu_arg_f32(2.0f) };

			CHECK(npu_memcpy_async(din[bidx], in[bidx], bytes,
					       NPU_MEMCPY_HOST_TO_DEVICE, s[j]));
			CHECK(npu_launch(NPU_K_SCALE_F32, npu_grid(4, 1, 1), sc, 4, s[j], 0));
			CHECK(npu_memcpy_async(out[bidx], dout[bidx], bytes,
					       NPU_MEMCPY_DEVICE_TO_HOST, s[j]));
		}
		/* join: s[0] waits for the others, then records the end */
		for (k = 1; k < ns; k++) {
			npu_event_t e;

			CHECK(npu_event_create(&e, NPU_EVENT_DISABLE_TIMING));
			CHECK(npu_event_record(e, s[k]));
			CHECK(npu_stream_wait_event(s[0], e, 0));
			CHECK(npu_event_destroy(e));
		}
		CHECK(npu_event_record(b, s[0]));
		CHECK(npu_event_synchronize(b));
		CHECK(npu_event_elapsed_time(pass == 0 ? &serial_ms : &overlap_ms, a, b));
	}
	for (k = 0; k < STREAMS; k++)
		for (i = 0; i < n; i++)
			if (out[k][i] != 2.0f * in[k][i])
				errors++;
	double mb = (double)ITERS * 2 * bytes / 1e6;

	printf("%d x (copy in %zu MiB, scale, copy out %zu MiB)\n", ITERS,
	       bytes >> 20, bytes >> 20);
	printf("  serial (1 stream):          %.2f ms, %.0f MB/s of copies\n",
	       serial_ms, mb / (serial_ms / 1e3));
	printf("  overlapped (%d streams):     %.2f ms, %.0f MB/s of copies, "
	       "speed-up %.2fx\n", STREAMS, overlap_ms, mb / (overlap_ms / 1e3),
	       serial_ms / overlap_ms);
	printf("%s: %d wrong values\n", errors ? "FAILED" : "PASSED", errors);
	for (k = 0; k < STREAMS; k++) {
		CHECK(npu_stream_destroy(s[k]));
		npu_host_free(in[k]);
		npu_host_free(out[k]);
		npu_free(din[k]);
		npu_free(dout[k]);
	}
	npu_event_destroy(a);
	npu_event_destroy(b);
	return errors ? 1 : 0;
}
