// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_gem.c - buffer objects: shmem, device memory, userptr, PRIME import.
 *
 * Every BO is mapped into the address space of each file that holds a
 * handle to it: the GEM open hook creates the mapping (so PRIME imports get
 * a VA too), the close hook drops the file's reference to it. Jobs hold
 * their own references, so a VA stays mapped until the last job using it
 * has finished.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/pci.h>
#include <linux/scatterlist.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_prime.h>
#include <drm/drm_utils.h>

#include "npu_gem.h"
#include "npu_mmu.h"

/**
 * npu_bo_find_mapping() - the mapping of @bo in @ctx, if a handle names it
 * @bo: buffer object
 * @ctx: context
 *
 * Return: the mapping with a new reference, or NULL.
 */
struct npu_mapping *npu_bo_find_mapping(struct npu_bo *bo, struct npu_ctx *ctx)
{
	struct npu_mapping *map, *found = NULL;

	mutex_lock(&bo->maps_lock);
	list_for_each_entry(map, &bo->maps, bo_link) {
		if (map->ctx == ctx) {
			found = npu_mapping_get(map);
			break;
		}
	}
	mutex_unlock(&bo->maps_lock);
	return found;
}

static int npu_gem_open(struct drm_gem_object *obj, struct drm_file *file)
{
	struct npu_file *nfile = file->driver_priv;
	struct npu_bo *bo = to_npu_bo(obj);
	struct npu_mapping *map;
	int ret = 0;

	mutex_lock(&bo->maps_lock);
	list_for_each_entry(map, &bo->maps, bo_link) {
		if (map->ctx == nfile->ctx) {
			WRITE_ONCE(map->handles, map->handles + 1);
			goto out;
		}
	}
	ret = npu_mapping_create(nfile->ctx, bo, 0, 0, &map);
	if (ret)
		goto out;
	WRITE_ONCE(map->handles, 1);
	list_add_tail(&map->bo_link, &bo->maps);
out:
	mutex_unlock(&bo->maps_lock);
	return ret;
}

static void npu_gem_close(struct drm_gem_object *obj, struct drm_file *file)
{
	struct npu_file *nfile = file->driver_priv;
	struct npu_bo *bo = to_npu_bo(obj);
	struct npu_mapping *map, *drop = NULL;

	mutex_lock(&bo->maps_lock);
	list_for_each_entry(map, &bo->maps, bo_link) {
		if (map->ctx == nfile->ctx) {
			WRITE_ONCE(map->handles, map->handles - 1);
			if (!map->handles) {
				list_del_init(&map->bo_link);
				drop = map;
			}
			break;
		}
	}
	mutex_unlock(&bo->maps_lock);
	/* unmaps once the jobs that may use it have completed */
	if (drop)
		npu_ctx_retire_mapping(nfile->ctx, drop);
}

static void npu_bo_init_common(struct npu_bo *bo, enum npu_bo_kind kind)
{
	bo->kind = kind;
	mutex_init(&bo->maps_lock);
	INIT_LIST_HEAD(&bo->maps);
	INIT_LIST_HEAD(&bo->dev_link);
}

/*
 * Long-term pins count against RLIMIT_MEMLOCK like mlock() (as RDMA's umem
 * does): pinned_vm is atomic, so no mmap_lock is needed here or at free.
 */
static int npu_userptr_charge(struct npu_bo *bo)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	unsigned long npages = bo->base.base.size >> PAGE_SHIFT;
	struct mm_struct *mm = current->mm;

	if (atomic64_add_return(npages, &mm->pinned_vm) > limit &&
	    !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -ENOMEM;
	}
	mmgrab(mm);
	bo->pin_mm = mm;
	return 0;
}

static void npu_userptr_uncharge(struct npu_bo *bo)
{
	if (!bo->pin_mm)
		return;
	atomic64_sub(bo->base.base.size >> PAGE_SHIFT, &bo->pin_mm->pinned_vm);
	mmdrop(bo->pin_mm);
	bo->pin_mm = NULL;
}

/*
 * SHMEM BOs keep their pages pinned from creation to free, and may outlive
 * the process (handles passed on, PRIME): they are charged to the creator's
 * user, against RLIMIT_MEMLOCK, as io_uring charges its registered buffers.
 */
