// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_submit_test - jobs of every shape with their results checked: fill,
 * copies between host, user and device memory, a kernel against a CPU
 * reference (LAUNCH_CODE), a former math kernel id refused, timestamps,
 * empty jobs, ordering within a queue, concurrency across rings,
 * submission arrays with dependencies, BO_WAIT. Names follow IGT's
 * panfrost_submit / v3d_submit_cl where the case is the same.
 */
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include "npu_test.h"
#include "kselftest_harness.h"

FIXTURE(npu) {
	int fd;
	uint32_t q;		/* compute ring 0 */
	uint32_t cq;		/* copy ring 0 */
	uint32_t so;
	struct npu_cmd cmd;
};

FIXTURE_SETUP(npu)
{
	self->fd = npu_open();
	if (self->fd < 0)
		SKIP(return, "no npu device");
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, 0, &self->q), 0);
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COPY,
				DRM_NPU_PRIORITY_NORMAL, 0, &self->cq), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &self->so), 0);
	ASSERT_EQ(npu_cmd_new(self->fd, &self->cmd, 1 << 16), 0);
}

FIXTURE_TEARDOWN(npu)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(npu, pan_submit_empty_job)
{
	ASSERT_EQ(npu_submit_one(self->fd, self->q, 0, 0, self->so), 0);
	ASSERT_EQ(npu_syncobj_wait(self->fd, self->so, NPU_TIMEOUT_NS), 0);
	ASSERT_EQ(npu_syncobj_error(self->fd, self->so), 0);
}

TEST_F(npu, fill)
{
	struct npu_bo b;
	uint32_t *p;
	int i;

	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &b), 0);
	npu_emit_fill(&self->cmd, b.va + 4096, 0xa5a5a5a5, 8192);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so), 0);
	p = b.map;
	for (i = 0; i < 16384; i++)
		ASSERT_EQ(p[i], (i >= 1024 && i < 3072) ? 0xa5a5a5a5 : 0);
}

TEST_F(npu, copy_host_to_host)
{
	struct npu_bo a, b;
	uint8_t *pa, *pb;
	int i;

	ASSERT_EQ(npu_bo_new(self->fd, 1 << 20, 0, &a), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 20, 0, &b), 0);
	pa = a.map;
	pb = b.map;
	for (i = 0; i < 1 << 20; i++)
		pa[i] = i * 7 + 3;
	npu_emit_copy(&self->cmd, a.va + 1, b.va + 5, (1 << 20) - 9);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->cq, self->so), 0);
	for (i = 0; i < (1 << 20) - 9; i++)
		ASSERT_EQ(pb[i + 5], (uint8_t)((i + 1) * 7 + 3));
	ASSERT_EQ(pb[0], 0);
}

TEST_F(npu, copy_through_device_memory)
{
	struct drm_npu_bo_create d1 = { .size = 1 << 18,
					.flags = DRM_NPU_BO_DEVMEM };
	struct drm_npu_bo_create d2 = d1;
	struct npu_bo src, dst;
	uint32_t *ps, *pd;
	int i;

	if (!npu_param(self->fd, DRM_NPU_PARAM_DEVMEM_SIZE))
		SKIP(return, "no device memory");
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_CREATE, &d1), 0);
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_CREATE, &d2), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 18, 0, &src), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 18, 0, &dst), 0);
	ps = src.map;
	pd = dst.map;
	for (i = 0; i < 1 << 16; i++)
		ps[i] = i ^ 0x5555;
	npu_emit_copy(&self->cmd, src.va, d1.va, 1 << 18);	/* H2D */
	npu_emit_copy(&self->cmd, d1.va, d2.va, 1 << 18);	/* D2D */
	npu_emit_copy(&self->cmd, d2.va, dst.va, 1 << 18);	/* D2H */
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->cq, self->so), 0);
	for (i = 0; i < 1 << 16; i++)
		ASSERT_EQ(pd[i], (uint32_t)(i ^ 0x5555));
}

