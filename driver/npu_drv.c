// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_drv.c - PCI driver (probe, removal, the MSI-X vectors), DRM driver
 * and its ioctl table, file handling and the query ioctls of the npu
 * virtual NPU. It stands on top of the driver's other files and nothing
 * calls into it (Documentation/driver/npu.rst, "Source layout").
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>
#include <drm/drm_managed.h>
#include <drm/drm_prime.h>
#include <drm/drm_print.h>

#include "npu_ctx.h"
#include "npu_debugfs.h"
#include "npu_gem.h"
#include "npu_job.h"
#include "npu_mmu.h"
#include "npu_regs.h"
#include "npu_ring.h"
#include "npu_sysfs.h"
#include "npu_userq.h"
#include "npu_userq_event.h"

/* ---------------------------------------------------------------------- */
/* files */

#ifndef NPU_HAVE_SHOW_FDINFO
static atomic64_t npu_client_ids;
#endif

static int npu_open(struct drm_device *dev, struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(dev);
	struct npu_file *nfile;
	int ret, idx;

	if (!drm_dev_enter(dev, &idx))
		return -ENODEV;

	nfile = kzalloc(sizeof(*nfile), GFP_KERNEL);
	if (!nfile) {
		ret = -ENOMEM;
		goto out;
	}
	kref_init(&nfile->ref);
	nfile->ndev = ndev;
	nfile->client_id = npu_file_client_id(file);
#ifndef NPU_HAVE_SHOW_FDINFO
	/* fdinfo needs one id per open file; DRM has none to give here */
	nfile->client_id = atomic64_inc_return(&npu_client_ids);
#endif
	xa_init_flags(&nfile->queues, XA_FLAGS_ALLOC1);
	mutex_init(&nfile->submit_lock);
	mutex_init(&nfile->vm_lock);
	xa_init_flags(&nfile->ctxs, XA_FLAGS_ALLOC1);
	xa_init_flags(&nfile->userqs, XA_FLAGS_ALLOC);
	spin_lock_init(&nfile->fault_lock);
	nfile->ctx = npu_ctx_create(ndev);
	if (IS_ERR(nfile->ctx)) {
		ret = PTR_ERR(nfile->ctx);
		nfile->ctx = NULL;
		npu_file_put(nfile);
		goto out;
	}
	file->driver_priv = nfile;
	ret = 0;
out:
	drm_dev_exit(idx);
	return ret;
}

static void npu_postclose(struct drm_device *dev, struct drm_file *file)
{
	struct npu_file *nfile = file->driver_priv;

	/*
	 * GEM handles are gone already; jobs keep what they use alive. User
	 * queues go first: they are stopped, not waited for.
	 */
	npu_userqs_file_fini(nfile, file);
	npu_queues_destroy(nfile);
	npu_file_ctxs_destroy(nfile);
	npu_file_put(nfile);
}

/* ---------------------------------------------------------------------- */
/* query ioctls */

