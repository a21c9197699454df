/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * npu_test.h - helpers shared by the npu kselftests: device lookup, BOs,
 * queues, command-buffer packets, submission and syncobj waits.
 */
#ifndef NPU_TEST_H
#define NPU_TEST_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <xf86drm.h>
#include <linux/userfaultfd.h>

#include "npu_hw.h"
#include "drm/npu_accel.h"

#define NPU_TIMEOUT_NS	(10ull * 1000 * 1000 * 1000)

/*
 * Harness limit (s) of the tests that create hundreds of BOs: on the
 * debug kernel under TCG a 4 MiB BO_CREATE took 0.1 s at first and up
 * to 0.45 s after a few hundred such BOs; the harness's 30 s was missed.
 */
#define NPU_BO_HEAVY_TIMEOUT	150

static inline uint64_t npu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static inline int64_t npu_abs_timeout(uint64_t ns)
{
	return (int64_t)(npu_now_ns() + ns);
}

/* ioctl returning 0 or -errno */
static inline int npu_ioctl(int fd, unsigned long req, void *arg)
{
	return drmIoctl(fd, req, arg) ? -errno : 0;
}

static inline int npu_try_open(const char *path)
{
	drmVersionPtr v;
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -1;
	v = drmGetVersion(fd);
	if (v && !strcmp(v->name, "npu")) {
		drmFreeVersion(v);
		return fd;
	}
	if (v)
		drmFreeVersion(v);
	close(fd);
	return -1;
}

/*
 * Fault-injection runs (debug kernel, failslab/fail_page_alloc with
 * task-filter): NPU_FAULT_INJECT=1 marks the process once the device is
 * open, so the allocations of the ioctls fail, not those of exec().
 */
static inline void npu_fault_inject_start(void)
{
	int fd;

	if (!getenv("NPU_FAULT_INJECT"))
		return;
	fd = open("/proc/self/make-it-fail", O_WRONLY);
	if (fd >= 0) {
		if (write(fd, "1", 1) < 0)
			perror("make-it-fail");
		close(fd);
	}
}

/* Open the npu device (accel node on 6.2+, render node on 6.1); -1 if none. */
static inline int npu_open(void)
{
	char path[64];
	int i, fd;

	for (i = 0; i < 16; i++) {
		snprintf(path, sizeof(path), "/dev/accel/accel%d", i);
		fd = npu_try_open(path);
		if (fd >= 0)
			goto found;
	}
	for (i = 128; i < 192; i++) {
		snprintf(path, sizeof(path), "/dev/dri/renderD%d", i);
		fd = npu_try_open(path);
		if (fd >= 0)
			goto found;
	}
	return -1;
found:
	npu_fault_inject_start();
	return fd;
}

static inline uint64_t npu_param(int fd, uint32_t param)
{
	struct drm_npu_get_param p = { .param = param };

	if (npu_ioctl(fd, DRM_IOCTL_NPU_GET_PARAM, &p))
		return 0;
	return p.value;
}

struct npu_bo {
	uint32_t handle;
	uint64_t size;
	uint64_t va;
	uint64_t mmap_offset;
	void *map;
};

static inline int npu_bo_new(int fd, uint64_t size, uint32_t flags,
			     struct npu_bo *bo)
{
	struct drm_npu_bo_create c = { .size = size, .flags = flags };
	int ret;

	memset(bo, 0, sizeof(*bo));
	ret = npu_ioctl(fd, DRM_IOCTL_NPU_BO_CREATE, &c);
	if (ret)
		return ret;
	bo->handle = c.handle;
	bo->size = size;
	bo->va = c.va;
	bo->mmap_offset = c.mmap_offset;
	if (!(flags & DRM_NPU_BO_DEVMEM)) {
		bo->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
			       fd, c.mmap_offset);
		if (bo->map == MAP_FAILED) {
			bo->map = NULL;
			return -errno;
		}
	}
	return 0;
}

static inline int npu_gem_close(int fd, uint32_t handle)
{
	struct drm_gem_close c = { .handle = handle };

	return npu_ioctl(fd, DRM_IOCTL_GEM_CLOSE, &c);
}

static inline void npu_bo_free(int fd, struct npu_bo *bo)
{
	if (bo->map)
		munmap(bo->map, bo->size);
	if (bo->handle)
		npu_gem_close(fd, bo->handle);
	memset(bo, 0, sizeof(*bo));
}

static inline int npu_userptr(int fd, void *addr, uint64_t size,
			      uint32_t flags, struct npu_bo *bo)
{
	struct drm_npu_userptr u = {
		.addr = (uintptr_t)addr, .size = size, .flags = flags,
	};
	int ret;

	memset(bo, 0, sizeof(*bo));
	ret = npu_ioctl(fd, DRM_IOCTL_NPU_USERPTR, &u);
	if (ret)
		return ret;
	bo->handle = u.handle;
	bo->size = size;
	bo->va = u.va;
	return 0;
}

