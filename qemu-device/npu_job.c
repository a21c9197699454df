/*
 * npu - virtual NPU PCI device: a command's end.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Every command (a ring's or a user queue's packet, a diagnostic kernel, a
 * LAUNCH_CODE) ends here: its modelled duration is waited out, in device
 * time or on the virtual clock (npu_vtime.c), and it is accounted to its
 * ring.
 */

#include "qemu/osdep.h"
#include "npu_base.h"
#include "npu_job.h"
#include "npu_vtime.h"

/* Modelled time to move bytes over the link and in device memory. */
uint64_t npu_bytes_ns(NpuState *s, uint64_t host_bytes, uint64_t dev_bytes)
{
    return host_bytes * 1000 / s->link_bw + dev_bytes * 1000 / s->mem_bw;
}

/*
 * A launch's modelled overhead on r, for a launch starting at t0: launch-ns
 * when the engine meets it cold; when it comes right behind another
 * launch, with no idle between, it ends launch-gap-ns (at most launch-ns)
 * after that one ended: the dispatcher fetched and set it up while the
 * one before ran, as a GPU's command processor does, so back-to-back
 * launches complete one per launch-gap-ns. On the wall clock the host work
 * between the two is inside the gap, not added to it. r is warm until it
 * idles (npu_launch_cold). Engine thread only.
 */
uint64_t npu_launch_model_ns(NpuRing *r, int64_t t0)
{
    NpuState *s = r->s;
    int64_t gap = MIN(s->launch_gap_ns, s->launch_ns);

    if (!r->launch_end) {
        return s->launch_ns;
    }
    if (s->vtime) {
        return gap;     /* the virtual clock did not move in between */
    }
    return MAX(r->launch_end + gap - t0, 0);
}

/* A launch on r ended (device time): the next one's gap counts from here. */
void npu_launch_done(NpuRing *r)
{
    r->launch_end = MAX(r->cmd_end ? r->cmd_end : npu_time(), 1);
}

/* The engine idled or changed queues: its next launch starts cold. */
void npu_launch_cold(NpuRing *r)
{
    r->launch_end = 0;
}

/*
 * End of a command that started at t0: wait for its modelled duration (if
 * the timing model is on, or force is set) and account it. False if the
 * ring was reset meanwhile.
 */
bool npu_complete(NpuJob *job, int64_t t0, uint64_t model_ns, bool force,
                  uint64_t bytes)
{
    NpuRing *r = job->ring;
    uint64_t busy;

    if (r->s->vtime) {
        if (!npu_vt_complete(r, model_ns)) {
            return false;
        }
    } else if ((r->s->timing || force) && model_ns &&   /* else no wait */
               !npu_sleep_until(r, t0 + (int64_t)MIN(model_ns,
                                                     INT64_MAX / 2))) {
        return false;
    }
    if (npu_aborted(r)) {
        return false;
    }
    if (r->s->vtime) {
        r->cmd_end = 0;
    } else if (job->work_end) {
        r->cmd_end = job->work_end;
    } else if (job->t0_at_end && !model_ns && t0 == job->t0) {
        /* a packet of no time right behind another ends where it started */
        r->cmd_end = t0;
    } else {
        r->cmd_end = npu_time();
    }
    busy = r->s->vtime ? r->vt - r->vt_start : r->cmd_end - t0;
    qemu_mutex_lock(&r->lock);
    r->busy_ns += busy;
    qatomic_set(&r->cmd_start, 0);
    r->cmds++;
    r->bytes += bytes;
    r->ops += job->ops;
    qemu_mutex_unlock(&r->lock);
    npu_sem_kick(r->s);
    return true;
}
