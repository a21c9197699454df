// SPDX-License-Identifier: MIT
/*
 * npu-bench - the speed of every libnpu path, each measured next to its
 * floor in the same run (Documentation/bench.rst, issue 7).
 *
 *   npu-bench [--tiny] [--trials N] [--json FILE] [--model-off] [--trace FILE]
 *
 * Without --model-off (device with its timing model on): launch, round trip,
 * event and host-function costs against a null ioctl; stream chains of
 * empty kernels (and graphs, once libnpu has them); the simpleStreams-style
 * overlap run; concurrency of timed kernels over streams; link bandwidth.
 * With --model-off (device started with timing=off): DMA copy bandwidth and
 * GEMM throughput, compared on the host by tests/bench/run.sh with
 * npu-bench-host's memcpy and reference GEMM figures.
 *
 * Every figure is the median of --trials trials (default 7) with min and
 * max. --tiny runs each measurement once with tiny sizes and prints TAP:
 * it checks that every path works, never how fast (make test runs it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <sys/mman.h>

#include <drm.h>
#include <json-c/json.h>

#include "../../examples/kernels/gemmTensor.h"
#include "npu.h"
#include "npu_accel.h"
#include "npu_hw.h"
#include "kernels/builtins.h"
#include "kselftest.h"

/* Graphs may be missing from lib/npu.h (HAVE_NPU_GRAPH comes from the
 * Makefile) or from the built libnpu.so (weak references, NULL then). */
#ifdef HAVE_NPU_GRAPH
#pragma weak npu_stream_begin_capture
#pragma weak npu_stream_end_capture
#pragma weak npu_graph_instantiate
#pragma weak npu_graph_launch
#pragma weak npu_graph_exec_destroy
#pragma weak npu_graph_destroy
#pragma weak npu_graph_get_stats
#endif

#define MAX_TRIALS 31
#define MAX_S 8

#include "../common/ioctl_count.h"
#include "../common/tune_points.h"

/* Key suffix of the pass under way: "" (kernel queues) or "_uq" (user
 * queues), so both paths print side by side. */
static const char *sfx = "";
static unsigned qflag;		/* NPU_STREAM_*_QUEUE of the pass */

static int tiny, trials = 7, model_off, tensor, fails, verbose, skip_floor;
static const char *only;	/* --only: sections to run (NULL: all) */

/* Whether --only names section name (a comma-separated list). */
static int want(const char *name)
{
	size_t n = strlen(name);
	const char *p;

	if (!only)
		return 1;
	for (p = only; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return 1;
	return 0;
}

static struct json_object *js;		/* --json: the results, then notes */
static struct json_object *js_notes;
static const char *trace_path;		/* --trace: one traced overlap run */
static npu_device_prop prop;
static int fd = -1;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

/* A failed call: in --tiny mode a "not ok" line, else a message; the
 * measurement that made it is abandoned (returns non-zero). */
static int failed(const char *what, npu_status_t st)
{
	fprintf(stderr, "npu-bench: %s: %s (%s)\n", what, npu_status_name(st),
		npu_last_error_message());
	fails++;
	return -1;
}

#define CK(call) do { \
	npu_status_t st_ = (call); \
	if (st_ != NPU_SUCCESS) \
		return failed(#call, st_); \
} while (0)

/* --tiny's TAP, through kselftest.h like every C test in the tree */
static void tap(int ok, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	if (!tiny)
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (ok)
		ksft_test_result_pass("- %s\n", what);
	else
		ksft_test_result_fail("- %s\n", what);
}

/* ------------------------------------------------------------------------
 * Statistics and JSON output
 */
/* rounds per trial of the enqueue-cost figures (median of the rounds) */
#define ENQ_ROUNDS	10

struct stat3 {
	double med, min, max;
	int n;
};

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static struct stat3 stats(const double *v, int n)
{
	double s[MAX_TRIALS];
	struct stat3 r = { 0, 0, 0, n };

	if (n <= 0)
		return r;
	memcpy(s, v, n * sizeof(double));
	qsort(s, n, sizeof(double), cmp_d);
	r.min = s[0];
	r.max = s[n - 1];
	r.med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	return r;
}

/* A measured number, or null if it is not finite (JSON has no NaN). */
static struct json_object *js_num(double v)
{
	return isfinite(v) ? json_object_new_double(v) : NULL;
}

/* key: {"median": m, "min": a, "max": b, "trials": n} plus a table row */
static void emit(const char *key0, struct stat3 s, const char *unit, const char *what)
{
	char key[96];

	snprintf(key, sizeof(key), "%s%s", key0, sfx);
	if (js) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "median", js_num(s.med));
		json_object_object_add(o, "min", js_num(s.min));
		json_object_object_add(o, "max", js_num(s.max));
		json_object_object_add(o, "trials", json_object_new_int(s.n));
		json_object_object_add(js, key, o);
	}
	if (!tiny)
		printf("%-28s %12.4g %12.4g %12.4g %-6s %s\n", key, s.med, s.min, s.max, unit, what);
}

static void emit_ratio(const char *key, const double *num, const double *den, int n,
		       const char *what)
{
	double r[MAX_TRIALS];
	int i;

	for (i = 0; i < n; i++)
		r[i] = den[i] > 0 ? num[i] / den[i] : 0;
	emit(key, stats(r, n), "x", what);
}

/* A key that could not be measured: null in the JSON, with the reason in
 * "notes". */
static void emit_null(const char *key0, const char *why)
{
	char key[96];

	snprintf(key, sizeof(key), "%s%s", key0, sfx);
	if (js) {
		json_object_object_add(js, key, NULL);
		json_object_object_add(js_notes, key, json_object_new_string(why));
	}
	if (!tiny)
		printf("%-28s %12s   %s\n", key, "-", why);
}

/* ------------------------------------------------------------------------
 * Floors: a null ioctl and the cheapest fence wait, on our own fd to the
 * same device node libnpu opened (the same driver path as libnpu's fd).
 */
static double null_ioctl_us(int n)
{
	struct drm_npu_get_param p;
	double t0 = now_us();
	int i;

	for (i = 0; i < n; i++) {
		memset(&p, 0, sizeof(p));
		p.param = DRM_NPU_PARAM_NUM_CUS;
		if (ioctl(fd, DRM_IOCTL_NPU_GET_PARAM, &p))
			return -1;
	}
	return (now_us() - t0) / n;
}

static uint32_t signalled_syncobj;

static double signalled_wait_us(int n)
{
	struct drm_syncobj_wait w;
	double t0 = now_us();
	int i;

	for (i = 0; i < n; i++) {
		memset(&w, 0, sizeof(w));
		w.handles = (uint64_t)(uintptr_t)&signalled_syncobj;
		w.count_handles = 1;
		w.timeout_nsec = INT64_MAX;
		if (ioctl(fd, DRM_IOCTL_SYNCOBJ_WAIT, &w))
			return -1;
	}
	return (now_us() - t0) / n;
}

/* The floor of a host function's round trip: a thread hands a request to
 * a helper thread and waits for its answer (mutex and condition variable).
 * A host function makes the same two wake-ups, the library's thread's and
 * the caller's. n round trips, us each; -1 if the helper could not
 * start. */
static pthread_mutex_t pp_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pp_cond = PTHREAD_COND_INITIALIZER;
static unsigned long pp_req, pp_done;
static int pp_stop;

static void *pp_helper(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pp_lock);
	while (!pp_stop) {
		if (pp_done == pp_req) {
			pthread_cond_wait(&pp_cond, &pp_lock);
			continue;
		}
		pp_done = pp_req;
		pthread_cond_broadcast(&pp_cond);
	}
	pthread_mutex_unlock(&pp_lock);
	return NULL;
}

static double thread_pingpong_us(int n)
{
	pthread_t th;
	double t0, us;
	int i;

	pp_stop = 0;
	if (pthread_create(&th, NULL, pp_helper, NULL))
		return -1;
	t0 = now_us();
	pthread_mutex_lock(&pp_lock);
	for (i = 0; i < n; i++) {
		pp_req++;
		pthread_cond_broadcast(&pp_cond);
		while (pp_done != pp_req)
			pthread_cond_wait(&pp_cond, &pp_lock);
	}
	us = (now_us() - t0) / n;
	pp_stop = 1;
	pthread_cond_broadcast(&pp_cond);
	pthread_mutex_unlock(&pp_lock);
	pthread_join(th, NULL);
	return us;
}

/* ------------------------------------------------------------------------
 * Host-side costs
 */
static npu_stream_t s[MAX_S];
static const npu_dim3 g1 = { 1, 1, 1 };

static volatile int hits;

static void host_fn(void *user)
{
	(*(volatile int *)user)++;
}

/* Hold stream s's later work on the device until gate_open(): the device
 * then runs nothing while enqueue costs are measured (a busy device would
 * take host CPU from the caller on a small machine). */
static uint32_t *gate_word;
static uint32_t gate_seq;

static int gate_close(npu_stream_t st)
{
	if (!gate_word && npu_host_alloc((void **)&gate_word, 4096, 0))
		return -1;
	gate_seq++;
	return npu_stream_wait_value32(st, gate_word, gate_seq, 0) ? -1 : 0;
}

static void gate_open(void)
{
	__atomic_store_n(gate_word, gate_seq, __ATOMIC_RELEASE);
}

