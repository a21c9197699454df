/* SPDX-License-Identifier: MIT */
/*
 * lib_events: CUDA event semantics. Never-recorded events, re-recording,
 * elapsed time from device timestamps (monotone, matches the spin length),
 * cross-stream waits, destroy while waited on, an event as its latest
 * record only, sync_file export/import
 * (in this process and in a fresh process started with fork + exec).
 */
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>

#define SPIN_NS 200000000ull	/* 200 ms device time */
#define N 1024

static int child(int fd)
{
	npu_event_t e;
	npu_status_t st;

	/* a fresh process: its own DRM file and device address space */
	st = npu_event_import_fd(&e, fd);
	if (st)
		return 10;
	st = npu_event_synchronize(e);
	if (st)
		return 11;
	if (npu_event_query(e) != NPU_SUCCESS)
		return 12;
	npu_event_destroy(e);
	return 0;
}

static void test_never_recorded(void)
{
	npu_event_t e, e2;
	float ms;
	int fd;
	npu_stream_t s;

	MUST(npu_event_create(&e, 0));
	MUST(npu_event_create(&e2, 0));
	ST(npu_event_query(e), NPU_SUCCESS, "never-recorded event: query succeeds");
	ST(npu_event_synchronize(e), NPU_SUCCESS,
	   "never-recorded event: synchronize returns at once");
	ST(npu_event_elapsed_time(&ms, e, e2), NPU_ERROR_INVALID_HANDLE,
	   "never-recorded event: elapsed time is an error");
	MUST(npu_stream_create(&s, 0, 0));
	ST(npu_stream_wait_event(s, e, 0), NPU_SUCCESS,
	   "waiting on a never-recorded event is a no-op");
	ST(npu_stream_wait_event(s, e, 1), NPU_ERROR_INVALID_VALUE,
	   "stream_wait_event with unknown flags");
	ST(npu_event_export_fd(e, &fd), NPU_SUCCESS, "export a never-recorded event");
	{
		struct pollfd p = { .fd = fd, .events = POLLIN };

		tap_ok(poll(&p, 1, 0) == 1, "its sync_file is already signalled");
		close(fd);
	}
	MUST(npu_stream_synchronize(s));
	MUST(npu_stream_destroy(s));
	npu_event_destroy(e);
	npu_event_destroy(e2);
}

static void test_timing(void)
{
	npu_stream_t s;
	npu_event_t ev[4], nt;
	struct start_gate g;
	float ms[3], tmp;
	int i, mono = 1;

	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	for (i = 0; i < 4; i++)
		MUST(npu_event_create(&ev[i], 0));
	MUST(npu_event_create(&nt, NPU_EVENT_DISABLE_TIMING | NPU_EVENT_BLOCKING_SYNC));
	start_gate_init(&g, 1);
	start_gate_enter(&g, 0, s);
	MUST(npu_event_record(ev[0], s));
	for (i = 1; i < 4; i++) {
		MUST(spin(s, SPIN_NS / 4 * (uint64_t)i));
		MUST(npu_event_record(ev[i], s));
	}
	MUST(npu_event_record(nt, s));
	ST(npu_event_elapsed_time(&tmp, ev[0], ev[3]), NPU_ERROR_NOT_READY,
	   "elapsed time before completion: not ready");
	tap_ok(start_gate_open(&g), "the stream reached its gate");
	MUST(npu_event_synchronize(ev[3]));
	for (i = 0; i < 3; i++) {
		MUST(npu_event_elapsed_time(&ms[i], ev[0], ev[i + 1]));
		if (i)
			mono &= ms[i] > ms[i - 1];
	}
	tap_ok(mono, "elapsed times are monotone: %.2f < %.2f < %.2f ms",
	       ms[0], ms[1], ms[2]);
	/* spins of 50, 100, 150 ms device time -> >= 300 ms */
	tap_ok(ms[2] >= 0.99f * (float)(SPIN_NS / 4 * 6) / 1e6f,
	       "elapsed time is device time: %.2f ms for 300 ms of spin", ms[2]);
	MUST(npu_event_elapsed_time(&tmp, ev[3], ev[0]));
	tap_ok(tmp < 0 && feq(tmp, -ms[2]), "reversed order gives the negative");
	MUST(npu_event_synchronize(nt));
	ST(npu_event_elapsed_time(&tmp, ev[0], nt), NPU_ERROR_INVALID_HANDLE,
	   "elapsed time with a DISABLE_TIMING event is an error");

	/* re-recording captures the latest record */
	MUST(npu_event_record(ev[1], s));
	start_gate_enter(&g, 0, s);
	MUST(spin(s, SPIN_NS));
	MUST(npu_event_record(ev[1], s));
	ST(npu_event_query(ev[1]), NPU_ERROR_NOT_READY,
	   "re-recorded event is not ready while the later work waits");
	start_gate_open(&g);
	MUST(npu_event_synchronize(ev[1]));
	MUST(npu_event_record(ev[2], s));
	MUST(npu_event_synchronize(ev[2]));
	MUST(npu_event_elapsed_time(&tmp, ev[1], ev[2]));
	tap_ok(tmp >= 0 && tmp < 0.5f * (float)SPIN_NS / 1e6f,
	       "timestamp of a re-recorded event is the latest (%.2f ms)", tmp);
	for (i = 0; i < 4; i++)
		npu_event_destroy(ev[i]);
	npu_event_destroy(nt);
	MUST(npu_stream_destroy(s));
	start_gate_fini(&g);
}

