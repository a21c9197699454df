// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_fuzz - a structure-aware fuzzer of the npu ioctls.
 *
 * Two processes (a fork) each run a seeded sequence of operations on their
 * own file of the device: well-shaped drm_npu_* structs whose fields are
 * mostly valid and sometimes at the edges (stale and foreign handles,
 * unknown flags, non-zero padding, sizes of 0, 1, page - 1, huge and
 * overflowing, bad user pointers), command buffers of valid packets with
 * mutations, PRIME buffers and syncobjs passed between the processes over a
 * socket, mmap, short-lived forks using the inherited file, and files closed
 * with work in flight. An ioctl must fail only with a documented errno, and
 * a well-formed request must succeed unless the device runs out of a
 * resource. Afterwards a fresh file runs a FILL and a COPY and checks them.
 *
 *   npu_fuzz [--seed N] [--ops M] [--procs 1|2] [--user UID] [--verbose]
 *
 * Each process's sequence depends only on the seed (process p uses its own
 * generator seeded from N and p); with --procs 2 the interleaving of the two
 * is the scheduler's. --procs 1 replays one sequence exactly. Output is TAP.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../kselftest/npu_test.h"

#define PAGE		4096ull
#define MAX_BOS		48
#define MAX_QUEUES	12
#define MAX_CTXS	6
#define MAX_MAPS	24
#define MAX_SYNCS	16
#define MAX_STALE	32
#define MAX_UQS		6
#define WATCHDOG_S	240

/* ---- operation kinds and their counters ------------------------------ */

#define OPS(X) \
	X(GET_PARAM) X(BO_CREATE) X(BO_INFO) X(USERPTR) X(GEM_CLOSE) \
	X(MMAP) X(QUEUE_CREATE) X(QUEUE_DESTROY) X(SUBMIT) X(BO_WAIT) \
	X(GET_FAULT) X(COUNTERS) X(CTX_CREATE) X(CTX_DESTROY) X(BO_MAP) \
	X(BO_UNMAP) X(SYNCOBJ_CREATE) X(SYNCOBJ_DESTROY) X(SYNCOBJ_WAIT) \
	X(SYNCOBJ_MISC) X(PRIME_SEND) X(SYNC_SEND) X(RECV_IMPORT) \
	X(RAW_IOCTL) X(FORK) X(REOPEN) X(USERQ_CREATE) X(USERQ_DESTROY) \
	X(USERQ_MISC)

#define OP_ENUM(n) OP_##n,
#define OP_NAME(n) #n,
enum op { OPS(OP_ENUM) OP_COUNT };
static const char *const op_names[] = { OPS(OP_NAME) };

/* how often each kind is picked (relative) */
static const unsigned int op_weight[OP_COUNT] = {
	[OP_GET_PARAM] = 3, [OP_BO_CREATE] = 10, [OP_BO_INFO] = 4,
	[OP_USERPTR] = 5, [OP_GEM_CLOSE] = 7, [OP_MMAP] = 5,
	[OP_QUEUE_CREATE] = 4, [OP_QUEUE_DESTROY] = 2, [OP_SUBMIT] = 22,
	[OP_BO_WAIT] = 4, [OP_GET_FAULT] = 2, [OP_COUNTERS] = 2,
	[OP_CTX_CREATE] = 3, [OP_CTX_DESTROY] = 2, [OP_BO_MAP] = 6,
	[OP_BO_UNMAP] = 3, [OP_SYNCOBJ_CREATE] = 4, [OP_SYNCOBJ_DESTROY] = 2,
	[OP_SYNCOBJ_WAIT] = 3, [OP_SYNCOBJ_MISC] = 3, [OP_PRIME_SEND] = 3,
	[OP_SYNC_SEND] = 2, [OP_RECV_IMPORT] = 4, [OP_RAW_IOCTL] = 4,
	[OP_FORK] = 1, [OP_REOPEN] = 1, [OP_USERQ_CREATE] = 3,
	[OP_USERQ_DESTROY] = 2, [OP_USERQ_MISC] = 8,
};

/* outcome of one operation */
enum res { RES_OK, RES_ERR, RES_BAD, RES_COUNT };

/* shared between all processes: [kind][outcome] */
struct stats {
	unsigned long n[OP_COUNT][RES_COUNT];
	unsigned long errno_hist[OP_COUNT][140];
	/* each process's first unexpected outcome, repeated after its result */
	char first_bad[2][160];
};
static struct stats *stats;

/* ---- a small seeded generator (splitmix64) --------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t below(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

/* true with probability pct / 100 */
static bool chance(unsigned int pct)
{
	return below(100) < pct;
}

/* ---- process state ---------------------------------------------------- */

enum bo_kind { BK_SHMEM, BK_DEVMEM, BK_USERPTR, BK_IMPORTED };

struct fbo {
	bool live;
	enum bo_kind kind;
	uint32_t handle;
	uint64_t size, va, mmap_offset;
	void *map;		/* CPU mapping (may outlive the handle) */
	size_t map_len;
	void *mem;		/* user memory behind a userptr BO */
	size_t mem_len;
};

struct fqueue { bool live; uint32_t id, ctx; };
struct fctx { bool live; uint32_t id; };
struct fmap { bool live; uint32_t ctx, handle; uint64_t va, size; };
struct fsync { bool live; uint32_t handle; uint64_t point; };
/* a user queue on BOs of its own (ring, write-back block, data) */
struct fuq {
	bool live;
	uint32_t id, ring_size;
	uint64_t wptr, doorbell_offset;
	struct npu_bo ring, wb, data;
};

static struct {
	int proc;		/* 0 or 1 */
	int fd;
	int sock;		/* to the other process, or -1 */
	bool verbose;
	unsigned long op_index;
	uint64_t features, va_start, va_size, max_cmd;
	uint32_t compute_rings, copy_rings;
	struct fbo bo[MAX_BOS];
	struct fqueue q[MAX_QUEUES];
	struct fctx ctx[MAX_CTXS];
	struct fmap map[MAX_MAPS];
	struct fsync sync[MAX_SYNCS];
	struct fuq uq[MAX_UQS];
	void *db;			/* the file's doorbell page, or NULL */
	uint32_t stale[MAX_STALE];	/* closed handles and ids */
	unsigned int nstale;
	uint32_t foreign[8];		/* handles of the other process */
	unsigned int nforeign;
	struct fbo *cmdbo;		/* a mapped BO holding commands */
	unsigned long bad;
} S;

static void note(const char *fmt, ...)
{
	va_list ap;

	if (!S.verbose)
		return;
	va_start(ap, fmt);
	printf("# p%d op %lu: ", S.proc, S.op_index);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
}

static void remember_stale(uint32_t h)
{
	S.stale[S.nstale++ % MAX_STALE] = h;
}

/* errnos the npu ioctls and the generic DRM ioctls document */
static bool errno_documented(int e)
{
	switch (e) {
	case EINVAL: case ENOENT: case ENOMEM: case ENOSPC: case EFAULT:
	case EBUSY: case EEXIST: case EACCES: case ENODEV: case ETIME:
	case ETIMEDOUT: case EPERM: case E2BIG: case EINTR: case EAGAIN:
	case EBADF: case EOPNOTSUPP: case ENOTTY: case ECANCELED:
	case EDQUOT:
		return true;
	}
	return false;
}

/*
 * Record the outcome of an operation. ret is 0 or -errno; well_formed says
 * the request was valid, so only a resource error may fail it.
 */
static void outcome(enum op op, int ret, bool well_formed)
{
	enum res r = RES_OK;
	int e = -ret;

	if (ret) {
		r = RES_ERR;
		if (e > 0 && e < 140)
			__atomic_fetch_add(&stats->errno_hist[op][e], 1,
					   __ATOMIC_RELAXED);
		if (!errno_documented(e) || e == ENOTTY) {
			r = RES_BAD;
		} else if (well_formed && e != ENOMEM && e != ENOSPC &&
			   e != EBUSY && e != ETIME && e != EINTR) {
			r = RES_BAD;
		}
	}
	if (r == RES_BAD) {
		char line[160];

		snprintf(line, sizeof(line), "# p%d op %lu %s: unexpected %s (%s)",
			 S.proc, S.op_index, op_names[op], strerror(e),
			 well_formed ? "well-formed request" : "malformed");
		if (!S.bad++ && S.proc >= 0 && S.proc < 2)
			memcpy(stats->first_bad[S.proc], line, sizeof(line));
		printf("%s\n", line);
		fflush(stdout);
	}
	__atomic_fetch_add(&stats->n[op][r], 1, __ATOMIC_RELAXED);
}

/* ---- value pickers ---------------------------------------------------- */

static uint64_t edge_size(void)
{
	static const uint64_t edges[] = {
		0, 1, 3, 4, PAGE - 1, PAGE, PAGE + 1, 2 * PAGE, 64 * 1024,
		(1ull << 20) - 4, 1ull << 32, (1ull << 32) + PAGE,
		(1ull << 32) - PAGE, 1ull << 63, ~0ull, ~0ull - PAGE + 1,
		1ull << 40, 0x7fffffffull, 0x80000000ull,
	};

	return edges[below(sizeof(edges) / sizeof(edges[0]))];
}

/* a modest valid size: 1 .. 16 pages, sometimes unaligned */
static uint64_t valid_size(void)
{
	uint64_t s = (1 + below(16)) * PAGE;

	if (chance(20))
		s -= below(PAGE);
	return s;
}

/* a pointer the kernel must not be able to use */
static uint64_t bad_ptr(void)
{
	static const uint64_t p[] = {
		0, 1, 8, 4095, 0xffffffffffff0000ull, 0x7ffffffff000ull,
		0xffff800000000000ull, 0x8000000000000000ull,
	};

	return p[below(sizeof(p) / sizeof(p[0]))];
}

static uint32_t rnd_flags(uint32_t valid)
{
	if (chance(85))
		return (uint32_t)rnd() & valid;
	return (uint32_t)rnd() >> below(32);
}

/* a padding field: almost always zero */
static uint32_t pad32(void)
{
	return chance(96) ? 0 : (uint32_t)rnd() | 1;
}

static struct fbo *pick_live_bo(void)
{
	unsigned int i, start = below(MAX_BOS);

	for (i = 0; i < MAX_BOS; i++) {
		struct fbo *b = &S.bo[(start + i) % MAX_BOS];

		if (b->live)
			return b;
	}
	return NULL;
}

static struct fbo *free_bo_slot(void)
{
	unsigned int i;

