/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * npu_regs.h - register access of the npu driver (npu_regs.c). Callers hold
 * drm_dev_enter().
 */
#ifndef NPU_REGS_H
#define NPU_REGS_H

#include <linux/io.h>

#include "npu_base.h"

static inline u32 npu_rd(struct npu_device *ndev, u32 reg)
{
	return readl(ndev->regs + reg);
}

static inline void npu_wr(struct npu_device *ndev, u32 reg, u32 val)
{
	writel(val, ndev->regs + reg);
}

static inline u32 npu_ring_rd(struct npu_ring *ring, u32 reg)
{
	return npu_rd(ring->ndev, NPU_RING_BASE(ring->index) + reg);
}

static inline void npu_ring_wr(struct npu_ring *ring, u32 reg, u32 val)
{
	npu_wr(ring->ndev, NPU_RING_BASE(ring->index) + reg, val);
}

/*
 * A full barrier between this CPU's earlier stores and its later loads as
 * the device sees them, for a store-barrier-load handshake with it: a
 * register read (the hw spec's "Memory order"). smp_mb() alone is not
 * enough under an emulator that runs all vCPUs in one thread and compiles
 * the guest's fences away.
 */
static inline void npu_mb_device(struct npu_device *ndev)
{
	smp_mb();	/* the order on real hardware */
	npu_rd(ndev, NPU_REG_VERSION);
}

u64 npu_rd64(struct npu_device *ndev, u32 lo);
u64 npu_rd64_counter(struct npu_device *ndev, u32 lo);

#endif /* NPU_REGS_H */