static int npu_ioctl_get_param(struct drm_device *dev, void *data,
			       struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(dev);
	struct drm_npu_get_param *args = data;
	int idx, ret = 0;

	if (args->pad)
		return -EINVAL;

	switch (args->param) {
	case DRM_NPU_PARAM_DEVICE_ID:
		args->value = (ndev->pdev->vendor << 16) | ndev->pdev->device;
		break;
	case DRM_NPU_PARAM_REVISION:
		args->value = ndev->version;
		break;
	case DRM_NPU_PARAM_NUM_COMPUTE_RINGS:
		args->value = ndev->num_compute;
		break;
	case DRM_NPU_PARAM_NUM_COPY_RINGS:
		args->value = ndev->num_copy;
		break;
	case DRM_NPU_PARAM_NUM_CUS:
		args->value = ndev->num_cus;
		break;
	case DRM_NPU_PARAM_DEVMEM_SIZE:
		args->value = ndev->devmem_size;
		break;
	case DRM_NPU_PARAM_CLOCK_HZ:
		args->value = ndev->clock_hz;
		break;
	case DRM_NPU_PARAM_FEATURES:
		args->value = DRM_NPU_FEATURE_USERPTR |
			      DRM_NPU_FEATURE_TIMELINE |
			      DRM_NPU_FEATURE_PRIME |
			      DRM_NPU_FEATURE_COUNTERS |
			      DRM_NPU_FEATURE_CONTEXTS |
			      DRM_NPU_FEATURE_BO_PROTECT;
		if (ndev->features & NPU_FEATURE_TIMING)
			args->value |= DRM_NPU_FEATURE_TIMING_MODEL;
		if (ndev->devmem_size)
			args->value |= DRM_NPU_FEATURE_DEVMEM;
		if (ndev->devmem_size && ndev->devmem_bar_size)
			args->value |= DRM_NPU_FEATURE_DEVMEM_MMAP;
		if (ndev->features & NPU_FEATURE_USER_CODE)
			args->value |= DRM_NPU_FEATURE_USER_CODE;
		if (ndev->uq_entries)
			args->value |= DRM_NPU_FEATURE_USER_QUEUES;
		break;
	case DRM_NPU_PARAM_USERQ_MAX:
		args->value = READ_ONCE(npu_userq_max);
		break;
	case DRM_NPU_PARAM_USERQ_ENGINES:
		args->value = ndev->uq_entries ? ndev->uq_engines & 0xffff : 0;
		break;
	case DRM_NPU_PARAM_USERQ_RING_MAX:
		args->value = NPU_UQ_RING_SIZE_MAX;
		break;
	case DRM_NPU_PARAM_CU_THREADS:
		args->value = ndev->cu_threads;
		break;
	case DRM_NPU_PARAM_CU_SCRATCH_BYTES:
		args->value = ndev->cu_scratch;
		break;
	case DRM_NPU_PARAM_CU_CLOCK_MHZ:
		args->value = ndev->cu_clock_mhz;
		break;
	case DRM_NPU_PARAM_VA_SIZE:
		args->value = NPU_VA_END - NPU_VA_START;
		break;
	case DRM_NPU_PARAM_MAX_JOBS:
		args->value = NPU_MAX_JOBS;
		break;
	case DRM_NPU_PARAM_MAX_CMD_SIZE:
		args->value = NPU_IB_MAX_SIZE;
		break;
	case DRM_NPU_PARAM_JOB_TIMEOUT_MS:
		args->value = npu_job_timeout_ms;
		break;
	case DRM_NPU_PARAM_MAX_JOB_BOS:
		args->value = NPU_MAX_JOB_BOS;
		break;
	case DRM_NPU_PARAM_MAX_JOB_SYNCS:
		args->value = NPU_MAX_JOB_SYNCS;
		break;
	case DRM_NPU_PARAM_MAX_QUEUES:
		args->value = NPU_MAX_QUEUES;
		break;
	case DRM_NPU_PARAM_VA_START:
		args->value = NPU_VA_START;
		break;
	case DRM_NPU_PARAM_MAX_CONTEXTS:
		args->value = NPU_MAX_CTXS;
		break;
	case DRM_NPU_PARAM_CLOCK:
	case DRM_NPU_PARAM_LINK_BW_MBPS:
	case DRM_NPU_PARAM_MEM_BW_MBPS:
	case DRM_NPU_PARAM_CU_MOPS:
	case DRM_NPU_PARAM_LAUNCH_NS:
	case DRM_NPU_PARAM_COPY_NS:
		if (!drm_dev_enter(dev, &idx))
			return -ENODEV;
		switch (args->param) {
		case DRM_NPU_PARAM_CLOCK:
			args->value = npu_rd64(ndev, NPU_REG_CLOCK_LO);
			break;
		case DRM_NPU_PARAM_LINK_BW_MBPS:
			args->value = npu_rd(ndev, NPU_REG_LINK_BW_MBPS);
			break;
		case DRM_NPU_PARAM_MEM_BW_MBPS:
			args->value = npu_rd(ndev, NPU_REG_MEM_BW_MBPS);
			break;
		case DRM_NPU_PARAM_CU_MOPS:
			args->value = npu_rd(ndev, NPU_REG_CU_MOPS);
			break;
		case DRM_NPU_PARAM_LAUNCH_NS:
			args->value = npu_rd(ndev, NPU_REG_LAUNCH_NS);
			break;
		default:
			args->value = npu_rd(ndev, NPU_REG_COPY_NS);
			break;
		}
		drm_dev_exit(idx);
		break;
	default:
		ret = -EINVAL;
	}
	return ret;
}

