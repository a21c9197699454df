/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * npu_accel.h - user-space interface of the npu DRM accelerator driver.
 *
 * Rules (Documentation/process/botching-up-ioctls.rst): every struct is
 * 64-bit aligned with explicit padding; pointers are __u64; unknown flags and
 * non-zero padding are rejected with -EINVAL; timeouts are absolute
 * CLOCK_MONOTONIC nanoseconds; arrays carry their element size so that the
 * structs can grow. Documentation/uapi/npu_accel.rst describes every ioctl.
 */
#ifndef _UAPI_DRM_NPU_ACCEL_H
#define _UAPI_DRM_NPU_ACCEL_H

#include "drm.h"

#if defined(__cplusplus)
extern "C" {
#endif

#define DRM_NPU_GET_PARAM	0x00
#define DRM_NPU_BO_CREATE	0x01
#define DRM_NPU_BO_INFO		0x02
#define DRM_NPU_USERPTR		0x03
#define DRM_NPU_QUEUE_CREATE	0x04
#define DRM_NPU_QUEUE_DESTROY	0x05
#define DRM_NPU_SUBMIT		0x06
#define DRM_NPU_BO_WAIT		0x07
#define DRM_NPU_GET_FAULT	0x08
#define DRM_NPU_COUNTERS	0x09
#define DRM_NPU_CTX_CREATE	0x0a
#define DRM_NPU_CTX_DESTROY	0x0b
#define DRM_NPU_BO_MAP		0x0c
#define DRM_NPU_BO_UNMAP	0x0d
#define DRM_NPU_BO_PROTECT	0x0e
#define DRM_NPU_USERQ_CREATE	0x0f
#define DRM_NPU_USERQ_DESTROY	0x10
#define DRM_NPU_USERQ_QUERY	0x11
#define DRM_NPU_USERQ_WAIT_MEM	0x12
#define DRM_NPU_USERQ_SIGNAL	0x13
#define DRM_NPU_USERQ_WAIT	0x14

#define DRM_IOCTL_NPU_GET_PARAM \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_GET_PARAM, struct drm_npu_get_param)
#define DRM_IOCTL_NPU_BO_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_BO_CREATE, struct drm_npu_bo_create)
#define DRM_IOCTL_NPU_BO_INFO \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_BO_INFO, struct drm_npu_bo_info)
#define DRM_IOCTL_NPU_USERPTR \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_USERPTR, struct drm_npu_userptr)
#define DRM_IOCTL_NPU_QUEUE_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_QUEUE_CREATE, \
		 struct drm_npu_queue_create)
#define DRM_IOCTL_NPU_QUEUE_DESTROY \
	DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_QUEUE_DESTROY, \
		struct drm_npu_queue_destroy)
#define DRM_IOCTL_NPU_SUBMIT \
	DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_SUBMIT, struct drm_npu_submit)
#define DRM_IOCTL_NPU_BO_WAIT \
	DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_BO_WAIT, struct drm_npu_bo_wait)
#define DRM_IOCTL_NPU_GET_FAULT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_GET_FAULT, struct drm_npu_get_fault)
#define DRM_IOCTL_NPU_COUNTERS \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_COUNTERS, struct drm_npu_counters)
#define DRM_IOCTL_NPU_CTX_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_CTX_CREATE, struct drm_npu_ctx_create)
#define DRM_IOCTL_NPU_CTX_DESTROY \
	DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_CTX_DESTROY, \
		struct drm_npu_ctx_destroy)
#define DRM_IOCTL_NPU_BO_MAP \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_BO_MAP, struct drm_npu_bo_map)
#define DRM_IOCTL_NPU_BO_UNMAP \
	DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_BO_UNMAP, struct drm_npu_bo_unmap)
#define DRM_IOCTL_NPU_BO_PROTECT \
	DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_BO_PROTECT, struct drm_npu_bo_protect)
#define DRM_IOCTL_NPU_USERQ_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_USERQ_CREATE, \
		 struct drm_npu_userq_create)
#define DRM_IOCTL_NPU_USERQ_DESTROY \
	DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_USERQ_DESTROY, \
		struct drm_npu_userq_destroy)
#define DRM_IOCTL_NPU_USERQ_QUERY \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_USERQ_QUERY, \
		 struct drm_npu_userq_query)
#define DRM_IOCTL_NPU_USERQ_WAIT_MEM \
	DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_USERQ_WAIT_MEM, \
		struct drm_npu_userq_wait_mem)
#define DRM_IOCTL_NPU_USERQ_SIGNAL \
	DRM_IOW(DRM_COMMAND_BASE + DRM_NPU_USERQ_SIGNAL, \
		struct drm_npu_userq_signal)
#define DRM_IOCTL_NPU_USERQ_WAIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_NPU_USERQ_WAIT, \
		 struct drm_npu_userq_wait)

