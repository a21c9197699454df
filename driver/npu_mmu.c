// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_mmu.c - device address spaces: contexts, page tables, VA allocation,
 * and a file's contexts by their uAPI id.
 *
 * Each context owns a 3-level page table (npu_hw.h: 512 entries per level,
 * 4 KiB pages, 39-bit VA) in DMA-coherent memory and a drm_mm allocator of
 * its virtual addresses. A BO is mapped into a context as a struct
 * npu_mapping; the mapping is torn down when its last reference (the file's
 * handle, or a job that used it) goes away. Intermediate tables are kept
 * until the context dies.
 *
 * A job may use VAs of BOs it does not list (pointers inside kernel
 * arguments), so unbinding a BO (last handle closed, BO_UNMAP, CTX_DESTROY)
 * does not drop the binding's reference at once: the mapping waits on the
 * context's retiring list until every job of the context pushed before the
 * unbinding has signalled. Jobs get a context-wide sequence number when
 * they are pushed and stay on the context's job list until they are freed.
 */
#include <linux/cred.h>
#include <linux/dma-mapping.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#include <drm/drm_drv.h>

#include "npu_mmu.h"
#include "npu_regs.h"

/*
 * Context ids are a device-wide resource (16 bits): one user must not take
 * them all. Read at each context creation, so a change applies at once.
 */
static unsigned int npu_max_user_contexts = 1024;
module_param_named(max_user_contexts, npu_max_user_contexts, uint, 0644);
MODULE_PARM_DESC(max_user_contexts,
		 "Contexts (one per open file plus extra ones) one user may have per device; 0: no limit (default 1024)");

static struct npu_pt *npu_pt_alloc(struct npu_device *ndev, int level)
{
	struct npu_pt *pt;

	/* charged to the memory cgroup of the process that maps */
	pt = kzalloc(sizeof(*pt), GFP_KERNEL_ACCOUNT);
	if (!pt)
		return NULL;
	INIT_LIST_HEAD(&pt->spare);
	pt->entries = dma_alloc_coherent(ndev->drm.dev, NPU_PAGE_SIZE, &pt->dma,
					 GFP_KERNEL);
	if (!pt->entries)
		goto err_free;
	if (level > 0) {
		pt->child = kcalloc(NPU_PT_ENTRIES, sizeof(*pt->child),
				    GFP_KERNEL_ACCOUNT);
		if (!pt->child)
			goto err_dma;
	}
	return pt;

err_dma:
	dma_free_coherent(ndev->drm.dev, NPU_PAGE_SIZE, pt->entries, pt->dma);
err_free:
	kfree(pt);
	return NULL;
}

static void npu_pt_free(struct npu_device *ndev, struct npu_pt *pt, int level)
{
	int i;

	if (!pt)
		return;
	if (level > 0) {
		for (i = 0; i < NPU_PT_ENTRIES; i++)
			npu_pt_free(ndev, pt->child[i], level - 1);
		kfree(pt->child);
	}
	dma_free_coherent(ndev->drm.dev, NPU_PAGE_SIZE, pt->entries, pt->dma);
	kfree(pt);
}

/* Count one more context of @uid, within max_user_contexts; ctx_lock held. */
static int npu_user_ctx_charge(struct npu_device *ndev, kuid_t uid)
{
	unsigned long key = from_kuid(&init_user_ns, uid);
	unsigned int limit = READ_ONCE(npu_max_user_contexts);
	unsigned long n = 0;
	void *entry;

	lockdep_assert_held(&ndev->ctx_lock);
	entry = xa_load(&ndev->user_ctxs, key);
	if (entry)
		n = xa_to_value(entry);
	if (limit && n >= limit)
		return -EDQUOT;
	return xa_err(xa_store(&ndev->user_ctxs, key, xa_mk_value(n + 1),
			       GFP_KERNEL));
}

