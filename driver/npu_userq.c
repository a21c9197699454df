// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_userq.c - user-mode queues: USERQ_CREATE, USERQ_DESTROY, USERQ_QUERY
 * and the doorbell page.
 *
 * A user queue is a ring in the caller's own memory that the caller fills
 * with packets and rings through a doorbell page mapped into its process;
 * the device's scheduler runs it (Documentation/hw/npu.rst, "User queues").
 * The driver owns the device's descriptor table (its accessors and the
 * queue commands are in npu_userq_desc.c): it validates what the
 * caller gives, writes the descriptor, maps the queue on the device
 * (UQ_CMD MAP) and, at destruction or close, stops and unmaps it.
 *
 * Each file gets one page of BAR1 at its first queue, as a GEM object
 * without pages (&struct npu_doorbell) whose mmap offset only that file
 * may use (drm_vma_node_allow()); its queues' doorbells are in that page.
 * Its wait page (one u64 wait counter per doorbell, written by the kernel
 * alone) is mapped read-only on the device in each context with queues,
 * and read-only for the CPU at an mmap offset of its own, also the file's
 * alone.
 *
 * Locks, outermost first: &npu_file.vm_lock (the file's queues, its
 * doorbell page and the pins of the mappings a queue uses), then
 * &npu_device.uq_lock (queue commands, the descriptor table, the BAR1 page
 * allocator and the per-user counts).
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_vma_manager.h>

#include "npu_gem.h"
#include "npu_mmu.h"
#include "npu_regs.h"
#include "npu_userq.h"
#include "npu_userq_desc.h"
#include "npu_userq_event.h"

/* Descriptors the driver gives the device (256 bytes each). */
#define NPU_USERQ_TABLE_MAX	4096

unsigned int npu_userq_max = 256;

static int npu_param_set_userq_max(const char *val,
				   const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, NPU_UQ_DOORBELLS_PER_PAGE);
}

static const struct kernel_param_ops npu_userq_max_ops = {
	.set = npu_param_set_userq_max,
	.get = param_get_uint,
};

module_param_cb(userq_max, &npu_userq_max_ops, &npu_userq_max, 0644);
MODULE_PARM_DESC(userq_max,
		 "User queues one open file may have, 1..512 (default 256)");

static unsigned int npu_max_user_userqs = 1024;
module_param_named(max_user_userqs, npu_max_user_userqs, uint, 0644);
MODULE_PARM_DESC(max_user_userqs,
		 "User queues one user may have per device; 0: no limit (default 1024)");

/**
 * struct npu_doorbell - a file's doorbell page, as a GEM object without
 * pages so that DRM's offset manager hands out and checks its mmap offset
 * @base: GEM object (one page)
 * @page: page of BAR1
 */
struct npu_doorbell {
	struct drm_gem_object base;
	u32 page;
};

#define to_npu_doorbell(o) container_of(o, struct npu_doorbell, base)

/**
 * npu_userq_hw_init() - give the device its descriptor table
 * @ndev: device, reset, before any file is opened; &npu_device.uq_lock,
 *	&npu_device.uq_ida and &npu_device.user_userqs initialised
 *
 * Nothing to do (and no error) when the device has no user-queue engines.
 *
 * Return: 0 or -ENOMEM.
 */