/**
 * enum drm_npu_param - what DRM_IOCTL_NPU_GET_PARAM can read
 * @DRM_NPU_PARAM_DEVICE_ID: PCI vendor << 16 | device id
 * @DRM_NPU_PARAM_REVISION: hardware version register
 * @DRM_NPU_PARAM_NUM_COMPUTE_RINGS: compute rings
 * @DRM_NPU_PARAM_NUM_COPY_RINGS: copy rings
 * @DRM_NPU_PARAM_NUM_CUS: compute units shared by the compute rings
 * @DRM_NPU_PARAM_DEVMEM_SIZE: bytes of device-local memory
 * @DRM_NPU_PARAM_CLOCK_HZ: rate of the device clock used in timestamps
 * @DRM_NPU_PARAM_CLOCK: current device clock value
 * @DRM_NPU_PARAM_FEATURES: bitmask of DRM_NPU_FEATURE_*
 * @DRM_NPU_PARAM_LINK_BW_MBPS: modelled host link bandwidth, MB/s
 * @DRM_NPU_PARAM_MEM_BW_MBPS: modelled device memory bandwidth, MB/s
 * @DRM_NPU_PARAM_CU_MOPS: modelled compute rate of one unit, M ops/s
 * @DRM_NPU_PARAM_LAUNCH_NS: modelled kernel launch latency, ns
 * @DRM_NPU_PARAM_COPY_NS: modelled copy setup latency, ns
 * @DRM_NPU_PARAM_VA_SIZE: size of a context's device virtual address space
 * @DRM_NPU_PARAM_MAX_JOBS: most jobs in one DRM_IOCTL_NPU_SUBMIT
 * @DRM_NPU_PARAM_MAX_CMD_SIZE: largest command buffer of one job, bytes
 * @DRM_NPU_PARAM_JOB_TIMEOUT_MS: the driver's job timeout
 * @DRM_NPU_PARAM_MAX_JOB_BOS: most entries in &drm_npu_job.bo_handles
 * @DRM_NPU_PARAM_MAX_JOB_SYNCS: most entries in &drm_npu_job.in_syncs, and
 *	in &drm_npu_job.out_syncs
 * @DRM_NPU_PARAM_MAX_QUEUES: most queues one file can have at a time
 * @DRM_NPU_PARAM_VA_START: lowest device virtual address the kernel hands
 *	out (VAs below it are never mapped, so a NULL pointer faults)
 * @DRM_NPU_PARAM_MAX_CONTEXTS: most extra contexts (DRM_IOCTL_NPU_CTX_CREATE)
 *	one file can have at a time, besides its default context
 * @DRM_NPU_PARAM_CU_THREADS: hardware thread slots of one compute unit
 *	(with DRM_NPU_FEATURE_USER_CODE, else 0)
 * @DRM_NPU_PARAM_CU_SCRATCH_BYTES: scratchpad bytes of one compute unit
 * @DRM_NPU_PARAM_CU_CLOCK_MHZ: compute unit clock, MHz
 * @DRM_NPU_PARAM_USERQ_MAX: most user queues one file can have at a time
 *	(DRM_IOCTL_NPU_USERQ_CREATE; at most 512, the doorbells of one page)
 * @DRM_NPU_PARAM_USERQ_ENGINES: user-queue engines: compute [7:0], copy
 *	[15:8]
 * @DRM_NPU_PARAM_USERQ_RING_MAX: largest user-queue ring, bytes (the
 *	smallest is 4096)
 */
enum drm_npu_param {
	DRM_NPU_PARAM_DEVICE_ID = 0,
	DRM_NPU_PARAM_REVISION = 1,
	DRM_NPU_PARAM_NUM_COMPUTE_RINGS = 2,
	DRM_NPU_PARAM_NUM_COPY_RINGS = 3,
	DRM_NPU_PARAM_NUM_CUS = 4,
	DRM_NPU_PARAM_DEVMEM_SIZE = 5,
	DRM_NPU_PARAM_CLOCK_HZ = 6,
	DRM_NPU_PARAM_CLOCK = 7,
	DRM_NPU_PARAM_FEATURES = 8,
	DRM_NPU_PARAM_LINK_BW_MBPS = 9,
	DRM_NPU_PARAM_MEM_BW_MBPS = 10,
	DRM_NPU_PARAM_CU_MOPS = 11,
	DRM_NPU_PARAM_LAUNCH_NS = 12,
	DRM_NPU_PARAM_COPY_NS = 13,
	DRM_NPU_PARAM_VA_SIZE = 14,
	DRM_NPU_PARAM_MAX_JOBS = 15,
	DRM_NPU_PARAM_MAX_CMD_SIZE = 16,
	DRM_NPU_PARAM_JOB_TIMEOUT_MS = 17,
	DRM_NPU_PARAM_MAX_JOB_BOS = 18,
	DRM_NPU_PARAM_MAX_JOB_SYNCS = 19,
	DRM_NPU_PARAM_MAX_QUEUES = 20,
	DRM_NPU_PARAM_VA_START = 21,
	DRM_NPU_PARAM_MAX_CONTEXTS = 22,
	DRM_NPU_PARAM_CU_THREADS = 23,
	DRM_NPU_PARAM_CU_SCRATCH_BYTES = 24,
	DRM_NPU_PARAM_CU_CLOCK_MHZ = 25,
	DRM_NPU_PARAM_USERQ_MAX = 26,
	DRM_NPU_PARAM_USERQ_ENGINES = 27,
	DRM_NPU_PARAM_USERQ_RING_MAX = 28,
};

