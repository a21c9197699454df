/* SPDX-License-Identifier: MIT */
/*
 * npu.h - libnpu, the runtime library of the npu accelerator.
 *
 * libnpu is a thin C11 layer over the npu DRM driver's ioctls
 * (uapi/drm/npu_accel.h) with the semantics of the CUDA runtime wherever CUDA
 * defines them, because that is what its users know. Each function below
 * says which CUDA call it corresponds to; "as CUDA" means the observable
 * behaviour is the same, and every deliberate difference is spelled out with
 * its reason. Documentation/lib/libnpu.rst is the guide (concepts, mapping
 * tables for CUDA and for Choreo's parallel-by forms).
 *
 * General rules
 *  - Every call returns an npu_status_t; NPU_SUCCESS is 0.
 *  - Every call is thread-safe. Handles (streams, events) may be used from
 *    any thread of the process.
 *  - A call that fails because of bad input (NULL, destroyed or foreign
 *    handles, unknown flags, sizes that overflow or run past an allocation,
 *    unknown kernels, bad grids) changes nothing and returns a status that
 *    names the problem; the calling thread's last error and message are set
 *    (npu_get_last_error(), npu_last_error_message()). NPU_ERROR_NOT_READY
 *    from a query is a state, not an error, and does not set it (as CUDA).
 *  - Device-side failures (a page fault, a kernel that does not finish
 *    within the driver's job timeout) are asynchronous: they become *sticky*
 *    errors of the stream that ran the job and of the device (the CUDA
 *    "context"), reported by the next call that waits for or queries that
 *    work, and by every later call that submits work to the device
 *    (as CUDA). npu_device_reset() clears them.
 *  - Host functions enqueued with npu_launch_host_func() must not call
 *    libnpu (as CUDA).
 *  - Unloading: when the library is unloaded (dlclose) or the process
 *    exits, each device the process opened waits for the work queued so
 *    far (host functions and graph host nodes included; device jobs end
 *    within the driver's job timeout), stops the library's threads,
 *    unmaps its buffers (pinned memory too) and closes its file, so that
 *    dlopen + use + dlclose can be repeated. No call may be in progress
 *    in another thread meanwhile. A host function that never returns
 *    holds the unload (and exit) for ever, as it would hold
 *    npu_device_synchronize(); exit() from a host function skips the
 *    teardown, as does a forked child's exit.
 *  - Not fork-safe: a child process must not use handles or memory of its
 *    parent (as CUDA). A child that execs may use libnpu afresh; event file
 *    descriptors (npu_event_export_fd()) are the way to share completion,
 *    dma-buf descriptors (npu_mem_export_fd()) the way to share memory.
 */
#ifndef NPU_H
#define NPU_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Status codes (cudaError_t)
 */
typedef enum npu_status {
	NPU_SUCCESS = 0,
	NPU_ERROR_INVALID_VALUE = 1,	/* bad argument, flag or size */
	NPU_ERROR_OUT_OF_MEMORY = 2,	/* host or device memory exhausted */
	NPU_ERROR_NOT_INITIALIZED = 3,	/* library could not initialise */
	NPU_ERROR_NO_DEVICE = 4,	/* no npu device node */
	NPU_ERROR_INVALID_DEVICE = 5,	/* device ordinal out of range */
	NPU_ERROR_INVALID_HANDLE = 6,	/* NULL/destroyed/foreign handle */
	NPU_ERROR_INVALID_POINTER = 7,	/* not a pointer this library made */
	NPU_ERROR_INVALID_KERNEL = 8,	/* unknown kernel id or name */
	NPU_ERROR_INVALID_CONFIGURATION = 9, /* bad grid or argument count */
	NPU_ERROR_NOT_READY = 10,	/* query: work not yet complete */
	NPU_ERROR_ILLEGAL_ADDRESS = 11,	/* sticky: device page fault */
	NPU_ERROR_LAUNCH_FAILURE = 12,	/* sticky: other device error */
	NPU_ERROR_LAUNCH_TIMEOUT = 13,	/* sticky: job exceeded driver timeout */
	NPU_ERROR_NOT_SUPPORTED = 14,	/* feature absent on this device */
	NPU_ERROR_OS = 15,		/* unexpected system call failure */
	NPU_ERROR_ALREADY_MAPPED = 16,	/* host range already registered */
	NPU_ERROR_NOT_MAPPED = 17,	/* host range was not registered */
	/* stream capture (graphs section below) */
	NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED = 18, /* call illegal while capturing */
	NPU_ERROR_STREAM_CAPTURE_INVALIDATED = 19, /* capture failed earlier */
	NPU_ERROR_STREAM_CAPTURE_UNJOINED = 20,	/* a forked stream was not joined */
	NPU_ERROR_STREAM_CAPTURE_IMPLICIT = 21,	/* legacy stream used during capture */
	NPU_ERROR_STREAM_CAPTURE_UNMATCHED = 22, /* end without begin / other stream */
	NPU_ERROR_STREAM_CAPTURE_WRONG_THREAD = 23, /* end on another thread */
	/* code objects (user kernels section below) */
	NPU_ERROR_INVALID_IMAGE = 24,	/* malformed or foreign code object */
	NPU_ERROR_NOT_FOUND = 25,	/* no kernel of that name */
	NPU_ERROR_FILE_NOT_FOUND = 26,	/* no such code object file */
	NPU_ERROR_IN_USE = 27,		/* module's kernels in graph nodes */
	/* the device went away (its driver was unbound, every ioctl fails
	 * with ENODEV): every later call on it fails with this, and no work
	 * that did not run is reported complete (cudaErrorDevicesUnavailable
	 * comes closest) */
	NPU_ERROR_DEVICE_LOST = 28,
} npu_status_t;

/* Short constant description of a status ("invalid value", ...)
 * (cudaGetErrorString). Never NULL, also for unknown values. */
const char *npu_status_string(npu_status_t status);

/* Short constant name of a status ("NPU_ERROR_INVALID_VALUE")
 * (cudaGetErrorName). */
const char *npu_status_name(npu_status_t status);

/* Return the calling thread's last error and reset it to NPU_SUCCESS
 * (cudaGetLastError). Sticky device errors are not reset by this: the next
 * call that touches the device reports them again (as CUDA). */
npu_status_t npu_get_last_error(void);

/* Return the calling thread's last error without resetting it
 * (cudaPeekAtLastError). */
npu_status_t npu_peek_last_error(void);

/* A human-readable message about the calling thread's most recent failed
 * call: for device faults it names the kernel, the fault address, the ring
 * and the stream. Valid until the thread's next libnpu call. No CUDA
 * counterpart (CUDA only has the fixed strings). */
const char *npu_last_error_message(void);

/* ------------------------------------------------------------------------
 * Devices
 *
 * Devices are the DRM nodes whose driver is "npu": /dev/accel/accel* (Linux
 * 6.2 and later) and /dev/dri/renderD* (6.1), numbered 0..count-1 in path
 * order. Only nodes whose PCI function sysfs names as the npu's
 * (1b36:0120) are opened: other vendors' nodes are left alone. Each thread
 * has a current device (default 0) used by every call that does not take a
 * device or a handle (cudaSetDevice model). One device
 * is opened once per process; all threads share its DRM file, hence its
 * device address space.
 */

/* Device feature bits (npu_device_prop.features), from the driver. */
#define NPU_FEATURE_TIMING_MODEL	(1ull << 0)
#define NPU_FEATURE_DEVMEM		(1ull << 1)
#define NPU_FEATURE_USERPTR		(1ull << 2)
#define NPU_FEATURE_TIMELINE		(1ull << 3)
#define NPU_FEATURE_PRIME		(1ull << 4)
#define NPU_FEATURE_COUNTERS		(1ull << 5)
#define NPU_FEATURE_USER_KERNELS	(1ull << 8)	/* runs user kernels */
#define NPU_FEATURE_USERQ		(1ull << 10)	/* user-mode queues */

typedef struct npu_device_prop {
	char name[64];			/* "npu" plus PCI ids */
	char node[64];			/* e.g. "/dev/accel/accel0" */
	uint32_t pci_id;		/* vendor << 16 | device */
	uint32_t revision;		/* hardware version register */
	uint32_t compute_rings;		/* rings that run kernels */
	uint32_t copy_rings;		/* rings that run copies and fills */
	uint32_t compute_units;		/* shared by all compute rings */
	uint64_t devmem_size;		/* bytes of device memory */
	uint64_t clock_hz;		/* device timestamp clock rate */
	uint64_t features;		/* NPU_FEATURE_* */
	uint64_t va_size;		/* device address space per process */
	uint32_t max_jobs_per_submit;
	uint32_t max_cmd_size;		/* bytes of one command buffer */
	uint32_t job_timeout_ms;	/* driver's hang timeout */
	/* timing model figures (meaningful with NPU_FEATURE_TIMING_MODEL) */
	uint32_t link_bw_mbps;		/* host link bandwidth, MB/s */
	uint32_t mem_bw_mbps;		/* device memory bandwidth, MB/s */
	uint32_t cu_mops;		/* per compute unit, M ops/s */
	uint32_t launch_ns;		/* kernel launch latency */
	uint32_t copy_ns;		/* copy setup latency */
	/* compute units (with NPU_FEATURE_USER_KERNELS) */
	uint32_t unit_threads;		/* hardware thread slots per unit */
	uint32_t unit_scratch_bytes;	/* scratchpad per unit */
	uint32_t unit_clock_mhz;	/* unit clock */
	int stream_priority_least;	/* see npu_stream_create() */
	int stream_priority_greatest;
} npu_device_prop;

/* Number of npu devices (cudaGetDeviceCount). With none, *count is 0 and
 * NPU_ERROR_NO_DEVICE is returned (as CUDA's cudaErrorNoDevice). */
npu_status_t npu_device_count(int *count);

/* Current device of the calling thread (cudaGetDevice / cudaSetDevice). */
npu_status_t npu_device_get(int *ordinal);
npu_status_t npu_device_set(int ordinal);