int npu_userq_hw_init(struct npu_device *ndev)
{
	struct pci_dev *pdev = ndev->pdev;
	u32 entries;

	if (!(ndev->features & NPU_FEATURE_USER_QUEUES))
		return 0;
	ndev->uq_engines = npu_rd(ndev, NPU_REG_UQ_ENGINES);
	ndev->uq_db_pages = npu_rd(ndev, NPU_REG_UQ_DOORBELL_PAGES);
	entries = min_t(u32, npu_rd(ndev, NPU_REG_UQ_MAX_QUEUES),
			NPU_USERQ_TABLE_MAX);
	if (!entries || !ndev->uq_db_pages ||
	    pci_resource_len(pdev, NPU_BAR_DOORBELL) <
	    (resource_size_t)ndev->uq_db_pages * NPU_PAGE_SIZE) {
		dev_warn(&pdev->dev, "user queues without table or BAR%d\n",
			 NPU_BAR_DOORBELL);
		return 0;
	}
	ndev->uq_db_used = bitmap_zalloc(ndev->uq_db_pages, GFP_KERNEL);
	if (!ndev->uq_db_used)
		return -ENOMEM;
	ndev->uq_table = dma_alloc_coherent(&pdev->dev,
					    (size_t)entries * NPU_UQD_SIZE,
					    &ndev->uq_table_dma, GFP_KERNEL);
	if (!ndev->uq_table) {
		bitmap_free(ndev->uq_db_used);
		ndev->uq_db_used = NULL;
		return -ENOMEM;
	}
	ndev->uq_entries = entries;
	ndev->uq_db_base = pci_resource_start(pdev, NPU_BAR_DOORBELL);
	npu_wr(ndev, NPU_REG_UQ_TABLE_BASE_LO, lower_32_bits(ndev->uq_table_dma));
	npu_wr(ndev, NPU_REG_UQ_TABLE_BASE_HI, upper_32_bits(ndev->uq_table_dma));
	npu_wr(ndev, NPU_REG_UQ_TABLE_ENTRIES, entries);
	return npu_userq_events_init(ndev);
}

/**
 * npu_userq_hw_fini() - free the descriptor table
 * @ndev: device, reset (no queue is mapped, no DMA is done), or never
 *	registered
 */
void npu_userq_hw_fini(struct npu_device *ndev)
{
	/* waiters see the device gone; the works take uq_lock */
	wake_up_all(&ndev->uq_wq);
	cancel_delayed_work_sync(&ndev->uq_watchdog);
	cancel_work_sync(&ndev->uq_halt_work);
	flush_work(&ndev->uq_wait_work);
	npu_userq_fences_cancel(ndev, NULL, -ENODEV);
	npu_userq_events_fini(ndev);
	mutex_lock(&ndev->uq_lock);
	if (ndev->uq_table)
		dma_free_coherent(ndev->drm.dev,
				  (size_t)ndev->uq_entries * NPU_UQD_SIZE,
				  ndev->uq_table, ndev->uq_table_dma);
	ndev->uq_table = NULL;
	mutex_unlock(&ndev->uq_lock);
}

/**
 * npu_userq_fini() - last reference to the device: free what is left
 * @ndev: device; every file is closed
 */
void npu_userq_fini(struct npu_device *ndev)
{
	bitmap_free(ndev->uq_db_used);
	ndev->uq_db_used = NULL;
	ida_destroy(&ndev->uq_ida);
	WARN_ON(!xa_empty(&ndev->uq_queues));
	xa_destroy(&ndev->uq_queues);
	WARN_ON(!xa_empty(&ndev->user_userqs));
	xa_destroy(&ndev->user_userqs);
}

/* Count one more queue of @uid, within max_user_userqs; uq_lock held. */
static int npu_user_uq_charge(struct npu_device *ndev, kuid_t uid)
{
	unsigned long key = from_kuid(&init_user_ns, uid);
	unsigned int limit = READ_ONCE(npu_max_user_userqs);
	unsigned long n = 0;
	void *entry;

	lockdep_assert_held(&ndev->uq_lock);
	entry = xa_load(&ndev->user_userqs, key);
	if (entry)
		n = xa_to_value(entry);
	if (limit && n >= limit)
		return -EDQUOT;
	return xa_err(xa_store(&ndev->user_userqs, key, xa_mk_value(n + 1),
			       GFP_KERNEL));
}

