// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_userq_test - user-mode queues (DRM_IOCTL_NPU_USERQ_CREATE, _DESTROY,
 * _QUERY and the doorbell page): argument checks, the caller's own memory
 * only, pinned mappings, packets written into the ring and a doorbell store
 * with no system call, a privileged packet that stops one queue, the
 * doorbell page of another file or process, the per-file and per-user
 * limits, close with work in flight, and 10,000 queues with memory flat;
 * USERQ_WAIT_MEM (memory signals and rptr, timeouts, halts and destroys
 * ending a wait) and the progress watchdog stopping a hung queue while
 * another process's queue runs on; the wait page's read-only CPU mapping.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "npu_test.h"

#define RING_SIZE	4096u
#define PARAM_USER	"/sys/module/npu/parameters/max_user_userqs"
#define PARAM_FILE	"/sys/module/npu/parameters/userq_max"

_Static_assert(sizeof(struct drm_npu_userq_create) == 72, "create");
_Static_assert(sizeof(struct drm_npu_userq_destroy) == 8, "destroy");
_Static_assert(sizeof(struct drm_npu_userq_query) == 72, "query");
_Static_assert(sizeof(struct drm_npu_userq_wait_mem) == 40, "wait_mem");
_Static_assert(sizeof(struct drm_npu_userq_signal) == 32, "signal");
_Static_assert(sizeof(struct drm_npu_userq_wait) == 32, "wait");

/* A queue's memory: ring, write-back block and a data page, one BO each. */
struct uq {
	struct npu_bo ring, wb, data;
	struct drm_npu_userq_create c;
	volatile uint64_t *db;		/* the queue's doorbell */
	void *db_page;
	uint64_t wptr;
};

static int uq_create_args(int fd, struct drm_npu_userq_create *c)
{
	return npu_ioctl(fd, DRM_IOCTL_NPU_USERQ_CREATE, c);
}

static int uq_destroy(int fd, uint32_t id)
{
	struct drm_npu_userq_destroy d = { .queue_id = id };

	return npu_ioctl(fd, DRM_IOCTL_NPU_USERQ_DESTROY, &d);
}

/* Commands and bytes summed over the user-queue engines (COUNTERS). */
static int uq_engine_totals(int fd, uint64_t *cmds, uint64_t *bytes)
{
	struct drm_npu_ring_counters e[32];
	struct drm_npu_counters c;
	uint32_t i;

	memset(&c, 0, sizeof(c));
	c.uq_engines = (uintptr_t)e;
	c.uq_engine_count = 32;
	if (ioctl(fd, DRM_IOCTL_NPU_COUNTERS, &c))
		return -errno;
	*cmds = *bytes = 0;
	for (i = 0; i < c.uq_engine_count && i < 32; i++) {
		*cmds += e[i].commands;
		*bytes += e[i].bytes;
	}
	return (int)c.uq_engine_count;
}

static int uq_query(int fd, uint32_t id, struct drm_npu_userq_query *q)
{
	memset(q, 0, sizeof(*q));
	q->queue_id = id;
	return npu_ioctl(fd, DRM_IOCTL_NPU_USERQ_QUERY, q);
}

/* After a failed wait: what the queue's descriptor and write-back say. */
#define UQ_LOG(fd, u) do {						\
	struct drm_npu_userq_query q_;					\
	volatile struct npu_uq_wb *wb_ = (u)->wb.map;			\
									\
	if (uq_query(fd, (u)->c.queue_id, &q_))				\
		TH_LOG("USERQ_QUERY failed: %s", strerror(errno));	\
	else								\
		TH_LOG("queue %u: status %#x error %u rptr %llu wptr %llu "\
		       "cmds %llu (write-back: rptr %llu status %#x); "	\
		       "the test's wptr %llu", q_.queue_id, q_.status,	\
		       q_.error, (unsigned long long)q_.rptr,		\
		       (unsigned long long)q_.wptr,			\
		       (unsigned long long)q_.cmds,			\
		       (unsigned long long)wb_->rptr, wb_->status,	\
		       (unsigned long long)(u)->wptr);			\
} while (0)

/* BOs of a queue, and the queue on them (kind compute, priority normal). */
static int uq_new(int fd, struct uq *u, uint32_t kind)
{
	int ret;

	memset(u, 0, sizeof(*u));
	ret = npu_bo_new(fd, RING_SIZE, 0, &u->ring);
	if (!ret)
		ret = npu_bo_new(fd, 4096, 0, &u->wb);
	if (!ret)
		ret = npu_bo_new(fd, 4096, 0, &u->data);
	if (ret)
		return ret;
	u->c.kind = kind;
	u->c.priority = DRM_NPU_PRIORITY_NORMAL;
	u->c.ring_va = u->ring.va;
	u->c.ring_size = RING_SIZE;
	u->c.wb_va = u->wb.va;
	return uq_create_args(fd, &u->c);
}

static int uq_map_doorbell(int fd, struct uq *u)
{
	u->db_page = mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, fd,
			  u->c.mmap_offset);
	if (u->db_page == MAP_FAILED) {
		u->db_page = NULL;
		return -errno;
	}
	u->db = (volatile uint64_t *)((char *)u->db_page +
				      u->c.doorbell_offset);
	return 0;
}

static void uq_free(int fd, struct uq *u)
{
	if (u->db_page)
		munmap(u->db_page, 4096);
	if (u->c.queue_id)
		uq_destroy(fd, u->c.queue_id);
	npu_bo_free(fd, &u->ring);
	npu_bo_free(fd, &u->wb);
	npu_bo_free(fd, &u->data);
}

static void uq_dw(struct uq *u, uint32_t v)
{
	uint32_t *ring = u->ring.map;

	ring[(u->wptr & (RING_SIZE - 1)) / 4] = v;
	u->wptr += 4;
}

static void uq_q(struct uq *u, uint64_t v)
{
	uq_dw(u, (uint32_t)v);
	uq_dw(u, (uint32_t)(v >> 32));
}

static void uq_fill(struct uq *u, uint64_t dst, uint32_t value, uint64_t n)
{
	uq_dw(u, NPU_PKT_HDR(NPU_OP_FILL, 0, 6));
	uq_dw(u, value);
	uq_q(u, dst);
	uq_q(u, n);
}

static void uq_signal(struct uq *u, uint64_t addr, uint64_t value)
{
	uq_dw(u, NPU_PKT_HDR(NPU_OP_SIGNAL, 0, 6));
	uq_dw(u, 0);
	uq_q(u, addr);
	uq_q(u, value);
}

static void uq_wait_mem(struct uq *u, uint64_t addr, uint64_t value)
{
	uq_dw(u, NPU_PKT_HDR(NPU_OP_WAIT_MEM64, 0, 6));
	uq_dw(u, 0);
	uq_q(u, addr);
	uq_q(u, value);
}

/* Publish the packets: release fence, then one 8-byte doorbell store. */
static void uq_ring(struct uq *u)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*u->db = u->wptr;
}

/* Poll the write-back block (no system call) until rptr reaches wptr. */
static int uq_poll(struct uq *u, uint64_t timeout_ns)
{
	volatile struct npu_uq_wb *wb = u->wb.map;
	uint64_t end = npu_now_ns() + timeout_ns;

	while (wb->rptr < u->wptr) {
		if (wb->status & NPU_UQ_STS_HALTED)
			return -EIO;
		if (npu_now_ns() > end)
			return -ETIME;
		sched_yield();
	}
	return 0;
}

/* Poll the kernel's view until @bits are all set in the status. */
static int uq_query_until(int fd, uint32_t id, uint32_t bits,
			  struct drm_npu_userq_query *q)
{
	uint64_t end = npu_now_ns() + NPU_TIMEOUT_NS;
	int ret;

	for (;;) {
		ret = uq_query(fd, id, q);
		if (ret || (q->status & bits) == bits)
			return ret;
		if (npu_now_ns() > end)
			return -ETIME;
		usleep(1000);
	}
}

static long read_param(const char *path)
{
	char buf[32] = "";
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return buf[0] ? strtol(buf, NULL, 10) : -1;
}

static int write_param(const char *path, long v)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -errno;
	ret = fprintf(f, "%ld\n", v) < 0 ? -EIO : 0;
	if (fclose(f))
		ret = -errno;
	return ret;
}

/* Unreclaimable slab, KiB (/proc/meminfo SUnreclaim). */
static long slab_kib(void)
{
	char line[128];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SUnreclaim: %ld kB", &v) == 1)
			break;
	fclose(f);
	return v;
}

FIXTURE(userq) {
	int fd;
	long user_max;	/* saved max_user_userqs */
};

