// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_resv_test - jobs publish their fences in the reservation objects
 * (dma_resv) of the BOs they use: DRM_IOCTL_NPU_BO_WAIT on a listed BO and
 * on a command buffer, timeouts, a PRIME export imported by a second file
 * waiting for the first file's jobs (and back), dma-buf poll() as another
 * driver would see it, failed and hung jobs, several queues on one BO, a
 * read-only userptr, a failed SUBMIT leaving no fence, the most BOs and
 * jobs in one SUBMIT, and two files submitting on the same BOs
 * concurrently.
 */
#include <poll.h>
#include <pthread.h>
#include "npu_test.h"
#include "kselftest_harness.h"

#define MS	1000000ull

FIXTURE(resv) {
	int fd;
	uint32_t q;		/* compute ring 0 */
	uint32_t cq;		/* copy ring 0, or 0 when there is none */
	uint32_t so;
	struct npu_cmd cmd;
};

FIXTURE_SETUP(resv)
{
	self->fd = npu_open();
	if (self->fd < 0)
		SKIP(return, "no npu device");
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, 0, &self->q), 0);
	self->cq = 0;
	if (npu_param(self->fd, DRM_NPU_PARAM_NUM_COPY_RINGS))
		ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COPY,
					DRM_NPU_PRIORITY_NORMAL, 0,
					&self->cq), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &self->so), 0);
	ASSERT_EQ(npu_cmd_new(self->fd, &self->cmd, 1 << 16), 0);
}

FIXTURE_TEARDOWN(resv)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* BO_WAIT with a timeout relative to now (0: already expired). */
static int bo_wait(int fd, uint32_t handle, uint64_t rel_ns)
{
	struct drm_npu_bo_wait w = {
		.handle = handle,
		.timeout_ns = rel_ns ? npu_abs_timeout(rel_ns) : 0,
	};

	return npu_ioctl(fd, DRM_IOCTL_NPU_BO_WAIT, &w);
}

/* Submit the commands emitted since the last job, naming n BOs. */
static int submit_bos(int fd, struct npu_cmd *c, uint32_t queue,
		      const uint32_t *handles, uint32_t n, uint32_t so)
{
	struct drm_npu_sync out = { .handle = so };
	struct drm_npu_job j;
	uint64_t va;
	uint32_t size;

	npu_cmd_end(c, &va, &size);
	npu_job_init(&j, queue, va, size);
	j.bo_handles = (uintptr_t)handles;
	j.bo_count = n;
	if (so) {
		j.out_syncs = (uintptr_t)&out;
		j.out_sync_count = 1;
	}
	return npu_submit(fd, &j, 1);
}

static void emit_spin(struct npu_cmd *c, uint64_t ns)
{
	uint64_t args[1] = { ns };

	npu_emit_launch(c, NPU_KERNEL_TEST_SPIN, 1, 1, args);
}

static int syncobj_signaled(int fd, uint32_t so)
{
	return drmSyncobjWait(fd, &so, 1, 0, 0, NULL) == 0;
}

/* BO_WAIT on a BO a long job writes: -ETIME first, then 0, data there. */
TEST_F(resv, bo_wait_long_job)
{
	struct npu_bo b;

	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	emit_spin(&self->cmd, 300 * MS);
	npu_emit_fill(&self->cmd, b.va, 0x7e57, 4);
	ASSERT_EQ(submit_bos(self->fd, &self->cmd, self->q, &b.handle, 1,
			     self->so), 0);
	ASSERT_EQ(bo_wait(self->fd, b.handle, 1 * MS), -ETIME);
	ASSERT_FALSE(syncobj_signaled(self->fd, self->so));
	ASSERT_EQ(bo_wait(self->fd, b.handle, NPU_TIMEOUT_NS), 0);
	/* returned because the job completed, with its results visible */
	ASSERT_TRUE(syncobj_signaled(self->fd, self->so));
	ASSERT_EQ(((uint32_t *)b.map)[0], 0x7e57);
	ASSERT_EQ(bo_wait(self->fd, b.handle, 0), 0);
}