static int bench_calls(void)
{
	double nul[MAX_TRIALS], wait[MAX_TRIALS], enq[MAX_TRIALS], rt[MAX_TRIALS];
	double rec[MAX_TRIALS], qry[MAX_TRIALS], swe[MAX_TRIALS], hf[MAX_TRIALS], floor2[MAX_TRIALS];
	double scd[MAX_TRIALS], sus[MAX_TRIALS], enq_nul[MAX_TRIALS], pp[MAX_TRIALS];
	double enq_sys[MAX_TRIALS], sus_sys[MAX_TRIALS];
	int n = tiny ? 4 : 400, rtn = tiny ? 2 : 60, scn = tiny ? 2 : 50, t, i,
	    nt = tiny ? 1 : trials;
	npu_event_t ev[512], done;
	npu_stream_t tmp;

	hits = 0;
	CK(npu_event_create(&done, NPU_EVENT_DISABLE_TIMING));
	for (i = 0; i < n; i++)
		CK(npu_event_create(&ev[i], NPU_EVENT_DISABLE_TIMING));
	for (t = 0; t < nt; t++) {
		double t0;

		nul[t] = null_ioctl_us(n);
		wait[t] = signalled_wait_us(n);
		floor2[t] = nul[t] + wait[t];
		if (nul[t] < 0 || wait[t] < 0) {
			fprintf(stderr, "npu-bench: floor ioctls failed: %s\n", strerror(errno));
			fails++;
			return -1;
		}
		/* async launch of an empty kernel: ENQ_ROUNDS rounds, each
		 * a batch of null ioctls and a batch of launches behind a
		 * closed gate; the trial's figures are the medians of the
		 * rounds (one batch of n read 0.3-3.9 within one run) */
		{
			double eb[ENQ_ROUNDS], nb[ENQ_ROUNDS];
			int r, per = n >= ENQ_ROUNDS ? n / ENQ_ROUNDS : 1;
			unsigned long sys = 0, c0;

			for (r = 0; r < ENQ_ROUNDS; r++) {
				CK(npu_stream_synchronize(s[0]));
				if (gate_close(s[0]))
					return failed("npu_stream_wait_value32",
						      NPU_ERROR_OS);
				nb[r] = null_ioctl_us(per);
				c0 = ioctls();
				t0 = now_us();
				for (i = 0; i < per; i++)
					CK(npu_launch(NPU_K_NOP, g1, NULL, 0, s[0],
						      NPU_LAUNCH_ASYNC));
				eb[r] = (now_us() - t0) / per;
				sys += ioctls() - c0;
				gate_open();
			}
			CK(npu_stream_synchronize(s[0]));
			enq_sys[t] = (double)sys / (per * ENQ_ROUNDS);
			enq[t] = stats(eb, ENQ_ROUNDS).med;
			enq_nul[t] = stats(nb, ENQ_ROUNDS).med;
		}
		/* sustained: n async launches on an open stream, then one
		 * synchronize: the submit thread's work counts too */
		{
			unsigned long c0 = ioctls();

			t0 = now_us();
			for (i = 0; i < n; i++)
				CK(npu_launch(NPU_K_NOP, g1, NULL, 0, s[0],
					      NPU_LAUNCH_ASYNC));
			CK(npu_stream_synchronize(s[0]));
			sus[t] = (now_us() - t0) / n;
			sus_sys[t] = (double)(ioctls() - c0) / n;
		}
		/* round trip: launch + synchronize */
		t0 = now_us();
		for (i = 0; i < rtn; i++) {
			CK(npu_launch(NPU_K_NOP, g1, NULL, 0, s[0], NPU_LAUNCH_ASYNC));
			CK(npu_stream_synchronize(s[0]));
		}
		rt[t] = (now_us() - t0) / rtn;
		/* event record on an idle stream */
		t0 = now_us();
		for (i = 0; i < n; i++)
			CK(npu_event_record(ev[i], s[0]));
		rec[t] = (now_us() - t0) / n;
		CK(npu_stream_synchronize(s[0]));
		/* query of a completed event */
		t0 = now_us();
		for (i = 0; i < n; i++)
			if (npu_event_query(ev[i]) != NPU_SUCCESS)
				return failed("npu_event_query", NPU_ERROR_NOT_READY);
		qry[t] = (now_us() - t0) / n;
		/* stream wait on a completed event */
		t0 = now_us();
		for (i = 0; i < n; i++)
			CK(npu_stream_wait_event(s[1], ev[i], 0));
		swe[t] = (now_us() - t0) / n;
		CK(npu_stream_synchronize(s[1]));
		/* host function round trip: enqueue + synchronize */
		t0 = now_us();
		for (i = 0; i < rtn; i++) {
			CK(npu_launch_host_func(s[0], host_fn, (void *)&hits));
			CK(npu_stream_synchronize(s[0]));
		}
		hf[t] = (now_us() - t0) / rtn;
		/* its floor, measured the same way right after it */
		pp[t] = thread_pingpong_us(rtn);
		if (pp[t] < 0)
			return failed("pthread_create", NPU_ERROR_OS);
		/* stream create + destroy (streams made in a loop, as a
		 * program that makes one per task does) */
		t0 = now_us();
		for (i = 0; i < scn; i++) {
			CK(npu_stream_create(&tmp, NPU_STREAM_NON_BLOCKING | qflag, 0));
			CK(npu_stream_destroy(tmp));
		}
		scd[t] = (now_us() - t0) / scn;
	}
	if (hits != nt * rtn) {
		fprintf(stderr, "npu-bench: host function ran %d times, expected %d\n", hits, nt * rtn);
		fails++;
		return -1;
	}
	for (i = 0; i < n; i++)
		npu_event_destroy(ev[i]);
	npu_event_destroy(done);
	emit("null_ioctl_us", stats(nul, nt), "us", "DRM_IOCTL_NPU_GET_PARAM (floor)");
	emit("signalled_wait_us", stats(wait, nt), "us", "SYNCOBJ_WAIT on a signalled syncobj");
	emit_ratio("launch_enqueue_ratio", enq, enq_nul, nt,
		   "async npu_launch / null ioctl (medians of 10 rounds)");
	emit("launch_enqueue_us", stats(enq, nt), "us", "async npu_launch of an empty kernel");
	emit("launch_syscalls", stats(enq_sys, nt), "calls",
	     "ioctls per async launch while enqueueing (all threads)");
	emit("launch_sustained_syscalls", stats(sus_sys, nt), "calls",
	     "ioctls per launch of N launches + one synchronize");
	emit_ratio("launch_sustained_ratio", sus, nul, nt,
		   "(N async launches + one synchronize) / N / null ioctl");
	emit("launch_sustained_us", stats(sus, nt), "us",
	     "N async NOP launches + one npu_stream_synchronize, per launch");
	emit_ratio("roundtrip_ratio", rt, floor2, nt, "launch+sync / (null ioctl + signalled wait)");
	emit_ratio("roundtrip_null_ratio", rt, nul, nt,
		   "launch+sync / null ioctl (the CUDA figure's definition)");
	emit("roundtrip_us", stats(rt, nt), "us", "launch + npu_stream_synchronize");
	emit("event_record_us", stats(rec, nt), "us", "npu_event_record, idle stream");
	emit("event_query_us", stats(qry, nt), "us", "npu_event_query, completed");
	emit("stream_wait_event_us", stats(swe, nt), "us", "npu_stream_wait_event, completed");
	emit("host_func_roundtrip_us", stats(hf, nt), "us", "npu_launch_host_func + synchronize");
	emit_ratio("host_func_null_ratio", hf, nul, nt,
		   "npu_launch_host_func + synchronize / null ioctl");
	emit("thread_pingpong_us", stats(pp, nt), "us",
	     "hand-off to a helper thread and back (mutex + condvar)");
	emit_ratio("host_func_pingpong_ratio", hf, pp, nt,
		   "npu_launch_host_func + synchronize / thread ping-pong");
	emit("stream_create_us", stats(scd, nt), "us",
	     "npu_stream_create + npu_stream_destroy of an unused stream");
	tap(1, "launch, round trip, events, stream wait");
	return 0;
}

/* ------------------------------------------------------------------------
 * Chains of N empty kernels: per-iteration time of launch + synchronize,
 * on a stream (and as a graph once libnpu has graphs).
 */
#ifdef HAVE_NPU_GRAPH
static int have_graphs(void)
{
	return npu_stream_begin_capture && npu_stream_end_capture && npu_graph_instantiate &&
	       npu_graph_launch && npu_graph_exec_destroy && npu_graph_destroy &&
	       npu_graph_get_stats;
}

/* A chain of n empty kernels captured from s[0] and instantiated. */
static int graph_chain(int n, npu_graph_exec_t *exec)
{
	npu_graph_t g = NULL;
	int i;

	CK(npu_stream_begin_capture(s[0], NPU_STREAM_CAPTURE_MODE_GLOBAL));
	for (i = 0; i < n; i++)
		if (npu_launch(NPU_K_NOP, g1, NULL, 0, s[0], NPU_LAUNCH_ASYNC) != NPU_SUCCESS)
			break;
	CK(npu_stream_end_capture(s[0], &g));
	if (i < n)
		return failed("npu_launch during capture", npu_get_last_error());
	CK(npu_graph_instantiate(exec, g, 0));
	npu_graph_destroy(g);
	return 0;
}
#endif

static int bench_chains(void)
{
	static const int ns[3] = { 1, 20, 100 };
	int k, t, it, i, nt = tiny ? 1 : trials, iters = tiny ? 1 : 5;
	int graphs = 0;

#ifdef HAVE_NPU_GRAPH
	graphs = have_graphs();
#endif
	double cv[3][MAX_TRIALS], cg[3][MAX_TRIALS], cn[MAX_TRIALS];
	int cnum[3], cgok = graphs;

	for (t = 0; t < nt; t++)
		cn[t] = null_ioctl_us(tiny ? 4 : 400);
	for (k = 0; k < 3; k++) {
		double *v = cv[k], *gv = cg[k], sp[MAX_TRIALS];
		char key[64];
		int n = tiny ? (ns[k] > 4 ? 4 : ns[k]) : ns[k];

		int gok = graphs;

		cnum[k] = n;
		char gwhy[200] = "";

		(void)gv;
		(void)sp;
#ifdef HAVE_NPU_GRAPH
		npu_graph_exec_t exec = NULL;
		npu_graph_stats gs0, gs1;

		if (gok && graph_chain(n, &exec)) {
			snprintf(gwhy, sizeof(gwhy), "graph of %d kernels: capture/instantiate failed: %s",
				 n, npu_last_error_message());
			gok = 0;
			fails--;	/* reported as null with the reason, not a failure */
			npu_device_reset();
		}
		memset(&gs0, 0, sizeof(gs0));
		memset(&gs1, 0, sizeof(gs1));
#endif
		for (t = 0; t < nt; t++) {
			double t0 = now_us();

			for (it = 0; it < iters; it++) {
				for (i = 0; i < n; i++)
					CK(npu_launch(NPU_K_NOP, g1, NULL, 0, s[0], NPU_LAUNCH_ASYNC));
				CK(npu_stream_synchronize(s[0]));
			}
			v[t] = (now_us() - t0) / iters;
#ifdef HAVE_NPU_GRAPH
			if (gok) {
				npu_status_t st = NPU_SUCCESS;

				if (t == 0)
					CK(npu_graph_get_stats(&gs0));
				t0 = now_us();
				for (it = 0; it < iters && st == NPU_SUCCESS; it++) {
					st = npu_graph_launch(exec, s[0]);
					if (st == NPU_SUCCESS)
						st = npu_stream_synchronize(s[0]);
				}
				if (st != NPU_SUCCESS) {
					snprintf(gwhy, sizeof(gwhy), "graph of %d kernels: launch failed: "
						 "%s (%s)", n, npu_status_name(st),
						 npu_last_error_message());
					gok = 0;
					npu_device_reset();	/* clear the sticky error */
					continue;
				}
				gv[t] = (now_us() - t0) / iters;
				sp[t] = gv[t] > 0 ? v[t] / gv[t] : 0;
				if (t == nt - 1)
					CK(npu_graph_get_stats(&gs1));
			}
#endif
		}
		snprintf(key, sizeof(key), "stream_chain_us_%d", ns[k]);
		emit(key, stats(v, nt), "us", "N empty kernels on a stream + synchronize");
		if (graphs && !gok) {
			snprintf(key, sizeof(key), "graph_speedup_%d", ns[k]);
			emit_null(key, gwhy);
		}
		if (gok) {
			snprintf(key, sizeof(key), "graph_chain_us_%d", ns[k]);
			emit(key, stats(gv, nt), "us", "the same chain as one graph launch + synchronize");
			snprintf(key, sizeof(key), "graph_speedup_%d", ns[k]);
			emit(key, stats(sp, nt), "x", "stream chain / graph launch, per iteration");
#ifdef HAVE_NPU_GRAPH
			{
				double per = (double)(gs1.submit_ioctls - gs0.submit_ioctls) /
					     (double)(gs1.launches > gs0.launches ?
						      gs1.launches - gs0.launches : 1);
				struct stat3 st = { per, per, per, 1 };

				snprintf(key, sizeof(key), "graph_submits_per_launch_%d", ns[k]);
				emit(key, st, "ioctl", "DRM_IOCTL_NPU_SUBMIT per graph launch");
			}
#endif
		}
		if (!gok)
			cgok = 0;
#ifdef HAVE_NPU_GRAPH
		if (exec)
			npu_graph_exec_destroy(exec);
#endif
	}
	/* per-kernel marginal cost of a chain, (T(N) - T(1)) / (N - 1), in
	 * null ioctls: what a CUDA user compares (28 and 3.8 on an H200) */
	if (cnum[2] > cnum[0]) {
		double m[MAX_TRIALS];

		for (t = 0; t < nt; t++)
			m[t] = (cv[2][t] - cv[0][t]) / (cnum[2] - cnum[0]) / cn[t];
		emit("stream_chain_marginal_null", stats(m, nt), "x",
		     "(T(N) - T(1)) / (N - 1) / null ioctl, stream, N = 100");
		if (cgok) {
			for (t = 0; t < nt; t++)
				m[t] = (cg[2][t] - cg[0][t]) / (cnum[2] - cnum[0]) / cn[t];
			emit("graph_chain_marginal_null", stats(m, nt), "x",
			     "(T(N) - T(1)) / (N - 1) / null ioctl, graph, N = 100");
			for (t = 0; t < nt; t++)
				m[t] = cv[0][t] > 0 ? cg[2][t] / cv[0][t] : 0;
			emit("graph_vs_launch_100", stats(m, nt), "x",
			     "graph of 100 launch+sync / one kernel launch+sync");
			if (*sfx) {	/* user queues: a one-node graph is
					 * one INDIRECT, as a launch is one job */
				for (t = 0; t < nt; t++)
					m[t] = cv[0][t] > 0 ? cg[0][t] / cv[0][t] : 0;
				emit("graph_launch_vs_kernel", stats(m, nt), "x",
				     "one-node graph launch+sync / one kernel launch+sync");
			}
		} else {
			emit_null("graph_chain_marginal_null", "no graph figures");
		}
	}
	if (!graphs)
		for (k = 0; k < 3; k++) {
			char key[64];

			snprintf(key, sizeof(key), "graph_speedup_%d", ns[k]);
#ifdef HAVE_NPU_GRAPH
			emit_null(key, "skipped: the built libnpu.so lacks the graph functions of npu.h");
#else
			emit_null(key, "skipped: libnpu has no graph API yet (lib/npu.h)");
#endif
		}
	tap(1, graphs ? "stream chains and graph launches of empty kernels" :
		"stream chains of empty kernels (graphs: skipped, no graph API)");
	return 0;
}

