// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_syncobj_test - the generic syncobj ioctls on fences of npu jobs:
 * wait any / all, timeouts, wait-for-submit, timeline points, signal order,
 * sync_file export and import. Names follow IGT's syncobj_wait and
 * syncobj_timeline where the case is the same.
 */
#include <poll.h>
#include <pthread.h>
#include "npu_test.h"
#include "kselftest_harness.h"

FIXTURE(sync) {
	int fd;
	uint32_t q;
	uint32_t q1;
	struct npu_cmd cmd;
};

FIXTURE_SETUP(sync)
{
	self->fd = npu_open();
	if (self->fd < 0)
		SKIP(return, "no npu device");
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, 0, &self->q), 0);
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL,
				npu_param(self->fd,
					  DRM_NPU_PARAM_NUM_COMPUTE_RINGS) > 1,
				&self->q1), 0);
	ASSERT_EQ(npu_cmd_new(self->fd, &self->cmd, 1 << 16), 0);
}

FIXTURE_TEARDOWN(sync)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* submit a job spinning for ns on queue, signalling syncobj so */
static int spin_job(int fd, struct npu_cmd *c, uint32_t queue, uint64_t ns,
		    uint32_t so, uint64_t point)
{
	struct drm_npu_sync out = { .handle = so, .point = point };
	uint64_t args[1] = { ns };
	struct drm_npu_job j;
	uint64_t va;
	uint32_t size;

	npu_emit_launch(c, NPU_KERNEL_TEST_SPIN, 1, 1, args);
	npu_cmd_end(c, &va, &size);
	npu_job_init(&j, queue, va, size);
	j.out_syncs = (uintptr_t)&out;
	j.out_sync_count = 1;
	return npu_submit(fd, &j, 1);
}

TEST_F(sync, invalid_wait_bad_flags)
{
	uint32_t so;

	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so), 0);
	ASSERT_EQ(drmSyncobjWait(self->fd, &so, 1, 0, 0xff, NULL), -EINVAL);
}

TEST_F(sync, invalid_single_wait_unsubmitted)
{
	uint32_t so;

	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so), 0);
	ASSERT_EQ(drmSyncobjWait(self->fd, &so, 1, npu_abs_timeout(0), 0,
				 NULL), -EINVAL);
}

TEST_F(sync, single_wait_submitted)
{
	uint32_t so;

	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so), 0);
	ASSERT_EQ(spin_job(self->fd, &self->cmd, self->q, 1000000, so, 0), 0);
	ASSERT_EQ(drmSyncobjWait(self->fd, &so, 1,
				 npu_abs_timeout(NPU_TIMEOUT_NS), 0, NULL), 0);
}

TEST_F(sync, wait_timeout_busy)
{
	uint64_t t0;
	uint32_t so;

	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so), 0);
	ASSERT_EQ(spin_job(self->fd, &self->cmd, self->q, 300000000, so, 0),
		  0);
	t0 = npu_now_ns();
	ASSERT_EQ(drmSyncobjWait(self->fd, &so, 1,
				 npu_abs_timeout(20000000), 0, NULL), -ETIME);
	ASSERT_GE(npu_now_ns() - t0, 10000000);
	/* a timeout of 0 polls */
	ASSERT_EQ(drmSyncobjWait(self->fd, &so, 1, 0, 0, NULL), -ETIME);
	ASSERT_EQ(drmSyncobjWait(self->fd, &so, 1,
				 npu_abs_timeout(NPU_TIMEOUT_NS), 0, NULL), 0);
}

TEST_F(sync, wait_any_complex)
{
	uint32_t so[2], first = 99;

	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so[0]), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so[1]), 0);
	ASSERT_EQ(spin_job(self->fd, &self->cmd, self->q, 500000000, so[0], 0),
		  0);
	ASSERT_EQ(spin_job(self->fd, &self->cmd, self->q1, 1000000, so[1], 0),
		  0);
	ASSERT_EQ(drmSyncobjWait(self->fd, so, 2,
				 npu_abs_timeout(NPU_TIMEOUT_NS), 0, &first),
		  0);
	ASSERT_EQ(first, 1);
	ASSERT_EQ(drmSyncobjWait(self->fd, &so[0], 1, 0, 0, NULL), -ETIME);
	ASSERT_EQ(drmSyncobjWait(self->fd, so, 2,
				 npu_abs_timeout(NPU_TIMEOUT_NS),
				 DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL, NULL), 0);
}