FIXTURE_SETUP(userq)
{
	self->user_max = read_param(PARAM_USER);
	self->fd = npu_open();
	if (self->fd < 0)
		SKIP(return, "no npu device");
	if (!(npu_param(self->fd, DRM_NPU_PARAM_FEATURES) &
	      DRM_NPU_FEATURE_USER_QUEUES))
		SKIP(return, "no user queues");
}

FIXTURE_TEARDOWN(userq)
{
	if (self->user_max >= 0)
		write_param(PARAM_USER, self->user_max);
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(userq, params)
{
	uint64_t eng = npu_param(self->fd, DRM_NPU_PARAM_USERQ_ENGINES);

	EXPECT_EQ(npu_param(self->fd, DRM_NPU_PARAM_USERQ_MAX),
		  (uint64_t)read_param(PARAM_FILE));
	EXPECT_EQ(npu_param(self->fd, DRM_NPU_PARAM_USERQ_RING_MAX),
		  16u << 20);
	EXPECT_NE(eng & 0xff, 0);
	EXPECT_NE((eng >> 8) & 0xff, 0);
}

TEST_F(userq, bad_arguments)
{
	struct uq u;
	struct drm_npu_userq_create c;
	struct drm_npu_userq_query q;
	static const uint32_t bad_sizes[] = {
		0, 2048, 3 * 4096, 32u << 20, 0x80000000u,
	};
	unsigned int i;

	ASSERT_EQ(uq_new(self->fd, &u, DRM_NPU_RING_KIND_COMPUTE), 0);
	c = u.c;
	c.queue_id = 0;

#define BAD(field, v, err) do {						\
		struct drm_npu_userq_create b = c;			\
		b.field = (v);						\
		EXPECT_EQ(uq_create_args(self->fd, &b), err) {		\
			TH_LOG(#field " = %#llx", (unsigned long long)(v)); \
		}							\
	} while (0)
	BAD(flags, 1, -EINVAL);
	BAD(queue_id, 5, -EINVAL);
	BAD(kind, 2, -EINVAL);
	BAD(priority, 3, -EINVAL);
	for (i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++)
		BAD(ring_size, bad_sizes[i], -EINVAL);
	BAD(ring_va, c.ring_va + 64, -EINVAL);
	BAD(wb_va, c.wb_va + 8, -EINVAL);
	BAD(ctx_id, 77, -ENOENT);
	/* a ring larger than its BO, an address nothing is mapped at */
	BAD(ring_size, 8192, -ENOENT);
	BAD(ring_va, 1ull << 38, -ENOENT);
	BAD(wb_va, (1ull << 38) + 64, -ENOENT);
	BAD(ring_va, 0, -ENOENT);
#undef BAD

	struct drm_npu_userq_destroy d = { .queue_id = u.c.queue_id, .pad = 1 };

	EXPECT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_USERQ_DESTROY, &d),
		  -EINVAL);
	EXPECT_EQ(uq_destroy(self->fd, 12345), -ENOENT);
	EXPECT_EQ(uq_query(self->fd, 12345, &q), -ENOENT);

	/* a kernel queue's id is not a user queue's, and the reverse */
	uint32_t kq;

	ASSERT_EQ(npu_queue_new(self->fd, DRM_NPU_RING_KIND_COMPUTE,
				DRM_NPU_PRIORITY_NORMAL, DRM_NPU_RING_ANY,
				&kq), 0);
	EXPECT_NE(kq, u.c.queue_id);
	EXPECT_EQ(uq_destroy(self->fd, kq), -ENOENT);
	EXPECT_EQ(uq_query(self->fd, kq, &q), -ENOENT);
	EXPECT_EQ(npu_queue_free(self->fd, u.c.queue_id), -ENOENT);
	EXPECT_EQ(npu_queue_free(self->fd, kq), 0);

	/* the new queue is mapped and idle */
	ASSERT_EQ(uq_query(self->fd, u.c.queue_id, &q), 0);
	EXPECT_EQ(q.status & (DRM_NPU_USERQ_MAPPED | DRM_NPU_USERQ_IDLE |
			      DRM_NPU_USERQ_HALTED),
		  DRM_NPU_USERQ_MAPPED | DRM_NPU_USERQ_IDLE);
	EXPECT_EQ(q.rptr, 0);
	EXPECT_EQ(q.wptr, 0);
	EXPECT_EQ(uq_destroy(self->fd, u.c.queue_id), 0);
	EXPECT_EQ(uq_destroy(self->fd, u.c.queue_id), -ENOENT);
	u.c.queue_id = 0;
	uq_free(self->fd, &u);
}

/* Another file's BOs are not in this file's context: -ENOENT. */
TEST_F(userq, foreign_memory_refused)
{
	struct npu_bo pad[4], ring, wb;
	struct drm_npu_userq_create c = {
		.kind = DRM_NPU_RING_KIND_COMPUTE,
		.priority = DRM_NPU_PRIORITY_NORMAL,
		.ring_size = RING_SIZE,
	};
	int other = npu_open();
	int i;

	ASSERT_GE(other, 0);
	/* the other file's ring lies past every VA this file uses */
	for (i = 0; i < 4; i++)
		ASSERT_EQ(npu_bo_new(other, 1 << 20, 0, &pad[i]), 0);
	ASSERT_EQ(npu_bo_new(other, RING_SIZE, 0, &ring), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &wb), 0);
	ASSERT_GT(ring.va, wb.va + 4096);
	c.ring_va = ring.va;
	c.wb_va = wb.va;
	EXPECT_EQ(uq_create_args(self->fd, &c), -ENOENT);
	/* and the other file's write-back block */
	c.ring_va = wb.va;
	c.wb_va = ring.va;
	EXPECT_EQ(uq_create_args(self->fd, &c), -ENOENT);
	for (i = 0; i < 4; i++)
		npu_bo_free(other, &pad[i]);
	npu_bo_free(other, &ring);
	npu_bo_free(self->fd, &wb);
	close(other);
}

/*
 * A write-back block the device may not write is refused (-EACCES); a
 * read-only ring is fine: the device only reads it.
 */
TEST_F(userq, read_only_memory)
{
	struct npu_bo ro, wb, prot;
	struct drm_npu_userq_create c = {
		.kind = DRM_NPU_RING_KIND_COMPUTE,
		.priority = DRM_NPU_PRIORITY_NORMAL,
		.ring_size = RING_SIZE,
	};
	struct drm_npu_bo_protect p = {
		.flags = DRM_NPU_BO_PROTECT_READ_ONLY, .size = 4096,
	};
	void *mem = aligned_alloc(4096, 4 * 4096);

	ASSERT_NE(mem, NULL);
	memset(mem, 0, 4 * 4096);
	ASSERT_EQ(npu_userptr(self->fd, mem, 4 * 4096,
			      DRM_NPU_USERPTR_READ_ONLY, &ro), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &wb), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 2 * 4096, 0, &prot), 0);
	p.handle = prot.handle;
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_BO_PROTECT, &p), 0);

	c.ring_va = wb.va;
	c.wb_va = ro.va;
	EXPECT_EQ(uq_create_args(self->fd, &c), -EACCES);
	c.wb_va = prot.va;		/* BO_PROTECTed page */
	EXPECT_EQ(uq_create_args(self->fd, &c), -EACCES);
	c.wb_va = prot.va + 4096;	/* the page after it is writable */
	EXPECT_EQ(uq_create_args(self->fd, &c), 0);
	EXPECT_EQ(uq_destroy(self->fd, c.queue_id), 0);

	c.queue_id = 0;
	c.ring_va = ro.va;
	c.wb_va = wb.va;
	EXPECT_EQ(uq_create_args(self->fd, &c), 0);
	EXPECT_EQ(uq_destroy(self->fd, c.queue_id), 0);
	npu_bo_free(self->fd, &ro);
	npu_bo_free(self->fd, &wb);
	npu_bo_free(self->fd, &prot);
	free(mem);
}

/*
 * Packets written into the ring run after one doorbell store; the result
 * is seen in memory and in the write-back block with no system call.
 */