static int npu_ioctl_get_fault(struct drm_device *dev, void *data,
			       struct drm_file *file)
{
	struct npu_file *nfile = file->driver_priv;
	struct drm_npu_get_fault *args = data;

	spin_lock_irq(&nfile->fault_lock);
	*args = nfile->fault;
	spin_unlock_irq(&nfile->fault_lock);
	return 0;
}

/* Entry @i of a user array @stride bytes apart: what fits of @src. */
static int npu_copy_out_entry(u64 array, u32 i, u32 stride, const void *src,
			      size_t size)
{
	void __user *dst = u64_to_user_ptr(array) + (size_t)i * stride;

	return copy_to_user(dst, src, min_t(size_t, size, stride)) ?
	       -EFAULT : 0;
}

/*
 * An engine's four counters from busy_lo on: a ring's and a user-queue
 * engine's registers share their order and spacing.
 */
static void npu_engine_counters(struct npu_device *ndev, u32 busy_lo,
				struct drm_npu_ring_counters *c)
{
	BUILD_BUG_ON(NPU_RING_CMDS_LO - NPU_RING_BUSY_LO != 8 ||
		     NPU_RING_BYTES_LO - NPU_RING_BUSY_LO != 16 ||
		     NPU_RING_OPS_LO - NPU_RING_BUSY_LO != 24);
	BUILD_BUG_ON(NPU_UQ_ENGINE_CMDS_LO - NPU_UQ_ENGINE_BUSY_LO != 8 ||
		     NPU_UQ_ENGINE_BYTES_LO - NPU_UQ_ENGINE_BUSY_LO != 16 ||
		     NPU_UQ_ENGINE_OPS_LO - NPU_UQ_ENGINE_BUSY_LO != 24);
	c->busy_ns = npu_rd64_counter(ndev, busy_lo);
	c->commands = npu_rd64_counter(ndev, busy_lo + 8);
	c->bytes = npu_rd64_counter(ndev, busy_lo + 16);
	c->ops = npu_rd64_counter(ndev, busy_lo + 24);
}

/*
 * Registers are read into kernel buffers inside drm_dev_enter() and copied
 * out after drm_dev_exit(): a user buffer that faults slowly (userfaultfd,
 * FUSE) must not hold off device removal.
 */