/* libnpu's version (its shared object is libnpu.so.MAJOR.MINOR.PATCH). */
#define NPU_LIB_VERSION_MAJOR	0
#define NPU_LIB_VERSION_MINOR	1
#define NPU_LIB_VERSION_PATCH	0
/* Versions as one number, 1000 * major + 10 * minor + patch (CUDA's
 * encoding): 0.1.0 is 10. */
#define NPU_LIB_VERSION \
	(1000 * NPU_LIB_VERSION_MAJOR + 10 * NPU_LIB_VERSION_MINOR + NPU_LIB_VERSION_PATCH)

/* The version of the libnpu loaded at run time, which may be newer than the
 * NPU_VERSION a program was built with (cudaRuntimeGetVersion). */
npu_status_t npu_runtime_get_version(int *version);

/* The version of the kernel driver (npu.ko) behind the current device, as
 * DRM reports it (cudaDriverGetVersion). */
npu_status_t npu_driver_get_version(int *version);

/* How a host thread waits for the current device (cudaSetDeviceFlags'
 * scheduling flags). A stream synchronize can watch the job's completion
 * word in host memory before it sleeps in the kernel:
 *  - NPU_DEVICE_SCHEDULE_AUTO (the default): watch for up to
 *    NPU_WAIT_SPIN_US microseconds (environment, default 500), yielding
 *    the CPU now and then, then sleep;
 *  - NPU_DEVICE_SCHEDULE_SPIN: watch until the work is done (lowest
 *    latency, one CPU busy for the whole wait);
 *  - NPU_DEVICE_SCHEDULE_YIELD: the same, yielding the CPU after every look;
 *  - NPU_DEVICE_SCHEDULE_BLOCKING_SYNC: sleep in the kernel at once.
 * A failed job is reported in every mode. Event waits always sleep. One
 * flag at most; anything else is NPU_ERROR_INVALID_VALUE. Applies to waits
 * that start afterwards, in every thread. */
#define NPU_DEVICE_SCHEDULE_AUTO		0u
#define NPU_DEVICE_SCHEDULE_SPIN		(1u << 0)
#define NPU_DEVICE_SCHEDULE_YIELD		(1u << 1)
#define NPU_DEVICE_SCHEDULE_BLOCKING_SYNC	(1u << 2)
npu_status_t npu_device_set_flags(unsigned int flags);
npu_status_t npu_device_get_flags(unsigned int *flags);

/* Properties of device ordinal (cudaGetDeviceProperties). */
npu_status_t npu_device_get_properties(npu_device_prop *prop, int ordinal);

/* Read the current device clock (same time base as event timestamps). */
npu_status_t npu_device_get_clock(uint64_t *ticks);

/* Block until all work submitted so far to the current device, in every
 * stream of this process, has completed, including host functions
 * (cudaDeviceSynchronize). Returns the device's sticky error if any. */
npu_status_t npu_device_synchronize(void);

/* Wait for all work, then clear the sticky errors of the current device and
 * of its streams (the useful part of cudaDeviceReset). Unlike CUDA,
 * allocations, streams and events stay valid: a device fault does not
 * poison the driver context, only the jobs that hit it. */
npu_status_t npu_device_reset(void);

/* ------------------------------------------------------------------------
 * Memory
 *
 * Device pointers are device virtual addresses in the process's device
 * address space, returned as void * that must not be dereferenced by the
 * host (as CUDA without managed memory). Pinned host memory
 * (npu_host_alloc, npu_host_register) is reachable by the device directly.
 * Any other host memory is "pageable": the device cannot reach it and copies
 * are staged through pinned bounce buffers (as CUDA).
 */

/* Allocate size bytes of device memory (cudaMalloc). size 0 yields NULL
 * and NPU_SUCCESS (as CUDA). Alignment is 4 KiB. */
npu_status_t npu_malloc(void **devptr, size_t size);

/* Free device memory (cudaFree). Waits for all work of the device first,
 * so work in flight never sees its memory vanish (as CUDA, where cudaFree
 * synchronises implicitly). NULL is a no-op. */
npu_status_t npu_free(void *devptr);

/* Allocate size bytes of pinned host memory that the device reads and
 * writes directly (cudaMallocHost / cudaHostAlloc). flags: 0, or
 * NPU_HOST_ALLOC_MAPPED / NPU_HOST_ALLOC_PORTABLE, accepted for CUDA code:
 * all pinned memory is mapped into the device address space and usable on
 * every stream. */
#define NPU_HOST_ALLOC_DEFAULT		0u
#define NPU_HOST_ALLOC_PORTABLE		(1u << 0)
#define NPU_HOST_ALLOC_MAPPED		(1u << 1)
npu_status_t npu_host_alloc(void **ptr, size_t size, unsigned int flags);

/* The device address of pinned host memory (cudaHostGetDevicePointer), for
 * kernels that read and write it directly over the link: host_ptr inside
 * an npu_host_alloc() or npu_host_register() range (else
 * NPU_ERROR_INVALID_VALUE); flags must be 0. The device address differs
 * from the host pointer: pass the device address to kernels. */
npu_status_t npu_host_get_device_pointer(void **devptr, void *host_ptr,
					 unsigned int flags);

/* Free pinned host memory; waits for the device first (cudaFreeHost). */
npu_status_t npu_host_free(void *ptr);

/* Pin an existing host range so the device reaches it directly
 * (cudaHostRegister). The pages spanned by [ptr, ptr+size) are pinned; the
 * range must not overlap an already registered one
 * (NPU_ERROR_ALREADY_MAPPED). flags: NPU_HOST_REGISTER_READ_ONLY (device
 * only reads the memory, e.g. a const source buffer). */
#define NPU_HOST_REGISTER_DEFAULT	0u
#define NPU_HOST_REGISTER_READ_ONLY	(1u << 0)
npu_status_t npu_host_register(void *ptr, size_t size, unsigned int flags);

/* Unpin a range registered with npu_host_register(); ptr must be the
 * pointer given there (cudaHostUnregister). Waits for the device first. */
npu_status_t npu_host_unregister(void *ptr);

/* Share pinned host memory with another process or driver as a dma-buf
 * file descriptor (PRIME). ptr must be a pointer returned by
 * npu_host_alloc(); the caller owns *fd. Comparable to
 * cudaIpcGetMemHandle, but for pinned memory: device memory (npu_malloc)
 * and registered memory give NPU_ERROR_NOT_SUPPORTED, because the driver
 * does not export device-local or user-pinned buffers. */
npu_status_t npu_mem_export_fd(void *ptr, int *fd);

/* Import a dma-buf fd (e.g. from npu_mem_export_fd() in another process):
 * it becomes pinned host memory of this process, mapped at *ptr, *size
 * bytes, usable by copies and kernels like npu_host_alloc() memory; release
 * it with npu_host_free(). The fd is not consumed. Importing a buffer this
 * process already has gives NPU_ERROR_ALREADY_MAPPED.
 * (cudaIpcOpenMemHandle / cudaIpcCloseMemHandle.) */
npu_status_t npu_mem_import_fd(int fd, void **ptr, size_t *size);

/* Direction of a copy (cudaMemcpyKind, same values). With
 * NPU_MEMCPY_DEFAULT the direction is inferred from each pointer, by these
 * rules in this order:
 *  1. inside a live npu_malloc() allocation: device memory;
 *  2. inside a live npu_host_alloc() / npu_host_register() /
 *     npu_mem_import_fd() range: pinned host memory;
 *  3. inside the device addresses of such a live pinned range
 *     (npu_host_get_device_pointer()): that pinned memory;
 *  4. inside the device's virtual address window (the range the driver
 *     hands device addresses out of: DRM_NPU_PARAM_VA_START, va_size bytes)
 *     but in no live allocation and not readable in this process: an error,
 *     NPU_ERROR_INVALID_VALUE ("a device address outside every live
 *     allocation"): a freed or made-up device pointer is never copied as
 *     host memory;
 *  5. anything else: pageable host memory.
 * Device and host addresses are separate spaces (no unified addressing):
 * an address inside the window that the process can read (only possible
 * for non-PIE programs, whose image and heap lie low, or in ASan's low
 * shadow memory at 2 GiB) is taken for host memory unless rule 1 or 3
 * claims it. An explicit host side (HOST_TO_*, *_TO_HOST) skips rules 1 and
 * 3 but still fails by rule 4; an explicit device side accepts only rules 1
 * and 3 (else NPU_ERROR_INVALID_POINTER). */
typedef enum npu_memcpy_kind {
	NPU_MEMCPY_HOST_TO_HOST = 0,
	NPU_MEMCPY_HOST_TO_DEVICE = 1,
	NPU_MEMCPY_DEVICE_TO_HOST = 2,
	NPU_MEMCPY_DEVICE_TO_DEVICE = 3,
	NPU_MEMCPY_DEFAULT = 4,
} npu_memcpy_kind_t;

typedef struct npu_stream *npu_stream_t;

/* Copy count bytes (cudaMemcpy). Issued on the legacy default stream, so
 * it waits for prior work of all blocking streams (as CUDA). Returns when
 * the copy is complete, except device-to-device copies, which return once
 * queued (as CUDA). Device and pinned ranges must lie inside one
 * allocation (NPU_ERROR_INVALID_VALUE otherwise); a pointer that an
 * explicit kind says is device memory but is not inside a live npu_malloc()
 * allocation or a pinned range's device addresses gives
 * NPU_ERROR_INVALID_POINTER (see npu_memcpy_kind_t for every rule).
 * Host-to-host copies are done by the CPU after the stream's earlier work. */
npu_status_t npu_memcpy(void *dst, const void *src, size_t count,
			npu_memcpy_kind_t kind);

