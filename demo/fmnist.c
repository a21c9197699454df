// SPDX-License-Identifier: MIT
/*
 * fmnist-demo - train a 784-128-10 MLP on Fashion-MNIST on the npu and
 * classify the test set three ways (serial, pipelined over streams, graph).
 *
 *   fmnist-demo [--data DIR] [--out DIR] [--batch N] [--lr X] [--train N]
 *               [--test-batch N] [--ref-seconds S] [--quick]
 *
 * Everything the device computes uses its built-in kernels: GEMM (with the
 * transpose flags for the backward pass), bias add, ReLU and its gradient,
 * softmax cross-entropy and its gradient, column sums (bias gradients), saxpy
 * (the SGD update) and argmax (the prediction). Documentation/demo.rst
 * explains the program and its output line by line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <json-c/json.h>
#include "npu.h"

/* The graph and trace API of libnpu (issue 6) may be missing from the
 * header (HAVE_NPU_GRAPH / HAVE_NPU_TRACE come from demo/Makefile, which
 * greps lib/npu.h) or from the built libnpu.so (weak references, NULL when
 * absent): either way the demo says so and goes on. */
#ifdef HAVE_NPU_GRAPH
#pragma weak npu_stream_begin_capture
#pragma weak npu_stream_end_capture
#pragma weak npu_graph_instantiate
#pragma weak npu_graph_launch
#pragma weak npu_graph_exec_destroy
#pragma weak npu_graph_destroy
#pragma weak npu_graph_get_stats
#endif
#ifdef HAVE_NPU_TRACE
#pragma weak npu_profiler_start
#pragma weak npu_profiler_stop
#pragma weak npu_trace_write_json
#pragma weak npu_profile_report
#endif

#define IN	784
#define HID	128
#define OUT	10
#define MAX_STREAMS 8

/* ------------------------------------------------------------------------
 * Helpers
 */
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "fmnist-demo: ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* A failed call ends the program, except while the graph way is being
 * captured (soft_mode): then the first failure is kept and the graph way
 * reports it instead. */
static int soft_mode;
static npu_status_t soft_err;
static char soft_msg[256];

static void ck_fail(const char *call, int line, npu_status_t st)
{
	if (soft_mode) {
		if (soft_err == NPU_SUCCESS) {
			soft_err = st;
			snprintf(soft_msg, sizeof(soft_msg), "failed: %s: %s (%s)", call,
				 npu_status_name(st), npu_last_error_message());
		}
		return;
	}
	die("%s:%d: %s: %s (%s)", __FILE__, line, call, npu_status_name(st),
	    npu_last_error_message());
}

#define CK(call) do { \
	npu_status_t st_ = (call); \
	if (st_ != NPU_SUCCESS) \
		ck_fail(#call, __LINE__, st_); \
} while (0)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

/* ------------------------------------------------------------------------
 * IDX files (gzip'd), as shipped by Debian's dataset-fashion-mnist
 */
static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint8_t *load_idx(const char *dir, const char *name, uint32_t want_magic,
			 uint32_t *count, uint32_t item_bytes)
{
	char path[1024];
	uint8_t hdr[16];
	unsigned hdr_len = want_magic == 0x803 ? 16 : 8;
	gzFile gz;
	uint8_t *data;
	size_t bytes;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	gz = gzopen(path, "rb");
	if (!gz)
		die("cannot open %s: %s", path, strerror(errno));
	if (gzread(gz, hdr, hdr_len) != (int)hdr_len || be32(hdr) != want_magic)
		die("%s: not an IDX file of the expected kind", path);
	*count = be32(hdr + 4);
	if (want_magic == 0x803 && (be32(hdr + 8) * be32(hdr + 12) != item_bytes))
		die("%s: images are not 28x28", path);
	bytes = (size_t)*count * item_bytes;
	data = xmalloc(bytes);
	if (gzread(gz, data, (unsigned)bytes) != (int)bytes)
		die("%s: short file", path);
	gzclose(gz);
	return data;
}

static const char *find_data(const char *opt)
{
	static const char *const dirs[] = { "/npu/bin/fmnist", "/npu/bin",
		"/usr/share/datasets/fashion-mnist" };
	char path[1024];
	size_t i;

	if (opt)
		return opt;
	if (getenv("NPU_FMNIST_DIR"))
		return getenv("NPU_FMNIST_DIR");
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/t10k-labels-idx1-ubyte.gz", dirs[i]);
		if (!access(path, R_OK))
			return dirs[i];
	}
	die("Fashion-MNIST not found (install dataset-fashion-mnist or use --data DIR)");
	return NULL;
}

/* ------------------------------------------------------------------------
 * Device counters (the demo is the only user of the device while it runs):
 * the rings run kernel-queue streams and graph launches, the user-queue
 * engines the streams on user queues, libnpu's default.
 */
struct counters {
	npu_device_counters d;
	int ok;
};

static void counters_read(struct counters *c)
{
	memset(c, 0, sizeof(*c));
	c->ok = npu_device_get_counters(&c->d) == NPU_SUCCESS;
}

/* Engine i of a counter read: its rings first, then its user-queue engines. */
static uint32_t n_engines(const struct counters *c)
{
	return c->d.compute_rings + c->d.copy_rings + c->d.uq_compute_engines +
	       c->d.uq_copy_engines;
}

static const npu_ring_counters *engine(const struct counters *c, uint32_t i, bool *compute,
				       char *name, size_t n)
{
	uint32_t nr = c->d.compute_rings + c->d.copy_rings;

	if (i < nr) {
		*compute = i < c->d.compute_rings;
		snprintf(name, n, "%s%u", *compute ? "compute" : "copy",
			 *compute ? i : i - c->d.compute_rings);
		return &c->d.ring[i];
	}
	i -= nr;
	*compute = i < c->d.uq_compute_engines;
	snprintf(name, n, "uq-%s%u", *compute ? "compute" : "copy",
		 *compute ? i : i - c->d.uq_compute_engines);
	return &c->d.uq_engine[i];
}

/* ------------------------------------------------------------------------
 * The model and the device state
 */
static npu_device_prop prop;
static npu_dim3 grid;		/* one block per compute unit */

struct params {			/* device pointers */
	float *w1, *b1, *w2, *b2;
};

static void launch(npu_kernel_t k, npu_stream_t s, unsigned n, ...)
{
	uint64_t a[NPU_MAX_KERNEL_ARGS];
	va_list ap;
	unsigned i;

	va_start(ap, n);
	for (i = 0; i < n; i++)
		a[i] = va_arg(ap, uint64_t);
	va_end(ap);
	CK(npu_launch(k, grid, a, n, s, NPU_LAUNCH_ASYNC));
}