static int npu_ioctl_counters(struct drm_device *dev, void *data,
			      struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(dev);
	struct drm_npu_counters *args = data;
	struct drm_npu_ring_counters *rings, *engs;
	u64 *cus, *cycles = NULL, *instrs = NULL;
	u32 i, nr, nc, ne, neng, rstride, cstride;
	int idx, ret = 0;

	if ((args->ring_count && !args->rings) ||
	    (args->cu_count && !args->cu_busy_ns) || args->pad)
		return -EINVAL;
	if ((args->ring_stride &&
	     (args->ring_stride < NPU_RING_COUNTERS_SIZE_V1 ||
	      args->ring_stride > NPU_MAX_STRIDE)) ||
	    (args->cu_stride &&
	     (args->cu_stride < sizeof(u64) ||
	      args->cu_stride > NPU_MAX_STRIDE)))
		return -EINVAL;
	rstride = args->ring_stride ?: NPU_RING_COUNTERS_SIZE_V1;
	cstride = args->cu_stride ?: sizeof(u64);
	nr = min(args->ring_count, ndev->num_rings);
	nc = min(args->cu_count, ndev->num_cus);
	neng = ndev->uq_entries ? NPU_UQ_ENGINES_COMPUTE(ndev->uq_engines) +
				  NPU_UQ_ENGINES_COPY(ndev->uq_engines) : 0;
	/*
	 * No array: the count is not looked at, nor written (callers that
	 * reuse the struct for rings and units only need not reset it).
	 */
	ne = args->uq_engines ? min(args->uq_engine_count, neng) : 0;
	rings = kcalloc(nr, sizeof(*rings), GFP_KERNEL);
	engs = kcalloc(ne, sizeof(*engs), GFP_KERNEL);
	cus = kcalloc(nc, sizeof(*cus), GFP_KERNEL);
	if (args->cu_cycles)
		cycles = kcalloc(nc, sizeof(*cycles), GFP_KERNEL);
	if (args->cu_instructions)
		instrs = kcalloc(nc, sizeof(*instrs), GFP_KERNEL);
	if ((nr && !rings) || (nc && !cus) || (ne && !engs) ||
	    (nc && args->cu_cycles && !cycles) ||
	    (nc && args->cu_instructions && !instrs)) {
		ret = -ENOMEM;
		goto out;
	}

	if (!drm_dev_enter(dev, &idx)) {
		ret = -ENODEV;
		goto out;
	}
	args->clock = npu_rd64(ndev, NPU_REG_CLOCK_LO);
	for (i = 0; i < nr; i++)
		npu_engine_counters(ndev, NPU_RING_BASE(i) + NPU_RING_BUSY_LO,
				    &rings[i]);
	for (i = 0; i < ne; i++)
		npu_engine_counters(ndev, NPU_REG_UQ_ENGINE_CNT(i) +
				    NPU_UQ_ENGINE_BUSY_LO, &engs[i]);
	for (i = 0; i < nc; i++) {
		cus[i] = npu_rd64_counter(ndev, NPU_REG_CU_BUSY_LO(i));
		if (!(ndev->features & NPU_FEATURE_USER_CODE))
			continue;
		if (cycles)
			cycles[i] = npu_rd64_counter(ndev,
						     NPU_REG_CU_CYCLES_LO(i));
		if (instrs)
			instrs[i] = npu_rd64_counter(ndev,
						     NPU_REG_CU_INSTRS_LO(i));
	}
	drm_dev_exit(idx);

	for (i = 0; i < nr && !ret; i++)
		ret = npu_copy_out_entry(args->rings, i, rstride, &rings[i],
					 sizeof(rings[i]));
	for (i = 0; i < ne && !ret; i++)
		ret = npu_copy_out_entry(args->uq_engines, i, rstride, &engs[i],
					 sizeof(engs[i]));
	for (i = 0; i < nc && !ret; i++) {
		ret = npu_copy_out_entry(args->cu_busy_ns, i, cstride, &cus[i],
					 sizeof(u64));
		if (!ret && cycles)
			ret = npu_copy_out_entry(args->cu_cycles, i, cstride,
						 &cycles[i], sizeof(u64));
		if (!ret && instrs)
			ret = npu_copy_out_entry(args->cu_instructions, i,
						 cstride, &instrs[i],
						 sizeof(u64));
	}
	args->ring_count = ndev->num_rings;
	args->cu_count = ndev->num_cus;
	if (args->uq_engines)
		args->uq_engine_count = neng;
out:
	kfree(rings);
	kfree(engs);
	kfree(cus);
	kfree(cycles);
	kfree(instrs);
	return ret;
}

static const struct drm_ioctl_desc npu_ioctls[] = {
	DRM_IOCTL_DEF_DRV(NPU_GET_PARAM, npu_ioctl_get_param, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_BO_CREATE, npu_ioctl_bo_create, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_BO_INFO, npu_ioctl_bo_info, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_USERPTR, npu_ioctl_userptr, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_QUEUE_CREATE, npu_ioctl_queue_create,
			  DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_QUEUE_DESTROY, npu_ioctl_queue_destroy,
			  DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_SUBMIT, npu_ioctl_submit, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_BO_WAIT, npu_ioctl_bo_wait, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_GET_FAULT, npu_ioctl_get_fault, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_COUNTERS, npu_ioctl_counters, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_CTX_CREATE, npu_ioctl_ctx_create,
			  DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_CTX_DESTROY, npu_ioctl_ctx_destroy,
			  DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_BO_MAP, npu_ioctl_bo_map, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_BO_UNMAP, npu_ioctl_bo_unmap, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_BO_PROTECT, npu_ioctl_bo_protect,
			  DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_USERQ_CREATE, npu_ioctl_userq_create,
			  DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_USERQ_DESTROY, npu_ioctl_userq_destroy,
			  DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_USERQ_QUERY, npu_ioctl_userq_query,
			  DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_USERQ_WAIT_MEM, npu_ioctl_userq_wait_mem,
			  DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_USERQ_SIGNAL, npu_ioctl_userq_signal,
			  DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(NPU_USERQ_WAIT, npu_ioctl_userq_wait,
			  DRM_RENDER_ALLOW),
};

/* fdinfo: the keys of Documentation/gpu/drm-usage-stats.rst */
static void npu_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	struct npu_file *nfile = file->driver_priv;
	struct npu_device *ndev = nfile->ndev;
	u64 done[2], ns[2];

	/*
	 * Finished jobs' time plus the running ones' so far and the user
	 * queues'; again if a job retired in between (it would be counted
	 * twice, or not at all). vm_lock: no user queue is destroyed (its
	 * time moving into engine_ns) meanwhile.
	 */
	mutex_lock(&nfile->vm_lock);
	do {
		done[0] = atomic64_read(&nfile->engine_ns[0]);
		done[1] = atomic64_read(&nfile->engine_ns[1]);
		ns[0] = 0;
		ns[1] = 0;
		npu_rings_running_ns(ndev, nfile, ns);
	} while (done[0] != atomic64_read(&nfile->engine_ns[0]) ||
		 done[1] != atomic64_read(&nfile->engine_ns[1]));
	npu_userqs_busy_ns(nfile, ns);
	mutex_unlock(&nfile->vm_lock);
	drm_printf(p, "drm-engine-compute:\t%llu ns\n", done[0] + ns[0]);
	drm_printf(p, "drm-engine-capacity-compute:\t%u\n", ndev->num_compute);
	drm_printf(p, "drm-engine-copy:\t%llu ns\n", done[1] + ns[1]);
	drm_printf(p, "drm-engine-capacity-copy:\t%u\n", ndev->num_copy);
#ifdef NPU_HAVE_SHOW_FDINFO
	drm_show_memory_stats(p, file);
#endif
}

