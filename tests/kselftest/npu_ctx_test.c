// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_ctx_test - extra device address spaces (DRM_NPU_FEATURE_CONTEXTS):
 * CTX_CREATE/DESTROY, BO_MAP/BO_UNMAP and queues created on a context.
 * One negative test per documented error path, then jobs with their results
 * read back through mmap: fixed VAs, isolation between contexts and files,
 * read-only mappings, unmap and destroy while a job is in flight, handles
 * closed while mapped, close() of a file with everything still alive.
 *
 * Jobs that must stay in flight are held back deterministically, not by
 * timing: they start by writing a "started" word and then SEM_WAIT on a
 * "gate" word that the test opens from the CPU (or they wait on the fence
 * of such a gated job in the default context).
 */
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include "npu_test.h"
#include "kselftest_harness.h"

/*
 * Layout the tests choose in extra contexts: far above what the default
 * context's allocator hands out to the few BOs of a test, so a default VA
 * is never one of these by accident.
 */
#define CMD_VA		0x1000000000ull	/* 64 GiB: the command buffer */
#define CTL_VA		0x1800000000ull	/* started word, gate word */
#define DATA_VA		0x2000000000ull
#define CODE_VA		0x2800000000ull
#define DATA2_VA	0x3000000000ull
#define DATA3_VA	0x3800000000ull

#define CMD_SIZE	(1u << 16)
#define PG		4096ull

FIXTURE(ctx) {
	int fd;
	uint64_t va_start;
	uint64_t va_size;
	uint32_t max_ctx;
	uint32_t q0;		/* compute ring 0, default context */
	uint32_t so;
	struct npu_cmd cmd;
	volatile uint32_t *gate;	/* opened by the teardown, if set */
};

FIXTURE_SETUP(ctx)
{
	self->fd = npu_open();
	if (self->fd < 0)
		SKIP(return, "no npu device");
	self->va_start = npu_param(self->fd, DRM_NPU_PARAM_VA_START);
	self->va_size = npu_param(self->fd, DRM_NPU_PARAM_VA_SIZE);
	self->max_ctx = npu_param(self->fd, DRM_NPU_PARAM_MAX_CONTEXTS);
	ASSERT_GE(self->va_start + self->va_size, DATA3_VA + (1ull << 30));
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, 0, &self->q0), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &self->so), 0);
	ASSERT_EQ(npu_cmd_new(self->fd, &self->cmd, CMD_SIZE), 0);
}

FIXTURE_TEARDOWN(ctx)
{
	/* never leave a job stalled on a gate behind a failed assertion */
	if (self->gate)
		*self->gate = 1;
	if (self->fd >= 0)
		close(self->fd);
}

/* ---- helpers -------------------------------------------------------- */

static struct drm_npu_get_fault get_fault(int fd)
{
	struct drm_npu_get_fault f;

	memset(&f, 0, sizeof(f));
	npu_ioctl(fd, DRM_IOCTL_NPU_GET_FAULT, &f);
	return f;
}

static int map_at(int fd, uint32_t handle, uint32_t ctx, uint64_t va,
		  uint32_t flags)
{
	return npu_bo_map(fd, handle, ctx, DRM_NPU_BO_MAP_FIXED | flags, &va);
}

static int map_raw(int fd, uint32_t handle, uint32_t ctx, uint32_t flags,
		   uint32_t pad, uint64_t va)
{
	struct drm_npu_bo_map m = {
		.handle = handle, .ctx_id = ctx, .flags = flags, .pad = pad,
		.va = va,
	};

	return npu_ioctl(fd, DRM_IOCTL_NPU_BO_MAP, &m);
}

/* an extra context with a queue and the command buffer mapped at CMD_VA */
struct xctx {
	uint32_t id;
	uint32_t q;
};

static int xctx_new(int fd, struct npu_cmd *cmd, uint32_t kind, uint32_t ring,
		    struct xctx *x)
{
	int ret = npu_ctx_new(fd, &x->id);

	if (ret)
		return ret;
	ret = map_at(fd, cmd->bo.handle, x->id, CMD_VA, 0);
	if (ret)
		return ret;
	return npu_queue_new_ctx(fd, kind, DRM_NPU_PRIORITY_NORMAL, ring,
				 x->id, &x->q);
}

/* fence error of a job whose syncobj is so (waits) */
static int wait_err(int fd, uint32_t so)
{
	int ret = npu_syncobj_wait(fd, so, NPU_TIMEOUT_NS);

	return ret ? ret : npu_syncobj_error(fd, so);
}

/*
 * Submit the commands emitted since the last job as one job of queue q,
 * whose context has the command buffer at CMD_VA.
 */
static int submit_ctx(int fd, struct npu_cmd *c, uint32_t q,
		      const uint32_t *bos, uint32_t nbos, uint32_t in_so,
		      uint32_t out_so)
{
	struct drm_npu_sync in = { .handle = in_so }, out = { .handle = out_so };
	struct drm_npu_job j;
	uint64_t va;
	uint32_t size;

	npu_cmd_end_at(c, CMD_VA, &va, &size);
	npu_job_init(&j, q, va, size);
	if (nbos) {
		j.bo_handles = (uintptr_t)bos;
		j.bo_count = nbos;
	}
	if (in_so) {
		j.in_syncs = (uintptr_t)&in;
		j.in_sync_count = 1;
	}
	if (out_so) {
		j.out_syncs = (uintptr_t)&out;
		j.out_sync_count = 1;
	}
	return npu_submit(fd, &j, 1);
}

/* submit in a context, wait, return the fence error */
static int run_ctx(int fd, struct npu_cmd *c, uint32_t q, uint32_t so)
{
	int ret = submit_ctx(fd, c, q, NULL, 0, 0, so);

	return ret ? ret : wait_err(fd, so);
}

/* the syncobj holds no fence: nothing was queued with it */
static int no_fence(int fd, uint32_t so)
{
	return drmSyncobjWait(fd, &so, 1, npu_abs_timeout(0), 0, NULL) ==
	       -EINVAL;
}

/* wait until the device wrote v to *p */
static int wait_word(const volatile uint32_t *p, uint32_t v)
{
	uint64_t end = npu_now_ns() + NPU_TIMEOUT_NS;

	while (*p != v) {
		if (npu_now_ns() > end)
			return -ETIME;
		usleep(100);
	}
	return 0;
}

/* job prologue: say "started" in ctl[0], then wait for ctl[1] >= 1 */
static void emit_gate(struct npu_cmd *c, uint64_t ctl_va)
{
	npu_emit_fill(c, ctl_va, 1, 4);
	npu_emit_sem(c, NPU_OP_SEM_WAIT, ctl_va + 4, 1);
}

/* the fence status of a sync_file after waiting for it, or -ETIME */
static int sync_file_wait(int sfd, int timeout_ms)
{
	struct pollfd p = { .fd = sfd, .events = POLLIN };

	if (poll(&p, 1, timeout_ms) != 1)
		return -ETIME;
	return npu_sync_file_error(sfd);
}

/* live contexts of the device, from debugfs; -1 if debugfs is not there */
static int count_contexts(void)
{
	char line[256];
	glob_t g;
	FILE *f;
	int n = 0;

	if (glob("/sys/kernel/debug/{accel,dri}/*/contexts", GLOB_BRACE, NULL,
		 &g))
		return -1;
	f = fopen(g.gl_pathv[0], "r");
	globfree(&g);
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "ctx ", 4))
			n++;
	fclose(f);
	return n;
}

/* wait (a few seconds at most) until the device has n contexts */
static int wait_contexts(int n)
{
	uint64_t end = npu_now_ns() + 5000000000ull;
	int c;

	while ((c = count_contexts()) != n) {
		if (npu_now_ns() > end)
			return c;
		usleep(10000);
	}
	return c;
}

/* ---- parameters, CTX_CREATE / CTX_DESTROY ----------------------------- */

TEST_F(ctx, params_and_feature_bit)
{
	struct drm_npu_get_param p = { .param = DRM_NPU_PARAM_MAX_CONTEXTS };

	ASSERT_NE(npu_param(self->fd, DRM_NPU_PARAM_FEATURES) &
		  DRM_NPU_FEATURE_CONTEXTS, 0);
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_GET_PARAM, &p), 0);
	ASSERT_GE(p.value, 1);
	ASSERT_EQ(p.value, self->max_ctx);
	ASSERT_NE(self->va_start, 0);
	ASSERT_EQ(self->va_start % PG, 0);
	ASSERT_GT(self->va_size, 1ull << 30);
}

TEST_F(ctx, ctx_create_destroy)
{
	uint32_t ids[4], n = self->max_ctx < 4 ? self->max_ctx : 4, i, k;

	for (i = 0; i < n; i++) {
		ASSERT_EQ(npu_ctx_new(self->fd, &ids[i]), 0);
		ASSERT_GE(ids[i], 1);
		ASSERT_LE(ids[i], self->max_ctx);
		for (k = 0; k < i; k++)
			ASSERT_NE(ids[i], ids[k]);
	}
	for (i = 0; i < n; i++)
		ASSERT_EQ(npu_ctx_free(self->fd, ids[i]), 0);
}

TEST_F(ctx, ctx_destroy_unknown_id)
{
	uint32_t id, other;

	ASSERT_EQ(npu_ctx_free(self->fd, 0), -ENOENT);
	ASSERT_EQ(npu_ctx_free(self->fd, 1), -ENOENT);
	ASSERT_EQ(npu_ctx_free(self->fd, self->max_ctx + 1), -ENOENT);
	ASSERT_EQ(npu_ctx_free(self->fd, 0xffffffffu), -ENOENT);
	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_ctx_free(self->fd, 0), -ENOENT);
	if (self->max_ctx >= 2) {
		other = id == 1 ? 2 : 1;
		ASSERT_EQ(npu_ctx_free(self->fd, other), -ENOENT);
	}
	ASSERT_EQ(npu_ctx_free(self->fd, id), 0);
}

TEST_F(ctx, ctx_destroy_twice)
{
	uint32_t id;

	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_ctx_free(self->fd, id), 0);
	ASSERT_EQ(npu_ctx_free(self->fd, id), -ENOENT);
}

TEST_F(ctx, ctx_create_bad_flags)
{
	struct drm_npu_ctx_create c = { .flags = 1 };

	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_CTX_CREATE, &c), -EINVAL);
	c.flags = 1u << 31;
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_CTX_CREATE, &c), -EINVAL);
}

TEST_F(ctx, ctx_create_nonzero_ctx_id)
{
	struct drm_npu_ctx_create c = { .ctx_id = 1 };

	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_CTX_CREATE, &c), -EINVAL);
	c.ctx_id = 0xffffffffu;
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_CTX_CREATE, &c), -EINVAL);
}

TEST_F(ctx, ctx_destroy_bad_pad)
{
	struct drm_npu_ctx_destroy d = { .pad = 1 };
	struct npu_bo b;
	uint64_t va = 0;

	ASSERT_EQ(npu_ctx_new(self->fd, &d.ctx_id), 0);
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_CTX_DESTROY, &d), -EINVAL);
	/* no side effect: the context is still there */
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &b), 0);
	ASSERT_EQ(npu_bo_map(self->fd, b.handle, d.ctx_id, 0, &va), 0);
	ASSERT_EQ(npu_ctx_free(self->fd, d.ctx_id), 0);
}

/* MAX_CONTEXTS per file: the next one is -ENOSPC, a destroyed one frees a slot */
TEST_F(ctx, ctx_limit)
{
	uint32_t max = self->max_ctx, i, k, id, freed;
	uint32_t *ids;

	ASSERT_GE(max, 1);
	ASSERT_LE(max, 65536);
	ids = calloc(max, sizeof(*ids));
	ASSERT_NE(ids, NULL);
	for (i = 0; i < max; i++) {
		ASSERT_EQ(npu_ctx_new(self->fd, &ids[i]), 0);
		ASSERT_GE(ids[i], 1);
		ASSERT_LE(ids[i], max);
	}
	/* distinct, so exactly 1..max */
	for (i = 0; i < max; i++)
		for (k = 0; k < i; k++)
			ASSERT_NE(ids[i], ids[k]);
	ASSERT_EQ(npu_ctx_new(self->fd, &id), -ENOSPC);
	ASSERT_EQ(npu_ctx_new(self->fd, &id), -ENOSPC);

	freed = ids[max / 2];
	ASSERT_EQ(npu_ctx_free(self->fd, freed), 0);
	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(id, freed);	/* the only id in 1..max not in use */
	ASSERT_EQ(npu_ctx_new(self->fd, &id), -ENOSPC);
	for (i = 0; i < max; i++)
		ASSERT_EQ(npu_ctx_free(self->fd, ids[i]), 0);
	free(ids);
}

