/* SPDX-License-Identifier: MIT */
/*
 * lib_copy_engines: a stream's copies and memsets run on the copy engines
 * on either queue kind (kernel queues: the copy rings; user queues: the
 * stream's copy-class queue), so a copy on one stream overlaps a kernel
 * on another in device time, while the order within a stream holds across
 * its compute and copy work (checked through data: each kernel consumes
 * what the copy before it wrote), through events and stream waits, and
 * when a stream is destroyed or the process exits with copies in flight.
 */
#include "tap.h"

#include <sys/wait.h>

#define N (1u << 16)		/* 256 KiB: kernels well within the watchdog */
#define SPIN_NS 50000000ull	/* 50 ms of device time */

static npu_device_prop prop;
static npu_function_t incr;
static unsigned *hbuf;

/* p[i]++ for i < n */
static void incr_on(unsigned *p, npu_stream_t s)
{
	unsigned n = N;
	void *args[2] = { &p, &n };

	MUST(npu_launch_kernel(incr, npu_grid(8, 1, 1), npu_grid(16, 1, 1), 0,
			       s, args));
}

static int all_are(const unsigned *v, unsigned want)
{
	for (unsigned i = 0; i < N; i++)
		if (v[i] != want)
			return 0;
	return 1;
}

static unsigned stream_kind(npu_stream_t s)
{
	unsigned f = 0;

	MUST(npu_stream_get_flags(s, &f));
	return f & (NPU_STREAM_USER_QUEUE | NPU_STREAM_KERNEL_QUEUE);
}

/* Counters summed over the copy engines (rings, or user-queue engines)
 * or the compute ones: field 0 commands, 1 bytes. */
static uint64_t engines(const npu_device_counters *c, int copy, int uq,
			int field)
{
	uint32_t a, b, i;
	const npu_ring_counters *e = uq ? c->uq_engine : c->ring;
	uint64_t v = 0;

	if (uq) {
		a = copy ? c->uq_compute_engines : 0;
		b = copy ? c->uq_compute_engines + c->uq_copy_engines :
			   c->uq_compute_engines;
	} else {
		a = copy ? c->compute_rings : 0;
		b = copy ? c->compute_rings + c->copy_rings : c->compute_rings;
	}
	for (i = a; i < b; i++)
		v += field ? e[i].bytes : e[i].commands;
	return v;
}

/* A copy on stream a runs on a copy engine while a kernel of stream b
 * runs, overlapping in device time. */