#ifdef NPU_HAVE_SHOW_FDINFO
#define NPU_SHOW_FDINFO		drm_show_fdinfo
#else
/* Sum of the file's GEM objects, printed as DRM's helper prints sizes. */
static void npu_fdinfo_memory(struct drm_printer *p, struct drm_file *file)
{
	static const char *const units[] = { "", " KiB", " MiB" };
	struct drm_gem_object *obj;
	u64 total = 0;
	unsigned int u;
	int id;

	spin_lock(&file->table_lock);
	idr_for_each_entry(&file->object_idr, obj, id)
		total += obj->size;
	spin_unlock(&file->table_lock);
	for (u = 0; u < ARRAY_SIZE(units) - 1; u++) {
		if (!total || !IS_ALIGNED(total, SZ_1K))
			break;
		total /= SZ_1K;
	}
	drm_printf(p, "drm-total-memory:\t%llu%s\n", total, units[u]);
}

/* What drm_show_fdinfo() prints on later kernels, then the driver's keys. */
static void npu_fdinfo_seq(struct seq_file *m, struct file *f)
{
	struct drm_file *file = f->private_data;
	struct drm_printer p = drm_seq_file_printer(m);
	struct npu_file *nfile = file->driver_priv;

	drm_printf(&p, "drm-driver:\t%s\n", file->minor->dev->driver->name);
	drm_printf(&p, "drm-client-id:\t%llu\n", nfile->client_id);
	drm_printf(&p, "drm-pdev:\t%s\n", dev_name(file->minor->dev->dev));
	npu_show_fdinfo(&p, file);
	npu_fdinfo_memory(&p, file);
}

#define NPU_SHOW_FDINFO		npu_fdinfo_seq
#endif

static const struct file_operations npu_fops = {
	.owner = THIS_MODULE,
#ifdef NPU_HAVE_ACCEL
	DRM_ACCEL_FOPS,
#else
	DRM_GEM_FOPS,
#endif
	.show_fdinfo = NPU_SHOW_FDINFO,
};

static const struct drm_driver npu_drm_driver = {
	.driver_features = DRIVER_GEM | DRIVER_SYNCOBJ |
			   DRIVER_SYNCOBJ_TIMELINE | NPU_DRIVER_FEATURES_NODE,
	.open = npu_open,
	.postclose = npu_postclose,
	.gem_create_object = npu_gem_create_object,
	.prime_handle_to_fd = drm_gem_prime_handle_to_fd,
	.prime_fd_to_handle = drm_gem_prime_fd_to_handle,
	.gem_prime_import_sg_table = npu_gem_prime_import_sg_table,
	NPU_DRIVER_PRIME_MMAP
	.debugfs_init = npu_debugfs_init,
#ifdef NPU_HAVE_SHOW_FDINFO
	.show_fdinfo = npu_show_fdinfo,
#endif
	.ioctls = npu_ioctls,
	.num_ioctls = ARRAY_SIZE(npu_ioctls),
	.fops = &npu_fops,
	.name = NPU_DRIVER_NAME,
	.desc = NPU_DRIVER_DESC,
	.date = "20261129",
	.major = 1,
	.minor = 0,
};