/* The limit is per file: a second file still gets its own contexts. */
TEST_F(ctx, ctx_limit_is_per_file)
{
	uint32_t i, id;
	int fd2;

	for (i = 0; i < self->max_ctx; i++)
		ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_ctx_new(self->fd, &id), -ENOSPC);
	fd2 = npu_open();
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(npu_ctx_new(fd2, &id), 0);
	ASSERT_GE(id, 1);
	ASSERT_LE(id, self->max_ctx);
	close(fd2);
}

/* ---- BO_MAP errors ------------------------------------------------------ */

TEST_F(ctx, bo_map_unknown_handle)
{
	uint64_t va = 0;
	uint32_t id;

	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_bo_map(self->fd, 0xbad, id, 0, &va), -ENOENT);
	ASSERT_EQ(npu_bo_map(self->fd, 0, id, 0, &va), -ENOENT);
	ASSERT_EQ(map_at(self->fd, 0xbad, id, DATA_VA, 0), -ENOENT);
}

TEST_F(ctx, bo_map_unknown_ctx)
{
	struct npu_bo b;
	uint64_t va = 0;
	uint32_t id;

	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &b), 0);
	ASSERT_EQ(npu_bo_map(self->fd, b.handle, 1, 0, &va), -ENOENT);
	ASSERT_EQ(npu_bo_map(self->fd, b.handle, self->max_ctx + 1, 0, &va),
		  -ENOENT);
	ASSERT_EQ(npu_bo_map(self->fd, b.handle, 0xffffffffu, 0, &va),
		  -ENOENT);
	ASSERT_EQ(map_at(self->fd, b.handle, 1, DATA_VA, 0), -ENOENT);
	/* a destroyed context */
	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_ctx_free(self->fd, id), 0);
	ASSERT_EQ(npu_bo_map(self->fd, b.handle, id, 0, &va), -ENOENT);
}

TEST_F(ctx, bo_map_ctx_zero)
{
	struct npu_bo b;
	uint64_t va = 0;

	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &b), 0);
	ASSERT_EQ(npu_bo_map(self->fd, b.handle, 0, 0, &va), -EINVAL);
	ASSERT_EQ(map_at(self->fd, b.handle, 0, DATA_VA, 0), -EINVAL);
}

TEST_F(ctx, bo_map_bad_flags)
{
	struct npu_bo b;
	uint32_t id;

	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &b), 0);
	ASSERT_EQ(map_raw(self->fd, b.handle, id, 0x4, 0, 0), -EINVAL);
	ASSERT_EQ(map_raw(self->fd, b.handle, id, 1u << 31, 0, 0), -EINVAL);
	ASSERT_EQ(map_raw(self->fd, b.handle, id, DRM_NPU_BO_MAP_FIXED | 0x4,
			  0, DATA_VA), -EINVAL);
	/* no side effect: the BO is not mapped */
	ASSERT_EQ(map_raw(self->fd, b.handle, id, 0, 0, 0), 0);
}

TEST_F(ctx, bo_map_bad_pad)
{
	struct npu_bo b;
	uint32_t id;

	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &b), 0);
	ASSERT_EQ(map_raw(self->fd, b.handle, id, 0, 1, 0), -EINVAL);
	ASSERT_EQ(map_raw(self->fd, b.handle, id, DRM_NPU_BO_MAP_FIXED,
			  0x80000000u, DATA_VA), -EINVAL);
	ASSERT_EQ(map_raw(self->fd, b.handle, id, 0, 0, 0), 0);
}

TEST_F(ctx, bo_map_va_without_fixed)
{
	struct npu_bo b;
	uint32_t id;

	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &b), 0);
	ASSERT_EQ(map_raw(self->fd, b.handle, id, 0, 0, DATA_VA), -EINVAL);
	ASSERT_EQ(map_raw(self->fd, b.handle, id, DRM_NPU_BO_MAP_READ_ONLY, 0,
			  DATA_VA), -EINVAL);
	ASSERT_EQ(map_raw(self->fd, b.handle, id, 0, 0, 1), -EINVAL);
	ASSERT_EQ(map_raw(self->fd, b.handle, id, 0, 0, 0), 0);
}

TEST_F(ctx, bo_map_fixed_unaligned)
{
	struct npu_bo b;
	uint32_t id;

	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &b), 0);
	ASSERT_EQ(map_at(self->fd, b.handle, id, DATA_VA + 8, 0), -EINVAL);
	ASSERT_EQ(map_at(self->fd, b.handle, id, DATA_VA + 2048, 0), -EINVAL);
	ASSERT_EQ(map_at(self->fd, b.handle, id, DATA_VA + PG - 1, 0), -EINVAL);
	ASSERT_EQ(map_at(self->fd, b.handle, id, DATA_VA, 0), 0);
}

TEST_F(ctx, bo_map_fixed_below_va_start)
{
	struct npu_bo b;
	uint32_t id;

	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &b), 0);
	ASSERT_EQ(map_at(self->fd, b.handle, id, 0, 0), -EINVAL);
	ASSERT_EQ(map_at(self->fd, b.handle, id, PG, 0), -EINVAL);
	ASSERT_EQ(map_at(self->fd, b.handle, id, self->va_start - PG, 0),
		  -EINVAL);
	/* the lowest allowed address */
	ASSERT_EQ(map_at(self->fd, b.handle, id, self->va_start, 0), 0);
}

TEST_F(ctx, bo_map_fixed_past_va_end)
{
	uint64_t end = self->va_start + self->va_size;
	struct npu_bo b;
	uint32_t id;

	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 2 * PG, 0, &b), 0);
	ASSERT_EQ(map_at(self->fd, b.handle, id, end - PG, 0), -EINVAL);
	ASSERT_EQ(map_at(self->fd, b.handle, id, end, 0), -EINVAL);
	ASSERT_EQ(map_at(self->fd, b.handle, id, end + 16 * PG, 0), -EINVAL);
	ASSERT_EQ(map_at(self->fd, b.handle, id, 1ull << 63, 0), -EINVAL);
	/* ending exactly at VA_START + VA_SIZE is allowed */
	ASSERT_EQ(map_at(self->fd, b.handle, id, end - 2 * PG, 0), 0);
}

TEST_F(ctx, bo_map_fixed_overflow)
{
	struct npu_bo b;
	uint32_t id;

	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 2 * PG, 0, &b), 0);
	ASSERT_EQ(map_at(self->fd, b.handle, id, ~0ull & ~(PG - 1), 0),
		  -EINVAL);
	/* va + size wraps to exactly 0 */
	ASSERT_EQ(map_at(self->fd, b.handle, id, 0ull - 2 * PG, 0), -EINVAL);
	ASSERT_EQ(map_at(self->fd, b.handle, id, DATA_VA, 0), 0);
}

TEST_F(ctx, bo_map_twice_eexist)
{
	struct npu_bo b;
	uint64_t va = 0, va2 = 0;
	uint32_t id, id2;

	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &b), 0);
	ASSERT_EQ(npu_bo_map(self->fd, b.handle, id, 0, &va), 0);
	ASSERT_EQ(npu_bo_map(self->fd, b.handle, id, 0, &va2), -EEXIST);
	ASSERT_EQ(map_at(self->fd, b.handle, id, DATA_VA, 0), -EEXIST);
	ASSERT_EQ(map_at(self->fd, b.handle, id, DATA_VA,
			 DRM_NPU_BO_MAP_READ_ONLY), -EEXIST);
	/* the failed calls made no second mapping */
	ASSERT_EQ(npu_bo_unmap(self->fd, id, DATA_VA), -ENOENT);
	ASSERT_EQ(npu_bo_unmap(self->fd, id, va), 0);
	ASSERT_EQ(map_at(self->fd, b.handle, id, DATA_VA, 0), 0);
	/* once per context: another context may map it too */
	if (self->max_ctx >= 2) {
		ASSERT_EQ(npu_ctx_new(self->fd, &id2), 0);
		ASSERT_EQ(map_at(self->fd, b.handle, id2, DATA_VA, 0), 0);
	}
}

TEST_F(ctx, bo_map_fixed_overlap_ebusy)
{
	struct npu_bo a, b, big;
	uint64_t va = 0;
	uint32_t id;

	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 2 * PG, 0, &a), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 2 * PG, 0, &b), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 16 * PG, 0, &big), 0);
	ASSERT_EQ(map_at(self->fd, a.handle, id, DATA_VA, 0), 0);
	ASSERT_EQ(map_at(self->fd, b.handle, id, DATA_VA, 0), -EBUSY);
	ASSERT_EQ(map_at(self->fd, b.handle, id, DATA_VA + PG, 0), -EBUSY);
	ASSERT_EQ(map_at(self->fd, b.handle, id, DATA_VA - PG, 0), -EBUSY);
	ASSERT_EQ(map_at(self->fd, b.handle, id, DATA_VA + PG,
			 DRM_NPU_BO_MAP_READ_ONLY), -EBUSY);
	ASSERT_EQ(map_at(self->fd, big.handle, id, DATA_VA - 8 * PG, 0),
		  -EBUSY);
	/* the refused BOs are not mapped anywhere in the context */
	ASSERT_EQ(npu_bo_map(self->fd, b.handle, id, 0, &va), 0);
	ASSERT_EQ(npu_bo_unmap(self->fd, id, DATA_VA - PG), -ENOENT);
	ASSERT_EQ(npu_bo_unmap(self->fd, id, DATA_VA - 8 * PG), -ENOENT);
	/* the kernel-chosen range does not overlap the fixed one either */
	ASSERT_TRUE(va + 2 * PG <= DATA_VA || va >= DATA_VA + 2 * PG);
}

/* Fixed mappings may touch: a job fills across three adjacent BOs. */
TEST_F(ctx, bo_map_fixed_adjacent)
{
	struct npu_bo lo, mid, hi;
	struct xctx x;

	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &x), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &lo), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 2 * PG, 0, &mid), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 2 * PG, 0, &hi), 0);
	ASSERT_EQ(map_at(self->fd, mid.handle, x.id, DATA_VA, 0), 0);
	ASSERT_EQ(map_at(self->fd, hi.handle, x.id, DATA_VA + 2 * PG, 0), 0);
	ASSERT_EQ(map_at(self->fd, lo.handle, x.id, DATA_VA - PG, 0), 0);
	npu_emit_fill(&self->cmd, DATA_VA - PG, 0x0ddba11, 5 * PG);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, x.q, self->so), 0);
	ASSERT_EQ(npu_first_ne(lo.map, PG / 4, 0x0ddba11), -1);
	ASSERT_EQ(npu_first_ne(mid.map, 2 * PG / 4, 0x0ddba11), -1);
	ASSERT_EQ(npu_first_ne(hi.map, 2 * PG / 4, 0x0ddba11), -1);
}

/*
 * Kernel-chosen VAs: in range, page aligned, disjoint, usable by jobs
 * (the command buffer too), with an unmapped guard page after each.
 */
