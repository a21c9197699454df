/* SPDX-License-Identifier: MIT */
/*
 * lib_devloss: device loss (issue 30, item 18). The driver is unbound
 * (sysfs, as tests/kselftest/npu_unbind_test.c does) while a kernel runs
 * and a thread spins on its stream (NPU_DEVICE_SCHEDULE_SPIN), with a host
 * function queued behind the kernel: the waiting thread and every later
 * call must return NPU_ERROR_DEVICE_LOST, the host function must not run,
 * and nothing may report the lost work complete. The driver is bound
 * again at the end, so later suites find the device. A call that hangs
 * trips an alarm: the test then fails (and rebinds), never hangs.
 *
 * Objects destroyed after the loss while the library still has work that
 * points at them: a stream with a job deferred behind another stream's host
 * function (the job becomes ready when that function returns), and an
 * executable graph whose host node is still running on a library thread.
 * Both functions return after the loss; the work that follows must not
 * touch the freed objects (the ASan build, lib-asan, catches it if it does)
 * and must not run.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "tap.h"

#define DRV "/sys/bus/pci/drivers/npu"
#define SPIN_NS 1500000000ull	/* under the driver's 2 s job timeout */

static char addr[64];
static atomic_int host_fn_ran, hold_stream, hold_graph, graph_tail_ran;

static int pci_addr(void)
{
	glob_t g;
	int ret = -1;

	if (glob(DRV "/0000:*", 0, NULL, &g))
		return -1;
	if (g.gl_pathc) {
		snprintf(addr, sizeof(addr), "%s", strrchr(g.gl_pathv[0], '/') + 1);
		ret = 0;
	}
	globfree(&g);
	return ret;
}

/* async-signal-safe (the alarm handler uses it) */
static int sysfs_write(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), ret;

	if (fd < 0)
		return -1;
	ret = write(fd, val, strlen(val)) < 0 ? -1 : 0;
	close(fd);
	return ret;
}

static void on_alarm(int sig)
{
	static const char msg[] = "not ok 999 - a call hung after device loss "
				  "(alarm); the driver is bound again\n";

	(void)sig;
	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	sysfs_write(DRV "/bind", addr);
	_exit(1);
}

static void mark(void *user)
{
	(void)user;
	atomic_store(&host_fn_ran, 1);
}

/* a host function that returns when *user is set (or after 20 s) */
static void hold(void *user)
{
	atomic_int *flag = user;
	int i;

	for (i = 0; i < 20000 && !atomic_load(flag); i++)
		usleep(1000);
}

static void graph_tail(void *user)
{
	(void)user;
	atomic_store(&graph_tail_ran, 1);
}

struct waiter {
	npu_stream_t s;
	npu_status_t st;
};

static void *sync_thread(void *arg)
{
	struct waiter *w = arg;

	w->st = npu_stream_synchronize(w->s);
	return NULL;
}

