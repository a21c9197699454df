// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_ioctl_test - every ioctl of npu.ko: queries, buffer objects, userptr,
 * PRIME, queues and SUBMIT argument checking, with one negative test per
 * error path (bad flags, pads, handles, sizes, pointers).
 */
#include <glob.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include "npu_test.h"
#include "../common/npu_caps.h"
#include "kselftest_harness.h"

/* drm_npu_job as the first uAPI version had it (no array strides) */
#define JOB_SIZE_V1	56

FIXTURE(dev) {
	int fd;
};

FIXTURE_SETUP(dev)
{
	self->fd = npu_open();
	if (self->fd < 0)
		SKIP(return, "no npu device");
}

FIXTURE_TEARDOWN(dev)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* ---- GET_PARAM ------------------------------------------------------ */

TEST_F(dev, get_param_basic)
{
	uint64_t id = npu_param(self->fd, DRM_NPU_PARAM_DEVICE_ID);

	ASSERT_EQ(id, (NPU_PCI_VENDOR_ID << 16) | NPU_PCI_DEVICE_ID);
	ASSERT_GE(npu_param(self->fd, DRM_NPU_PARAM_NUM_COMPUTE_RINGS), 1);
	ASSERT_GE(npu_param(self->fd, DRM_NPU_PARAM_NUM_COPY_RINGS), 1);
	ASSERT_GE(npu_param(self->fd, DRM_NPU_PARAM_NUM_CUS), 1);
	ASSERT_GT(npu_param(self->fd, DRM_NPU_PARAM_CLOCK_HZ), 0);
	ASSERT_EQ(npu_param(self->fd, DRM_NPU_PARAM_REVISION) >> 16, 1);
	ASSERT_EQ(npu_param(self->fd, DRM_NPU_PARAM_MAX_CMD_SIZE),
		  NPU_IB_MAX_SIZE);
	ASSERT_GE(npu_param(self->fd, DRM_NPU_PARAM_MAX_JOBS), 1);
	ASSERT_NE(npu_param(self->fd, DRM_NPU_PARAM_FEATURES) &
		  DRM_NPU_FEATURE_TIMELINE, 0);
	ASSERT_GT(npu_param(self->fd, DRM_NPU_PARAM_VA_SIZE), 1ull << 30);
}

TEST_F(dev, get_param_clock_advances)
{
	uint64_t a = npu_param(self->fd, DRM_NPU_PARAM_CLOCK);
	uint64_t b;

	usleep(10000);
	b = npu_param(self->fd, DRM_NPU_PARAM_CLOCK);
	ASSERT_GT(b, a);
}

TEST_F(dev, get_param_bad_param)
{
	struct drm_npu_get_param p = { .param = 0xdead };

	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_GET_PARAM, &p), -EINVAL);
}

TEST_F(dev, get_param_bad_pad)
{
	struct drm_npu_get_param p = { .param = 0, .pad = 1 };

	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_GET_PARAM, &p), -EINVAL);
}

/* ---- BO_CREATE / BO_INFO / mmap ----------------------------------- */

TEST_F(dev, bo_create_mmap)
{
	struct npu_bo bo;
	uint32_t *p;
	int i;

	ASSERT_EQ(npu_bo_new(self->fd, 65536, 0, &bo), 0);
	ASSERT_NE(bo.va, 0);
	ASSERT_GE(bo.va, npu_param(self->fd, DRM_NPU_PARAM_VA_START));
	ASSERT_NE(bo.mmap_offset, 0);
	p = bo.map;
	for (i = 0; i < 16384; i++)
		ASSERT_EQ(p[i], 0);	/* new memory is zeroed */
	for (i = 0; i < 16384; i++)
		p[i] = i;
	for (i = 0; i < 16384; i++)
		ASSERT_EQ(p[i], (uint32_t)i);
	npu_bo_free(self->fd, &bo);
}

TEST_F(dev, bo_create_distinct_vas)
{
	struct npu_bo a, b;

	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &a), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &b), 0);
	ASSERT_NE(a.handle, b.handle);
	ASSERT_TRUE(a.va + 4096 <= b.va || b.va + 4096 <= a.va);
	npu_bo_free(self->fd, &a);
	npu_bo_free(self->fd, &b);
}

TEST_F(dev, bo_create_unaligned_size_rounds_up)
{
	struct drm_npu_bo_info info = { 0 };
	struct npu_bo bo;

	ASSERT_EQ(npu_bo_new(self->fd, 100, 0, &bo), 0);
	info.handle = bo.handle;
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_INFO, &info), 0);
	ASSERT_EQ(info.size, 4096);
	ASSERT_EQ(info.va, bo.va);
	ASSERT_EQ(info.flags, 0);
	npu_bo_free(self->fd, &bo);
}

TEST_F(dev, bo_create_devmem)
{
	struct drm_npu_bo_create c = { .size = 1 << 20,
				       .flags = DRM_NPU_BO_DEVMEM };
	struct drm_npu_bo_info info = { 0 };

	if (!npu_param(self->fd, DRM_NPU_PARAM_DEVMEM_SIZE))
		SKIP(return, "no device memory");
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_CREATE, &c), 0);
	ASSERT_NE(c.va, 0);
	/* CPU-mappable through the BAR where the device has one */
	ASSERT_EQ(c.mmap_offset != 0,
		  !!(npu_param(self->fd, DRM_NPU_PARAM_FEATURES) &
		     DRM_NPU_FEATURE_DEVMEM_MMAP));
	info.handle = c.handle;
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_INFO, &info), 0);
	ASSERT_EQ(info.flags, DRM_NPU_BO_DEVMEM);
	ASSERT_EQ(info.mmap_offset, c.mmap_offset);
	ASSERT_EQ(npu_gem_close(self->fd, c.handle), 0);
}