static inline int npu_queue_new(int fd, uint32_t kind, uint32_t prio,
				uint32_t ring, uint32_t *id)
{
	struct drm_npu_queue_create q = {
		.kind = kind, .priority = prio, .ring = ring,
	};
	int ret = npu_ioctl(fd, DRM_IOCTL_NPU_QUEUE_CREATE, &q);

	if (!ret)
		*id = q.queue_id;
	return ret;
}

static inline int npu_queue_free(int fd, uint32_t id)
{
	struct drm_npu_queue_destroy d = { .queue_id = id };

	return npu_ioctl(fd, DRM_IOCTL_NPU_QUEUE_DESTROY, &d);
}

/* ---- extra contexts (DRM_NPU_FEATURE_CONTEXTS) ------------------------ */

static inline int npu_ctx_new(int fd, uint32_t *id)
{
	struct drm_npu_ctx_create c = { 0 };
	int ret = npu_ioctl(fd, DRM_IOCTL_NPU_CTX_CREATE, &c);

	if (!ret)
		*id = c.ctx_id;
	return ret;
}

static inline int npu_ctx_free(int fd, uint32_t id)
{
	struct drm_npu_ctx_destroy d = { .ctx_id = id };

	return npu_ioctl(fd, DRM_IOCTL_NPU_CTX_DESTROY, &d);
}

/*
 * Map a GEM handle into an extra context. With DRM_NPU_BO_MAP_FIXED *va is
 * the address to map at; otherwise pass *va = 0. On success *va is the
 * mapped address.
 */
static inline int npu_bo_map(int fd, uint32_t handle, uint32_t ctx_id,
			     uint32_t flags, uint64_t *va)
{
	struct drm_npu_bo_map m = {
		.handle = handle, .ctx_id = ctx_id, .flags = flags, .va = *va,
	};
	int ret = npu_ioctl(fd, DRM_IOCTL_NPU_BO_MAP, &m);

	if (!ret)
		*va = m.va;
	return ret;
}

static inline int npu_bo_unmap(int fd, uint32_t ctx_id, uint64_t va)
{
	struct drm_npu_bo_unmap u = { .ctx_id = ctx_id, .va = va };

	return npu_ioctl(fd, DRM_IOCTL_NPU_BO_UNMAP, &u);
}

/* a queue whose jobs run in context ctx_id (0: the default context) */
static inline int npu_queue_new_ctx(int fd, uint32_t kind, uint32_t prio,
				    uint32_t ring, uint32_t ctx_id,
				    uint32_t *id)
{
	struct drm_npu_queue_create q = {
		.kind = kind, .priority = prio, .ring = ring, .ctx_id = ctx_id,
	};
	int ret = npu_ioctl(fd, DRM_IOCTL_NPU_QUEUE_CREATE, &q);

	if (!ret)
		*id = q.queue_id;
	return ret;
}

/* ---- command buffers ---------------------------------------------- */

struct npu_cmd {
	struct npu_bo bo;
	uint32_t *p;
	uint32_t n;	/* dwords written */
	uint32_t start;	/* first dword of the current job */
};

static inline int npu_cmd_new(int fd, struct npu_cmd *c, uint64_t size)
{
	int ret = npu_bo_new(fd, size, 0, &c->bo);

	c->p = c->bo.map;
	c->n = 0;
	c->start = 0;
	return ret;
}

static inline void npu_cmd_dw(struct npu_cmd *c, uint32_t v)
{
	c->p[c->n++] = v;
}

static inline void npu_cmd_q(struct npu_cmd *c, uint64_t v)
{
	npu_cmd_dw(c, (uint32_t)v);
	npu_cmd_dw(c, (uint32_t)(v >> 32));
}

static inline void npu_emit_fill(struct npu_cmd *c, uint64_t dst,
				 uint32_t value, uint64_t size)
{
	npu_cmd_dw(c, NPU_PKT_HDR(NPU_OP_FILL, 0, 6));
	npu_cmd_dw(c, value);
	npu_cmd_q(c, dst);
	npu_cmd_q(c, size);
}

static inline void npu_emit_copy(struct npu_cmd *c, uint64_t src,
				 uint64_t dst, uint64_t size)
{
	npu_cmd_dw(c, NPU_PKT_HDR(NPU_OP_COPY, 0, 8));
	npu_cmd_dw(c, 0);
	npu_cmd_q(c, src);
	npu_cmd_q(c, dst);
	npu_cmd_q(c, size);
}

