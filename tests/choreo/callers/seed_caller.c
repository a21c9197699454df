/* SPDX-License-Identifier: MIT */
/*
 * seed_caller: the C side of tests/choreo/seed.co, linked with the object
 * and header `npu-choreo build --header` makes of it. Checks the results
 * of each __co__ function and what each parallel-by form promises about
 * streams: parallel.async<s> returns before its kernel ends,
 * parallel<s> waits for s, parallel waits for the whole device,
 * parallel.async is ordered on the legacy default stream. "Before" and
 * "after" are made certain with start gates (tests/lib/tap.h): work
 * behind a closed gate has provably not run, whatever the timing mode.
 */
#include "tap.h"

#include <pthread.h>
#include <stdatomic.h>

#include <npu/npu_choreo.h>
#include "seed.h"

#define SEED_REP 20000	/* REP in seed.co */
#define FOO_M 64
#define FOO_N 32
#define BAR_M 16

static struct npu_choreo_view f32_view(float *data, size_t n)
{
	struct npu_choreo_view v;

	memset(&v, 0, sizeof(v));
	v.data = data;
	v.elem = NPU_CHOREO_F32;
	v.rank = 1;
	v.dims[0] = n;
	return v;
}

static float *pinned_floats(size_t n)
{
	void *p;

	MUST(npu_host_alloc(&p, n * sizeof(float), NPU_HOST_ALLOC_MAPPED));
	return p;
}

/* Opens a gate from another thread after delay_ms unless cancelled first
 * (sooner than the driver ends a job waiting at a gate, 2 s),
 * so that a function that wrongly waits for gated work cannot hang the
 * test: it returns late and the checks fail instead. */
struct gate_opener {
	struct start_gate *gate;
	uint32_t seq;
	unsigned int delay_ms;
	atomic_int cancel;
	atomic_int opened;
	pthread_t thread;
};

static void *gate_opener_main(void *arg)
{
	struct gate_opener *o = arg;
	unsigned int ms;

	for (ms = 0; ms < o->delay_ms && !atomic_load(&o->cancel); ms++)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	if (!atomic_load(&o->cancel)) {
		__atomic_store_n(&o->gate->w[0], o->seq, __ATOMIC_RELEASE);
		atomic_store(&o->opened, 1);
	}
	return NULL;
}

static void gate_opener_start(struct gate_opener *o, struct start_gate *g,
			      unsigned int delay_ms)
{
	o->gate = g;
	o->seq = g->seq;
	o->delay_ms = delay_ms;
	atomic_init(&o->cancel, 0);
	atomic_init(&o->opened, 0);
	if (pthread_create(&o->thread, NULL, gate_opener_main, o)) {
		tap_ok(0, "pthread_create");
		exit(tap_done() | 1);
	}
}

/* Stop the opener (if it has not fired), open the gate and start the
 * gate's next round. */
static void gate_opener_finish(struct gate_opener *o)
{
	atomic_store(&o->cancel, 1);
	pthread_join(o->thread, NULL);
	__atomic_store_n(&o->gate->w[0], o->seq, __ATOMIC_RELEASE);
	o->gate->seq = o->seq + 1;
}

