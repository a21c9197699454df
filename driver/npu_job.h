/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * npu_job.h - queues, SUBMIT and the scheduler backend (npu_job.c).
 */
#ifndef NPU_JOB_H
#define NPU_JOB_H

#include "npu_base.h"

int npu_ioctl_queue_create(struct drm_device *dev, void *data,
			   struct drm_file *file);
int npu_ioctl_queue_destroy(struct drm_device *dev, void *data,
			    struct drm_file *file);
int npu_ioctl_submit(struct drm_device *dev, void *data,
		     struct drm_file *file);
void npu_queues_destroy(struct npu_file *nfile);
void npu_file_put(struct npu_file *nfile);
void npu_jobs_free_work(struct work_struct *work);
extern const struct drm_sched_backend_ops npu_sched_ops;

#endif /* NPU_JOB_H */
