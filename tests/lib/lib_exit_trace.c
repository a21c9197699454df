/* SPDX-License-Identifier: MIT */
/*
 * lib_exit_trace: the NPU_TRACE writer at exit (issue 30, item 17). The
 * library's teardown writes the NPU_TRACE file; it must not do so
 *  - from exit() called inside a host function (the writer would wait for
 *    the host function's own point: the process hung for ever), nor
 *  - from a forked child's exit() (it overwrote the parent's file and
 *    submitted on the parent's queues).
 * Each case runs in a child process started with NPU_TRACE set (the
 * library reads it when it loads); the parent bounds it with a timeout, so
 * a hang fails the test instead of hanging the suite.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "tap.h"

#define TIMEOUT_S 30

static void exit_in_host_fn(void *user)
{
	(void)user;
	exit(0);
}

/* --host-fn-exit: exit() from a host function; must end with status 0 */
static int child_host_fn_exit(void)
{
	npu_stream_t s;

	if (npu_stream_create(&s, 0, 0) ||
	    npu_launch(NPU_K_NOP, npu_grid(1, 1, 1), NULL, 0, s, 0) ||
	    npu_launch_host_func(s, exit_in_host_fn, NULL))
		return 3;
	npu_stream_synchronize(s);	/* the process exits in here */
	sleep(TIMEOUT_S * 2);
	return 4;
}

/* --fork-exit FILE: traced work, then a forked child that exits; the
 * child's exit must not write FILE (exit status 5 if it did); this
 * process's own exit writes it */
static int child_fork_exit(const char *file)
{
	pid_t p;
	int status;

	if (npu_launch(NPU_K_NOP, npu_grid(1, 1, 1), NULL, 0, NULL, 0) ||
	    npu_device_synchronize())
		return 3;
	p = fork();
	if (p == 0)
		exit(0);	/* runs the library's destructor */
	if (p < 0 || waitpid(p, &status, 0) != p)
		return 3;
	if (access(file, F_OK) == 0)
		return 5;
	return 0;
}

/* Run this program with args under NPU_TRACE=file; its exit status, or
 * -1 if it did not end within TIMEOUT_S (it is then killed). */
static int run_traced(const char *self, const char *file, const char *mode)
{
	pid_t p;
	int status, i;

	unlink(file);
	p = fork();
	if (p == 0) {
		setenv("NPU_TRACE", file, 1);
		/* exit() in a host function skips the library's teardown
		 * (that thread cannot join itself): under ASan its helper
		 * threads' memory is reported as leaked, as designed */
		if (!strcmp(mode, "--host-fn-exit"))
			setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
		execl(self, self, mode, file, (char *)NULL);
		_exit(127);
	}
	if (p < 0)
		return -2;
	for (i = 0; i < TIMEOUT_S * 10; i++) {
		if (waitpid(p, &status, WNOHANG) == p)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		usleep(100000);
	}
	kill(p, SIGKILL);
	waitpid(p, &status, 0);
	return -1;
}

static bool is_trace_json(const char *file)
{
	char head[32] = "";
	int fd = open(file, O_RDONLY);
	bool ok;

	if (fd < 0)
		return false;
	ok = read(fd, head, sizeof(head) - 1) > 0 &&
	     !strncmp(head, "{\"displayTimeUnit\"", 18);
	close(fd);
	return ok;
}

int main(int argc, char **argv)
{
	char self[PATH_MAX];
	const char *file = "/tmp/lib_exit_trace.json";
	ssize_t n;
	int r;

	if (argc == 3 && !strcmp(argv[1], "--host-fn-exit"))
		return child_host_fn_exit();
	if (argc == 3 && !strcmp(argv[1], "--fork-exit"))
		return child_fork_exit(argv[2]);
	tap_need_device();
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = 0;

	r = run_traced(self, file, "--host-fn-exit");
	tap_ok(r == 0, "NPU_TRACE set, exit() inside a host function: the process "
	       "ends with status 0 (%s)", r == -1 ? "hung, killed after the timeout" :
	       r == 0 ? "exited" : "other status");
	if (r > 0)
		tap_diag("  exit status %d", r);

	r = run_traced(self, file, "--fork-exit");
	tap_ok(r != 5 && r >= 0, "NPU_TRACE set, a forked child's exit() does not "
	       "write the parent's trace file (%d)", r);
	tap_ok(r == 0, "... the traced process ends normally");
	tap_ok(is_trace_json(file), "... and its own exit wrote the trace");
	unlink(file);
	return tap_done();
}