TEST_F(dev, bo_create_zero_size)
{
	struct drm_npu_bo_create c = { .size = 0 };

	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_CREATE, &c), -EINVAL);
}

TEST_F(dev, bo_create_huge_size)
{
	struct drm_npu_bo_create c = { .size = 1ull << 62 };

	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_CREATE, &c), -EINVAL);
	c.size = ~0ull;
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_CREATE, &c), -EINVAL);
}

TEST_F(dev, bo_create_devmem_too_big)
{
	struct drm_npu_bo_create c = { .flags = DRM_NPU_BO_DEVMEM };

	c.size = npu_param(self->fd, DRM_NPU_PARAM_DEVMEM_SIZE) + 4096;
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_CREATE, &c), -EINVAL);
}

TEST_F(dev, bo_create_bad_flags)
{
	struct drm_npu_bo_create c = { .size = 4096, .flags = 1u << 31 };

	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_CREATE, &c), -EINVAL);
}

TEST_F(dev, bo_info_bad_handle)
{
	struct drm_npu_bo_info info = { .handle = 0xbad };

	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_INFO, &info), -ENOENT);
	info.handle = 0;
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_INFO, &info), -ENOENT);
}

TEST_F(dev, bo_handle_from_other_file)
{
	struct drm_npu_bo_info info = { 0 };
	struct npu_bo bo;
	int fd2 = npu_open();

	ASSERT_GE(fd2, 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &bo), 0);
	info.handle = bo.handle;
	ASSERT_EQ(npu_ioctl(fd2, DRM_IOCTL_NPU_BO_INFO, &info), -ENOENT);
	npu_bo_free(self->fd, &bo);
	close(fd2);
}

TEST_F(dev, gem_close_twice)
{
	struct npu_bo bo;

	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &bo), 0);
	munmap(bo.map, bo.size);
	ASSERT_EQ(npu_gem_close(self->fd, bo.handle), 0);
	ASSERT_EQ(npu_gem_close(self->fd, bo.handle), -EINVAL);
}

TEST_F(dev, mmap_bad_offset)
{
	void *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd,
		       0x7fff0000ull << 12);

	ASSERT_EQ(p, MAP_FAILED);
}

/* ---- USERPTR -------------------------------------------------------- */

TEST_F(dev, userptr_basic)
{
	void *mem = mmap(NULL, 65536, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct npu_bo bo;

	ASSERT_NE(mem, MAP_FAILED);
	ASSERT_EQ(npu_userptr(self->fd, mem, 65536, 0, &bo), 0);
	ASSERT_NE(bo.va, 0);
	ASSERT_EQ(npu_gem_close(self->fd, bo.handle), 0);
	ASSERT_EQ(npu_userptr(self->fd, mem, 65536,
			      DRM_NPU_USERPTR_READ_ONLY, &bo), 0);
	ASSERT_EQ(npu_gem_close(self->fd, bo.handle), 0);
	munmap(mem, 65536);
}

/* Pinned-page count of this process (/proc/self/status VmPin), KiB. */
static long vm_pin_kb(void)
{
	char line[128];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/*
 * Userptr pages are charged to the process's pinned_vm against
 * RLIMIT_MEMLOCK (unless CAP_IPC_LOCK), and uncharged when the BO goes.
 * Status of the child: 0 or the failing step.
 */
static int userptr_memlock_child(int fd)
{
	const size_t sz = 16 * 4096;
	struct rlimit rl;
	struct npu_bo a, b;
	long base;
	char *mem = mmap(NULL, 2 * sz, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED || npu_drop_cap(CAP_IPC_LOCK))
		return 1;
	base = vm_pin_kb();
	if (base < 0)
		return 2;
	rl.rlim_cur = rl.rlim_max = base * 1024 + sz;
	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		return 3;
	if (npu_userptr(fd, mem, sz, 0, &a))
		return 4;
	if (vm_pin_kb() != base + (long)(sz / 1024))
		return 5;
	if (npu_userptr(fd, mem + sz, 4096, 0, &b) != -ENOMEM)
		return 6;		/* one page past the limit */
	if (vm_pin_kb() != base + (long)(sz / 1024))
		return 7;
	if (npu_gem_close(fd, a.handle) || vm_pin_kb() != base)
		return 8;
	if (npu_userptr(fd, mem + sz, sz, DRM_NPU_USERPTR_READ_ONLY, &b))
		return 9;		/* the limit is free again */
	if (npu_gem_close(fd, b.handle) || vm_pin_kb() != base)
		return 10;
	return 0;
}

TEST_F(dev, userptr_charged_to_memlock)
{
	pid_t pid = fork();
	int status;

	ASSERT_GE(pid, 0);
	if (pid == 0)
		_exit(userptr_memlock_child(self->fd));
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(WEXITSTATUS(status), 0)
		TH_LOG("child step %d failed", WEXITSTATUS(status));
}

TEST_F(dev, userptr_unaligned_addr)
{
	static char buf[3 * 4096] __attribute__((aligned(4096)));
	struct npu_bo bo;

	ASSERT_EQ(npu_userptr(self->fd, buf + 8, 4096, 0, &bo), -EINVAL);
}

TEST_F(dev, userptr_unaligned_size)
{
	static char buf[3 * 4096] __attribute__((aligned(4096)));
	struct npu_bo bo;

	ASSERT_EQ(npu_userptr(self->fd, buf, 100, 0, &bo), -EINVAL);
}

TEST_F(dev, userptr_zero_size)
{
	static char buf[4096] __attribute__((aligned(4096)));
	struct npu_bo bo;

	ASSERT_EQ(npu_userptr(self->fd, buf, 0, 0, &bo), -EINVAL);
}

TEST_F(dev, userptr_overflow)
{
	struct drm_npu_userptr u = { .addr = ~0ull & ~4095ull, .size = 8192 };

	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_USERPTR, &u), -EINVAL);
}