static int npu_shmem_charge(struct npu_bo *bo)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	unsigned long npages = bo->base.base.size >> PAGE_SHIFT;
	struct user_struct *user = current_user();

	if (atomic_long_add_return(npages, &user->locked_vm) > limit &&
	    !capable(CAP_IPC_LOCK)) {
		atomic_long_sub(npages, &user->locked_vm);
		return -ENOMEM;
	}
	bo->pin_user = get_uid(user);
	return 0;
}

static void npu_shmem_uncharge(struct npu_bo *bo)
{
	if (!bo->pin_user)
		return;
	atomic_long_sub(bo->base.base.size >> PAGE_SHIFT,
			&bo->pin_user->locked_vm);
	free_uid(bo->pin_user);
	bo->pin_user = NULL;
}

/* Pages pinned without FOLL_WRITE: an IOMMU must not let the device write */
static enum dma_data_direction npu_userptr_dma_dir(struct npu_bo *bo)
{
	return bo->read_only ? DMA_TO_DEVICE : DMA_BIDIRECTIONAL;
}

/*
 * User memory may be registered more than once (overlapping ranges, or the
 * same pages at two addresses or in two processes), so the same page can be
 * in several live streaming mappings. That is legitimate here: while it is
 * registered, the memory is shared by the CPU and the device at any time,
 * which takes cache-coherent DMA (PCIe on x86 snoops); there is no point
 * where a cache flush or invalidate could hand it over. So the mappings skip
 * the implicit CPU syncs (DMA_ATTR_SKIP_CPU_SYNC, which also tells
 * CONFIG_DMA_API_DEBUG that the overlap is intended) and the driver does
 * the syncs of a lone mapping itself, once after mapping and once before
 * unmapping. Where DMA is coherent they cost nothing.
 */
static int npu_userptr_dma_map(struct device *dev, struct npu_bo *bo)
{
	enum dma_data_direction dir = npu_userptr_dma_dir(bo);
	int ret;

	ret = dma_map_sgtable(dev, bo->sgt, dir, DMA_ATTR_SKIP_CPU_SYNC);
	if (ret)
		return ret;
	dma_sync_sgtable_for_device(dev, bo->sgt, dir);
	return 0;
}

/* Undo npu_userptr_dma_map() and free the sg table. */
static void npu_userptr_dma_unmap(struct device *dev, struct npu_bo *bo)
{
	enum dma_data_direction dir = npu_userptr_dma_dir(bo);

	dma_sync_sgtable_for_cpu(dev, bo->sgt, dir);
	dma_unmap_sgtable(dev, bo->sgt, dir, DMA_ATTR_SKIP_CPU_SYNC);
	sg_free_table(bo->sgt);
	kfree(bo->sgt);
	bo->sgt = NULL;
}

/*
 * Put a BO whose pages are mapped for the device on the device's list, so
 * that removal can unmap them (npu_bos_hw_fini()). Callers map and track
 * inside drm_dev_enter(), so removal cannot miss a BO being created.
 */
static int npu_bo_track(struct npu_device *ndev, struct npu_bo *bo)
{
	int ret = 0;

	mutex_lock(&ndev->bo_lock);
	if (drm_dev_is_unplugged(&ndev->drm))
		ret = -ENODEV;
	else
		list_add_tail(&bo->dev_link, &ndev->bo_list);
	mutex_unlock(&ndev->bo_lock);
	return ret;
}