static void test_cross_stream(void)
{
	npu_stream_t a, b;
	npu_event_t e;
	void *d;
	float h[N];
	uint64_t f[3];
	uint64_t sc[4];
	int i, ok = 1;

	MUST(npu_malloc(&d, 2 * N * 4));
	MUST(npu_memset(d, 0, 2 * N * 4));
	MUST(npu_stream_create(&a, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&b, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_event_create(&e, NPU_EVENT_DISABLE_TIMING));
	f[0] = npu_arg_ptr(d);
	f[1] = N;
	f[2] = npu_arg_f32(4.0f);
	MUST(spin(a, SPIN_NS));
	MUST(npu_launch(NPU_K_FILL_F32, npu_grid(1, 1, 1), f, 3, a, 0));
	MUST(npu_event_record(e, a));
	ST(npu_stream_wait_event(b, e, 0), NPU_SUCCESS, "stream waits on event");
	/* destroying the event must not break the wait */
	ST(npu_event_destroy(e), NPU_SUCCESS, "destroy an event a stream waits on");
	sc[0] = npu_arg_ptr(d);
	sc[1] = npu_arg_ptr((char *)d + N * 4);
	sc[2] = N;
	sc[3] = npu_arg_f32(0.5f);
	MUST(npu_launch(NPU_K_SCALE_F32, npu_grid(1, 1, 1), sc, 4, b, 0));
	MUST(npu_stream_synchronize(b));
	MUST(npu_memcpy(h, (char *)d + N * 4, N * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	for (i = 0; i < N; i++)
		ok &= h[i] == 2.0f;
	tap_ok(ok, "work after the wait saw the other stream's result");
	MUST(npu_stream_destroy(a));
	MUST(npu_stream_destroy(b));
	npu_free(d);
}

/* An event is its latest record only (CUDA): records made before it are
 * not waited for, however many there were, and an earlier record that
 * finishes later does not change the event's timestamp. */
static void test_latest_record(void)
{
	npu_stream_t a, b, c;
	npu_event_t e;
	struct start_gate g;
	uint64_t t1 = 0, t2 = 0;
	void *d;
	float h[N];
	uint64_t f[3];
	int i, ok = 1, ms;

	MUST(npu_malloc(&d, N * 4));
	MUST(npu_memset(d, 0, N * 4));
	MUST(npu_stream_create(&a, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&b, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&c, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_event_create(&e, 0));
	start_gate_init(&g, 1);
	start_gate_enter(&g, 0, a);
	MUST(npu_event_record(e, a));		/* held behind the gate */
	for (i = 0; i < 5; i++)			/* then recorded on idle b */
		MUST(npu_event_record(e, b));
	MUST(npu_stream_synchronize(b));
	ST(npu_event_query(e), NPU_SUCCESS,
	   "re-recorded on an idle stream: ready while an earlier record waits");
	ST(npu_event_timestamp(e, &t1), NPU_SUCCESS, "its timestamp is there");
	/* a stream waiting on it runs now */
	MUST(npu_stream_wait_event(c, e, 0));
	f[0] = npu_arg_ptr(d);
	f[1] = N;
	f[2] = npu_arg_f32(9.0f);
	MUST(npu_launch(NPU_K_FILL_F32, npu_grid(1, 1, 1), f, 3, c, 0));
	for (ms = 0; ms < 10000 && npu_stream_query(c) == NPU_ERROR_NOT_READY; ms++)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	ST(npu_stream_query(c), NPU_SUCCESS,
	   "a stream waiting on the latest record runs while the earlier one waits");
	if (npu_event_query(e) == NPU_SUCCESS)
		ST(npu_event_synchronize(e), NPU_SUCCESS,
		   "synchronize on the latest record returns");
	tap_ok(start_gate_open(&g), "the held stream reached its gate");
	MUST(npu_stream_synchronize(a));
	MUST(npu_stream_synchronize(c));
	MUST(npu_memcpy(h, d, N * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	for (i = 0; i < N; i++)
		ok &= h[i] == 9.0f;
	tap_ok(ok, "the waiting stream's work ran");
	ST(npu_event_timestamp(e, &t2), NPU_SUCCESS, "timestamp after the old record ran");
	tap_ok(t1 && t2 == t1,
	       "an older record finishing late leaves the latest timestamp (%llu, %llu)",
	       (unsigned long long)t1, (unsigned long long)t2);
	/* many re-records while pending: each one is its own */
	start_gate_enter(&g, 0, a);
	for (i = 0; i < 20; i++)
		MUST(npu_event_record(e, a));
	MUST(npu_event_record(e, b));
	MUST(npu_stream_synchronize(b));
	ST(npu_event_query(e), NPU_SUCCESS, "after 20 pending records, a record on idle b is ready");
	tap_ok(start_gate_open(&g), "the held stream reached its gate again");
	MUST(npu_stream_synchronize(a));
	MUST(npu_event_destroy(e));
	MUST(npu_stream_destroy(a));
	MUST(npu_stream_destroy(b));
	MUST(npu_stream_destroy(c));
	start_gate_fini(&g);
	npu_free(d);
}

static void test_fd(const char *self)
{
	npu_stream_t s, s2;
	npu_event_t e, imp;
	struct start_gate g;
	int fd, fds_before, status;
	struct pollfd p;
	pid_t pid;

	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&s2, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_event_create(&e, 0));
	start_gate_init(&g, 1);
	fds_before = count_fds();
	start_gate_enter(&g, 0, s);
	MUST(spin(s, SPIN_NS));
	MUST(npu_event_record(e, s));
	ST(npu_event_export_fd(e, &fd), NPU_SUCCESS, "export event as sync_file");
	p.fd = fd;
	p.events = POLLIN;
	tap_ok(poll(&p, 1, 0) == 0, "sync_file not signalled while the work runs");
	ST(npu_event_import_fd(&imp, fd), NPU_SUCCESS, "import the sync_file");
	ST(npu_event_query(imp), NPU_ERROR_NOT_READY, "imported event not ready yet");
	MUST(npu_stream_wait_event(s2, imp, 0));
	tap_ok(start_gate_open(&g), "the stream reached its gate");

	pid = fork();
	if (pid == 0) {
		char arg[16];

		snprintf(arg, sizeof(arg), "%d", fd);
		fcntl(fd, F_SETFD, 0);	/* sync_file fds are close-on-exec */
		execl(self, self, "--child", arg, (char *)NULL);
		_exit(127);
	}
	tap_ok(pid > 0, "fork");
	MUST(npu_stream_synchronize(s2));
	ST(npu_event_query(e), NPU_SUCCESS,
	   "stream that waited on the imported event ran after the original work");
	tap_ok(poll(&p, 1, 0) == 1, "sync_file signalled after completion");
	waitpid(pid, &status, 0);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "a second process imported the fd and waited on it (exit %d)",
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	close(fd);
	npu_event_destroy(imp);
	tap_ok(count_fds() == fds_before, "no fd leaked by export/import");
	ST(npu_event_import_fd(&imp, 0), NPU_ERROR_INVALID_VALUE,
	   "importing a non-sync_file fd fails");
	npu_event_destroy(e);
	MUST(npu_stream_destroy(s));
	MUST(npu_stream_destroy(s2));
	start_gate_fini(&g);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--child"))
		return child(atoi(argv[2]));
	tap_need_device();
	test_never_recorded();
	test_timing();
	test_cross_stream();
	test_latest_record();
	test_fd("/proc/self/exe");
	return tap_done();
}
