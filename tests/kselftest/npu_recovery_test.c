// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_recovery_test - isolation and recovery: device page faults, writes to
 * read-only memory, hangs and ring resets while other processes' jobs go on,
 * two processes that cannot see each other's buffers, exit and close with
 * jobs in flight. Names follow IGT's panfrost_submit / msm tests where the
 * case is the same.
 */
#include <fcntl.h>
#include <glob.h>
#include <sys/wait.h>
#include "npu_test.h"
#include "kselftest_harness.h"

FIXTURE(rec) {
	int fd;
	uint32_t q;
	uint32_t so;
	struct npu_cmd cmd;
};

FIXTURE_SETUP(rec)
{
	self->fd = npu_open();
	if (self->fd < 0)
		SKIP(return, "no npu device");
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, 0, &self->q), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &self->so), 0);
	ASSERT_EQ(npu_cmd_new(self->fd, &self->cmd, 1 << 16), 0);
}

FIXTURE_TEARDOWN(rec)
{
	if (self->fd >= 0)
		close(self->fd);
}

static struct drm_npu_get_fault get_fault(int fd)
{
	struct drm_npu_get_fault f;

	memset(&f, 0, sizeof(f));
	npu_ioctl(fd, DRM_IOCTL_NPU_GET_FAULT, &f);
	return f;
}

/* A job reading an unmapped VA fails with -EFAULT; the queue goes on. */
TEST_F(rec, pan_submit_error_fault)
{
	uint64_t args[1] = { 0x7f0000000ull };	/* never handed out */
	struct drm_npu_get_fault f;
	struct npu_bo b;

	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_FAULT, 1, 1, args);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so),
		  -EFAULT);
	f = get_fault(self->fd);
	ASSERT_EQ(f.count, 1);
	ASSERT_EQ(f.kind, DRM_NPU_FAULT_DEVICE);
	ASSERT_EQ(f.queue_id, self->q);
	ASSERT_EQ(f.ring, 0);
	ASSERT_NE(f.cause, NPU_ERR_NONE);
	/* the same queue still works */
	npu_emit_fill(&self->cmd, b.va, 77, 4);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so), 0);
	ASSERT_EQ(((uint32_t *)b.map)[0], 77);
	ASSERT_EQ(get_fault(self->fd).count, 1);
}

/*
 * RV64G code for LAUNCH_CODE (assembled with clang-14 + ld.lld at 0):
 * kernel_store: out[block_x] = a1 (a0 = out).
 * kernel_fault: block 2, thread 1 stores to a0 (unmapped); others return.
 */
static const uint32_t kernel_store[] = {
	0xcc0022f3,	/* csrr t0, block_x */
	0x00229293,	/* slli t0, t0, 2 */
	0x005502b3,	/* add t0, a0, t0 */
	0x00b2a023,	/* sw a1, 0(t0) */
	0x00008067,	/* ret */
};

static const uint32_t kernel_fault[] = {
	0xcc0022f3,	/* csrr t0, block_x */
	0x00200313,	/* li t1, 2 */
	0x00629a63,	/* bne t0, t1, end */
	0xcc6022f3,	/* csrr t0, thread_x */
	0x00100313,	/* li t1, 1 */
	0x00629463,	/* bne t0, t1, end */
	0x00052023,	/* sw zero, 0(a0) */
	0x00008067,	/* end: ret */
};

/* A user kernel runs through the whole stack: each block stores a word. */
TEST_F(rec, user_kernel_runs)
{
	uint64_t args[2];
	struct npu_bo code, out;
	uint32_t *o;
	int i;

	if (!(npu_param(self->fd, DRM_NPU_PARAM_FEATURES) &
	      DRM_NPU_FEATURE_USER_CODE))
		SKIP(return, "no user code on this device");
	ASSERT_GE(npu_param(self->fd, DRM_NPU_PARAM_CU_THREADS), 1);
	ASSERT_GT(npu_param(self->fd, DRM_NPU_PARAM_CU_SCRATCH_BYTES), 0);
	ASSERT_GT(npu_param(self->fd, DRM_NPU_PARAM_CU_CLOCK_MHZ), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &code), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &out), 0);
	memcpy(code.map, kernel_store, sizeof(kernel_store));
	args[0] = out.va;
	args[1] = 0x5eed;
	npu_emit_launch_code(&self->cmd, code.va, 8, 4, 2, args);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so), 0);
	o = out.map;
	for (i = 0; i < 8; i++)
		ASSERT_EQ(o[i], 0x5eed);
	ASSERT_EQ(o[8], 0);
	ASSERT_EQ(get_fault(self->fd).count, 0);
}