/* Drop the device's DMA mapping of @bo's pages; bo_lock held. */
static void npu_bo_dma_unmap(struct npu_bo *bo)
{
	struct drm_gem_object *obj = &bo->base.base;
	struct device *dev = obj->dev->dev;

	lockdep_assert_held(&to_npu_device(obj->dev)->bo_lock);

	switch (bo->kind) {
	case NPU_BO_SHMEM:
		/*
		 * The helper only touches its sg table again when the BO is
		 * freed, which takes bo_lock first (npu_bo_free()).
		 */
		if (bo->base.sgt) {
			dma_unmap_sgtable(dev, bo->base.sgt, DMA_BIDIRECTIONAL,
					  0);
			sg_free_table(bo->base.sgt);
			kfree(bo->base.sgt);
			bo->base.sgt = NULL;
		}
		break;
	case NPU_BO_IMPORT:
		/* the exporter's mapping for us; freeing the BO detaches */
		if (bo->base.sgt) {
			dma_buf_unmap_attachment_unlocked(obj->import_attach,
							  bo->base.sgt,
							  DMA_BIDIRECTIONAL);
			bo->base.sgt = NULL;
		}
		break;
	case NPU_BO_USERPTR:
		if (bo->sgt)
			npu_userptr_dma_unmap(dev, bo);
		break;
	case NPU_BO_DEVMEM:
		break;
	}
	bo->sgt = NULL;
}

/**
 * npu_bos_hw_fini() - unmap every BO from the device (device removal)
 * @ndev: device, reset: nothing uses the mappings any more
 *
 * BOs of open files live on without device mappings; nothing maps them
 * again once the device is unplugged.
 */
void npu_bos_hw_fini(struct npu_device *ndev)
{
	struct npu_bo *bo, *tmp;

	mutex_lock(&ndev->bo_lock);
	list_for_each_entry_safe(bo, tmp, &ndev->bo_list, dev_link) {
		list_del_init(&bo->dev_link);
		npu_bo_dma_unmap(bo);
	}
	mutex_unlock(&ndev->bo_lock);
}

static void npu_bo_free(struct drm_gem_object *obj)
{
	struct npu_bo *bo = to_npu_bo(obj);
	struct npu_device *ndev = to_npu_device(obj->dev);

	WARN_ON(!list_empty(&bo->maps));
	mutex_destroy(&bo->maps_lock);

	/* unless removal did it already */
	mutex_lock(&ndev->bo_lock);
	if (!list_empty(&bo->dev_link)) {
		list_del_init(&bo->dev_link);
		if (bo->kind == NPU_BO_USERPTR)
			npu_bo_dma_unmap(bo);
	}
	mutex_unlock(&ndev->bo_lock);

	switch (bo->kind) {
	case NPU_BO_SHMEM:
	case NPU_BO_IMPORT:
		npu_shmem_uncharge(bo);
		/* frees the sg table, the pages and @bo itself */
		drm_gem_shmem_free(&bo->base);
		return;
	case NPU_BO_DEVMEM:
		mutex_lock(&ndev->devmem_lock);
		if (drm_mm_node_allocated(&bo->devmem))
			drm_mm_remove_node(&bo->devmem);
		mutex_unlock(&ndev->devmem_lock);
		break;
	case NPU_BO_USERPTR:
		if (bo->sgt)	/* mapped, but not tracked */
			npu_userptr_dma_unmap(obj->dev->dev, bo);
		if (bo->pages) {
			unpin_user_pages_dirty_lock(bo->pages, bo->npages,
						    !bo->read_only);
			kvfree(bo->pages);
		}
		npu_userptr_uncharge(bo);
		break;
	}
	drm_gem_object_release(obj);
	kfree(bo);
}

static struct dma_buf *npu_gem_no_export(struct drm_gem_object *obj,
					 int flags)
{
	/* device memory and pinned user memory are not shared */
	return ERR_PTR(-EOPNOTSUPP);
}

static const struct drm_gem_object_funcs npu_shmem_funcs = {
	.free = npu_bo_free,
	.open = npu_gem_open,
	.close = npu_gem_close,
	.print_info = drm_gem_shmem_object_print_info,
	.pin = drm_gem_shmem_object_pin,
	.unpin = drm_gem_shmem_object_unpin,
	.get_sg_table = drm_gem_shmem_object_get_sg_table,
	.vmap = drm_gem_shmem_object_vmap,
	.vunmap = drm_gem_shmem_object_vunmap,
	.mmap = drm_gem_shmem_object_mmap,
	.vm_ops = &drm_gem_shmem_vm_ops,
};

/*
 * The CPU's view of a one-page BO that only the kernel writes (a file's
 * wait page): read-only for good (no mprotect() to write or execute), not
 * inherited by fork(), and gone at unplug (drm_dev_unplug() zaps it and
 * nothing faults it back: later accesses get SIGBUS).
 */
