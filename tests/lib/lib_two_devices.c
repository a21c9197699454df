/* SPDX-License-Identifier: MIT */
/*
 * lib_two_devices: a guest with two npu devices (run.sh --devices 2).
 * Each device has its own streams, memory and modules; the calling
 * thread's current device (npu_device_set) only picks where new objects
 * go.
 *
 * npu_module_unload waits for the module's own device, whichever device
 * is current: a module loaded on device 1, whose kernel is queued there
 * behind a gate, is unloaded from a thread whose current device is 0. The
 * unload returns only after another thread opened the gate and the kernel
 * ran, with the right result (unloading first would free the code the
 * queued launch runs).
 */
#include "tap.h"

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#define N 4096u

static uint32_t *gate;
static int gate_opened;		/* set just before the gate opens */

static void *open_gate(void *arg)
{
	(void)arg;
	usleep(300 * 1000);
	__atomic_store_n(&gate_opened, 1, __ATOMIC_RELEASE);
	__atomic_store_n(gate, 1, __ATOMIC_RELEASE);
	return NULL;
}

int main(void)
{
	char path[PATH_MAX + 32];
	float a = 2.0f, *x, *y, *h;
	npu_device_prop prop;
	npu_function_t saxpy;
	npu_module_t m;
	npu_stream_t s;
	npu_event_t done;
	pthread_t t;
	unsigned n = N;
	int count = 0, cur = -1;
	bool ok = true;

	tap_need_device();
	MUST(npu_device_count(&count));
	tap_ok(count == 2, "the guest has two devices (got %d)", count);
	if (count < 2)
		return tap_done();

	tap_beside_self(path, sizeof(path), "kernels/hotspots.npu");

	MUST(npu_device_set(1));
	MUST(npu_device_get_properties(&prop, 1));
	MUST(npu_module_load(&m, path));
	MUST(npu_module_get_function(&saxpy, m, "saxpy1"));
	MUST(npu_host_alloc((void **)&gate, 4096, 0));
	*gate = 0;
	h = malloc(N * sizeof(float));
	for (unsigned i = 0; i < N; i++)
		h[i] = (float)i;
	MUST(npu_malloc((void **)&x, N * sizeof(float)));
	MUST(npu_malloc((void **)&y, N * sizeof(float)));
	MUST(npu_memcpy(x, h, N * sizeof(float), NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_memcpy(y, h, N * sizeof(float), NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_event_create(&done, 0));
	MUST(npu_stream_wait_value32(s, gate, 1, 0));
	{
		void *args[] = { &a, &x, &y, &n };

		MUST(npu_launch_kernel(saxpy,
				       (npu_dim3){ N / prop.unit_threads, 1, 1 },
				       (npu_dim3){ prop.unit_threads, 1, 1 }, 0,
				       s, args));
	}
	MUST(npu_event_record(done, s));
	ST(npu_event_query(done), NPU_ERROR_NOT_READY,
	   "device 1's kernel waits behind its gate");

	MUST(npu_device_set(0));
	MUST(npu_device_get(&cur));
	tap_ok(cur == 0, "device 0 is current");
	if (pthread_create(&t, NULL, open_gate, NULL)) {
		tap_ok(0, "pthread_create");
		return tap_done();
	}
	ST(npu_module_unload(m), NPU_SUCCESS,
	   "unload the device-1 module from device 0");
	tap_ok(__atomic_load_n(&gate_opened, __ATOMIC_ACQUIRE),
	       "the unload returned only after the gate opened");
	ST(npu_event_query(done), NPU_SUCCESS,
	   "and after the module's kernel completed on device 1");
	pthread_join(t, NULL);

	MUST(npu_device_set(1));
	ST(npu_stream_synchronize(s), NPU_SUCCESS, "device 1's stream is fine");
	{
		float *out = malloc(N * sizeof(float));

		MUST(npu_memcpy(out, y, N * sizeof(float),
				NPU_MEMCPY_DEVICE_TO_HOST));
		for (unsigned i = 0; i < N && ok; i++)
			ok = out[i] == a * h[i] + h[i];
		tap_ok(ok, "the kernel computed y = a x + y");
		free(out);
	}
	MUST(npu_event_destroy(done));
	MUST(npu_stream_destroy(s));
	MUST(npu_free(x));
	MUST(npu_free(y));
	MUST(npu_host_free(gate));
	free(h);
	return tap_done();
}