	for (i = 0; i < MAX_BOS; i++)
		if (!S.bo[i].live && !S.bo[i].map && !S.bo[i].mem)
			return &S.bo[i];
	/* drop a mapping of a closed BO to make room */
	for (i = 0; i < MAX_BOS; i++) {
		struct fbo *b = &S.bo[i];

		if (!b->live) {
			if (b->map)
				munmap(b->map, b->map_len);
			if (b->mem)
				munmap(b->mem, b->mem_len);
			memset(b, 0, sizeof(*b));
			return b;
		}
	}
	return NULL;
}

/*
 * A handle: live most of the time, else stale, foreign (a live handle of
 * the other process's file), zero, or arbitrary. *valid says it is live.
 */
static uint32_t pick_handle(bool *valid)
{
	struct fbo *b;
	unsigned int r = below(100);

	*valid = false;
	if (r < 75) {
		b = pick_live_bo();
		if (b) {
			*valid = true;
			return b->handle;
		}
	}
	if (r < 85 && S.nstale)
		return S.stale[below(S.nstale < MAX_STALE ? S.nstale : MAX_STALE)];
	if (r < 92 && S.nforeign)
		return S.foreign[below(S.nforeign)];
	if (r < 96)
		return 0;
	return chance(50) ? (uint32_t)rnd() : 0xffffffffu - below(4);
}

static struct fqueue *pick_live_queue(void)
{
	unsigned int i, start = below(MAX_QUEUES);

	for (i = 0; i < MAX_QUEUES; i++)
		if (S.q[(start + i) % MAX_QUEUES].live)
			return &S.q[(start + i) % MAX_QUEUES];
	return NULL;
}

static struct fctx *pick_live_ctx(void)
{
	unsigned int i, start = below(MAX_CTXS);

	for (i = 0; i < MAX_CTXS; i++)
		if (S.ctx[(start + i) % MAX_CTXS].live)
			return &S.ctx[(start + i) % MAX_CTXS];
	return NULL;
}

static struct fsync *pick_live_sync(void)
{
	unsigned int i, start = below(MAX_SYNCS);

	for (i = 0; i < MAX_SYNCS; i++)
		if (S.sync[(start + i) % MAX_SYNCS].live)
			return &S.sync[(start + i) % MAX_SYNCS];
	return NULL;
}

/* an id (queue or context): live, stale, or arbitrary */
static uint32_t pick_id(uint32_t live_id, bool have_live, bool *valid)
{
	*valid = false;
	if (have_live && chance(85)) {
		*valid = true;
		return live_id;
	}
	if (S.nstale && chance(50))
		return S.stale[below(S.nstale < MAX_STALE ? S.nstale : MAX_STALE)];
	return chance(50) ? below(300) : (uint32_t)rnd();
}

static uint64_t timeout_soon(void)
{
	/* mostly short waits so that a busy device does not stall the run */
	static const uint64_t ns[] = { 0, 1000, 1000000, 20000000, 50000000 };

	if (chance(5))
		return 0;	/* absolute time 0: already passed */
	return (uint64_t)npu_abs_timeout(ns[below(5)]);
}

/* ---- the operations --------------------------------------------------- */

static void op_get_param(void)
{
	struct drm_npu_get_param p = { 0 };
	bool wf = chance(80);
	int ret;

	p.param = wf ? below(DRM_NPU_PARAM_USERQ_RING_MAX + 1) :
		  (chance(50) ? 29 + below(10) : (uint32_t)rnd());
	p.pad = wf ? 0 : pad32();
	wf = wf || (p.param <= DRM_NPU_PARAM_USERQ_RING_MAX && !p.pad);
	ret = npu_ioctl(S.fd, DRM_IOCTL_NPU_GET_PARAM, &p);
	outcome(OP_GET_PARAM, ret, wf);
}

static void bo_fill_from_info(struct fbo *b)
{
	struct drm_npu_bo_info i = { .handle = b->handle };

	if (!npu_ioctl(S.fd, DRM_IOCTL_NPU_BO_INFO, &i)) {
		b->size = i.size;
		b->va = i.va;
		b->mmap_offset = i.mmap_offset;
	}
}

static void op_bo_create(void)
{
	struct drm_npu_bo_create c = { 0 };
	struct fbo *b = free_bo_slot();
	bool devmem = (S.features & DRM_NPU_FEATURE_DEVMEM) && chance(30);
	bool wf = true;
	int ret;

	if (!b)
		return;
	c.flags = devmem ? DRM_NPU_BO_DEVMEM : 0;
	c.size = valid_size();
	if (chance(15)) {
		c.size = edge_size();
		/* only sizes the guest can back without an OOM kill */
		wf = c.size && c.size <= (1ull << 20);
		if (!wf && c.size > (1ull << 20) && c.size <= (1ull << 32) &&
		    !devmem)
			c.size = 1ull << 33;	/* over 4 GiB: -EINVAL */
	}
	if (chance(5)) {
		c.flags = rnd_flags(0xffffffffu);
		wf = wf && !(c.flags & ~DRM_NPU_BO_DEVMEM);
		if (c.flags & DRM_NPU_BO_DEVMEM &&
		    !(S.features & DRM_NPU_FEATURE_DEVMEM))
			wf = false;
		if (c.flags & DRM_NPU_BO_DEVMEM && c.size > (1ull << 20))
			wf = false;
	}
	if (chance(3))
		c.handle = (uint32_t)rnd();	/* out fields are ignored */
	ret = npu_ioctl(S.fd, DRM_IOCTL_NPU_BO_CREATE, &c);
	outcome(OP_BO_CREATE, ret, wf);
	if (ret)
		return;
	memset(b, 0, sizeof(*b));
	b->live = true;
	b->kind = c.flags & DRM_NPU_BO_DEVMEM ? BK_DEVMEM : BK_SHMEM;
	b->handle = c.handle;
	b->size = (c.size + PAGE - 1) & ~(PAGE - 1);
	b->va = c.va;
	b->mmap_offset = c.mmap_offset;
	if (b->kind == BK_SHMEM && !S.cmdbo) {
		b->map = mmap(NULL, b->size, PROT_READ | PROT_WRITE,
			      MAP_SHARED, S.fd, b->mmap_offset);
		if (b->map == MAP_FAILED) {
			b->map = NULL;
		} else {
			b->map_len = b->size;
			S.cmdbo = b;
		}
	}
}

static void op_bo_info(void)
{
	struct drm_npu_bo_info i = { 0 };
	bool wf;
	int ret;

	i.handle = pick_handle(&wf);
	if (chance(3))
		i.flags = (uint32_t)rnd();	/* out field */
	ret = npu_ioctl(S.fd, DRM_IOCTL_NPU_BO_INFO, &i);
	outcome(OP_BO_INFO, ret, wf);
}