/* Undo npu_user_uq_charge(); uq_lock held. */
static void npu_user_uq_uncharge(struct npu_device *ndev, kuid_t uid)
{
	unsigned long key = from_kuid(&init_user_ns, uid);
	unsigned long n = xa_to_value(xa_load(&ndev->user_userqs, key));

	lockdep_assert_held(&ndev->uq_lock);
	if (WARN_ON(!n))
		return;
	if (n == 1)
		xa_erase(&ndev->user_userqs, key);
	else	/* replaces an existing entry: allocates nothing */
		xa_store(&ndev->user_userqs, key, xa_mk_value(n - 1),
			 GFP_NOWAIT);
}

/* ---------------------------------------------------------------------- */
/* the doorbell page */

static void npu_doorbell_free(struct drm_gem_object *obj)
{
	struct npu_doorbell *db = to_npu_doorbell(obj);
	struct npu_device *ndev = to_npu_device(obj->dev);

	/* no mapping and no file is left: the page may go to another file */
	mutex_lock(&ndev->uq_lock);
	clear_bit(db->page, ndev->uq_db_used);
	mutex_unlock(&ndev->uq_lock);
	drm_gem_free_mmap_offset(obj);
	drm_gem_object_release(obj);
	kfree(db);
}

static int npu_doorbell_mmap(struct drm_gem_object *obj,
			     struct vm_area_struct *vma)
{
	struct npu_doorbell *db = to_npu_doorbell(obj);
	struct npu_device *ndev = to_npu_device(obj->dev);
	unsigned long pfn;
	int idx, ret;

	/* a doorbell is only ever written; a writable mapping reads too */
	if (!(vma->vm_flags & VM_WRITE) || (vma->vm_flags & VM_EXEC))
		return -EINVAL;
	if (vma->vm_end - vma->vm_start != NPU_PAGE_SIZE)
		return -EINVAL;
	if (!drm_dev_enter(obj->dev, &idx))
		return -ENODEV;
	pfn = (ndev->uq_db_base + (resource_size_t)db->page * NPU_PAGE_SIZE) >>
	      PAGE_SHIFT;
	/* a fork()ed child does not inherit the parent's doorbells */
	npu_vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND |
			 VM_DONTDUMP | VM_DONTCOPY);
	vma->vm_page_prot = pgprot_noncached(vm_get_page_prot(vma->vm_flags));
	ret = io_remap_pfn_range(vma, vma->vm_start, pfn, NPU_PAGE_SIZE,
				 vma->vm_page_prot);
	drm_dev_exit(idx);
	return ret;
}

static const struct vm_operations_struct npu_doorbell_vm_ops = {
	.open = drm_gem_vm_open,
	.close = drm_gem_vm_close,
};

static const struct drm_gem_object_funcs npu_doorbell_funcs = {
	.free = npu_doorbell_free,
	.mmap = npu_doorbell_mmap,
	.vm_ops = &npu_doorbell_vm_ops,
};

/* The file's doorbell page, allocated at its first queue; vm_lock held. */
static int npu_doorbell_get(struct npu_file *nfile, struct drm_file *file)
{
	struct npu_device *ndev = nfile->ndev;
	struct npu_doorbell *db;
	unsigned long page;
	int ret;

	lockdep_assert_held(&nfile->vm_lock);
	if (nfile->doorbell)
		return 0;

	db = kzalloc(sizeof(*db), GFP_KERNEL);
	if (!db)
		return -ENOMEM;
	mutex_lock(&ndev->uq_lock);
	page = find_first_zero_bit(ndev->uq_db_used, ndev->uq_db_pages);
	if (page < ndev->uq_db_pages)
		set_bit(page, ndev->uq_db_used);
	mutex_unlock(&ndev->uq_lock);
	if (page >= ndev->uq_db_pages) {
		kfree(db);
		return -ENOSPC;
	}
	db->page = page;
	db->base.funcs = &npu_doorbell_funcs;
	/* from here on the free callback gives the page back */
	drm_gem_private_object_init(&ndev->drm, &db->base, NPU_PAGE_SIZE);
	ret = drm_gem_create_mmap_offset(&db->base);
	if (!ret)
		ret = drm_vma_node_allow(&db->base.vma_node, file);
	if (ret) {
		drm_gem_object_put(&db->base);
		return ret;
	}
	nfile->doorbell = &db->base;
	return 0;
}

