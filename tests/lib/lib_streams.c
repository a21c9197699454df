/* SPDX-License-Identifier: MIT */
/*
 * lib_streams: in-order streams, concurrency across streams (device
 * timestamps overlap), CUDA's legacy default stream rules, the four Choreo
 * parallel-by forms, host functions and stream priorities. Ordering is checked through data
 * (a later kernel consumes what an earlier one wrote) and device
 * timestamps, never wall-clock time.
 */
#include "tap.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "../common/npu_caps.h"

#define LONG_NS 300000000ull	/* 300 ms of device time */
#define N 4096

static void *dx, *dy;
static float hbuf[N];

static void fill(void *d, float v, npu_stream_t s)
{
	uint64_t a[3] = { npu_arg_ptr(d), N, npu_arg_f32(v) };

	MUST(npu_launch(NPU_K_FILL_F32, npu_grid(2, 1, 1), a, 3, s, 0));
}

/* y = 2 * x */
static void scale(npu_stream_t s)
{
	uint64_t a[4] = { npu_arg_ptr(dx), npu_arg_ptr(dy), N, npu_arg_f32(2.0f) };

	MUST(npu_launch(NPU_K_SCALE_F32, npu_grid(2, 1, 1), a, 4, s, 0));
}

static float read0(void *d)
{
	MUST(npu_memcpy(hbuf, d, N * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	return hbuf[0];
}

static void test_ordering(void)
{
	npu_stream_t s;
	int i, ok = 1;

	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	/* a long chain: copy, spin, fill, scale, saxpy... in one stream */
	for (i = 0; i < 20; i++) {
		uint64_t a[4] = { npu_arg_ptr(dy), npu_arg_ptr(dx), N, npu_arg_f32(1.0f) };

		MUST(npu_memset_async(dx, 0, N * 4, s));
		MUST(spin(s, 2000000));
		fill(dy, (float)i, s);
		/* x += 1 * y */
		MUST(npu_launch(NPU_K_SAXPY_F32, npu_grid(3, 1, 1), a, 4, s, 0));
		MUST(npu_memcpy_async(hbuf, dx, N * 4, NPU_MEMCPY_DEVICE_TO_HOST, s));
		ok &= hbuf[0] == (float)i && hbuf[N - 1] == (float)i;
	}
	tap_ok(ok, "copies, fills and kernels of one stream run in order");
	MUST(npu_stream_destroy(s));
}

static void test_concurrency(void)
{
	npu_stream_t s[2];
	npu_event_t b[2], e[2];
	uint64_t tb[2], te[2];
	int i;

	for (i = 0; i < 2; i++) {
		MUST(npu_stream_create(&s[i], NPU_STREAM_NON_BLOCKING, 0));
		MUST(npu_event_create(&b[i], 0));
		MUST(npu_event_create(&e[i], 0));
	}
	for (i = 0; i < 2; i++) {
		MUST(npu_event_record(b[i], s[i]));
		MUST(spin(s[i], LONG_NS));
		MUST(npu_event_record(e[i], s[i]));
	}
	for (i = 0; i < 2; i++) {
		MUST(npu_event_synchronize(e[i]));
		MUST(npu_event_timestamp(b[i], &tb[i]));
		MUST(npu_event_timestamp(e[i], &te[i]));
	}
	tap_diag("stream 0 ran [%.1f, %.1f] ms, stream 1 [%.1f, %.1f] ms (device clock)",
		 0.0, ticks_ms(te[0] - tb[0]), ticks_ms(tb[1] - tb[0]),
		 ticks_ms(te[1] - tb[0]));
	tap_ok(tb[1] < te[0] && tb[0] < te[1],
	       "kernels of two streams overlap in device time");
	for (i = 0; i < 2; i++) {
		npu_event_destroy(b[i]);
		npu_event_destroy(e[i]);
		MUST(npu_stream_destroy(s[i]));
	}
}

static void test_legacy(void)
{
	npu_stream_t bs, nb;
	npu_event_t e1, e2;
	uint64_t t1, t2;

	MUST(npu_stream_create(&bs, 0, 0));
	MUST(npu_stream_create(&nb, NPU_STREAM_NON_BLOCKING, 0));

	/* legacy waits for a blocking stream */
	MUST(npu_memset(dx, 0, N * 4));
	MUST(npu_memset(dy, 0, N * 4));
	MUST(spin(bs, LONG_NS / 3));
	fill(dx, 1.0f, bs);
	scale(NULL);
	tap_ok(read0(dy) == 2.0f, "legacy stream waits for a blocking stream");

	/* blocking stream waits for the legacy stream */
	MUST(npu_memset(dy, 0, N * 4));
	MUST(spin(NULL, LONG_NS / 3));
	fill(dx, 3.0f, NULL);
	scale(bs);
	MUST(npu_stream_synchronize(bs));
	tap_ok(read0(dy) == 6.0f, "blocking stream waits for the legacy stream");

	/* k1<s>; k2<0>; k3<s> chain */
	MUST(npu_memset(dx, 0, N * 4));
	MUST(npu_memset(dy, 0, N * 4));
	MUST(spin(bs, LONG_NS / 3));
	fill(dx, 5.0f, bs);			/* k1<s> */
	scale(NULL);				/* k2<0>: y = 10 */
	{
		uint64_t a[4] = { npu_arg_ptr(dy), npu_arg_ptr(dx), N, npu_arg_f32(1.0f) };

		/* k3<s>: x += y  -> 15 only if k2 ran after k1 and before k3 */
		MUST(npu_launch(NPU_K_SAXPY_F32, npu_grid(2, 1, 1), a, 4, bs, 0));
	}
	MUST(npu_stream_synchronize(bs));
	tap_ok(read0(dx) == 15.0f, "k1<s>; k2<0>; k3<s> run in that order");

	/* non-blocking streams opt out, both ways (device timestamps) */
	MUST(npu_event_create(&e1, 0));
	MUST(npu_event_create(&e2, 0));
	MUST(spin(nb, LONG_NS));
	MUST(npu_event_record(e1, nb));
	MUST(npu_event_record(e2, NULL));
	MUST(npu_event_synchronize(e1));
	MUST(npu_event_synchronize(e2));
	MUST(npu_event_timestamp(e1, &t1));
	MUST(npu_event_timestamp(e2, &t2));
	tap_ok(t2 < t1, "legacy stream does not wait for a non-blocking stream "
	       "(%.1f ms before it finished)", ticks_ms(t1 - t2));
	MUST(spin(NULL, LONG_NS));
	MUST(npu_event_record(e1, NULL));
	MUST(npu_event_record(e2, nb));
	MUST(npu_event_synchronize(e1));
	MUST(npu_event_synchronize(e2));
	MUST(npu_event_timestamp(e1, &t1));
	MUST(npu_event_timestamp(e2, &t2));
	tap_ok(t2 < t1, "non-blocking stream does not wait for the legacy stream "
	       "(%.1f ms before it finished)", ticks_ms(t1 - t2));
	/* the legacy stream's synchronize covers blocking streams */
	MUST(spin(bs, LONG_NS / 3));
	MUST(npu_stream_synchronize(NULL));
	ST(npu_stream_query(bs), NPU_SUCCESS,
	   "synchronizing the legacy stream waits for blocking streams");
	npu_event_destroy(e1);
	npu_event_destroy(e2);
	MUST(npu_stream_destroy(bs));
	MUST(npu_stream_destroy(nb));
}

static void test_parallel_forms(void)
{
	npu_stream_t s, o;
	struct start_gate g;
	uint64_t a[1] = { LONG_NS };

	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&o, NPU_STREAM_NON_BLOCKING, 0));

	/* parallel<s>: launch on s, then synchronize s */
	ST(npu_parallel(NPU_K_TEST_SPIN, npu_grid(1, 1, 1), a, 1, s), NPU_SUCCESS,
	   "parallel<s>");
	ST(npu_stream_query(s), NPU_SUCCESS, "parallel<s> returned with s idle");

	/* parallel.async<s>: launch on s, return at once (behind a closed
	 * gate, so the kernel cannot have run yet) */
	start_gate_init(&g, 1);
	start_gate_enter(&g, 0, s);
	ST(npu_parallel_async(NPU_K_TEST_SPIN, npu_grid(1, 1, 1), a, 1, s),
	   NPU_SUCCESS, "parallel.async<s>");
	ST(npu_stream_query(s), NPU_ERROR_NOT_READY,
	   "parallel.async<s> returned without waiting for the kernel");
	ST(npu_stream_query(NULL), NPU_SUCCESS,
	   "parallel.async<s> did not use the default stream");
	start_gate_open(&g);
	MUST(npu_stream_synchronize(s));

	/* parallel: launch, then synchronize the whole device */
	MUST(spin(o, LONG_NS));
	ST(npu_parallel(NPU_K_TEST_SPIN, npu_grid(1, 1, 1), a, 1, NULL), NPU_SUCCESS,
	   "parallel");
	ST(npu_stream_query(o), NPU_SUCCESS,
	   "parallel synchronized the whole device (other stream idle too)");

	/* parallel.async: default stream, return at once */
	start_gate_enter(&g, 0, NULL);
	ST(npu_parallel_async(NPU_K_TEST_SPIN, npu_grid(1, 1, 1), a, 1, NULL),
	   NPU_SUCCESS, "parallel.async");
	ST(npu_stream_query(NULL), NPU_ERROR_NOT_READY,
	   "parallel.async queued on the default stream and returned");
	start_gate_open(&g);
	MUST(npu_device_synchronize());
	ST(npu_stream_query(NULL), NPU_SUCCESS, "device synchronize drains it");

	/* NPU_LAUNCH_SYNC flag is parallel<s> */
	ST(npu_launch(NPU_K_TEST_SPIN, npu_grid(1, 1, 1), a, 1, s, NPU_LAUNCH_SYNC),
	   NPU_SUCCESS, "launch with NPU_LAUNCH_SYNC");
	ST(npu_stream_query(s), NPU_SUCCESS, "NPU_LAUNCH_SYNC waited");
	MUST(npu_stream_destroy(s));
	MUST(npu_stream_destroy(o));
	start_gate_fini(&g);
}