#define P(x) npu_arg_ptr(x)
#define U(x) npu_arg_u64(x)
#define F(x) npu_arg_f32(x)

static void gemm(npu_stream_t s, const float *a, const float *b, float *c, uint64_t m,
		 uint64_t n, uint64_t k, unsigned flags, float alpha, float beta)
{
	launch(NPU_K_GEMM_F32, s, 9, P(a), P(b), P(c), U(m), U(n), U(k), U(flags),
	       F(alpha), F(beta));
}

/* Forward pass of rows images at x (device) to predictions at pred (u32).
 * h and z are scratch (rows x HID, rows x OUT). */
static void forward(npu_stream_t s, const struct params *p, const float *x, float *h,
		    float *z, uint32_t *pred, uint64_t rows)
{
	gemm(s, x, p->w1, h, rows, HID, IN, 0, 1.0f, 0.0f);
	launch(NPU_K_BIAS_ADD_F32, s, 4, P(h), P(p->b1), U(rows), U(HID));
	launch(NPU_K_RELU_F32, s, 3, P(h), P(h), U(rows * HID));
	gemm(s, h, p->w2, z, rows, OUT, HID, 0, 1.0f, 0.0f);
	launch(NPU_K_BIAS_ADD_F32, s, 4, P(z), P(p->b2), U(rows), U(OUT));
	launch(NPU_K_ARGMAX_F32, s, 4, P(z), P(pred), U(rows), U(OUT));
}

/* Deterministic pseudo-random numbers (xorshift64*). */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}
static float rnd_uniform(float a)
{
	return (float)((rnd() >> 11) * (1.0 / 9007199254740992.0) * 2 - 1) * a;
}

static void to_float(float *dst, const uint8_t *src, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		dst[i] = src[i] * (1.0f / 255.0f);
}

/* ------------------------------------------------------------------------
 * Trace of one run, from events: an event is recorded after every command,
 * so a command spans from its predecessor's completion in the same stream
 * to its own completion (device clock). Written as Chrome trace JSON.
 */
struct tr_cmd {
	int way, stream;
	const char *name;
	int copy;
	npu_event_t before, after;
	uint64_t bytes;
};

static struct tr_cmd *trc;
static size_t ntrc, trc_cap;
static int tracing;
static npu_event_t tr_last[MAX_STREAMS];
static int tr_way;

static npu_event_t tr_event(npu_stream_t s)
{
	npu_event_t e;

	CK(npu_event_create(&e, NPU_EVENT_DEFAULT));
	CK(npu_event_record(e, s));
	return e;
}

/* An event just before the next command of stream si: it completes when
 * everything the command waits for is done, i.e. when the command starts. */
static void tr_start(int si, npu_stream_t s)
{
	if (tracing)
		tr_last[si] = tr_event(s);
}

static void tr_mark(int si, npu_stream_t s, const char *name, int copy, uint64_t bytes)
{
	struct tr_cmd *c;

	if (!tracing)
		return;
	if (ntrc == trc_cap) {
		trc_cap = trc_cap ? trc_cap * 2 : 256;
		trc = realloc(trc, trc_cap * sizeof(*trc));
		if (!trc)
			die("out of memory");
	}
	c = &trc[ntrc++];
	c->way = tr_way;
	c->stream = si;
	c->name = name;
	c->copy = copy;
	c->bytes = bytes;
	c->before = tr_last[si];
	c->after = tr_event(s);
}

static const char *way_names[3] = { "serial (1 stream)", "pipelined", "graph" };

/* One trace event: {"ph": ph, "name": name, "pid": pid, "tid": tid}. */
static struct json_object *trace_event(struct json_object *evs, const char *ph,
				       const char *name, int pid, int tid)
{
	struct json_object *e = json_object_new_object();

	json_object_object_add(e, "ph", json_object_new_string(ph));
	json_object_object_add(e, "name", json_object_new_string(name));
	json_object_object_add(e, "pid", json_object_new_int(pid));
	json_object_object_add(e, "tid", json_object_new_int(tid));
	json_object_array_add(evs, e);
	return e;
}

/* A metadata event with one argument: a string or an integer. */
static void trace_meta(struct json_object *evs, const char *what, int pid, int tid,
		       const char *key, const char *str, int num)
{
	struct json_object *args = json_object_new_object();

	json_object_object_add(args, key, str ? json_object_new_string(str) :
			       json_object_new_int(num));
	json_object_object_add(trace_event(evs, "M", what, pid, tid), "args", args);
}

static int write_trace(const char *path)
{
	uint64_t t0[3] = { UINT64_MAX, UINT64_MAX, UINT64_MAX };
	double tick_us = 1e6 / (double)(prop.clock_hz ? prop.clock_hz : 1000000000ull);
	struct json_object *root = json_object_new_object(), *other = json_object_new_object();
	struct json_object *evs = json_object_new_array();
	char name[96];
	size_t i;
	int w, s, rc;

	for (i = 0; i < ntrc; i++) {
		uint64_t a;

		if (npu_event_timestamp(trc[i].before, &a) == NPU_SUCCESS && a < t0[trc[i].way])
			t0[trc[i].way] = a;
	}
	json_object_object_add(root, "displayTimeUnit", json_object_new_string("ns"));
	json_object_object_add(other, "source",
			       json_object_new_string("fmnist-demo (event timestamps)"));
	json_object_object_add(root, "otherData", other);
	for (w = 0; w < 2; w++) {
		static const char *const lane[3] = { "compute stream", "copy-in stream",
						     "copy-out stream" };
		const char *way = w ? "pipelined" : "serial";
		int ns = w == 0 ? 1 : 3;

		trace_meta(evs, "process_name", w, 0, "name", way_names[w], 0);
		for (s = 0; s < ns; s++) {
			snprintf(name, sizeof(name), "%s: %s", way, w ? lane[s] : "one stream");
			trace_meta(evs, "thread_name", w, s, "name", name, 0);
			trace_meta(evs, "thread_sort_index", w, s, "sort_index", NULL,
				   w * 100 + (s == 0 ? 1 : s == 1 ? 0 : 2));
		}
		snprintf(name, sizeof(name), "%s: all copies", way);
		trace_meta(evs, "thread_name", w, 90, "name", name, 0);
		trace_meta(evs, "thread_sort_index", w, 90, "sort_index", NULL, w * 100 + 50);
		snprintf(name, sizeof(name), "%s: all kernels", way);
		trace_meta(evs, "thread_name", w, 91, "name", name, 0);
		trace_meta(evs, "thread_sort_index", w, 91, "sort_index", NULL, w * 100 + 51);
	}
	for (i = 0; i < ntrc; i++) {
		uint64_t a, b;

		if (npu_event_timestamp(trc[i].before, &a) != NPU_SUCCESS ||
		    npu_event_timestamp(trc[i].after, &b) != NPU_SUCCESS)
			continue;
		for (s = 0; s < 2; s++) {
			struct json_object *e, *args = json_object_new_object();

			e = trace_event(evs, "X", trc[i].name, trc[i].way,
					s ? 90 + !trc[i].copy : trc[i].stream);
			json_object_object_add(e, "cat", json_object_new_string(trc[i].copy ?
									       "copy" : "kernel"));
			json_object_object_add(e, "ts", json_object_new_double(
						       (double)(a - t0[trc[i].way]) * tick_us));
			json_object_object_add(e, "dur", json_object_new_double(
						       b > a ? (double)(b - a) * tick_us : 0));
			json_object_object_add(args, "stream", json_object_new_int(trc[i].stream));
			json_object_object_add(args, "bytes",
					       json_object_new_uint64(trc[i].bytes));
			json_object_object_add(e, "args", args);
		}
	}
	json_object_object_add(root, "traceEvents", evs);
	rc = json_object_to_file_ext(path, root, JSON_C_TO_STRING_PLAIN |
				     JSON_C_TO_STRING_NOSLASHESCAPE);
	json_object_put(root);
	for (i = 0; i < ntrc; i++) {
		npu_event_destroy(trc[i].before);
		npu_event_destroy(trc[i].after);
	}
	ntrc = 0;
	return rc;
}