TEST_F(dev, userptr_unmapped)
{
	void *mem = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct npu_bo bo;

	ASSERT_NE(mem, MAP_FAILED);
	munmap(mem, 8192);
	ASSERT_EQ(npu_userptr(self->fd, mem, 8192, 0, &bo), -EFAULT);
}

TEST_F(dev, userptr_kernel_address)
{
	struct drm_npu_userptr u = { .addr = 0xffff888000000000ull,
				     .size = 4096 };

	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_USERPTR, &u), -EFAULT);
}

TEST_F(dev, userptr_readonly_memory_needs_flag)
{
	void *mem = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	struct npu_bo bo;

	ASSERT_NE(mem, MAP_FAILED);
	ASSERT_EQ(npu_userptr(self->fd, mem, 4096, 0, &bo), -EFAULT);
	ASSERT_EQ(npu_userptr(self->fd, mem, 4096, DRM_NPU_USERPTR_READ_ONLY,
			      &bo), 0);
	ASSERT_EQ(npu_gem_close(self->fd, bo.handle), 0);
	munmap(mem, 4096);
}

TEST_F(dev, userptr_bad_flags)
{
	static char buf[4096] __attribute__((aligned(4096)));
	struct npu_bo bo;

	ASSERT_EQ(npu_userptr(self->fd, buf, 4096, 0x80, &bo), -EINVAL);
}

/* ---- PRIME ------------------------------------------------------------ */

TEST_F(dev, prime_self_import)
{
	struct npu_bo bo;
	uint32_t h2;
	int dfd;

	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &bo), 0);
	ASSERT_EQ(drmPrimeHandleToFD(self->fd, bo.handle, DRM_CLOEXEC, &dfd),
		  0);
	ASSERT_EQ(drmPrimeFDToHandle(self->fd, dfd, &h2), 0);
	ASSERT_EQ(h2, bo.handle);
	close(dfd);
	npu_bo_free(self->fd, &bo);
}

TEST_F(dev, prime_other_file_round_trip)
{
	struct drm_npu_bo_info info = { 0 };
	struct npu_bo bo;
	uint32_t h2, *p2;
	int dfd, fd2 = npu_open();

	ASSERT_GE(fd2, 0);
	ASSERT_EQ(npu_bo_new(self->fd, 8192, 0, &bo), 0);
	((uint32_t *)bo.map)[1] = 0xcafe;
	ASSERT_EQ(drmPrimeHandleToFD(self->fd, bo.handle, DRM_CLOEXEC, &dfd),
		  0);
	ASSERT_EQ(drmPrimeFDToHandle(fd2, dfd, &h2), 0);
	info.handle = h2;
	ASSERT_EQ(npu_ioctl(fd2, DRM_IOCTL_NPU_BO_INFO, &info), 0);
	ASSERT_EQ(info.size, 8192);
	ASSERT_NE(info.va, 0);
	ASSERT_NE(info.mmap_offset, 0);
	p2 = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd2,
		  info.mmap_offset);
	ASSERT_NE(p2, MAP_FAILED);
	ASSERT_EQ(p2[1], 0xcafe);
	p2[2] = 0xbeef;
	ASSERT_EQ(((uint32_t *)bo.map)[2], 0xbeef);
	/* the dma-buf itself can be mmapped too */
	munmap(p2, 8192);
	p2 = mmap(NULL, 8192, PROT_READ, MAP_SHARED, dfd, 0);
	ASSERT_NE(p2, MAP_FAILED);
	ASSERT_EQ(p2[2], 0xbeef);
	munmap(p2, 8192);
	close(dfd);
	npu_gem_close(fd2, h2);
	close(fd2);
	npu_bo_free(self->fd, &bo);
}

TEST_F(dev, prime_export_devmem_refused)
{
	struct drm_npu_bo_create c = { .size = 4096,
				       .flags = DRM_NPU_BO_DEVMEM };
	int dfd;

	if (!npu_param(self->fd, DRM_NPU_PARAM_DEVMEM_SIZE))
		SKIP(return, "no device memory");
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_CREATE, &c), 0);
	ASSERT_NE(drmPrimeHandleToFD(self->fd, c.handle, DRM_CLOEXEC, &dfd),
		  0);
	npu_gem_close(self->fd, c.handle);
}

TEST_F(dev, prime_bad_handle)
{
	int dfd;

	ASSERT_NE(drmPrimeHandleToFD(self->fd, 0x1234, DRM_CLOEXEC, &dfd), 0);
	ASSERT_EQ(errno, ENOENT);
}

/* ---- queues ----------------------------------------------------------- */

TEST_F(dev, queue_create_destroy)
{
	uint32_t id, id2;

	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, 0, &id), 0);
	ASSERT_NE(id, 0);
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COPY,
				DRM_NPU_PRIORITY_HIGH, DRM_NPU_RING_ANY, &id2),
		  0);
	ASSERT_NE(id, id2);
	ASSERT_EQ(npu_queue_free(self->fd, id), 0);
	ASSERT_EQ(npu_queue_free(self->fd, id), -ENOENT);
	ASSERT_EQ(npu_queue_free(self->fd, id2), 0);
}

/*
 * The scheduler serves high-priority queues first, so they need
 * CAP_SYS_NICE (as amdgpu's contexts do); low and normal do not.
 */
