/* SPDX-License-Identifier: MIT */
/*
 * lib_graph: graphs built explicitly and captured from streams. Results
 * are compared with a CPU reference of the same work; ordering is checked
 * through data and device timestamps (the profiler trace), never wall
 * time. The number of DRM_IOCTL_NPU_SUBMIT per launch, and of jobs in
 * them, is counted by wrapping ioctl() (this program's definition takes
 * precedence over libc's for libdrm) and through npu_graph_get_stats().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include "drm/npu_accel.h"

#include "tap.h"

static atomic_ulong n_submit, n_jobs;
static atomic_int fail_submits;		/* refuse the next n SUBMITs */

int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (req == DRM_IOCTL_NPU_SUBMIT && atomic_load(&fail_submits) > 0) {
		atomic_fetch_sub(&fail_submits, 1);
		errno = EINVAL;
		return -1;
	}
	if (req == DRM_IOCTL_NPU_SUBMIT) {
		atomic_fetch_add(&n_submit, 1);
		atomic_fetch_add(&n_jobs, ((struct drm_npu_submit *)arg)->job_count);
	}
	return (int)syscall(SYS_ioctl, fd, req, arg);
}

#define N 8192

static float *hx, *hy, *hout, ref[N];
static void *dx, *dy, *dz, *dw;
static npu_graph_node_t nn;

static npu_kernel_node_params kscale(void *x, void *y, float a, uint32_t blocks)
{
	npu_kernel_node_params p;

	memset(&p, 0, sizeof(p));
	p.kernel = NPU_K_SCALE_F32;
	p.grid = npu_grid(blocks, 1, 1);
	p.nargs = 4;
	p.args[0] = npu_arg_ptr(x);
	p.args[1] = npu_arg_ptr(y);
	p.args[2] = N;
	p.args[3] = npu_arg_f32(a);
	return p;
}

static npu_kernel_node_params kvadd(void *a, void *b, void *c)
{
	npu_kernel_node_params p;

	memset(&p, 0, sizeof(p));
	p.kernel = NPU_K_VADD_F32;
	p.grid = npu_grid(4, 1, 1);
	p.nargs = 4;
	p.args[0] = npu_arg_ptr(a);
	p.args[1] = npu_arg_ptr(b);
	p.args[2] = npu_arg_ptr(c);
	p.args[3] = N;
	return p;
}

static npu_kernel_node_params kspin(uint64_t ns)
{
	npu_kernel_node_params p;

	memset(&p, 0, sizeof(p));
	p.kernel = NPU_K_TEST_SPIN;
	p.grid = npu_grid(1, 1, 1);
	p.nargs = 1;
	p.args[0] = ns;
	return p;
}

static void init_inputs(void)
{
	int i;

	for (i = 0; i < N; i++) {
		hx[i] = (float)(i % 97) * 0.5f;
		hy[i] = (float)(i % 13) - 3.0f;
		hout[i] = -1;
	}
}

static int same(const float *a, const float *b)
{
	int i;

	for (i = 0; i < N; i++)
		if (!feq(a[i], b[i]))
			return 0;
	return 1;
}

/* Diamond across copy and compute rings:
 *   copy x in, copy y in -> (z = 2x) and (w = 3y) -> z = z + w -> copy z out
 * plus a memset of hout's device twin that precedes the last copy. */