static int npu_read_only_mmap(struct drm_gem_object *obj,
			      struct vm_area_struct *vma)
{
	struct npu_bo *bo = to_npu_bo(obj);
	int idx, ret;

	if (vma->vm_flags & (VM_WRITE | VM_EXEC))
		return -EACCES;
	if (vma->vm_end - vma->vm_start != PAGE_SIZE || !bo->base.pages)
		return -EINVAL;
	if (!drm_dev_enter(obj->dev, &idx))
		return -ENODEV;
	npu_vm_flags_clear(vma, VM_MAYWRITE | VM_MAYEXEC);
	npu_vm_flags_set(vma, VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP |
			 VM_DONTCOPY);
	vma->vm_page_prot = vm_get_page_prot(vma->vm_flags);
	ret = remap_pfn_range(vma, vma->vm_start,
			      page_to_pfn(bo->base.pages[0]), PAGE_SIZE,
			      vma->vm_page_prot);
	drm_dev_exit(idx);
	return ret;
}

static const struct vm_operations_struct npu_read_only_vm_ops = {
	.open = drm_gem_vm_open,
	.close = drm_gem_vm_close,
};

static const struct drm_gem_object_funcs npu_read_only_funcs = {
	.free = npu_bo_free,
	.open = npu_gem_open,
	.close = npu_gem_close,
	.print_info = drm_gem_shmem_object_print_info,
	.pin = drm_gem_shmem_object_pin,
	.unpin = drm_gem_shmem_object_unpin,
	.get_sg_table = drm_gem_shmem_object_get_sg_table,
	.vmap = drm_gem_shmem_object_vmap,
	.vunmap = drm_gem_shmem_object_vunmap,
	.mmap = npu_read_only_mmap,
	.vm_ops = &npu_read_only_vm_ops,
};

static const struct drm_gem_object_funcs npu_raw_funcs = {
	.free = npu_bo_free,
	.open = npu_gem_open,
	.close = npu_gem_close,
	.export = npu_gem_no_export,
};

/* ---------------------------------------------------------------------- */
/* CPU mappings of device memory, through the device-memory BAR */

/* Pages mapped per fault: a sequential sweep faults once per 64 KiB. */
#define NPU_DEVMEM_FAULT_AROUND	16

/* Does the part of the BAR mapped at probe hold all of @bo (DEVMEM)? */
static bool npu_devmem_bo_in_bar(struct npu_bo *bo)
{
	struct npu_device *ndev = to_npu_device(bo->base.base.dev);

	return drm_mm_node_allocated(&bo->devmem) &&
	       bo->devmem.start + bo->base.base.size <= ndev->devmem_bar_size;
}

/*
 * PFNs go in only inside drm_dev_enter(): drm_dev_unplug() zaps the PTEs
 * after the last such section, so after unplug every access faults here
 * and gets SIGBUS, and nobody keeps access to the BAR.
 */
static vm_fault_t npu_devmem_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct drm_gem_object *obj = vma->vm_private_data;
	struct npu_device *ndev = to_npu_device(obj->dev);
	struct npu_bo *bo = to_npu_bo(obj);
	unsigned long page, npages, addr, pfn, i;
	vm_fault_t ret = VM_FAULT_SIGBUS;
	int idx;

	if (!drm_dev_enter(obj->dev, &idx))
		return VM_FAULT_SIGBUS;

	/* page within the BO; vm_pgoff follows VMA splits and mremap() */
	page = vmf->pgoff - drm_vma_node_start(&obj->vma_node);
	npages = obj->size >> PAGE_SHIFT;
	if (page >= npages)
		goto out;
	pfn = PHYS_PFN(pci_resource_start(ndev->pdev, NPU_BAR_DEVMEM) +
		       bo->devmem.start) + page;
	addr = vmf->address & PAGE_MASK;
	ret = vmf_insert_pfn(vma, addr, pfn);
	for (i = 1; i < NPU_DEVMEM_FAULT_AROUND && ret == VM_FAULT_NOPAGE;
	     i++) {
		addr += PAGE_SIZE;
		if (page + i >= npages || addr >= vma->vm_end)
			break;
		/* best effort: the next access faults again if this fails */
		if (vmf_insert_pfn(vma, addr, pfn + i) != VM_FAULT_NOPAGE)
			break;
	}