static void test_foo(void)
{
	npu_stream_t s0, s1;
	struct start_gate gate;
	struct gate_opener opener;
	float *a = pinned_floats(FOO_M), *b = pinned_floats(FOO_N);
	npu_trace_record rec[64];
	size_t n = 64, i, nk = 0;
	npu_trace_record *k[2] = { NULL, NULL };
	int ok_a = 1, ok_b = 1;
	npu_status_t st, q0, q1;
	npu_device_prop prop;

	for (i = 0; i < FOO_M; i++)
		a[i] = (float)i;
	for (i = 0; i < FOO_N; i++)
		b[i] = 100.0f + (float)i;
	MUST(npu_device_get_properties(&prop, 0));
	MUST(npu_stream_create(&s0, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&s1, NPU_STREAM_NON_BLOCKING, 0));
	start_gate_init(&gate, 2);
	MUST(npu_device_synchronize());
	MUST(npu_profiler_start());
	start_gate_enter(&gate, 0, s0);
	start_gate_enter(&gate, 1, s1);
	gate_opener_start(&opener, &gate, 1000);

	st = foo(s0, s1, f32_view(a, FOO_M), f32_view(b, FOO_N));
	q0 = npu_stream_query(s0);
	q1 = npu_stream_query(s1);
	tap_ok(st == NPU_SUCCESS, "foo returns NPU_SUCCESS (%s)", npu_status_name(st));
	tap_ok(!atomic_load(&opener.opened),
	       "foo (parallel.async<s0>, parallel.async<s1>) returns while both streams are held at a gate");
	tap_ok(q0 == NPU_ERROR_NOT_READY && q1 == NPU_ERROR_NOT_READY,
	       "right after foo returns, s0 and s1 are not ready (%s, %s)",
	       npu_status_name(q0), npu_status_name(q1));
	tap_ok(a[5] == 5.0f && b[5] == 105.0f, "foo's kernels have not run behind the closed gate");

	tap_ok(start_gate_open(&gate), "both streams reached the gate");
	atomic_store(&opener.cancel, 1);
	pthread_join(opener.thread, NULL);
	MUST(npu_stream_synchronize(s0));
	MUST(npu_stream_synchronize(s1));
	MUST(npu_profiler_stop());
	for (i = 0; i < FOO_M; i++)
		if (a[i] != ((float)i + SEED_REP) * 2.0f)
			ok_a = 0;
	for (i = 0; i < FOO_N; i++)
		if (b[i] != 100.0f + (float)i + SEED_REP * 0.5f)
			ok_b = 0;
	tap_ok(ok_a, "foo: a[i] = (i + REP) * 2 (a[3] = %g)", a[3]);
	tap_ok(ok_b, "foo: b[i] = b[i] + REP * 0.5 (b[3] = %g)", b[3]);

	MUST(npu_trace_get_records(rec, &n));
	for (i = 0; i < n; i++)
		if (rec[i].kind == NPU_TRACE_KERNEL && rec[i].kernel == NPU_TRACE_USER_KERNEL) {
			if (nk < 2)
				k[nk] = &rec[i];
			nk++;
		}
	tap_ok(nk == 2, "the trace holds foo's two kernel launches (%zu)", nk);
	if (nk == 2) {
		tap_ok(k[0]->grid.x == 4 && k[1]->grid.x == 4 && k[0]->stream_id != k[1]->stream_id,
		       "4 blocks each, on two streams (ids %llu, %llu)",
		       (unsigned long long)k[0]->stream_id, (unsigned long long)k[1]->stream_id);
		tap_diag("kernel 0: [%llu, %llu], kernel 1: [%llu, %llu] ticks",
			 (unsigned long long)k[0]->start, (unsigned long long)k[0]->end,
			 (unsigned long long)k[1]->start, (unsigned long long)k[1]->end);
		if (prop.compute_rings < 2)
			tap_skip("one compute ring: the two streams cannot run at once");
		else
			tap_ok(k[0]->start < k[0]->end && k[1]->start < k[1]->end &&
			       k[0]->start < k[1]->end && k[1]->start < k[0]->end,
			       "the two kernels' device intervals overlap");
	}
	start_gate_fini(&gate);
	MUST(npu_stream_destroy(s0));
	MUST(npu_stream_destroy(s1));
	MUST(npu_host_free(a));
	MUST(npu_host_free(b));
}

static void test_bar(void)
{
	npu_stream_t s;
	struct start_gate gate;
	struct gate_opener opener;
	float *a = pinned_floats(BAR_M);
	npu_status_t st, q;
	int ok = 1, waited;
	size_t i;

	for (i = 0; i < BAR_M; i++)
		a[i] = 10.0f * (float)i;
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	start_gate_init(&gate, 1);
	start_gate_enter(&gate, 0, s);
	gate_opener_start(&opener, &gate, 300);
	st = bar(s, f32_view(a, BAR_M));
	waited = atomic_load(&opener.opened);
	q = npu_stream_query(s);
	gate_opener_finish(&opener);
	tap_ok(st == NPU_SUCCESS, "bar returns NPU_SUCCESS (%s)", npu_status_name(st));
	tap_ok(waited, "bar (parallel<_s>) returns only after the gate ahead of its kernel on _s opened");
	tap_ok(q == NPU_SUCCESS, "after bar returns, _s is idle (%s)", npu_status_name(q));
	for (i = 0; i < BAR_M; i++)
		if (a[i] != 10.0f * (float)i + 1.0f)
			ok = 0;
	tap_ok(ok, "bar: a[i] + 1 (a[7] = %g)", a[7]);
	start_gate_fini(&gate);
	MUST(npu_stream_destroy(s));
	MUST(npu_host_free(a));
}

