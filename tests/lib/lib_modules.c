/* SPDX-License-Identifier: MIT */
/*
 * lib_modules: the life of a module against misuse and faults: a file
 * that is not a code object (or is cut short) is refused without a double
 * free; two threads unloading one module at once (one unloads it, the
 * other is told the handle is gone); a module whose kernels graph nodes or
 * executable graphs name is not unloaded under them; a fault in a function
 * a kernel called names the launched kernel and the function and line; a
 * compute-unit fault that is not a page fault names the cause the device
 * recorded (kernels/faults.c).
 */
#include "tap.h"

#include <limits.h>
#include <pthread.h>

static char kpath[PATH_MAX];

static void *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	void *b = NULL;
	long len;

	*n = 0;
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc(len > 0 ? (size_t)len : 1);
	if (b && fread(b, 1, (size_t)len, f) != (size_t)len) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*n = b ? (size_t)len : 0;
	return b;
}

static void spit(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(b, 1, n, f) != n)
		tap_diag("cannot write %s", path);
	if (f)
		fclose(f);
}

/* npu_module_load() of files that are not code objects: each refused with
 * INVALID_IMAGE, the module pointer NULL, and (ASan, glibc) no buffer
 * freed twice. Run a few times: a double free of a reused chunk shows. */
static void test_bad_files(void)
{
	static const char text[] = "this is a text file, not a code object\n";
	const char *path = "/tmp/lib_modules.bad.npu";
	size_t n;
	uint8_t *img = slurp(kpath, &n);
	struct { const char *what; const void *b; size_t n; } c[] = {
		{ "a text file", text, sizeof(text) - 1 },
		{ "an empty file", text, 0 },
		{ "a code object cut to 200 bytes", img, 200 },
		{ "a code object cut in half", img, n / 2 },
		{ "a code object without its last byte", img, n - 1 },
	};

	tap_ok(img && n > 1024, "read the code object (%zu bytes)", n);
	if (!img)
		return;
	for (unsigned i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		unsigned refused = 0;

		spit(path, c[i].b, c[i].n);
		for (int k = 0; k < 4; k++) {
			npu_module_t m = (npu_module_t)(uintptr_t)1;

			refused += npu_module_load(&m, path) ==
				   NPU_ERROR_INVALID_IMAGE && m == NULL;
		}
		tap_ok(refused == 4, "npu_module_load of %s: INVALID_IMAGE, "
		       "no module, 4 times of 4 (%u): %s", c[i].what, refused,
		       npu_last_error_message());
	}
	unlink(path);
	free(img);
}

struct unloader {
	pthread_barrier_t *go;
	npu_module_t m;
	npu_status_t st;
};

static void *unload_thread(void *p)
{
	struct unloader *u = p;

	pthread_barrier_wait(u->go);
	u->st = npu_module_unload(u->m);
	return NULL;
}

/* Two threads unload one module while a long kernel runs: both reach the
 * wait for the device's work together; only one may free the module. */
static void test_unload_race(void)
{
	pthread_barrier_t go;
	struct unloader u[2];
	pthread_t t[2];
	npu_module_t m;
	unsigned ok = 0, gone = 0;

	for (int round = 0; round < 3; round++) {
		MUST(npu_module_load(&m, kpath));
		pthread_barrier_init(&go, NULL, 2);
		/* 200 ms on the device: both threads are past the handle
		 * check before either wait returns */
		MUST(spin(NULL, ms_to_ns(200)));
		for (int i = 0; i < 2; i++) {
			u[i] = (struct unloader){ &go, m, NPU_ERROR_OS };
			pthread_create(&t[i], NULL, unload_thread, &u[i]);
		}
		for (int i = 0; i < 2; i++) {
			pthread_join(t[i], NULL);
			ok += u[i].st == NPU_SUCCESS;
			gone += u[i].st == NPU_ERROR_INVALID_HANDLE;
		}
		pthread_barrier_destroy(&go);
	}
	tap_ok(ok == 3 && gone == 3, "two threads unloading one module, 3 "
	       "rounds: one unloaded it each time (%u), the other got "
	       "INVALID_HANDLE (%u)", ok, gone);
	ST(npu_module_unload(m), NPU_ERROR_INVALID_HANDLE,
	   "and the handle is gone afterwards");
}

static int check_iota(const unsigned *d, unsigned n)
{
	unsigned *h = calloc(n, sizeof(*h)), bad = 0;

	if (!h || npu_memcpy(h, d, n * sizeof(*h), NPU_MEMCPY_DEVICE_TO_HOST))
		bad = 1;
	for (unsigned i = 0; h && i < n; i++)
		bad += h[i] != i;
	free(h);
	return !bad;
}

