// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_unbind_test - unbinding the driver from the PCI device while files
 * are open and jobs are in flight: ioctls fail with -ENODEV, fences of lost
 * jobs signal with an error, mappings and close stay safe, CPU mappings of
 * device memory and of a doorbell page give SIGBUS, a USERQ_WAIT_MEM
 * sleeper returns -ENODEV; rebinding brings a working device back. Run
 * last: it unbinds the device.
 */
#include <glob.h>
#include <poll.h>
#include <setjmp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
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

/* 0 if a child touching @p (read, or write if @write) dies of SIGBUS */
static int child_gets_sigbus(volatile uint32_t *p, int write)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (write)
			p[1] = 1;
		else
			(void)p[0];
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS ? 0 : -1;
}

/*
 * A CPU mapping of device memory loses its access to the BAR when the
 * driver is unbound (SIGBUS, also after a rebind), and stays safe to
 * unmap; the rebound device maps device memory again.
 */
TEST(unbind_devmem_mapping)
{
	volatile uint32_t *p;
	struct npu_bo d;
	char addr[64];
	int fd, i;

	fd = npu_open();
	if (fd < 0 || pci_addr(addr, sizeof(addr)))
		SKIP(return, "no npu device bound");
	if (!(npu_param(fd, DRM_NPU_PARAM_FEATURES) &
	      DRM_NPU_FEATURE_DEVMEM_MMAP)) {
		close(fd);
		SKIP(return, "device memory not CPU-mappable");
	}
	ASSERT_EQ(npu_bo_new(fd, 1 << 16, DRM_NPU_BO_DEVMEM, &d), 0);
	ASSERT_NE(d.mmap_offset, 0);
	d.map = mmap(NULL, d.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		     d.mmap_offset);
	ASSERT_NE(d.map, MAP_FAILED);
	p = d.map;
	/* populate the page tables: unbind must take them away */
	for (i = 0; i < (1 << 16) / 4; i++)
		p[i] = i;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	ASSERT_EQ(p[1000], 1000);
	ASSERT_EQ(child_gets_sigbus(p, 0), -1);	/* still mapped */

	ASSERT_EQ(sysfs_write(DRV "/unbind", addr), 0);
	ASSERT_EQ(child_gets_sigbus(p, 0), 0);
	ASSERT_EQ(child_gets_sigbus(p, 1), 0);
	/* no new mapping either */
	ASSERT_EQ(mmap(NULL, d.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       d.mmap_offset), MAP_FAILED);
	ASSERT_EQ(errno, ENODEV);

	ASSERT_EQ(sysfs_write(DRV "/bind", addr), 0);
	/* the old file belongs to the unplugged device */
	ASSERT_EQ(child_gets_sigbus(p, 0), 0);
	ASSERT_EQ(munmap(d.map, d.size), 0);
	close(fd);

	fd = npu_open();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(npu_bo_new(fd, 1 << 16, DRM_NPU_BO_DEVMEM, &d), 0);
	d.map = mmap(NULL, d.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		     d.mmap_offset);
	ASSERT_NE(d.map, MAP_FAILED);
	p = d.map;
	ASSERT_EQ(p[1000], 0);		/* zeroed for the new owner */
	p[1000] = 0x1234;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	ASSERT_EQ(p[1000], 0x1234);
	npu_bo_free(fd, &d);
	close(fd);
}

/*
 * Unbind while files hold every kind of buffer (shmem, userptr read-write
 * and read-only, device memory, a PRIME import in a second file), extra
 * contexts with bindings and a job in flight: the driver frees the device's
 * DMA memory (rings, fence page, page tables) and unmaps the buffers before
 * it is unbound (on the debug kernel DMA_API_DEBUG reports what is left),
 * and the files close cleanly afterwards.
 */