/* ---------------------------------------------------------------------- */
/* PCI */

static void npu_drm_release(struct drm_device *drm, void *arg)
{
	struct npu_device *ndev = arg;

	/* last reference: every file is closed, every entity gone */
	npu_rings_fini(ndev);
	/* probe failed after the table was made: removal did not free it */
	npu_userq_hw_fini(ndev);
	npu_userq_waits_fini(ndev);
	npu_userq_fini(ndev);
	drm_mm_takedown(&ndev->devmem_mm);
	ida_destroy(&ndev->ctx_ida);
	WARN_ON(!xa_empty(&ndev->user_ctxs));
	xa_destroy(&ndev->user_ctxs);
}

/**
 * npu_irqs_init() - enable MSI-X and request one vector per ring plus the
 * error vector
 * @ndev: device
 *
 * Return: 0 or a negative errno.
 */
static int npu_irqs_init(struct npu_device *ndev)
{
	struct pci_dev *pdev = ndev->pdev;
	/* the user-queue event vector comes after the error vector */
	int nvec = ndev->num_rings + 1 + (ndev->uq_events ? 1 : 0);
	int r, ret;

	ret = pci_alloc_irq_vectors(pdev, nvec, nvec, PCI_IRQ_MSIX);
	if (ret < 0)
		return ret;

	for (r = 0; r < ndev->num_rings; r++) {
		struct npu_ring *ring = &ndev->rings[r];

		ring->irq = pci_irq_vector(pdev, r);
		ret = request_irq(ring->irq, npu_ring_irq, 0, ring->name, ring);
		if (ret)
			goto err;
	}
	ndev->err_irq = pci_irq_vector(pdev, ndev->num_rings);
	ret = request_irq(ndev->err_irq, npu_error_irq, 0, "npu-error", ndev);
	if (ret)
		goto err;
	if (ndev->uq_events) {
		ndev->uq_irq = pci_irq_vector(pdev, ndev->num_rings + 1);
		ret = request_irq(ndev->uq_irq, npu_userq_irq, 0, "npu-userq",
				  ndev);
		if (ret) {
			ndev->uq_irq = 0;
			free_irq(ndev->err_irq, ndev);
			goto err;
		}
	}
	ndev->irqs_on = true;
	return 0;

err:
	while (r--)
		free_irq(ndev->rings[r].irq, &ndev->rings[r]);
	pci_free_irq_vectors(pdev);
	return ret;
}

/**
 * npu_irqs_fini() - free the vectors
 * @ndev: device
 */
static void npu_irqs_fini(struct npu_device *ndev)
{
	int r;

	if (!ndev->irqs_on)
		return;
	ndev->irqs_on = false;
	if (ndev->uq_irq)
		free_irq(ndev->uq_irq, ndev);
	ndev->uq_irq = 0;
	free_irq(ndev->err_irq, ndev);
	for (r = 0; r < ndev->num_rings; r++)
		free_irq(ndev->rings[r].irq, &ndev->rings[r]);
	pci_free_irq_vectors(ndev->pdev);
}

static int npu_hw_init(struct npu_device *ndev)
{
	struct pci_dev *pdev = ndev->pdev;
	u32 id;

	id = npu_rd(ndev, NPU_REG_ID);
	if (id != NPU_ID_MAGIC) {
		dev_err(&pdev->dev, "bad id register %#x\n", id);
		return -ENODEV;
	}
	ndev->version = npu_rd(ndev, NPU_REG_VERSION);
	if ((ndev->version >> 16) != (NPU_VERSION >> 16)) {
		dev_err(&pdev->dev, "unsupported version %#x\n", ndev->version);
		return -ENODEV;
	}
	npu_wr(ndev, NPU_REG_RESET, NPU_RESET_MAGIC);

	ndev->caps = npu_rd(ndev, NPU_REG_CAPS);
	ndev->features = npu_rd(ndev, NPU_REG_FEATURES);
	ndev->clock_hz = npu_rd(ndev, NPU_REG_CLOCK_HZ);
	ndev->devmem_size = npu_rd64(ndev, NPU_REG_DEVMEM_SIZE_LO);
	ndev->num_compute = NPU_CAPS_COMPUTE_RINGS(ndev->caps);
	ndev->num_copy = NPU_CAPS_COPY_RINGS(ndev->caps);
	ndev->num_cus = min_t(u32, NPU_CAPS_CUS(ndev->caps), NPU_MAX_CUS);
	if (ndev->features & NPU_FEATURE_USER_CODE) {
		ndev->cu_threads = npu_rd(ndev, NPU_REG_CU_THREADS);
		ndev->cu_scratch = npu_rd(ndev, NPU_REG_CU_SCRATCH);
		ndev->cu_clock_mhz = npu_rd(ndev, NPU_REG_CU_CLOCK_MHZ);
	}
	if (ndev->num_compute + ndev->num_copy > NPU_MAX_RINGS ||
	    ndev->num_compute + ndev->num_copy == 0) {
		dev_err(&pdev->dev, "bad caps %#x\n", ndev->caps);
		return -ENODEV;
	}
	ndev->num_rings = ndev->num_compute + ndev->num_copy;
	return 0;
}