/* DRM_NPU_PARAM_FEATURES bits */
#define DRM_NPU_FEATURE_TIMING_MODEL	(0x1ull)	/* durations modelled */
#define DRM_NPU_FEATURE_DEVMEM		(0x2ull)	/* device-local BOs */
#define DRM_NPU_FEATURE_USERPTR		(0x4ull)	/* DRM_IOCTL_NPU_USERPTR */
#define DRM_NPU_FEATURE_TIMELINE	(0x8ull)	/* timeline syncobjs */
#define DRM_NPU_FEATURE_PRIME		(0x10ull)	/* PRIME import/export */
#define DRM_NPU_FEATURE_COUNTERS	(0x20ull)	/* DRM_IOCTL_NPU_COUNTERS */
#define DRM_NPU_FEATURE_DEVMEM_MMAP	(0x40ull)	/* mmap of DEVMEM BOs */
#define DRM_NPU_FEATURE_CONTEXTS	(0x80ull)	/* CTX_CREATE, BO_MAP */
#define DRM_NPU_FEATURE_USER_CODE	(0x100ull)	/* LAUNCH_CODE packets */
#define DRM_NPU_FEATURE_BO_PROTECT	(0x200ull)	/* DRM_IOCTL_NPU_BO_PROTECT */
#define DRM_NPU_FEATURE_USER_QUEUES	(0x400ull)	/* DRM_IOCTL_NPU_USERQ_* */

/**
 * struct drm_npu_get_param - read one device parameter
 * @param: in, enum drm_npu_param
 * @pad: must be zero
 * @value: out
 */
struct drm_npu_get_param {
	__u32 param;
	__u32 pad;
	__u64 value;
};

/* drm_npu_bo_create.flags */
#define DRM_NPU_BO_DEVMEM	(0x1u)	/* device-local memory */

/**
 * struct drm_npu_bo_create - allocate a buffer object mapped in the context
 * @size: in, bytes (rounded up to pages); 0, more than 4 GiB or more than
 *	the memory it comes from: -EINVAL
 * @flags: in, DRM_NPU_BO_*; unknown flags: -EINVAL
 * @handle: out, GEM handle
 * @va: out, device virtual address in the file's context; an unmapped
 *	guard page follows the BO
 * @mmap_offset: out, offset for mmap() on the DRM fd of the whole BO,
 *	or 0 if the CPU cannot map it. A DEVMEM BO is mappable (through the
 *	device-memory PCI BAR, write-combined) when the device reports
 *	DRM_NPU_FEATURE_DEVMEM_MMAP and the BO lies inside the BAR; only
 *	MAP_SHARED mappings are allowed, and access gets SIGBUS once the
 *	device is unplugged.
 *
 * New memory (system or device) is zeroed. System memory stays pinned
 * until the BO is freed and is charged, until then, to the creator's real
 * user against RLIMIT_MEMLOCK (the user's locked_vm, shared with io_uring
 * and other pinners; CAP_IPC_LOCK lifts the limit). Errors: -EINVAL,
 * -ENOMEM (also: the pages would take the user past RLIMIT_MEMLOCK),
 * -ENOSPC (VA space full).
 */
struct drm_npu_bo_create {
	__u64 size;
	__u32 flags;
	__u32 handle;
	__u64 va;
	__u64 mmap_offset;
};

/**
 * struct drm_npu_bo_info - look up a buffer object (e.g. after PRIME import)
 * @handle: in
 * @flags: out, DRM_NPU_BO_* the BO was made with
 * @size: out, bytes
 * @va: out, device virtual address in this file's context
 * @mmap_offset: out, as in &struct drm_npu_bo_create
 */
struct drm_npu_bo_info {
	__u32 handle;
	__u32 flags;
	__u64 size;
	__u64 va;
	__u64 mmap_offset;
};

/* drm_npu_userptr.flags */
#define DRM_NPU_USERPTR_READ_ONLY	(0x1u)	/* device may only read */

/**
 * struct drm_npu_userptr - pin user memory and map it in the context
 * @addr: in, page-aligned user address
 * @size: in, page-aligned byte count
 * @flags: in, DRM_NPU_USERPTR_*
 * @handle: out, GEM handle (pages stay pinned until it is closed and the
 *	last job using them has completed)
 * @va: out, device virtual address of @addr
 *
 * Errors: -EINVAL (flags, alignment, zero or overflowing range, more than
 * 4 GiB), -EFAULT (not user memory, not mapped, or read-only memory
 * without DRM_NPU_USERPTR_READ_ONLY), -ENOMEM (also: the pages would take
 * the caller past RLIMIT_MEMLOCK, without CAP_IPC_LOCK). Userptr BOs
 * cannot be exported.
 */
