// SPDX-License-Identifier: MIT
/*
 * npu_unload.c - the library's teardown. dlclose unmaps the library's
 * code, so no thread of the library may run on after it: when the library
 * is unloaded (or the process exits) each device the process opened waits
 * for its work, stops the streams' host function threads, the graph
 * host-node threads and the submit thread, unmaps its buffers and closes
 * its file. It sits above every other file: it is the one place that
 * knows them all.
 */
/* pthread_rwlock_t (the allocation tables' lock, npu_internal.h) */
#define _POSIX_C_SOURCE 200809L
#include "npu_core.h"
#include "npu_printf.h"
#include "npu_trace.h"

static void device_teardown(struct device *d)
{
	struct npu_stream *s;

	pthread_mutex_lock(&d->lock);
	/* the work queued so far, host functions and graph host nodes
	 * included (device jobs end within the driver's job timeout) */
	npu_dev_sync_locked(d);
	for (s = d->streams; s; s = s->next)
		npu_stream_stop_thread(d, s);
	npu_dev_stop_threads(d);
	npu_host_maps_release(d);
	npu_dev_close(d);
	pthread_mutex_unlock(&d->lock);
}

__attribute__((destructor)) static void npu_unload(void)
{
	struct device *d;
	int i;

	/* exit() from a host function: that thread cannot join itself,
	 * and the trace writer would synchronize on the host function's own
	 * point: neither runs (no trace is written) */
	if (npu_thread_in_lib())
		return;
	/* (a forked child's exit: the trace is the parent's, as are the
	 * devices npu_dev_opened() leaves out) */
	npu_trace_at_unload();
	for (i = 0; i < NPU_MAX_DEVICES; i++) {
		d = npu_dev_opened(i);
		if (d)
			device_teardown(d);
	}
	npu_uq_unguard(NULL);	/* the doorbell pages are unmapped */
	npu_printf_output();	/* what the teardown's synchronize queued */
}
