/* SPDX-License-Identifier: MIT */
/*
 * lib_userq: streams on user-mode queues (NPU_STREAM_USER_QUEUE). A
 * launch, copy or memset is packets in the stream's own ring and one
 * doorbell store: this program defines ioctl() itself (linked with
 * -rdynamic, so libdrm's calls reach it) and counts the calls. Events are
 * memory signals (a query reads memory), a stream waits for another's
 * event on the device, host functions release the queue by writing
 * memory, and user-queue work mixes with kernel-queue streams and
 * exported events both ways.
 */
#include "tap.h"

#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>

#include <drm/npu_accel.h>

#include "../common/ioctl_count.h"

#define N 4096

static bool all_are(const float *v, size_t n, float want)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] != want)
			return false;
	return true;
}

static void fill(float *y, float value, npu_stream_t s)
{
	uint64_t a[3] = { npu_arg_ptr(y), N, npu_arg_f32(value) };

	MUST(npu_launch(NPU_K_FILL_F32, npu_grid(4, 1, 1), a, 3, s,
			NPU_LAUNCH_ASYNC));
}

static void scale(const float *x, float *y, float f, npu_stream_t s)
{
	uint64_t a[4] = { npu_arg_ptr(x), npu_arg_ptr(y), N, npu_arg_f32(f) };

	MUST(npu_launch(NPU_K_SCALE_F32, npu_grid(4, 1, 1), a, 4, s,
			NPU_LAUNCH_ASYNC));
}

static unsigned stream_kind(npu_stream_t s)
{
	unsigned f = 0;

	MUST(npu_stream_get_flags(s, &f));
	return f & (NPU_STREAM_USER_QUEUE | NPU_STREAM_KERNEL_QUEUE);
}

static volatile int host_calls;

static void count_call(void *user)
{
	(void)user;
	host_calls++;
}

/* A launch + synchronize on s. */
static void fill_sync(npu_stream_t s, float *d)
{
	fill(d, 1.0f, s);
	MUST(npu_stream_synchronize(s));
}

/* A host function + synchronize on s. */
static void host_func_sync(npu_stream_t s, float *d)
{
	(void)d;
	MUST(npu_launch_host_func(s, count_call, NULL));
	MUST(npu_stream_synchronize(s));
}

/* The fewest system calls of 20 runs of op: a round trip whose
 * synchronize sees the signal while it spins makes none, but a slow host
 * may outlast the spin, and then it sleeps in an ioctl. */
static unsigned long fewest_syscalls(void (*op)(npu_stream_t, float *),
				     npu_stream_t s, float *d)
{
	unsigned long before, least = ULONG_MAX;
	int i;

	for (i = 0; i < 20; i++) {
		before = ioctls();
		op(s, d);
		if (ioctls() - before < least)
			least = ioctls() - before;
	}
	return least;
}

/* After what `after` names, a launch + synchronize and a host function +
 * synchronize on user-queue stream s still make no system call. */
static void round_trips_without_syscalls(npu_stream_t s, float *d,
					 const char *after)
{
	unsigned long least = fewest_syscalls(fill_sync, s, d);

	tap_ok(least == 0, "after %s, a launch + synchronize round trip: %lu "
	       "system calls (the fewest of 20)", after, least);
	host_calls = 0;
	least = fewest_syscalls(host_func_sync, s, d);
	tap_ok(least == 0 && host_calls == 20, "after %s, a host function + "
	       "synchronize: %lu system calls (the fewest of 20), %d calls",
	       after, least, host_calls);
}

/* Launches, copies, a memset and an event record: no system call; the
 * synchronize and the results. */
static void launch_without_syscalls(float *d, float *h)
{
	npu_stream_t s, k;
	npu_event_t e;
	unsigned long before, after, least;
	int i;

	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING |
			       NPU_STREAM_USER_QUEUE, 0));
	tap_ok(stream_kind(s) == NPU_STREAM_USER_QUEUE,
	       "a stream asked for a user queue runs on one");
	MUST(npu_event_create(&e, NPU_EVENT_DISABLE_TIMING));
	/* warm: the first enqueue may map things, and the first copy makes
	 * the stream's copy-class queue */
	fill(d, 1.0f, s);
	MUST(npu_memset_async(d + 2 * N, 0, sizeof(float), s));
	MUST(npu_stream_synchronize(s));

	/* a round trip asks the driver nothing: no queue halted, and a
	 * fault of a kernel-queue job (the warm-up runs one when
	 * NPU_QUEUES=kernel) is not this stream's to report */
	least = fewest_syscalls(fill_sync, s, d);
	tap_ok(least == 0, "a launch + synchronize round trip: %lu system "
	       "calls (the fewest of 20)", least);
	/* the same after a job on a kernel-queue stream, for a host
	 * function too (its thread looks for faults before it runs it) */
	MUST(npu_stream_create(&k, NPU_STREAM_NON_BLOCKING |
			       NPU_STREAM_KERNEL_QUEUE, 0));
	fill_sync(k, d);
	round_trips_without_syscalls(s, d, "a kernel-queue job");
	MUST(npu_stream_destroy(k));
	/* the same after user-queue streams were made and destroyed: the
	 * driver stops a destroyed queue (STOPPED), which is no fault */
	for (i = 0; i < 3; i++) {
		npu_stream_t u;

		MUST(npu_stream_create(&u, NPU_STREAM_NON_BLOCKING |
				       NPU_STREAM_USER_QUEUE, 0));
		if (i)
			fill_sync(u, d);
		MUST(npu_stream_destroy(u));
	}
	round_trips_without_syscalls(s, d, "user-queue streams were destroyed");

	before = ioctls();
	for (i = 0; i < 100; i++)
		fill(d, (float)i, s);
	scale(d, d + N, 2.0f, s);
	MUST(npu_memset_async(d + 2 * N, 0, N * sizeof(float), s));
	MUST(npu_memcpy_async(h, d + N, N * sizeof(float),
			      NPU_MEMCPY_DEVICE_TO_HOST, s));
	MUST(npu_event_record(e, s));
	after = ioctls();
	tap_ok(after == before,
	       "100 launches, a memset, a copy and a record: %lu system calls",
	       after - before);
	MUST(npu_stream_synchronize(s));
	tap_ok(all_are(h, N, 198.0f), "the results are in order (99 * 2)");
	/* copies and launches interleaved: the stream's two queues keep its
	 * order on the device (memory signal and waits), no system call */
	before = ioctls();
	for (i = 0; i < 20; i++) {
		fill(d, (float)i, s);
		MUST(npu_memcpy_async(d + N, d, N * sizeof(float),
				      NPU_MEMCPY_DEVICE_TO_DEVICE, s));
		scale(d + N, d + 2 * N, 2.0f, s);
		MUST(npu_memset_async(d, 0, N * sizeof(float), s));
	}
	MUST(npu_memcpy_async(h, d + 2 * N, N * sizeof(float),
			      NPU_MEMCPY_DEVICE_TO_HOST, s));
	after = ioctls();
	tap_ok(after == before,
	       "20 rounds of launch, copy, launch, memset: %lu system calls",
	       after - before);
	MUST(npu_stream_synchronize(s));
	tap_ok(all_are(h, N, 38.0f), "... in order (19 * 2)");
	before = ioctls();
	ST(npu_event_query(e), NPU_SUCCESS, "the record is complete");
	tap_ok(ioctls() - before <= 1,
	       "an event query after the synchronize: %lu system calls",
	       ioctls() - before);
	MUST(npu_event_destroy(e));
	MUST(npu_stream_destroy(s));
}

