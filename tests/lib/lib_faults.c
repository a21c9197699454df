/* SPDX-License-Identifier: MIT */
/*
 * lib_faults fault|hang: a device page fault (NPU_KERNEL_TEST_FAULT) or a
 * kernel that never ends (NPU_KERNEL_TEST_HANG, stopped by the driver's job
 * timeout) becomes a sticky error of the stream and the device, with the
 * fault address and kernel in the message; it never hangs the caller; a
 * second process using the device at the same time is unaffected; and
 * npu_device_reset() makes the device usable again.
 */
#include "tap.h"

#include <sys/wait.h>

#define N 65536

/* A second process: saxpy with a CPU check. */
static int worker(void)
{
	float *x = malloc(N * 4), *y = malloc(N * 4), *o = malloc(N * 4);
	void *dx, *dy;
	int i;

	for (i = 0; i < N; i++) {
		x[i] = (float)(i % 100);
		y[i] = 1.0f;
	}
	if (npu_malloc(&dx, N * 4) || npu_malloc(&dy, N * 4))
		return 2;
	if (npu_memcpy(dx, x, N * 4, NPU_MEMCPY_HOST_TO_DEVICE) ||
	    npu_memcpy(dy, y, N * 4, NPU_MEMCPY_HOST_TO_DEVICE))
		return 3;
	uint64_t a[4] = { npu_arg_ptr(dx), npu_arg_ptr(dy), N, npu_arg_f32(3.0f) };
	if (npu_parallel(NPU_K_SAXPY_F32, npu_grid(4, 1, 1), a, 4, NULL))
		return 4;
	if (npu_memcpy(o, dy, N * 4, NPU_MEMCPY_DEVICE_TO_HOST))
		return 5;
	for (i = 0; i < N; i++)
		if (!feq(o[i], 1.0f + 3.0f * x[i]))
			return 6;
	npu_free(dx);
	npu_free(dy);
	free(x);
	free(y);
	free(o);
	return 0;
}

static pid_t start_worker(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl("/proc/self/exe", "lib_faults", "--worker", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static int wait_worker(pid_t pid)
{
	int status;

	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void check_recovery(void)
{
	void *d;
	float v = 0;
	uint64_t a[3];

	ST(npu_device_reset(), NPU_SUCCESS, "npu_device_reset clears the sticky error");
	MUST(npu_malloc(&d, 4096));
	a[0] = npu_arg_ptr(d);
	a[1] = 1024;
	a[2] = npu_arg_f32(9.0f);
	ST(npu_parallel(NPU_K_FILL_F32, npu_grid(1, 1, 1), a, 3, NULL), NPU_SUCCESS,
	   "work runs again after the reset");
	MUST(npu_memcpy(&v, (char *)d + 4092, 4, NPU_MEMCPY_DEVICE_TO_HOST));
	tap_ok(v == 9.0f, "and computes the right result");
	npu_free(d);
}

static void run(int hang)
{
	npu_device_prop p;
	npu_stream_t s, other;
	npu_status_t want = hang ? NPU_ERROR_LAUNCH_TIMEOUT : NPU_ERROR_ILLEGAL_ADDRESS;
	uint64_t bad, a[1];
	char hex[32];
	pid_t w;
	int r;

	MUST(npu_device_get_properties(&p, 0));
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&other, NPU_STREAM_NON_BLOCKING, 0));
	bad = p.va_size ? ((p.va_size - 0x200000) & ~0xfffull) : 0x7f00000000ull;
	a[0] = bad;
	if (hang) {
		tap_diag("driver job timeout %u ms", p.job_timeout_ms);
		ST(npu_launch(NPU_K_TEST_HANG, npu_grid(1, 1, 1), NULL, 0, s, 0),
		   NPU_SUCCESS, "launch a kernel that never ends");
	} else {
		ST(npu_launch(NPU_K_TEST_FAULT, npu_grid(1, 1, 1), a, 1, s, 0),
		   NPU_SUCCESS, "launch a kernel that reads an unmapped address");
	}
	w = start_worker();
	ST(npu_stream_synchronize(s), want, "synchronize reports the %s",
	   hang ? "timeout" : "fault");
	tap_diag("message: %s", npu_last_error_message());
	if (!hang) {
		snprintf(hex, sizeof(hex), "%llx", (unsigned long long)bad);
		tap_ok(strstr(npu_last_error_message(), hex) != NULL,
		       "message names the fault address 0x%s", hex);
	}
	tap_ok(strstr(npu_last_error_message(), hang ? "test_hang" : "test_fault") != NULL,
	       "message names the kernel");
	if (hang)
		tap_ok(strstr(npu_last_error_message(), "npu.job_timeout_ms") &&
		       strstr(npu_last_error_message(), "NPU_MODPARAMS=job_timeout_ms="),
		       "message names the setting that changes the timeout");
	tap_ok(npu_get_last_error() == want, "last error is the %s",
	       npu_status_name(want));
	ST(npu_stream_query(s), want, "the error is sticky on the stream");
	ST(npu_stream_synchronize(other), want, "and on the device (other streams)");
	ST(spin(other, 1000), want, "new work is refused with the sticky error");
	ST(npu_device_synchronize(), want, "device synchronize reports it");
	r = wait_worker(w);
	tap_ok(r == 0, "a second process computing at the same time is unaffected "
	       "(exit %d)", r);
	ST(npu_stream_destroy(s), want, "destroying the stream reports its error");
	npu_stream_destroy(other);
	check_recovery();
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--worker"))
		return worker();
	if (argc < 2 || argc > 3 || (strcmp(argv[1], "fault") && strcmp(argv[1], "hang")) ||
	    (argc == 3 && strcmp(argv[2], "spin"))) {
		fprintf(stderr, "usage: lib_faults fault|hang [spin]\n");
		return 2;
	}
	tap_need_device();
	/* spin: the waits watch the completion word, which a failed job
	 * never writes, until they see the failure some other way */
	if (argc == 3)
		MUST(npu_device_set_flags(NPU_DEVICE_SCHEDULE_SPIN));
	run(!strcmp(argv[1], "hang"));
	return tap_done();
}
