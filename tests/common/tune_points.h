/* SPDX-License-Identifier: MIT */
/*
 * tune_points.h - print the valid points of an npu_tune_space parameter
 * space as npu-cc -D options, one point a line, the last parameter
 * fastest: the list that `make` feeds to npu-cc --cache to build the
 * points' code objects on the host (lib_tune_space --print-points,
 * npu-bench --print-gemm-points).
 */
#ifndef TUNE_POINTS_H
#define TUNE_POINTS_H

#include <stdio.h>

#include "npu.h"

/* valid as npu_tune_space_config.valid (called with user NULL; NULL: all) */
static inline void print_tune_points(const npu_tune_param *p, unsigned n,
				     int (*valid)(const long *, void *))
{
	unsigned i[NPU_TUNE_SPACE_MAX_PARAMS] = { 0 }, j;
	long v[NPU_TUNE_SPACE_MAX_PARAMS];

	if (!n || n > NPU_TUNE_SPACE_MAX_PARAMS)
		return;
	for (;;) {
		for (j = 0; j < n; j++)
			v[j] = p[j].values[i[j]];
		if (!valid || valid(v, NULL)) {
			for (j = 0; j < n; j++)
				printf("%s-D%s=%ld", j ? " " : "", p[j].name,
				       v[j]);
			printf("\n");
		}
		for (j = n; j > 0; j--) {	/* the next point */
			if (++i[j - 1] < p[j - 1].nvalues)
				break;
			i[j - 1] = 0;
		}
		if (!j)
			return;
	}
}

#endif
