/* SPDX-License-Identifier: MIT */
/*
 * lib_inject: failures injected where the library meets the driver. This
 * program defines ioctl() itself (linked with -rdynamic, so libdrm's calls
 * reach it), passes every call on to the kernel, and fails the one request
 * it is told to, once, with the errno it is told: the library must return
 * the error and leave its objects as they were.
 *
 * With direct submission (NPU_SUBMIT=direct), a record whose
 * DRM_IOCTL_NPU_SUBMIT fails leaves the event's previous record: still pending while the work before it is, complete after, with
 * its timestamp. That is a kernel-queue stream's record (a user queue's
 * makes no system call). On a user queue, a wait for a point only a
 * syncobj has (a kernel-queue stream's event) is DRM_IOCTL_NPU_USERQ_WAIT:
 * when it fails, the wait returns the driver's error and the stream is as
 * before: the wait, tried again, orders the stream behind the event.
 */
#include "tap.h"

#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <drm/npu_accel.h>

static unsigned long fail_request;	/* 0: fail nothing */
static int fail_errno;

int ioctl(int fd, unsigned long request, ...)
{
	unsigned long want = __atomic_load_n(&fail_request, __ATOMIC_ACQUIRE);
	va_list ap;
	void *arg;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (want && request == want &&
	    __atomic_compare_exchange_n(&fail_request, &want, 0, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		errno = fail_errno;
		return -1;
	}
	return (int)syscall(SYS_ioctl, fd, request, arg);
}

static void fail_next(unsigned long request, int err)
{
	fail_errno = err;
	__atomic_store_n(&fail_request, request, __ATOMIC_RELEASE);
}

static bool injected(void)
{
	return !__atomic_load_n(&fail_request, __ATOMIC_ACQUIRE);
}

/* The record of e behind a gate on stream g stays pending through a
 * failed record on the idle stream s (submitted at once, not deferred). */
static void failed_record_keeps_previous(void)
{
	npu_event_t start, e;
	npu_stream_t g, s;
	uint32_t *gate;
	float ms = -1;

	MUST(npu_host_alloc((void **)&gate, 4096, 0));
	*gate = 0;
	MUST(npu_stream_create(&g, NPU_STREAM_NON_BLOCKING |
			       NPU_STREAM_KERNEL_QUEUE, 0));
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING |
			       NPU_STREAM_KERNEL_QUEUE, 0));
	MUST(npu_event_create(&start, 0));
	MUST(npu_event_create(&e, 0));

	MUST(npu_event_record(start, g));
	MUST(npu_stream_wait_value32(g, gate, 1, 0));
	MUST(npu_event_record(e, g));
	ST(npu_event_query(e), NPU_ERROR_NOT_READY,
	   "an event recorded behind a closed gate is pending");

	fail_next(DRM_IOCTL_NPU_SUBMIT, ENOMEM);
	ST(npu_event_record(e, s), NPU_ERROR_OUT_OF_MEMORY,
	   "a record whose submission fails returns the driver's error");
	tap_ok(injected(), "the failure was the record's DRM_IOCTL_NPU_SUBMIT");
	fail_next(0, 0);
	ST(npu_event_query(e), NPU_ERROR_NOT_READY,
	   "the event keeps its previous record: still pending");

	__atomic_store_n(gate, 1, __ATOMIC_RELEASE);
	ST(npu_event_synchronize(e), NPU_SUCCESS,
	   "its previous record completes once the gate opens");
	ST(npu_event_query(e), NPU_SUCCESS, "and then it is complete");
	ST(npu_event_elapsed_time(&ms, start, e), NPU_SUCCESS,
	   "the previous record's timestamp is there");
	tap_ok(ms >= 0, "elapsed %.3f ms", ms);

	MUST(npu_event_record(e, s));
	ST(npu_event_synchronize(e), NPU_SUCCESS,
	   "the event records again after the failure");
	ST(npu_stream_synchronize(s), NPU_SUCCESS, "the stream is fine");
	MUST(npu_stream_destroy(g));
	MUST(npu_event_destroy(start));
	MUST(npu_event_destroy(e));
	MUST(npu_stream_destroy(s));
	MUST(npu_host_free(gate));
}

/* A user-queue stream u waits for the event of kernel-queue stream k,
 * recorded behind a closed gate; the first USERQ_WAIT fails. */
static void failed_userq_wait_keeps_stream(void)
{
	npu_event_t ke, ue;
	npu_stream_t k, u;
	uint32_t *gate;
	unsigned int flags = 0;

	MUST(npu_host_alloc((void **)&gate, 4096, 0));
	*gate = 0;
	MUST(npu_stream_create(&k, NPU_STREAM_NON_BLOCKING |
			       NPU_STREAM_KERNEL_QUEUE, 0));
	MUST(npu_stream_create(&u, NPU_STREAM_NON_BLOCKING |
			       NPU_STREAM_USER_QUEUE, 0));
	MUST(npu_stream_get_flags(u, &flags));
	if (!(flags & NPU_STREAM_USER_QUEUE)) {
		tap_skip("no user queue on this device (the stream runs on "
			 "kernel queues)");
		goto out;
	}
	MUST(npu_event_create(&ke, NPU_EVENT_DISABLE_TIMING));
	MUST(npu_event_create(&ue, NPU_EVENT_DISABLE_TIMING));
	MUST(npu_stream_wait_value32(k, gate, 1, 0));
	MUST(npu_event_record(ke, k));

	fail_next(DRM_IOCTL_NPU_USERQ_WAIT, ENOMEM);
	ST(npu_stream_wait_event(u, ke, 0), NPU_ERROR_OUT_OF_MEMORY,
	   "a user-queue wait whose USERQ_WAIT fails returns the driver's error");
	tap_ok(injected(), "the failure was the wait's DRM_IOCTL_NPU_USERQ_WAIT");
	fail_next(0, 0);
	ST(npu_stream_query(u), NPU_SUCCESS,
	   "the stream has no error and nothing pending");
	ST(npu_stream_wait_event(u, ke, 0), NPU_SUCCESS, "the wait again");
	MUST(npu_event_record(ue, u));
	usleep(100000);
	ST(npu_event_query(ue), NPU_ERROR_NOT_READY,
	   "work after it waits for the kernel-queue event (gate closed)");
	__atomic_store_n(gate, 1, __ATOMIC_RELEASE);
	ST(npu_event_synchronize(ue), NPU_SUCCESS,
	   "and completes once the gate opens");
	ST(npu_stream_synchronize(u), NPU_SUCCESS, "the stream is fine");
	MUST(npu_event_destroy(ke));
	MUST(npu_event_destroy(ue));
out:
	MUST(npu_stream_destroy(k));
	MUST(npu_stream_destroy(u));
	MUST(npu_host_free(gate));
}

int main(void)
{
	/* each enqueue submits itself (NPU_SUBMIT=direct): a failed
	 * submission is the call's error; batched, the submit thread's */
	setenv("NPU_SUBMIT", "direct", 1);
	tap_need_device();
	tap_start();
	failed_record_keeps_previous();
	failed_userq_wait_keeps_stream();
	return tap_done();
}
