// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_devmem_test - CPU mappings of device-memory BOs through the
 * device-memory BAR (DRM_NPU_FEATURE_DEVMEM_MMAP): data written by the CPU
 * reaches the device and back, new BOs read zero, mmap() argument checks,
 * lifetime of a mapping after the handle or the file is closed, and that
 * memory still mapped is never handed to another BO.
 */
#include <glob.h>
#include <sys/wait.h>
#include "npu_test.h"
#include "kselftest_harness.h"

FIXTURE(devmem) {
	int fd;
	uint32_t cq;		/* copy ring 0 */
	uint32_t so;
	struct npu_cmd cmd;
};

FIXTURE_SETUP(devmem)
{
	self->fd = npu_open();
	if (self->fd < 0)
		SKIP(return, "no npu device");
	if (!(npu_param(self->fd, DRM_NPU_PARAM_FEATURES) &
	      DRM_NPU_FEATURE_DEVMEM_MMAP))
		SKIP(return, "device memory not CPU-mappable");
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COPY,
				DRM_NPU_PRIORITY_NORMAL, 0, &self->cq), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &self->so), 0);
	ASSERT_EQ(npu_cmd_new(self->fd, &self->cmd, 1 << 16), 0);
}

FIXTURE_TEARDOWN(devmem)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* A device-memory BO and its CPU mapping (bo.map). */
static int devmem_new(int fd, uint64_t size, struct npu_bo *bo)
{
	int ret = npu_bo_new(fd, size, DRM_NPU_BO_DEVMEM, bo);

	if (ret)
		return ret;
	if (!bo->mmap_offset)
		return -ENXIO;
	bo->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       bo->mmap_offset);
	if (bo->map == MAP_FAILED) {
		bo->map = NULL;
		return -errno;
	}
	return 0;
}

/* mmap() returning 0 (and unmapping again) or -errno */
static int try_mmap(int fd, uint64_t size, int flags, uint64_t offset)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, flags, fd, offset);

	if (p == MAP_FAILED)
		return -errno;
	munmap(p, size);
	return 0;
}

static uint32_t pattern(uint32_t seed, uint32_t i)
{
	return (i + seed) * 2654435761u ^ seed;
}

/* Writes through the write-combined mapping must reach memory first. */
static void wc_flush(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Size of the device-memory BAR (BAR2) from sysfs, 0 if unknown. */
static uint64_t devmem_bar_size(void)
{
	unsigned long long start, end, flags;
	uint64_t size = 0;
	char line[256];
	glob_t g;
	FILE *f;
	int i;

	if (glob("/sys/bus/pci/drivers/npu/0000:*/resource", 0, NULL, &g))
		return 0;
	f = g.gl_pathc ? fopen(g.gl_pathv[0], "r") : NULL;
	globfree(&g);
	if (!f)
		return 0;
	for (i = 0; i <= 2 && fgets(line, sizeof(line), f); i++) {
		if (i == 2 &&
		    sscanf(line, "%llx %llx %llx", &start, &end, &flags) == 3 &&
		    end > start)
			size = end - start + 1;
	}
	fclose(f);
	return size;
}

/*
 * New BOs are cleared through the BAR, so the driver hands out no device
 * memory beyond it: DEVMEM_SIZE never exceeds the BAR, and a BO larger
 * than DEVMEM_SIZE is refused.
 */
TEST_F(devmem, size_limited_to_bar)
{
	uint64_t size = npu_param(self->fd, DRM_NPU_PARAM_DEVMEM_SIZE);
	uint64_t bar = devmem_bar_size();
	struct npu_bo a;

	ASSERT_GT(bar, 0);
	ASSERT_GT(size, 0);
	ASSERT_LE(size, bar);
	ASSERT_EQ(npu_bo_new(self->fd, size + 4096, DRM_NPU_BO_DEVMEM, &a),
		  -EINVAL);
}

TEST_F(devmem, offsets)
{
	struct drm_npu_bo_info info = { 0 };
	struct npu_bo a, b;

	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, DRM_NPU_BO_DEVMEM, &a), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, DRM_NPU_BO_DEVMEM, &b), 0);
	ASSERT_NE(a.mmap_offset, 0);
	ASSERT_NE(b.mmap_offset, 0);
	ASSERT_NE(a.mmap_offset, b.mmap_offset);
	ASSERT_EQ(a.mmap_offset % 4096, 0);
	info.handle = a.handle;
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_INFO, &info), 0);
	ASSERT_EQ(info.flags, DRM_NPU_BO_DEVMEM);
	ASSERT_EQ(info.mmap_offset, a.mmap_offset);
	npu_bo_free(self->fd, &a);
	npu_bo_free(self->fd, &b);
}

