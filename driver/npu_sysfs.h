/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * npu_sysfs.h - sysfs attributes of the npu driver (npu_sysfs.c).
 */
#ifndef NPU_SYSFS_H
#define NPU_SYSFS_H

#include <linux/sysfs.h>

extern const struct attribute_group *npu_dev_groups[];

#endif /* NPU_SYSFS_H */