/* A record behind a gate: pending to a query that reads memory, done once
 * the gate opens; another stream's wait for it holds that stream on the
 * device. */
static void events_across_streams(float *d, float *h, uint32_t *gate)
{
	npu_stream_t a, b;
	npu_event_t e;
	unsigned long before;

	MUST(npu_stream_create(&a, NPU_STREAM_NON_BLOCKING |
			       NPU_STREAM_USER_QUEUE, 0));
	MUST(npu_stream_create(&b, NPU_STREAM_NON_BLOCKING |
			       NPU_STREAM_USER_QUEUE, 0));
	MUST(npu_event_create(&e, 0));
	/* b's first copy makes its copy-class queue (system calls) */
	MUST(npu_memset_async(d + 2 * N, 0, sizeof(float), b));
	MUST(npu_stream_synchronize(b));
	*gate = 0;
	fill(d, 3.0f, a);
	MUST(npu_stream_wait_value32(a, gate, 1, 0));
	fill(d, 5.0f, a);
	MUST(npu_event_record(e, a));
	before = ioctls();
	ST(npu_event_query(e), NPU_ERROR_NOT_READY,
	   "a record behind a closed gate is pending");
	tap_ok(ioctls() == before, "the query made no system call");
	MUST(npu_stream_wait_event(b, e, 0));
	MUST(npu_memcpy_async(h, d, N * sizeof(float),
			      NPU_MEMCPY_DEVICE_TO_HOST, b));
	tap_ok(ioctls() == before,
	       "a wait for another queue's event and a copy: no system call");
	usleep(20000);
	ST(npu_stream_query(b), NPU_ERROR_NOT_READY,
	   "the waiting stream waits for the gate");
	__atomic_store_n(gate, 1, __ATOMIC_RELEASE);
	MUST(npu_stream_synchronize(b));
	tap_ok(all_are(h, N, 5.0f), "the copy after the wait saw the record's work");
	ST(npu_event_synchronize(e), NPU_SUCCESS, "the event synchronizes");
	ST(npu_event_query(e), NPU_SUCCESS, "and is complete");
	MUST(npu_event_destroy(e));
	MUST(npu_stream_destroy(a));
	MUST(npu_stream_destroy(b));
}

/*
 * b waits for an event of a, and a is destroyed before b's wait runs (b is
 * held at a gate), then c takes new queue memory: b's wait still sees a's
 * record (a's signal outlives a while b may read it) and b goes on.
 */
static void waiter_outlives_recorder(float *d, float *h, uint32_t *gate)
{
	npu_stream_t a, b, c;
	npu_event_t e;
	npu_status_t st = NPU_ERROR_NOT_READY;
	int ms;

	MUST(npu_stream_create(&a, NPU_STREAM_NON_BLOCKING |
			       NPU_STREAM_USER_QUEUE, 0));
	MUST(npu_stream_create(&b, NPU_STREAM_NON_BLOCKING |
			       NPU_STREAM_USER_QUEUE, 0));
	MUST(npu_event_create(&e, NPU_EVENT_DISABLE_TIMING));
	gate[0] = 0;
	gate[1] = 0;
	MUST(npu_stream_wait_value32(a, &gate[0], 1, 0));
	fill(d, 7.0f, a);
	MUST(npu_event_record(e, a));
	MUST(npu_stream_wait_value32(b, &gate[1], 1, 0));
	MUST(npu_stream_wait_event(b, e, 0));
	MUST(npu_memcpy_async(h, d, N * sizeof(float),
			      NPU_MEMCPY_DEVICE_TO_HOST, b));
	__atomic_store_n(&gate[0], 1, __ATOMIC_RELEASE);
	MUST(npu_stream_destroy(a));
	MUST(npu_stream_create(&c, NPU_STREAM_NON_BLOCKING |
			       NPU_STREAM_USER_QUEUE, 0));
	fill(d + N, 1.0f, c);
	MUST(npu_stream_synchronize(c));
	__atomic_store_n(&gate[1], 1, __ATOMIC_RELEASE);
	for (ms = 0; ms < 10000 && st == NPU_ERROR_NOT_READY; ms++) {
		st = npu_stream_query(b);
		if (st == NPU_ERROR_NOT_READY)
			usleep(1000);
	}
	if (st != NPU_SUCCESS) {
		/* b would never finish: its destroy would not return */
		tap_ok(0, "a stream waiting on a destroyed stream's event goes "
		       "on (query: %s after %d ms)", npu_status_string(st), ms);
		exit(tap_done());
	}
	tap_ok(all_are(h, N, 7.0f),
	       "a stream waiting on a destroyed stream's event goes on, "
	       "after its record's work");
	MUST(npu_event_destroy(e));
	MUST(npu_stream_destroy(b));
	MUST(npu_stream_destroy(c));
}