/*
 * The file's wait page, and its read-only mapping in @ctx; vm_lock held.
 * The page is only written by the kernel (USERQ_WAIT); the CPU maps it
 * read-only at an mmap offset that only @file may use.
 */
static int npu_wait_page_get(struct npu_file *nfile, struct drm_file *file,
			     struct npu_ctx *ctx)
{
	struct npu_bo *bo;
	int ret;

	lockdep_assert_held(&nfile->vm_lock);
	if (!nfile->wait_bo) {
		bo = npu_bo_create_read_only(nfile->ndev);
		if (IS_ERR(bo))
			return PTR_ERR(bo);
		ret = drm_gem_create_mmap_offset(&bo->base.base);
		if (!ret)
			ret = drm_vma_node_allow(&bo->base.base.vma_node, file);
		if (ret) {
			drm_gem_object_put(&bo->base.base);
			return ret;
		}
		nfile->wait_bo = bo;
	}
	if (ctx->wait_map)
		return 0;
	ret = npu_mapping_create(ctx, nfile->wait_bo, 0, NPU_MAP_READ_ONLY,
				 &ctx->wait_map);
	if (ret)
		ctx->wait_map = NULL;
	return ret;
}

/* Drop @ctx's mapping of the wait page; vm_lock held. */
static void npu_wait_page_unmap(struct npu_file *nfile, struct npu_ctx *ctx)
{
	lockdep_assert_held(&nfile->vm_lock);
	npu_mapping_put(ctx->wait_map);
	ctx->wait_map = NULL;
}

/* ---------------------------------------------------------------------- */
/* queues */

/* Is the page of @va mapped writable for the device in @ctx? */
static bool npu_userq_va_writable(struct npu_ctx *ctx, u64 va)
{
	return npu_ctx_va_pte(ctx, va) & NPU_PTE_WRITE;
}

/*
 * Stop and unmap @uq on the device and give back what it holds; the
 * caller holds the file's vm_lock and took @uq out of &npu_file.userqs.
 * Waiters still holding a reference see @uq->dead.
 */
static void npu_userq_free(struct npu_file *nfile, struct npu_userq *uq)
{
	struct npu_device *ndev = nfile->ndev;
	int idx;

	lockdep_assert_held(&nfile->vm_lock);

	mutex_lock(&ndev->uq_lock);
	xa_erase(&ndev->uq_queues, uq->index);
	WRITE_ONCE(uq->dead, true);
	if (drm_dev_enter(&ndev->drm, &idx)) {
		/*
		 * STOP aborts the packet in execution (bounded, like a ring
		 * reset); the stopped queue is on no engine, so UNMAP takes
		 * effect at once.
		 */
		npu_uq_cmd(ndev, NPU_UQ_CMD_STOP, uq->index);
		npu_uq_cmd(ndev, NPU_UQ_CMD_UNMAP, uq->index);
		/* fdinfo's engine time keeps what the queue ran */
		atomic64_add(npu_uqd_rd64(ndev, uq->index, NPU_UQD_BUSY_NS),
			     &nfile->engine_ns[uq->kind == DRM_NPU_RING_KIND_COPY]);
		drm_dev_exit(idx);
	}
	npu_user_uq_uncharge(ndev, uq->uid);
	mutex_unlock(&ndev->uq_lock);
	ida_free(&ndev->uq_ida, uq->index);
	__clear_bit(uq->doorbell, nfile->doorbells_used);
	nfile->nuserqs--;
	uq->ring_map->userq_pins--;
	uq->wb_map->userq_pins--;
	npu_mapping_put(uq->ring_map);
	npu_mapping_put(uq->wb_map);
	npu_ctx_put(uq->ctx);
	uq->ring_map = NULL;
	uq->wb_map = NULL;
	uq->ctx = NULL;
	/* the struct and wait_bo live on while USERQ_WAITs are pending */
	npu_userq_fences_cancel(ndev, uq, -ECANCELED);
	wake_up_all(&ndev->uq_wq);
	npu_userq_put(uq);
}