/* The command buffer of a job counts as used, even if not listed. */
TEST_F(resv, bo_wait_command_buffer)
{
	emit_spin(&self->cmd, 200 * MS);
	ASSERT_EQ(submit_bos(self->fd, &self->cmd, self->q, NULL, 0,
			     self->so), 0);
	ASSERT_EQ(bo_wait(self->fd, self->cmd.bo.handle, 1 * MS), -ETIME);
	ASSERT_EQ(bo_wait(self->fd, self->cmd.bo.handle, NPU_TIMEOUT_NS), 0);
	ASSERT_TRUE(syncobj_signaled(self->fd, self->so));
}

/* A timeout already in the past only tests: idle 0, busy -ETIME at once. */
TEST_F(resv, bo_wait_expired_timeout)
{
	struct npu_bo idle, busy;
	uint64_t t0;

	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &idle), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &busy), 0);
	ASSERT_EQ(bo_wait(self->fd, idle.handle, 0), 0);
	emit_spin(&self->cmd, 300 * MS);
	ASSERT_EQ(submit_bos(self->fd, &self->cmd, self->q, &busy.handle, 1,
			     self->so), 0);
	t0 = npu_now_ns();
	ASSERT_EQ(bo_wait(self->fd, busy.handle, 0), -ETIME);
	ASSERT_LT(npu_now_ns() - t0, 100 * MS);
	ASSERT_EQ(bo_wait(self->fd, idle.handle, 0), 0);
	ASSERT_EQ(bo_wait(self->fd, busy.handle, NPU_TIMEOUT_NS), 0);
}

/*
 * A BO exported by one file and imported by another is one buffer with one
 * reservation object: each file's BO_WAIT waits for the other's jobs.
 */
TEST_F(resv, bo_wait_prime_second_file)
{
	struct npu_cmd c2;
	struct npu_bo b;
	uint32_t h2, q2, so2;
	int dfd, fd2;

	fd2 = npu_open();
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	ASSERT_EQ(drmPrimeHandleToFD(self->fd, b.handle, DRM_CLOEXEC, &dfd),
		  0);
	ASSERT_EQ(drmPrimeFDToHandle(fd2, dfd, &h2), 0);
	close(dfd);

	/* job of the first file, wait in the second */
	emit_spin(&self->cmd, 300 * MS);
	ASSERT_EQ(submit_bos(self->fd, &self->cmd, self->q, &b.handle, 1,
			     self->so), 0);
	ASSERT_EQ(bo_wait(fd2, h2, 1 * MS), -ETIME);
	ASSERT_EQ(bo_wait(fd2, h2, NPU_TIMEOUT_NS), 0);
	ASSERT_TRUE(syncobj_signaled(self->fd, self->so));

	/* job of the second file (its own VA of the BO), wait in the first */
	ASSERT_EQ(npu_queue_new(fd2, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, DRM_NPU_RING_ANY,
				&q2), 0);
	ASSERT_EQ(drmSyncobjCreate(fd2, 0, &so2), 0);
	ASSERT_EQ(npu_cmd_new(fd2, &c2, 4096), 0);
	emit_spin(&c2, 300 * MS);
	ASSERT_EQ(submit_bos(fd2, &c2, q2, &h2, 1, so2), 0);
	ASSERT_EQ(bo_wait(self->fd, b.handle, 1 * MS), -ETIME);
	ASSERT_EQ(bo_wait(self->fd, b.handle, NPU_TIMEOUT_NS), 0);
	ASSERT_TRUE(syncobj_signaled(fd2, so2));
	close(fd2);
}

/*
 * Implicit sync as other drivers see it: poll() on the dma-buf reports it
 * busy while a job writes it (POLLIN waits for writers, POLLOUT for all).
 */
TEST_F(resv, dmabuf_poll_sees_job)
{
	struct pollfd pfd;
	struct npu_bo b;
	int dfd;

	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	ASSERT_EQ(drmPrimeHandleToFD(self->fd, b.handle, DRM_CLOEXEC, &dfd),
		  0);
	pfd.fd = dfd;
	pfd.events = POLLIN | POLLOUT;
	ASSERT_EQ(poll(&pfd, 1, 0), 1);
	emit_spin(&self->cmd, 300 * MS);
	ASSERT_EQ(submit_bos(self->fd, &self->cmd, self->q, &b.handle, 1,
			     self->so), 0);
	pfd.events = POLLIN;
	ASSERT_EQ(poll(&pfd, 1, 0), 0);
	pfd.events = POLLOUT;
	ASSERT_EQ(poll(&pfd, 1, 0), 0);
	ASSERT_EQ(poll(&pfd, 1, 10000), 1);
	ASSERT_TRUE(pfd.revents & POLLOUT);
	ASSERT_TRUE(syncobj_signaled(self->fd, self->so));
	pfd.events = POLLIN | POLLOUT;
	ASSERT_EQ(poll(&pfd, 1, 0), 1);
	ASSERT_EQ(pfd.revents & (POLLIN | POLLOUT), POLLIN | POLLOUT);
	close(dfd);
}