TEST_F(userq, packets_and_doorbell_without_ioctl)
{
	struct drm_npu_userq_query q;
	volatile uint64_t *sig;
	volatile uint32_t *data;
	uint64_t ec0, eb0, ec1, eb1;
	struct uq u;
	int round, i;

	ASSERT_EQ(uq_new(self->fd, &u, DRM_NPU_RING_KIND_COMPUTE), 0);
	ASSERT_EQ(uq_map_doorbell(self->fd, &u), 0);
	data = u.data.map;
	sig = (volatile uint64_t *)((char *)u.data.map + 2048);
	ASSERT_GT(uq_engine_totals(self->fd, &ec0, &eb0), 0);

	/* 3 rounds of 40 packets wrap the 4 KiB ring */
	for (round = 1; round <= 3; round++) {
		for (i = 0; i < 40; i++)
			uq_fill(&u, u.data.va + 4 * i, round * 1000 + i, 4);
		uq_signal(&u, u.data.va + 2048, round);
		uq_ring(&u);
		ASSERT_EQ(uq_poll(&u, NPU_TIMEOUT_NS), 0);
		EXPECT_EQ(sig[0], (uint64_t)round);
		for (i = 0; i < 40; i++)
			EXPECT_EQ(data[i], (uint32_t)(round * 1000 + i));
	}
	ASSERT_EQ(uq_query(self->fd, u.c.queue_id, &q), 0);
	EXPECT_EQ(q.rptr, u.wptr);
	EXPECT_EQ(q.wptr, u.wptr);
	EXPECT_EQ(q.cmds, 3 * 41);
	/* 120 four-byte fills and 3 signals; fills have no operations */
	EXPECT_GE(q.bytes, 3 * 40 * 4);
	EXPECT_LE(q.bytes, 3 * 40 * 4 + 3 * 32);
	EXPECT_EQ(q.ops, 0);
	/* the engines that ran them count the same (no other queue runs) */
	ASSERT_GT(uq_engine_totals(self->fd, &ec1, &eb1), 0);
	EXPECT_EQ(ec1 - ec0, q.cmds);
	EXPECT_EQ(eb1 - eb0, q.bytes);

	/* user space built before ops (64-byte query) and before uq_engines
	 * (56-byte counters) still works, and gets no more than it knows */
	struct drm_npu_counters oc;
	uint8_t old[72];
	uint64_t ob;

	memset(old, 0xa5, sizeof(old));
	memset(old, 0, 64);
	memcpy(old, &u.c.queue_id, 4);
	ASSERT_EQ(ioctl(self->fd, DRM_IOWR(DRM_COMMAND_BASE +
					   DRM_NPU_USERQ_QUERY, char[64]),
			old), 0);
	memcpy(&ob, old + 56, 8);
	EXPECT_EQ(ob, q.bytes);
	EXPECT_EQ(old[64], 0xa5);
	memset(&oc, 0, sizeof(oc));
	oc.uq_engine_count = 7;
	ASSERT_EQ(ioctl(self->fd, DRM_IOWR(DRM_COMMAND_BASE +
					   DRM_NPU_COUNTERS, char[56]),
			&oc), 0);
	EXPECT_EQ(oc.uq_engine_count, 7);
	/* the full struct without an array: count ignored, kept
	 * (ring_count and cu_count came back as the device's) */
	oc.ring_count = 0;
	oc.cu_count = 0;
	ASSERT_EQ(ioctl(self->fd, DRM_IOCTL_NPU_COUNTERS, &oc), 0);
	EXPECT_EQ(oc.uq_engine_count, 7);
	EXPECT_EQ(q.error, 0);
	EXPECT_TRUE(q.status & DRM_NPU_USERQ_IDLE);

	/* a copy queue of the same file: its doorbell is in the same page */
	struct uq cq;

	ASSERT_EQ(uq_new(self->fd, &cq, DRM_NPU_RING_KIND_COPY), 0);
	EXPECT_EQ(cq.c.mmap_offset, u.c.mmap_offset);
	EXPECT_NE(cq.c.doorbell_offset, u.c.doorbell_offset);
	ASSERT_EQ(uq_map_doorbell(self->fd, &cq), 0);
	uq_fill(&cq, cq.data.va, 0xabcd, 64);
	uq_ring(&cq);
	ASSERT_EQ(uq_poll(&cq, NPU_TIMEOUT_NS), 0);
	EXPECT_EQ(((volatile uint32_t *)cq.data.map)[15], 0xabcd);
	uq_free(self->fd, &cq);
	uq_free(self->fd, &u);
}

/* A privileged packet halts its queue alone; QUERY reports it. */
TEST_F(userq, privileged_packet_stops_that_queue)
{
	struct drm_npu_userq_query q;
	struct uq bad, good;

	ASSERT_EQ(uq_new(self->fd, &bad, DRM_NPU_RING_KIND_COMPUTE), 0);
	ASSERT_EQ(uq_new(self->fd, &good, DRM_NPU_RING_KIND_COMPUTE), 0);
	ASSERT_EQ(uq_map_doorbell(self->fd, &bad), 0);
	ASSERT_EQ(uq_map_doorbell(self->fd, &good), 0);

	uq_fill(&bad, bad.data.va, 1, 4);
	uq_dw(&bad, NPU_PKT_HDR(NPU_OP_RING_CTRL, 0, 1));
	uq_fill(&bad, bad.data.va + 4, 2, 4);
	uq_ring(&bad);
	ASSERT_EQ(uq_query_until(self->fd, bad.c.queue_id,
				 DRM_NPU_USERQ_HALTED, &q), 0);
	EXPECT_EQ(q.error, NPU_ERR_PRIVILEGED);
	EXPECT_EQ(q.rptr, 24);		/* at the failing packet */
	EXPECT_EQ(((volatile uint32_t *)bad.data.map)[0], 1);
	EXPECT_EQ(((volatile uint32_t *)bad.data.map)[1], 0);
	/* the device writes the descriptor before the write-back block */
	EXPECT_EQ(uq_poll(&bad, NPU_TIMEOUT_NS), -EIO);
	EXPECT_EQ(((volatile struct npu_uq_wb *)bad.wb.map)->error,
		  NPU_ERR_PRIVILEGED);

	uq_fill(&good, good.data.va, 7, 4);
	uq_ring(&good);
	ASSERT_EQ(uq_poll(&good, NPU_TIMEOUT_NS), 0);
	EXPECT_EQ(((volatile uint32_t *)good.data.map)[0], 7);
	uq_free(self->fd, &bad);
	uq_free(self->fd, &good);
}

/*
 * The doorbell page: write-only, one page, only on the file that created
 * the queue, not inherited by a fork()ed child, not reachable by another
 * process's file.
 */
TEST_F(userq, doorbell_page_is_the_owners_alone)
{
	struct uq u;
	void *p;
	pid_t pid;
	int st, other;

	ASSERT_EQ(uq_new(self->fd, &u, DRM_NPU_RING_KIND_COMPUTE), 0);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd, u.c.mmap_offset);
	EXPECT_EQ(p, MAP_FAILED);
	p = mmap(NULL, 4096, PROT_WRITE | PROT_EXEC, MAP_SHARED, self->fd,
		 u.c.mmap_offset);
	EXPECT_EQ(p, MAP_FAILED);
	p = mmap(NULL, 8192, PROT_WRITE, MAP_SHARED, self->fd,
		 u.c.mmap_offset);
	EXPECT_EQ(p, MAP_FAILED);

	/* another file, even of the same process */
	other = npu_open();
	ASSERT_GE(other, 0);
	p = mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, other, u.c.mmap_offset);
	EXPECT_EQ(p, MAP_FAILED);
	EXPECT_EQ(errno, EACCES);
	close(other);

	/* another process with its own file */
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int fd = npu_open();

		close(self->fd);
		if (fd < 0)
			_exit(2);
		p = mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, fd,
			 u.c.mmap_offset);
		_exit(p == MAP_FAILED ? 0 : 1);
	}
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	/* the owner's mapping is not inherited: a store faults in the child */
	ASSERT_EQ(uq_map_doorbell(self->fd, &u), 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		*u.db = 0;
		_exit(0);
	}
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);

	/* and the owner's store works */
	uq_fill(&u, u.data.va, 5, 4);
	uq_ring(&u);
	ASSERT_EQ(uq_poll(&u, NPU_TIMEOUT_NS), 0);
	uq_free(self->fd, &u);
}