struct hf {
	float *h;
	float seen;
	int calls;
};

static void host_fn(void *p)
{
	struct hf *x = p;

	x->seen = x->h[0];
	x->h[0] = 11.0f;
	x->calls++;
}

/* A host function runs after the work before it and before the work
 * after it. */
static void host_function_order(float *d, float *h)
{
	npu_stream_t s;
	struct hf x = { .h = h };

	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING |
			       NPU_STREAM_USER_QUEUE, 0));
	fill(d, 7.0f, s);
	MUST(npu_memcpy_async(h, d, N * sizeof(float),
			      NPU_MEMCPY_DEVICE_TO_HOST, s));
	MUST(npu_launch_host_func(s, host_fn, &x));
	MUST(npu_memcpy_async(d + N, h, sizeof(float),
			      NPU_MEMCPY_HOST_TO_DEVICE, s));
	MUST(npu_memcpy_async(h + 1, d + N, sizeof(float),
			      NPU_MEMCPY_DEVICE_TO_HOST, s));
	MUST(npu_stream_synchronize(s));
	tap_ok(x.calls == 1 && x.seen == 7.0f,
	       "the host function saw the copy before it (%g)", x.seen);
	tap_ok(h[1] == 11.0f, "the copy after it saw its write (%g)", h[1]);
	MUST(npu_stream_destroy(s));
}

/* User-queue and kernel-queue streams wait for each other's events, and
 * an event recorded on a user queue exports as a sync file. */
static void mixed_with_kernel_queues(float *d, float *h, uint32_t *gate)
{
	npu_stream_t u, k;
	npu_event_t eu, ek;
	struct pollfd pfd;
	int fd = -1;

	MUST(npu_stream_create(&u, NPU_STREAM_NON_BLOCKING |
			       NPU_STREAM_USER_QUEUE, 0));
	MUST(npu_stream_create(&k, NPU_STREAM_NON_BLOCKING |
			       NPU_STREAM_KERNEL_QUEUE, 0));
	tap_ok(stream_kind(k) == NPU_STREAM_KERNEL_QUEUE,
	       "a stream asked for kernel queues runs on them");
	MUST(npu_event_create(&eu, 0));
	MUST(npu_event_create(&ek, 0));

	/* user queue -> kernel queue, behind a gate */
	*gate = 0;
	MUST(npu_stream_wait_value32(u, gate, 1, 0));
	fill(d, 21.0f, u);
	MUST(npu_event_record(eu, u));
	MUST(npu_event_export_fd(eu, &fd));
	pfd.fd = fd;
	pfd.events = POLLIN;
	tap_ok(fd >= 0 && poll(&pfd, 1, 0) == 0,
	       "the exported record is pending behind the gate");
	MUST(npu_stream_wait_event(k, eu, 0));
	MUST(npu_memcpy_async(h, d, N * sizeof(float),
			      NPU_MEMCPY_DEVICE_TO_HOST, k));
	usleep(20000);
	ST(npu_stream_query(k), NPU_ERROR_NOT_READY,
	   "the kernel-queue stream waits for the user queue's event");
	__atomic_store_n(gate, 1, __ATOMIC_RELEASE);
	MUST(npu_stream_synchronize(k));
	tap_ok(all_are(h, N, 21.0f), "and then sees its work");
	tap_ok(fd >= 0 && poll(&pfd, 1, 5000) == 1,
	       "the exported sync file signals");
	if (fd >= 0)
		close(fd);

	/* kernel queue -> user queue */
	*gate = 0;
	MUST(npu_stream_wait_value32(k, gate, 1, 0));
	fill(d, 42.0f, k);
	MUST(npu_event_record(ek, k));
	MUST(npu_stream_wait_event(u, ek, 0));
	MUST(npu_memcpy_async(h, d, N * sizeof(float),
			      NPU_MEMCPY_DEVICE_TO_HOST, u));
	usleep(20000);
	ST(npu_stream_query(u), NPU_ERROR_NOT_READY,
	   "the user queue waits for the kernel-queue stream's event");
	__atomic_store_n(gate, 1, __ATOMIC_RELEASE);
	MUST(npu_stream_synchronize(u));
	tap_ok(all_are(h, N, 42.0f), "and then sees its work");

	MUST(npu_device_synchronize());
	MUST(npu_event_destroy(eu));
	MUST(npu_event_destroy(ek));
	MUST(npu_stream_destroy(u));
	MUST(npu_stream_destroy(k));
}