/* ------------------------------------------------------------------------
 * Inference ways
 */
#define NSLOT 3		/* buffer slots of the pipelined way */
struct infer {
	npu_stream_t s[3];	/* compute, copy in, copy out */
	float *dx[NSLOT], *dh[NSLOT], *dz[NSLOT];
	uint32_t *dp[NSLOT];
};

struct way_result {
	double device_ms, wall_ms;
	struct counters c0, c1;
	int ran;
	const char *skip;
};

/* Classify ntest images (pinned hx, f32) into pinned hpred, batch rows at a
 * time: copy in, forward, copy out. */
#define DO_COPIES 1
#define DO_KERNELS 2
#define DO_GRAPH 4	/* capture the pipelined way once, launch it as a graph */

static char graph_msg[256] = "skipped: libnpu has no graph API yet";

#define GK(call) do { \
	npu_status_t st_ = (call); \
	if (st_ != NPU_SUCCESS || soft_err != NPU_SUCCESS) { \
		if (soft_err != NPU_SUCCESS) \
			snprintf(graph_msg, sizeof(graph_msg), "%s", soft_msg); \
		else \
			snprintf(graph_msg, sizeof(graph_msg), "failed: %s: %s (%s)", #call, \
				 npu_status_name(st_), npu_last_error_message()); \
		goto graph_fail; \
	} \
} while (0)
static void classify_parts(struct infer *in, int pipelined, const struct params *p,
			   const float *hx, uint32_t *hpred, uint32_t ntest, uint32_t rows,
			   struct way_result *r, int what)
{
	/* serial: everything on s[0] with buffer slot 0. pipelined: compute on
	 * s[0], copies in on s[1], copies out on s[2]; NSLOT buffer slots;
	 * events carry the dependencies between the three streams. */
	npu_stream_t sk = in->s[0], si = pipelined ? in->s[1] : sk, so = pipelined ? in->s[2] : sk;
	int li = pipelined ? 1 : 0, lo = pipelined ? 2 : 0, nst = pipelined ? 3 : 1;
	npu_event_t start, end, ev_in[NSLOT], ev_comp[NSLOT], ev_out[NSLOT], join[3];
	uint32_t b, nb = (ntest + rows - 1) / rows;
	double w0;
	float ms;
	int i;
#ifdef HAVE_NPU_GRAPH
	npu_graph_t graph = NULL;
	npu_graph_exec_t gexec = NULL;
	int capturing = 0;
#endif

