// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_limits_test - what one unprivileged user can take from everyone:
 * contexts (a device-wide 16-bit id space) are bounded per user by the
 * max_user_contexts module parameter (-EDQUOT), and pinned system-memory
 * BOs are charged to the user against RLIMIT_MEMLOCK (-ENOMEM).
 *
 * Runs as root, opens the device node to everyone for the time of a test
 * and does the work in children that drop to unprivileged users (nobody,
 * 65534, and 65533), which keep what they made open while the parent
 * checks what another user can still do.
 */
#include <grp.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "npu_test.h"
#include "kselftest_harness.h"

#define USER_A		65534
#define USER_B		65533
#define PARAM		"/sys/module/npu/parameters/max_user_contexts"
#define TEST_LIMIT	100	/* contexts per user while a test runs */
/* what user A tries without a limit: 64 files with all their contexts */
#define A_FILES		64

/* The device node npu_open() would open, in @path. */
static int npu_node(char *path, size_t n)
{
	int i, fd;

	for (i = 0; i < 16; i++) {
		snprintf(path, n, "/dev/accel/accel%d", i);
		fd = npu_try_open(path);
		if (fd >= 0)
			goto found;
	}
	for (i = 128; i < 192; i++) {
		snprintf(path, n, "/dev/dri/renderD%d", i);
		fd = npu_try_open(path);
		if (fd >= 0)
			goto found;
	}
	return -1;
found:
	close(fd);
	return 0;
}

static int drop_to(uid_t uid)
{
	if (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
	    setresuid(uid, uid, uid))
		return -errno;
	return 0;
}

/* The parameter's value, or -1 if the driver has none. */
static long read_param(void)
{
	FILE *f = fopen(PARAM, "r");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static int write_param(long v)
{
	FILE *f = fopen(PARAM, "w");
	int ok;

	if (!f)
		return -errno;
	ok = fprintf(f, "%ld\n", v) > 0;
	return fclose(f) || !ok ? -EIO : 0;
}

static int wait_child(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* What user A's child reports: how far it got and what stopped it. */
struct a_report {
	int contexts;		/* default + extra contexts it holds */
	int stop_err;		/* errno of the failed open/CTX_CREATE, 0: none */
	int reopen_err;		/* errno of one more open() after that */
};

/*
 * As user A: open files and fill them with extra contexts until something
 * fails or A_FILES files are full; report on @wfd, then hold everything
 * until the parent closes @rfd's other end.
 */
static void user_a(const char *node, int wfd, int rfd)
{
	struct a_report r = { 0 };
	uint32_t id;
	char c;
	int f, fd, i, ret;

	if (drop_to(USER_A))
		_exit(10);
	for (f = 0; f < A_FILES && !r.stop_err; f++) {
		fd = open(node, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			r.stop_err = errno;
			break;
		}
		r.contexts++;
		for (i = 0; i < 64; i++) {
			ret = npu_ctx_new(fd, &id);
			if (ret == -ENOSPC)	/* the file's own limit */
				break;
			if (ret) {
				r.stop_err = -ret;
				break;
			}
			r.contexts++;
		}
	}
	fd = open(node, O_RDWR | O_CLOEXEC);
	r.reopen_err = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	if (write(wfd, &r, sizeof(r)) != sizeof(r))
		_exit(11);
	if (read(rfd, &c, 1) < 0)
		_exit(12);
	_exit(0);
}

/* As @uid: one file with @extra extra contexts. 0 or the failing step. */
static int user_opens(const char *node, uid_t uid, int extra)
{
	uint32_t id;
	int fd, i, ret;

	if (drop_to(uid))
		return 20;
	fd = open(node, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "# uid %u: open: %s\n", uid, strerror(errno));
		return 21;
	}
	for (i = 0; i < extra; i++) {
		ret = npu_ctx_new(fd, &id);
		if (ret) {
			fprintf(stderr, "# uid %u: context %d: %s\n", uid,
				i + 1, strerror(-ret));
			return 22;
		}
	}
	close(fd);
	return 0;
}

static pid_t fork_user_opens(const char *node, uid_t uid, int extra)
{
	pid_t pid = fork();

	if (!pid)
		_exit(user_opens(node, uid, extra));
	return pid;
}

FIXTURE(limits) {
	char node[64];
	mode_t mode;
	long param;	/* saved max_user_contexts, -1: none */
};

FIXTURE_SETUP(limits)
{
	struct rlimit nofile = { 8192, 8192 };
	struct stat sb;

	self->param = -1;
	if (npu_node(self->node, sizeof(self->node)))
		SKIP(return, "no npu device");
	if (getuid() != 0)
		SKIP(return, "needs root to switch users");
	ASSERT_EQ(stat(self->node, &sb), 0);
	self->mode = sb.st_mode & 07777;
	ASSERT_EQ(chmod(self->node, 0666), 0);
	/* inherited by the children: descriptors are not what is limited */
	ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &nofile), 0);
	self->param = read_param();
	if (self->param >= 0)
		ASSERT_EQ(write_param(TEST_LIMIT), 0);
}

FIXTURE_TEARDOWN(limits)
{
	if (self->param >= 0)
		write_param(self->param);
	if (self->node[0])
		chmod(self->node, self->mode);
}

/*
 * User A takes every context it may; user B can still open the device and
 * create contexts, and A gets them back once its files are closed.
 */