TEST_F(npu, devmem_starts_zeroed)
{
	struct drm_npu_bo_create d = { .size = 1 << 16,
				       .flags = DRM_NPU_BO_DEVMEM };
	struct npu_bo out;
	uint32_t *p;
	int i, round;

	if (!npu_param(self->fd, DRM_NPU_PARAM_DEVMEM_SIZE))
		SKIP(return, "no device memory");
	for (round = 0; round < 2; round++) {
		ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_CREATE, &d), 0);
		ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &out), 0);
		npu_emit_copy(&self->cmd, d.va, out.va, 1 << 16);
		/* dirty it for the next round */
		npu_emit_fill(&self->cmd, d.va, 0xdeadbeef, 1 << 16);
		ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->cq, self->so),
			  0);
		p = out.map;
		for (i = 0; i < 1 << 14; i++)
			ASSERT_EQ(p[i], 0);
		ASSERT_EQ(npu_gem_close(self->fd, d.handle), 0);
		npu_bo_free(self->fd, &out);
	}
}

TEST_F(npu, userptr_zero_copy)
{
	uint32_t *in = aligned_alloc(4096, 1 << 16);
	uint32_t *out = aligned_alloc(4096, 1 << 16);
	struct npu_bo bin, bout;
	int i;

	for (i = 0; i < 1 << 14; i++) {
		in[i] = i * 3;
		out[i] = 0;
	}
	ASSERT_EQ(npu_userptr(self->fd, in, 1 << 16,
			      DRM_NPU_USERPTR_READ_ONLY, &bin), 0);
	ASSERT_EQ(npu_userptr(self->fd, out, 1 << 16, 0, &bout), 0);
	npu_emit_copy(&self->cmd, bin.va, bout.va, 1 << 16);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->cq, self->so), 0);
	for (i = 0; i < 1 << 14; i++)
		ASSERT_EQ(out[i], (uint32_t)(i * 3));
	/* the device sees CPU writes made after registration */
	in[7] = 0x777;
	npu_emit_copy(&self->cmd, bin.va, bout.va, 64);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->cq, self->so), 0);
	ASSERT_EQ(out[7], 0x777);
	npu_gem_close(self->fd, bin.handle);
	npu_gem_close(self->fd, bout.handle);
	free(in);
	free(out);
}

/* A kernel on a compute ring reads and writes memory as the CPU sees it
 * (the built-in math is the library's code; its arithmetic is checked by
 * lib_builtins_diff against the host reference). */
TEST_F(npu, kernel_vadd_vs_cpu)
{
	const int n = 4096;
	struct npu_bo code, a, b, c;
	float *pa, *pb, *pc;
	uint64_t args[4];
	int i;

	if (!(npu_param(self->fd, DRM_NPU_PARAM_FEATURES) &
	      DRM_NPU_FEATURE_USER_CODE))
		SKIP(return, "no user code on this device");
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &code), 0);
	memcpy(code.map, npu_code_vadd_f32, sizeof(npu_code_vadd_f32));
	ASSERT_EQ(npu_bo_new(self->fd, n * 4, 0, &a), 0);
	ASSERT_EQ(npu_bo_new(self->fd, n * 4, 0, &b), 0);
	ASSERT_EQ(npu_bo_new(self->fd, n * 4 + 4, 0, &c), 0);
	pa = a.map;
	pb = b.map;
	pc = c.map;
	for (i = 0; i < n; i++) {
		pa[i] = i * 0.5f;
		pb[i] = 1.0f / (i + 1);
	}
	args[0] = a.va;
	args[1] = b.va;
	args[2] = c.va;
	args[3] = n;
	npu_emit_launch_code(&self->cmd, code.va, 1, 1, 4, args);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so), 0);
	for (i = 0; i < n; i++)
		ASSERT_EQ(pc[i], pa[i] + pb[i]);
	ASSERT_EQ(pc[n], 0);
}

/* A LAUNCH of a former built-in math id (3, vadd) is an unknown kernel:
 * the job faults BAD_KERNEL and the queue goes on. */
TEST_F(npu, launch_math_id_is_bad_kernel)
{
	uint64_t args[4] = { 0, 0, 0, 0 };
	struct drm_npu_get_fault f = { 0 };
	struct npu_bo b;

	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	npu_emit_launch(&self->cmd, 3, 1, 4, args);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so),
		  -EFAULT);
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_GET_FAULT, &f), 0);
	ASSERT_EQ(f.cause, NPU_ERR_BAD_KERNEL);
	npu_emit_fill(&self->cmd, b.va, 5, 4);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so), 0);
	ASSERT_EQ(((uint32_t *)b.map)[0], 5);
}

