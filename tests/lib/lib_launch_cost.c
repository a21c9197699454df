/* SPDX-License-Identifier: MIT */
/*
 * lib_launch_cost: host cost of an asynchronous npu_launch() compared with
 * the cheapest ioctl of the driver (GET_PARAM). Informational: it prints
 * the figures and checks only that launches work; the target is <= 2x.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/ioctl.h>
#include <time.h>

#include <drm.h>
#include "drm/npu_accel.h"
#include "tap.h"

#define BATCH 256
#define ROUNDS 8

static double all_launch[ROUNDS], all_ioctl[ROUNDS];

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(void)
{
	npu_device_prop p;
	npu_stream_t s;
	double t0, best_launch = 1e30, best_ioctl = 1e30, sum_launch = 0, sum_ioctl = 0;
	int r, i, fd;

	tap_need_device();
	MUST(npu_device_get_properties(&p, 0));
	fd = open(p.node, O_RDWR | O_CLOEXEC);
	tap_ok(fd >= 0, "open %s", p.node);
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	for (r = 0; r < ROUNDS; r++) {
		struct drm_npu_get_param gp = { .param = DRM_NPU_PARAM_NUM_CUS };
		double tl, ti;

		MUST(npu_stream_synchronize(s));
		t0 = now_ns();
		for (i = 0; i < BATCH; i++)
			if (npu_launch(NPU_K_NOP, npu_grid(1, 1, 1), NULL, 0, s, 0))
				break;
		tl = (now_ns() - t0) / BATCH;
		tap_ok(i == BATCH, "round %d: %d async launches", r, BATCH);
		t0 = now_ns();
		for (i = 0; i < BATCH; i++)
			ioctl(fd, DRM_IOCTL_NPU_GET_PARAM, &gp);
		ti = (now_ns() - t0) / BATCH;
		sum_launch += tl;
		sum_ioctl += ti;
		all_launch[r] = tl;
		all_ioctl[r] = ti;
		tap_diag("round %d: npu_launch %.0f ns, GET_PARAM %.0f ns", r, tl, ti);
		if (tl < best_launch)
			best_launch = tl;
		if (ti < best_ioctl)
			best_ioctl = ti;
	}
	MUST(npu_stream_synchronize(s));
	{
		/* the driver's own share: raw SUBMIT of an empty job signalling a
		 * timeline point, no library involved */
		struct drm_npu_queue_create qc = { .kind = DRM_NPU_RING_KIND_COMPUTE,
			.priority = DRM_NPU_PRIORITY_NORMAL, .ring = 3 };
		struct drm_syncobj_create sc = { 0 };
		double best = 1e30, tr;
		uint64_t pt = 0;

		if (ioctl(fd, DRM_IOCTL_NPU_QUEUE_CREATE, &qc) == 0 &&
		    ioctl(fd, DRM_IOCTL_SYNCOBJ_CREATE, &sc) == 0) {
			for (r = 0; r < ROUNDS; r++) {
				t0 = now_ns();
				for (i = 0; i < BATCH; i++) {
					struct drm_npu_sync out = { sc.handle, 0, ++pt };
					struct drm_npu_job j = { .queue_id = qc.queue_id,
						.out_syncs = (uintptr_t)&out,
						.out_sync_count = 1 };
					struct drm_npu_submit sub = { .jobs = (uintptr_t)&j,
						.job_count = 1, .job_stride = sizeof(j) };

					ioctl(fd, DRM_IOCTL_NPU_SUBMIT, &sub);
				}
				tr = (now_ns() - t0) / BATCH;
				if (tr < best)
					best = tr;
				struct drm_syncobj_timeline_wait w = {
					.handles = (uintptr_t)&sc.handle,
					.points = (uintptr_t)&pt, .timeout_nsec = INT64_MAX,
					.count_handles = 1 };
				ioctl(fd, DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, &w);
			}
			tap_diag("raw SUBMIT ioctl of an empty job: %.0f ns", best);
			printf("raw_submit_ns %.0f\n", best);
		}
	}
	tap_diag("npu_launch (async, NOP): %.0f ns; GET_PARAM ioctl: %.0f ns; "
		 "ratio %.2f (best of %d rounds of %d)", best_launch, best_ioctl,
		 best_launch / best_ioctl, ROUNDS, BATCH);
	tap_diag("means: npu_launch %.0f ns, GET_PARAM %.0f ns, ratio %.2f",
		 sum_launch / ROUNDS, sum_ioctl / ROUNDS, sum_launch / sum_ioctl);
	qsort(all_launch, ROUNDS, sizeof(double), cmp_d);
	qsort(all_ioctl, ROUNDS, sizeof(double), cmp_d);
	tap_diag("medians: npu_launch %.0f ns, GET_PARAM %.0f ns, ratio %.2f",
		 all_launch[ROUNDS / 2], all_ioctl[ROUNDS / 2],
		 all_launch[ROUNDS / 2] / all_ioctl[ROUNDS / 2]);
	printf("launch_ns %.0f\nget_param_ns %.0f\n", best_launch, best_ioctl);
	MUST(npu_stream_destroy(s));
	close(fd);
	return tap_done();
}