TEST_F(sync, wait_all_complex)
{
	uint32_t so[4];
	int i;

	for (i = 0; i < 4; i++) {
		ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so[i]), 0);
		ASSERT_EQ(spin_job(self->fd, &self->cmd,
				   i & 1 ? self->q1 : self->q,
				   (i + 1) * 5000000, so[i], 0), 0);
	}
	ASSERT_EQ(drmSyncobjWait(self->fd, so, 4,
				 npu_abs_timeout(NPU_TIMEOUT_NS),
				 DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL, NULL), 0);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(drmSyncobjWait(self->fd, &so[i], 1, 0, 0, NULL), 0);
}

struct submit_later {
	int fd;
	struct npu_cmd *cmd;
	uint32_t q;
	uint32_t so;
	int ret;
};

static void *submit_later_thread(void *arg)
{
	struct submit_later *s = arg;

	usleep(50000);
	s->ret = spin_job(s->fd, s->cmd, s->q, 1000000, s->so, 0);
	return NULL;
}

TEST_F(sync, wait_for_submit)
{
	struct submit_later s = { .fd = self->fd, .cmd = &self->cmd,
				  .q = self->q };
	pthread_t t;

	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &s.so), 0);
	ASSERT_EQ(pthread_create(&t, NULL, submit_later_thread, &s), 0);
	ASSERT_EQ(drmSyncobjWait(self->fd, &s.so, 1,
				 npu_abs_timeout(NPU_TIMEOUT_NS),
				 DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT, NULL),
		  0);
	pthread_join(t, NULL);
	ASSERT_EQ(s.ret, 0);
}

/* Fences of one queue signal in submission order. */
TEST_F(sync, signal_order)
{
	uint32_t so[8];
	int i;

	for (i = 0; i < 8; i++) {
		ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so[i]), 0);
		ASSERT_EQ(spin_job(self->fd, &self->cmd, self->q,
				   (8 - i) * 2000000, so[i], 0), 0);
	}
	for (i = 7; i >= 0; i--) {
		uint32_t first = 99;

		ASSERT_EQ(drmSyncobjWait(self->fd, so, i + 1,
					 npu_abs_timeout(NPU_TIMEOUT_NS), 0,
					 &first), 0);
		if (i == 7)
			ASSERT_EQ(first, 0);
	}
	/* when the last one is done, all are */
	ASSERT_EQ(drmSyncobjWait(self->fd, &so[7], 1,
				 npu_abs_timeout(NPU_TIMEOUT_NS), 0, NULL), 0);
	ASSERT_EQ(drmSyncobjWait(self->fd, so, 8, 0,
				 DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL, NULL), 0);
}

TEST_F(sync, timeline_wait_point)
{
	uint32_t tl;
	uint64_t p;

	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &tl), 0);
	ASSERT_EQ(spin_job(self->fd, &self->cmd, self->q, 1000000, tl, 1), 0);
	ASSERT_EQ(spin_job(self->fd, &self->cmd, self->q, 300000000, tl, 2),
		  0);
	p = 1;
	ASSERT_EQ(drmSyncobjTimelineWait(self->fd, &tl, &p, 1,
					 npu_abs_timeout(NPU_TIMEOUT_NS), 0,
					 NULL), 0);
	p = 2;
	ASSERT_EQ(drmSyncobjTimelineWait(self->fd, &tl, &p, 1,
					 npu_abs_timeout(1000000), 0, NULL),
		  -ETIME);
	ASSERT_EQ(drmSyncobjTimelineWait(self->fd, &tl, &p, 1,
					 npu_abs_timeout(NPU_TIMEOUT_NS), 0,
					 NULL), 0);
	ASSERT_EQ(drmSyncobjQuery(self->fd, &tl, &p, 1), 0);
	ASSERT_EQ(p, 2);
}