	CK(npu_event_create(&start, NPU_EVENT_DEFAULT));
	CK(npu_event_create(&end, NPU_EVENT_DEFAULT));
	for (i = 0; i < NSLOT; i++) {
		CK(npu_event_create(&ev_in[i], NPU_EVENT_DISABLE_TIMING));
		CK(npu_event_create(&ev_comp[i], NPU_EVENT_DISABLE_TIMING));
		CK(npu_event_create(&ev_out[i], NPU_EVENT_DISABLE_TIMING));
	}
	for (i = 0; i < 3; i++)
		CK(npu_event_create(&join[i], NPU_EVENT_DISABLE_TIMING));
	CK(npu_device_synchronize());
	counters_read(&r->c0);
	w0 = now_s();
#ifdef HAVE_NPU_GRAPH
	if (what & DO_GRAPH) {
		soft_mode = 1;
		soft_err = NPU_SUCCESS;
		GK(npu_stream_begin_capture(sk, NPU_STREAM_CAPTURE_MODE_GLOBAL));
		capturing = 1;
		GK(npu_event_record(join[0], sk));	/* fork */
		GK(npu_stream_wait_event(si, join[0], 0));
		GK(npu_stream_wait_event(so, join[0], 0));
	} else
#endif
	{
		CK(npu_event_record(start, sk));
		if (pipelined) {
			CK(npu_stream_wait_event(si, start, 0));
			CK(npu_stream_wait_event(so, start, 0));
		}
	}
	for (b = 0; b < nb; b++) {
		int j = pipelined ? (int)(b % NSLOT) : 0;
		uint32_t n = b + 1 < nb ? rows : ntest - b * rows;
		uint64_t off = (uint64_t)b * rows;
		float *dx = in->dx[j], *dh = in->dh[j], *dz = in->dz[j];
		uint32_t *dp = in->dp[j];

		if (what & DO_COPIES) {
			/* slot j's images are free once compute of batch b-NSLOT is done */
			if (pipelined)
				CK(npu_stream_wait_event(si, ev_comp[j], 0));
			tr_start(li, si);
			CK(npu_memcpy_async(dx, hx + off * IN, (size_t)n * IN * 4,
					    NPU_MEMCPY_HOST_TO_DEVICE, si));
			tr_mark(li, si, "H2D images", 1, (uint64_t)n * IN * 4);
			if (pipelined)
				CK(npu_event_record(ev_in[j], si));
		}
		if (what & DO_KERNELS) {
			if (pipelined) {
				CK(npu_stream_wait_event(sk, ev_in[j], 0));
				/* slot j's predictions are free once copied out */
				CK(npu_stream_wait_event(sk, ev_out[j], 0));
			}
			tr_start(0, sk);
			if (tracing) {	/* the kernels in three groups, for the picture */
				gemm(sk, dx, p->w1, dh, n, HID, IN, 0, 1.0f, 0.0f);
				tr_mark(0, sk, "gemm 784x128", 0, 0);
				tr_start(0, sk);
				launch(NPU_K_BIAS_ADD_F32, sk, 4, P(dh), P(p->b1), U(n), U(HID));
				launch(NPU_K_RELU_F32, sk, 3, P(dh), P(dh), U((uint64_t)n * HID));
				tr_mark(0, sk, "bias+relu", 0, 0);
				tr_start(0, sk);
				gemm(sk, dh, p->w2, dz, n, OUT, HID, 0, 1.0f, 0.0f);
				launch(NPU_K_BIAS_ADD_F32, sk, 4, P(dz), P(p->b2), U(n), U(OUT));
				launch(NPU_K_ARGMAX_F32, sk, 4, P(dz), P(dp), U(n), U(OUT));
				tr_mark(0, sk, "gemm 128x10+argmax", 0, 0);
			} else {
				forward(sk, p, dx, dh, dz, dp, n);
			}
			if (pipelined)
				CK(npu_event_record(ev_comp[j], sk));
		}
		if (what & DO_COPIES) {
			if (pipelined && (what & DO_KERNELS))
				CK(npu_stream_wait_event(so, ev_comp[j], 0));
			tr_start(lo, so);
			CK(npu_memcpy_async(hpred + off, dp, (size_t)n * 4,
					    NPU_MEMCPY_DEVICE_TO_HOST, so));
			tr_mark(lo, so, "D2H predictions", 1, (uint64_t)n * 4);
			if (pipelined)
				CK(npu_event_record(ev_out[j], so));
		}
	}
	for (i = 1; i < nst; i++) {
		CK(npu_event_record(join[i], in->s[i]));
		CK(npu_stream_wait_event(sk, join[i], 0));
	}
#ifdef HAVE_NPU_GRAPH
	if (what & DO_GRAPH) {
		npu_graph_stats g0, g1;

		GK(npu_stream_end_capture(sk, &graph));	/* GK: also a failure in the loop */
		capturing = 0;
		soft_mode = 0;
		GK(npu_graph_instantiate(&gexec, graph, 0));
		GK(npu_graph_launch(gexec, sk));		/* warm-up */
		GK(npu_stream_synchronize(sk));
		counters_read(&r->c0);
		memset(&g0, 0, sizeof(g0));
		memset(&g1, 0, sizeof(g1));
		GK(npu_graph_get_stats(&g0));
		w0 = now_s();
		GK(npu_event_record(start, sk));
		GK(npu_graph_launch(gexec, sk));
		GK(npu_graph_get_stats(&g1));
		snprintf(graph_msg, sizeof(graph_msg), "one launch = %llu submit ioctl(s), %llu jobs",
			 (unsigned long long)(g1.submit_ioctls - g0.submit_ioctls),
			 (unsigned long long)(g1.jobs - g0.jobs));
	}
#endif
	CK(npu_event_record(end, sk));
	CK(npu_event_synchronize(end));
	r->wall_ms = (now_s() - w0) * 1e3;
	counters_read(&r->c1);
	CK(npu_event_elapsed_time(&ms, start, end));
	r->device_ms = ms;
	r->ran = 1;
	npu_event_destroy(start);
	npu_event_destroy(end);
	for (i = 0; i < NSLOT; i++) {
		npu_event_destroy(ev_in[i]);
		npu_event_destroy(ev_comp[i]);
		npu_event_destroy(ev_out[i]);
	}
	for (i = 0; i < 3; i++)
		npu_event_destroy(join[i]);
#ifdef HAVE_NPU_GRAPH
	if (gexec)
		npu_graph_exec_destroy(gexec);
	if (graph)
		npu_graph_destroy(graph);
	return;
graph_fail:
	soft_mode = 0;
	soft_err = NPU_SUCCESS;
	if (capturing) {	/* end the capture, drop what it made */
		npu_graph_t g = NULL;

		npu_stream_end_capture(sk, &g);
		if (g)
			npu_graph_destroy(g);
	}
	if (gexec)
		npu_graph_exec_destroy(gexec);
	if (graph)
		npu_graph_destroy(graph);
	/* a failed launch leaves a sticky error: wait for the device and clear
	 * it, so that the other ways go on */
	npu_device_reset();
	r->ran = 0;
#endif
}

static void classify(struct infer *in, int pipelined, const struct params *p, const float *hx,
		     uint32_t *hpred, uint32_t ntest, uint32_t rows, struct way_result *r)
{
	classify_parts(in, pipelined, p, hx, hpred, ntest, rows, r, DO_COPIES | DO_KERNELS);
}

/* Busy ms of compute and copy engines (rings, user-queue engines) between
 * two counter reads. */
static void engine_busy(const struct way_result *r, double *compute_ms, double *copy_ms,
			double *max_ring_ms)
{
	uint32_t i;

	*compute_ms = *copy_ms = *max_ring_ms = 0;
	if (!r->c0.ok || !r->c1.ok)
		return;
	for (i = 0; i < n_engines(&r->c1); i++) {
		char name[32];
		bool compute;
		double ms = (engine(&r->c1, i, &compute, name, sizeof(name))->busy_ns -
			     engine(&r->c0, i, &compute, name, sizeof(name))->busy_ns) / 1e6;

		if (compute)
			*compute_ms += ms;
		else
			*copy_ms += ms;
		if (ms > *max_ring_ms)
			*max_ring_ms = ms;
	}
}

static void print_rings(const char *label, const struct way_result *r)
{
	uint32_t i;

	if (!r->c0.ok || !r->c1.ok || r->device_ms <= 0)
		return;
	printf("  engine utilization, %s:", label);
	for (i = 0; i < n_engines(&r->c1); i++) {
		char name[32];
		bool compute;
		double ms = (engine(&r->c1, i, &compute, name, sizeof(name))->busy_ns -
			     engine(&r->c0, i, &compute, name, sizeof(name))->busy_ns) / 1e6;

		if (ms > 0)
			printf(" %s %.0f%%", name, 100 * ms / r->device_ms);
	}
	printf("\n");
}

