/* SPDX-License-Identifier: MIT */
/*
 * npu_smi_test: npu-smi against a real workload, and the guest tools'
 * options. A child keeps a compute ring busy with spin kernels; while it
 * runs npu-smi must list it (fdinfo) with non-zero utilization over the
 * interval, the rolling mode must print the lines it was asked for and
 * every JSON it writes must parse (json-c); after it, the report must still
 * show the busy time since start. Each tool's --help exits 0 with a usage
 * and a bad option exits 2 with a message.
 */
#define _GNU_SOURCE
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>

#include "tap.h"

/* Spin kernels back to back until killed (or 60 s); one byte on ready_fd
 * once the first has finished. */
static int load(int ready_fd)
{
	npu_stream_t s;
	time_t end = time(NULL) + 60;
	int i;

	if (npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0) != NPU_SUCCESS ||
	    spin(s, 20000000) != NPU_SUCCESS || npu_stream_synchronize(s) != NPU_SUCCESS)
		return 1;
	if (write(ready_fd, "r", 1) != 1)
		return 1;
	close(ready_fd);
	while (time(NULL) < end) {
		for (i = 0; i < 4; i++)
			if (spin(s, 20000000) != NPU_SUCCESS)
				return 1;
		if (npu_stream_synchronize(s) != NPU_SUCCESS)
			return 1;
	}
	return 0;
}

/* Run cmd (sh -c), return its stdout (malloc'd) and exit status. */
static char *run(const char *cmd, int *status)
{
	size_t n = 0, cap = 4096;
	char *buf = malloc(cap);
	FILE *p = popen(cmd, "r");
	size_t got;

	if (!buf || !p) {
		*status = -1;
		if (p)
			pclose(p);
		return buf;
	}
	while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
		n += got;
		if (cap - n < 2) {
			char *b = realloc(buf, cap * 2);

			if (!b)
				break;
			buf = b;
			cap *= 2;
		}
	}
	buf[n] = 0;
	got = (size_t)pclose(p);
	*status = WIFEXITED((int)got) ? WEXITSTATUS((int)got) : -1;
	return buf;
}

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;

	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* The first device of npu-smi -j's document, or NULL. */
static json_object *first_device(json_object *doc)
{
	json_object *devs = get(doc, "devices");

	if (!devs || !json_object_is_type(devs, json_type_array) ||
	    json_object_array_length(devs) < 1)
		return NULL;
	return json_object_array_get_idx(devs, 0);
}

/* The largest value of key over the array's objects (or numbers). */
static double max_of(json_object *arr, const char *key)
{
	double m = 0;
	size_t i;

	for (i = 0; arr && i < json_object_array_length(arr); i++) {
		json_object *x = json_object_array_get_idx(arr, i);
		double v = json_object_get_double(key ? get(x, key) : x);

		if (v > m)
			m = v;
	}
	return m;
}

/* A key's largest value over the rings and the user-queue engines
 * (streams run on either). */
static double engines_max(json_object *dev, const char *key)
{
	double r = max_of(get(dev, "rings"), key), u = max_of(get(dev, "uq_engines"), key);

	return r > u ? r : u;
}

static json_object *process(json_object *dev, long pid)
{
	json_object *procs = get(dev, "processes");
	size_t i;

	for (i = 0; procs && i < json_object_array_length(procs); i++) {
		json_object *p = json_object_array_get_idx(procs, i);

		if (json_object_get_int64(get(p, "pid")) == pid)
			return p;
	}
	return NULL;
}

static void test_during(pid_t child)
{
	json_object *doc, *dev, *proc;
	char *out, *text, *line, *save, cmd[64], want[32];
	int st, lines, parsed, busy;

	out = run("npu-smi -j -i 1000", &st);
	doc = json_tokener_parse(out);
	dev = first_device(doc);
	tap_ok(st == 0 && dev, "npu-smi -j: exit 0, parses, lists a device");
	proc = process(dev, child);
	tap_ok(proc != NULL, "npu-smi -j lists the workload (pid %d)", (int)child);
	tap_ok(json_object_get_double(get(proc, "compute_util")) > 0 &&
	       json_object_get_int64(get(proc, "engine_compute_ns")) > 0,
	       "its compute utilization over the interval is > 0 (%.3f)",
	       json_object_get_double(get(proc, "compute_util")));
	tap_ok(engines_max(dev, "util") > 0,
	       "a ring's or user-queue engine's utilization over the interval is > 0 (%.3f)",
	       engines_max(dev, "util"));
	if (!proc || !dev)
		tap_diag("npu-smi -j printed: %s", out);
	json_object_put(doc);
	free(out);

	out = run("npu-smi -i 500", &st);
	snprintf(want, sizeof(want), "\n    %-8ld ", (long)child);
	tap_ok(st == 0 && strstr(out, want), "npu-smi's table lists pid %d", (int)child);
	free(out);

	out = run("npu-smi -l 0.3 -c 3", &st);
	lines = busy = 0;
	text = strdup(out);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *field[80], *fs;
		int nf = 0;

		if (line[0] == '#')
			continue;
		lines++;
		for (field[0] = strtok_r(line, " ", &fs); field[nf] && nf < 79;
		     field[nf] = strtok_r(NULL, " ", &fs))
			nf++;
		/* the last two columns: the processes' compute and copy % */
		busy += nf >= 2 && atof(field[nf - 2]) > 0;
	}
	tap_ok(st == 0 && lines == 3, "npu-smi -l 0.3 -c 3 prints 3 lines (%d, exit %d)",
	       lines, st);
	tap_ok(busy > 0, "the rolling mode shows the workload's compute share in %d of 3", busy);
	if (busy == 0 || lines != 3)
		tap_diag("npu-smi -l 0.3 -c 3 printed:\n%s", text ? text : "");
	free(text);
	free(out);

	snprintf(cmd, sizeof(cmd), "npu-smi -l 0.2 -c 2 -j");
	out = run(cmd, &st);
	lines = parsed = 0;
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_object *o = json_tokener_parse(line);

		lines++;
		parsed += o && json_object_is_type(get(o, "ring_util"), json_type_array) &&
			  json_object_array_length(get(o, "ring_util")) > 0;
		json_object_put(o);
	}
	tap_ok(st == 0 && lines == 2 && parsed == 2,
	       "npu-smi -l 0.2 -c 2 -j: 2 lines, each a JSON object with ring_util");
	free(out);
}

