// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_failinject_test - mappings that fail half-way, by fault injection
 * (debug kernel: FAILSLAB, FAIL_PAGE_ALLOC, FAULT_INJECTION_DEBUG_FS).
 *
 * /proc/thread-self/fail-nth makes the N-th slab or page allocation of the
 * thread fail. Sweeping N over every allocation an ioctl makes fails the
 * ioctl at each of its allocation sites in turn, until N is past the last
 * one and the ioctl succeeds: a mapping then fails after some of its page
 * tables were allocated. Each failure must be a clean -ENOMEM, leave no
 * translation behind (a job reading the range faults; it reads neither the
 * pages mapped there before nor the new BO's), leak nothing (kmemleak) and
 * leave the device working.
 *
 * The release kernels have no fault injection: every test skips there.
 */
#include <sys/mount.h>
#include <sys/stat.h>
#include "npu_test.h"
#include "kselftest_harness.h"

#define CMD_VA		0x1000000000ull		/* 64 GiB */
#define OUT_VA		0x1800000000ull		/* 96 GiB */
/*
 * The last 64 KiB of a 1 GiB region: a 4 MiB BO mapped here needs one more
 * leaf table in this region and a new level-1 table with two leaves in the
 * next one.
 */
#define EDGE_VA		(0x2000000000ull + (1ull << 30) - (64ull << 10))
#define OLD_SIZE	(64ull << 10)
#define NEW_SIZE	(4ull << 20)
#define PG		4096ull
#define OLD_WORD	0xaaaaaaaau
#define NEW_WORD	0xbbbbbbbbu
#define SENTINEL	0x5e5e5e5eu
#define MAX_NTH		400

#define DEBUGFS		"/sys/kernel/debug"

static const char *const fi_knobs[][2] = {
	/* GFP_KERNEL allocations are the ones the driver makes */
	{ DEBUGFS "/failslab/ignore-gfp-wait", "N" },
	{ DEBUGFS "/fail_page_alloc/ignore-gfp-wait", "N" },
	/* no "FAULT_INJECTION: forcing a failure" stack in the log */
	{ DEBUGFS "/failslab/verbose", "0" },
	{ DEBUGFS "/fail_page_alloc/verbose", "0" },
};
#define NKNOBS (sizeof(fi_knobs) / sizeof(fi_knobs[0]))

static int read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n < 0 ? -errno : 0;
}

FIXTURE(fi) {
	int fd;
	int nth;		/* /proc/thread-self/fail-nth */
	char saved[NKNOBS][16];
	uint32_t so;
	struct npu_cmd cmd;
};

FIXTURE_SETUP(fi)
{
	struct stat st;
	size_t i;

	self->fd = -1;
	self->nth = -1;
	if (stat(DEBUGFS "/failslab", &st))
		mount("none", DEBUGFS, "debugfs", 0, NULL);
	if (stat(DEBUGFS "/failslab", &st) ||
	    stat(DEBUGFS "/fail_page_alloc", &st) ||
	    access("/proc/thread-self/fail-nth", W_OK))
		SKIP(return,
		     "no failslab/fail_page_alloc/fail-nth (not the debug kernel)");
	self->fd = npu_open();
	ASSERT_GE(self->fd, 0);
	for (i = 0; i < NKNOBS; i++) {
		ASSERT_EQ(read_file(fi_knobs[i][0], self->saved[i],
				    sizeof(self->saved[i])), 0);
		ASSERT_EQ(write_file(fi_knobs[i][0], fi_knobs[i][1]), 0);
	}
	self->nth = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	ASSERT_GE(self->nth, 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &self->so), 0);
	ASSERT_EQ(npu_cmd_new(self->fd, &self->cmd, 1 << 16), 0);
}

/*
 * The harness of 6.1 runs the test body after a SKIP in the setup: each
 * test starts with this.
 */
#define NEED_FAULT_INJECTION(self)					\
	do {								\
		if ((self)->nth < 0)					\
			SKIP(return, "no fault injection");		\
	} while (0)