/* COUNTERS: 8 blocks of 4 threads retire 5 instructions each. */
TEST_F(rec, user_kernel_counters)
{
	uint64_t cyc[NPU_MAX_CUS], ins[NPU_MAX_CUS], busy[NPU_MAX_CUS];
	uint64_t args[2], before = 0, after = 0, cycles = 0;
	struct drm_npu_counters c = {
		.cu_busy_ns = (uintptr_t)busy,
		.cu_cycles = (uintptr_t)cyc,
		.cu_instructions = (uintptr_t)ins,
		.cu_count = NPU_MAX_CUS,
	};
	struct npu_bo code, out;
	uint32_t i;

	if (!(npu_param(self->fd, DRM_NPU_PARAM_FEATURES) &
	      DRM_NPU_FEATURE_USER_CODE))
		SKIP(return, "no user code on this device");
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &code), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &out), 0);
	memcpy(code.map, kernel_store, sizeof(kernel_store));
	args[0] = out.va;
	args[1] = 1;
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_COUNTERS, &c), 0);
	for (i = 0; i < c.cu_count; i++)
		before += ins[i];
	npu_emit_launch_code(&self->cmd, code.va, 8, 4, 2, args);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so), 0);
	c.ring_count = 0;	/* out: the device's rings; no array given */
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_COUNTERS, &c), 0);
	for (i = 0; i < c.cu_count; i++) {
		after += ins[i];
		cycles += cyc[i];
	}
	ASSERT_EQ(after - before, 8 * 4 * 5);
	ASSERT_GT(cycles, 0);
}

/* A user kernel that loops forever is a hang the job timeout recovers. */
TEST_F(rec, user_kernel_endless_loop)
{
	static const uint32_t loop[] = { 0x0000006f };	/* j . */
	struct npu_bo code, b;

	if (!(npu_param(self->fd, DRM_NPU_PARAM_FEATURES) &
	      DRM_NPU_FEATURE_USER_CODE))
		SKIP(return, "no user code on this device");
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &code), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	memcpy(code.map, loop, sizeof(loop));
	npu_emit_launch_code(&self->cmd, code.va, 2, 2, 0, NULL);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so),
		  -ETIMEDOUT);
	ASSERT_EQ(get_fault(self->fd).kind, DRM_NPU_FAULT_TIMEOUT);
	/* the queue works after the reset */
	npu_emit_fill(&self->cmd, b.va, 0x600d, 4);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so), 0);
	ASSERT_EQ(((uint32_t *)b.map)[0], 0x600d);
}

/*
 * GET_FAULT names the instruction, block, thread and unit of a fault, and
 * the launched kernel's entry; a later fault of no thread clears them.
 */
TEST_F(rec, user_kernel_fault_where)
{
	uint64_t args[1] = { 0x7f0000000ull };	/* never handed out */
	struct drm_npu_get_fault f;
	struct npu_bo code;

	if (!(npu_param(self->fd, DRM_NPU_PARAM_FEATURES) &
	      DRM_NPU_FEATURE_USER_CODE))
		SKIP(return, "no user code on this device");
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &code), 0);
	memcpy(code.map, kernel_fault, sizeof(kernel_fault));
	npu_emit_launch_code(&self->cmd, code.va, 4, 2, 1, args);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so),
		  -EFAULT);
	f = get_fault(self->fd);
	ASSERT_EQ(f.count, 1);
	ASSERT_EQ(f.kind, DRM_NPU_FAULT_DEVICE);
	ASSERT_EQ(f.cause, NPU_ERR_MMU_FAULT);
	ASSERT_EQ(f.addr, args[0]);
	ASSERT_EQ(f.pc, code.va + 6 * 4);
	ASSERT_EQ(f.block, 2);
	ASSERT_EQ(f.thread, 1);
	ASSERT_LT(f.unit, npu_param(self->fd, DRM_NPU_PARAM_NUM_CUS));
	ASSERT_EQ(f.entry, code.va);
	/* the queue goes on */
	memcpy(code.map, kernel_store, sizeof(kernel_store));
	npu_emit_fill(&self->cmd, code.va + 2048, 0, 64);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so), 0);
	/* a copy into the guard page after the BO: no thread, no kernel */
	npu_emit_fill(&self->cmd, code.va + 4096, 0, 64);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so),
		  -EFAULT);
	f = get_fault(self->fd);
	ASSERT_EQ(f.count, 2);
	ASSERT_EQ(f.pc, 0);
	ASSERT_EQ(f.entry, 0);
}

/* A copy into the unmapped guard page after a BO faults with its address. */
TEST_F(rec, fault_past_bo_end)
{
	struct drm_npu_get_fault f;
	struct npu_bo a, b;

	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &a), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	npu_emit_copy(&self->cmd, b.va, a.va + 2048, 4096);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so),
		  -EFAULT);
	f = get_fault(self->fd);
	ASSERT_EQ(f.count, 1);
	ASSERT_EQ(f.cause, NPU_ERR_MMU_FAULT);
	ASSERT_GE(f.addr, a.va + 4096);
	ASSERT_LT(f.addr, a.va + 8192);
}

