/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * npu_ctx.h - extra contexts of a file and the buffers bound into them
 * (npu_ctx.c): CTX_CREATE, CTX_DESTROY, BO_MAP, BO_UNMAP.
 */
#ifndef NPU_CTX_H
#define NPU_CTX_H

#include "npu_base.h"

void npu_file_ctxs_destroy(struct npu_file *nfile);
int npu_ioctl_ctx_create(struct drm_device *dev, void *data,
			 struct drm_file *file);
int npu_ioctl_ctx_destroy(struct drm_device *dev, void *data,
			  struct drm_file *file);
int npu_ioctl_bo_map(struct drm_device *dev, void *data,
		     struct drm_file *file);
int npu_ioctl_bo_unmap(struct drm_device *dev, void *data,
		       struct drm_file *file);

#endif /* NPU_CTX_H */