/* A job the device stops with a fault still lets BO_WAIT return. */
TEST_F(resv, bo_wait_failed_job)
{
	uint64_t args[1] = { 0x7f0000000ull };	/* never handed out */
	struct npu_bo b;

	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	emit_spin(&self->cmd, 200 * MS);
	npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_FAULT, 1, 1, args);
	ASSERT_EQ(submit_bos(self->fd, &self->cmd, self->q, &b.handle, 1,
			     self->so), 0);
	ASSERT_EQ(bo_wait(self->fd, b.handle, 1 * MS), -ETIME);
	ASSERT_EQ(bo_wait(self->fd, b.handle, NPU_TIMEOUT_NS), 0);
	ASSERT_EQ(npu_syncobj_error(self->fd, self->so), -EFAULT);
}

/* A hanging job is reset after the job timeout; BO_WAIT returns then. */
TEST_F(resv, bo_wait_hung_job)
{
	uint64_t timeout_ms = npu_param(self->fd,
					DRM_NPU_PARAM_JOB_TIMEOUT_MS);
	struct npu_bo b;
	uint64_t t0;

	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_HANG, 1, 0, NULL);
	t0 = npu_now_ns();
	ASSERT_EQ(submit_bos(self->fd, &self->cmd, self->q, &b.handle, 1,
			     self->so), 0);
	ASSERT_EQ(bo_wait(self->fd, b.handle, 1 * MS), -ETIME);
	ASSERT_EQ(bo_wait(self->fd, b.handle,
			  NPU_TIMEOUT_NS + timeout_ms * 3 * MS), 0);
	ASSERT_GE(npu_now_ns() - t0, timeout_ms * MS / 2);
	ASSERT_EQ(npu_syncobj_error(self->fd, self->so), -ETIMEDOUT);
}

/*
 * Jobs of three queues (two compute rings, a copy ring) in one SUBMIT use
 * the same BO, the slowest first in the array; the BO is also listed twice
 * and as command buffer. BO_WAIT waits for all of them, not for the last.
 */
TEST_F(resv, bo_wait_jobs_of_several_queues)
{
	uint32_t q1, so[3], handles[3];
	struct drm_npu_sync out[3];
	struct drm_npu_job j[3];
	struct npu_bo b;
	uint32_t size;
	uint64_t va;
	int i;

	if (npu_param(self->fd, DRM_NPU_PARAM_NUM_COMPUTE_RINGS) < 2 ||
	    !self->cq)
		SKIP(return, "needs two compute rings and a copy ring");
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, 1, &q1), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	handles[0] = b.handle;
	handles[1] = b.handle;
	handles[2] = self->cmd.bo.handle;
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so[i]), 0);
		memset(&out[i], 0, sizeof(out[i]));
		out[i].handle = so[i];
	}
	emit_spin(&self->cmd, 400 * MS);
	npu_cmd_end(&self->cmd, &va, &size);
	npu_job_init(&j[0], q1, va, size);
	emit_spin(&self->cmd, 50 * MS);
	npu_cmd_end(&self->cmd, &va, &size);
	npu_job_init(&j[1], self->q, va, size);
	npu_emit_fill(&self->cmd, b.va, 3, 4);
	npu_cmd_end(&self->cmd, &va, &size);
	npu_job_init(&j[2], self->cq, va, size);
	for (i = 0; i < 3; i++) {
		j[i].bo_handles = (uintptr_t)handles;
		j[i].bo_count = 3;
		j[i].out_syncs = (uintptr_t)&out[i];
		j[i].out_sync_count = 1;
	}
	ASSERT_EQ(npu_submit(self->fd, j, 3), 0);
	ASSERT_EQ(npu_syncobj_wait(self->fd, so[2], NPU_TIMEOUT_NS), 0);
	ASSERT_EQ(bo_wait(self->fd, b.handle, 1 * MS), -ETIME);
	ASSERT_EQ(bo_wait(self->fd, b.handle, NPU_TIMEOUT_NS), 0);
	for (i = 0; i < 3; i++)
		ASSERT_TRUE(syncobj_signaled(self->fd, so[i]));
	ASSERT_EQ(bo_wait(self->fd, self->cmd.bo.handle, 0), 0);
}