/* Queue a copy on stream (NULL = legacy default stream) and return
 * (cudaMemcpyAsync). As in CUDA:
 *  - pinned host <-> device and device <-> device copies are fully
 *    asynchronous;
 *  - from pageable host memory: the source is copied into a pinned bounce
 *    buffer (small copies go inline in the command buffer) before the call
 *    returns, so the caller may reuse it at once; the DMA from the bounce
 *    buffer happens in stream order;
 *  - to pageable host memory: the call waits for the stream, copies through
 *    a bounce buffer and returns when the data is in place (CUDA behaves
 *    the same: D2H into pageable memory is synchronous). */
npu_status_t npu_memcpy_async(void *dst, const void *src, size_t count,
			      npu_memcpy_kind_t kind, npu_stream_t stream);

/* Set count bytes of device memory to the byte value (cudaMemset):
 * synchronous, on the legacy default stream. Any alignment and size; the
 * range must lie inside one npu_malloc() allocation or inside the device
 * addresses of one pinned range (NPU_ERROR_INVALID_POINTER /
 * NPU_ERROR_INVALID_VALUE otherwise). */
npu_status_t npu_memset(void *devptr, int value, size_t count);

/* Queue the same on stream (cudaMemsetAsync). */
npu_status_t npu_memset_async(void *devptr, int value, size_t count,
			      npu_stream_t stream);

/* ------------------------------------------------------------------------
 * Streams
 *
 * A stream is an in-order queue of work (copies, kernels, event records,
 * host functions). Independent streams run concurrently: each stream gets
 * its own queue on a compute ring and one on a copy ring, assigned
 * round-robin, and work of a stream is ordered only against its own earlier
 * work (plus the legacy default stream rules below).
 *
 * The legacy default stream, NPU_STREAM_LEGACY or NULL, follows CUDA's rules
 * exactly: work queued on it waits for all prior work of every *blocking*
 * stream of the device, and work queued later on a blocking stream waits for
 * all prior work of the legacy stream. Streams created with
 * NPU_STREAM_NON_BLOCKING opt out of both rules.
 */
#define NPU_STREAM_LEGACY		((npu_stream_t)0)
#define NPU_STREAM_DEFAULT		0u	/* blocking stream */
#define NPU_STREAM_NON_BLOCKING		(1u << 0)
/* Where a stream's work goes (at most one of the two; neither: the
 * environment variable NPU_QUEUES=user|kernel, else a user queue).
 * USER_QUEUE: a user-mode queue, written and rung from user
 * space with no system call per launch, copy or event; when the driver or
 * device has none (DRM_NPU_FEATURE_USER_QUEUES) or one cannot be made,
 * the stream runs on kernel queues. KERNEL_QUEUE: jobs through the
 * driver's SUBMIT ioctl and scheduler. npu_stream_get_flags() of a
 * stream made with either says which it got. */
#define NPU_STREAM_USER_QUEUE		(1u << 1)
#define NPU_STREAM_KERNEL_QUEUE		(1u << 2)

/* Range of stream priorities (cudaDeviceGetStreamPriorityRange). As in CUDA
 * a lower number is a higher priority and 0 is the default; npu has three
 * levels: least = 1 (low), 0 (normal), greatest = -1 (high). */
npu_status_t npu_stream_priority_range(int *least, int *greatest);

/* Create a stream (cudaStreamCreateWithPriority). flags:
 * NPU_STREAM_DEFAULT or NPU_STREAM_NON_BLOCKING, with NPU_STREAM_USER_QUEUE
 * or NPU_STREAM_KERNEL_QUEUE. priority outside the range
 * is clamped (as CUDA). Priority orders jobs waiting for the same ring.
 * The highest (-1) needs CAP_SYS_NICE; without it the stream gets 0, which
 * npu_stream_get_priority() reports. */
npu_status_t npu_stream_create(npu_stream_t *stream, unsigned int flags,
			       int priority);

/* Destroy a stream (cudaStreamDestroy). Pending work of the stream
 * completes first. Difference from CUDA: CUDA returns at once and releases
 * the stream later; npu_stream_destroy waits for the work and returns its
 * sticky error, if any, so that the queues, syncobj and threads are gone
 * when it returns (the ordering seen by other streams is the same). The
 * legacy stream cannot be destroyed (NPU_ERROR_INVALID_HANDLE). */
npu_status_t npu_stream_destroy(npu_stream_t stream);

/* NPU_SUCCESS if all work queued on stream has completed, NPU_ERROR_NOT_READY
 * if not, or the stream's sticky error (cudaStreamQuery). */
npu_status_t npu_stream_query(npu_stream_t stream);

/* Wait for all work queued on stream (cudaStreamSynchronize). On the legacy
 * stream this includes the blocking streams' earlier work. */
npu_status_t npu_stream_synchronize(npu_stream_t stream);

typedef struct npu_event *npu_event_t;

/* Make all later work of stream wait for the event's most recent record at
 * the time of this call (cudaStreamWaitEvent). A never-recorded event is
 * complete: nothing waits (as CUDA). flags must be 0. The event may be
 * destroyed or re-recorded afterwards without affecting this wait. */
npu_status_t npu_stream_wait_event(npu_stream_t stream, npu_event_t event,
				   unsigned int flags);

/* Stream memory operations (cuStreamWaitValue32 / cuStreamWriteValue32).
 * addr is a 4-byte aligned word in device memory (npu_malloc) or in pinned
 * host memory (npu_host_alloc / npu_host_register), which the host may
 * read and write directly (as a volatile or atomic uint32_t).
 *
 * npu_stream_wait_value32: later work of stream starts only once the word
 * at addr, compared as a wrapping sequence number, has reached value
 * ((int32_t)(*addr - value) >= 0: CUDA's CU_STREAM_WAIT_VALUE_GEQ). The
 * wait happens on the device: the stream's later work is already
 * submitted behind it, so releasing it costs one store. Like a long
 * kernel, a waiting stream holds its hardware ring, and streams sharing
 * that ring (there are fewer rings than streams) wait behind it: release
 * a wait from the host or from work that cannot be queued behind it. A
 * wait never released is a hung job that the driver's job timeout ends
 * (NPU_ERROR_LAUNCH_TIMEOUT, sticky).
 *
 * npu_stream_write_value32: store value at addr once the stream's earlier
 * work has completed.
 *
 * A common use is a start gate: the stream writes an "arrived" word, then
 * waits on a gate word; work queued behind it has provably not started
 * until the host, having seen the arrived word, stores the gate.
 *
 * flags must be 0. Errors: NPU_ERROR_INVALID_VALUE (misaligned, flags),
 * NPU_ERROR_INVALID_POINTER (addr is neither device nor pinned memory),
 * NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED on a capturing stream (graphs have
 * no memory-operation nodes yet). */
npu_status_t npu_stream_wait_value32(npu_stream_t stream, uint32_t *addr,
				     uint32_t value, unsigned int flags);
npu_status_t npu_stream_write_value32(npu_stream_t stream, uint32_t *addr,
				      uint32_t value, unsigned int flags);

/* Priority a stream was created with, after clamping (cudaStreamGetPriority). */
npu_status_t npu_stream_get_priority(npu_stream_t stream, int *priority);

/* Flags a stream was created with (cudaStreamGetFlags). */
npu_status_t npu_stream_get_flags(npu_stream_t stream, unsigned int *flags);

/* ------------------------------------------------------------------------
 * Events
 *
 * An event marks a point in a stream. Timing events carry the *device*
 * clock at that point (written by a TIMESTAMP packet on the ring, never
 * the host clock), so elapsed times measure the device.
 */
#define NPU_EVENT_DEFAULT		0u
#define NPU_EVENT_BLOCKING_SYNC		(1u << 0)
#define NPU_EVENT_DISABLE_TIMING	(1u << 1)

/* Create an event (cudaEventCreateWithFlags). NPU_EVENT_BLOCKING_SYNC is
 * accepted for CUDA compatibility; waits on events always block in the
 * kernel, so it changes nothing. (Stream waits may watch completion memory
 * first: npu_device_set_flags.) */
npu_status_t npu_event_create(npu_event_t *event, unsigned int flags);

/* Destroy an event (cudaEventDestroy). Safe while a record is pending or
 * while streams wait on it: those waits keep what they captured. */
npu_status_t npu_event_destroy(npu_event_t event);

/* Capture the work queued so far on stream (NULL = legacy) in the event
 * (cudaEventRecord). An event is its most recent record only (as CUDA):
 * re-recording replaces the capture, and later queries, synchronizes,
 * stream waits, exports and timings see that record alone, never waiting
 * for earlier records of the event (on this or other streams, complete or
 * not) and never seeing their timestamps, however many records are
 * pending. */
npu_status_t npu_event_record(npu_event_t event, npu_stream_t stream);

/* NPU_SUCCESS if the captured work completed (also for a never-recorded
 * event, as CUDA), NPU_ERROR_NOT_READY if not (cudaEventQuery). */
npu_status_t npu_event_query(npu_event_t event);

/* Wait for the captured work; immediate for a never-recorded event
 * (cudaEventSynchronize). */
npu_status_t npu_event_synchronize(npu_event_t event);

/* Milliseconds of device time between the records of start and end
 * (cudaEventElapsedTime). As CUDA: NPU_ERROR_NOT_READY if either record is
 * not complete, NPU_ERROR_INVALID_HANDLE if either event was never recorded
 * or was created with NPU_EVENT_DISABLE_TIMING (or imported). The result is
 * negative if end was recorded before start completed. */
npu_status_t npu_event_elapsed_time(float *ms, npu_event_t start,
				    npu_event_t end);

/* Device clock tick of the event's latest (complete) record. No CUDA
 * counterpart; used by profilers and tests. */
npu_status_t npu_event_timestamp(npu_event_t event, uint64_t *ticks);

/* Export the event's latest record as a sync_file file descriptor (poll()
 * it, pass it to another process or API). The caller owns *fd. A
 * never-recorded event exports an already signalled fence. Comparable to
 * cudaIpcGetEventHandle, but a standard Linux fence. */