out:
	drm_dev_exit(idx);
	return ret;
}

static const struct vm_operations_struct npu_devmem_vm_ops = {
	.fault = npu_devmem_fault,
	/* each VMA holds a GEM reference: the memory stays the BO's */
	.open = drm_gem_vm_open,
	.close = drm_gem_vm_close,
};

/* Write-combined PFN mapping of the BO's part of the BAR; no COW copies. */
static int npu_devmem_mmap(struct drm_gem_object *obj,
			   struct vm_area_struct *vma)
{
	if (!npu_devmem_bo_in_bar(to_npu_bo(obj)) ||
	    is_cow_mapping(vma->vm_flags))
		return -EINVAL;
	npu_vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_page_prot =
		pgprot_writecombine(vm_get_page_prot(vma->vm_flags));
	vma->vm_page_prot = pgprot_decrypted(vma->vm_page_prot);
	return 0;
}

static const struct drm_gem_object_funcs npu_devmem_funcs = {
	.free = npu_bo_free,
	.open = npu_gem_open,
	.close = npu_gem_close,
	.export = npu_gem_no_export,
	.mmap = npu_devmem_mmap,
	.vm_ops = &npu_devmem_vm_ops,
};

/* Can mmap() on the DRM file map @bo? */
static bool npu_bo_cpu_mappable(struct npu_bo *bo)
{
	switch (bo->kind) {
	case NPU_BO_SHMEM:
	case NPU_BO_IMPORT:
		return true;
	case NPU_BO_DEVMEM:
		return npu_devmem_bo_in_bar(bo);
	default:
		return false;
	}
}

/**
 * npu_gem_create_object() - &drm_driver.gem_create_object for shmem BOs
 * @dev: DRM device
 * @size: bytes
 *
 * Return: the embedded GEM object or an ERR_PTR.
 */
struct drm_gem_object *npu_gem_create_object(struct drm_device *dev,
					     size_t size)
{
	struct npu_bo *bo;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	npu_bo_init_common(bo, NPU_BO_SHMEM);
	bo->base.base.funcs = &npu_shmem_funcs;
	bo->base.map_wc = false;
	return &bo->base.base;
}

/**
 * npu_gem_prime_import_sg_table() - import a dma-buf of another device
 * @dev: DRM device
 * @attach: attachment
 * @sgt: its mapped pages
 *
 * Return: the new GEM object or an ERR_PTR.
 */
struct drm_gem_object *
npu_gem_prime_import_sg_table(struct drm_device *dev,
			      struct dma_buf_attachment *attach,
			      struct sg_table *sgt)
{
	struct drm_gem_object *obj;
	struct npu_bo *bo;
	int ret;

	obj = drm_gem_shmem_prime_import_sg_table(dev, attach, sgt);
	if (IS_ERR(obj))
		return obj;
	bo = to_npu_bo(obj);
	bo->kind = NPU_BO_IMPORT;
	bo->sgt = sgt;
	ret = npu_bo_track(to_npu_device(dev), bo);
	if (ret) {
		drm_gem_object_put(obj);
		return ERR_PTR(ret);
	}
	return obj;
}

static bool npu_size_ok(u64 size, u64 limit)
{
	return size && size <= limit && size <= NPU_MAX_BO_SIZE;
}

static u64 npu_bo_mmap_offset(struct npu_bo *bo)
{
	if (!npu_bo_cpu_mappable(bo))
		return 0;
	if (drm_gem_create_mmap_offset(&bo->base.base))
		return 0;
	return drm_vma_node_offset_addr(&bo->base.base.vma_node);
}

/* Create the handle (which maps the BO) and report handle and VA. */
static int npu_bo_publish(struct drm_file *file, struct npu_bo *bo,
			  u32 *handle, u64 *va)
{
	struct npu_file *nfile = file->driver_priv;
	struct npu_mapping *map;
	int ret;

	ret = drm_gem_handle_create(file, &bo->base.base, handle);
	/* the handle (if any) now holds the BO */
	drm_gem_object_put(&bo->base.base);
	if (ret)
		return ret;
	map = npu_bo_find_mapping(bo, nfile->ctx);
	if (!map)	/* handle closed by another thread meanwhile */
		return -ENOENT;
	*va = map->node.start;
	npu_mapping_put(map);
	return 0;
}

