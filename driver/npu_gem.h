/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * npu_gem.h - buffer objects (npu_gem.c).
 */
#ifndef NPU_GEM_H
#define NPU_GEM_H

#include "npu_base.h"

struct drm_gem_object *npu_gem_create_object(struct drm_device *dev,
					     size_t size);
struct drm_gem_object *
npu_gem_prime_import_sg_table(struct drm_device *dev,
			      struct dma_buf_attachment *attach,
			      struct sg_table *sgt);
struct npu_mapping *npu_bo_find_mapping(struct npu_bo *bo,
					struct npu_ctx *ctx);
int npu_ioctl_bo_create(struct drm_device *dev, void *data,
			struct drm_file *file);
int npu_ioctl_bo_info(struct drm_device *dev, void *data,
		      struct drm_file *file);
int npu_ioctl_bo_protect(struct drm_device *dev, void *data,
			 struct drm_file *file);
int npu_ioctl_userptr(struct drm_device *dev, void *data,
		      struct drm_file *file);
int npu_ioctl_bo_wait(struct drm_device *dev, void *data,
		      struct drm_file *file);
void npu_bos_hw_fini(struct npu_device *ndev);
struct npu_bo *npu_bo_create_shmem(struct npu_device *ndev, u64 size);
struct npu_bo *npu_bo_create_read_only(struct npu_device *ndev);

#endif /* NPU_GEM_H */