/* bench_calls and bench_chains again with s[0] and s[1] on user queues
 * (keys with "_uq"), then back on the library's default. */
static int bench_user_queues(void)
{
	npu_stream_t keep[2] = { s[0], s[1] };
	unsigned f = 0;
	int i, r = 0;

	for (i = 0; i < 2; i++)
		CK(npu_stream_create(&s[i], NPU_STREAM_NON_BLOCKING |
				     NPU_STREAM_USER_QUEUE, 0));
	CK(npu_stream_get_flags(s[0], &f));
	sfx = "_uq";
	qflag = NPU_STREAM_USER_QUEUE;
	if (!(f & NPU_STREAM_USER_QUEUE)) {
		static const char *const keys[] = {
			"roundtrip_null_ratio", "launch_enqueue_ratio",
			"host_func_null_ratio", "event_query_us",
			"launch_syscalls", "stream_chain_marginal_null",
		};

		for (i = 0; i < (int)(sizeof(keys) / sizeof(keys[0])); i++)
			emit_null(keys[i], "the device or driver has no user queues");
		if (tiny) {
			ksft_test_result_skip("calls on user queues: none\n");
			ksft_test_result_skip("chains on user queues: none\n");
		}
	} else {
		r = bench_calls() || bench_chains();
	}
	sfx = "";
	qflag = 0;
	for (i = 0; i < 2; i++) {
		CK(npu_stream_destroy(s[i]));
		s[i] = keep[i];
	}
	if (!r)
		tap(1, "user queues: calls and chains");
	return r;
}

/* ------------------------------------------------------------------------
 * The floor of a graph launch, straight on the uAPI (own fd, own context):
 * a chain of N empty kernels as ONE job (N LAUNCH packets in one command
 * buffer) and as an array of N one-launch jobs in ONE SUBMIT on one queue,
 * then a wait on the last job's syncobj. A graph launch cannot be cheaper
 * than this; stream_chain_us_N / these bound graph_speedup_N.
 */
static int raw_chain(int n, int as_array, double *us, int iters)
{
	struct drm_npu_bo_create bo = { .size = 65536 };
	struct drm_npu_queue_create q = { .kind = DRM_NPU_RING_KIND_COMPUTE,
					  .priority = DRM_NPU_PRIORITY_NORMAL,
					  .ring = DRM_NPU_RING_ANY };
	struct drm_syncobj_create so = { 0 };
	struct drm_npu_job jobs[128];
	struct drm_npu_sync out;
	uint32_t *cmd;
	double t0;
	int i, it, rc = -1;
	void *map;

	if (n > 128)
		return -1;
	if (verbose)
		fprintf(stderr, "raw_chain n=%d array=%d\n", n, as_array);
	if (ioctl(fd, DRM_IOCTL_NPU_BO_CREATE, &bo) ||
	    ioctl(fd, DRM_IOCTL_NPU_QUEUE_CREATE, &q) ||
	    ioctl(fd, DRM_IOCTL_SYNCOBJ_CREATE, &so))
		return -1;
	map = mmap(NULL, bo.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)bo.mmap_offset);
	if (map == MAP_FAILED)
		return -1;
	cmd = map;
	for (i = 0; i < n; i++) {	/* LAUNCH NOP, grid 1x1x1, no arguments */
		cmd[i * 6 + 0] = NPU_PKT_HDR(NPU_OP_LAUNCH, 0, 6);
		cmd[i * 6 + 1] = NPU_KERNEL_NOP;
		cmd[i * 6 + 2] = cmd[i * 6 + 3] = cmd[i * 6 + 4] = 1;
		cmd[i * 6 + 5] = 0;
	}
	memset(jobs, 0, sizeof(jobs));
	memset(&out, 0, sizeof(out));
	out.handle = so.handle;
	for (i = 0; i < n; i++) {
		jobs[i].queue_id = q.queue_id;
		jobs[i].cmd_va = bo.va + (as_array ? (uint64_t)i * 24 : 0);
		jobs[i].cmd_size = as_array ? 24 : (uint32_t)n * 24;
	}
	{
		int nj = as_array ? n : 1;
		struct drm_npu_submit sub = { .jobs = (uint64_t)(uintptr_t)jobs, .job_count = (uint32_t)nj,
					      .job_stride = sizeof(jobs[0]) };
		struct drm_syncobj_wait w;

		jobs[nj - 1].out_syncs = (uint64_t)(uintptr_t)&out;
		jobs[nj - 1].out_sync_count = 1;
		t0 = now_us();
		for (it = -1; it < iters; it++) {	/* it -1: warm-up, not timed */
			if (it == 0)
				t0 = now_us();
			if (verbose)
				fprintf(stderr, "  submit it=%d\n", it);
			if (ioctl(fd, DRM_IOCTL_NPU_SUBMIT, &sub))
				goto out;
			if (verbose)
				fprintf(stderr, "  wait it=%d\n", it);
			memset(&w, 0, sizeof(w));
			w.handles = (uint64_t)(uintptr_t)&so.handle;
			w.count_handles = 1;
			w.timeout_nsec = INT64_MAX;
			w.flags = DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT;
			if (ioctl(fd, DRM_IOCTL_SYNCOBJ_WAIT, &w))
				goto out;
		}
		*us = (now_us() - t0) / iters;
		rc = 0;
	}
out:
	munmap(map, bo.size);
	{
		struct drm_npu_queue_destroy qd = { .queue_id = q.queue_id };
		struct drm_syncobj_destroy sd = { .handle = so.handle };
		struct drm_gem_close gc = { .handle = bo.handle };

		ioctl(fd, DRM_IOCTL_NPU_QUEUE_DESTROY, &qd);
		ioctl(fd, DRM_IOCTL_SYNCOBJ_DESTROY, &sd);
		ioctl(fd, DRM_IOCTL_GEM_CLOSE, &gc);
	}
	return rc;
}

static int bench_submit_floor(void)
{
	static const int ns[3] = { 1, 20, 100 };
	uint64_t maxjobs = 0;
	struct drm_npu_get_param p = { .param = DRM_NPU_PARAM_MAX_JOBS };
	int k, t, nt = tiny ? 1 : trials, iters = tiny ? 1 : 5;

	if (!ioctl(fd, DRM_IOCTL_NPU_GET_PARAM, &p))
		maxjobs = p.value;
	for (k = 0; k < 3; k++) {
		double one[MAX_TRIALS], arr[MAX_TRIALS];
		char key[64];
		int n = ns[k], narr = n <= (int)maxjobs ? n : (int)maxjobs;

		for (t = 0; t < nt; t++)
			if (raw_chain(n, 0, &one[t], iters) || raw_chain(narr, 1, &arr[t], iters)) {
				fprintf(stderr, "npu-bench: raw submit of %d launches failed: %s\n", n,
					strerror(errno));
				fails++;
				return -1;
			}
		snprintf(key, sizeof(key), "submit_one_job_us_%d", n);
		emit(key, stats(one, nt), "us", "uAPI floor: N launches in one job, submit + wait");
		snprintf(key, sizeof(key), "submit_job_array_us_%d", n);
		{
			char what[96];

			snprintf(what, sizeof(what), "uAPI floor: %d one-launch jobs in one SUBMIT + wait",
				 narr);
			emit(key, stats(arr, nt), "us", what);
		}
	}
	tap(1, "uAPI floor of a graph launch (one SUBMIT)");
	return 0;
}

/* ------------------------------------------------------------------------
 * Device-timed helpers
 */
/* A device-timed region over streams s[0..n-1]: an event on each stream
 * before its first command and one after its last; the region lasts from
 * the earliest start to the latest end, in device clock ticks. No event
 * joins the streams, so no cross-stream wait adds its latency. */
static npu_event_t e_s[MAX_S], e_e[MAX_S];

static int region_begin(int n)
{
	int i;

	for (i = 0; i < n; i++)
		CK(npu_event_record(e_s[i], s[i]));
	return 0;
}

/* of the last region: its streams' first start to their last start */
static double region_skew_ms;

static int region_end(int n, double *ms)
{
	uint64_t t0 = UINT64_MAX, t1 = 0, a0 = 0, a, b;
	int i;

	for (i = 0; i < n; i++)
		CK(npu_event_record(e_e[i], s[i]));
	for (i = 0; i < n; i++) {
		if (verbose)
			fprintf(stderr, " synchronize end event of stream %d\n", i);
		CK(npu_event_synchronize(e_e[i]));
		CK(npu_event_timestamp(e_s[i], &a));
		CK(npu_event_timestamp(e_e[i], &b));
		if (a < t0)
			t0 = a;
		if (a > a0)
			a0 = a;
		if (b > t1)
			t1 = b;
	}
	*ms = t1 > t0 ? (double)(t1 - t0) * 1e3 / (double)(prop.clock_hz ? prop.clock_hz : 1e9) : 0;
	region_skew_ms = (double)(a0 - t0) * 1e3 /
			 (double)(prop.clock_hz ? prop.clock_hz : 1e9);
	return 0;
}

/* ------------------------------------------------------------------------
 * simpleStreams: 16 chunks of copy-in, kernel, copy-out over 4 streams.
 * what: bit 0 copies, bit 1 kernels.
 */
#define CHUNKS 16

static float *h_in, *h_out, *d_buf;
static size_t chunk_elems;

static int pipeline(int nstreams, int what, double *ms)
{
	int c;

	if (verbose)
		fprintf(stderr, "pipeline streams=%d what=%d\n", nstreams, what);
	if (region_begin(nstreams))
		return -1;
	for (c = 0; c < CHUNKS; c++) {
		if (verbose)
			fprintf(stderr, " chunk %d\n", c);
		npu_stream_t st = s[c % nstreams];
		float *d = d_buf + (size_t)c * chunk_elems;
		size_t bytes = chunk_elems * 4;
		uint64_t a[4] = { npu_arg_ptr(d), npu_arg_ptr(d), chunk_elems, npu_arg_f32(2.0f) };

		if (what & 1)
			CK(npu_memcpy_async(d, h_in + (size_t)c * chunk_elems, bytes,
					    NPU_MEMCPY_HOST_TO_DEVICE, st));
		if (what & 2)
			CK(npu_launch(NPU_K_SCALE_F32, npu_grid(prop.compute_units, 1, 1), a, 4, st,
				      NPU_LAUNCH_ASYNC));
		if (what & 1)
			CK(npu_memcpy_async(h_out + (size_t)c * chunk_elems, d, bytes,
					    NPU_MEMCPY_DEVICE_TO_HOST, st));
	}
	return region_end(nstreams, ms);
}

static FILE *overlap_csv;

static int bench_overlap(void)
{
	double all[MAX_TRIALS], cp[MAX_TRIALS], kr[MAX_TRIALS], ser[MAX_TRIALS], ideal[MAX_TRIALS];
	int t, nt = tiny ? 1 : trials;
	size_t i, n;

	chunk_elems = tiny ? 1024 : 512 * 1024;	/* 4 KiB or 2 MiB per chunk */
	n = chunk_elems * CHUNKS;
	CK(npu_host_alloc((void **)&h_in, n * 4, 0));
	CK(npu_host_alloc((void **)&h_out, n * 4, 0));
	CK(npu_malloc((void **)&d_buf, n * 4));
	for (i = 0; i < n; i++)
		h_in[i] = (float)(i % 1000);
	for (t = 0; t < nt; t++) {
		if (pipeline(1, 3, &ser[t]) || pipeline(4, 1, &cp[t]) || pipeline(4, 2, &kr[t]) ||
		    pipeline(4, 3, &all[t]))
			return -1;
		ideal[t] = cp[t] > kr[t] ? cp[t] : kr[t];
		if (overlap_csv)
			fprintf(overlap_csv, "%d,%.4f,%.4f,%.4f,%.4f\n", t, ser[t], cp[t], kr[t], all[t]);
	}
	for (i = 0; i < n; i++)
		if (h_out[i] != 2.0f * (float)(i % 1000)) {
			fprintf(stderr, "npu-bench: overlap run: wrong result at %zu: %g\n", i, h_out[i]);
			fails++;
			return -1;
		}
	{
		/* medians first, then the ratio: a per-trial ratio of two noisy
		 * runs is noisier than either; min and max are per trial */
		struct stat3 sc = stats(cp, nt), sk = stats(kr, nt), sa = stats(all, nt), r;
		double per[MAX_TRIALS];

		for (i = 0; i < (size_t)nt; i++)
			per[i] = all[i] > 0 ? ideal[i] / all[i] : 0;
		r = stats(per, nt);
		r.med = sa.med > 0 ? (sc.med > sk.med ? sc.med : sk.med) / sa.med : 0;
		emit("overlap_efficiency", r, "x",
		     "max(median copies alone, median kernels alone) / median measured");
	}
	emit("overlap_serial_ms", stats(ser, nt), "ms", "the same work on one stream");
	emit("overlap_copies_alone_ms", stats(cp, nt), "ms", "copies only, 4 streams");
	emit("overlap_kernels_alone_ms", stats(kr, nt), "ms", "kernels only, 4 streams");
	emit("overlap_measured_ms", stats(all, nt), "ms", "copy-in, kernel, copy-out, 4 streams");
	tap(1, "simpleStreams overlap run (results checked)");
	if (trace_path) {	/* one serial and one pipelined run, for the picture */
		double ms;

		if (npu_device_synchronize() || npu_profiler_start() ||
		    pipeline(1, 3, &ms) || pipeline(4, 3, &ms) ||
		    npu_trace_write_json(trace_path) || npu_profiler_stop()) {
			fprintf(stderr, "npu-bench: traced overlap run: %s\n",
				npu_last_error_message());
			fails++;
			return -1;
		}
	}
	npu_host_free(h_in);
	npu_host_free(h_out);
	npu_free(d_buf);
	return 0;
}