/* A user queue waits for a kernel-queue event whose job the submit thread
 * has taken but the driver does not have yet: a slow SUBMIT, as on a
 * debug kernel. The wait must wait for the point to be submitted. */
static void wait_for_point_in_submission(float *d, float *h)
{
	npu_stream_t u, k;
	npu_event_t ek;

	MUST(npu_stream_create(&u, NPU_STREAM_NON_BLOCKING |
			       NPU_STREAM_USER_QUEUE, 0));
	MUST(npu_stream_create(&k, NPU_STREAM_NON_BLOCKING |
			       NPU_STREAM_KERNEL_QUEUE, 0));
	MUST(npu_event_create(&ek, 0));
	MUST(npu_stream_synchronize(k));
	__atomic_store_n(&ioctl_slow_us, 300000, __ATOMIC_RELAXED);
	__atomic_store_n(&ioctl_slow_request, DRM_IOCTL_NPU_SUBMIT,
			 __ATOMIC_RELAXED);
	fill(d, 7.0f, k);
	MUST(npu_event_record(ek, k));
	usleep(50000);	/* the submit thread is inside the slow SUBMIT */
	ST(npu_stream_wait_event(u, ek, 0), NPU_SUCCESS,
	   "a user queue waits for an event whose SUBMIT is under way");
	__atomic_store_n(&ioctl_slow_request, 0, __ATOMIC_RELAXED);
	MUST(npu_memcpy_async(h, d, N * sizeof(float),
			      NPU_MEMCPY_DEVICE_TO_HOST, u));
	MUST(npu_stream_synchronize(u));
	tap_ok(all_are(h, N, 7.0f), "and then sees its work");
	MUST(npu_device_synchronize());
	MUST(npu_event_destroy(ek));
	MUST(npu_stream_destroy(u));
	MUST(npu_stream_destroy(k));
}

/*
 * Streams made with neither queue flag, and the legacy stream, run on user
 * queues: their launches make no system call. NPU_QUEUES=kernel (read when
 * the device is opened, so in a child: this program run again with
 * "--default-kind") puts them on kernel queues, whose jobs go through
 * SUBMIT; any other value is an error that names the setting.
 */
static void default_queue_kind(float *d)
{
	static const char *const env[] = { "kernel", "bogus" };
	npu_stream_t s;
	unsigned long before;
	int i, k;

	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	fill(d, 1.0f, s);
	fill(d, 2.0f, NPU_STREAM_LEGACY);
	MUST(npu_device_synchronize());
	before = ioctls();
	for (i = 0; i < 10; i++) {
		fill(d, (float)i, s);
		fill(d, (float)i, NPU_STREAM_LEGACY);
	}
	tap_ok(ioctls() == before,
	       "by default a stream and the legacy stream are on user queues "
	       "(20 launches: %lu system calls)", ioctls() - before);
	MUST(npu_device_synchronize());
	MUST(npu_stream_destroy(s));
	for (k = 0; k < 2; k++) {
		char out[512] = "";
		char cmd[600];
		FILE *f;
		int st;

		snprintf(cmd, sizeof(cmd),
			 "NPU_QUEUES=%s /proc/%d/exe --default-kind 2>&1",
			 env[k], (int)getpid());
		f = popen(cmd, "r");
		if (!f || !fgets(out, sizeof(out), f))
			strcpy(out, "(no output)\n");
		st = f ? pclose(f) : -1;
		out[strcspn(out, "\n")] = 0;
		if (k == 0)
			tap_ok(st == 0 && !strncmp(out, "submits ", 8) &&
			       strcmp(out, "submits 0"),
			       "NPU_QUEUES=kernel: the default stream's jobs go "
			       "through SUBMIT (%s)", out);
		else
			tap_ok(st != 0 && strstr(out, "NPU_QUEUES=bogus") &&
			       strstr(out, "user or kernel"),
			       "NPU_QUEUES=bogus: an error that names the "
			       "setting (%s)", out);
	}
}

/* The child of default_queue_kind: SUBMITs for 10 launches on a stream
 * made with neither flag, or the library's error. */
static int default_kind_child(void)
{
	npu_device_prop p;
	npu_stream_t s;
	float *d;
	int i;

	if (npu_device_get_properties(&p, 0) != NPU_SUCCESS ||
	    npu_malloc((void **)&d, N * sizeof(float)) != NPU_SUCCESS ||
	    npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0) != NPU_SUCCESS) {
		printf("error: %s\n", npu_last_error_message());
		return 1;
	}
	ioctl_counted_request = DRM_IOCTL_NPU_SUBMIT;
	for (i = 0; i < 10; i++)
		fill(d, (float)i, s);
	if (npu_stream_synchronize(s) != NPU_SUCCESS) {
		printf("error: %s\n", npu_last_error_message());
		return 1;
	}
	printf("submits %lu\n", __atomic_load_n(&n_counted, __ATOMIC_RELAXED));
	MUST(npu_stream_destroy(s));
	MUST(npu_free(d));
	return 0;
}

/* A graph of device nodes launched on a user-queue stream is one INDIRECT
 * to its command slot between the stream's waits and signal: no system
 * call, in stream order with the stream's launches and an event record;
 * then on a kernel-queue stream and back. */
static void graph_add_node(npu_graph_t g, npu_graph_node_t *n,
			   npu_graph_node_t *dep, npu_kernel_t k,
			   uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	npu_kernel_node_params p;

	memset(&p, 0, sizeof(p));
	p.kernel = k;
	p.grid = npu_grid(4, 1, 1);
	p.nargs = 4;
	p.args[0] = a0;
	p.args[1] = a1;
	p.args[2] = a2;
	p.args[3] = a3;
	MUST(npu_graph_add_kernel_node(n, g, dep, dep ? 1 : 0, &p));
}