/* The device may not write a read-only userptr. */
TEST_F(rec, fault_write_read_only_userptr)
{
	uint32_t *mem = aligned_alloc(4096, 4096);
	struct drm_npu_get_fault f;
	struct npu_bo ro;

	mem[0] = 42;
	ASSERT_EQ(npu_userptr(self->fd, mem, 4096, DRM_NPU_USERPTR_READ_ONLY,
			      &ro), 0);
	npu_emit_fill(&self->cmd, ro.va, 0, 4096);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so),
		  -EFAULT);
	f = get_fault(self->fd);
	ASSERT_EQ(f.cause, NPU_ERR_MMU_WRITE);
	ASSERT_EQ(mem[0], 42);
	npu_gem_close(self->fd, ro.handle);
	free(mem);
}

static int bo_protect(int fd, uint32_t handle, uint32_t flags,
		      uint64_t offset, uint64_t size)
{
	struct drm_npu_bo_protect p = {
		.handle = handle, .flags = flags, .offset = offset, .size = size,
	};

	return npu_ioctl(fd, DRM_IOCTL_NPU_BO_PROTECT, &p);
}

/*
 * BO_PROTECT: the protected page of a BO faults on a device write (data
 * unchanged) and can still be read; the page after it stays writable.
 */
TEST_F(rec, bo_protect_read_only_range)
{
	struct drm_npu_get_fault f;
	struct npu_bo b, d;

	ASSERT_TRUE(npu_param(self->fd, DRM_NPU_PARAM_FEATURES) &
		    DRM_NPU_FEATURE_BO_PROTECT);
	ASSERT_EQ(npu_bo_new(self->fd, 2 * 4096, 0, &b), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &d), 0);
	((uint32_t *)b.map)[0] = 42;
	ASSERT_EQ(bo_protect(self->fd, b.handle, DRM_NPU_BO_PROTECT_READ_ONLY,
			     0, 4096), 0);
	npu_emit_fill(&self->cmd, b.va, 7, 4);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so),
		  -EFAULT);
	f = get_fault(self->fd);
	ASSERT_EQ(f.cause, NPU_ERR_MMU_WRITE);
	ASSERT_EQ(f.addr, b.va);
	ASSERT_EQ(((uint32_t *)b.map)[0], 42);
	/* reads go on; the second page is writable */
	npu_emit_copy(&self->cmd, b.va, d.va, 4);
	npu_emit_fill(&self->cmd, b.va + 4096, 9, 4);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so), 0);
	ASSERT_EQ(((uint32_t *)d.map)[0], 42);
	ASSERT_EQ(((uint32_t *)b.map)[1024], 9);
	/* protecting it again changes nothing */
	ASSERT_EQ(bo_protect(self->fd, b.handle, DRM_NPU_BO_PROTECT_READ_ONLY,
			     0, 4096), 0);
}

TEST_F(rec, bo_protect_errors)
{
	struct npu_bo b;

	ASSERT_EQ(npu_bo_new(self->fd, 2 * 4096, 0, &b), 0);
	EXPECT_EQ(bo_protect(self->fd, b.handle, 0, 0, 4096), -EINVAL);
	EXPECT_EQ(bo_protect(self->fd, b.handle, 2, 0, 4096), -EINVAL);
	EXPECT_EQ(bo_protect(self->fd, b.handle, DRM_NPU_BO_PROTECT_READ_ONLY,
			     0, 0), -EINVAL);
	EXPECT_EQ(bo_protect(self->fd, b.handle, DRM_NPU_BO_PROTECT_READ_ONLY,
			     100, 4096), -EINVAL);
	EXPECT_EQ(bo_protect(self->fd, b.handle, DRM_NPU_BO_PROTECT_READ_ONLY,
			     0, 100), -EINVAL);
	EXPECT_EQ(bo_protect(self->fd, b.handle, DRM_NPU_BO_PROTECT_READ_ONLY,
			     4096, 2 * 4096), -EINVAL);
	EXPECT_EQ(bo_protect(self->fd, b.handle, DRM_NPU_BO_PROTECT_READ_ONLY,
			     -4096ull, 2 * 4096), -EINVAL);
	EXPECT_EQ(bo_protect(self->fd, b.handle + 1000,
			     DRM_NPU_BO_PROTECT_READ_ONLY, 0, 4096), -ENOENT);
}

/*
 * A job uses a BO it did not list (its address travels inside the command
 * stream), and the BO's handle is closed while the job runs: the BO stays
 * mapped until every job of the context submitted before the close has
 * finished, so the job completes normally once the CPU releases it
 * through the mapping it kept.
 */
