// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_ctx.c - extra contexts of a file and the buffers bound into them.
 *
 * Every open file has a default context in which each of its GEM handles
 * is mapped (npu_gem.c). CTX_CREATE adds further address spaces, named by
 * small file-local ids; BO_MAP binds a BO into one of them, at a VA of the
 * caller's choice if asked. A binding is a struct npu_mapping whose
 * &npu_mapping.handles is 1 while it is bound; it sits on the BO's list of
 * mappings (so SUBMIT finds it from a handle) and on the context's list of
 * bindings (so CTX_DESTROY and close() can drop it). Unbinding only drops
 * the binding's reference once the jobs that may use it have completed
 * (npu_ctx_retire_mapping()): the page table entries stay until then.
 *
 * Lock order: &npu_file.vm_lock, then &npu_bo.maps_lock, then &npu_ctx.lock.
 */
#include <linux/slab.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>

#include "npu_ctx.h"
#include "npu_mmu.h"
#include "npu_userq.h"

/* Drop the BO_MAP binding of @map; the caller holds the file's vm_lock. */
static void npu_ctx_unbind(struct npu_file *nfile, struct npu_mapping *map)
{
	struct npu_bo *bo = map->bo;

	lockdep_assert_held(&nfile->vm_lock);

	mutex_lock(&bo->maps_lock);
	list_del_init(&map->bo_link);
	WRITE_ONCE(map->handles, 0);
	mutex_unlock(&bo->maps_lock);
	list_del_init(&map->ctx_link);
	npu_ctx_retire_mapping(map->ctx, map);
}

static void npu_ctx_unbind_all(struct npu_file *nfile, struct npu_ctx *ctx)
{
	struct npu_mapping *map, *tmp;

	lockdep_assert_held(&nfile->vm_lock);

	list_for_each_entry_safe(map, tmp, &ctx->binds, ctx_link)
		npu_ctx_unbind(nfile, map);
}

/**
 * npu_file_ctxs_destroy() - drop every extra context of a closing file
 * @nfile: file state, whose queues are already destroyed
 */
void npu_file_ctxs_destroy(struct npu_file *nfile)
{
	struct npu_ctx *ctx;
	unsigned long id;

	mutex_lock(&nfile->vm_lock);
	xa_for_each(&nfile->ctxs, id, ctx) {
		xa_erase(&nfile->ctxs, id);
		npu_ctx_unbind_all(nfile, ctx);
		npu_ctx_put(ctx);
	}
	mutex_unlock(&nfile->vm_lock);
	xa_destroy(&nfile->ctxs);
}

/**
 * npu_ioctl_ctx_create() - DRM_IOCTL_NPU_CTX_CREATE
 * @dev: DRM device
 * @data: &struct drm_npu_ctx_create
 * @file: DRM file
 *
 * Return: 0 or a negative errno.
 */
int npu_ioctl_ctx_create(struct drm_device *dev, void *data,
			 struct drm_file *file)
{
	struct npu_file *nfile = file->driver_priv;
	struct drm_npu_ctx_create *args = data;
	struct npu_ctx *ctx;
	u32 id;
	int ret;

	if (args->flags || args->ctx_id)
		return -EINVAL;

	ctx = npu_ctx_create(to_npu_device(dev));
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	ret = xa_alloc(&nfile->ctxs, &id, ctx, XA_LIMIT(1, NPU_MAX_CTXS),
		       GFP_KERNEL);
	if (ret) {
		npu_ctx_put(ctx);
		return ret == -EBUSY ? -ENOSPC : ret;
	}
	args->ctx_id = id;
	return 0;
}

/**
 * npu_ioctl_ctx_destroy() - DRM_IOCTL_NPU_CTX_DESTROY
 * @dev: DRM device
 * @data: &struct drm_npu_ctx_destroy
 * @file: DRM file
 *
 * Jobs already submitted in the context keep it (and what they use)
 * alive until they are freed.
 *
 * Return: 0 or a negative errno.
 */
int npu_ioctl_ctx_destroy(struct drm_device *dev, void *data,
			  struct drm_file *file)
{
	struct npu_file *nfile = file->driver_priv;
	struct drm_npu_ctx_destroy *args = data;
	struct npu_ctx *ctx;
	int ret = 0;

	if (args->pad)
		return -EINVAL;

	mutex_lock(&nfile->vm_lock);
	ctx = npu_extra_ctx(nfile, args->ctx_id);
	if (!ctx) {
		ret = -ENOENT;
		goto out;
	}
	/* queue creation checks the id under vm_lock too: no new queue */
	if (atomic_read(&ctx->queues)) {
		ret = -EBUSY;
		goto out;
	}
	/* its user queues are stopped and destroyed, not waited for */
	npu_userqs_ctx_destroy(nfile, ctx);
	xa_erase(&nfile->ctxs, args->ctx_id);
	npu_ctx_unbind_all(nfile, ctx);
	npu_ctx_put(ctx);
out:
	mutex_unlock(&nfile->vm_lock);
	return ret;
}

