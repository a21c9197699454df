/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * npu_debugfs.h - debugfs files of the npu driver (npu_debugfs.c).
 */
#ifndef NPU_DEBUGFS_H
#define NPU_DEBUGFS_H

#include "npu_base.h"

void npu_debugfs_init(struct drm_minor *minor);
void npu_debugfs_create(struct npu_device *ndev, struct dentry *root);

#endif /* NPU_DEBUGFS_H */