TEST_F(rec, unlisted_bo_closed_under_running_job_stays_mapped)
{
	struct npu_bo b;
	uint64_t va;
	uint32_t size;

	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	npu_emit_sem(&self->cmd, NPU_OP_SEM_WAIT, b.va, 1);
	npu_cmd_end(&self->cmd, &va, &size);
	ASSERT_EQ(npu_submit_one(self->fd, self->q, va, size, self->so), 0);
	usleep(100000);
	ASSERT_EQ(drmSyncobjWait(self->fd, &self->so, 1, 0, 0, NULL), -ETIME);
	ASSERT_EQ(npu_gem_close(self->fd, b.handle), 0);
	usleep(100000);
	/* still polling the same pages: release it through the CPU mapping */
	((volatile uint32_t *)b.map)[0] = 1;
	ASSERT_EQ(npu_syncobj_wait(self->fd, self->so, NPU_TIMEOUT_NS), 0);
	ASSERT_EQ(npu_syncobj_error(self->fd, self->so), 0);
	ASSERT_EQ(get_fault(self->fd).count, 0);
	munmap(b.map, b.size);
}

/*
 * A (buggy) job submitted after a BO's handle was closed still uses the
 * BO's address, and holds a cached translation of it while an earlier job
 * keeps the BO mapped. When that earlier job finishes the BO is unmapped
 * and freed, and the unmap makes every ring drop its cached translations
 * (NPU_REG_MMU_INVALIDATE): the buggy job's SEM_WAIT faults at its next
 * poll instead of polling the freed page until the job timeout.
 */
TEST_F(rec, unlisted_bo_freed_under_later_job_faults)
{
	uint64_t timeout_ms = npu_param(self->fd,
					DRM_NPU_PARAM_JOB_TIMEOUT_MS);
	uint32_t ring2 = npu_param(self->fd,
				   DRM_NPU_PARAM_NUM_COMPUTE_RINGS) > 1 ? 1 : 0;
	uint32_t kind2 = ring2 ? DRM_NPU_RING_KIND_COMPUTE :
				 DRM_NPU_RING_KIND_COPY;
	struct drm_npu_get_fault f;
	uint64_t va, va2, bo_va, t0;
	struct npu_bo b, gate;
	struct npu_cmd cmd2;
	uint32_t size, size2, q2, so2;

	ASSERT_EQ(npu_queue_new(self->fd, kind2, DRM_NPU_PRIORITY_NORMAL, 0,
				&q2), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so2), 0);
	ASSERT_EQ(npu_cmd_new(self->fd, &cmd2, 4096), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &gate), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	bo_va = b.va;

	/* earlier job: holds the context's retiring mappings until the gate */
	npu_emit_sem(&self->cmd, NPU_OP_SEM_WAIT, gate.va, 1);
	npu_cmd_end(&self->cmd, &va, &size);
	ASSERT_EQ(npu_submit_one(self->fd, self->q, va, size, self->so), 0);
	usleep(100000);
	npu_bo_free(self->fd, &b);

	/* later job on another ring polls the closed BO (value never 1) */
	npu_emit_sem(&cmd2, NPU_OP_SEM_WAIT, bo_va, 1);
	npu_cmd_end(&cmd2, &va2, &size2);
	ASSERT_EQ(npu_submit_one(self->fd, q2, va2, size2, so2), 0);
	usleep(200000);
	ASSERT_EQ(drmSyncobjWait(self->fd, &so2, 1, 0, 0, NULL), -ETIME);

	t0 = npu_now_ns();
	((volatile uint32_t *)gate.map)[0] = 1;
	ASSERT_EQ(npu_syncobj_wait(self->fd, self->so, NPU_TIMEOUT_NS), 0);
	ASSERT_EQ(npu_syncobj_error(self->fd, self->so), 0);
	ASSERT_EQ(npu_syncobj_wait(self->fd, so2, NPU_TIMEOUT_NS), 0);
	ASSERT_LT(npu_now_ns() - t0, timeout_ms * 1000000 / 2);
	ASSERT_EQ(npu_syncobj_error(self->fd, so2), -EFAULT);
	f = get_fault(self->fd);
	ASSERT_EQ(f.kind, DRM_NPU_FAULT_DEVICE);
	ASSERT_EQ(f.queue_id, q2);
	ASSERT_EQ(f.cause, NPU_ERR_MMU_FAULT);
	ASSERT_EQ(f.addr, bo_va);
	npu_bo_free(self->fd, &gate);
}

/* A privileged packet in a command buffer is refused by the device. */
TEST_F(rec, privileged_packet_in_ib)
{
	npu_cmd_dw(&self->cmd, NPU_PKT_HDR(NPU_OP_FENCE, NPU_FENCE_IRQ, 4));
	npu_cmd_dw(&self->cmd, 1234);
	npu_cmd_q(&self->cmd, 0x1000);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so),
		  -EFAULT);
	ASSERT_EQ(get_fault(self->fd).cause, NPU_ERR_PRIVILEGED);
}