/* ------------------------------------------------------------------------
 * Concurrency: N equal timed kernels on N streams vs on one stream.
 */
static int bench_concurrency(void)
{
	static const int ns[3] = { 2, 4, 8 };
	uint64_t spin_ns = tiny ? 100000 : 20000000;
	int k, t, i, nt = tiny ? 1 : trials;

	for (k = 0; k < 3; k++) {
		double one[MAX_TRIALS], many[MAX_TRIALS], r[MAX_TRIALS];
		double skew[MAX_TRIALS];
		char key[64], what[128];
		int n = ns[k];
		double cap = n < (int)prop.compute_rings ? (double)n : (double)prop.compute_rings;

		for (t = 0; t < nt; t++) {
			uint64_t a[1] = { spin_ns };

			if (region_begin(1))
				return -1;
			for (i = 0; i < n; i++)
				CK(npu_launch(NPU_K_TEST_SPIN, g1, a, 1, s[0], NPU_LAUNCH_ASYNC));
			if (region_end(1, &one[t]) || region_begin(n))
				return -1;
			for (i = 0; i < n; i++)
				CK(npu_launch(NPU_K_TEST_SPIN, g1, a, 1, s[i], NPU_LAUNCH_ASYNC));
			if (region_end(n, &many[t]))
				return -1;
			skew[t] = region_skew_ms;
			r[t] = many[t] > 0 ? one[t] / many[t] : 0;
		}
		snprintf(key, sizeof(key), "concurrency_speedup_%d", n);
		snprintf(what, sizeof(what), "%d x %.1f ms spin: 1 stream / %d streams (cap %.0f)",
			 n, spin_ns / 1e6, n, cap);
		emit(key, stats(r, nt), "x", what);
		snprintf(key, sizeof(key), "concurrency_start_skew_%d_ms", n);
		snprintf(what, sizeof(what), "%d streams: first to last start "
			 "event of the region (device time)", n);
		emit(key, stats(skew, nt), "ms", what);
	}
	tap(1, "concurrency of timed kernels over 2, 4, 8 streams");
	return 0;
}

/* ------------------------------------------------------------------------
 * Copy bandwidth (MB/s = 1e6 bytes/s, as the device's figures): with the
 * model on compared to the modelled link, with it off reported for run.sh.
 */
static int copy_bw(npu_memcpy_kind_t kind, size_t bytes, void *h, void *d, void *d2,
		   double *mbps)
{
	double ms;

	if (region_begin(1))
		return -1;
	if (kind == NPU_MEMCPY_HOST_TO_DEVICE)
		CK(npu_memcpy_async(d, h, bytes, kind, s[0]));
	else if (kind == NPU_MEMCPY_DEVICE_TO_HOST)
		CK(npu_memcpy_async(h, d, bytes, kind, s[0]));
	else
		CK(npu_memcpy_async(d2, d, bytes, kind, s[0]));
	if (region_end(1, &ms))
		return -1;
	*mbps = ms > 0 ? bytes / (ms * 1e3) : 0;
	return 0;
}

static int bench_bandwidth(void)
{
	size_t bytes = tiny ? 65536 : 16u << 20;
	double h2d[MAX_TRIALS], d2h[MAX_TRIALS], d2d[MAX_TRIALS], r[MAX_TRIALS];
	int t, nt = tiny ? 1 : trials;
	void *h, *d, *d2;

	CK(npu_host_alloc(&h, bytes, 0));
	CK(npu_malloc(&d, bytes));
	CK(npu_malloc(&d2, bytes));
	memset(h, 1, bytes);
	for (t = 0; t < nt; t++) {
		if (copy_bw(NPU_MEMCPY_HOST_TO_DEVICE, bytes, h, d, d2, &h2d[t]) ||
		    copy_bw(NPU_MEMCPY_DEVICE_TO_HOST, bytes, h, d, d2, &d2h[t]) ||
		    copy_bw(NPU_MEMCPY_DEVICE_TO_DEVICE, bytes, h, d, d2, &d2d[t]))
			return -1;
		r[t] = prop.link_bw_mbps ? h2d[t] / prop.link_bw_mbps : 0;
	}
	if (!model_off) {
		emit("link_bw_ratio", stats(r, nt), "x", "H2D bandwidth / modelled link bandwidth");
		emit("link_h2d_mbps", stats(h2d, nt), "MB/s", "pinned host -> device, model on");
		emit("link_d2h_mbps", stats(d2h, nt), "MB/s", "device -> pinned host, model on");
		emit("link_d2d_mbps", stats(d2d, nt), "MB/s", "device -> device, model on");
	} else {
		emit("copy_h2d_mbps", stats(h2d, nt), "MB/s", "pinned host -> device, model off");
		emit("copy_d2h_mbps", stats(d2h, nt), "MB/s", "device -> pinned host, model off");
		emit("copy_d2d_mbps", stats(d2d, nt), "MB/s", "device -> device, model off");
	}
	tap(1, "copy bandwidth H2D, D2H, D2D (%zu bytes)", bytes);
	npu_host_free(h);
	npu_free(d);
	npu_free(d2);
	return 0;
}

/* ------------------------------------------------------------------------
 * Curves (issue 17): "curve_<name>": {"title", "x_label", "y_label",
 * "log_x", "log_y", "per_x_label" (optional: y / x is also reported, e.g.
 * per node), "series": [{"name", "points": [[x, y], ...]}]}, in
 * results.json; tests/bench/run.sh prints them as tables and
 * npu-bench-plot draws them.
 */
static struct json_object *curve_new(const char *key, const char *title, const char *xl,
				     const char *yl, int logx, int logy, const char *per_x)
{
	struct json_object *o, *ser;

	if (!tiny)
		printf("curve %s: %s\n", key, title);
	if (!js)
		return NULL;
	o = json_object_new_object();
	ser = json_object_new_array();
	json_object_object_add(o, "title", json_object_new_string(title));
	json_object_object_add(o, "x_label", json_object_new_string(xl));
	json_object_object_add(o, "y_label", json_object_new_string(yl));
	json_object_object_add(o, "log_x", json_object_new_boolean(logx));
	json_object_object_add(o, "log_y", json_object_new_boolean(logy));
	if (per_x)
		json_object_object_add(o, "per_x_label", json_object_new_string(per_x));
	json_object_object_add(o, "series", ser);
	json_object_object_add(js, key, o);
	return ser;
}

static struct json_object *curve_series(struct json_object *c, const char *name)
{
	struct json_object *o, *pts;

	if (!c)
		return NULL;
	o = json_object_new_object();
	pts = json_object_new_array();
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "points", pts);
	json_object_array_add(c, o);
	return pts;
}

static void curve_point(struct json_object *pts, const char *name, double x, double y)
{
	struct json_object *p;

	if (!tiny)
		printf("  %-24s %12g %12.4g\n", name, x, y);
	if (!pts)
		return;
	p = json_object_new_array();
	json_object_array_add(p, js_num(x));
	json_object_array_add(p, js_num(y));
	json_object_array_add(pts, p);
}

static void curve_note(const char *key, const char *why)
{
	if (!tiny)
		printf("  note: %s\n", why);
	if (js_notes)
		json_object_object_add(js_notes, key, json_object_new_string(why));
}

/* a. Aggregate launch throughput with 1..8 host threads, each on its own
 * non-blocking stream: M async NOP launches, then a synchronize of its
 * stream; launches/s over the wall time from the common start to the last
 * thread's return. M = 20000: the steady rate, not the threads' start and
 * their streams' first wake-ups (a fixed cost per trial, which favoured
 * the points with more launches at M = 2000). The thread counts take
 * turns, one trial each per round, so a slow phase of the host weighs on
 * every point alike. */
struct thr_arg {
	pthread_barrier_t *bar;
	npu_stream_t st;
	int m;
	npu_status_t rc;
};

static void *thr_launch(void *p)
{
	struct thr_arg *a = p;
	int i;

	pthread_barrier_wait(a->bar);
	a->rc = NPU_SUCCESS;
	for (i = 0; i < a->m && a->rc == NPU_SUCCESS; i++)
		a->rc = npu_launch(NPU_K_NOP, g1, NULL, 0, a->st, NPU_LAUNCH_ASYNC);
	if (a->rc == NPU_SUCCESS)
		a->rc = npu_stream_synchronize(a->st);
	return NULL;
}

/* One trial: n threads on st[0..n-1], m launches each; *rate in
 * launches/s. */
static int threads_trial(npu_stream_t *st, int n, int m, double *rate)
{
	pthread_t th[MAX_S];
	struct thr_arg a[MAX_S];
	pthread_barrier_t bar;
	double t0;
	int i;

	pthread_barrier_init(&bar, NULL, n + 1);
	for (i = 0; i < n; i++) {
		a[i].bar = &bar;
		a[i].st = st[i];
		a[i].m = m;
		/* threads already made stay at the barrier: the run stops */
		if (pthread_create(&th[i], NULL, thr_launch, &a[i]))
			return failed("pthread_create", NPU_ERROR_OS);
	}
	pthread_barrier_wait(&bar);
	t0 = now_us();
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	*rate = (double)n * m / ((now_us() - t0) * 1e-6);
	pthread_barrier_destroy(&bar);
	for (i = 0; i < n; i++)
		if (a[i].rc != NPU_SUCCESS)
			return failed("launch thread", a[i].rc);
	return 0;
}

/* One curve of bench_curve_threads over the streams st. */
static int curve_threads(const char *key, const char *what, npu_stream_t *st)
{
	static const int nth[4] = { 1, 2, 4, 8 };
	int k, t, kn = tiny ? 2 : 4, nt = tiny ? 1 : trials, m = tiny ? 4 : 20000;
	struct json_object *c = curve_new(key, what, "host threads",
		"launches/s (aggregate)", 0, 0, NULL);
	struct json_object *pts = curve_series(c, "aggregate");
	double v[4][MAX_TRIALS];

	for (t = 0; t < nt; t++)
		for (k = 0; k < kn; k++)
			if (threads_trial(st, nth[k], m, &v[k][t]))
				return -1;
	for (k = 0; k < kn; k++)
		curve_point(pts, "aggregate", nth[k], stats(v[k], nt).med);
	return 0;
}

/* The streams of s[] are on kernel queues; the same curve on user queues
 * (one non-blocking user-queue stream per thread) follows. */
static int bench_curve_threads(void)
{
	npu_stream_t uq[MAX_S];
	unsigned f = 0;
	int i, n = 0, r;

	r = curve_threads("curve_launch_threads", "Aggregate async NOP launches/s, "
			  "one non-blocking stream per host thread", s);
	for (i = 0; !r && i < MAX_S; i++, n++)
		if (npu_stream_create(&uq[i], NPU_STREAM_NON_BLOCKING |
				      NPU_STREAM_USER_QUEUE, 0) != NPU_SUCCESS)
			r = failed("npu_stream_create", npu_get_last_error());
	if (!r && !npu_stream_get_flags(uq[0], &f) && (f & NPU_STREAM_USER_QUEUE))
		r = curve_threads("curve_launch_threads_uq", "Aggregate async NOP "
				  "launches/s, one non-blocking user-queue stream "
				  "per host thread", uq);
	for (i = 0; i < n; i++)
		npu_stream_destroy(uq[i]);
	if (!r)
		tap(1, "curve: launches/s over %d host threads", tiny ? 2 : 8);
	return r;
}

