/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * npu_userq_desc.h - a user queue as the device and the kernel hold it
 * (npu_userq_desc.c): its descriptor in the device's table, the queue
 * commands, its wait counter and its reference count.
 */
#ifndef NPU_USERQ_DESC_H
#define NPU_USERQ_DESC_H

#include "npu_base.h"

void *npu_uqd(struct npu_device *ndev, u32 index);
u64 npu_uqd_rd64(struct npu_device *ndev, u32 index, u32 off);
u32 npu_uqd_rd32(struct npu_device *ndev, u32 index, u32 off);
void npu_uqd_wr64(struct npu_device *ndev, u32 index, u32 off, u64 v);
void npu_uqd_wr32(struct npu_device *ndev, u32 index, u32 off, u32 v);
u32 npu_uq_cmd(struct npu_device *ndev, u32 op, u32 index);
void npu_wait_counter_write(struct npu_userq *uq, u64 value);
void npu_userq_put(struct npu_userq *uq);

#endif /* NPU_USERQ_DESC_H */