int main(void)
{
	uint64_t spin[1] = { SPIN_NS };
	npu_stream_t s, s2, held, behind, gs;
	npu_event_t ev, held_ev;
	npu_graph_t g;
	npu_graph_node_t n1, n2;
	npu_graph_exec_t x;
	struct waiter w;
	pthread_t t;
	void *d, *d2;
	char h[64];

	tap_need_device();
	if (pci_addr()) {
		tap_ok(0, "find the npu device under " DRV);
		return tap_done();
	}
	signal(SIGALRM, on_alarm);
	alarm(120);
	MUST(npu_device_set_flags(NPU_DEVICE_SCHEDULE_SPIN));
	MUST(npu_malloc(&d, 4096));
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_event_create(&ev, NPU_EVENT_DISABLE_TIMING));
	/* work in flight: a 1.5 s kernel, a host function, an event */
	MUST(npu_launch(NPU_K_TEST_SPIN, npu_grid(1, 1, 1), spin, 1, s, 0));
	MUST(npu_launch_host_func(s, mark, NULL));
	MUST(npu_event_record(ev, s));
	/* a job of stream `behind`, deferred until held's host function
	 * returns; a graph launch whose first host node is running */
	MUST(npu_stream_create(&held, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&behind, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&gs, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_event_create(&held_ev, NPU_EVENT_DISABLE_TIMING));
	MUST(npu_launch_host_func(held, hold, &hold_stream));
	MUST(npu_event_record(held_ev, held));
	MUST(npu_stream_wait_event(behind, held_ev, 0));
	MUST(npu_launch(NPU_K_NOP, npu_grid(1, 1, 1), NULL, 0, behind, 0));
	MUST(npu_graph_create(&g, 0));
	MUST(npu_graph_add_host_node(&n1, g, NULL, 0, hold, &hold_graph));
	MUST(npu_graph_add_host_node(&n2, g, &n1, 1, graph_tail, NULL));
	MUST(npu_graph_instantiate(&x, g, 0));
	MUST(npu_graph_launch(x, gs));
	w.s = s;
	w.st = NPU_ERROR_NOT_READY;
	pthread_create(&t, NULL, sync_thread, &w);
	usleep(300000);
	tap_ok(sysfs_write(DRV "/unbind", addr) == 0, "unbind the driver from %s", addr);
	pthread_join(t, NULL);
	ST(w.st, NPU_ERROR_DEVICE_LOST,
	   "a stream synchronize spinning at unbind returns DEVICE_LOST");
	usleep(300000);	/* the host-function thread had its chance */
	tap_ok(!atomic_load(&host_fn_ran),
	       "the host function behind the lost kernel did not run");
	ST(npu_stream_query(s), NPU_ERROR_DEVICE_LOST, "stream query: DEVICE_LOST");
	ST(npu_stream_synchronize(s), NPU_ERROR_DEVICE_LOST, "stream synchronize: DEVICE_LOST");
	ST(npu_event_query(ev), NPU_ERROR_DEVICE_LOST, "event query: DEVICE_LOST");
	ST(npu_event_synchronize(ev), NPU_ERROR_DEVICE_LOST, "event synchronize: DEVICE_LOST");
	ST(npu_device_synchronize(), NPU_ERROR_DEVICE_LOST, "device synchronize: DEVICE_LOST");
	ST(npu_stream_synchronize(NULL), NPU_ERROR_DEVICE_LOST,
	   "legacy stream synchronize: DEVICE_LOST");
	ST(npu_launch(NPU_K_NOP, npu_grid(1, 1, 1), NULL, 0, s, 0), NPU_ERROR_DEVICE_LOST,
	   "launch: DEVICE_LOST");
	ST(npu_memcpy(h, d, sizeof(h), NPU_MEMCPY_DEVICE_TO_HOST), NPU_ERROR_DEVICE_LOST,
	   "npu_memcpy: DEVICE_LOST");
	ST(npu_memset(d, 0, 64), NPU_ERROR_DEVICE_LOST, "npu_memset: DEVICE_LOST");
	ST(npu_malloc(&d2, 4096), NPU_ERROR_DEVICE_LOST, "npu_malloc: DEVICE_LOST");
	ST(npu_stream_create(&s2, 0, 0), NPU_ERROR_DEVICE_LOST, "stream create: DEVICE_LOST");
	tap_ok(strcmp(npu_status_string(NPU_ERROR_DEVICE_LOST), "unknown status") &&
	       !strcmp(npu_status_name(NPU_ERROR_DEVICE_LOST), "NPU_ERROR_DEVICE_LOST"),
	       "DEVICE_LOST has a name and a description (%s)",
	       npu_status_string(NPU_ERROR_DEVICE_LOST));
	/* destruction returns (no hang) and frees; the status says the loss */
	ST(npu_event_destroy(ev), NPU_SUCCESS, "event destroy after the loss");
	ST(npu_stream_destroy(s), NPU_ERROR_DEVICE_LOST, "stream destroy after the loss: DEVICE_LOST");
	ST(npu_free(d), NPU_ERROR_DEVICE_LOST, "npu_free after the loss: DEVICE_LOST");
	/* destroyed while the library still holds work that points at them */
	ST(npu_stream_destroy(behind), NPU_ERROR_DEVICE_LOST,
	   "destroy a stream with a job deferred behind a running host function");
	atomic_store(&hold_stream, 1);	/* the deferred job becomes ready */
	ST(npu_graph_exec_destroy(x), NPU_ERROR_DEVICE_LOST,
	   "destroy an executable graph whose host node is running");
	atomic_store(&hold_graph, 1);	/* the launch's thread goes on */
	usleep(300000);
	tap_ok(!atomic_load(&graph_tail_ran),
	       "the graph's next host node did not run after the loss");
	ST(npu_stream_destroy(held), NPU_ERROR_DEVICE_LOST, "destroy the held stream");
	ST(npu_stream_destroy(gs), NPU_ERROR_DEVICE_LOST, "destroy the graph's stream");
	ST(npu_event_destroy(held_ev), NPU_SUCCESS, "destroy its event");
	ST(npu_graph_destroy(g), NPU_SUCCESS, "destroy the graph");
	alarm(0);
	tap_ok(sysfs_write(DRV "/bind", addr) == 0, "bind the driver again");
	return tap_done();
}