TEST_F(ctx, bo_map_kernel_chosen_va)
{
	uint64_t end = self->va_start + self->va_size;
	struct drm_npu_get_fault f;
	uint64_t cva = 0, va[3] = { 0 }, cmd_va;
	struct npu_bo b[3];
	uint32_t id, q, size;
	int i, k;

	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_queue_new_ctx(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				    DRM_NPU_PRIORITY_NORMAL, 0, id, &q), 0);
	ASSERT_EQ(npu_bo_map(self->fd, self->cmd.bo.handle, id, 0, &cva), 0);
	ASSERT_GE(cva, self->va_start);
	ASSERT_EQ(cva % PG, 0);
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(npu_bo_new(self->fd, (i + 1) * PG, 0, &b[i]), 0);
		ASSERT_EQ(npu_bo_map(self->fd, b[i].handle, id, 0, &va[i]), 0);
		ASSERT_GE(va[i], self->va_start);
		ASSERT_LE(va[i] + (i + 1) * PG, end);
		ASSERT_EQ(va[i] % PG, 0);
		ASSERT_TRUE(va[i] + (i + 1) * PG <= cva ||
			    va[i] >= cva + CMD_SIZE);
		for (k = 0; k < i; k++)
			ASSERT_TRUE(va[i] + (i + 1) * PG <= va[k] ||
				    va[i] >= va[k] + (k + 1) * PG);
	}
	for (i = 0; i < 3; i++)
		npu_emit_fill(&self->cmd, va[i], 0x100 + i, (i + 1) * PG);
	npu_cmd_end_at(&self->cmd, cva, &cmd_va, &size);
	ASSERT_EQ(npu_submit_one(self->fd, q, cmd_va, size, self->so), 0);
	ASSERT_EQ(wait_err(self->fd, self->so), 0);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(npu_first_ne(b[i].map, (i + 1) * PG / 4, 0x100 + i), -1);

	/* 4 bytes past the end of b[0] hit its guard page */
	npu_emit_fill(&self->cmd, va[0], 0x200, PG + 4);
	npu_cmd_end_at(&self->cmd, cva, &cmd_va, &size);
	ASSERT_EQ(npu_submit_one(self->fd, q, cmd_va, size, self->so), 0);
	ASSERT_EQ(wait_err(self->fd, self->so), -EFAULT);
	f = get_fault(self->fd);
	ASSERT_EQ(f.cause, NPU_ERR_MMU_FAULT);
	ASSERT_EQ(f.addr, va[0] + PG);
}

/* ---- BO_UNMAP errors ---------------------------------------------------- */

TEST_F(ctx, bo_unmap_unknown_ctx)
{
	struct npu_bo b;
	uint32_t id, gone;

	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &b), 0);
	ASSERT_EQ(map_at(self->fd, b.handle, id, DATA_VA, 0), 0);
	ASSERT_EQ(npu_bo_unmap(self->fd, self->max_ctx + 1, DATA_VA), -ENOENT);
	ASSERT_EQ(npu_bo_unmap(self->fd, 0xffffffffu, DATA_VA), -ENOENT);
	if (self->max_ctx >= 2) {
		ASSERT_EQ(npu_ctx_new(self->fd, &gone), 0);
		ASSERT_EQ(npu_ctx_free(self->fd, gone), 0);
		ASSERT_EQ(npu_bo_unmap(self->fd, gone, DATA_VA), -ENOENT);
	}
	/* the mapping in the real context was not touched */
	ASSERT_EQ(npu_bo_unmap(self->fd, id, DATA_VA), 0);
}

/*
 * The default context has nothing to unmap through BO_UNMAP: context 0
 * is not an extra context (-ENOENT by the documented error list, -EINVAL
 * would match BO_MAP), and the BO must stay mapped there.
 */
TEST_F(ctx, bo_unmap_ctx_zero)
{
	struct npu_bo b;
	int ret;

	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &b), 0);
	ret = npu_bo_unmap(self->fd, 0, b.va);
	if (ret != -ENOENT)
		TH_LOG("BO_UNMAP ctx 0: %d (documented errors suggest -ENOENT)",
		       ret);
	ASSERT_TRUE(ret == -ENOENT || ret == -EINVAL);
	npu_emit_fill(&self->cmd, b.va, 0x1234, PG);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q0, self->so), 0);
	ASSERT_EQ(npu_first_ne(b.map, PG / 4, 0x1234), -1);
}

TEST_F(ctx, bo_unmap_not_mapping_start)
{
	struct npu_bo b;
	uint32_t id;

	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 2 * PG, 0, &b), 0);
	ASSERT_EQ(map_at(self->fd, b.handle, id, DATA_VA, 0), 0);
	ASSERT_EQ(npu_bo_unmap(self->fd, id, DATA_VA + PG), -ENOENT);
	ASSERT_EQ(npu_bo_unmap(self->fd, id, DATA_VA + 4), -ENOENT);
	ASSERT_EQ(npu_bo_unmap(self->fd, id, DATA_VA - PG), -ENOENT);
	ASSERT_EQ(npu_bo_unmap(self->fd, id, DATA2_VA), -ENOENT);
	ASSERT_EQ(npu_bo_unmap(self->fd, id, 0), -ENOENT);
	ASSERT_EQ(npu_bo_unmap(self->fd, id, DATA_VA), 0);
}

TEST_F(ctx, bo_unmap_bad_pad)
{
	struct drm_npu_bo_unmap u = { .pad = 1, .va = DATA_VA };
	struct npu_bo b;

	ASSERT_EQ(npu_ctx_new(self->fd, &u.ctx_id), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &b), 0);
	ASSERT_EQ(map_at(self->fd, b.handle, u.ctx_id, DATA_VA, 0), 0);
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_UNMAP, &u), -EINVAL);
	/* still mapped */
	ASSERT_EQ(npu_bo_unmap(self->fd, u.ctx_id, DATA_VA), 0);
}

TEST_F(ctx, bo_unmap_twice)
{
	struct npu_bo b;
	uint32_t id;

	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &b), 0);
	ASSERT_EQ(map_at(self->fd, b.handle, id, DATA_VA, 0), 0);
	ASSERT_EQ(npu_bo_unmap(self->fd, id, DATA_VA), 0);
	ASSERT_EQ(npu_bo_unmap(self->fd, id, DATA_VA), -ENOENT);
}

/*
 * After BO_UNMAP, later jobs cannot name the BO in the context (-ENOENT at
 * SUBMIT) and fault if they touch the range; the range can be mapped again.
 */
TEST_F(ctx, bo_unmap_later_jobs_fault)
{
	struct drm_npu_get_fault f;
	struct npu_bo d;
	struct xctx x;

	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &x), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &d), 0);
	ASSERT_EQ(map_at(self->fd, d.handle, x.id, DATA_VA, 0), 0);
	npu_emit_fill(&self->cmd, DATA_VA, 0x11, PG);
	ASSERT_EQ(submit_ctx(self->fd, &self->cmd, x.q, &d.handle, 1, 0,
			     self->so), 0);
	ASSERT_EQ(wait_err(self->fd, self->so), 0);
	ASSERT_EQ(npu_first_ne(d.map, PG / 4, 0x11), -1);

	ASSERT_EQ(npu_bo_unmap(self->fd, x.id, DATA_VA), 0);
	npu_emit_fill(&self->cmd, DATA_VA, 0x22, PG);
	ASSERT_EQ(submit_ctx(self->fd, &self->cmd, x.q, &d.handle, 1, 0,
			     self->so), -ENOENT);
	npu_emit_fill(&self->cmd, DATA_VA, 0x22, PG);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, x.q, self->so), -EFAULT);
	f = get_fault(self->fd);
	ASSERT_EQ(f.count, 1);
	ASSERT_EQ(f.kind, DRM_NPU_FAULT_DEVICE);
	ASSERT_EQ(f.queue_id, x.q);
	ASSERT_EQ(f.cause, NPU_ERR_MMU_FAULT);
	ASSERT_EQ(f.addr, DATA_VA);
	ASSERT_EQ(npu_first_ne(d.map, PG / 4, 0x11), -1);

	ASSERT_EQ(map_at(self->fd, d.handle, x.id, DATA_VA, 0), 0);
	npu_emit_fill(&self->cmd, DATA_VA, 0x33, PG);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, x.q, self->so), 0);
	ASSERT_EQ(npu_first_ne(d.map, PG / 4, 0x33), -1);
}

/* ---- queues on contexts ------------------------------------------------ */

TEST_F(ctx, queue_create_unknown_ctx)
{
	uint32_t q, id;

	ASSERT_EQ(npu_queue_new_ctx(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				    DRM_NPU_PRIORITY_NORMAL, 0, 1, &q),
		  -ENOENT);
	ASSERT_EQ(npu_queue_new_ctx(self->fd, DRM_NPU_RING_KIND_COPY,
				    DRM_NPU_PRIORITY_NORMAL, DRM_NPU_RING_ANY,
				    self->max_ctx + 1, &q), -ENOENT);
	ASSERT_EQ(npu_queue_new_ctx(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				    DRM_NPU_PRIORITY_NORMAL, 0, 0xffffffffu,
				    &q), -ENOENT);
	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_ctx_free(self->fd, id), 0);
	ASSERT_EQ(npu_queue_new_ctx(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				    DRM_NPU_PRIORITY_NORMAL, 0, id, &q),
		  -ENOENT);
}

TEST_F(ctx, queue_create_bad_pad)
{
	struct drm_npu_queue_create c = {
		.kind = DRM_NPU_RING_KIND_COMPUTE,
		.priority = DRM_NPU_PRIORITY_NORMAL, .pad = 1,
	};

	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_CREATE, &c), -EINVAL);
	ASSERT_EQ(npu_ctx_new(self->fd, &c.ctx_id), 0);
	c.pad = 0x80000000u;
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_QUEUE_CREATE, &c), -EINVAL);
	/* no queue was made: the context can be destroyed */
	ASSERT_EQ(npu_ctx_free(self->fd, c.ctx_id), 0);
}

/* A context with a queue cannot be destroyed; it works meanwhile. */
TEST_F(ctx, ctx_destroy_busy_with_queue)
{
	struct npu_bo d;
	struct xctx x;
	uint32_t q2;

	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &x), 0);
	ASSERT_EQ(npu_queue_new_ctx(self->fd, DRM_NPU_RING_KIND_COPY,
				    DRM_NPU_PRIORITY_HIGH, DRM_NPU_RING_ANY,
				    x.id, &q2), 0);
	ASSERT_NE(q2, x.q);
	ASSERT_EQ(npu_ctx_free(self->fd, x.id), -EBUSY);
	ASSERT_EQ(npu_queue_free(self->fd, x.q), 0);
	ASSERT_EQ(npu_ctx_free(self->fd, x.id), -EBUSY);

	/* still fully alive: map and run on the remaining queue */
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &d), 0);
	ASSERT_EQ(map_at(self->fd, d.handle, x.id, DATA_VA, 0), 0);
	npu_emit_fill(&self->cmd, DATA_VA, 0xb5b5, PG);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, q2, self->so), 0);
	ASSERT_EQ(npu_first_ne(d.map, PG / 4, 0xb5b5), -1);

	ASSERT_EQ(npu_queue_free(self->fd, q2), 0);
	ASSERT_EQ(npu_ctx_free(self->fd, x.id), 0);
	ASSERT_EQ(npu_queue_new_ctx(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				    DRM_NPU_PRIORITY_NORMAL, 0, x.id, &q2),
		  -ENOENT);
}

/* CTX_DESTROY unmaps everything; a new context starts empty. */
TEST_F(ctx, ctx_destroy_unmaps_everything)
{
	struct npu_bo d;
	struct xctx x;
	uint32_t id;

	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &d), 0);
	ASSERT_EQ(map_at(self->fd, d.handle, id, DATA_VA, 0), 0);
	ASSERT_EQ(map_at(self->fd, self->cmd.bo.handle, id, CMD_VA, 0), 0);
	ASSERT_EQ(npu_ctx_free(self->fd, id), 0);
	ASSERT_EQ(npu_bo_unmap(self->fd, id, DATA_VA), -ENOENT);

	/* same BOs, same VAs, in a new context (which may reuse the id) */
	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &x), 0);
	ASSERT_EQ(map_at(self->fd, d.handle, x.id, DATA_VA, 0), 0);
	npu_emit_fill(&self->cmd, DATA_VA, 0x4242, PG);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, x.q, self->so), 0);
	ASSERT_EQ(npu_first_ne(d.map, PG / 4, 0x4242), -1);
	/* the default context's mapping of the BO is unaffected */
	npu_emit_fill(&self->cmd, d.va, 0x4343, 4);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q0, self->so), 0);
	ASSERT_EQ(((uint32_t *)d.map)[0], 0x4343);
}

/* ---- jobs at fixed VAs ----------------------------------------------- */