static void test_after(pid_t child)
{
	json_object *doc, *dev;
	char *out;
	int st;

	out = run("npu-smi -j", &st);
	doc = json_tokener_parse(out);
	dev = first_device(doc);
	tap_ok(st == 0 && dev && engines_max(dev, "util_since_start") > 0 &&
	       engines_max(dev, "busy_ns") > 0,
	       "after the work: busy time and utilization since start are > 0 (%.4f)",
	       engines_max(dev, "util_since_start"));
	tap_ok(dev && !process(dev, child), "the workload is gone from the list");
	json_object_put(doc);
	free(out);
}

/*
 * One kernel longer than npu-smi's interval, sampled while it runs: its
 * ring and this process must show busy for that interval, not only once
 * the kernel has finished. (1.6 s: below the suites' job timeout.) A
 * sample that ends after the kernel (npu-smi slower than that, as on the
 * debug kernel under a busy host) says nothing: the kernel runs again,
 * up to three times.
 */
static void test_long_kernel(void)
{
	json_object *doc = NULL, *dev, *proc;
	double ring_util, proc_util;
	npu_device_prop prop;
	npu_stream_t s;
	char *out = NULL;
	bool running = false;
	int st = -1, attempt;

	if (npu_device_get_properties(&prop, 0) != NPU_SUCCESS ||
	    npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0) != NPU_SUCCESS) {
		tap_ok(0, "launch a 1.6 s kernel");
		return;
	}
	for (attempt = 1; attempt <= 3 && !running; attempt++) {
		if (out) {
			tap_diag("attempt %d: the kernel had ended before npu-smi "
				 "sampled: again", attempt - 1);
			json_object_put(doc);
			free(out);
		}
		if (npu_stream_synchronize(s) != NPU_SUCCESS ||
		    spin(s, 1600000000ull) != NPU_SUCCESS) {
			tap_ok(0, "launch a 1.6 s kernel");
			npu_stream_destroy(s);
			return;
		}
		usleep(100000);
		out = run("npu-smi -j -i 400", &st);
		running = npu_stream_query(s) == NPU_ERROR_NOT_READY;
		doc = json_tokener_parse(out);
	}
	dev = first_device(doc);
	proc = process(dev, getpid());
	ring_util = engines_max(dev, "util");
	/* a process's share is of all compute rings: one busy ring of n */
	proc_util = json_object_get_double(get(proc, "compute_util")) *
		    prop.compute_rings;
	tap_ok(running, "the kernel still ran when npu-smi had sampled");
	tap_ok(st == 0 && ring_util > 0.5,
	       "while one long kernel runs its ring or engine is busy (%.3f)", ring_util);
	tap_ok(proc && proc_util > 0.5,
	       "... and so is its process (%.3f of one ring)", proc_util);
	if (!proc || ring_util <= 0.5 || proc_util <= 0.5)
		tap_diag("npu-smi -j printed: %s", out);
	json_object_put(doc);
	free(out);
	tap_ok(npu_stream_synchronize(s) == NPU_SUCCESS, "the long kernel completes");
	npu_stream_destroy(s);
}

/* --help: exit 0 and a usage on stdout; a bad option: exit 2 and a message
 * on stderr. */
static void test_options(const char *tool)
{
	char cmd[256], *out;
	int st;

	snprintf(cmd, sizeof(cmd), "%s --help 2>&1", tool);
	out = run(cmd, &st);
	tap_ok(st == 0 && !strncmp(out, "usage: ", 7), "%s --help: exit 0 and a usage", tool);
	free(out);
	snprintf(cmd, sizeof(cmd), "%s --no-such-option 2>&1 >/dev/null", tool);
	out = run(cmd, &st);
	tap_ok(st == 2 && strstr(out, "no-such-option"),
	       "%s --no-such-option: exit 2 and a message naming it", tool);
	if (st != 2)
		tap_diag("exit %d, stderr: %s", st, out);
	free(out);
}

int main(void)
{
	int ready[2], status;
	struct pollfd pfd;
	char c;
	pid_t child;

	if (pipe(ready))
		ksft_exit_fail_msg("pipe: %s\n", strerror(errno));
	fflush(stdout);
	child = fork();
	if (child < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (!child) {
		close(ready[0]);
		_exit(load(ready[1]));
	}
	close(ready[1]);
	pfd = (struct pollfd){ .fd = ready[0], .events = POLLIN };
	tap_ok(poll(&pfd, 1, 60000) == 1 && read(ready[0], &c, 1) == 1,
	       "the workload runs its first kernel");
	test_during(child);
	kill(child, SIGTERM);
	waitpid(child, &status, 0);
	test_after(child);
	test_long_kernel();

	test_options("npu-smi");
	test_options("npu-bench");
	test_options("fmnist-demo");
	return tap_done();
}