/* Faults are reported to the file that owns the job only. */
TEST_F(rec, fault_reported_to_owner_only)
{
	uint64_t args[1] = { 0x7f0000000ull };
	int fd2 = npu_open();

	ASSERT_GE(fd2, 0);
	npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_FAULT, 1, 1, args);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so),
		  -EFAULT);
	ASSERT_EQ(get_fault(self->fd).count, 1);
	ASSERT_EQ(get_fault(fd2).count, 0);
	close(fd2);
}

/* child: n fills on ring `ring`, returns 0 when all results are right */
static int child_work(int ring, int n)
{
	struct npu_cmd c;
	struct npu_bo b;
	uint32_t q, so;
	uint64_t va;
	uint32_t size;
	int fd = npu_open(), i;

	if (fd < 0)
		return 1;
	if (npu_queue_new(fd, DRM_NPU_RING_KIND_COMPUTE,
			  DRM_NPU_PRIORITY_NORMAL, ring, &q) ||
	    drmSyncobjCreate(fd, 0, &so) || npu_cmd_new(fd, &c, 1 << 16) ||
	    npu_bo_new(fd, 4096, 0, &b))
		return 2;
	for (i = 0; i < n; i++) {
		npu_emit_fill(&c, b.va, i + 1, 4);
		npu_cmd_end(&c, &va, &size);
		if (npu_submit_one(fd, q, va, size, so))
			return 3;
		if (npu_syncobj_wait(fd, so, NPU_TIMEOUT_NS) ||
		    npu_syncobj_error(fd, so))
			return 4;
		if (((uint32_t *)b.map)[0] != (uint32_t)(i + 1))
			return 5;
	}
	close(fd);
	return 0;
}

/*
 * A hanging job is killed by the timeout with -ETIMEDOUT and its ring is
 * reset; meanwhile another process keeps completing jobs on another ring,
 * and the job queued behind the hang on the same ring still runs.
 */
TEST_F(rec, pan_submit_error_hang_recovery)
{
	uint64_t timeout_ms = npu_param(self->fd,
					DRM_NPU_PARAM_JOB_TIMEOUT_MS);
	struct drm_npu_get_fault f;
	uint32_t so2;
	struct npu_bo b;
	uint64_t va, t0;
	uint32_t size;
	int status;
	pid_t pid;

	if (npu_param(self->fd, DRM_NPU_PARAM_NUM_COMPUTE_RINGS) < 2)
		SKIP(return, "one compute ring");
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so2), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);

	t0 = npu_now_ns();
	npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_HANG, 1, 0, NULL);
	npu_cmd_end(&self->cmd, &va, &size);
	ASSERT_EQ(npu_submit_one(self->fd, self->q, va, size, self->so), 0);
	npu_emit_fill(&self->cmd, b.va, 0x600d, 4);
	npu_cmd_end(&self->cmd, &va, &size);
	ASSERT_EQ(npu_submit_one(self->fd, self->q, va, size, so2), 0);

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0)
		_exit(child_work(1, 20));
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
	/* the other ring did not wait for the hang to be resolved */
	if (npu_now_ns() - t0 < timeout_ms * 1000000 / 2)
		ASSERT_EQ(drmSyncobjWait(self->fd, &self->so, 1, 0, 0, NULL),
			  -ETIME);

	ASSERT_EQ(npu_syncobj_wait(self->fd, self->so, NPU_TIMEOUT_NS), 0);
	ASSERT_GE(npu_now_ns() - t0, timeout_ms * 1000000 / 2);
	ASSERT_EQ(npu_syncobj_error(self->fd, self->so), -ETIMEDOUT);
	f = get_fault(self->fd);
	ASSERT_EQ(f.count, 1);
	ASSERT_EQ(f.kind, DRM_NPU_FAULT_TIMEOUT);
	ASSERT_EQ(f.queue_id, self->q);

	/* the innocent job behind it was resubmitted and completed */
	ASSERT_EQ(npu_syncobj_wait(self->fd, so2, NPU_TIMEOUT_NS), 0);
	ASSERT_EQ(npu_syncobj_error(self->fd, so2), 0);
	ASSERT_EQ(((uint32_t *)b.map)[0], 0x600d);

	/* the ring works after the reset */
	ASSERT_EQ(child_work(0, 5), 0);
}

/* Sum of the device's ring resets (sysfs npu/resets); -1 if absent. */
static long ring_resets(void)
{
	glob_t g;
	long v = -1;
	FILE *f;

	if (glob("/sys/bus/pci/drivers/npu/0000:*/npu/resets", 0, NULL, &g))
		return -1;
	f = fopen(g.gl_pathv[0], "r");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	globfree(&g);
	return v;
}