static void saxpy(const float *x, float *y, float a, npu_stream_t s)
{
	uint64_t v[4] = { npu_arg_ptr(x), npu_arg_ptr(y), N, npu_arg_f32(a) };

	MUST(npu_launch(NPU_K_SAXPY_F32, npu_grid(4, 1, 1), v, 4, s,
			NPU_LAUNCH_ASYNC));
}

static void graph_counter(void *p)
{
	__atomic_fetch_add((int *)p, 1, __ATOMIC_RELAXED);
}

static void graph_launch_without_syscalls(float *h, uint32_t *gate)
{
	npu_stream_t s, k, s2;
	npu_event_t e;
	npu_graph_t g, gh;
	npu_graph_exec_t x, xh;
	npu_graph_node_t ms, k1, k2, cp, em, hn, kf;
	unsigned long before, after;
	float *d, *x_, *y, *out, *acc;
	int i, sum = 0, ran = 0;

	MUST(npu_malloc((void **)&d, 4 * N * sizeof(float)));
	x_ = d;
	y = d + N;
	out = d + 2 * N;
	acc = d + 3 * N;
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING |
			       NPU_STREAM_USER_QUEUE, 0));
	MUST(npu_stream_create(&k, NPU_STREAM_NON_BLOCKING |
			       NPU_STREAM_KERNEL_QUEUE, 0));
	MUST(npu_event_create(&e, NPU_EVENT_DISABLE_TIMING));
	/* y = 0; y += x; y += 2x; out = y; (an empty join): out = 3x */
	MUST(npu_graph_create(&g, 0));
	MUST(npu_graph_add_memset_node(&ms, g, NULL, 0, y, 0,
				       N * sizeof(float)));
	graph_add_node(g, &k1, &ms, NPU_K_SAXPY_F32, npu_arg_ptr(x_),
		       npu_arg_ptr(y), N, npu_arg_f32(1.0f));
	graph_add_node(g, &k2, &k1, NPU_K_SAXPY_F32, npu_arg_ptr(x_),
		       npu_arg_ptr(y), N, npu_arg_f32(2.0f));
	MUST(npu_graph_add_memcpy_node(&cp, g, &k2, 1, out, y,
				       N * sizeof(float),
				       NPU_MEMCPY_DEVICE_TO_DEVICE));
	MUST(npu_graph_add_empty_node(&em, g, &cp, 1));
	MUST(npu_graph_instantiate(&x, g, 0));
	/* warm: the first launch and copy map things */
	fill(acc, 0.0f, s);
	fill(x_, 0.0f, s);
	MUST(npu_graph_launch(x, s));
	MUST(npu_memcpy_async(h, acc, N * sizeof(float),
			      NPU_MEMCPY_DEVICE_TO_HOST, s));
	MUST(npu_stream_synchronize(s));

	/* two rounds of three launches and a record: a launch waits for
	 * the one that used its command slot (of 4) before it; after a
	 * synchronize that is known complete */
	after = 0;
	for (i = 1; i <= 6; i++) {
		before = ioctls();
		fill(x_, (float)i, s);
		MUST(npu_graph_launch(x, s));
		saxpy(out, acc, 1.0f, s);	/* acc += 3i */
		if (i % 3 == 0)
			MUST(npu_event_record(e, s));
		after += ioctls() - before;
		sum += 3 * i;
		if (i == 3)	/* (the event's: its next record reuses its
				 * timeline, known complete) */
			MUST(npu_event_synchronize(e));
	}
	tap_ok(after == 0,
	       "6 graph launches (memset, 2 kernels, memcpy, empty) between "
	       "stream launches and two records: %lu system calls", after);
	ST(npu_event_synchronize(e), NPU_SUCCESS,
	   "the record after the graph launches completes");
	ST(npu_event_query(e), NPU_SUCCESS, "and queries complete");
	MUST(npu_memcpy_async(h, acc, N * sizeof(float),
			      NPU_MEMCPY_DEVICE_TO_HOST, s));
	MUST(npu_stream_synchronize(s));
	tap_ok(all_are(h, N, (float)sum),
	       "every launch saw its stream's fill and ran its chain (%d)", sum);
	/* the same exec on a kernel-queue stream after the user-queue
	 * launches, and back */
	fill(x_, 10.0f, s);
	MUST(npu_graph_launch(x, s));
	MUST(npu_event_record(e, s));
	MUST(npu_stream_wait_event(k, e, 0));
	MUST(npu_graph_launch(x, k));	/* the same input: out = 30 again */
	MUST(npu_event_record(e, k));
	MUST(npu_stream_wait_event(s, e, 0));
	saxpy(out, acc, 1.0f, s);
	MUST(npu_memcpy_async(h, acc, N * sizeof(float),
			      NPU_MEMCPY_DEVICE_TO_HOST, s));
	MUST(npu_stream_synchronize(s));
	tap_ok(all_are(h, N, (float)(sum + 30)),
	       "a launch on a kernel-queue stream after them, and back (%d)",
	       sum + 30);
	MUST(npu_stream_synchronize(k));
	/* the next launch on another user-queue stream waits for the one
	 * behind a closed gate (two launches of an exec never overlap): on
	 * the device, through the first stream's memory signal */
	MUST(npu_stream_create(&s2, NPU_STREAM_NON_BLOCKING |
			       NPU_STREAM_USER_QUEUE, 0));
	fill(acc, 0.0f, s2);
	MUST(npu_stream_synchronize(s2));
	*gate = 0;
	MUST(npu_stream_wait_value32(s, gate, 1, 0));
	MUST(npu_graph_launch(x, s));
	before = ioctls();
	MUST(npu_graph_launch(x, s2));
	after = ioctls();
	saxpy(out, acc, 1.0f, s2);
	usleep(20000);
	ST(npu_stream_query(s2), NPU_ERROR_NOT_READY,
	   "a launch on another stream waits for the exec's previous launch");
	__atomic_store_n(gate, 1, __ATOMIC_RELEASE);
	MUST(npu_memcpy_async(h, acc, N * sizeof(float),
			      NPU_MEMCPY_DEVICE_TO_HOST, s2));
	MUST(npu_stream_synchronize(s2));
	tap_ok(after == before && all_are(h, N, 30.0f),
	       "... with no system call (%lu), and runs after it", after - before);
	MUST(npu_stream_synchronize(s));
	MUST(npu_stream_destroy(s2));
	ST(npu_graph_exec_destroy(x), NPU_SUCCESS, "the exec is destroyed");

	/* a host node: the kernel-job path, still in stream order */
	MUST(npu_graph_create(&gh, 0));
	graph_add_node(gh, &kf, NULL, NPU_K_SCALE_F32, npu_arg_ptr(x_),
		       npu_arg_ptr(y), N, npu_arg_f32(4.0f));
	MUST(npu_graph_add_host_node(&hn, gh, &kf, 1, graph_counter, &ran));
	MUST(npu_graph_instantiate(&xh, gh, 0));
	fill(x_, 2.0f, s);
	for (i = 0; i < 3; i++)
		MUST(npu_graph_launch(xh, s));
	MUST(npu_memcpy_async(h, y, N * sizeof(float),
			      NPU_MEMCPY_DEVICE_TO_HOST, s));
	MUST(npu_stream_synchronize(s));
	tap_ok(all_are(h, N, 8.0f) && __atomic_load_n(&ran, __ATOMIC_RELAXED) == 3,
	       "a graph with a host node runs on a user-queue stream (%d runs)",
	       ran);
	MUST(npu_graph_exec_destroy(xh));
	MUST(npu_graph_destroy(g));
	MUST(npu_graph_destroy(gh));
	MUST(npu_event_destroy(e));
	MUST(npu_stream_destroy(s));
	MUST(npu_stream_destroy(k));
	MUST(npu_free(d));
}