/* Undo npu_user_ctx_charge(); ctx_lock held. */
static void npu_user_ctx_uncharge(struct npu_device *ndev, kuid_t uid)
{
	unsigned long key = from_kuid(&init_user_ns, uid);
	unsigned long n = xa_to_value(xa_load(&ndev->user_ctxs, key));

	lockdep_assert_held(&ndev->ctx_lock);
	if (WARN_ON(!n))
		return;
	if (n == 1)
		xa_erase(&ndev->user_ctxs, key);
	else	/* replaces an existing entry: allocates nothing */
		xa_store(&ndev->user_ctxs, key, xa_mk_value(n - 1), GFP_NOWAIT);
}

/**
 * npu_ctx_create() - create an address space
 * @ndev: device
 *
 * The context is charged to the caller's real user: each user may have at
 * most max_user_contexts of them on the device, so one user cannot take
 * every context id.
 *
 * Return: the context with one reference, or an ERR_PTR: -EDQUOT when the
 * user has max_user_contexts contexts already, -ENOSPC when the device has
 * no context id left, -ENOMEM, -ENODEV.
 */
struct npu_ctx *npu_ctx_create(struct npu_device *ndev)
{
	struct npu_ctx *ctx;
	int id, idx, ret;

	/* removal frees the page tables of the contexts listed by then */
	if (!drm_dev_enter(&ndev->drm, &idx))
		return ERR_PTR(-ENODEV);
	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL_ACCOUNT);
	if (!ctx) {
		ret = -ENOMEM;
		goto err;
	}
	ctx->uid = current_uid();
	mutex_lock(&ndev->ctx_lock);
	ret = npu_user_ctx_charge(ndev, ctx->uid);
	mutex_unlock(&ndev->ctx_lock);
	if (ret)
		goto err_free;
	id = ida_alloc_range(&ndev->ctx_ida, 1, 0xffff, GFP_KERNEL);
	if (id < 0) {
		ret = id;
		goto err_uncharge;
	}
	ctx->root = npu_pt_alloc(ndev, 2);
	if (!ctx->root) {
		ret = -ENOMEM;
		goto err_ida;
	}
	kref_init(&ctx->ref);
	ctx->ndev = ndev;
	ctx->id = id;
	ctx->root_dma = ctx->root->dma;
	ctx->pid = task_tgid_nr(current);
	mutex_init(&ctx->lock);
	atomic_set(&ctx->queues, 0);
	INIT_LIST_HEAD(&ctx->binds);
	spin_lock_init(&ctx->track_lock);
	init_waitqueue_head(&ctx->reap_wq);
	INIT_LIST_HEAD(&ctx->jobs);
	INIT_LIST_HEAD(&ctx->retiring);
	drm_mm_init(&ctx->va_mm, NPU_VA_START, NPU_VA_END - NPU_VA_START);

	mutex_lock(&ndev->ctx_lock);
	list_add_tail(&ctx->link, &ndev->ctx_list);
	mutex_unlock(&ndev->ctx_lock);
	drm_dev_exit(idx);
	return ctx;

err_ida:
	ida_free(&ndev->ctx_ida, id);
err_uncharge:
	mutex_lock(&ndev->ctx_lock);
	npu_user_ctx_uncharge(ndev, ctx->uid);
	mutex_unlock(&ndev->ctx_lock);
err_free:
	kfree(ctx);
err:
	drm_dev_exit(idx);
	return ERR_PTR(ret);
}

static void npu_ctx_release(struct kref *ref)
{
	struct npu_ctx *ctx = container_of(ref, struct npu_ctx, ref);
	struct npu_device *ndev = ctx->ndev;

	mutex_lock(&ndev->ctx_lock);
	list_del(&ctx->link);
	npu_user_ctx_uncharge(ndev, ctx->uid);
	mutex_unlock(&ndev->ctx_lock);

	/* Every mapping holds a reference: the VA space is empty by now. */
	drm_mm_takedown(&ctx->va_mm);
	npu_pt_free(ndev, ctx->root, 2);
	mutex_destroy(&ctx->lock);
	ida_free(&ndev->ctx_ida, ctx->id);
	kfree(ctx);
}

