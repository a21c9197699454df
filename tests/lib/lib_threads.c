/* SPDX-License-Identifier: MIT */
/*
 * lib_threads: many threads on one device (each with its own stream, plus
 * all of them on the legacy stream and on one shared stream), results
 * checked against the CPU; copies the CPU does hold no other thread up;
 * and no file descriptors leaked after destroying everything
 * (/proc/self/fd is counted).
 */
#define _GNU_SOURCE	/* pthread_timedjoin_np */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/userfaultfd.h>

#include "tap.h"

#define THREADS 8
#define ITERS 25
#define N 8192

static npu_stream_t shared;
static atomic_int failures, callbacks;

static void cb(void *p)
{
	(void)p;
	atomic_fetch_add(&callbacks, 1);
}

static void *thread_main(void *arg)
{
	int id = (int)(intptr_t)arg, it, i;
	float *x = malloc(N * 4), *o = malloc(N * 4);
	npu_stream_t s;
	npu_event_t e;
	void *dx, *dy;

	if (npu_stream_create(&s, id % 2 ? NPU_STREAM_NON_BLOCKING : 0, id % 3 - 1) ||
	    npu_event_create(&e, 0) || npu_malloc(&dx, N * 4) ||
	    npu_malloc(&dy, N * 4)) {
		atomic_fetch_add(&failures, 1);
		return NULL;
	}
	for (it = 0; it < ITERS; it++) {
		npu_stream_t use = it % 5 == 4 ? NULL : it % 5 == 3 ? shared : s;
		float a = (float)(id + it);

		for (i = 0; i < N; i++)
			x[i] = (float)(i % 17) + (float)id;
		uint64_t fa[3] = { npu_arg_ptr(dy), N, npu_arg_f32(1.0f) };
		uint64_t sa[4] = { npu_arg_ptr(dx), npu_arg_ptr(dy), N, npu_arg_f32(a) };

		if (npu_memcpy_async(dx, x, N * 4, NPU_MEMCPY_HOST_TO_DEVICE, use) ||
		    npu_launch(NPU_K_FILL_F32, npu_grid(2, 1, 1), fa, 3, use, 0) ||
		    npu_launch(NPU_K_SAXPY_F32, npu_grid(2, 1, 1), sa, 4, use, 0) ||
		    npu_event_record(e, use) ||
		    npu_launch_host_func(use, cb, NULL) ||
		    npu_memcpy_async(o, dy, N * 4, NPU_MEMCPY_DEVICE_TO_HOST, use) ||
		    npu_event_synchronize(e)) {
			atomic_fetch_add(&failures, 1);
			break;
		}
		for (i = 0; i < N; i++)
			if (!feq(o[i], 1.0f + a * x[i])) {
				atomic_fetch_add(&failures, 1);
				break;
			}
	}
	if (npu_stream_destroy(s) || npu_event_destroy(e) || npu_free(dx) ||
	    npu_free(dy))
		atomic_fetch_add(&failures, 1);
	free(x);
	free(o);
	return NULL;
}

static void test_threads(void)
{
	pthread_t t[THREADS];
	int i;

	MUST(npu_stream_create(&shared, 0, 0));
	for (i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)i);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	MUST(npu_device_synchronize());
	tap_ok(failures == 0, "%d threads x %d iterations on own, shared and legacy "
	       "streams: %d failures", THREADS, ITERS, (int)failures);
	tap_ok(callbacks == THREADS * ITERS, "all %d host functions ran",
	       (int)callbacks);
	MUST(npu_stream_destroy(shared));
}

static void test_fd_leaks(void)
{
	int before, after, i, fd;
	npu_stream_t s[20];
	npu_event_t e[50];
	void *p[10];

	MUST(npu_device_synchronize());		/* library and device open */
	before = count_fds();
	for (i = 0; i < 20; i++) {
		MUST(npu_stream_create(&s[i], i % 2, 0));
		MUST(spin(s[i], 1000));
		MUST(npu_launch_host_func(s[i], cb, NULL));
	}
	for (i = 0; i < 50; i++) {
		MUST(npu_event_create(&e[i], 0));
		MUST(npu_event_record(e[i], s[i % 20]));
		MUST(npu_event_export_fd(e[i], &fd));
		close(fd);
	}
	for (i = 0; i < 10; i++)
		MUST(i % 2 ? npu_host_alloc(&p[i], 65536, 0) : npu_malloc(&p[i], 65536));
	for (i = 0; i < 20; i++)
		MUST(npu_stream_destroy(s[i]));
	for (i = 0; i < 50; i++)
		MUST(npu_event_destroy(e[i]));
	for (i = 0; i < 10; i++)
		MUST(i % 2 ? npu_host_free(p[i]) : npu_free(p[i]));
	after = count_fds();
	tap_ok(before == after, "no fd leaked after destroying 20 streams, 50 "
	       "events, 10 allocations (%d -> %d)", before, after);
}