/* Launches from four threads, each on its own user-queue stream (two
 * blocking, two not), while other threads record and query events, wait
 * for their streams and the device, copy memory and launch on the legacy
 * stream. Each launcher's sequence is order-sensitive: launch j adds j + 1
 * to y, except every fifth, which negates it, so a lost, doubled or
 * reordered launch leaves another value than the host's replay of the same
 * sequence (integers below 2^24: exact in float). */
#define LAUNCHERS	4
#define THREAD_LAUNCHES	400
#define THREAD_N	64

struct launcher {
	npu_stream_t s;
	float *y, *ones;
	npu_status_t st;
	int failed_at;
};

static volatile int busy_stop;

static npu_status_t launcher_step(struct launcher *l, int j)
{
	uint64_t inc[4] = { npu_arg_ptr(l->ones), npu_arg_ptr(l->y), THREAD_N,
			    npu_arg_f32((float)(j + 1)) };
	uint64_t neg[4] = { npu_arg_ptr(l->y), npu_arg_ptr(l->y), THREAD_N,
			    npu_arg_f32(-1.0f) };

	if (j % 5 == 4)
		return npu_launch(NPU_K_SCALE_F32, npu_grid(1, 1, 1), neg, 4,
				  l->s, NPU_LAUNCH_ASYNC);
	return npu_launch(NPU_K_SAXPY_F32, npu_grid(1, 1, 1), inc, 4, l->s,
			  NPU_LAUNCH_ASYNC);
}

static void *launcher_main(void *p)
{
	struct launcher *l = p;
	int j;

	for (j = 0; j < THREAD_LAUNCHES && !l->st; j++) {
		l->st = launcher_step(l, j);
		l->failed_at = j;
		/* now and then the stream's own synchronize between launches */
		if (!l->st && j % 97 == 96)
			l->st = npu_stream_synchronize(l->s);
	}
	return NULL;
}

struct busy {
	int kind;		/* 0: events, 1: syncs, 2: copies, 3: legacy */
	npu_stream_t s;
	float *d, *h;
	npu_status_t st;
	const char *what;
	unsigned rounds;
};

static void busy_fail(struct busy *b, npu_status_t st, const char *what)
{
	if (!b->st) {
		b->st = st;
		b->what = what;
	}
}