TEST_F(npu, timestamps_monotonic)
{
	struct npu_bo t;
	uint64_t *ts;
	uint64_t args[1] = { 2000000 };	/* 2 ms */

	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &t), 0);
	ts = t.map;
	npu_emit_timestamp(&self->cmd, t.va);
	npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_SPIN, 1, 1, args);
	npu_emit_timestamp(&self->cmd, t.va + 8);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so), 0);
	ASSERT_NE(ts[0], 0);
	ASSERT_GT(ts[1], ts[0]);
	ASSERT_LE(ts[1], npu_param(self->fd, DRM_NPU_PARAM_CLOCK));
}

/* Jobs of one queue run in order: a slow job, then a fast one. */
TEST_F(npu, v3d_submit_cl_in_order)
{
	struct npu_bo b;
	uint64_t spin[1] = { 30000000 };	/* 30 ms */
	struct drm_npu_job j[2];
	uint64_t va;
	uint32_t size;
	uint32_t *p;

	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	p = b.map;
	npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_SPIN, 1, 1, spin);
	npu_emit_fill(&self->cmd, b.va, 1, 4);
	npu_cmd_end(&self->cmd, &va, &size);
	ASSERT_EQ(npu_submit_one(self->fd, self->q, va, size, 0), 0);
	npu_emit_fill(&self->cmd, b.va, 2, 4);
	npu_cmd_end(&self->cmd, &va, &size);
	npu_job_init(&j[0], self->q, va, size);
	ASSERT_EQ(npu_submit_one(self->fd, self->q, va, size, self->so), 0);
	ASSERT_EQ(npu_syncobj_wait(self->fd, self->so, NPU_TIMEOUT_NS), 0);
	ASSERT_EQ(p[0], 2);
}

/* Many jobs on one queue: more than the ring holds, so it wraps. */
TEST_F(npu, many_jobs_ring_wrap)
{
	const int n = 600;
	struct npu_bo b;
	uint64_t va;
	uint32_t size;
	uint32_t *p;
	int i;

	ASSERT_EQ(npu_bo_new(self->fd, n * 4, 0, &b), 0);
	p = b.map;
	for (i = 0; i < n; i++) {
		npu_emit_fill(&self->cmd, b.va + i * 4, i + 1, 4);
		npu_cmd_end(&self->cmd, &va, &size);
		ASSERT_EQ(npu_submit_one(self->fd, self->q, va, size,
					 i == n - 1 ? self->so : 0), 0);
	}
	ASSERT_EQ(npu_syncobj_wait(self->fd, self->so, NPU_TIMEOUT_NS), 0);
	for (i = 0; i < n; i++)
		ASSERT_EQ(p[i], (uint32_t)(i + 1));
}

/*
 * Two rings run at the same time: ring 1 waits on a semaphore that ring 0
 * signals after ring 1's job started. Serialised rings would deadlock.
 */
TEST_F(npu, concurrent_rings_semaphore)
{
	struct npu_bo sem;
	uint32_t q1, so1;
	uint64_t va;
	uint32_t size;
	uint64_t spin[1] = { 20000000 };

	if (npu_param(self->fd, DRM_NPU_PARAM_NUM_COMPUTE_RINGS) < 2)
		SKIP(return, "one compute ring");
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, 1, &q1), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so1), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &sem), 0);

	npu_emit_sem(&self->cmd, NPU_OP_SEM_WAIT, sem.va, 1);
	npu_cmd_end(&self->cmd, &va, &size);
	ASSERT_EQ(npu_submit_one(self->fd, q1, va, size, so1), 0);

	npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_SPIN, 1, 1, spin);
	npu_emit_sem(&self->cmd, NPU_OP_SEM_SIGNAL, sem.va, 1);
	npu_cmd_end(&self->cmd, &va, &size);
	ASSERT_EQ(npu_submit_one(self->fd, self->q, va, size, self->so), 0);

	ASSERT_EQ(npu_syncobj_wait(self->fd, so1, NPU_TIMEOUT_NS), 0);
	ASSERT_EQ(npu_syncobj_wait(self->fd, self->so, NPU_TIMEOUT_NS), 0);
	ASSERT_EQ(npu_syncobj_error(self->fd, so1), 0);
	ASSERT_EQ(npu_syncobj_error(self->fd, self->so), 0);
}