/**
 * npu_userqs_busy_ns() - busy time of a file's live user queues
 * @nfile: the file
 * @ns: [0] compute-class, [1] copy-class queues: busy time added here
 *
 * Each queue's descriptor counts its completed packets (``busy_ns``); a
 * packet executing now counts from its ``run_start_ns`` to the device
 * clock, so that a long kernel shows while it runs. The two fields are
 * read as one under the descriptor's ``state_seq``: a packet that ends
 * between the reads is counted once, not twice.
 */
void npu_userqs_busy_ns(struct npu_file *nfile, u64 ns[2])
{
	struct npu_device *ndev = nfile->ndev;
	struct npu_userq *uq;
	unsigned long id;
	u64 start, busy, now;
	u32 seq;
	int idx;

	lockdep_assert_held(&nfile->vm_lock);
	if (!drm_dev_enter(&ndev->drm, &idx))
		return;
	xa_for_each(&nfile->userqs, id, uq) {
		/* again if the device wrote the state meanwhile (seqcount) */
		do {
			seq = npu_uqd_rd32(ndev, uq->index, NPU_UQD_STATE_SEQ);
			smp_rmb(); /* fields after seq; pairs with device wmb */
			start = npu_uqd_rd64(ndev, uq->index,
					     NPU_UQD_RUN_START_NS);
			busy = npu_uqd_rd64(ndev, uq->index, NPU_UQD_BUSY_NS);
			now = npu_rd64(ndev, NPU_REG_CLOCK_LO);
			smp_rmb(); /* fields before the second seq read */
		} while ((seq & 1) ||
			 seq != npu_uqd_rd32(ndev, uq->index,
					     NPU_UQD_STATE_SEQ));
		if (start && now > start)
			busy += now - start;
		ns[uq->kind == DRM_NPU_RING_KIND_COPY] += busy;
	}
	drm_dev_exit(idx);
}

static int npu_userq_check(struct npu_device *ndev,
			   const struct drm_npu_userq_create *args)
{
	u32 engines;

	if (args->flags || args->queue_id)
		return -EINVAL;
	if (args->kind > DRM_NPU_RING_KIND_COPY ||
	    args->priority > DRM_NPU_PRIORITY_HIGH)
		return -EINVAL;
	if (!is_power_of_2(args->ring_size) ||
	    args->ring_size < NPU_UQ_RING_SIZE_MIN ||
	    args->ring_size > NPU_UQ_RING_SIZE_MAX ||
	    !IS_ALIGNED(args->ring_va, NPU_UQ_RING_SIZE_MIN) ||
	    !IS_ALIGNED(args->wb_va, NPU_UQ_WB_SIZE))
		return -EINVAL;
	if (args->priority == DRM_NPU_PRIORITY_HIGH && !capable(CAP_SYS_NICE))
		return -EACCES;
	if (!ndev->uq_table)
		return -ENODEV;
	engines = args->kind == DRM_NPU_RING_KIND_COMPUTE ?
		  NPU_UQ_ENGINES_COMPUTE(ndev->uq_engines) :
		  NPU_UQ_ENGINES_COPY(ndev->uq_engines);
	return engines ? 0 : -ENODEV;
}