/* Write the debugfs knob that holds a timed-out ring between stopping its
 * scheduler and resetting it; false if debugfs or the knob is missing. */
static bool set_reset_delay_ms(unsigned int ms)
{
	char buf[16];
	glob_t g;
	bool ok;
	int fd;

	if (glob("/sys/kernel/debug/{accel,dri}/*/reset_delay_ms", GLOB_BRACE,
		 NULL, &g))
		return false;
	fd = open(g.gl_pathv[0], O_WRONLY);
	globfree(&g);
	if (fd < 0)
		return false;
	snprintf(buf, sizeof(buf), "%u", ms);
	ok = write(fd, buf, strlen(buf)) == (ssize_t)strlen(buf);
	close(fd);
	return ok;
}

/*
 * A job that times out but completes while its ring is being recovered
 * (after the scheduler stopped, before the ring reset) ran once and
 * succeeded: it must not run again. Its first commands copy a to b, then
 * overwrite a: a second run would copy the new a into b.
 */
TEST_F(rec, timed_out_job_completing_during_reset_runs_once)
{
	uint64_t timeout_ms = npu_param(self->fd,
					DRM_NPU_PARAM_JOB_TIMEOUT_MS);
	uint64_t spin_ns = (timeout_ms + 300) * 1000000ull;
	struct npu_bo a, b;
	long resets;
	uint64_t va;
	uint32_t size;

	if (!set_reset_delay_ms(1000))
		SKIP(return, "no debugfs reset_delay_ms");
	resets = ring_resets();
	ASSERT_GE(resets, 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &a), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	((uint32_t *)a.map)[0] = 0x1111;
	((uint32_t *)b.map)[0] = 0;
	npu_emit_copy(&self->cmd, a.va, b.va, 4);
	npu_emit_fill(&self->cmd, a.va, 0x2222, 4);
	npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_SPIN, 1, 1, &spin_ns);
	npu_cmd_end(&self->cmd, &va, &size);
	ASSERT_EQ(npu_submit_one(self->fd, self->q, va, size, self->so), 0);
	/* long enough for a second run and a second timeout to show */
	ASSERT_EQ(npu_syncobj_wait(self->fd, self->so,
				   (3 * timeout_ms + 4000) * 1000000ull), 0);
	set_reset_delay_ms(0);
	/* the timeout fired once, and the job's own completion counted */
	EXPECT_EQ(ring_resets(), resets + 1);
	EXPECT_EQ(npu_syncobj_error(self->fd, self->so), 0);
	EXPECT_EQ(((uint32_t *)b.map)[0], 0x1111);
	EXPECT_EQ(((uint32_t *)a.map)[0], 0x2222);
	/* the ring works after the reset */
	ASSERT_EQ(child_work(0, 5), 0);
}

/*
 * The same, with the next job on the ring already running when the timed-out
 * job completes (after the scheduler stopped, before the ring reset): that
 * job must not be cut short and run again from its start. Its first
 * commands copy c to d, then overwrite c, then it spins past the moment
 * the reset would come: a second run would copy the new c into d.
 */
TEST_F(rec, job_behind_timed_out_job_runs_once)
{
	uint64_t timeout_ms = npu_param(self->fd,
					DRM_NPU_PARAM_JOB_TIMEOUT_MS);
	uint64_t spin_bad_ns = (timeout_ms + 300) * 1000000ull;
	uint64_t spin_next_ns = 1500 * 1000000ull;
	struct npu_bo c, d;
	uint32_t so2, size;
	long resets;
	uint64_t va;

	if (!set_reset_delay_ms(1000))
		SKIP(return, "no debugfs reset_delay_ms");
	resets = ring_resets();
	ASSERT_GE(resets, 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so2), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &c), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &d), 0);
	((uint32_t *)c.map)[0] = 0x1111;
	((uint32_t *)d.map)[0] = 0;
	/* times out, completes 300 ms later, inside the 1 s window */
	npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_SPIN, 1, 1, &spin_bad_ns);
	npu_cmd_end(&self->cmd, &va, &size);
	ASSERT_EQ(npu_submit_one(self->fd, self->q, va, size, self->so), 0);
	/* starts in the window, still spinning when it closes */
	npu_emit_copy(&self->cmd, c.va, d.va, 4);
	npu_emit_fill(&self->cmd, c.va, 0x2222, 4);
	npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_SPIN, 1, 1, &spin_next_ns);
	npu_cmd_end(&self->cmd, &va, &size);
	ASSERT_EQ(npu_submit_one(self->fd, self->q, va, size, so2), 0);

	ASSERT_EQ(npu_syncobj_wait(self->fd, so2,
				   (3 * timeout_ms + 6000) * 1000000ull), 0);
	set_reset_delay_ms(0);
	EXPECT_EQ(ring_resets(), resets + 1);
	EXPECT_EQ(npu_syncobj_error(self->fd, self->so), 0);
	EXPECT_EQ(npu_syncobj_error(self->fd, so2), 0);
	TH_LOG("d = %#x after the job behind the timed-out one (0x1111: it ran once)",
	       ((uint32_t *)d.map)[0]);
	EXPECT_EQ(((uint32_t *)d.map)[0], 0x1111);
	EXPECT_EQ(((uint32_t *)c.map)[0], 0x2222);
	/* the ring works after the recovery */
	ASSERT_EQ(child_work(0, 5), 0);
}