static void test_overlap(unsigned *d0, unsigned *d1)
{
	npu_stream_t a, b;
	npu_event_t ab, ae, bb, be;
	npu_device_counters c0, c1;
	uint64_t tab, tae, tbb, tbe;
	int uq, kq, copies;
	unsigned qf;
	uint64_t dcopy, dcomp;

	/* the kind of queue the run asks for (queues.sh kernel: kernel
	 * queues, else user queues), named so that the stream says which
	 * it got */
	kq = getenv("NPU_QUEUES") && !strcmp(getenv("NPU_QUEUES"), "kernel");
	qf = kq ? NPU_STREAM_KERNEL_QUEUE : NPU_STREAM_USER_QUEUE;
	MUST(npu_stream_create(&a, NPU_STREAM_NON_BLOCKING | qf, 0));
	MUST(npu_stream_create(&b, NPU_STREAM_NON_BLOCKING | qf, 0));
	uq = stream_kind(a) == NPU_STREAM_USER_QUEUE;
	if (prop.features & NPU_FEATURE_USERQ)
		tap_ok(uq == !kq && stream_kind(b) == stream_kind(a),
		       "the streams are on %s queues", kq ? "kernel" : "user");
	MUST(npu_event_create(&ab, 0));
	MUST(npu_event_create(&ae, 0));
	MUST(npu_event_create(&bb, 0));
	MUST(npu_event_create(&be, 0));
	/* warm: stream a's first copy makes its copy queue */
	MUST(npu_memcpy_async(d1, d0, 4096, NPU_MEMCPY_DEVICE_TO_DEVICE, a));
	MUST(npu_device_synchronize());
	MUST(npu_device_get_counters(&c0));

	MUST(npu_event_record(bb, b));
	MUST(spin(b, SPIN_NS));
	MUST(npu_event_record(be, b));
	MUST(npu_event_record(ab, a));
	MUST(npu_memcpy_async(d1, d0, N * 4, NPU_MEMCPY_DEVICE_TO_DEVICE, a));
	MUST(npu_event_record(ae, a));
	MUST(npu_device_synchronize());
	MUST(npu_device_get_counters(&c1));
	MUST(npu_event_timestamp(ab, &tab));
	MUST(npu_event_timestamp(ae, &tae));
	MUST(npu_event_timestamp(bb, &tbb));
	MUST(npu_event_timestamp(be, &tbe));

	copies = uq ? c0.uq_copy_engines > 0 : prop.copy_rings > 0;
	dcopy = engines(&c1, 1, uq, 1) - engines(&c0, 1, uq, 1);
	dcomp = engines(&c1, 0, uq, 1) - engines(&c0, 0, uq, 1);
	tap_diag("%s queues: copy engines +%llu bytes, compute engines +%llu "
		 "bytes; copy [%.2f, %.2f] ms, kernel [%.2f, %.2f] ms",
		 uq ? "user" : "kernel", (unsigned long long)dcopy,
		 (unsigned long long)dcomp, 0.0, ticks_ms(tae - tab),
		 ticks_ms(tbb - tab), ticks_ms(tbe - tab));
	tap_ok(copies, "the device has copy engines for %s queues",
	       uq ? "user" : "kernel");
	tap_ok(dcopy >= 4ull * N && dcomp < 4ull * N,
	       "the copy ran on a copy engine (%s queues: +%llu bytes there, "
	       "+%llu on compute engines)", uq ? "user" : "kernel",
	       (unsigned long long)dcopy, (unsigned long long)dcomp);
	tap_ok(tab < tbe && tbb < tae && tae < tbe,
	       "the copy on one stream overlaps a kernel on another in device "
	       "time (and ends first)");
	MUST(npu_memcpy(hbuf, d1, N * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	tap_ok(all_are(hbuf, 7), "... and copied the data");
	npu_event_destroy(ab);
	npu_event_destroy(ae);
	npu_event_destroy(bb);
	npu_event_destroy(be);
	MUST(npu_stream_destroy(a));
	MUST(npu_stream_destroy(b));
}

/* kernel -> copy -> kernel -> copy in one stream, many rounds: each step
 * consumes what the one before wrote. A spin first makes a copy that did
 * not wait for the kernel before it read the old value. */
static void test_order(unsigned *d0, unsigned *d1)
{
	npu_stream_t s;
	int i, ok = 1;

	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	for (i = 0; i < 8 && ok; i++) {
		MUST(npu_memset_async(d0, i, N * 4, s));
		MUST(spin(s, SPIN_NS / 10));
		incr_on(d0, s);		/* d0 = 0x0i0i0i0i + 1 */
		MUST(npu_memcpy_async(d1, d0, N * 4,
				      NPU_MEMCPY_DEVICE_TO_DEVICE, s));
		incr_on(d1, s);		/* d1 = d0 + 1 */
		MUST(npu_memcpy_async(hbuf, d1, N * 4,
				      NPU_MEMCPY_DEVICE_TO_HOST, s));
		MUST(npu_stream_synchronize(s));
		ok &= all_are(hbuf, 0x01010101u * (unsigned)i + 2);
	}
	tap_ok(ok, "memset, kernel, copy, kernel, copy of one stream run in "
	       "order (values checked, %d rounds)", i);
	MUST(npu_stream_destroy(s));
}

/* An event recorded after a copy completes with it; another stream that
 * waits for it sees the copy's data. */
static void test_events(unsigned *d0, unsigned *d1)
{
	npu_stream_t a, b;
	npu_event_t e;
	npu_status_t q;

	MUST(npu_stream_create(&a, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&b, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_event_create(&e, NPU_EVENT_DISABLE_TIMING));
	MUST(npu_memset_async(d0, 0, N * 4, a));
	MUST(npu_memset_async(d1, 0, N * 4, a));
	MUST(spin(a, SPIN_NS));
	incr_on(d0, a);				/* 1 */
	MUST(npu_memcpy_async(d1, d0, N * 4, NPU_MEMCPY_DEVICE_TO_DEVICE, a));
	MUST(npu_event_record(e, a));		/* after the copy */
	q = npu_event_query(e);
	tap_ok(q == NPU_ERROR_NOT_READY,
	       "an event recorded after a copy behind a kernel is not ready (%s)",
	       npu_status_string(q));
	MUST(npu_stream_wait_event(b, e, 0));
	incr_on(d1, b);				/* 2, only after the copy */
	MUST(npu_memcpy_async(hbuf, d1, N * 4, NPU_MEMCPY_DEVICE_TO_HOST, b));
	MUST(npu_stream_synchronize(b));
	tap_ok(all_are(hbuf, 2),
	       "a stream waiting for the event sees the copy's data");
	tap_ok(npu_event_query(e) == NPU_SUCCESS, "... and the event is complete");

	/* the event itself on the copy: synchronize, then read */
	MUST(spin(a, SPIN_NS / 5));
	MUST(npu_memcpy_async(d1, d0, N * 4, NPU_MEMCPY_DEVICE_TO_DEVICE, a));
	MUST(npu_memset_async(d0, 9, 4096, a));
	MUST(npu_event_record(e, a));
	MUST(npu_event_synchronize(e));
	MUST(npu_memcpy(hbuf, d1, N * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	tap_ok(all_are(hbuf, 1), "event synchronize after a copy: its data "
	       "is there");
	npu_event_destroy(e);
	MUST(npu_stream_destroy(a));
	MUST(npu_stream_destroy(b));
}

/* Destroying a stream with copies in flight: they finish (as CUDA's
 * cudaStreamDestroy); exiting with them in flight leaves the device fit. */
static void test_teardown(unsigned *d0, unsigned *d1)
{
	npu_stream_t s;
	pid_t pid;
	int st, i;

	MUST(npu_memset(d1, 0, N * 4));
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_memset_async(d0, 3, N * 4, s));
	MUST(spin(s, SPIN_NS));
	incr_on(d0, s);
	for (i = 0; i < 4; i++)
		MUST(npu_memcpy_async(d1, d0, N * 4,
				      NPU_MEMCPY_DEVICE_TO_DEVICE, s));
	MUST(npu_stream_destroy(s));
	MUST(npu_device_synchronize());
	MUST(npu_memcpy(hbuf, d1, N * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	tap_ok(all_are(hbuf, 0x03030304u),
	       "a stream destroyed with copies in flight: they complete");

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		npu_stream_t c;
		unsigned *x;

		if (npu_malloc((void **)&x, N * 4) ||
		    npu_stream_create(&c, NPU_STREAM_NON_BLOCKING, 0))
			_exit(2);
		spin(c, SPIN_NS);
		for (i = 0; i < 8; i++)
			npu_memset_async(x, i, N * 4, c);
		_exit(0);	/* copies in flight */
	}
	tap_ok(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0,
	       "a process exits with copies in flight");
	MUST(npu_memset(d0, 5, N * 4));
	incr_on(d0, NULL);
	MUST(npu_memcpy(hbuf, d0, N * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	tap_ok(all_are(hbuf, 0x05050506u), "... and the device works on");
}

int main(void)
{
	npu_module_t m;
	unsigned *d0, *d1;

	setvbuf(stdout, NULL, _IOLBF, 0);	/* a hang shows where */
	tap_need_user_module(&prop, &m, "kernels/basic.npu");
	tap_start();
	MUST(npu_module_get_function(&incr, m, "incr"));
	MUST(npu_malloc((void **)&d0, N * 4));
	MUST(npu_malloc((void **)&d1, N * 4));
	MUST(npu_host_alloc((void **)&hbuf, N * 4, 0));
	{
		/* the value test_overlap copies */
		for (unsigned i = 0; i < N; i++)
			hbuf[i] = 7;
		MUST(npu_memcpy(d0, hbuf, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	}
	test_overlap(d0, d1);
	test_order(d0, d1);
	test_events(d0, d1);
	test_teardown(d0, d1);
	MUST(npu_free(d0));
	MUST(npu_free(d1));
	MUST(npu_host_free(hbuf));
	npu_module_unload(m);
	return tap_done();
}
