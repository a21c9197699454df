/* SPDX-License-Identifier: MIT */
/*
 * lib_kernels: user kernels compiled by npu-cc (kernels/basic.c): loading
 * from a file and from memory, every bad code object refused with a
 * message, functions and their attributes, the occupancy calculator,
 * launches checked against CPU references (float arguments, barrier and
 * scratchpad, atomics), streams and events, device printf (content, order,
 * overflow) on streams and in graph launches, the profiler on both, and a
 * fault that names the kernel and its source line.
 */
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char kpath[PATH_MAX];
static npu_device_prop prop;

static void *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	void *b = NULL;
	long len;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	/* NUL-terminated: callers search it as a string */
	b = malloc(len > 0 ? (size_t)len + 1 : 1);
	if (b && fread(b, 1, (size_t)len, f) != (size_t)len) {
		free(b);
		b = NULL;
	}
	if (b)
		((char *)b)[len > 0 ? len : 0] = 0;
	fclose(f);
	*n = (size_t)len;
	return b;
}

/* Run fn with stdout (fd 1) or stderr (fd 2) going to a file; return what
 * was written there (malloc'ed). */
static char *capture(int fd, void (*fn)(void *), void *arg)
{
	char tmpl[] = "/tmp/lib_kernels.XXXXXX";
	int t = mkstemp(tmpl), saved = dup(fd);
	size_t n = 0;
	char *out;

	fflush(stdout);
	fflush(stderr);
	dup2(t, fd);
	fn(arg);
	fflush(stdout);
	fflush(stderr);
	dup2(saved, fd);
	close(saved);
	close(t);
	out = slurp(tmpl, &n);
	unlink(tmpl);
	if (out) {
		out = realloc(out, n + 1);
		out[n] = 0;
	}
	return out;
}