TEST_F(devmem, cpu_write_device_copy)
{
	const uint32_t n = (1 << 20) / 4;
	struct npu_bo d, out;
	uint32_t *pd, *po, i;

	ASSERT_EQ(devmem_new(self->fd, 1 << 20, &d), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 20, 0, &out), 0);
	pd = d.map;
	po = out.map;
	for (i = 0; i < n; i++)
		pd[i] = pattern(1, i);
	wc_flush();
	npu_emit_copy(&self->cmd, d.va, out.va, 1 << 20);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->cq, self->so), 0);
	for (i = 0; i < n; i++)
		ASSERT_EQ(po[i], pattern(1, i));
	npu_bo_free(self->fd, &d);
	npu_bo_free(self->fd, &out);
}

TEST_F(devmem, device_write_cpu_read)
{
	const uint32_t n = (1 << 18) / 4;
	struct npu_bo d, src;
	uint32_t *pd, *ps, i;

	ASSERT_EQ(devmem_new(self->fd, 1 << 18, &d), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, 0, &src), 0);
	ps = src.map;
	for (i = 0; i < (1 << 16) / 4; i++)
		ps[i] = pattern(2, i);
	/* fill [8 KiB, 24 KiB), copy 64 KiB from system memory to 128 KiB */
	npu_emit_fill(&self->cmd, d.va + 8192, 0xa5a5a5a5, 16384);
	npu_emit_copy(&self->cmd, src.va, d.va + (1 << 17), 1 << 16);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->cq, self->so), 0);
	pd = d.map;
	for (i = 0; i < n; i++) {
		uint32_t want = 0;

		if (i >= 2048 && i < 6144)
			want = 0xa5a5a5a5;
		else if (i >= (1 << 15) && i < (1 << 15) + (1 << 14))
			want = pattern(2, i - (1 << 15));
		ASSERT_EQ(pd[i], want);
	}
	/* and once more after the CPU read it: nothing stale is cached */
	npu_emit_fill(&self->cmd, d.va, 0x5a5a5a5a, 1 << 18);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->cq, self->so), 0);
	for (i = 0; i < n; i++)
		ASSERT_EQ(pd[i], 0x5a5a5a5a);
	npu_bo_free(self->fd, &d);
	npu_bo_free(self->fd, &src);
}

TEST_F(devmem, new_bo_reads_zero)
{
	const uint32_t n = (1 << 20) / 4;
	struct npu_bo d;
	uint32_t *p, i;
	int round;

	for (round = 0; round < 3; round++) {
		ASSERT_EQ(devmem_new(self->fd, 1 << 20, &d), 0);
		p = d.map;
		for (i = 0; i < n; i++)
			ASSERT_EQ(p[i], 0);
		/* leave something behind for the next round */
		for (i = 0; i < n; i++)
			p[i] = 0xdeadbeef;
		wc_flush();
		npu_bo_free(self->fd, &d);
	}
}

TEST_F(devmem, mmap_bad_args)
{
	struct npu_bo d;

	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, DRM_NPU_BO_DEVMEM, &d), 0);
	ASSERT_EQ(try_mmap(self->fd, 1 << 16, MAP_SHARED, d.mmap_offset), 0);
	/* longer than the BO */
	ASSERT_EQ(try_mmap(self->fd, (1 << 16) + 4096, MAP_SHARED,
			   d.mmap_offset), -EINVAL);
	/* starting inside the BO */
	ASSERT_EQ(try_mmap(self->fd, 4096, MAP_SHARED, d.mmap_offset + 4096),
		  -EINVAL);
	/* a private (copy-on-write) mapping of device memory */
	ASSERT_EQ(try_mmap(self->fd, 1 << 16, MAP_PRIVATE, d.mmap_offset),
		  -EINVAL);
	npu_bo_free(self->fd, &d);
}