static void op_userptr(void)
{
	struct drm_npu_userptr u = { 0 };
	struct fbo *b = free_bo_slot();
	size_t len = (1 + below(8)) * PAGE;
	bool ro = chance(30), wf = true;
	void *mem;
	int ret;

	if (!b || !(S.features & DRM_NPU_FEATURE_USERPTR))
		return;
	mem = mmap(NULL, len, PROT_READ | (ro ? 0 : PROT_WRITE),
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return;
	((volatile char *)mem)[0];
	u.addr = (uintptr_t)mem;
	u.size = len;
	u.flags = ro || chance(20) ? DRM_NPU_USERPTR_READ_ONLY : 0;
	switch (below(12)) {
	case 0:
		u.addr += 1 + below(PAGE - 1);	/* unaligned */
		wf = false;
		break;
	case 1:
		u.size = edge_size();
		wf = u.size && !(u.size % PAGE) && u.size <= len;
		break;
	case 2:
		u.addr = bad_ptr();
		wf = false;
		break;
	case 3:
		u.size = len + PAGE;	/* past the mapping */
		wf = false;
		break;
	case 4:
		u.flags = rnd_flags(0xffffffffu);
		wf = !(u.flags & ~DRM_NPU_USERPTR_READ_ONLY) &&
		     (!ro || (u.flags & DRM_NPU_USERPTR_READ_ONLY));
		break;
	case 5:
		u.addr = ~0ull - PAGE + 1;	/* range overflows */
		u.size = 2 * PAGE;
		wf = false;
		break;
	default:
		break;
	}
	ret = npu_ioctl(S.fd, DRM_IOCTL_NPU_USERPTR, &u);
	outcome(OP_USERPTR, ret, wf);
	memset(b, 0, sizeof(*b));
	if (ret) {
		munmap(mem, len);
		return;
	}
	b->live = true;
	b->kind = BK_USERPTR;
	b->handle = u.handle;
	b->size = u.size;
	b->va = u.va;
	/* sometimes unmap the memory at once: the pins must keep it */
	if (chance(30)) {
		munmap(mem, len);
	} else {
		b->mem = mem;
		b->mem_len = len;
	}
}

static void op_gem_close(void)
{
	struct drm_gem_close c = { 0 };
	struct fbo *b = pick_live_bo();
	bool wf = false;
	int ret;

	if (b && chance(85)) {
		c.handle = b->handle;
		wf = true;
	} else {
		c.handle = pick_handle(&wf);
		b = NULL;	/* found by value below */
		wf = false;
	}
	if (chance(3)) {
		c.pad = (uint32_t)rnd() | 1;
		wf = false;
	}
	ret = npu_ioctl(S.fd, DRM_IOCTL_GEM_CLOSE, &c);
	/* a live handle picked by value may be closed too */
	if (!ret && !b) {
		unsigned int i;

		for (i = 0; i < MAX_BOS; i++)
			if (S.bo[i].live && S.bo[i].handle == c.handle)
				b = &S.bo[i];
	}
	outcome(OP_GEM_CLOSE, ret, wf);
	if (!ret) {
		unsigned int u;

		/* a user queue's BO closed by number: never close it again */
		for (u = 0; u < MAX_UQS; u++) {
			if (S.uq[u].ring.handle == c.handle)
				S.uq[u].ring.handle = 0;
			if (S.uq[u].wb.handle == c.handle)
				S.uq[u].wb.handle = 0;
			if (S.uq[u].data.handle == c.handle)
				S.uq[u].data.handle = 0;
		}
	}
	if (!ret && b && b->handle == c.handle) {
		unsigned int m;

		/*
		 * Its mappings in extra contexts stay, but the number may
		 * soon name another BO that is not mapped there.
		 */
		for (m = 0; m < MAX_MAPS; m++)
			if (S.map[m].handle == c.handle)
				S.map[m].handle = 0;
		b->live = false;
		remember_stale(b->handle);
		if (b == S.cmdbo)
			S.cmdbo = NULL;
		/* keep the CPU mapping a while: it must stay usable */
	}
}

static void touch(void *p, size_t len, bool write)
{
	volatile uint8_t *v = p;
	size_t i;

	for (i = 0; i < len; i += PAGE) {
		uint8_t x = v[i];

		if (write)
			v[i] = x + 1;
	}
}

static void op_mmap(void)
{
	struct fbo *b = pick_live_bo();
	size_t len;
	off_t off;
	int prot = PROT_READ, flags = MAP_SHARED;
	bool wf = true;
	void *p;

	if (!b)
		return;
	len = b->size;
	off = (off_t)b->mmap_offset;
	if (!off)
		wf = false;
	if (chance(50))
		prot |= PROT_WRITE;
	switch (below(10)) {
	case 0:
		len += PAGE;
		wf = false;
		break;
	case 1:
		len = 0;
		wf = false;
		break;
	case 2:
		off += PAGE * (1 + below(4));	/* inside or past the BO */
		len = PAGE;
		wf = false;
		break;
	case 3:
		flags = MAP_PRIVATE;
		wf = false;
		break;
	case 4:
		off = (off_t)(rnd() & 0xfffffffff000ull);
		wf = false;
		break;
	default:
		break;
	}
	p = mmap(NULL, len, prot, flags, S.fd, off);
	if (p == MAP_FAILED) {
		outcome(OP_MMAP, -errno, wf);
		return;
	}
	outcome(OP_MMAP, 0, wf);
	/* only touch what is known to be backed */
	if (off == (off_t)b->mmap_offset && len <= b->size && b->mmap_offset)
		touch(p, len, prot & PROT_WRITE);
	if (!b->map && len == b->size && off == (off_t)b->mmap_offset &&
	    (prot & PROT_WRITE) && flags == MAP_SHARED) {
		b->map = p;
		b->map_len = len;
	} else {
		munmap(p, len);
	}
}

static void op_queue_create(void)
{
	struct drm_npu_queue_create q = { 0 };
	struct fqueue *slot = NULL;
	struct fctx *c;
	bool wf = true, cv;
	unsigned int i;
	uint32_t nrings;
	int ret;

	for (i = 0; i < MAX_QUEUES; i++)
		if (!S.q[i].live)
			slot = &S.q[i];
	if (!slot)
		return;
	q.kind = chance(75) ? DRM_NPU_RING_KIND_COMPUTE : DRM_NPU_RING_KIND_COPY;
	nrings = q.kind == DRM_NPU_RING_KIND_COMPUTE ? S.compute_rings :
		 S.copy_rings;
	q.priority = chance(70) ? DRM_NPU_PRIORITY_NORMAL :
		     DRM_NPU_PRIORITY_LOW;
	q.ring = chance(50) ? DRM_NPU_RING_ANY : below(nrings ? nrings : 1);
	if (!nrings)
		wf = false;
	c = pick_live_ctx();
	q.ctx_id = chance(40) ? pick_id(c ? c->id : 0, c != NULL, &cv) : 0;
	if (q.ctx_id && !cv)
		wf = false;
	switch (below(14)) {
	case 0:
		q.kind = 2 + below(5);
		wf = false;
		break;
	case 1:
		q.priority = DRM_NPU_PRIORITY_HIGH;	/* needs CAP_SYS_NICE */
		wf = wf && geteuid() == 0;
		break;
	case 2:
		q.priority = 3 + (uint32_t)below(1000);
		wf = false;
		break;
	case 3:
		q.ring = nrings + below(8);
		wf = false;
		break;
	case 4:
		q.pad = pad32();
		wf = wf && !q.pad;
		break;
	case 5:
		q.queue_id = 1 + below(10);	/* must be 0 on input */
		wf = false;
		break;
	default:
		break;
	}
	ret = npu_ioctl(S.fd, DRM_IOCTL_NPU_QUEUE_CREATE, &q);
	outcome(OP_QUEUE_CREATE, ret, wf);
	if (ret)
		return;
	slot->live = true;
	slot->id = q.queue_id;
	slot->ctx = q.ctx_id;
}

static void op_queue_destroy(void)
{
	struct drm_npu_queue_destroy d = { 0 };
	struct fqueue *q = pick_live_queue();
	bool wf;
	unsigned int i;
	int ret;

	d.queue_id = pick_id(q ? q->id : 0, q != NULL, &wf);
	if (chance(3)) {
		d.pad = 1;
		wf = false;
	}
	ret = npu_ioctl(S.fd, DRM_IOCTL_NPU_QUEUE_DESTROY, &d);
	outcome(OP_QUEUE_DESTROY, ret, wf);
	if (ret)
		return;
	for (i = 0; i < MAX_QUEUES; i++)
		if (S.q[i].live && S.q[i].id == d.queue_id) {
			S.q[i].live = false;
			remember_stale(d.queue_id);
		}
}

/* ---- command buffers -------------------------------------------------- */

struct cmdgen {
	uint32_t *p;
	uint32_t n, max;	/* dwords */
	uint32_t ctx;		/* context the job runs in */
	bool valid;		/* every packet is well formed */
};

static void dw(struct cmdgen *g, uint32_t v)
{
	if (g->n < g->max)
		g->p[g->n++] = v;
	else
		g->valid = false;
}

static void qw(struct cmdgen *g, uint64_t v)
{
	dw(g, (uint32_t)v);
	dw(g, (uint32_t)(v >> 32));
}

/* a device range [*va, *va + *len) in the job's context, 4-aligned */
static bool target(struct cmdgen *g, uint64_t *va, uint64_t *len)
{
	unsigned int i, start = below(MAX_MAPS);

	if (g->ctx) {
		for (i = 0; i < MAX_MAPS; i++) {
			struct fmap *m = &S.map[(start + i) % MAX_MAPS];

			if (m->live && m->ctx == g->ctx) {
				*va = m->va;
				*len = m->size;
				goto found;
			}
		}
		return false;
	} else {
		struct fbo *b = pick_live_bo();

		/* read-only userptrs fault on writes: count them as not valid */
		if (!b || b->kind == BK_USERPTR)
			return false;
		*va = b->va;
		*len = b->size;
	}
found:
	if (*len > PAGE && chance(50)) {
		uint64_t off = below((uint32_t)(*len / 4)) * 4;

		*va += off;
		*len -= off;
	}
	*len = (1 + below((uint32_t)(*len < 65536 ? *len : 65536) / 4)) * 4;
	return true;
}

static void emit_valid_packet(struct cmdgen *g)
{
	uint64_t va, len, va2, len2;
	bool ok = target(g, &va, &len);

	switch (below(8)) {
	case 0:	/* NOP, padded */
		dw(g, NPU_PKT_HDR(NPU_OP_NOP, 0, 2));
		dw(g, (uint32_t)rnd());
		return;
	case 1:	/* FILL */
		if (!ok)
			break;
		dw(g, NPU_PKT_HDR(NPU_OP_FILL, 0, 6));
		dw(g, (uint32_t)rnd());
		qw(g, va);
		qw(g, len);
		return;
	case 2:	/* COPY */
		if (!ok || !target(g, &va2, &len2))
			break;
		dw(g, NPU_PKT_HDR(NPU_OP_COPY, 0, 8));
		dw(g, 0);
		qw(g, va);
		qw(g, va2);
		qw(g, len < len2 ? len : len2);
		return;
	case 3:	/* TIMESTAMP */
		if (!ok || len < 8 || (va & 7))
			break;
		dw(g, NPU_PKT_HDR(NPU_OP_TIMESTAMP, 0, 4));
		dw(g, 0);
		qw(g, va);
		return;
	case 4:	/* SEM_SIGNAL then a SEM_WAIT that is already satisfied */
		if (!ok)
			break;
		dw(g, NPU_PKT_HDR(NPU_OP_SEM_SIGNAL, 0, 4));
		dw(g, 7);
		qw(g, va);
		dw(g, NPU_PKT_HDR(NPU_OP_SEM_WAIT, 0, 4));
		dw(g, 7);
		qw(g, va);
		return;
	case 5:	/* a diagnostic kernel holding 1-4 units for a few us */
		if (!ok)
			break;
		dw(g, NPU_PKT_HDR(NPU_OP_LAUNCH, 0, 6 + 2 * 1));
		dw(g, NPU_KERNEL_TEST_SPIN);
		dw(g, 1 + below(4));
		dw(g, 1);
		dw(g, 1);
		dw(g, 1);
		qw(g, 1000 + below(9000));
		return;
	case 6:	/* a short spin */
		dw(g, NPU_PKT_HDR(NPU_OP_LAUNCH, 0, 6 + 2));
		dw(g, NPU_KERNEL_TEST_SPIN);
		dw(g, 1);
		dw(g, 1);
		dw(g, 1);
		dw(g, 1);
		qw(g, below(20000));
		return;
	default:
		break;
	}
	dw(g, NPU_PKT_HDR(NPU_OP_LAUNCH, 0, 6));
	dw(g, NPU_KERNEL_NOP);
	dw(g, 1);
	dw(g, 1);
	dw(g, 1);
	dw(g, 0);
}

/* a packet that is wrong in one way; the device must stop the job cleanly */
static void emit_bad_packet(struct cmdgen *g)
{
	uint32_t start = g->n;
	uint64_t args[NPU_LAUNCH_MAX_ARGS + 2];
	unsigned int i;

	g->valid = false;
	switch (below(10)) {
	case 0:	/* privileged opcodes are refused in a job's buffer */
		dw(g, NPU_PKT_HDR(0x80 + below(4), below(2), 4));
		dw(g, (uint32_t)rnd());
		qw(g, rnd() & 0xfffff000ull);
		break;
	case 1:	/* unknown opcode */
		dw(g, NPU_PKT_HDR(0x17 + below(0x60), 0, 1 + below(8)));
		break;
	case 2:	/* length 0 or running past the buffer */
		dw(g, NPU_PKT_HDR(NPU_OP_NOP, 0, chance(50) ? 0 : 0xffff));
		break;
	case 3:	/* FILL of an unmapped or unaligned range */
		dw(g, NPU_PKT_HDR(NPU_OP_FILL, 0, 6));
		dw(g, 0);
		qw(g, chance(50) ? bad_ptr() : S.va_start + 2);
		qw(g, chance(50) ? edge_size() : 6);
		break;
	case 4:	/* COPY with overflowing size */
		dw(g, NPU_PKT_HDR(NPU_OP_COPY, 0, 8));
		dw(g, 0);
		qw(g, S.va_start);
		qw(g, S.va_start + PAGE);
		qw(g, edge_size());
		break;
	case 5:	/* LAUNCH with a random kernel id, grid or arguments */
		for (i = 0; i < NPU_LAUNCH_MAX_ARGS + 2; i++)
			args[i] = chance(50) ? below(64) : rnd();
		i = chance(80) ? below(NPU_LAUNCH_MAX_ARGS + 1) :
		    NPU_LAUNCH_MAX_ARGS + 1 + below(2);
		dw(g, NPU_PKT_HDR(NPU_OP_LAUNCH, 0, 6 + 2 * i));
		/* 0..15: NOP and unknown ids (the former math kernels) */
		dw(g, chance(50) ? below(16) :
		   (chance(50) ? NPU_KERNEL_TEST_FAULT : (uint32_t)rnd()));
		dw(g, chance(80) ? 1 : (uint32_t)rnd());
		dw(g, chance(80) ? 1 : below(3));
		dw(g, 1);
		dw(g, chance(90) ? i : (uint32_t)rnd());
		while (i--)
			qw(g, args[i] % (chance(50) ? 4096 : ~0ull));
		break;
	case 6:	/* LAUNCH_CODE at a random entry, random geometry */
		dw(g, NPU_PKT_HDR(NPU_OP_LAUNCH_CODE, 0, NPU_PKT_LAUNCH_CODE_DW));
		dw(g, rnd_flags(NPU_CODE_FLAGS_ALL));
		qw(g, chance(50) ? S.va_start + below(64) * 4 : rnd());
		for (i = 0; i < 6; i++)
			dw(g, chance(85) ? 1 : (uint32_t)rnd());
		dw(g, chance(80) ? 0 : (uint32_t)rnd());	/* scratch */
		dw(g, chance(80) ? 256 : (uint32_t)rnd());	/* stack */
		qw(g, 0);
		qw(g, chance(90) ? 0 : rnd());			/* trace */
		dw(g, 0);
		dw(g, 0);
		dw(g, 0);
		dw(g, 0);					/* nargs */
		qw(g, chance(90) ? 0 : rnd());			/* printf */
		dw(g, 0);
		dw(g, chance(95) ? 0 : 1);			/* reserved */
		break;
	case 7:	/* SEM_WAIT on an unmapped address */
		dw(g, NPU_PKT_HDR(NPU_OP_SEM_WAIT, 0, 4));
		dw(g, 0);
		qw(g, bad_ptr());
		break;
	default:	/* a valid packet with one bit flipped */
		emit_valid_packet(g);
		if (g->n > start) {
			uint32_t at = start + below(g->n - start);

			g->p[at] ^= 1u << below(32);
		}
		g->valid = false;
		break;
	}
}

/* ---- submission ------------------------------------------------------- */

static bool mapped_in(uint32_t handle, uint32_t ctx)
{
	unsigned int m;

	for (m = 0; m < MAX_MAPS; m++)
		if (S.map[m].live && S.map[m].ctx == ctx &&
		    S.map[m].handle == handle)
			return true;
	return false;
}

static uint32_t queue_for_job(bool *valid, uint32_t *ctx)
{
	struct fqueue *q = pick_live_queue();
	uint32_t id = pick_id(q ? q->id : 0, q != NULL, valid);

	*ctx = *valid ? q->ctx : 0;
	return id;
}

static void op_submit(void)
{
	static uint64_t jobs[4 * (sizeof(struct drm_npu_job) + 64) / 8];
	static uint32_t handles[8][24];
	static struct drm_npu_sync syncs[8][2][4];
	static uint32_t cmd_dw_off;
	uint8_t *jobbuf = (uint8_t *)jobs;
	struct drm_npu_submit s = { 0 };
	struct fbo *cb = S.cmdbo;
	uint32_t njobs = 1 + (chance(70) ? 0 : below(4));
	uint32_t stride = sizeof(struct drm_npu_job), j;
	uint32_t cmd_dw_max;
	bool wf = true;
	int ret;

	if (!cb || !cb->live || !cb->map)
		return;
	cmd_dw_max = (uint32_t)(cb->size / 4);
	if (cmd_dw_off >= cmd_dw_max)
		cmd_dw_off = 0;
	if (chance(5)) {	/* a larger stride, zero-filled or not */
		stride += 8 * (1 + below(8));
	}
	if (njobs * stride > sizeof(jobs))
		njobs = sizeof(jobs) / stride;
	memset(jobs, 0, sizeof(jobs));
	for (j = 0; j < njobs; j++) {
		struct drm_npu_job *jb = (void *)(jobbuf + j * stride);
		struct cmdgen g = { 0 };
		uint32_t k, n, ctx;
		bool v, mix;

		jb->queue_id = queue_for_job(&v, &ctx);
		wf = wf && v;
		/* commands: a run of mostly valid packets */
		g.p = (uint32_t *)cb->map + cmd_dw_off;
		g.max = cmd_dw_max - cmd_dw_off;
		if (g.max > 512)
			g.max = 512;
		g.ctx = ctx;
		g.valid = true;
		n = below(6);
		for (k = 0; k < n; k++) {
			if (chance(8))
				emit_bad_packet(&g);
			else
				emit_valid_packet(&g);
		}
		jb->cmd_va = cb->va + cmd_dw_off * 4ull;
		jb->cmd_size = g.n * 4;
		/* a job in an extra context must find its buffer there */
		if (ctx) {
			unsigned int m;
			bool mapped = false;

			for (m = 0; m < MAX_MAPS; m++)
				if (S.map[m].live && S.map[m].ctx == ctx &&
				    S.map[m].handle == cb->handle) {
					jb->cmd_va = S.map[m].va +
						     cmd_dw_off * 4ull;
					mapped = true;
					break;
				}
			if (!mapped && g.n)
				wf = false;
		}
		cmd_dw_off = (cmd_dw_off + g.n + 15) & ~15u;
		if (cmd_dw_off >= cmd_dw_max)
			cmd_dw_off = 0;
		(void)g.valid;	/* a bad packet makes a device fault, not an error */

		switch (below(20)) {
		case 0:
			jb->cmd_size = (uint32_t)edge_size();
			wf = false;
			break;
		case 1:
			jb->cmd_size |= 1 + below(3);	/* not a multiple of 4 */
			wf = false;
			break;
		case 2:
			jb->cmd_va = chance(50) ? bad_ptr() :
				     cb->va + cb->size - 4 * below(3);
			if (jb->cmd_size)
				wf = false;
			break;
		case 3:
			jb->flags = (uint32_t)rnd() | 1;
			wf = false;
			break;
		case 4:
			jb->cmd_size = (uint32_t)S.max_cmd + 4;
			wf = false;
			break;
		default:
			break;
		}

		/* BO list: live handles mixed with stale and foreign ones */
		jb->bo_count = chance(50) ? 0 : below(24);
		mix = chance(25);
		for (k = 0; k < jb->bo_count; k++) {
			struct fbo *b = mix ? NULL : pick_live_bo();

			if (b) {
				handles[j % 8][k] = b->handle;
				/* in an extra context: only BOs mapped there */
				if (ctx && !mapped_in(b->handle, ctx))
					wf = false;
			} else {
				handles[j % 8][k] = pick_handle(&v);
				/* a live handle, too, must be mapped there */
				wf = wf && v && (!ctx ||
					mapped_in(handles[j % 8][k], ctx));
			}
		}
		jb->bo_handles = jb->bo_count ? (uintptr_t)handles[j % 8] : 0;
		if (chance(3)) {
			jb->bo_handles = bad_ptr();
			if (jb->bo_count)
				wf = false;
		}
		if (chance(2)) {
			jb->bo_count = 1025 + below(1u << 20);
			wf = false;
		}

		/* syncs */
		for (k = 0; k < 2; k++) {
			uint32_t cnt = chance(60) ? 0 : 1 + below(3), x;

			for (x = 0; x < cnt; x++) {
				struct drm_npu_sync *sy = &syncs[j % 8][k][x];
				struct fsync *f = pick_live_sync();

				memset(sy, 0, sizeof(*sy));
				if (f && chance(85)) {
					sy->handle = f->handle;
					if (k == 1 && (S.features &
						       DRM_NPU_FEATURE_TIMELINE) &&
					    chance(40))
						sy->point = ++f->point;
					/* an in-sync without a fence: -EINVAL */
					if (k == 0)
						wf = false;
				} else {
					sy->handle = chance(50) ?
						     (uint32_t)rnd() : 0;
					wf = false;
				}
				if (chance(3)) {
					sy->flags = 1u << below(32);
					wf = false;
				}
			}
			if (k == 0) {
				jb->in_sync_count = cnt;
				jb->in_syncs = (uintptr_t)syncs[j % 8][0];
			} else {
				jb->out_sync_count = cnt;
				jb->out_syncs = (uintptr_t)syncs[j % 8][1];
			}
		}
		if (chance(2)) {
			jb->out_sync_count = 65 + below(1000);
			wf = false;
		}
	}
	s.jobs = (uintptr_t)jobs;
	s.job_count = njobs;
	s.job_stride = stride;
	switch (below(25)) {
	case 0:
		s.job_count = chance(50) ? 0 : 65 + below(1u << 16);
		wf = false;
		break;
	case 1:
		s.job_stride = chance(50) ? below(sizeof(struct drm_npu_job)) :
			       4097 + below(1u << 16);
		wf = false;
		break;
	case 2:
		s.jobs = bad_ptr();
		wf = false;
		break;
	case 3:
		s.flags = (uint32_t)rnd() | 1;
		wf = false;
		break;
	case 4:
		s.pad = 1;
		wf = false;
		break;
	case 5:
		if (stride > sizeof(struct drm_npu_job)) {
			jobbuf[sizeof(struct drm_npu_job)] = 1;	/* tail not 0 */
			wf = false;
		}
		break;
	default:
		break;
	}
	ret = npu_ioctl(S.fd, DRM_IOCTL_NPU_SUBMIT, &s);
	/* sync handles are checked for existence only; the wf of in-syncs
	 * depends on whether they have a fence yet, which is not tracked
	 */
	outcome(OP_SUBMIT, ret, wf);
	if (ret && wf && ret != -ENOMEM && ret != -ENOSPC && ret != -EBUSY)
		for (j = 0; j < njobs; j++) {
			struct drm_npu_job *jb = (void *)(jobbuf + j * stride);
			const struct drm_npu_sync *out =
				(const void *)(uintptr_t)jb->out_syncs;
			uint32_t k;

			printf("# p%d op %lu job %u: queue %u cmd %#llx+%u, %u BOs:",
			       S.proc, S.op_index, j, jb->queue_id,
			       (unsigned long long)jb->cmd_va, jb->cmd_size,
			       jb->bo_count);
			for (k = 0; k < jb->bo_count && k < 24; k++)
				printf(" %u", handles[j % 8][k]);
			printf("; out syncs:");
			for (k = 0; k < jb->out_sync_count && k < 4; k++)
				printf(" %u@%llu", out[k].handle,
				       (unsigned long long)out[k].point);
			printf("\n");
		}
}

static void op_bo_wait(void)
{
	struct drm_npu_bo_wait w = { 0 };
	bool wf;
	int ret;

	w.handle = pick_handle(&wf);
	w.timeout_ns = (int64_t)timeout_soon();
	if (chance(3)) {
		w.pad = 1;
		wf = false;
	}
	if (chance(3))
		w.timeout_ns = -1 - (int64_t)below(1000);
	ret = npu_ioctl(S.fd, DRM_IOCTL_NPU_BO_WAIT, &w);
	outcome(OP_BO_WAIT, ret, wf);
}

static void op_get_fault(void)
{
	struct drm_npu_get_fault f;
	int ret;

	memset(&f, 0, sizeof(f));
	if (chance(10))
		f.pad = (uint32_t)rnd();
	ret = npu_ioctl(S.fd, DRM_IOCTL_NPU_GET_FAULT, &f);
	outcome(OP_GET_FAULT, ret, false);
}

static void op_counters(void)
{
	/* room for any device (16 rings, 64 units): a count set at random
	 * below makes the kernel fill as many entries as the device has */
	struct drm_npu_ring_counters rings[16];
	uint64_t busy[64], cyc[64], ins[64];
	struct drm_npu_counters c = { 0 };
	bool wf = true;
	int ret;

	c.ring_count = below(9);
	c.cu_count = below(17);
	c.rings = c.ring_count ? (uintptr_t)rings : 0;
	c.cu_busy_ns = c.cu_count ? (uintptr_t)busy : 0;
	c.cu_cycles = chance(50) && c.cu_count ? (uintptr_t)cyc : 0;
	c.cu_instructions = chance(50) && c.cu_count ? (uintptr_t)ins : 0;
	switch (below(8)) {
	case 0:
		c.rings = bad_ptr();
		wf = !c.ring_count;
		break;
	case 1:
		c.ring_count = (uint32_t)rnd();
		wf = false;
		break;
	case 2:
		c.cu_busy_ns = bad_ptr();
		wf = !c.cu_count;
		break;
	case 3:
		c.cu_count = 0xffffffffu;
		wf = false;
		break;
	default:
		break;
	}
	if (!(S.features & DRM_NPU_FEATURE_COUNTERS))
		wf = false;
	ret = npu_ioctl(S.fd, DRM_IOCTL_NPU_COUNTERS, &c);
	/* a NULL pointer with a count is -EINVAL, others -EFAULT: both fine */
	outcome(OP_COUNTERS, ret, wf);
}

static void op_ctx_create(void)
{
	struct drm_npu_ctx_create c = { 0 };
	struct fctx *slot = NULL;
	bool wf = (S.features & DRM_NPU_FEATURE_CONTEXTS) != 0;
	unsigned int i;
	int ret;

	for (i = 0; i < MAX_CTXS; i++)
		if (!S.ctx[i].live)
			slot = &S.ctx[i];
	if (!slot)
		return;
	if (chance(5)) {
		c.flags = (uint32_t)rnd() | 1;
		wf = false;
	}
	if (chance(5)) {
		c.ctx_id = 1 + below(8);
		wf = false;
	}
	ret = npu_ioctl(S.fd, DRM_IOCTL_NPU_CTX_CREATE, &c);
	outcome(OP_CTX_CREATE, ret, wf);
	if (ret)
		return;
	slot->live = true;
	slot->id = c.ctx_id;
}

static void forget_ctx(uint32_t id)
{
	unsigned int i;

	for (i = 0; i < MAX_CTXS; i++)
		if (S.ctx[i].live && S.ctx[i].id == id)
			S.ctx[i].live = false;
	for (i = 0; i < MAX_MAPS; i++)
		if (S.map[i].ctx == id)
			S.map[i].live = false;
	remember_stale(id);
}

static void op_ctx_destroy(void)
{
	struct drm_npu_ctx_destroy d = { 0 };
	struct fctx *c = pick_live_ctx();
	unsigned int i;
	bool wf;
	int ret;

	d.ctx_id = pick_id(c ? c->id : 0, c != NULL, &wf);
	/* -EBUSY while a queue uses it: destroy those first, mostly */
	if (wf && chance(70))
		for (i = 0; i < MAX_QUEUES; i++)
			if (S.q[i].live && S.q[i].ctx == d.ctx_id) {
				struct drm_npu_queue_destroy qd = {
					.queue_id = S.q[i].id,
				};

				if (!npu_ioctl(S.fd, DRM_IOCTL_NPU_QUEUE_DESTROY,
					       &qd)) {
					S.q[i].live = false;
					remember_stale(S.q[i].id);
				}
			}
	if (chance(3)) {
		d.pad = 1;
		wf = false;
	}
	ret = npu_ioctl(S.fd, DRM_IOCTL_NPU_CTX_DESTROY, &d);
	outcome(OP_CTX_DESTROY, ret, wf);
	if (!ret)
		forget_ctx(d.ctx_id);
}

static void op_bo_map(void)
{
	struct drm_npu_bo_map m = { 0 };
	struct fmap *slot = NULL;
	struct fctx *c = pick_live_ctx();
	struct fbo *b = pick_live_bo();
	unsigned int i;
	bool wf = true, v;
	int ret;

	for (i = 0; i < MAX_MAPS; i++)
		if (!S.map[i].live)
			slot = &S.map[i];
	if (!slot)
		return;
	if (b && chance(85)) {
		m.handle = b->handle;
	} else {
		m.handle = pick_handle(&v);
		wf = false;
		b = NULL;
	}
	m.ctx_id = pick_id(c ? c->id : 0, c != NULL, &v);
	wf = wf && v && m.ctx_id;
	m.flags = chance(20) ? DRM_NPU_BO_MAP_READ_ONLY : 0;
	if (chance(40)) {
		m.flags |= DRM_NPU_BO_MAP_FIXED;
		switch (below(6)) {
		case 0:
			m.va = S.va_start - PAGE;
			wf = false;
			break;
		case 1:
			m.va = S.va_size - PAGE;	/* at or past the end */
			wf = false;
			break;
		case 2:
			m.va = S.va_start + 1 + below(PAGE - 1);
			wf = false;
			break;
		case 3:
			m.va = ~0ull - PAGE + 1;
			wf = false;
			break;
		default:	/* may overlap: -EBUSY */
			m.va = S.va_start + below(256) * PAGE;
			break;
		}
	} else if (chance(5)) {
		m.va = S.va_start;	/* must be 0 without FIXED */
		wf = false;
	}
	if (chance(5)) {
		m.flags = rnd_flags(0xffffffffu);
		if (m.flags & ~(DRM_NPU_BO_MAP_FIXED | DRM_NPU_BO_MAP_READ_ONLY))
			wf = false;
		if (m.flags & DRM_NPU_BO_MAP_FIXED)
			wf = false;
	}
	if (chance(3)) {
		m.pad = 1;
		wf = false;
	}
	/* a read-only userptr needs a read-only mapping */
	if (b && b->kind == BK_USERPTR && !(m.flags & DRM_NPU_BO_MAP_READ_ONLY))
		wf = false;
	ret = npu_ioctl(S.fd, DRM_IOCTL_NPU_BO_MAP, &m);
	/* -EEXIST: the BO is already mapped there (not tracked per BO) */
	outcome(OP_BO_MAP, ret == -EEXIST ? 0 : ret, wf);
	if (ret)
		return;
	slot->live = true;
	slot->ctx = m.ctx_id;
	slot->va = m.va;
	slot->handle = m.handle;
	slot->size = b ? b->size : PAGE;
}

static void op_bo_unmap(void)
{
	struct drm_npu_bo_unmap u = { 0 };
	struct fmap *m = NULL;
	unsigned int i, start = below(MAX_MAPS);
	bool wf = false;
	int ret;

	for (i = 0; i < MAX_MAPS; i++)
		if (S.map[(start + i) % MAX_MAPS].live) {
			m = &S.map[(start + i) % MAX_MAPS];
			break;
		}
	if (m && chance(85)) {
		u.ctx_id = m->ctx;
		u.va = m->va;
		wf = true;
		if (chance(5)) {
			u.va += PAGE;
			wf = false;
		}
	} else {
		u.ctx_id = below(8);
		u.va = chance(50) ? S.va_start + below(64) * PAGE : rnd();
	}
	if (chance(3)) {
		u.pad = 1;
		wf = false;
	}
	ret = npu_ioctl(S.fd, DRM_IOCTL_NPU_BO_UNMAP, &u);
	outcome(OP_BO_UNMAP, ret, wf);
	if (!ret)
		for (i = 0; i < MAX_MAPS; i++)
			if (S.map[i].live && S.map[i].ctx == u.ctx_id &&
			    S.map[i].va == u.va)
				S.map[i].live = false;
}

static void op_syncobj_create(void)
{
	struct fsync *slot = NULL;
	uint32_t h, flags;
	unsigned int i;
	bool wf = true;
	int ret;

	for (i = 0; i < MAX_SYNCS; i++)
		if (!S.sync[i].live)
			slot = &S.sync[i];
	if (!slot)
		return;
	flags = chance(30) ? DRM_SYNCOBJ_CREATE_SIGNALED : 0;
	if (chance(3)) {
		flags = (uint32_t)rnd();
		wf = false;
	}
	ret = drmSyncobjCreate(S.fd, flags, &h) ? -errno : 0;
	outcome(OP_SYNCOBJ_CREATE, ret, wf);
	if (ret)
		return;
	slot->live = true;
	slot->handle = h;
	slot->point = 0;
}

static void op_syncobj_destroy(void)
{
	struct fsync *f = pick_live_sync();
	bool wf = f && chance(85);
	uint32_t h = wf ? f->handle : (uint32_t)below(64);
	int ret;

	ret = drmSyncobjDestroy(S.fd, h) ? -errno : 0;
	outcome(OP_SYNCOBJ_DESTROY, ret, wf);
	if (!ret) {
		unsigned int i;

		for (i = 0; i < MAX_SYNCS; i++)
			if (S.sync[i].live && S.sync[i].handle == h)
				S.sync[i].live = false;
	}
}

static void op_syncobj_wait(void)
{
	uint32_t h[4];
	uint64_t pts[4];
	unsigned int n = 1 + below(4), i;
	uint32_t flags = 0;
	int ret;

	for (i = 0; i < n; i++) {
		struct fsync *f = pick_live_sync();

		h[i] = f && chance(90) ? f->handle : (uint32_t)below(64);
		pts[i] = f ? below((uint32_t)f->point + 2) : 0;
	}
	if (chance(50))
		flags |= DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL;
	if (chance(30))
		flags |= DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT;
	if (chance(3))
		flags = (uint32_t)rnd();
	if ((S.features & DRM_NPU_FEATURE_TIMELINE) && chance(40))
		ret = drmSyncobjTimelineWait(S.fd, h, pts, n,
					     (int64_t)timeout_soon(), flags,
					     NULL) ? -errno : 0;
	else
		ret = drmSyncobjWait(S.fd, h, n, (int64_t)timeout_soon(),
				     flags, NULL) ? -errno : 0;
	outcome(OP_SYNCOBJ_WAIT, ret, false);
}

/* reset, signal, transfer, sync_file export/import of a syncobj */
static void op_syncobj_misc(void)
{
	struct fsync *f = pick_live_sync(), *g = pick_live_sync();
	uint32_t h = f ? f->handle : below(64);
	int ret = 0, sfd;

	switch (below(5)) {
	case 0:
		ret = drmSyncobjReset(S.fd, &h, 1) ? -errno : 0;
		break;
	case 1:
		ret = drmSyncobjSignal(S.fd, &h, 1) ? -errno : 0;
		break;
	case 2:
		if (!(S.features & DRM_NPU_FEATURE_TIMELINE) || !g)
			return;
		ret = drmSyncobjTransfer(S.fd, g->handle, ++g->point, h,
					 f ? below((uint32_t)f->point + 1) : 0,
					 0) ? -errno : 0;
		break;
	case 3:
		ret = drmSyncobjExportSyncFile(S.fd, h, &sfd) ? -errno : 0;
		if (!ret) {
			if (g)
				drmSyncobjImportSyncFile(S.fd, g->handle, sfd);
			close(sfd);
		}
		break;
	default:
		if (f && (S.features & DRM_NPU_FEATURE_TIMELINE)) {
			uint64_t p = ++f->point;

			ret = drmSyncobjTimelineSignal(S.fd, &h, &p, 1) ?
			      -errno : 0;
		}
		break;
	}
	outcome(OP_SYNCOBJ_MISC, ret, false);
}

/* ---- sharing with the other process ----------------------------------- */

enum msg_kind { MSG_PRIME, MSG_SYNCOBJ, MSG_SYNC_FILE, MSG_HANDLE };

static void send_msg(uint8_t kind, uint32_t handle, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	uint8_t payload[5] = { kind };
	struct iovec iov = { payload, sizeof(payload) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	memcpy(payload + 1, &handle, 4);
	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	/* a full socket just drops the message */
	if (sendmsg(S.sock, &mh, MSG_DONTWAIT) < 0 && S.verbose)
		note("sendmsg: %s", strerror(errno));
}

static void op_prime_send(void)
{
	bool wf;
	uint32_t h = pick_handle(&wf);
	struct fbo *b = NULL;
	unsigned int i;
	int pfd = -1, ret;

	if (S.sock < 0 || !(S.features & DRM_NPU_FEATURE_PRIME))
		return;
	for (i = 0; i < MAX_BOS; i++)
		if (S.bo[i].live && S.bo[i].handle == h)
			b = &S.bo[i];
	ret = drmPrimeHandleToFD(S.fd, h, DRM_CLOEXEC |
				 (chance(50) ? DRM_RDWR : 0), &pfd) ? -errno : 0;
	/* device-memory and userptr BOs cannot be exported */
	outcome(OP_PRIME_SEND, ret, wf && b && b->kind != BK_USERPTR &&
		b->kind != BK_DEVMEM);
	if (!ret) {
		send_msg(MSG_PRIME, h, pfd);
		close(pfd);
	} else {
		send_msg(MSG_HANDLE, h, -1);
	}
}

static void op_sync_send(void)
{
	struct fsync *f = pick_live_sync();
	int sfd = -1, ret;
	bool as_file = chance(30);

	if (S.sock < 0 || !f)
		return;
	if (as_file)
		ret = drmSyncobjExportSyncFile(S.fd, f->handle, &sfd) ?
		      -errno : 0;
	else
		ret = drmSyncobjHandleToFD(S.fd, f->handle, &sfd) ? -errno : 0;
	/* a sync_file export of a syncobj without a fence fails */
	outcome(OP_SYNC_SEND, ret, !as_file);
	if (!ret) {
		send_msg(as_file ? MSG_SYNC_FILE : MSG_SYNCOBJ, f->handle, sfd);
		close(sfd);
	}
}

static void op_recv_import(void)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	uint8_t payload[5];
	struct iovec iov = { payload, sizeof(payload) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	uint32_t handle, h;
	int fd = -1, ret = 0;
	bool wf = true;

	if (S.sock < 0)
		return;
	if (recvmsg(S.sock, &mh, MSG_DONTWAIT) < (ssize_t)sizeof(payload))
		return;
	memcpy(&handle, payload + 1, 4);
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	if (S.nforeign < 8)
		S.foreign[S.nforeign++] = handle;
	else
		S.foreign[below(8)] = handle;
	if (fd < 0)
		return;
	/* now and then import an fd as the wrong kind */
	if (chance(10)) {
		payload[0] = (uint8_t)below(3);
		wf = false;
	}
	switch (payload[0]) {
	case MSG_PRIME: {
		struct fbo *b = free_bo_slot();

		ret = drmPrimeFDToHandle(S.fd, fd, &h) ? -errno : 0;
		if (!ret && b) {
			bool known = false;
			unsigned int i;

			/* importing our own BO back gives its handle */
			for (i = 0; i < MAX_BOS; i++)
				if (S.bo[i].live && S.bo[i].handle == h)
					known = true;
			if (!known) {
				memset(b, 0, sizeof(*b));
				b->live = true;
				b->kind = BK_IMPORTED;
				b->handle = h;
				bo_fill_from_info(b);
			}
		}
		break;
	}
	case MSG_SYNCOBJ: {
		struct fsync *slot = NULL;
		unsigned int i;

		ret = drmSyncobjFDToHandle(S.fd, fd, &h) ? -errno : 0;
		for (i = 0; i < MAX_SYNCS && !ret; i++)
			if (!S.sync[i].live)
				slot = &S.sync[i];
		if (slot) {
			slot->live = true;
			slot->handle = h;
			slot->point = 0;
		} else if (!ret) {
			drmSyncobjDestroy(S.fd, h);
		}
		break;
	}
	default: {
		struct fsync *f = pick_live_sync();

		if (f)
			ret = drmSyncobjImportSyncFile(S.fd, f->handle, fd) ?
			      -errno : 0;
		break;
	}
	}
	close(fd);
	outcome(OP_RECV_IMPORT, ret, wf);
}

/* an ioctl in the driver's range with a random direction, size and bytes */
static void op_raw_ioctl(void)
{
	static uint8_t buf[512];
	uint32_t nr = below(0x20);
	uint32_t size = chance(50) ? 8 * below(10) : below(512);
	uint32_t dir = below(4);
	unsigned long req;
	unsigned int i;
	void *arg = buf;
	int ret;

	/*
	 * The destroy and unmap ioctls could remove objects this process
	 * tracks as live, and BO_PROTECT could make a BO it writes to
	 * read-only; the structured operations and kselftests cover them.
	 */
	if (nr == DRM_NPU_QUEUE_DESTROY || nr == DRM_NPU_CTX_DESTROY ||
	    nr == DRM_NPU_BO_UNMAP || nr == DRM_NPU_BO_PROTECT ||
	    nr == DRM_NPU_USERQ_DESTROY)
		nr += 0x10;
	/* random bytes could make a long sleep of it: op_userq_misc waits */
	if (nr == DRM_NPU_USERQ_WAIT_MEM)
		nr = DRM_NPU_USERQ_QUERY;
	nr += DRM_COMMAND_BASE;
	for (i = 0; i < size && i < sizeof(buf); i++)
		buf[i] = chance(70) ? 0 : (uint8_t)rnd();
	if (chance(10))
		arg = (void *)(uintptr_t)bad_ptr();
	req = _IOC(dir, DRM_IOCTL_BASE, nr, size & _IOC_SIZEMASK);
	ret = ioctl(S.fd, req, arg) ? -errno : 0;
	/* any errno is acceptable: the point is the kernel's health */
	if (ret == -ENOTTY || (ret && !errno_documented(-ret)))
		ret = -EINVAL;
	outcome(OP_RAW_IOCTL, ret, false);
}

static void run_ops(unsigned long n);

/* a short-lived child using the inherited file, then exiting */
static void op_fork(void)
{
	uint64_t child_seed = rnd();
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		outcome(OP_FORK, -errno, false);
		return;
	}
	if (pid == 0) {
		rng_state = child_seed;
		S.sock = -1;
		S.proc += 10;
		/* the child leaves the parent's objects to the parent */
		S.cmdbo = NULL;
		memset(S.bo, 0, sizeof(S.bo));
		memset(S.q, 0, sizeof(S.q));
		memset(S.map, 0, sizeof(S.map));
		memset(S.ctx, 0, sizeof(S.ctx));
		memset(S.sync, 0, sizeof(S.sync));
		/* the doorbell page is not inherited (VM_DONTCOPY) */
		memset(S.uq, 0, sizeof(S.uq));
		S.db = NULL;
		run_ops(10 + below(30));
		_exit(S.bad ? 1 : 0);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) {
		printf("# p%d op %lu FORK: child ended abnormally (status %#x)\n",
		       S.proc, S.op_index, st);
		S.bad++;
		outcome(OP_FORK, -EIO, true);
		return;
	}
	if (WEXITSTATUS(st))
		S.bad++;
	outcome(OP_FORK, 0, true);
}

static void reset_state(void)
{
	unsigned int i;

	for (i = 0; i < MAX_BOS; i++) {
		if (S.bo[i].live)
			remember_stale(S.bo[i].handle);
		S.bo[i].live = false;
	}
	for (i = 0; i < MAX_QUEUES; i++)
		S.q[i].live = false;
	for (i = 0; i < MAX_CTXS; i++)
		S.ctx[i].live = false;
	for (i = 0; i < MAX_MAPS; i++)
		S.map[i].live = false;
	for (i = 0; i < MAX_SYNCS; i++)
		S.sync[i].live = false;
	S.cmdbo = NULL;
	/* the CPU mappings of the old file's user queues keep it open */
	for (i = 0; i < MAX_UQS; i++) {
		if (S.uq[i].ring.map)
			munmap(S.uq[i].ring.map, S.uq[i].ring.size);
		if (S.uq[i].wb.map)
			munmap(S.uq[i].wb.map, S.uq[i].wb.size);
		if (S.uq[i].data.map)
			munmap(S.uq[i].data.map, S.uq[i].data.size);
	}
	memset(S.uq, 0, sizeof(S.uq));
	if (S.db)
		munmap(S.db, PAGE);
	S.db = NULL;
}

static int open_dev(void)
{
	int fd = npu_open();

	if (fd < 0) {
		printf("# p%d: cannot open the npu device\n", S.proc);
		return -1;
	}
	return fd;
}

/* close the file with whatever is in flight, then open a new one */
static void op_reopen(void)
{
	close(S.fd);
	reset_state();
	S.fd = open_dev();
	if (S.fd < 0) {
		outcome(OP_REOPEN, -ENODEV, true);
		exit(1);
	}
	outcome(OP_REOPEN, 0, true);
}

/* ---- user queues ------------------------------------------------------ */

static void uq_free_bos(struct fuq *u)
{
	npu_bo_free(S.fd, &u->ring);
	npu_bo_free(S.fd, &u->wb);
	npu_bo_free(S.fd, &u->data);
	memset(u, 0, sizeof(*u));
}

static struct fuq *pick_live_uq(void)
{
	unsigned int i, start = below(MAX_UQS);

	for (i = 0; i < MAX_UQS; i++)
		if (S.uq[(start + i) % MAX_UQS].live)
			return &S.uq[(start + i) % MAX_UQS];
	return NULL;
}

static void op_userq_create(void)
{
	struct drm_npu_userq_create c = { 0 };
	struct fuq *slot = NULL;
	bool wf = true;
	unsigned int i;
	int ret;

	if (!(S.features & DRM_NPU_FEATURE_USER_QUEUES))
		return;
	for (i = 0; i < MAX_UQS; i++)
		if (!S.uq[i].live)
			slot = &S.uq[i];
	if (!slot)
		return;
	slot->ring_size = 4096u << below(3);
	if (npu_bo_new(S.fd, slot->ring_size, 0, &slot->ring) ||
	    npu_bo_new(S.fd, PAGE, 0, &slot->wb) ||
	    npu_bo_new(S.fd, PAGE, 0, &slot->data)) {
		uq_free_bos(slot);
		return;
	}
	c.kind = chance(70) ? DRM_NPU_RING_KIND_COMPUTE : DRM_NPU_RING_KIND_COPY;
	c.priority = chance(70) ? DRM_NPU_PRIORITY_NORMAL :
		     DRM_NPU_PRIORITY_LOW;
	c.ring_va = slot->ring.va;
	c.ring_size = slot->ring_size;
	c.wb_va = slot->wb.va + 64 * below(PAGE / 64);
	switch (below(16)) {
	case 0:
		c.flags = 1u << below(32);
		wf = false;
		break;
	case 1:
		c.kind = 2 + below(100);
		wf = false;
		break;
	case 2:
		c.priority = DRM_NPU_PRIORITY_HIGH;
		wf = geteuid() == 0;
		break;
	case 3:
		c.ring_size = chance(50) ? (uint32_t)rnd() : 4096u << below(16);
		wf = c.ring_size <= slot->ring_size && c.ring_size >= 4096 &&
		     !(c.ring_size & (c.ring_size - 1));
		break;
	case 4:
		c.ring_va += chance(50) ? 4 * below(1024) : rnd();
		wf = false;
		break;
	case 5:
		c.wb_va = chance(50) ? slot->wb.va + below(PAGE) : rnd();
		wf = false;
		break;
	case 6:
		c.queue_id = 1 + below(1000);
		wf = false;
		break;
	case 7: {
		struct fctx *x = pick_live_ctx();
		bool v;

		/* the BOs are not mapped in an extra context */
		c.ctx_id = pick_id(x ? x->id : 0, x != NULL, &v);
		wf = false;
		break;
	}
	case 8:
		c.ring_va = S.va_start + PAGE * below(1u << 20);
		wf = false;
		break;
	default:
		break;
	}
	ret = npu_ioctl(S.fd, DRM_IOCTL_NPU_USERQ_CREATE, &c);
	outcome(OP_USERQ_CREATE, ret, wf);
	if (ret) {
		uq_free_bos(slot);
		return;
	}
	slot->live = true;
	slot->id = c.queue_id;
	slot->ring_size = c.ring_size;
	slot->doorbell_offset = c.doorbell_offset;
	if (!S.db) {
		S.db = mmap(NULL, PAGE, PROT_WRITE, MAP_SHARED, S.fd,
			    c.mmap_offset);
		if (S.db == MAP_FAILED) {
			S.db = NULL;
			outcome(OP_USERQ_CREATE, -errno, true);
		}
	}
}

static void op_userq_destroy(void)
{
	struct drm_npu_userq_destroy d = { 0 };
	struct fuq *u = pick_live_uq();
	unsigned int i;
	bool wf;
	int ret;

	d.queue_id = pick_id(u ? u->id : 0, u != NULL, &wf);
	if (chance(3)) {
		d.pad = 1;
		wf = false;
	}
	ret = npu_ioctl(S.fd, DRM_IOCTL_NPU_USERQ_DESTROY, &d);
	outcome(OP_USERQ_DESTROY, ret, wf);
	if (ret)
		return;
	for (i = 0; i < MAX_UQS; i++)
		if (S.uq[i].live && S.uq[i].id == d.queue_id) {
			uq_free_bos(&S.uq[i]);
			remember_stale(d.queue_id);
		}
}

/* Packets into @u's ring (valid ones and garbage), then the doorbell. */
static void uq_write_packets(struct fuq *u)
{
	volatile struct npu_uq_wb *wb = u->wb.map;
	uint32_t *ring = u->ring.map;
	uint64_t room, n, i, data = u->data.va;

	if (!S.db || !ring)
		return;
	room = u->ring_size - (u->wptr - wb->rptr);
	if (u->wptr < wb->rptr || room > u->ring_size)
		room = 0;	/* the owner's scribbles: start over below */
	n = below(64) * 4;
	if (n > room)
		n = room;
	for (i = 0; i + 24 <= n; ) {
		uint64_t at = data + 32 * below(64);
		uint32_t p[6] = { 0 };
		unsigned int k;

		switch (below(6)) {
		case 0:	/* FILL of a word of the data BO */
		case 1:	/* SIGNAL into the data BO, nobody armed */
			p[0] = NPU_PKT_HDR(chance(50) ? NPU_OP_FILL :
					   NPU_OP_SIGNAL, 0, 6);
			p[1] = (uint32_t)rnd();
			p[2] = (uint32_t)at;
			p[3] = (uint32_t)(at >> 32);
			p[4] = 4;
			break;
		case 2:	/* a NOP */
			p[0] = NPU_PKT_HDR(NPU_OP_NOP, 0, 6);
			break;
		default:	/* garbage: any opcode, length, fields */
			for (k = 0; k < 6; k++)
				p[k] = (uint32_t)rnd();
			if (chance(50))
				p[0] = NPU_PKT_HDR(below(0x20), 0, 1 + below(8));
			break;
		}
		for (k = 0; k < 6; k++) {
			ring[((u->wptr + i) & (u->ring_size - 1)) / 4] = p[k];
			i += 4;
		}
	}
	u->wptr += i;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	/* now and then a doorbell value the device must refuse */
	*(volatile uint64_t *)((char *)S.db + u->doorbell_offset) =
		chance(3) ? rnd() : u->wptr;
}

static void op_userq_misc(void)
{
	struct fuq *u = pick_live_uq();
	struct fsync *s;
	bool wf;
	int ret;

	switch (below(4)) {
	case 0: {
		struct drm_npu_userq_query q = { 0 };

		q.queue_id = pick_id(u ? u->id : 0, u != NULL, &wf);
		ret = npu_ioctl(S.fd, DRM_IOCTL_NPU_USERQ_QUERY, &q);
		outcome(OP_USERQ_MISC, ret, wf);
		break;
	}
	case 1: {
		struct drm_npu_userq_wait_mem w = { 0 };

		w.addr = u && chance(80) ? u->data.va + 32 * below(128) :
			 rnd();
		w.value = below(4);
		w.timeout_ns = (int64_t)timeout_soon();
		w.queue_id = u && chance(50) ? u->id : 0;
		if (u && chance(15)) {
			w.flags = DRM_NPU_WAIT_MEM_RPTR;
			w.addr = 0;
			w.value = u->wptr;
			w.queue_id = u->id;
		}
		if (chance(5))
			w.flags = (uint32_t)rnd();
		if (chance(5))
			w.pad = pad32();
		ret = npu_ioctl(S.fd, DRM_IOCTL_NPU_USERQ_WAIT_MEM, &w);
		/* -ETIME, -ECANCELED are answers, not failures */
		outcome(OP_USERQ_MISC, ret, false);
		break;
	}
	case 2: {
		struct drm_npu_userq_signal sg = { 0 };

		s = pick_live_sync();
		sg.queue_id = u ? u->id : (uint32_t)rnd();
		sg.handle = s ? s->handle : (uint32_t)rnd();
		sg.wptr = chance(70) ? 0 : (u && chance(50) ? u->wptr : rnd());
		sg.point = s && s->point && chance(50) ? ++s->point : 0;
		ret = npu_ioctl(S.fd, DRM_IOCTL_NPU_USERQ_SIGNAL, &sg);
		outcome(OP_USERQ_MISC, ret, false);
		break;
	}
	default:
		if (u)
			uq_write_packets(u);
		break;
	}
}

static void (*const op_fn[OP_COUNT])(void) = {
	[OP_GET_PARAM] = op_get_param, [OP_BO_CREATE] = op_bo_create,
	[OP_BO_INFO] = op_bo_info, [OP_USERPTR] = op_userptr,
	[OP_GEM_CLOSE] = op_gem_close, [OP_MMAP] = op_mmap,
	[OP_QUEUE_CREATE] = op_queue_create,
	[OP_QUEUE_DESTROY] = op_queue_destroy, [OP_SUBMIT] = op_submit,
	[OP_BO_WAIT] = op_bo_wait, [OP_GET_FAULT] = op_get_fault,
	[OP_COUNTERS] = op_counters, [OP_CTX_CREATE] = op_ctx_create,
	[OP_CTX_DESTROY] = op_ctx_destroy, [OP_BO_MAP] = op_bo_map,
	[OP_BO_UNMAP] = op_bo_unmap, [OP_SYNCOBJ_CREATE] = op_syncobj_create,
	[OP_SYNCOBJ_DESTROY] = op_syncobj_destroy,
	[OP_SYNCOBJ_WAIT] = op_syncobj_wait,
	[OP_SYNCOBJ_MISC] = op_syncobj_misc, [OP_PRIME_SEND] = op_prime_send,
	[OP_SYNC_SEND] = op_sync_send, [OP_RECV_IMPORT] = op_recv_import,
	[OP_RAW_IOCTL] = op_raw_ioctl, [OP_FORK] = op_fork,
	[OP_REOPEN] = op_reopen, [OP_USERQ_CREATE] = op_userq_create,
	[OP_USERQ_DESTROY] = op_userq_destroy, [OP_USERQ_MISC] = op_userq_misc,
};

static enum op pick_op(void)
{
	static unsigned int total;
	unsigned int i, r;

	if (!total)
		for (i = 0; i < OP_COUNT; i++)
			total += op_weight[i];
	r = below(total);
	for (i = 0; i < OP_COUNT; i++) {
		if (r < op_weight[i])
			return (enum op)i;
		r -= op_weight[i];
	}
	return OP_GET_PARAM;
}

static bool child_avoids(enum op op)
{
	switch (op) {
	case OP_FORK: case OP_REOPEN: case OP_GEM_CLOSE: case OP_QUEUE_DESTROY:
	case OP_CTX_DESTROY: case OP_BO_UNMAP: case OP_SYNCOBJ_DESTROY:
	case OP_SYNCOBJ_MISC: case OP_USERQ_DESTROY:
		return true;
	default:
		return false;
	}
}

static void run_ops(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		enum op op = pick_op();

		/*
		 * A forked child shares the parent's file: it neither forks
		 * again nor destroys anything (a stale number it holds may be
		 * a live object of the parent's by now).
		 */
		if (S.proc >= 10 && child_avoids(op))
			op = OP_SUBMIT;
		S.op_index = i;
		note("%s", op_names[op]);
		op_fn[op]();
	}
}