npu_status_t npu_event_export_fd(npu_event_t event, int *fd);

/* Create an event that is recorded at the fence of a sync_file fd (e.g.
 * from npu_event_export_fd() in another process). The fd is not consumed.
 * The event has no timestamp (timing is disabled). */
npu_status_t npu_event_import_fd(npu_event_t *event, int fd);

/* ------------------------------------------------------------------------
 * Kernels and launch
 *
 * Kernels are built into the device. They are named by id or by name;
 * arguments are 64-bit values: device pointers (npu_arg_ptr) and scalars
 * (npu_arg_u64, npu_arg_f32). The grid only chooses how the work is split
 * into blocks, never the result. The argument lists:
 */
typedef enum npu_kernel_id {
	NPU_K_NOP = 0,			/* () */
	NPU_K_FILL_F32 = 1,		/* (y, n, value) */
	NPU_K_SCALE_F32 = 2,		/* (x, y, n, a): y = a*x */
	NPU_K_VADD_F32 = 3,		/* (a, b, c, n): c = a + b */
	NPU_K_SAXPY_F32 = 4,		/* (x, y, n, a): y += a*x */
	NPU_K_RELU_F32 = 5,		/* (x, y, n) */
	NPU_K_GEMM_F32 = 6,		/* (A, B, C, M, N, K, flags, alpha, beta) */
	NPU_K_BIAS_ADD_F32 = 7,		/* (x, bias, rows, cols) */
	NPU_K_REDUCE_SUM_F32 = 8,	/* (x, out, n) */
	NPU_K_SOFTMAX_F32 = 9,		/* (x, y, rows, cols) */
	NPU_K_RELU_GRAD_F32 = 10,	/* (dy, x, dx, n) */
	NPU_K_SOFTMAX_XENT_F32 = 11,	/* (logits, labels, grad, loss, rows, cols) */
	NPU_K_COL_SUM_F32 = 12,		/* (x, out, rows, cols) */
	NPU_K_ARGMAX_F32 = 13,		/* (x, out, rows, cols) */
	NPU_K_TEST_SPIN = 0x100,	/* (ns): occupies its units for ns */
	NPU_K_TEST_HANG = 0x101,	/* (): never finishes (driver timeout) */
	NPU_K_TEST_FAULT = 0x102,	/* (va): reads va, expected unmapped */
} npu_kernel_t;

#define NPU_GEMM_TRANSPOSE_A	0x1
#define NPU_GEMM_TRANSPOSE_B	0x2
#define NPU_MAX_KERNEL_ARGS	16

typedef struct npu_dim3 {
	uint32_t x, y, z;		/* each >= 1 */
} npu_dim3;

static inline npu_dim3 npu_grid(uint32_t x, uint32_t y, uint32_t z)
{
	npu_dim3 d = { x, y, z };
	return d;
}
static inline uint64_t npu_arg_ptr(const void *p) { return (uint64_t)(uintptr_t)p; }
static inline uint64_t npu_arg_u64(uint64_t v) { return v; }
static inline uint64_t npu_arg_f32(float f)
{
	union { float f; uint32_t u; } c;
	c.f = f;
	return c.u;
}

/* Look up a kernel by name ("saxpy_f32", "gemm_f32", "test_spin", ...;
 * the enum names in lower case without NPU_K_). NPU_ERROR_INVALID_KERNEL
 * if unknown. */
npu_status_t npu_kernel_by_name(const char *name, npu_kernel_t *kernel);

/* Name and argument count of a kernel; NPU_ERROR_INVALID_KERNEL if
 * unknown. */
npu_status_t npu_kernel_info(npu_kernel_t kernel, const char **name,
			     unsigned int *nargs);

/* npu_launch() flags */
#define NPU_LAUNCH_ASYNC	0u		/* return once queued */
#define NPU_LAUNCH_SYNC		(1u << 0)	/* then synchronize the stream */
#define NPU_LAUNCH_SYNC_DEVICE	(1u << 1)	/* then synchronize the device */

/* Launch kernel over grid with nargs arguments on stream (NULL = legacy
 * default stream) (cudaLaunchKernel). flags: NPU_LAUNCH_ASYNC returns once
 * the job is queued: the packet is written into the stream's command ring
 * and the job handed to the device's submit thread, which passes all queued
 * jobs to the driver in one DRM_IOCTL_NPU_SUBMIT (no system call and no
 * allocation in the caller; NPU_SUBMIT=direct in the environment makes it
 * one ioctl per job instead). NPU_LAUNCH_SYNC then waits for stream;
 * NPU_LAUNCH_SYNC_DEVICE then waits for the whole device.
 * nargs must equal the kernel's argument count
 * (NPU_ERROR_INVALID_CONFIGURATION otherwise, also for a zero grid
 * dimension). Device faults are reported asynchronously (see top). */
npu_status_t npu_launch(npu_kernel_t kernel, npu_dim3 grid,
			const uint64_t *args, unsigned int nargs,
			npu_stream_t stream, unsigned int flags);

/* Choreo parallel-by forms, one to one:
 *   parallel<s>        npu_parallel(k, g, a, n, s)        launch on s, sync s
 *   parallel           npu_parallel(k, g, a, n, NULL)     launch, sync device
 *   parallel.async<s>  npu_parallel_async(k, g, a, n, s)  launch on s, return
 *   parallel.async     npu_parallel_async(k, g, a, n, NULL)
 *                                            launch on the default stream
 */
npu_status_t npu_parallel(npu_kernel_t kernel, npu_dim3 grid,
			  const uint64_t *args, unsigned int nargs,
			  npu_stream_t stream);
npu_status_t npu_parallel_async(npu_kernel_t kernel, npu_dim3 grid,
				const uint64_t *args, unsigned int nargs,
				npu_stream_t stream);

/* Host functions (cudaLaunchHostFunc): fn(user) runs on a helper thread
 * after all prior work of stream has completed; later work of stream
 * starts only after fn returned. fn must not call libnpu (as CUDA). If the
 * stream has a sticky error when fn's turn comes, fn is not called and the
 * stream goes on (as CUDA). */
typedef void (*npu_host_fn_t)(void *user);
npu_status_t npu_launch_host_func(npu_stream_t stream, npu_host_fn_t fn,
				  void *user);

/* ------------------------------------------------------------------------
 * User kernels (cuModuleLoad, cuModuleGetFunction, cuLaunchKernel)
 *
 * Kernels are C functions for the compute units, written with npu_kernel.h
 * and compiled by npu-cc into a code object (an ELF file, npu_code.h);
 * Documentation/lib/kernels.rst is the guide. A module is a loaded code
 * object: its image lives in device memory of the current device until it
 * is unloaded. A function is one kernel of a module; its handle is valid
 * until the module is unloaded.
 */
typedef struct npu_module *npu_module_t;
typedef struct npu_function *npu_function_t;

/* Load the code object at path (cuModuleLoad) / in memory
 * (cuModuleLoadData; the image is copied) onto the current device.
 * Errors, with nothing loaded: NPU_ERROR_FILE_NOT_FOUND;
 * NPU_ERROR_INVALID_IMAGE (not an ELF, truncated, another architecture or
 * ABI, compressed instructions, relocations other than R_RISCV_RELATIVE, no
 * or malformed kernel descriptors, a kernel without entry, a static
 * scratchpad larger than a unit's), with a message naming the problem;
 * NPU_ERROR_NOT_SUPPORTED if the device runs no user code. */
npu_status_t npu_module_load(npu_module_t *module, const char *path);
npu_status_t npu_module_load_data(npu_module_t *module, const void *image,
				  size_t size);

/* Unload (cuModuleUnload): waits for the work of the module's device
 * first (a kernel of the module may be running), then frees its image; its
 * functions become invalid handles. Of threads unloading one module at
 * once, one unloads it and the others get NPU_ERROR_INVALID_HANDLE.
 * NPU_ERROR_IN_USE, with nothing unloaded, while a kernel node of a graph
 * or of an executable graph names one of its kernels (destroy those first:
 * a graph launch never runs freed code). */
npu_status_t npu_module_unload(npu_module_t module);

/* The kernel named name (cuModuleGetFunction); NPU_ERROR_NOT_FOUND if the
 * module has none. */
npu_status_t npu_module_get_function(npu_function_t *function,
				     npu_module_t module, const char *name);

/* Launch function over grid blocks of block threads (cuLaunchKernel) on
 * stream (NULL: the legacy default stream, with its rules) and return.
 * scratch_bytes: dynamic scratchpad per block, added to the kernel's
 * static one. args[i] points to the value of argument i, of the size the
 * kernel declared (NULL allowed for a kernel without arguments). Every
 * block runs on one unit with its threads' slots and its scratchpad; see
 * the occupancy functions below. Errors, with nothing queued:
 * NPU_ERROR_INVALID_HANDLE (function), NPU_ERROR_INVALID_CONFIGURATION
 * (a zero grid or block dimension, more threads per block than
 * NPU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, more scratchpad than a unit
 * has), NPU_ERROR_INVALID_VALUE (args NULL for a kernel with arguments),
 * the device's sticky error. A fault of the kernel is a sticky error whose
 * message names the kernel, its source line (with -g) and the address.
 * Its printf output is written to stdout when a synchronize or a query
 * sees the launch complete, launches in submission order. */
npu_status_t npu_launch_kernel(npu_function_t function, npu_dim3 grid,
			       npu_dim3 block, unsigned int scratch_bytes,
			       npu_stream_t stream, void **args);

/* The Choreo parallel-by forms with a user kernel, as npu_parallel() and
 * npu_parallel_async() for built-in ones: launch, then synchronize stream
 * (or, on the legacy stream, the device) / return at once. */
npu_status_t npu_parallel_kernel(npu_function_t function, npu_dim3 grid,
				 npu_dim3 block, unsigned int scratch_bytes,
				 npu_stream_t stream, void **args);