/* c. One DRM SUBMIT carrying 1..64 one-launch jobs, + wait (raw uAPI). */
static int bench_curve_submit(void)
{
	static const int nj[7] = { 1, 2, 4, 8, 16, 32, 64 };
	struct drm_npu_get_param p = { .param = DRM_NPU_PARAM_MAX_JOBS };
	int k, t, kn = tiny ? 2 : 7, nt = tiny ? 1 : trials, iters = tiny ? 1 : 10;
	struct json_object *c = curve_new("curve_submit_jobs",
		"One DRM_IOCTL_NPU_SUBMIT of N one-launch NOP jobs + syncobj wait (raw uAPI)",
		"jobs per SUBMIT", "submit + wait (us)", 1, 0, "us/job");
	struct json_object *pts = curve_series(c, "submit + wait");
	uint64_t maxjobs = 64;

	if (!ioctl(fd, DRM_IOCTL_NPU_GET_PARAM, &p))
		maxjobs = p.value;
	for (k = 0; k < kn; k++) {
		double v[MAX_TRIALS];

		if (nj[k] > (int)maxjobs) {
			curve_note("curve_submit_jobs", "points above DRM_NPU_PARAM_MAX_JOBS left out");
			break;
		}
		for (t = 0; t < nt; t++)
			if (raw_chain(nj[k], 1, &v[t], iters)) {
				fprintf(stderr, "npu-bench: SUBMIT of %d jobs failed: %s\n", nj[k],
					strerror(errno));
				fails++;
				return -1;
			}
		curve_point(pts, "submit + wait", nj[k], stats(v, nt).med);
	}
	tap(1, "curve: jobs per SUBMIT");
	return 0;
}

#ifdef HAVE_NPU_GRAPH
#pragma weak npu_graph_create
#pragma weak npu_graph_add_kernel_node
#pragma weak npu_graph_add_empty_node

/* Join nodes[0..n) (n >= 1) into one node by levels of empty nodes of at
 * most 32 dependencies each (instantiate takes at most 60 nodes without
 * successors and 60 cross-queue dependencies per node). */
static int graph_join(npu_graph_t g, npu_graph_node_t *nodes, int n)
{
	while (n > 1) {
		int i, o = 0;

		for (i = 0; i < n; i += 32) {
			int d = n - i < 32 ? n - i : 32;

			CK(npu_graph_add_empty_node(&nodes[o], g, &nodes[i], d));
			o++;
		}
		n = o;
	}
	return 0;
}

/* A chain (fan == 0) or a fan-out (root, n independent nodes, join) of n
 * NOP kernel nodes, built with the node API. */
static int graph_build(int n, int fan, npu_graph_t *g)
{
	npu_kernel_node_params kp;
	npu_graph_node_t root, prev = NULL, *nodes;
	int i;

	memset(&kp, 0, sizeof(kp));
	kp.kernel = NPU_K_NOP;
	kp.grid = g1;
	nodes = calloc(n, sizeof(*nodes));
	if (!nodes)
		return failed("calloc", NPU_ERROR_OS);
	CK(npu_graph_create(g, 0));
	if (fan)
		CK(npu_graph_add_kernel_node(&root, *g, NULL, 0, &kp));
	for (i = 0; i < n; i++) {
		const npu_graph_node_t *dep = fan ? &root : (prev ? &prev : NULL);

		if (npu_graph_add_kernel_node(&nodes[i], *g, dep, dep ? 1 : 0, &kp)) {
			free(nodes);
			return failed("npu_graph_add_kernel_node", npu_get_last_error());
		}
		prev = nodes[i];
	}
	i = fan ? graph_join(*g, nodes, n) : 0;
	free(nodes);
	return i;
}

/* Nodes of a fan-out of n: root, n, levels of joins of 32. */
static int fan_nodes(int n)
{
	int t = 1 + n;

	while (n > 1) {
		n = (n + 31) / 32;
		t += n;
	}
	return t;
}

/* b. instantiate and launch + synchronize of chains and fan-outs. */
static int bench_curve_graphs(void)
{
	static const int ns[4] = { 10, 100, 1000, 4000 };
	int k, t, f, it, kn = tiny ? 1 : 4, nt = tiny ? 1 : (trials < 3 ? trials : 3),
	    iters = tiny ? 1 : 3;
	struct json_object *ci, *cl, *pi[2], *pl[2];
	static const char *nm[2] = { "chain", "fan-out" };
	double big = 0;
	/* instantiate cost per node of the chains of 100, 1,000 and 4,000
	 * nodes */
	double per[3][MAX_TRIALS];
	int nper[3] = { 0, 0, 0 };

	if (!have_graphs() || !npu_graph_create || !npu_graph_add_kernel_node ||
	    !npu_graph_add_empty_node) {
		tap(1, "curve: graphs skipped, no graph API");
		return 0;
	}
	ci = curve_new("curve_graph_instantiate",
		       "npu_graph_instantiate of N NOP kernel nodes (chain; fan-out = root, N, join)",
		       "kernel nodes", "instantiate (us)", 1, 1, "us/node");
	cl = curve_new("curve_graph_launch",
		       "npu_graph_launch + npu_stream_synchronize of N NOP kernel nodes",
		       "kernel nodes", "launch + sync (us)", 1, 1, "us/node");
	for (f = 0; f < 2; f++) {
		pi[f] = curve_series(ci, nm[f]);
		pl[f] = curve_series(cl, nm[f]);
	}
	for (k = 0; k < kn; k++) {
		int n = ns[k];

		if (n == 4000 && big * 4 > 20e6) {
			char why[160];

			snprintf(why, sizeof(why), "4000 nodes left out: the 1000-node points took "
				 "%.1f s, 4000 would take over 20 s", big * 1e-6);
			curve_note("curve_graph_4000", why);
			break;
		}
		for (f = 0; f < 2; f++) {
			double vi[MAX_TRIALS], vl[MAX_TRIALS], p0 = now_us();

			n = ns[k];
			while (f && fan_nodes(n) > (int)NPU_GRAPH_MAX_NODES)
				n -= 8;	/* root + n + joins within the limit */
			if (n != ns[k]) {
				char why[160];

				snprintf(why, sizeof(why), "the fan-out point of %d is %d kernel "
					 "nodes: with its root and %d join nodes that is the most "
					 "a graph holds (%d)", ns[k], n, fan_nodes(n) - n - 1,
					 (int)NPU_GRAPH_MAX_NODES);
				curve_note("curve_graph_fan_out", why);
			}

			for (t = 0; t < nt; t++) {
				npu_graph_t g;
				npu_graph_exec_t ex;
				double t0;

				if (graph_build(n, f, &g))
					return -1;
				t0 = now_us();
				CK(npu_graph_instantiate(&ex, g, 0));
				vi[t] = now_us() - t0;
				if (!f && (n == 100 || n == 1000 || n == 4000)) {
					int w = n == 100 ? 0 : n == 1000 ? 1 : 2;

					per[w][nper[w]++] = vi[t] / n;
				}
				CK(npu_graph_launch(ex, s[0]));	/* warm-up */
				CK(npu_stream_synchronize(s[0]));
				t0 = now_us();
				for (it = 0; it < iters; it++) {
					CK(npu_graph_launch(ex, s[0]));
					CK(npu_stream_synchronize(s[0]));
				}
				vl[t] = (now_us() - t0) / iters;
				npu_graph_exec_destroy(ex);
				npu_graph_destroy(g);
			}
			if (n == 1000)
				big += (now_us() - p0) / nt;
			curve_point(pi[f], nm[f], n, stats(vi, nt).med);
			curve_point(pl[f], nm[f], n, stats(vl, nt).med);
		}
	}
	if (nper[0])
		emit("graph_instantiate_us_per_node_100", stats(per[0], nper[0]), "us",
		     "npu_graph_instantiate of a chain of 100 NOP kernel nodes, per node");
	else
		emit_null("graph_instantiate_us_per_node_100", "the 100-node points were left out");
	/* The growth is taken from 1,000 nodes on: at 100 the fixed costs
	 * (queues, buffers) still weigh on the cost per node, and under TCG a
	 * working set of megabytes costs more per byte than one of kilobytes
	 * (its software TLB), so 100 to 1,000 grows even when the work per
	 * node does not. */
	if (nper[2] == nper[1] && nper[1]) {
		emit("graph_instantiate_us_per_node_4000", stats(per[2], nper[2]), "us",
		     "the same for a chain of 4,000 nodes");
		emit_ratio("graph_instantiate_growth", per[2], per[1], nper[1],
			   "per-node cost at 4,000 nodes / at 1,000 (1: linear)");
	} else {
		emit_null("graph_instantiate_us_per_node_4000", "the 4,000-node points were left out");
		emit_null("graph_instantiate_growth", "the 4,000-node points were left out");
	}
	tap(1, "curve: graph instantiate and launch, chain and fan-out");
	return 0;
}
#endif

/* d. Copy bandwidth over sizes, pinned and pageable host memory (model
 * off): wall time of synchronous npu_memcpy calls, repeated for small
 * sizes. */
static int copy_point(void *dst, const void *src, size_t bytes, npu_memcpy_kind_t kind, double *mbps)
{
	int reps = bytes >= (4u << 20) ? 2 : (int)((8u << 20) / bytes), i;
	double t0;

	if (reps > 256)
		reps = 256;
	if (tiny)
		reps = 2;
	CK(npu_memcpy(dst, src, bytes, kind));	/* warm-up: faults, bounce buffers */
	CK(npu_device_synchronize());
	t0 = now_us();
	for (i = 0; i < reps; i++)
		CK(npu_memcpy(dst, src, bytes, kind));
	CK(npu_device_synchronize());	/* a D2D npu_memcpy may return early, as CUDA's */
	*mbps = (double)bytes * reps / (now_us() - t0);
	return 0;
}

static int bench_curve_copy(void)
{
	static const size_t sz[6] = { 4u << 10, 64u << 10, 1u << 20, 16u << 20, 64u << 20,
				      256u << 20 };
	static const char *nm[5] = { "H2D pinned", "D2H pinned", "H2D pageable", "D2H pageable",
				     "D2D" };
	struct json_object *c = curve_new("curve_copy_bw",
		"npu_memcpy bandwidth, timing model off (wall time of synchronous copies)",
		"copy size (bytes)", "MB/s", 1, 1, NULL);
	struct json_object *pts[5];
	int k, j, t, kn = tiny ? 2 : 6, nt = tiny ? 1 : (trials < 3 ? trials : 3);
	char why[400] = "";

	for (j = 0; j < 5; j++)
		pts[j] = curve_series(c, nm[j]);
	for (k = 0; k < kn; k++) {
		size_t b = sz[k];
		void *hp = NULL, *hm, *d = NULL, *d2 = NULL;
		double v[5][MAX_TRIALS];

		if (npu_malloc(&d, b) != NPU_SUCCESS) {
			snprintf(why + strlen(why), sizeof(why) - strlen(why),
				 "%zu MiB: npu_malloc refused (devmem %llu MiB); ", b >> 20,
				 (unsigned long long)(prop.devmem_size >> 20));
			npu_get_last_error();
			break;
		}
		if (npu_malloc(&d2, b) != NPU_SUCCESS) {
			snprintf(why + strlen(why), sizeof(why) - strlen(why),
				 "%zu MiB D2D: second buffer refused (devmem %llu MiB); ", b >> 20,
				 (unsigned long long)(prop.devmem_size >> 20));
			npu_get_last_error();
			d2 = NULL;
		}
		hm = malloc(b);
		if (!hm || npu_host_alloc(&hp, b, 0) != NPU_SUCCESS) {
			npu_free(d);
			if (d2)
				npu_free(d2);
			free(hm);
			return failed("host buffers", NPU_ERROR_OUT_OF_MEMORY);
		}
		memset(hm, 1, b);
		memset(hp, 1, b);
		for (t = 0; t < nt; t++) {
			if (copy_point(d, hp, b, NPU_MEMCPY_HOST_TO_DEVICE, &v[0][t]) ||
			    copy_point(hp, d, b, NPU_MEMCPY_DEVICE_TO_HOST, &v[1][t]) ||
			    copy_point(d, hm, b, NPU_MEMCPY_HOST_TO_DEVICE, &v[2][t]) ||
			    copy_point(hm, d, b, NPU_MEMCPY_DEVICE_TO_HOST, &v[3][t]) ||
			    (d2 && copy_point(d2, d, b, NPU_MEMCPY_DEVICE_TO_DEVICE, &v[4][t])))
				return -1;
		}
		for (j = 0; j < (d2 ? 5 : 4); j++)
			curve_point(pts[j], nm[j], (double)b, stats(v[j], nt).med);
		npu_free(d);
		if (d2)
			npu_free(d2);
		npu_host_free(hp);
		free(hm);
	}
	if (why[0])
		curve_note("curve_copy_bw", why);
	tap(1, "curve: copy bandwidth over sizes, pinned and pageable");
	return 0;
}