/* A read-only userptr gets a READ fence: BO_WAIT waits for it too. */
TEST_F(resv, bo_wait_read_only_userptr)
{
	size_t sz = 4096;
	struct npu_bo u, out;
	uint32_t handles[2];
	void *mem;

	mem = mmap(NULL, sz, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(mem, MAP_FAILED);
	((uint32_t *)mem)[0] = 0x1234;
	ASSERT_EQ(npu_userptr(self->fd, mem, sz, DRM_NPU_USERPTR_READ_ONLY,
			      &u), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &out), 0);
	handles[0] = u.handle;
	handles[1] = out.handle;
	emit_spin(&self->cmd, 200 * MS);
	npu_emit_copy(&self->cmd, u.va, out.va, 4);
	ASSERT_EQ(submit_bos(self->fd, &self->cmd, self->q, handles, 2,
			     self->so), 0);
	ASSERT_EQ(bo_wait(self->fd, u.handle, 1 * MS), -ETIME);
	ASSERT_EQ(bo_wait(self->fd, u.handle, NPU_TIMEOUT_NS), 0);
	ASSERT_TRUE(syncobj_signaled(self->fd, self->so));
	ASSERT_EQ(((uint32_t *)out.map)[0], 0x1234);
	npu_gem_close(self->fd, u.handle);
	munmap(mem, sz);
}

/* A SUBMIT that fails (second job names an unknown BO) adds no fence. */
TEST_F(resv, failed_submit_adds_no_fence)
{
	uint32_t bad = 0xbad;
	struct drm_npu_job j[2];
	struct npu_bo b;
	uint32_t size;
	uint64_t va;

	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	emit_spin(&self->cmd, 200 * MS);
	npu_cmd_end(&self->cmd, &va, &size);
	npu_job_init(&j[0], self->q, va, size);
	j[0].bo_handles = (uintptr_t)&b.handle;
	j[0].bo_count = 1;
	npu_job_init(&j[1], self->q, 0, 0);
	j[1].bo_handles = (uintptr_t)&bad;
	j[1].bo_count = 1;
	ASSERT_EQ(npu_submit(self->fd, j, 2), -ENOENT);
	ASSERT_EQ(bo_wait(self->fd, b.handle, 0), 0);
	ASSERT_EQ(bo_wait(self->fd, self->cmd.bo.handle, 0), 0);
}

/*
 * The most BOs a job may list, all distinct, plus a SUBMIT array of the
 * most jobs each listing a few of them: every reservation object is locked
 * and fenced; each BO is busy until its jobs are done.
 */
