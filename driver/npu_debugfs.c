// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_debugfs.c - debugfs files of the npu driver:
 *
 *   rings      per ring: seqnos, pending jobs, registers, statistics
 *   contexts   per context: id, pid, mappings (VA, size, kind)
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>

#include "npu_debugfs.h"
#include "npu_regs.h"

static int npu_debugfs_rings_show(struct seq_file *m, void *unused)
{
	struct npu_device *ndev = m->private;
	unsigned long flags;
	int r, idx;

	for (r = 0; r < ndev->num_rings; r++) {
		struct npu_ring *ring = &ndev->rings[r];
		u32 head = 0, status = 0, hwfence = 0, fencemem = 0;
		u32 npending = 0;
		struct npu_job *job;
		bool hw = drm_dev_enter(&ndev->drm, &idx);

		if (hw) {
			head = npu_ring_rd(ring, NPU_RING_HEAD);
			status = npu_ring_rd(ring, NPU_RING_STATUS);
			hwfence = npu_ring_rd(ring, NPU_RING_FENCE);
			/* the fence page goes with the device */
			fencemem = READ_ONCE(*ring->fence_cpu);
			drm_dev_exit(idx);
		}
		spin_lock_irqsave(&ring->lock, flags);
		list_for_each_entry(job, &ring->pending, node)
			npending++;
		seq_printf(m,
			   "%s: emitted %u retired %u fence-mem %u fence-reg %u pending %u\n",
			   ring->name, ring->seqno, ring->completed,
			   fencemem, hwfence, npending);
		seq_printf(m,
			   "  head %#x tail %#x status %#x submitted %llu completed %llu failed %llu faults %llu resets %llu\n",
			   head, ring->tail, status, ring->stats_submitted,
			   ring->stats_completed, ring->stats_failed,
			   ring->stats_faults, ring->stats_resets);
		list_for_each_entry(job, &ring->pending, node)
			seq_printf(m, "  job seqno %u ctx %u cmd %#llx+%u\n",
				   job->seqno, job->ctx->id, job->cmd_va,
				   job->cmd_size);
		spin_unlock_irqrestore(&ring->lock, flags);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(npu_debugfs_rings);

static const char *const npu_bo_kind_names[] = {
	[NPU_BO_SHMEM] = "shmem",
	[NPU_BO_DEVMEM] = "devmem",
	[NPU_BO_USERPTR] = "userptr",
	[NPU_BO_IMPORT] = "import",
};

static int npu_debugfs_contexts_show(struct seq_file *m, void *unused)
{
	struct npu_device *ndev = m->private;
	struct npu_ctx *ctx;

	mutex_lock(&ndev->ctx_lock);
	list_for_each_entry(ctx, &ndev->ctx_list, link) {
		struct drm_mm_node *node;

		seq_printf(m, "ctx %u pid %d pt_root %pad refs %u\n", ctx->id,
			   ctx->pid, &ctx->root_dma, kref_read(&ctx->ref));
		mutex_lock(&ctx->lock);
		drm_mm_for_each_node(node, &ctx->va_mm) {
			struct npu_mapping *map =
				container_of(node, struct npu_mapping, node);

			seq_printf(m, "  va %#llx size %#llx %s refs %u%s\n",
				   node->start, map->size,
				   npu_bo_kind_names[map->bo->kind],
				   kref_read(&map->ref),
				   READ_ONCE(map->handles) ? "" :
							     " (closed)");
		}
		mutex_unlock(&ctx->lock);
	}
	mutex_unlock(&ndev->ctx_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(npu_debugfs_contexts);

/**
 * npu_debugfs_create() - create the driver's debugfs files
 * @ndev: device
 * @root: directory of the device (NULL: debugfs is off, do nothing)
 */
void npu_debugfs_create(struct npu_device *ndev, struct dentry *root)
{
	if (IS_ERR_OR_NULL(root))
		return;
	debugfs_create_file("rings", 0444, root, ndev,
			    &npu_debugfs_rings_fops);
	debugfs_create_file("contexts", 0444, root, ndev,
			    &npu_debugfs_contexts_fops);
	/* for tests: hold a timed-out ring this long before resetting it */
	debugfs_create_u32("reset_delay_ms", 0600, root, &ndev->reset_delay_ms);
}

/**
 * npu_debugfs_init() - &drm_driver.debugfs_init (render-node kernels;
 * accel kernels do not call it, see npu_probe())
 * @minor: the device's minor
 */
void npu_debugfs_init(struct drm_minor *minor)
{
	npu_debugfs_create(to_npu_device(minor->dev), minor->debugfs_root);
}
