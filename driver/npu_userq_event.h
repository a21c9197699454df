/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * npu_userq_event.h - what the kernel does for user queues after
 * creation (npu_userq_event.c): the event ring and its interrupt,
 * USERQ_WAIT_MEM, halt records, the progress watchdog, USERQ_SIGNAL and
 * USERQ_WAIT.
 */
#ifndef NPU_USERQ_EVENT_H
#define NPU_USERQ_EVENT_H

#include "npu_base.h"

int npu_userq_events_init(struct npu_device *ndev);
void npu_userq_events_fini(struct npu_device *ndev);
irqreturn_t npu_userq_irq(int irq, void *arg);
void npu_userq_halt_work(struct work_struct *work);
void npu_userq_watchdog(struct work_struct *work);
void npu_userq_watchdog_kick(struct npu_device *ndev);
void npu_userq_fences_cancel(struct npu_device *ndev, struct npu_userq *uq,
			     int error);
void npu_userq_fences_check(struct npu_device *ndev);
int npu_ioctl_userq_wait_mem(struct drm_device *dev, void *data,
			     struct drm_file *file);
int npu_ioctl_userq_signal(struct drm_device *dev, void *data,
			   struct drm_file *file);
int npu_ioctl_userq_wait(struct drm_device *dev, void *data,
			 struct drm_file *file);
void npu_userq_wait_work(struct work_struct *work);
void npu_userq_waits_fini(struct npu_device *ndev);

#endif /* NPU_USERQ_EVENT_H */