static int npu_bo_map_check(const struct drm_npu_bo_map *args, u64 size)
{
	if (args->flags & ~(DRM_NPU_BO_MAP_FIXED | DRM_NPU_BO_MAP_READ_ONLY))
		return -EINVAL;
	if (args->pad || !args->ctx_id)
		return -EINVAL;
	if (!(args->flags & DRM_NPU_BO_MAP_FIXED))
		return args->va ? -EINVAL : 0;
	if (!IS_ALIGNED(args->va, NPU_PAGE_SIZE) || args->va < NPU_VA_START)
		return -EINVAL;
	if (args->va > NPU_VA_END || size > NPU_VA_END - args->va)
		return -EINVAL;
	return 0;
}

/*
 * Map; a fixed range still held by unbound mappings whose jobs have all
 * signalled is released first, so that a range is reusable as soon as the
 * jobs that used it have completed. The retry does not depend on this reap
 * dropping anything: the job-free worker's reap may have taken the range's
 * mapping first, and npu_ctx_reap_wait() waited for it.
 */
static int npu_bo_map_reaping(struct npu_ctx *ctx, struct npu_bo *bo,
			      u64 va, u32 flags, struct npu_mapping **map)
{
	int ret = npu_mapping_create(ctx, bo, va, flags, map);

	if (ret != -EBUSY)
		return ret;
	npu_ctx_reap_wait(ctx);
	return npu_mapping_create(ctx, bo, va, flags, map);
}

/**
 * npu_ioctl_bo_map() - DRM_IOCTL_NPU_BO_MAP
 * @dev: DRM device
 * @data: &struct drm_npu_bo_map
 * @file: DRM file
 *
 * Return: 0 or a negative errno.
 */
int npu_ioctl_bo_map(struct drm_device *dev, void *data,
		     struct drm_file *file)
{
	struct npu_file *nfile = file->driver_priv;
	struct drm_npu_bo_map *args = data;
	struct drm_gem_object *obj;
	struct npu_mapping *map;
	struct npu_ctx *ctx;
	struct npu_bo *bo;
	u32 flags = 0;
	int ret;

	/* size-independent checks first: no lookup for a malformed call */
	ret = npu_bo_map_check(args, 0);
	if (ret)
		return ret;
	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	bo = to_npu_bo(obj);
	ret = npu_bo_map_check(args, obj->size);
	if (ret)
		goto out_put;
	if (args->flags & DRM_NPU_BO_MAP_FIXED)
		flags |= NPU_MAP_FIXED;
	if (args->flags & DRM_NPU_BO_MAP_READ_ONLY)
		flags |= NPU_MAP_READ_ONLY;

	mutex_lock(&nfile->vm_lock);
	ctx = npu_extra_ctx(nfile, args->ctx_id);
	if (!ctx) {
		ret = -ENOENT;
		goto out_unlock;
	}
	mutex_lock(&bo->maps_lock);
	list_for_each_entry(map, &bo->maps, bo_link) {
		if (map->ctx == ctx) {
			ret = -EEXIST;
			break;
		}
	}
	if (!ret)
		ret = npu_bo_map_reaping(ctx, bo, args->va, flags, &map);
	if (!ret) {
		WRITE_ONCE(map->handles, 1);
		list_add_tail(&map->bo_link, &bo->maps);
	}
	mutex_unlock(&bo->maps_lock);
	if (!ret) {
		list_add_tail(&map->ctx_link, &ctx->binds);
		args->va = map->node.start;
	}
out_unlock:
	mutex_unlock(&nfile->vm_lock);
out_put:
	drm_gem_object_put(obj);
	return ret;
}

/**
 * npu_ioctl_bo_unmap() - DRM_IOCTL_NPU_BO_UNMAP
 * @dev: DRM device
 * @data: &struct drm_npu_bo_unmap
 * @file: DRM file
 *
 * Return: 0 or a negative errno.
 */
int npu_ioctl_bo_unmap(struct drm_device *dev, void *data,
		       struct drm_file *file)
{
	struct npu_file *nfile = file->driver_priv;
	struct drm_npu_bo_unmap *args = data;
	struct npu_mapping *map;
	struct npu_ctx *ctx;
	int ret = -ENOENT;

	if (args->pad)
		return -EINVAL;

	mutex_lock(&nfile->vm_lock);
	ctx = npu_extra_ctx(nfile, args->ctx_id);
	if (ctx) {
		list_for_each_entry(map, &ctx->binds, ctx_link) {
			if (map->node.start == args->va) {
				/* a user queue's ring or write-back block */
				ret = map->userq_pins ? -EBUSY : 0;
				if (!ret)
					npu_ctx_unbind(nfile, map);
				break;
			}
		}
	}
	mutex_unlock(&nfile->vm_lock);
	return ret;
}