/**
 * npu_bo_create_read_only() - a one-page system-memory BO as
 *	npu_bo_create_shmem() makes it, which the CPU may only map read-only
 * @ndev: device
 *
 * Return: the BO with one reference, or an ERR_PTR.
 */
struct npu_bo *npu_bo_create_read_only(struct npu_device *ndev)
{
	struct npu_bo *bo = npu_bo_create_shmem(ndev, PAGE_SIZE);

	if (!IS_ERR(bo))
		bo->base.base.funcs = &npu_read_only_funcs;
	return bo;
}

/**
 * npu_bo_create_shmem() - a system-memory BO with its pages pinned and
 *	mapped for the device, charged to the caller's user
 * @ndev: device
 * @size: bytes, page aligned
 *
 * Return: the BO with one reference, or an ERR_PTR.
 */
struct npu_bo *npu_bo_create_shmem(struct npu_device *ndev, u64 size)
{
	struct drm_gem_shmem_object *shmem;
	struct npu_bo *bo;
	struct sg_table *sgt;
	int ret, idx;

	shmem = drm_gem_shmem_create(&ndev->drm, size);
	if (IS_ERR(shmem))
		return ERR_CAST(shmem);
	bo = to_npu_bo(&shmem->base);
	if (!drm_dev_enter(&ndev->drm, &idx)) {
		ret = -ENODEV;
		goto err_put;
	}
	ret = npu_shmem_charge(bo);
	if (ret) {
		drm_dev_exit(idx);
		goto err_put;
	}
	sgt = drm_gem_shmem_get_pages_sgt(shmem);
	if (IS_ERR(sgt)) {
		drm_dev_exit(idx);
		ret = PTR_ERR(sgt);
		goto err_put;
	}
	bo->sgt = sgt;
	ret = npu_bo_track(ndev, bo);
	drm_dev_exit(idx);
	if (ret)
		goto err_put;
	return bo;

err_put:
	drm_gem_object_put(&shmem->base);
	return ERR_PTR(ret);
}

static struct npu_bo *npu_bo_create_devmem(struct npu_device *ndev, u64 size)
{
	struct npu_bo *bo;
	int ret, idx;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	npu_bo_init_common(bo, NPU_BO_DEVMEM);
	bo->flags = DRM_NPU_BO_DEVMEM;
	bo->base.base.funcs = &npu_devmem_funcs;
	drm_gem_private_object_init(&ndev->drm, &bo->base.base, size);

	mutex_lock(&ndev->devmem_lock);
	ret = drm_mm_insert_node_generic(&ndev->devmem_mm, &bo->devmem, size,
					 NPU_PAGE_SIZE, 0, DRM_MM_INSERT_BEST);
	mutex_unlock(&ndev->devmem_lock);
	if (ret) {
		drm_gem_object_put(&bo->base.base);
		return ERR_PTR(-ENOMEM);
	}

	/*
	 * Never hand out what another process left in device memory: all of
	 * the device memory in use lies inside the BAR mapping (npu_probe()).
	 */
	if (!drm_dev_enter(&ndev->drm, &idx)) {
		drm_gem_object_put(&bo->base.base);
		return ERR_PTR(-ENODEV);
	}
	memset_io(ndev->devmem_bar + bo->devmem.start, 0, size);
	drm_dev_exit(idx);
	return bo;
}

/**
 * npu_ioctl_bo_create() - DRM_IOCTL_NPU_BO_CREATE
 * @dev: DRM device
 * @data: &struct drm_npu_bo_create
 * @file: DRM file
 *
 * Return: 0 or a negative errno.
 */
int npu_ioctl_bo_create(struct drm_device *dev, void *data,
			struct drm_file *file)
{
	struct npu_device *ndev = to_npu_device(dev);
	struct drm_npu_bo_create *args = data;
	struct npu_bo *bo;
	u64 size;

