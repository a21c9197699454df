/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * npu_mmu.h - device address spaces (npu_mmu.c): contexts, page tables,
 * mappings, the jobs a context tracks, a file's contexts by id.
 */
#ifndef NPU_MMU_H
#define NPU_MMU_H

#include "npu_base.h"

struct npu_ctx *npu_ctx_create(struct npu_device *ndev);
void npu_ctxs_hw_fini(struct npu_device *ndev);
void npu_ctx_put(struct npu_ctx *ctx);
static inline struct npu_ctx *npu_ctx_get(struct npu_ctx *ctx)
{
	kref_get(&ctx->ref);
	return ctx;
}

int npu_mapping_create(struct npu_ctx *ctx, struct npu_bo *bo, u64 va,
		       u32 flags, struct npu_mapping **out);
void npu_mapping_put(struct npu_mapping *map);
int npu_mapping_protect(struct npu_mapping *map, u64 offset, u64 size);
static inline struct npu_mapping *npu_mapping_get(struct npu_mapping *map)
{
	kref_get(&map->ref);
	return map;
}

struct npu_mapping *npu_ctx_find_va(struct npu_ctx *ctx, u64 va, u64 size);
u64 npu_ctx_va_pte(struct npu_ctx *ctx, u64 va);
void npu_ctx_track_job(struct npu_ctx *ctx, struct npu_job *job);
void npu_ctx_untrack_job(struct npu_ctx *ctx, struct npu_job *job);
void npu_ctx_retire_mapping(struct npu_ctx *ctx, struct npu_mapping *map);
bool npu_ctx_reap(struct npu_ctx *ctx);
void npu_ctx_reap_wait(struct npu_ctx *ctx);
struct npu_ctx *npu_extra_ctx(struct npu_file *nfile, u32 ctx_id);
struct npu_ctx *npu_file_ctx_lookup(struct npu_file *nfile, u32 ctx_id);

#endif /* NPU_MMU_H */