/* One SUBMIT: compute fills A, copy ring copies A to B after it. */
TEST_F(npu, submit_array_with_dependency)
{
	struct drm_npu_sync mid = { 0 }, end = { 0 };
	struct drm_npu_job j[2];
	struct npu_bo a, b;
	uint32_t so_mid;
	uint64_t va0, va1;
	uint32_t s0, s1;
	uint64_t spin[1] = { 20000000 };
	uint32_t *pb;
	int i;

	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so_mid), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &a), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &b), 0);
	npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_SPIN, 1, 1, spin);
	npu_emit_fill(&self->cmd, a.va, 0x1234, 1 << 16);
	npu_cmd_end(&self->cmd, &va0, &s0);
	npu_emit_copy(&self->cmd, a.va, b.va, 1 << 16);
	npu_cmd_end(&self->cmd, &va1, &s1);

	mid.handle = so_mid;
	end.handle = self->so;
	npu_job_init(&j[0], self->q, va0, s0);
	j[0].out_syncs = (uintptr_t)&mid;
	j[0].out_sync_count = 1;
	j[0].bo_handles = (uintptr_t)&a.handle;
	j[0].bo_count = 1;
	npu_job_init(&j[1], self->cq, va1, s1);
	j[1].in_syncs = (uintptr_t)&mid;
	j[1].in_sync_count = 1;
	j[1].out_syncs = (uintptr_t)&end;
	j[1].out_sync_count = 1;
	ASSERT_EQ(npu_submit(self->fd, j, 2), 0);
	ASSERT_EQ(npu_syncobj_wait(self->fd, self->so, NPU_TIMEOUT_NS), 0);
	pb = b.map;
	for (i = 0; i < 1 << 14; i++)
		ASSERT_EQ(pb[i], 0x1234);
}

/*
 * Arrays of jobs for one load-balanced queue, while another queue keeps a
 * ring busy: the queue may move between rings only when it is idle, and
 * every job of an array runs, in order.
 */
TEST_F(npu, submit_array_balanced_queue)
{
	uint64_t spin[1] = { 2000000 };
	struct drm_npu_job j[8];
	uint32_t qa, round, so_busy;
	struct npu_bo b;
	uint64_t va;
	uint32_t size;
	int i;

	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, DRM_NPU_RING_ANY,
				&qa), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so_busy), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	for (round = 0; round < 30; round++) {
		struct drm_npu_sync out = { .handle = self->so };

		if (round % 5 == 0) {
			npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_SPIN, 1, 1,
					spin);
			npu_cmd_end(&self->cmd, &va, &size);
			ASSERT_EQ(npu_submit_one(self->fd, self->q, va, size,
						 so_busy), 0);
		}
		for (i = 0; i < 8; i++) {
			npu_emit_fill(&self->cmd, b.va + 4 * i,
				      round * 100 + i, 4 * (8 - i));
			npu_cmd_end(&self->cmd, &va, &size);
			npu_job_init(&j[i], qa, va, size);
		}
		j[7].out_syncs = (uintptr_t)&out;
		j[7].out_sync_count = 1;
		ASSERT_EQ(npu_submit(self->fd, j, 8), 0);
		ASSERT_EQ(npu_syncobj_wait(self->fd, self->so, NPU_TIMEOUT_NS),
			  0);
		for (i = 0; i < 8; i++)
			ASSERT_EQ(((uint32_t *)b.map)[i], round * 100 + i);
		if (self->cmd.n > 12000)
			self->cmd.n = self->cmd.start = 0;
	}
}

/* Timeline points out of one submission array, then waited in order. */
TEST_F(npu, timeline_points)
{
	struct drm_npu_sync pts[3];
	struct drm_npu_job j[3];
	struct npu_bo b;
	uint32_t tl;
	uint64_t va, point;
	uint32_t size;
	uint64_t spin[1] = { 10000000 };
	int i;

	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &tl), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	for (i = 0; i < 3; i++) {
		npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_SPIN, 1, 1, spin);
		npu_emit_fill(&self->cmd, b.va + i * 4, i + 10, 4);
		npu_cmd_end(&self->cmd, &va, &size);
		npu_job_init(&j[i], self->q, va, size);
		pts[i].handle = tl;
		pts[i].flags = 0;
		pts[i].point = i + 1;
		j[i].out_syncs = (uintptr_t)&pts[i];
		j[i].out_sync_count = 1;
	}
	/* job 2 also waits for point 2 of the same timeline */
	j[2].in_syncs = (uintptr_t)&pts[1];
	j[2].in_sync_count = 1;
	ASSERT_EQ(npu_submit(self->fd, j, 3), 0);
	point = 3;
	ASSERT_EQ(drmSyncobjTimelineWait(self->fd, &tl, &point, 1,
					 npu_abs_timeout(NPU_TIMEOUT_NS), 0,
					 NULL), 0);
	ASSERT_EQ(drmSyncobjQuery(self->fd, &tl, &point, 1), 0);
	ASSERT_EQ(point, 3);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(((uint32_t *)b.map)[i], (uint32_t)(i + 10));
}