TEST_F(dev, queue_create_high_needs_cap_sys_nice)
{
	pid_t pid = fork();
	int status;

	ASSERT_GE(pid, 0);
	if (pid == 0) {
		uint32_t id;

		if (npu_drop_cap(CAP_SYS_NICE))
			_exit(10);
		if (npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				  DRM_NPU_PRIORITY_HIGH, DRM_NPU_RING_ANY,
				  &id) != -EACCES)
			_exit(11);
		if (npu_queue_new(self->fd, DRM_NPU_RING_KIND_COPY,
				  DRM_NPU_PRIORITY_HIGH, 0, &id) != -EACCES)
			_exit(12);
		if (npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				  DRM_NPU_PRIORITY_NORMAL, 0, &id) ||
		    npu_queue_free(self->fd, id))
			_exit(13);
		if (npu_queue_new(self->fd, DRM_NPU_RING_KIND_COPY,
				  DRM_NPU_PRIORITY_LOW, 0, &id) ||
		    npu_queue_free(self->fd, id))
			_exit(14);
		_exit(0);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(WEXITSTATUS(status), 0)
		TH_LOG("child step %d failed (10: capset)", WEXITSTATUS(status));
}

TEST_F(dev, queue_create_bad_kind)
{
	uint32_t id;

	ASSERT_EQ(npu_queue_new(self->fd, 7, DRM_NPU_PRIORITY_NORMAL, 0, &id),
		  -EINVAL);
}

TEST_F(dev, queue_create_bad_priority)
{
	uint32_t id;

	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE, 3, 0,
				&id), -EINVAL);
}

TEST_F(dev, queue_create_bad_ring)
{
	uint32_t n = npu_param(self->fd, DRM_NPU_PARAM_NUM_COMPUTE_RINGS);
	uint32_t id;

	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, n, &id), -EINVAL);
}

TEST_F(dev, queue_create_nonzero_out_field)
{
	struct drm_npu_queue_create q = { .queue_id = 5 };

	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_CREATE, &q),
		  -EINVAL);
}

TEST_F(dev, queue_destroy_bad_pad)
{
	struct drm_npu_queue_destroy d = { .queue_id = 1, .pad = 1 };

	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_DESTROY, &d),
		  -EINVAL);
}

TEST_F(dev, queue_of_other_file)
{
	uint32_t id;
	int fd2 = npu_open();

	ASSERT_GE(fd2, 0);
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, 0, &id), 0);
	ASSERT_EQ(npu_queue_free(fd2, id), -ENOENT);
	ASSERT_EQ(npu_submit_one(fd2, id, 0, 0, 0), -ENOENT);
	close(fd2);
}

TEST_F(dev, queue_limit)
{
	uint32_t max = npu_param(self->fd, DRM_NPU_PARAM_MAX_QUEUES);
	uint32_t i, id;

	for (i = 0; i < max; i++)
		ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COPY,
					DRM_NPU_PRIORITY_LOW, 0, &id), 0);
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COPY,
				DRM_NPU_PRIORITY_LOW, 0, &id), -ENOSPC);
}

/* ---- SUBMIT argument checking ------------------------------------- */

FIXTURE(sub) {
	int fd;
	uint32_t queue;
	uint32_t syncobj;
	struct npu_cmd cmd;
	struct npu_bo data;
	uint64_t va;
	uint32_t size;
};

FIXTURE_SETUP(sub)
{
	self->fd = npu_open();
	if (self->fd < 0)
		SKIP(return, "no npu device");
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, 0, &self->queue), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &self->syncobj), 0);
	ASSERT_EQ(npu_cmd_new(self->fd, &self->cmd, 4096), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &self->data), 0);
	npu_emit_fill(&self->cmd, self->data.va, 0x11223344, 4096);
	npu_cmd_end(&self->cmd, &self->va, &self->size);
}

FIXTURE_TEARDOWN(sub)
{
	if (self->fd >= 0)
		close(self->fd);
}

static int submit_raw(int fd, struct drm_npu_job *j, uint32_t count,
		      uint32_t stride, uint32_t flags, uint32_t pad)
{
	struct drm_npu_submit s = {
		.jobs = (uintptr_t)j, .job_count = count, .job_stride = stride,
		.flags = flags, .pad = pad,
	};

	return npu_ioctl(fd, DRM_IOCTL_NPU_SUBMIT, &s);
}

TEST_F(sub, submit_valid)
{
	ASSERT_EQ(npu_submit_one(self->fd, self->queue, self->va, self->size,
				 self->syncobj), 0);
	ASSERT_EQ(npu_syncobj_wait(self->fd, self->syncobj, NPU_TIMEOUT_NS),
		  0);
	ASSERT_EQ(((uint32_t *)self->data.map)[1023], 0x11223344);
}

TEST_F(sub, submit_bad_flags)
{
	struct drm_npu_job j;

	npu_job_init(&j, self->queue, self->va, self->size);
	ASSERT_EQ(submit_raw(self->fd, &j, 1, sizeof(j), 1, 0), -EINVAL);
}

TEST_F(sub, submit_bad_pad)
{
	struct drm_npu_job j;

	npu_job_init(&j, self->queue, self->va, self->size);
	ASSERT_EQ(submit_raw(self->fd, &j, 1, sizeof(j), 0, 1), -EINVAL);
}

TEST_F(sub, submit_zero_jobs)
{
	struct drm_npu_job j;

	npu_job_init(&j, self->queue, self->va, self->size);
	ASSERT_EQ(submit_raw(self->fd, &j, 0, sizeof(j), 0, 0), -EINVAL);
}

TEST_F(sub, submit_too_many_jobs)
{
	uint32_t max = npu_param(self->fd, DRM_NPU_PARAM_MAX_JOBS);
	struct drm_npu_job *j = calloc(max + 1, sizeof(*j));
	uint32_t i;

	for (i = 0; i <= max; i++)
		npu_job_init(&j[i], self->queue, 0, 0);
	ASSERT_EQ(submit_raw(self->fd, j, max + 1, sizeof(*j), 0, 0), -EINVAL);
	free(j);
}

