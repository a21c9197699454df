/* SPDX-License-Identifier: MIT */
/*
 * lib_threads: many threads on one device (each with its own stream, plus
 * all of them on the legacy stream and on one shared stream), results
 * checked against the CPU; and no file descriptors leaked after destroying
 * everything (/proc/self/fd is counted).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

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

/*
 * Copies the CPU does (host to host, and a pageable side through a pinned
 * bounce buffer) must not hold the device lock while the bytes move:
 * another thread's queries and launches go on meanwhile. A prober thread
 * times each of its calls while the main thread copies.
 */
static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static struct {
	atomic_int state;		/* 0 wait, 1 probe, 2 stop */
	npu_stream_t s;
	int calls, errors;
	double max_ms;
} probe;

static void *probe_main(void *arg)
{
	(void)arg;
	while (atomic_load(&probe.state) == 0)
		;
	while (atomic_load(&probe.state) == 1) {
		double t0 = mono_ms(), t1;
		npu_status_t q = npu_stream_query(probe.s);

		if (q && q != NPU_ERROR_NOT_READY)
			probe.errors++;
		if (npu_launch(NPU_K_NOP, npu_grid(1, 1, 1), NULL, 0, probe.s, 0))
			probe.errors++;
		t1 = mono_ms();
		if (t1 - t0 > probe.max_ms)
			probe.max_ms = t1 - t0;
		if (++probe.calls % 64 == 0 && npu_stream_synchronize(probe.s))
			probe.errors++;
	}
	return NULL;
}

/* Run copy() while the prober runs; its time in ms. */
static double probed(void (*copy)(void *), void *arg)
{
	pthread_t t;
	double t0, t1;

	probe.calls = probe.errors = 0;
	probe.max_ms = 0;
	atomic_store(&probe.state, 0);
	pthread_create(&t, NULL, probe_main, NULL);
	atomic_store(&probe.state, 1);
	t0 = mono_ms();
	copy(arg);
	t1 = mono_ms();
	atomic_store(&probe.state, 2);
	pthread_join(t, NULL);
	return t1 - t0;
}

struct copy_args {
	void *dst;
	const void *src;
	size_t n;
	npu_memcpy_kind_t kind;
	npu_status_t st;
};

static void do_copy(void *arg)
{
	struct copy_args *c = arg;

	c->st = npu_memcpy(c->dst, c->src, c->n, c->kind);
}

static void test_copy_unlocked(void)
{
	enum { H2H = 64 << 20, STAGED = 4 << 20 };
	unsigned char *a = malloc(H2H), *b = malloc(H2H);
	struct copy_args c;
	void *d;
	double ms;
	size_t i;
	int ok = 1;

	MUST(npu_stream_create(&probe.s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_malloc(&d, STAGED));
	for (i = 0; i < H2H; i++)
		a[i] = (unsigned char)(i * 7 + i / 4096);
	memset(b, 0, H2H);		/* pages present: no faults timed */

	c = (struct copy_args){ b, a, H2H, NPU_MEMCPY_HOST_TO_HOST, 0 };
	ms = probed(do_copy, &c);
	tap_ok(c.st == NPU_SUCCESS && !memcmp(a, b, H2H),
	       "64 MiB host-to-host copy (%.1f ms)", ms);
	tap_diag("  meanwhile another thread: %d query + launch pairs, longest "
		 "%.2f ms, %d errors", probe.calls, probe.max_ms, probe.errors);
	tap_ok(probe.errors == 0 && probe.calls >= 10 && probe.max_ms < ms / 4,
	       "another thread's queries and launches were not held for the "
	       "copy (longest %.2f ms of %.1f)", probe.max_ms, ms);

	c = (struct copy_args){ d, a, STAGED, NPU_MEMCPY_HOST_TO_DEVICE, 0 };
	ms = probed(do_copy, &c);
	tap_diag("4 MiB pageable host-to-device copy (bounce buffer) %.1f ms; "
		 "another thread: %d pairs, longest %.2f ms", ms, probe.calls,
		 probe.max_ms);
	tap_ok(c.st == NPU_SUCCESS && probe.errors == 0 && probe.max_ms < ms / 4,
	       "... not held for the bounce-buffer fill (longest %.2f ms of %.1f)",
	       probe.max_ms, ms);
	memset(b, 0, STAGED);
	c = (struct copy_args){ b, d, STAGED, NPU_MEMCPY_DEVICE_TO_HOST, 0 };
	ms = probed(do_copy, &c);
	for (i = 0; i < STAGED; i++)
		ok &= a[i] == b[i];
	tap_diag("4 MiB device-to-pageable copy (bounce buffer) %.1f ms; "
		 "another thread: %d pairs, longest %.2f ms", ms, probe.calls,
		 probe.max_ms);
	tap_ok(c.st == NPU_SUCCESS && ok, "the data made the round trip");
	tap_ok(probe.errors == 0 && probe.max_ms < ms / 4,
	       "... not held for the bounce-buffer drain (longest %.2f ms of %.1f)",
	       probe.max_ms, ms);
	MUST(npu_stream_destroy(probe.s));
	MUST(npu_free(d));
	free(a);
	free(b);
}

int main(void)
{
	tap_need_device();
	test_threads();
	test_copy_unlocked();
	test_many_streams();
	test_fd_leaks();
	return tap_done();
}