/* ------------------------------------------------------------------------
 * CPU reference of the same weights
 */
static uint32_t cpu_predict(const float *w1, const float *b1, const float *w2, const float *b2,
			    const float *x)
{
	float h[HID], z[OUT];
	uint32_t i, j, best = 0;

	for (j = 0; j < HID; j++)
		h[j] = b1[j];
	for (i = 0; i < IN; i++) {
		float xi = x[i];
		const float *w = w1 + (size_t)i * HID;

		if (xi == 0.0f)
			continue;
		for (j = 0; j < HID; j++)
			h[j] += xi * w[j];
	}
	for (j = 0; j < OUT; j++)
		z[j] = b2[j];
	for (i = 0; i < HID; i++) {
		float hi = h[i] > 0 ? h[i] : 0;

		for (j = 0; j < OUT; j++)
			z[j] += hi * w2[i * OUT + j];
	}
	for (j = 1; j < OUT; j++)
		if (z[j] > z[best])
			best = j;
	return best;
}

/* ------------------------------------------------------------------------
 */
struct options {
	const char *data, *out;
	uint32_t batch, test_batch, ntrain_max;
	double lr, ref_budget;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fmnist-demo [OPTION]...\n"
		"Train a 784-128-10 MLP on Fashion-MNIST on the npu and classify the\n"
		"test set serially, pipelined over streams and as a graph.\n\n"
		"  -d, --data DIR          the dataset's idx .gz files (default: search)\n"
		"  -o, --out DIR           where the traces go (default /out or .)\n"
		"  -b, --batch N           training batch, 1..4096 (50)\n"
		"  -r, --lr X              learning rate, > 0 (0.15)\n"
		"  -n, --train N           train on the first N images at most (60000)\n"
		"  -B, --test-batch N      images per inference batch, 1..5000 (500)\n"
		"  -s, --ref-seconds S     CPU time for the reference check, >= 0 (40)\n"
		"  -q, --quick             train on 6000 images (--train 6000)\n"
		"  -h, --help              print this help and exit\n");
}

/* A number in [lo, hi] or exit 2 with a message naming the option. */
static double number_arg(const char *opt, const char *v, double lo, double hi)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(v, &end);
	if (errno || end == v || *end || !(x >= lo && x <= hi)) {
		fprintf(stderr, "fmnist-demo: --%s: '%s' is not a number in %g..%g\n",
			opt, v, lo, hi);
		exit(2);
	}
	return x;
}

