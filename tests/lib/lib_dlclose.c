/* SPDX-License-Identifier: MIT */
/*
 * lib_dlclose: libnpu loaded with dlopen, used (streams, the legacy
 * stream, host functions, a graph with a kernel and a host node, pinned
 * memory, an event), unloaded with dlclose, five times over. Every other
 * round leaves its work pending and its objects alive: unloading must
 * wait for the work (every host function has run when dlclose returns),
 * stop every thread of the library and release the device. Checked after
 * each round: the library is really unloaded (dlopen RTLD_NOLOAD fails),
 * /proc/self/task and /proc/self/fd are back to their counts before the
 * first round, and no mapping of the device node is left.
 *
 * Not linked with libnpu: npu.h gives the types, dlsym the calls. The
 * library is NPU_DLCLOSE_LIB from the environment, else LIBNPU_NAME
 * (compiled in: libnpu.so.0, or the ASan build's libnpu-asan.so next to
 * the program).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdatomic.h>
#include <unistd.h>

#include "tap.h"

#ifndef LIBNPU_NAME
#define LIBNPU_NAME "libnpu.so.0"
#endif
#define ROUNDS 5

static struct {
#define F(name) __typeof__(name) *name
	F(npu_device_count);
	F(npu_device_get_properties);
	F(npu_stream_create);
	F(npu_stream_destroy);
	F(npu_malloc);
	F(npu_free);
	F(npu_host_alloc);
	F(npu_host_free);
	F(npu_launch);
	F(npu_memcpy_async);
	F(npu_launch_host_func);
	F(npu_event_create);
	F(npu_event_record);
	F(npu_event_destroy);
	F(npu_graph_create);
	F(npu_graph_destroy);
	F(npu_graph_add_kernel_node);
	F(npu_graph_add_host_node);
	F(npu_graph_instantiate);
	F(npu_graph_exec_destroy);
	F(npu_graph_launch);
	F(npu_device_synchronize);
	F(npu_last_error_message);
#undef F
} L;

static int load(void *h)
{
	static const char *const names[] = {
		"npu_device_count", "npu_device_get_properties",
		"npu_stream_create", "npu_stream_destroy", "npu_malloc",
		"npu_free", "npu_host_alloc", "npu_host_free", "npu_launch",
		"npu_memcpy_async", "npu_launch_host_func", "npu_event_create",
		"npu_event_record", "npu_event_destroy", "npu_graph_create",
		"npu_graph_destroy", "npu_graph_add_kernel_node",
		"npu_graph_add_host_node", "npu_graph_instantiate",
		"npu_graph_exec_destroy", "npu_graph_launch",
		"npu_device_synchronize", "npu_last_error_message",
	};
	void **slot = (void **)&L;
	size_t i;

	_Static_assert(sizeof(L) == sizeof(names) / sizeof(names[0]) * sizeof(void *),
		       "one name per call");
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		slot[i] = dlsym(h, names[i]);
		if (!slot[i]) {
			tap_diag("dlsym %s: %s", names[i], dlerror());
			return -1;
		}
	}
	return 0;
}

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static int count_maps(const char *node)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, node) != NULL;
	fclose(f);
	return n;
}

#ifdef __SANITIZE_ADDRESS__
/* The library does not free the heap of objects a round left alive (nor
 * its tables) when it is unloaded: known, documented (libnpu.rst,
 * "Unloading"); every allocation it makes happens under use_library(). */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:use_library\n";
}
#endif

static atomic_int host_calls;

static void host_fn(void *arg)
{
	(void)arg;
	usleep(2000);		/* still running when dlclose is called */
	atomic_fetch_add(&host_calls, 1);
}

#define CALL(x) do { npu_status_t st_ = (x);				\
	if (st_) {							\
		tap_diag("  %s: %d (%s)", #x, (int)st_,			\
			 L.npu_last_error_message());			\
		return -1;						\
	} } while (0)

/* One round of use; tidy: synchronize and destroy everything, else leave
 * work pending and objects alive. Returns the host calls it queued, or
 * -1. */