/* In-fence from an earlier SUBMIT, through a syncobj. */
TEST_F(npu, v3d_submit_cl_syncobj_chain)
{
	struct drm_npu_sync in = { .handle = self->so };
	struct drm_npu_job j;
	struct npu_bo b;
	uint32_t so2;
	uint64_t va;
	uint32_t size;
	uint64_t spin[1] = { 20000000 };

	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so2), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_SPIN, 1, 1, spin);
	npu_emit_fill(&self->cmd, b.va, 5, 4);
	npu_cmd_end(&self->cmd, &va, &size);
	ASSERT_EQ(npu_submit_one(self->fd, self->q, va, size, self->so), 0);
	/* on another ring: only the syncobj orders them */
	npu_emit_copy(&self->cmd, b.va, b.va + 64, 4);
	npu_cmd_end(&self->cmd, &va, &size);
	npu_job_init(&j, self->cq, va, size);
	j.in_syncs = (uintptr_t)&in;
	j.in_sync_count = 1;
	in.handle = self->so;
	{
		struct drm_npu_sync out = { .handle = so2 };

		j.out_syncs = (uintptr_t)&out;
		j.out_sync_count = 1;
		ASSERT_EQ(npu_submit(self->fd, &j, 1), 0);
	}
	ASSERT_EQ(npu_syncobj_wait(self->fd, so2, NPU_TIMEOUT_NS), 0);
	ASSERT_EQ(((uint32_t *)b.map)[16], 5);
}

TEST_F(npu, queue_any_ring_and_priorities)
{
	uint32_t qa, qh, ql, so[3];
	struct npu_bo b;
	uint64_t va;
	uint32_t size;
	int i;

	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, DRM_NPU_RING_ANY,
				&qa), 0);
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_HIGH, 0, &qh), 0);
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COPY,
				DRM_NPU_PRIORITY_LOW, DRM_NPU_RING_ANY, &ql),
		  0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	uint32_t qs[3] = { qa, qh, ql };

	for (i = 0; i < 3; i++) {
		ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so[i]), 0);
		npu_emit_fill(&self->cmd, b.va + i * 4, 100 + i, 4);
		npu_cmd_end(&self->cmd, &va, &size);
		ASSERT_EQ(npu_submit_one(self->fd, qs[i], va, size, so[i]), 0);
	}
	ASSERT_EQ(drmSyncobjWait(self->fd, so, 3,
				 npu_abs_timeout(NPU_TIMEOUT_NS),
				 DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL, NULL), 0);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(((uint32_t *)b.map)[i], (uint32_t)(100 + i));
}

TEST_F(npu, bo_wait_busy_then_idle)
{
	struct drm_npu_bo_wait w = { 0 };
	struct drm_npu_job j;
	struct npu_bo b;
	uint64_t va;
	uint32_t size;
	uint64_t spin[1] = { 200000000 };	/* 200 ms */

	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_SPIN, 1, 1, spin);
	npu_cmd_end(&self->cmd, &va, &size);
	npu_job_init(&j, self->q, va, size);
	j.bo_handles = (uintptr_t)&b.handle;
	j.bo_count = 1;
	ASSERT_EQ(npu_submit(self->fd, &j, 1), 0);
	w.handle = b.handle;
	w.timeout_ns = npu_abs_timeout(1000000);
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_WAIT, &w), -ETIME);
	w.timeout_ns = npu_abs_timeout(NPU_TIMEOUT_NS);
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_WAIT, &w), 0);
}