static void test_sync_unbound(void)
{
	npu_stream_t other;
	struct start_gate gate;
	struct gate_opener opener;
	float *a = pinned_floats(BAR_M);
	npu_status_t st, before, after;
	int ok = 1, waited;
	size_t i;

	for (i = 0; i < BAR_M; i++)
		a[i] = (float)i - 4.0f;
	/* a non-blocking stream: only a device-wide wait waits for it */
	MUST(npu_stream_create(&other, NPU_STREAM_NON_BLOCKING, 0));
	start_gate_init(&gate, 1);
	start_gate_enter(&gate, 0, other);
	MUST(spin(other, 1000000));
	before = npu_stream_query(other);
	gate_opener_start(&opener, &gate, 300);
	st = sync_unbound(f32_view(a, BAR_M));
	waited = atomic_load(&opener.opened);
	after = npu_stream_query(other);
	gate_opener_finish(&opener);
	tap_ok(st == NPU_SUCCESS, "sync_unbound returns NPU_SUCCESS (%s)", npu_status_name(st));
	tap_ok(before == NPU_ERROR_NOT_READY && waited && after == NPU_SUCCESS,
	       "parallel (no stream) returns once the whole device is idle: another stream's gated work is done (%s before, %s after)",
	       npu_status_name(before), npu_status_name(after));
	for (i = 0; i < BAR_M; i++)
		if (a[i] != ((float)i - 4.0f) * 3.0f)
			ok = 0;
	tap_ok(ok, "sync_unbound: a[i] * 3 (a[9] = %g)", a[9]);
	start_gate_fini(&gate);
	MUST(npu_stream_destroy(other));
	MUST(npu_host_free(a));
}

static void test_async_unbound(void)
{
	npu_stream_t blocking;
	struct start_gate gate;
	float *a = pinned_floats(BAR_M), *copy = pinned_floats(BAR_M);
	npu_status_t st, q;
	int ok = 1, untouched = 1;
	size_t i;

	for (i = 0; i < BAR_M; i++) {
		a[i] = 5.0f * (float)i;
		copy[i] = -1.0f;
	}
	/* legacy-stream work waits for earlier work of blocking streams: a
	 * gate on a blocking stream holds a launch on the legacy stream, and
	 * only there */
	MUST(npu_stream_create(&blocking, NPU_STREAM_DEFAULT, 0));
	start_gate_init(&gate, 1);
	start_gate_enter(&gate, 0, blocking);
	st = async_unbound(f32_view(a, BAR_M));
	q = npu_stream_query(NPU_STREAM_LEGACY);
	/* the copy is queued on the legacy stream behind the kernel */
	MUST(npu_memcpy_async(copy, a, BAR_M * sizeof(float), NPU_MEMCPY_DEFAULT,
			      NPU_STREAM_LEGACY));
	nanosleep(&(struct timespec){ .tv_nsec = 100000000 }, NULL);
	for (i = 0; i < BAR_M; i++)
		if (a[i] != 5.0f * (float)i || copy[i] != -1.0f)
			untouched = 0;
	tap_ok(st == NPU_SUCCESS, "async_unbound returns NPU_SUCCESS (%s)", npu_status_name(st));
	tap_ok(q == NPU_ERROR_NOT_READY && untouched,
	       "parallel.async (no stream) returns at once; its kernel waits on the legacy stream behind a blocking stream's gate (%s)",
	       npu_status_name(q));
	tap_ok(start_gate_open(&gate), "the blocking stream reached its gate");
	MUST(npu_stream_synchronize(NPU_STREAM_LEGACY));
	for (i = 0; i < BAR_M; i++)
		if (a[i] != 5.0f * (float)i - 1.0f || copy[i] != a[i])
			ok = 0;
	tap_ok(ok, "a later copy on the legacy stream sees the kernel's results (copy[4] = %g)", copy[4]);
	start_gate_fini(&gate);
	MUST(npu_stream_destroy(blocking));
	MUST(npu_host_free(a));
	MUST(npu_host_free(copy));
}

int main(void)
{
	tap_need_device();
	test_foo();
	test_bar();
	test_sync_unbound();
	test_async_unbound();
	return tap_done();
}
