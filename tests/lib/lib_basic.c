/* SPDX-License-Identifier: MIT */
/*
 * lib_basic: devices, memory (malloc, pinned, registered; all copy
 * directions, pageable staging, memset), kernels against a CPU reference,
 * and bad input (each must fail cleanly and change nothing).
 */
#define _GNU_SOURCE	/* pthread_timedjoin_np */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <drm.h>
#include <drm/npu_accel.h>

#include "tap.h"

#define N 100000

/* The versions: libnpu's as npu.h says, the driver's as DRM_IOCTL_VERSION
 * on the device node says. */
static void test_versions(const npu_device_prop *p)
{
	struct drm_version dv;
	int v = -1, fd, r = -1;

	ST(npu_runtime_get_version(&v), NPU_SUCCESS, "runtime version");
	tap_ok(v == NPU_LIB_VERSION, "runtime version %d is npu.h's %d", v,
	       NPU_LIB_VERSION);
	ST(npu_driver_get_version(&v), NPU_SUCCESS, "driver version");
	memset(&dv, 0, sizeof(dv));
	fd = open(p->node, O_RDWR | O_CLOEXEC);
	if (fd >= 0)
		r = ioctl(fd, DRM_IOCTL_VERSION, &dv);
	tap_ok(r == 0 && v == 1000 * dv.version_major + 10 * dv.version_minor +
	       dv.version_patchlevel,
	       "driver version %d is DRM's %d.%d.%d", v, dv.version_major,
	       dv.version_minor, dv.version_patchlevel);
	if (fd >= 0)
		close(fd);
	ST(npu_runtime_get_version(NULL), NPU_ERROR_INVALID_VALUE,
	   "runtime version into NULL");
	ST(npu_driver_get_version(NULL), NPU_ERROR_INVALID_VALUE,
	   "driver version into NULL");
}

/*
 * NPU_MEMCPY_DEFAULT's pointer rule (npu.h): a live allocation's device
 * pointer or pinned memory's device address is device-reachable memory;
 * any other address inside the device's VA window that the host has not
 * mapped is an error (a stale or made-up device pointer), never a host
 * memmove.
 */
static void test_default_pointers(const npu_device_prop *p)
{
	struct drm_npu_get_param gp = { .param = DRM_NPU_PARAM_VA_START };
	float src[64], dst[64], *pin;
	void *pin_dev, *gone_dev, *d, *top;
	int fd, i, ok;

	for (i = 0; i < 64; i++)
		src[i] = (float)i + 0.5f;
	MUST(npu_host_alloc((void **)&pin, sizeof(src), 0));
	memcpy(pin, src, sizeof(src));
	MUST(npu_host_get_device_pointer(&pin_dev, pin, 0));
	memset(dst, 0, sizeof(dst));
	ST(npu_memcpy(dst, pin_dev, sizeof(dst), NPU_MEMCPY_DEFAULT), NPU_SUCCESS,
	   "DEFAULT copy from pinned memory's device address");
	tap_ok(!memcmp(dst, src, sizeof(dst)), "... copies its data");
	MUST(npu_malloc(&d, sizeof(src)));
	ST(npu_memcpy(d, pin_dev, sizeof(src), NPU_MEMCPY_DEVICE_TO_DEVICE),
	   NPU_SUCCESS, "DEVICE_TO_DEVICE from pinned memory's device address");
	memset(dst, 0, sizeof(dst));
	MUST(npu_memcpy(dst, d, sizeof(dst), NPU_MEMCPY_DEVICE_TO_HOST));
	tap_ok(!memcmp(dst, src, sizeof(dst)), "... copies its data");
	ST(npu_memcpy(pin_dev, src, sizeof(src) + 4, NPU_MEMCPY_DEFAULT),
	   NPU_ERROR_INVALID_VALUE, "DEFAULT copy past the end of pinned memory's "
	   "device range");
	/* a freed pinned buffer's device address is stale */
	{
		float *gone;

		MUST(npu_host_alloc((void **)&gone, 4096, 0));
		MUST(npu_host_get_device_pointer(&gone_dev, gone, 0));
		MUST(npu_host_free(gone));
	}
	ST(npu_memcpy(dst, gone_dev, sizeof(dst), NPU_MEMCPY_DEFAULT),
	   NPU_ERROR_INVALID_VALUE, "DEFAULT copy from a freed pinned buffer's "
	   "device address: an error");
	tap_ok(strstr(npu_last_error_message(), "device") != NULL,
	   "... with a message: %s", npu_last_error_message());
	/* the window's last page was never handed out */
	fd = open(p->node, O_RDWR | O_CLOEXEC);
	if (fd >= 0 && !ioctl(fd, DRM_IOCTL_NPU_GET_PARAM, &gp)) {
		top = (void *)(uintptr_t)(gp.value + p->va_size - 4096);
		ST(npu_memcpy(dst, top, sizeof(dst), NPU_MEMCPY_DEFAULT),
		   NPU_ERROR_INVALID_VALUE, "DEFAULT copy from the device window's "
		   "last page, never allocated: an error");
		ST(npu_memcpy(top, src, sizeof(src), NPU_MEMCPY_DEFAULT),
		   NPU_ERROR_INVALID_VALUE, "DEFAULT copy to it: an error");
		ST(npu_memcpy(dst, top, sizeof(dst), NPU_MEMCPY_DEVICE_TO_HOST),
		   NPU_ERROR_INVALID_POINTER, "DEVICE_TO_HOST from it: invalid pointer");
		ST(npu_memcpy(top, src, sizeof(src), NPU_MEMCPY_HOST_TO_HOST),
		   NPU_ERROR_INVALID_VALUE, "HOST_TO_HOST to it: not host memory either");
	} else {
		tap_skip("DRM_NPU_PARAM_VA_START unavailable");
	}
	if (fd >= 0)
		close(fd);
	/* host memory is still host memory */
	memset(dst, 0, sizeof(dst));
	ST(npu_memcpy(dst, src, sizeof(src), NPU_MEMCPY_DEFAULT), NPU_SUCCESS,
	   "DEFAULT copy between pageable buffers");
	for (i = 0, ok = 1; i < 64; i++)
		ok &= dst[i] == src[i];
	tap_ok(ok, "... copies the data");
	MUST(npu_free(d));
	MUST(npu_host_free(pin));
}