TEST_F(devmem, mmap_closed_bo)
{
	struct npu_bo a, b;
	void *p;

	/* closed and freed: the offset is gone */
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, DRM_NPU_BO_DEVMEM, &a), 0);
	ASSERT_EQ(npu_gem_close(self->fd, a.handle), 0);
	ASSERT_EQ(try_mmap(self->fd, 1 << 16, MAP_SHARED, a.mmap_offset),
		  -EINVAL);

	/* closed but kept alive by a mapping: the file lost its access */
	ASSERT_EQ(devmem_new(self->fd, 1 << 16, &b), 0);
	p = b.map;
	ASSERT_EQ(npu_gem_close(self->fd, b.handle), 0);
	ASSERT_EQ(try_mmap(self->fd, 1 << 16, MAP_SHARED, b.mmap_offset),
		  -EACCES);
	ASSERT_EQ(munmap(p, 1 << 16), 0);
	ASSERT_EQ(try_mmap(self->fd, 1 << 16, MAP_SHARED, b.mmap_offset),
		  -EINVAL);
}

TEST_F(devmem, mmap_other_file)
{
	struct npu_bo d;
	int fd2 = npu_open();

	ASSERT_GE(fd2, 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 16, DRM_NPU_BO_DEVMEM, &d), 0);
	ASSERT_EQ(try_mmap(fd2, 1 << 16, MAP_SHARED, d.mmap_offset), -EACCES);
	close(fd2);
	npu_bo_free(self->fd, &d);
}

TEST_F(devmem, two_bos_distinct)
{
	const uint32_t n = (1 << 16) / 4;
	struct npu_bo a, b, out;
	uint32_t *pa, *pb, *po, i;

	ASSERT_EQ(devmem_new(self->fd, 1 << 16, &a), 0);
	ASSERT_EQ(devmem_new(self->fd, 1 << 16, &b), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 1 << 17, 0, &out), 0);
	pa = a.map;
	pb = b.map;
	for (i = 0; i < n; i++)
		pa[i] = pattern(3, i);
	for (i = 0; i < n; i++)
		pb[i] = pattern(4, i);
	wc_flush();
	for (i = 0; i < n; i++) {
		ASSERT_EQ(pa[i], pattern(3, i));
		ASSERT_EQ(pb[i], pattern(4, i));
	}
	npu_emit_copy(&self->cmd, a.va, out.va, 1 << 16);
	npu_emit_copy(&self->cmd, b.va, out.va + (1 << 16), 1 << 16);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->cq, self->so), 0);
	po = out.map;
	for (i = 0; i < n; i++) {
		ASSERT_EQ(po[i], pattern(3, i));
		ASSERT_EQ(po[n + i], pattern(4, i));
	}
	npu_bo_free(self->fd, &a);
	npu_bo_free(self->fd, &b);
	npu_bo_free(self->fd, &out);
}

/*
 * A mapping holds the BO: after GEM_CLOSE it still reads and writes the
 * same memory, and that memory is not given to any new BO (each of which
 * is zeroed at creation and then filled by the device) until munmap().
 */