/* A BO closed while a job uses it stays mapped until the job is done. */
TEST_F(npu, close_bo_while_job_runs)
{
	struct drm_npu_job j;
	struct npu_bo b, out;
	uint64_t va;
	uint32_t size;
	uint64_t spin[1] = { 50000000 };

	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &out), 0);
	((uint32_t *)b.map)[0] = 0x5a5a;
	npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_SPIN, 1, 1, spin);
	npu_emit_copy(&self->cmd, b.va, out.va, 4);
	npu_cmd_end(&self->cmd, &va, &size);
	npu_job_init(&j, self->q, va, size);
	j.bo_handles = (uintptr_t)&b.handle;
	j.bo_count = 1;
	{
		struct drm_npu_sync o = { .handle = self->so };

		j.out_syncs = (uintptr_t)&o;
		j.out_sync_count = 1;
		ASSERT_EQ(npu_submit(self->fd, &j, 1), 0);
	}
	npu_bo_free(self->fd, &b);
	ASSERT_EQ(npu_syncobj_wait(self->fd, self->so, NPU_TIMEOUT_NS), 0);
	ASSERT_EQ(npu_syncobj_error(self->fd, self->so), 0);
	ASSERT_EQ(((uint32_t *)out.map)[0], 0x5a5a);
}

/* Destroying a queue lets its submitted jobs finish. */
TEST_F(npu, queue_destroy_with_jobs)
{
	struct npu_bo b;
	uint64_t va;
	uint32_t size;
	uint64_t spin[1] = { 30000000 };

	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_SPIN, 1, 1, spin);
	npu_emit_fill(&self->cmd, b.va, 9, 4);
	npu_cmd_end(&self->cmd, &va, &size);
	ASSERT_EQ(npu_submit_one(self->fd, self->q, va, size, self->so), 0);
	ASSERT_EQ(npu_queue_free(self->fd, self->q), 0);
	ASSERT_EQ(npu_syncobj_wait(self->fd, self->so, NPU_TIMEOUT_NS), 0);
	ASSERT_EQ(((uint32_t *)b.map)[0], 9);
}

/*
 * A contended ring: low-priority jobs queued first, one high-priority job
 * after them. The high-priority job overtakes most of them.
 */
TEST_F(npu, priority_high_overtakes_low)
{
	const int n = 24;
	/* 1 s: all low jobs must be queued while ring 0 is still busy, even
	 * on the slow debug kernel (KASAN, lockdep), where 100 ms was not
	 * always enough
	 */
	uint64_t spin[1] = { 1000000000 };
	uint64_t *ts, va;
	uint32_t ql, qh, so_hi, size;
	struct npu_bo t;
	int i, later = 0;

	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_LOW, 0, &ql), 0);
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_HIGH, 0, &qh), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so_hi), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &t), 0);
	ts = t.map;

	/* occupy ring 0 */
	npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_SPIN, 1, 1, spin);
	npu_cmd_end(&self->cmd, &va, &size);
	ASSERT_EQ(npu_submit_one(self->fd, self->q, va, size, 0), 0);
	for (i = 0; i < n; i++) {
		npu_emit_timestamp(&self->cmd, t.va + 8 * i);
		npu_cmd_end(&self->cmd, &va, &size);
		ASSERT_EQ(npu_submit_one(self->fd, ql, va, size,
					 i == n - 1 ? self->so : 0), 0);
	}
	npu_emit_timestamp(&self->cmd, t.va + 8 * n);
	npu_cmd_end(&self->cmd, &va, &size);
	ASSERT_EQ(npu_submit_one(self->fd, qh, va, size, so_hi), 0);

	ASSERT_EQ(npu_syncobj_wait(self->fd, self->so, NPU_TIMEOUT_NS), 0);
	ASSERT_EQ(npu_syncobj_wait(self->fd, so_hi, NPU_TIMEOUT_NS), 0);
	for (i = 0; i < n; i++) {
		ASSERT_NE(ts[i], 0);
		if (ts[i] > ts[n])
			later++;
	}
	ASSERT_GE(later, n / 2);
}

struct thr {
	int fd;
	int idx;
	int ret;
};

static void *thr_fail(struct thr *t, int step)
{
	t->ret = step;
	return NULL;
}