TEST_F(ctx, fill_and_copy_at_fixed_va)
{
	struct npu_bo d, d2;
	struct xctx x;
	uint32_t cq;
	uint32_t *p;
	int i;

	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &x), 0);
	ASSERT_EQ(npu_queue_new_ctx(self->fd, DRM_NPU_RING_KIND_COPY,
				    DRM_NPU_PRIORITY_NORMAL, 0, x.id, &cq), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &d), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &d2), 0);
	ASSERT_EQ(map_at(self->fd, d.handle, x.id, DATA_VA, 0), 0);
	ASSERT_EQ(map_at(self->fd, d2.handle, x.id, DATA2_VA, 0), 0);

	npu_emit_fill(&self->cmd, DATA_VA + 4096, 0xa5a5a5a5, 8192);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, x.q, self->so), 0);
	p = d.map;
	for (i = 0; i < 16384; i++)
		ASSERT_EQ(p[i], (i >= 1024 && i < 3072) ? 0xa5a5a5a5 : 0);

	/* copy ring, same context */
	for (i = 0; i < 16384; i++)
		p[i] = i * 5 + 1;
	npu_emit_copy(&self->cmd, DATA_VA + 8, DATA2_VA + 12, 40000);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, cq, self->so), 0);
	p = d2.map;
	for (i = 0; i < 10000; i++)
		ASSERT_EQ(p[i + 3], (uint32_t)((i + 2) * 5 + 1));
	ASSERT_EQ(p[0], 0);
	ASSERT_EQ(p[10003], 0);
}

/*
 * The page tables a mapping needs are counted and allocated before the
 * context's lock is taken: mappings that straddle the 2 MiB span of a leaf
 * table and the 1 GiB span of a level-1 table, into an empty range and next
 * to tables that exist already, must all map and translate. A device fill
 * over each boundary and the CPU reading back prove the PTEs.
 */
TEST_F(ctx, bo_map_fixed_across_table_boundaries)
{
	const uint64_t gib = DATA_VA + (1ull << 30), mib2 = 2ull << 20;
	/* 6 MiB ending past a 1 GiB boundary: 4 leaves, 2 level-1 tables */
	const uint64_t va1 = gib - mib2 - 5 * PG, size1 = 3 * mib2;
	/* 4 MiB right behind it: its first leaf exists already */
	const uint64_t va2 = va1 + size1, size2 = 2 * mib2;
	const uint64_t edges[] = {
		gib - mib2, gib, gib + mib2,		/* inside a */
		gib + 2 * mib2, gib + 3 * mib2,		/* inside b */
	};
	struct npu_bo a, b;
	struct xctx x;
	uint8_t *p;
	unsigned int i;

	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &x), 0);
	ASSERT_EQ(npu_bo_new(self->fd, size1, 0, &a), 0);
	ASSERT_EQ(npu_bo_new(self->fd, size2, 0, &b), 0);
	ASSERT_EQ(map_at(self->fd, a.handle, x.id, va1, 0), 0);
	ASSERT_EQ(map_at(self->fd, b.handle, x.id, va2, 0), 0);

	/* 8 KiB either side of every table boundary */
	for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
		npu_emit_fill(&self->cmd, edges[i] - 8192, 0x5a5a5a5a, 16384);
	/* first and last page of both */
	npu_emit_fill(&self->cmd, va1, 0x11111111, PG);
	npu_emit_fill(&self->cmd, va1 + size1 - PG, 0x22222222, PG);
	npu_emit_fill(&self->cmd, va2, 0x33333333, PG);
	npu_emit_fill(&self->cmd, va2 + size2 - PG, 0x44444444, PG);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, x.q, self->so), 0);

	for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		uint64_t off;

		p = edges[i] < va2 ? a.map : b.map;
		off = edges[i] - (edges[i] < va2 ? va1 : va2);
		ASSERT_EQ(p[off - 8192], 0x5a);
		ASSERT_EQ(p[off + 8191], 0x5a);
		ASSERT_EQ(p[off - 8193], 0);
		ASSERT_EQ(p[off + 8192], 0);
	}
	p = a.map;
	ASSERT_EQ(p[0], 0x11);
	ASSERT_EQ(p[size1 - 1], 0x22);
	p = b.map;
	ASSERT_EQ(p[0], 0x33);
	ASSERT_EQ(p[size2 - 1], 0x44);
}

/* Kernels run in the queue's context too: their code and arguments. */
TEST_F(ctx, launch_in_ctx)
{
	const int n = 10000;
	struct npu_bo code, a, b, c;
	float *pa, *pb, *pc;
	uint64_t args[4];
	struct xctx x;
	int i;

	if (!(npu_param(self->fd, DRM_NPU_PARAM_FEATURES) &
	      DRM_NPU_FEATURE_USER_CODE))
		SKIP(return, "no user code on this device");
	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &x), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &code), 0);
	memcpy(code.map, npu_code_vadd_f32, sizeof(npu_code_vadd_f32));
	ASSERT_EQ(map_at(self->fd, code.handle, x.id, CODE_VA,
			 DRM_NPU_BO_MAP_READ_ONLY), 0);
	ASSERT_EQ(npu_bo_new(self->fd, n * 4, 0, &a), 0);
	ASSERT_EQ(npu_bo_new(self->fd, n * 4, 0, &b), 0);
	ASSERT_EQ(npu_bo_new(self->fd, n * 4, 0, &c), 0);
	ASSERT_EQ(map_at(self->fd, a.handle, x.id, DATA_VA,
			 DRM_NPU_BO_MAP_READ_ONLY), 0);
	ASSERT_EQ(map_at(self->fd, b.handle, x.id, DATA2_VA,
			 DRM_NPU_BO_MAP_READ_ONLY), 0);
	ASSERT_EQ(map_at(self->fd, c.handle, x.id, DATA3_VA, 0), 0);
	pa = a.map;
	pb = b.map;
	pc = c.map;
	for (i = 0; i < n; i++) {
		pa[i] = i * 0.25f;
		pb[i] = 3.0f - i;
	}
	args[0] = DATA_VA;
	args[1] = DATA2_VA;
	args[2] = DATA3_VA;
	args[3] = n;
	npu_emit_launch_code(&self->cmd, CODE_VA, 1, 1, 4, args);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, x.q, self->so), 0);
	for (i = 0; i < n; i++)
		ASSERT_EQ(pc[i], pa[i] + pb[i]);
}

/* Device memory BOs can be mapped into a context as well. */
TEST_F(ctx, devmem_bo_in_ctx)
{
	struct drm_npu_bo_create dm = { .size = 1 << 16,
					.flags = DRM_NPU_BO_DEVMEM };
	struct npu_bo h;
	struct xctx x;
	uint32_t *p;
	int i;

	if (!npu_param(self->fd, DRM_NPU_PARAM_DEVMEM_SIZE))
		SKIP(return, "no device memory");
	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COPY, 0,
			   &x), 0);
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_CREATE, &dm), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 17, 0, &h), 0);
	ASSERT_EQ(map_at(self->fd, dm.handle, x.id, DATA_VA, 0), 0);
	ASSERT_EQ(map_at(self->fd, h.handle, x.id, DATA2_VA, 0), 0);
	p = h.map;
	for (i = 0; i < 1 << 14; i++)
		p[i] = i ^ 0x3c3c;
	npu_emit_copy(&self->cmd, DATA2_VA, DATA_VA, 1 << 16);
	npu_emit_copy(&self->cmd, DATA_VA, DATA2_VA + (1 << 16), 1 << 16);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, x.q, self->so), 0);
	for (i = 0; i < 1 << 14; i++)
		ASSERT_EQ(p[(1 << 14) + i], (uint32_t)(i ^ 0x3c3c));
}

/* ---- isolation -------------------------------------------------------- */

/*
 * Two contexts map two BOs at the same VA; their jobs alternate on one
 * ring (so the device switches address spaces between them) and each BO
 * only gets its own context's values.
 */
TEST_F(ctx, isolation_same_va_two_ctxs)
{
	struct drm_npu_sync out = { .handle = self->so };
	struct drm_npu_job j[16];
	struct npu_bo a, b;
	struct xctx xa, xb;
	uint32_t *pa, *pb, size;
	uint64_t va;
	int i;

	if (self->max_ctx < 2)
		SKIP(return, "one extra context");
	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &xa), 0);
	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &xb), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &a), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &b), 0);
	ASSERT_EQ(map_at(self->fd, a.handle, xa.id, DATA_VA, 0), 0);
	ASSERT_EQ(map_at(self->fd, b.handle, xb.id, DATA_VA, 0), 0);

	npu_emit_fill(&self->cmd, DATA_VA, 0xaaaaaaaa, PG);
	ASSERT_EQ(submit_ctx(self->fd, &self->cmd, xa.q, NULL, 0, 0, 0), 0);
	npu_emit_fill(&self->cmd, DATA_VA, 0xbbbbbbbb, PG);
	ASSERT_EQ(submit_ctx(self->fd, &self->cmd, xb.q, NULL, 0, 0, 0), 0);
	/* one array alternating between the contexts */
	for (i = 0; i < 16; i++) {
		npu_emit_fill(&self->cmd, DATA_VA + 4 * (i / 2),
			      (i & 1 ? 0xb000 : 0xa000) + i / 2, 4);
		npu_cmd_end_at(&self->cmd, CMD_VA, &va, &size);
		npu_job_init(&j[i], i & 1 ? xb.q : xa.q, va, size);
	}
	/* both queues are on ring 0: the last job finishes last */
	j[15].out_syncs = (uintptr_t)&out;
	j[15].out_sync_count = 1;
	ASSERT_EQ(npu_submit(self->fd, j, 16), 0);
	ASSERT_EQ(wait_err(self->fd, self->so), 0);
	/* and a's queue is idle too */
	npu_cmd_end_at(&self->cmd, CMD_VA, &va, &size);
	ASSERT_EQ(npu_submit_one(self->fd, xa.q, va, 0, self->so), 0);
	ASSERT_EQ(wait_err(self->fd, self->so), 0);

	pa = a.map;
	pb = b.map;
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(pa[i], 0xa000 + i);
		ASSERT_EQ(pb[i], 0xb000 + i);
	}
	ASSERT_EQ(npu_first_ne(pa + 8, PG / 4 - 8, 0xaaaaaaaa), -1);
	ASSERT_EQ(npu_first_ne(pb + 8, PG / 4 - 8, 0xbbbbbbbb), -1);
}

/*
 * A VA of the default context (from BO_CREATE) means nothing in an extra
 * context: the job faults, the BO is untouched; the same write from the
 * default context works.
 */
TEST_F(ctx, default_va_not_in_ctx)
{
	struct drm_npu_get_fault f;
	struct npu_bo b;
	struct xctx x;

	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &x), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 2 * PG, 0, &b), 0);
	ASSERT_TRUE(b.va + 2 * PG <= CMD_VA);

	npu_emit_fill(&self->cmd, b.va, 0xbad0bad0, 2 * PG);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, x.q, self->so), -EFAULT);
	f = get_fault(self->fd);
	ASSERT_EQ(f.count, 1);
	ASSERT_EQ(f.kind, DRM_NPU_FAULT_DEVICE);
	ASSERT_EQ(f.queue_id, x.q);
	ASSERT_EQ(f.cause, NPU_ERR_MMU_FAULT);
	ASSERT_EQ(f.addr, b.va);
	ASSERT_EQ(npu_first_ne(b.map, 2 * PG / 4, 0), -1);

	/* listing the BO does not map it in the context either */
	npu_emit_fill(&self->cmd, b.va, 0xbad0bad0, 2 * PG);
	ASSERT_EQ(submit_ctx(self->fd, &self->cmd, x.q, &b.handle, 1, 0,
			     self->so), -ENOENT);

	npu_emit_fill(&self->cmd, b.va, 0x600d600d, 2 * PG);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q0, self->so), 0);
	ASSERT_EQ(npu_first_ne(b.map, 2 * PG / 4, 0x600d600d), -1);
	ASSERT_EQ(get_fault(self->fd).count, 1);
}

