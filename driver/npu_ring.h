/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * npu_ring.h - the hardware rings (npu_ring.c): ring programming,
 * hardware fences, the ring and error interrupts, fault records, ring
 * reset.
 */
#ifndef NPU_RING_H
#define NPU_RING_H

#include "npu_base.h"

extern unsigned int npu_job_timeout_ms;

int npu_rings_init(struct npu_device *ndev,
		   const struct drm_sched_backend_ops *ops);
void npu_rings_fini(struct npu_device *ndev);
void npu_rings_hw_fini(struct npu_device *ndev);
void npu_rings_hw_start(struct npu_device *ndev);
void npu_rings_hw_stop(struct npu_device *ndev);
irqreturn_t npu_ring_irq(int irq, void *arg);
irqreturn_t npu_error_irq(int irq, void *arg);
struct dma_fence *npu_ring_run(struct npu_ring *ring, struct npu_job *job);
bool npu_ring_reset(struct npu_ring *ring, struct npu_job *bad);
void npu_ring_fail_all(struct npu_ring *ring, int error);
void npu_rings_running_ns(struct npu_device *ndev, struct npu_file *nfile,
			  u64 ns[2]);
struct npu_fence *npu_fence_alloc(gfp_t gfp);
void npu_fault_record(struct npu_file *nfile, u32 kind, u32 queue_id,
		      u32 ring, u32 cause, u32 info, u64 addr,
		      const struct drm_npu_get_fault *where);

#endif /* NPU_RING_H */
