/* SPDX-License-Identifier: MIT */
/*
 * lib_threads: many threads on one device (each with its own stream, plus
 * all of them on the legacy stream and on one shared stream), results
 * checked against the CPU; and no file descriptors leaked after destroying
 * everything (/proc/self/fd is counted).
 */
#include <pthread.h>
#include <stdatomic.h>

#include "tap.h"

#define THREADS 8
#define ITERS 25
#define N 8192

static npu_stream_t shared;
static atomic_int failures, callbacks;

static void cb(void *p)
{
	(void)p;
	atomic_fetch_add(&callbacks, 1);
}

static void *thread_main(void *arg)
{
	int id = (int)(intptr_t)arg, it, i;
	float *x = malloc(N * 4), *o = malloc(N * 4);
	npu_stream_t s;
	npu_event_t e;
	void *dx, *dy;

	if (npu_stream_create(&s, id % 2 ? NPU_STREAM_NON_BLOCKING : 0, id % 3 - 1) ||
	    npu_event_create(&e, 0) || npu_malloc(&dx, N * 4) ||
	    npu_malloc(&dy, N * 4)) {
		atomic_fetch_add(&failures, 1);
		return NULL;
	}
	for (it = 0; it < ITERS; it++) {
		npu_stream_t use = it % 5 == 4 ? NULL : it % 5 == 3 ? shared : s;
		float a = (float)(id + it);

		for (i = 0; i < N; i++)
			x[i] = (float)(i % 17) + (float)id;
		uint64_t fa[3] = { npu_arg_ptr(dy), N, npu_arg_f32(1.0f) };
		uint64_t sa[4] = { npu_arg_ptr(dx), npu_arg_ptr(dy), N, npu_arg_f32(a) };

		if (npu_memcpy_async(dx, x, N * 4, NPU_MEMCPY_HOST_TO_DEVICE, use) ||
		    npu_launch(NPU_K_FILL_F32, npu_grid(2, 1, 1), fa, 3, use, 0) ||
		    npu_launch(NPU_K_SAXPY_F32, npu_grid(2, 1, 1), sa, 4, use, 0) ||
		    npu_event_record(e, use) ||
		    npu_launch_host_func(use, cb, NULL) ||
		    npu_memcpy_async(o, dy, N * 4, NPU_MEMCPY_DEVICE_TO_HOST, use) ||
		    npu_event_synchronize(e)) {
			atomic_fetch_add(&failures, 1);
			break;
		}
		for (i = 0; i < N; i++)
			if (!feq(o[i], 1.0f + a * x[i])) {
				atomic_fetch_add(&failures, 1);
				break;
			}
	}
	if (npu_stream_destroy(s) || npu_event_destroy(e) || npu_free(dx) ||
	    npu_free(dy))
		atomic_fetch_add(&failures, 1);
	free(x);
	free(o);
	return NULL;
}

static void test_threads(void)
{
	pthread_t t[THREADS];
	int i;

	MUST(npu_stream_create(&shared, 0, 0));
	for (i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)i);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	MUST(npu_device_synchronize());
	tap_ok(failures == 0, "%d threads x %d iterations on own, shared and legacy "
	       "streams: %d failures", THREADS, ITERS, (int)failures);
	tap_ok(callbacks == THREADS * ITERS, "all %d host functions ran",
	       (int)callbacks);
	MUST(npu_stream_destroy(shared));
}

static void test_fd_leaks(void)
{
	int before, after, i, fd;
	npu_stream_t s[20];
	npu_event_t e[50];
	void *p[10];

	MUST(npu_device_synchronize());		/* library and device open */
	before = count_fds();
	for (i = 0; i < 20; i++) {
		MUST(npu_stream_create(&s[i], i % 2, 0));
		MUST(spin(s[i], 1000));
		MUST(npu_launch_host_func(s[i], cb, NULL));
	}
	for (i = 0; i < 50; i++) {
		MUST(npu_event_create(&e[i], 0));
		MUST(npu_event_record(e[i], s[i % 20]));
		MUST(npu_event_export_fd(e[i], &fd));
		close(fd);
	}
	for (i = 0; i < 10; i++)
		MUST(i % 2 ? npu_host_alloc(&p[i], 65536, 0) : npu_malloc(&p[i], 65536));
	for (i = 0; i < 20; i++)
		MUST(npu_stream_destroy(s[i]));
	for (i = 0; i < 50; i++)
		MUST(npu_event_destroy(e[i]));
	for (i = 0; i < 10; i++)
		MUST(i % 2 ? npu_host_free(p[i]) : npu_free(p[i]));
	after = count_fds();
	tap_ok(before == after, "no fd leaked after destroying 20 streams, 50 "
	       "events, 10 allocations (%d -> %d)", before, after);
}

/* more blocking streams with pending work than one job can wait on: the
 * legacy stream must still wait for all of them */
static void test_many_streams(void)
{
	enum { NS = 100, PER = 256 };
	npu_stream_t s[NS];
	float *h = malloc(NS * PER * 4);
	void *d;
	int i, j, ok = 1;

	MUST(npu_malloc(&d, NS * PER * 4));
	MUST(npu_memset(d, 0, NS * PER * 4));
	for (i = 0; i < NS; i++) {
		uint64_t a[3] = { npu_arg_ptr((char *)d + i * PER * 4), PER,
				  npu_arg_f32((float)i) };

		MUST(npu_stream_create(&s[i], 0, 0));
		MUST(spin(s[i], 1000000));
		MUST(npu_launch(NPU_K_FILL_F32, npu_grid(1, 1, 1), a, 3, s[i], 0));
	}
	ST(npu_memcpy(h, d, NS * PER * 4, NPU_MEMCPY_DEVICE_TO_HOST), NPU_SUCCESS,
	   "legacy copy after work on %d blocking streams", NS);
	for (i = 0; i < NS; i++)
		for (j = 0; j < PER; j++)
			ok &= h[i * PER + j] == (float)i;
	tap_ok(ok, "it waited for all %d streams", NS);
	for (i = 0; i < NS; i++)
		MUST(npu_stream_destroy(s[i]));
	npu_free(d);
	free(h);
}

int main(void)
{
	tap_need_device();
	test_threads();
	test_many_streams();
	test_fd_leaks();
	return tap_done();
}