	if (args->flags & ~DRM_NPU_BO_DEVMEM)
		return -EINVAL;
	if (args->flags & DRM_NPU_BO_DEVMEM) {
		if (!npu_size_ok(args->size, ndev->devmem_size))
			return -EINVAL;
	} else if (!npu_size_ok(args->size,
				(u64)totalram_pages() << PAGE_SHIFT)) {
		return -EINVAL;
	}
	size = PAGE_ALIGN(args->size);

	if (args->flags & DRM_NPU_BO_DEVMEM)
		bo = npu_bo_create_devmem(ndev, size);
	else
		bo = npu_bo_create_shmem(ndev, size);
	if (IS_ERR(bo))
		return PTR_ERR(bo);

	args->mmap_offset = npu_bo_mmap_offset(bo);
	return npu_bo_publish(file, bo, &args->handle, &args->va);
}

/**
 * npu_ioctl_bo_info() - DRM_IOCTL_NPU_BO_INFO
 * @dev: DRM device
 * @data: &struct drm_npu_bo_info
 * @file: DRM file
 *
 * Return: 0 or a negative errno.
 */
int npu_ioctl_bo_info(struct drm_device *dev, void *data,
		      struct drm_file *file)
{
	struct npu_file *nfile = file->driver_priv;
	struct drm_npu_bo_info *args = data;
	struct drm_gem_object *obj;
	struct npu_mapping *map;
	struct npu_bo *bo;

	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	bo = to_npu_bo(obj);
	map = npu_bo_find_mapping(bo, nfile->ctx);
	if (!map) {
		drm_gem_object_put(obj);
		return -ENOENT;
	}
	args->flags = bo->flags;
	args->size = obj->size;
	args->va = map->node.start;
	args->mmap_offset = npu_bo_mmap_offset(bo);
	npu_mapping_put(map);
	drm_gem_object_put(obj);
	return 0;
}

/**
 * npu_ioctl_bo_protect() - DRM_IOCTL_NPU_BO_PROTECT
 * @dev: DRM device
 * @data: &struct drm_npu_bo_protect
 * @file: DRM file
 *
 * Return: 0 or a negative errno.
 */
int npu_ioctl_bo_protect(struct drm_device *dev, void *data,
			 struct drm_file *file)
{
	struct npu_file *nfile = file->driver_priv;
	struct drm_npu_bo_protect *args = data;
	struct drm_gem_object *obj;
	struct npu_mapping *map;
	int ret;

	if (args->flags != DRM_NPU_BO_PROTECT_READ_ONLY || !args->size ||
	    !IS_ALIGNED(args->offset | args->size, NPU_PAGE_SIZE))
		return -EINVAL;
	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	if (args->offset > obj->size || args->size > obj->size - args->offset) {
		ret = -EINVAL;
		goto out;
	}
	map = npu_bo_find_mapping(to_npu_bo(obj), nfile->ctx);
	if (!map) {
		ret = -ENOENT;
		goto out;
	}
	ret = npu_mapping_protect(map, args->offset, args->size);
	npu_mapping_put(map);
out:
	drm_gem_object_put(obj);
	return ret;
}

/**
 * npu_ioctl_userptr() - DRM_IOCTL_NPU_USERPTR
 * @dev: DRM device
 * @data: &struct drm_npu_userptr
 * @file: DRM file
 *
 * Pins the pages (FOLL_LONGTERM, and FOLL_WRITE unless read-only) for the
 * lifetime of the BO and maps them for DMA. The pages are charged to the
 * caller's pinned_vm: -ENOMEM past RLIMIT_MEMLOCK without CAP_IPC_LOCK.
 *
 * Return: 0 or a negative errno.
 */
int npu_ioctl_userptr(struct drm_device *dev, void *data,
		      struct drm_file *file)
{
	struct drm_npu_userptr *args = data;
	unsigned int gup = FOLL_LONGTERM;
	unsigned long npages;
	struct npu_bo *bo;
	long pinned;
	int ret, idx;