struct drm_npu_userptr {
	__u64 addr;
	__u64 size;
	__u32 flags;
	__u32 handle;
	__u64 va;
};

/* drm_npu_queue_create.kind */
#define DRM_NPU_RING_KIND_COMPUTE	0
#define DRM_NPU_RING_KIND_COPY		1

/* drm_npu_queue_create.priority */
#define DRM_NPU_PRIORITY_LOW		0
#define DRM_NPU_PRIORITY_NORMAL		1
#define DRM_NPU_PRIORITY_HIGH		2

#define DRM_NPU_RING_ANY		0xffffffffu

/**
 * struct drm_npu_queue_create - create a submission queue
 * @kind: in, DRM_NPU_RING_KIND_*
 * @priority: in, DRM_NPU_PRIORITY_*; HIGH needs CAP_SYS_NICE
 * @ring: in, index among the rings of @kind, or DRM_NPU_RING_ANY to let the
 *	scheduler pick the least busy ring whenever the queue goes idle
 * @queue_id: out, id for &struct drm_npu_job (must be 0 on input)
 * @ctx_id: in, context the queue's jobs run in: 0 for the file's default
 *	context, or an id from DRM_IOCTL_NPU_CTX_CREATE (user space built
 *	against an older header passes 0 implicitly)
 * @pad: must be zero
 *
 * Jobs of one queue run in submission order. Errors: -EINVAL (bad kind,
 * priority, ring or pad), -EACCES (HIGH without CAP_SYS_NICE), -ENODEV
 * (no ring of @kind), -ENOENT (unknown @ctx_id), -ENOSPC (the file has
 * DRM_NPU_PARAM_MAX_QUEUES queues).
 */
struct drm_npu_queue_create {
	__u32 kind;
	__u32 priority;
	__u32 ring;
	__u32 queue_id;
	__u32 ctx_id;
	__u32 pad;
};

/**
 * struct drm_npu_queue_destroy - destroy a queue (its jobs still complete)
 * @queue_id: in; unknown: -ENOENT
 * @pad: must be zero
 */
struct drm_npu_queue_destroy {
	__u32 queue_id;
	__u32 pad;
};

/* drm_npu_sync.flags: none defined yet */

/**
 * struct drm_npu_sync - a syncobj and a timeline point
 * @handle: syncobj handle
 * @flags: must be zero
 * @point: timeline point, 0 for a binary syncobj
 */
struct drm_npu_sync {
	__u32 handle;
	__u32 flags;
	__u64 point;
};

/**
 * struct drm_npu_job - one job of a submission
 * @queue_id: queue to run on
 * @flags: must be zero
 * @cmd_va: device VA of the command buffer (unprivileged packets)
 * @cmd_size: bytes in the command buffer, multiple of 4, at most
 *	DRM_NPU_PARAM_MAX_CMD_SIZE; 0 makes a job that only orders fences
 * @bo_count: entries in @bo_handles
 * @bo_handles: pointer to __u32 GEM handles the job uses; they (and their
 *	mappings) stay alive until the job completes
 * @in_syncs: pointer to &struct drm_npu_sync to wait for before running
 * @out_syncs: pointer to &struct drm_npu_sync to signal with the job's fence
 * @in_sync_count: entries in @in_syncs
 * @out_sync_count: entries in @out_syncs
 * @sync_stride: bytes from one entry of @in_syncs and @out_syncs to the
 *	next: sizeof(struct drm_npu_sync) as user space knows it, at least
 *	the size of its first version (16) and at most 4096, with any bytes
 *	beyond the struct the kernel knows zero; 0 means 16
 * @bo_handle_stride: bytes from one entry of @bo_handles to the next, at
 *	least 4 (the __u32 handle starts each entry) and at most 4096, with
 *	any bytes after the handle zero; 0 means 4
 *
 * The command buffer's own BO is found from @cmd_va and kept alive too.
 * Jobs are queued in array order, so a job may wait on a point that an
 * earlier job of the same submission signals. User space built against a
 * header without @sync_stride and @bo_handle_stride passes a smaller
 * &drm_npu_submit.job_stride (56): the kernel reads them as 0.
 */
struct drm_npu_job {
	__u32 queue_id;
	__u32 flags;
	__u64 cmd_va;
	__u32 cmd_size;
	__u32 bo_count;
	__u64 bo_handles;
	__u64 in_syncs;
	__u64 out_syncs;
	__u32 in_sync_count;
	__u32 out_sync_count;
	__u32 sync_stride;
	__u32 bo_handle_stride;
};

