// SPDX-License-Identifier: MIT
/*
 * npu_error.c - per-thread errors, status names and strings, device loss.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "npu_core.h"

/* ------------------------------------------------------------------------
 * Per-thread errors
 */
static _Thread_local npu_status_t tls_last_error;
static _Thread_local char tls_msg[512];

npu_status_t npu_fail(npu_status_t st, const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	if (st == NPU_SUCCESS)
		return st;
	/* an OS call on the device file that failed with ENODEV: the driver
	 * was unbound (drm_dev_unplug), the device is gone for good */
	if (st == NPU_ERROR_OS && err == ENODEV)
		st = NPU_ERROR_DEVICE_LOST;
	tls_last_error = st;
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(tls_msg, sizeof(tls_msg), fmt, ap);
		va_end(ap);
	} else {
		snprintf(tls_msg, sizeof(tls_msg), "%s", npu_status_string(st));
	}
	return st;
}

void npu_note_errno(struct device *dev, int err)
{
	if (err == ENODEV)
		atomic_store_explicit(&dev->lost, true, memory_order_release);
}

npu_status_t npu_fail_lost(void)
{
	return npu_fail(NPU_ERROR_DEVICE_LOST,
			"the device was lost (its driver was unbound)");
}

npu_status_t npu_fail_wait(struct device *dev)
{
	int err = errno;

	if (npu_dev_lost(dev))
		return npu_fail_lost();
	return npu_fail(NPU_ERROR_OS, "syncobj wait: %s", npu_strerror(err));
}

npu_status_t npu_fail_sticky(struct device *dev, npu_status_t st)
{
	tls_last_error = st;
	snprintf(tls_msg, sizeof(tls_msg), "%s", dev->sticky_msg);
	return st;
}

const char *npu_strerror(int e)
{
	static _Thread_local char buf[128];

	return strerror_r(e, buf, sizeof(buf));	/* the GNU form */
}

void npu_set_last_error(npu_status_t st)
{
	tls_last_error = st;
}

npu_status_t npu_get_last_error(void)
{
	npu_status_t st = tls_last_error;

	tls_last_error = NPU_SUCCESS;
	return st;
}

npu_status_t npu_peek_last_error(void)
{
	return tls_last_error;
}

const char *npu_last_error_message(void)
{
	if (tls_last_error == NPU_SUCCESS && !tls_msg[0])
		return "no error";
	return tls_msg;
}

static const struct {
	const char *name, *text;
} status_tab[] = {
	[NPU_SUCCESS] = { "NPU_SUCCESS", "no error" },
	[NPU_ERROR_INVALID_VALUE] = { "NPU_ERROR_INVALID_VALUE", "invalid value" },
	[NPU_ERROR_OUT_OF_MEMORY] = { "NPU_ERROR_OUT_OF_MEMORY", "out of memory" },
	[NPU_ERROR_NOT_INITIALIZED] = { "NPU_ERROR_NOT_INITIALIZED", "initialization error" },
	[NPU_ERROR_NO_DEVICE] = { "NPU_ERROR_NO_DEVICE", "no npu device is available" },
	[NPU_ERROR_INVALID_DEVICE] = { "NPU_ERROR_INVALID_DEVICE", "invalid device ordinal" },
	[NPU_ERROR_INVALID_HANDLE] = { "NPU_ERROR_INVALID_HANDLE", "invalid resource handle" },
	[NPU_ERROR_INVALID_POINTER] = { "NPU_ERROR_INVALID_POINTER", "invalid pointer" },
	[NPU_ERROR_INVALID_KERNEL] = { "NPU_ERROR_INVALID_KERNEL", "unknown kernel" },
	[NPU_ERROR_INVALID_CONFIGURATION] = { "NPU_ERROR_INVALID_CONFIGURATION", "invalid launch configuration" },
	[NPU_ERROR_NOT_READY] = { "NPU_ERROR_NOT_READY", "device not ready" },
	[NPU_ERROR_ILLEGAL_ADDRESS] = { "NPU_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered" },
	[NPU_ERROR_LAUNCH_FAILURE] = { "NPU_ERROR_LAUNCH_FAILURE", "unspecified launch failure" },
	[NPU_ERROR_LAUNCH_TIMEOUT] = { "NPU_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated" },
	[NPU_ERROR_NOT_SUPPORTED] = { "NPU_ERROR_NOT_SUPPORTED", "operation not supported" },
	[NPU_ERROR_OS] = { "NPU_ERROR_OS", "OS call failed" },
	[NPU_ERROR_ALREADY_MAPPED] = { "NPU_ERROR_ALREADY_MAPPED", "host memory already registered" },
	[NPU_ERROR_NOT_MAPPED] = { "NPU_ERROR_NOT_MAPPED", "host memory not registered" },
	/* graphs (npu_graph.c) */
	[NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED] = { "NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing" },
	[NPU_ERROR_STREAM_CAPTURE_INVALIDATED] = { "NPU_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture" },
	[NPU_ERROR_STREAM_CAPTURE_UNJOINED] = { "NPU_ERROR_STREAM_CAPTURE_UNJOINED", "capture was not joined to the origin stream" },
	[NPU_ERROR_STREAM_CAPTURE_IMPLICIT] = { "NPU_ERROR_STREAM_CAPTURE_IMPLICIT", "operation would make the legacy stream depend on a capturing blocking stream" },
	[NPU_ERROR_STREAM_CAPTURE_UNMATCHED] = { "NPU_ERROR_STREAM_CAPTURE_UNMATCHED", "the capture was not initiated in this stream" },
	[NPU_ERROR_STREAM_CAPTURE_WRONG_THREAD] = { "NPU_ERROR_STREAM_CAPTURE_WRONG_THREAD", "attempt to terminate a thread-local capture sequence from another thread" },
	/* code objects (npu_module.c) */
	[NPU_ERROR_INVALID_IMAGE] = { "NPU_ERROR_INVALID_IMAGE", "device kernel image is invalid" },
	[NPU_ERROR_NOT_FOUND] = { "NPU_ERROR_NOT_FOUND", "named symbol not found" },
	[NPU_ERROR_FILE_NOT_FOUND] = { "NPU_ERROR_FILE_NOT_FOUND", "file not found" },
	[NPU_ERROR_IN_USE] = { "NPU_ERROR_IN_USE", "resource in use" },
	[NPU_ERROR_DEVICE_LOST] = { "NPU_ERROR_DEVICE_LOST", "the device was lost (its driver was unbound)" },
};

const char *npu_status_string(npu_status_t st)
{
	if ((unsigned)st < sizeof(status_tab) / sizeof(status_tab[0]))
		return status_tab[st].text;
	return "unknown status";
}

const char *npu_status_name(npu_status_t st)
{
	if ((unsigned)st < sizeof(status_tab) / sizeof(status_tab[0]))
		return status_tab[st].name;
	return "NPU_ERROR_UNKNOWN";
}