/* more blocking streams with pending work than one job can wait on: the
 * legacy stream must still wait for all of them */
static void test_many_streams(void)
{
	enum { NS = 100, PER = 256 };
	npu_stream_t s[NS];
	float *h = malloc(NS * PER * 4);
	void *d;
	int i, j, ok = 1;

	MUST(npu_malloc(&d, NS * PER * 4));
	MUST(npu_memset(d, 0, NS * PER * 4));
	for (i = 0; i < NS; i++) {
		uint64_t a[3] = { npu_arg_ptr((char *)d + i * PER * 4), PER,
				  npu_arg_f32((float)i) };

		MUST(npu_stream_create(&s[i], 0, 0));
		MUST(spin(s[i], 1000000));
		MUST(npu_launch(NPU_K_FILL_F32, npu_grid(1, 1, 1), a, 3, s[i], 0));
	}
	ST(npu_memcpy(h, d, NS * PER * 4, NPU_MEMCPY_DEVICE_TO_HOST), NPU_SUCCESS,
	   "legacy copy after work on %d blocking streams", NS);
	for (i = 0; i < NS; i++)
		for (j = 0; j < PER; j++)
			ok &= h[i * PER + j] == (float)i;
	tap_ok(ok, "it waited for all %d streams", NS);
	for (i = 0; i < NS; i++)
		MUST(npu_stream_destroy(s[i]));
	npu_free(d);
	free(h);
}

/*
 * Copies the CPU does (host to host, and a pageable side through a pinned
 * bounce buffer) must not hold the device lock while the bytes move:
 * another thread's queries and launches go on meanwhile. Made exact with
 * userfaultfd: the copy's pageable side is a registered area with no
 * pages, so the library's memcpy stops at the first page until the test
 * fills the area; while it is stopped there, a query, a launch and a
 * synchronize of another stream on another thread must finish.
 */
struct stall {
	int uffd;
	unsigned char *area;
	size_t len;
};

static int stall_init(struct stall *st, size_t len)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;

	st->len = len;
	st->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	if (st->uffd < 0)
		return -1;
	st->area = mmap(NULL, len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(&reg, 0, sizeof(reg));
	reg.range.start = (uintptr_t)st->area;
	reg.range.len = len;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (st->area == MAP_FAILED || ioctl(st->uffd, UFFDIO_API, &api) ||
	    ioctl(st->uffd, UFFDIO_REGISTER, &reg)) {
		close(st->uffd);
		return -1;
	}
	return 0;
}

/* Wait (10 s at most) until a thread is stopped on a page of the area. */
static int stall_wait(struct stall *st)
{
	struct pollfd p = { .fd = st->uffd, .events = POLLIN };
	struct uffd_msg m;

	if (poll(&p, 1, 10000) != 1 || read(st->uffd, &m, sizeof(m)) != sizeof(m))
		return -1;
	return m.event == UFFD_EVENT_PAGEFAULT ? 0 : -1;
}

/* Fill the whole area with data[0..len) (which wakes the stopped thread)
 * and release it. */
static void stall_release(struct stall *st, const void *data)
{
	size_t done = 0;

	while (done < st->len) {
		struct uffdio_copy c = {
			.dst = (uintptr_t)st->area + done,
			.src = (uintptr_t)data + done,
			.len = st->len - done,
		};

		if (ioctl(st->uffd, UFFDIO_COPY, &c) && c.copy <= 0)
			break;
		done += c.copy > 0 ? (size_t)c.copy : st->len - done;
	}
	close(st->uffd);
}

struct copy_args {
	void *dst;
	const void *src;
	size_t n;
	npu_memcpy_kind_t kind;
	npu_status_t st;
};