TEST_F(sub, submit_bad_stride)
{
	struct drm_npu_job j[2];

	npu_job_init(&j[0], self->queue, self->va, self->size);
	ASSERT_EQ(submit_raw(self->fd, j, 1, JOB_SIZE_V1 - 8, 0, 0), -EINVAL);
	ASSERT_EQ(submit_raw(self->fd, j, 1, 1 << 20, 0, 0), -EINVAL);
}

TEST_F(sub, submit_larger_stride_nonzero_tail)
{
	struct {
		struct drm_npu_job j;
		uint64_t ext;
	} big[1];

	memset(big, 0, sizeof(big));
	npu_job_init(&big[0].j, self->queue, self->va, self->size);
	ASSERT_EQ(submit_raw(self->fd, &big[0].j, 1, sizeof(big[0]), 0, 0), 0);
	big[0].ext = 1;
	ASSERT_EQ(submit_raw(self->fd, &big[0].j, 1, sizeof(big[0]), 0, 0),
		  -EINVAL);
}

/*
 * Binaries built against the first drm_npu_job (56 bytes, no array
 * strides) keep working: the second job of a packed array is read at byte
 * 56 and its missing fields read as 0.
 */
TEST_F(sub, submit_first_version_stride)
{
	struct drm_npu_sync out = { .handle = self->syncobj };
	uint8_t packed[2 * JOB_SIZE_V1];
	struct drm_npu_job j;

	memset(self->data.map, 0, 4096);
	npu_job_init(&j, self->queue, 0, 0);
	memcpy(packed, &j, JOB_SIZE_V1);
	npu_job_init(&j, self->queue, self->va, self->size);
	j.out_syncs = (uintptr_t)&out;
	j.out_sync_count = 1;
	memcpy(packed + JOB_SIZE_V1, &j, JOB_SIZE_V1);
	ASSERT_EQ(submit_raw(self->fd, (void *)packed, 2, JOB_SIZE_V1, 0, 0),
		  0);
	ASSERT_EQ(npu_syncobj_wait(self->fd, self->syncobj, NPU_TIMEOUT_NS),
		  0);
	ASSERT_EQ(((uint32_t *)self->data.map)[1023], 0x11223344);
}

/* Syncs and BO handles laid out with a larger element size. */
TEST_F(sub, submit_array_strides)
{
	struct {
		struct drm_npu_sync s;
		uint64_t ext[2];
	} outs[2];
	uint32_t handles[2][2] = { { self->data.handle, 0 },
				   { self->cmd.bo.handle, 0 } };
	struct drm_npu_job j;
	uint32_t so2;

	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so2), 0);
	memset(outs, 0, sizeof(outs));
	outs[0].s.handle = self->syncobj;
	outs[1].s.handle = so2;
	memset(self->data.map, 0, 4096);
	npu_job_init(&j, self->queue, self->va, self->size);
	j.out_syncs = (uintptr_t)outs;
	j.out_sync_count = 2;
	j.sync_stride = sizeof(outs[0]);
	j.bo_handles = (uintptr_t)handles;
	j.bo_count = 2;
	j.bo_handle_stride = sizeof(handles[0]);
	ASSERT_EQ(npu_submit(self->fd, &j, 1), 0);
	/* the second entry was found 32 bytes in: both syncobjs signal */
	ASSERT_EQ(npu_syncobj_wait(self->fd, so2, NPU_TIMEOUT_NS), 0);
	ASSERT_EQ(npu_syncobj_wait(self->fd, self->syncobj, NPU_TIMEOUT_NS),
		  0);
	ASSERT_EQ(((uint32_t *)self->data.map)[1023], 0x11223344);

	/* in-syncs with the same stride */
	j.in_syncs = (uintptr_t)outs;
	j.in_sync_count = 2;
	j.out_sync_count = 0;
	ASSERT_EQ(npu_submit(self->fd, &j, 1), 0);

	/* bytes past what the kernel knows must be zero */
	outs[1].ext[1] = 1;
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EINVAL);
	outs[1].ext[1] = 0;
	handles[1][1] = 1;
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EINVAL);
	handles[1][1] = 0;
	/* smaller than the first version, or larger than a page */
	j.sync_stride = 8;
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EINVAL);
	j.sync_stride = 8192;
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EINVAL);
	j.sync_stride = 0;
	j.in_sync_count = 0;
	j.bo_handle_stride = 2;
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EINVAL);
	j.bo_handle_stride = 8192;
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EINVAL);
}

TEST_F(sub, submit_unmapped_jobs_pointer)
{
	ASSERT_EQ(submit_raw(self->fd, (void *)8, 1,
			     sizeof(struct drm_npu_job), 0, 0), -EFAULT);
}

TEST_F(sub, submit_job_bad_flags)
{
	struct drm_npu_job j;

	npu_job_init(&j, self->queue, self->va, self->size);
	j.flags = 4;
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EINVAL);
}

TEST_F(sub, submit_bad_queue)
{
	struct drm_npu_job j;

	npu_job_init(&j, 999, self->va, self->size);
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -ENOENT);
	npu_job_init(&j, 0, self->va, self->size);
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -ENOENT);
}

TEST_F(sub, submit_destroyed_queue)
{
	struct drm_npu_job j;

	ASSERT_EQ(npu_queue_free(self->fd, self->queue), 0);
	npu_job_init(&j, self->queue, self->va, self->size);
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -ENOENT);
}

TEST_F(sub, submit_cmd_size_unaligned)
{
	struct drm_npu_job j;

	npu_job_init(&j, self->queue, self->va, 6);
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EINVAL);
}

TEST_F(sub, submit_cmd_size_huge)
{
	struct drm_npu_job j;

	npu_job_init(&j, self->queue, self->va, NPU_IB_MAX_SIZE + 4);
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EINVAL);
}