/* Ring and write-back mappings are pinned; CTX_DESTROY takes the queues. */
TEST_F(userq, mappings_pinned_and_context_destroy)
{
	struct drm_npu_userq_create c = {
		.kind = DRM_NPU_RING_KIND_COMPUTE,
		.priority = DRM_NPU_PRIORITY_NORMAL,
		.ring_size = RING_SIZE,
	};
	struct drm_npu_userq_query q;
	struct npu_bo ring, wb;
	uint64_t rva = 0, wva = 0;
	uint32_t ctx;

	ASSERT_EQ(npu_ctx_new(self->fd, &ctx), 0);
	ASSERT_EQ(npu_bo_new(self->fd, RING_SIZE, 0, &ring), 0);
	ASSERT_EQ(npu_bo_new(self->fd, 4096, 0, &wb), 0);
	ASSERT_EQ(npu_bo_map(self->fd, ring.handle, ctx, 0, &rva), 0);
	ASSERT_EQ(npu_bo_map(self->fd, wb.handle, ctx, 0, &wva), 0);
	c.ctx_id = ctx;
	c.ring_va = rva;
	c.wb_va = wva;
	ASSERT_EQ(uq_create_args(self->fd, &c), 0);
	EXPECT_EQ(npu_bo_unmap(self->fd, ctx, rva), -EBUSY);
	EXPECT_EQ(npu_bo_unmap(self->fd, ctx, wva), -EBUSY);
	ASSERT_EQ(uq_destroy(self->fd, c.queue_id), 0);
	EXPECT_EQ(npu_bo_unmap(self->fd, ctx, rva), 0);

	/* a queue in the context goes with it */
	rva = 0;
	ASSERT_EQ(npu_bo_map(self->fd, ring.handle, ctx, 0, &rva), 0);
	c.ring_va = rva;
	c.queue_id = 0;
	ASSERT_EQ(uq_create_args(self->fd, &c), 0);
	ASSERT_EQ(npu_ctx_free(self->fd, ctx), 0);
	EXPECT_EQ(uq_query(self->fd, c.queue_id, &q), -ENOENT);
	EXPECT_EQ(uq_destroy(self->fd, c.queue_id), -ENOENT);
	npu_bo_free(self->fd, &ring);
	npu_bo_free(self->fd, &wb);
}

/* USERQ_MAX queues per file (-ENOSPC), max_user_userqs per user (-EDQUOT) */
TEST_F(userq, limits)
{
	uint32_t max = npu_param(self->fd, DRM_NPU_PARAM_USERQ_MAX);
	long saved = self->user_max;
	struct drm_npu_userq_create c;
	struct uq u;
	uint32_t i;
	int other;

	ASSERT_GT(max, 0);
	ASSERT_GE(saved, 0);
	ASSERT_EQ(uq_new(self->fd, &u, DRM_NPU_RING_KIND_COMPUTE), 0);
	/* the rest share the first one's memory */
	for (i = 1; i < max; i++) {
		c = u.c;
		c.queue_id = 0;
		ASSERT_EQ(uq_create_args(self->fd, &c), 0);
	}
	c = u.c;
	c.queue_id = 0;
	EXPECT_EQ(uq_create_args(self->fd, &c), -ENOSPC);
	/* CPU mappings hold the file open: release it with its queues */
	npu_bo_free(self->fd, &u.ring);
	npu_bo_free(self->fd, &u.wb);
	npu_bo_free(self->fd, &u.data);
	close(self->fd);

	/* per user: across files */
	self->fd = npu_open();
	ASSERT_GE(self->fd, 0);
	other = npu_open();
	ASSERT_GE(other, 0);
	ASSERT_EQ(write_param(PARAM_USER, 3), 0);
	ASSERT_EQ(uq_new(self->fd, &u, DRM_NPU_RING_KIND_COMPUTE), 0);
	c = u.c;
	c.queue_id = 0;
	EXPECT_EQ(uq_create_args(self->fd, &c), 0);
	struct uq v;

	EXPECT_EQ(uq_new(other, &v, DRM_NPU_RING_KIND_COPY), 0);
	c = u.c;
	c.queue_id = 0;
	EXPECT_EQ(uq_create_args(self->fd, &c), -EDQUOT);
	/* a destroyed queue is given back */
	EXPECT_EQ(uq_destroy(other, v.c.queue_id), 0);
	v.c.queue_id = 0;
	EXPECT_EQ(uq_create_args(self->fd, &c), 0);
	c.queue_id = 0;
	EXPECT_EQ(uq_create_args(self->fd, &c), -EDQUOT);
	/* and so are a closed file's */
	npu_bo_free(self->fd, &u.ring);
	npu_bo_free(self->fd, &u.wb);
	npu_bo_free(self->fd, &u.data);
	close(self->fd);
	self->fd = npu_open();
	ASSERT_GE(self->fd, 0);
	EXPECT_EQ(uq_new(self->fd, &u, DRM_NPU_RING_KIND_COMPUTE), 0);
	EXPECT_EQ(write_param(PARAM_USER, saved), 0);
	npu_bo_free(other, &v.ring);
	npu_bo_free(other, &v.wb);
	npu_bo_free(other, &v.data);
	close(other);
}

/*
 * Close with work in flight: a queue waiting on memory that never comes,
 * a queue with a full ring of fills queued, and a queue running a kernel
 * that never ends, are stopped, not waited for; a new file works. (CPU mappings hold the file open: they go
 * first, so that close() releases it.)
 */
TEST_F(userq, close_with_work_in_flight)
{
	struct drm_npu_userq_query q;
	struct uq w, busy, hang, again;
	int i, round;

	for (round = 0; round < 3; round++) {
		ASSERT_EQ(uq_new(self->fd, &hang, DRM_NPU_RING_KIND_COMPUTE), 0);
		ASSERT_EQ(uq_map_doorbell(self->fd, &hang), 0);
		uq_dw(&hang, NPU_PKT_HDR(NPU_OP_LAUNCH, 0, 6));
		uq_dw(&hang, NPU_KERNEL_TEST_HANG);
		uq_dw(&hang, 1);
		uq_dw(&hang, 1);
		uq_dw(&hang, 1);
		uq_dw(&hang, 0);
		uq_ring(&hang);
		ASSERT_EQ(uq_query_until(self->fd, hang.c.queue_id,
					 DRM_NPU_USERQ_RUNNING, &q), 0);
		munmap(hang.db_page, 4096);
		munmap(hang.ring.map, RING_SIZE);
		munmap(hang.wb.map, 4096);
		munmap(hang.data.map, 4096);
		ASSERT_EQ(uq_new(self->fd, &w, DRM_NPU_RING_KIND_COMPUTE), 0);
		ASSERT_EQ(uq_new(self->fd, &busy, DRM_NPU_RING_KIND_COPY), 0);
		ASSERT_EQ(uq_map_doorbell(self->fd, &w), 0);
		ASSERT_EQ(uq_map_doorbell(self->fd, &busy), 0);
		uq_wait_mem(&w, w.data.va, 1);
		uq_fill(&w, w.data.va + 8, 1, 4);
		uq_ring(&w);
		for (i = 0; i < 4096 / 24 - 1; i++)
			uq_fill(&busy, busy.data.va, i, 4096);
		uq_ring(&busy);
		munmap(w.db_page, 4096);
		munmap(busy.db_page, 4096);
		munmap(w.ring.map, RING_SIZE);
		munmap(w.wb.map, 4096);
		munmap(w.data.map, 4096);
		munmap(busy.ring.map, RING_SIZE);
		munmap(busy.wb.map, 4096);
		munmap(busy.data.map, 4096);
		/* returns: a wait for the hung kernel would never end */
		close(self->fd);
		self->fd = npu_open();
		ASSERT_GE(self->fd, 0);
	}
	ASSERT_EQ(uq_new(self->fd, &again, DRM_NPU_RING_KIND_COMPUTE), 0);
	ASSERT_EQ(uq_map_doorbell(self->fd, &again), 0);
	uq_fill(&again, again.data.va, 3, 4);
	uq_ring(&again);
	ASSERT_EQ(uq_poll(&again, NPU_TIMEOUT_NS), 0);
	uq_free(self->fd, &again);
}

/* 10,000 queues created and destroyed: memory and accounting stay flat. */
TEST_F(userq, ten_thousand_queues_memory_flat)
{
	struct drm_npu_userq_create c;
	long before, after;
	struct uq u;
	int i;

	ASSERT_EQ(uq_new(self->fd, &u, DRM_NPU_RING_KIND_COMPUTE), 0);
	/* warm up the caches the ioctls allocate from */
	for (i = 0; i < 500; i++) {
		c = u.c;
		c.queue_id = 0;
		ASSERT_EQ(uq_create_args(self->fd, &c), 0);
		ASSERT_EQ(uq_destroy(self->fd, c.queue_id), 0);
	}
	before = slab_kib();
	for (i = 0; i < 10000; i++) {
		c = u.c;
		c.queue_id = 0;
		ASSERT_EQ(uq_create_args(self->fd, &c), 0);
		ASSERT_EQ(uq_destroy(self->fd, c.queue_id), 0);
	}
	after = slab_kib();
	TH_LOG("unreclaimable slab %ld -> %ld KiB", before, after);
	/* a leak of one small object per queue would be >= 300 KiB */
	EXPECT_LT(after - before, 256);
	uq_free(self->fd, &u);
}

