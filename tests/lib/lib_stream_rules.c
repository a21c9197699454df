/* SPDX-License-Identifier: MIT */
/*
 * lib_stream_rules: the rules that tie streams, events, captures and graph
 * launches together, where they were broken (issue 30, items 15, 16, 19):
 *  - destroying a stream that takes part in a capture ends or invalidates
 *    that capture, and destroying an event forgets its capture-time record;
 *  - a graph launch that fails leaves the legacy stream's ordering and the
 *    graph's events as they were;
 *  - calls that would synchronize the device or use the legacy stream are
 *    refused as npu.h says while a capture forbids them.
 * Work that must not have run is held back by a host function that blocks
 * until the test releases it, so "not yet complete" is certain, not timed.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "tap.h"

#define N 1024

static void *dx;
static uint32_t *pinned;		/* npu_host_alloc: N words */
static atomic_int released;

static void hold(void *user)
{
	(void)user;
	while (!atomic_load(&released))
		usleep(1000);
}

static void fill(void *d, float v, npu_stream_t s, unsigned flags,
		 npu_status_t want, const char *what)
{
	uint64_t a[3] = { npu_arg_ptr(d), N, npu_arg_f32(v) };

	ST(npu_launch(NPU_K_FILL_F32, npu_grid(2, 1, 1), a, 3, s, flags), want,
	   "%s", what);
}

/* The first float of d, NaN if it cannot be read */
static float dev_word(void *d)
{
	float v = NAN;
	npu_status_t st = npu_memcpy(&v, d, 4, NPU_MEMCPY_DEVICE_TO_HOST);

	if (st) {
		tap_diag("  reading device memory: %s (%s)", npu_status_name(st),
			 npu_last_error_message());
		return NAN;
	}
	return v;
}

static npu_stream_capture_status_t capture_status(npu_stream_t s)
{
	npu_stream_capture_status_t cs = NPU_STREAM_CAPTURE_STATUS_NONE;

	MUST(npu_stream_is_capturing(s, &cs));
	return cs;
}

/* Item 15: destroying a capturing stream ends its capture (the origin) or
 * invalidates it (a stream forked into it); destroying an event drops its
 * capture-time record. */