TEST_F(sub, submit_cmd_va_unmapped)
{
	struct drm_npu_job j;

	npu_job_init(&j, self->queue, 0x1000, 16);
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EINVAL);
}

TEST_F(sub, submit_cmd_past_bo_end)
{
	struct drm_npu_job j;

	npu_job_init(&j, self->queue, self->cmd.bo.va + 4000, 200);
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EINVAL);
}

TEST_F(sub, submit_cmd_closed_bo)
{
	struct drm_npu_job j;

	munmap(self->cmd.bo.map, self->cmd.bo.size);
	self->cmd.bo.map = NULL;
	ASSERT_EQ(npu_gem_close(self->fd, self->cmd.bo.handle), 0);
	npu_job_init(&j, self->queue, self->va, self->size);
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EINVAL);
}

TEST_F(sub, submit_bad_bo_handle)
{
	uint32_t handles[2] = { self->data.handle, 0xbad };
	struct drm_npu_job j;

	npu_job_init(&j, self->queue, self->va, self->size);
	j.bo_handles = (uintptr_t)handles;
	j.bo_count = 2;
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -ENOENT);
}

TEST_F(sub, submit_bo_handles_unmapped_pointer)
{
	struct drm_npu_job j;

	npu_job_init(&j, self->queue, self->va, self->size);
	j.bo_handles = 16;
	j.bo_count = 1;
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EFAULT);
}

TEST_F(sub, submit_too_many_bos)
{
	struct drm_npu_job j;

	npu_job_init(&j, self->queue, self->va, self->size);
	j.bo_handles = (uintptr_t)&self->data.handle;
	j.bo_count = npu_param(self->fd, DRM_NPU_PARAM_MAX_JOB_BOS) + 1;
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EINVAL);
}

TEST_F(sub, submit_bo_of_other_file)
{
	struct npu_bo other;
	struct drm_npu_job j;
	int fd2 = npu_open();

	ASSERT_GE(fd2, 0);
	ASSERT_EQ(npu_bo_new(fd2, 4096, 0, &other), 0);
	npu_job_init(&j, self->queue, self->va, self->size);
	j.bo_handles = (uintptr_t)&other.handle;
	j.bo_count = 1;
	/* the number may or may not be a handle here; never the other BO */
	if (other.handle != self->data.handle &&
	    other.handle != self->cmd.bo.handle)
		ASSERT_EQ(npu_submit(self->fd, &j, 1), -ENOENT);
	close(fd2);
}

TEST_F(sub, submit_bad_in_syncobj)
{
	struct drm_npu_sync s = { .handle = 0xbad };
	struct drm_npu_job j;

	npu_job_init(&j, self->queue, self->va, self->size);
	j.in_syncs = (uintptr_t)&s;
	j.in_sync_count = 1;
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -ENOENT);
}

TEST_F(sub, submit_unsubmitted_in_syncobj)
{
	struct drm_npu_sync s = { .handle = self->syncobj };
	struct drm_npu_job j;

	npu_job_init(&j, self->queue, self->va, self->size);
	j.in_syncs = (uintptr_t)&s;
	j.in_sync_count = 1;
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EINVAL);
}

TEST_F(sub, submit_bad_out_syncobj)
{
	struct drm_npu_sync s = { .handle = 0xbad };
	struct drm_npu_job j;

	npu_job_init(&j, self->queue, self->va, self->size);
	j.out_syncs = (uintptr_t)&s;
	j.out_sync_count = 1;
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -ENOENT);
}

TEST_F(sub, submit_sync_bad_flags)
{
	struct drm_npu_sync s = { .handle = self->syncobj, .flags = 1 };
	struct drm_npu_job j;

	npu_job_init(&j, self->queue, self->va, self->size);
	j.out_syncs = (uintptr_t)&s;
	j.out_sync_count = 1;
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EINVAL);
}

TEST_F(sub, submit_syncs_unmapped_pointer)
{
	struct drm_npu_job j;

	npu_job_init(&j, self->queue, self->va, self->size);
	j.in_syncs = 24;
	j.in_sync_count = 1;
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EFAULT);
	npu_job_init(&j, self->queue, self->va, self->size);
	j.out_syncs = 24;
	j.out_sync_count = 1;
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EFAULT);
}

TEST_F(sub, submit_too_many_syncs)
{
	struct drm_npu_sync s = { .handle = self->syncobj };
	struct drm_npu_job j;

	npu_job_init(&j, self->queue, self->va, self->size);
	j.out_syncs = (uintptr_t)&s;
	j.out_sync_count = npu_param(self->fd, DRM_NPU_PARAM_MAX_JOB_SYNCS) + 1;
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EINVAL);
}

/* A bad job anywhere in the array: nothing queued, nothing signalled. */
TEST_F(sub, submit_array_all_or_nothing)
{
	struct drm_npu_sync s = { .handle = self->syncobj };
	struct drm_npu_job j[3];
	uint32_t *d = self->data.map;

	d[0] = 0;
	npu_job_init(&j[0], self->queue, self->va, self->size);
	j[0].out_syncs = (uintptr_t)&s;
	j[0].out_sync_count = 1;
	npu_job_init(&j[1], self->queue, self->va, self->size);
	npu_job_init(&j[2], self->queue, self->va, 3);	/* bad */
	ASSERT_EQ(npu_submit(self->fd, j, 3), -EINVAL);
	/* the syncobj got no fence */
	ASSERT_EQ(drmSyncobjWait(self->fd, &self->syncobj, 1,
				 npu_abs_timeout(0), 0, NULL), -EINVAL);
	usleep(100000);
	ASSERT_EQ(d[0], 0);
}

/* ---- GET_FAULT, COUNTERS, BO_WAIT -------------------------------- */