/* ... and a VA of an extra context means nothing in the default one. */
TEST_F(ctx, ctx_va_not_in_default)
{
	struct drm_npu_get_fault f;
	struct npu_bo d;
	uint32_t id;

	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &d), 0);
	ASSERT_EQ(map_at(self->fd, d.handle, id, DATA_VA, 0), 0);
	npu_emit_fill(&self->cmd, DATA_VA, 0xbad, PG);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q0, self->so),
		  -EFAULT);
	f = get_fault(self->fd);
	ASSERT_EQ(f.queue_id, self->q0);
	ASSERT_EQ(f.cause, NPU_ERR_MMU_FAULT);
	ASSERT_EQ(f.addr, DATA_VA);
	ASSERT_EQ(npu_first_ne(d.map, PG / 4, 0), -1);
}

/* ... nor in another extra context of the same file. */
TEST_F(ctx, ctx_va_not_in_other_ctx)
{
	struct npu_bo d;
	struct xctx xa, xb;

	if (self->max_ctx < 2)
		SKIP(return, "one extra context");
	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &xa), 0);
	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COPY, 0,
			   &xb), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &d), 0);
	ASSERT_EQ(map_at(self->fd, d.handle, xa.id, DATA_VA, 0), 0);
	npu_emit_fill(&self->cmd, DATA_VA, 0xbad, PG);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, xb.q, self->so), -EFAULT);
	ASSERT_EQ(get_fault(self->fd).addr, DATA_VA);
	ASSERT_EQ(get_fault(self->fd).queue_id, xb.q);
	ASSERT_EQ(npu_first_ne(d.map, PG / 4, 0), -1);
	npu_emit_fill(&self->cmd, DATA_VA, 0x900d, PG);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, xa.q, self->so), 0);
	ASSERT_EQ(npu_first_ne(d.map, PG / 4, 0x900d), -1);
}

/*
 * One BO mapped in two contexts at different VAs is one memory: a job in
 * context A writes it, a job in context B (ordered by a syncobj of the same
 * SUBMIT) copies it out through B's VA.
 */
TEST_F(ctx, shared_bo_across_ctxs)
{
	struct drm_npu_sync mid = { 0 }, end = { .handle = self->so };
	struct drm_npu_job j[2];
	struct npu_bo x, y;
	struct xctx xa, xb;
	uint64_t va0, va1;
	uint32_t s0, s1, so_mid;
	uint64_t spin[1] = { 5000000 };

	if (self->max_ctx < 2)
		SKIP(return, "one extra context");
	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &xa), 0);
	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COPY, 0,
			   &xb), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so_mid), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &x), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &y), 0);
	ASSERT_EQ(map_at(self->fd, x.handle, xa.id, DATA_VA, 0), 0);
	ASSERT_EQ(map_at(self->fd, x.handle, xb.id, DATA2_VA,
			 DRM_NPU_BO_MAP_READ_ONLY), 0);
	ASSERT_EQ(map_at(self->fd, y.handle, xb.id, DATA_VA, 0), 0);

	npu_emit_launch(&self->cmd, NPU_KERNEL_TEST_SPIN, 1, 1, spin);
	npu_emit_fill(&self->cmd, DATA_VA, 0x77777777, 1 << 16);
	npu_cmd_end_at(&self->cmd, CMD_VA, &va0, &s0);
	npu_emit_copy(&self->cmd, DATA2_VA, DATA_VA, 1 << 16);
	npu_cmd_end_at(&self->cmd, CMD_VA, &va1, &s1);
	mid.handle = so_mid;
	npu_job_init(&j[0], xa.q, va0, s0);
	j[0].bo_handles = (uintptr_t)&x.handle;
	j[0].bo_count = 1;
	j[0].out_syncs = (uintptr_t)&mid;
	j[0].out_sync_count = 1;
	npu_job_init(&j[1], xb.q, va1, s1);
	j[1].in_syncs = (uintptr_t)&mid;
	j[1].in_sync_count = 1;
	j[1].out_syncs = (uintptr_t)&end;
	j[1].out_sync_count = 1;
	ASSERT_EQ(npu_submit(self->fd, j, 2), 0);
	ASSERT_EQ(wait_err(self->fd, self->so), 0);
	ASSERT_EQ(npu_first_ne(y.map, (1 << 16) / 4, 0x77777777), -1);
}

/* Many contexts at once, each with its own BO at the same VA. */
TEST_F(ctx, many_contexts_concurrently)
{
	uint32_t n = self->max_ctx < 16 ? self->max_ctx : 16, i, size;
	struct npu_bo b[16];
	struct xctx x[16];
	uint32_t so[16];
	uint64_t va;

	for (i = 0; i < n; i++) {
		ASSERT_EQ(xctx_new(self->fd, &self->cmd,
				   i & 1 ? DRM_NPU_RING_KIND_COPY :
					   DRM_NPU_RING_KIND_COMPUTE,
				   DRM_NPU_RING_ANY, &x[i]), 0);
		ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &b[i]), 0);
		ASSERT_EQ(map_at(self->fd, b[i].handle, x[i].id, DATA_VA, 0),
			  0);
		ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so[i]), 0);
	}
	for (i = 0; i < n; i++) {
		npu_emit_fill(&self->cmd, DATA_VA, 0x1000 + i, 1 << 16);
		npu_emit_fill(&self->cmd, DATA_VA + 4 * i, 0x2000 + i, 4);
		npu_cmd_end_at(&self->cmd, CMD_VA, &va, &size);
		ASSERT_EQ(npu_submit_one(self->fd, x[i].q, va, size, so[i]), 0);
	}
	ASSERT_EQ(drmSyncobjWait(self->fd, so, n,
				 npu_abs_timeout(NPU_TIMEOUT_NS),
				 DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL, NULL), 0);
	for (i = 0; i < n; i++) {
		uint32_t *p = b[i].map;

		ASSERT_EQ(npu_syncobj_error(self->fd, so[i]), 0);
		ASSERT_EQ(p[i], 0x2000 + i);
		ASSERT_EQ(npu_first_ne(p, i, 0x1000 + i), -1);
		ASSERT_EQ(npu_first_ne(p + i + 1, (1 << 14) - i - 1, 0x1000 + i),
			  -1);
	}
}

/* ---- SUBMIT validation in a context ---------------------------------- */

/* Every BO a job lists must be mapped in its queue's context. */
TEST_F(ctx, submit_bo_not_mapped_in_ctx)
{
	struct npu_bo m, d;
	uint32_t bos[2];
	struct xctx x;

	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &x), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &m), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &d), 0);	/* default only */
	ASSERT_EQ(map_at(self->fd, m.handle, x.id, DATA_VA, 0), 0);

	bos[0] = m.handle;
	bos[1] = d.handle;
	npu_emit_fill(&self->cmd, DATA_VA, 0x99, PG);
	ASSERT_EQ(submit_ctx(self->fd, &self->cmd, x.q, bos, 2, 0, self->so),
		  -ENOENT);
	npu_emit_fill(&self->cmd, DATA_VA, 0x99, PG);
	ASSERT_EQ(submit_ctx(self->fd, &self->cmd, x.q, &d.handle, 1, 0,
			     self->so), -ENOENT);
	/* nothing was queued, nothing signalled */
	ASSERT_TRUE(no_fence(self->fd, self->so));
	usleep(100000);
	ASSERT_EQ(npu_first_ne(m.map, PG / 4, 0), -1);

	/* BOs that are mapped there (the command buffer is) are fine */
	bos[1] = self->cmd.bo.handle;
	npu_emit_fill(&self->cmd, DATA_VA, 0x99, PG);
	ASSERT_EQ(submit_ctx(self->fd, &self->cmd, x.q, bos, 2, 0, self->so),
		  0);
	ASSERT_EQ(wait_err(self->fd, self->so), 0);
	ASSERT_EQ(npu_first_ne(m.map, PG / 4, 0x99), -1);
}

/* The command buffer is looked up in the queue's context. */
TEST_F(ctx, submit_cmd_va_not_in_ctx)
{
	struct drm_npu_job j;
	struct npu_bo m;
	uint64_t va;
	uint32_t size;
	struct xctx x;

	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &x), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &m), 0);
	ASSERT_EQ(map_at(self->fd, m.handle, x.id, DATA_VA, 0), 0);
	npu_emit_fill(&self->cmd, DATA_VA, 0x55, PG);
	npu_cmd_end(&self->cmd, &va, &size);	/* default-context VA */

	/* the default VA of the command buffer is not mapped in x */
	npu_job_init(&j, x.q, va, size);
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EINVAL);
	/* past the end of the command buffer's mapping in x */
	npu_job_init(&j, x.q, CMD_VA + CMD_SIZE - 8, 64);
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EINVAL);
	/* nothing at all is mapped there in x */
	npu_job_init(&j, x.q, DATA2_VA, 16);
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EINVAL);
	/* the context's VA in a default-context queue */
	npu_job_init(&j, self->q0, va - self->cmd.bo.va + CMD_VA, size);
	ASSERT_EQ(npu_submit(self->fd, &j, 1), -EINVAL);
	usleep(100000);
	ASSERT_EQ(npu_first_ne(m.map, PG / 4, 0), -1);

	/* the right VA works */
	npu_job_init(&j, x.q, va - self->cmd.bo.va + CMD_VA, size);
	ASSERT_EQ(npu_submit(self->fd, &j, 1), 0);
	npu_cmd_end_at(&self->cmd, CMD_VA, &va, &size);
	ASSERT_EQ(npu_submit_one(self->fd, x.q, va, 0, self->so), 0);
	ASSERT_EQ(wait_err(self->fd, self->so), 0);
	ASSERT_EQ(npu_first_ne(m.map, PG / 4, 0x55), -1);
}

/* A bad job of another context in the array: nothing queued at all. */
TEST_F(ctx, submit_array_all_or_nothing_across_ctxs)
{
	struct drm_npu_sync s = { .handle = self->so };
	struct drm_npu_job j[2];
	struct npu_bo m;
	struct xctx xa, xb;
	uint64_t va;
	uint32_t size;

	if (self->max_ctx < 2)
		SKIP(return, "one extra context");
	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &xa), 0);
	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &xb), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &m), 0);
	ASSERT_EQ(map_at(self->fd, m.handle, xa.id, DATA_VA, 0), 0);
	npu_emit_fill(&self->cmd, DATA_VA, 0x66, PG);
	npu_cmd_end_at(&self->cmd, CMD_VA, &va, &size);
	npu_job_init(&j[0], xa.q, va, size);
	j[0].bo_handles = (uintptr_t)&m.handle;
	j[0].bo_count = 1;
	j[0].out_syncs = (uintptr_t)&s;
	j[0].out_sync_count = 1;
	npu_job_init(&j[1], xb.q, va, size);	/* m is not mapped in xb */
	j[1].bo_handles = (uintptr_t)&m.handle;
	j[1].bo_count = 1;
	ASSERT_EQ(npu_submit(self->fd, j, 2), -ENOENT);
	ASSERT_TRUE(no_fence(self->fd, self->so));
	usleep(100000);
	ASSERT_EQ(npu_first_ne(m.map, PG / 4, 0), -1);
}

/* ---- read-only mappings ------------------------------------------- */