/**
 * npu_ctx_put() - drop a context reference
 * @ctx: context, may be NULL
 *
 * Must be called from process context (frees DMA memory).
 */
void npu_ctx_put(struct npu_ctx *ctx)
{
	if (ctx)
		kref_put(&ctx->ref, npu_ctx_release);
}

/**
 * npu_ctxs_hw_fini() - free the page tables of every context (device
 * removal)
 * @ndev: device, unplugged and reset: no ring walks the tables any more
 *
 * The contexts of open files live on, without page tables: mapping fails
 * with -ENODEV, unmapping has nothing to clear.
 */
void npu_ctxs_hw_fini(struct npu_device *ndev)
{
	struct npu_ctx *ctx;

	mutex_lock(&ndev->ctx_lock);
	list_for_each_entry(ctx, &ndev->ctx_list, link) {
		mutex_lock(&ctx->lock);
		npu_pt_free(ndev, ctx->root, 2);
		ctx->root = NULL;
		mutex_unlock(&ctx->lock);
	}
	mutex_unlock(&ndev->ctx_lock);
}

/**
 * struct npu_pt_spares - page tables allocated before &npu_ctx.lock is taken
 * @tables: tables of level 0 ([0]) and level 1 ([1]) (&npu_pt.spare)
 */
struct npu_pt_spares {
	struct list_head tables[2];
};

static void npu_pt_spares_init(struct npu_pt_spares *sp)
{
	INIT_LIST_HEAD(&sp->tables[0]);
	INIT_LIST_HEAD(&sp->tables[1]);
}

static void npu_pt_spares_free(struct npu_device *ndev,
			       struct npu_pt_spares *sp)
{
	struct npu_pt *pt, *tmp;
	int level;

	for (level = 0; level < 2; level++) {
		list_for_each_entry_safe(pt, tmp, &sp->tables[level], spare) {
			list_del(&pt->spare);
			npu_pt_free(ndev, pt, level);
		}
	}
}

/*
 * Count the tables missing for [va, va + size) in @ctx. Tables are only
 * freed with the context, so what is counted here is enough later.
 */
static void npu_pt_count_missing(struct npu_ctx *ctx, u64 va, u64 size,
				 u32 missing[2])
{
	const u64 span0 = NPU_PAGE_SIZE * NPU_PT_ENTRIES;	/* per leaf */
	const u64 span1 = span0 * NPU_PT_ENTRIES;	/* per level-1 table */
	u64 end = va + size, s, e, a;

	lockdep_assert_held(&ctx->lock);

	missing[0] = 0;
	missing[1] = 0;
	for (s = va; s < end; s = e) {
		struct npu_pt *l1 = ctx->root->child[NPU_PT_INDEX(s, 2)];

		e = min(end, round_down(s, span1) + span1);
		if (!l1) {
			missing[1]++;
			missing[0] += (round_up(e, span0) -
				       round_down(s, span0)) / span0;
			continue;
		}
		for (a = round_down(s, span0); a < e; a += span0)
			if (!l1->child[NPU_PT_INDEX(a, 1)])
				missing[0]++;
	}
}

static int npu_pt_spares_alloc(struct npu_device *ndev,
			       struct npu_pt_spares *sp, const u32 missing[2])
{
	int level;
	u32 i;

	for (level = 0; level < 2; level++) {
		for (i = 0; i < missing[level]; i++) {
			struct npu_pt *pt = npu_pt_alloc(ndev, level);

			if (!pt)
				return -ENOMEM;
			list_add(&pt->spare, &sp->tables[level]);
		}
	}
	return 0;
}