TEST_F(sync, timeline_wait_for_submit_point)
{
	uint32_t tl;
	uint64_t p = 5;

	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &tl), 0);
	ASSERT_EQ(drmSyncobjTimelineWait(self->fd, &tl, &p, 1,
					 npu_abs_timeout(1000000),
					 DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT,
					 NULL), -ETIME);
	ASSERT_EQ(spin_job(self->fd, &self->cmd, self->q, 1000000, tl, 5), 0);
	ASSERT_EQ(drmSyncobjTimelineWait(self->fd, &tl, &p, 1,
					 npu_abs_timeout(NPU_TIMEOUT_NS),
					 DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT,
					 NULL), 0);
}

/* A job waits for a timeline point that the CPU signals. */
TEST_F(sync, timeline_host_signal_unblocks_job)
{
	struct drm_npu_sync in, out;
	struct drm_npu_job j;
	uint32_t tl, done;
	uint64_t p = 3;
	uint64_t va;
	uint32_t size;

	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &tl), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &done), 0);
	/* make point 3 exist but unsignalled: chain it after a slow job */
	ASSERT_EQ(spin_job(self->fd, &self->cmd, self->q1, 100000000, tl, 3),
		  0);
	in = (struct drm_npu_sync){ .handle = tl, .point = 3 };
	out = (struct drm_npu_sync){ .handle = done };
	npu_cmd_end(&self->cmd, &va, &size);
	npu_job_init(&j, self->q, 0, 0);
	j.in_syncs = (uintptr_t)&in;
	j.in_sync_count = 1;
	j.out_syncs = (uintptr_t)&out;
	j.out_sync_count = 1;
	ASSERT_EQ(npu_submit(self->fd, &j, 1), 0);
	ASSERT_EQ(drmSyncobjWait(self->fd, &done, 1, npu_abs_timeout(1000000),
				 0, NULL), -ETIME);
	ASSERT_EQ(drmSyncobjTimelineWait(self->fd, &tl, &p, 1,
					 npu_abs_timeout(NPU_TIMEOUT_NS), 0,
					 NULL), 0);
	ASSERT_EQ(drmSyncobjWait(self->fd, &done, 1,
				 npu_abs_timeout(NPU_TIMEOUT_NS), 0, NULL), 0);
}

/* Export a job's fence as a sync_file, poll it, import it elsewhere. */
TEST_F(sync, sync_file_export_import)
{
	struct drm_npu_sync in;
	struct drm_npu_job j;
	struct pollfd pfd;
	uint32_t so, so2, done;
	int sfd;

	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so2), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &done), 0);
	ASSERT_EQ(spin_job(self->fd, &self->cmd, self->q, 100000000, so, 0),
		  0);
	ASSERT_EQ(drmSyncobjExportSyncFile(self->fd, so, &sfd), 0);
	pfd.fd = sfd;
	pfd.events = POLLIN;
	ASSERT_EQ(poll(&pfd, 1, 0), 0);
	ASSERT_EQ(drmSyncobjImportSyncFile(self->fd, so2, sfd), 0);
	in = (struct drm_npu_sync){ .handle = so2 };
	npu_job_init(&j, self->q1, 0, 0);
	j.in_syncs = (uintptr_t)&in;
	j.in_sync_count = 1;
	{
		struct drm_npu_sync out = { .handle = done };

		j.out_syncs = (uintptr_t)&out;
		j.out_sync_count = 1;
		ASSERT_EQ(npu_submit(self->fd, &j, 1), 0);
	}
	ASSERT_EQ(poll(&pfd, 1, 10000), 1);
	ASSERT_EQ(drmSyncobjWait(self->fd, &done, 1,
				 npu_abs_timeout(NPU_TIMEOUT_NS), 0, NULL), 0);
	close(sfd);
}

TEST_HARNESS_MAIN