/* Interrupts of the user-queue event vector so far (/proc/interrupts). */
static long uq_irqs(void)
{
	char line[512];
	long total = -1;
	FILE *f = fopen("/proc/interrupts", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p;
		long n;

		if (!strstr(line, "npu-userq"))
			continue;
		p = strchr(line, ':');
		if (!p)
			break;
		total = 0;
		for (p++;;) {
			char *end;

			n = strtol(p, &end, 10);
			if (end == p)
				break;
			total += n;
			p = end;
		}
		break;
	}
	fclose(f);
	return total;
}

static int wait_mem(int fd, uint32_t ctx, uint32_t queue, uint32_t flags,
		    uint64_t addr, uint64_t value, uint64_t timeout_ns)
{
	struct drm_npu_userq_wait_mem w = {
		.addr = addr, .value = value, .ctx_id = ctx,
		.queue_id = queue, .flags = flags,
		.timeout_ns = npu_abs_timeout(timeout_ns),
	};

	return npu_ioctl(fd, DRM_IOCTL_NPU_USERQ_WAIT_MEM, &w);
}

/* A thread that waits until *armed is non-zero, then sets *gate. */
struct releaser {
	pthread_t t;
	volatile uint32_t *armed;	/* NULL: sleep 200 ms instead */
	uint32_t sleepers;		/* wait for this many (0: any) */
	volatile uint64_t *gate;
	int fd;
	uint32_t destroy;		/* queue to destroy instead */
	int ok;
};

static void *releaser_main(void *arg)
{
	struct releaser *r = arg;
	uint64_t end = npu_now_ns() + NPU_TIMEOUT_NS;

	if (r->armed) {
		while (r->sleepers ? *r->armed < r->sleepers : !*r->armed) {
			if (npu_now_ns() > end)
				return NULL;
			usleep(1000);
		}
	} else {
		usleep(200 * 1000);
	}
	if (r->destroy)
		r->ok = uq_destroy(r->fd, r->destroy) == 0;
	else
		r->ok = 1;
	if (r->gate)
		*r->gate = 1;
	return NULL;
}

/* Signals: value at +0, armed at +16; the gate word at +1024. */
#define SIG_OFF		2048
#define GATE_OFF	1024

TEST_F(userq, wait_mem_bad_arguments)
{
	struct drm_npu_userq_wait_mem w = { 0 };
	struct npu_bo ro;
	struct uq u;
	void *mem = aligned_alloc(4096, 4096);
	uint64_t sig;

	ASSERT_EQ(uq_new(self->fd, &u, DRM_NPU_RING_KIND_COMPUTE), 0);
	sig = u.data.va + SIG_OFF;
	w.addr = sig;
	w.pad = 1;
	EXPECT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_USERQ_WAIT_MEM, &w),
		  -EINVAL);
	EXPECT_EQ(wait_mem(self->fd, 0, 0, 2, sig, 1, 0), -EINVAL);
	EXPECT_EQ(wait_mem(self->fd, 0, 0, 0, sig + 16, 1, 0), -EINVAL);
	EXPECT_EQ(wait_mem(self->fd, 0, 0, 0, 0, 1, 0), -EINVAL);
	EXPECT_EQ(wait_mem(self->fd, 0, u.c.queue_id, DRM_NPU_WAIT_MEM_RPTR,
			   sig, 1, 0), -EINVAL);
	EXPECT_EQ(wait_mem(self->fd, 0, 0, DRM_NPU_WAIT_MEM_RPTR, 0, 1, 0),
		  -EINVAL);
	EXPECT_EQ(wait_mem(self->fd, 9, 0, 0, sig, 1, 0), -ENOENT);
	EXPECT_EQ(wait_mem(self->fd, 0, 999, 0, sig, 1, 0), -ENOENT);
	EXPECT_EQ(wait_mem(self->fd, 0, 0, 0, 1ull << 38, 1, 0), -ENOENT);
	ASSERT_NE(mem, NULL);
	memset(mem, 0, 4096);
	ASSERT_EQ(npu_userptr(self->fd, mem, 4096, DRM_NPU_USERPTR_READ_ONLY,
			      &ro), 0);
	EXPECT_EQ(wait_mem(self->fd, 0, 0, 0, ro.va, 1, 0), -EACCES);
	/* a value already there: at once, even with a timeout passed */
	EXPECT_EQ(wait_mem(self->fd, 0, 0, 0, sig, 0, 0), 0);
	EXPECT_EQ(wait_mem(self->fd, 0, u.c.queue_id, DRM_NPU_WAIT_MEM_RPTR,
			   0, 0, 0), 0);
	npu_bo_free(self->fd, &ro);
	free(mem);
	uq_free(self->fd, &u);
}

/*
 * A completion nobody sleeps on raises no interrupt; a sleeper arms the
 * signal, the queue's SIGNAL wakes it, and the sleeper disarms on return.
 */
TEST_F(userq, wait_mem_sleeps_until_the_signal)
{
	volatile uint64_t *sig, *gate;
	volatile uint32_t *armed;
	struct releaser r = { 0 };
	long before;
	struct uq u;

	ASSERT_EQ(uq_new(self->fd, &u, DRM_NPU_RING_KIND_COMPUTE), 0);
	ASSERT_EQ(uq_map_doorbell(self->fd, &u), 0);
	sig = (volatile uint64_t *)((char *)u.data.map + SIG_OFF);
	armed = (volatile uint32_t *)((char *)u.data.map + SIG_OFF + 16);
	gate = (volatile uint64_t *)((char *)u.data.map + GATE_OFF);

	before = uq_irqs();
	ASSERT_GE(before, 0);
	uq_signal(&u, u.data.va + SIG_OFF, 3);
	uq_ring(&u);
	ASSERT_EQ(uq_poll(&u, NPU_TIMEOUT_NS), 0);
	EXPECT_EQ(*sig, 3);
	EXPECT_EQ(uq_irqs(), before);

	uq_wait_mem(&u, u.data.va + GATE_OFF, 1);
	uq_signal(&u, u.data.va + SIG_OFF, 5);
	uq_ring(&u);
	r.armed = armed;
	r.gate = gate;
	ASSERT_EQ(pthread_create(&r.t, NULL, releaser_main, &r), 0);
	EXPECT_EQ(wait_mem(self->fd, 0, 0, 0, u.data.va + SIG_OFF, 5,
			   NPU_TIMEOUT_NS), 0);
	pthread_join(r.t, NULL);
	EXPECT_TRUE(r.ok);
	EXPECT_EQ(*sig, 5);
	EXPECT_EQ(*armed, 0);
	EXPECT_GT(uq_irqs(), before);
	uq_free(self->fd, &u);
}

struct sleeper {
	pthread_t t;
	int fd;
	uint64_t addr, value;
	int ret;
};

static void *sleeper_main(void *arg)
{
	struct sleeper *z = arg;

	z->ret = wait_mem(z->fd, 0, 0, 0, z->addr, z->value, NPU_TIMEOUT_NS);
	return NULL;
}

/*
 * Two sleepers, for 40 and 30: the first one to arm sets wake_value, the
 * second lowers it to 30; both are woken, and wake_value stays at 30
 * after they leave.
 */
TEST_F(userq, wait_mem_wakes_only_at_the_value)
{
	volatile uint64_t *gate, *wake;
	volatile uint32_t *armed;
	struct releaser r = { 0 };
	struct sleeper z = { 0 };
	long before;
	struct uq u;
	uint64_t sig;
	int i;

	ASSERT_EQ(uq_new(self->fd, &u, DRM_NPU_RING_KIND_COMPUTE), 0);
	ASSERT_EQ(uq_map_doorbell(self->fd, &u), 0);
	sig = u.data.va + SIG_OFF;
	armed = (volatile uint32_t *)((char *)u.data.map + SIG_OFF + 16);
	wake = (volatile uint64_t *)((char *)u.data.map + SIG_OFF + 24);
	gate = (volatile uint64_t *)((char *)u.data.map + GATE_OFF);

	uq_wait_mem(&u, u.data.va + GATE_OFF, 1);
	for (i = 1; i <= 40; i++)
		uq_signal(&u, sig, i);
	uq_ring(&u);
	z.fd = self->fd;
	z.addr = sig;
	z.value = 40;
	ASSERT_EQ(pthread_create(&z.t, NULL, sleeper_main, &z), 0);
	while (!*armed)
		usleep(1000);
	EXPECT_EQ(*wake, 40);
	/* the main thread sleeps for 30; the releaser opens the gate
	 * once both are armed */
	r.armed = armed;
	r.sleepers = 2;
	r.gate = gate;
	before = uq_irqs();
	ASSERT_GE(before, 0);
	ASSERT_EQ(pthread_create(&r.t, NULL, releaser_main, &r), 0);
	EXPECT_EQ(wait_mem(self->fd, 0, 0, 0, sig, 30, NPU_TIMEOUT_NS), 0);
	pthread_join(r.t, NULL);
	pthread_join(z.t, NULL);
	EXPECT_TRUE(r.ok);
	EXPECT_EQ(z.ret, 0);
	EXPECT_EQ(*armed, 0);
	EXPECT_EQ(*wake, 30);
	ASSERT_EQ(uq_poll(&u, NPU_TIMEOUT_NS), 0);
	/* the device's side (no event below wake_value) is a qtest's: the
	 * vector's interrupts are coalesced, so they do not count events */
	EXPECT_GT(uq_irqs(), before);
	uq_free(self->fd, &u);
}