/* Leaf table for @va; missing tables come from @sp (NULL: do not add). */
static u64 *npu_pt_leaf(struct npu_ctx *ctx, u64 va, struct npu_pt_spares *sp)
{
	struct npu_pt *pt = ctx->root;
	int level;

	lockdep_assert_held(&ctx->lock);

	for (level = 2; level > 0; level--) {
		u32 idx = NPU_PT_INDEX(va, level);
		struct npu_pt *next = pt->child[idx];

		if (!next) {
			if (!sp || list_empty(&sp->tables[level - 1]))
				return NULL;
			next = list_first_entry(&sp->tables[level - 1],
						struct npu_pt, spare);
			list_del_init(&next->spare);
			pt->child[idx] = next;
			pt->used++;
			WRITE_ONCE(pt->entries[idx],
				   (next->dma & NPU_PTE_ADDR_MASK) |
				   NPU_PTE_VALID);
		}
		pt = next;
	}
	return &pt->entries[NPU_PT_INDEX(va, 0)];
}

static void npu_pt_unmap_range(struct npu_ctx *ctx, u64 va, u64 size)
{
	u64 end = va + size;

	lockdep_assert_held(&ctx->lock);

	if (!ctx->root)
		return;
	for (; va < end; va += NPU_PAGE_SIZE) {
		u64 *pte = npu_pt_leaf(ctx, va, NULL);

		if (pte)
			WRITE_ONCE(*pte, 0);
	}
}

static int npu_pt_map_page(struct npu_ctx *ctx, u64 va, u64 pte_val,
			   struct npu_pt_spares *sp)
{
	u64 *pte = npu_pt_leaf(ctx, va, sp);

	if (!pte)
		return -ENOMEM;
	WRITE_ONCE(*pte, pte_val);
	return 0;
}

/*
 * Make every ring forget translations of @ctx: a job of the context still
 * running on another ring may have cached PTEs just cleared. The write
 * completes once no ring uses such a translation any more, so the pages can
 * be freed afterwards. Nothing to do once the device is gone (it was reset).
 */
static void npu_ctx_invalidate(struct npu_ctx *ctx)
{
	struct npu_device *ndev = ctx->ndev;
	int idx;

	lockdep_assert_held(&ctx->lock);

	if (!drm_dev_enter(&ndev->drm, &idx))
		return;
	/* writel orders the PTE writes before it */
	npu_wr(ndev, NPU_REG_MMU_INVALIDATE, ctx->id);
	/* PCI writes are posted: a read waits for the invalidation to finish */
	npu_rd(ndev, NPU_REG_MMU_INVALIDATE);
	drm_dev_exit(idx);
}

static int npu_pt_map_bo(struct npu_ctx *ctx, struct npu_bo *bo, u64 va,
			 u64 size, bool read_only, struct npu_pt_spares *sp)
{
	u64 flags = NPU_PTE_VALID | (read_only ? 0 : NPU_PTE_WRITE);
	struct sg_dma_page_iter iter;
	u64 off = 0;
	int ret;

	lockdep_assert_held(&ctx->lock);

	if (bo->kind == NPU_BO_DEVMEM) {
		for (off = 0; off < size; off += NPU_PAGE_SIZE) {
			ret = npu_pt_map_page(ctx, va + off,
					      ((bo->devmem.start + off) &
					       NPU_PTE_ADDR_MASK) |
					      flags | NPU_PTE_DEVMEM, sp);
			if (ret)
				goto err;
		}
		return 0;
	}

	/* a CPU page may hold several device pages (16K, 64K kernels) */
	BUILD_BUG_ON(PAGE_SIZE % NPU_PAGE_SIZE);
	for_each_sgtable_dma_page(bo->sgt, &iter, 0) {
		dma_addr_t addr = sg_page_iter_dma_address(&iter);
		u64 sub;

		for (sub = 0; sub < PAGE_SIZE && off < size;
		     sub += NPU_PAGE_SIZE) {
			ret = npu_pt_map_page(ctx, va + off,
					      ((addr + sub) &
					       NPU_PTE_ADDR_MASK) | flags, sp);
			if (ret)
				goto err;
			off += NPU_PAGE_SIZE;
		}
		if (off >= size)
			break;
	}
	if (off < size) {
		ret = -EINVAL;
		goto err;
	}
	return 0;

err:
	npu_pt_unmap_range(ctx, va, off);
	/* a job may have reached the new PTEs already */
	npu_ctx_invalidate(ctx);
	return ret;
}