TEST_F(ctx, read_only_mapping)
{
	struct drm_npu_get_fault f;
	struct npu_bo src, dst;
	uint32_t id, q, *ps;
	int i;

	/* the command buffer itself only needs read access */
	ASSERT_EQ(npu_ctx_new(self->fd, &id), 0);
	ASSERT_EQ(map_at(self->fd, self->cmd.bo.handle, id, CMD_VA,
			 DRM_NPU_BO_MAP_READ_ONLY), 0);
	ASSERT_EQ(npu_queue_new_ctx(self->fd, DRM_NPU_RING_KIND_COPY,
				    DRM_NPU_PRIORITY_NORMAL, 0, id, &q), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4 * PG, 0, &src), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4 * PG, 0, &dst), 0);
	ps = src.map;
	for (i = 0; i < 4096; i++)
		ps[i] = i * 11;
	ASSERT_EQ(map_at(self->fd, src.handle, id, DATA_VA,
			 DRM_NPU_BO_MAP_READ_ONLY), 0);
	ASSERT_EQ(map_at(self->fd, dst.handle, id, DATA2_VA, 0), 0);

	/* reading works */
	npu_emit_copy(&self->cmd, DATA_VA, DATA2_VA, 4 * PG);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, q, self->so), 0);
	for (i = 0; i < 4096; i++)
		ASSERT_EQ(((uint32_t *)dst.map)[i], (uint32_t)(i * 11));

	/* a FILL faults */
	npu_emit_fill(&self->cmd, DATA_VA + PG, 0xdead, PG);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, q, self->so), -EFAULT);
	f = get_fault(self->fd);
	ASSERT_EQ(f.count, 1);
	ASSERT_EQ(f.queue_id, q);
	ASSERT_EQ(f.cause, NPU_ERR_MMU_WRITE);
	ASSERT_EQ(f.addr, DATA_VA + PG);
	/* a COPY into it faults */
	npu_emit_copy(&self->cmd, DATA2_VA, DATA_VA, 64);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, q, self->so), -EFAULT);
	f = get_fault(self->fd);
	ASSERT_EQ(f.count, 2);
	ASSERT_EQ(f.cause, NPU_ERR_MMU_WRITE);
	for (i = 0; i < 4096; i++)
		ASSERT_EQ(ps[i], (uint32_t)(i * 11));

	/* read-only is a property of that mapping: the default one writes */
	npu_emit_fill(&self->cmd, src.va, 0x5151, 4);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->q0, self->so), 0);
	ASSERT_EQ(ps[0], 0x5151);
}

/* A read-only userptr stays read-only in an extra context. */
TEST_F(ctx, read_only_userptr_stays_read_only)
{
	uint32_t *mem = aligned_alloc(PG, PG);
	struct drm_npu_get_fault f;
	struct npu_bo ro, dst;
	struct xctx x;

	ASSERT_NE(mem, NULL);
	memset(mem, 0, PG);
	mem[0] = 42;
	mem[1023] = 43;
	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COPY, 0,
			   &x), 0);
	ASSERT_EQ(npu_userptr(self->fd, mem, PG, DRM_NPU_USERPTR_READ_ONLY,
			      &ro), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &dst), 0);
	/* mapped without READ_ONLY */
	ASSERT_EQ(map_at(self->fd, ro.handle, x.id, DATA_VA, 0), 0);
	ASSERT_EQ(map_at(self->fd, dst.handle, x.id, DATA2_VA, 0), 0);
	npu_emit_copy(&self->cmd, DATA_VA, DATA2_VA, PG);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, x.q, self->so), 0);
	ASSERT_EQ(((uint32_t *)dst.map)[0], 42);
	ASSERT_EQ(((uint32_t *)dst.map)[1023], 43);
	npu_emit_fill(&self->cmd, DATA_VA, 0, PG);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, x.q, self->so), -EFAULT);
	f = get_fault(self->fd);
	ASSERT_EQ(f.cause, NPU_ERR_MMU_WRITE);
	ASSERT_EQ(mem[0], 42);
	ASSERT_EQ(mem[1023], 43);
	ASSERT_EQ(npu_bo_unmap(self->fd, x.id, DATA_VA), 0);
	npu_gem_close(self->fd, ro.handle);
	free(mem);
}

/* ---- unmap / destroy with jobs in flight ------------------------------ */

/*
 * BO_MAP FIXED over a range whose job just finished. Logs what happens if
 * the range is still busy right after the fence signalled (the mapping
 * would then be torn down later than documented).
 */
static int remap_after_finish(int fd, uint32_t handle, uint32_t ctx,
			      uint64_t va, uint32_t wait_handle,
			      struct __test_metadata *_metadata)
{
	struct drm_npu_bo_wait w = { .handle = wait_handle };
	int ret = map_at(fd, handle, ctx, va, 0), ret2;

	if (ret == -EBUSY) {
		w.timeout_ns = npu_abs_timeout(NPU_TIMEOUT_NS);
		npu_ioctl(fd, DRM_IOCTL_NPU_BO_WAIT, &w);
		ret2 = map_at(fd, handle, ctx, va, 0);
		TH_LOG("BO_MAP FIXED: -EBUSY right after the job's fence signalled; after BO_WAIT: %d",
		       ret2);
	}
	return ret;
}

/*
 * BO_UNMAP and GEM_CLOSE while the job using the BO runs on the device:
 * the job completes without a fault and its data lands; the range stays
 * busy (-EBUSY for a fixed map) until the job finished.
 */
TEST_F(ctx, unmap_while_job_runs)
{
	struct npu_bo d, ctl, nb;
	volatile uint32_t *c;
	uint32_t bos[2];
	struct xctx x;

	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &x), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &d), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &ctl), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &nb), 0);
	ASSERT_EQ(map_at(self->fd, d.handle, x.id, DATA_VA, 0), 0);
	ASSERT_EQ(map_at(self->fd, ctl.handle, x.id, CTL_VA, 0), 0);
	c = ctl.map;
	self->gate = &c[1];

	emit_gate(&self->cmd, CTL_VA);
	npu_emit_fill(&self->cmd, DATA_VA, 0x5a5a5a5a, 1 << 16);
	bos[0] = d.handle;
	bos[1] = ctl.handle;
	ASSERT_EQ(submit_ctx(self->fd, &self->cmd, x.q, bos, 2, 0, self->so),
		  0);
	ASSERT_EQ(wait_word(&c[0], 1), 0);	/* on the device, gated */

	ASSERT_EQ(npu_bo_unmap(self->fd, x.id, DATA_VA), 0);
	ASSERT_EQ(npu_bo_unmap(self->fd, x.id, DATA_VA), -ENOENT);
	ASSERT_EQ(npu_gem_close(self->fd, d.handle), 0);
	d.handle = 0;
	ASSERT_EQ(map_at(self->fd, nb.handle, x.id, DATA_VA, 0), -EBUSY);
	ASSERT_EQ(map_at(self->fd, nb.handle, x.id, DATA_VA - 8 * PG, 0),
		  -EBUSY);
	ASSERT_EQ(npu_first_ne(d.map, 1 << 14, 0), -1);

	c[1] = 1;
	ASSERT_EQ(wait_err(self->fd, self->so), 0);
	ASSERT_EQ(npu_first_ne(d.map, 1 << 14, 0x5a5a5a5a), -1);
	ASSERT_EQ(get_fault(self->fd).count, 0);

	ASSERT_EQ(remap_after_finish(self->fd, nb.handle, x.id, DATA_VA,
				     ctl.handle, _metadata), 0);
	/* the context now sees the new BO there */
	npu_emit_fill(&self->cmd, DATA_VA, 0x600d, 4);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, x.q, self->so), 0);
	ASSERT_EQ(((uint32_t *)nb.map)[0], 0x600d);
	ASSERT_EQ(((uint32_t *)d.map)[0], 0x5a5a5a5a);
}

/*
 * The same while the job has not reached the device yet: it waits for the
 * fence of a gated job in the default context.
 */
TEST_F(ctx, unmap_while_job_waits_for_in_fence)
{
	struct npu_bo d, g, nb;
	uint32_t qg, so_gate, size;
	struct xctx x;
	uint64_t va;

	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &x), 0);
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COPY,
				DRM_NPU_PRIORITY_NORMAL, 0, &qg), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so_gate), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &d), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &g), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &nb), 0);
	ASSERT_EQ(map_at(self->fd, d.handle, x.id, DATA_VA, 0), 0);
	self->gate = g.map;

	/* default context: wait for the gate */
	npu_emit_sem(&self->cmd, NPU_OP_SEM_WAIT, g.va, 1);
	npu_cmd_end(&self->cmd, &va, &size);
	ASSERT_EQ(npu_submit_one(self->fd, qg, va, size, so_gate), 0);
	/* context x: behind it */
	npu_emit_fill(&self->cmd, DATA_VA, 0x3c3c3c3c, 1 << 16);
	ASSERT_EQ(submit_ctx(self->fd, &self->cmd, x.q, &d.handle, 1, so_gate,
			     self->so), 0);

	ASSERT_EQ(npu_bo_unmap(self->fd, x.id, DATA_VA), 0);
	ASSERT_EQ(npu_gem_close(self->fd, d.handle), 0);
	d.handle = 0;
	ASSERT_EQ(map_at(self->fd, nb.handle, x.id, DATA_VA, 0), -EBUSY);
	usleep(20000);
	ASSERT_EQ(npu_first_ne(d.map, 1 << 14, 0), -1);	/* still held back */

	*self->gate = 1;
	ASSERT_EQ(wait_err(self->fd, so_gate), 0);
	ASSERT_EQ(wait_err(self->fd, self->so), 0);
	ASSERT_EQ(npu_first_ne(d.map, 1 << 14, 0x3c3c3c3c), -1);
	ASSERT_EQ(get_fault(self->fd).count, 0);
	ASSERT_EQ(remap_after_finish(self->fd, nb.handle, x.id, DATA_VA,
				     self->cmd.bo.handle, _metadata), 0);
}

/*
 * BO_UNMAP: "Jobs submitted before keep the range mapped until they have
 * finished" - also when the job does not list the BO in bo_handles.
 */
TEST_F(ctx, unmap_unlisted_bo_while_job_runs)
{
	struct npu_bo d, ctl, nb;
	volatile uint32_t *c;
	struct xctx x;

	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &x), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &d), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &ctl), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &nb), 0);
	ASSERT_EQ(map_at(self->fd, d.handle, x.id, DATA_VA, 0), 0);
	ASSERT_EQ(map_at(self->fd, ctl.handle, x.id, CTL_VA, 0), 0);
	c = ctl.map;
	self->gate = &c[1];

	emit_gate(&self->cmd, CTL_VA);
	npu_emit_fill(&self->cmd, DATA_VA, 0x6b6b6b6b, 1 << 16);
	ASSERT_EQ(submit_ctx(self->fd, &self->cmd, x.q, NULL, 0, 0, self->so),
		  0);
	ASSERT_EQ(wait_word(&c[0], 1), 0);
	ASSERT_EQ(npu_bo_unmap(self->fd, x.id, DATA_VA), 0);
	ASSERT_EQ(npu_gem_close(self->fd, d.handle), 0);
	d.handle = 0;
	ASSERT_EQ(map_at(self->fd, nb.handle, x.id, DATA_VA, 0), -EBUSY);
	c[1] = 1;
	ASSERT_EQ(wait_err(self->fd, self->so), 0);
	ASSERT_EQ(npu_first_ne(d.map, 1 << 14, 0x6b6b6b6b), -1);
	ASSERT_EQ(remap_after_finish(self->fd, nb.handle, x.id, DATA_VA,
				     self->cmd.bo.handle, _metadata), 0);
}

/*
 * Whatever a running job that does not list a BO is promised about it,
 * once BO_UNMAP or CTX_DESTROY returned the BO is either still fully mapped
 * for that job (it completes, all its writes land) or not at all (it
 * faults, none land): never some pages through translations the device
 * still caches and others not - those pages may already be freed. The job
 * first writes every page (so the ring's TLB holds them), stops at the
 * gate, and after it writes pages 1..15, then page 0 (whose TLB slot the
 * gate's own accesses reuse).
 */