/* Fills o from argv; exits 0 after --help, 2 on a bad option. */
static void parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "data", required_argument, NULL, 'd' },
		{ "out", required_argument, NULL, 'o' },
		{ "batch", required_argument, NULL, 'b' },
		{ "lr", required_argument, NULL, 'r' },
		{ "train", required_argument, NULL, 'n' },
		{ "test-batch", required_argument, NULL, 'B' },
		{ "ref-seconds", required_argument, NULL, 's' },
		{ "quick", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "d:o:b:r:n:B:s:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': o->data = optarg; break;
		case 'o': o->out = optarg; break;
		case 'b': o->batch = (uint32_t)number_arg("batch", optarg, 1, 4096); break;
		case 'r': o->lr = number_arg("lr", optarg, 1e-9, 1e3); break;
		case 'n': o->ntrain_max = (uint32_t)number_arg("train", optarg, 1, 1e9); break;
		case 'B': o->test_batch = (uint32_t)number_arg("test-batch", optarg, 1, 5000); break;
		case 's': o->ref_budget = number_arg("ref-seconds", optarg, 0, 1e6); break;
		case 'q': o->ntrain_max = 6000; break;
		case 'h':
			usage(stdout);
			exit(0);
		default:	/* getopt has said what was wrong */
			fprintf(stderr, "Try 'fmnist-demo --help' for more information.\n");
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "fmnist-demo: unexpected argument '%s'\n"
			"Try 'fmnist-demo --help' for more information.\n", argv[optind]);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	const char *data_opt, *outdir;
	uint32_t batch, test_batch, ntrain_max;
	double lr, ref_budget;
	uint32_t ntrain, ntest, nlab, steps, n, i;
	uint8_t *trX, *trY, *teX, *teY;
	const char *dir;
	struct params p;
	float *hw[4], *dx[2], *dh, *dz, *dgz, *dgh, *dgw1, *dgw2, *dgb1, *dgb2, *dloss, *hloss;
	uint32_t *dy[2], *perm;
	float *slot_x[3];
	uint32_t *slot_y[3];
	npu_stream_t sc, sk;
	npu_event_t ev_copied[2], ev_done[2], ev_hfree[3], ev_t0, ev_t1;
	float train_ms;
	double w0, train_wall;
	struct infer inf;
	struct way_result res[3], traced, alone[2];
	float *hx;
	uint32_t *hpred[3];
	int ways, w, graph_ok = 0;
	char path[1024];

	struct options opt = { .batch = 50, .test_batch = 500, .ntrain_max = 60000,
			       .lr = 0.15, .ref_budget = 40 };

	parse_options(argc, argv, &opt);
	data_opt = opt.data;
	outdir = opt.out;
	batch = opt.batch;
	test_batch = opt.test_batch;
	ntrain_max = opt.ntrain_max;
	lr = opt.lr;
	ref_budget = opt.ref_budget;
	if (!outdir) {
		struct stat st;

		outdir = !stat("/out", &st) && S_ISDIR(st.st_mode) ? "/out" : ".";
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* ---- data */
	dir = find_data(data_opt);
	trX = load_idx(dir, "train-images-idx3-ubyte.gz", 0x803, &ntrain, IN);
	trY = load_idx(dir, "train-labels-idx1-ubyte.gz", 0x801, &nlab, 1);
	if (nlab != ntrain)
		die("training images and labels differ in count");
	teX = load_idx(dir, "t10k-images-idx3-ubyte.gz", 0x803, &ntest, IN);
	teY = load_idx(dir, "t10k-labels-idx1-ubyte.gz", 0x801, &nlab, 1);
	if (nlab != ntest)
		die("test images and labels differ in count");
	if (ntrain > ntrain_max)
		ntrain = ntrain_max;
	steps = ntrain / batch;
	printf("Fashion-MNIST from %s: %u training images (%u steps of %u), %u test images\n",
	       dir, ntrain, steps, batch, ntest);

	/* ---- device */
	CK(npu_device_get_properties(&prop, 0));
	CK(npu_device_set(0));
	grid = npu_grid(prop.compute_units ? prop.compute_units : 1, 1, 1);
	printf("device: %s (%s): %u compute rings, %u copy rings, %u compute units, "
	       "%llu MiB, timing model %s (host link %u MB/s, %u M ops/s per unit)\n",
	       prop.name, prop.node, prop.compute_rings, prop.copy_rings, prop.compute_units,
	       (unsigned long long)(prop.devmem_size >> 20),
	       prop.features & NPU_FEATURE_TIMING_MODEL ? "on" : "off", prop.link_bw_mbps,
	       prop.cu_mops);

	/* ---- parameters: Glorot-uniform weights, zero biases */
	{
		static const size_t cnt[4] = { IN * HID, HID, HID * OUT, OUT };
		float **dp[4] = { &p.w1, &p.b1, &p.w2, &p.b2 };
		float a1 = sqrtf(6.0f / (IN + HID)), a2 = sqrtf(6.0f / (HID + OUT));

		for (i = 0; i < 4; i++) {
			size_t j;

			hw[i] = xmalloc(cnt[i] * 4);
			for (j = 0; j < cnt[i]; j++)
				hw[i][j] = i == 0 ? rnd_uniform(a1) : i == 2 ? rnd_uniform(a2) : 0;
			CK(npu_malloc((void **)dp[i], cnt[i] * 4));
			CK(npu_memcpy(*dp[i], hw[i], cnt[i] * 4, NPU_MEMCPY_HOST_TO_DEVICE));
		}
	}

	/* ---- training buffers */
	for (i = 0; i < 2; i++) {
		CK(npu_malloc((void **)&dx[i], (size_t)batch * IN * 4));
		CK(npu_malloc((void **)&dy[i], (size_t)batch * 4));
		CK(npu_event_create(&ev_copied[i], NPU_EVENT_DISABLE_TIMING));
		CK(npu_event_create(&ev_done[i], NPU_EVENT_DISABLE_TIMING));
	}
	for (i = 0; i < 3; i++) {
		CK(npu_host_alloc((void **)&slot_x[i], (size_t)batch * IN * 4, 0));
		CK(npu_host_alloc((void **)&slot_y[i], (size_t)batch * 4, 0));
		CK(npu_event_create(&ev_hfree[i], NPU_EVENT_DISABLE_TIMING));
	}
	CK(npu_malloc((void **)&dh, (size_t)batch * HID * 4));
	CK(npu_malloc((void **)&dz, (size_t)batch * OUT * 4));
	CK(npu_malloc((void **)&dgz, (size_t)batch * OUT * 4));
	CK(npu_malloc((void **)&dgh, (size_t)batch * HID * 4));
	CK(npu_malloc((void **)&dgw1, (size_t)IN * HID * 4));
	CK(npu_malloc((void **)&dgw2, (size_t)HID * OUT * 4));
	CK(npu_malloc((void **)&dgb1, HID * 4));
	CK(npu_malloc((void **)&dgb2, OUT * 4));
	CK(npu_malloc((void **)&dloss, (size_t)(steps ? steps : 1) * 4));
	CK(npu_stream_create(&sc, NPU_STREAM_NON_BLOCKING, 0));
	CK(npu_stream_create(&sk, NPU_STREAM_NON_BLOCKING, 0));
	CK(npu_event_create(&ev_t0, NPU_EVENT_DEFAULT));
	CK(npu_event_create(&ev_t1, NPU_EVENT_DEFAULT));
	perm = xmalloc((size_t)ntrain * 4);
	for (i = 0; i < ntrain; i++)
		perm[i] = i;
	for (i = ntrain - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(rnd() % (i + 1)), t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}

	/* ---- one epoch of minibatch SGD; batch n+1 is copied in (stream sc)
	 * while step n computes (stream sk). */
	printf("\n== training: 784-128-10 MLP, one epoch of SGD, batch %u, learning rate %g\n",
	       batch, lr);
	w0 = now_s();
	CK(npu_event_record(ev_t0, sk));
	for (n = 0; n <= steps; n++) {
		/* stage batch n (for n < steps) while the device runs step n-1 */
		if (n < steps) {
			uint32_t hs = n % 3, ds = n % 2, k;

			CK(npu_event_synchronize(ev_hfree[hs]));
			for (k = 0; k < batch; k++) {
				uint32_t img = perm[(size_t)n * batch + k];

				to_float(slot_x[hs] + (size_t)k * IN, trX + (size_t)img * IN, IN);
				slot_y[hs][k] = trY[img];
			}
			CK(npu_stream_wait_event(sc, ev_done[ds], 0));
			CK(npu_memcpy_async(dx[ds], slot_x[hs], (size_t)batch * IN * 4,
					    NPU_MEMCPY_HOST_TO_DEVICE, sc));
			CK(npu_memcpy_async(dy[ds], slot_y[hs], (size_t)batch * 4,
					    NPU_MEMCPY_HOST_TO_DEVICE, sc));
			CK(npu_event_record(ev_copied[ds], sc));
			CK(npu_event_record(ev_hfree[hs], sc));
		}
		if (n == 0)
			continue;
		/* step n-1 on the compute stream */
		{
			uint32_t ds = (n - 1) % 2;
			float *x = dx[ds];

			CK(npu_stream_wait_event(sk, ev_copied[ds], 0));
			gemm(sk, x, p.w1, dh, batch, HID, IN, 0, 1.0f, 0.0f);
			launch(NPU_K_BIAS_ADD_F32, sk, 4, P(dh), P(p.b1), U(batch), U(HID));
			/* dgh holds relu(h) until dW2 is computed; dh keeps the
			 * pre-activation for the ReLU gradient */
			launch(NPU_K_RELU_F32, sk, 3, P(dh), P(dgh), U((uint64_t)batch * HID));
			gemm(sk, dgh, p.w2, dz, batch, OUT, HID, 0, 1.0f, 0.0f);
			launch(NPU_K_BIAS_ADD_F32, sk, 4, P(dz), P(p.b2), U(batch), U(OUT));
			launch(NPU_K_SOFTMAX_XENT_F32, sk, 6, P(dz), P(dy[ds]), P(dgz),
			       P(dloss + (n - 1)), U(batch), U(OUT));
			/* backward */
			gemm(sk, dgh, dgz, dgw2, HID, OUT, batch, NPU_GEMM_TRANSPOSE_A, 1.0f, 0.0f);
			launch(NPU_K_COL_SUM_F32, sk, 4, P(dgz), P(dgb2), U(batch), U(OUT));
			gemm(sk, dgz, p.w2, dgh, batch, HID, OUT, NPU_GEMM_TRANSPOSE_B, 1.0f, 0.0f);
			launch(NPU_K_RELU_GRAD_F32, sk, 4, P(dgh), P(dh), P(dgh), U((uint64_t)batch * HID));
			gemm(sk, x, dgh, dgw1, IN, HID, batch, NPU_GEMM_TRANSPOSE_A, 1.0f, 0.0f);
			launch(NPU_K_COL_SUM_F32, sk, 4, P(dgh), P(dgb1), U(batch), U(HID));
			CK(npu_event_record(ev_done[ds], sk));
			/* SGD update */
			launch(NPU_K_SAXPY_F32, sk, 4, P(dgw1), P(p.w1), U(IN * HID), F((float)-lr));
			launch(NPU_K_SAXPY_F32, sk, 4, P(dgb1), P(p.b1), U(HID), F((float)-lr));
			launch(NPU_K_SAXPY_F32, sk, 4, P(dgw2), P(p.w2), U(HID * OUT), F((float)-lr));
			launch(NPU_K_SAXPY_F32, sk, 4, P(dgb2), P(p.b2), U(OUT), F((float)-lr));
		}
	}
	CK(npu_event_record(ev_t1, sk));
	CK(npu_event_synchronize(ev_t1));
	train_wall = now_s() - w0;
	CK(npu_event_elapsed_time(&train_ms, ev_t0, ev_t1));
	hloss = xmalloc((size_t)(steps ? steps : 1) * 4);
	CK(npu_memcpy(hloss, dloss, (size_t)steps * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	{
		uint32_t chunk = steps / 6 ? steps / 6 : 1, s0;

		printf("mean cross-entropy loss by stretch of steps:");
		for (s0 = 0; s0 < steps; s0 += chunk) {
			double sum = 0;
			uint32_t e = s0 + chunk < steps ? s0 + chunk : steps, k;

			for (k = s0; k < e; k++)
				sum += hloss[k];
			printf("%s %u-%u: %.3f", s0 ? "," : "", s0, e - 1, sum / (e - s0));
		}
		printf("\n");
	}
	printf("trained %u images in %.1f ms of device time (%.0f images/s); %.1f s wall clock "
	       "in the emulated guest\n", steps * batch, train_ms,
	       train_ms > 0 ? steps * batch / (train_ms / 1e3) : 0.0, train_wall);

	/* ---- classification buffers */
	CK(npu_host_alloc((void **)&hx, (size_t)ntest * IN * 4, 0));
	to_float(hx, teX, (size_t)ntest * IN);
	for (w = 0; w < 3; w++) {
		CK(npu_host_alloc((void **)&hpred[w], (size_t)ntest * 4, 0));
		memset(hpred[w], 0xff, (size_t)ntest * 4);
	}
	memset(&inf, 0, sizeof(inf));
	for (i = 0; i < 3; i++)
		CK(npu_stream_create(&inf.s[i], NPU_STREAM_NON_BLOCKING, 0));
	for (i = 0; i < NSLOT; i++) {
		CK(npu_malloc((void **)&inf.dx[i], (size_t)test_batch * IN * 4));
		CK(npu_malloc((void **)&inf.dh[i], (size_t)test_batch * HID * 4));
		CK(npu_malloc((void **)&inf.dz[i], (size_t)test_batch * OUT * 4));
		CK(npu_malloc((void **)&inf.dp[i], (size_t)test_batch * 4));
	}

	printf("\n== classifying %u test images in batches of %u\n", ntest, test_batch);
	memset(res, 0, sizeof(res));
	/* warm-up (first-touch costs of the streams' queues and buffers) */
	classify(&inf, 1, &p, hx, hpred[1], test_batch * 4 < ntest ? test_batch * 4 : ntest,
		 test_batch, &res[1]);
	classify(&inf, 0, &p, hx, hpred[0], ntest, test_batch, &res[0]);
	classify(&inf, 1, &p, hx, hpred[1], ntest, test_batch, &res[1]);
	/* each engine class alone, with the same streams: the floor of any
	 * overlapping schedule is the slower of the two */
	classify_parts(&inf, 1, &p, hx, hpred[2], ntest, test_batch, &alone[0],
		       DO_COPIES);
	classify_parts(&inf, 1, &p, hx, hpred[2], ntest, test_batch, &alone[1],
		       DO_KERNELS);
#ifdef HAVE_NPU_GRAPH
	if (!npu_stream_begin_capture || !npu_stream_end_capture || !npu_graph_instantiate ||
	    !npu_graph_launch || !npu_graph_exec_destroy || !npu_graph_destroy ||
	    !npu_graph_get_stats) {
		snprintf(graph_msg, sizeof(graph_msg),
			 "skipped: the built libnpu.so lacks the graph functions of npu.h");
	} else {
		classify_parts(&inf, 1, &p, hx, hpred[2], ntest, test_batch, &res[2],
			       DO_COPIES | DO_KERNELS | DO_GRAPH);
		graph_ok = res[2].ran;
	}
#endif
	res[2].skip = graph_msg;
	ways = graph_ok ? 3 : 2;

	/* ---- checks */
	{
		uint32_t correct[3] = { 0, 0, 0 }, same = 0, refn = 0, refok = 0, stride = 1;
		double t_ref, rate, c_ms, k_ms, max_ring;
		double ideal_ms;
		const char *verdict;

		for (w = 0; w < ways; w++)
			for (i = 0; i < ntest; i++)
				correct[w] += hpred[w][i] == teY[i];
		for (i = 0; i < ntest; i++)
			same += hpred[0][i] == hpred[1][i] && (!graph_ok || hpred[0][i] == hpred[2][i]);

		/* CPU reference of the same weights (read back from the device) */
		CK(npu_memcpy(hw[0], p.w1, IN * HID * 4, NPU_MEMCPY_DEVICE_TO_HOST));
		CK(npu_memcpy(hw[1], p.b1, HID * 4, NPU_MEMCPY_DEVICE_TO_HOST));
		CK(npu_memcpy(hw[2], p.w2, HID * OUT * 4, NPU_MEMCPY_DEVICE_TO_HOST));
		CK(npu_memcpy(hw[3], p.b2, OUT * 4, NPU_MEMCPY_DEVICE_TO_HOST));
		t_ref = now_s();
		for (i = 0; i < 100 && i < ntest; i++, refn++)
			refok += cpu_predict(hw[0], hw[1], hw[2], hw[3], hx + (size_t)i * IN) ==
				 hpred[0][i];
		rate = refn / (now_s() - t_ref + 1e-9);
		if (rate * ref_budget < ntest)
			stride = (uint32_t)ceil(ntest / (rate * ref_budget));
		for (i = 100; i < ntest; i++) {
			if (stride > 1 && i % stride)
				continue;
			refn++;
			refok += cpu_predict(hw[0], hw[1], hw[2], hw[3], hx + (size_t)i * IN) ==
				 hpred[0][i];
		}
		t_ref = now_s() - t_ref;

		printf("\n%-22s %9s %12s %12s %11s %9s %9s\n", "way", "accuracy", "device_ms",
		       "images/s", "overlap_eff", "compute%", "copy%");
		/* ideal: the busier engine class when run alone (same streams) */
		ideal_ms = alone[0].device_ms > alone[1].device_ms ? alone[0].device_ms :
			   alone[1].device_ms;
		for (w = 0; w < 3; w++) {
			double cm, km, mr, ms = res[w].device_ms;

			if (!res[w].ran) {
				printf("%-22s %s\n", w == 1 ? "pipelined" : way_names[w], res[w].skip);
				continue;
			}
			engine_busy(&res[w], &cm, &km, &mr);
			{
				char label[40];

				if (w == 1)
					snprintf(label, sizeof(label), "pipelined (3 streams)");
				else
					snprintf(label, sizeof(label), "%s", way_names[w]);
				printf("%-22s %8.2f%% %12.2f %12.0f ", label, 100.0 * correct[w] / ntest,
				       ms, ms > 0 ? ntest / (ms / 1e3) : 0.0);
			}
			if (ideal_ms > 0 && ms > 0 && res[w].c0.ok && res[w].c1.ok)
				printf("%11.3f %8.1f%% %8.1f%%\n", ideal_ms / ms,
				       100 * cm / ms, 100 * km / ms);
			else if (ideal_ms > 0 && ms > 0)
				printf("%11.3f %9s %9s\n", ideal_ms / ms, "n/a", "n/a");
			else
				printf("%11s %9s %9s\n", "n/a", "n/a", "n/a");
		}
		for (w = 0; w < 3; w++)
			if (res[w].ran)
				print_rings(w == 1 ? "pipelined" : way_names[w], &res[w]);
		printf("(overlap_eff = time of the busier engine class run alone / measured time; "
		       "compute%%/copy%% = busy time summed over the compute/copy rings and user-queue engines / measured "
		       "time, from the device counters)\n");
		engine_busy(&res[0], &c_ms, &k_ms, &max_ring);
		if (res[0].c0.ok && res[0].c1.ok)
			printf("serial: kernels %.1f ms + copies %.1f ms of engine time (device counters)\n",
		       c_ms, k_ms);
		{
			double pred = res[0].device_ms / ideal_ms;
			double got = res[0].device_ms / res[1].device_ms;

			printf("pipelined streams, each engine class alone: copies %.1f ms, kernels "
			       "%.1f ms -> no schedule can beat %.1f ms: predicted speed-up over serial "
			       "%.2fx, measured %.2fx (%+.1f%%)\n", alone[0].device_ms,
			       alone[1].device_ms, ideal_ms, pred, got, 100 * (got - pred) / pred);
		}
		if (graph_ok)
			printf("graph way: the pipelined way captured once from its three streams; %s\n",
			       graph_msg);
		printf("predictions identical across the ways: %s (%u of %u)\n",
		       same == ntest ? "yes" : "NO", same, ntest);
		printf("CPU reference of the same weights: %u of %u images agree (%.2f%%)%s; "
		       "%.1f s\n", refok, refn, refn ? 100.0 * refok / refn : 0.0,
		       stride > 1 ? " [every k-th image: the guest CPU is emulated]" : "", t_ref);
		printf("wall clock per way (guest, emulated CPU):");
		for (w = 0; w < ways; w++)
			printf(" %s %.1f ms%s", w == 1 ? "pipelined" : way_names[w], res[w].wall_ms,
			       w + 1 < ways ? "," : "\n");
		verdict = same == ntest && refn && refok * 1000ull >= refn * 999ull &&
			  correct[0] * 10ull > ntest * 8ull ? "PASS" : "FAIL";

		/* ---- trace of a serial and a pipelined run, from events */
		tracing = 1;
		tr_way = 0;
		classify(&inf, 0, &p, hx, hpred[2], ntest, test_batch, &traced);
		tr_way = 1;
		classify(&inf, 1, &p, hx, hpred[2], ntest, test_batch, &traced);
		tracing = 0;
		snprintf(path, sizeof(path), "%s/fmnist-trace.json", outdir);
		if (write_trace(path))
			printf("could not write %s: %s\n", path, strerror(errno));
		else
			printf("trace (Chrome/Perfetto JSON) of a serial and a pipelined run: %s\n",
			       path);
		/* ---- libnpu's own command trace (ring and stream lanes) */
#ifdef HAVE_NPU_TRACE
		if (npu_profiler_start && npu_profiler_stop && npu_trace_write_json) {
			npu_status_t st = npu_profiler_start();

			if (st == NPU_SUCCESS) {
				classify(&inf, 0, &p, hx, hpred[2], ntest, test_batch, &traced);
				classify(&inf, 1, &p, hx, hpred[2], ntest, test_batch, &traced);
#ifdef HAVE_NPU_GRAPH
				if (graph_ok)
					classify_parts(&inf, 1, &p, hx, hpred[2], ntest, test_batch,
						       &traced, DO_COPIES | DO_KERNELS | DO_GRAPH);
#endif
				npu_profiler_stop();
				snprintf(path, sizeof(path), "%s/fmnist-libnpu-trace.json", outdir);
				st = npu_trace_write_json(path);
			}
			if (st == NPU_SUCCESS) {
				printf("libnpu trace (every command, ring and stream lanes) of %s run: %s\n",
				       graph_ok ? "a serial, a pipelined and a graph" :
				       "a serial and a pipelined", path);
				if (npu_profile_report)
					npu_profile_report(stdout);
			} else {
				printf("libnpu trace: failed: %s (%s)\n", npu_status_name(st),
				       npu_last_error_message());
			}
		} else {
			printf("libnpu trace: skipped: the built libnpu.so lacks the profiler "
			       "functions of npu.h\n");
		}
#else
		printf("libnpu trace: skipped: libnpu has no trace API yet\n");
#endif
		printf("result: %s (test accuracy %.2f%% > 80%%, ways identical, CPU agreement "
		       ">= 99.9%%)\n", verdict, 100.0 * correct[0] / ntest);
		return verdict[0] == 'P' ? 0 : 1;
	}
}