/* host functions */
static atomic_int order[16], norder;
static float *pinned;

struct cbarg {
	int id;
	float seen;
};

static void cb(void *p)
{
	struct cbarg *a = p;

	a->seen = pinned[0];		/* the D2H before us has landed */
	pinned[1] = 42.0f;		/* the H2D after us must see this */
	order[atomic_fetch_add(&norder, 1)] = a->id;
}

static void cb_plain(void *p)
{
	order[atomic_fetch_add(&norder, 1)] = ((struct cbarg *)p)->id;
}

static void test_host_func(void)
{
	npu_stream_t s, s2;
	struct cbarg a1 = { 1, 0 }, a2 = { 2, 0 }, a3 = { 3, 0 };
	float out;
	npu_event_t e;

	MUST(npu_host_alloc((void **)&pinned, 4096, 0));
	pinned[0] = pinned[1] = 0;
	MUST(npu_stream_create(&s, 0, 0));
	MUST(npu_stream_create(&s2, NPU_STREAM_NON_BLOCKING, 0));
	MUST(spin(s, LONG_NS / 3));
	fill(dx, 7.0f, s);
	MUST(npu_memcpy_async(pinned, dx, 4, NPU_MEMCPY_DEVICE_TO_HOST, s));
	ST(npu_launch_host_func(s, cb, &a1), NPU_SUCCESS, "launch host func");
	MUST(npu_memcpy_async((char *)dy + 4, pinned + 1, 4, NPU_MEMCPY_HOST_TO_DEVICE, s));
	MUST(npu_launch_host_func(s, cb_plain, &a2));
	/* a second stream waits for an event recorded after the callbacks */
	MUST(npu_event_create(&e, NPU_EVENT_DISABLE_TIMING));
	MUST(npu_event_record(e, s));
	MUST(npu_stream_wait_event(s2, e, 0));
	MUST(npu_launch_host_func(s2, cb_plain, &a3));
	MUST(npu_stream_synchronize(s2));
	MUST(npu_stream_synchronize(s));
	tap_ok(a1.seen == 7.0f, "host function ran after the prior copy (saw %g)",
	       a1.seen);
	MUST(npu_memcpy(&out, (char *)dy + 4, 4, NPU_MEMCPY_DEVICE_TO_HOST));
	tap_ok(out == 42.0f, "work after the host function saw its write (%g)", out);
	tap_ok(norder == 3 && order[0] == 1 && order[1] == 2 && order[2] == 3,
	       "host functions ran in stream and event order");
	ST(npu_launch_host_func(s, NULL, NULL), NPU_ERROR_INVALID_VALUE,
	   "NULL host function");
	npu_event_destroy(e);
	MUST(npu_stream_destroy(s));
	MUST(npu_stream_destroy(s2));
	MUST(npu_host_free(pinned));
}