	if (args->flags & ~DRM_NPU_USERPTR_READ_ONLY)
		return -EINVAL;
	if (!args->size || !PAGE_ALIGNED(args->addr) ||
	    !PAGE_ALIGNED(args->size) || args->size > NPU_MAX_BO_SIZE ||
	    args->addr + args->size < args->addr)
		return -EINVAL;
	if (!access_ok(u64_to_user_ptr(args->addr), args->size))
		return -EFAULT;
	npages = args->size >> PAGE_SHIFT;
	if (npages > totalram_pages())
		return -EINVAL;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return -ENOMEM;
	npu_bo_init_common(bo, NPU_BO_USERPTR);
	bo->flags = args->flags;
	bo->read_only = args->flags & DRM_NPU_USERPTR_READ_ONLY;
	bo->base.base.funcs = &npu_raw_funcs;
	drm_gem_private_object_init(dev, &bo->base.base, args->size);

	ret = npu_userptr_charge(bo);
	if (ret)
		goto err_put;
	bo->pages = kvmalloc_array(npages, sizeof(*bo->pages), GFP_KERNEL);
	if (!bo->pages) {
		ret = -ENOMEM;
		goto err_put;
	}
	if (!bo->read_only)
		gup |= FOLL_WRITE;
	/*
	 * GUP returns a short count when it fails after pinning some pages
	 * (an allocation, a fault): ask again for the rest, which pins them or
	 * says why not (-ENOMEM, -EFAULT).
	 */
	bo->npages = 0;
	while (bo->npages < npages) {
		pinned = pin_user_pages_fast(args->addr +
					     ((u64)bo->npages << PAGE_SHIFT),
					     npages - bo->npages, gup,
					     bo->pages + bo->npages);
		if (pinned <= 0) {
			ret = pinned ? pinned : -EFAULT;
			if (!bo->npages) {
				kvfree(bo->pages);
				bo->pages = NULL;
			}
			goto err_put;
		}
		bo->npages += pinned;
	}

	bo->sgt = kzalloc(sizeof(*bo->sgt), GFP_KERNEL);
	if (!bo->sgt) {
		ret = -ENOMEM;
		goto err_put;
	}
	ret = sg_alloc_table_from_pages(bo->sgt, bo->pages, npages, 0,
					args->size, GFP_KERNEL);
	if (ret) {
		kfree(bo->sgt);
		bo->sgt = NULL;
		goto err_put;
	}
	/* bo->sgt is mapped from here on or freed: npu_bo_free() unmaps it */
	ret = -ENODEV;
	if (drm_dev_enter(dev, &idx)) {
		ret = npu_userptr_dma_map(dev->dev, bo);
		if (ret)
			drm_dev_exit(idx);
	}
	if (ret) {
		sg_free_table(bo->sgt);
		kfree(bo->sgt);
		bo->sgt = NULL;
		goto err_put;
	}
	ret = npu_bo_track(to_npu_device(dev), bo);
	drm_dev_exit(idx);
	if (ret)
		goto err_put;
	return npu_bo_publish(file, bo, &args->handle, &args->va);

err_put:
	drm_gem_object_put(&bo->base.base);
	return ret;
}

/**
 * npu_ioctl_bo_wait() - DRM_IOCTL_NPU_BO_WAIT
 * @dev: DRM device
 * @data: &struct drm_npu_bo_wait
 * @file: DRM file
 *
 * Waits, interruptibly, for every fence in the BO's reservation object
 * (readers and writers): the finished fences that SUBMIT added for each job
 * that listed the BO or ran commands from it, and for a PRIME import the
 * fences other users of the exporter's buffer added.
 *
 * Return: 0 when idle, -ETIME when the absolute timeout passed, or another
 * negative errno.
 */
int npu_ioctl_bo_wait(struct drm_device *dev, void *data,
		      struct drm_file *file)
{
	struct drm_npu_bo_wait *args = data;
	struct drm_gem_object *obj;
	long ret;

	if (args->pad)
		return -EINVAL;
	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;

	/* a timeout already passed (0 jiffies) only tests the fences */
	ret = dma_resv_wait_timeout(obj->resv, DMA_RESV_USAGE_READ, true,
				    drm_timeout_abs_to_jiffies(args->timeout_ns));
	if (ret == 0)
		ret = -ETIME;
	else if (ret > 0)
		ret = 0;
	drm_gem_object_put(obj);
	return ret;
}
