// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_unbind_test - unbinding the driver from the PCI device while files
 * are open and jobs are in flight: ioctls fail with -ENODEV, fences of lost
 * jobs signal with an error, mappings and close stay safe; rebinding brings
 * a working device back. Run last: it unbinds the device.
 */
#include <glob.h>
#include <poll.h>
#include "npu_test.h"
#include "kselftest_harness.h"

#define DRV "/sys/bus/pci/drivers/npu"

static int pci_addr(char *buf, size_t len)
{
	glob_t g;
	int ret = -1;

	if (glob(DRV "/0000:*", 0, NULL, &g))
		return -1;
	if (g.gl_pathc) {
		snprintf(buf, len, "%s", strrchr(g.gl_pathv[0], '/') + 1);
		ret = 0;
	}
	globfree(&g);
	return ret;
}

static int sysfs_write(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), ret;

	if (fd < 0)
		return -errno;
	ret = write(fd, val, strlen(val)) < 0 ? -errno : 0;
	close(fd);
	return ret;
}

static int spin_job(int fd, struct npu_cmd *c, uint32_t q, uint64_t ns,
		    uint32_t so)
{
	uint64_t args[1] = { ns };
	uint64_t va;
	uint32_t size;

	npu_emit_launch(c, NPU_KERNEL_TEST_SPIN, 1, 1, args);
	npu_cmd_end(c, &va, &size);
	return npu_submit_one(fd, q, va, size, so);
}

TEST(unbind_idle_rebind)
{
	char addr[64];
	int fd;

	fd = npu_open();
	if (fd < 0 || pci_addr(addr, sizeof(addr)))
		SKIP(return, "no npu device bound");
	close(fd);
	ASSERT_EQ(sysfs_write(DRV "/unbind", addr), 0);
	ASSERT_LT(npu_open(), 0);
	ASSERT_EQ(sysfs_write(DRV "/bind", addr), 0);
	fd = npu_open();
	ASSERT_GE(fd, 0);
	ASSERT_GT(npu_param(fd, DRM_NPU_PARAM_NUM_COMPUTE_RINGS), 0);
	close(fd);
}

TEST(unbind_with_jobs_in_flight)
{
	struct drm_npu_get_param p = { .param = DRM_NPU_PARAM_CLOCK };
	struct npu_cmd c;
	struct npu_bo b;
	struct pollfd pfd;
	uint32_t q, so, so2;
	char addr[64];
	int fd, sfd, sfd2, i;

	fd = npu_open();
	if (fd < 0 || pci_addr(addr, sizeof(addr)))
		SKIP(return, "no npu device bound");
	ASSERT_EQ(npu_queue_new(fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, 0, &q), 0);
	ASSERT_EQ(drmSyncobjCreate(fd, 0, &so), 0);
	ASSERT_EQ(drmSyncobjCreate(fd, 0, &so2), 0);
	ASSERT_EQ(npu_cmd_new(fd, &c, 1 << 16), 0);
	ASSERT_EQ(npu_bo_new(fd, 1 << 16, 0, &b), 0);
	memset(b.map, 0x33, 1 << 16);
	ASSERT_EQ(spin_job(fd, &c, q, 500000000, so), 0);
	for (i = 0; i < 5; i++)
		ASSERT_EQ(spin_job(fd, &c, q, 1000000, so2), 0);
	ASSERT_EQ(drmSyncobjExportSyncFile(fd, so, &sfd), 0);
	ASSERT_EQ(drmSyncobjExportSyncFile(fd, so2, &sfd2), 0);

	ASSERT_EQ(sysfs_write(DRV "/unbind", addr), 0);

	/* every ioctl now fails, the file stays usable for close/munmap */
	ASSERT_EQ(npu_ioctl(fd, DRM_IOCTL_NPU_GET_PARAM, &p), -ENODEV);
	ASSERT_EQ(spin_job(fd, &c, q, 1000, 0), -ENODEV);
	ASSERT_EQ(((uint8_t *)b.map)[1000], 0x33);
	/* the lost jobs' fences signal (with an error) */
	pfd.fd = sfd;
	pfd.events = POLLIN;
	ASSERT_EQ(poll(&pfd, 1, 10000), 1);
	pfd.fd = sfd2;
	ASSERT_EQ(poll(&pfd, 1, 10000), 1);
	close(sfd);
	close(sfd2);
	npu_bo_free(fd, &b);
	munmap(c.bo.map, c.bo.size);
	close(fd);

	ASSERT_EQ(sysfs_write(DRV "/bind", addr), 0);
	fd = npu_open();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(npu_queue_new(fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, 0, &q), 0);
	ASSERT_EQ(drmSyncobjCreate(fd, 0, &so), 0);
	ASSERT_EQ(npu_cmd_new(fd, &c, 4096), 0);
	ASSERT_EQ(spin_job(fd, &c, q, 1000, so), 0);
	ASSERT_EQ(npu_syncobj_wait(fd, so, NPU_TIMEOUT_NS), 0);
	ASSERT_EQ(npu_syncobj_error(fd, so), 0);
	close(fd);
}

TEST_HARNESS_MAIN