/* GEMM throughput, model off: C = A B, n x n x n, checked on a few entries. */
/* ------------------------------------------------------------------------
 * User kernels: loading a code object, async launch cost against the
 * null ioctl (as launch_enqueue_ratio for built-ins), and the tiled SGEMM
 * of the matrixMul example against its naive kernel and the built-in GEMM.
 */
static int kernel_path(char *buf, size_t n, const char *name)
{
	char self[PATH_MAX];
	ssize_t l = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (l <= 0)
		return -1;
	self[l] = 0;
	*strrchr(self, '/') = 0;
	snprintf(buf, n, "%s/kernels/%s.npu", self, name);
	return 0;
}

static float sgemm_ms(npu_function_t f, npu_dim3 grid, npu_dim3 block,
		      unsigned scratch, void **args)
{
	float ms = -1;

	CK(npu_event_record(e_s[0], s[0]));
	CK(npu_launch_kernel(f, grid, block, scratch, s[0], args));
	CK(npu_event_record(e_e[0], s[0]));
	CK(npu_event_synchronize(e_e[0]));
	CK(npu_event_elapsed_time(&ms, e_s[0], e_e[0]));
	return ms;
}

static int bench_user_kernels(void)
{
	double load[MAX_TRIALS], enq[MAX_TRIALS], nul[MAX_TRIALS], benq[MAX_TRIALS];
	double naive_r[MAX_TRIALS], builtin_r[MAX_TRIALS];
	int n = tiny ? 4 : 400, t, i, nt = tiny ? 1 : trials;
	char path[PATH_MAX + 32], mpath[PATH_MAX + 32];
	unsigned zero = 0, tag = 0, M = 64, T = 16, P = 4;
	npu_function_t pat, naive, tiled;
	npu_module_t m, mm;
	void *out = NULL, *pargs[3] = { &out, &zero, &tag };
	uint64_t fargs[3] = { 0, 0, 0 };	/* FILL (y, n = 0, value) */

	if (!(prop.features & NPU_FEATURE_USER_KERNELS)) {
		emit_null("user_launch_enqueue_ratio", "the device runs no user kernels");
		return tiny ? -1 : 0;
	}
	if (kernel_path(path, sizeof(path), "other") ||
	    kernel_path(mpath, sizeof(mpath), "matrixMul"))
		return -1;
	for (t = 0; t < nt; t++) {
		double t0 = now_us();

		CK(npu_module_load(&m, path));
		load[t] = now_us() - t0;
		if (t < nt - 1)
			CK(npu_module_unload(m));
	}
	CK(npu_module_get_function(&pat, m, "pattern"));
	CK(npu_malloc(&out, 4096));
	fargs[0] = npu_arg_ptr(out);
	for (t = 0; t < nt; t++) {
		/* ENQ_ROUNDS rounds behind a closed gate, each a batch of user
		 * launches and one of built-in launches, which one first
		 * alternating; a trial's figure for each is the median of its
		 * batches, so that a submit-thread wake-up or a host hiccup in
		 * one batch does not decide the ratio */
		double ub[ENQ_ROUNDS], bb[ENQ_ROUNDS];
		int r, k, per = n >= ENQ_ROUNDS ? n / ENQ_ROUNDS : 1;

		nul[t] = null_ioctl_us(n);
		for (r = 0; r < ENQ_ROUNDS; r++) {
			CK(npu_stream_synchronize(s[0]));
			if (gate_close(s[0]))
				return -1;
			for (k = 0; k < 2; k++) {
				int user = (k + r + t) % 2 == 0;
				double t0 = now_us();

				if (user)
					for (i = 0; i < per; i++)
						CK(npu_launch_kernel(pat, g1, g1, 0,
								     s[0], pargs));
				else	/* the built-in: same arguments */
					for (i = 0; i < per; i++)
						CK(npu_launch(NPU_K_FILL_F32, g1,
							      fargs, 3, s[0],
							      NPU_LAUNCH_ASYNC));
				*(user ? &ub[r] : &bb[r]) = (now_us() - t0) / per;
			}
			gate_open();
		}
		CK(npu_stream_synchronize(s[0]));
		enq[t] = stats(ub, ENQ_ROUNDS).med;
		benq[t] = stats(bb, ENQ_ROUNDS).med;
	}
	emit("module_load_us", stats(load, nt), "us",
	     "npu_module_load of a small code object (other.npu)");
	emit_ratio("user_launch_enqueue_ratio", enq, nul, nt,
		   "async npu_launch_kernel / null ioctl");
	emit("user_launch_enqueue_us", stats(enq, nt), "us",
	     "async npu_launch_kernel of a one-thread kernel");
	emit_ratio("user_vs_builtin_enqueue", enq, benq, nt,
		   "async npu_launch_kernel (3 arguments) / async npu_launch of "
		   "the built-in FILL (3 arguments), same run");
	tap(1, "user kernels: load, %d async launches", n);
	CK(npu_module_unload(m));
	npu_free(out);
	if (tiny)
		return 0;
	CK(npu_module_load(&mm, mpath));
	CK(npu_module_get_function(&naive, mm, "sgemm_naive"));
	CK(npu_module_get_function(&tiled, mm, "sgemm_tiled"));
	{
		void *a, *b, *c, *args[7] = { &a, &b, &c, &M, &M, &M, &T };
		uint64_t ga[9];

		CK(npu_malloc(&a, 4 * M * M));
		CK(npu_malloc(&b, 4 * M * M));
		CK(npu_malloc(&c, 4 * M * M));
		CK(npu_memset(a, 0, 4 * M * M));
		CK(npu_memset(b, 0, 4 * M * M));
		ga[0] = npu_arg_ptr(a);
		ga[1] = npu_arg_ptr(b);
		ga[2] = npu_arg_ptr(c);
		ga[3] = ga[4] = ga[5] = M;
		ga[6] = 0;
		ga[7] = npu_arg_f32(1.0f);
		ga[8] = npu_arg_f32(0.0f);
		for (t = 0; t < nt; t++) {
			float nv = sgemm_ms(naive, npu_grid(M * M / prop.unit_threads, 1, 1),
					    npu_grid(prop.unit_threads, 1, 1), 0, args);
			float tv = sgemm_ms(tiled, npu_grid(M / T, M / T, 1),
					    npu_grid(P, 1, 1), 2 * T * T * 4, args);
			float bv;

			CK(npu_event_record(e_s[0], s[0]));
			CK(npu_launch(NPU_K_GEMM_F32, npu_grid(prop.compute_units, 1, 1),
				      ga, 9, s[0], NPU_LAUNCH_ASYNC));
			CK(npu_event_record(e_e[0], s[0]));
			CK(npu_event_synchronize(e_e[0]));
			CK(npu_event_elapsed_time(&bv, e_s[0], e_e[0]));
			naive_r[t] = tv > 0 ? nv / tv : 0;
			builtin_r[t] = bv > 0 ? tv / bv : 0;
		}
		emit("sgemm_tuned_vs_naive", stats(naive_r, nt), "x",
		     "user SGEMM 64^3: naive / tiled (tile 16, 4 threads) device time");
		emit("sgemm_scalar_tiled_vs_builtin", stats(builtin_r, nt), "x",
		     "user scalar tiled SGEMM 64^3 / built-in GEMM (tensor "
		     "engine code) device time (report)");
		npu_free(a);
		npu_free(b);
		npu_free(c);
	}
	CK(npu_module_unload(mm));
	return 0;
}

/* ------------------------------------------------------------------------
 * The tensor engine's GEMM (examples/kernels/gemmTensor.c), --tensor, under
 * timing=virtual: npu_tune_space over tile sizes and pipeline depth, every
 * point (so where the optimum lies is known, not sampled), in isolation
 * and under the load of other candidates, at TUNE_N^3; the best
 * point's fraction of the modelled peak at PEAK_N^3 (the profiler's
 * roofline); a 512^3 f32 GEMM's host wall time; the best f32 point against
 * the built-in GEMM (sgemm_tuned_vs_builtin). The points' code objects
 * are built on the host (make -C tests/bench: --print-gemm-points).
 */
#define TUNE_N		1024	/* the size the peak is measured at */
#define PEAK_N		1024

static const long gv_m[] = { 32, 64, 128 }, gv_n[] = { 32, 64, 128 },
		  gv_k[] = { 16, 32, 64 }, gv_depth[] = { 1, 2, 3 };
static const long gv_bf16[] = { 1 }, gv_f32[] = { 0 };

static char gemm_cache[PATH_MAX + 32];	/* beside npu-bench */

struct gemm_run {
	void *a, *b, *c;
	unsigned n;
};

static int gemm_point_ok(const long *v, void *user)
{
	unsigned n = user ? ((struct gemm_run *)user)->n : TUNE_N;

	/* without a device (--print-gemm-points), the default unit's limits */
	unsigned threads = prop.unit_threads ? prop.unit_threads : 16;
	unsigned long scratch = prop.unit_threads ? prop.unit_scratch_bytes : 65536;

	return gemm_shape_ok(n, n, n, v[0], v[1], v[2], v[3]) &&
	       gemm_threads(v[0], v[1]) <= threads &&
	       gemm_scratch_bytes(v[0], v[1], v[2], v[3], v[4] ? 2 : 4) <= scratch;
}

static npu_status_t gemm_point_launch(npu_function_t f, const long *v,
				      npu_stream_t st, void *user)
{
	struct gemm_run *r = user;
	void *args[] = { &r->a, &r->b, &r->c, &r->n, &r->n, &r->n };

	return npu_launch_kernel(f, npu_grid(r->n / v[1], r->n / v[0], 1),
				 npu_grid(gemm_threads(v[0], v[1]), 1, 1),
				 (unsigned)gemm_scratch_bytes(v[0], v[1], v[2], v[3],
							      v[4] ? 2 : 4),
				 st, args);
}

static void gemm_params(npu_tune_param *p, int bf16)
{
	p[0] = (npu_tune_param){ "TILE_M", 3, gv_m };
	p[1] = (npu_tune_param){ "TILE_N", 3, gv_n };
	p[2] = (npu_tune_param){ "TILE_K", 3, gv_k };
	p[3] = (npu_tune_param){ "DEPTH", 3, gv_depth };
	p[4] = (npu_tune_param){ "BF16", 1, bf16 ? gv_bf16 : gv_f32 };
}

/* npu-cc's -D options of every valid point, one line each. */
static void print_gemm_points(void)
{
	npu_tune_param p[5];

	for (int t = 0; t < 2; t++) {
		gemm_params(p, t);
		print_tune_points(p, 5, gemm_point_ok);
	}
}

/* A point is a corner of the space when every parameter with a choice
 * is at one end of its values. */
static int gemm_corner(const long *v, const npu_tune_param *p)
{
	for (unsigned k = 0; k < 4; k++)
		if (v[k] != p[k].values[0] && v[k] != p[k].values[p[k].nvalues - 1])
			return 0;
	return 1;
}

/* Point v's code object (npu-cc, cached), loaded into *m: its kernel. */
static int gemm_load(npu_module_t *m, const char *src, const long *v,
		     npu_function_t *f)
{
	char path[PATH_MAX + 64], cmd[PATH_MAX * 2 + 256];
	FILE *pp;

	snprintf(cmd, sizeof(cmd), "npu-cc --cache %s "
		 "-DTILE_M=%ld -DTILE_N=%ld -DTILE_K=%ld -DDEPTH=%ld -DBF16=%ld %s",
		 gemm_cache, v[0], v[1], v[2], v[3], v[4], src);
	pp = popen(cmd, "r");
	if (!pp || !fgets(path, sizeof(path), pp)) {
		if (pp)
			pclose(pp);
		fprintf(stderr, "npu-bench: %s failed\n", cmd);
		return -1;
	}
	pclose(pp);
	path[strcspn(path, "\n")] = 0;
	CK(npu_module_load(m, path));
	CK(npu_module_get_function(f, *m, "gemm_point"));
	return 0;
}