/* A graph's kernel node and an executable graph keep their kernel's
 * module loaded: unload is refused (IN_USE) until both are destroyed, and
 * the executable graph still launches the right code meanwhile. */
static void test_graph_holds(void)
{
	enum { N = 256 };
	npu_module_t m, m2;
	npu_function_t f, f2;
	npu_graph_t g;
	npu_graph_exec_t x;
	npu_graph_node_t node;
	npu_kernel_node_params p;
	unsigned *d, n = N;
	void *args[2] = { &d, &n };
	npu_stream_t s;
	npu_graph_t cg;

	MUST(npu_module_load(&m, kpath));
	MUST(npu_module_load(&m2, kpath));
	MUST(npu_module_get_function(&f, m, "iota"));
	MUST(npu_module_get_function(&f2, m2, "iota"));
	MUST(npu_malloc((void **)&d, N * sizeof(unsigned)));
	MUST(npu_graph_create(&g, 0));
	MUST(npu_kernel_node_params_init(&p, f, npu_grid(N / 16, 1, 1),
					 npu_grid(16, 1, 1), 0, args));
	MUST(npu_graph_add_kernel_node(&node, g, NULL, 0, &p));
	ST(npu_module_unload(m), NPU_ERROR_IN_USE,
	   "unload while a graph's kernel node names one of its kernels: "
	   "refused");
	tap_diag("%s", npu_last_error_message());
	MUST(npu_graph_instantiate(&x, g, 0));
	MUST(npu_graph_destroy(g));
	ST(npu_module_unload(m), NPU_ERROR_IN_USE,
	   "graph destroyed, its executable graph alive: still refused");
	MUST(npu_memset(d, 0xff, N * sizeof(unsigned)));
	MUST(npu_graph_launch(x, NULL));
	MUST(npu_stream_synchronize(NULL));
	tap_ok(check_iota(d, N), "the executable graph still runs its kernel");
	MUST(npu_graph_exec_destroy(x));
	ST(npu_module_unload(m), NPU_SUCCESS,
	   "unload once the graph and its executable graph are gone");

	/* set_params moves a node from one module's kernel to another's */
	MUST(npu_module_load(&m, kpath));
	MUST(npu_module_get_function(&f, m, "iota"));
	MUST(npu_graph_create(&g, 0));
	MUST(npu_kernel_node_params_init(&p, f, npu_grid(N / 16, 1, 1),
					 npu_grid(16, 1, 1), 0, args));
	MUST(npu_graph_add_kernel_node(&node, g, NULL, 0, &p));
	MUST(npu_kernel_node_params_init(&p, f2, npu_grid(N / 16, 1, 1),
					 npu_grid(16, 1, 1), 0, args));
	MUST(npu_graph_kernel_node_set_params(node, &p));
	ST(npu_module_unload(m), NPU_SUCCESS,
	   "a node moved to another module's kernel lets go of the first");
	ST(npu_module_unload(m2), NPU_ERROR_IN_USE,
	   "and holds the second");
	MUST(npu_graph_destroy(g));

	/* a launch captured into a graph holds its module too */
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_begin_capture(s, NPU_STREAM_CAPTURE_MODE_GLOBAL));
	MUST(npu_launch_kernel(f2, npu_grid(N / 16, 1, 1), npu_grid(16, 1, 1),
			       0, s, args));
	MUST(npu_stream_end_capture(s, &cg));
	ST(npu_module_unload(m2), NPU_ERROR_IN_USE,
	   "a captured launch's node holds its module");
	MUST(npu_graph_destroy(cg));
	MUST(npu_stream_destroy(s));
	ST(npu_module_unload(m2), NPU_SUCCESS, "unload after the last node");
	npu_free(d);
}

/* Launch f with args, wait: the sticky error and its message; reset. */
static npu_status_t fault_of(npu_module_t m, const char *kernel,
			     void **args, char *msg, size_t n)
{
	npu_function_t f;
	npu_status_t st;

	MUST(npu_module_get_function(&f, m, kernel));
	MUST(npu_launch_kernel(f, npu_grid(1, 1, 1), npu_grid(1, 1, 1), 0,
			       NULL, args));
	st = npu_device_synchronize();
	snprintf(msg, n, "%s", npu_last_error_message());
	MUST(npu_device_reset());
	return st;
}