/* one thread: own queue (any ring), own BO, 100 fills checked in order */
static void *submit_thread(void *arg)
{
	struct thr *t = arg;
	struct npu_cmd c;
	struct npu_bo b;
	uint32_t q, so;
	uint64_t va;
	uint32_t size;
	int i;

	t->ret = 1;
	if (npu_queue_new(t->fd, t->idx & 1 ? DRM_NPU_RING_KIND_COPY :
			  DRM_NPU_RING_KIND_COMPUTE, DRM_NPU_PRIORITY_NORMAL,
			  DRM_NPU_RING_ANY, &q) ||
	    drmSyncobjCreate(t->fd, 0, &so) || npu_cmd_new(t->fd, &c, 1 << 16))
		return NULL;
	for (i = 0; i < 100; i++) {
		if (npu_bo_new(t->fd, 8192, 0, &b))
			return thr_fail(t, 11);
		npu_emit_fill(&c, b.va, t->idx * 1000 + i, 8192);
		npu_cmd_end(&c, &va, &size);
		if (c.n > 16000)
			c.n = c.start = 0;
		{
			struct drm_npu_sync o = { .handle = so };
			struct drm_npu_job j;

			/* the job lists the BO: closing it below is safe */
			npu_job_init(&j, q, va, size);
			j.bo_handles = (uintptr_t)&b.handle;
			j.bo_count = 1;
			j.out_syncs = (uintptr_t)&o;
			j.out_sync_count = 1;
			if (npu_submit(t->fd, &j, 1))
				return thr_fail(t, 12);
		}
		/* close the BO while the job may still run */
		if (i % 3 == 0) {
			munmap(b.map, b.size);
			npu_gem_close(t->fd, b.handle);
			if (npu_syncobj_wait(t->fd, so, NPU_TIMEOUT_NS))
				return thr_fail(t, 13);
			continue;
		}
		if (npu_syncobj_wait(t->fd, so, NPU_TIMEOUT_NS) ||
		    npu_syncobj_error(t->fd, so))
			return thr_fail(t, 14);
		if (((uint32_t *)b.map)[2047] != (uint32_t)(t->idx * 1000 + i))
			return thr_fail(t, 15);
		npu_bo_free(t->fd, &b);
	}
	t->ret = 0;
	return NULL;
}

/* Threads of one file submit, create and close concurrently. */
TEST_F_TIMEOUT(npu, threads_concurrent_submit, NPU_BO_HEAVY_TIMEOUT)
{
	struct thr t[6];
	pthread_t th[6];
	int i;

	for (i = 0; i < 6; i++) {
		t[i].fd = self->fd;
		t[i].idx = i;
		ASSERT_EQ(pthread_create(&th[i], NULL, submit_thread, &t[i]),
			  0);
	}
	for (i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(t[i].ret, 0);
	}
}

/* ---- SUBMIT holding a destroyed queue's last reference ---------------- */

struct last_ref_submit {
	int fd;
	struct drm_npu_job job;
	int ret;
	int done;		/* set when the SUBMIT returned */
	uint32_t gate_so;	/* 0: do not look */
	int gate_signalled;	/* gate_so had signalled when SUBMIT returned */
};