/**
 * npu_mapping_create() - map a BO into a context
 * @ctx: context
 * @bo: BO, whose pages or device memory are already allocated
 * @va: with %NPU_MAP_FIXED the page-aligned address to map at, which the
 *	caller checked to lie in [NPU_VA_START, NPU_VA_END); otherwise unused
 * @flags: NPU_MAP_*
 * @out: the new mapping, with one reference
 *
 * Without %NPU_MAP_FIXED the VA is chosen here and an unmapped guard page
 * follows the BO.
 *
 * Return: 0 or a negative errno: -ENOSPC when the VA space is full, -EBUSY
 * when a fixed range overlaps another mapping.
 */
int npu_mapping_create(struct npu_ctx *ctx, struct npu_bo *bo, u64 va,
		       u32 flags, struct npu_mapping **out)
{
	bool read_only = bo->read_only || (flags & NPU_MAP_READ_ONLY);
	struct npu_pt_spares sp;
	struct npu_mapping *map;
	u64 size = bo->base.base.size;
	u32 missing[2];
	int ret, idx;

	/* removal frees the page tables once no such section is left */
	if (!drm_dev_enter(&ctx->ndev->drm, &idx))
		return -ENODEV;
	map = kzalloc(sizeof(*map), GFP_KERNEL);
	if (!map) {
		drm_dev_exit(idx);
		return -ENOMEM;
	}
	kref_init(&map->ref);
	INIT_LIST_HEAD(&map->bo_link);
	INIT_LIST_HEAD(&map->ctx_link);
	map->size = size;
	/* complete before the node is visible (debugfs walks va_mm) */
	map->ctx = npu_ctx_get(ctx);
	drm_gem_object_get(&bo->base.base);
	map->bo = bo;

	npu_pt_spares_init(&sp);
	mutex_lock(&ctx->lock);
	if (flags & NPU_MAP_FIXED) {
		map->node.start = va;
		map->node.size = size;
		ret = drm_mm_reserve_node(&ctx->va_mm, &map->node);
		if (ret == -ENOSPC)
			ret = -EBUSY;
	} else {
		ret = drm_mm_insert_node_generic(&ctx->va_mm, &map->node,
						 size + NPU_VA_GUARD,
						 size >= SZ_2M ? SZ_2M : SZ_64K,
						 0, DRM_MM_INSERT_BEST);
	}
	if (ret)
		goto err_unlock;
	npu_pt_count_missing(ctx, map->node.start, size, missing);
	mutex_unlock(&ctx->lock);

	/*
	 * No allocation under ctx->lock: the jobs' teardown takes it, and
	 * reclaim may wait for their fences. The reserved range is ours.
	 */
	ret = npu_pt_spares_alloc(ctx->ndev, &sp, missing);

	mutex_lock(&ctx->lock);
	if (!ret)
		ret = npu_pt_map_bo(ctx, bo, map->node.start, size, read_only,
				    &sp);
	if (ret) {
		drm_mm_remove_node(&map->node);
		goto err_unlock;
	}
	mutex_unlock(&ctx->lock);
	npu_pt_spares_free(ctx->ndev, &sp);
	drm_dev_exit(idx);
	*out = map;
	return 0;

err_unlock:
	mutex_unlock(&ctx->lock);
	npu_pt_spares_free(ctx->ndev, &sp);
	drm_dev_exit(idx);
	drm_gem_object_put(&bo->base.base);
	npu_ctx_put(ctx);
	kfree(map);
	return ret;
}

