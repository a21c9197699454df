// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_fuzz_found_test - deterministic reproducers of what the fuzzers in
 * tests/fuzz/ found, one test per finding.
 *
 * A request that made the kernel loop forever must not hang this test: the
 * ioctl runs in a child and the test waits for its answer with a time
 * limit, so a regression fails here (and the soft-lockup report fails the
 * boot) instead of stalling the whole guest.
 */
#include <poll.h>
#include <sys/wait.h>
#include "npu_test.h"
#include "kselftest_harness.h"

#define ANSWER_MS	20000

FIXTURE(dev) {
	int fd;
	uint32_t q;
	uint64_t va_end;
};

FIXTURE_SETUP(dev)
{
	self->fd = npu_open();
	if (self->fd < 0)
		SKIP(return, "no npu device");
	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, DRM_NPU_RING_ANY,
				&self->q), 0);
	self->va_end = npu_param(self->fd, DRM_NPU_PARAM_VA_START) +
		       npu_param(self->fd, DRM_NPU_PARAM_VA_SIZE);
}

FIXTURE_TEARDOWN(dev)
{
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * SUBMIT one job with its command buffer at [cmd_va, cmd_va + cmd_size) in
 * a child; *err gets the ioctl's result (0 or -errno). Returns false when
 * the child gave no answer within ANSWER_MS (it is left behind).
 */
static bool submit_answers(int fd, uint32_t q, uint64_t cmd_va,
			   uint32_t cmd_size, int *err)
{
	struct pollfd pfd;
	int pipefd[2], st;
	pid_t pid;

	if (pipe(pipefd))
		return false;
	pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0) {
		int ret = npu_submit_one(fd, q, cmd_va, cmd_size, 0);

		if (write(pipefd[1], &ret, sizeof(ret)) != sizeof(ret))
			_exit(1);
		_exit(0);
	}
	close(pipefd[1]);
	pfd.fd = pipefd[0];
	pfd.events = POLLIN;
	if (poll(&pfd, 1, ANSWER_MS) != 1 ||
	    read(pipefd[0], err, sizeof(*err)) != sizeof(*err)) {
		close(pipefd[0]);
		return false;
	}
	close(pipefd[0]);
	waitpid(pid, &st, 0);
	return true;
}

/*
 * npu_fuzz --seed 1202 --ops 300 on 6.12: a job whose command buffer lies
 * at or beyond the end of the VA space (cmd_va 0xffff800000000000) made
 * SUBMIT spin in npu_ctx_find_va() for ever: drm_mm's range walk never
 * ends when the range starts past the end of the managed space (soft
 * lockup, ctx->lock held). Every such buffer is "not inside one BO".
 */
TEST_F(dev, submit_cmd_beyond_va_space)
{
	const struct { uint64_t va; uint32_t size; } cases[] = {
		{ 0xffff800000000000ull, 4 },
		{ 1ull << 63, 64 },
		{ self->va_end, 4 },
		{ self->va_end - 4, 8 },
		{ self->va_end + 4096, 4096 },
		{ ~0ull - 4095, 4096 },
	};
	unsigned int i;
	int err;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		TH_LOG("cmd_va %#llx size %u",
		       (unsigned long long)cases[i].va, cases[i].size);
		ASSERT_TRUE(submit_answers(self->fd, self->q, cases[i].va,
					   cases[i].size, &err));
		ASSERT_EQ(err, -EINVAL);
	}
}

TEST_HARNESS_MAIN