static void query_device(void)
{
	S.features = npu_param(S.fd, DRM_NPU_PARAM_FEATURES);
	S.va_start = npu_param(S.fd, DRM_NPU_PARAM_VA_START);
	S.va_size = npu_param(S.fd, DRM_NPU_PARAM_VA_SIZE);
	S.max_cmd = npu_param(S.fd, DRM_NPU_PARAM_MAX_CMD_SIZE);
	S.compute_rings = (uint32_t)npu_param(S.fd,
					      DRM_NPU_PARAM_NUM_COMPUTE_RINGS);
	S.copy_rings = (uint32_t)npu_param(S.fd, DRM_NPU_PARAM_NUM_COPY_RINGS);
}

static void watchdog(int sig)
{
	static const char msg[] = "# watchdog: a fuzzing process is stuck\n";

	(void)sig;
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

/* one fuzzing process: returns its exit status */
static int fuzz_proc(int proc, uint64_t seed, unsigned long ops, int sock)
{
	S.proc = proc;
	S.sock = sock;
	rng_state = seed ^ (0x5851f42d4c957f2dull * (uint64_t)(proc + 1));
	S.fd = open_dev();
	if (S.fd < 0)
		return 2;
	query_device();
	signal(SIGALRM, watchdog);
	alarm(WATCHDOG_S);
	run_ops(ops);
	alarm(0);
	close(S.fd);
	return S.bad ? 1 : 0;
}

/* ---- after fuzzing: a known-good job on a fresh file ----------------- */

static int check_device(void)
{
	struct npu_cmd c;
	struct npu_bo dst, src;
	uint32_t q, so, i;
	int fd = open_dev(), ret, bad = 0;

	if (fd < 0)
		return -1;
	if (npu_cmd_new(fd, &c, 1 << 16) || npu_bo_new(fd, 8192, 0, &dst) ||
	    npu_bo_new(fd, 8192, 0, &src) ||
	    npu_queue_new(fd, DRM_NPU_RING_KIND_COMPUTE,
			  DRM_NPU_PRIORITY_NORMAL, DRM_NPU_RING_ANY, &q) ||
	    drmSyncobjCreate(fd, 0, &so)) {
		printf("# check: setup failed: %s\n", strerror(errno));
		close(fd);
		return -1;
	}
	for (i = 0; i < 2048; i++)
		((uint32_t *)src.map)[i] = i * 2654435761u;
	npu_emit_fill(&c, dst.va, 0xa5a5f00d, 4096);
	npu_emit_copy(&c, src.va, dst.va + 4096, 4096);
	/* work of the fuzzing processes may still be draining (hangs) */
	{
		uint64_t va;
		uint32_t size;

		npu_cmd_end(&c, &va, &size);
		ret = npu_submit_one(fd, q, va, size, so);
		if (!ret)
			ret = npu_syncobj_wait(fd, so, 120ull * 1000000000ull);
		if (!ret)
			ret = npu_syncobj_error(fd, so);
	}
	if (ret) {
		printf("# check: job failed: %s\n", strerror(-ret));
		close(fd);
		return -1;
	}
	for (i = 0; i < 1024; i++)
		if (((uint32_t *)dst.map)[i] != 0xa5a5f00d)
			bad++;
	if (bad)
		printf("# check: %d of 1024 words wrong after FILL (first %#x)\n",
		       bad, ((uint32_t *)dst.map)[0]);
	for (i = 1024; i < 2048; i++)
		if (((uint32_t *)dst.map)[i] != (i - 1024) * 2654435761u)
			bad++;
	if (bad)
		printf("# check: %d words wrong after FILL and COPY\n", bad);
	npu_bo_free(fd, &dst);
	npu_bo_free(fd, &src);
	npu_bo_free(fd, &c.bo);
	close(fd);
	return bad ? -1 : 0;
}

static void print_counts(void)
{
	unsigned long tot[RES_COUNT] = { 0 };
	unsigned int i, r, e;

	printf("# %-18s %8s %8s %8s  errnos\n", "operation", "ok", "error",
	       "bad");
	for (i = 0; i < OP_COUNT; i++) {
		char hist[256] = "";
		size_t len = 0;

		for (e = 1; e < 140; e++)
			if (stats->errno_hist[i][e] && len < sizeof(hist) - 32)
				len += (size_t)snprintf(hist + len,
							sizeof(hist) - len,
							" %s:%lu",
							strerrorname_np((int)e) ?
							strerrorname_np((int)e) :
							"?",
							stats->errno_hist[i][e]);
		printf("# %-18s %8lu %8lu %8lu %s\n", op_names[i],
		       stats->n[i][RES_OK], stats->n[i][RES_ERR],
		       stats->n[i][RES_BAD], hist);
		for (r = 0; r < RES_COUNT; r++)
			tot[r] += stats->n[i][r];
	}
	printf("# %-18s %8lu %8lu %8lu\n", "total", tot[RES_OK], tot[RES_ERR],
	       tot[RES_BAD]);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: npu_fuzz [--seed N] [--ops M] [--procs 1|2] [--user UID] [--verbose]\n"
		"       npu_fuzz --check   (only the known-good job)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t seed = 0;
	unsigned long ops = 1000;
	int procs = 2, i, sv[2] = { -1, -1 }, status[2] = { 0, 0 }, t = 0;
	bool have_seed = false, check_only = false;
	long uid = -1;
	pid_t pid[2];

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			seed = strtoull(argv[++i], NULL, 0);
			have_seed = true;
		} else if (!strcmp(argv[i], "--ops") && i + 1 < argc) {
			ops = strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--procs") && i + 1 < argc) {
			procs = atoi(argv[++i]);
			if (procs < 1 || procs > 2)
				usage();
		} else if (!strcmp(argv[i], "--user") && i + 1 < argc) {
			uid = strtol(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--verbose")) {
			S.verbose = true;
		} else if (!strcmp(argv[i], "--check")) {
			check_only = true;
		} else {
			usage();
		}
	}
	if (!have_seed) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
		       (uint64_t)getpid();
	}
	if (uid >= 0 && (setgroups(0, NULL) || setgid((gid_t)uid) ||
			 setuid((uid_t)uid))) {
		perror("npu_fuzz: dropping privileges");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");
	if (check_only) {
		printf("1..1\n");
		if (check_device()) {
			printf("not ok 1 - a FILL and a COPY give the right data\n");
			return 1;
		}
		printf("ok 1 - a FILL and a COPY give the right data\n");
		return 0;
	}
	printf("1..%d\n", procs + 1);
	printf("# seed %" PRIu64 ", %lu operations in each of %d processes, uid %d\n",
	       seed, ops, procs, (int)getuid());
	printf("# replay: npu_fuzz --seed %" PRIu64 " --ops %lu --procs %d\n",
	       seed, ops, procs);
	stats = mmap(NULL, sizeof(*stats), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (stats == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	if (procs == 2 && socketpair(AF_UNIX, SOCK_DGRAM, 0, sv)) {
		perror("socketpair");
		return 2;
	}
	for (i = 0; i < procs; i++) {
		pid[i] = fork();
		if (pid[i] < 0) {
			perror("fork");
			return 2;
		}
		if (pid[i] == 0) {
			if (procs == 2)
				close(sv[1 - i]);
			_exit(fuzz_proc(i, seed, ops,
					procs == 2 ? sv[i] : -1));
		}
	}
	if (procs == 2) {
		close(sv[0]);
		close(sv[1]);
	}
	for (i = 0; i < procs; i++)
		waitpid(pid[i], &status[i], 0);
	for (i = 0; i < procs; i++) {
		bool ok = WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0;

		printf("%s %d - process %d: %lu operations, only documented errors%s",
		       ok ? "ok" : "not ok", ++t, i, ops,
		       ok ? "\n" : "");
		if (!ok) {
			if (WIFSIGNALED(status[i]))
				printf(" (killed by signal %d)\n",
				       WTERMSIG(status[i]));
			else
				printf(" (exit status %d)\n",
				       WEXITSTATUS(status[i]));
		}
		if (!ok && i < 2 && stats->first_bad[i][0])
			printf("%s\n", stats->first_bad[i]);
		if (!ok)
			printf("# failing seed: npu_fuzz --seed %" PRIu64
			       " --ops %lu --procs %d\n", seed, ops, procs);
	}
	print_counts();
	if (check_device()) {
		printf("not ok %d - the device runs a FILL and a COPY after fuzzing\n",
		       ++t);
		status[0] = 1;
	} else {
		printf("ok %d - the device runs a FILL and a COPY after fuzzing\n",
		       ++t);
	}
	for (i = 0; i < procs; i++)
		if (!WIFEXITED(status[i]) || WEXITSTATUS(status[i]))
			return 1;
	return 0;
}
