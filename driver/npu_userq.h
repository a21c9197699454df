/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * npu_userq.h - user-mode queues (npu_userq.c): the descriptor table,
 * USERQ_CREATE, USERQ_DESTROY, USERQ_QUERY and the doorbell page.
 */
#ifndef NPU_USERQ_H
#define NPU_USERQ_H

#include "npu_base.h"

extern unsigned int npu_userq_max;

int npu_userq_hw_init(struct npu_device *ndev);
void npu_userq_hw_fini(struct npu_device *ndev);
void npu_userq_fini(struct npu_device *ndev);
void npu_userqs_ctx_destroy(struct npu_file *nfile, struct npu_ctx *ctx);
void npu_userqs_file_fini(struct npu_file *nfile, struct drm_file *file);
int npu_ioctl_userq_create(struct drm_device *dev, void *data,
			   struct drm_file *file);
int npu_ioctl_userq_destroy(struct drm_device *dev, void *data,
			    struct drm_file *file);
int npu_ioctl_userq_query(struct drm_device *dev, void *data,
			  struct drm_file *file);
void npu_userqs_busy_ns(struct npu_file *nfile, u64 ns[2]);

#endif /* NPU_USERQ_H */