/*
 * Enumeration opens no other vendor's node: every open() of the process is
 * recorded (this definition interposes the C library's for libnpu), a
 * DRM-looking node that is not an npu (/dev/dri/renderD250, the
 * character device of /dev/null) is made before the library's first call,
 * and must not be among the opened paths.
 */
#define FAKE_NODE "/dev/dri/renderD250"
static int fake_node_opened, enumerating;

int open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (enumerating && !strcmp(path, FAKE_NODE))
		fake_node_opened = 1;
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

static void test_enumeration_first(void)
{
	int n = 0, made;

	mkdir("/dev/dri", 0755);
	made = !mknod(FAKE_NODE, S_IFCHR | 0600, makedev(1, 3));
	enumerating = 1;
	npu_device_count(&n);
	enumerating = 0;
	if (made) {
		unlink(FAKE_NODE);
		tap_ok(!fake_node_opened, "enumeration did not open " FAKE_NODE
		       " (not an npu PCI device)");
	} else {
		tap_skip("cannot make " FAKE_NODE " (not root?)");
	}
	tap_ok(n >= 1, "... and found %d npu device(s)", n);
}

static void test_device(void)
{
	npu_device_prop p;
	int n, d;
	uint64_t c0, c1;

	MUST(npu_device_count(&n));
	tap_ok(n >= 1, "device count %d", n);
	MUST(npu_device_get_properties(&p, 0));
	tap_ok(p.compute_rings >= 1 && p.copy_rings >= 1 && p.compute_units >= 1,
	       "properties: %s at %s, %u compute + %u copy rings, %u CUs",
	       p.name, p.node, p.compute_rings, p.copy_rings, p.compute_units);
	tap_ok(p.devmem_size > 0 && p.clock_hz > 0,
	       "devmem %llu MiB, clock %llu Hz, timeout %u ms",
	       (unsigned long long)(p.devmem_size >> 20),
	       (unsigned long long)p.clock_hz, p.job_timeout_ms);
	ST(npu_device_get_properties(&p, n), NPU_ERROR_INVALID_DEVICE,
	   "properties of a device that does not exist");
	ST(npu_device_set(-1), NPU_ERROR_INVALID_DEVICE, "set device -1");
	MUST(npu_device_get(&d));
	tap_ok(d == 0, "current device stays 0");
	MUST(npu_device_get_clock(&c0));
	MUST(npu_device_get_clock(&c1));
	tap_ok(c1 >= c0, "device clock is monotonic");
	test_versions(&p);
}