/* A fault in one process while another process's jobs run on the ring. */
TEST_F(rec, fault_while_other_process_runs)
{
	uint64_t args[1] = { 0x7f0000000ull };
	int status, i;
	pid_t pid;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0)
		_exit(child_work(0, 50));
	for (i = 0; i < 5; i++) {
		npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_FAULT, 1, 1, args);
		ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q, self->so),
			  -EFAULT);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
	ASSERT_EQ(get_fault(self->fd).count, 5);
}

/*
 * Two processes have separate address spaces: the child gets its own BO at
 * whatever VA, and can neither read the parent's data through the parent's
 * VA nor name the parent's BO by handle.
 */
TEST_F(rec, isolation_two_processes)
{
	struct npu_bo secret;
	int pfd[2], status;
	uint64_t secret_va;
	uint32_t secret_handle;
	pid_t pid;

	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &secret), 0);
	memset(secret.map, 0x5e, 1 << 16);
	secret_va = secret.va;
	secret_handle = secret.handle;
	ASSERT_EQ(pipe(pfd), 0);

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct drm_npu_bo_info info = { .handle = secret_handle };
		struct npu_cmd c;
		struct npu_bo out;
		uint32_t q, so;
		uint64_t va;
		uint32_t size;
		int fd = npu_open(), ret, i;
		uint8_t *p;

		if (fd < 0)
			_exit(1);
		/* the parent's handle number means nothing here */
		if (npu_ioctl(fd, DRM_IOCTL_NPU_BO_INFO, &info) != -ENOENT)
			_exit(2);
		if (npu_queue_new(fd, DRM_NPU_RING_KIND_COPY,
				  DRM_NPU_PRIORITY_NORMAL, 0, &q) ||
		    drmSyncobjCreate(fd, 0, &so) ||
		    npu_cmd_new(fd, &c, 4096) ||
		    npu_bo_new(fd, 1 << 16, 0, &out))
			_exit(3);
		/* reading the parent's VA: unmapped here, or own zeroed BO */
		npu_emit_copy(&c, secret_va, out.va, 4096);
		npu_cmd_end(&c, &va, &size);
		if (npu_submit_one(fd, q, va, size, so) ||
		    npu_syncobj_wait(fd, so, NPU_TIMEOUT_NS))
			_exit(4);
		ret = npu_syncobj_error(fd, so);
		p = out.map;
		for (i = 0; i < 4096; i++)
			if (p[i] == 0x5e)
				_exit(5);
		if (ret != -EFAULT && ret != 0)
			_exit(6);
		_exit(0);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
	close(pfd[0]);
	close(pfd[1]);
	ASSERT_EQ(((uint8_t *)secret.map)[100], 0x5e);
}

/* A process exits with work queued and running: the device goes on. */
TEST_F(rec, exit_with_jobs_in_flight)
{
	int status, round;
	pid_t pid;

	for (round = 0; round < 3; round++) {
		pid = fork();
		ASSERT_GE(pid, 0);
		if (pid == 0) {
			uint64_t spin[1] = { 20000000 };
			struct npu_cmd c;
			struct npu_bo b;
			uint32_t q;
			uint64_t va;
			uint32_t size;
			int fd = npu_open(), i;

			if (fd < 0 ||
			    npu_queue_new(fd, DRM_NPU_RING_KIND_COMPUTE,
					  DRM_NPU_PRIORITY_NORMAL,
					  DRM_NPU_RING_ANY, &q) ||
			    npu_cmd_new(fd, &c, 1 << 16) ||
			    npu_bo_new(fd, 1 << 20, 0, &b))
				_exit(1);
			for (i = 0; i < 20; i++) {
				npu_emit_launch(&c, NPU_KERNEL_TEST_SPIN, 1, 1,
						spin);
				npu_emit_fill(&c, b.va, i, 1 << 20);
				npu_cmd_end(&c, &va, &size);
				if (npu_submit_one(fd, q, va, size, 0))
					_exit(2);
			}
			_exit(0);	/* no close, no wait */
		}
		ASSERT_EQ(waitpid(pid, &status, 0), pid);
		ASSERT_TRUE(WIFEXITED(status));
		ASSERT_EQ(WEXITSTATUS(status), 0);
	}
	ASSERT_EQ(child_work(0, 3), 0);
}