/* a host function that blocks until released: later work must wait */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_open, gate_entered;

static void gate(void *p)
{
	(void)p;
	pthread_mutex_lock(&gate_lock);
	gate_entered = 1;
	pthread_cond_broadcast(&gate_cond);
	while (!gate_open)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
}

static int done_flag;

static void set_done(void *p)
{
	(void)p;
	done_flag = 1;
}

static void test_blocking_host_func(void)
{
	npu_stream_t s, r, w;
	npu_event_t e;
	float v;

	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&r, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&w, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_event_create(&e, 0));
	MUST(npu_memset(dx, 0, N * 4));
	MUST(npu_memset(dy, 0, N * 4));
	MUST(npu_launch_host_func(s, gate, NULL));
	fill(dx, 5.0f, s);			/* must wait for the gate */
	MUST(npu_event_record(e, s));
	MUST(npu_stream_wait_event(w, e, 0));
	fill(dy, 6.0f, w);			/* must wait for the event */
	pthread_mutex_lock(&gate_lock);
	while (!gate_entered)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	MUST(spin(r, 20000000));		/* give wrong code a chance */
	MUST(npu_stream_synchronize(r));
	MUST(npu_memcpy_async(&v, dx, 4, NPU_MEMCPY_DEVICE_TO_HOST, r));
	tap_ok(v == 0.0f, "work queued after a blocked host function waits");
	MUST(npu_memcpy_async(&v, dy, 4, NPU_MEMCPY_DEVICE_TO_HOST, r));
	tap_ok(v == 0.0f, "and so does another stream waiting on an event "
	       "recorded behind it");
	ST(npu_stream_query(s), NPU_ERROR_NOT_READY, "the stream is not idle");
	ST(npu_event_query(e), NPU_ERROR_NOT_READY, "the event is not complete");
	pthread_mutex_lock(&gate_lock);
	gate_open = 1;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
	MUST(npu_stream_synchronize(w));
	MUST(npu_memcpy_async(&v, dx, 4, NPU_MEMCPY_DEVICE_TO_HOST, r));
	tap_ok(v == 5.0f, "after the release the stream's work ran");
	MUST(npu_memcpy_async(&v, dy, 4, NPU_MEMCPY_DEVICE_TO_HOST, r));
	tap_ok(v == 6.0f, "and the waiting stream's work too");

	/* destroy waits for pending work, host functions included */
	MUST(spin(s, 50000000));
	MUST(npu_launch_host_func(s, set_done, NULL));
	ST(npu_stream_destroy(s), NPU_SUCCESS, "destroy a stream with pending work");
	tap_ok(done_flag == 1, "its pending host function ran before destroy returned");

	/* synchronous npu_memcpy waits for blocking streams (legacy rules) */
	{
		npu_stream_t b;

		MUST(npu_stream_create(&b, 0, 0));
		MUST(spin(b, 50000000));
		fill(dx, 8.0f, b);
		MUST(npu_memcpy(&v, dx, 4, NPU_MEMCPY_DEVICE_TO_HOST));
		tap_ok(v == 8.0f, "npu_memcpy waits for prior work of blocking streams");
		MUST(npu_stream_destroy(b));
	}
	npu_event_destroy(e);
	MUST(npu_stream_destroy(r));
	MUST(npu_stream_destroy(w));
}