npu_status_t npu_parallel_kernel_async(npu_function_t function,
				       npu_dim3 grid, npu_dim3 block,
				       unsigned int scratch_bytes,
				       npu_stream_t stream, void **args);

/* cuFuncGetAttribute */
typedef enum npu_func_attribute {
	NPU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,	/* device and kernel limit */
	NPU_FUNC_ATTRIBUTE_SCRATCH_SIZE_BYTES = 1,	/* static scratchpad */
	NPU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SCRATCH_SIZE_BYTES = 2,
	NPU_FUNC_ATTRIBUTE_STACK_SIZE_BYTES = 3,	/* per thread */
	NPU_FUNC_ATTRIBUTE_NUM_ARGS = 4,
} npu_func_attribute_t;
npu_status_t npu_func_get_attribute(int *value, npu_func_attribute_t attr,
				    npu_function_t function);

/* Occupancy (cudaOccupancyMaxActiveBlocksPerMultiprocessor): how many
 * blocks of block_threads threads and dyn_scratch bytes of dynamic
 * scratchpad fit on one compute unit at once, by the device's rule: a
 * block needs its threads' slots (prop.unit_threads per unit) and its
 * scratchpad (prop.unit_scratch_bytes per unit). Occupancy is then
 * blocks * block_threads / prop.unit_threads. */
npu_status_t npu_occupancy_max_active_blocks_per_unit(int *blocks,
						      npu_function_t function,
						      int block_threads,
						      size_t dyn_scratch);

/* The block size with the most resident threads per unit, the largest on
 * a tie (cudaOccupancyMaxPotentialBlockSize), at most block_limit threads
 * (0: no limit), and the grid that fills every unit with such blocks. */
npu_status_t npu_occupancy_max_potential_block_size(int *min_grid,
						    int *block_threads,
						    npu_function_t function,
						    size_t dyn_scratch,
						    int block_limit);

/* ========================================================================
 * Graphs (cudaGraph*). Documentation/lib/graphs.rst is the guide.
 *
 * A graph is a set of nodes (kernel, copy, memset, host function, event
 * record, event wait, empty) with dependency edges. It is built explicitly
 * (npu_graph_add_*_node) or captured from streams (npu_stream_begin_capture
 * .. npu_stream_end_capture), then instantiated into an executable graph
 * that is launched on a stream as a whole:
 *  - one DRM_IOCTL_NPU_SUBMIT carries every job of the launch (the uAPI's
 *    job array); each device node is one job on a queue of a compute or
 *    copy ring chosen at instantiation (independent branches go to
 *    different rings, so they run concurrently); an edge between nodes on
 *    different queues is a timeline-syncobj point waited for by the later
 *    job of the same array, an edge on one queue is queue order: no host
 *    round trip. A launch with more nodes than the driver takes jobs per
 *    SUBMIT (DRM_NPU_PARAM_MAX_JOBS, 64) packs each queue's nodes into a
 *    few jobs and carries the edges across rings by device semaphores
 *    (SEM_SIGNAL / SEM_WAIT packets), still in one ioctl;
 *  - host-function nodes run on a library thread when their dependencies
 *    are complete; the nodes that depend on one are submitted after it
 *    returned (one more DRM_IOCTL_NPU_SUBMIT per host node that has device
 *    successors, as host work needs the host);
 *  - the launch is ordered in its stream like one operation (after earlier
 *    work of the stream, before later work; legacy-stream rules apply).
 * Handles are not thread-safe against concurrent modification of the same
 * graph (as CUDA); different graphs may be used from different threads.
 * Graph memory operands must be device memory (npu_malloc) or pinned host
 * memory (npu_host_alloc / npu_host_register): a graph cannot hold a
 * pageable copy, which needs the host at run time
 * (NPU_ERROR_INVALID_VALUE when added, NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED
 * when captured).
 */
typedef struct npu_graph *npu_graph_t;			/* cudaGraph_t */
typedef struct npu_graph_node *npu_graph_node_t;	/* cudaGraphNode_t */
typedef struct npu_graph_exec *npu_graph_exec_t;	/* cudaGraphExec_t */

typedef enum npu_graph_node_type {			/* cudaGraphNodeType */
	NPU_GRAPH_NODE_KERNEL = 0,
	NPU_GRAPH_NODE_MEMCPY = 1,
	NPU_GRAPH_NODE_MEMSET = 2,
	NPU_GRAPH_NODE_HOST = 3,
	NPU_GRAPH_NODE_EMPTY = 4,
	NPU_GRAPH_NODE_EVENT_RECORD = 5,
	NPU_GRAPH_NODE_EVENT_WAIT = 6,
} npu_graph_node_type_t;

/* Parameters of a kernel node (cudaKernelNodeParams): a built-in kernel as
 * npu_launch() (function NULL), or a user kernel as npu_launch_kernel()
 * (function set, kernel ignored), whose argument values are held in the
 * low bytes of args[i]: fill such params with
 * npu_kernel_node_params_init(). Each graph launch gives its user-kernel
 * nodes their own printf buffers: their output is written to stdout when a
 * synchronize or a query sees that launch complete, in stream order with
 * the stream's other launches. While the profiler runs, each node of each
 * launch is profiled as a launch of its kernel. */
typedef struct npu_kernel_node_params {
	npu_kernel_t kernel;
	npu_dim3 grid;
	unsigned int nargs;
	uint64_t args[NPU_MAX_KERNEL_ARGS];
	npu_function_t function;	/* user kernel, or NULL */
	npu_dim3 block;			/* user kernel: threads per block */
	unsigned int scratch_bytes;	/* user kernel: dynamic scratchpad */
} npu_kernel_node_params;

/* Params of a user-kernel node, checked and packed as npu_launch_kernel()
 * would (same errors). */
npu_status_t npu_kernel_node_params_init(npu_kernel_node_params *params,
					 npu_function_t function,
					 npu_dim3 grid, npu_dim3 block,
					 unsigned int scratch_bytes,
					 void **args);

/* Create an empty graph on the current device (cudaGraphCreate); flags
 * must be 0. */
npu_status_t npu_graph_create(npu_graph_t *graph, unsigned int flags);

/* Destroy a graph and its nodes (cudaGraphDestroy). Executable graphs
 * instantiated from it stay valid (as CUDA). */
npu_status_t npu_graph_destroy(npu_graph_t graph);

/* Add a node that depends on deps[0..ndeps) (nodes of the same graph; a
 * node may be listed once). *node receives the new node. All return
 * NPU_ERROR_INVALID_VALUE for bad arguments, as the stream calls would.
 *  kernel:  as npu_launch() (cudaGraphAddKernelNode)
 *  memcpy:  count bytes, device or pinned memory on both sides, kind as
 *           npu_memcpy() (cudaGraphAddMemcpyNode1D)
 *  memset:  count bytes of device memory to value (cudaGraphAddMemsetNode,
 *           element size 1)
 *  host:    fn(user) on a library thread (cudaGraphAddHostNode); fn must
 *           not call libnpu
 *  event record / wait: record the event at that point of every launch /
 *           wait for the event's latest record at the time of the launch
 *           (cudaGraphAddEventRecordNode / cudaGraphAddEventWaitNode)
 *  empty:   no work, only orders (cudaGraphAddEmptyNode) */
npu_status_t npu_graph_add_kernel_node(npu_graph_node_t *node, npu_graph_t graph,
				       const npu_graph_node_t *deps, size_t ndeps,
				       const npu_kernel_node_params *params);
npu_status_t npu_graph_add_memcpy_node(npu_graph_node_t *node, npu_graph_t graph,
				       const npu_graph_node_t *deps, size_t ndeps,
				       void *dst, const void *src, size_t count,
				       npu_memcpy_kind_t kind);
npu_status_t npu_graph_add_memset_node(npu_graph_node_t *node, npu_graph_t graph,
				       const npu_graph_node_t *deps, size_t ndeps,
				       void *devptr, int value, size_t count);
npu_status_t npu_graph_add_host_node(npu_graph_node_t *node, npu_graph_t graph,
				     const npu_graph_node_t *deps, size_t ndeps,
				     npu_host_fn_t fn, void *user);
npu_status_t npu_graph_add_event_record_node(npu_graph_node_t *node,
					     npu_graph_t graph,
					     const npu_graph_node_t *deps,
					     size_t ndeps, npu_event_t event);
npu_status_t npu_graph_add_event_wait_node(npu_graph_node_t *node,
					   npu_graph_t graph,
					   const npu_graph_node_t *deps,
					   size_t ndeps, npu_event_t event);
npu_status_t npu_graph_add_empty_node(npu_graph_node_t *node, npu_graph_t graph,
				      const npu_graph_node_t *deps, size_t ndeps);

/* Add edges from[i] -> to[i] (cudaGraphAddDependencies). An edge that
 * would close a cycle is refused (NPU_ERROR_INVALID_VALUE). */
npu_status_t npu_graph_add_dependencies(npu_graph_t graph,
					const npu_graph_node_t *from,
					const npu_graph_node_t *to, size_t n);

/* Nodes of a graph in creation order (cudaGraphGetNodes): with nodes NULL
 * *count receives the number; else up to *count are stored and *count is
 * set to the number stored. */
npu_status_t npu_graph_get_nodes(npu_graph_t graph, npu_graph_node_t *nodes,
				 size_t *count);

/* Type of a node (cudaGraphNodeGetType). */
npu_status_t npu_graph_node_get_type(npu_graph_node_t node,
				     npu_graph_node_type_t *type);

/* Parameters of a kernel node of a graph (cudaGraphKernelNodeGetParams /
 * cudaGraphKernelNodeSetParams): the change affects later instantiations,
 * not existing executable graphs. */
npu_status_t npu_graph_kernel_node_get_params(npu_graph_node_t node,
					      npu_kernel_node_params *params);
npu_status_t npu_graph_kernel_node_set_params(npu_graph_node_t node,
					      const npu_kernel_node_params *params);