/* close() of the device file with jobs queued behind a running one. */
TEST_F(rec, close_with_jobs_in_flight)
{
	uint64_t spin[1] = { 30000000 };
	struct npu_cmd c;
	struct npu_bo b;
	uint32_t q;
	uint64_t va;
	uint32_t size;
	int fd = npu_open(), i;

	ASSERT_GE(fd, 0);
	ASSERT_EQ(npu_queue_new(fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, 0, &q), 0);
	ASSERT_EQ(npu_cmd_new(fd, &c, 1 << 16), 0);
	ASSERT_EQ(npu_bo_new(fd, 4096, 0, &b), 0);
	for (i = 0; i < 10; i++) {
		npu_emit_launch(&c, NPU_KERNEL_TEST_SPIN, 1, 1, spin);
		npu_emit_fill(&c, b.va, i, 4);
		npu_cmd_end(&c, &va, &size);
		ASSERT_EQ(npu_submit_one(fd, q, va, size, 0), 0);
	}
	munmap(c.bo.map, c.bo.size);
	munmap(b.map, b.size);
	close(fd);
	ASSERT_EQ(child_work(0, 3), 0);
}

/*
 * Queue a job that hangs (until the job timeout) on compute ring @ring;
 * @out_syncobj, if not 0, gets its fence. 0 or -1.
 */
static int submit_hang(int fd, uint32_t ring, uint32_t out_syncobj)
{
	struct npu_cmd c;
	uint32_t q, size;
	uint64_t va;

	if (npu_queue_new(fd, DRM_NPU_RING_KIND_COMPUTE,
			  DRM_NPU_PRIORITY_NORMAL, ring, &q) ||
	    npu_cmd_new(fd, &c, 4096))
		return -1;
	npu_emit_launch(&c, NPU_KERNEL_TEST_HANG, 1, 0, NULL);
	npu_cmd_end(&c, &va, &size);
	return npu_submit_one(fd, q, va, size, out_syncobj) ? -1 : 0;
}

/* A process exits while its job hangs: the timeout still cleans up. */
TEST_F(rec, exit_with_hanging_job)
{
	uint64_t timeout_ms = npu_param(self->fd,
					DRM_NPU_PARAM_JOB_TIMEOUT_MS);
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int fd = npu_open();

		if (fd < 0 || submit_hang(fd, 1, 0))
			_exit(1);
		usleep(100000);
		_exit(0);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_EQ(WEXITSTATUS(status), 0);
	/* after the timeout ring 1 works again */
	usleep((timeout_ms + 500) * 1000);
	ASSERT_EQ(child_work(1, 3), 0);
}

/*
 * A process exits with a job still waiting in its queue, behind a hang on
 * another queue: exit stops waiting for the queue after a second, the
 * scheduler kills the job, and the exit must finish (it once waited
 * forever for the queue's entity to go idle on 6.1).
 */
TEST_F(rec, exit_with_job_behind_dependency)
{
	uint64_t timeout_ms = npu_param(self->fd,
					DRM_NPU_PARAM_JOB_TIMEOUT_MS);
	uint64_t t0;
	int status = 0;
	pid_t pid, got = 0;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct drm_npu_sync in = { 0 };
		struct drm_npu_job j;
		struct npu_cmd c;
		struct npu_bo b;
		uint32_t qb, so;
		uint64_t va;
		uint32_t size;
		int fd = npu_open();

		if (fd < 0 || drmSyncobjCreate(fd, 0, &so) ||
		    npu_queue_new(fd, DRM_NPU_RING_KIND_COMPUTE,
				  DRM_NPU_PRIORITY_NORMAL, 2, &qb) ||
		    npu_cmd_new(fd, &c, 4096) ||
		    npu_bo_new(fd, 4096, 0, &b))
			_exit(1);
		if (submit_hang(fd, 1, so))
			_exit(2);
		npu_emit_fill(&c, b.va, 7, 4);
		npu_cmd_end(&c, &va, &size);
		npu_job_init(&j, qb, va, size);
		in.handle = so;
		j.in_syncs = (uintptr_t)&in;
		j.in_sync_count = 1;
		if (npu_submit(fd, &j, 1))
			_exit(3);
		_exit(0);	/* no close, no wait */
	}
	/* exit waits up to 1 s for the queue; give it far more */
	t0 = npu_now_ns();
	while (npu_now_ns() - t0 < 20000000000ull) {
		got = waitpid(pid, &status, WNOHANG);
		if (got)
			break;
		usleep(50000);
	}
	ASSERT_EQ(got, pid) TH_LOG("the exiting process is stuck in close");
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
	/* after the hang's timeout both rings work again */
	usleep((timeout_ms + 500) * 1000);
	ASSERT_EQ(child_work(1, 3), 0);
	ASSERT_EQ(child_work(2, 3), 0);
}

TEST_HARNESS_MAIN