static void unlisted_teardown(struct __test_metadata *_metadata,
			      FIXTURE_DATA(ctx) *self, int destroy_ctx)
{
	struct npu_bo d, ctl, nb;
	volatile uint32_t *c;
	long landed = 0, i;
	struct xctx x;
	int err, busy = 0, remapped;

	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &x), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 16 * PG, 0, &d), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &ctl), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 16 * PG, 0, &nb), 0);
	ASSERT_EQ(map_at(self->fd, d.handle, x.id, DATA_VA, 0), 0);
	ASSERT_EQ(map_at(self->fd, ctl.handle, x.id, CTL_VA, 0), 0);
	c = ctl.map;
	self->gate = &c[1];

	npu_emit_fill(&self->cmd, DATA_VA, 0x11111111, 16 * PG);
	emit_gate(&self->cmd, CTL_VA);
	npu_emit_fill(&self->cmd, DATA_VA + PG, 0x6b6b6b6b, 15 * PG);
	npu_emit_fill(&self->cmd, DATA_VA, 0x6b6b6b6b, PG);
	ASSERT_EQ(submit_ctx(self->fd, &self->cmd, x.q, &ctl.handle, 1, 0,
			     self->so), 0);
	ASSERT_EQ(wait_word(&c[0], 1), 0);
	ASSERT_EQ(npu_first_ne(d.map, 16 * PG / 4, 0x11111111), -1);
	if (destroy_ctx) {
		ASSERT_EQ(npu_queue_free(self->fd, x.q), 0);
		ASSERT_EQ(npu_ctx_free(self->fd, x.id), 0);
	} else {
		ASSERT_EQ(npu_bo_unmap(self->fd, x.id, DATA_VA), 0);
		/* a new BO over the range, if the kernel lets us */
		busy = map_at(self->fd, nb.handle, x.id, DATA_VA, 0) == -EBUSY;
	}
	c[1] = 1;
	err = wait_err(self->fd, self->so);
	for (i = 0; i < 16 * PG / 4; i++)
		landed += ((uint32_t *)d.map)[i] == 0x6b6b6b6b;
	TH_LOG("fence %d, %ld of %llu words landed in the unmapped BO%s",
	       err, landed, 16 * PG / 4,
	       destroy_ctx ? "" : busy ? ", range busy" : ", range remapped");
	remapped = !destroy_ctx && !busy;
	if (remapped)
		TH_LOG("BO mapped over the range after the job was submitted: nb[0] %#x nb[last] %#x",
		       ((uint32_t *)nb.map)[0],
		       ((uint32_t *)nb.map)[16 * PG / 4 - 1]);
	/* all in the old BO, or none there and all (or none) in the new */
	ASSERT_TRUE((err == 0 && landed == 16 * PG / 4) ||
		    (err == -EFAULT && landed == 0) ||
		    (remapped && err == 0 && landed == 0 &&
		     npu_first_ne(nb.map, 16 * PG / 4, 0x6b6b6b6b) == -1));
}

/*
 * A fixed BO_MAP made as soon as the fence of the last job using the range
 * signalled finds the range free, also while the scheduler's free worker
 * is dropping that job's references (it has taken them off the context
 * and not yet unmapped): many rounds, so that the two meet.
 */
TEST_F(ctx, remap_as_fence_signals_while_job_is_freed)
{
	struct npu_bo d[2];
	struct xctx x;
	int i, busy = 0;

	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &x), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &d[0]), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &d[1]), 0);
	ASSERT_EQ(map_at(self->fd, d[0].handle, x.id, DATA_VA, 0), 0);
	for (i = 0; i < 300; i++) {
		self->cmd.n = 0;
		self->cmd.start = 0;
		npu_emit_fill(&self->cmd, DATA_VA, i, 1 << 16);
		ASSERT_EQ(submit_ctx(self->fd, &self->cmd, x.q, NULL, 0, 0,
				     self->so), 0);
		/* unlisted: the mapping retires when the job signals */
		ASSERT_EQ(npu_bo_unmap(self->fd, x.id, DATA_VA), 0);
		ASSERT_EQ(wait_err(self->fd, self->so), 0);
		if (map_at(self->fd, d[!(i & 1)].handle, x.id, DATA_VA, 0) ==
		    -EBUSY) {
			busy++;
			ASSERT_EQ(npu_syncobj_wait(self->fd, self->so,
						   NPU_TIMEOUT_NS), 0);
			usleep(100000);
			ASSERT_EQ(map_at(self->fd, d[!(i & 1)].handle, x.id,
					 DATA_VA, 0), 0);
		}
		ASSERT_EQ(((uint32_t *)d[i & 1].map)[(1 << 14) - 1],
			  (uint32_t)i);
	}
	EXPECT_EQ(busy, 0);
}

TEST_F(ctx, unmap_running_job_no_partial_writes)
{
	unlisted_teardown(_metadata, self, 0);
}

TEST_F(ctx, ctx_destroy_running_job_no_partial_writes)
{
	unlisted_teardown(_metadata, self, 1);
}

/*
 * QUEUE_DESTROY + CTX_DESTROY while a job of the context runs: the job
 * keeps the context alive and completes; the id is gone at once, and a new
 * context (possibly with the same id) is separate from the old one.
 */
TEST_F(ctx, ctx_destroy_while_job_runs)
{
	struct npu_bo d, ctl, nb;
	volatile uint32_t *c;
	uint32_t bos[2], q, so_y;
	struct xctx x, y;
	uint64_t va = 0;

	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &x), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &d), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &ctl), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &nb), 0);
	ASSERT_EQ(map_at(self->fd, d.handle, x.id, DATA_VA, 0), 0);
	ASSERT_EQ(map_at(self->fd, ctl.handle, x.id, CTL_VA, 0), 0);
	c = ctl.map;
	self->gate = &c[1];

	emit_gate(&self->cmd, CTL_VA);
	npu_emit_fill(&self->cmd, DATA_VA, 0x7e7e7e7e, 1 << 16);
	bos[0] = d.handle;
	bos[1] = ctl.handle;
	ASSERT_EQ(submit_ctx(self->fd, &self->cmd, x.q, bos, 2, 0, self->so),
		  0);
	ASSERT_EQ(wait_word(&c[0], 1), 0);

	ASSERT_EQ(npu_ctx_free(self->fd, x.id), -EBUSY);
	ASSERT_EQ(npu_queue_free(self->fd, x.q), 0);
	ASSERT_EQ(npu_ctx_free(self->fd, x.id), 0);
	ASSERT_EQ(npu_ctx_free(self->fd, x.id), -ENOENT);
	ASSERT_EQ(npu_bo_map(self->fd, nb.handle, x.id, 0, &va), -ENOENT);
	ASSERT_EQ(npu_bo_unmap(self->fd, x.id, DATA_VA), -ENOENT);
	ASSERT_EQ(npu_queue_new_ctx(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				    DRM_NPU_PRIORITY_NORMAL, 0, x.id, &q),
		  -ENOENT);
	ASSERT_EQ(npu_gem_close(self->fd, d.handle), 0);
	d.handle = 0;

	/* a new context runs on the copy ring while ring 0 is gated */
	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COPY, 0,
			   &y), 0);
	if (y.id == x.id)
		TH_LOG("the new context reuses id %u", y.id);
	ASSERT_EQ(map_at(self->fd, nb.handle, y.id, DATA_VA, 0), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so_y), 0);
	npu_emit_fill(&self->cmd, DATA_VA, 0x1234, PG);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, y.q, so_y), 0);
	ASSERT_EQ(npu_first_ne(nb.map, PG / 4, 0x1234), -1);
	ASSERT_EQ(npu_first_ne(d.map, 1 << 14, 0), -1);	/* x's job still gated */

	c[1] = 1;
	ASSERT_EQ(wait_err(self->fd, self->so), 0);
	ASSERT_EQ(npu_first_ne(d.map, 1 << 14, 0x7e7e7e7e), -1);
	ASSERT_EQ(npu_first_ne(nb.map, PG / 4, 0x1234), -1);
	ASSERT_EQ(get_fault(self->fd).count, 0);
}

/* ---- handles closed while mapped ------------------------------------- */

/*
 * The mapping holds the BO: with its handle closed and its CPU mapping
 * gone, jobs still read and write it through the context until BO_UNMAP.
 */
TEST_F(ctx, handle_closed_mapping_keeps_bo)
{
	struct drm_npu_bo_info info = { 0 };
	struct npu_bo d, out;
	struct xctx x;
	uint32_t *p;
	int i;

	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COPY, 0,
			   &x), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &d), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &out), 0);
	p = d.map;
	for (i = 0; i < 1 << 14; i++)
		p[i] = i * 3 + 1;
	ASSERT_EQ(map_at(self->fd, d.handle, x.id, DATA_VA, 0), 0);
	ASSERT_EQ(map_at(self->fd, out.handle, x.id, DATA2_VA, 0), 0);
	info.handle = d.handle;
	npu_bo_free(self->fd, &d);	/* munmap + GEM_CLOSE */
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_INFO, &info), -ENOENT);

	npu_emit_copy(&self->cmd, DATA_VA, DATA2_VA, 1 << 16);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, x.q, self->so), 0);
	p = out.map;
	for (i = 0; i < 1 << 14; i++)
		ASSERT_EQ(p[i], (uint32_t)(i * 3 + 1));

	npu_emit_fill(&self->cmd, DATA_VA, 0x77, 1 << 16);
	npu_emit_copy(&self->cmd, DATA_VA, DATA2_VA, 1 << 16);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, x.q, self->so), 0);
	ASSERT_EQ(npu_first_ne(out.map, 1 << 14, 0x77), -1);

	/* BO_UNMAP drops the last reference */
	ASSERT_EQ(npu_bo_unmap(self->fd, x.id, DATA_VA), 0);
	npu_emit_copy(&self->cmd, DATA_VA, DATA2_VA, 1 << 16);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, x.q, self->so), -EFAULT);
	ASSERT_EQ(get_fault(self->fd).addr, DATA_VA);
	ASSERT_EQ(npu_first_ne(out.map, 1 << 14, 0x77), -1);
}

/* Keep every CPU busy with children that die with the calling process. */
static int hogs_start(pid_t *pids, int max)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	int i;

	if (n < 1 || n > max)
		n = max;
	for (i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			return i;
		if (pids[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				;
		}
	}
	return n;
}

static void hogs_stop(const pid_t *pids, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
}

/*
 * Once every job submitted before BO_UNMAP has completed, the next job
 * faults on the range, however soon after the wait the unmap comes: the
 * scheduler frees completed jobs later, from a worker that busy CPUs delay.
 * 600 jobs beside CPU hogs: a few seconds on a quiet host, much longer on
 * the debug kernel on a loaded one, hence more than the default 30 s.
 */
TEST_F_TIMEOUT(ctx, unmap_after_wait_faults_next_job, 240)
{
	struct npu_bo d, out;
	pid_t hogs[8];
	struct xctx x;
	struct timespec t0, t1;
	int nhogs, round, faulted = 0, landed = -1;

	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COPY, 0,
			   &x), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &d), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &out), 0);
	ASSERT_EQ(map_at(self->fd, out.handle, x.id, DATA2_VA, 0), 0);
	nhogs = hogs_start(hogs, 8);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (round = 0; round < 300; round++) {
		if (map_at(self->fd, d.handle, x.id, DATA_VA, 0))
			break;
		npu_emit_fill(&self->cmd, DATA_VA, round, PG);
		npu_emit_copy(&self->cmd, DATA_VA, DATA2_VA, PG);
		if (run_ctx(self->fd, &self->cmd, x.q, self->so) ||
		    npu_first_ne(out.map, PG / 4, round) != -1 ||
		    npu_bo_unmap(self->fd, x.id, DATA_VA))
			break;
		npu_emit_fill(&self->cmd, DATA_VA, 0xdead, PG);
		if (run_ctx(self->fd, &self->cmd, x.q, self->so) != -EFAULT ||
		    get_fault(self->fd).addr != DATA_VA ||
		    npu_first_ne(d.map, PG / 4, round) != -1) {
			landed = round;
			break;
		}
		faulted++;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	hogs_stop(hogs, nhogs);
	TH_LOG("%d CPU hogs, %d rounds faulted in %.1f s", nhogs, faulted,
	       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	EXPECT_EQ(landed, -1)
		TH_LOG("round %d: the job after the unmap did not fault",
		       landed);
	EXPECT_EQ(faulted, 300);
}

/* A closed handle mapped in two contexts lives until both are gone. */
TEST_F(ctx, handle_closed_mapped_in_two_ctxs)
{
	struct npu_bo d, out;
	struct xctx xa, xb;
	uint32_t so2;

	if (self->max_ctx < 2)
		SKIP(return, "one extra context");
	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COPY, 0,
			   &xa), 0);
	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &xb), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so2), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &d), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &out), 0);
	ASSERT_EQ(map_at(self->fd, d.handle, xa.id, DATA_VA, 0), 0);
	ASSERT_EQ(map_at(self->fd, d.handle, xb.id, DATA2_VA, 0), 0);
	ASSERT_EQ(map_at(self->fd, out.handle, xb.id, DATA_VA, 0), 0);
	npu_bo_free(self->fd, &d);

	/* A writes, then A goes away entirely */
	npu_emit_fill(&self->cmd, DATA_VA, 0xabcd, PG);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, xa.q, self->so), 0);
	ASSERT_EQ(npu_queue_free(self->fd, xa.q), 0);
	ASSERT_EQ(npu_ctx_free(self->fd, xa.id), 0);
	/* B still reads what A wrote */
	npu_emit_copy(&self->cmd, DATA2_VA, DATA_VA, PG);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, xb.q, so2), 0);
	ASSERT_EQ(npu_first_ne(out.map, PG / 4, 0xabcd), -1);
	ASSERT_EQ(npu_queue_free(self->fd, xb.q), 0);
	ASSERT_EQ(npu_ctx_free(self->fd, xb.id), 0);
}