static void *copy_main(void *arg)
{
	struct copy_args *c = arg;

	c->st = npu_memcpy(c->dst, c->src, c->n, c->kind);
	return NULL;
}

static npu_stream_t probe_stream;

static void *probe_main(void *arg)
{
	npu_status_t *st = arg, q = npu_stream_query(probe_stream);

	*st = q == NPU_ERROR_NOT_READY ? NPU_SUCCESS : q;
	if (!*st)
		*st = npu_launch(NPU_K_NOP, npu_grid(1, 1, 1), NULL, 0, probe_stream, 0);
	if (!*st)
		*st = npu_stream_synchronize(probe_stream);
	return NULL;
}

/* Start c on a thread, stop it on area, probe, release; true if the probe
 * finished while the copy was stopped. */
static int copy_stalled(struct copy_args *c, struct stall *st,
			const void *fill)
{
	pthread_t ct, pt;
	struct timespec dl;
	npu_status_t pst = NPU_ERROR_NOT_READY;
	int stopped, probed;

	pthread_create(&ct, NULL, copy_main, c);
	stopped = !stall_wait(st);
	pthread_create(&pt, NULL, probe_main, &pst);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 5;
	probed = stopped && !pthread_timedjoin_np(pt, NULL, &dl);
	stall_release(st, fill);
	pthread_join(ct, NULL);
	if (!probed)
		pthread_join(pt, NULL);
	if (!stopped)
		tap_diag("  the copy never stopped on the registered area");
	return probed && pst == NPU_SUCCESS;
}

static void test_copy_unlocked(void)
{
	enum { LEN = 4 << 20 };
	unsigned char *pat = malloc(LEN), *b = malloc(LEN);
	struct copy_args c;
	struct stall st;
	void *d;
	size_t i;
	int ok;

	if (stall_init(&st, LEN)) {
		tap_skip("userfaultfd: %s", strerror(errno));
		free(pat);
		free(b);
		return;
	}
	MUST(npu_stream_create(&probe_stream, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_malloc(&d, LEN));
	for (i = 0; i < LEN; i++)
		pat[i] = (unsigned char)(i * 7 + i / 4096);
	memset(b, 0, LEN);

	/* host to host, the source stopped */
	c = (struct copy_args){ b, st.area, LEN, NPU_MEMCPY_HOST_TO_HOST, 0 };
	tap_ok(copy_stalled(&c, &st, pat), "another thread's query, launch and "
	       "synchronize finish while a host-to-host copy is stopped in its memcpy");
	tap_ok(c.st == NPU_SUCCESS && !memcmp(b, pat, LEN), "... and the copy is right");
	munmap(st.area, LEN);

	/* pageable to device: the bounce buffer's fill stopped */
	MUST(stall_init(&st, LEN) ? NPU_ERROR_OS : NPU_SUCCESS);
	c = (struct copy_args){ d, st.area, LEN, NPU_MEMCPY_HOST_TO_DEVICE, 0 };
	tap_ok(copy_stalled(&c, &st, pat), "... while a pageable host-to-device "
	       "copy is stopped filling its bounce buffer");
	munmap(st.area, LEN);
	memset(b, 0, LEN);
	MUST(npu_memcpy(b, d, LEN, NPU_MEMCPY_DEVICE_TO_HOST));
	tap_ok(c.st == NPU_SUCCESS && !memcmp(b, pat, LEN), "... and the copy is right");

	/* device to pageable: the bounce buffer's drain stopped */
	MUST(stall_init(&st, LEN) ? NPU_ERROR_OS : NPU_SUCCESS);
	memset(b, 0, LEN);		/* what the stopped pages get first */
	c = (struct copy_args){ st.area, d, LEN, NPU_MEMCPY_DEVICE_TO_HOST, 0 };
	tap_ok(copy_stalled(&c, &st, b), "... while a device-to-pageable copy "
	       "is stopped draining its bounce buffer");
	for (i = 0, ok = 1; i < LEN; i++)
		ok &= st.area[i] == pat[i];
	tap_ok(c.st == NPU_SUCCESS && ok, "... and the copy is right");
	munmap(st.area, LEN);
	MUST(npu_stream_destroy(probe_stream));
	MUST(npu_free(d));
	free(pat);
	free(b);
}

int main(void)
{
	tap_need_device();
	test_threads();
	test_copy_unlocked();
	test_many_streams();
	test_fd_leaks();
	return tap_done();
}