static int use_library(int tidy, char *node, size_t node_size)
{
	npu_device_prop p;
	npu_stream_t s1, s2;
	npu_event_t e;
	npu_graph_t g;
	npu_graph_exec_t x;
	npu_graph_node_t kn, hn;
	npu_kernel_node_params kp;
	void *d, *pin;
	int n;
	uint64_t spin_args[1] = { 2000000 };
	uint64_t fill[3];

	CALL(L.npu_device_count(&n));
	CALL(L.npu_device_get_properties(&p, 0));
	snprintf(node, node_size, "%s", p.node);
	CALL(L.npu_stream_create(&s1, 0, 0));
	CALL(L.npu_stream_create(&s2, 1 /* non-blocking */, 0));
	CALL(L.npu_malloc(&d, 4096));
	CALL(L.npu_host_alloc(&pin, 4096, 0));
	fill[0] = (uint64_t)(uintptr_t)d;
	fill[1] = 1024;
	fill[2] = 0x3f800000;		/* 1.0f */
	CALL(L.npu_launch(NPU_K_TEST_SPIN, (npu_dim3){ 1, 1, 1 }, spin_args, 1, s1, 0));
	CALL(L.npu_launch(NPU_K_FILL_F32, (npu_dim3){ 1, 1, 1 }, fill, 3, s1, 0));
	CALL(L.npu_memcpy_async(pin, d, 4096, NPU_MEMCPY_DEVICE_TO_HOST, s1));
	CALL(L.npu_launch_host_func(s1, host_fn, NULL));
	CALL(L.npu_launch_host_func(NULL, host_fn, NULL));
	CALL(L.npu_event_create(&e, 0));
	CALL(L.npu_event_record(e, s1));
	memset(&kp, 0, sizeof(kp));
	kp.kernel = NPU_K_TEST_SPIN;
	kp.grid = (npu_dim3){ 1, 1, 1 };
	kp.nargs = 1;
	kp.args[0] = 1000000;
	CALL(L.npu_graph_create(&g, 0));
	CALL(L.npu_graph_add_kernel_node(&kn, g, NULL, 0, &kp));
	CALL(L.npu_graph_add_host_node(&hn, g, &kn, 1, host_fn, NULL));
	CALL(L.npu_graph_instantiate(&x, g, 0));
	CALL(L.npu_graph_launch(x, s2));
	CALL(L.npu_graph_launch(x, s2));
	CALL(L.npu_launch_host_func(s2, host_fn, NULL));
	if (tidy) {
		CALL(L.npu_device_synchronize());
		CALL(L.npu_graph_exec_destroy(x));
		CALL(L.npu_graph_destroy(g));
		CALL(L.npu_event_destroy(e));
		CALL(L.npu_stream_destroy(s1));
		CALL(L.npu_stream_destroy(s2));
		CALL(L.npu_free(d));
		CALL(L.npu_host_free(pin));
	}
	return 5;
}

int main(int argc, char **argv)
{
	const char *lib = getenv("NPU_DLCLOSE_LIB");
	char path[PATH_MAX + 64], node[64] = "";
	int tasks0, fds0, round;

	(void)argc;
	if (!lib) {
		lib = LIBNPU_NAME;
		if (lib[0] != '/' && strchr(lib, '/')) {
			/* relative to the program: the ASan build's copy */
			char self[PATH_MAX];
			ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
			char *slash;

			self[k > 0 ? k : 0] = 0;
			slash = strrchr(self, '/');
			if (slash)
				*slash = 0;
			snprintf(path, sizeof(path), "%s/%s", self, lib);
			lib = path;
		}
	}
	(void)argv;
	tasks0 = count_dir("/proc/self/task");
	fds0 = count_dir("/proc/self/fd");
	tap_diag("library %s; before: %d threads, %d fds", lib, tasks0, fds0);
	for (round = 0; round < ROUNDS; round++) {
		int tidy = round % 2, want, tasks, fds, maps;
		void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

		if (!h) {
			tap_ok(0, "dlopen %s: %s", lib, dlerror());
			break;
		}
		if (load(h)) {
			tap_ok(0, "round %d: the calls resolve", round);
			break;
		}
		atomic_store(&host_calls, 0);
		want = use_library(tidy, node, sizeof(node));
		tap_ok(want > 0, "round %d: streams, legacy stream, host functions, "
		       "a graph with a host node, %s", round,
		       tidy ? "all synchronized and destroyed" :
		       "left pending and alive");
		tap_ok(dlclose(h) == 0, "round %d: dlclose", round);
		h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
		tap_ok(!h, "round %d: the library is unloaded", round);
		if (h)
			dlclose(h);
		tap_ok(atomic_load(&host_calls) == want,
		       "round %d: every host function ran before the unload "
		       "(%d of %d)", round, atomic_load(&host_calls), want);
		/* a joined thread leaves /proc/self/task a moment after
		 * pthread_join returns (the kernel wakes the joiner before it
		 * reaps the thread): give it up to 2 s */
		tasks = count_dir("/proc/self/task");
		for (int i = 0; i < 200 && tasks != tasks0; i++) {
			usleep(10000);
			tasks = count_dir("/proc/self/task");
		}
		fds = count_dir("/proc/self/fd");
		maps = count_maps(node);
		tap_ok(tasks == tasks0, "round %d: no thread left (%d, before %d)",
		       round, tasks, tasks0);
		tap_ok(fds == fds0, "round %d: no fd left (%d, before %d)", round,
		       fds, fds0);
		tap_ok(maps == 0, "round %d: no mapping of %s left (%d)", round,
		       node, maps);
	}
	return tap_done();
}