/**
 * struct drm_npu_submit - queue an array of jobs with one system call
 * @jobs: pointer to @job_count jobs, each @job_stride bytes apart
 * @job_count: 1 .. DRM_NPU_PARAM_MAX_JOBS
 * @job_stride: sizeof(struct drm_npu_job) as user space knows it; at
 *	least the size of its first version (56), at most 4096, and any
 *	bytes beyond the struct the kernel knows must be zero
 * @flags: must be zero
 * @pad: must be zero
 *
 * All jobs are validated (queues, handles, syncobjs, sizes) before any is
 * queued: on an error nothing is queued and nothing is signalled.
 * Errors: -EINVAL (flags, pads, counts, sizes, strides, a command buffer
 * not inside one BO, an in-sync without a fence), -ENOENT (unknown queue,
 * BO or syncobj handle), -EFAULT (unreadable arrays).
 *
 * The error of a job's fence tells how it ended: 0, -EFAULT (device
 * error, see DRM_IOCTL_NPU_GET_FAULT), -ETIMEDOUT (hang, ring reset),
 * -ECANCELED (lost in a reset), -ENODEV (device unplugged), -ESRCH (queue
 * destroyed before the job reached the hardware).
 */
struct drm_npu_submit {
	__u64 jobs;
	__u32 job_count;
	__u32 job_stride;
	__u32 flags;
	__u32 pad;
};

/**
 * struct drm_npu_bo_wait - wait until the jobs using a BO have completed
 * @handle: in
 * @pad: must be zero
 * @timeout_ns: absolute CLOCK_MONOTONIC time; -ETIME when it passes
 *
 * Waits for every job that listed the BO in &drm_npu_job.bo_handles or
 * ran commands from it: for all fences in the BO's reservation object,
 * which also holds those of other users of a buffer shared with PRIME.
 * Errors: -ENOENT (unknown handle), -EINVAL (pad).
 */
struct drm_npu_bo_wait {
	__u32 handle;
	__u32 pad;
	__s64 timeout_ns;
};

/* drm_npu_get_fault.kind */
#define DRM_NPU_FAULT_NONE	0
#define DRM_NPU_FAULT_DEVICE	1	/* device error, job fence -EFAULT */
#define DRM_NPU_FAULT_TIMEOUT	2	/* hang, job fence -ETIMEDOUT */

/**
 * struct drm_npu_get_fault - read the errors the file's jobs have hit
 * @count: out, number of failed jobs so far (never decreases)
 * @kind: out, DRM_NPU_FAULT_* of the last failed job
 * @queue_id: out, queue of the last failed job
 * @ring: out, global ring index it ran on
 * @cause: out, device error code (npu_hw.h enum npu_error)
 * @info: out, opcode or kernel id at the error
 * @addr: out, faulting device address, if any
 * @pc: out, for a fault of a compute-unit thread (cause NPU_ERR_CU_* or a
 *	memory fault of a LAUNCH_CODE kernel): the faulting instruction's
 *	address; else 0
 * @block: out, with @pc: linear index of the faulting block in the grid
 * @thread: out, with @pc: linear index of the faulting thread in its block
 * @unit: out, with @pc: compute unit that ran it
 * @pad: out, 0
 * @entry: out, with @pc: entry address of the launched kernel (the
 *	LAUNCH_CODE packet's), whichever function @pc is in; else 0.
 *	Appended later: DRM zero-extends a caller's shorter struct and copies
 *	back only the size its ioctl number encodes, so older callers work.
 */
struct drm_npu_get_fault {
	__u32 count;
	__u32 kind;
	__u32 queue_id;
	__u32 ring;
	__u32 cause;
	__u32 info;
	__u64 addr;
	__u64 pc;
	__u32 block;
	__u32 thread;
	__u32 unit;
	__u32 pad;
	__u64 entry;
};

/**
 * struct drm_npu_ring_counters - counters of one ring (engine)
 * @busy_ns: time spent executing commands
 * @commands: commands completed
 * @bytes: bytes moved or touched
 * @ops: arithmetic operations
 */
struct drm_npu_ring_counters {
	__u64 busy_ns;
	__u64 commands;
	__u64 bytes;
	__u64 ops;
};

/**
 * struct drm_npu_counters - read the device counters
 * @rings: pointer to an array of &struct drm_npu_ring_counters
 * @cu_busy_ns: pointer to an array of __u64, busy ns per compute unit
 * @ring_count: in, entries in @rings; out, rings on the device
 * @cu_count: in, entries in @cu_busy_ns; out, units on the device
 * @clock: out, device clock when the counters were read
 * @cu_cycles: pointer to an array of @cu_count __u64, cycles each compute
 *	unit had a user-kernel (LAUNCH_CODE) block resident, or 0 for none
 * @cu_instructions: pointer to an array of @cu_count __u64, instructions
 *	each unit retired, or 0 for none (both stay 0 on a device without
 *	DRM_NPU_FEATURE_USER_CODE)
 * @ring_stride: in, bytes from one entry of @rings to the next:
 *	sizeof(struct drm_npu_ring_counters) as user space knows it, at
 *	least 32 (its first version) and at most 4096; the kernel writes the
 *	fields it knows that fit and leaves the rest of each entry alone.
 *	0 means 32 (user space built against a header without this field)
 * @cu_stride: in, bytes from one entry of @cu_busy_ns, @cu_cycles and
 *	@cu_instructions to the next, at least 8 and at most 4096; each
 *	entry starts with its __u64. 0 means 8
 *
 * @uq_engines: pointer to an array of &struct drm_npu_ring_counters, one
 *	per user-queue engine, compute engines first (as
 *	DRM_NPU_PARAM_USERQ_ENGINES counts them), @ring_stride apart: what
 *	each engine ran, whichever queues it ran (a copy on a compute-class
 *	queue counts on its compute engine). Kernel queues count on @rings
 * @uq_engine_count: in, entries in @uq_engines; out, user-queue engines
 *	on the device (0 without user queues). Neither read nor written
 *	when @uq_engines is 0 (DRM_NPU_PARAM_USERQ_ENGINES says how many)
 * @pad: must be zero
 *
 * Fills min(in, out) entries of each array; a pointer may be 0 when its
 * count is 0 (-EINVAL otherwise). @uq_engines and after came later: user
 * space built without them passes the smaller struct, which reads as 0.
 */