/* Instantiate (cudaGraphInstantiate): validates the graph, chooses the
 * queue of every node and reserves command-buffer memory for a few
 * launches in flight; its cost is linear in nodes and edges. flags must
 * be 0. Limits: at most NPU_GRAPH_MAX_NODES nodes (a bound on a graph's
 * memory; CUDA has none), at most 60 dependencies that cross queues per node, at most 60 nodes
 * without successors (join them with an empty node) and 4 GiB of command
 * buffers (NPU_ERROR_NOT_SUPPORTED). Memory operands are resolved here:
 * freeing them before the executable graph is destroyed is an error of
 * the program (as CUDA). */
#define NPU_GRAPH_MAX_NODES	(1u << 20)
npu_status_t npu_graph_instantiate(npu_graph_exec_t *exec, npu_graph_t graph,
				   unsigned int flags);

/* Destroy an executable graph (cudaGraphExecDestroy); launches in flight
 * complete first. */
npu_status_t npu_graph_exec_destroy(npu_graph_exec_t exec);

/* Launch the executable graph on stream (NULL = legacy) (cudaGraphLaunch):
 * returns once its jobs are handed to the driver (in one
 * DRM_IOCTL_NPU_SUBMIT when the graph has no host nodes). The launch runs
 * after the stream's earlier work and before its later work; two launches
 * of one executable graph, on any streams, never overlap each other (as
 * CUDA). Blocks only if earlier work of the stream has not yet been handed
 * to the driver (e.g. it waits for a host function), or if four launches of
 * this executable graph are already in flight. */
npu_status_t npu_graph_launch(npu_graph_exec_t exec, npu_stream_t stream);

/* Change the parameters of a kernel node in an executable graph
 * (cudaGraphExecKernelNodeSetParams): node is the node of the graph exec
 * was instantiated from; the kernel must stay the same (argument values
 * and grid may change). Launches already made are not affected; the next
 * launch uses the new values. */
npu_status_t npu_graph_exec_kernel_node_set_params(npu_graph_exec_t exec,
						   npu_graph_node_t node,
						   const npu_kernel_node_params *params);

/* Stream capture (cudaStreamBeginCapture / cudaStreamEndCapture): while a
 * stream captures, work queued on it (npu_launch, npu_memcpy_async,
 * npu_memset_async, npu_launch_host_func, npu_event_record,
 * npu_stream_wait_event) is not run but added to the capture's graph, with
 * the dependencies stream order implies. Fork/join as CUDA: an event
 * recorded in a capturing stream and waited for by another stream makes
 * that stream join the capture (it captures too, from that point); every
 * such stream must be joined back into the origin stream (by an event it
 * records and the origin waits for) before npu_stream_end_capture, else
 * NPU_ERROR_STREAM_CAPTURE_UNJOINED. Errors, as CUDA:
 *  - capture on the legacy stream: NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED;
 *  - npu_stream_synchronize / npu_stream_query of a capturing stream, a
 *    synchronous copy or memset, npu_device_synchronize while a capture is
 *    active, a pageable copy: NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED, and the
 *    capture is invalidated;
 *  - a launch with NPU_LAUNCH_SYNC_DEVICE on any stream, npu_parallel /
 *    npu_parallel_kernel with a NULL stream and npu_kernel_trace count as
 *    device synchronizes: refused as above before anything runs;
 *  - asynchronous work on the legacy stream while a blocking stream
 *    captures, in every mode (it would wait for the capturing stream),
 *    including npu_graph_launch, npu_stream_wait_value32 and
 *    npu_stream_write_value32 on it and npu_kernel_trace:
 *    NPU_ERROR_STREAM_CAPTURE_IMPLICIT, the capture is invalidated;
 *  - npu_stream_destroy of a capture's origin ends the capture (its graph
 *    is discarded); of a stream forked into a capture, invalidates it;
 *    npu_event_destroy forgets the event's capture-time record;
 *  - later calls on an invalidated capture: NPU_ERROR_STREAM_CAPTURE_
 *    INVALIDATED; npu_stream_end_capture then returns it too, with *graph
 *    NULL, and ends the capture;
 *  - npu_stream_end_capture on a stream that is not the origin of a
 *    capture: NPU_ERROR_STREAM_CAPTURE_UNMATCHED; from another thread in
 *    THREAD_LOCAL mode: NPU_ERROR_STREAM_CAPTURE_WRONG_THREAD.
 * Modes as CUDA's cudaStreamCaptureMode: GLOBAL forbids the unsafe calls
 * above (device synchronize, synchronous copies and launches) in
 * every thread while the capture lasts, THREAD_LOCAL only in the thread
 * that began it, RELAXED nowhere. */
typedef enum npu_stream_capture_mode {
	NPU_STREAM_CAPTURE_MODE_GLOBAL = 0,
	NPU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
	NPU_STREAM_CAPTURE_MODE_RELAXED = 2,
} npu_stream_capture_mode_t;

typedef enum npu_stream_capture_status {
	NPU_STREAM_CAPTURE_STATUS_NONE = 0,
	NPU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
	NPU_STREAM_CAPTURE_STATUS_INVALIDATED = 2,
} npu_stream_capture_status_t;

npu_status_t npu_stream_begin_capture(npu_stream_t stream,
				      npu_stream_capture_mode_t mode);
npu_status_t npu_stream_end_capture(npu_stream_t stream, npu_graph_t *graph);

/* Capture status of a stream (cudaStreamIsCapturing). */
npu_status_t npu_stream_is_capturing(npu_stream_t stream,
				     npu_stream_capture_status_t *status);

/* Library statistics, for tests and tools (no CUDA counterpart). Counts
 * since the process started, all devices. */
typedef struct npu_graph_stats {
	uint64_t launches;		/* npu_graph_launch() calls that succeeded */
	uint64_t submit_ioctls;		/* DRM_IOCTL_NPU_SUBMIT made for them */
	uint64_t jobs;			/* jobs in those ioctls */
} npu_graph_stats;
npu_status_t npu_graph_get_stats(npu_graph_stats *stats);

/* ========================================================================
 * Profiling (CUPTI-like). Documentation/lib/profiling.rst is the guide.
 */

/* Device counters, from DRM_IOCTL_NPU_COUNTERS: monotonically increasing
 * since the device was reset. Rings are numbered compute rings first
 * (0 .. compute_rings-1), then copy rings; they count the commands of
 * kernel-queue streams. Streams on user queues (the default) run on the
 * device's user-queue engines, which
 * uq_engine counts the same way: compute engines first
 * (0 .. uq_compute_engines-1), then copy engines. A user-queue stream's
 * copies and memsets run on its copy-class queue, on a copy engine, and
 * count there (on a compute engine when the device has no copy engines). */
#define NPU_MAX_RINGS		16
#define NPU_MAX_UNITS		64
#define NPU_MAX_UQ_ENGINES	32
typedef struct npu_ring_counters {
	uint64_t busy_ns;		/* time spent executing commands */
	uint64_t commands;		/* commands (packets) completed */
	uint64_t bytes;			/* bytes moved or touched */
	uint64_t ops;			/* arithmetic operations */
} npu_ring_counters;

typedef struct npu_device_counters {
	uint32_t compute_rings, copy_rings;
	uint32_t compute_units;
	uint32_t reserved;
	uint64_t clock;			/* device clock when read */
	npu_ring_counters ring[NPU_MAX_RINGS];
	uint64_t cu_busy_ns[NPU_MAX_UNITS];
	uint32_t uq_compute_engines, uq_copy_engines;	/* 0 without user queues */
	npu_ring_counters uq_engine[NPU_MAX_UQ_ENGINES];
} npu_device_counters;

/* Read the counters of the current device (no CUDA runtime counterpart;
 * CUPTI's counters). NPU_ERROR_NOT_SUPPORTED without
 * NPU_FEATURE_COUNTERS. The struct grew the user-queue engines in 0.x:
 * as CUDA does for cudaGetDeviceProperties_v2, programs built with this
 * header call npu_device_get_counters_v2, and programs built before it
 * keep the old symbol, which fills only the fields they know. */
npu_status_t npu_device_get_counters_v2(npu_device_counters *counters);
#define npu_device_get_counters npu_device_get_counters_v2

/* Start / stop the command trace (cudaProfilerStart / cudaProfilerStop
 * with a CUPTI activity buffer). While on, every kernel, copy and memset
 * command the library builds (on streams and in graph launches) is
 * bracketed by two TIMESTAMP packets that write the device clock into a
 * pinned trace buffer; the library keeps the metadata (device, ring,
 * stream, kind, kernel, grid, bytes, ops). When off the cost is one
 * relaxed atomic load per command. The buffer holds NPU_TRACE_CAPACITY
 * commands; later ones are counted as dropped. npu_profiler_start also
 * snapshots the counters for npu_profile_report and clears the previous
 * trace. With NPU_TRACE=<file> in the environment, tracing starts at the
 * first device use and the JSON is written to <file> at exit (not by a
 * forked child's exit, nor by exit() inside a host function). */
#define NPU_TRACE_CAPACITY	65536
npu_status_t npu_profiler_start(void);
npu_status_t npu_profiler_stop(void);

/* One traced command, times in device clock ticks (prop.clock_hz). */
typedef enum npu_trace_kind {
	NPU_TRACE_KERNEL = 0,
	NPU_TRACE_COPY = 1,
	NPU_TRACE_FILL = 2,
} npu_trace_kind_t;

typedef struct npu_trace_record {
	int device;
	uint32_t ring;			/* global ring index (see counters) */
	npu_trace_kind_t kind;
	npu_kernel_t kernel;		/* kernels */
	npu_dim3 grid;			/* kernels */
	uint64_t stream_id;		/* 0 legacy, 1.. in creation order;
					   graph launches: their stream */
	uint32_t graph;			/* 1 if from a graph launch */
	uint32_t reserved;
	uint64_t bytes;			/* copies and fills: bytes;
					   kernels: modelled bytes touched */
	uint64_t ops;			/* kernels: operations */
	uint64_t start, end;		/* device clock ticks */
	char name[32];			/* kernels: the kernel's name */
	npu_dim3 block;			/* user kernels: threads per block */
} npu_trace_record;
/* npu_trace_record.kernel of a user kernel (npu_launch_kernel) */
#define NPU_TRACE_USER_KERNEL	((npu_kernel_t)0xffff)

