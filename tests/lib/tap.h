/* SPDX-License-Identifier: MIT */
/*
 * tap.h - TAP output (kselftest.h) and helpers for the libnpu tests.
 */
#ifndef NPU_TAP_H
#define NPU_TAP_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "npu.h"

/*
 * The results go through kselftest.h (from linux-source-6.1, the same
 * harness as tests/kselftest), so every C test in the tree prints one TAP
 * dialect. The plan comes last ("1..N" after the results): most programs
 * do not know their count up front. The header is printed lazily so that
 * helper modes (--child, --print-points) print nothing of the harness;
 * every line is flushed (children fork with it).
 */
#include "kselftest.h"

static int tap_started;

static inline void tap_start(void)
{
	if (!tap_started) {
		tap_started = 1;
		ksft_print_header();
	}
}

static inline void tap_ok(int cond, const char *fmt, ...)
{
	char what[1024];
	va_list ap;

	tap_start();
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (cond)
		ksft_test_result_pass("- %s\n", what);
	else
		ksft_test_result_fail("- %s\n", what);
	fflush(stdout);
}

static inline void tap_skip(const char *fmt, ...)
{
	char why[1024];
	va_list ap;

	tap_start();
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	ksft_test_result_skip("%s\n", why);
	fflush(stdout);
}

static inline void tap_diag(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	tap_start();
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ksft_print_msg("%s\n", msg);
	fflush(stdout);
}

/* Print the plan and the totals; the exit status for main's return. */
static inline int tap_done(void)
{
	tap_start();
	ksft_set_plan(ksft_test_num());
	ksft_print_cnts();
	fflush(stdout);
	return ksft_get_fail_cnt() ? KSFT_FAIL : KSFT_PASS;
}

/* out = "<this program's directory>/rel": the code objects (kernels/) and
 * data built next to each test. */
static inline const char *tap_beside_self(char *out, size_t n, const char *rel)
{
	char self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	self[len > 0 ? len : 0] = 0;
	slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	if (snprintf(out, n, "%s/%s", self, rel) >= (int)n)
		out[0] = 0;	/* too long: the load then fails, named */
	return out;
}

/* npu_profile_report() as a malloc'ed string (NULL if it cannot be made). */
static inline char *tap_profile_report(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (npu_profile_report(f) != NPU_SUCCESS) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

/* The lines of kernel name in a profile report ("  name (module): ..."
 * and the lines indented by four under it), malloc'ed; NULL if absent. */
static inline char *tap_profile_section(const char *rep, const char *name)
{
	char head[80];
	const char *b, *e;

	snprintf(head, sizeof(head), "\n  %s (", name);
	b = rep ? strstr(rep, head) : NULL;
	if (!b)
		return NULL;
	b++;
	for (e = strchr(b, '\n'); e && !strncmp(e, "\n    ", 5);
	     e = strchr(e + 1, '\n'))
		;
	return strndup(b, e ? (size_t)(e - b) : strlen(b));
}

/* The profile of kernel name among the n of npu_profile_get_kernels(). */
static inline npu_kernel_profile *tap_find_kernel(npu_kernel_profile *p,
						  size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(p[i].name, name))
			return &p[i];
	return NULL;
}

/* Skip the whole program when there is no device (kselftest's exit status
 * for a skip, which the runner counts as a failure: the guests have one). */
static inline void tap_need_device(void)
{
	int n = 0;

	if (npu_device_count(&n) != NPU_SUCCESS || n < 1) {
		tap_start();
		ksft_exit_skip("no npu device\n");
	}
}

/* Check a status; print the library's message on mismatch. */
#define ST(call, want, ...) do {					\
	npu_status_t st_ = (call);					\
	tap_ok(st_ == (want), __VA_ARGS__);				\
	if (st_ != (want))						\
		tap_diag("  %s returned %s (%s), wanted %s", #call,	\
			 npu_status_name(st_), npu_last_error_message(),	\
			 npu_status_name(want));			\
} while (0)

/* Must succeed or the program cannot go on. */
#define MUST(call) do {							\
	npu_status_t st_ = (call);					\
	if (st_ != NPU_SUCCESS) {					\
		tap_ok(0, "%s", #call);					\
		tap_diag("  %s (%s)", npu_status_name(st_),		\
			 npu_last_error_message());			\
		exit(tap_done() | 1);					\
	}								\
} while (0)

/* The start of a test of user kernels: skip without a device, fill *prop,
 * end the program with one failed test if the device runs no user kernels,
 * then load the code object rel (beside the program) as *m. */
static inline void tap_need_user_module(npu_device_prop *prop,
					npu_module_t *m, const char *rel)
{
	char path[PATH_MAX + 32];

	tap_need_device();
	MUST(npu_device_get_properties(prop, 0));
	if (!(prop->features & NPU_FEATURE_USER_KERNELS)) {
		tap_ok(0, "the device runs user kernels");
		exit(tap_done());
	}
	MUST(npu_module_load(m, tap_beside_self(path, sizeof(path), rel)));
}

static inline int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;		/* the DIR's own fd */
}

static inline double ticks_ms(uint64_t ticks)
{
	npu_device_prop p;

	npu_device_get_properties(&p, 0);
	return (double)ticks * 1e3 / (double)p.clock_hz;
}

static inline uint64_t ms_to_ns(double ms)
{
	return (uint64_t)(ms * 1e6);
}

/* Launch a spin kernel of ns on stream. */
static inline npu_status_t spin(npu_stream_t s, uint64_t ns)
{
	uint64_t a[1] = { ns };

	return npu_launch(NPU_K_TEST_SPIN, npu_grid(1, 1, 1), a, 1, s, 0);
}

static inline int feq(float a, float b)
{
	return fabsf(a - b) <= 1e-4f * (1.0f + fabsf(b));
}

/* A start gate (npu_stream_wait_value32 on pinned memory): each stream of a
 * round announces itself and waits at the gate on the device; the host opens
 * the gate once all of them are there. Work behind a closed gate has provably
 * not started, so NOT_READY windows need no long kernels and hold whatever
 * the timing mode. A waiting stream holds its ring: gate several streams
 * only if they are on distinct rings. */
struct start_gate {
	uint32_t *w;		/* w[0]: the gate, w[1 + i]: stream i arrived */
	unsigned n;
	uint32_t seq;		/* the current round */
};

static inline void start_gate_init(struct start_gate *g, unsigned n)
{
	void *p;

	MUST(npu_host_alloc(&p, 4 * (n + 1), 0));
	memset(p, 0, 4 * (n + 1));
	g->w = p;
	g->n = n;
	g->seq = 1;
}

/* Queue stream i of the current round behind the gate. */
static inline void start_gate_enter(struct start_gate *g, unsigned i, npu_stream_t s)
{
	MUST(npu_stream_write_value32(s, &g->w[1 + i], g->seq, 0));
	MUST(npu_stream_wait_value32(s, &g->w[0], g->seq, 0));
}

/* Wait (up to 10 s) for every stream of the round at the gate, open it and
 * start the next round; returns whether all had arrived. */
static inline int start_gate_open(struct start_gate *g)
{
	unsigned i, ms, here = 0;

	for (ms = 0; ms < 10000; ms++) {
		for (here = 0, i = 1; i <= g->n; i++)
			here += __atomic_load_n(&g->w[i], __ATOMIC_ACQUIRE) == g->seq;
		if (here == g->n)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
	__atomic_store_n(&g->w[0], g->seq, __ATOMIC_RELEASE);
	g->seq++;
	return here == g->n;
}

static inline void start_gate_fini(struct start_gate *g)
{
	MUST(npu_host_free(g->w));
}

#endif
