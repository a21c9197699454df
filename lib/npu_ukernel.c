// SPDX-License-Identifier: MIT
/*
 * npu_ukernel.c - launches of user kernels: one LAUNCH_CODE packet per
 * launch, queued like any kernel on the stream's compute queue.
 */
/* pthread_rwlock_t (the allocation tables' lock, npu_internal.h) */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "npu_core.h"
#include "npu_kprofile.h"
#include "npu_module.h"
#include "npu_printf.h"

/* A launch while a capture is active (the capture hook decides whether
 * it is captured); out of line: the common path keeps a small frame. */
static __attribute__((noinline, cold)) bool
launch_captured(npu_function_t f, npu_dim3 grid, npu_dim3 block,
		unsigned int scratch_bytes, npu_stream_t stream, void **args,
		npu_status_t *st)
{
	npu_kernel_node_params p;

	*st = npu_ukernel_prepare(f, grid, block, scratch_bytes, args);
	if (*st)
		return true;
	memset(&p, 0, sizeof(p));
	p.function = f;
	p.grid = grid;
	p.block = block;
	p.scratch_bytes = scratch_bytes;
	p.nargs = f->desc.nargs;
	npu_ukernel_pack(f, args, p.args);
	return npu_capture()->kernel_node(stream, &p, st);
}

/* A launch with a printf buffer or a profile slot (dev->lock held). */
static __attribute__((noinline)) npu_status_t
launch_with_slots(struct device *dev, struct npu_stream *s, npu_function_t f,
		  npu_dim3 grid, npu_dim3 block, unsigned int scratch_bytes,
		  void **args)
{
	struct ukernel_slots sl = { -1, -1 };
	struct npu_pkt_launch_code extra;
	uint64_t point = 0;
	npu_status_t st;

	st = npu_ukernel_slots_take(dev, f, block, scratch_bytes, false, &extra,
				    &sl, NULL);
	if (!st)
		st = npu_ukernel_submit(dev, s, f, grid, block, scratch_bytes,
					args, &extra, &point);
	if (!st)
		npu_ukernel_slots_track(dev, &sl, s->tl, point);
	npu_ukernel_slots_cancel(dev, &sl);
	return st;
}

/* Every launch but the common one: a check fails, a capture or the
 * profiler is active, the module prints, the device or stream is wrong. */
static __attribute__((noinline)) npu_status_t
launch_kernel_slow(npu_function_t f, const npu_dim3 *gridp,
		   const npu_dim3 *blockp, unsigned int scratch_bytes,
		   npu_stream_t stream, void **args)
{
	npu_dim3 grid = *gridp, block = *blockp;
	struct device *dev;
	struct npu_stream *s;
	npu_status_t st;

	/* the arguments themselves are checked as they are packed */
	st = npu_ukernel_config(f, grid, block, scratch_bytes);
	if (st)
		return st;
	if (f->desc.nargs && !args)
		return npu_ukernel_args_fail(f, args);
	if (npu_capturing() &&	/* stream capture hook (npu_core.h) */
	    launch_captured(f, grid, block, scratch_bytes, stream, args, &st))
		return st;
	st = npu_get_stream(stream, &dev, &s);
	if (st)
		return st;
	if (dev != f->dev)
		return npu_fail(NPU_ERROR_INVALID_HANDLE, "kernel %s was loaded "
				"on another device", f->desc.name);
	/* another kernel than the thread's last one: still the stream's
	 * lock alone when nothing else is special (npu_job.c) */
	if (!f->uses_printf &&
	    npu_ukernel_fast(dev, s, f, grid, block, scratch_bytes, args, &st))
		return st;
	pthread_mutex_lock(&dev->lock);
	if (dev->sticky)
		st = npu_fail_sticky(dev, dev->sticky);
	else if (f->uses_printf || npu_tracing())
		st = launch_with_slots(dev, s, f, grid, block, scratch_bytes,
				       args);
	else
		st = npu_ukernel_submit(dev, s, f, grid, block, scratch_bytes,
					args, NULL, NULL);
	pthread_mutex_unlock(&dev->lock);
	return st;
}