FIXTURE_TEARDOWN(fi)
{
	size_t i;

	if (self->nth >= 0) {
		if (pwrite(self->nth, "0", 1, 0) < 0)
			perror("fail-nth");
		close(self->nth);
		for (i = 0; i < NKNOBS; i++)
			write_file(fi_knobs[i][0], self->saved[i]);
	}
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * ioctl with the n-th allocation of this thread failing; *reached tells
 * whether the ioctl made n allocations (the failure happened).
 */
static int ioctl_nth(int nth, int fd, unsigned long req, void *arg,
		     unsigned int n, int *reached)
{
	char buf[16];
	int ret, len = snprintf(buf, sizeof(buf), "%u", n);

	if (pwrite(nth, buf, len, 0) != len)
		return -1000 - errno;
	ret = ioctl(fd, req, arg) ? -errno : 0;
	memset(buf, 0, sizeof(buf));
	if (pread(nth, buf, sizeof(buf) - 1, 0) < 0)
		return -1000 - errno;
	*reached = atoi(buf) == 0;
	if (pwrite(nth, "0", 1, 0) != 1)
		return -1000 - errno;
	return ret;
}

static struct drm_npu_get_fault get_fault(int fd)
{
	struct drm_npu_get_fault f;

	memset(&f, 0, sizeof(f));
	npu_ioctl(fd, DRM_IOCTL_NPU_GET_FAULT, &f);
	return f;
}

static void fill_words(void *p, size_t bytes, uint32_t v)
{
	uint32_t *w = p;
	size_t i;

	for (i = 0; i < bytes / 4; i++)
		w[i] = v;
}

/* copy one page from src to OUT_VA in queue q's context; fence error */
static int copy_page(int fd, struct npu_cmd *c, uint32_t q, uint32_t so,
		     uint64_t src)
{
	struct drm_npu_sync out = { .handle = so };
	struct drm_npu_job j;
	uint64_t va;
	uint32_t size;
	int ret;

	npu_emit_copy(c, src, OUT_VA, PG);
	npu_cmd_end_at(c, CMD_VA, &va, &size);
	npu_job_init(&j, q, va, size);
	j.out_syncs = (uintptr_t)&out;
	j.out_sync_count = 1;
	ret = npu_submit(fd, &j, 1);
	if (ret)
		return ret;
	ret = npu_syncobj_wait(fd, so, NPU_TIMEOUT_NS);
	return ret ? ret : npu_syncobj_error(fd, so);
}

/* a fresh context with the command buffer, the output page and a queue */
static int xctx_new(int fd, struct npu_cmd *cmd, uint32_t out, uint32_t *ctx,
		    uint32_t *q)
{
	uint64_t va = CMD_VA;
	int ret = npu_ctx_new(fd, ctx);

	if (ret)
		return ret;
	ret = npu_bo_map(fd, cmd->bo.handle, *ctx, DRM_NPU_BO_MAP_FIXED, &va);
	if (ret)
		return ret;
	va = OUT_VA;
	ret = npu_bo_map(fd, out, *ctx, DRM_NPU_BO_MAP_FIXED, &va);
	if (ret)
		return ret;
	return npu_queue_new_ctx(fd, DRM_NPU_RING_KIND_COPY,
				 DRM_NPU_PRIORITY_NORMAL, 0, *ctx, q);
}

static int xctx_free(int fd, uint32_t ctx, uint32_t q)
{
	int ret = npu_queue_free(fd, q);

	return ret ? ret : npu_ctx_free(fd, ctx);
}

/*
 * BO_MAP of a 4 MiB BO over a range that held another BO, failing at each
 * allocation in turn, in a fresh context each time (page tables live as
 * long as their context, so each attempt allocates the same ones). After
 * each failure a job reading the range (where the old BO was, and in the
 * new tables) faults at that address, and its destination keeps its
 * sentinel. Then the mapping succeeds and the same jobs read the new BO.
 */
TEST_F_TIMEOUT(fi, bo_map_fails_half_way_at_every_allocation, NPU_BO_HEAVY_TIMEOUT)
{
	struct drm_npu_bo_map m;
	struct npu_bo old, new, out;
	uint32_t ctx, q;
	unsigned int n, failed = 0, absorbed = 0;
	char which[256] = "";
	int ret, reached = 0;
	uint64_t va;
	size_t k;
	const uint64_t probes[] = { EDGE_VA, EDGE_VA + OLD_SIZE,
				    EDGE_VA + NEW_SIZE - PG };

	NEED_FAULT_INJECTION(self);

	ASSERT_EQ(npu_bo_new(self->fd, OLD_SIZE, 0, &old), 0);
	ASSERT_EQ(npu_bo_new(self->fd, NEW_SIZE, 0, &new), 0);
	ASSERT_EQ(npu_bo_new(self->fd, PG, 0, &out), 0);
	fill_words(old.map, OLD_SIZE, OLD_WORD);
	fill_words(new.map, NEW_SIZE, NEW_WORD);

	for (n = 1; n <= MAX_NTH; n++) {
		/* every job so far has completed: start the buffer over */
		self->cmd.n = 0;
		self->cmd.start = 0;
		ASSERT_EQ(xctx_new(self->fd, &self->cmd, out.handle, &ctx, &q),
			  0);
		/* the old BO is mapped, read through the device, unmapped */
		va = EDGE_VA;
		ASSERT_EQ(npu_bo_map(self->fd, old.handle, ctx,
				     DRM_NPU_BO_MAP_FIXED, &va), 0);
		ASSERT_EQ(copy_page(self->fd, &self->cmd, q, self->so,
				    EDGE_VA), 0);
		ASSERT_EQ(npu_first_ne(out.map, PG / 4, OLD_WORD), -1);
		ASSERT_EQ(npu_bo_unmap(self->fd, ctx, EDGE_VA), 0);

		memset(&m, 0, sizeof(m));
		m.handle = new.handle;
		m.ctx_id = ctx;
		m.flags = DRM_NPU_BO_MAP_FIXED;
		m.va = EDGE_VA;
		ret = ioctl_nth(self->nth, self->fd, DRM_IOCTL_NPU_BO_MAP, &m,
				n, &reached);
		if (!ret && !reached)
			break;		/* past its last allocation */
		if (!ret) {
			/* a failure it could do without (kmemleak's pool) */
			absorbed++;
			ASSERT_EQ(xctx_free(self->fd, ctx, q), 0);
			continue;
		}
		ASSERT_EQ(ret, -ENOMEM)
			TH_LOG("allocation %u: BO_MAP failed with %d", n, ret);
		ASSERT_TRUE(reached);
		failed++;
		snprintf(which + strlen(which), sizeof(which) - strlen(which),
			 " %u", n);
		for (k = 0; k < sizeof(probes) / sizeof(probes[0]); k++) {
			struct drm_npu_get_fault f;

			fill_words(out.map, PG, SENTINEL);
			ASSERT_EQ(copy_page(self->fd, &self->cmd, q, self->so,
					    probes[k]), -EFAULT)
				TH_LOG("allocation %u: reading 0x%llx did not fault",
				       n, (unsigned long long)probes[k]);
			f = get_fault(self->fd);
			EXPECT_EQ(f.addr, probes[k]);
			ASSERT_EQ(npu_first_ne(out.map, PG / 4, SENTINEL), -1)
				TH_LOG("allocation %u: 0x%llx read 0x%x", n,
				       (unsigned long long)probes[k],
				       ((uint32_t *)out.map)[0]);
		}
		ASSERT_EQ(xctx_free(self->fd, ctx, q), 0);
	}
	ASSERT_EQ(ret, 0);
	ASSERT_FALSE(reached);
	TH_LOG("BO_MAP: %u allocations, %u failed it with -ENOMEM (%s), %u absorbed",
	       n - 1, failed, which + 1, absorbed);
	/*
	 * Runs saw 3 to 6 of 16 to 18 (the mapping and the page tables, the
	 * first at the first allocation, the others after some tables were
	 * allocated); the others are failures the allocators absorb
	 * (kmemleak's metadata falls back to its pool, SLUB retries a failed
	 * slab page at its minimum order), and how many there are depends
	 * on the state of the slab caches.
	 */
	EXPECT_GE(failed, 3);

	for (k = 0; k < sizeof(probes) / sizeof(probes[0]); k++) {
		fill_words(out.map, PG, SENTINEL);
		ASSERT_EQ(copy_page(self->fd, &self->cmd, q, self->so,
				    probes[k]), 0);
		EXPECT_EQ(npu_first_ne(out.map, PG / 4, NEW_WORD), -1);
	}
	ASSERT_EQ(xctx_free(self->fd, ctx, q), 0);
	npu_bo_free(self->fd, &old);
	npu_bo_free(self->fd, &new);
	npu_bo_free(self->fd, &out);
}

/*
 * BO_CREATE and USERPTR map the new BO into the file's default context as
 * their last step. Fail each of the last allocations of the ioctl (where
 * the mapping is made) and the first ones: -ENOMEM (or -ENOSPC from the
 * shmem file of a BO_CREATE), and nothing left.
 */
static void create_sweep(struct __test_metadata *_metadata, int fd, int nth,
			 int userptr, void *mem, uint64_t size)
{
	struct drm_npu_bo_create c;
	struct drm_npu_userptr u;
	unsigned long req = userptr ? DRM_IOCTL_NPU_USERPTR :
				      DRM_IOCTL_NPU_BO_CREATE;
	void *arg = userptr ? (void *)&u : (void *)&c;
	unsigned int n, total, failed = 0, enospc = 0;
	char buf[16];
	int ret, reached;
	uint32_t *handle = userptr ? &u.handle : &c.handle;

	/* how many allocations a successful ioctl makes */
	memset(&c, 0, sizeof(c));
	c.size = size;
	memset(&u, 0, sizeof(u));
	u.addr = (uintptr_t)mem;
	u.size = size;
	ASSERT_EQ(pwrite(nth, "1000000", 7, 0), 7);
	ASSERT_EQ(ioctl(fd, req, arg), 0);
	memset(buf, 0, sizeof(buf));
	ASSERT_GT(pread(nth, buf, sizeof(buf) - 1, 0), 0);
	ASSERT_EQ(pwrite(nth, "0", 1, 0), 1);
	total = 1000000 - atoi(buf);
	ASSERT_EQ(npu_gem_close(fd, *handle), 0);
	ASSERT_GT(total, 0);

	for (n = 1; n <= total + 2; n++) {
		if (n > 16 && n + 24 < total)
			n = total - 24;
		memset(&c, 0, sizeof(c));
		c.size = size;
		memset(&u, 0, sizeof(u));
		u.addr = (uintptr_t)mem;
		u.size = size;
		ret = ioctl_nth(nth, fd, req, arg, n, &reached);
		if (!ret) {
			ASSERT_EQ(npu_gem_close(fd, *handle), 0);
			continue;
		}
		/* shmem_file_setup() says -ENOSPC when its inode is not had */
		if (ret == -ENOSPC && !userptr)
			enospc++;
		else
			ASSERT_EQ(ret, -ENOMEM)
				TH_LOG("allocation %u of %u: failed with %d", n,
				       total, ret);
		ASSERT_TRUE(reached);
		failed++;
	}
	TH_LOG("%s of %llu KiB: %u allocations, %u injected failures: %u -ENOSPC, the others -ENOMEM",
	       userptr ? "USERPTR" : "BO_CREATE",
	       (unsigned long long)size >> 10, total, failed, enospc);
	/*
	 * Some fail the ioctl, the rest are absorbed. How many allocations a
	 * call makes varies from call to call (104 to 180 for one USERPTR on
	 * the debug kernel), so the sweep's last positions may not be reached
	 * and only the first ones are sure to fail it.
	 */
	EXPECT_GE(failed, 1);
}

TEST_F_TIMEOUT(fi, bo_create_fails_at_its_allocations, NPU_BO_HEAVY_TIMEOUT)
{
	NEED_FAULT_INJECTION(self);
	create_sweep(_metadata, self->fd, self->nth, 0, NULL, 4 << 20);
}

TEST_F_TIMEOUT(fi, userptr_fails_at_its_allocations, NPU_BO_HEAVY_TIMEOUT)
{
	size_t size = 4 << 20;
	void *mem;

	NEED_FAULT_INJECTION(self);
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(mem, MAP_FAILED);
	memset(mem, 1, size);
	create_sweep(_metadata, self->fd, self->nth, 1, mem, size);
	munmap(mem, size);
}

/*
 * After the sweeps: the device still runs jobs in the default context, and
 * kmemleak finds nothing unreferenced (objects must be 5 s old to be
 * reported).
 */
TEST_F_TIMEOUT(fi, device_works_and_nothing_leaked, NPU_BO_HEAVY_TIMEOUT)
{
	static char report[4096];
	struct npu_bo a, b;
	uint32_t q;
	int ret;

	NEED_FAULT_INJECTION(self);

	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COPY,
				DRM_NPU_PRIORITY_NORMAL, 0, &q), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 20, 0, &a), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 20, 0, &b), 0);
	npu_emit_fill(&self->cmd, a.va, 0x1234, 1 << 20);
	npu_emit_copy(&self->cmd, a.va, b.va, 1 << 20);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, q, self->so), 0);
	EXPECT_EQ(npu_first_ne(b.map, (1 << 20) / 4, 0x1234), -1);
	npu_bo_free(self->fd, &a);
	npu_bo_free(self->fd, &b);

	if (access(DEBUGFS "/kmemleak", R_OK))
		SKIP(return, "no kmemleak");
	sleep(6);
	ret = write_file(DEBUGFS "/kmemleak", "scan");
	if (ret == -EBUSY || ret == -EPERM)
		SKIP(return, "kmemleak is off (%d)", ret);
	ASSERT_EQ(ret, 0);
	ASSERT_EQ(read_file(DEBUGFS "/kmemleak", report, sizeof(report)), 0);
	EXPECT_EQ(report[0], 0)
		TH_LOG("kmemleak:\n%s", report);
}

TEST_HARNESS_MAIN