static void test_memory(void)
{
	float *h = malloc(N * sizeof(float)), *r = malloc(N * sizeof(float));
	float *pin, *reg;
	void *d, *d2;
	size_t i;
	int ok;

	for (i = 0; i < N; i++)
		h[i] = (float)i * 0.5f;
	MUST(npu_malloc(&d, N * sizeof(float)));
	MUST(npu_malloc(&d2, N * sizeof(float)));
	tap_ok(d && d2 && d != d2, "two device allocations");
	/* pageable H2D and D2H (staged) */
	ST(npu_memcpy(d, h, N * sizeof(float), NPU_MEMCPY_HOST_TO_DEVICE),
	   NPU_SUCCESS, "pageable H2D");
	memset(r, 0, N * sizeof(float));
	ST(npu_memcpy(r, d, N * sizeof(float), NPU_MEMCPY_DEVICE_TO_HOST),
	   NPU_SUCCESS, "pageable D2H");
	tap_ok(!memcmp(h, r, N * sizeof(float)), "pageable round trip");
	/* D2D with inferred kind */
	ST(npu_memcpy(d2, d, N * sizeof(float), NPU_MEMCPY_DEFAULT), NPU_SUCCESS,
	   "D2D (kind inferred)");
	/* pinned */
	MUST(npu_host_alloc((void **)&pin, N * sizeof(float), 0));
	ST(npu_memcpy(pin, d2, N * sizeof(float), NPU_MEMCPY_DEFAULT), NPU_SUCCESS,
	   "D2H into pinned (kind inferred)");
	tap_ok(!memcmp(h, pin, N * sizeof(float)), "pinned result matches");
	/* small pageable async copy (inline) at an odd offset */
	{
		char msg[13] = "hello, npu!!";
		char back[13] = { 0 };

		ST(npu_memcpy_async((char *)d + 3, msg, 13, NPU_MEMCPY_HOST_TO_DEVICE,
				    NULL), NPU_SUCCESS, "small pageable async H2D");
		ST(npu_memcpy(back, (char *)d + 3, 13, NPU_MEMCPY_DEVICE_TO_HOST),
		   NPU_SUCCESS, "small D2H");
		tap_ok(!memcmp(msg, back, 13), "inline copy data");
	}
	/* registered (userptr) */
	reg = aligned_alloc(4096, 4 * 4096);
	for (i = 0; i < 4096; i++)
		reg[i] = -(float)i;
	ST(npu_host_register(reg, 4 * 4096, 0), NPU_SUCCESS, "register host memory");
	ST(npu_host_register(reg + 100, 64, 0), NPU_ERROR_ALREADY_MAPPED,
	   "overlapping registration is refused");
	ST(npu_memcpy(d, reg, 4 * 4096, NPU_MEMCPY_DEFAULT), NPU_SUCCESS,
	   "registered H2D");
	memset(r, 0, 4 * 4096);
	MUST(npu_memcpy(r, d, 4 * 4096, NPU_MEMCPY_DEVICE_TO_HOST));
	tap_ok(!memcmp(r, reg, 4 * 4096), "registered data arrived");
	ST(npu_host_unregister(reg), NPU_SUCCESS, "unregister");
	ST(npu_host_unregister(reg), NPU_ERROR_NOT_MAPPED, "unregister twice");
	free(reg);
	/* memset, unaligned head and tail */
	MUST(npu_memset(d, 0, 4096));
	ST(npu_memset((char *)d + 1, 0xab, 1001), NPU_SUCCESS, "memset unaligned");
	{
		unsigned char b[1100];

		MUST(npu_memcpy(b, d, sizeof(b), NPU_MEMCPY_DEVICE_TO_HOST));
		ok = b[0] == 0 && b[1002] == 0;
		for (i = 1; i <= 1001; i++)
			ok &= b[i] == 0xab;
		tap_ok(ok, "memset wrote exactly bytes 1..1001");
	}
	/* bad input */
	ST(npu_memcpy(r, (char *)d + 8, N * sizeof(float), NPU_MEMCPY_DEVICE_TO_HOST),
	   NPU_ERROR_INVALID_VALUE, "copy past the end of an allocation");
	ST(npu_memcpy(d, h, SIZE_MAX - 16, NPU_MEMCPY_HOST_TO_DEVICE),
	   NPU_ERROR_INVALID_VALUE, "overflowing size");
	ST(npu_memcpy(h, h + 8, 16, 77), NPU_ERROR_INVALID_VALUE, "unknown kind");
	ST(npu_memcpy(h, (void *)(uintptr_t)0x1234000, 16, NPU_MEMCPY_DEVICE_TO_HOST),
	   NPU_ERROR_INVALID_POINTER, "D2H from a pointer that is not device memory");
	ST(npu_memset(h, 0, 16), NPU_ERROR_INVALID_POINTER, "memset on host memory");
	ST(npu_free(h), NPU_ERROR_INVALID_POINTER, "free of a foreign pointer");
	ST(npu_free((char *)d + 4), NPU_ERROR_INVALID_POINTER,
	   "free of an interior pointer");
	ST(npu_host_alloc((void **)&r, 16, 0x80), NPU_ERROR_INVALID_VALUE,
	   "host_alloc with unknown flags");
	{
		void *big;

		ST(npu_malloc(&big, (size_t)1 << 62), NPU_ERROR_OUT_OF_MEMORY,
		   "huge allocation fails");
		tap_ok(strstr(npu_last_error_message(), "devmem-size=") != NULL,
		       "... and the message names the device option: %s",
		       npu_last_error_message());
		ST(npu_malloc(&big, 0), NPU_SUCCESS, "zero-size allocation");
		tap_ok(big == NULL, "zero-size allocation is NULL");
	}
	/* the allocation is still intact after the failed calls */
	MUST(npu_memcpy(r, d2, N * sizeof(float), NPU_MEMCPY_DEVICE_TO_HOST));
	tap_ok(!memcmp(h, r, N * sizeof(float)), "data unchanged by failed calls");
	ST(npu_free(d), NPU_SUCCESS, "free");
	ST(npu_free(d), NPU_ERROR_INVALID_POINTER, "double free is detected");
	MUST(npu_free(d2));
	MUST(npu_host_free(pin));
	free(h);
	free(r);
}

