// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_userq_desc.c - a user queue as the device and the kernel hold it:
 * its descriptor in the device's table (the table itself is set up in
 * npu_userq.c), the queue commands, the queue's wait counter in the file's
 * wait page, and the queue's reference count. Used both where queues are
 * made and destroyed (npu_userq.c) and where their events and waits are
 * handled (npu_userq_event.c).
 */
#include <linux/highmem.h>
#include <linux/slab.h>

#include "npu_regs.h"
#include "npu_userq_desc.h"

/* Descriptor @index in the device's table (NPU_UQD_SIZE bytes). */
void *npu_uqd(struct npu_device *ndev, u32 index)
{
	return ndev->uq_table + (size_t)index * NPU_UQD_SIZE;
}

/* Descriptor fields: the table is DMA-coherent, little-endian. */
u64 npu_uqd_rd64(struct npu_device *ndev, u32 index, u32 off)
{
	return le64_to_cpu(READ_ONCE(*(__le64 *)(npu_uqd(ndev, index) + off)));
}

u32 npu_uqd_rd32(struct npu_device *ndev, u32 index, u32 off)
{
	return le32_to_cpu(READ_ONCE(*(__le32 *)(npu_uqd(ndev, index) + off)));
}

void npu_uqd_wr64(struct npu_device *ndev, u32 index, u32 off, u64 v)
{
	WRITE_ONCE(*(__le64 *)(npu_uqd(ndev, index) + off), cpu_to_le64(v));
}

void npu_uqd_wr32(struct npu_device *ndev, u32 index, u32 off, u32 v)
{
	WRITE_ONCE(*(__le32 *)(npu_uqd(ndev, index) + off), cpu_to_le32(v));
}

/**
 * npu_uq_cmd() - one queue command
 * @ndev: device, inside drm_dev_enter(), &npu_device.uq_lock held
 * @op: NPU_UQ_CMD_*
 * @index: descriptor index
 *
 * Return: the device's NPU_ERR_* (0: done).
 */
u32 npu_uq_cmd(struct npu_device *ndev, u32 op, u32 index)
{
	lockdep_assert_held(&ndev->uq_lock);

	npu_wr(ndev, NPU_REG_UQ_CMD, NPU_UQ_CMD(op, index));
	return npu_rd(ndev, NPU_REG_UQ_CMD_STATUS);
}

static void npu_userq_release(struct kref *ref)
{
	struct npu_userq *uq = container_of(ref, struct npu_userq, ref);

	if (uq->wait_bo)
		drm_gem_object_put(&uq->wait_bo->base.base);
	kfree(uq);
}

/**
 * npu_wait_counter_write() - store a queue's wait counter
 * @uq: queue
 * @value: value
 */
void npu_wait_counter_write(struct npu_userq *uq, u64 value)
{
	void *p = kmap_local_page(uq->wait_bo->base.pages[0]);

	WRITE_ONCE(*(u64 *)(p + uq->doorbell * sizeof(u64)), value);
	kunmap_local(p);
}

/**
 * npu_userq_put() - drop a reference to a queue
 * @uq: queue
 */
void npu_userq_put(struct npu_userq *uq)
{
	kref_put(&uq->ref, npu_userq_release);
}