TEST_F(resv, many_bos_and_jobs)
{
	uint32_t nbos = npu_param(self->fd, DRM_NPU_PARAM_MAX_JOB_BOS);
	uint32_t njobs = npu_param(self->fd, DRM_NPU_PARAM_MAX_JOBS);
	struct drm_npu_job *j;
	uint32_t *h, i, size;
	uint64_t va;

	ASSERT_GE(nbos, 8);
	h = calloc(nbos, sizeof(*h));
	j = calloc(njobs, sizeof(*j));
	ASSERT_NE(h, NULL);
	ASSERT_NE(j, NULL);
	for (i = 0; i < nbos; i++) {
		struct drm_npu_bo_create c = { .size = 4096 };

		ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_CREATE, &c), 0);
		h[i] = c.handle;
	}
	emit_spin(&self->cmd, 200 * MS);
	ASSERT_EQ(submit_bos(self->fd, &self->cmd, self->q, h, nbos,
			     self->so), 0);
	ASSERT_EQ(bo_wait(self->fd, h[0], 1 * MS), -ETIME);
	ASSERT_EQ(bo_wait(self->fd, h[nbos - 1], 1 * MS), -ETIME);
	ASSERT_EQ(bo_wait(self->fd, h[nbos / 2], NPU_TIMEOUT_NS), 0);
	for (i = 0; i < nbos; i++)
		ASSERT_EQ(bo_wait(self->fd, h[i], 0), 0);

	/* njobs jobs, job i lists BOs i .. i + 7 (overlapping windows) */
	for (i = 0; i < njobs; i++) {
		emit_spin(&self->cmd, 1000000);
		npu_cmd_end(&self->cmd, &va, &size);
		npu_job_init(&j[i], self->q, va, size);
		j[i].bo_handles = (uintptr_t)&h[i % (nbos - 7)];
		j[i].bo_count = 8;
	}
	ASSERT_EQ(npu_submit(self->fd, j, njobs), 0);
	ASSERT_EQ(bo_wait(self->fd, h[0], NPU_TIMEOUT_NS), 0);
	ASSERT_EQ(bo_wait(self->fd, h[njobs + 6], NPU_TIMEOUT_NS), 0);
	ASSERT_EQ(bo_wait(self->fd, self->cmd.bo.handle, NPU_TIMEOUT_NS), 0);
	for (i = 0; i < nbos; i++)
		ASSERT_EQ(bo_wait(self->fd, h[i], 0), 0);
	for (i = 0; i < nbos; i++)
		npu_gem_close(self->fd, h[i]);
	free(h);
	free(j);
}

/*
 * Two files submit at the same time, each job naming the same two shared
 * BOs in opposite orders (their reservation locks are taken together, with
 * wound/wait back-off), with BO_WAITs in between.
 */
struct contend {
	int fd;
	uint32_t h[2];
	int flip;
	int ret;
};

static void *contend_thread(void *arg)
{
	struct contend *t = arg;
	struct npu_cmd c;
	uint32_t q, so, h[2];
	int i;

	t->ret = 1;
	if (npu_queue_new(t->fd, DRM_NPU_RING_KIND_COMPUTE,
			  DRM_NPU_PRIORITY_NORMAL, DRM_NPU_RING_ANY, &q) ||
	    drmSyncobjCreate(t->fd, 0, &so) || npu_cmd_new(t->fd, &c, 1 << 16))
		return NULL;
	for (i = 0; i < 200; i++) {
		h[0] = t->h[(i + t->flip) & 1];
		h[1] = t->h[(i + t->flip + 1) & 1];
		emit_spin(&c, 20000);	/* 16 dwords a job: no reuse */
		if (submit_bos(t->fd, &c, q, h, 2, so)) {
			t->ret = 2;
			return NULL;
		}
		if (i % 50 == 49 &&
		    (bo_wait(t->fd, h[0], NPU_TIMEOUT_NS) ||
		     !syncobj_signaled(t->fd, so))) {
			t->ret = 3;
			return NULL;
		}
	}
	if (bo_wait(t->fd, h[1], NPU_TIMEOUT_NS) ||
	    npu_syncobj_wait(t->fd, so, NPU_TIMEOUT_NS))
		t->ret = 4;
	else
		t->ret = 0;
	return NULL;
}

TEST_F(resv, two_files_share_bos_concurrently)
{
	struct contend t[2];
	pthread_t th[2];
	struct npu_bo b[2];
	int i, k, dfd;

	t[0].fd = self->fd;
	t[1].fd = npu_open();
	ASSERT_GE(t[1].fd, 0);
	for (k = 0; k < 2; k++) {
		ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b[k]), 0);
		t[0].h[k] = b[k].handle;
		ASSERT_EQ(drmPrimeHandleToFD(self->fd, b[k].handle,
					     DRM_CLOEXEC, &dfd), 0);
		ASSERT_EQ(drmPrimeFDToHandle(t[1].fd, dfd, &t[1].h[k]), 0);
		close(dfd);
	}
	for (i = 0; i < 2; i++) {
		t[i].flip = i;
		ASSERT_EQ(pthread_create(&th[i], NULL, contend_thread, &t[i]),
			  0);
	}
	for (i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(t[i].ret, 0);
	}
	for (k = 0; k < 2; k++)
		ASSERT_EQ(bo_wait(self->fd, b[k].handle, 0), 0);
	close(t[1].fd);
}

TEST_HARNESS_MAIN