static void npu_mapping_release(struct kref *ref)
{
	struct npu_mapping *map = container_of(ref, struct npu_mapping, ref);
	struct npu_ctx *ctx = map->ctx;

	mutex_lock(&ctx->lock);
	npu_pt_unmap_range(ctx, map->node.start, map->size);
	/* before the VA can be reused and the BO's pages freed */
	npu_ctx_invalidate(ctx);
	drm_mm_remove_node(&map->node);
	mutex_unlock(&ctx->lock);

	drm_gem_object_put(&map->bo->base.base);
	npu_ctx_put(ctx);
	kfree(map);
}

/**
 * npu_mapping_protect() - make part of a mapping read-only for the device
 * @map: mapping (a reference held)
 * @offset: page-aligned offset into the BO
 * @size: page-aligned bytes, within the BO
 *
 * Clears the write bit of the range's PTEs, then has every ring drop its
 * cached translations of the context, so no later access writes through
 * an old one. Nothing makes the range writable again.
 *
 * Return: 0, or -ENODEV once the device is gone.
 */
int npu_mapping_protect(struct npu_mapping *map, u64 offset, u64 size)
{
	struct npu_ctx *ctx = map->ctx;
	u64 va = map->node.start + offset, end = va + size;

	mutex_lock(&ctx->lock);
	if (!ctx->root) {
		mutex_unlock(&ctx->lock);
		return -ENODEV;
	}
	for (; va < end; va += NPU_PAGE_SIZE) {
		u64 *pte = npu_pt_leaf(ctx, va, NULL);

		if (pte)
			WRITE_ONCE(*pte, *pte & ~NPU_PTE_WRITE);
	}
	npu_ctx_invalidate(ctx);
	mutex_unlock(&ctx->lock);
	return 0;
}

/**
 * npu_mapping_put() - drop a mapping reference; the last one unmaps
 * @map: mapping, may be NULL
 *
 * Process context only. The last reference clears the PTEs and has every
 * ring drop its cached translations of the context (NPU_REG_MMU_INVALIDATE)
 * before the BO reference is dropped.
 */
void npu_mapping_put(struct npu_mapping *map)
{
	if (map)
		kref_put(&map->ref, npu_mapping_release);
}

/**
 * npu_ctx_find_va() - find the live mapping that holds [va, va + size)
 * @ctx: context
 * @va: start address
 * @size: bytes, > 0
 *
 * Only mappings still named by a handle are considered.
 *
 * Return: the mapping with a new reference, or NULL.
 */
struct npu_mapping *npu_ctx_find_va(struct npu_ctx *ctx, u64 va, u64 size)
{
	struct npu_mapping *found = NULL;
	struct drm_mm_node *node;

	/* drm_mm's range walk never ends for a range past the managed space */
	if (size == 0 || va >= NPU_VA_END || size > NPU_VA_END - va)
		return NULL;

	mutex_lock(&ctx->lock);
	drm_mm_for_each_node_in_range(node, &ctx->va_mm, va, va + 1) {
		struct npu_mapping *map =
			container_of(node, struct npu_mapping, node);

		if (va >= node->start && va + size <= node->start + map->size &&
		    READ_ONCE(map->handles) && kref_get_unless_zero(&map->ref)) {
			found = map;
			break;
		}
	}
	mutex_unlock(&ctx->lock);
	return found;
}

/**
 * npu_ctx_va_pte() - the page-table entry of an address
 * @ctx: context
 * @va: device address
 *
 * Return: the leaf entry (NPU_PTE_*), 0 when the page is not mapped.
 */
u64 npu_ctx_va_pte(struct npu_ctx *ctx, u64 va)
{
	u64 *pte, val = 0;

	if (va >= NPU_VA_END)
		return 0;
	mutex_lock(&ctx->lock);
	if (ctx->root) {
		pte = npu_pt_leaf(ctx, va, NULL);
		if (pte)
			val = READ_ONCE(*pte);
	}
	mutex_unlock(&ctx->lock);
	return val;
}