static int count_lines(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void test_load_errors(void)
{
	npu_module_t m = (npu_module_t)(uintptr_t)1;
	size_t n = 0, en = 0;
	uint8_t *img = slurp(kpath, &n), *bad;
	void *exe = slurp("/proc/self/exe", &en);
	int fds = count_fds();

	tap_ok(img && n > 1024, "read the code object (%zu bytes)", n);
	ST(npu_module_load(&m, "/nonexistent/k.npu"), NPU_ERROR_FILE_NOT_FOUND,
	   "a missing file");
	tap_ok(m == NULL, "and the module pointer is NULL");
	ST(npu_module_load(NULL, kpath), NPU_ERROR_INVALID_VALUE, "NULL module");
	ST(npu_module_load_data(&m, "hello", 5), NPU_ERROR_INVALID_IMAGE,
	   "five bytes that are not an ELF");
	tap_ok(strstr(npu_last_error_message(), "not an ELF") != NULL,
	       "message: %s", npu_last_error_message());
	ST(npu_module_load_data(&m, img, 200), NPU_ERROR_INVALID_IMAGE,
	   "a truncated code object");
	tap_diag("%s", npu_last_error_message());
	ST(npu_module_load_data(&m, img, n / 2), NPU_ERROR_INVALID_IMAGE,
	   "half a code object");
	tap_diag("%s", npu_last_error_message());
	ST(npu_module_load_data(&m, exe, en), NPU_ERROR_INVALID_IMAGE,
	   "an x86-64 program");
	tap_ok(strstr(npu_last_error_message(), "RISC-V") != NULL,
	       "its message names the architecture: %s",
	       npu_last_error_message());
	bad = malloc(n);
	memcpy(bad, img, n);
	for (size_t i = 0; i + 4 <= n; i++)	/* the first descriptor's magic */
		if (!memcmp(bad + i, "NPUK", 4)) {
			bad[i] = 'X';
			break;
		}
	ST(npu_module_load_data(&m, bad, n), NPU_ERROR_INVALID_IMAGE,
	   "a kernel descriptor with a bad magic");
	tap_diag("%s", npu_last_error_message());
	memcpy(bad, img, n);
	bad[0x12] = 62;				/* e_machine = EM_X86_64 */
	ST(npu_module_load_data(&m, bad, n), NPU_ERROR_INVALID_IMAGE,
	   "a RISC-V image relabelled for another machine");
	memcpy(bad, img, n);
	bad[0x30] |= 1;				/* e_flags |= EF_RISCV_RVC */
	ST(npu_module_load_data(&m, bad, n), NPU_ERROR_INVALID_IMAGE,
	   "compressed instructions");
	tap_ok(strstr(npu_last_error_message(), "compressed") != NULL,
	       "message: %s", npu_last_error_message());
	tap_ok(count_fds() == fds, "no file descriptor leaked");
	free(bad);
	free(exe);
	free(img);
}

static void test_module(npu_module_t *mp, npu_module_t *mem)
{
	npu_function_t f, g;
	size_t n = 0;
	void *img = slurp(kpath, &n);
	int v, blocks, grid, bt;

	ST(npu_module_load(mp, kpath), NPU_SUCCESS, "load %s", kpath);
	ST(npu_module_load_data(mem, img, n), NPU_SUCCESS, "load the same "
	   "code object from memory");
	memset(img, 0, n);		/* it was copied */
	free(img);
	ST(npu_module_get_function(&f, *mp, "vadd"), NPU_SUCCESS, "get vadd");
	ST(npu_module_get_function(&g, *mp, "nope"), NPU_ERROR_NOT_FOUND,
	   "an unknown kernel name");
	tap_ok(strstr(npu_last_error_message(), "nope") != NULL, "message: %s",
	       npu_last_error_message());
	ST(npu_module_get_function(&g, (npu_module_t)(uintptr_t)64, "vadd"),
	   NPU_ERROR_INVALID_HANDLE, "a foreign module handle");
	MUST(npu_func_get_attribute(&v, NPU_FUNC_ATTRIBUTE_NUM_ARGS, f));
	tap_ok(v == 4, "vadd takes 4 arguments (%d)", v);
	MUST(npu_func_get_attribute(&v, NPU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
	tap_ok(v == (int)prop.unit_threads || v == 1024,
	       "vadd: up to %d threads per block (a unit has %u slots)", v,
	       prop.unit_threads);
	MUST(npu_module_get_function(&g, *mp, "block_sum"));
	MUST(npu_func_get_attribute(&v, NPU_FUNC_ATTRIBUTE_SCRATCH_SIZE_BYTES, g));
	tap_ok(v == 4096, "block_sum declares 4096 bytes of static scratchpad");
	MUST(npu_func_get_attribute(&v, NPU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, g));
	tap_ok(v == (int)(prop.unit_threads < 256 ? prop.unit_threads : 256),
	       "and at most 256 threads (%d)", v);
	ST(npu_func_get_attribute(&v, (npu_func_attribute_t)99, f),
	   NPU_ERROR_INVALID_VALUE, "an unknown attribute");

	/* occupancy: slots and scratchpad both bound it */
	MUST(npu_occupancy_max_active_blocks_per_unit(&blocks, f, 4, 0));
	tap_ok(blocks == (int)(prop.unit_threads / 4),
	       "4-thread blocks of vadd: %d per unit (%u slots)", blocks,
	       prop.unit_threads);
	MUST(npu_occupancy_max_active_blocks_per_unit(&blocks, g, 1, 0));
	tap_ok(blocks == (int)(prop.unit_scratch_bytes / 4096 < prop.unit_threads ?
			       prop.unit_scratch_bytes / 4096 : prop.unit_threads),
	       "1-thread blocks of block_sum: %d per unit (4 KiB of %u each)",
	       blocks, prop.unit_scratch_bytes);
	ST(npu_occupancy_max_active_blocks_per_unit(&blocks, f, 0, 0),
	   NPU_ERROR_INVALID_VALUE, "a block of 0 threads");
	MUST(npu_occupancy_max_potential_block_size(&grid, &bt, f, 0, 0));
	tap_ok(bt * (int)(prop.unit_threads / bt) == (int)prop.unit_threads &&
	       grid == (int)(prop.unit_threads / bt * prop.compute_units),
	       "best block for vadd: %d threads, grid %d fills the device", bt,
	       grid);
}

static void test_launches(npu_module_t m, npu_module_t mem)
{
	enum { N = 10000 };
	npu_function_t vadd, saxpy, bsum, hist, noargs, vadd2;
	float *ha = malloc(N * 4), *hb = malloc(N * 4), *hc = malloc(N * 4);
	unsigned *hv = malloc(N * 4), hh[16], want[16];
	int hin[8 * 1024], hout[8], ok = 1;
	unsigned T = prop.unit_threads;
	void *a, *b, *c, *in, *out, *hg;
	npu_stream_t s, s2;
	npu_event_t e;
	unsigned n = N, bins = 16;
	unsigned long nl = N;
	float alpha = 2.5f;
	void *args[4];

	MUST(npu_module_get_function(&vadd, m, "vadd"));
	MUST(npu_module_get_function(&vadd2, mem, "vadd"));
	MUST(npu_module_get_function(&saxpy, m, "saxpy"));
	MUST(npu_module_get_function(&bsum, m, "block_sum"));
	MUST(npu_module_get_function(&hist, m, "histogram"));
	MUST(npu_module_get_function(&noargs, m, "noargs"));
	MUST(npu_malloc(&a, N * 4));
	MUST(npu_malloc(&b, N * 4));
	MUST(npu_malloc(&c, N * 4));
	for (int i = 0; i < N; i++) {
		ha[i] = (float)i * 0.5f;
		hb[i] = 1000.0f - (float)i;
		hv[i] = (unsigned)(i * 7919u);
	}
	MUST(npu_memcpy(a, ha, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_memcpy(b, hb, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&s2, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_event_create(&e, 0));

	args[0] = &a;
	args[1] = &b;
	args[2] = &c;
	args[3] = &n;
	ST(npu_launch_kernel(vadd, npu_grid(8, 1, 1), npu_grid(T, 1, 1), 0, s, args),
	   NPU_SUCCESS, "launch vadd: 8 blocks of %u threads, grid-stride", T);
	MUST(npu_memcpy_async(hc, c, N * 4, NPU_MEMCPY_DEVICE_TO_HOST, s));
	MUST(npu_stream_synchronize(s));
	for (int i = 0; i < N; i++)
		ok &= hc[i] == ha[i] + hb[i];
	tap_ok(ok, "vadd matches the CPU on %d elements", N);

	/* the module loaded from memory is a second, independent copy */
	MUST(npu_memset(c, 0, N * 4));
	ST(npu_launch_kernel(vadd2, npu_grid(3, 2, 1), npu_grid(T / 4, 2, 2), 0,
			     NULL, args), NPU_SUCCESS,
	   "vadd of the in-memory module, 3x2 blocks of %ux2x2 on the legacy "
	   "stream", T / 4);
	MUST(npu_memcpy(hc, c, N * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	ok = 1;
	for (int i = 0; i < N; i++)
		ok &= hc[i] == ha[i] + hb[i];
	tap_ok(ok, "and matches the CPU");

	/* float and 64-bit arguments; ordering through an event */
	MUST(npu_memcpy(c, hb, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	args[0] = &alpha;
	args[1] = &a;
	args[2] = &c;
	args[3] = &nl;
	MUST(npu_launch_kernel(saxpy, npu_grid(4, 1, 1), npu_grid(T, 1, 1), 0, s,
			       args));
	MUST(npu_event_record(e, s));
	MUST(npu_stream_wait_event(s2, e, 0));
	MUST(npu_launch_kernel(saxpy, npu_grid(4, 1, 1), npu_grid(T, 1, 1), 0, s2,
			       args));
	MUST(npu_memcpy_async(hc, c, N * 4, NPU_MEMCPY_DEVICE_TO_HOST, s2));
	MUST(npu_stream_synchronize(s2));
	ok = 1;
	for (int i = 0; i < N; i++)
		ok &= feq(hc[i], hb[i] + 2 * alpha * ha[i]);
	tap_ok(ok, "saxpy (float a = 2.5, unsigned long n) twice, the second "
	       "on another stream after an event: y + 2ax");

	/* barrier and scratchpad: 8 blocks of T threads */
	for (int i = 0; i < 8 * (int)T; i++)
		hin[i] = i * 3 - 100;
	MUST(npu_malloc(&in, sizeof(hin)));
	MUST(npu_malloc(&out, sizeof(hout)));
	MUST(npu_memcpy(in, hin, sizeof(hin), NPU_MEMCPY_HOST_TO_DEVICE));
	args[0] = &in;
	args[1] = &out;
	MUST(npu_launch_kernel(bsum, npu_grid(8, 1, 1), npu_grid(T, 1, 1), 0, s,
			       args));
	MUST(npu_memcpy_async(hout, out, sizeof(hout), NPU_MEMCPY_DEVICE_TO_HOST, s));
	MUST(npu_stream_synchronize(s));
	ok = 1;
	for (int blk = 0; blk < 8; blk++) {
		int sum = 0;

		for (int t = 0; t < (int)T; t++)
			sum += hin[blk * T + t];
		ok &= hout[blk] == sum;
	}
	tap_ok(ok, "block_sum: a tree reduction through the scratchpad and the "
	       "barrier, per block");

	/* atomics */
	MUST(npu_malloc(&hg, sizeof(hh)));
	MUST(npu_memset(hg, 0, sizeof(hh)));
	MUST(npu_memcpy(a, hv, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	memset(want, 0, sizeof(want));
	for (int i = 0; i < N; i++)
		want[hv[i] % bins]++;
	args[0] = &a;
	args[1] = &n;
	args[2] = &hg;
	args[3] = &bins;
	MUST(npu_launch_kernel(hist, npu_grid(6, 1, 1), npu_grid(T, 1, 1), 0, s,
			       args));
	MUST(npu_memcpy_async(hh, hg, sizeof(hh), NPU_MEMCPY_DEVICE_TO_HOST, s));
	MUST(npu_stream_synchronize(s));
	tap_ok(!memcmp(hh, want, sizeof(hh)), "histogram with device atomics "
	       "from %u threads matches the CPU", 6 * T);

	/* bad launches change nothing */
	ST(npu_launch_kernel(noargs, npu_grid(1, 1, 1), npu_grid(1, 1, 1), 0, s,
			     NULL), NPU_SUCCESS, "a kernel without arguments, "
	   "args NULL");
	ST(npu_launch_kernel(vadd, npu_grid(1, 1, 1), npu_grid(1, 1, 1), 0, s,
			     NULL), NPU_ERROR_INVALID_VALUE,
	   "args NULL for a kernel with arguments");
	ST(npu_launch_kernel(vadd, npu_grid(0, 1, 1), npu_grid(1, 1, 1), 0, s,
			     args), NPU_ERROR_INVALID_CONFIGURATION, "grid x 0");
	ST(npu_launch_kernel(vadd, npu_grid(1, 1, 1), npu_grid(1, 0, 1), 0, s,
			     args), NPU_ERROR_INVALID_CONFIGURATION, "block y 0");
	ST(npu_launch_kernel(vadd, npu_grid(1, 1, 1),
			     npu_grid(prop.unit_threads + 1, 1, 1), 0, s, args),
	   NPU_ERROR_INVALID_CONFIGURATION, "more threads per block than a "
	   "unit has slots");
	tap_diag("%s", npu_last_error_message());
	ST(npu_launch_kernel(bsum, npu_grid(1, 1, 1), npu_grid(T + 1, 1, 1), 0, s,
			     args), NPU_ERROR_INVALID_CONFIGURATION,
	   "more threads than the kernel's maximum");
	ST(npu_launch_kernel(bsum, npu_grid(1, 1, 1), npu_grid(T, 1, 1),
			     prop.unit_scratch_bytes - 4095, s, args),
	   NPU_ERROR_INVALID_CONFIGURATION, "static + dynamic scratchpad "
	   "larger than a unit's");
	ST(npu_launch_kernel((npu_function_t)(uintptr_t)8, npu_grid(1, 1, 1),
			     npu_grid(1, 1, 1), 0, s, args),
	   NPU_ERROR_INVALID_HANDLE, "a foreign function handle");
	ST(npu_stream_synchronize(s), NPU_SUCCESS, "the stream is fine");

	npu_event_destroy(e);
	MUST(npu_stream_destroy(s));
	MUST(npu_stream_destroy(s2));
	npu_free(a);
	npu_free(b);
	npu_free(c);
	npu_free(in);
	npu_free(out);
	npu_free(hg);
	free(ha);
	free(hb);
	free(hc);
	free(hv);
}

/* Arguments of sizes 1, 2, 4 and 8, signed and unsigned, 16 of them:
 * packed right by a launch and by a captured kernel node. */
static void test_arg_widths(npu_module_t m)
{
	signed char c = -5, c2 = 127;
	unsigned char uc = 250, uc2 = 1;
	short sh = -30000, sh2 = 7;
	unsigned short us = 65000, us2 = 300;
	int i = -2000000000, i2 = 123456;
	unsigned u = 4000000000u;
	long l = -9000000000000000000L;
	float f = -1.25f;
	double d = 3.5;
	unsigned long long ull = 0x8000000000000001ull;
	const long long want[15] = { -5, 250, -30000, 65000, -2000000000,
				     4000000000ll, -9000000000000000000ll, -5,
				     28, 127, 7, 123456,
				     (long long)0x8000000000000001ull, 300, 1 };
	long long got[15];
	void *out, *args[16] = { &out, &c, &uc, &sh, &us, &i, &u, &l, &f, &d,
				 &c2, &sh2, &i2, &ull, &us2, &uc2 };
	npu_function_t w;
	npu_stream_t s;
	npu_graph_t g;
	npu_graph_exec_t x;

	MUST(npu_module_get_function(&w, m, "widths"));
	MUST(npu_malloc(&out, sizeof(got)));
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_memset(out, 0, sizeof(got)));
	MUST(npu_launch_kernel(w, npu_grid(1, 1, 1), npu_grid(1, 1, 1), 0, s,
			       args));
	MUST(npu_memcpy_async(got, out, sizeof(got), NPU_MEMCPY_DEVICE_TO_HOST,
			      s));
	MUST(npu_stream_synchronize(s));
	tap_ok(!memcmp(got, want, sizeof(got)), "16 arguments of 1, 2, 4 and "
	       "8 bytes, signed and unsigned, reach the kernel as passed");
	for (int k = 0; k < 15; k++)
		if (got[k] != want[k])
			tap_diag("argument %d: got %lld, want %lld", k + 1,
				 got[k], want[k]);

	MUST(npu_memset(out, 0, sizeof(got)));
	MUST(npu_stream_begin_capture(s, NPU_STREAM_CAPTURE_MODE_GLOBAL));
	MUST(npu_launch_kernel(w, npu_grid(1, 1, 1), npu_grid(1, 1, 1), 0, s,
			       args));
	MUST(npu_stream_end_capture(s, &g));
	c = 0;			/* captured by value: later changes are not seen */
	MUST(npu_graph_instantiate(&x, g, 0));
	MUST(npu_graph_launch(x, s));
	MUST(npu_memcpy_async(got, out, sizeof(got), NPU_MEMCPY_DEVICE_TO_HOST,
			      s));
	MUST(npu_stream_synchronize(s));
	tap_ok(!memcmp(got, want, sizeof(got)), "and through a captured "
	       "kernel node");
	npu_graph_exec_destroy(x);
	npu_graph_destroy(g);
	MUST(npu_stream_destroy(s));
	npu_free(out);
}

struct pf {
	npu_module_t m;
	int lines;
};

static void run_hello(void *p)
{
	struct pf *x = p;
	npu_function_t f;
	int tag = 7;
	double xv = 1.25;
	void *args[2] = { &tag, &xv };

	MUST(npu_module_get_function(&f, x->m, "hello"));
	MUST(npu_launch_kernel(f, npu_grid(2, 1, 1), npu_grid(3, 1, 1), 0, NULL,
			       args));
	tag = 8;
	xv = -3.5;
	MUST(npu_launch_kernel(f, npu_grid(1, 1, 1), npu_grid(2, 1, 1), 0, NULL,
			       args));
	MUST(npu_device_synchronize());
}

static void run_chatty(void *p)
{
	struct pf *x = p;
	npu_function_t f;
	void *args[1] = { &x->lines };

	MUST(npu_module_get_function(&f, x->m, "chatty"));
	MUST(npu_launch_kernel(f, npu_grid(4, 1, 1), npu_grid(16, 1, 1), 0, NULL,
			       args));
	MUST(npu_device_synchronize());
}

static char *err_of_chatty;

static void run_chatty_err(void *p)
{
	err_of_chatty = capture(1, run_chatty, p);
}

static void test_printf(npu_module_t m)
{
	struct pf x = { .m = m, .lines = 2 };
	char *out = capture(1, run_hello, &x), *err;
	const char *a1 = "# hello 7: block 1 thread 2 two x=1.250   2.5|12  |C|%\n";
	const char *b0 = "# hello 8: block 0 thread 1 one x=-3.500  -7.0|1   |B|%\n";

	tap_ok(out && count_lines(out, "# hello 7:") == 6 &&
	       count_lines(out, "# hello 8:") == 2,
	       "device printf: 6 lines of the first launch, 2 of the second");
	tap_ok(out && strstr(out, a1) && strstr(out, b0),
	       "formatted as the C library would: %%s from a relocated table, "
	       "%%.3f, %%5.1f, %%-4x, %%c, %%%%");
	{
		const char *last7 = NULL;

		for (const char *q = out; q && (q = strstr(q, "# hello 7:")); q++)
			last7 = q;
		tap_ok(last7 && strstr(out, "# hello 8:") > last7,
		       "launches print in submission order");
	}
	if (out && !strstr(out, a1))
		tap_diag("got: %s", out);
	free(out);

	x.lines = 2;
	out = capture(1, run_chatty, &x);
	tap_ok(out && count_lines(out, "# chatty") == 4 * 16 * 2,
	       "64 threads x 2 lines: all 128 printed");
	free(out);
	/* 64 threads x 24 records of 64 bytes: more than a 16 KiB buffer */
	x.lines = 24;
	err = capture(2, run_chatty_err, &x);
	out = err_of_chatty;
	tap_ok(out && count_lines(out, "# chatty") > 100 &&
	       count_lines(out, "# chatty") < 64 * 24,
	       "a full printf buffer keeps what fits (%d of 1536 lines)",
	       out ? count_lines(out, "# chatty") : -1);
	tap_ok(err && strstr(err, "lost") && strstr(err, "chatty"),
	       "and the loss is reported with a count: %s", err ? err : "");
	free(out);
	free(err);
}

/* Device printf with a stdout nobody reads (a full pipe): the thread whose
 * synchronize prints blocks in write, and must block no other thread. */
struct stuck_stdout {
	struct pf *x;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool printer_done, other_done;
	npu_status_t query_st, malloc_st;
};

static void *stuck_printer(void *p)
{
	struct stuck_stdout *t = p;

	run_hello(t->x);
	pthread_mutex_lock(&t->lock);
	t->printer_done = true;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

static void *stuck_other(void *p)
{
	struct stuck_stdout *t = p;
	void *d = NULL;
	npu_status_t q = npu_stream_query(NULL);
	npu_status_t a = npu_malloc(&d, 4096);

	if (!a)
		npu_free(d);
	pthread_mutex_lock(&t->lock);
	t->query_st = q;
	t->malloc_st = a;
	t->other_done = true;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/* Wait up to ms for *flag (under t->lock); return it. */
static bool stuck_wait(struct stuck_stdout *t, bool *flag, int ms)
{
	struct timespec until;
	bool r;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&t->lock);
	while (!*flag && !pthread_cond_timedwait(&t->cond, &t->lock, &until))
		;
	r = *flag;
	pthread_mutex_unlock(&t->lock);
	return r;
}

static void test_printf_stuck_stdout(npu_module_t m)
{
	struct pf x = { .m = m };
	struct stuck_stdout t = { .x = &x };
	pthread_t printer, other;
	int pfd[2], saved, fl;
	bool printer_blocked, other_returned;
	char junk[4096];

	pthread_mutex_init(&t.lock, NULL);
	pthread_cond_init(&t.cond, NULL);
	fflush(stdout);
	saved = dup(1);
	if (pipe(pfd) || saved < 0) {
		tap_ok(0, "device printf to a full pipe: pipe: %s", strerror(errno));
		return;
	}
	/* fill the pipe: the next write to it blocks */
	fl = fcntl(pfd[1], F_GETFL);
	fcntl(pfd[1], F_SETFL, fl | O_NONBLOCK);
	memset(junk, '.', sizeof(junk));
	while (write(pfd[1], junk, sizeof(junk)) > 0)
		;
	fcntl(pfd[1], F_SETFL, fl);
	dup2(pfd[1], 1);
	pthread_create(&printer, NULL, stuck_printer, &t);
	/* the launches take microseconds: after a second, a printer not
	 * done is blocked writing its output */
	printer_blocked = !stuck_wait(&t, &t.printer_done, 1000);
	pthread_create(&other, NULL, stuck_other, &t);
	other_returned = stuck_wait(&t, &t.other_done, 5000);
	/* unblock everything: a reader drains the pipe */
	fcntl(pfd[0], F_SETFL, fcntl(pfd[0], F_GETFL) | O_NONBLOCK);
	while (!stuck_wait(&t, &t.printer_done, 10) ||
	       !stuck_wait(&t, &t.other_done, 0))
		while (read(pfd[0], junk, sizeof(junk)) > 0)
			;
	pthread_join(printer, NULL);
	pthread_join(other, NULL);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	close(pfd[0]);
	close(pfd[1]);
	tap_ok(printer_blocked, "device printf to a full pipe: the printing "
	       "synchronize blocks in write");
	tap_ok(other_returned && t.query_st == NPU_SUCCESS && t.malloc_st == NPU_SUCCESS,
	       "meanwhile another thread's npu_stream_query and npu_malloc "
	       "return (%s; query %d, malloc %d)",
	       other_returned ? "returned" : "still blocked after 5 s",
	       t.query_st, t.malloc_st);
	pthread_cond_destroy(&t.cond);
	pthread_mutex_destroy(&t.lock);
}

/* The tags of the "# hello N:" lines of out, in order, as "N N ..." */
static void hello_tags(const char *out, char *tags, size_t size)
{
	size_t len = 0;

	tags[0] = 0;
	for (const char *q = out; q && (q = strstr(q, "# hello ")); q++) {
		int tag = atoi(q + 8);

		len += (size_t)snprintf(tags + len, len < size ? size - len : 0,
					"%s%d", len ? " " : "", tag);
		if (len >= size)
			break;
	}
}

struct gpf {
	npu_module_t m;
	int captured;		/* built by stream capture, else by nodes */
	int host;		/* a host node between the two nodes */
	int tag0;		/* nodes print tag0, tag0 + 1; then tag0 + 2 */
};

static void host_step(void *p)
{
	(*(int *)p)++;
}

/* Two printing kernel nodes (the second after the first), launched twice;
 * the executable graph destroyed with both launches pending; then a stream
 * launch, and what sees them complete: an event synchronize (captured), a
 * stream query (with a host node) or a stream synchronize. */
static void run_graph_hello(void *p)
{
	struct gpf *x = p;
	npu_function_t f;
	npu_kernel_node_params kp[2];
	npu_graph_node_t nd[2], hn, *pred;
	npu_graph_t g;
	npu_graph_exec_t ge;
	npu_stream_t s;
	int tag[2] = { x->tag0, x->tag0 + 1 }, last = x->tag0 + 2, steps = 0;
	double xv = 0.5;
	void *args[2][2] = { { &tag[0], &xv }, { &tag[1], &xv } };
	void *largs[2] = { &last, &xv };

	MUST(npu_module_get_function(&f, x->m, "hello"));
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	if (x->captured) {
		MUST(npu_stream_begin_capture(s, NPU_STREAM_CAPTURE_MODE_GLOBAL));
		for (int i = 0; i < 2; i++)
			MUST(npu_launch_kernel(f, npu_grid(1, 1, 1),
					       npu_grid(2, 1, 1), 0, s, args[i]));
		MUST(npu_stream_end_capture(s, &g));
	} else {
		MUST(npu_graph_create(&g, 0));
		for (int i = 0; i < 2; i++) {
			MUST(npu_kernel_node_params_init(&kp[i], f,
							 npu_grid(1, 1, 1),
							 npu_grid(2, 1, 1), 0,
							 args[i]));
			pred = i ? nd : NULL;
			if (i && x->host) {
				MUST(npu_graph_add_host_node(&hn, g, nd, 1,
							     host_step, &steps));
				pred = &hn;
			}
			MUST(npu_graph_add_kernel_node(&nd[i], g, pred,
						       i ? 1 : 0, &kp[i]));
		}
	}
	MUST(npu_graph_instantiate(&ge, g, 0));
	MUST(npu_graph_launch(ge, s));
	MUST(npu_graph_launch(ge, s));
	MUST(npu_graph_exec_destroy(ge));
	MUST(npu_launch_kernel(f, npu_grid(1, 1, 1), npu_grid(2, 1, 1), 0, s,
			       largs));
	if (x->captured) {
		npu_event_t e;

		MUST(npu_event_create(&e, 0));
		MUST(npu_event_record(e, s));
		MUST(npu_event_synchronize(e));
		MUST(npu_event_destroy(e));
	} else if (x->host) {
		npu_status_t st;

		while ((st = npu_stream_query(s)) == NPU_ERROR_NOT_READY)
			usleep(1000);
		MUST(st);
	} else {
		MUST(npu_stream_synchronize(s));
	}
	if (x->host && steps != 2)
		tap_diag("the host node ran %d times", steps);
	MUST(npu_graph_destroy(g));
	MUST(npu_stream_destroy(s));
}

/* A graph of one printing node launched more times than there are printf
 * buffers, with no synchronize in between. */
static void run_graph_many(void *p)
{
	struct gpf *x = p;
	npu_function_t f;
	npu_kernel_node_params kp;
	npu_graph_node_t nd;
	npu_graph_t g;
	npu_graph_exec_t ge;
	int tag = x->tag0;
	double xv = 1;
	void *args[2] = { &tag, &xv };

	MUST(npu_module_get_function(&f, x->m, "hello"));
	MUST(npu_graph_create(&g, 0));
	MUST(npu_kernel_node_params_init(&kp, f, npu_grid(1, 1, 1),
					 npu_grid(1, 1, 1), 0, args));
	MUST(npu_graph_add_kernel_node(&nd, g, NULL, 0, &kp));
	MUST(npu_graph_instantiate(&ge, g, 0));
	for (int i = 0; i < 70; i++)
		MUST(npu_graph_launch(ge, NULL));
	MUST(npu_device_synchronize());
	MUST(npu_graph_exec_destroy(ge));
	MUST(npu_graph_destroy(g));
}

static char *out_of_graph;

/* chatty (overflows its buffer) then hello in one graph, then a stream
 * launch of hello; stdout into out_of_graph */
static void run_graph_chatty(void *p)
{
	struct gpf *x = p;
	npu_function_t fc, fh;
	npu_kernel_node_params kp[2];
	npu_graph_node_t nd[2];
	npu_graph_t g;
	npu_graph_exec_t ge;
	int lines = 24, tag = x->tag0, last = x->tag0 + 1;
	double xv = 2;
	void *cargs[1] = { &lines }, *hargs[2] = { &tag, &xv };
	void *largs[2] = { &last, &xv };

	MUST(npu_module_get_function(&fc, x->m, "chatty"));
	MUST(npu_module_get_function(&fh, x->m, "hello"));
	MUST(npu_graph_create(&g, 0));
	MUST(npu_kernel_node_params_init(&kp[0], fc, npu_grid(4, 1, 1),
					 npu_grid(16, 1, 1), 0, cargs));
	MUST(npu_kernel_node_params_init(&kp[1], fh, npu_grid(1, 1, 1),
					 npu_grid(1, 1, 1), 0, hargs));
	MUST(npu_graph_add_kernel_node(&nd[0], g, NULL, 0, &kp[0]));
	MUST(npu_graph_add_kernel_node(&nd[1], g, nd, 1, &kp[1]));
	MUST(npu_graph_instantiate(&ge, g, 0));
	MUST(npu_graph_launch(ge, NULL));
	MUST(npu_launch_kernel(fh, npu_grid(1, 1, 1), npu_grid(1, 1, 1), 0, NULL,
			       largs));
	MUST(npu_device_synchronize());
	MUST(npu_graph_exec_destroy(ge));
	MUST(npu_graph_destroy(g));
}

static void run_graph_chatty_err(void *p)
{
	out_of_graph = capture(1, run_graph_chatty, p);
}

/* Device printf in graph launches: each launch prints when a synchronize
 * sees it complete, in stream order with the stream's other launches. */
static void test_graph_printf(npu_module_t m)
{
	struct gpf x = { .m = m, .tag0 = 21 };
	char tags[256], *out, *err;
	const char *want = "21 21 22 22 21 21 22 22 23 23";

	out = capture(1, run_graph_hello, &x);
	hello_tags(out ? out : "", tags, sizeof(tags));
	tap_ok(!strcmp(tags, want), "a graph of two printing nodes, launched "
	       "twice, then a stream launch, a stream synchronize: %s (wanted %s)",
	       tags, want);
	free(out);
	x.captured = 1;
	x.tag0 = 31;
	want = "31 31 32 32 31 31 32 32 33 33";
	out = capture(1, run_graph_hello, &x);
	hello_tags(out ? out : "", tags, sizeof(tags));
	tap_ok(!strcmp(tags, want), "the same graph by stream capture, an event "
	       "synchronize: %s (wanted %s)", tags, want);
	free(out);
	x.captured = 0;
	x.host = 1;
	x.tag0 = 61;
	want = "61 61 62 62 61 61 62 62 63 63";
	out = capture(1, run_graph_hello, &x);
	hello_tags(out ? out : "", tags, sizeof(tags));
	tap_ok(!strcmp(tags, want), "the same with a host node between the two "
	       "(the second is queued by the launch's host thread), stream queries: "
	       "%s (wanted "
	       "%s)", tags, want);
	free(out);
	x.host = 0;
	x.tag0 = 41;
	out = capture(1, run_graph_many, &x);
	tap_ok(out && count_lines(out, "# hello 41:") == 70,
	       "70 launches of a graph, no synchronize between: each printed "
	       "(%d lines)", out ? count_lines(out, "# hello 41:") : -1);
	free(out);
	x.tag0 = 51;
	err = capture(2, run_graph_chatty_err, &x);
	out = out_of_graph;
	hello_tags(out ? out : "", tags, sizeof(tags));
	tap_ok(out && count_lines(out, "# chatty") > 100 &&
	       count_lines(out, "# chatty") < 64 * 24 && !strcmp(tags, "51 52") &&
	       strstr(out, "# hello 51:") > strstr(out, "# chatty"),
	       "a graph node overflowing its printf buffer keeps what fits "
	       "(%d lines); the next node and a stream launch print (%s)",
	       out ? count_lines(out, "# chatty") : -1, tags);
	tap_ok(err && strstr(err, "lost") && strstr(err, "chatty") &&
	       count_lines(err, "lost") == 1,
	       "the graph launch's loss is reported with a count: %s",
	       err ? err : "");
	free(out);
	free(err);
}

/* Mapped pinned memory: kernels use it through its device pointer. */
static void test_mapped(npu_module_t m)
{
	enum { N = 3000 };
	unsigned *h, *r, n = N, ok = 1;
	void *dp = NULL, *dr = NULL, *dev, *args[2];
	npu_function_t f;
	npu_stream_t s;
	char pageable[64];

	MUST(npu_module_get_function(&f, m, "incr"));
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	ST(npu_host_alloc((void **)&h, N * 4, NPU_HOST_ALLOC_MAPPED |
			  NPU_HOST_ALLOC_PORTABLE), NPU_SUCCESS,
	   "npu_host_alloc with NPU_HOST_ALLOC_MAPPED");
	for (unsigned i = 0; i < N; i++)
		h[i] = i * 3;
	ST(npu_host_get_device_pointer(&dp, h, 0), NPU_SUCCESS,
	   "its device pointer");
	tap_ok(dp && dp != (void *)h, "differs from the host pointer (%p, %p)",
	       dp, (void *)h);
	args[0] = &dp;
	args[1] = &n;
	ST(npu_parallel_kernel(f, npu_grid(4, 1, 1), npu_grid(prop.unit_threads, 1, 1),
			       0, s, args), NPU_SUCCESS,
	   "parallel<s> with a user kernel: launch and synchronize s");
	for (unsigned i = 0; i < N; i++)
		ok &= h[i] == i * 3 + 1;
	tap_ok(ok, "the kernel read and wrote pinned memory over the link");
	{
		void *mid = NULL;

		MUST(npu_host_get_device_pointer(&mid, h + 100, 0));
		tap_ok((char *)mid == (char *)dp + 400, "an inner pointer maps to "
		       "the same offset");
	}
	/* registered memory too */
	r = aligned_alloc(4096, 4 * 4096);
	for (unsigned i = 0; i < 4096; i++)
		r[i] = 7;
	MUST(npu_host_register(r, 4 * 4096, 0));
	ST(npu_host_get_device_pointer(&dr, r, 0), NPU_SUCCESS,
	   "device pointer of registered memory");
	n = 4096;
	args[0] = &dr;
	ST(npu_parallel_kernel_async(f, npu_grid(2, 1, 1),
				     npu_grid(prop.unit_threads, 1, 1), 0, NULL,
				     args), NPU_SUCCESS,
	   "parallel.async with a user kernel on the legacy stream");
	MUST(npu_device_synchronize());
	ok = 1;
	for (unsigned i = 0; i < 4096; i++)
		ok &= r[i] == 8;
	tap_ok(ok, "the kernel incremented registered host memory");
	MUST(npu_host_unregister(r));
	free(r);
	ST(npu_host_get_device_pointer(&dp, pageable, 0), NPU_ERROR_INVALID_VALUE,
	   "pageable memory has no device pointer");
	MUST(npu_malloc(&dev, 64));
	ST(npu_host_get_device_pointer(&dp, dev, 0), NPU_ERROR_INVALID_VALUE,
	   "nor has device memory");
	ST(npu_host_get_device_pointer(&dp, h, 1), NPU_ERROR_INVALID_VALUE,
	   "unknown flags");
	ST(npu_host_alloc((void **)&r, 64, 4), NPU_ERROR_INVALID_VALUE,
	   "unknown allocation flags");
	npu_free(dev);
	MUST(npu_host_free(h));
	MUST(npu_stream_destroy(s));
}

/* User kernels as graph nodes, with parameter updates, and captured. */
static void test_graphs(npu_module_t m)
{
	enum { N = 4000 };
	npu_function_t vadd, saxpy, noargs;
	npu_kernel_node_params pv, ps, bad;
	npu_graph_node_t nv, ns, n2[8];
	npu_graph_t g, cg;
	npu_graph_exec_t x, cx;
	float *ha = malloc(N * 4), *hb = malloc(N * 4), *hc = malloc(N * 4);
	float alpha = 2.0f;
	unsigned n = N, T = prop.unit_threads;
	unsigned long nl = N;
	void *a, *b, *c, *args[4];
	npu_stream_t s;
	size_t nn = 8;
	int ok;

	MUST(npu_module_get_function(&vadd, m, "vadd"));
	MUST(npu_module_get_function(&saxpy, m, "saxpy"));
	MUST(npu_module_get_function(&noargs, m, "noargs"));
	MUST(npu_malloc(&a, N * 4));
	MUST(npu_malloc(&b, N * 4));
	MUST(npu_malloc(&c, N * 4));
	for (int i = 0; i < N; i++) {
		ha[i] = (float)(i % 100);
		hb[i] = 0.25f * (float)i;
	}
	MUST(npu_memcpy(a, ha, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_memcpy(b, hb, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_memset(c, 0, N * 4));
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));

	/* c = a + b, then c += alpha * a */
	args[0] = &a;
	args[1] = &b;
	args[2] = &c;
	args[3] = &n;
	ST(npu_kernel_node_params_init(&pv, vadd, npu_grid(4, 1, 1),
				       npu_grid(T, 1, 1), 0, args), NPU_SUCCESS,
	   "node params of a user kernel");
	args[0] = &alpha;
	args[1] = &a;
	args[2] = &c;
	args[3] = &nl;
	MUST(npu_kernel_node_params_init(&ps, saxpy, npu_grid(4, 1, 1),
					 npu_grid(T, 1, 1), 0, args));
	ST(npu_kernel_node_params_init(&bad, vadd, npu_grid(0, 1, 1),
				       npu_grid(T, 1, 1), 0, args),
	   NPU_ERROR_INVALID_CONFIGURATION, "params with a zero grid");
	MUST(npu_graph_create(&g, 0));
	ST(npu_graph_add_kernel_node(&nv, g, NULL, 0, &pv), NPU_SUCCESS,
	   "a user-kernel node");
	MUST(npu_graph_add_kernel_node(&ns, g, &nv, 1, &ps));
	bad = pv;
	bad.block = npu_grid(T + 1, 1, 1);
	ST(npu_graph_add_kernel_node(&n2[0], g, NULL, 0, &bad),
	   NPU_ERROR_INVALID_CONFIGURATION, "a node with too large a block");
	MUST(npu_graph_instantiate(&x, g, 0));
	for (int k = 0; k < 3; k++)
		MUST(npu_graph_launch(x, s));
	MUST(npu_memcpy_async(hc, c, N * 4, NPU_MEMCPY_DEVICE_TO_HOST, s));
	MUST(npu_stream_synchronize(s));
	ok = 1;
	for (int i = 0; i < N; i++)
		ok &= feq(hc[i], 3 * ha[i] + hb[i]);
	tap_ok(ok, "a graph of two user kernels, launched 3 times: c = a + b + 2a");
	alpha = 1.0f;
	MUST(npu_kernel_node_params_init(&ps, saxpy, npu_grid(2, 1, 1),
					 npu_grid(T / 2, 1, 1), 0, args));
	ST(npu_graph_exec_kernel_node_set_params(x, ns, &ps), NPU_SUCCESS,
	   "update the executable node: alpha 1, another grid");
	ST(npu_graph_exec_kernel_node_set_params(x, ns, &pv),
	   NPU_ERROR_INVALID_VALUE, "but not its kernel");
	MUST(npu_graph_launch(x, s));
	MUST(npu_memcpy_async(hc, c, N * 4, NPU_MEMCPY_DEVICE_TO_HOST, s));
	MUST(npu_stream_synchronize(s));
	ok = 1;
	for (int i = 0; i < N; i++)
		ok &= feq(hc[i], 2 * ha[i] + hb[i]);
	tap_ok(ok, "the updated graph computes c = a + b + a");

	/* the same through stream capture */
	MUST(npu_memset(c, 0, N * 4));
	MUST(npu_stream_begin_capture(s, NPU_STREAM_CAPTURE_MODE_GLOBAL));
	args[0] = &a;
	args[1] = &b;
	args[2] = &c;
	args[3] = &n;
	ST(npu_launch_kernel(vadd, npu_grid(4, 1, 1), npu_grid(T, 1, 1), 0, s,
			     args), NPU_SUCCESS, "a user kernel launched while "
	   "capturing");
	alpha = 3.0f;
	args[0] = &alpha;
	args[1] = &a;
	args[2] = &c;
	args[3] = &nl;
	MUST(npu_launch_kernel(saxpy, npu_grid(4, 1, 1), npu_grid(T, 1, 1), 0, s,
			       args));
	MUST(npu_launch_kernel(noargs, npu_grid(1, 1, 1), npu_grid(1, 1, 1), 0,
			       s, NULL));
	ST(npu_stream_end_capture(s, &cg), NPU_SUCCESS, "end the capture");
	MUST(npu_graph_get_nodes(cg, n2, &nn));
	tap_ok(nn == 3, "the captured graph has 3 kernel nodes (%zu)", nn);
	MUST(npu_memcpy(hc, c, N * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	tap_ok(hc[5] == 0, "nothing ran while capturing");
	MUST(npu_graph_instantiate(&cx, cg, 0));
	MUST(npu_graph_launch(cx, s));
	MUST(npu_memcpy_async(hc, c, N * 4, NPU_MEMCPY_DEVICE_TO_HOST, s));
	MUST(npu_stream_synchronize(s));
	ok = 1;
	for (int i = 0; i < N; i++)
		ok &= feq(hc[i], 4 * ha[i] + hb[i]);
	tap_ok(ok, "the captured graph computes c = a + b + 3a");
	MUST(npu_graph_exec_destroy(x));
	MUST(npu_graph_exec_destroy(cx));
	MUST(npu_graph_destroy(g));
	MUST(npu_graph_destroy(cg));
	MUST(npu_stream_destroy(s));
	npu_free(a);
	npu_free(b);
	npu_free(c);
	free(ha);
	free(hb);
	free(hc);
}

/* npu_tune over user kernels (the kernels[] form): block sizes of a
 * compute-bound kernel, both modes. */
static void test_tune(npu_module_t m)
{
	npu_kernel_node_params kp[3];
	npu_tune_result r[3];
	npu_tune_config c;
	npu_function_t f;
	unsigned iters = 300, T = prop.unit_threads;
	int best[NPU_TUNE_MODES], ok = 1;
	void *out, *args[2] = { &out, &iters };

	MUST(npu_module_get_function(&f, m, "fma_chain"));
	MUST(npu_malloc(&out, 4 * 4096));
	/* the same 2 * units * T threads in blocks of T, T/2, T/4 */
	for (unsigned i = 0; i < 3; i++)
		MUST(npu_kernel_node_params_init(&kp[i], f,
						 npu_grid(2 * prop.compute_units << i, 1, 1),
						 npu_grid(T >> i, 1, 1), 0, args));
	memset(&c, 0, sizeof(c));
	c.candidates = 3;
	c.kernels = kp;
	c.runs = 3;
	c.warmup = 1;
	ST(npu_tune(&c, r, best), NPU_SUCCESS, "npu_tune of a user kernel's "
	   "block size, isolated and under load of the others");
	for (unsigned i = 0; i < 3; i++) {
		tap_diag("block %u: isolated median %.3f ms, under load %.3f ms",
			 T >> i, r[i].mode[0].median_ms, r[i].mode[1].median_ms);
		ok &= r[i].mode[0].status == NPU_SUCCESS && r[i].mode[0].runs == 3 &&
		      r[i].mode[0].min_ms > 0 && r[i].mode[1].status == NPU_SUCCESS;
	}
	tap_ok(ok && best[0] >= 0 && best[1] >= 0, "every candidate measured in "
	       "both modes; best #%d isolated, #%d under load", best[0], best[1]);
	npu_free(out);
}

static const npu_kernel_profile *find_prof(const npu_kernel_profile *v,
					    size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	return NULL;
}

static void report_to(void *p)
{
	MUST(npu_profile_report(p ? p : stdout));
}

/* The profiler: counters per kernel, occupancy against the calculator,
 * stall breakdown and verdict, PC samples by source line. */
static void test_profile(npu_module_t m)
{
	enum { N = 20000 };
	npu_function_t fma, vadd;
	npu_kernel_profile prof[8];
	const npu_kernel_profile *pf, *pv;
	unsigned T = prop.unit_threads, iters = 2000, n = N;
	void *out, *a, *b, *c, *args[4];
	size_t np = 8;
	int blocks;
	char *rep;

	MUST(npu_module_get_function(&fma, m, "fma_chain"));
	MUST(npu_module_get_function(&vadd, m, "vadd"));
	MUST(npu_malloc(&out, 4 * 4096));
	MUST(npu_malloc(&a, N * 4));
	MUST(npu_malloc(&b, N * 4));
	MUST(npu_malloc(&c, N * 4));
	MUST(npu_device_synchronize());
	MUST(npu_profiler_start());
	/* fills the device: a unit's worth of threads on every unit */
	args[0] = &out;
	args[1] = &iters;
	MUST(npu_occupancy_max_active_blocks_per_unit(&blocks, fma, T / 2, 0));
	MUST(npu_launch_kernel(fma, npu_grid(blocks * prop.compute_units, 1, 1),
			       npu_grid(T / 2, 1, 1), 0, NULL, args));
	args[0] = &a;
	args[1] = &b;
	args[2] = &c;
	args[3] = &n;
	MUST(npu_launch_kernel(vadd, npu_grid(prop.compute_units, 1, 1),
			       npu_grid(T, 1, 1), 0, NULL, args));
	MUST(npu_device_synchronize());
	MUST(npu_profiler_stop());
	{
		npu_trace_record tr[16];
		size_t nt = 16, found = 0, len = 0;
		char *json;

		MUST(npu_trace_get_records(tr, &nt));
		for (size_t i = 0; i < nt; i++)
			found += tr[i].kind == NPU_TRACE_KERNEL &&
				 tr[i].kernel == NPU_TRACE_USER_KERNEL &&
				 ((!strcmp(tr[i].name, "fma_chain") &&
				   tr[i].block.x == T / 2) ||
				  (!strcmp(tr[i].name, "vadd") && tr[i].block.x == T)) &&
				 tr[i].end > tr[i].start;
		MUST(npu_trace_write_json("ktrace.json"));
		json = slurp("ktrace.json", &len);
		if (json) {
			json = realloc(json, len + 1);
			json[len] = 0;
		}
		tap_ok(found == 2 && json && strstr(json, "\"fma_chain\"") &&
		       strstr(json, "\"vadd\""), "the command trace and its JSON "
		       "name both user kernels, with their block sizes (%zu of %zu "
		       "records)", found, nt);
		free(json);
	}
	ST(npu_profile_get_kernels(prof, &np), NPU_SUCCESS, "kernel profiles");
	pf = find_prof(prof, np, "fma_chain");
	pv = find_prof(prof, np, "vadd");
	tap_ok(np == 2 && pf && pv && pf->launches == 1 && pv->launches == 1,
	       "one profile per kernel launched (%zu)", np);
	if (!pf || !pv)
		return;
	tap_ok(pf->instructions > (uint64_t)iters * 2 * T * prop.compute_units &&
	       pf->blocks == (uint64_t)blocks * prop.compute_units && pf->ipc > 0,
	       "fma_chain: %llu instructions, %llu blocks, IPC %.3f",
	       (unsigned long long)pf->instructions,
	       (unsigned long long)pf->blocks, pf->ipc);
	tap_ok(pf->theoretical_occupancy == 1.0 &&
	       fabs(pf->achieved_occupancy - pf->theoretical_occupancy) < 0.1,
	       "a launch that fills the device: achieved occupancy %.3f, the "
	       "calculator's %.3f", pf->achieved_occupancy,
	       pf->theoretical_occupancy);
	tap_ok(!pf->memory_bound && pf->ipc > 0.9 &&
	       pf->stall[0] + pf->stall[1] > 10 * (pf->stall[4] + pf->stall[6]),
	       "the FP chain is compute-bound: issue-limited (IPC %.3f; selected "
	       "+ not_selected %llu >> long_scoreboard + lg_throttle %llu "
	       "thread-cycles)", pf->ipc,
	       (unsigned long long)(pf->stall[0] + pf->stall[1]),
	       (unsigned long long)(pf->stall[4] + pf->stall[6]));
	tap_ok(pv->memory_bound && pv->bytes_read[2] >= 2ull * N * 4 &&
	       pv->bytes_written[2] >= (uint64_t)N * 4,
	       "vadd is memory-bound and read %llu, wrote %llu device bytes",
	       (unsigned long long)pv->bytes_read[2],
	       (unsigned long long)pv->bytes_written[2]);
	{
		uint64_t sum = 0;

		for (int i = 0; i < NPU_PROFILE_STALLS; i++)
			sum += pf->stall[i];
		tap_ok(sum == pf->thread_cycles, "stall reasons sum to the "
		       "resident thread-cycles (%llu)",
		       (unsigned long long)sum);
	}
	tap_ok(pf->samples > 10 && !strcmp(npu_profile_stall_name(4),
					   "long_scoreboard"),
	       "fma_chain: %llu PC samples", (unsigned long long)pf->samples);
	rep = capture(1, report_to, NULL);
	tap_ok(rep && strstr(rep, "fma_chain") && strstr(rep, "achieved") &&
	       strstr(rep, "compute-bound") && strstr(rep, "memory-bound") &&
	       strstr(rep, "hot spots") && strstr(rep, "basic.c:"),
	       "the report has occupancy, verdicts and hot spots by line");
	if (rep)
		for (char *l = strtok(rep, "\n"); l; l = strtok(NULL, "\n"))
			if (strstr(l, "hot spots") || strstr(l, "occupancy:") ||
			    strstr(l, "verdict") || strstr(l, "thread-cycles:"))
				tap_diag("%s", l);
	free(rep);
	npu_free(out);
	npu_free(a);
	npu_free(b);
	npu_free(c);
}


static void run_chain(void *p)
{
	MUST(npu_graph_launch(p, NULL));
	MUST(npu_device_synchronize());
}

/* The profiler on graph launches: each user-kernel node of each launch is
 * profiled like a stream launch; with every statistics buffer in use a
 * node goes unprofiled and the report counts it. */
static void test_graph_profile(npu_module_t m)
{
	enum { CHAIN = 130 };	/* more nodes than statistics buffers (128) */
	npu_function_t fma, noargs;
	npu_kernel_profile prof[8];
	const npu_kernel_profile *pf, *pn;
	npu_kernel_node_params kp;
	npu_graph_node_t nd, *chain = calloc(CHAIN, sizeof(*chain));
	npu_graph_t g, cg;
	npu_graph_exec_t ge, cge;
	unsigned T = prop.unit_threads, iters = 500, grid = 2 * prop.compute_units;
	uint64_t stalls = 0, sampled = 0;
	void *out, *args[2] = { &out, &iters };
	size_t np = 8;
	char *rep, *err;

	MUST(npu_module_get_function(&fma, m, "fma_chain"));
	MUST(npu_module_get_function(&noargs, m, "noargs"));
	MUST(npu_malloc(&out, 4 * 4096));
	MUST(npu_graph_create(&g, 0));
	MUST(npu_kernel_node_params_init(&kp, fma, npu_grid(grid, 1, 1),
					 npu_grid(T / 2, 1, 1), 0, args));
	MUST(npu_graph_add_kernel_node(&nd, g, NULL, 0, &kp));
	MUST(npu_graph_instantiate(&ge, g, 0));
	MUST(npu_device_synchronize());
	MUST(npu_profiler_start());
	MUST(npu_graph_launch(ge, NULL));
	MUST(npu_graph_launch(ge, NULL));
	MUST(npu_device_synchronize());
	ST(npu_profile_get_kernels(prof, &np), NPU_SUCCESS,
	   "kernel profiles after graph launches");
	pf = find_prof(prof, np, "fma_chain");
	tap_ok(np == 1 && pf && pf->launches == 2 &&
	       pf->blocks == 2ull * grid &&
	       pf->instructions > 2ull * iters * grid * (T / 2),
	       "two graph launches of fma_chain profiled: %llu launch(es), %llu "
	       "blocks, %llu instructions", pf ? (unsigned long long)pf->launches : 0,
	       pf ? (unsigned long long)pf->blocks : 0,
	       pf ? (unsigned long long)pf->instructions : 0);
	if (pf) {
		for (int i = 0; i < NPU_PROFILE_STALLS; i++) {
			stalls += pf->stall[i];
			sampled += pf->sample_stall[i];
		}
		tap_ok(stalls == pf->thread_cycles && pf->samples > 10 &&
		       sampled == pf->samples && !pf->memory_bound,
		       "its stall reasons sum to its thread-cycles (%llu) and its "
		       "%llu PC samples by reason to %llu; compute-bound",
		       (unsigned long long)stalls,
		       (unsigned long long)pf->samples,
		       (unsigned long long)sampled);
	} else {
		tap_ok(0, "its stall reasons");
	}
	rep = capture(1, report_to, NULL);
	tap_ok(rep && strstr(rep, "fma_chain") && strstr(rep, "2 launch(es)") &&
	       strstr(rep, "hot spots") && !strstr(rep, "not profiled"),
	       "the report has the graph's kernel, its launches and hot spots");
	free(rep);

	/* a chain of CHAIN nodes: one launch takes every statistics buffer */
	MUST(npu_graph_create(&cg, 0));
	MUST(npu_kernel_node_params_init(&kp, noargs, npu_grid(1, 1, 1),
					 npu_grid(1, 1, 1), 0, NULL));
	for (int i = 0; i < CHAIN; i++)
		MUST(npu_graph_add_kernel_node(&chain[i], cg, i ? &chain[i - 1] : NULL,
					       i ? 1 : 0, &kp));
	MUST(npu_graph_instantiate(&cge, cg, 0));
	err = capture(2, run_chain, cge);
	/* its module calls printf: 64 nodes get the 64 printf buffers */
	tap_ok(err && strstr(err, "npu: 66 kernel node(s) of a graph launch ran "
			     "without a printf buffer"),
	       "the 66 nodes left without a printf buffer are reported: %s",
	       err ? err : "");
	free(err);
	np = 8;
	MUST(npu_profile_get_kernels(prof, &np));
	pn = find_prof(prof, np, "noargs");
	tap_ok(pn && pn->launches == 128, "a launch of %d nodes: 128 profiled "
	       "(%llu)", CHAIN, pn ? (unsigned long long)pn->launches : 0);
	rep = capture(1, report_to, NULL);
	tap_ok(rep && strstr(rep, "(2 launch(es) not profiled"),
	       "and the report counts the 2 that were not");
	if (rep && !strstr(rep, "(2 launch(es) not profiled"))
		tap_diag("%s", rep);
	free(rep);
	MUST(npu_profiler_stop());
	MUST(npu_graph_exec_destroy(ge));
	MUST(npu_graph_exec_destroy(cge));
	MUST(npu_graph_destroy(g));
	MUST(npu_graph_destroy(cg));
	npu_free(out);
	free(chain);
}

/* The instruction trace of one block as a Chrome/Perfetto timeline, and
 * its picture (npu-timeline). */
static void test_itrace(npu_module_t m)
{
	enum { N = 256 };
	npu_function_t f;
	unsigned n = N, T = prop.unit_threads;
	uint64_t insns = 0, lost = 1;
	void *a, *b, *c, *args[4] = { &a, &b, &c, &n };
	size_t len = 0;
	char *json;

	MUST(npu_module_get_function(&f, m, "vadd"));
	MUST(npu_malloc(&a, N * 4));
	MUST(npu_malloc(&b, N * 4));
	MUST(npu_malloc(&c, N * 4));
	ST(npu_kernel_trace(f, npu_grid(4, 1, 1), npu_grid(T, 1, 1), 0, args, 2,
			    "itrace.json", &insns, &lost), NPU_SUCCESS,
	   "instruction trace of block 2 of vadd");
	json = slurp("itrace.json", &len);
	tap_ok(json && insns > 20 * T && lost == 0 &&
	       count_lines(json, "\"ph\": \"X\"") == (int)insns,
	       "one event per instruction (%llu, none lost)",
	       (unsigned long long)insns);
	tap_ok(json && count_lines(json, "\"thread_name\"") == (int)T &&
	       strstr(json, "block 2 thread 0") && strstr(json, "basic.c:") &&
	       strstr(json, "\"insn\": \"0x"),
	       "a lane per thread of the block, events named by source line");
	ST(npu_kernel_trace(f, npu_grid(4, 1, 1), npu_grid(T, 1, 1), 0, args, 4,
			    "x.json", NULL, NULL), NPU_ERROR_INVALID_VALUE,
	   "a trace block outside the grid");
	/* npu-timeline draws on the host (tests/json): here the file must
	 * be strict JSON */
	tap_ok(system("npu-json-check itrace.json > /dev/null 2>&1") == 0,
	       "the instruction trace is strict JSON (npu-json-check)");
	free(json);
	npu_free(a);
	npu_free(b);
	npu_free(c);
}

static void test_fault(npu_module_t m)
{
	npu_function_t f;
	void *p = (void *)(uintptr_t)0x7ff0000000ull;	/* never mapped */
	void *args[1] = { &p };
	const char *msg;

	MUST(npu_module_get_function(&f, m, "bad_store"));
	MUST(npu_launch_kernel(f, npu_grid(2, 1, 1), npu_grid(4, 1, 1), 0, NULL,
			       args));
	ST(npu_device_synchronize(), NPU_ERROR_ILLEGAL_ADDRESS,
	   "a kernel that stores to an unmapped address: a sticky error");
	msg = npu_last_error_message();
	tap_ok(strstr(msg, "bad_store") && strstr(msg, "basic.c:") &&
	       strstr(msg, "7ff0000000") && strstr(msg, "block 1 thread 3"),
	       "its message names the kernel, the source line, the address, "
	       "the block and thread: %s", msg);
	MUST(npu_device_reset());
}

/* Code is mapped read-only: a kernel storing to its own code faults. */
static void test_code_read_only(npu_module_t m)
{
	npu_function_t f;
	const char *msg;

	MUST(npu_module_get_function(&f, m, "store_to_code"));
	MUST(npu_launch_kernel(f, npu_grid(1, 1, 1), npu_grid(1, 1, 1), 0, NULL,
			       NULL));
	ST(npu_device_synchronize(), NPU_ERROR_ILLEGAL_ADDRESS,
	   "a kernel that stores to its own code: a sticky error");
	msg = npu_last_error_message();
	tap_ok(strstr(msg, "store_to_code") && strstr(msg, "read-only"),
	       "its message names the kernel and a write to a read-only page: %s",
	       msg);
	MUST(npu_device_reset());
}

/* The second process: its own code object, its own launches. */
static int child(const char *dir)
{
	enum { N = 2048 };
	unsigned *h = malloc(N * 4), n = N, tag, bad = 0;
	char path[PATH_MAX + 32];
	npu_function_t f;
	npu_module_t m;
	void *d, *args[3] = { &d, &n, &tag };

	snprintf(path, sizeof(path), "%s/kernels/other.npu", dir);
	if (npu_module_load(&m, path) || npu_module_get_function(&f, m, "pattern") ||
	    npu_malloc(&d, N * 4))
		return 2;
	for (tag = 0; tag < 30; tag++) {
		if (npu_launch_kernel(f, npu_grid(N / 16, 1, 1), npu_grid(16, 1, 1),
				      0, NULL, args) ||
		    npu_memcpy(h, d, N * 4, NPU_MEMCPY_DEVICE_TO_HOST))
			return 3;
		for (unsigned i = 0; i < N; i++)
			bad += h[i] != i * 3 + tag;
	}
	npu_module_unload(m);
	npu_free(d);
	free(h);
	return bad ? 4 : 0;
}

/* Two processes load different code objects and run them at once. */
static void test_two_processes(npu_module_t m, const char *self_path)
{
	enum { N = 4096 };
	float *h = malloc(N * 4), *r = malloc(N * 4);
	unsigned n = N, bad = 0;
	void *a, *c, *args[4] = { &a, &a, &c, &n };
	npu_function_t f;
	int status;
	pid_t pid;

	MUST(npu_module_get_function(&f, m, "vadd"));
	MUST(npu_malloc(&a, N * 4));
	MUST(npu_malloc(&c, N * 4));
	for (int i = 0; i < N; i++)
		h[i] = (float)i;
	MUST(npu_memcpy(a, h, N * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	pid = fork();
	if (pid == 0) {
		execl(self_path, self_path, "--child", (char *)NULL);
		_exit(127);
	}
	for (int k = 0; k < 30; k++) {
		MUST(npu_launch_kernel(f, npu_grid(N / 16, 1, 1),
				       npu_grid(16, 1, 1), 0, NULL, args));
		MUST(npu_memcpy(r, c, N * 4, NPU_MEMCPY_DEVICE_TO_HOST));
		for (int i = 0; i < N; i++)
			bad += r[i] != 2 * h[i];
	}
	waitpid(pid, &status, 0);
	tap_ok(!bad, "this process ran its kernel 30 times, right every time");
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "meanwhile another process loaded another code object and ran "
	       "its kernel 30 times, right every time (exit %d)",
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	npu_free(a);
	npu_free(c);
	free(h);
	free(r);
}

int main(int argc, char **argv)
{
	npu_module_t m, mem;
	char self[PATH_MAX], exe[PATH_MAX];
	ssize_t n;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = 0;
	snprintf(exe, sizeof(exe), "%s", self);
	if (argc == 2 && !strcmp(argv[1], "--child"))
		return child(dirname(self));
	tap_need_device();
	MUST(npu_device_get_properties(&prop, 0));
	if (!(prop.features & NPU_FEATURE_USER_KERNELS)) {
		tap_ok(0, "the device runs user kernels");
		return tap_done();
	}
	snprintf(kpath, sizeof(kpath), "%s/kernels/basic.npu", dirname(self));
	test_load_errors();
	test_module(&m, &mem);
	test_launches(m, mem);
	test_arg_widths(m);
	test_printf(m);
	test_printf_stuck_stdout(m);
	test_mapped(m);
	test_graphs(m);
	test_graph_printf(m);
	test_tune(m);
	test_two_processes(m, exe);
	test_profile(m);
	test_graph_profile(m);
	test_itrace(m);
	test_code_read_only(m);
	test_fault(m);
	ST(npu_module_unload(m), NPU_SUCCESS, "unload");
	ST(npu_module_unload(m), NPU_ERROR_INVALID_HANDLE, "unload twice");
	ST(npu_module_unload(mem), NPU_SUCCESS, "unload the in-memory module");
	return tap_done();
}