/* Fill descriptor @uq->index and map the queue; uq_lock held. */
static int npu_userq_map(struct npu_device *ndev, struct npu_userq *uq,
			 const struct drm_npu_userq_create *args, u32 db_page)
{
	u32 config = args->priority << NPU_UQ_CONFIG_PRIO_SHIFT;
	u32 err;
	int idx;

	lockdep_assert_held(&ndev->uq_lock);
	if (args->kind == DRM_NPU_RING_KIND_COPY)
		config |= NPU_UQ_CONFIG_COPY;
	memset(npu_uqd(ndev, uq->index), 0, NPU_UQD_SIZE);
	npu_uqd_wr64(ndev, uq->index, NPU_UQD_RING_VA, args->ring_va);
	npu_uqd_wr32(ndev, uq->index, NPU_UQD_RING_SIZE, args->ring_size);
	npu_uqd_wr32(ndev, uq->index, NPU_UQD_CONFIG, config);
	npu_uqd_wr64(ndev, uq->index, NPU_UQD_WB_VA, args->wb_va);
	npu_uqd_wr32(ndev, uq->index, NPU_UQD_CTX, uq->ctx->id);
	npu_uqd_wr32(ndev, uq->index, NPU_UQD_DOORBELL,
		     NPU_UQ_DOORBELL(db_page, uq->doorbell));
	npu_uqd_wr64(ndev, uq->index, NPU_UQD_PT_ROOT, uq->ctx->root_dma);

	if (!drm_dev_enter(&ndev->drm, &idx))
		return -ENODEV;
	/* the writes above reach memory before the device reads them */
	wmb();
	err = npu_uq_cmd(ndev, NPU_UQ_CMD_MAP, uq->index);
	drm_dev_exit(idx);
	if (err) {
		drm_warn(&ndev->drm, "user queue %u: MAP failed: %u\n",
			 uq->index, err);
		return -EIO;
	}
	return 0;
}

/**
 * npu_ioctl_userq_create() - DRM_IOCTL_NPU_USERQ_CREATE
 * @dev: DRM device
 * @data: &struct drm_npu_userq_create
 * @file: DRM file
 *
 * Return: 0 or a negative errno.
 */