/* fault_of() with the launch as the one kernel node of an executable graph. */
static npu_status_t graph_fault_of(npu_module_t m, const char *kernel,
				   void **args, char *msg, size_t n)
{
	npu_function_t f;
	npu_graph_t g;
	npu_graph_exec_t x;
	npu_graph_node_t node;
	npu_kernel_node_params p;
	npu_status_t st;

	MUST(npu_module_get_function(&f, m, kernel));
	MUST(npu_graph_create(&g, 0));
	MUST(npu_kernel_node_params_init(&p, f, npu_grid(1, 1, 1),
					 npu_grid(1, 1, 1), 0, args));
	MUST(npu_graph_add_kernel_node(&node, g, NULL, 0, &p));
	MUST(npu_graph_instantiate(&x, g, 0));
	MUST(npu_graph_destroy(g));
	st = npu_graph_launch(x, NULL);
	if (st == NPU_SUCCESS)
		st = npu_stream_synchronize(NULL);
	snprintf(msg, n, "%s", npu_last_error_message());
	npu_graph_exec_destroy(x);
	MUST(npu_device_reset());
	return st;
}

static void test_faults(void)
{
	void *bad = (void *)(uintptr_t)0x7ff0000000ull;	/* never mapped */
	npu_module_t m;
	char msg[512];
	void *d;
	unsigned depth = 200, unused = 0;
	void *a_helper[2] = { &bad, &d }, *a_d[1] = { &d },
	     *a_stack[2] = { &d, &depth }, *a_unused[1] = { &unused };
	struct { const char *kernel; void **args; const char *cause; } c[] = {
		{ "misaligned_store", a_d, "misaligned" },
		{ "scratch_overrun", a_unused, "scratchpad" },
		{ "params_overrun", a_d, "arguments" },
		{ "stack_overflow", a_stack, "stack" },
	};

	MUST(npu_module_load(&m, kpath));
	MUST(npu_malloc(&d, 4096));
	ST(fault_of(m, "calls_helper", a_helper, msg, sizeof(msg)),
	   NPU_ERROR_ILLEGAL_ADDRESS, "a load from an unmapped address in a "
	   "function the kernel called");
	tap_ok(strstr(msg, "in kernel calls_helper") &&
	       strstr(msg, "in function helper_load") &&
	       strstr(msg, "faults.c:") && strstr(msg, "7ff0000000"),
	       "its message names the launched kernel, the function and "
	       "line that faulted, the address: %s", msg);
	/* a graph's node runs on the graph's own queue, not a stream's */
	ST(graph_fault_of(m, "calls_helper", a_helper, msg, sizeof(msg)),
	   NPU_ERROR_ILLEGAL_ADDRESS, "the same fault in a kernel node of an "
	   "executable graph");
	tap_ok(strstr(msg, "in kernel calls_helper") &&
	       strstr(msg, "in function helper_load") &&
	       strstr(msg, "faults.c:") && strstr(msg, "7ff0000000"),
	       "its message names the launched kernel, the function and "
	       "line that faulted, the address: %s", msg);
	for (unsigned i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		ST(fault_of(m, c[i].kernel, c[i].args, msg, sizeof(msg)),
		   NPU_ERROR_LAUNCH_FAILURE, "%s: a launch failure",
		   c[i].kernel);
		tap_ok(!strstr(msg, "(other)") && strstr(msg, c[i].cause) &&
		       strstr(msg, c[i].kernel),
		       "its message names the cause (%s) and the kernel: %s",
		       c[i].cause, msg);
	}
	npu_free(d);
	ST(npu_module_unload(m), NPU_SUCCESS, "unload");
}

int main(int argc, char **argv)
{
	npu_device_prop prop;

	tap_need_device();
	MUST(npu_device_get_properties(&prop, 0));
	if (!(prop.features & NPU_FEATURE_USER_KERNELS)) {
		tap_ok(0, "the device runs user kernels");
		return tap_done();
	}
	tap_beside_self(kpath, sizeof(kpath), "kernels/faults.npu");
	/* lib_modules [files|unload|graphs|faults]: all, or one part */
	if (argc < 2 || !strcmp(argv[1], "files"))
		test_bad_files();
	if (argc < 2 || !strcmp(argv[1], "unload"))
		test_unload_race();
	if (argc < 2 || !strcmp(argv[1], "graphs"))
		test_graph_holds();
	if (argc < 2 || !strcmp(argv[1], "faults"))
		test_faults();
	return tap_done();
}
