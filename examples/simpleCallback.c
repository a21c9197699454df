/* SPDX-License-Identifier: MIT */
/*
 * simpleCallback - port of CUDA's simpleCallback sample: several "workers",
 * each with its own stream, queue copy in, kernel, copy out, then a host
 * function that checks the result as soon as that worker's data is back;
 * the main thread only waits for all of them at the end.
 */
#include <stdatomic.h>

#include "common.h"

#define WORKERS 6

struct worker {
	int id;
	int n;
	float *h;
	void *d;
	npu_stream_t s;
	int ok;
	double done_ms;
};

static atomic_int finished;
static double t_start;

static void check_result(void *p)
{
	struct worker *w = p;
	int i;

	w->ok = 1;
	for (i = 0; i < w->n; i++)
		if (w->h[i] != (float)w->id * 3.0f)
			w->ok = 0;
	w->done_ms = host_ms() - t_start;
	atomic_fetch_add(&finished, 1);
}

int main(void)
{
	struct worker w[WORKERS];
	int i, all_ok = 1;

	print_device();
	for (i = 0; i < WORKERS; i++) {
		w[i].id = i;
		w[i].n = (1 << 18) * (i + 1);
		CHECK(npu_host_alloc((void **)&w[i].h, (size_t)w[i].n * 4, 0));
		CHECK(npu_malloc(&w[i].d, (size_t)w[i].n * 4));
		CHECK(npu_stream_create(&w[i].s, 0, 0));
		for (int j = 0; j < w[i].n; j++)
			w[i].h[j] = (float)i;
	}
	t_start = host_ms();
	for (i = 0; i < WORKERS; i++) {
		uint64_t sc[4] = { npu_arg_ptr(w[i].d), npu_arg_ptr(w[i].d),
				   (uint64_t)w[i].n, npu_arg_f32(3.0f) };

		CHECK(npu_memcpy_async(w[i].d, w[i].h, (size_t)w[i].n * 4,
				       NPU_MEMCPY_HOST_TO_DEVICE, w[i].s));
		/* d = 3 * d */
		CHECK(npu_launch(NPU_K_SCALE_F32, npu_grid(4, 1, 1), sc, 4, w[i].s, 0));
		CHECK(npu_memcpy_async(w[i].h, w[i].d, (size_t)w[i].n * 4,
				       NPU_MEMCPY_DEVICE_TO_HOST, w[i].s));
		CHECK(npu_launch_host_func(w[i].s, check_result, &w[i]));
	}
	printf("main thread queued %d workers in %.2f ms and waits\n", WORKERS,
	       host_ms() - t_start);
	CHECK(npu_device_synchronize());
	for (i = 0; i < WORKERS; i++) {
		int ok = w[i].ok;

		printf("  worker %d: %7d floats, callback ran at %.2f ms, result checked by the callback: %s\n",
		       i, w[i].n, w[i].done_ms, ok ? "correct" : "WRONG");
		all_ok &= ok;
		CHECK(npu_stream_destroy(w[i].s));
		npu_free(w[i].d);
		npu_host_free(w[i].h);
	}
	printf("%d host callbacks ran; %s\n", (int)finished,
	       all_ok && finished == WORKERS ? "PASSED" : "FAILED");
	return all_ok && finished == WORKERS ? 0 : 1;
}