/* A value that never comes times out (-ETIME) and leaves armed at 0. */
TEST_F(userq, wait_mem_timeout)
{
	struct uq u;
	uint64_t t0;

	ASSERT_EQ(uq_new(self->fd, &u, DRM_NPU_RING_KIND_COMPUTE), 0);
	t0 = npu_now_ns();
	EXPECT_EQ(wait_mem(self->fd, 0, 0, 0, u.data.va + SIG_OFF, 1,
			   200 * 1000 * 1000), -ETIME);
	EXPECT_GE(npu_now_ns() - t0, 190 * 1000 * 1000);
	EXPECT_EQ(*(volatile uint32_t *)((char *)u.data.map + SIG_OFF + 16),
		  0);
	uq_free(self->fd, &u);
}

/* DRM_NPU_WAIT_MEM_RPTR: sleep until the queue has passed a position. */
TEST_F(userq, wait_mem_rptr)
{
	struct releaser r = { 0 };
	struct uq u;

	ASSERT_EQ(uq_new(self->fd, &u, DRM_NPU_RING_KIND_COMPUTE), 0);
	ASSERT_EQ(uq_map_doorbell(self->fd, &u), 0);
	uq_wait_mem(&u, u.data.va + GATE_OFF, 1);
	uq_fill(&u, u.data.va, 9, 4);
	uq_ring(&u);
	r.gate = (volatile uint64_t *)((char *)u.data.map + GATE_OFF);
	ASSERT_EQ(pthread_create(&r.t, NULL, releaser_main, &r), 0);
	EXPECT_EQ(wait_mem(self->fd, 0, u.c.queue_id, DRM_NPU_WAIT_MEM_RPTR,
			   0, u.wptr, NPU_TIMEOUT_NS), 0) {
		UQ_LOG(self->fd, &u);
	}
	pthread_join(r.t, NULL);
	EXPECT_EQ(((volatile struct npu_uq_wb *)u.wb.map)->rptr, u.wptr);
	EXPECT_EQ(*(volatile uint32_t *)u.data.map, 9);
	uq_free(self->fd, &u);
}

/*
 * A wait naming a queue ends with -ECANCELED when the queue halts (and
 * GET_FAULT names the queue) or is destroyed.
 */
TEST_F(userq, wait_mem_ends_when_the_queue_stops)
{
	struct drm_npu_get_fault f;
	struct releaser r = { 0 };
	uint64_t end;
	struct uq u;

	ASSERT_EQ(uq_new(self->fd, &u, DRM_NPU_RING_KIND_COMPUTE), 0);
	ASSERT_EQ(uq_map_doorbell(self->fd, &u), 0);
	uq_wait_mem(&u, u.data.va + GATE_OFF, 1);
	uq_dw(&u, NPU_PKT_HDR(NPU_OP_RING_CTRL, 0, 1));
	uq_signal(&u, u.data.va + SIG_OFF, 1);
	uq_ring(&u);
	r.armed = (volatile uint32_t *)((char *)u.data.map + SIG_OFF + 16);
	r.gate = (volatile uint64_t *)((char *)u.data.map + GATE_OFF);
	ASSERT_EQ(pthread_create(&r.t, NULL, releaser_main, &r), 0);
	EXPECT_EQ(wait_mem(self->fd, 0, u.c.queue_id, 0, u.data.va + SIG_OFF,
			   1, NPU_TIMEOUT_NS), -ECANCELED);
	pthread_join(r.t, NULL);
	/* the fault record is written by a work item: poll for it */
	end = npu_now_ns() + NPU_TIMEOUT_NS;
	do {
		memset(&f, 0, sizeof(f));
		ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_GET_FAULT, &f), 0);
	} while (!f.count && npu_now_ns() < end && !usleep(1000));
	EXPECT_EQ(f.count, 1);
	EXPECT_EQ(f.kind, DRM_NPU_FAULT_DEVICE);
	EXPECT_EQ(f.queue_id, u.c.queue_id);
	EXPECT_EQ(f.ring, 0xffffffffu);
	EXPECT_EQ(f.cause, NPU_ERR_PRIVILEGED);
	uq_free(self->fd, &u);

	/* destroyed while someone sleeps on it */
	ASSERT_EQ(uq_new(self->fd, &u, DRM_NPU_RING_KIND_COMPUTE), 0);
	memset(&r, 0, sizeof(r));
	r.armed = (volatile uint32_t *)((char *)u.data.map + SIG_OFF + 16);
	r.fd = self->fd;
	r.destroy = u.c.queue_id;
	ASSERT_EQ(pthread_create(&r.t, NULL, releaser_main, &r), 0);
	EXPECT_EQ(wait_mem(self->fd, 0, u.c.queue_id, 0, u.data.va + SIG_OFF,
			   1, NPU_TIMEOUT_NS), -ECANCELED);
	pthread_join(r.t, NULL);
	EXPECT_TRUE(r.ok);
	u.c.queue_id = 0;
	uq_free(self->fd, &u);
}

/* Another process: fills and polls on its own queue for @ms. */
static int busy_process(unsigned int ms)
{
	uint64_t end = npu_now_ns() + ms * 1000000ull;
	int fd = npu_open(), n = 0;
	struct uq u;

	if (fd < 0 || uq_new(fd, &u, DRM_NPU_RING_KIND_COMPUTE) ||
	    uq_map_doorbell(fd, &u))
		return 2;
	while (npu_now_ns() < end) {
		uq_fill(&u, u.data.va, n, 4);
		uq_ring(&u);
		if (uq_poll(&u, NPU_TIMEOUT_NS))
			return 3;
		if (*(volatile uint32_t *)u.data.map != (uint32_t)n)
			return 4;
		n++;
	}
	return n > 10 ? 0 : 5;
}

/*
 * The watchdog stops a queue that runs a hung kernel, reports it (QUERY
 * STOPPED, GET_FAULT kind TIMEOUT), while a queue waiting on memory for
 * longer is left alone and another process's queue runs on.
 */
TEST_F(userq, watchdog_stops_a_hung_queue_only)
{
	uint32_t timeout_ms = npu_param(self->fd, DRM_NPU_PARAM_JOB_TIMEOUT_MS);
	struct drm_npu_userq_query q;
	struct drm_npu_get_fault f = { 0 };
	struct uq hung, waiting;
	uint64_t t0;
	pid_t pid;
	int st;

	if (timeout_ms > 5000)
		SKIP(return, "job timeout %u ms: load npu with job_timeout_ms=2000",
		     timeout_ms);
	ASSERT_EQ(uq_new(self->fd, &hung, DRM_NPU_RING_KIND_COMPUTE), 0);
	ASSERT_EQ(uq_new(self->fd, &waiting, DRM_NPU_RING_KIND_COMPUTE), 0);
	ASSERT_EQ(uq_map_doorbell(self->fd, &hung), 0);
	ASSERT_EQ(uq_map_doorbell(self->fd, &waiting), 0);
	uq_wait_mem(&waiting, waiting.data.va + GATE_OFF, 1);
	uq_ring(&waiting);

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		close(self->fd);
		_exit(busy_process(timeout_ms * 2));
	}

	t0 = npu_now_ns();
	uq_dw(&hung, NPU_PKT_HDR(NPU_OP_LAUNCH, 0, 6));
	uq_dw(&hung, NPU_KERNEL_TEST_HANG);
	uq_dw(&hung, 1);
	uq_dw(&hung, 1);
	uq_dw(&hung, 1);
	uq_dw(&hung, 0);
	uq_ring(&hung);
	ASSERT_EQ(uq_query_until(self->fd, hung.c.queue_id,
				 DRM_NPU_USERQ_STOPPED, &q), 0);
	EXPECT_GE(npu_now_ns() - t0, timeout_ms * 1000000ull);
	EXPECT_TRUE(q.status & DRM_NPU_USERQ_HALTED);
	EXPECT_EQ(q.error, NPU_ERR_STOPPED);
	EXPECT_EQ(q.rptr, 0);
	ASSERT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_GET_FAULT, &f), 0);
	EXPECT_EQ(f.kind, DRM_NPU_FAULT_TIMEOUT);
	EXPECT_EQ(f.queue_id, hung.c.queue_id);

	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		TH_LOG("other process: status %#x", st);
	}
	/* waited longer than the timeout, but held no engine */
	ASSERT_EQ(uq_query(self->fd, waiting.c.queue_id, &q), 0);
	EXPECT_EQ(q.status & (DRM_NPU_USERQ_STOPPED | DRM_NPU_USERQ_HALTED),
		  0);
	EXPECT_TRUE(q.status & DRM_NPU_USERQ_WAITING);
	*(volatile uint64_t *)((char *)waiting.data.map + GATE_OFF) = 1;
	uq_ring(&waiting);	/* the same wptr: look again now */
	EXPECT_EQ(uq_poll(&waiting, NPU_TIMEOUT_NS), 0) {
		UQ_LOG(self->fd, &waiting);
	}
	uq_free(self->fd, &hung);
	uq_free(self->fd, &waiting);
}