/* Have all jobs of @ctx pushed before sequence number @seq signalled? */
static bool npu_ctx_signalled_before(struct npu_ctx *ctx, u64 seq)
{
	struct npu_job *job;

	lockdep_assert_held(&ctx->track_lock);

	list_for_each_entry(job, &ctx->jobs, ctx_link) {
		if (job->ctx_seq >= seq)
			break;
		if (!dma_fence_is_signaled(job->done))
			return false;
	}
	return true;
}

/* Drop an array of mapping references taken off a job. */
static void npu_job_maps_put(struct npu_mapping **maps, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		npu_mapping_put(maps[i]);
	kvfree(maps);
}

/* A reap that took references has dropped them all. */
static void npu_ctx_reap_done(struct npu_ctx *ctx)
{
	bool idle;

	spin_lock(&ctx->track_lock);
	idle = !--ctx->reaping;
	spin_unlock(&ctx->track_lock);
	if (idle)
		wake_up_all(&ctx->reap_wq);
}

static bool npu_ctx_reaps_done(struct npu_ctx *ctx)
{
	bool done;

	spin_lock(&ctx->track_lock);
	done = !ctx->reaping;
	spin_unlock(&ctx->track_lock);
	return done;
}

/* Take the mapping references off a job (caller holds track_lock). */
static u32 npu_job_maps_take(struct npu_job *job, struct npu_mapping ***maps)
{
	u32 n = job->nmaps;

	lockdep_assert_held(&job->ctx->track_lock);

	*maps = job->maps;
	job->maps = NULL;
	job->nmaps = 0;
	return n;
}

/**
 * npu_ctx_reap() - drop what no job of a context can still be using
 * @ctx: context
 *
 * The mapping references (BO lists) of the signalled jobs pushed before the
 * oldest unsignalled one, and every retiring mapping whose older jobs have
 * all signalled, are dropped now (a signalled job is off the hardware, even
 * after a ring reset), not when the scheduler frees the jobs later: a job
 * pushed after a wait must find an unmapped range unmapped, and a fixed
 * BO_MAP must find it free. Process context.
 *
 * Return: true if a reference was dropped.
 */
bool npu_ctx_reap(struct npu_ctx *ctx)
{
	struct {
		struct npu_mapping **maps;
		u32 n;
	} take[8];
	struct npu_mapping *map, *tmp;
	struct npu_job *job;
	bool dropped = false;
	LIST_HEAD(done);
	int i, k;

	do {
		k = 0;
		spin_lock(&ctx->track_lock);
		list_for_each_entry(job, &ctx->jobs, ctx_link) {
			if (!dma_fence_is_signaled(job->done))
				break;
			if (!job->nmaps)
				continue;
			take[k].n = npu_job_maps_take(job, &take[k].maps);
			if (++k == ARRAY_SIZE(take))
				break;
		}
		if (k)
			ctx->reaping++;
		spin_unlock(&ctx->track_lock);
		for (i = 0; i < k; i++)
			npu_job_maps_put(take[i].maps, take[i].n);
		if (k)
			npu_ctx_reap_done(ctx);
		dropped |= k > 0;
	} while (k == ARRAY_SIZE(take));

	spin_lock(&ctx->track_lock);
	list_for_each_entry_safe(map, tmp, &ctx->retiring, ctx_link) {
		if (!npu_ctx_signalled_before(ctx, map->retire_seq))
			break;
		list_move_tail(&map->ctx_link, &done);
	}
	if (!list_empty(&done))
		ctx->reaping++;
	spin_unlock(&ctx->track_lock);

	if (list_empty(&done))
		return dropped;
	list_for_each_entry_safe(map, tmp, &done, ctx_link) {
		list_del_init(&map->ctx_link);
		npu_mapping_put(map);
	}
	npu_ctx_reap_done(ctx);
	return true;
}

/**
 * npu_ctx_reap_wait() - reap, and wait for the reaps already under way
 * @ctx: context
 *
 * Another reap (the job-free worker's) may have taken a signalled job's
 * references and not yet unmapped them: a fixed BO_MAP waits for it
 * before it calls the range taken. Process context; the caller may hold
 * its file's vm_lock and a BO's maps_lock, which no reap takes.
 */