static int npu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct npu_device *ndev;
	int ret, r;

	ndev = devm_drm_dev_alloc(&pdev->dev, &npu_drm_driver,
				  struct npu_device, drm);
	if (IS_ERR(ndev))
		return PTR_ERR(ndev);
	ndev->pdev = pdev;
	pci_set_drvdata(pdev, ndev);

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	pci_set_master(pdev);
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(48));
	if (ret)
		return ret;
	/* The MMU maps 4 KiB pages: a DMA segment may be any length. */
	dma_set_max_seg_size(&pdev->dev, UINT_MAX);
	ret = pcim_iomap_regions(pdev, BIT(NPU_BAR_REGS), NPU_DRIVER_NAME);
	if (ret)
		return ret;
	ndev->regs = pcim_iomap_table(pdev)[NPU_BAR_REGS];
	if (pci_resource_len(pdev, NPU_BAR_DEVMEM)) {
		ndev->devmem_bar_size = pci_resource_len(pdev, NPU_BAR_DEVMEM);
		ndev->devmem_bar =
			devm_ioremap_wc(&pdev->dev,
					pci_resource_start(pdev, NPU_BAR_DEVMEM),
					ndev->devmem_bar_size);
		if (!ndev->devmem_bar)
			ndev->devmem_bar_size = 0;
	}

	ret = npu_hw_init(ndev);
	if (ret)
		return ret;
	/*
	 * New device-memory BOs are cleared through the BAR: only the part
	 * the CPU reaches is handed out, so that no BO keeps what its
	 * previous owner left in it.
	 */
	if (ndev->devmem_size > ndev->devmem_bar_size) {
		dev_warn(&pdev->dev,
			 "%llu of %llu MiB device memory reachable through BAR%d: using that\n",
			 (u64)ndev->devmem_bar_size >> 20,
			 ndev->devmem_size >> 20, NPU_BAR_DEVMEM);
		ndev->devmem_size = ndev->devmem_bar_size;
	}

	mutex_init(&ndev->devmem_lock);
	drm_mm_init(&ndev->devmem_mm, 0, ndev->devmem_size);
	ida_init(&ndev->ctx_ida);
	xa_init(&ndev->user_ctxs);
	mutex_init(&ndev->ctx_lock);
	INIT_LIST_HEAD(&ndev->ctx_list);
	mutex_init(&ndev->bo_lock);
	mutex_init(&ndev->uq_lock);
	ida_init(&ndev->uq_ida);
	xa_init(&ndev->user_userqs);
	xa_init(&ndev->uq_queues);
	spin_lock_init(&ndev->uq_event_lock);
	init_waitqueue_head(&ndev->uq_wq);
	spin_lock_init(&ndev->uq_fence_lock);
	INIT_LIST_HEAD(&ndev->uq_fences);
	INIT_LIST_HEAD(&ndev->uq_waits);
	INIT_WORK(&ndev->uq_wait_work, npu_userq_wait_work);
	INIT_WORK(&ndev->uq_halt_work, npu_userq_halt_work);
	INIT_DELAYED_WORK(&ndev->uq_watchdog, npu_userq_watchdog);
	INIT_LIST_HEAD(&ndev->bo_list);
	init_waitqueue_head(&ndev->jobs_wq);
	atomic_set(&ndev->jobs_alive, 0);
	init_llist_head(&ndev->free_jobs);
	INIT_WORK(&ndev->free_work, npu_jobs_free_work);

	ret = npu_rings_init(ndev, &npu_sched_ops);
	if (ret) {
		drm_mm_takedown(&ndev->devmem_mm);
		return ret;
	}
	for (r = 0; r < ndev->num_rings; r++) {
		struct npu_ring *ring = &ndev->rings[r];
		u32 k = ring->kind;
		u32 i = k == DRM_NPU_RING_KIND_COMPUTE ? r :
							 r - ndev->num_compute;

		ndev->sched_lists[k][i] = &ring->sched;
	}
	ret = drmm_add_action_or_reset(&ndev->drm, npu_drm_release, ndev);
	if (ret)
		return ret;
	ret = npu_userq_hw_init(ndev);
	if (ret)
		return ret;

	ret = npu_irqs_init(ndev);
	if (ret)
		return ret;
	npu_rings_hw_start(ndev);

	ret = drm_dev_register(&ndev->drm, 0);
	if (ret)
		goto err_irqs;