TEST(unbind_with_every_kind_of_buffer)
{
	const size_t usize = 1 << 16;
	struct npu_bo s, u, ur, d;
	uint32_t q, so, ctx, h2;
	struct npu_cmd c;
	struct pollfd pfd;
	char addr[64];
	void *um, *urm;
	int fd, fd2, sfd, dfd;
	uint64_t va = 0;

	fd = npu_open();
	if (fd < 0 || pci_addr(addr, sizeof(addr)))
		SKIP(return, "no npu device bound");
	fd2 = npu_open();
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(npu_queue_new(fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, 0, &q), 0);
	ASSERT_EQ(drmSyncobjCreate(fd, 0, &so), 0);
	ASSERT_EQ(npu_cmd_new(fd, &c, 1 << 16), 0);
	ASSERT_EQ(npu_bo_new(fd, 1 << 20, 0, &s), 0);
	um = mmap(NULL, usize, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	urm = mmap(NULL, usize, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(um, MAP_FAILED);
	ASSERT_NE(urm, MAP_FAILED);
	memset(um, 1, usize);
	memset(urm, 2, usize);
	ASSERT_EQ(npu_userptr(fd, um, usize, 0, &u), 0);
	ASSERT_EQ(npu_userptr(fd, urm, usize, DRM_NPU_USERPTR_READ_ONLY, &ur),
		  0);
	if (npu_param(fd, DRM_NPU_PARAM_DEVMEM_SIZE))
		ASSERT_EQ(npu_bo_new(fd, 1 << 16, DRM_NPU_BO_DEVMEM, &d), 0);
	/* an extra context with its own page tables and bindings */
	ASSERT_EQ(npu_ctx_new(fd, &ctx), 0);
	ASSERT_EQ(npu_bo_map(fd, s.handle, ctx, 0, &va), 0);
	va = 0;
	ASSERT_EQ(npu_bo_map(fd, u.handle, ctx, 0, &va), 0);
	/* the shmem BO shared with a second file of the device */
	ASSERT_EQ(drmPrimeHandleToFD(fd, s.handle, DRM_CLOEXEC, &dfd), 0);
	ASSERT_EQ(drmPrimeFDToHandle(fd2, dfd, &h2), 0);
	/* a job still running at unbind */
	ASSERT_EQ(spin_job(fd, &c, q, 500000000, so), 0);
	ASSERT_EQ(drmSyncobjExportSyncFile(fd, so, &sfd), 0);

	ASSERT_EQ(sysfs_write(DRV "/unbind", addr), 0);

	va = 0;
	ASSERT_EQ(npu_bo_map(fd, ur.handle, ctx, 0, &va), -ENODEV);
	pfd.fd = sfd;
	pfd.events = POLLIN;
	ASSERT_EQ(poll(&pfd, 1, 10000), 1);
	close(sfd);
	/* CPU views of the buffers stay valid */
	ASSERT_EQ(((uint8_t *)um)[100], 1);
	ASSERT_EQ(((uint8_t *)urm)[100], 2);
	((uint8_t *)s.map)[100] = 3;
	ASSERT_EQ(((uint8_t *)s.map)[100], 3);
	close(dfd);
	close(fd2);
	munmap(s.map, s.size);
	munmap(c.bo.map, c.bo.size);
	close(fd);
	munmap(um, usize);
	munmap(urm, usize);

	ASSERT_EQ(sysfs_write(DRV "/bind", addr), 0);
	fd = npu_open();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(npu_queue_new(fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, 0, &q), 0);
	ASSERT_EQ(drmSyncobjCreate(fd, 0, &so), 0);
	ASSERT_EQ(npu_cmd_new(fd, &c, 4096), 0);
	ASSERT_EQ(npu_bo_new(fd, 1 << 16, 0, &s), 0);
	npu_emit_fill(&c, s.va, 0x77777777, 4096);
	ASSERT_EQ(npu_run_sync(fd, &c, q, so), 0);
	ASSERT_EQ(((uint32_t *)s.map)[1023], 0x77777777);
	npu_bo_free(fd, &s);
	close(fd);
}

struct blocked_counters {
	int fd;
	void *rings;		/* on a userfaultfd page */
	int ret;
	int done;
};

static void *counters_thread(void *arg)
{
	struct blocked_counters *b = arg;
	struct drm_npu_counters c = {
		.rings = (uintptr_t)b->rings,
		.ring_count = 1,
	};

	b->ret = ioctl(b->fd, DRM_IOCTL_NPU_COUNTERS, &c) ? -errno : 0;
	__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

struct unbinder {
	const char *addr;
	int ret;
	int done;
};

static void *unbind_thread(void *arg)
{
	struct unbinder *u = arg;

	u->ret = sysfs_write(DRV "/unbind", u->addr);
	__atomic_store_n(&u->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * COUNTERS whose copy to user memory blocks (a userfaultfd page here; FUSE
 * or a slow device elsewhere) must not hold off removal: the unbind
 * finishes while the copy still waits.
 */
TEST(unbind_while_counters_copy_blocks)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct uffdio_zeropage zp = { 0 };
	struct blocked_counters b = { 0 };
	struct unbinder u = { 0 };
	struct uffd_msg msg;
	struct pollfd pfd;
	pthread_t tc, tu;
	char addr[64];
	int uffd, fd, i;
	void *page;

	fd = npu_open();
	if (fd < 0 || pci_addr(addr, sizeof(addr)))
		SKIP(return, "no npu device bound");
	i = npu_uffd_page(&uffd, &page);
	if (i == 1) {
		close(fd);
		SKIP(return, "no userfaultfd (errno %d)", errno);
	}
	ASSERT_EQ(i, 0);

	b.fd = fd;
	b.rings = page;
	ASSERT_EQ(pthread_create(&tc, NULL, counters_thread, &b), 0);
	pfd.fd = uffd;
	pfd.events = POLLIN;
	ASSERT_EQ(poll(&pfd, 1, 30000), 1);
	ASSERT_EQ(read(uffd, &msg, sizeof(msg)), sizeof(msg));
	ASSERT_EQ(msg.event, UFFD_EVENT_PAGEFAULT);

	/* COUNTERS now waits inside its copy: unbind */
	u.addr = addr;
	ASSERT_EQ(pthread_create(&tu, NULL, unbind_thread, &u), 0);
	for (i = 0; i < 1000 && !__atomic_load_n(&u.done, __ATOMIC_ACQUIRE);
	     i++)
		usleep(10000);
	TH_LOG("unbind %s within %d ms; COUNTERS %s", u.done ? "returned" :
	       "did not return", i * 10,
	       __atomic_load_n(&b.done, __ATOMIC_ACQUIRE) ? "had returned" :
	       "still copied");
	EXPECT_EQ(__atomic_load_n(&u.done, __ATOMIC_ACQUIRE), 1)
		TH_LOG("removal waited for a copy to user memory");

	/* supply the page, whatever happened */
	zp.range.start = (uintptr_t)page;
	zp.range.len = pg;
	ASSERT_EQ(ioctl(uffd, UFFDIO_ZEROPAGE, &zp), 0);
	pthread_join(tc, NULL);
	pthread_join(tu, NULL);
	EXPECT_EQ(u.ret, 0);
	/* the counters were read before the unplug: the copy succeeds */
	EXPECT_EQ(b.ret, 0);
	close(fd);
	close(uffd);
	munmap(page, pg);

	ASSERT_EQ(sysfs_write(DRV "/bind", addr), 0);
	fd = npu_open();
	ASSERT_GE(fd, 0);
	ASSERT_GT(npu_param(fd, DRM_NPU_PARAM_NUM_COMPUTE_RINGS), 0);
	close(fd);
}

static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	siglongjmp(bus_jmp, 1);
}

/* 0 if an 8-byte store to @p here raises SIGBUS (a doorbell page is not
 * inherited by a child, so the store cannot be made in one)
 */
static int store_gets_sigbus(volatile uint64_t *p)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	int ret = -1;

	sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(bus_jmp, 1))
		ret = 0;
	else
		*p = 0;
	sigaction(SIGBUS, &old, NULL);
	return ret;
}

/* 0 if an 8-byte load from @p here raises SIGBUS */
static int load_gets_sigbus(volatile uint64_t *p)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	int ret = -1;

	sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(bus_jmp, 1))
		ret = 0;
	else
		(void)*p;
	sigaction(SIGBUS, &old, NULL);
	return ret;
}

