/* SPDX-License-Identifier: MIT */
/* common.h - helpers shared by the libnpu examples. */
#ifndef NPU_EXAMPLES_COMMON_H
#define NPU_EXAMPLES_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <npu.h>

#define CHECK(call) do {						\
	npu_status_t st_ = (call);					\
	if (st_ != NPU_SUCCESS) {					\
		fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, \
			#call, npu_status_name(st_),			\
			npu_last_error_message());			\
		exit(1);						\
	}								\
} while (0)

static inline double host_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static inline void print_device(void)
{
	npu_device_prop p;

	CHECK(npu_device_get_properties(&p, 0));
	printf("device: %s (%s), %u compute rings, %u copy rings, %u compute units,"
	       " %llu MiB, timing model %s\n", p.name, p.node, p.compute_rings,
	       p.copy_rings, p.compute_units,
	       (unsigned long long)(p.devmem_size >> 20),
	       p.features & NPU_FEATURE_TIMING_MODEL ? "on" : "off");
}

static inline uint64_t arg_f(float f) { return npu_arg_f32(f); }

/* Load kernels/<name>.npu from next to the program (npu-cc output). */
static inline npu_module_t load_kernels(const char *name)
{
	char self[4096], path[4200];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	npu_module_t m;

	self[n > 0 ? n : 0] = 0;
	if (strrchr(self, '/'))
		*strrchr(self, '/') = 0;
	snprintf(path, sizeof(path), "%s/kernels/%s.npu", self, name);
	CHECK(npu_module_load(&m, path));
	return m;
}

/* Device milliseconds between two completed events. */
static inline float event_ms(npu_event_t a, npu_event_t b)
{
	float ms;

	CHECK(npu_event_elapsed_time(&ms, a, b));
	return ms;
}

#endif