static void *last_ref_submit_thread(void *arg)
{
	struct last_ref_submit *t = arg;

	t->ret = npu_submit(t->fd, &t->job, 1);
	if (t->gate_so)
		t->gate_signalled = !drmSyncobjWait(t->fd, &t->gate_so, 1, 0,
						    0, NULL);
	__atomic_store_n(&t->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * A SUBMIT that finds its queue destroyed meanwhile (QUEUE_DESTROY during
 * the SUBMIT) holds the queue's last reference, and releasing the queue
 * waits until its jobs reached a ring: here until a gate job of another
 * file opens. Other SUBMITs of the file must not wait for that (the one
 * that would open the gate could be among them). The first SUBMIT is held
 * inside the ioctl, after it took the queue reference, by its in-sync
 * array lying on a userfaultfd page; the queue is destroyed and the gate
 * job queued meanwhile, then the page is supplied.
 */
TEST_F(npu, submit_dropping_last_queue_ref_does_not_stall_others)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct uffdio_copy cp = { 0 };
	struct last_ref_submit t1 = { 0 }, t2 = { 0 };
	struct drm_npu_sync *in_sync;
	struct pollfd pfd;
	struct uffd_msg msg;
	struct npu_bo sem;
	struct npu_cmd gcmd;
	pthread_t th1, th2;
	uint32_t q, gq, gate, gate2, so2;
	uint64_t va;
	uint32_t size;
	int uffd, fd2, sfd, i;
	void *page, *src;

	i = npu_uffd_page(&uffd, &page);
	if (i == 1)
		SKIP(return, "no userfaultfd (errno %d)", errno);
	ASSERT_EQ(i, 0);
	src = mmap(NULL, pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(src, MAP_FAILED);

	/*
	 * The gate: a job of another file waiting for a word we write, on
	 * another ring than q's (a job waits only for the start of a job of
	 * its own ring, which runs them in order).
	 */
	if (npu_param(self->fd, DRM_NPU_PARAM_NUM_COMPUTE_RINGS) < 2)
		SKIP(return, "one compute ring");
	fd2 = npu_open();
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(npu_queue_new(fd2, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, 1, &gq), 0);
	ASSERT_EQ(npu_bo_new(fd2, 4096, 0, &sem), 0);
	ASSERT_EQ(npu_cmd_new(fd2, &gcmd, 4096), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &gate), 0);
	ASSERT_EQ(drmSyncobjHandleToFD(self->fd, gate, &sfd), 0);
	ASSERT_EQ(drmSyncobjFDToHandle(fd2, sfd, &gate2), 0);
	close(sfd);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so2), 0);

	/* SUBMIT 1: a job on queue q whose in-sync array is not there yet */
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, 0, &q), 0);
	t1.fd = self->fd;
	npu_job_init(&t1.job, q, 0, 0);
	t1.job.in_syncs = (uintptr_t)page;
	t1.job.in_sync_count = 1;
	ASSERT_EQ(pthread_create(&th1, NULL, last_ref_submit_thread, &t1), 0);
	pfd.fd = uffd;
	pfd.events = POLLIN;
	ASSERT_EQ(poll(&pfd, 1, 30000), 1);
	ASSERT_EQ(read(uffd, &msg, sizeof(msg)), sizeof(msg));
	ASSERT_EQ(msg.event, UFFD_EVENT_PAGEFAULT);

	/* SUBMIT 1 holds q's reference: q goes, the gate job is queued */
	ASSERT_EQ(npu_queue_free(self->fd, q), 0);
	npu_emit_sem(&gcmd, NPU_OP_SEM_WAIT, sem.va, 1);
	npu_cmd_end(&gcmd, &va, &size);
	ASSERT_EQ(npu_submit_one(fd2, gq, va, size, gate2), 0);

	/* now SUBMIT 1 goes on: its job waits for the gate */
	in_sync = src;
	in_sync->handle = gate;
	cp.dst = (uintptr_t)page;
	cp.src = (uintptr_t)src;
	cp.len = pg;
	ASSERT_EQ(ioctl(uffd, UFFDIO_COPY, &cp), 0);

	/* SUBMIT 2 on the same file, started while the gate is closed */
	t2.fd = self->fd;
	t2.gate_so = gate;
	npu_job_init(&t2.job, self->cq, 0, 0);
	ASSERT_EQ(pthread_create(&th2, NULL, last_ref_submit_thread, &t2), 0);
	for (i = 0; i < 500 && !__atomic_load_n(&t2.done, __ATOMIC_ACQUIRE);
	     i++)
		usleep(10000);
	TH_LOG("SUBMIT 2 %s within %d ms; SUBMIT 1 %s", t2.done ?
	       "returned" : "did not return", i * 10,
	       __atomic_load_n(&t1.done, __ATOMIC_ACQUIRE) ?
	       "had returned" : "still waited for its queue");

	/* open the gate, whatever happened */
	((volatile uint32_t *)sem.map)[0] = 1;
	pthread_join(th2, NULL);
	pthread_join(th1, NULL);
	EXPECT_EQ(t1.ret, 0);
	EXPECT_EQ(t2.ret, 0);
	EXPECT_EQ(t2.gate_signalled, 0)
		TH_LOG("SUBMIT 2 waited until the gate job was done");
	EXPECT_EQ(npu_syncobj_wait(self->fd, gate, NPU_TIMEOUT_NS), 0);
	EXPECT_EQ(npu_syncobj_error(self->fd, gate), 0);

	npu_bo_free(fd2, &gcmd.bo);
	npu_bo_free(fd2, &sem);
	close(fd2);
	close(uffd);
	munmap(page, pg);
	munmap(src, pg);
}

TEST_HARNESS_MAIN