static npu_graph_t diamond(void)
{
	npu_graph_t g;
	npu_graph_node_t cx, cy, s1, s2, add, ms, out;
	npu_kernel_node_params p;

	MUST(npu_graph_create(&g, 0));
	MUST(npu_graph_add_memcpy_node(&cx, g, NULL, 0, dx, hx, N * 4,
				       NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_graph_add_memcpy_node(&cy, g, NULL, 0, dy, hy, N * 4,
				       NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_graph_add_memset_node(&ms, g, NULL, 0, dz, 0, N * 4));
	p = kscale(dx, dz, 2.0f, 4);
	MUST(npu_graph_add_kernel_node(&s1, g, (npu_graph_node_t[]){ cx, ms }, 2, &p));
	p = kscale(dy, dw, 3.0f, 4);
	MUST(npu_graph_add_kernel_node(&s2, g, &cy, 1, &p));
	p = kvadd(dz, dw, dz);
	MUST(npu_graph_add_kernel_node(&add, g, (npu_graph_node_t[]){ s1, s2 }, 2, &p));
	MUST(npu_graph_add_memcpy_node(&out, g, &add, 1, hout, dz, N * 4,
				       NPU_MEMCPY_DEVICE_TO_HOST));
	nn = s1;
	return g;
}

/* A stream on kernel queues, for the tests that count the SUBMITs and
 * jobs of a launch: on a user-queue stream a graph of device nodes is
 * one INDIRECT on the stream's queue, no SUBMIT (lib_userq counts that) */
static npu_status_t job_stream(npu_stream_t *s, unsigned flags)
{
	return npu_stream_create(s, flags | NPU_STREAM_KERNEL_QUEUE, 0);
}

static void test_diamond(void)
{
	npu_graph_t g = diamond();
	npu_graph_exec_t x;
	npu_stream_t s;
	npu_graph_stats a, b;
	unsigned long before;
	size_t cnt = 0;
	int i;

	MUST(job_stream(&s, NPU_STREAM_NON_BLOCKING));
	MUST(npu_graph_get_nodes(g, NULL, &cnt));
	tap_ok(cnt == 7, "explicit graph has 7 nodes (%zu)", cnt);
	MUST(npu_graph_instantiate(&x, g, 0));
	init_inputs();
	for (i = 0; i < N; i++)
		ref[i] = 2.0f * hx[i] + 3.0f * hy[i];
	MUST(npu_device_synchronize());
	npu_graph_get_stats(&a);
	before = atomic_load(&n_submit);
	MUST(npu_graph_launch(x, s));
	tap_ok(atomic_load(&n_submit) - before == 1,
	       "one graph launch (7 nodes + join) is one DRM_IOCTL_NPU_SUBMIT (%lu)",
	       atomic_load(&n_submit) - before);
	MUST(npu_stream_synchronize(s));
	npu_graph_get_stats(&b);
	/* 7 nodes on 2 copy and 2 compute rings: no two are a chain on one
	 * ring, so 7 jobs; the only sink's job signals the stream (no join) */
	tap_ok(b.submit_ioctls - a.submit_ioctls == 1 && b.jobs - a.jobs == 7 &&
	       b.launches - a.launches == 1,
	       "npu_graph_get_stats: 1 launch, 1 ioctl, 7 jobs (%llu, %llu, %llu)",
	       (unsigned long long)(b.launches - a.launches),
	       (unsigned long long)(b.submit_ioctls - a.submit_ioctls),
	       (unsigned long long)(b.jobs - a.jobs));
	tap_ok(same(hout, ref), "diamond over copy and compute rings equals the CPU reference");

	/* the same work issued on streams gives the same result */
	{
		npu_stream_t s2;
		npu_event_t e;
		float *h2 = malloc(N * 4);
		uint64_t a1[4] = { npu_arg_ptr(dx), npu_arg_ptr(dz), N, npu_arg_f32(2.0f) };
		uint64_t a2[4] = { npu_arg_ptr(dy), npu_arg_ptr(dw), N, npu_arg_f32(3.0f) };
		uint64_t a3[4] = { npu_arg_ptr(dz), npu_arg_ptr(dw), npu_arg_ptr(dz), N };

		MUST(npu_stream_create(&s2, NPU_STREAM_NON_BLOCKING, 0));
		MUST(npu_event_create(&e, 0));
		MUST(npu_memcpy_async(dx, hx, N * 4, NPU_MEMCPY_HOST_TO_DEVICE, s));
		MUST(npu_memcpy_async(dy, hy, N * 4, NPU_MEMCPY_HOST_TO_DEVICE, s2));
		MUST(npu_memset_async(dz, 0, N * 4, s));
		MUST(npu_launch(NPU_K_SCALE_F32, npu_grid(4, 1, 1), a1, 4, s, 0));
		MUST(npu_launch(NPU_K_SCALE_F32, npu_grid(4, 1, 1), a2, 4, s2, 0));
		MUST(npu_event_record(e, s2));
		MUST(npu_stream_wait_event(s, e, 0));
		MUST(npu_launch(NPU_K_VADD_F32, npu_grid(4, 1, 1), a3, 4, s, 0));
		MUST(npu_memcpy_async(h2, dz, N * 4, NPU_MEMCPY_DEVICE_TO_HOST, s));
		MUST(npu_stream_synchronize(s));
		tap_ok(memcmp(h2, hout, N * 4) == 0,
		       "graph result is bit-identical to the same work on streams");
		npu_event_destroy(e);
		npu_stream_destroy(s2);
		free(h2);
	}

	/* update a kernel node of the instance: z = 5x instead of 2x */
	{
		npu_kernel_node_params p = kscale(dx, dz, 5.0f, 2);

		ST(npu_graph_exec_kernel_node_set_params(x, nn, &p), NPU_SUCCESS,
		   "npu_graph_exec_kernel_node_set_params");
		p.kernel = NPU_K_RELU_F32;
		p.nargs = 3;
		ST(npu_graph_exec_kernel_node_set_params(x, nn, &p), NPU_ERROR_INVALID_VALUE,
		   "changing the kernel of an instantiated node is refused");
		for (i = 0; i < N; i++)
			ref[i] = 5.0f * hx[i] + 3.0f * hy[i];
		before = atomic_load(&n_submit);
		MUST(npu_graph_launch(x, s));
		MUST(npu_stream_synchronize(s));
		tap_ok(same(hout, ref), "relaunch after the update uses the new arguments");
		tap_ok(atomic_load(&n_submit) - before == 1, "relaunch: one submit ioctl");
	}
	MUST(npu_graph_exec_destroy(x));
	MUST(npu_graph_destroy(g));
	MUST(npu_stream_destroy(s));
}

/* Fan-out / fan-in: memset, then 8 independent kernels (4 rings), then a
 * chain of vadds joins them; copy out. */
static void test_fan(void)
{
	npu_graph_t g;
	npu_graph_exec_t x;
	npu_graph_node_t src, k[8], j = NULL, out;
	npu_stream_t s;
	void *buf[8];
	unsigned long before, jobs0, nj;
	int i, e;

	MUST(job_stream(&s, 0));
	MUST(npu_graph_create(&g, 0));
	MUST(npu_graph_add_memcpy_node(&src, g, NULL, 0, dx, hx, N * 4,
				       NPU_MEMCPY_DEFAULT));
	for (i = 0; i < 8; i++) {
		npu_kernel_node_params p = kscale(dx, NULL, (float)(i + 1), 1);

		MUST(npu_malloc(&buf[i], N * 4));
		p.args[1] = npu_arg_ptr(buf[i]);
		MUST(npu_graph_add_kernel_node(&k[i], g, &src, 1, &p));
	}
	for (i = 1; i < 8; i++) {
		npu_kernel_node_params p = kvadd(buf[0], buf[i], buf[0]);
		npu_graph_node_t d[2] = { j ? j : k[0], k[i] };

		MUST(npu_graph_add_kernel_node(&j, g, d, 2, &p));
	}
	MUST(npu_graph_add_memcpy_node(&out, g, &j, 1, hout, buf[0], N * 4,
				       NPU_MEMCPY_DEFAULT));
	MUST(npu_graph_instantiate(&x, g, 0));
	init_inputs();
	for (i = 0; i < N; i++)
		ref[i] = 36.0f * hx[i];
	MUST(npu_device_synchronize());
	before = atomic_load(&n_submit);
	jobs0 = atomic_load(&n_jobs);
	MUST(npu_graph_launch(x, s));
	e = (int)(atomic_load(&n_submit) - before);
	nj = atomic_load(&n_jobs) - jobs0;
	MUST(npu_stream_synchronize(s));
	tap_ok(same(hout, ref), "fan-out 8 / fan-in 8 equals the CPU reference");
	tap_ok(e == 1, "fan-out/fan-in launch: %d submit ioctl(s)", e);
	/* the 8 branches run on 4 rings: at least the copy in, one job per
	 * ring of branches and the copy out */
	tap_ok(nj >= 6 && nj <= 18, "fan-out/fan-in launch is not merged into one job: %lu jobs",
	       nj);
	/* a legacy-stream launch waits for earlier blocking work and vice versa */
	init_inputs();
	for (i = 0; i < N; i++)
		hx[i] += 1.0f;
	for (i = 0; i < N; i++)
		ref[i] = 36.0f * hx[i];
	MUST(npu_graph_launch(x, NULL));
	MUST(npu_stream_synchronize(NULL));
	tap_ok(same(hout, ref), "launch on the legacy stream");
	MUST(npu_graph_exec_destroy(x));
	MUST(npu_graph_destroy(g));
	for (i = 0; i < 8; i++)
		npu_free(buf[i]);
	npu_stream_destroy(s);
}

/* One instance launched twice (also on two streams) is ordered: y = 2y
 * twice gives 4y, and the trace shows the second launch's spin starting
 * after the first one's ended. */
static void test_twice(void)
{
	npu_graph_t g;
	npu_graph_exec_t x;
	npu_graph_node_t a, b;
	npu_kernel_node_params p = kspin(20000000);
	npu_stream_t s1, s2;
	npu_trace_record r[16];
	size_t n = 16;
	int i, nspin = 0;
	uint64_t e0 = 0, s1t = 0;

	MUST(npu_stream_create(&s1, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&s2, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_graph_create(&g, 0));
	MUST(npu_graph_add_kernel_node(&a, g, NULL, 0, &p));
	p = kscale(dy, dy, 2.0f, 3);
	MUST(npu_graph_add_kernel_node(&b, g, &a, 1, &p));
	MUST(npu_graph_instantiate(&x, g, 0));
	init_inputs();
	MUST(npu_memcpy(dy, hy, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_device_synchronize());
	MUST(npu_profiler_start());
	MUST(npu_graph_launch(x, s1));
	MUST(npu_graph_launch(x, s2));
	MUST(npu_device_synchronize());
	MUST(npu_profiler_stop());
	MUST(npu_memcpy(hout, dy, N * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	for (i = 0; i < N; i++)
		ref[i] = 4.0f * hy[i];
	tap_ok(same(hout, ref), "two launches of one instance on two streams: 4y");
	MUST(npu_trace_get_records(r, &n));
	for (i = 0; i < (int)n; i++)
		if (r[i].kind == NPU_TRACE_KERNEL && r[i].kernel == NPU_K_TEST_SPIN) {
			if (nspin++ == 0)
				e0 = r[i].end;
			else
				s1t = r[i].start;
		}
	tap_ok(nspin == 2 && s1t >= e0,
	       "second launch starts after the first ended (device time, %d spins)", nspin);
	MUST(npu_graph_exec_destroy(x));
	MUST(npu_graph_destroy(g));
	npu_stream_destroy(s1);
	npu_stream_destroy(s2);
}

/* Host and event nodes */
static float *pin;
static atomic_int host_ran;

static void host_fn(void *u)
{
	int i;
	float *h = u;

	/* reads the result of the copy before it, writes the input of the
	 * copy after it */
	for (i = 0; i < N; i++)
		h[i] = hout[i] + 1.0f;
	atomic_fetch_add(&host_ran, 1);
}

static void test_host_event(void)
{
	npu_graph_t g;
	npu_graph_exec_t x;
	npu_graph_node_t c1, k1, c2, h, c3, k2, c4, er;
	npu_kernel_node_params p;
	npu_stream_t s;
	npu_event_t ev;
	int i;

	MUST(npu_host_alloc((void **)&pin, N * 4, 0));
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_event_create(&ev, 0));
	MUST(npu_graph_create(&g, 0));
	MUST(npu_graph_add_memcpy_node(&c1, g, NULL, 0, dx, hx, N * 4, NPU_MEMCPY_DEFAULT));
	p = kscale(dx, dz, 2.0f, 2);
	MUST(npu_graph_add_kernel_node(&k1, g, &c1, 1, &p));
	MUST(npu_graph_add_memcpy_node(&c2, g, &k1, 1, hout, dz, N * 4, NPU_MEMCPY_DEFAULT));
	MUST(npu_graph_add_host_node(&h, g, &c2, 1, host_fn, pin));
	MUST(npu_graph_add_memcpy_node(&c3, g, &h, 1, dw, pin, N * 4, NPU_MEMCPY_DEFAULT));
	p = kscale(dw, dw, 3.0f, 2);
	MUST(npu_graph_add_kernel_node(&k2, g, &c3, 1, &p));
	MUST(npu_graph_add_memcpy_node(&c4, g, &k2, 1, hout, dw, N * 4, NPU_MEMCPY_DEFAULT));
	MUST(npu_graph_add_event_record_node(&er, g, &c4, 1, ev));
	MUST(npu_graph_instantiate(&x, g, 0));
	init_inputs();
	for (i = 0; i < N; i++)
		ref[i] = 3.0f * (2.0f * hx[i] + 1.0f);
	MUST(npu_graph_launch(x, s));
	MUST(npu_event_synchronize(ev));
	tap_ok(same(hout, ref) && atomic_load(&host_ran) == 1,
	       "host node runs between its device predecessors and successors");
	ST(npu_stream_synchronize(s), NPU_SUCCESS, "stream after a graph with a host node");
	MUST(npu_graph_launch(x, s));
	MUST(npu_graph_launch(x, s));
	MUST(npu_stream_synchronize(s));
	tap_ok(same(hout, ref) && atomic_load(&host_ran) == 3, "relaunched twice: host node ran 3 times");
	{
		uint64_t t;

		ST(npu_event_timestamp(ev, &t), NPU_SUCCESS, "event record node has a device timestamp");
	}
	/* an event wait node: the graph waits for an event recorded on a stream */
	{
		npu_graph_t g2;
		npu_graph_exec_t x2;
		npu_graph_node_t w, k;
		npu_stream_t s2;
		npu_event_t e2;
		uint64_t sa[1] = { 30000000 };
		uint64_t fa[3] = { npu_arg_ptr(dw), N, npu_arg_f32(7.0f) };

		MUST(npu_stream_create(&s2, NPU_STREAM_NON_BLOCKING, 0));
		MUST(npu_event_create(&e2, 0));
		MUST(npu_graph_create(&g2, 0));
		MUST(npu_graph_add_event_wait_node(&w, g2, NULL, 0, e2));
		p = kscale(dw, dz, 1.0f, 1);
		MUST(npu_graph_add_kernel_node(&k, g2, &w, 1, &p));
		MUST(npu_graph_instantiate(&x2, g2, 0));
		/* s2: spin, then fill w = 7, record e2; the graph copies w -> z */
		MUST(npu_launch(NPU_K_TEST_SPIN, npu_grid(1, 1, 1), sa, 1, s2, 0));
		MUST(npu_launch(NPU_K_FILL_F32, npu_grid(1, 1, 1), fa, 3, s2, 0));
		MUST(npu_event_record(e2, s2));
		MUST(npu_graph_launch(x2, s));
		MUST(npu_memcpy_async(hout, dz, N * 4, NPU_MEMCPY_DEVICE_TO_HOST, s));
		MUST(npu_stream_synchronize(s));
		tap_ok(hout[0] == 7.0f && hout[N - 1] == 7.0f,
		       "event wait node waits for the stream's record");
		npu_graph_exec_destroy(x2);
		npu_graph_destroy(g2);
		npu_event_destroy(e2);
		npu_stream_destroy(s2);
	}
	MUST(npu_graph_exec_destroy(x));
	MUST(npu_graph_destroy(g));
	npu_event_destroy(ev);
	npu_stream_destroy(s);
}

static void *other_thread(void *arg)
{
	*(npu_status_t *)arg = npu_device_synchronize();
	return NULL;
}

struct endarg {
	npu_stream_t s;
	npu_status_t *st;
};

static void *end_other_thread(void *arg)
{
	struct endarg *a = arg;
	npu_graph_t g = NULL;

	*a->st = npu_stream_end_capture(a->s, &g);
	return NULL;
}

/* Capture with fork/join into a second stream */
static void test_capture(void)
{
	npu_stream_t s1, s2;
	npu_event_t fork, join;
	npu_graph_t g;
	npu_graph_exec_t x;
	npu_stream_capture_status_t cs;
	uint64_t a1[4] = { npu_arg_ptr(dx), npu_arg_ptr(dz), N, npu_arg_f32(2.0f) };
	uint64_t a2[4] = { npu_arg_ptr(dy), npu_arg_ptr(dw), N, npu_arg_f32(3.0f) };
	uint64_t a3[4] = { npu_arg_ptr(dz), npu_arg_ptr(dw), npu_arg_ptr(dz), N };
	size_t cnt = 0;
	unsigned long before;
	int i;

	MUST(job_stream(&s1, 0));
	MUST(npu_stream_create(&s2, 0, 0));
	MUST(npu_event_create(&fork, NPU_EVENT_DISABLE_TIMING));
	MUST(npu_event_create(&join, NPU_EVENT_DISABLE_TIMING));
	init_inputs();
	before = atomic_load(&n_submit);
	MUST(npu_stream_begin_capture(s1, NPU_STREAM_CAPTURE_MODE_GLOBAL));
	MUST(npu_stream_is_capturing(s1, &cs));
	tap_ok(cs == NPU_STREAM_CAPTURE_STATUS_ACTIVE, "capturing stream reports ACTIVE");
	MUST(npu_memcpy_async(dx, hx, N * 4, NPU_MEMCPY_HOST_TO_DEVICE, s1));
	MUST(npu_event_record(fork, s1));
	MUST(npu_stream_wait_event(s2, fork, 0));
	MUST(npu_stream_is_capturing(s2, &cs));
	tap_ok(cs == NPU_STREAM_CAPTURE_STATUS_ACTIVE, "waiting on a captured event joins s2 to the capture");
	MUST(npu_memcpy_async(dy, hy, N * 4, NPU_MEMCPY_HOST_TO_DEVICE, s2));
	MUST(npu_launch(NPU_K_SCALE_F32, npu_grid(2, 1, 1), a2, 4, s2, 0));
	MUST(npu_event_record(join, s2));
	MUST(npu_launch(NPU_K_SCALE_F32, npu_grid(2, 1, 1), a1, 4, s1, 0));
	MUST(npu_stream_wait_event(s1, join, 0));
	MUST(npu_launch(NPU_K_VADD_F32, npu_grid(2, 1, 1), a3, 4, s1, 0));
	MUST(npu_memcpy_async(hout, dz, N * 4, NPU_MEMCPY_DEVICE_TO_HOST, s1));
	MUST(npu_stream_end_capture(s1, &g));
	tap_ok(atomic_load(&n_submit) == before, "nothing was submitted during capture");
	MUST(npu_stream_is_capturing(s2, &cs));
	tap_ok(cs == NPU_STREAM_CAPTURE_STATUS_NONE, "end of capture ends it on the joined stream too");
	MUST(npu_graph_get_nodes(g, NULL, &cnt));
	tap_ok(cnt == 6, "captured graph has 6 nodes (%zu)", cnt);
	tap_ok(hout[0] == -1.0f, "captured work did not run");
	MUST(npu_graph_instantiate(&x, g, 0));
	for (i = 0; i < N; i++)
		ref[i] = 2.0f * hx[i] + 3.0f * hy[i];
	MUST(npu_device_synchronize());
	before = atomic_load(&n_submit);
	MUST(npu_graph_launch(x, s1));
	tap_ok(atomic_load(&n_submit) - before == 1, "captured graph: one submit ioctl per launch");
	MUST(npu_stream_synchronize(s1));
	tap_ok(same(hout, ref), "captured fork/join graph equals the CPU reference");
	MUST(npu_graph_exec_destroy(x));
	MUST(npu_graph_destroy(g));

	/* errors */
	ST(npu_stream_begin_capture(NULL, NPU_STREAM_CAPTURE_MODE_GLOBAL),
	   NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED, "the legacy stream cannot capture");
	ST(npu_stream_end_capture(s1, &g), NPU_ERROR_STREAM_CAPTURE_UNMATCHED,
	   "end_capture without begin: UNMATCHED");

	MUST(npu_stream_begin_capture(s1, NPU_STREAM_CAPTURE_MODE_GLOBAL));
	MUST(npu_launch(NPU_K_SCALE_F32, npu_grid(2, 1, 1), a1, 4, s1, 0));
	ST(npu_stream_synchronize(s1), NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED,
	   "synchronize on a capturing stream: UNSUPPORTED");
	MUST(npu_stream_is_capturing(s1, &cs));
	tap_ok(cs == NPU_STREAM_CAPTURE_STATUS_INVALIDATED, "... and the capture is invalidated");
	ST(npu_launch(NPU_K_SCALE_F32, npu_grid(2, 1, 1), a1, 4, s1, 0),
	   NPU_ERROR_STREAM_CAPTURE_INVALIDATED, "work on an invalidated capture: INVALIDATED");
	g = (npu_graph_t)1;
	ST(npu_stream_end_capture(s1, &g), NPU_ERROR_STREAM_CAPTURE_INVALIDATED,
	   "end_capture of an invalidated capture: INVALIDATED");
	tap_ok(g == NULL, "... with no graph");

	MUST(npu_stream_begin_capture(s1, NPU_STREAM_CAPTURE_MODE_GLOBAL));
	ST(npu_launch(NPU_K_SCALE_F32, npu_grid(2, 1, 1), a1, 4, NULL, 0),
	   NPU_ERROR_STREAM_CAPTURE_IMPLICIT, "legacy-stream work during a global capture: IMPLICIT");
	ST(npu_stream_end_capture(s1, &g), NPU_ERROR_STREAM_CAPTURE_INVALIDATED,
	   "... which invalidates the capture");

	MUST(npu_stream_begin_capture(s1, NPU_STREAM_CAPTURE_MODE_GLOBAL));
	ST(npu_device_synchronize(), NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED,
	   "device synchronize during a global capture: UNSUPPORTED");
	ST(npu_stream_end_capture(s1, &g), NPU_ERROR_STREAM_CAPTURE_INVALIDATED,
	   "... which invalidates the capture");

	MUST(npu_stream_begin_capture(s1, NPU_STREAM_CAPTURE_MODE_GLOBAL));
	ST(npu_memcpy_async(dx, ref, N * 4, NPU_MEMCPY_HOST_TO_DEVICE, s1),
	   NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED, "pageable copy in a capture: UNSUPPORTED");
	ST(npu_stream_end_capture(s1, &g), NPU_ERROR_STREAM_CAPTURE_INVALIDATED,
	   "... which invalidates the capture");

	MUST(npu_stream_begin_capture(s1, NPU_STREAM_CAPTURE_MODE_GLOBAL));
	MUST(npu_launch(NPU_K_SCALE_F32, npu_grid(2, 1, 1), a1, 4, s1, 0));
	MUST(npu_event_record(fork, s1));
	MUST(npu_stream_wait_event(s2, fork, 0));
	MUST(npu_launch(NPU_K_SCALE_F32, npu_grid(2, 1, 1), a2, 4, s2, 0));
	ST(npu_stream_end_capture(s2, &g), NPU_ERROR_STREAM_CAPTURE_UNMATCHED,
	   "end_capture on a forked (not origin) stream: UNMATCHED");
	ST(npu_stream_end_capture(s1, &g), NPU_ERROR_STREAM_CAPTURE_UNJOINED,
	   "fork without join: UNJOINED");
	MUST(npu_stream_is_capturing(s2, &cs));
	tap_ok(cs == NPU_STREAM_CAPTURE_STATUS_NONE && g == NULL,
	       "... the capture ended on both streams, no graph");

	/* THREAD_LOCAL: only the capturing thread is restricted */
	MUST(npu_stream_begin_capture(s1, NPU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	MUST(npu_launch(NPU_K_SCALE_F32, npu_grid(2, 1, 1), a1, 4, s1, 0));
	{
		pthread_t t;
		npu_status_t other = NPU_ERROR_OS;

		pthread_create(&t, NULL, other_thread, &other);
		pthread_join(t, NULL);
		tap_ok(other == NPU_SUCCESS,
		       "thread-local capture: another thread may synchronize the device");
	}
	{
		pthread_t t;
		npu_status_t other = NPU_ERROR_OS;

		pthread_create(&t, NULL, end_other_thread, &(struct endarg){ s1, &other });
		pthread_join(t, NULL);
		tap_ok(other == NPU_ERROR_STREAM_CAPTURE_WRONG_THREAD,
		       "thread-local capture ended from another thread: WRONG_THREAD");
	}
	ST(npu_device_synchronize(), NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED,
	   "... but the capturing thread may not");
	ST(npu_stream_end_capture(s1, &g), NPU_ERROR_STREAM_CAPTURE_INVALIDATED,
	   "... which invalidates its capture");

	/* legacy-stream work while a blocking stream captures is refused in
	 * every mode (it would wait for the capture); with a non-blocking
	 * capturing stream it runs, in every mode */
	MUST(npu_stream_begin_capture(s1, NPU_STREAM_CAPTURE_MODE_RELAXED));
	MUST(npu_launch(NPU_K_SCALE_F32, npu_grid(2, 1, 1), a1, 4, s1, 0));
	ST(npu_launch(NPU_K_SCALE_F32, npu_grid(2, 1, 1), a2, 4, NULL, 0),
	   NPU_ERROR_STREAM_CAPTURE_IMPLICIT,
	   "relaxed capture of a blocking stream: legacy-stream work is IMPLICIT");
	ST(npu_stream_end_capture(s1, &g), NPU_ERROR_STREAM_CAPTURE_INVALIDATED,
	   "... which invalidates the capture");
	{
		npu_stream_t nb;
		npu_stream_capture_mode_t m;

		MUST(npu_stream_create(&nb, NPU_STREAM_NON_BLOCKING, 0));
		for (m = NPU_STREAM_CAPTURE_MODE_GLOBAL; m <= NPU_STREAM_CAPTURE_MODE_RELAXED; m++) {
			MUST(npu_stream_begin_capture(nb, m));
			MUST(npu_launch(NPU_K_SCALE_F32, npu_grid(2, 1, 1), a1, 4, nb, 0));
			ST(npu_launch(NPU_K_SCALE_F32, npu_grid(2, 1, 1), a2, 4, NULL, 0), NPU_SUCCESS,
			   "capture mode %d of a non-blocking stream: the legacy stream may run work",
			   (int)m);
			ST(npu_stream_end_capture(nb, &g), NPU_SUCCESS, "... and the capture ends with a graph");
			npu_graph_destroy(g);
		}
		MUST(npu_stream_destroy(nb));
	}

	/* streams keep working after all this */
	MUST(npu_device_synchronize());
	MUST(npu_memcpy(dx, hx, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_launch(NPU_K_SCALE_F32, npu_grid(2, 1, 1), a1, 4, s1, 0));
	MUST(npu_memcpy_async(hout, dz, N * 4, NPU_MEMCPY_DEVICE_TO_HOST, s1));
	MUST(npu_stream_synchronize(s1));
	tap_ok(feq(hout[5], 2.0f * hx[5]), "streams work normally after captures");
	npu_event_destroy(fork);
	npu_event_destroy(join);
	npu_stream_destroy(s1);
	npu_stream_destroy(s2);
}

/* A chain longer than the driver's jobs per SUBMIT: several ioctls, in
 * order, still no host round trip. */
static void test_long_chain(void)
{
	npu_device_prop prop;
	npu_graph_t g;
	npu_graph_exec_t x;
	npu_graph_node_t prev = NULL, n;
	npu_stream_t s;
	unsigned long before, got, want;
	const int len = 100;
	int i;

	MUST(npu_device_get_properties(&prop, 0));
	MUST(job_stream(&s, NPU_STREAM_NON_BLOCKING));
	MUST(npu_graph_create(&g, 0));
	for (i = 0; i < len; i++) {
		npu_kernel_node_params p = kscale(dx, dy, 1.0f, 1);

		p.kernel = NPU_K_SAXPY_F32;	/* y += 1 * x */
		MUST(npu_graph_add_kernel_node(&n, g, prev ? &prev : NULL, prev ? 1 : 0, &p));
		prev = n;
	}
	MUST(npu_graph_instantiate(&x, g, 0));
	init_inputs();
	MUST(npu_memcpy(dx, hx, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_memcpy(dy, hy, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_device_synchronize());
	before = atomic_load(&n_submit);
	MUST(npu_graph_launch(x, s));
	got = atomic_load(&n_submit) - before;
	MUST(npu_stream_synchronize(s));
	MUST(npu_memcpy(hout, dy, N * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	for (i = 0; i < N; i++)
		ref[i] = hy[i] + (float)len * hx[i];
	tap_ok(same(hout, ref), "chain of %d kernels equals the CPU reference", len);
	want = 1;
	tap_ok(got == want, "%d nodes (driver takes %u jobs per SUBMIT): %lu submit ioctl(s)",
	       len, prop.max_jobs_per_submit, got);
	{
		npu_graph_stats st0, st1;

		MUST(npu_graph_get_stats(&st0));
		MUST(npu_graph_launch(x, s));
		MUST(npu_stream_synchronize(s));
		MUST(npu_graph_get_stats(&st1));
		tap_ok(st1.jobs - st0.jobs == 1,
		       "a chain on one queue is one job (no join): %llu jobs",
		       (unsigned long long)(st1.jobs - st0.jobs));
	}
	MUST(npu_graph_exec_destroy(x));
	MUST(npu_graph_destroy(g));

	/* a pipeline of 48 slices (copy in -> kernel -> copy out, 144 nodes,
	 * edges across copy and compute rings): packed jobs with device
	 * semaphores, still one ioctl */
	{
		const int B = 48, sl = N / 48;
		npu_graph_node_t ci, k, co;

		MUST(npu_graph_create(&g, 0));
		for (i = 0; i < B; i++) {
			npu_kernel_node_params p = kscale(NULL, NULL, 2.0f, 1);

			MUST(npu_graph_add_memcpy_node(&ci, g, NULL, 0, (float *)dx + i * sl,
						       hx + i * sl, sl * 4, NPU_MEMCPY_DEFAULT));
			p.args[0] = npu_arg_ptr((float *)dx + i * sl);
			p.args[1] = npu_arg_ptr((float *)dz + i * sl);
			p.args[2] = sl;
			MUST(npu_graph_add_kernel_node(&k, g, &ci, 1, &p));
			MUST(npu_graph_add_memcpy_node(&co, g, &k, 1, hout + i * sl,
						       (float *)dz + i * sl, sl * 4,
						       NPU_MEMCPY_DEFAULT));
		}
		MUST(npu_graph_instantiate(&x, g, 0));
		for (int rep = 0; rep < 3; rep++) {
			init_inputs();
			for (i = 0; i < N; i++)
				hx[i] += (float)rep;
			for (i = 0; i < N; i++)
				ref[i] = i < B * sl ? 2.0f * hx[i] : -1.0f;
			MUST(npu_device_synchronize());
			if (rep == 2)
				MUST(npu_profiler_start());
			before = atomic_load(&n_submit);
			MUST(npu_graph_launch(x, s));
			got = atomic_load(&n_submit) - before;
			MUST(npu_stream_synchronize(s));
			tap_ok(same(hout, ref) && got == 1,
			       "pipeline of %d nodes across rings, launch %d: correct, %lu ioctl(s)",
			       3 * B, rep + 1, got);
		}
		MUST(npu_profiler_stop());
		{
			static npu_trace_record r[512];
			size_t nr = 512, a;
			int nk = 0, nc = 0;

			MUST(npu_trace_get_records(r, &nr));
			for (a = 0; a < nr; a++) {
				nk += r[a].kind == NPU_TRACE_KERNEL;
				nc += r[a].kind == NPU_TRACE_COPY;
			}
			tap_ok(nk == B && nc == 2 * B,
			       "traced %d kernels and %d copies of the packed launch", nk, nc);
		}
		MUST(npu_graph_exec_destroy(x));
		MUST(npu_graph_destroy(g));
	}

	/* packing keeps concurrency: k0 -> spin(300 ms) on a compute ring,
	 * k0 -> 68 chained copies on a copy ring (70 nodes: packed, the edge
	 * k0 -> c0 is a semaphore). The copies must not wait for the spin. */
	if (prop.copy_rings) {
		static npu_trace_record r[512];
		npu_graph_node_t k0, sp, c = NULL;
		npu_kernel_node_params p = kscale(dx, dz, 2.0f, 1), q = kspin(300000000);
		size_t nr = 512, a;
		uint64_t sp_end = 0, c0_start = 0;
		int attempt, ok = 0;

		MUST(npu_graph_create(&g, 0));
		MUST(npu_graph_add_kernel_node(&k0, g, NULL, 0, &p));
		MUST(npu_graph_add_kernel_node(&sp, g, &k0, 1, &q));
		/* each copy after k0 and the previous copy: no chain merging,
		 * 68 jobs, so the launch is packed */
		for (i = 0; i < 68; i++) {
			npu_graph_node_t d[2] = { k0, c };

			MUST(npu_graph_add_memcpy_node(&c, g, d, c ? 2 : 1, hout + i, dz,
						       4, NPU_MEMCPY_DEFAULT));
		}
		MUST(npu_graph_instantiate(&x, g, 0));
		/*
		 * The device's virtual clock moves once the host has been quiet
		 * for the settle time; a guest slow to push the copy job (the
		 * debug kernel, now and then) lets it jump to the spin's end
		 * first. A packing that serialised the copies would fail every
		 * attempt; a slow push fails one now and then.
		 */
		for (attempt = 1; attempt <= 3 && !ok; attempt++) {
			nr = 512;
			sp_end = c0_start = 0;
			MUST(npu_device_synchronize());
			MUST(npu_profiler_start());
			before = atomic_load(&n_submit);
			MUST(npu_graph_launch(x, s));
			got = atomic_load(&n_submit) - before;
			MUST(npu_stream_synchronize(s));
			MUST(npu_profiler_stop());
			MUST(npu_trace_get_records(r, &nr));
			for (a = 0; a < nr; a++) {
				if (r[a].kind == NPU_TRACE_KERNEL &&
				    r[a].kernel == NPU_K_TEST_SPIN)
					sp_end = r[a].end;
				if (r[a].kind == NPU_TRACE_COPY && !c0_start)
					c0_start = r[a].start;
			}
			ok = got == 1 && nr == 70 && c0_start && sp_end && c0_start < sp_end;
			if (!ok)
				printf("# attempt %d: %lu ioctl(s), %zu records, first copy starts %llu, spin ends %llu\n",
				       attempt, got, nr, (unsigned long long)c0_start,
				       (unsigned long long)sp_end);
		}
		tap_ok(ok, "packed launch (70 nodes, %lu ioctl): copies run during the 300 ms spin",
		       got);
		MUST(npu_graph_exec_destroy(x));
		MUST(npu_graph_destroy(g));
	}
	npu_stream_destroy(s);
}

/* A chain of CHAIN kernel nodes on one ring becomes one job of CHAIN
 * LAUNCH packets (and no join job: the job signals the stream). Node i is
 * y = -y (even i) or y += a_i * x (odd i), with grid.x = i + 1: the two
 * do not commute, so any change of order shows in the data, and the grid
 * names the node in the trace. */
#define CHAIN 20
static float chain_a[CHAIN];

static npu_kernel_node_params chain_node(int i)
{
	npu_kernel_node_params p = kscale(dy, dy, -1.0f, (uint32_t)i + 1);

	if (i % 2) {
		p.kernel = NPU_K_SAXPY_F32;	/* y += a x */
		p.args[0] = npu_arg_ptr(dx);
		p.args[3] = npu_arg_f32(chain_a[i]);
	}
	return p;
}

static void chain_ref(float *y)
{
	int i, e;

	for (i = 0; i < CHAIN; i++)
		for (e = 0; e < N; e++)
			y[e] = i % 2 ? y[e] + chain_a[i] * hx[e] : -y[e];
}

static void test_merged_chain(void)
{
	npu_graph_t g;
	npu_graph_exec_t x;
	npu_graph_node_t nd[CHAIN];
	npu_stream_t s, s2;
	npu_graph_stats a, b;
	unsigned long sub0, job0;
	int i;

	for (i = 0; i < CHAIN; i++)
		chain_a[i] = (float)(i + 1);
	MUST(job_stream(&s, NPU_STREAM_NON_BLOCKING));
	MUST(job_stream(&s2, NPU_STREAM_NON_BLOCKING));
	MUST(npu_graph_create(&g, 0));
	for (i = 0; i < CHAIN; i++) {
		npu_kernel_node_params p = chain_node(i);

		MUST(npu_graph_add_kernel_node(&nd[i], g, i ? &nd[i - 1] : NULL, i ? 1 : 0, &p));
	}
	MUST(npu_graph_instantiate(&x, g, 0));
	init_inputs();
	MUST(npu_memcpy(dx, hx, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_memcpy(dy, hy, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_device_synchronize());
	memcpy(ref, hy, N * 4);
	chain_ref(ref);

	/* one launch: one SUBMIT with one job; the stream's copy right after
	 * it (no synchronize in between) sees the whole chain */
	MUST(npu_graph_get_stats(&a));
	sub0 = atomic_load(&n_submit);
	job0 = atomic_load(&n_jobs);
	MUST(npu_profiler_start());
	MUST(npu_graph_launch(x, s));
	tap_ok(atomic_load(&n_submit) - sub0 == 1 && atomic_load(&n_jobs) - job0 == 1,
	       "chain of %d kernel nodes: 1 SUBMIT carrying 1 job (%lu, %lu)", CHAIN,
	       atomic_load(&n_submit) - sub0, atomic_load(&n_jobs) - job0);
	MUST(npu_memcpy_async(hout, dy, N * 4, NPU_MEMCPY_DEVICE_TO_HOST, s));
	MUST(npu_stream_synchronize(s));
	MUST(npu_profiler_stop());
	MUST(npu_graph_get_stats(&b));
	tap_ok(b.jobs - a.jobs == 1 && b.submit_ioctls - a.submit_ioctls == 1,
	       "npu_graph_get_stats agrees: %llu job(s), %llu ioctl(s)",
	       (unsigned long long)(b.jobs - a.jobs),
	       (unsigned long long)(b.submit_ioctls - a.submit_ioctls));
	tap_ok(same(hout, ref), "merged chain equals the CPU reference (node order kept)");
	{
		npu_trace_record r[64];
		size_t nr = 64, k, pk = 0;
		int ok = 1, nk = 0;

		/* the kernel library's code is traced as a user kernel on
		 * the grid its sizes take */
		MUST(npu_trace_get_records(r, &nr));
		for (k = 0; k < nr; k++) {
			if (r[k].kind != NPU_TRACE_KERNEL)
				continue;
			if (!r[k].graph ||
			    r[k].kernel != NPU_TRACE_USER_KERNEL ||
			    r[k].end < r[k].start ||
			    (nk && (r[k].start < r[pk].end || r[k].ring != r[pk].ring)))
				ok = 0;
			pk = k;
			nk++;
		}
		tap_ok(ok && nk == CHAIN,
		       "trace: %d per-node kernel records of the merged job, in node order, "
		       "each after the previous one ended", nk);
	}

	/* an exec update of a node in the middle of the merged job, between
	 * two launches in flight on two streams: the first keeps the old
	 * arguments, the second runs after it with the new ones */
	{
		npu_kernel_node_params p;

		MUST(npu_memcpy(dy, hy, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
		MUST(npu_device_synchronize());
		memcpy(ref, hy, N * 4);
		chain_ref(ref);
		MUST(npu_graph_launch(x, s));
		chain_a[9] = -7.0f;
		p = chain_node(9);
		p.grid = npu_grid(3, 1, 1);
		ST(npu_graph_exec_kernel_node_set_params(x, nd[9], &p), NPU_SUCCESS,
		   "exec update of a node inside the merged job");
		sub0 = atomic_load(&n_submit);
		job0 = atomic_load(&n_jobs);
		MUST(npu_graph_launch(x, s2));
		tap_ok(atomic_load(&n_submit) - sub0 == 1 && atomic_load(&n_jobs) - job0 == 1,
		       "the relaunch on another stream is again 1 SUBMIT, 1 job");
		MUST(npu_graph_launch(x, s));
		MUST(npu_device_synchronize());
		chain_ref(ref);
		chain_ref(ref);
		MUST(npu_memcpy(hout, dy, N * 4, NPU_MEMCPY_DEVICE_TO_HOST));
		tap_ok(same(hout, ref),
		       "3 launches in flight (s, s2, s) around the update run in launch order "
		       "with the arguments of their launch");
	}

	/* an event recorded on the stream after the launch, waited for by
	 * another stream: that stream sees the whole chain */
	{
		npu_event_t ev;

		MUST(npu_event_create(&ev, 0));
		MUST(npu_memcpy(dy, hy, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
		MUST(npu_device_synchronize());
		memcpy(ref, hy, N * 4);
		chain_ref(ref);
		MUST(npu_graph_launch(x, s));
		MUST(npu_event_record(ev, s));
		MUST(npu_stream_wait_event(s2, ev, 0));
		MUST(npu_memcpy_async(hout, dy, N * 4, NPU_MEMCPY_DEVICE_TO_HOST, s2));
		MUST(npu_stream_synchronize(s2));
		tap_ok(same(hout, ref), "an event recorded after the launch covers the whole chain");
		npu_event_destroy(ev);
	}
	MUST(npu_graph_exec_destroy(x));
	MUST(npu_graph_destroy(g));

	/* memcpy nodes merge too, on a copy ring: x -> z -> w -> out */
	{
		npu_graph_node_t c1, c2, c3;

		MUST(npu_graph_create(&g, 0));
		MUST(npu_graph_add_memcpy_node(&c1, g, NULL, 0, dz, hx, N * 4, NPU_MEMCPY_DEFAULT));
		MUST(npu_graph_add_memcpy_node(&c2, g, &c1, 1, dw, dz, N * 4, NPU_MEMCPY_DEFAULT));
		MUST(npu_graph_add_memcpy_node(&c3, g, &c2, 1, hout, dw, N * 4, NPU_MEMCPY_DEFAULT));
		MUST(npu_graph_instantiate(&x, g, 0));
		init_inputs();
		MUST(npu_memset(dz, 0, N * 4));
		MUST(npu_memset(dw, 0, N * 4));
		job0 = atomic_load(&n_jobs);
		MUST(npu_graph_launch(x, s));
		MUST(npu_stream_synchronize(s));
		tap_ok(same(hout, hx) && atomic_load(&n_jobs) - job0 == 1,
		       "chain of 3 copies: one job, correct (%lu jobs)",
		       atomic_load(&n_jobs) - job0);
		MUST(npu_graph_exec_destroy(x));
		MUST(npu_graph_destroy(g));
	}
	npu_stream_destroy(s);
	npu_stream_destroy(s2);
}

/* Prebuilt command slots: an untraced launch of a graph without host nodes
 * reuses the packets its command slot kept from an earlier launch (the
 * exec has EXEC_SLOTS = 4 of them), rewriting only what changes. More
 * launches than slots, in flight on two streams, with exec updates and a
 * traced launch in between, must each run with the parameters of their
 * launch; a memset node (its packets point into the slot) and an event
 * record node (its timestamp slot changes per record) stay correct. */
static void test_prebuilt(void)
{
	npu_graph_t g;
	npu_graph_exec_t x;
	npu_graph_node_t nd[CHAIN], ms, er;
	npu_stream_t s, s2;
	unsigned long sub0, job0;
	int i, l, onejob = 1;

	for (i = 0; i < CHAIN; i++)
		chain_a[i] = (float)(i % 5) - 2.0f;
	MUST(job_stream(&s, NPU_STREAM_NON_BLOCKING));
	MUST(job_stream(&s2, NPU_STREAM_NON_BLOCKING));
	MUST(npu_graph_create(&g, 0));
	for (i = 0; i < CHAIN; i++) {
		npu_kernel_node_params p = chain_node(i);

		MUST(npu_graph_add_kernel_node(&nd[i], g, i ? &nd[i - 1] : NULL, i ? 1 : 0, &p));
	}
	MUST(npu_graph_instantiate(&x, g, 0));
	init_inputs();
	MUST(npu_memcpy(dx, hx, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_memcpy(dy, hy, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_device_synchronize());
	memcpy(ref, hy, N * 4);
	for (l = 0; l < 11; l++) {
		if (l == 3 || l == 6 || l == 9) {
			npu_kernel_node_params p;

			chain_a[5] = (float)l;
			p = chain_node(5);
			p.grid = npu_grid((uint32_t)l, 1, 1);
			MUST(npu_graph_exec_kernel_node_set_params(x, nd[5], &p));
		}
		chain_ref(ref);
		sub0 = atomic_load(&n_submit);
		job0 = atomic_load(&n_jobs);
		if (l == 7) {
			npu_trace_record r[64];
			size_t nr = 64, k;
			int nk = 0;

			MUST(npu_device_synchronize());
			MUST(npu_profiler_start());
			MUST(npu_graph_launch(x, s));
			MUST(npu_stream_synchronize(s));
			MUST(npu_profiler_stop());
			MUST(npu_trace_get_records(r, &nr));
			for (k = 0; k < nr; k++)
				nk += r[k].kind == NPU_TRACE_KERNEL && r[k].graph;
			tap_ok(nk == CHAIN, "a traced launch between prebuilt ones: %d kernel records", nk);
		} else {
			MUST(npu_graph_launch(x, l % 2 ? s2 : s));
		}
		if (atomic_load(&n_submit) - sub0 != 1 || atomic_load(&n_jobs) - job0 != 1)
			onejob = 0;
	}
	MUST(npu_device_synchronize());
	MUST(npu_memcpy(hout, dy, N * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	tap_ok(onejob, "every launch of the chain is 1 SUBMIT, 1 job");
	tap_ok(same(hout, ref),
	       "11 launches in flight on 2 streams (4 command slots), 3 exec updates "
	       "and a traced launch in between: each ran with its launch's arguments");
	MUST(npu_graph_exec_destroy(x));
	MUST(npu_graph_destroy(g));

	/* memset (unaligned: NOP-embedded pattern + COPY from the slot) and
	 * an event record with timing */
	{
		npu_event_t e0, ev;
		unsigned char *b = (unsigned char *)hout;
		size_t nb = N * 4, k;
		int okd = 1, okt = 1;

		MUST(npu_event_create(&e0, 0));
		MUST(npu_event_create(&ev, 0));
		MUST(npu_graph_create(&g, 0));
		MUST(npu_graph_add_memset_node(&ms, g, NULL, 0, (char *)dz + 1, 0x5a, nb - 3));
		MUST(npu_graph_add_event_record_node(&er, g, &ms, 1, ev));
		MUST(npu_graph_instantiate(&x, g, 0));
		for (l = 0; l < 7; l++) {
			float ms_ = -1;

			MUST(npu_memset_async(dz, 0, nb, s));
			/* records outside the graph too: the node's record
			 * numbers (timestamp slots) do not follow the exec's
			 * command slots */
			if (l % 2)
				MUST(npu_event_record(ev, s));
			MUST(npu_event_record(e0, s));
			MUST(npu_graph_launch(x, s));
			MUST(npu_memcpy_async(hout, dz, nb, NPU_MEMCPY_DEVICE_TO_HOST, s));
			MUST(npu_stream_synchronize(s));
			for (k = 0; k < nb; k++)
				if (b[k] != (k == 0 || k >= nb - 2 ? 0 : 0x5a))
					okd = 0;
			if (npu_event_elapsed_time(&ms_, e0, ev) != NPU_SUCCESS || ms_ < 0)
				okt = 0;
		}
		tap_ok(okd, "7 launches of an unaligned memset node from prebuilt slots: data right");
		tap_ok(okt, "its event record node timestamps each record (elapsed >= 0)");
		MUST(npu_graph_exec_destroy(x));
		MUST(npu_graph_destroy(g));
		npu_event_destroy(e0);
		npu_event_destroy(ev);
	}
	npu_stream_destroy(s);
	npu_stream_destroy(s2);
}

/* A page fault in the middle of a merged chain is reported as for any
 * graph job: the device's sticky error, seen by the launching stream,
 * naming the kernel and the address; npu_device_reset() recovers. On a
 * user-queue stream (uq) the launch is one INDIRECT on the stream's queue,
 * which the fault halts: no job, the same report and recovery. */
static void test_merged_fault(bool uq)
{
	npu_device_prop prop;
	npu_graph_t g;
	npu_graph_exec_t x;
	npu_graph_node_t prev = NULL, n;
	npu_stream_t s;
	unsigned long job0;
	uint64_t bad;
	char hex[32];
	int i;

	MUST(npu_device_get_properties(&prop, 0));
	bad = prop.va_size ? ((prop.va_size - 0x200000) & ~0xfffull) : 0x7f00000000ull;
	if (uq) {
		unsigned f = 0;

		MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING |
				       NPU_STREAM_USER_QUEUE, 0));
		MUST(npu_stream_get_flags(s, &f));
		if (!(f & NPU_STREAM_USER_QUEUE)) {
			tap_skip("merged fault on a user queue: none on this device");
			npu_stream_destroy(s);
			return;
		}
	} else {
		MUST(job_stream(&s, NPU_STREAM_NON_BLOCKING));
	}
	MUST(npu_graph_create(&g, 0));
	for (i = 0; i < CHAIN; i++) {
		npu_kernel_node_params p = kscale(dx, dy, 1.0f, 1);

		p.kernel = NPU_K_SAXPY_F32;
		if (i == CHAIN / 2) {
			p = kspin(0);
			p.kernel = NPU_K_TEST_FAULT;
			p.args[0] = bad;
		}
		MUST(npu_graph_add_kernel_node(&n, g, prev ? &prev : NULL, prev ? 1 : 0, &p));
		prev = n;
	}
	MUST(npu_graph_instantiate(&x, g, 0));
	MUST(npu_device_synchronize());
	job0 = atomic_load(&n_jobs);
	MUST(npu_graph_launch(x, s));
	tap_ok(atomic_load(&n_jobs) - job0 == (uq ? 0 : 1),
	       "%s: chain with a faulting node is %s", uq ? "user queue" : "kernel queue",
	       uq ? "no job (one INDIRECT)" : "one job");
	ST(npu_stream_synchronize(s), NPU_ERROR_ILLEGAL_ADDRESS,
	   "the fault in the merged launch is reported on the launching stream");
	tap_diag("message: %s", npu_last_error_message());
	snprintf(hex, sizeof(hex), "%llx", (unsigned long long)bad);
	tap_ok(strstr(npu_last_error_message(), "test_fault") &&
	       strstr(npu_last_error_message(), hex),
	       "the message names the kernel and the address 0x%s", hex);
	ST(npu_device_synchronize(), NPU_ERROR_ILLEGAL_ADDRESS, "it is the device's sticky error");
	ST(npu_graph_launch(x, s), NPU_ERROR_ILLEGAL_ADDRESS, "a new launch is refused with it");
	ST(npu_device_reset(), NPU_SUCCESS, "npu_device_reset clears it");
	MUST(npu_graph_exec_destroy(x));
	MUST(npu_graph_destroy(g));
	/* the graph queues work again */
	{
		npu_graph_node_t k1, k2;
		npu_kernel_node_params p = kscale(dx, dz, 2.0f, 2);

		MUST(npu_graph_create(&g, 0));
		MUST(npu_graph_add_kernel_node(&k1, g, NULL, 0, &p));
		p = kscale(dz, dz, 3.0f, 2);
		MUST(npu_graph_add_kernel_node(&k2, g, &k1, 1, &p));
		MUST(npu_graph_instantiate(&x, g, 0));
		init_inputs();
		MUST(npu_memcpy(dx, hx, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
		for (i = 0; i < N; i++)
			ref[i] = 6.0f * hx[i];
		ST(npu_graph_launch(x, s), NPU_SUCCESS, "graphs launch again after the reset");
		MUST(npu_stream_synchronize(s));
		MUST(npu_memcpy(hout, dz, N * 4, NPU_MEMCPY_DEVICE_TO_HOST));
		tap_ok(same(hout, ref), "and compute the right result");
		MUST(npu_graph_exec_destroy(x));
		MUST(npu_graph_destroy(g));
	}
	npu_stream_destroy(s);
}

/* ---- regression tests of issue 15 ---- */

static npu_kernel_node_params kfill(void *y, uint64_t n, float v)
{
	npu_kernel_node_params p;

	memset(&p, 0, sizeof(p));
	p.kernel = NPU_K_FILL_F32;
	p.grid = npu_grid(1, 1, 1);
	p.nargs = 3;
	p.args[0] = npu_arg_ptr(y);
	p.args[1] = n;
	p.args[2] = npu_arg_f32(v);
	return p;
}

/* d[0..n) == v, read back through pinned memory */
static int dev_all(void *d, unsigned n, float v)
{
	unsigned i;

	MUST(npu_memcpy(hout, d, n * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	for (i = 0; i < n; i++)
		if (hout[i] != v)
			return 0;
	return 1;
}

/* A host node that opens a gate word (the device waits on it). */
static void open_gate(void *u)
{
	__atomic_store_n((uint32_t *)u, 1, __ATOMIC_RELEASE);
}

static void nop_host(void *u)
{
	(void)u;
}

/* A host node that holds until the test releases it (at most 20 s); then
 * fills u (N floats, if not NULL) with 7. */
static atomic_int held_release, held_entered, held_left;

static void held_host(void *u)
{
	int i;

	atomic_store(&held_entered, 1);
	for (i = 0; i < 20000 && !atomic_load(&held_release); i++)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	for (i = 0; u && i < N; i++)
		((float *)u)[i] = 7.0f;
	atomic_store(&held_left, 1);
}

static void held_reset(void)
{
	atomic_store(&held_release, 0);
	atomic_store(&held_entered, 0);
	atomic_store(&held_left, 0);
}

static void held_wait_entered(void)
{
	int i;

	for (i = 0; i < 20000 && !atomic_load(&held_entered); i++)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
}

/* Every submission round of one launch (a host node makes a new one) must
 * write its packets where no queued job's packets are. Root a (after an
 * event wait) is queued in the first round, behind an event recorded
 * after a closed gate; the host node h after the independent copy b makes
 * a second round with the copy k; the host node after k opens the gate,
 * so a's packets are read only after the second round wrote its own. */
static void test_host_rounds(void)
{
	npu_device_prop prop;
	npu_stream_t s, sg;
	npu_event_t e;
	npu_graph_t g;
	npu_graph_exec_t x;
	npu_graph_node_t ew, a, b, h, k, h2;
	npu_kernel_node_params p;
	uint32_t *gate;
	void *d1, *d2, *d3, *d4;
	int launch;

	MUST(npu_device_get_properties(&prop, 0));
	if (!prop.copy_rings) {
		tap_skip("host rounds: the device has no copy rings");
		return;
	}
	MUST(npu_host_alloc((void **)&gate, 4, 0));
	MUST(npu_malloc(&d1, N * 4));
	MUST(npu_malloc(&d2, N * 4));
	MUST(npu_malloc(&d3, N * 4));
	MUST(npu_malloc(&d4, N * 4));
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&sg, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_event_create(&e, NPU_EVENT_DISABLE_TIMING));
	MUST(npu_graph_create(&g, 0));
	MUST(npu_graph_add_event_wait_node(&ew, g, NULL, 0, e));
	p = kfill(d1, N, 5.0f);
	MUST(npu_graph_add_kernel_node(&a, g, &ew, 1, &p));
	MUST(npu_graph_add_memcpy_node(&b, g, NULL, 0, d3, d2, N * 4,
				       NPU_MEMCPY_DEVICE_TO_DEVICE));
	MUST(npu_graph_add_host_node(&h, g, &b, 1, nop_host, NULL));
	MUST(npu_graph_add_memcpy_node(&k, g, &h, 1, d4, d2, N * 4,
				       NPU_MEMCPY_DEVICE_TO_DEVICE));
	MUST(npu_graph_add_host_node(&h2, g, &k, 1, open_gate, gate));
	MUST(npu_graph_instantiate(&x, g, 0));
	for (launch = 0; launch < 2; launch++) {
		*gate = 0;
		MUST(npu_memset(d1, 0, N * 4));
		MUST(npu_memset(d4, 0, N * 4));
		p = kfill(d2, N, 3.0f);
		MUST(npu_launch(NPU_K_FILL_F32, p.grid, p.args, 3, NULL, 0));
		MUST(npu_device_synchronize());
		MUST(npu_stream_wait_value32(sg, gate, 1, 0));
		MUST(npu_event_record(e, sg));
		MUST(npu_graph_launch(x, s));
		ST(npu_stream_synchronize(s), NPU_SUCCESS,
		   "launch %d of a graph with host rounds completes", launch + 1);
		tap_ok(dev_all(d1, N, 5.0f),
		       "launch %d: the root queued behind the gate ran its own packets", launch + 1);
		tap_ok(dev_all(d4, N, 3.0f),
		       "launch %d: the node of the second round ran", launch + 1);
	}
	MUST(npu_stream_synchronize(sg));
	MUST(npu_graph_exec_destroy(x));
	MUST(npu_graph_destroy(g));
	npu_event_destroy(e);
	npu_stream_destroy(sg);
	npu_stream_destroy(s);
	npu_free(d1);
	npu_free(d2);
	npu_free(d3);
	npu_free(d4);
	npu_host_free(gate);
}

/* On a user queue a launch reuses the packets an earlier launch wrote into
 * its command slot: after npu_graph_exec_kernel_node_set_params every slot
 * must be rewritten. Eight launches (each of the exec's slots twice), the
 * fill value changed before each; and two kernels whose second one reads
 * the parameters of the first's launch. */
static void test_exec_update_uq(void)
{
	npu_stream_t s;
	npu_graph_t g;
	npu_graph_exec_t x;
	npu_graph_node_t k, k2;
	npu_kernel_node_params p;
	void *d, *d2;
	unsigned f = 0;
	int i, good = 1;

	MUST(npu_malloc(&d, N * 4));
	MUST(npu_malloc(&d2, N * 4));
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING | NPU_STREAM_USER_QUEUE, 0));
	MUST(npu_stream_get_flags(s, &f));
	MUST(npu_graph_create(&g, 0));
	p = kfill(d, N, 1.0f);
	MUST(npu_graph_add_kernel_node(&k, g, NULL, 0, &p));
	p = kfill(d2, N, 1.0f);
	MUST(npu_graph_add_kernel_node(&k2, g, &k, 1, &p));
	MUST(npu_graph_instantiate(&x, g, 0));
	for (i = 1; i <= 8; i++) {
		p = kfill(d, N, (float)i);
		MUST(npu_graph_exec_kernel_node_set_params(x, k, &p));
		MUST(npu_graph_launch(x, s));
		MUST(npu_stream_synchronize(s));
		if (!dev_all(d, N, (float)i) || !dev_all(d2, N, 1.0f)) {
			fprintf(stderr, "# launch %d: not the parameters set before it\n", i);
			good = 0;
		}
	}
	tap_ok(good, "graph launches on a %s queue use the parameters set before each "
	       "(8 launches, every command slot twice)",
	       f & NPU_STREAM_USER_QUEUE ? "user" : "kernel");
	/* unchanged parameters: the slots' packets are used as they are */
	for (i = 0; i < 8; i++)
		MUST(npu_graph_launch(x, s));
	MUST(npu_stream_synchronize(s));
	tap_ok(dev_all(d, N, 8.0f) && dev_all(d2, N, 1.0f),
	       "eight more launches without an update keep the last parameters");
	MUST(npu_graph_exec_destroy(x));
	MUST(npu_graph_destroy(g));
	npu_stream_destroy(s);
	npu_free(d);
	npu_free(d2);
}

/* npu_graph_exec_kernel_node_set_params reaches later launches only: not
 * the nodes of a launch already made whose host node still runs. */
static void test_exec_update_later(void)
{
	npu_stream_t s;
	npu_graph_t g;
	npu_graph_exec_t x;
	npu_graph_node_t h, k;
	npu_kernel_node_params p;
	void *d;

	MUST(npu_malloc(&d, N * 4));
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_graph_create(&g, 0));
	MUST(npu_graph_add_host_node(&h, g, NULL, 0, held_host, NULL));
	p = kfill(d, N, 1.0f);
	MUST(npu_graph_add_kernel_node(&k, g, &h, 1, &p));
	MUST(npu_graph_instantiate(&x, g, 0));
	held_reset();
	MUST(npu_graph_launch(x, s));
	p = kfill(d, N, 2.0f);
	ST(npu_graph_exec_kernel_node_set_params(x, k, &p), NPU_SUCCESS,
	   "update a kernel node while a launch waits in its host node");
	atomic_store(&held_release, 1);
	MUST(npu_stream_synchronize(s));
	tap_ok(dev_all(d, N, 1.0f), "the launch made before the update used the old parameters");
	held_reset();
	atomic_store(&held_release, 1);
	MUST(npu_graph_launch(x, s));
	MUST(npu_stream_synchronize(s));
	tap_ok(dev_all(d, N, 2.0f), "the next launch uses the new parameters");
	MUST(npu_graph_exec_destroy(x));
	MUST(npu_graph_destroy(g));
	npu_stream_destroy(s);
	npu_free(d);
}

/* A graph launch queued behind a host function that has not returned yet
 * is asynchronous, as every other enqueue: npu_graph_launch returns at
 * once (the host function may wait for what the caller does next), and
 * the launch is submitted when the host function's point is. The graph
 * copies a pinned buffer the host function fills with 7 when it returns
 * (c7), then adds its kernel's operand to d. Two launches with a parameter
 * update between them: each keeps the parameters it was launched with,
 * both after the host function (d = 0 + 7 + 8). Also for a graph with a
 * host node of its own. */
static void test_launch_behind_host_func(void)
{
	npu_stream_t s;
	npu_graph_t g, gh;
	npu_graph_exec_t x, xh;
	npu_graph_node_t cp, k, h, k2;
	npu_kernel_node_params p;
	void *d, *c7, *c8;
	float *hp;

	MUST(npu_malloc(&d, N * 4));
	MUST(npu_malloc(&c7, N * 4));
	MUST(npu_malloc(&c8, N * 4));
	p = kfill(c7, N, 7.0f);
	MUST(npu_launch(NPU_K_FILL_F32, p.grid, p.args, 3, NULL, 0));
	p = kfill(c8, N, 8.0f);
	MUST(npu_launch(NPU_K_FILL_F32, p.grid, p.args, 3, NULL, 0));
	MUST(npu_memset(d, 0, N * 4));
	MUST(npu_device_synchronize());
	MUST(npu_host_alloc((void **)&hp, N * 4, 0));
	memset(hp, 0, N * 4);
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_graph_create(&g, 0));
	MUST(npu_graph_add_memcpy_node(&cp, g, NULL, 0, c7, hp, N * 4,
				       NPU_MEMCPY_HOST_TO_DEVICE));
	p = kvadd(d, c7, d);
	MUST(npu_graph_add_kernel_node(&k, g, &cp, 1, &p));
	MUST(npu_graph_instantiate(&x, g, 0));

	held_reset();
	MUST(npu_launch_host_func(s, held_host, hp));
	held_wait_entered();
	ST(npu_graph_launch(x, s), NPU_SUCCESS, "launch behind a running host function");
	tap_ok(!atomic_load(&held_left),
	       "npu_graph_launch returned while the host function before it still runs");
	p = kvadd(d, c8, d);
	MUST(npu_graph_exec_kernel_node_set_params(x, k, &p));
	ST(npu_graph_launch(x, s), NPU_SUCCESS, "second launch of the same graph behind it");
	tap_ok(!atomic_load(&held_left), "the second launch returned at once too");
	atomic_store(&held_release, 1);
	ST(npu_stream_synchronize(s), NPU_SUCCESS, "both launches complete");
	tap_ok(dev_all(d, N, 15.0f),
	       "each launch ran once with its own parameters, after the host function (0 + 7 + 8)");

	/* a graph with a host node of its own, behind a held host function */
	MUST(npu_graph_create(&gh, 0));
	MUST(npu_graph_add_host_node(&h, gh, NULL, 0, nop_host, NULL));
	p = kvadd(d, c7, d);
	MUST(npu_graph_add_kernel_node(&k2, gh, &h, 1, &p));
	MUST(npu_graph_instantiate(&xh, gh, 0));
	held_reset();
	MUST(npu_launch_host_func(s, held_host, NULL));
	held_wait_entered();
	ST(npu_graph_launch(xh, s), NPU_SUCCESS, "launch of a graph with a host node behind a running host function");
	tap_ok(!atomic_load(&held_left), "it returned while the host function still runs");
	atomic_store(&held_release, 1);
	ST(npu_stream_synchronize(s), NPU_SUCCESS, "it completes");
	tap_ok(dev_all(d, N, 22.0f), "its kernel ran once, after the host function");

	MUST(npu_graph_exec_destroy(xh));
	MUST(npu_graph_destroy(gh));
	MUST(npu_graph_exec_destroy(x));
	MUST(npu_graph_destroy(g));
	npu_stream_destroy(s);
	npu_free(d);
	npu_free(c7);
	npu_free(c8);
	npu_host_free(hp);
}

/* An event of an event record node may be destroyed while a launch that
 * records it is still queued (npu.h: destroying an event with a pending
 * record is safe); the launch must not touch the freed event (ASan). */
static void test_event_destroyed_in_launch(void)
{
	npu_stream_t s;
	npu_event_t e, e2;
	npu_graph_t g;
	npu_graph_exec_t x;
	npu_graph_node_t h, r, k;
	npu_kernel_node_params p;
	npu_event_t spare[64];
	uintptr_t old_addr;
	int nspare = 0;
	void *d;

	MUST(npu_malloc(&d, N * 4));
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_event_create(&e, 0));
	MUST(npu_graph_create(&g, 0));
	MUST(npu_graph_add_host_node(&h, g, NULL, 0, held_host, NULL));
	MUST(npu_graph_add_event_record_node(&r, g, &h, 1, e));
	p = kfill(d, N, 4.0f);
	MUST(npu_graph_add_kernel_node(&k, g, &r, 1, &p));
	MUST(npu_graph_instantiate(&x, g, 0));
	held_reset();
	MUST(npu_graph_launch(x, s));
	old_addr = (uintptr_t)e;
	ST(npu_event_destroy(e), NPU_SUCCESS, "destroy an event a queued launch records");
	/* a new event at the freed one's address (malloc reuses it, except
	 * under ASan's quarantine): a launch that still used the old event,
	 * or a check by address alone, would now take this one for it */
	MUST(npu_event_create(&e2, 0));
	while ((uintptr_t)e2 != old_addr && nspare < 64) {
		spare[nspare++] = e2;
		MUST(npu_event_create(&e2, 0));
	}
	atomic_store(&held_release, 1);
	ST(npu_stream_synchronize(s), NPU_SUCCESS,
	   "the launch completes after its event was destroyed");
	tap_ok(dev_all(d, N, 4.0f), "and its nodes after the record ran");
	ST(npu_event_query(e2), NPU_SUCCESS, "a new event is untouched by the old launch");
	ST(npu_graph_launch(x, s), NPU_ERROR_INVALID_HANDLE,
	   "a new launch of the graph with the destroyed event is refused (a new event %s at its address)",
	   (uintptr_t)e2 == old_addr ? "is" : "is not");
	while (nspare)
		npu_event_destroy(spare[--nspare]);
	MUST(npu_stream_synchronize(s));
	npu_event_destroy(e2);
	MUST(npu_graph_exec_destroy(x));
	MUST(npu_graph_destroy(g));
	npu_stream_destroy(s);
	npu_free(d);
}

/* A closed gate holds a job, which the driver ends after 2 s: a test waits
 * this long for something that must not happen while a gate is closed. */
#define GATE_POLL_MS 800

/* Poll an exec's launch for completion through pinned memory the graph
 * writes last: returns whether *flag became v within ms. */
static int flag_within(volatile float *flag, float v, int ms)
{
	int i;

	for (i = 0; i < ms; i++) {
		if (*flag == v)
			return 1;
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
	return *flag == v;
}

/* Queue work on stream st that holds a copy ring until *gate is 1. */
static void copy_gate(npu_stream_t st, uint32_t *gate, void *scratch)
{
	MUST(npu_memcpy_async(scratch, (char *)scratch + 64, 64,
			      NPU_MEMCPY_DEVICE_TO_DEVICE, st));
	MUST(npu_stream_wait_value32(st, gate, 1, 0));
}

/* A host function that returns once *gate is 1 (at most 20 s). */
static void gate_host(void *gate)
{
	int i;

	for (i = 0; i < 20000 && !__atomic_load_n((uint32_t *)gate,
						 __ATOMIC_ACQUIRE); i++)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
}

/* A graph launched into the legacy stream waits for every blocking stream,
 * however many have work queued (the launch's entry list is bounded: the
 * ones beyond it go through barrier jobs, as for ordinary legacy work). */
#define LEGACY_STREAMS 45
#define LEGACY_LATE 5
static void test_legacy_many(void)
{
	npu_device_prop prop;
	npu_stream_t bs[LEGACY_STREAMS];
	npu_graph_t g;
	npu_graph_exec_t x;
	npu_graph_node_t k;
	uint32_t *gates;
	float *flag, *six;
	void *scratch;
	int i, early;

	MUST(npu_device_get_properties(&prop, 0));
	if (!prop.copy_rings) {
		tap_skip("legacy fan-in of graphs: the device has no copy rings");
		return;
	}
	MUST(npu_host_alloc((void **)&gates, 8, 0));
	MUST(npu_host_alloc((void **)&flag, 4, 0));
	MUST(npu_host_alloc((void **)&six, 4, 0));
	MUST(npu_malloc(&scratch, 4096));
	gates[0] = gates[1] = 0;
	*flag = 0;
	*six = 6.0f;
	MUST(npu_device_synchronize());
	for (i = 0; i < LEGACY_STREAMS; i++)
		MUST(npu_stream_create(&bs[i], 0, 0));
	/* the graph is one copy (a copy ring) */
	MUST(npu_graph_create(&g, 0));
	MUST(npu_graph_add_memcpy_node(&k, g, NULL, 0, flag, six, 4,
				       NPU_MEMCPY_HOST_TO_HOST));
	MUST(npu_graph_instantiate(&x, g, 0));
	/* The newest streams are the library's first candidates: they wait
	 * at the first gate on copy rings; the oldest LEGACY_LATE wait at the
	 * second gate in host functions, so that they hold no ring the graph
	 * or the other streams need, and no job of theirs sits on a ring for
	 * the whole check (a wait on a ring over the driver's 2 s job timeout
	 * fails, and the graph then runs early). */
	for (i = LEGACY_STREAMS - 1; i >= LEGACY_LATE; i--)
		copy_gate(bs[i], &gates[0], scratch);
	for (i = LEGACY_LATE - 1; i >= 0; i--)
		MUST(npu_launch_host_func(bs[i], gate_host, &gates[1]));
	MUST(npu_graph_launch(x, NULL));
	__atomic_store_n(&gates[0], 1, __ATOMIC_RELEASE);
	early = flag_within(flag, 6.0f, GATE_POLL_MS);
	tap_ok(!early, "a legacy-stream graph does not run before all %d blocking streams",
	       LEGACY_STREAMS);
	__atomic_store_n(&gates[1], 1, __ATOMIC_RELEASE);
	ST(npu_device_synchronize(), NPU_SUCCESS, "device synchronize after the legacy graph");
	tap_ok(*flag == 6.0f, "the legacy-stream graph ran once the last stream was done");
	MUST(npu_graph_exec_destroy(x));
	MUST(npu_graph_destroy(g));
	for (i = 0; i < LEGACY_STREAMS; i++)
		npu_stream_destroy(bs[i]);
	npu_free(scratch);
	npu_host_free(six);
	npu_host_free(flag);
	npu_host_free(gates);
}

/* A graph of more jobs than one submission takes, with more external
 * dependencies than one gate job takes: every one is waited on. 70 event
 * wait roots; the last 10 events are recorded behind a second gate. */
#define WAIT_ROOTS 70
#define WAIT_LATE 10
static void test_many_external(void)
{
	npu_stream_t s, s1, s2;
	npu_event_t ev[WAIT_ROOTS];
	npu_graph_t g;
	npu_graph_exec_t x;
	npu_graph_node_t w[WAIT_ROOTS], joins[WAIT_ROOTS / 10], k;
	npu_kernel_node_params p;
	uint32_t *gates;
	float *flag;
	void *fdev;
	int i, early;

	MUST(npu_host_alloc((void **)&gates, 8, 0));
	MUST(npu_host_alloc((void **)&flag, 4, 0));
	MUST(npu_host_get_device_pointer(&fdev, flag, 0));
	gates[0] = gates[1] = 0;
	*flag = 0;
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&s1, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&s2, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_graph_create(&g, 0));
	for (i = 0; i < WAIT_ROOTS; i++) {
		MUST(npu_event_create(&ev[i], NPU_EVENT_DISABLE_TIMING));
		MUST(npu_graph_add_event_wait_node(&w[i], g, NULL, 0, ev[i]));
	}
	for (i = 0; i < WAIT_ROOTS / 10; i++)
		MUST(npu_graph_add_empty_node(&joins[i], g, &w[10 * i], 10));
	p = kfill(fdev, 1, 8.0f);
	MUST(npu_graph_add_kernel_node(&k, g, joins, WAIT_ROOTS / 10, &p));
	MUST(npu_graph_instantiate(&x, g, 0));
	/* The first gate is opened as soon as the graph is launched. The
	 * second is a host function, so that no job waits on a ring for the
	 * whole check (over the driver's 2 s job timeout the wait fails and
	 * the late events signal early). */
	MUST(npu_stream_wait_value32(s1, &gates[0], 1, 0));
	MUST(npu_launch_host_func(s2, gate_host, &gates[1]));
	for (i = 0; i < WAIT_ROOTS; i++)
		MUST(npu_event_record(ev[i], i < WAIT_ROOTS - WAIT_LATE ? s1 : s2));
	MUST(npu_graph_launch(x, s));
	__atomic_store_n(&gates[0], 1, __ATOMIC_RELEASE);
	early = flag_within(flag, 8.0f, GATE_POLL_MS);
	tap_ok(!early, "a packed graph waits for all %d events it waits on", WAIT_ROOTS);
	__atomic_store_n(&gates[1], 1, __ATOMIC_RELEASE);
	ST(npu_stream_synchronize(s), NPU_SUCCESS, "the packed graph completes");
	tap_ok(*flag == 8.0f, "and ran after the last event");
	MUST(npu_stream_synchronize(s1));
	MUST(npu_stream_synchronize(s2));
	MUST(npu_graph_exec_destroy(x));
	MUST(npu_graph_destroy(g));
	for (i = 0; i < WAIT_ROOTS; i++)
		npu_event_destroy(ev[i]);
	npu_stream_destroy(s);
	npu_stream_destroy(s1);
	npu_stream_destroy(s2);
	npu_host_free(flag);
	npu_host_free(gates);
}

struct sync_arg {
	npu_stream_t s;
	npu_status_t st;
};

static void *sync_thread(void *arg)
{
	struct sync_arg *a = arg;

	a->st = npu_stream_synchronize(a->s);
	return NULL;
}

/* Synchronize s on another thread; whether it returned within ms. */
static int sync_within(npu_stream_t s, int ms, npu_status_t *st, pthread_t *th)
{
	static struct sync_arg sa;
	struct timespec dl;

	sa.s = s;
	sa.st = NPU_ERROR_OS;
	MUST(pthread_create(th, NULL, sync_thread, &sa) ? NPU_ERROR_OS : NPU_SUCCESS);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_nsec += (long)(ms % 1000) * 1000000;
	dl.tv_sec += ms / 1000 + dl.tv_nsec / 1000000000;
	dl.tv_nsec %= 1000000000;
	if (pthread_timedjoin_np(*th, NULL, &dl))
		return 0;
	*st = sa.st;
	return 1;
}

/* Executable graphs have their own queues: a graph on one stream does not
 * wait behind another graph's job that waits for an event. */
static void test_independent_graphs(void)
{
	npu_device_prop prop;
	npu_stream_t sa, sb, sg;
	npu_event_t e;
	npu_graph_t ga, gb;
	npu_graph_exec_t xa, xb;
	npu_graph_node_t w, ka, kb;
	npu_kernel_node_params p;
	npu_status_t st = NPU_ERROR_OS;
	uint32_t *gate;
	void *da, *db, *scratch;
	pthread_t th;
	int done;

	MUST(npu_device_get_properties(&prop, 0));
	if (!prop.copy_rings) {
		tap_skip("independent graphs: the device has no copy rings");
		return;
	}
	MUST(npu_host_alloc((void **)&gate, 4, 0));
	*gate = 0;
	MUST(npu_malloc(&da, N * 4));
	MUST(npu_malloc(&db, N * 4));
	MUST(npu_malloc(&scratch, 4096));
	MUST(npu_stream_create(&sa, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&sb, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&sg, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_event_create(&e, NPU_EVENT_DISABLE_TIMING));
	MUST(npu_graph_create(&ga, 0));
	MUST(npu_graph_add_event_wait_node(&w, ga, NULL, 0, e));
	p = kfill(da, N, 1.0f);
	MUST(npu_graph_add_kernel_node(&ka, ga, &w, 1, &p));
	MUST(npu_graph_instantiate(&xa, ga, 0));
	MUST(npu_graph_create(&gb, 0));
	p = kfill(db, N, 2.0f);
	MUST(npu_graph_add_kernel_node(&kb, gb, NULL, 0, &p));
	MUST(npu_graph_instantiate(&xb, gb, 0));
	/* the event is recorded behind a gate on a copy ring; the graphs
	 * run on compute rings */
	copy_gate(sg, gate, scratch);
	MUST(npu_event_record(e, sg));
	MUST(npu_graph_launch(xa, sa));
	MUST(npu_graph_launch(xb, sb));
	done = sync_within(sb, 1500, &st, &th);
	tap_ok(done && st == NPU_SUCCESS,
	       "a graph completes while another graph waits for an event");
	__atomic_store_n(gate, 1, __ATOMIC_RELEASE);
	if (!done)
		pthread_join(th, NULL);
	MUST(npu_stream_synchronize(sa));
	tap_ok(dev_all(da, N, 1.0f) && dev_all(db, N, 2.0f), "both graphs ran");
	MUST(npu_stream_synchronize(sg));
	MUST(npu_graph_exec_destroy(xa));
	MUST(npu_graph_exec_destroy(xb));
	MUST(npu_graph_destroy(ga));
	MUST(npu_graph_destroy(gb));
	npu_event_destroy(e);
	npu_stream_destroy(sa);
	npu_stream_destroy(sb);
	npu_stream_destroy(sg);
	npu_free(da);
	npu_free(db);
	npu_free(scratch);
	npu_host_free(gate);
}

/* A launch whose first submission the driver refuses: the call returns the
 * error, and later waits on the stream return it too instead of waiting
 * for the rest of the launch (its host node and the jobs after it) for
 * ever. Leaves the device's sticky error, cleared by npu_device_reset. */
static void test_failed_first_submit(void)
{
	npu_stream_t s;
	npu_graph_t g;
	npu_graph_exec_t x;
	npu_graph_node_t a, h, b;
	npu_kernel_node_params p;
	struct sync_arg sa;
	struct timespec dl;
	pthread_t th;
	void *d;
	int joined;

	MUST(npu_malloc(&d, N * 4));
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_graph_create(&g, 0));
	p = kfill(d, N, 1.0f);
	MUST(npu_graph_add_kernel_node(&a, g, NULL, 0, &p));
	MUST(npu_graph_add_host_node(&h, g, &a, 1, nop_host, NULL));
	p = kfill(d, N, 2.0f);
	MUST(npu_graph_add_kernel_node(&b, g, &h, 1, &p));
	MUST(npu_graph_instantiate(&x, g, 0));
	MUST(npu_device_synchronize());
	atomic_store(&fail_submits, 1);
	ST(npu_graph_launch(x, s), NPU_ERROR_LAUNCH_FAILURE,
	   "a launch whose submission the driver refuses fails");
	atomic_store(&fail_submits, 0);
	sa.s = s;
	sa.st = NPU_SUCCESS;
	MUST(pthread_create(&th, NULL, sync_thread, &sa) ? NPU_ERROR_OS : NPU_SUCCESS);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 20;
	joined = pthread_timedjoin_np(th, NULL, &dl) == 0;
	tap_ok(joined, "synchronizing the stream afterwards returns (no wedge)");
	if (!joined) {
		tap_diag("  the synchronize is still blocked after 20 s");
		exit(tap_done() | 1);
	}
	tap_ok(sa.st == NPU_ERROR_LAUNCH_FAILURE, "it returns the launch failure (%s)",
	       npu_status_name(sa.st));
	ST(npu_device_reset(), NPU_SUCCESS, "npu_device_reset clears the error");
	ST(npu_graph_launch(x, s), NPU_SUCCESS, "the graph launches again");
	ST(npu_stream_synchronize(s), NPU_SUCCESS, "and completes");
	tap_ok(dev_all(d, N, 2.0f), "with its nodes in order");
	MUST(npu_graph_exec_destroy(x));
	MUST(npu_graph_destroy(g));
	npu_stream_destroy(s);
	npu_free(d);
}

/* More nodes than the 4,096 graphs were once limited to: a memset, a
 * chain of NOP kernels, then y += x; instantiated and launched. */
static void test_huge_chain(void)
{
	const int len = 5000;
	npu_graph_node_t prev = NULL, n;
	npu_graph_exec_t x;
	npu_stream_t s;
	npu_graph_t g;
	npu_status_t st;
	int i;

	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_graph_create(&g, 0));
	st = npu_graph_add_memset_node(&prev, g, NULL, 0, dy, 0, N * 4);
	for (i = 1; i < len - 1 && !st; i++) {
		npu_kernel_node_params p;

		memset(&p, 0, sizeof(p));
		p.kernel = NPU_K_NOP;
		p.grid = npu_grid(1, 1, 1);
		st = npu_graph_add_kernel_node(&n, g, &prev, 1, &p);
		prev = n;
	}
	if (!st) {
		npu_kernel_node_params p = kscale(dx, dy, 1.0f, 1);

		p.kernel = NPU_K_SAXPY_F32;	/* y += 1 * x */
		st = npu_graph_add_kernel_node(&n, g, &prev, 1, &p);
	}
	tap_ok(st == NPU_SUCCESS, "a graph of %d nodes can be built (%s)", len,
	       npu_status_name(st));
	if (!st)
		st = npu_graph_instantiate(&x, g, 0);
	tap_ok(st == NPU_SUCCESS, "... and instantiated (%s)", npu_status_name(st));
	if (!st) {
		init_inputs();
		MUST(npu_memcpy(dx, hx, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
		MUST(npu_memcpy(dy, hy, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
		MUST(npu_graph_launch(x, s));
		MUST(npu_stream_synchronize(s));
		MUST(npu_memcpy(hout, dy, N * 4, NPU_MEMCPY_DEVICE_TO_HOST));
		tap_ok(same(hout, hx), "... and its %d nodes ran in order (y = 0, then y += x)",
		       len);
		MUST(npu_graph_exec_destroy(x));
	} else {
		tap_ok(0, "... and its %d nodes ran in order (not launched)", len);
	}
	MUST(npu_graph_destroy(g));
	MUST(npu_stream_destroy(s));
}

static void test_errors(void)
{
	npu_graph_t g;
	npu_graph_node_t a, b;
	npu_kernel_node_params p = kspin(1000);
	float pageable[16];

	MUST(npu_graph_create(&g, 0));
	MUST(npu_graph_add_kernel_node(&a, g, NULL, 0, &p));
	MUST(npu_graph_add_kernel_node(&b, g, &a, 1, &p));
	ST(npu_graph_add_dependencies(g, &b, &a, 1), NPU_ERROR_INVALID_VALUE,
	   "an edge closing a cycle is refused");
	{
		/* all or nothing: edge a -> c is not kept when b -> a fails */
		npu_graph_node_t c, from[2], to[2];

		MUST(npu_graph_add_kernel_node(&c, g, NULL, 0, &p));
		from[0] = a;
		to[0] = c;
		from[1] = b;
		to[1] = a;
		ST(npu_graph_add_dependencies(g, from, to, 2), NPU_ERROR_INVALID_VALUE,
		   "a list of edges with one closing a cycle is refused");
		ST(npu_graph_add_dependencies(g, &c, &a, 1), NPU_SUCCESS,
		   "... and added none of its edges (c -> a makes no cycle)");
	}
	ST(npu_graph_add_memcpy_node(&a, g, NULL, 0, dx, pageable, 64, NPU_MEMCPY_DEFAULT),
	   NPU_ERROR_INVALID_VALUE, "pageable memory in a memcpy node is refused");
	p.nargs = 3;
	ST(npu_graph_add_kernel_node(&a, g, NULL, 0, &p), NPU_ERROR_INVALID_CONFIGURATION,
	   "wrong argument count in a kernel node");
	ST(npu_graph_launch(NULL, NULL), NPU_ERROR_INVALID_HANDLE, "launch of a NULL exec");
	MUST(npu_graph_destroy(g));
	ST(npu_graph_destroy(g), NPU_ERROR_INVALID_HANDLE, "destroy twice");
}

int main(void)
{
	tap_need_device();
	MUST(npu_host_alloc((void **)&hx, N * 4, 0));
	MUST(npu_host_alloc((void **)&hy, N * 4, 0));
	MUST(npu_host_alloc((void **)&hout, N * 4, 0));
	MUST(npu_malloc(&dx, N * 4));
	MUST(npu_malloc(&dy, N * 4));
	MUST(npu_malloc(&dz, N * 4));
	MUST(npu_malloc(&dw, N * 4));
	test_diamond();
	test_fan();
	test_twice();
	test_host_event();
	test_capture();
	test_long_chain();
	test_huge_chain();
	test_merged_chain();
	test_prebuilt();
	test_errors();
	test_host_rounds();
	test_exec_update_later();
	test_exec_update_uq();
	test_launch_behind_host_func();
	test_event_destroyed_in_launch();
	test_legacy_many();
	test_many_external();
	test_independent_graphs();
	test_failed_first_submit();
	test_merged_fault(true);	/* last: they leave faults in the */
	test_merged_fault(false);	/* driver's log */
	return tap_done();
}