struct drm_npu_counters {
	__u64 rings;
	__u64 cu_busy_ns;
	__u32 ring_count;
	__u32 cu_count;
	__u64 clock;
	__u64 cu_cycles;
	__u64 cu_instructions;
	__u32 ring_stride;
	__u32 cu_stride;
	__u64 uq_engines;
	__u32 uq_engine_count;
	__u32 pad;
};

/**
 * struct drm_npu_ctx_create - create an extra device address space
 * @flags: in, must be zero
 * @ctx_id: out, 1 .. DRM_NPU_PARAM_MAX_CONTEXTS (must be 0 on input)
 *
 * Every open file has a default context (id 0) in which each of its GEM
 * handles is mapped at a kernel-chosen VA. An extra context starts empty,
 * with its own page tables: buffers appear in it only through
 * DRM_IOCTL_NPU_BO_MAP, at VAs the caller may choose, and jobs run in it
 * when they are submitted to a queue created with its id. Contexts of one
 * file, like those of different files, cannot reach each other's mappings.
 * Every context, a file's default one included, is charged to the real
 * user of the process that creates it (open() for the default context):
 * a user has at most the module parameter max_user_contexts of them on the
 * device, and open() fails with -EDQUOT too once the user is at the limit.
 * Errors: -EINVAL (flags, @ctx_id), -ENOSPC (the file has
 * DRM_NPU_PARAM_MAX_CONTEXTS extra contexts, or the device has no context
 * id left), -EDQUOT (the user has max_user_contexts contexts), -ENOMEM.
 */
struct drm_npu_ctx_create {
	__u32 flags;
	__u32 ctx_id;
};

/**
 * struct drm_npu_ctx_destroy - destroy an extra context
 * @ctx_id: in; 0 or unknown: -ENOENT
 * @pad: must be zero
 *
 * Unmaps every buffer mapped in the context (each mapping is torn down
 * when the last job that used it has finished). Errors: -EBUSY while a
 * queue created on the context exists (destroy the queues first).
 */
struct drm_npu_ctx_destroy {
	__u32 ctx_id;
	__u32 pad;
};

/* drm_npu_bo_map.flags */
#define DRM_NPU_BO_MAP_FIXED		(0x1u)	/* map at @va exactly */
#define DRM_NPU_BO_MAP_READ_ONLY	(0x2u)	/* device may only read */

/**
 * struct drm_npu_bo_map - map a buffer object into an extra context
 * @handle: in, GEM handle
 * @ctx_id: in, context from DRM_IOCTL_NPU_CTX_CREATE (the default context,
 *	0, maps every handle by itself: -EINVAL)
 * @flags: in, DRM_NPU_BO_MAP_*
 * @pad: must be zero
 * @va: in with DRM_NPU_BO_MAP_FIXED: page-aligned address at or above
 *	DRM_NPU_PARAM_VA_START whose range ends within
 *	DRM_NPU_PARAM_VA_SIZE; otherwise must be 0. Out: the mapped address.
 *
 * A buffer is mapped at most once per context. The mapping holds its own
 * reference to the buffer: closing the handle does not unmap it, and it
 * lives until DRM_IOCTL_NPU_BO_UNMAP, DRM_IOCTL_NPU_CTX_DESTROY or close()
 * of the file, and after that until the last job using it has finished.
 * Errors: -EINVAL (flags, pad, @ctx_id 0, @va), -ENOENT (unknown handle
 * or context), -EEXIST (already mapped in this context), -EBUSY (a fixed
 * range overlaps a mapping, or one unmapped while jobs of the context
 * submitted before the unmap have not all completed),
 * -ENOSPC (VA space full), -ENOMEM.
 */
struct drm_npu_bo_map {
	__u32 handle;
	__u32 ctx_id;
	__u32 flags;
	__u32 pad;
	__u64 va;
};

/**
 * struct drm_npu_bo_unmap - remove a mapping made by DRM_IOCTL_NPU_BO_MAP
 * @ctx_id: in, extra context
 * @pad: must be zero
 * @va: in, start address the mapping was given
 *
 * The range stays mapped until every job of the context submitted before
 * the unmap has finished (listed or not, a job may use the BO); later jobs
 * cannot name the BO in the context. Errors: -EINVAL (pad), -ENOENT (unknown
 * context, or no mapping starts at @va).
 */