int npu_ioctl_userq_create(struct drm_device *dev, void *data,
			   struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(dev);
	struct npu_file *nfile = file->driver_priv;
	struct drm_npu_userq_create *args = data;
	struct npu_userq *uq;
	u32 id, db_page;
	int ret, index;

	ret = npu_userq_check(ndev, args);
	if (ret)
		return ret;
	uq = kzalloc(sizeof(*uq), GFP_KERNEL);
	if (!uq)
		return -ENOMEM;
	kref_init(&uq->ref);
	uq->nfile = nfile;
	uq->fence_context = dma_fence_context_alloc(1);
	uq->uid = current_uid();

	mutex_lock(&nfile->vm_lock);
	if (nfile->nuserqs >= READ_ONCE(npu_userq_max)) {
		ret = -ENOSPC;
		goto err_free;
	}
	uq->ctx = npu_file_ctx_lookup(nfile, args->ctx_id);
	if (!uq->ctx) {
		ret = -ENOENT;
		goto err_free;
	}
	/* the file's own mappings in its own context: nothing else is */
	uq->ring_map = npu_ctx_find_va(uq->ctx, args->ring_va, args->ring_size);
	uq->wb_map = npu_ctx_find_va(uq->ctx, args->wb_va, NPU_UQ_WB_SIZE);
	if (!uq->ring_map || !uq->wb_map) {
		ret = -ENOENT;
		goto err_maps;
	}
	if (!npu_userq_va_writable(uq->ctx, args->wb_va)) {
		ret = -EACCES;
		goto err_maps;
	}
	ret = npu_doorbell_get(nfile, file);
	if (!ret)
		ret = npu_wait_page_get(nfile, file, uq->ctx);
	if (ret)
		goto err_maps;
	db_page = to_npu_doorbell(nfile->doorbell)->page;
	/* below npu_userq_max <= NPU_UQ_DOORBELLS_PER_PAGE: one is free */
	uq->doorbell = find_first_zero_bit(nfile->doorbells_used,
					   NPU_UQ_DOORBELLS_PER_PAGE);
	ret = xa_alloc(&nfile->userqs, &id, uq, NPU_USERQ_IDS, GFP_KERNEL);
	if (ret) {
		ret = ret == -EBUSY ? -ENOSPC : ret;
		goto err_maps;
	}
	uq->id = id;
	index = ida_alloc_max(&ndev->uq_ida, ndev->uq_entries - 1, GFP_KERNEL);
	if (index < 0) {
		ret = index;
		goto err_id;
	}
	uq->index = index;
	uq->kind = args->kind;

	mutex_lock(&ndev->uq_lock);
	ret = npu_user_uq_charge(ndev, uq->uid);
	if (!ret)
		/* the watchdog and the halt work find it there */
		ret = xa_err(xa_store(&ndev->uq_queues, uq->index, uq,
				      GFP_KERNEL));
	if (!ret) {
		ret = npu_userq_map(ndev, uq, args, db_page);
		if (ret)
			xa_erase(&ndev->uq_queues, uq->index);
	}
	if (ret && ret != -EDQUOT)
		npu_user_uq_uncharge(ndev, uq->uid);
	mutex_unlock(&ndev->uq_lock);
	if (ret)
		goto err_index;

	__set_bit(uq->doorbell, nfile->doorbells_used);
	nfile->nuserqs++;
	/* a new queue's counter starts at 0 */
	uq->wait_bo = nfile->wait_bo;
	drm_gem_object_get(&uq->wait_bo->base.base);
	npu_wait_counter_write(uq, 0);
	uq->ring_map->userq_pins++;
	uq->wb_map->userq_pins++;
	mutex_unlock(&nfile->vm_lock);

	args->queue_id = id;
	args->doorbell_offset = (u64)uq->doorbell * sizeof(u64);
	args->mmap_offset = drm_vma_node_offset_addr(&nfile->doorbell->vma_node);
	args->wait_va = uq->ctx->wait_map->node.start +
			(u64)uq->doorbell * sizeof(u64);
	args->wait_mmap_offset =
		drm_vma_node_offset_addr(&uq->wait_bo->base.base.vma_node);
	npu_userq_watchdog_kick(ndev);
	return 0;

err_index:
	ida_free(&ndev->uq_ida, uq->index);
err_id:
	xa_erase(&nfile->userqs, id);
err_maps:
	npu_mapping_put(uq->ring_map);
	npu_mapping_put(uq->wb_map);
	npu_ctx_put(uq->ctx);
err_free:
	mutex_unlock(&nfile->vm_lock);
	kfree(uq);
	if (ret == -EBUSY)	/* ida: no descriptor left */
		ret = -ENOSPC;
	return ret;
}

/**
 * npu_ioctl_userq_destroy() - DRM_IOCTL_NPU_USERQ_DESTROY
 * @dev: DRM device
 * @data: &struct drm_npu_userq_destroy
 * @file: DRM file
 *
 * Return: 0 or a negative errno.
 */
int npu_ioctl_userq_destroy(struct drm_device *dev, void *data,
			    struct drm_file *file)
{
	struct npu_file *nfile = file->driver_priv;
	struct drm_npu_userq_destroy *args = data;
	struct npu_userq *uq;

	if (args->pad)
		return -EINVAL;
	mutex_lock(&nfile->vm_lock);
	uq = xa_erase(&nfile->userqs, args->queue_id);
	if (uq)
		npu_userq_free(nfile, uq);
	mutex_unlock(&nfile->vm_lock);
	return uq ? 0 : -ENOENT;
}

/**
 * npu_ioctl_userq_query() - DRM_IOCTL_NPU_USERQ_QUERY
 * @dev: DRM device
 * @data: &struct drm_npu_userq_query
 * @file: DRM file
 *
 * Return: 0 or a negative errno.
 */