#ifdef NPU_HAVE_ACCEL
	/* accel minors do not call &drm_driver.debugfs_init */
	npu_debugfs_create(ndev, ndev->drm.debugfs_root);
#endif

	dev_info(&pdev->dev,
		 "npu %u.%u: %u compute + %u copy rings, %u units, %llu MiB device memory\n",
		 ndev->version >> 16, ndev->version & 0xffff, ndev->num_compute,
		 ndev->num_copy, ndev->num_cus, ndev->devmem_size >> 20);
	return 0;

err_irqs:
	npu_rings_hw_stop(ndev);
	npu_irqs_fini(ndev);
	return ret;
}

static void npu_remove(struct pci_dev *pdev)
{
	struct npu_device *ndev = pci_get_drvdata(pdev);
	int r;

	/*
	 * New ioctls fail with -ENODEV; waits for drm_dev_enter() sections.
	 * It then zaps every user mapping of the device's BOs
	 * (unmap_mapping_range() on the DRM device's address space): the next
	 * access to a device-memory mapping faults, and npu_devmem_fault()
	 * answers SIGBUS, so no process keeps access to the BAR.
	 */
	drm_dev_unplug(&ndev->drm);
	npu_rings_hw_stop(ndev);
	npu_wr(ndev, NPU_REG_RESET, NPU_RESET_MAGIC);
	npu_irqs_fini(ndev);
	/* whatever was on the hardware is lost */
	for (r = 0; r < ndev->num_rings; r++)
		npu_ring_fail_all(&ndev->rings[r], -ENODEV);
	/*
	 * The device is reset and does no more DMA: its DMA memory goes now,
	 * not when the last open file goes (the DMA API requires it before
	 * the driver is unbound).
	 */
	npu_ctxs_hw_fini(ndev);
	npu_bos_hw_fini(ndev);
	npu_rings_hw_fini(ndev);
	npu_userq_hw_fini(ndev);
}

/*
 * Reboot, kexec, power-off: the rings must not keep doing DMA into memory
 * the next kernel owns. The driver stays bound; nothing is freed.
 */
static void npu_shutdown(struct pci_dev *pdev)
{
	struct npu_device *ndev = pci_get_drvdata(pdev);
	int idx;

	if (drm_dev_enter(&ndev->drm, &idx)) {
		npu_rings_hw_stop(ndev);
		npu_wr(ndev, NPU_REG_RESET, NPU_RESET_MAGIC);
		drm_dev_exit(idx);
	}
	pci_clear_master(pdev);
}

static const struct pci_device_id npu_pci_ids[] = {
	{ PCI_DEVICE(NPU_PCI_VENDOR_ID, NPU_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, npu_pci_ids);

static struct pci_driver npu_pci_driver = {
	.name = NPU_DRIVER_NAME,
	.id_table = npu_pci_ids,
	.probe = npu_probe,
	.remove = npu_remove,
	.shutdown = npu_shutdown,
	.dev_groups = npu_dev_groups,
};
module_pci_driver(npu_pci_driver);

MODULE_AUTHOR("The npu project");
MODULE_DESCRIPTION(NPU_DRIVER_DESC);
MODULE_LICENSE("GPL");
/* removal unmaps imported dma-bufs itself */
MODULE_IMPORT_NS(DMA_BUF);