/*
 * Stream priorities (cudaStreamCreateWithPriority): clamped to the range;
 * the highest needs CAP_SYS_NICE from the driver, and without it the
 * stream is created at the default priority, which it then reports.
 * Status of the child: 0 or the failing step.
 */
static int priorities(int expect_high)
{
	uint32_t *p;
	npu_stream_t s;
	int least, greatest, prio, i;

	if (npu_stream_priority_range(&least, &greatest) || least != 1 ||
	    greatest != -1)
		return 1;
	if (npu_stream_create(&s, NPU_STREAM_DEFAULT, -5) ||
	    npu_stream_get_priority(s, &prio) || prio != expect_high)
		return 2;
	if (npu_malloc((void **)&p, 4096) ||
	    npu_memset_async(p, 0x5a, 4096, s) || npu_stream_synchronize(s))
		return 3;
	if (npu_memcpy(hbuf, p, 4096, NPU_MEMCPY_DEVICE_TO_HOST))
		return 4;
	for (i = 0; i < 1024; i++)
		if (((uint32_t *)hbuf)[i] != 0x5a5a5a5au)
			return 5;
	if (npu_stream_destroy(s) || npu_free(p))
		return 6;
	if (npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 7) ||
	    npu_stream_get_priority(s, &prio) || prio != 1 ||
	    npu_stream_destroy(s))
		return 7;
	return 0;
}

/* In fresh children: the library must not be initialised across fork(). */
static void test_priorities(void)
{
	int drop, status;

	for (drop = 0; drop < 2; drop++) {
		pid_t pid = fork();

		if (pid == 0) {
			int n = 0;

			if (drop && npu_drop_cap(CAP_SYS_NICE))
				_exit(100);
			if (npu_device_count(&n) || n < 1)
				_exit(99);	/* main() reports the skip */
			_exit(priorities(drop ? 0 : -1));
		}
		status = -1;
		if (pid > 0)
			waitpid(pid, &status, 0);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 99)
			return;
		tap_ok(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		       "priority -5 gives %s%s (child status %d)",
		       drop ? "0 without CAP_SYS_NICE" : "-1",
		       ", 7 gives 1, the stream works",
		       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
}

int main(void)
{
	test_priorities();	/* first: forks before the library starts */
	tap_need_device();
	MUST(npu_malloc(&dx, N * 4));
	MUST(npu_malloc(&dy, N * 4));
	test_ordering();
	test_concurrency();
	test_legacy();
	test_parallel_forms();
	test_host_func();
	test_blocking_host_func();
	npu_free(dx);
	npu_free(dy);
	return tap_done();
}