TEST_F(limits, one_user_cannot_take_every_context)
{
	struct a_report r;
	int to_a[2], from_a[2];
	pid_t a;

	if (self->param < 0)
		TH_LOG("no max_user_contexts parameter");
	ASSERT_EQ(pipe(to_a), 0);
	ASSERT_EQ(pipe(from_a), 0);
	a = fork();
	ASSERT_GE(a, 0);
	if (!a) {
		close(to_a[1]);
		close(from_a[0]);
		user_a(self->node, from_a[1], to_a[0]);
	}
	close(to_a[0]);
	close(from_a[1]);
	ASSERT_EQ(read(from_a[0], &r, sizeof(r)), sizeof(r));
	TH_LOG("user %d: %d contexts, then %s; one more open(): %s", USER_A,
	       r.contexts, r.stop_err ? strerror(r.stop_err) : "no error",
	       r.reopen_err ? strerror(r.reopen_err) : "succeeds");
	EXPECT_EQ(r.stop_err, EDQUOT);
	EXPECT_EQ(r.contexts, TEST_LIMIT);
	EXPECT_EQ(r.reopen_err, EDQUOT);

	/* A holds all its contexts: B is not affected */
	EXPECT_EQ(wait_child(fork_user_opens(self->node, USER_B, 64)), 0);
	/* nor is root */
	EXPECT_EQ(wait_child(fork_user_opens(self->node, 0, 64)), 0);

	close(to_a[1]);
	ASSERT_EQ(wait_child(a), 0);
	close(from_a[0]);
	/* A's contexts were given back with its files */
	EXPECT_EQ(wait_child(fork_user_opens(self->node, USER_A, 64)), 0);
}

/* Raising the parameter lets the user have more at once. */
TEST_F(limits, limit_follows_the_parameter)
{
	ASSERT_GE(self->param, 0);
	ASSERT_EQ(write_param(1), 0);
	/* the default context is the one allowed */
	EXPECT_EQ(wait_child(fork_user_opens(self->node, USER_A, 0)), 0);
	EXPECT_EQ(wait_child(fork_user_opens(self->node, USER_A, 1)), 22);
	ASSERT_EQ(write_param(2), 0);
	EXPECT_EQ(wait_child(fork_user_opens(self->node, USER_A, 1)), 0);
	EXPECT_EQ(wait_child(fork_user_opens(self->node, USER_A, 2)), 22);
}

static int bo_create(int fd, uint64_t size, uint32_t *handle)
{
	struct drm_npu_bo_create c = { .size = size };
	int ret = npu_ioctl(fd, DRM_IOCTL_NPU_BO_CREATE, &c);

	*handle = c.handle;
	return ret;
}

#define MEMLOCK		(1u << 20)

/*
 * As user A with RLIMIT_MEMLOCK = 1 MiB: pinned system-memory BOs up to the
 * limit, not beyond, in this process or another one of the same user;
 * freeing gives the charge back. Device memory is not charged.
 */
static int shmem_pins(const char *node)
{
	struct rlimit lim = { MEMLOCK, MEMLOCK };
	uint32_t h1, h2, h3, h;
	int fd, ret, st;
	pid_t pid;

	if (setrlimit(RLIMIT_MEMLOCK, &lim) || drop_to(USER_A))
		return 30;
	fd = open(node, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 31;
	if (bo_create(fd, MEMLOCK / 2, &h1) || bo_create(fd, MEMLOCK / 2, &h2))
		return 32;
	ret = bo_create(fd, 4096, &h3);
	fprintf(stderr, "# 1 MiB pinned, RLIMIT_MEMLOCK 1 MiB: one page more: %s\n",
		ret ? strerror(-ret) : "created");
	if (ret != -ENOMEM)
		return 33;
	/* another process of the same user shares the charge */
	pid = fork();
	if (!pid) {
		int fd2 = open(node, O_RDWR | O_CLOEXEC);

		if (fd2 < 0)
			_exit(1);
		_exit(bo_create(fd2, 4096, &h) == -ENOMEM ? 0 : 2);
	}
	st = wait_child(pid);
	if (st) {
		fprintf(stderr, "# second process of the user: %d\n", st);
		return 34;
	}
	/* the BO is freed with its handle: its pages are uncharged */
	if (npu_gem_close(fd, h1))
		return 35;
	ret = bo_create(fd, MEMLOCK / 2, &h3);
	if (ret) {
		fprintf(stderr, "# after a free: %s\n", strerror(-ret));
		return 36;
	}
	if (npu_param(fd, DRM_NPU_PARAM_DEVMEM_SIZE) >= 4096) {
		struct drm_npu_bo_create c = {
			.size = 4096, .flags = DRM_NPU_BO_DEVMEM,
		};

		if (npu_ioctl(fd, DRM_IOCTL_NPU_BO_CREATE, &c))
			return 37;
	}
	close(fd);
	return 0;
}

TEST_F(limits, shmem_pins_are_bounded_by_memlock)
{
	pid_t pid = fork();

	ASSERT_GE(pid, 0);
	if (!pid)
		_exit(shmem_pins(self->node));
	ASSERT_EQ(wait_child(pid), 0);
	/* the user's charge went with its files: a new process starts afresh */
	pid = fork();
	if (!pid)
		_exit(shmem_pins(self->node));
	ASSERT_EQ(wait_child(pid), 0);
}

TEST_HARNESS_MAIN