struct uq_sleeper {
	pthread_t t;
	int fd;
	uint32_t queue;
	uint64_t addr;
	int ret;
};

static void *uq_sleeper_main(void *arg)
{
	struct uq_sleeper *s = arg;
	struct drm_npu_userq_wait_mem w = {
		.addr = s->addr, .value = 1, .queue_id = s->queue,
		.timeout_ns = npu_abs_timeout(NPU_TIMEOUT_NS),
	};

	s->ret = npu_ioctl(s->fd, DRM_IOCTL_NPU_USERQ_WAIT_MEM, &w);
	return NULL;
}

/*
 * Unbind with a user queue waiting on memory, a sleeper in USERQ_WAIT_MEM
 * and the doorbell and wait pages mapped: the sleeper returns -ENODEV, the
 * doorbell and wait pages are gone (SIGBUS), QUERY answers -ENODEV, close
 * is clean, and the rebound device makes user queues again.
 */
TEST(unbind_user_queues)
{
	struct drm_npu_userq_create c = {
		.kind = DRM_NPU_RING_KIND_COMPUTE,
		.priority = DRM_NPU_PRIORITY_NORMAL,
		.ring_size = 4096,
	};
	struct drm_npu_userq_query q = { 0 };
	struct uq_sleeper sl = { 0 };
	struct npu_bo ring, wb, data;
	volatile uint64_t *db, *ctr;
	volatile uint32_t *armed;
	void *wpage;
	uint32_t *r;
	char addr[64];
	uint64_t end;
	void *page;
	int fd;

	fd = npu_open();
	if (fd < 0 || pci_addr(addr, sizeof(addr)))
		SKIP(return, "no npu device bound");
	if (!(npu_param(fd, DRM_NPU_PARAM_FEATURES) &
	      DRM_NPU_FEATURE_USER_QUEUES)) {
		close(fd);
		SKIP(return, "no user queues");
	}
	ASSERT_EQ(npu_bo_new(fd, 4096, 0, &ring), 0);
	ASSERT_EQ(npu_bo_new(fd, 4096, 0, &wb), 0);
	ASSERT_EQ(npu_bo_new(fd, 4096, 0, &data), 0);
	c.ring_va = ring.va;
	c.wb_va = wb.va;
	ASSERT_EQ(npu_ioctl(fd, DRM_IOCTL_NPU_USERQ_CREATE, &c), 0);
	page = mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, fd, c.mmap_offset);
	ASSERT_NE(page, MAP_FAILED);
	db = (volatile uint64_t *)((char *)page + c.doorbell_offset);
	wpage = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, c.wait_mmap_offset);
	ASSERT_NE(wpage, MAP_FAILED);
	ctr = (volatile uint64_t *)((char *)wpage + c.doorbell_offset);
	EXPECT_EQ(*ctr, 0);
	/* WAIT_MEM64 on a word nobody writes */
	r = ring.map;
	r[0] = NPU_PKT_HDR(NPU_OP_WAIT_MEM64, 0, 6);
	r[1] = 0;
	r[2] = (uint32_t)(data.va + 1024);
	r[3] = (uint32_t)((data.va + 1024) >> 32);
	r[4] = 1;
	r[5] = 0;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*db = 24;

	sl.fd = fd;
	sl.queue = c.queue_id;
	sl.addr = data.va + 2048;
	armed = (volatile uint32_t *)((char *)data.map + 2048 + 16);
	ASSERT_EQ(pthread_create(&sl.t, NULL, uq_sleeper_main, &sl), 0);
	end = npu_now_ns() + NPU_TIMEOUT_NS;
	while (!*armed && npu_now_ns() < end)
		usleep(1000);
	ASSERT_NE(*armed, 0);

	ASSERT_EQ(sysfs_write(DRV "/unbind", addr), 0);
	pthread_join(sl.t, NULL);
	EXPECT_EQ(sl.ret, -ENODEV);
	EXPECT_EQ(store_gets_sigbus(db), 0);
	EXPECT_EQ(load_gets_sigbus(ctr), 0);
	EXPECT_EQ(munmap(wpage, 4096), 0);
	q.queue_id = c.queue_id;
	EXPECT_EQ(npu_ioctl(fd, DRM_IOCTL_NPU_USERQ_QUERY, &q), -ENODEV);
	EXPECT_EQ(munmap(page, 4096), 0);
	npu_bo_free(fd, &ring);
	npu_bo_free(fd, &wb);
	npu_bo_free(fd, &data);
	close(fd);

	ASSERT_EQ(sysfs_write(DRV "/bind", addr), 0);
	fd = npu_open();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(npu_bo_new(fd, 4096, 0, &ring), 0);
	ASSERT_EQ(npu_bo_new(fd, 4096, 0, &wb), 0);
	c.ring_va = ring.va;
	c.wb_va = wb.va;
	c.queue_id = 0;
	EXPECT_EQ(npu_ioctl(fd, DRM_IOCTL_NPU_USERQ_CREATE, &c), 0);
	npu_bo_free(fd, &ring);
	npu_bo_free(fd, &wb);
	close(fd);
}

TEST_HARNESS_MAIN
