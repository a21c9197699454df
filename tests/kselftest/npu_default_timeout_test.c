// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_default_timeout_test - with npu.ko's default module parameters a
 * job that runs longer than a few seconds (a newcomer's first kernel under
 * the interpreter) completes instead of being killed by the job timeout.
 * npu_modparams.sh runs it after loading the driver without parameters;
 * the other suites run with a short explicit job_timeout_ms.
 */
#include "npu_test.h"
#include "kselftest_harness.h"

/* longer than the 2 s default the driver once had */
#define LONG_JOB_MS	3000ull

TEST(long_job_completes_with_default_timeout)
{
	uint64_t spin_ns = LONG_JOB_MS * 1000000ull, t0, took_ms;
	struct drm_npu_get_fault f;
	struct npu_cmd cmd;
	uint32_t q, so;
	int fd = npu_open();

	if (fd < 0)
		SKIP(return, "no npu device");
	TH_LOG("job timeout %llu ms",
	       (unsigned long long)npu_param(fd,
					     DRM_NPU_PARAM_JOB_TIMEOUT_MS));
	ASSERT_EQ(npu_queue_new(fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, 0, &q), 0);
	ASSERT_EQ(drmSyncobjCreate(fd, 0, &so), 0);
	ASSERT_EQ(npu_cmd_new(fd, &cmd, 4096), 0);
	npu_emit_launch(&cmd, NPU_KERNEL_TEST_SPIN, 1, 1, &spin_ns);
	t0 = npu_now_ns();
	ASSERT_EQ(npu_run_sync(fd, &cmd, q, so), 0);
	took_ms = (npu_now_ns() - t0) / 1000000;
	/* it really ran that long: not a job the device cut short */
	ASSERT_GE(took_ms, LONG_JOB_MS);
	memset(&f, 0, sizeof(f));
	ASSERT_EQ(npu_ioctl(fd, DRM_IOCTL_NPU_GET_FAULT, &f), 0);
	ASSERT_EQ(f.count, 0);
	close(fd);
}

TEST_HARNESS_MAIN