struct drm_npu_bo_unmap {
	__u32 ctx_id;
	__u32 pad;
	__u64 va;
};

/* drm_npu_bo_protect.flags */
#define DRM_NPU_BO_PROTECT_READ_ONLY	(0x1u)	/* device may only read */

/**
 * struct drm_npu_bo_protect - make part of a BO read-only for the device
 * @handle: in, GEM handle
 * @flags: in, DRM_NPU_BO_PROTECT_READ_ONLY (required; nothing else)
 * @offset: in, byte offset into the BO, page aligned
 * @size: in, bytes, page aligned, non-zero, @offset + @size within the BO
 *
 * In the file's default context, device writes to the range fault from
 * the next job on (NPU_ERR_MMU_WRITE: the job fails with -EFAULT and
 * DRM_IOCTL_NPU_GET_FAULT reports it); reads are unchanged. One way: the
 * range stays read-only for the life of the mapping. Other mappings of the
 * BO (extra contexts, other files) are not affected. Meant for code:
 * libnpu protects a code object's code and read-only data once loaded.
 * Errors: -EINVAL (flags, alignment, range), -ENOENT (unknown handle),
 * -ENODEV (device removed).
 */
struct drm_npu_bo_protect {
	__u32 handle;
	__u32 flags;
	__u64 offset;
	__u64 size;
};

/**
 * struct drm_npu_userq_create - create a user-mode queue
 * @ctx_id: in, 0 for the file's default context or a CTX_CREATE id
 * @kind: in, DRM_NPU_RING_KIND_COMPUTE or DRM_NPU_RING_KIND_COPY
 * @priority: in, DRM_NPU_PRIORITY_*; HIGH needs CAP_SYS_NICE
 * @flags: in, must be zero
 * @ring_va: in, device VA of the ring in @ctx_id, 4096-byte aligned
 * @ring_size: in, bytes, a power of two, 4096 .. DRM_NPU_PARAM_USERQ_RING_MAX
 * @queue_id: out (must be zero on input), the queue's id, from the file's
 *	queue-id space but never the id of a DRM_IOCTL_NPU_QUEUE_CREATE queue
 * @wb_va: in, device VA of the 64-byte write-back block (struct npu_uq_wb
 *	of npu_hw.h), 64-byte aligned, writable by the device
 * @doorbell_offset: out, byte offset of the queue's doorbell in the page
 * @mmap_offset: out, mmap() offset of the file's doorbell page
 * @wait_va: out, device VA of the queue's wait counter (u64, read-only
 *	for the device) in the file's wait page, mapped in @ctx_id
 * @wait_mmap_offset: out, mmap() offset of the file's wait page (one
 *	page, PROT_READ only); the queue's counter is at @doorbell_offset in
 *	it. Added after the first version of the struct: a caller that
 *	passes the shorter struct does not get it (DRM copies out only the
 *	size the caller gave)
 *
 * The ring and the write-back block must each lie in one mapping of the
 * context; both mappings are pinned until the queue is destroyed. To
 * submit, write packets at ring offset (wptr & (ring_size - 1)), then
 * store the new wptr (a byte count that only grows) as one 8-byte store at
 * @doorbell_offset of the page mapped at @mmap_offset. Or store it in the
 * write-back block's wptr (offset 40), issue a full barrier and ring the
 * doorbell only if the block's status lacks NPU_UQ_STS_WATCHED (the device
 * reads that wptr of a busy queue itself; Documentation/hw/npu.rst).
 * Errors: -EINVAL, -ENOENT, -EACCES, -ENODEV, -ENOSPC, -EDQUOT, -ENOMEM.
 */
struct drm_npu_userq_create {
	__u32 ctx_id;
	__u32 kind;
	__u32 priority;
	__u32 flags;
	__u64 ring_va;
	__u32 ring_size;
	__u32 queue_id;
	__u64 wb_va;
	__u64 doorbell_offset;
	__u64 mmap_offset;
	__u64 wait_va;
	__u64 wait_mmap_offset;
};

/**
 * struct drm_npu_userq_destroy - stop and destroy a user queue
 * @queue_id: in
 * @pad: must be zero
 *
 * The packet executing is aborted and the pending ones dropped.
 * Errors: -EINVAL (pad), -ENOENT (unknown id, or a kernel queue's id).
 */
struct drm_npu_userq_destroy {
	__u32 queue_id;
	__u32 pad;
};

/* drm_npu_userq_query.status: the device's NPU_UQ_STS_* bits, and STOPPED */
#define DRM_NPU_USERQ_MAPPED	(0x1u)	/* in the device's scheduler */
#define DRM_NPU_USERQ_IDLE	(0x4u)	/* rptr == wptr, nothing runs */
#define DRM_NPU_USERQ_WAITING	(0x8u)	/* at an unsatisfied wait */
#define DRM_NPU_USERQ_HALTED	(0x10u)	/* by an error or a stop */
#define DRM_NPU_USERQ_RUNNING	(0x20u)	/* on an engine now */
#define DRM_NPU_USERQ_STOPPED	(0x100u)	/* stopped by the kernel */

