/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * npu_compat.h - the one place where kernel API differences live.
 *
 * The driver builds against Debian 12's 6.1 and 6.12 kernels. Debian
 * backports scheduler changes into its stable kernels, so most decisions are
 * made by probing the headers at build time (see the top-level Kbuild, which
 * turns each probe into a -DNPU_HAVE_* flag); the rest by header presence.
 */
#ifndef NPU_COMPAT_H
#define NPU_COMPAT_H

#include <linux/mm.h>
#include <drm/drm_drv.h>
#include <drm/gpu_scheduler.h>

/* The accel subsystem (DRIVER_COMPUTE_ACCEL, /dev/accel) came in 6.2. */
#ifdef NPU_HAVE_ACCEL
#include <drm/drm_accel.h>
#endif

#ifndef NPU_HAVE_SCHED_INIT_ARGS
#error "npu needs the struct drm_sched_init_args form of drm_sched_init()"
#endif

/* Lowest priority the scheduler knows: renamed MIN -> LOW in 6.7. */
#ifdef NPU_HAVE_SCHED_PRIO_LOW
#define NPU_SCHED_PRIORITY_LOW	DRM_SCHED_PRIORITY_LOW
#else
#define NPU_SCHED_PRIORITY_LOW	DRM_SCHED_PRIORITY_MIN
#endif

/**
 * npu_sched_init_args_fill() - fill the parts of drm_sched_init_args that
 * only some kernels have
 * @args: arguments being prepared
 * @wq: workqueue for run_job and free_job, where the scheduler takes one
 */
static inline void npu_sched_init_args_fill(struct drm_sched_init_args *args,
					    struct workqueue_struct *wq)
{
#ifdef NPU_HAVE_SCHED_NUM_RQS
	args->num_rqs = DRM_SCHED_PRIORITY_COUNT;
#endif
#ifdef NPU_HAVE_SCHED_SUBMIT_WQ
	args->submit_wq = wq;
#endif
}

/* Whether the scheduler runs jobs from a workqueue (6.8+) or a kthread. */
#ifdef NPU_HAVE_SCHED_SUBMIT_WQ
#define NPU_SCHED_USES_WQ	1
#else
#define NPU_SCHED_USES_WQ	0
#endif

/**
 * npu_sched_job_init() - drm_sched_job_init() with one credit per job
 * @job: job to initialise
 * @entity: entity (queue) it will be pushed to
 * @owner: file that owns it
 * @client_id: DRM client id of the file (ignored where unsupported)
 *
 * Return: 0 or a negative errno.
 */
static inline int npu_sched_job_init(struct drm_sched_job *job,
				     struct drm_sched_entity *entity,
				     void *owner, u64 client_id)
{
#if defined(NPU_HAVE_SCHED_CLIENT_ID)
	return drm_sched_job_init(job, entity, 1, owner, client_id);
#elif defined(NPU_HAVE_SCHED_JOB_CREDITS)
	return drm_sched_job_init(job, entity, 1, owner);
#else
	return drm_sched_job_init(job, entity, owner);
#endif
}

/**
 * npu_sched_start() - restart a scheduler after a reset, re-arming the
 * callbacks of the jobs still on its pending list
 * @sched: scheduler
 */
static inline void npu_sched_start(struct drm_gpu_scheduler *sched)
{
#ifdef NPU_HAVE_SCHED_START_RECOVERY
	drm_sched_start(sched, true);
#else
	drm_sched_start(sched);
#endif
}

/* DRM client id (fdinfo) appeared together with the scheduler's use of it. */
#ifdef NPU_HAVE_SCHED_CLIENT_ID
#define npu_file_client_id(file)	((file)->client_id)
#else
#define npu_file_client_id(file)	0ull
#endif

#ifdef NPU_HAVE_ACCEL
#define NPU_DRIVER_FEATURES_NODE	DRIVER_COMPUTE_ACCEL
#else
#define NPU_DRIVER_FEATURES_NODE	DRIVER_RENDER
#endif

/* 6.1 routes mmap() of an exported dma-buf through the driver. */
#ifdef NPU_HAVE_GEM_PRIME_MMAP
#define NPU_DRIVER_PRIME_MMAP	.gem_prime_mmap = drm_gem_prime_mmap,
#else
#define NPU_DRIVER_PRIME_MMAP
#endif

/**
 * npu_vm_flags_set() - set flags of a VMA being set up by mmap()
 * @vma: the new mapping
 * @flags: VM_* flags to add
 *
 * vm_flags became read-only with vm_flags_set() as its writer in 6.3.
 */
static inline void npu_vm_flags_set(struct vm_area_struct *vma,
				    vm_flags_t flags)
{
#ifdef NPU_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

/**
 * npu_vm_flags_clear() - clear flags of a VMA being set up by mmap()
 * @vma: the new mapping
 * @flags: VM_* flags to remove
 */
static inline void npu_vm_flags_clear(struct vm_area_struct *vma,
				      vm_flags_t flags)
{
#ifdef NPU_HAVE_VM_FLAGS_SET
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

#endif /* NPU_COMPAT_H */