void npu_ctx_reap_wait(struct npu_ctx *ctx)
{
	npu_ctx_reap(ctx);
	/* a fatal signal: the caller's retry says -EBUSY, the process ends */
	wait_event_killable(ctx->reap_wq, npu_ctx_reaps_done(ctx));
}

/**
 * npu_ctx_track_job() - record a job that is about to be pushed
 * @ctx: the job's context
 * @job: armed job; its finished fence is referenced until it is untracked
 */
void npu_ctx_track_job(struct npu_ctx *ctx, struct npu_job *job)
{
	job->done = dma_fence_get(&job->base.s_fence->finished);
	spin_lock(&ctx->track_lock);
	job->ctx_seq = ctx->next_seq++;
	list_add_tail(&job->ctx_link, &ctx->jobs);
	spin_unlock(&ctx->track_lock);
}

/**
 * npu_ctx_untrack_job() - forget a job being freed
 * @ctx: the job's context
 * @job: job, pushed or not
 *
 * Drops the job's mapping references unless npu_ctx_reap() already did, and
 * for a pushed job releases the mappings that were only waiting for it.
 */
void npu_ctx_untrack_job(struct npu_ctx *ctx, struct npu_job *job)
{
	struct npu_mapping **maps;
	bool pushed;
	u32 n;

	spin_lock(&ctx->track_lock);
	pushed = !list_empty(&job->ctx_link);
	list_del_init(&job->ctx_link);
	n = npu_job_maps_take(job, &maps);
	if (n)
		ctx->reaping++;
	spin_unlock(&ctx->track_lock);
	npu_job_maps_put(maps, n);
	if (n)
		npu_ctx_reap_done(ctx);
	if (!pushed)
		return;
	dma_fence_put(job->done);
	job->done = NULL;
	npu_ctx_reap(ctx);
}

/**
 * npu_ctx_retire_mapping() - drop an unbound mapping's binding reference
 * @ctx: context of @map
 * @map: mapping no longer on its BO's list (&npu_mapping.handles is 0)
 *
 * The reference is dropped once every job pushed so far has signalled:
 * checked now, and again at every SUBMIT in the context, whenever a job is
 * freed and when a fixed BO_MAP finds the range taken.
 */
void npu_ctx_retire_mapping(struct npu_ctx *ctx, struct npu_mapping *map)
{
	spin_lock(&ctx->track_lock);
	map->retire_seq = ctx->next_seq;
	list_add_tail(&map->ctx_link, &ctx->retiring);
	spin_unlock(&ctx->track_lock);
	npu_ctx_reap(ctx);
}

/* ---------------------------------------------------------------------- */
/* a file's contexts by id */

/**
 * npu_extra_ctx() - extra context of a file (CTX_CREATE), no reference taken
 * @nfile: file state, whose &npu_file.vm_lock the caller holds
 * @ctx_id: id from CTX_CREATE
 *
 * Return: the context, or NULL for 0 or an unknown id.
 */
struct npu_ctx *npu_extra_ctx(struct npu_file *nfile, u32 ctx_id)
{
	lockdep_assert_held(&nfile->vm_lock);

	return ctx_id ? xa_load(&nfile->ctxs, ctx_id) : NULL;
}

/**
 * npu_file_ctx_lookup() - context named by a uAPI context id
 * @nfile: file state, whose &npu_file.vm_lock the caller holds (so that
 *	CTX_DESTROY cannot run between the lookup and what the caller does)
 * @ctx_id: 0 for the default context, or an id from CTX_CREATE
 *
 * Return: the context with a new reference, or NULL.
 */
struct npu_ctx *npu_file_ctx_lookup(struct npu_file *nfile, u32 ctx_id)
{
	struct npu_ctx *ctx;

	ctx = ctx_id ? npu_extra_ctx(nfile, ctx_id) : nfile->ctx;
	return ctx ? npu_ctx_get(ctx) : NULL;
}