TEST_F(dev, get_fault_initially_empty)
{
	struct drm_npu_get_fault f;

	memset(&f, 0xff, sizeof(f));
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_GET_FAULT, &f), 0);
	ASSERT_EQ(f.count, 0);
	ASSERT_EQ(f.kind, DRM_NPU_FAULT_NONE);
}

/*
 * A caller built before drm_npu_get_fault.entry was appended: its ioctl
 * number encodes the shorter size, and nothing past that is written.
 */
TEST_F(dev, get_fault_shorter_struct)
{
	const size_t old = offsetof(struct drm_npu_get_fault, entry);
	unsigned char buf[sizeof(struct drm_npu_get_fault)];
	struct drm_npu_get_fault f;

	memset(buf, 0xa5, sizeof(buf));
	ASSERT_EQ(npu_ioctl(self->fd, _IOC(_IOC_READ | _IOC_WRITE,
					   DRM_IOCTL_BASE,
					   DRM_COMMAND_BASE + DRM_NPU_GET_FAULT,
					   old), buf), 0);
	memcpy(&f, buf, old);
	ASSERT_EQ(f.count, 0);
	ASSERT_EQ(f.kind, DRM_NPU_FAULT_NONE);
	for (size_t i = old; i < sizeof(buf); i++)
		ASSERT_EQ(buf[i], 0xa5);
}

TEST_F(dev, counters_basic)
{
	struct drm_npu_ring_counters rc[NPU_MAX_RINGS];
	uint64_t cu[NPU_MAX_CUS];
	struct drm_npu_counters c = {
		.rings = (uintptr_t)rc, .cu_busy_ns = (uintptr_t)cu,
		.ring_count = NPU_MAX_RINGS, .cu_count = NPU_MAX_CUS,
	};

	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_COUNTERS, &c), 0);
	ASSERT_EQ(c.ring_count,
		  npu_param(self->fd, DRM_NPU_PARAM_NUM_COMPUTE_RINGS) +
		  npu_param(self->fd, DRM_NPU_PARAM_NUM_COPY_RINGS));
	ASSERT_EQ(c.cu_count, npu_param(self->fd, DRM_NPU_PARAM_NUM_CUS));
	ASSERT_GT(c.clock, 0);
}

TEST_F(dev, counters_query_sizes)
{
	struct drm_npu_counters c = { 0 };

	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_COUNTERS, &c), 0);
	ASSERT_GE(c.ring_count, 2);
}

TEST_F(dev, counters_bad_pointer)
{
	struct drm_npu_counters c = { .rings = 8, .ring_count = 1 };

	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_COUNTERS, &c), -EFAULT);
	c.rings = 0;
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_COUNTERS, &c), -EINVAL);
}

/* Counter arrays written with the caller's element sizes. */
TEST_F(dev, counters_strides)
{
	struct {
		struct drm_npu_ring_counters rc;
		uint64_t ext[2];
	} rings[NPU_MAX_RINGS];
	uint64_t cu[NPU_MAX_CUS][2];
	struct drm_npu_counters c = {
		.rings = (uintptr_t)rings, .cu_busy_ns = (uintptr_t)cu,
		.ring_count = NPU_MAX_RINGS, .cu_count = NPU_MAX_CUS,
		.ring_stride = sizeof(rings[0]), .cu_stride = sizeof(cu[0]),
	};
	unsigned int i;

	memset(rings, 0xee, sizeof(rings));
	memset(cu, 0xee, sizeof(cu));
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_COUNTERS, &c), 0);
	ASSERT_GE(c.ring_count, 2);
	for (i = 0; i < c.ring_count; i++) {
		/* written where the caller's entries are, tails untouched */
		ASSERT_NE(rings[i].rc.busy_ns, 0xeeeeeeeeeeeeeeeeull);
		ASSERT_NE(rings[i].rc.ops, 0xeeeeeeeeeeeeeeeeull);
		ASSERT_EQ(rings[i].ext[0], 0xeeeeeeeeeeeeeeeeull);
		ASSERT_EQ(rings[i].ext[1], 0xeeeeeeeeeeeeeeeeull);
	}
	for (i = 0; i < c.cu_count && i < NPU_MAX_CUS; i++) {
		ASSERT_NE(cu[i][0], 0xeeeeeeeeeeeeeeeeull);
		ASSERT_EQ(cu[i][1], 0xeeeeeeeeeeeeeeeeull);
	}
	c.ring_stride = 16;
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_COUNTERS, &c), -EINVAL);
	c.ring_stride = 0;
	c.cu_stride = 4;
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_COUNTERS, &c), -EINVAL);
}

TEST_F(dev, bo_wait_idle)
{
	struct drm_npu_bo_wait w = { 0 };
	struct npu_bo bo;

	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &bo), 0);
	w.handle = bo.handle;
	w.timeout_ns = npu_abs_timeout(0);
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_WAIT, &w), 0);
	npu_bo_free(self->fd, &bo);
}

TEST_F(dev, bo_wait_bad_handle)
{
	struct drm_npu_bo_wait w = { .handle = 0xbad };

	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_WAIT, &w), -ENOENT);
}

TEST_F(dev, bo_wait_bad_pad)
{
	struct drm_npu_bo_wait w = { .handle = 1, .pad = 1 };

	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_WAIT, &w), -EINVAL);
}

TEST_F(dev, unknown_ioctl)
{
	struct drm_npu_get_param p = { 0 };

	ASSERT_EQ(npu_ioctl(self->fd,
			    DRM_IOWR(DRM_COMMAND_BASE + 0x3f,
				     struct drm_npu_get_param), &p), -EINVAL);
}

static int read_all(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY), n, total = 0;

	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf + total, len - 1 - total)) > 0)
		total += n;
	close(fd);
	buf[total] = 0;
	return n < 0 ? -1 : total;
}