/* ---- close() and other files ----------------------------------------- */

/*
 * close() of a file with extra contexts, mappings, queues and jobs in
 * flight (one gated on the device, writing into a BO shared by PRIME with
 * the fixture's file): no error, the gated job still completes and its data
 * lands, and every context is gone afterwards (debugfs; kmemleak on the
 * debug kernel does the rest).
 */
TEST_F(ctx, close_with_contexts_mappings_and_jobs)
{
	uint32_t hd, hc, so2, size, i, k;
	struct npu_bo d, ctl, own[3];
	struct xctx x[3];
	struct npu_cmd c2;
	volatile uint32_t *c;
	int fd2, dfd, sfd, base;
	uint64_t va;

	if (self->max_ctx < 3)
		SKIP(return, "fewer than 3 extra contexts");
	base = count_contexts();
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &d), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &ctl), 0);
	c = ctl.map;
	self->gate = &c[1];

	fd2 = npu_open();
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(drmPrimeHandleToFD(self->fd, d.handle, DRM_CLOEXEC, &dfd), 0);
	ASSERT_EQ(drmPrimeFDToHandle(fd2, dfd, &hd), 0);
	close(dfd);
	ASSERT_EQ(drmPrimeHandleToFD(self->fd, ctl.handle, DRM_CLOEXEC, &dfd),
		  0);
	ASSERT_EQ(drmPrimeFDToHandle(fd2, dfd, &hc), 0);
	close(dfd);
	ASSERT_EQ(npu_cmd_new(fd2, &c2, CMD_SIZE), 0);
	ASSERT_EQ(drmSyncobjCreate(fd2, 0, &so2), 0);
	/* x[0] gated on compute ring 0; the others busy on the copy rings */
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(xctx_new(fd2, &c2, i ? DRM_NPU_RING_KIND_COPY :
					     DRM_NPU_RING_KIND_COMPUTE,
				   i ? DRM_NPU_RING_ANY : 0, &x[i]), 0);
		ASSERT_EQ(npu_bo_new(fd2, 1 << 16, 0, &own[i]), 0);
		ASSERT_EQ(map_at(fd2, own[i].handle, x[i].id, DATA2_VA, 0), 0);
	}
	ASSERT_EQ(map_at(fd2, hd, x[0].id, DATA_VA, 0), 0);
	ASSERT_EQ(map_at(fd2, hc, x[0].id, CTL_VA, 0), 0);

	emit_gate(&c2, CTL_VA);
	npu_emit_fill(&c2, DATA_VA, 0x5eed5eed, 1 << 16);
	ASSERT_EQ(submit_ctx(fd2, &c2, x[0].q, &hd, 1, 0, so2), 0);
	ASSERT_EQ(drmSyncobjExportSyncFile(fd2, so2, &sfd), 0);
	ASSERT_EQ(wait_word(&c[0], 1), 0);
	for (i = 1; i < 3; i++) {
		for (k = 0; k < 8; k++)
			npu_emit_fill(&c2, DATA2_VA, i * 8 + k, 1 << 16);
		npu_cmd_end_at(&c2, CMD_VA, &va, &size);
		for (k = 0; k < 4; k++)
			ASSERT_EQ(npu_submit_one(fd2, x[i].q, va, size, 0), 0);
	}
	for (i = 0; i < 3; i++)
		munmap(own[i].map, own[i].size);
	munmap(c2.bo.map, c2.bo.size);
	ASSERT_EQ(close(fd2), 0);

	c[1] = 1;
	ASSERT_EQ(sync_file_wait(sfd, 10000), 0);
	close(sfd);
	ASSERT_EQ(npu_first_ne(d.map, 1 << 14, 0x5eed5eed), -1);
	if (base < 0)
		SKIP(return, "debugfs not mounted: context count not checked");
	ASSERT_EQ(wait_contexts(base), base);
}

/* A process exits (no close) with extra contexts and jobs in flight. */
TEST_F(ctx, exit_with_contexts_and_jobs)
{
	int status, base = count_contexts();
	struct npu_bo d;
	struct xctx x;
	pid_t pid;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		uint64_t spin[1] = { 20000000 };
		uint32_t i, n, size;
		struct npu_cmd c;
		struct npu_bo b;
		struct xctx x;
		uint64_t va;
		int fd = npu_open();

		if (fd < 0 || npu_cmd_new(fd, &c, CMD_SIZE))
			_exit(1);
		n = npu_param(fd, DRM_NPU_PARAM_MAX_CONTEXTS);
		n = n < 8 ? n : 8;
		for (i = 0; i < n; i++) {
			if (xctx_new(fd, &c, DRM_NPU_RING_KIND_COMPUTE,
				     DRM_NPU_RING_ANY, &x) ||
			    npu_bo_new(fd, 1 << 16, 0, &b) ||
			    map_at(fd, b.handle, x.id, DATA_VA, 0))
				_exit(2);
			npu_emit_launch(&c, NPU_KERNEL_TEST_SPIN, 1, 1, spin);
			npu_emit_fill(&c, DATA_VA, i, 1 << 16);
			npu_cmd_end_at(&c, CMD_VA, &va, &size);
			if (npu_submit_one(fd, x.q, va, size, 0))
				_exit(3);
			/* some handles closed, some BOs unmapped */
			if (i % 3 == 1)
				npu_gem_close(fd, b.handle);
			if (i % 3 == 2 && npu_bo_unmap(fd, x.id, DATA_VA))
				_exit(4);
		}
		_exit(0);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
	/* the device still works, in a context too */
	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &x), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &d), 0);
	ASSERT_EQ(map_at(self->fd, d.handle, x.id, DATA_VA, 0), 0);
	npu_emit_fill(&self->cmd, DATA_VA, 0xfeed, PG);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, x.q, self->so), 0);
	ASSERT_EQ(npu_first_ne(d.map, PG / 4, 0xfeed), -1);
	ASSERT_EQ(npu_queue_free(self->fd, x.q), 0);
	ASSERT_EQ(npu_ctx_free(self->fd, x.id), 0);
	if (base < 0)
		SKIP(return, "debugfs not mounted: context count not checked");
	ASSERT_EQ(wait_contexts(base), base);
}

/*
 * Context ids are file-local: another file (even with a context of the same
 * number) cannot destroy, map into, unmap from or create queues on ours,
 * and the same VA holds different BOs in the two files' contexts.
 */
TEST_F(ctx, ctx_ids_are_per_file)
{
	struct npu_bo d, b2;
	struct xctx x, x2;
	struct npu_cmd c2;
	uint32_t q, so2;
	uint64_t va = 0;
	int fd2;

	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &x), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &d), 0);
	ASSERT_EQ(map_at(self->fd, d.handle, x.id, DATA_VA, 0), 0);

	fd2 = npu_open();
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(npu_bo_new(fd2, PG, 0, &b2), 0);
	ASSERT_EQ(npu_ctx_free(fd2, x.id), -ENOENT);
	ASSERT_EQ(npu_queue_new_ctx(fd2, DRM_NPU_RING_KIND_COMPUTE,
				    DRM_NPU_PRIORITY_NORMAL, 0, x.id, &q),
		  -ENOENT);
	ASSERT_EQ(npu_bo_map(fd2, b2.handle, x.id, 0, &va), -ENOENT);
	ASSERT_EQ(map_at(fd2, b2.handle, x.id, DATA2_VA, 0), -ENOENT);
	ASSERT_EQ(npu_bo_unmap(fd2, x.id, DATA_VA), -ENOENT);

	/* fd2's own context: same VA, no conflict with ours */
	ASSERT_EQ(npu_cmd_new(fd2, &c2, CMD_SIZE), 0);
	ASSERT_EQ(drmSyncobjCreate(fd2, 0, &so2), 0);
	ASSERT_EQ(xctx_new(fd2, &c2, DRM_NPU_RING_KIND_COMPUTE, 0, &x2), 0);
	ASSERT_EQ(map_at(fd2, b2.handle, x2.id, DATA_VA, 0), 0);
	npu_emit_fill(&c2, DATA_VA, 0x2222, PG);
	ASSERT_EQ(run_ctx(fd2, &c2, x2.q, so2), 0);
	npu_emit_fill(&self->cmd, DATA_VA, 0x1111, PG);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, x.q, self->so), 0);
	ASSERT_EQ(npu_first_ne(b2.map, PG / 4, 0x2222), -1);
	ASSERT_EQ(npu_first_ne(d.map, PG / 4, 0x1111), -1);

	/* destroying fd2's context leaves ours alone */
	ASSERT_EQ(npu_queue_free(fd2, x2.q), 0);
	ASSERT_EQ(npu_ctx_free(fd2, x2.id), 0);
	ASSERT_EQ(npu_ctx_free(self->fd, x.id), -EBUSY);
	ASSERT_EQ(npu_bo_unmap(self->fd, x.id, DATA_VA), 0);
	close(fd2);
}

/* A child process with its own file cannot use the parent's contexts. */
TEST_F(ctx, fork_child_cannot_use_parent_ctx)
{
	uint32_t parent_ctx;
	struct npu_bo d;
	struct xctx x;
	int status;
	pid_t pid;

	ASSERT_EQ(xctx_new(self->fd, &self->cmd, DRM_NPU_RING_KIND_COMPUTE, 0,
			   &x), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &d), 0);
	ASSERT_EQ(map_at(self->fd, d.handle, x.id, DATA_VA, 0), 0);
	parent_ctx = x.id;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct npu_cmd c;
		struct npu_bo b;
		struct xctx y;
		uint32_t q, so;
		uint64_t va = 0;
		int fd = npu_open();

		if (fd < 0 || npu_bo_new(fd, PG, 0, &b) ||
		    npu_cmd_new(fd, &c, CMD_SIZE) ||
		    drmSyncobjCreate(fd, 0, &so))
			_exit(1);
		if (npu_ctx_free(fd, parent_ctx) != -ENOENT)
			_exit(2);
		if (npu_queue_new_ctx(fd, DRM_NPU_RING_KIND_COMPUTE,
				      DRM_NPU_PRIORITY_NORMAL, 0, parent_ctx,
				      &q) != -ENOENT)
			_exit(3);
		if (npu_bo_map(fd, b.handle, parent_ctx, 0, &va) != -ENOENT)
			_exit(4);
		if (npu_bo_unmap(fd, parent_ctx, DATA_VA) != -ENOENT)
			_exit(5);
		/* its own context, same layout as the parent's */
		if (xctx_new(fd, &c, DRM_NPU_RING_KIND_COMPUTE, 0, &y) ||
		    map_at(fd, b.handle, y.id, DATA_VA, 0))
			_exit(6);
		npu_emit_fill(&c, DATA_VA, 0xc41d, PG);
		if (run_ctx(fd, &c, y.q, so))
			_exit(7);
		if (npu_first_ne(b.map, PG / 4, 0xc41d) != -1)
			_exit(8);
		_exit(0);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
	/* the child's job at DATA_VA did not touch the parent's BO */
	ASSERT_EQ(npu_first_ne(d.map, PG / 4, 0), -1);
	npu_emit_fill(&self->cmd, DATA_VA, 0x9a7e, PG);
	ASSERT_EQ(run_ctx(self->fd, &self->cmd, x.q, self->so), 0);
	ASSERT_EQ(npu_first_ne(d.map, PG / 4, 0x9a7e), -1);
}

TEST_HARNESS_MAIN