/* Copy the completed records of the current trace (waits for the device)
 * in issue order: *count in = capacity of records (records may be NULL to
 * ask for the number), out = number stored / available. */
npu_status_t npu_trace_get_records(npu_trace_record *records, size_t *count);

/* Write the trace as Chrome trace-event JSON (opens in ui.perfetto.dev
 * and chrome://tracing; tools/npu-timeline renders it): one process per
 * device, one thread lane per ring ("compute ring 0", "copy ring 1") and
 * one per stream ("stream 3"), each command as an "X" event (ts/dur in
 * microseconds of device time) in its ring's and its stream's lane, with
 * args {kernel, grid, bytes, ops, stream, ring}. Waits for the device. */
npu_status_t npu_trace_write_json(const char *path);

/* Print the profile since npu_profiler_start to f: per ring busy time and
 * utilization, compute units busy (mean modelled busy fraction of the
 * units), a host-bound notice when user kernels took longer than their
 * modelled time (timing=on on a host slower than the model), and per kernel (name and grid) calls, device time, ops, bytes,
 * arithmetic intensity and the roofline verdict: "compute-bound" when
 * ops/bytes exceeds the device's ridge point (cu_mops * units used /
 * mem_bw), else "memory-bound". */
npu_status_t npu_profile_report(FILE *f);

/* Profiles of user kernels (npu_launch_kernel, and kernel nodes of graph
 * launches) launched while the profiler runs, one per kernel, its launches
 * summed. The device counts every
 * thread-cycle of a resident thread under one stall reason, named as
 * Nsight Compute names them (npu_profile_stall_name(): selected,
 * not_selected, wait, short_scoreboard, long_scoreboard,
 * math_pipe_throttle, lg_throttle, barrier, branch_resolving), and samples
 * every resident thread's PC (every 997 unit cycles at first, then at the
 * period that spreads a launch's samples over the whole launch);
 * npu_profile_report() prints the hot spots by source line (DWARF of code
 * objects built with npu-cc -g). Documentation/lib/profiling.rst explains each figure. */
#define NPU_PROFILE_STALLS	9
#define NPU_PROFILE_SPACES	4	/* scratchpad, stack, device, host */
typedef struct npu_kernel_profile {
	char name[64];
	char module[128];
	uint64_t launches;
	double time_ms;			/* device time, first block to last */
	uint64_t blocks;
	uint64_t cycles;		/* unit cycles, first start to last end */
	uint64_t instructions;		/* retired by all threads */
	uint64_t thread_cycles;		/* resident thread-slot cycles */
	uint64_t unit_cycles;		/* unit cycles holding a block of it */
	uint64_t stall[NPU_PROFILE_STALLS];	/* thread-cycles by reason */
	uint64_t bytes_read[NPU_PROFILE_SPACES];
	uint64_t bytes_written[NPU_PROFILE_SPACES];
	uint64_t samples;		/* PC samples taken */
	uint64_t sample_stall[NPU_PROFILE_STALLS];	/* ... by reason */
	uint64_t samples_lost;		/* trace buffer full */
	double ipc;			/* instructions / unit_cycles */
	double achieved_occupancy;	/* thread_cycles / (unit_cycles *
					   unit_threads) */
	double theoretical_occupancy;	/* the occupancy calculator's, mean
					   over launches */
	int memory_bound;		/* long_scoreboard + lg_throttle exceed
					   selected + not_selected + wait +
					   math_pipe_throttle; for kernels
					   using the tensor engine, the
					   roofline's verdict
					   (npu_kernel_roofline_profile) */
} npu_kernel_profile;

/* Run one launch of function (as npu_launch_kernel, on the legacy stream,
 * then synchronize the device) with the instruction trace of block
 * trace_block (linear index), and write the trace to json_path as a
 * Chrome/Perfetto timeline: one lane per unit and thread, one event per
 * instruction from its issue to the thread's next issue (ts in
 * microseconds of unit cycles), named by its source line (npu-cc -g) or
 * kernel+offset, with its PC, instruction word and memory address. The
 * device keeps the first 65,536 instructions; *instructions (if not NULL)
 * gets how many were written, *lost how many did not fit.
 * tools/npu-timeline draws the file. */
npu_status_t npu_kernel_trace(npu_function_t function, npu_dim3 grid,
			      npu_dim3 block, unsigned int scratch_bytes,
			      void **args, unsigned int trace_block,
			      const char *json_path, uint64_t *instructions,
			      uint64_t *lost);

/* Fill out[0..*count) and set *count to the number of profiles (out may be
 * NULL to ask for the number). */
npu_status_t npu_profile_get_kernels(npu_kernel_profile *out, size_t *count);
const char *npu_profile_stall_name(unsigned int reason);

/* The tensor engine's side of the same profiles (devices with the tensor
 * engine, Documentation/hw/npu.rst "Tensor engine and tile DMA"): the
 * profiler asks every profiled launch for the device's tensor counters
 * and places each kernel on the roofline. The two ceilings come from the
 * device: peak MMA rate = 4096 MAC per TMMA / its tensor-pipe cycles
 * (NPU_MMA_CYCLES, the ISA's) x 2 x unit_clock_mhz x the units the
 * launches used (min(blocks per launch, compute_units)), at the kernel's
 * mix of MMA types (the f32 ceiling for a kernel with no MMA); memory
 * ceiling = mem_bw_mbps. Times are modelled (unit cycles at the unit
 * clock), as the counters are. */
#define NPU_PROFILE_MMA_TYPES	5	/* f16, bf16, f32, s8, s32 */
typedef struct npu_kernel_roofline_profile {
	char name[64];
	char module[128];
	uint64_t launches;
	uint64_t mma[NPU_PROFILE_MMA_TYPES];	/* TMMA instructions by type */
	uint64_t tensor_cycles;		/* units' tensor pipe busy cycles */
	uint64_t stall_mio_throttle;	/* thread-cycles: tile port busy or
					   every DMA slot in use (Nsight
					   Compute's mio_throttle) */
	uint64_t tdma_copies;		/* tile DMA copies issued */
	uint64_t tdma_bytes_read;	/* memory -> scratchpad */
	uint64_t tdma_bytes_written;	/* scratchpad -> memory */
	uint64_t flops;			/* 2 x MAC of its MMAs */
	uint64_t memory_bytes;		/* device and host memory: the
					   threads' loads and stores and
					   the tile DMA's (less what the
					   device's L2 served) */
	double modelled_ms;		/* unit cycles at the unit clock */
	double tensor_utilization;	/* tensor_cycles / unit_cycles */
	double dma_gbps;		/* tile DMA bytes / modelled time */
	double arithmetic_intensity;	/* flops / memory_bytes (FLOP/B) */
	double achieved_gflops;		/* flops / modelled time */
	double peak_gflops;		/* compute ceiling (see above) */
	double peak_gbps;		/* memory ceiling, GB/s */
	double ridge;			/* peak_gflops / peak_gbps, FLOP/B */
	double peak_fraction;		/* achieved_gflops / peak_gflops */
	int compute_bound;		/* arithmetic_intensity >= ridge */
} npu_kernel_roofline_profile;

/* Fill out[0..*count) with the roofline profiles of the kernels that
 * npu_profile_get_kernels() returns, in the same order, and set *count to
 * their number (out may be NULL to ask for it). */
npu_status_t npu_profile_get_roofline(npu_kernel_roofline_profile *out,
				      size_t *count);

/* The verdict alone, for a kernel with these arguments and grid:
 * *compute_bound is 1 or 0; ops and bytes (may be NULL) receive the
 * modelled counts. */
npu_status_t npu_kernel_roofline(const npu_kernel_node_params *params,
				 int *compute_bound, uint64_t *ops,
				 uint64_t *bytes);

/* ========================================================================
 * Auto-tuning. Documentation/lib/tuning.rst is the guide.
 *
 * npu_tune() measures N candidate configurations of one piece of work and
 * reports, per candidate, device-timed statistics and, per mode, the
 * fastest candidate. No CUDA runtime counterpart (the role of Triton's
 * autotuner or cuBLASLt's heuristics + timing loop).
 *
 * A candidate is whatever the caller's enqueue function puts on the
 * streams it is given (a kernel with a grid, a split into several
 * launches, over several streams, with copies...), or, for the common
 * case, one kernel launch described by an npu_kernel_node_params. Each
 * run of a candidate is bracketed by two timing events on streams[0], so
 * its time is elapsed *device* time (npu_event_elapsed_time), never the
 * host clock: from the moment the stream reached the run to the moment
 * all of the run's work, on all of its streams, had completed. With
 * nstreams > 1 the tuner forks the extra streams from streams[0] before
 * the enqueue function and joins them back after it (events), so the
 * function only enqueues.
 *
 * Modes:
 *  NPU_TUNE_ISOLATED    one candidate at a time on a device that has no
 *                       other work of this process: npu_tune() first waits
 *                       for the device (npu_device_synchronize), then runs
 *                       warmup + runs runs of each candidate in turn.
 *  NPU_TUNE_UNDER_LOAD  candidates measured while other work competes for
 *                       the device's rings and compute units:
 *                       `concurrency` candidates are evaluated at the same
 *                       time, each on its own streams (so each one's load
 *                       is the others), and, if `load` is set, the
 *                       caller's background load runs on `load_streams`
 *                       further streams, started before the first run
 *                       and kept queued (two instances per load stream)
 *                       until the last timed run has completed. While
 *                       timed work remains, a set of streams whose own
 *                       candidates are done keeps running (untimed) runs
 *                       of other candidates, so the load does not thin
 *                       out towards the end.
 * The same candidate set can be measured in both modes in one call.
 *
 * Failures are per candidate: a candidate whose enqueue function fails
 * (e.g. NPU_ERROR_INVALID_CONFIGURATION for a bad grid), or whose work
 * faults on the device (NPU_ERROR_ILLEGAL_ADDRESS, NPU_ERROR_LAUNCH_
 * TIMEOUT...), is reported with that status and message, gets no times,
 * is not run again (nor in the other mode), and tuning goes on. A device
 * fault is, as always, a sticky error (see top): npu_tune() waits until
 * its streams are idle, attributes the fault to the candidate whose
 * streams ran the failed job, and clears the sticky errors its own work
 * caused -- only if every job that failed since npu_tune() started ran on
 * a tuner's stream and no other stream has a sticky error. Until then (a few milliseconds) other threads that
 * submit work see the sticky error, as they would after any fault. A
 * fault of any other work of the process is not cleared: npu_tune()
 * stops and returns it, like every call that submits work.
 *
 * Runtime notes: the enqueue and load functions run on the calling
 * thread, and must enqueue only (no synchronisation of the given
 * streams), on the given streams only (work they fork to other streams is
 * neither timed nor attributed). npu_tune() is thread-safe; concurrent
 * calls (or other work of the process) share the device, so they load
 * each other's measurements. Stream capture: not capturable; while a
 * capture forbids npu_device_synchronize() (GLOBAL anywhere, THREAD_LOCAL
 * in the capturing thread) npu_tune() fails the same way. Under the timing model (NPU_FEATURE_TIMING_
 * MODEL) a command's device time is at least its modelled duration; where
 * the host needs longer to compute a kernel (big kernels at the default
 * figures), the host's speed shows in the times: see tuning.rst.
 */
