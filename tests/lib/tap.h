/* SPDX-License-Identifier: MIT */
/*
 * tap.h - minimal TAP output and helpers for the libnpu tests.
 */
#ifndef NPU_TAP_H
#define NPU_TAP_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "npu.h"

static int tap_n, tap_failed;

static inline void tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		tap_failed++;
	fflush(stdout);
}

static inline void tap_skip(const char *fmt, ...)
{
	va_list ap;

	printf("ok %d - # SKIP ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static inline void tap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	fflush(stdout);
	return tap_failed ? 1 : 0;
}

/* Skip the whole program when there is no device. */
static inline void tap_need_device(void)
{
	int n = 0;

	if (npu_device_count(&n) != NPU_SUCCESS || n < 1) {
		printf("1..0 # SKIP no npu device\n");
		exit(0);
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

#endif