static int uq_signal_ioctl(int fd, uint32_t queue, uint64_t wptr,
			   uint32_t handle, uint64_t point)
{
	struct drm_npu_userq_signal s = {
		.queue_id = queue, .wptr = wptr, .handle = handle,
		.point = point,
	};

	return npu_ioctl(fd, DRM_IOCTL_NPU_USERQ_SIGNAL, &s);
}

/*
 * USERQ_SIGNAL puts a fence in a syncobj that signals when the queue has
 * passed a position; a halted queue fails it with -EFAULT, a destroyed one
 * with -ECANCELED.
 */
TEST_F(userq, signal_bridges_to_syncobj)
{
	struct drm_npu_userq_signal s = { 0 };
	volatile uint64_t *gate;
	uint32_t so, tl;
	uint64_t pos, pt = 5;
	struct uq u;

	ASSERT_EQ(uq_new(self->fd, &u, DRM_NPU_RING_KIND_COMPUTE), 0);
	ASSERT_EQ(uq_map_doorbell(self->fd, &u), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so), 0);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &tl), 0);
	gate = (volatile uint64_t *)((char *)u.data.map + GATE_OFF);

	s.queue_id = u.c.queue_id;
	s.handle = so;
	s.flags = 1;
	EXPECT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_USERQ_SIGNAL, &s),
		  -EINVAL);
	s.flags = 0;
	s.pad = 1;
	EXPECT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_USERQ_SIGNAL, &s),
		  -EINVAL);
	EXPECT_EQ(uq_signal_ioctl(self->fd, 999, 0, so, 0), -ENOENT);
	EXPECT_EQ(uq_signal_ioctl(self->fd, u.c.queue_id, 0, 4321, 0),
		  -ENOENT);
	EXPECT_EQ(uq_signal_ioctl(self->fd, u.c.queue_id, 64, so, 0),
		  -EINVAL);	/* beyond the queue's wptr (0) */
	/* a position the queue has passed: signalled at once */
	EXPECT_EQ(uq_signal_ioctl(self->fd, u.c.queue_id, 0, so, 0), 0);
	EXPECT_EQ(npu_syncobj_wait(self->fd, so, 0), 0);

	uq_wait_mem(&u, u.data.va + GATE_OFF, 1);
	uq_fill(&u, u.data.va, 11, 4);
	pos = u.wptr;
	uq_ring(&u);
	/* the doorbell reached the device: its wptr is the position */
	EXPECT_EQ(uq_signal_ioctl(self->fd, u.c.queue_id, 0, so, 0), 0);
	EXPECT_EQ(uq_signal_ioctl(self->fd, u.c.queue_id, pos, tl, pt), 0);
	EXPECT_EQ(npu_syncobj_wait(self->fd, so, 100 * 1000 * 1000), -ETIME);
	*gate = 1;
	uq_ring(&u);
	EXPECT_EQ(npu_syncobj_wait(self->fd, so, NPU_TIMEOUT_NS), 0);
	EXPECT_EQ(npu_syncobj_error(self->fd, so), 0);
	EXPECT_EQ(drmSyncobjTimelineWait(self->fd, &tl, &pt, 1,
					 npu_abs_timeout(NPU_TIMEOUT_NS), 0,
					 NULL), 0);
	EXPECT_EQ(*(volatile uint32_t *)u.data.map, 11);

	/* a halt fails the fence; a halted queue takes no new one */
	*gate = 0;
	uq_wait_mem(&u, u.data.va + GATE_OFF, 1);
	uq_dw(&u, NPU_PKT_HDR(NPU_OP_RING_CTRL, 0, 1));
	uq_ring(&u);
	EXPECT_EQ(uq_signal_ioctl(self->fd, u.c.queue_id, 0, so, 0), 0);
	*gate = 1;
	uq_ring(&u);
	EXPECT_EQ(npu_syncobj_wait(self->fd, so, NPU_TIMEOUT_NS), 0);
	EXPECT_EQ(npu_syncobj_error(self->fd, so), -EFAULT);
	EXPECT_EQ(uq_signal_ioctl(self->fd, u.c.queue_id, 0, so, 0),
		  -ECANCELED);
	uq_free(self->fd, &u);

	/* destroyed with a fence pending */
	ASSERT_EQ(uq_new(self->fd, &u, DRM_NPU_RING_KIND_COMPUTE), 0);
	ASSERT_EQ(uq_map_doorbell(self->fd, &u), 0);
	uq_wait_mem(&u, u.data.va + GATE_OFF, 1);
	uq_ring(&u);
	EXPECT_EQ(uq_signal_ioctl(self->fd, u.c.queue_id, 0, so, 0), 0);
	EXPECT_EQ(uq_destroy(self->fd, u.c.queue_id), 0);
	u.c.queue_id = 0;
	EXPECT_EQ(npu_syncobj_wait(self->fd, so, NPU_TIMEOUT_NS), 0);
	EXPECT_EQ(npu_syncobj_error(self->fd, so), -ECANCELED);
	uq_free(self->fd, &u);
	drmSyncobjDestroy(self->fd, so);
	drmSyncobjDestroy(self->fd, tl);
}

static int uq_wait_ioctl(int fd, uint32_t queue, uint32_t handle,
			 uint64_t point, uint64_t *value)
{
	struct drm_npu_sync s = { .handle = handle, .point = point };
	struct drm_npu_userq_wait w = {
		.queue_id = queue, .count = 1, .syncs = (uintptr_t)&s,
	};
	int ret = npu_ioctl(fd, DRM_IOCTL_NPU_USERQ_WAIT, &w);

	if (!ret && value)
		*value = w.value;
	return ret;
}

/*
 * USERQ_WAIT: the queue waits on the device (WAIT_MEM64 on its wait
 * counter) for a syncobj fence, here the USERQ_SIGNAL fence of another
 * queue held back by a gate; the wait page is read-only for the device.
 */