static inline void npu_emit_launch(struct npu_cmd *c, uint32_t kernel,
				   uint32_t gx, uint32_t nargs,
				   const uint64_t *args)
{
	uint32_t i;

	npu_cmd_dw(c, NPU_PKT_HDR(NPU_OP_LAUNCH, 0, 6 + 2 * nargs));
	npu_cmd_dw(c, kernel);
	npu_cmd_dw(c, gx);
	npu_cmd_dw(c, 1);
	npu_cmd_dw(c, 1);
	npu_cmd_dw(c, nargs);
	for (i = 0; i < nargs; i++)
		npu_cmd_q(c, args[i]);
}

/*
 * RV64G code for LAUNCH_CODE (assembled with llvm-mc -triple=riscv64 at 0):
 * c[i] = a[i] + b[i] for i < n, one thread (a0 = a, a1 = b, a2 = c, a3 = n),
 * fadd.s rounding to nearest even: the host's a + b bit for bit.
 */
static const uint32_t npu_code_vadd_f32[] = {
	0x02068463,	/* loop: beqz a3, end */
	0x00052007,	/* flw ft0, 0(a0) */
	0x0005a087,	/* flw ft1, 0(a1) */
	0x00100053,	/* fadd.s ft0, ft0, ft1, rne */
	0x00062027,	/* fsw ft0, 0(a2) */
	0x00450513,	/* addi a0, a0, 4 */
	0x00458593,	/* addi a1, a1, 4 */
	0x00460613,	/* addi a2, a2, 4 */
	0xfff68693,	/* addi a3, a3, -1 */
	0xfddff06f,	/* j loop */
	0x00008067,	/* end: ret */
};

/* LAUNCH_CODE of RISC-V code at entry over gx blocks of bx threads. */
static inline void npu_emit_launch_code(struct npu_cmd *c, uint64_t entry,
					uint32_t gx, uint32_t bx,
					uint32_t nargs, const uint64_t *args)
{
	uint32_t i;

	npu_cmd_dw(c, NPU_PKT_HDR(NPU_OP_LAUNCH_CODE, 0,
				  NPU_PKT_LAUNCH_CODE_DW + 2 * nargs));
	npu_cmd_dw(c, 0);		/* flags */
	npu_cmd_q(c, entry);
	npu_cmd_dw(c, gx);
	npu_cmd_dw(c, 1);
	npu_cmd_dw(c, 1);
	npu_cmd_dw(c, bx);
	npu_cmd_dw(c, 1);
	npu_cmd_dw(c, 1);
	npu_cmd_dw(c, 0);		/* scratchpad */
	npu_cmd_dw(c, 256);		/* stack per thread */
	npu_cmd_q(c, 0);		/* stats */
	npu_cmd_q(c, 0);		/* trace */
	npu_cmd_dw(c, 0);
	npu_cmd_dw(c, 0);
	npu_cmd_dw(c, 0);
	npu_cmd_dw(c, nargs);
	npu_cmd_q(c, 0);		/* printf */
	npu_cmd_dw(c, 0);
	npu_cmd_dw(c, 0);
	for (i = 0; i < nargs; i++)
		npu_cmd_q(c, args[i]);
}

static inline void npu_emit_timestamp(struct npu_cmd *c, uint64_t dst)
{
	npu_cmd_dw(c, NPU_PKT_HDR(NPU_OP_TIMESTAMP, 0, 4));
	npu_cmd_dw(c, 0);
	npu_cmd_q(c, dst);
}

static inline void npu_emit_sem(struct npu_cmd *c, uint32_t op,
				uint64_t addr, uint32_t value)
{
	npu_cmd_dw(c, NPU_PKT_HDR(op, 0, 4));
	npu_cmd_dw(c, value);
	npu_cmd_q(c, addr);
}

/* VA and size of the current job's commands; starts the next job. */
static inline void npu_cmd_end(struct npu_cmd *c, uint64_t *va, uint32_t *size)
{
	*va = c->bo.va + c->start * 4ull;
	*size = (c->n - c->start) * 4;
	/* next job starts 64-byte aligned */
	c->n = (c->n + 15) & ~15u;
	c->start = c->n;
}

/*
 * As npu_cmd_end(), for a job run in a context where the command buffer's
 * BO is mapped at base (BO_MAP) instead of at its default-context VA.
 */
static inline void npu_cmd_end_at(struct npu_cmd *c, uint64_t base,
				  uint64_t *va, uint32_t *size)
{
	npu_cmd_end(c, va, size);
	*va = *va - c->bo.va + base;
}

/* ---- submission ------------------------------------------------------- */