static void test_kernels(void)
{
	const int n = 50000;
	float *x = malloc(n * 4), *y = malloc(n * 4), *ref = malloc(n * 4);
	float *out = malloc(n * 4);
	void *dx, *dy, *dz;
	npu_kernel_t k;
	const char *name;
	unsigned na;
	int i, ok;

	for (i = 0; i < n; i++) {
		x[i] = (float)(i % 97) - 40.0f;
		y[i] = (float)(i % 13) * 0.25f;
	}
	MUST(npu_malloc(&dx, n * 4));
	MUST(npu_malloc(&dy, n * 4));
	MUST(npu_malloc(&dz, n * 4));
	MUST(npu_memcpy(dx, x, n * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_memcpy(dy, y, n * 4, NPU_MEMCPY_HOST_TO_DEVICE));
	ST(npu_kernel_by_name("saxpy_f32", &k), NPU_SUCCESS, "kernel by name");
	tap_ok(k == NPU_K_SAXPY_F32, "saxpy_f32 has its id");
	ST(npu_kernel_by_name("no_such_kernel", &k), NPU_ERROR_INVALID_KERNEL,
	   "unknown kernel name");
	ST(npu_kernel_info(NPU_K_GEMM_F32, &name, &na), NPU_SUCCESS, "kernel info");
	tap_ok(na == 9 && !strcmp(name, "gemm_f32"), "gemm takes 9 args");
	npu_get_last_error();
	ST(npu_kernel_info((npu_kernel_t)0x7777, &name, &na), NPU_ERROR_INVALID_KERNEL,
	   "kernel info of an unknown kernel");
	ST(npu_get_last_error(), NPU_ERROR_INVALID_KERNEL, "... sets the last error");
	{
		/* a freed device pointer with NPU_MEMCPY_DEFAULT is an error,
		 * not a host copy */
		void *gone;
		float tmp[16] = { 0 };

		MUST(npu_malloc(&gone, 4096));
		MUST(npu_free(gone));
		ST(npu_memcpy(tmp, gone, sizeof(tmp), NPU_MEMCPY_DEFAULT),
		   NPU_ERROR_INVALID_VALUE, "DEFAULT copy from freed device memory: an error");
		ST(npu_memcpy(gone, tmp, sizeof(tmp), NPU_MEMCPY_DEFAULT),
		   NPU_ERROR_INVALID_VALUE, "DEFAULT copy to freed device memory: an error");
		ST(npu_memcpy(tmp, tmp + 8, 8 * sizeof(float), NPU_MEMCPY_DEFAULT),
		   NPU_SUCCESS, "DEFAULT copy between host buffers still works");
	}
	{
		uint64_t a[4] = { npu_arg_ptr(dx), npu_arg_ptr(dy), (uint64_t)n,
				  npu_arg_f32(2.5f) };

		ST(npu_parallel(k, npu_grid(8, 1, 1), a, 4, NULL), NPU_SUCCESS,
		   "saxpy (parallel)");
	}
	MUST(npu_memcpy(out, dy, n * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	for (i = 0, ok = 1; i < n; i++)
		ok &= feq(out[i], y[i] + 2.5f * x[i]);
	tap_ok(ok, "saxpy matches the CPU");
	{
		uint64_t a[4] = { npu_arg_ptr(dx), npu_arg_ptr(dx), npu_arg_ptr(dz), (uint64_t)n };

		ST(npu_parallel(NPU_K_VADD_F32, npu_grid(3, 2, 1), a, 4, NULL),
		   NPU_SUCCESS, "vadd");
	}
	MUST(npu_memcpy(out, dz, n * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	for (i = 0, ok = 1; i < n; i++)
		ok &= feq(out[i], 2 * x[i]);
	tap_ok(ok, "vadd matches the CPU");
	{
		uint64_t a[3] = { npu_arg_ptr(dx), npu_arg_ptr(dz), (uint64_t)n };

		ST(npu_parallel(NPU_K_RELU_F32, npu_grid(4, 1, 1), a, 3, NULL),
		   NPU_SUCCESS, "relu");
	}
	MUST(npu_memcpy(out, dz, n * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	for (i = 0, ok = 1; i < n; i++)
		ok &= feq(out[i], x[i] > 0 ? x[i] : 0);
	tap_ok(ok, "relu matches the CPU");
	/* GEMM 37x23 * 23x41 */
	{
		const int M = 37, Nn = 41, K = 23;
		float *A = malloc(M * K * 4), *B = malloc(K * Nn * 4), *C = malloc(M * Nn * 4);
		void *dA, *dB, *dC;
		int m, j, kk;

		for (i = 0; i < M * K; i++)
			A[i] = (float)((i * 7) % 11) - 5.0f;
		for (i = 0; i < K * Nn; i++)
			B[i] = (float)((i * 3) % 7) * 0.5f - 1.0f;
		MUST(npu_malloc(&dA, M * K * 4));
		MUST(npu_malloc(&dB, K * Nn * 4));
		MUST(npu_malloc(&dC, M * Nn * 4));
		MUST(npu_memcpy(dA, A, M * K * 4, NPU_MEMCPY_HOST_TO_DEVICE));
		MUST(npu_memcpy(dB, B, K * Nn * 4, NPU_MEMCPY_HOST_TO_DEVICE));
		MUST(npu_memset(dC, 0, M * Nn * 4));
		uint64_t a[9] = { npu_arg_ptr(dA), npu_arg_ptr(dB), npu_arg_ptr(dC),
				  (uint64_t)M, (uint64_t)Nn, (uint64_t)K, 0,
				  npu_arg_f32(1.0f), npu_arg_f32(0.0f) };
		ST(npu_parallel(NPU_K_GEMM_F32, npu_grid(4, 4, 1), a, 9, NULL),
		   NPU_SUCCESS, "gemm");
		MUST(npu_memcpy(C, dC, M * Nn * 4, NPU_MEMCPY_DEVICE_TO_HOST));
		for (m = 0, ok = 1; m < M; m++)
			for (j = 0; j < Nn; j++) {
				float s = 0;

				for (kk = 0; kk < K; kk++)
					s += A[m * K + kk] * B[kk * Nn + j];
				ok &= feq(C[m * Nn + j], s);
			}
		tap_ok(ok, "gemm matches the CPU");
		npu_free(dA);
		npu_free(dB);
		npu_free(dC);
		free(A);
		free(B);
		free(C);
	}
	/* bad launches change nothing */
	{
		uint64_t a[4] = { npu_arg_ptr(dx), npu_arg_ptr(dy), (uint64_t)n,
				  npu_arg_f32(1.0f) };
		npu_stream_t s;

		MUST(npu_memcpy(ref, dy, n * 4, NPU_MEMCPY_DEVICE_TO_HOST));
		ST(npu_launch((npu_kernel_t)0x777, npu_grid(1, 1, 1), a, 4, NULL, 0),
		   NPU_ERROR_INVALID_KERNEL, "unknown kernel id");
		ST(npu_launch(NPU_K_SAXPY_F32, npu_grid(0, 1, 1), a, 4, NULL, 0),
		   NPU_ERROR_INVALID_CONFIGURATION, "zero grid dimension");
		ST(npu_launch(NPU_K_SAXPY_F32, npu_grid(1, 1, 1), a, 3, NULL, 0),
		   NPU_ERROR_INVALID_CONFIGURATION, "wrong argument count");
		ST(npu_launch(NPU_K_SAXPY_F32, npu_grid(1, 1, 1), NULL, 4, NULL, 0),
		   NPU_ERROR_INVALID_VALUE, "NULL args");
		ST(npu_launch(NPU_K_SAXPY_F32, npu_grid(1, 1, 1), a, 4, NULL, 0x100),
		   NPU_ERROR_INVALID_VALUE, "unknown launch flags");
		ST(npu_launch(NPU_K_SAXPY_F32, npu_grid(1, 1, 1), a, 4,
			      (npu_stream_t)(uintptr_t)0xdead0, 0),
		   NPU_ERROR_INVALID_HANDLE, "foreign stream handle");
		MUST(npu_stream_create(&s, 0, 0));
		MUST(npu_stream_destroy(s));
		ST(npu_launch(NPU_K_SAXPY_F32, npu_grid(1, 1, 1), a, 4, s, 0),
		   NPU_ERROR_INVALID_HANDLE, "destroyed stream handle");
		ST(npu_stream_destroy(s), NPU_ERROR_INVALID_HANDLE,
		   "destroying a stream twice");
		ST(npu_stream_create(&s, 0x40, 0), NPU_ERROR_INVALID_VALUE,
		   "unknown stream flags");
		MUST(npu_device_synchronize());
		MUST(npu_memcpy(out, dy, n * 4, NPU_MEMCPY_DEVICE_TO_HOST));
		tap_ok(!memcmp(out, ref, n * 4), "failed launches changed nothing");
	}
	npu_free(dx);
	npu_free(dy);
	npu_free(dz);
	free(x);
	free(y);
	free(ref);
	free(out);
}

static void test_errors_api(void)
{
	npu_event_t e;

	npu_get_last_error();
	ST(npu_event_create(NULL, 0), NPU_ERROR_INVALID_VALUE, "NULL event pointer");
	tap_ok(npu_peek_last_error() == NPU_ERROR_INVALID_VALUE,
	       "peek returns the last error");
	tap_ok(npu_peek_last_error() == NPU_ERROR_INVALID_VALUE,
	       "peek does not reset it");
	tap_ok(npu_get_last_error() == NPU_ERROR_INVALID_VALUE,
	       "get returns the last error");
	tap_ok(npu_get_last_error() == NPU_SUCCESS, "get resets it");
	ST(npu_event_create(&e, 0x100), NPU_ERROR_INVALID_VALUE, "unknown event flags");
	tap_ok(strlen(npu_last_error_message()) > 0, "message: %s",
	       npu_last_error_message());
	tap_ok(!strcmp(npu_status_string(NPU_SUCCESS), "no error") &&
	       strlen(npu_status_string((npu_status_t)999)) > 0,
	       "status strings");
	ST(npu_event_destroy((npu_event_t)(uintptr_t)0x1000), NPU_ERROR_INVALID_HANDLE,
	   "foreign event handle");
	ST(npu_event_query(NULL), NPU_ERROR_INVALID_HANDLE, "NULL event");
}

/* Stream memory operations: a wait holds the stream's later work until the
 * host (or a write on another stream) releases it; writes land in stream
 * order, in pinned and device memory; bad addresses and flags fail. */
static void test_value_ops(void)
{
	npu_stream_t s, w;
	npu_graph_t gr;
	uint32_t *h, v = 0, pageable[2];
	void *d;
	float f = 0;

	MUST(npu_host_alloc((void **)&h, 64, 0));
	memset(h, 0, 64);
	MUST(npu_malloc(&d, 64));
	MUST(npu_memset(d, 0, 64));
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&w, NPU_STREAM_NON_BLOCKING, 0));

	ST(npu_stream_write_value32(s, &h[1], 7, 0), NPU_SUCCESS,
	   "write a value to pinned memory");
	ST(npu_stream_wait_value32(s, &h[0], 5, 0), NPU_SUCCESS,
	   "wait for a value in pinned memory");
	ST(npu_stream_write_value32(s, &h[2], 9, 0), NPU_SUCCESS,
	   "a write behind the wait");
	{
		uint64_t a[3] = { npu_arg_ptr(d), 4, npu_arg_f32(3.0f) };

		MUST(npu_launch(NPU_K_FILL_F32, npu_grid(1, 1, 1), a, 3, s, 0));
	}
	/* the first write is done once the stream reached the wait */
	for (v = 0; v < 10000 && __atomic_load_n(&h[1], __ATOMIC_ACQUIRE) != 7; v++)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	tap_ok(h[1] == 7, "the write before the wait landed");
	ST(npu_stream_query(s), NPU_ERROR_NOT_READY, "the stream waits");
	tap_ok(h[2] == 0, "nothing behind the wait ran");
	__atomic_store_n(&h[0], 4, __ATOMIC_RELEASE);
	nanosleep(&(struct timespec){ .tv_nsec = 20000000 }, NULL);
	ST(npu_stream_query(s), NPU_ERROR_NOT_READY,
	   "a smaller value does not release it (>= comparison)");
	/* released by a write of another stream, to device memory too */
	ST(npu_stream_write_value32(w, &h[0], 5, 0), NPU_SUCCESS,
	   "another stream writes the value");
	ST(npu_stream_write_value32(w, (uint32_t *)d + 8, 0xabcd, 0), NPU_SUCCESS,
	   "write a value to device memory");
	MUST(npu_stream_synchronize(s));
	MUST(npu_stream_synchronize(w));
	tap_ok(h[2] == 9, "released: the work behind the wait ran");
	MUST(npu_memcpy(&f, d, 4, NPU_MEMCPY_DEVICE_TO_HOST));
	MUST(npu_memcpy(&v, (uint32_t *)d + 8, 4, NPU_MEMCPY_DEVICE_TO_HOST));
	tap_ok(f == 3.0f && v == 0xabcd, "kernel behind the wait ran; device "
	       "word written (0x%x)", v);
	/* a wrapping sequence number: 0x00000002 is past 0xfffffffe */
	h[3] = 2;
	ST(npu_stream_wait_value32(s, &h[3], 0xfffffffeu, 0), NPU_SUCCESS,
	   "wait across the 32-bit wrap");
	ST(npu_stream_synchronize(s), NPU_SUCCESS, "is satisfied at once");

	ST(npu_stream_wait_value32(s, (uint32_t *)((char *)h + 2), 1, 0),
	   NPU_ERROR_INVALID_VALUE, "misaligned address");
	ST(npu_stream_write_value32(s, &pageable[0], 1, 0),
	   NPU_ERROR_INVALID_POINTER, "pageable memory");
	ST(npu_stream_wait_value32(s, &h[0], 1, 1), NPU_ERROR_INVALID_VALUE,
	   "unknown flags");
	ST(npu_stream_write_value32(s, NULL, 1, 0), NPU_ERROR_INVALID_VALUE,
	   "NULL address");
	ST(npu_stream_write_value32((npu_stream_t)(uintptr_t)0x1000, &h[0], 1, 0),
	   NPU_ERROR_INVALID_HANDLE, "foreign stream");
	MUST(npu_stream_begin_capture(s, NPU_STREAM_CAPTURE_MODE_GLOBAL));
	ST(npu_stream_wait_value32(s, &h[0], 1, 0),
	   NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED, "not during capture");
	MUST(npu_stream_end_capture(s, &gr));
	npu_graph_destroy(gr);
	ST(npu_stream_synchronize(s), NPU_SUCCESS, "the stream is fine after all");
	MUST(npu_stream_destroy(s));
	MUST(npu_stream_destroy(w));
	MUST(npu_free(d));
	MUST(npu_host_free(h));
}

struct sync_arg {
	npu_stream_t s;
	npu_status_t st;
};

static void *sync_thread(void *arg)
{
	struct sync_arg *a = arg;

	a->st = npu_stream_synchronize(a->s);
	return NULL;
}

/* Synchronizing a blocking stream waits for its own work (which waited for
 * the legacy work before it), not for legacy work queued after it. */
static void test_blocking_sync(void)
{
	struct sync_arg sa;
	struct timespec dl;
	pthread_t th;
	uint32_t *gate;
	int joined;

	MUST(npu_stream_create(&sa.s, 0, 0));
	MUST(npu_host_alloc((void **)&gate, 4, 0));
	*gate = 0;
	MUST(spin(sa.s, 1000));
	MUST(npu_stream_wait_value32(NULL, gate, 1, 0));	/* held legacy work */
	sa.st = NPU_ERROR_OS;
	MUST(pthread_create(&th, NULL, sync_thread, &sa) ? NPU_ERROR_OS : NPU_SUCCESS);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 10;
	joined = pthread_timedjoin_np(th, NULL, &dl) == 0;
	tap_ok(joined && sa.st == NPU_SUCCESS,
	       "a blocking stream's synchronize does not wait for legacy work queued after it");
	__atomic_store_n(gate, 1, __ATOMIC_RELEASE);
	if (!joined)
		pthread_join(th, NULL);
	MUST(npu_device_synchronize());
	MUST(npu_stream_destroy(sa.s));
	MUST(npu_host_free(gate));
}

/*
 * Streams made after others were destroyed run their own work: command
 * buffers are recycled (up to 16 kept), and more streams than that are
 * alive at once, each with work queued, before all are destroyed.
 */
static void test_stream_reuse(void)
{
	enum { NS = 20, ROUNDS = 4, W = 256 };
	npu_stream_t s[NS];
	float *h, *d;
	int r, i, j, bad = 0;

	MUST(npu_malloc((void **)&d, NS * W * sizeof(float)));
	MUST(npu_host_alloc((void **)&h, NS * W * sizeof(float), 0));
	for (r = 0; r < ROUNDS; r++) {
		for (i = 0; i < NS; i++)
			MUST(npu_stream_create(&s[i], NPU_STREAM_NON_BLOCKING, 0));
		for (i = 0; i < NS; i++) {
			uint64_t a[3] = { npu_arg_ptr(d + i * W), W,
					  npu_arg_f32((float)(r * 100 + i)) };

			MUST(npu_launch(NPU_K_FILL_F32, npu_grid(1, 1, 1), a, 3,
					s[i], NPU_LAUNCH_ASYNC));
		}
		for (i = 0; i < NS; i++)
			MUST(npu_stream_destroy(s[i]));
		MUST(npu_memcpy(h, d, NS * W * sizeof(float),
				NPU_MEMCPY_DEVICE_TO_HOST));
		for (i = 0; i < NS; i++)
			for (j = 0; j < W; j++)
				bad += h[i * W + j] != (float)(r * 100 + i);
	}
	tap_ok(bad == 0, "%d rounds of %d streams made, used and destroyed: every fill landed (%d wrong)",
	       ROUNDS, NS, bad);
	MUST(npu_free(d));
	MUST(npu_host_free(h));
}

/*
 * As many streams as the driver's queues allow, destroyed, can all be made
 * again: the queues the library keeps for reuse do not count against the
 * limit when a new stream needs others.
 */
static void test_stream_limit_again(void)
{
	enum { MAXS = 200 };
	static npu_stream_t s[MAXS];
	int n = 0, m = 0, i, r;
	npu_status_t st = NPU_SUCCESS;

	for (r = 0; r < 2; r++) {
		int *cnt = r ? &m : &n;

		/* priorities vary so that kept queues rarely fit */
		while (*cnt < MAXS &&
		       (st = npu_stream_create(&s[*cnt], NPU_STREAM_NON_BLOCKING,
					       *cnt % 3 - 1)) == NPU_SUCCESS)
			(*cnt)++;
		if (r == 0)
			tap_ok(n > 16 && n < MAXS && st != NPU_SUCCESS,
			       "streams until the driver's queue limit: %d, then %s",
			       n, npu_status_name(st));
		for (i = 0; i < *cnt; i++)
			MUST(npu_stream_destroy(s[i]));
	}
	tap_ok(m == n, "after destroying them, %d streams again (%d the first time)",
	       m, n);
}

/*
 * A stream's waits watch a completion word the device writes after each
 * job. A new stream may be handed the word of one just destroyed, which
 * holds that stream's last point (here above 300): the new stream's
 * queries and waits must see its own points only.
 */
static void test_completion_word(void)
{
	enum { NOPS = 300 };
	npu_stream_t a, b;
	npu_event_t done;
	float *h, *d;
	npu_status_t q;
	int i;

	MUST(npu_malloc((void **)&d, sizeof(float)));
	MUST(npu_host_alloc((void **)&h, sizeof(float), 0));
	MUST(npu_event_create(&done, NPU_EVENT_DISABLE_TIMING));
	MUST(npu_stream_create(&a, NPU_STREAM_NON_BLOCKING, 0));
	for (i = 0; i < NOPS; i++)
		MUST(npu_launch(NPU_K_NOP, npu_grid(1, 1, 1), NULL, 0, a,
				NPU_LAUNCH_ASYNC));
	{
		uint64_t ns = 50000000;	/* 50 ms */

		MUST(npu_launch(NPU_K_TEST_SPIN, npu_grid(1, 1, 1), &ns, 1, a,
				NPU_LAUNCH_ASYNC));
	}
	MUST(npu_event_record(done, a));
	MUST(npu_stream_destroy(a));
	MUST(npu_stream_create(&b, NPU_STREAM_NON_BLOCKING, 0));
	{
		uint64_t ns = 1000000000;	/* 1 s */
		uint64_t f[3] = { npu_arg_ptr(d), 1, npu_arg_f32(7.0f) };

		MUST(npu_launch(NPU_K_TEST_SPIN, npu_grid(1, 1, 1), &ns, 1, b,
				NPU_LAUNCH_ASYNC));
		MUST(npu_launch(NPU_K_FILL_F32, npu_grid(1, 1, 1), f, 3, b,
				NPU_LAUNCH_ASYNC));
	}
	MUST(npu_event_synchronize(done));
	q = npu_stream_query(b);
	tap_ok(q == NPU_ERROR_NOT_READY,
	       "a new stream's pending work is not done when a destroyed stream's last job ends (%s)",
	       npu_status_name(q));
	MUST(npu_stream_synchronize(b));
	MUST(npu_memcpy(h, d, sizeof(float), NPU_MEMCPY_DEVICE_TO_HOST));
	tap_ok(h[0] == 7.0f, "after synchronize its last kernel's result is there (%g)",
	       h[0]);
	MUST(npu_stream_destroy(b));
	MUST(npu_event_destroy(done));
	MUST(npu_free(d));
	MUST(npu_host_free(h));
}

static double clock_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CPU time of the process over the synchronize of a 300 ms kernel */
static double sync_cpu_share(npu_stream_t s, double *wall)
{
	uint64_t ns = 300000000;
	double c0, w0;

	MUST(npu_launch(NPU_K_TEST_SPIN, npu_grid(1, 1, 1), &ns, 1, s,
			NPU_LAUNCH_ASYNC));
	c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	w0 = clock_s(CLOCK_MONOTONIC);
	MUST(npu_stream_synchronize(s));
	*wall = clock_s(CLOCK_MONOTONIC) - w0;
	return (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / *wall;
}

/*
 * After a stream synchronize, every event recorded on the stream before it
 * is complete (CUDA), although the synchronize may have seen the stream's
 * completion word before the kernel signalled the event's timeline.
 */
static void test_event_after_sync(void)
{
	enum { ROUNDS = 100 };
	npu_stream_t s;
	npu_event_t a, b;
	int i, notready = 0, noelapsed = 0;
	float ms;

	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_event_create(&a, 0));
	MUST(npu_event_create(&b, 0));
	for (i = 0; i < ROUNDS; i++) {
		MUST(npu_event_record(a, s));
		MUST(npu_launch(NPU_K_NOP, npu_grid(1, 1, 1), NULL, 0, s,
				NPU_LAUNCH_ASYNC));
		MUST(npu_event_record(b, s));
		MUST(npu_stream_synchronize(s));
		notready += npu_event_query(b) != NPU_SUCCESS;
		noelapsed += npu_event_elapsed_time(&ms, a, b) != NPU_SUCCESS;
	}
	tap_ok(notready == 0 && noelapsed == 0,
	       "%d times record, launch, record, synchronize: the events are complete and timed (%d not ready, %d without elapsed time)",
	       ROUNDS, notready, noelapsed);
	MUST(npu_event_destroy(a));
	MUST(npu_event_destroy(b));
	MUST(npu_stream_destroy(s));
}

/*
 * npu_device_set_flags (cudaSetDeviceFlags' scheduling flags): SPIN keeps
 * a CPU busy for the whole wait, BLOCKING_SYNC sleeps, AUTO watches for
 * half a millisecond and sleeps; bad flags change nothing.
 */
static void test_device_flags(void)
{
	npu_stream_t s;
	unsigned f = 99;
	double spin, block, aut, w1, w2, w3;

	MUST(npu_device_get_flags(&f));
	tap_ok(f == NPU_DEVICE_SCHEDULE_AUTO, "device flags are AUTO by default (%u)", f);
	tap_ok(npu_device_set_flags(NPU_DEVICE_SCHEDULE_SPIN | NPU_DEVICE_SCHEDULE_YIELD) ==
	       NPU_ERROR_INVALID_VALUE && npu_device_set_flags(1u << 5) ==
	       NPU_ERROR_INVALID_VALUE && npu_device_get_flags(NULL) ==
	       NPU_ERROR_INVALID_VALUE, "two schedules, an unknown flag, NULL: INVALID_VALUE");
	MUST(npu_device_get_flags(&f));
	tap_ok(f == NPU_DEVICE_SCHEDULE_AUTO, "and the flags did not change (%u)", f);
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_device_set_flags(NPU_DEVICE_SCHEDULE_SPIN));
	MUST(npu_device_get_flags(&f));
	tap_ok(f == NPU_DEVICE_SCHEDULE_SPIN, "flags read back SPIN (%u)", f);
	spin = sync_cpu_share(s, &w1);
	MUST(npu_device_set_flags(NPU_DEVICE_SCHEDULE_BLOCKING_SYNC));
	block = sync_cpu_share(s, &w2);
	MUST(npu_device_set_flags(NPU_DEVICE_SCHEDULE_AUTO));
	aut = sync_cpu_share(s, &w3);
	tap_diag("CPU over wall time of a 300 ms wait: spin %.2f (%.0f ms), blocking %.2f (%.0f ms), auto %.2f (%.0f ms)",
		 spin, w1 * 1e3, block, w2 * 1e3, aut, w3 * 1e3);
	tap_ok(spin > 0.5, "SPIN: the waiting thread is on a CPU for the wait (%.2f)", spin);
	tap_ok(block < 0.2 && aut < 0.2,
	       "BLOCKING_SYNC and AUTO sleep through a long wait (%.2f, %.2f)", block, aut);
	MUST(npu_stream_destroy(s));
}

/*
 * The driver charges pinned system memory to the user's RLIMIT_MEMLOCK:
 * past it, a pinned host allocation or a registration fails with ENOMEM,
 * and the library's message names the limit and how to raise it. Run as
 * an unprivileged user (nobody) with an 8 MiB limit (Debian's default), in
 * a child that execs this program afresh (no device opened yet).
 */
#define MEMLOCK_CHILD	"--memlock-child"
#define MEMLOCK_LIMIT	(8ull << 20)

static int memlock_child(void)
{
	size_t big = 2 * MEMLOCK_LIMIT;
	void *h = NULL, *p = NULL;
	npu_status_t st;

	st = npu_host_alloc(&h, big, 0);
	printf("host_alloc %d %s\n", st, st ? npu_last_error_message() : "");
	if (!st)
		npu_host_free(h);
	p = aligned_alloc(4096, big);
	if (!p)
		return 2;
	memset(p, 1, big);
	st = npu_host_register(p, big, 0);
	printf("host_register %d %s\n", st, st ? npu_last_error_message() : "");
	if (!st)
		npu_host_unregister(p);
	free(p);
	return 0;
}

static void test_memlock_message(void)
{
	glob_t g = { 0 };
	mode_t mode[64];
	char out[4096];
	int pfd[2], status = -1;
	size_t i, n = 0;
	ssize_t r;
	pid_t pid;

	if (getuid() != 0) {
		tap_skip("RLIMIT_MEMLOCK message: needs root to switch users");
		return;
	}
	/* the unprivileged child opens whichever node the library picks */
	glob("/dev/accel/accel[0-9]*", 0, NULL, &g);
	glob("/dev/dri/renderD[0-9]*", GLOB_APPEND, NULL, &g);
	for (i = 0; i < g.gl_pathc && i < 64; i++) {
		struct stat sb;

		mode[i] = stat(g.gl_pathv[i], &sb) ? 0 : sb.st_mode & 07777;
		chmod(g.gl_pathv[i], 0666);
	}
	if (pipe(pfd))
		pfd[0] = pfd[1] = -1;
	pid = pfd[0] < 0 ? -1 : fork();
	if (pid == 0) {
		struct rlimit lim = { MEMLOCK_LIMIT, MEMLOCK_LIMIT };

		dup2(pfd[1], 1);
		close(pfd[0]);
		if (setrlimit(RLIMIT_MEMLOCK, &lim) || setgroups(0, NULL) ||
		    setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(10);
		execl("/proc/self/exe", "lib_basic", MEMLOCK_CHILD, (char *)NULL);
		_exit(11);
	}
	if (pfd[1] >= 0)
		close(pfd[1]);
	while (pid > 0 && n < sizeof(out) - 1 &&
	       (r = read(pfd[0], out + n, sizeof(out) - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = 0;
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	for (i = 0; i < g.gl_pathc && i < 64; i++)
		if (mode[i])
			chmod(g.gl_pathv[i], mode[i]);
	globfree(&g);
	tap_ok(WIFEXITED(status) && !WEXITSTATUS(status),
	       "unprivileged child with RLIMIT_MEMLOCK 8 MiB ran (status 0x%x)",
	       status);
	{
		char *a = strstr(out, "host_alloc "), *b = strstr(out, "host_register ");
		char *a_end = a ? strchr(a, '\n') : NULL;

		if (a_end)
			*a_end = 0;
		tap_ok(a && atoi(a + 11) == NPU_ERROR_OUT_OF_MEMORY &&
		       strstr(a, "RLIMIT_MEMLOCK") && strstr(a, "ulimit -l") &&
		       strstr(a, "LimitMEMLOCK="),
		       "npu_host_alloc of 16 MiB past it: out of memory, and the "
		       "message names the limit: %s", a ? a : "(none)");
		tap_ok(b && atoi(b + 14) == NPU_ERROR_OUT_OF_MEMORY &&
		       strstr(b, "RLIMIT_MEMLOCK") && strstr(b, "ulimit -l"),
		       "npu_host_register of 16 MiB past it: so does its "
		       "message: %s", b ? b : "(none)");
	}
}

/*
 * SAXPY over 16M floats, the size a newcomer tries first: its two 64 MiB
 * buffers fit in the default device's memory, to their last float. (The
 * kernels themselves take seconds of wall time under the interpreter,
 * longer than the short job timeout the suites run with.)
 */
static void test_saxpy_16m_buffers(void)
{
	const size_t n = (size_t)16 << 20, bytes = n * sizeof(float);
	void *d[2] = { NULL, NULL };
	float v, back;
	int i, ok = 1;

	ST(npu_malloc(&d[0], bytes), NPU_SUCCESS, "64 MiB device buffer x");
	ST(npu_malloc(&d[1], bytes), NPU_SUCCESS, "64 MiB device buffer y");
	if (!d[0] || !d[1])
		tap_diag("message: %s", npu_last_error_message());
	for (i = 0; i < 2; i++) {
		v = 1.5f + (float)i;
		back = 0;
		ok &= d[i] &&
		      !npu_memcpy((float *)d[i] + n - 1, &v, sizeof(v),
				  NPU_MEMCPY_HOST_TO_DEVICE) &&
		      !npu_memcpy(&back, (float *)d[i] + n - 1, sizeof(back),
				  NPU_MEMCPY_DEVICE_TO_HOST) &&
		      back == v;
		npu_free(d[i]);
	}
	tap_ok(ok, "SAXPY's buffers for 16M floats fit on the default device");
	npu_get_last_error();
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], MEMLOCK_CHILD))
		return memlock_child();
	test_enumeration_first();	/* before any other libnpu call */
	tap_need_device();
	test_device();
	test_memory();
	test_saxpy_16m_buffers();
	test_kernels();
	{
		npu_device_prop p;

		MUST(npu_device_get_properties(&p, 0));
		test_default_pointers(&p);
	}
	test_errors_api();
	test_value_ops();
	test_blocking_sync();
	test_stream_reuse();
	test_stream_limit_again();
	test_completion_word();
	test_event_after_sync();
	test_device_flags();
	test_memlock_message();
	return tap_done();
}