TEST_F(userq, wait_for_a_syncobj_on_the_device)
{
	struct drm_npu_sync s[2] = { 0 };
	struct drm_npu_userq_wait w = { 0 };
	struct drm_npu_userq_query q;
	volatile uint64_t *gate;
	uint64_t n, n2;
	struct uq a, b, c;
	uint32_t so;

	ASSERT_EQ(uq_new(self->fd, &a, DRM_NPU_RING_KIND_COMPUTE), 0);
	ASSERT_EQ(uq_new(self->fd, &b, DRM_NPU_RING_KIND_COPY), 0);
	ASSERT_EQ(uq_map_doorbell(self->fd, &a), 0);
	ASSERT_EQ(uq_map_doorbell(self->fd, &b), 0);
	ASSERT_NE(a.c.wait_va, 0);
	EXPECT_EQ(b.c.wait_va - a.c.wait_va,
		  b.c.doorbell_offset - a.c.doorbell_offset);
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so), 0);

	/* arguments */
	w.queue_id = a.c.queue_id;
	w.syncs = (uintptr_t)s;
	w.count = 0;
	EXPECT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_USERQ_WAIT, &w), -EINVAL);
	w.count = 65;
	EXPECT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_USERQ_WAIT, &w), -EINVAL);
	w.count = 1;
	w.sync_stride = 8;
	EXPECT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_USERQ_WAIT, &w), -EINVAL);
	w.sync_stride = 0;
	w.flags = 1;
	EXPECT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_USERQ_WAIT, &w), -EINVAL);
	w.flags = 0;
	s[0].handle = 4321;
	EXPECT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_USERQ_WAIT, &w), -ENOENT);
	s[0].handle = so;	/* no fence in it yet */
	EXPECT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_USERQ_WAIT, &w), -EINVAL);
	w.syncs = 8;
	EXPECT_EQ(npu_ioctl(self->fd, DRM_IOCTL_NPU_USERQ_WAIT, &w), -EFAULT);
	EXPECT_EQ(uq_wait_ioctl(self->fd, 999, so, 0, NULL), -EINVAL);

	/* b's work, held back by a gate, gives the fence */
	gate = (volatile uint64_t *)((char *)b.data.map + GATE_OFF);
	uq_wait_mem(&b, b.data.va + GATE_OFF, 1);
	uq_fill(&b, b.data.va, 21, 4);
	uq_ring(&b);
	ASSERT_EQ(uq_signal_ioctl(self->fd, b.c.queue_id, 0, so, 0), 0);
	EXPECT_EQ(uq_wait_ioctl(self->fd, 999, so, 0, NULL), -ENOENT);
	ASSERT_EQ(uq_wait_ioctl(self->fd, a.c.queue_id, so, 0, &n), 0);
	EXPECT_EQ(n, 1);
	uq_wait_mem(&a, a.c.wait_va, n);
	uq_fill(&a, a.data.va, 22, 4);
	uq_ring(&a);
	usleep(100 * 1000);
	ASSERT_EQ(uq_query(self->fd, a.c.queue_id, &q), 0);
	EXPECT_TRUE(q.status & DRM_NPU_USERQ_WAITING);
	EXPECT_EQ(q.rptr, 0);
	EXPECT_EQ(*(volatile uint32_t *)a.data.map, 0);

	*gate = 1;
	uq_ring(&b);
	ASSERT_EQ(uq_poll(&a, NPU_TIMEOUT_NS), 0);
	EXPECT_EQ(*(volatile uint32_t *)b.data.map, 21);
	EXPECT_EQ(*(volatile uint32_t *)a.data.map, 22);

	/* a signalled fence: the next value, released at once */
	ASSERT_EQ(uq_wait_ioctl(self->fd, a.c.queue_id, so, 0, &n2), 0);
	EXPECT_EQ(n2, 2);
	uq_wait_mem(&a, a.c.wait_va, n2);
	uq_fill(&a, a.data.va, 23, 4);
	uq_ring(&a);
	ASSERT_EQ(uq_poll(&a, NPU_TIMEOUT_NS), 0);
	EXPECT_EQ(*(volatile uint32_t *)a.data.map, 23);

	/* the wait page is read-only for the device */
	ASSERT_EQ(uq_new(self->fd, &c, DRM_NPU_RING_KIND_COMPUTE), 0);
	ASSERT_EQ(uq_map_doorbell(self->fd, &c), 0);
	uq_fill(&c, c.c.wait_va, 99, 8);
	uq_ring(&c);
	ASSERT_EQ(uq_query_until(self->fd, c.c.queue_id,
				 DRM_NPU_USERQ_HALTED, &q), 0);
	EXPECT_EQ(q.error, NPU_ERR_MMU_WRITE);
	uq_free(self->fd, &c);
	uq_free(self->fd, &a);
	uq_free(self->fd, &b);
	drmSyncobjDestroy(self->fd, so);
}

/* The first version of the create struct, before wait_mmap_offset. */
struct userq_create_v1 {
	__u32 ctx_id, kind, priority, flags;
	__u64 ring_va;
	__u32 ring_size, queue_id;
	__u64 wb_va, doorbell_offset, mmap_offset, wait_va;
};

#define IOCTL_USERQ_CREATE_V1 \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_USERQ_CREATE, struct userq_create_v1)

static uint64_t counter_until(volatile uint64_t *ctr, uint64_t want)
{
	for (int i = 0; i < 2000 && *ctr != want; i++)
		usleep(1000);
	return *ctr;
}

/*
 * The wait page for the CPU: one read-only page of the file's own at
 * wait_mmap_offset (not writable, not executable, not by mprotect(), not
 * from another file), where a queue's counter follows USERQ_WAIT; the
 * shorter first version of the create struct still works.
 */
TEST_F(userq, wait_page_cpu_mapping)
{
	struct userq_create_v1 v1;
	volatile uint64_t *ctr, *gate;
	struct uq a, b;
	uint64_t n;
	uint32_t so;
	void *p;
	int other;

	ASSERT_EQ(uq_new(self->fd, &a, DRM_NPU_RING_KIND_COMPUTE), 0);
	ASSERT_EQ(uq_new(self->fd, &b, DRM_NPU_RING_KIND_COPY), 0);
	ASSERT_EQ(uq_map_doorbell(self->fd, &a), 0);
	ASSERT_EQ(uq_map_doorbell(self->fd, &b), 0);
	ASSERT_NE(a.c.wait_mmap_offset, 0);
	EXPECT_EQ(a.c.wait_mmap_offset, b.c.wait_mmap_offset);
	EXPECT_NE(a.c.wait_mmap_offset, a.c.mmap_offset);

	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 a.c.wait_mmap_offset);
	EXPECT_EQ(p, MAP_FAILED);
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_SHARED, self->fd,
		 a.c.wait_mmap_offset);
	EXPECT_EQ(p, MAP_FAILED);
	p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, self->fd,
		 a.c.wait_mmap_offset);
	EXPECT_EQ(p, MAP_FAILED);
	other = npu_open();
	ASSERT_GE(other, 0);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, other,
		 a.c.wait_mmap_offset);
	EXPECT_EQ(p, MAP_FAILED);
	EXPECT_EQ(errno, EACCES);
	close(other);

	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->fd,
		 a.c.wait_mmap_offset);
	ASSERT_NE(p, MAP_FAILED);
	EXPECT_EQ(mprotect(p, 4096, PROT_READ | PROT_WRITE), -1);
	EXPECT_EQ(mprotect(p, 4096, PROT_READ | PROT_EXEC), -1);
	ctr = (volatile uint64_t *)((char *)p + a.c.doorbell_offset);
	EXPECT_EQ(*ctr, 0);

	/* b's SIGNAL fence, held back by a gate; a waits for it */
	ASSERT_EQ(drmSyncobjCreate(self->fd, 0, &so), 0);
	gate = (volatile uint64_t *)((char *)b.data.map + GATE_OFF);
	uq_wait_mem(&b, b.data.va + GATE_OFF, 1);
	uq_fill(&b, b.data.va, 31, 4);
	uq_ring(&b);
	ASSERT_EQ(uq_signal_ioctl(self->fd, b.c.queue_id, 0, so, 0), 0);
	ASSERT_EQ(uq_wait_ioctl(self->fd, a.c.queue_id, so, 0, &n), 0);
	EXPECT_EQ(n, 1);
	uq_wait_mem(&a, a.c.wait_va, n);
	uq_fill(&a, a.data.va, 32, 4);
	uq_ring(&a);
	usleep(50 * 1000);
	EXPECT_EQ(*ctr, 0);
	*gate = 1;
	uq_ring(&b);
	ASSERT_EQ(uq_poll(&a, NPU_TIMEOUT_NS), 0);
	EXPECT_EQ(counter_until(ctr, 1), 1);
	EXPECT_EQ(*(volatile uint32_t *)a.data.map, 32);
	/* a signalled fence: the next value at once */
	ASSERT_EQ(uq_wait_ioctl(self->fd, a.c.queue_id, so, 0, &n), 0);
	EXPECT_EQ(n, 2);
	EXPECT_EQ(counter_until(ctr, 2), 2);
	EXPECT_EQ(munmap(p, 4096), 0);
	drmSyncobjDestroy(self->fd, so);
	uq_free(self->fd, &a);
	uq_free(self->fd, &b);

	/* the first version of the struct: created, without the offset */
	ASSERT_EQ(uq_new(self->fd, &a, DRM_NPU_RING_KIND_COMPUTE), 0);
	memset(&v1, 0, sizeof(v1));
	v1.kind = DRM_NPU_RING_KIND_COMPUTE;
	v1.priority = DRM_NPU_PRIORITY_NORMAL;
	v1.ring_va = a.data.va;
	v1.ring_size = RING_SIZE;
	v1.wb_va = a.wb.va + 2048;
	ASSERT_EQ(npu_ioctl(self->fd, IOCTL_USERQ_CREATE_V1, &v1), 0);
	EXPECT_NE(v1.queue_id, 0);
	EXPECT_EQ(v1.mmap_offset, a.c.mmap_offset);
	EXPECT_NE(v1.wait_va, 0);
	EXPECT_EQ(uq_destroy(self->fd, v1.queue_id), 0);
	uq_free(self->fd, &a);
}

TEST_HARNESS_MAIN