int npu_ioctl_userq_query(struct drm_device *dev, void *data,
			  struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(dev);
	struct npu_file *nfile = file->driver_priv;
	struct drm_npu_userq_query *args = data;
	struct npu_userq *uq;
	u32 i, sts;
	int idx, ret = 0;

	mutex_lock(&nfile->vm_lock);
	uq = xa_load(&nfile->userqs, args->queue_id);
	if (!uq) {
		ret = -ENOENT;
		goto out;
	}
	/* the table is freed when the device goes */
	if (!drm_dev_enter(dev, &idx)) {
		ret = -ENODEV;
		goto out;
	}
	i = uq->index;
	sts = npu_uqd_rd32(ndev, i, NPU_UQD_STATUS);
	args->status = sts & (DRM_NPU_USERQ_MAPPED | DRM_NPU_USERQ_IDLE |
			      DRM_NPU_USERQ_WAITING | DRM_NPU_USERQ_HALTED |
			      DRM_NPU_USERQ_RUNNING);
	/* pairs with the watchdog's: its fault record is there */
	if (smp_load_acquire(&uq->stopped))
		args->status |= DRM_NPU_USERQ_STOPPED;
	args->error = npu_uqd_rd32(ndev, i, NPU_UQD_ERROR);
	args->info = npu_uqd_rd32(ndev, i, NPU_UQD_ERROR_INFO);
	args->rptr = npu_uqd_rd64(ndev, i, NPU_UQD_RPTR);
	args->wptr = npu_uqd_rd64(ndev, i, NPU_UQD_WPTR);
	args->fault = npu_uqd_rd64(ndev, i, NPU_UQD_FAULT);
	args->busy_ns = npu_uqd_rd64(ndev, i, NPU_UQD_BUSY_NS);
	args->cmds = npu_uqd_rd64(ndev, i, NPU_UQD_CMDS);
	args->bytes = npu_uqd_rd64(ndev, i, NPU_UQD_BYTES);
	args->ops = npu_uqd_rd64(ndev, i, NPU_UQD_OPS);
	drm_dev_exit(idx);
out:
	mutex_unlock(&nfile->vm_lock);
	return ret;
}

/**
 * npu_userqs_ctx_destroy() - destroy the user queues running in a context
 * @nfile: file state, whose &npu_file.vm_lock the caller holds
 * @ctx: context being destroyed (CTX_DESTROY) or NULL for every queue of
 *	the file (close)
 */
void npu_userqs_ctx_destroy(struct npu_file *nfile, struct npu_ctx *ctx)
{
	struct npu_userq *uq;
	unsigned long id;

	lockdep_assert_held(&nfile->vm_lock);
	xa_for_each(&nfile->userqs, id, uq) {
		if (ctx && uq->ctx != ctx)
			continue;
		xa_erase(&nfile->userqs, id);
		npu_userq_free(nfile, uq);
	}
	if (ctx)
		npu_wait_page_unmap(nfile, ctx);
}

/**
 * npu_userqs_file_fini() - close: stop and destroy every user queue of the
 *	file, then let go of its doorbell page
 * @nfile: file state
 * @file: the DRM file being closed
 *
 * Queues are stopped, never waited for: their work may never end. The
 * page goes back to the device when the last mapping of it is gone.
 */
void npu_userqs_file_fini(struct npu_file *nfile, struct drm_file *file)
{
	struct npu_ctx *ctx;
	unsigned long id;

	mutex_lock(&nfile->vm_lock);
	npu_userqs_ctx_destroy(nfile, NULL);
	npu_wait_page_unmap(nfile, nfile->ctx);
	xa_for_each(&nfile->ctxs, id, ctx)
		npu_wait_page_unmap(nfile, ctx);
	if (nfile->wait_bo) {
		drm_vma_node_revoke(&nfile->wait_bo->base.base.vma_node, file);
		drm_gem_object_put(&nfile->wait_bo->base.base);
		nfile->wait_bo = NULL;
	}
	if (nfile->doorbell) {
		/* the file pointer may be reused: it must name nothing */
		drm_vma_node_revoke(&nfile->doorbell->vma_node, file);
		drm_gem_object_put(nfile->doorbell);
		nfile->doorbell = NULL;
	}
	mutex_unlock(&nfile->vm_lock);
	xa_destroy(&nfile->userqs);
}