#define NPU_TUNE_MAX_CANDIDATES	1024
#define NPU_TUNE_MAX_RUNS	1000	/* runs, and warmup runs, per mode */
#define NPU_TUNE_MAX_STREAMS	16	/* streams per candidate, concurrency,
					   load streams */

typedef enum npu_tune_mode {
	NPU_TUNE_MODE_ISOLATED = 0,
	NPU_TUNE_MODE_UNDER_LOAD = 1,
} npu_tune_mode_t;
#define NPU_TUNE_MODES		2

/* npu_tune_config.modes */
#define NPU_TUNE_ISOLATED	(1u << NPU_TUNE_MODE_ISOLATED)
#define NPU_TUNE_UNDER_LOAD	(1u << NPU_TUNE_MODE_UNDER_LOAD)

/* Enqueue candidate (or load instance) `index` on streams[0..nstreams);
 * return NPU_SUCCESS or the status of the call that failed. */
typedef npu_status_t (*npu_tune_enqueue_fn)(unsigned int index,
					    const npu_stream_t *streams,
					    unsigned int nstreams, void *user);

typedef struct npu_tune_config {
	unsigned int candidates;	/* N: 1 .. NPU_TUNE_MAX_CANDIDATES */
	/* exactly one of: */
	npu_tune_enqueue_fn enqueue;	/* candidate i = enqueue(i, ...) */
	const npu_kernel_node_params *kernels; /* candidate i = npu_launch (or,
					   with a function, npu_launch_kernel) of
					   kernels[i] on streams[0] */
	void *user;			/* passed to enqueue */
	unsigned int modes;		/* NPU_TUNE_ISOLATED | NPU_TUNE_UNDER_LOAD;
					   0 = both */
	unsigned int runs;		/* timed runs per candidate and mode;
					   0 = 10 */
	unsigned int warmup;		/* untimed runs before them (as given;
					   1 is a good choice) */
	unsigned int streams;		/* nstreams given to enqueue; 0 = 1 */
	unsigned int concurrency;	/* under load: sets of streams that run
					   candidates at once; 0 = min(N,
					   compute rings). A set with nothing
					   (left) to measure runs untimed runs
					   of the other candidates */
	npu_tune_enqueue_fn load;	/* under load: background work, one
					   instance = load(j, &load_stream_j, 1,
					   load_user); NULL = none */
	void *load_user;
	unsigned int load_streams;	/* 0 = 1 if load is set */
	unsigned int flags;		/* must be 0 */
} npu_tune_config;

/* Statistics of one candidate in one mode, in milliseconds of device
 * time. status: NPU_SUCCESS; the candidate's error; or
 * NPU_ERROR_NOT_READY if the mode was not requested or tuning stopped
 * before the candidate's runs were complete (runs then says how many
 * were). */
typedef struct npu_tune_stats {
	npu_status_t status;
	unsigned int runs;		/* timed runs measured */
	float min_ms, median_ms, mean_ms, max_ms;
} npu_tune_stats;

typedef struct npu_tune_result {
	npu_tune_stats mode[NPU_TUNE_MODES];	/* [NPU_TUNE_MODE_*] */
	char message[256];		/* why it failed (the message
					   npu_last_error_message() gave: fault
					   address, kernel, ring), else "" */
} npu_tune_result;

/* Tune: fill results[0..config->candidates) and, if best (an array of
 * NPU_TUNE_MODES ints) is not NULL, best[mode] = the index of the candidate with the lowest median time in
 * that mode among those that succeeded (lowest index on a tie), -1 if
 * none did or the mode was not requested.
 * Returns NPU_SUCCESS when tuning ran to the end, also if candidates
 * failed (see their status). Errors, with nothing run and results
 * untouched: NPU_ERROR_INVALID_VALUE for NULL config or results, 0 or more
 * than NPU_TUNE_MAX_CANDIDATES candidates, neither or both of enqueue and
 * kernels, unknown modes or flags, runs or warmup above
 * NPU_TUNE_MAX_RUNS, streams / concurrency / load_streams above
 * NPU_TUNE_MAX_STREAMS, load_streams without load, or NPU_TUNE_UNDER_LOAD
 * with no load at all (no load function and concurrency 1); the device's
 * sticky error if it has one on entry; what npu_device_synchronize()
 * returns. Errors after tuning started (results filled as far as it got):
 * a fault of work that is not the tuner's (its sticky error, left set);
 * a failure of the load (its status; the load's own device fault is
 * cleared); NPU_ERROR_OUT_OF_MEMORY / NPU_ERROR_OS. On NPU_SUCCESS the
 * calling thread's last error is what it was before the call. */
npu_status_t npu_tune(const npu_tune_config *config, npu_tune_result *results,
		      int *best);

/* Tuning over a parameter space. Each point of the space (one value per
 * parameter, the points that valid() accepts) is the kernel built from
 * one source with -D<name>=<value> per parameter by npu-cc --cache (built
 * on demand, cached by content in cache_dir), launched by launch() and
 * measured with npu_tune in batches of up to batch candidates at once, in
 * isolation (one after the other) or under each other's load. Strategies:
 * exhaustive (every point), random sampling and Bayesian optimisation (a
 * Gaussian-process surrogate of log time with expected improvement, as
 * Kernel Tuner's bayes_opt; GSL's linear algebra), the last two within
 * budget evaluations. */
#define NPU_TUNE_SPACE_MAX_PARAMS	8

typedef enum npu_tune_strategy {
	NPU_TUNE_EXHAUSTIVE = 0,
	NPU_TUNE_RANDOM = 1,
	NPU_TUNE_BAYES = 2,
} npu_tune_strategy_t;

typedef struct npu_tune_param {
	const char *name;		/* the macro npu-cc defines */
	unsigned int nvalues;
	const long *values;
} npu_tune_param;

typedef struct npu_tune_space_config {
	const char *source;		/* the kernel's C file */
	const char *kernel;		/* its kernel name */
	const npu_tune_param *params;
	unsigned int nparams;		/* 1 .. NPU_TUNE_SPACE_MAX_PARAMS */
	/* 1 if the point (one value per parameter) is allowed; NULL: all */
	int (*valid)(const long *values, void *user);
	/* queue one run of the point's kernel on stream */
	npu_status_t (*launch)(npu_function_t function, const long *values,
			       npu_stream_t stream, void *user);
	void *user;
	npu_tune_strategy_t strategy;
	unsigned int budget;		/* evaluations, random and Bayes; 0 = all */
	unsigned int batch;		/* candidates per iteration; 0 = 4 */
	unsigned int runs;		/* timed runs per candidate; 0 = 3 */
	unsigned int mode;		/* NPU_TUNE_MODE_ISOLATED / _UNDER_LOAD */
	unsigned int seed;		/* random and Bayes; 0 = 1 */
	const char *cache_dir;		/* NULL: $NPU_TUNE_CACHE, else
					   ./npu-tune-cache */
	const char *npu_cc;		/* NULL: $NPU_CC, else npu-cc in PATH */
	unsigned int flags;		/* must be 0 */
} npu_tune_space_config;

typedef struct npu_tune_space_result {
	long best[NPU_TUNE_SPACE_MAX_PARAMS];	/* the best point's values */
	float best_ms;			/* its median device time, measured
					   again with >= 3 runs */
	unsigned int points;		/* valid points in the space */
	unsigned int evaluations;	/* points measured (or failed) */
	unsigned int evaluations_to_best; /* evaluations until the best */
	unsigned int failed;		/* points that did not build or run */
} npu_tune_space_result;

/* Search; times (if not NULL, result->points floats) gets each valid
 * point's median in enumeration order (first parameter fastest), NAN if
 * not measured. Errors: NPU_ERROR_INVALID_VALUE (config), no valid point,
 * NPU_ERROR_FILE_NOT_FOUND (source), NPU_ERROR_LAUNCH_FAILURE if no point
 * could be measured, and npu_tune's errors. Points that fail to build or
 * run are counted in failed and skipped. */
npu_status_t npu_tune_space(const npu_tune_space_config *config,
			    npu_tune_space_result *result, float *times);

#ifdef __cplusplus
}
#endif

#endif /* NPU_H */