npu_status_t npu_launch_kernel(npu_function_t f, npu_dim3 grid, npu_dim3 block,
			       unsigned int scratch_bytes, npu_stream_t stream,
			       void **args)
{
	struct device *dev;
	struct npu_stream *s;
	npu_status_t st;

	/* The common launch makes the calls a built-in launch makes; anything
	 * else (including every error) takes launch_kernel_slow(). */
	if (!f || f != npu_last_function ||
	    npu_last_function_gen !=
	    atomic_load_explicit(&npu_mod_gen, memory_order_acquire) ||
	    !npu_ukernel_config_ok(f, grid, block, scratch_bytes) ||
	    (f->desc.nargs && !args) ||
	    f->uses_printf || npu_capturing() || npu_tracing())
		return launch_kernel_slow(f, &grid, &block, scratch_bytes,
					  stream, args);
	st = npu_get_stream(stream, &dev, &s);
	if (st)
		return st;
	if (dev != f->dev)
		return launch_kernel_slow(f, &grid, &block, scratch_bytes,
					  stream, args);
	/* a user-queue stream's launch under its own lock (npu_job.c) */
	if (npu_ukernel_fast(dev, s, f, grid, block, scratch_bytes, args, &st))
		return st;
	pthread_mutex_lock(&dev->lock);
	if (dev->sticky)
		st = npu_fail_sticky(dev, dev->sticky);
	else
		st = npu_ukernel_submit(dev, s, f, grid, block, scratch_bytes,
					args, NULL, NULL);
	pthread_mutex_unlock(&dev->lock);
	return st;
}

npu_status_t npu_ukernel_slots_take(struct device *dev, npu_function_t f,
				    npu_dim3 block, uint64_t scratch_bytes,
				    bool printless_ok,
				    struct npu_pkt_launch_code *extra,
				    struct ukernel_slots *sl, bool *printless)
{
	const struct npu_code_desc *k = &f->desc;
	npu_status_t st;

	memset(extra, 0, sizeof(*extra));
	sl->printf_slot = -1;
	sl->profile_slot = -1;
	if (printless)
		*printless = false;
	if (f->mod->uses_printf) {
		npu_status_t before = npu_peek_last_error();
		uint64_t va;
		uint32_t bytes;

		st = npu_printf_slot(dev, k->name, &sl->printf_slot, &va, &bytes);
		if (st && !printless_ok)
			return st;
		if (st) {
			/* not an error of the call: its lines are lost */
			npu_set_last_error(before);
			sl->printf_slot = -1;
			*printless = true;
		} else {
			extra->printf_buf = va;
			extra->printf_bytes = bytes;
		}
	}
	if (npu_tracing() &&
	    !npu_kprofile_slot(dev, f, block.x * block.y * block.z,
			       k->scratch_bytes + scratch_bytes,
			       &sl->profile_slot, &extra->stats, &extra->trace,
			       &extra->trace_bytes, &extra->sample_period))
		sl->profile_slot = -1;
	else	/* the slot has room for the tensor counters after the stats */
		extra->flags |= NPU_CODE_STATS_TENSOR;
	return NPU_SUCCESS;
}

void npu_ukernel_slots_track(struct device *dev, struct ukernel_slots *sl,
			     struct tl *tl, uint64_t point)
{
	if (sl->printf_slot >= 0)
		npu_printf_track(dev, sl->printf_slot, tl, point);
	if (sl->profile_slot >= 0)
		npu_kprofile_track(dev, sl->profile_slot, tl, point);
	sl->printf_slot = -1;	/* theirs now: nothing to cancel */
	sl->profile_slot = -1;
}

void npu_ukernel_slots_cancel(struct device *dev, struct ukernel_slots *sl)
{
	if (sl->printf_slot >= 0)
		npu_printf_cancel(dev, sl->printf_slot);
	if (sl->profile_slot >= 0)
		npu_kprofile_cancel(dev, sl->profile_slot);
	sl->printf_slot = -1;
	sl->profile_slot = -1;
}

npu_status_t npu_kernel_node_params_init(npu_kernel_node_params *p,
					 npu_function_t f, npu_dim3 grid,
					 npu_dim3 block,
					 unsigned int scratch_bytes,
					 void **args)
{
	npu_status_t st;

	if (!p)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "params is NULL");
	st = npu_ukernel_prepare(f, grid, block, scratch_bytes, args);
	if (st)
		return st;
	memset(p, 0, sizeof(*p));
	p->function = f;
	p->grid = grid;
	p->block = block;
	p->scratch_bytes = scratch_bytes;
	p->nargs = f->desc.nargs;
	npu_ukernel_pack(f, args, p->args);
	return NPU_SUCCESS;
}

npu_status_t npu_parallel_kernel(npu_function_t f, npu_dim3 grid,
				 npu_dim3 block, unsigned int scratch_bytes,
				 npu_stream_t stream, void **args)
{
	npu_status_t st;

	/* the device synchronize that follows a legacy-stream launch is
	 * checked first: nothing runs when a capture forbids it */
	if (!stream && npu_capturing() &&
	    npu_capture()->uncaptured(NULL, true, &st))
		return st;
	st = npu_launch_kernel(f, grid, block, scratch_bytes, stream, args);
	if (st)
		return st;
	return stream ? npu_stream_synchronize(stream) : npu_device_synchronize();
}

npu_status_t npu_parallel_kernel_async(npu_function_t f, npu_dim3 grid,
				       npu_dim3 block,
				       unsigned int scratch_bytes,
				       npu_stream_t stream, void **args)
{
	return npu_launch_kernel(f, grid, block, scratch_bytes, stream, args);
}