static void test_destroy_capturing(void)
{
	npu_stream_t s1, s2, s3;
	npu_event_t ev, ev2;
	npu_graph_t g = NULL;
	void *old;

	MUST(npu_stream_create(&s1, 0, 0));
	MUST(npu_event_create(&ev, NPU_EVENT_DISABLE_TIMING));
	MUST(npu_stream_begin_capture(s1, NPU_STREAM_CAPTURE_MODE_GLOBAL));
	fill(dx, 1.0f, s1, 0, NPU_SUCCESS, "capturing stream: a launch is captured");
	MUST(npu_event_record(ev, s1));
	ST(npu_stream_destroy(s1), NPU_SUCCESS, "destroying the origin of a global capture");
	old = s1;
	ST(npu_device_synchronize(), NPU_SUCCESS,
	   "... then npu_device_synchronize works (the capture ended with its stream)");
	ST(npu_memset(dx, 0, N * 4), NPU_SUCCESS, "... npu_memset works");
	ST(npu_memcpy(pinned, dx, 4, NPU_MEMCPY_DEVICE_TO_HOST), NPU_SUCCESS,
	   "... npu_memcpy works");
	fill(dx, 2.0f, NULL, 0, NPU_SUCCESS, "... legacy-stream work runs");
	tap_ok(dev_word(dx) == 2.0f, "... and did run");
	MUST(npu_stream_create(&s3, 0, 0));
	tap_diag("new stream %s the destroyed one's address",
		 (void *)s3 == old ? "reuses" : "does not reuse");
	tap_ok(capture_status(s3) == NPU_STREAM_CAPTURE_STATUS_NONE,
	       "a stream created afterwards is not capturing");
	ST(npu_stream_wait_event(s3, ev, 0), NPU_SUCCESS,
	   "waiting for the event recorded in the ended capture");
	tap_ok(capture_status(s3) == NPU_STREAM_CAPTURE_STATUS_NONE,
	       "... does not join a capture");
	fill(dx, 3.0f, s3, NPU_LAUNCH_SYNC, NPU_SUCCESS, "... and the stream runs work");
	tap_ok(dev_word(dx) == 3.0f, "... which ran");

	/* a forked stream destroyed: the capture is invalidated */
	MUST(npu_stream_create(&s1, 0, 0));
	MUST(npu_stream_create(&s2, 0, 0));
	MUST(npu_stream_begin_capture(s1, NPU_STREAM_CAPTURE_MODE_GLOBAL));
	MUST(npu_event_record(ev, s1));
	MUST(npu_stream_wait_event(s2, ev, 0));
	tap_ok(capture_status(s2) == NPU_STREAM_CAPTURE_STATUS_ACTIVE, "s2 forked into s1's capture");
	ST(npu_stream_destroy(s2), NPU_SUCCESS, "destroying the forked stream");
	tap_ok(capture_status(s1) == NPU_STREAM_CAPTURE_STATUS_INVALIDATED,
	       "... invalidates the capture");
	g = (npu_graph_t)1;
	ST(npu_stream_end_capture(s1, &g), NPU_ERROR_STREAM_CAPTURE_INVALIDATED,
	   "... which ends INVALIDATED");
	tap_ok(g == NULL, "... with no graph");
	ST(npu_device_synchronize(), NPU_SUCCESS, "no capture is left");

	/* an event recorded in a capture, destroyed: a new event (often at
	 * the same address) is an ordinary one */
	MUST(npu_stream_begin_capture(s1, NPU_STREAM_CAPTURE_MODE_RELAXED));
	MUST(npu_event_create(&ev2, NPU_EVENT_DISABLE_TIMING));
	MUST(npu_event_record(ev2, s1));
	old = ev2;
	MUST(npu_event_destroy(ev2));
	MUST(npu_event_create(&ev2, NPU_EVENT_DISABLE_TIMING));
	tap_diag("new event %s the destroyed one's address",
		 (void *)ev2 == old ? "reuses" : "does not reuse");
	ST(npu_stream_wait_event(s3, ev2, 0), NPU_SUCCESS, "waiting for a fresh event");
	tap_ok(capture_status(s3) == NPU_STREAM_CAPTURE_STATUS_NONE,
	       "... does not join the capture the destroyed event was recorded in");
	ST(npu_stream_end_capture(s1, &g), NPU_SUCCESS, "the capture ends normally");
	if (g)
		npu_graph_destroy(g);
	MUST(npu_event_destroy(ev2));
	MUST(npu_event_destroy(ev));
	MUST(npu_stream_destroy(s1));
	MUST(npu_stream_destroy(s3));
}

/* Poll a query for up to ms: true if it stayed NOT_READY. */
static bool stays_not_ready(npu_event_t e, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		if (npu_event_query(e) != NPU_ERROR_NOT_READY)
			return false;
		usleep(10000);
	}
	return true;
}

/* Item 16: a failed graph launch changes nothing. */
static void test_failed_graph_launch(void)
{
	npu_stream_t s1;
	npu_event_t rec, gone, after;
	npu_graph_t g;
	npu_graph_exec_t x;
	npu_graph_node_t n;

	MUST(npu_stream_create(&s1, 0, 0));
	MUST(npu_event_create(&rec, NPU_EVENT_DEFAULT));
	MUST(npu_event_create(&gone, NPU_EVENT_DISABLE_TIMING));
	MUST(npu_event_create(&after, NPU_EVENT_DISABLE_TIMING));
	MUST(npu_graph_create(&g, 0));
	MUST(npu_graph_add_event_record_node(&n, g, NULL, 0, rec));
	MUST(npu_graph_add_event_wait_node(&n, g, NULL, 0, gone));
	MUST(npu_graph_instantiate(&x, g, 0));
	MUST(npu_event_destroy(gone));

	MUST(npu_memset(dx, 0, N * 4));
	pinned[0] = 0;
	atomic_store(&released, 0);
	/* blocking stream s1: held, then a fill; rec marks that fill */
	MUST(npu_launch_host_func(s1, hold, NULL));
	fill(dx, 5.0f, s1, 0, NPU_SUCCESS, "blocking stream: a fill behind a held host function");
	MUST(npu_event_record(rec, s1));
	ST(npu_graph_launch(x, NULL), NPU_ERROR_INVALID_HANDLE,
	   "graph launch into the legacy stream with a destroyed event: INVALID_HANDLE");
	ST(npu_event_query(rec), NPU_ERROR_NOT_READY,
	   "... the graph's recorded event still marks the held work (NOT_READY)");
	/* legacy work waits for the blocking stream */
	MUST(npu_memcpy_async(pinned, dx, 4, NPU_MEMCPY_DEVICE_TO_HOST, NULL));
	MUST(npu_event_record(after, NULL));
	tap_ok(stays_not_ready(after, 300),
	       "... legacy-stream work after it still waits for the blocking stream");
	atomic_store(&released, 1);
	MUST(npu_device_synchronize());
	{
		float v;

		memcpy(&v, pinned, 4);
		tap_ok(v == 5.0f, "... and read the fill's result (%g)", v);
	}
	ST(npu_event_query(rec), NPU_SUCCESS, "the held work completed");
	MUST(npu_graph_exec_destroy(x));
	MUST(npu_graph_destroy(g));
	MUST(npu_event_destroy(rec));
	MUST(npu_event_destroy(after));
	MUST(npu_stream_destroy(s1));
}