static void *busy_main(void *p)
{
	struct busy *b = p;
	npu_event_t e;
	npu_status_t st;

	if (b->kind == 0 && (st = npu_event_create(&e, NPU_EVENT_DEFAULT))) {
		busy_fail(b, st, "npu_event_create");
		return NULL;
	}
	while (!busy_stop && !b->st) {
		uint64_t a[3] = { npu_arg_ptr(b->d), THREAD_N,
				  npu_arg_f32((float)b->rounds) };

		switch (b->kind) {
		case 0:		/* a launch, a record, queries, a wait */
			st = npu_launch(NPU_K_FILL_F32, npu_grid(1, 1, 1), a, 3,
					b->s, NPU_LAUNCH_ASYNC);
			if (!st)
				st = npu_event_record(e, b->s);
			if (!st) {
				st = npu_event_query(e);
				if (st == NPU_ERROR_NOT_READY)
					st = NPU_SUCCESS;
			}
			if (!st)
				st = npu_event_synchronize(e);
			if (!st && npu_event_query(e) != NPU_SUCCESS)
				st = NPU_ERROR_INVALID_VALUE;	/* a wrong answer */
			if (st)
				busy_fail(b, st, "event record, query, synchronize");
			break;
		case 1:		/* its stream's and the device's synchronize */
			st = npu_launch(NPU_K_FILL_F32, npu_grid(1, 1, 1), a, 3,
					b->s, NPU_LAUNCH_ASYNC);
			if (!st)
				st = npu_stream_synchronize(b->s);
			if (!st && npu_stream_query(b->s) != NPU_SUCCESS)
				st = NPU_ERROR_INVALID_VALUE;	/* a wrong answer */
			if (!st && b->rounds % 8 == 7)
				st = npu_device_synchronize();
			if (st)
				busy_fail(b, st, "stream and device synchronize");
			break;
		case 2:		/* memset, host -> device -> host, checked: a
				 * memset after the copy shows as 0xff bytes */
			for (int i = 0; i < THREAD_N; i++)
				b->h[i] = (float)(b->rounds * THREAD_N + i);
			st = npu_memset_async(b->d, 0xff, THREAD_N * sizeof(float),
					      b->s);
			if (!st)
				st = npu_memcpy_async(b->d, b->h,
						      THREAD_N * sizeof(float),
						      NPU_MEMCPY_HOST_TO_DEVICE, b->s);
			if (!st)
				st = npu_memcpy_async(b->h + THREAD_N, b->d,
						      THREAD_N * sizeof(float),
						      NPU_MEMCPY_DEVICE_TO_HOST, b->s);
			if (!st)
				st = npu_stream_synchronize(b->s);
			if (!st && memcmp(b->h, b->h + THREAD_N,
					  THREAD_N * sizeof(float)))
				st = NPU_ERROR_INVALID_VALUE;	/* a wrong answer */
			if (st)
				busy_fail(b, st, "memset and memcpy round trip");
			break;
		default:	/* the legacy stream: blocking streams wait for it */
			st = npu_launch(NPU_K_FILL_F32, npu_grid(1, 1, 1), a, 3,
					NULL, NPU_LAUNCH_ASYNC);
			if (!st && b->rounds % 4 == 3)
				st = npu_stream_synchronize(NULL);
			if (st)
				busy_fail(b, st, "legacy stream launch");
			break;
		}
		b->rounds++;
	}
	if (b->kind == 0)
		npu_event_destroy(e);
	return NULL;
}