static inline void npu_job_init(struct drm_npu_job *j, uint32_t queue,
				uint64_t cmd_va, uint32_t cmd_size)
{
	memset(j, 0, sizeof(*j));
	j->queue_id = queue;
	j->cmd_va = cmd_va;
	j->cmd_size = cmd_size;
}

static inline int npu_submit(int fd, struct drm_npu_job *jobs, uint32_t n)
{
	struct drm_npu_submit s = {
		.jobs = (uintptr_t)jobs,
		.job_count = n,
		.job_stride = sizeof(*jobs),
	};

	return npu_ioctl(fd, DRM_IOCTL_NPU_SUBMIT, &s);
}

/* Submit one job with an optional binary out-syncobj. */
static inline int npu_submit_one(int fd, uint32_t queue, uint64_t cmd_va,
				 uint32_t cmd_size, uint32_t out_syncobj)
{
	struct drm_npu_sync out = { .handle = out_syncobj };
	struct drm_npu_job j;

	npu_job_init(&j, queue, cmd_va, cmd_size);
	if (out_syncobj) {
		j.out_syncs = (uintptr_t)&out;
		j.out_sync_count = 1;
	}
	return npu_submit(fd, &j, 1);
}

static inline int npu_syncobj_wait(int fd, uint32_t h, uint64_t timeout_ns)
{
	int ret = drmSyncobjWait(fd, &h, 1, npu_abs_timeout(timeout_ns),
				 DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT, NULL);

	return ret ? -errno : 0;
}

/*
 * Error of the (single) fence of a sync_file: 0 = success or not signalled
 * yet, a negative errno, or -998 when SYNC_IOC_FILE_INFO fails.
 */
static inline int npu_sync_file_error(int sfd)
{
	struct sync_fence_info_local {
		char obj_name[32];
		char driver_name[32];
		int32_t status;
		uint32_t flags;
		uint64_t timestamp_ns;
	} info;
	struct sync_file_info_local {
		char name[32];
		int32_t status;
		uint32_t flags;
		uint32_t num_fences;
		uint32_t pad;
		uint64_t sync_fence_info;
	} fi;

	memset(&fi, 0, sizeof(fi));
	memset(&info, 0, sizeof(info));
	fi.num_fences = 1;
	fi.sync_fence_info = (uintptr_t)&info;
	/* SYNC_IOC_FILE_INFO */
	if (ioctl(sfd, _IOWR('>', 4, struct sync_file_info_local), &fi))
		return -998;
	return info.status < 0 ? info.status : 0;
}

/* Error of the fence in a binary syncobj (0 = success), via sync_file. */
static inline int npu_syncobj_error(int fd, uint32_t h)
{
	int sfd, ret;

	if (drmSyncobjExportSyncFile(fd, h, &sfd))
		return -999;
	ret = npu_sync_file_error(sfd);
	close(sfd);
	return ret;
}

static inline float npu_f(uint32_t bits)
{
	float f;

	memcpy(&f, &bits, 4);
	return f;
}

static inline uint32_t npu_bits(float f)
{
	uint32_t b;

	memcpy(&b, &f, 4);
	return b;
}

/* submit the commands emitted since the last job, wait, return its error */
static inline int npu_run_sync(int fd, struct npu_cmd *c, uint32_t queue,
			       uint32_t so)
{
	uint64_t va;
	uint32_t size;
	int ret;

	npu_cmd_end(c, &va, &size);
	ret = npu_submit_one(fd, queue, va, size, so);
	if (ret)
		return ret;
	ret = npu_syncobj_wait(fd, so, NPU_TIMEOUT_NS);
	if (ret)
		return ret;
	return npu_syncobj_error(fd, so);
}

/* index of the first of n words at p that is not v, or -1 */
static inline long npu_first_ne(const void *p, size_t n, uint32_t v)
{
	const volatile uint32_t *w = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (w[i] != v)
			return i;
	return -1;
}

/*
 * One anonymous page at *page registered with a new userfaultfd (*uffd) for
 * missing-page faults: an access waits until the test supplies the page
 * (UFFDIO_COPY, UFFDIO_ZEROPAGE). 0, 1 when the kernel has no userfaultfd
 * for us, or -errno.
 */
static inline int npu_uffd_page(int *uffd, void **page)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };

	*uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (*uffd < 0)
		return 1;
	*page = mmap(NULL, pg, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (*page == MAP_FAILED)
		goto fail;
	reg.range.start = (uintptr_t)*page;
	reg.range.len = pg;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(*uffd, UFFDIO_API, &api) ||
	    ioctl(*uffd, UFFDIO_REGISTER, &reg)) {
		munmap(*page, pg);
		goto fail;
	}
	return 0;
fail:
	close(*uffd);
	return -errno;
}

#endif /* NPU_TEST_H */