/* One launch of point v at n^3 with the profiler: its roofline profile. */
static int gemm_profiled(npu_module_t *m, const char *src, const long *v,
			 struct gemm_run *r, npu_kernel_roofline_profile *out,
			 double *host_s)
{
	npu_function_t f;
	size_t nr = 1;
	double t0;

	if (gemm_load(m, src, v, &f))
		return -1;
	CK(npu_device_synchronize());
	CK(npu_profiler_start());
	t0 = now_us();
	CK(gemm_point_launch(f, v, NULL, r));
	CK(npu_device_synchronize());
	*host_s = (now_us() - t0) / 1e6;
	CK(npu_profiler_stop());
	CK(npu_profile_get_roofline(out, &nr));
	return nr == 1 ? 0 : -1;
}

/* The best tuned f32 point against the built-in GEMM (npu_launch of
 * NPU_K_GEMM_F32, code on the compute units: lib/kernels/builtins.c) at
 * CMP_N^3, PEAK_N unless that is past the built-in's limits
 * (lib/kernels/builtins.h): device times by events on one stream, the two
 * alternating, and both C compared. The built-in and gemmTensor.c both
 * start each element of C at +0 and add the products in k order, one
 * fused multiply-add each (TMMA f32); the built-in then takes
 * 1 * acc + 0 * C, exact, so the two must agree bit for bit. */
#if PEAK_N * PEAK_N <= NPU_BI_GEMM_MAX_ELEMS && \
	PEAK_N * PEAK_N * PEAK_N <= NPU_BI_GEMM_MAX_MACS
#define CMP_N		PEAK_N
#else
#define CMP_N		TUNE_N
#endif
#define CMP_TRIALS	3
#define BI_GEMM_COLS	64	/* columns of C per block of the built-in's
				   code: its grid (lib/npu_builtin_code.c) */