/* The sysfs counters and (if mounted) debugfs files read back sanely. */
TEST_F(dev, sysfs_and_debugfs)
{
	static const char *const attrs[] = {
		"jobs_submitted", "jobs_completed", "jobs_failed", "faults",
		"resets", "utilization",
	};
	static char buf[1 << 16];
	char path[256];
	glob_t g;
	size_t i;

	ASSERT_EQ(glob("/sys/bus/pci/drivers/npu/0000:*/npu", 0, NULL, &g), 0);
	for (i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", g.gl_pathv[0], attrs[i]);
		ASSERT_GT(read_all(path, buf, sizeof(buf)), 0);
	}
	ASSERT_NE(strstr(buf, "compute0"), NULL);	/* utilization */
	globfree(&g);

	if (glob("/sys/kernel/debug/{accel,dri}/*/rings", GLOB_BRACE, NULL,
		 &g))
		SKIP(return, "debugfs not mounted");
	for (i = 0; i < g.gl_pathc; i++) {
		char *dir = g.gl_pathv[i];

		ASSERT_GT(read_all(dir, buf, sizeof(buf)), 0);
		ASSERT_NE(strstr(buf, "npu-compute0"), NULL);
		strcpy(strrchr(dir, '/'), "/contexts");
		ASSERT_GT(read_all(dir, buf, sizeof(buf)), 0);
		ASSERT_NE(strstr(buf, "ctx "), NULL);
	}
	globfree(&g);
}

/* ---- fdinfo (Documentation/gpu/drm-usage-stats.rst) ----------------- */

/* Value of key in /proc/self/fdinfo/fd (its first number; 0 for text),
 * -1 if absent; rest, when given, receives the value's text. */
static long long fdinfo_value(int fd, const char *key, char *rest, size_t n)
{
	char path[64], line[256];
	size_t klen = strlen(key);
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + klen;

		if (strncmp(line, key, klen) || *p != ':')
			continue;
		p++;
		p += strspn(p, " \t");
		p[strcspn(p, "\n")] = 0;
		if (rest)
			snprintf(rest, n, "%s", p);
		v = strtoll(p, NULL, 10);
		break;
	}
	fclose(f);
	return v;
}

/* A memory key ("1 MiB", "12 KiB", "100") in bytes; -1 if absent. */
static long long fdinfo_bytes(int fd, const char *key)
{
	char rest[64] = "";
	long long v = fdinfo_value(fd, key, rest, sizeof(rest));

	if (v < 0)
		return -1;
	if (strstr(rest, "MiB"))
		return v << 20;
	if (strstr(rest, "KiB"))
		return v << 10;
	return v;
}

TEST_F(dev, fdinfo_standard_keys)
{
	long long id, id2, busy, copy, mem, spin_ns = 60 * 1000000ll, wall;
	uint64_t spin = (uint64_t)spin_ns, t0, va;
	char drv[64] = "", unit[64] = "";
	uint32_t q, so, size;
	struct npu_cmd cmd;
	struct npu_bo bo;
	int fd2;

	ASSERT_NE(fdinfo_value(self->fd, "drm-driver", drv, sizeof(drv)), -1);
	ASSERT_STREQ(drv, "npu");
	id = fdinfo_value(self->fd, "drm-client-id", NULL, 0);
	ASSERT_GE(id, 0);
	fd2 = npu_open();
	ASSERT_GE(fd2, 0);
	id2 = fdinfo_value(fd2, "drm-client-id", NULL, 0);
	ASSERT_GE(id2, 0);
	ASSERT_NE(id, id2);	/* one id per open file */
	ASSERT_EQ(fdinfo_value(self->fd, "drm-engine-capacity-compute", NULL, 0),
		  (long long)npu_param(self->fd, DRM_NPU_PARAM_NUM_COMPUTE_RINGS));
	ASSERT_EQ(fdinfo_value(self->fd, "drm-engine-compute", unit,
			       sizeof(unit)), 0);
	ASSERT_NE(strstr(unit, " ns"), NULL);
	ASSERT_EQ(fdinfo_value(self->fd, "drm-engine-copy", NULL, 0), 0);
	mem = fdinfo_bytes(self->fd, "drm-total-memory");
	ASSERT_GE(mem, 0);

	/* a 60 ms job counts 60 ms (up to the wall time) of compute, for
	 * this file only */
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, 0, &q), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so), 0);
	ASSERT_EQ(npu_cmd_new(self->fd, &cmd, 4096), 0);
	npu_emit_launch(&cmd, NPU_KERNEL_TEST_SPIN, 1, 1, &spin);
	npu_cmd_end(&cmd, &va, &size);
	t0 = npu_now_ns();
	ASSERT_EQ(npu_submit_one(self->fd, q, va, size, so), 0);
	ASSERT_EQ(npu_syncobj_wait(self->fd, so, NPU_TIMEOUT_NS), 0);
	wall = (long long)(npu_now_ns() - t0);
	busy = fdinfo_value(self->fd, "drm-engine-compute", NULL, 0);
	EXPECT_GE(busy, spin_ns * 9 / 10);
	EXPECT_LE(busy, wall);
	copy = fdinfo_value(self->fd, "drm-engine-copy", NULL, 0);
	EXPECT_EQ(copy, 0);
	EXPECT_EQ(fdinfo_value(fd2, "drm-engine-compute", NULL, 0), 0);

	/* the file's buffers: the command buffer (4 KiB) and 1 MiB more */
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 20, 0, &bo), 0);
	mem = fdinfo_bytes(self->fd, "drm-total-memory") - mem;
	EXPECT_GE(mem, 1052672ll);
	close(fd2);
}

TEST_HARNESS_MAIN