/* Item 19: calls a capture forbids are refused, nothing of them runs, and
 * the capture is invalidated. */
static void test_capture_rules(npu_function_t f)
{
	npu_stream_t cap, nb, other;
	npu_graph_t g;
	npu_graph_exec_t x;
	npu_graph_node_t n;
	npu_stream_capture_mode_t m;
	uint64_t fa[3] = { npu_arg_ptr(dx), N, npu_arg_f32(9.0f) };

	MUST(npu_stream_create(&cap, 0, 0));
	MUST(npu_stream_create(&nb, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&other, 0, 0));
	MUST(npu_graph_create(&g, 0));
	MUST(npu_graph_add_memset_node(&n, g, NULL, 0, dx, 0x7f, N * 4));
	MUST(npu_graph_instantiate(&x, g, 0));
	MUST(npu_memset(dx, 0, N * 4));

	/* a global capture of a non-blocking stream: the legacy stream may
	 * run work, but nothing may synchronize the device */
	for (int k = 0; k < 4; k++) {
		static const char *const what[] = {
			"npu_launch(NULL, NPU_LAUNCH_SYNC_DEVICE)",
			"npu_launch(other stream, NPU_LAUNCH_SYNC_DEVICE)",
			"npu_parallel(NULL)",
			"npu_parallel_kernel(NULL)",
		};
		npu_status_t st;
		npu_graph_t gg = (npu_graph_t)1;
		void *a = dx;
		unsigned cnt = 4;
		void *args[4] = { &a, &a, &a, &cnt };

		if (k == 3 && !f)
			continue;
		/* before: 0 (the fill writes 9), 1 for vadd of dx with
		 * itself (writes 2) */
		float before = k == 3 ? 1.0f : 0.0f;

		if (k == 3)
			fill(dx, 1.0f, NULL, NPU_LAUNCH_SYNC, NPU_SUCCESS, "dx = 1");
		MUST(npu_stream_begin_capture(nb, NPU_STREAM_CAPTURE_MODE_GLOBAL));
		st = k == 0 ? npu_launch(NPU_K_FILL_F32, npu_grid(2, 1, 1), fa, 3, NULL,
					 NPU_LAUNCH_SYNC_DEVICE) :
		     k == 1 ? npu_launch(NPU_K_FILL_F32, npu_grid(2, 1, 1), fa, 3, other,
					 NPU_LAUNCH_SYNC_DEVICE) :
		     k == 2 ? npu_parallel(NPU_K_FILL_F32, npu_grid(2, 1, 1), fa, 3, NULL) :
		     npu_parallel_kernel(f, npu_grid(1, 1, 1), npu_grid(4, 1, 1), 0, NULL, args);
		ST(st, NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED,
		   "global capture: %s is UNSUPPORTED", what[k]);
		tap_ok(capture_status(nb) == NPU_STREAM_CAPTURE_STATUS_INVALIDATED,
		       "... and invalidates the capture");
		ST(npu_stream_end_capture(nb, &gg), NPU_ERROR_STREAM_CAPTURE_INVALIDATED,
		   "... which ends INVALIDATED");
		tap_ok(dev_word(dx) == before, "... and the kernel did not run");
	}
	/* a relaxed capture of a non-blocking stream forbids none of it */
	MUST(npu_stream_begin_capture(nb, NPU_STREAM_CAPTURE_MODE_RELAXED));
	ST(npu_parallel(NPU_K_FILL_F32, npu_grid(2, 1, 1), fa, 3, NULL), NPU_SUCCESS,
	   "relaxed capture of a non-blocking stream: npu_parallel(NULL) runs");
	{
		npu_graph_t gg = NULL;

		ST(npu_stream_end_capture(nb, &gg), NPU_SUCCESS,
		   "... and the capture ends normally");
		if (gg)
			npu_graph_destroy(gg);
	}
	tap_ok(dev_word(dx) == 9.0f, "... the kernel ran");
	MUST(npu_memset(dx, 0, N * 4));

	/* while a blocking stream captures (every mode), the legacy stream
	 * is refused: IMPLICIT, and the capture is invalidated */
	for (m = NPU_STREAM_CAPTURE_MODE_GLOBAL; m <= NPU_STREAM_CAPTURE_MODE_RELAXED; m++) {
		for (int k = 0; k < 4; k++) {
			static const char *const what[] = {
				"npu_graph_launch(x, NULL)",
				"npu_stream_write_value32(NULL, ...)",
				"npu_stream_wait_value32(NULL, ...)",
				"npu_kernel_trace",
			};
			npu_graph_t gg = (npu_graph_t)1;
			npu_status_t st;

			if (k == 3 && !f)
				continue;
			pinned[1] = 0;
			MUST(npu_stream_begin_capture(cap, m));
			if (k == 0) {
				st = npu_graph_launch(x, NULL);
			} else if (k == 1) {
				st = npu_stream_write_value32(NULL, &pinned[1], 1, 0);
			} else if (k == 2) {
				st = npu_stream_wait_value32(NULL, &pinned[1], 0, 0);
			} else {
				void *a = dx;
				unsigned cnt = 4;
				void *args[4] = { &a, &a, &a, &cnt };

				st = npu_kernel_trace(f, npu_grid(1, 1, 1), npu_grid(1, 1, 1), 0,
						      args, 0, "/tmp/rules-itrace.json", NULL, NULL);
			}
			/* the trace also synchronizes the device: where
			 * the mode forbids that, UNSUPPORTED comes first */
			if (k == 3 && m != NPU_STREAM_CAPTURE_MODE_RELAXED)
				ST(st, NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED,
				   "capture mode %d of a blocking stream: %s is UNSUPPORTED",
				   (int)m, what[k]);
			else
				ST(st, NPU_ERROR_STREAM_CAPTURE_IMPLICIT,
				   "capture mode %d of a blocking stream: %s is IMPLICIT",
				   (int)m, what[k]);
			tap_ok(capture_status(cap) == NPU_STREAM_CAPTURE_STATUS_INVALIDATED,
			       "... and invalidates the capture");
			ST(npu_stream_end_capture(cap, &gg), NPU_ERROR_STREAM_CAPTURE_INVALIDATED,
			   "... which ends INVALIDATED");
			MUST(npu_device_synchronize());
			tap_ok(pinned[1] == 0 && dev_word(dx) == 0.0f, "... and nothing of it ran");
		}
	}
	MUST(npu_graph_exec_destroy(x));
	MUST(npu_graph_destroy(g));
	MUST(npu_stream_destroy(cap));
	MUST(npu_stream_destroy(nb));
	MUST(npu_stream_destroy(other));
}

/* With an argument (destroy, graph-launch, rules), only that part runs. */
int main(int argc, char **argv)
{
	char kpath[PATH_MAX + 32];
	const char *only = argc > 1 ? argv[1] : NULL;
	npu_module_t m = NULL;
	npu_function_t f = NULL;

	tap_need_device();
	MUST(npu_malloc(&dx, N * 4));
	MUST(npu_host_alloc((void **)&pinned, N * 4, 0));
	tap_beside_self(kpath, sizeof(kpath), "kernels/basic.npu");
	if (npu_module_load(&m, kpath) || npu_module_get_function(&f, m, "vadd")) {
		tap_ok(0, "load %s (for npu_kernel_trace)", kpath);
		f = NULL;
	}
	if (!only || !strcmp(only, "destroy"))
		test_destroy_capturing();
	if (!only || !strcmp(only, "graph-launch"))
		test_failed_graph_launch();
	if (!only || !strcmp(only, "rules"))
		test_capture_rules(f);
	if (m)
		npu_module_unload(m);
	npu_host_free(pinned);
	npu_free(dx);
	return tap_done();
}