static int gemm_vs_builtin(const char *src, const long *v, void *a, void *b,
			   void *c)
{
	const size_t n = CMP_N, e = n * n;
	struct gemm_run r = { a, b, NULL, CMP_N };
	uint64_t ga[9] = { npu_arg_ptr(a), npu_arg_ptr(b), npu_arg_ptr(c), n, n,
			   n, 0, npu_arg_f32(1.0f), npu_arg_f32(0.0f) };
	double tuned[CMP_TRIALS], bi[CMP_TRIALS], worst = 0;
	float *ha, *hb, *hc, *hbi;
	size_t i, differ = 0, first = 0;
	int bad = 0;
	npu_function_t f;
	npu_module_t m;
	char what[256];

	ha = malloc(e * 4);
	hb = malloc(e * 4);
	hc = malloc(e * 4);
	hbi = malloc(e * 4);
	if (!ha || !hb || !hc || !hbi) {
		fprintf(stderr, "npu-bench: out of memory\n");
		return -1;
	}
	for (i = 0; i < e; i++) {	/* inexact sums: rounding to compare */
		ha[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
		hb[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
	}
	CK(npu_malloc(&r.c, e * 4));
	CK(npu_memcpy(a, ha, e * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	CK(npu_memcpy(b, hb, e * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	CK(npu_memset(c, 0, e * 4));
	CK(npu_memset(r.c, 0, e * 4));
	CK(npu_device_synchronize());
	if (gemm_load(&m, src, v, &f))
		return -1;
	for (int t = 0; t < CMP_TRIALS; t++) {
		for (int k = 0; k < 2; k++) {
			int user = (k + t) % 2 == 0;
			float ms = -1;

			CK(npu_event_record(e_s[0], s[0]));
			if (user)
				CK(gemm_point_launch(f, v, s[0], &r));
			else
				CK(npu_launch(NPU_K_GEMM_F32,
					      npu_grid((n + BI_GEMM_COLS - 1) /
						       BI_GEMM_COLS,
						       (n + NPU_TILE_DIM - 1) /
						       NPU_TILE_DIM, 1),
					      ga, 9, s[0], NPU_LAUNCH_ASYNC));
			CK(npu_event_record(e_e[0], s[0]));
			CK(npu_event_synchronize(e_e[0]));
			CK(npu_event_elapsed_time(&ms, e_s[0], e_e[0]));
			*(user ? &tuned[t] : &bi[t]) = ms;
		}
	}
	CK(npu_module_unload(m));
	CK(npu_memcpy(hc, r.c, e * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	CK(npu_memcpy(hbi, c, e * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	npu_free(r.c);
	for (i = 0; i < e; i++)
		if (memcmp(&hc[i], &hbi[i], 4)) {
			if (!differ++)
				first = i;
			if (fabs((double)hc[i] - hbi[i]) > worst)
				worst = fabs((double)hc[i] - hbi[i]);
		}
	if (differ) {
		snprintf(what, sizeof(what), "the tuned and built-in C differ in "
			 "%zu of %zu elements (first %zu,%zu: %.9g against %.9g; "
			 "largest difference %.3g): they should be bit-exact",
			 differ, e, first / n, first % n, hc[first], hbi[first],
			 worst);
		bad = 1;
	}
	for (i = 0; i < 8 && !bad; i++) {	/* and both right */
		size_t row = (i * 37) % n, col = (i * 91) % n, k;
		double ref = 0, mag = 0;

		for (k = 0; k < n; k++) {
			ref += (double)ha[row * n + k] * hb[k * n + col];
			mag += fabs((double)ha[row * n + k] * hb[k * n + col]);
		}
		if (fabs(ref - hc[row * n + col]) > n * 0x1p-23 * mag + 1e-6) {
			snprintf(what, sizeof(what), "both GEMMs wrong at %zu,%zu: "
				 "%.9g, host %.9g", row, col, hc[row * n + col], ref);
			bad = 1;
		}
	}
	free(ha);
	free(hb);
	free(hc);
	free(hbi);
	if (bad) {
		fprintf(stderr, "npu-bench: %s\n", what);
		emit_null("sgemm_tuned_vs_builtin", what);
		fails++;
		return 0;
	}
	snprintf(what, sizeof(what), "device time of the best tuned f32 GEMM "
		 "(%ldx%ldx%ld, depth %ld) / the built-in gemm_f32, %u^3, "
		 "timing=virtual, C bit-exact", v[0], v[1], v[2], v[3], CMP_N);
	emit_ratio("sgemm_tuned_vs_builtin", tuned, bi, CMP_TRIALS, what);
	emit("sgemm_tuned_ms", stats(tuned, CMP_TRIALS), "ms",
	     "device time of that tuned GEMM (events)");
	emit("sgemm_builtin_ms", stats(bi, CMP_TRIALS), "ms",
	     "device time of the built-in gemm_f32, same size (events)");
	return 0;
}

static int bench_tensor(void)
{
	static const char *const tname[2] = { "f32", "bf16" };
	char src[PATH_MAX + 32], key[64], note[320];
	struct gemm_run tune = { .n = TUNE_N }, peak = { .n = PEAK_N };
	npu_tune_param params[5];
	npu_tune_space_config c;
	npu_tune_space_result res[2];
	npu_kernel_roofline_profile rp;
	npu_module_t m;
	double host_s, t0;
	size_t big = (size_t)PEAK_N * PEAK_N * 4;

	if (!(prop.features & NPU_FEATURE_USER_KERNELS)) {
		emit_null("gemm_peak_fraction_f32", "the device runs no user kernels");
		return 0;
	}
	if (kernel_path(src, sizeof(src), "gemmTensor"))
		return -1;
	strcpy(src + strlen(src) - 4, ".c");		/* kernels/gemmTensor.c */
	snprintf(gemm_cache, sizeof(gemm_cache), "%.*s/tune-cache-gemm",
		 (int)(strlen(src) - strlen("/kernels/gemmTensor.c")), src);
	CK(npu_malloc(&peak.a, big));
	CK(npu_malloc(&peak.b, big));
	CK(npu_malloc(&peak.c, big));
	CK(npu_memset(peak.a, 0, big));
	CK(npu_memset(peak.b, 0, big));
	tune.a = peak.a;		/* the first TUNE_N^2 of each */
	tune.b = peak.b;
	tune.c = peak.c;
	for (int bf16 = 1; bf16 >= 0; bf16--) {
		const long *best;

		gemm_params(params, bf16);
		for (unsigned mode = 0; mode < 2; mode++) {
			memset(&c, 0, sizeof(c));
			c.source = src;
			c.kernel = "gemm_point";
			c.params = params;
			c.nparams = 5;
			c.valid = gemm_point_ok;
			c.launch = gemm_point_launch;
			c.user = &tune;
			c.strategy = NPU_TUNE_EXHAUSTIVE;
			c.batch = 2;
			c.runs = 1;
			c.mode = mode;
			c.seed = 3;
			c.cache_dir = gemm_cache;
			t0 = now_us();
			CK(npu_tune_space(&c, &res[mode], NULL));
			best = res[mode].best;
			printf("gemm %s %u^3 %s: best TILE_M %ld TILE_N %ld TILE_K %ld "
			       "DEPTH %ld, %.3f ms (%u of %u points, %.0f s)\n",
			       tname[bf16], TUNE_N, mode ? "under load" : "isolated",
			       best[0], best[1], best[2], best[3], res[mode].best_ms,
			       res[mode].evaluations, res[mode].points,
			       (now_us() - t0) / 1e6);
		}
		best = res[0].best;
		snprintf(key, sizeof(key), "gemm_tune_corner_%s", tname[bf16]);
		emit(key, stats((double[]){ gemm_corner(best, params) }, 1), "0/1",
		     "1 if the best point in isolation is a corner of the space "
		     "(every parameter at an end of its values)");
		snprintf(key, sizeof(key), "gemm_tune_loaded_differs_%s", tname[bf16]);
		emit(key, stats((double[]){ memcmp(res[0].best, res[1].best,
						   4 * sizeof(long)) != 0 }, 1),
		     "0/1", "1 if the best point under load differs from the best "
		     "in isolation");
		snprintf(note, sizeof(note), "%s: isolated %ldx%ldx%ld depth %ld "
			 "(%.3f ms), under load %ldx%ldx%ld depth %ld (%.3f ms), at "
			 "%u^3, every point (%u)", tname[bf16], res[0].best[0],
			 res[0].best[1], res[0].best[2], res[0].best[3],
			 res[0].best_ms, res[1].best[0], res[1].best[1],
			 res[1].best[2], res[1].best[3], res[1].best_ms, TUNE_N,
			 res[0].evaluations);
		snprintf(key, sizeof(key), "gemm_tune_best_%s", tname[bf16]);
		if (js)
			json_object_object_add(js_notes, key,
					       json_object_new_string(note));
		printf("%s\n", note);
		if (gemm_profiled(&m, src, res[0].best, &peak, &rp, &host_s))
			return -1;
		CK(npu_module_unload(m));
		snprintf(key, sizeof(key), "gemm_peak_fraction_%s", tname[bf16]);
		emit(key, stats(&rp.peak_fraction, 1), "x", "achieved / modelled "
		     "peak FLOP/s of the best point in isolation at 1024^3 "
		     "(the profiler's roofline, timing=virtual)");
		snprintf(key, sizeof(key), "gemm_1024_host_s_%s", tname[bf16]);
		emit(key, stats(&host_s, 1), "s", "host wall time of that 1024^3 "
		     "launch (x evaluations: what tuning at 1024^3 would cost)");
	}
	{	/* 512^3 f32 on the tensor engine: host wall time */
		long v[5] = { 128, 128, 16, 2, 0 };
		struct gemm_run r = { peak.a, peak.b, peak.c, 512 };

		if (gemm_profiled(&m, src, v, &r, &rp, &host_s))
			return -1;
		CK(npu_module_unload(m));
		emit("gemm_512_f32_host_s", stats(&host_s, 1), "s", "host wall "
		     "time of a 512^3 f32 GEMM on the tensor engine (128x128x16, "
		     "depth 2)");
	}
	/* res[0]: the f32 search in isolation (the loop's last) */
	if (gemm_vs_builtin(src, res[0].best, peak.a, peak.b, peak.c))
		return -1;
	npu_free(peak.a);
	npu_free(peak.b);
	npu_free(peak.c);
	return 0;
}

static int bench_gemm(void)
{
	uint64_t n = tiny ? 32 : 512;
	size_t e = n * n, i;
	double gf[MAX_TRIALS];
	int t, nt = tiny ? 1 : trials;
	float *ha, *hb, *hc, *da, *db, *dc;

	CK(npu_host_alloc((void **)&ha, e * 4, 0));
	CK(npu_host_alloc((void **)&hb, e * 4, 0));
	CK(npu_host_alloc((void **)&hc, e * 4, 0));
	CK(npu_malloc((void **)&da, e * 4));
	CK(npu_malloc((void **)&db, e * 4));
	CK(npu_malloc((void **)&dc, e * 4));
	for (i = 0; i < e; i++) {
		ha[i] = (float)((i * 7) % 13) / 13.0f;
		hb[i] = (float)((i * 5) % 11) / 11.0f;
	}
	CK(npu_memcpy(da, ha, e * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	CK(npu_memcpy(db, hb, e * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	for (t = 0; t < nt; t++) {
		uint64_t a[9] = { npu_arg_ptr(da), npu_arg_ptr(db), npu_arg_ptr(dc), n, n, n, 0,
				  npu_arg_f32(1.0f), npu_arg_f32(0.0f) };
		double ms;

		if (region_begin(1))
			return -1;
		CK(npu_launch(NPU_K_GEMM_F32, npu_grid(prop.compute_units, 1, 1), a, 9, s[0],
			      NPU_LAUNCH_ASYNC));
		if (region_end(1, &ms))
			return -1;
		gf[t] = ms > 0 ? 2.0 * n * n * n / (ms * 1e6) : 0;
	}
	CK(npu_memcpy(hc, dc, e * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	for (i = 0; i < 8; i++) {
		uint64_t r = (i * 37) % n, c = (i * 91) % n, k;
		double ref = 0;

		for (k = 0; k < n; k++)
			ref += (double)ha[r * n + k] * hb[k * n + c];
		if (fabs(ref - hc[r * n + c]) > 1e-3 * (1 + fabs(ref))) {
			fprintf(stderr, "npu-bench: gemm wrong at %llu,%llu: %g vs %g\n",
				(unsigned long long)r, (unsigned long long)c, hc[r * n + c], ref);
			fails++;
			return -1;
		}
	}
	{
		char what[96];

		snprintf(what, sizeof(what), "device GEMM f32 %llux%llux%llu, model off",
			 (unsigned long long)n, (unsigned long long)n, (unsigned long long)n);
		emit("gemm_gflops", stats(gf, nt), "GF/s", what);
	}
	tap(1, "GEMM %llu^3 throughput (result checked)", (unsigned long long)n);
	npu_host_free(ha);
	npu_host_free(hb);
	npu_host_free(hc);
	npu_free(da);
	npu_free(db);
	npu_free(dc);
	return 0;
}

/* ------------------------------------------------------------------------
 */
static void usage(FILE *f)
{
	fprintf(f, "usage: npu-bench [OPTION]...\n"
		"Measure every libnpu path next to its floor (Documentation/bench.rst).\n\n"
		"  -t, --tiny               every path once with tiny sizes; print TAP\n"
		"      --tensor             the device runs with timing=virtual: the tensor\n"
		"                           engine's GEMM, tuned (Documentation/bench.rst)\n"
		"      --print-gemm-points  npu-cc -D options of --tensor's tuning points\n"
		"  -m, --model-off          the device runs with timing=off: copy and GEMM\n"
		"  -n, --trials N           trials per figure, 1..%d (default 7)\n"
		"  -j, --json FILE          write the figures as JSON to FILE\n"
		"  -c, --overlap-csv FILE   write each overlap trial to FILE\n"
		"  -T, --trace FILE         trace one serial and one pipelined overlap\n"
		"                           run to FILE (Chrome trace JSON)\n"
		"  -s, --skip-floor         leave out the uAPI floor of a graph launch\n"
		"  -o, --only LIST          run only these sections (comma-separated, not\n"
		"                           with --tiny): calls, chains, user_queues,\n"
		"                           submit_floor, overlap, concurrency, bandwidth,\n"
		"                           curve_threads, curve_submit, curve_graphs,\n"
		"                           user_kernels\n"
		"  -v, --verbose            print more detail\n"
		"  -h, --help               print this help and exit\n", MAX_TRIALS);
}

/* Returns -1 to go on, else main's exit status (0 for --help, 2 for a
 * bad option). */
static int parse_options(int argc, char **argv, const char **json, const char **csv)
{
	static const struct option longopts[] = {
		{ "tiny", no_argument, NULL, 't' },
		{ "model-off", no_argument, NULL, 'm' },
		{ "tensor", no_argument, NULL, 'G' },
		{ "print-gemm-points", no_argument, NULL, 'P' },
		{ "trials", required_argument, NULL, 'n' },
		{ "json", required_argument, NULL, 'j' },
		{ "overlap-csv", required_argument, NULL, 'c' },
		{ "trace", required_argument, NULL, 'T' },
		{ "skip-floor", no_argument, NULL, 's' },
		{ "only", required_argument, NULL, 'o' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char *end;
	long v;
	int c;

	while ((c = getopt_long(argc, argv, "tmn:j:c:T:o:svh", longopts, NULL)) != -1) {
		switch (c) {
		case 't': tiny = 1; break;
		case 'm': model_off = 1; break;
		case 'G': tensor = 1; break;
		case 'P': print_gemm_points(); return 0;
		case 's': skip_floor = 1; break;
		case 'o': only = optarg; break;
		case 'v': verbose = 1; break;
		case 'j': *json = optarg; break;
		case 'c': *csv = optarg; break;
		case 'T': trace_path = optarg; break;
		case 'n':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 1 || v > MAX_TRIALS) {
				fprintf(stderr, "npu-bench: --trials: '%s' is not a number "
					"in 1..%d\n", optarg, MAX_TRIALS);
				return 2;
			}
			trials = (int)v;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:	/* getopt has said what was wrong */
			fprintf(stderr, "Try 'npu-bench --help' for more information.\n");
			return 2;
		}
	}
	if (only && tiny) {
		fprintf(stderr, "npu-bench: --only and --tiny do not go together\n");
		return 2;
	}
	if (optind < argc) {
		fprintf(stderr, "npu-bench: unexpected argument '%s'\n"
			"Try 'npu-bench --help' for more information.\n", argv[optind]);
		return 2;
	}
	return -1;
}

int main(int argc, char **argv)
{
	const char *json = NULL, *csv = NULL;
	struct drm_syncobj_create sc;
	int i;

	i = parse_options(argc, argv, &json, &csv);
	if (i >= 0)
		return i;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (tiny) {	/* every path once, whatever the device's timing model */
		ksft_print_header();
		ksft_set_plan(16);
	}
	if (npu_device_get_properties(&prop, 0) != NPU_SUCCESS) {
		fprintf(stderr, "npu-bench: no device: %s\n", npu_last_error_message());
		if (tiny)
			for (i = 0; i < 13; i++)
				tap(0, "no npu device");
		return 1;
	}
	fd = open(prop.node, O_RDWR | O_CLOEXEC);
	memset(&sc, 0, sizeof(sc));
	sc.flags = DRM_SYNCOBJ_CREATE_SIGNALED;
	if (fd < 0 || ioctl(fd, DRM_IOCTL_SYNCOBJ_CREATE, &sc)) {
		fprintf(stderr, "npu-bench: %s: %s\n", prop.node, strerror(errno));
		return 1;
	}
	signalled_syncobj = sc.handle;
	if (json) {
		struct json_object *d = json_object_new_object();

		js = json_object_new_object();
		js_notes = json_object_new_object();
		json_object_object_add(js, "mode", json_object_new_string(tensor ?
						"tensor" : model_off ? "model_off" : "model_on"));
		json_object_object_add(d, "compute_rings", json_object_new_int64(prop.compute_rings));
		json_object_object_add(d, "copy_rings", json_object_new_int64(prop.copy_rings));
		json_object_object_add(d, "compute_units", json_object_new_int64(prop.compute_units));
		json_object_object_add(d, "link_bw_mbps", json_object_new_int64(prop.link_bw_mbps));
		json_object_object_add(d, "mem_bw_mbps", json_object_new_int64(prop.mem_bw_mbps));
		json_object_object_add(d, "cu_mops", json_object_new_int64(prop.cu_mops));
		json_object_object_add(d, "launch_ns", json_object_new_int64(prop.launch_ns));
		json_object_object_add(d, "copy_ns", json_object_new_int64(prop.copy_ns));
		json_object_object_add(d, "timing_model", json_object_new_boolean(
					       !!(prop.features & NPU_FEATURE_TIMING_MODEL)));
		json_object_object_add(js, "device", d);
	}
	if (csv && !tiny) {
		overlap_csv = fopen(csv, "w");
		if (overlap_csv)
			fprintf(overlap_csv, "trial,serial_ms,copies_alone_ms,kernels_alone_ms,"
				"pipelined_ms\n");
	}
	if (!tiny && model_off != !(prop.features & NPU_FEATURE_TIMING_MODEL))
		fprintf(stderr, "npu-bench: warning: the device's timing model is %s\n",
			prop.features & NPU_FEATURE_TIMING_MODEL ? "on" : "off");
	for (i = 0; i < MAX_S; i++) {
		if (npu_stream_create(&s[i], NPU_STREAM_NON_BLOCKING |
				      NPU_STREAM_KERNEL_QUEUE, 0) != NPU_SUCCESS ||
		    npu_event_create(&e_s[i], NPU_EVENT_DEFAULT) != NPU_SUCCESS ||
		    npu_event_create(&e_e[i], NPU_EVENT_DEFAULT) != NPU_SUCCESS) {
			fprintf(stderr, "npu-bench: stream setup: %s\n", npu_last_error_message());
			return 1;
		}
	}
	if (!tiny)
		printf("%-28s %12s %12s %12s %-6s %s\n", "key", "median", "min", "max", "unit",
		       "what");
	if (tensor) {
		if (bench_tensor())
			fails++;
	} else if (!model_off || tiny) {
		if (want("calls") && bench_calls())
			tap(0, "launch, round trip, events, stream wait");
		if (want("chains") && bench_chains())
			tap(0, "stream chains of empty kernels");
		if (want("user_queues") && bench_user_queues())
			tap(0, "user queues: calls and chains");
		if (skip_floor && tiny)
			ksft_test_result_skip("uAPI floor of a graph launch: --skip-floor\n");
		else if (!skip_floor && want("submit_floor") && bench_submit_floor())
			tap(0, "uAPI floor of a graph launch");
		if (want("overlap") && bench_overlap())
			tap(0, "simpleStreams overlap run");
		if (want("concurrency") && bench_concurrency())
			tap(0, "concurrency of timed kernels");
		if (want("bandwidth") && bench_bandwidth())
			tap(0, "copy bandwidth");
		if (want("curve_threads") && bench_curve_threads())
			tap(0, "curve: launches/s over host threads");
		if (skip_floor && tiny)
			ksft_test_result_skip("curve: jobs per SUBMIT: --skip-floor\n");
		else if (!skip_floor && want("curve_submit") && bench_curve_submit())
			tap(0, "curve: jobs per SUBMIT");
#ifdef HAVE_NPU_GRAPH
		if (want("curve_graphs") && bench_curve_graphs())
			tap(0, "curve: graph instantiate and launch");
#else
		tap(1, "curve: graphs skipped, no graph API");
#endif
		if (want("user_kernels") && bench_user_kernels())
			tap(0, "user kernels");
	}
	if ((model_off || tiny) && !tensor) {
		if (!tiny && bench_bandwidth())
			tap(0, "copy bandwidth");
		if (bench_gemm())
			tap(0, "GEMM throughput");
		if (bench_curve_copy())
			tap(0, "curve: copy bandwidth over sizes");
		if (npu_device_synchronize() != NPU_SUCCESS)
			fails++;
		tap(!fails, "no device errors");
	}
	if (js) {
		json_object_object_add(js, "notes", js_notes);
		if (json_object_to_file_ext(json, js, JSON_C_TO_STRING_PRETTY |
					    JSON_C_TO_STRING_NOSLASHESCAPE)) {
			fprintf(stderr, "npu-bench: %s: %s\n", json, json_util_get_last_err());
			fails++;
		}
		json_object_put(js);
	}
	if (overlap_csv)
		fclose(overlap_csv);
	return fails ? 1 : 0;
}