/**
 * struct drm_npu_userq_query - the kernel's view of a user queue
 * @queue_id: in
 * @status: out, DRM_NPU_USERQ_*
 * @error: out, npu_hw.h enum npu_error of the last halt, 0 if none
 * @info: out, error info (opcode or kernel id) of the last halt
 * @rptr: out, bytes of packets completed
 * @wptr: out, the last doorbell value the device accepted
 * @fault: out, faulting address or value of the last halt
 * @busy_ns: out, device time the queue spent on an engine
 * @cmds: out, packets completed (inside indirect buffers too)
 * @bytes: out, bytes its packets moved or touched (was a zero reserved
 *	field: older kernels return 0)
 * @ops: out, arithmetic operations of its packets (later: older user
 *	space passes the shorter struct)
 *
 * Read from the queue's descriptor (the device's copy), not from the
 * write-back block; the engines' totals are DRM_IOCTL_NPU_COUNTERS'
 * @uq_engines. Errors: -ENOENT (unknown id), -ENODEV (device gone).
 */
struct drm_npu_userq_query {
	__u32 queue_id;
	__u32 status;
	__u32 error;
	__u32 info;
	__u64 rptr;
	__u64 wptr;
	__u64 fault;
	__u64 busy_ns;
	__u64 cmds;
	__u64 bytes;
	__u64 ops;
};

/* drm_npu_userq_wait_mem.flags */
#define DRM_NPU_WAIT_MEM_RPTR	(0x1u)	/* wait for queue_id's rptr */

/**
 * struct drm_npu_userq_wait_mem - sleep until a memory signal reaches a value
 * @addr: in, device VA of a 32-byte memory signal (struct npu_signal) in
 *	@ctx_id, 32-byte aligned; 0 with DRM_NPU_WAIT_MEM_RPTR
 * @value: in, wait until the signal's value (or the rptr) >= @value
 * @timeout_ns: in, absolute CLOCK_MONOTONIC time; -ETIME when it passes
 * @ctx_id: in, 0 for the default context or a CTX_CREATE id
 * @queue_id: in, 0, or a user queue whose stop ends the wait
 * @flags: in, DRM_NPU_WAIT_MEM_*
 * @pad: must be zero
 *
 * Arms the signal (its armed word), re-reads it and sleeps. Errors: -ETIME,
 * -ERESTARTSYS, -ECANCELED (@queue_id stopped or halted first), -EINVAL,
 * -ENOENT, -EACCES (read-only mapping), -ENODEV.
 */
struct drm_npu_userq_wait_mem {
	__u64 addr;
	__u64 value;
	__s64 timeout_ns;
	__u32 ctx_id;
	__u32 queue_id;
	__u32 flags;
	__u32 pad;
};

/**
 * struct drm_npu_userq_signal - a syncobj fence for a user-queue position
 * @queue_id: in
 * @flags: in, must be zero
 * @wptr: in, queue position whose completion signals the fence, 0 for the
 *	queue's current wptr
 * @handle: in, syncobj
 * @pad: must be zero
 * @point: in, timeline point, 0 for a binary syncobj
 *
 * The fence fails with -EFAULT (halt), -ETIMEDOUT (watchdog stop, or not
 * signalled a job timeout after creation), -ECANCELED (destroyed).
 * Errors: -EINVAL (flags, pad, @wptr beyond the last wptr the device
 * accepted: after a write-back-block wptr, ring the doorbell first),
 * -ENOENT, -ECANCELED (the queue is stopped), -ENOMEM.
 */
struct drm_npu_userq_signal {
	__u32 queue_id;
	__u32 flags;
	__u64 wptr;
	__u32 handle;
	__u32 pad;
	__u64 point;
};

/**
 * struct drm_npu_userq_wait - let a user queue wait for syncobj fences
 * @queue_id: in
 * @count: in, 1 .. DRM_NPU_PARAM_MAX_JOB_SYNCS
 * @syncs: in, pointer to @count struct drm_npu_sync
 * @sync_stride: in, bytes between two entries of @syncs, 0 for 16
 * @flags: in, must be zero
 * @value: out, the wait-counter value the queue's WAIT_MEM64 waits for
 *
 * When every fence has signalled (with or without an error) and the
 * queue's earlier waits are written, the kernel writes @value to the
 * counter at &drm_npu_userq_create.wait_va and kicks the queue. Errors:
 * -EINVAL (count, stride, flags, a point not yet submitted), -ENOENT,
 * -EFAULT, -ENOMEM.
 */
struct drm_npu_userq_wait {
	__u32 queue_id;
	__u32 count;
	__u64 syncs;
	__u32 sync_stride;
	__u32 flags;
	__u64 value;
};

#if defined(__cplusplus)
}
#endif

#endif /* _UAPI_DRM_NPU_ACCEL_H */