TEST_F(devmem, mapping_outlives_handle)
{
	const uint64_t sz = 1 << 20;
	const uint32_t n = sz / 4;
	uint64_t total = npu_param(self->fd, DRM_NPU_PARAM_DEVMEM_SIZE);
	struct npu_bo a, *fill;
	uint32_t *p, i, count = 0, max = total / sz;
	void *map;
	int ret;

	fill = calloc(max, sizeof(*fill));
	ASSERT_NE(fill, NULL);
	ASSERT_EQ(devmem_new(self->fd, sz, &a), 0);
	p = a.map;
	for (i = 0; i < n; i++)
		p[i] = pattern(5, i);
	wc_flush();
	ASSERT_EQ(npu_gem_close(self->fd, a.handle), 0);
	for (i = 0; i < n; i++)
		ASSERT_EQ(p[i], pattern(5, i));
	p[7] = 7;
	wc_flush();
	ASSERT_EQ(p[7], 7);
	p[7] = pattern(5, 7);

	/* take all the rest of device memory and overwrite it */
	while (count < max) {
		ret = npu_bo_new(self->fd, sz, DRM_NPU_BO_DEVMEM, &fill[count]);
		if (ret == -ENOMEM)
			break;
		ASSERT_EQ(ret, 0);
		npu_emit_fill(&self->cmd, fill[count].va, 0xffffffff, sz);
		count++;
		if (count % 32 == 0 || count == max)
			ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->cq,
					       self->so), 0);
	}
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->cq, self->so), 0);
	ASSERT_LT(count, max);	/* the mapped 1 MiB was not available */
	for (i = 0; i < n; i++)
		ASSERT_EQ(p[i], pattern(5, i));

	/* munmap() frees it: now one more BO fits, and it reads zero */
	map = a.map;
	ASSERT_EQ(munmap(map, sz), 0);
	ASSERT_EQ(devmem_new(self->fd, sz, &a), 0);
	p = a.map;
	for (i = 0; i < n; i++)
		ASSERT_EQ(p[i], 0);
	npu_bo_free(self->fd, &a);
	for (i = 0; i < count; i++)
		npu_bo_free(self->fd, &fill[i]);
	free(fill);
}

/* The mapping holds the file too: it works after close(fd). */
TEST_F(devmem, mapping_outlives_file)
{
	struct npu_bo d;
	uint32_t *p, i;
	int fd = npu_open();

	ASSERT_GE(fd, 0);
	ASSERT_EQ(devmem_new(fd, 1 << 16, &d), 0);
	close(fd);
	p = d.map;
	for (i = 0; i < (1 << 16) / 4; i++)
		p[i] = pattern(6, i);
	wc_flush();
	for (i = 0; i < (1 << 16) / 4; i++)
		ASSERT_EQ(p[i], pattern(6, i));
	ASSERT_EQ(munmap(d.map, 1 << 16), 0);
}

/* Splitting the VMA keeps every page at its place in the BO. */
TEST_F(devmem, partial_munmap)
{
	struct npu_bo d, out;
	uint32_t *p, *po, i;
	uint8_t *m;

	ASSERT_EQ(devmem_new(self->fd, 4 * 4096, &d), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4 * 4096, 0, &out), 0);
	m = d.map;
	ASSERT_EQ(munmap(m, 2 * 4096), 0);
	ASSERT_EQ(munmap(m + 3 * 4096, 4096), 0);
	p = (uint32_t *)(m + 2 * 4096);
	for (i = 0; i < 1024; i++)
		p[i] = pattern(7, i);
	wc_flush();
	npu_emit_copy(&self->cmd, d.va, out.va, 4 * 4096);
	ASSERT_EQ(npu_run_sync(self->fd, &self->cmd, self->cq, self->so), 0);
	po = out.map;
	for (i = 0; i < 4096; i++)
		ASSERT_EQ(po[i], (i >= 2048 && i < 3072) ?
				 pattern(7, i - 2048) : 0);
	ASSERT_EQ(munmap(p, 4096), 0);
	d.map = NULL;
	npu_bo_free(self->fd, &d);
	npu_bo_free(self->fd, &out);
}

/* A forked child shares the mapping (MAP_SHARED device memory). */
TEST_F(devmem, fork_shares_mapping)
{
	struct npu_bo d;
	volatile uint32_t *p;
	int status;
	pid_t pid;

	ASSERT_EQ(devmem_new(self->fd, 1 << 16, &d), 0);
	p = d.map;
	p[100] = 1;
	wc_flush();
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int ok = p[100] == 1;

		p[101] = 2;
		wc_flush();
		_exit(ok ? 0 : 1);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
	ASSERT_EQ(p[101], 2);
	npu_bo_free(self->fd, &d);
}

TEST_HARNESS_MAIN