static void threads_on_own_streams(void)
{
	static const char *const kinds[4] = { "events", "synchronizes",
					      "memsets and copies",
					      "legacy launches" };
	struct launcher l[LAUNCHERS];
	struct busy b[4];
	pthread_t lt[LAUNCHERS], bt[4];
	float *ones, *ys, *bd, *bh, want[THREAD_N], host[THREAD_N];
	bool ok = true, kind_ok = true;
	int i, j;

	MUST(npu_malloc((void **)&ones, THREAD_N * sizeof(float)));
	MUST(npu_malloc((void **)&ys, LAUNCHERS * THREAD_N * sizeof(float)));
	MUST(npu_malloc((void **)&bd, 4 * THREAD_N * sizeof(float)));
	MUST(npu_host_alloc((void **)&bh, 8 * THREAD_N * sizeof(float), 0));
	for (i = 0; i < THREAD_N; i++)
		host[i] = 1.0f;
	MUST(npu_memcpy(ones, host, sizeof(host), NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_memset(ys, 0, LAUNCHERS * THREAD_N * sizeof(float)));
	for (i = 0; i < LAUNCHERS; i++) {
		MUST(npu_stream_create(&l[i].s, NPU_STREAM_USER_QUEUE |
				       (i & 1 ? NPU_STREAM_NON_BLOCKING : 0), 0));
		kind_ok &= stream_kind(l[i].s) == NPU_STREAM_USER_QUEUE;
		l[i].y = ys + i * THREAD_N;
		l[i].ones = ones;
		l[i].st = NPU_SUCCESS;
	}
	for (i = 0; i < 4; i++) {
		memset(&b[i], 0, sizeof(b[i]));
		b[i].kind = i;
		b[i].d = bd + i * THREAD_N;
		b[i].h = bh + 2 * i * THREAD_N;
		if (i < 3)
			MUST(npu_stream_create(&b[i].s, NPU_STREAM_USER_QUEUE |
					       NPU_STREAM_NON_BLOCKING, 0));
	}
	tap_ok(kind_ok, "four launcher streams on user queues");
	busy_stop = 0;
	for (i = 0; i < 4; i++)
		if (pthread_create(&bt[i], NULL, busy_main, &b[i]))
			MUST(NPU_ERROR_OS);
	for (i = 0; i < LAUNCHERS; i++)
		if (pthread_create(&lt[i], NULL, launcher_main, &l[i]))
			MUST(NPU_ERROR_OS);
	for (i = 0; i < LAUNCHERS; i++)
		pthread_join(lt[i], NULL);
	busy_stop = 1;
	for (i = 0; i < 4; i++)
		pthread_join(bt[i], NULL);
	for (i = 0; i < LAUNCHERS; i++) {
		ST(l[i].st, NPU_SUCCESS, "launcher %d: %d launches queued", i,
		   THREAD_LAUNCHES);
		if (l[i].st)
			tap_diag("  failed at launch %d", l[i].failed_at);
	}
	/* the host's replay of the sequence, in float as the device */
	for (j = 0; j < THREAD_N; j++)
		want[j] = 0.0f;
	for (i = 0; i < THREAD_LAUNCHES; i++)
		for (j = 0; j < THREAD_N; j++)
			want[j] = i % 5 == 4 ? -want[j] : want[j] + (float)(i + 1);
	for (i = 0; i < LAUNCHERS; i++) {
		MUST(npu_stream_synchronize(l[i].s));
		MUST(npu_memcpy(host, l[i].y, sizeof(host),
				NPU_MEMCPY_DEVICE_TO_HOST));
		ok = !memcmp(host, want, sizeof(host));
		tap_ok(ok, "launcher %d: every launch ran once, in its stream's "
		       "order (y = %g, want %g)", i, host[0], want[0]);
	}
	for (i = 0; i < 4; i++) {
		tap_ok(!b[i].st && b[i].rounds > 0, "alongside: %s, %u rounds, "
		       "each result exact", kinds[i], b[i].rounds);
		if (b[i].st)
			tap_diag("  %s: %s", b[i].what, npu_status_name(b[i].st));
	}
	MUST(npu_device_synchronize());
	for (i = 0; i < LAUNCHERS; i++)
		MUST(npu_stream_destroy(l[i].s));
	for (i = 0; i < 3; i++)
		MUST(npu_stream_destroy(b[i].s));
	MUST(npu_free(ones));
	MUST(npu_free(ys));
	MUST(npu_free(bd));
	MUST(npu_host_free(bh));
}

/* A fault on the legacy stream, which runs on a user queue by default:
 * its queue halts, and npu_device_synchronize reports the fault (the
 * fault check looks at every queue of the device, the legacy stream's
 * too, before it decides no fault can be on record). Before any test
 * that uses kernel queues: after a kernel-queue job every check asks
 * the driver. */
static void legacy_stream_fault(const npu_device_prop *p, float *d)
{
	uint64_t bad = p->va_size ? ((p->va_size - 0x200000) & ~0xfffull) :
		       0x7f00000000ull;

	MUST(npu_launch(NPU_K_TEST_FAULT, npu_grid(1, 1, 1), &bad, 1, NULL,
			NPU_LAUNCH_ASYNC));
	ST(npu_device_synchronize(), NPU_ERROR_ILLEGAL_ADDRESS,
	   "a fault on the legacy stream: device synchronize reports it");
	MUST(npu_device_reset());
	fill(d, 7.0f, NULL);
	ST(npu_device_synchronize(), NPU_SUCCESS,
	   "after the reset the legacy stream runs work again");
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/*
 * 100,000 launches, each polled with npu_stream_query until done: every
 * launch finds its queue going idle, where the owner's wptr store races
 * the device's clearing of WATCHED (hw spec, "Doorbells"). Under one TCG
 * thread the guest's fences are no host fences; before the device read
 * the wptr a second time (hw spec, "Memory order"), a probe doing this lost
 * a launch at its 12,274th round trip (the stream never finished), and a
 * traced one in 2 of 6 runs. A race of host store buffers cannot be
 * staged: this can miss it, not fake it. False if one was lost (the
 * stream is then left as it is).
 */
static bool launch_query_round_trips(void)
{
	const int n = 100000;
	npu_stream_t s;
	int i, lost = -1;

	MUST(npu_stream_create(&s, NPU_STREAM_USER_QUEUE, 0));
	for (i = 0; i < n && lost < 0; i++) {
		double t0;
		npu_status_t st;

		MUST(npu_launch(NPU_K_NOP, npu_grid(1, 1, 1), NULL, 0, s,
				NPU_LAUNCH_ASYNC));
		t0 = now_s();
		while ((st = npu_stream_query(s)) == NPU_ERROR_NOT_READY)
			if (now_s() - t0 > 5.0) {
				lost = i;
				break;
			}
		if (lost < 0 && st != NPU_SUCCESS)
			lost = i;
	}
	tap_ok(lost < 0, "%d launch + query round trips on a user queue: "
	       "none lost going idle (lost: %d)", n, lost);
	if (lost >= 0)
		return false;
	MUST(npu_stream_destroy(s));
	return true;
}

int main(int argc, char **argv)
{
	npu_device_prop p;
	float *d, *h;
	uint32_t *gate;

	if (argc > 1 && !strcmp(argv[1], "--default-kind"))
		return default_kind_child();
	tap_need_device();
	tap_start();
	MUST(npu_device_get_properties(&p, 0));
	if (!(p.features & NPU_FEATURE_USERQ)) {
		npu_stream_t s;

		MUST(npu_stream_create(&s, NPU_STREAM_USER_QUEUE, 0));
		tap_ok(stream_kind(s) == NPU_STREAM_KERNEL_QUEUE,
		       "no user queues: the stream runs on kernel queues");
		MUST(npu_stream_destroy(s));
		return tap_done();
	}
	MUST(npu_malloc((void **)&d, 3 * N * sizeof(float)));
	MUST(npu_host_alloc((void **)&h, N * sizeof(float), 0));
	MUST(npu_host_alloc((void **)&gate, 4096, 0));
	launch_without_syscalls(d, h);
	if (!launch_query_round_trips())
		return tap_done();
	default_queue_kind(d);
	legacy_stream_fault(&p, d);
	events_across_streams(d, h, gate);
	waiter_outlives_recorder(d, h, gate);
	host_function_order(d, h);
	mixed_with_kernel_queues(d, h, gate);
	wait_for_point_in_submission(d, h);
	graph_launch_without_syscalls(h, gate);
	threads_on_own_streams();
	MUST(npu_free(d));
	MUST(npu_host_free(h));
	MUST(npu_host_free(gate));
	return tap_done();
}
