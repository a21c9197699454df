// SPDX-License-Identifier: MIT
/*
 * npu_ukernel.c - launches of user kernels: one LAUNCH_CODE packet per
 * launch, queued like any kernel on the stream's compute queue.
 */
#include <string.h>

#include "npu_core.h"
#include "npu_graph.h"
#include "npu_kprofile.h"
#include "npu_module.h"
#include "npu_printf.h"

npu_status_t npu_launch_kernel(npu_function_t f, npu_dim3 grid, npu_dim3 block,
			       unsigned int scratch_bytes, npu_stream_t stream,
			       void **args)
{
	uint64_t words[NPU_CODE_MAX_ARGS], threads, blocks, scratch;
	struct npu_pkt_launch_code *p;
	const struct npu_code_desc *k;
	struct device *dev;
	struct npu_stream *s;
	struct jobctx jc;
	uint64_t pva = 0, point = 0;
	uint64_t stats_va = 0, trace_va = 0;
	uint32_t pbytes = 0, trace_bytes = 0, period = 0;
	int slot = -1, kslot = -1;
	npu_status_t st;
	unsigned i;

	st = npu_function_check(f);
	if (st)
		return st;
	k = &f->desc;
	if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z)
		return npu_fail(NPU_ERROR_INVALID_CONFIGURATION,
				"kernel %s: grid %ux%ux%u, block %ux%ux%u has a "
				"zero dimension", k->name, grid.x, grid.y, grid.z,
				block.x, block.y, block.z);
	threads = (uint64_t)block.x * block.y * block.z;
	blocks = (uint64_t)grid.x * grid.y * grid.z;
	if (threads > npu_func_max_threads(f))
		return npu_fail(NPU_ERROR_INVALID_CONFIGURATION,
				"kernel %s: %llu threads per block, at most %u",
				k->name, (unsigned long long)threads,
				npu_func_max_threads(f));
	if (blocks > UINT32_MAX)
		return npu_fail(NPU_ERROR_INVALID_CONFIGURATION,
				"kernel %s: %llu blocks, fewer than 2^32 please",
				k->name, (unsigned long long)blocks);
	scratch = (uint64_t)k->scratch_bytes + scratch_bytes;
	if (scratch > f->mod->dev->prop.unit_scratch_bytes)
		return npu_fail(NPU_ERROR_INVALID_CONFIGURATION,
				"kernel %s: %llu bytes of scratchpad per block "
				"(%u static), a unit has %u", k->name,
				(unsigned long long)scratch, k->scratch_bytes,
				f->mod->dev->prop.unit_scratch_bytes);
	if (k->nargs && !args)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "kernel %s takes %u "
				"arguments; args is NULL", k->name, k->nargs);
	memset(words, 0, sizeof(words));
	for (i = 0; i < k->nargs; i++) {
		if (!args[i])
			return npu_fail(NPU_ERROR_INVALID_VALUE, "kernel %s: "
					"args[%u] is NULL", k->name, i);
		memcpy(&words[i], args[i], k->arg_size[i]);
	}
	if (npu_capturing()) {
		npu_stream_capture_status_t cs = NPU_STREAM_CAPTURE_STATUS_NONE;

		if (!npu_stream_is_capturing(stream, &cs) &&
		    cs != NPU_STREAM_CAPTURE_STATUS_NONE)
			return npu_fail(NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED,
					"user kernels cannot be captured yet");
	}
	st = npu_get_stream(stream, &dev, &s);
	if (st)
		return st;
	if (dev != f->mod->dev)
		return npu_fail(NPU_ERROR_INVALID_HANDLE, "kernel %s was loaded "
				"on another device", k->name);
	pthread_mutex_lock(&dev->lock);
	if (dev->sticky) {
		st = npu_fail_sticky(dev, dev->sticky);
		goto out;
	}
	if (f->mod->uses_printf) {
		st = npu_printf_slot(dev, k->name, &slot, &pva, &pbytes);
		if (st)
			goto out;
	}
	if (npu_tracing() &&
	    !npu_kprofile_slot(dev, f, (unsigned)threads, scratch, &kslot,
			       &stats_va, &trace_va, &trace_bytes, &period))
		kslot = -1;
	st = npu_job_begin(dev, s, sizeof(*p) + 8 * k->nargs, &jc);
	if (st)
		goto out;
	p = npu_job_put(&jc, sizeof(*p) + 8 * k->nargs);
	memset(p, 0, sizeof(*p));
	p->header = NPU_PKT_HDR(NPU_OP_LAUNCH_CODE, 0,
				NPU_PKT_LAUNCH_CODE_DW + 2 * k->nargs);
	p->entry = f->entry;
	p->grid[0] = grid.x;
	p->grid[1] = grid.y;
	p->grid[2] = grid.z;
	p->block[0] = block.x;
	p->block[1] = block.y;
	p->block[2] = block.z;
	p->scratch_bytes = (uint32_t)scratch;
	p->stack_bytes = f->stack_bytes;
	p->nargs = k->nargs;
	p->printf_buf = pva;
	p->printf_bytes = pbytes;
	p->stats = stats_va;
	p->trace = trace_va;
	p->trace_bytes = trace_bytes;
	p->sample_period = period;
	memcpy(p->args, words, 8 * k->nargs);
	st = npu_job_submit(dev, &jc, Q_COMPUTE, NULL, 0, &point);
	if (!st && slot >= 0) {
		npu_printf_track(dev, slot, s->tl, point);
		slot = -1;
	}
	if (!st && kslot >= 0) {
		npu_kprofile_track(dev, kslot, s->tl, point);
		kslot = -1;
	}
out:
	if (slot >= 0)
		npu_printf_cancel(dev, slot);
	if (kslot >= 0)
		npu_kprofile_cancel(dev, kslot);
	pthread_mutex_unlock(&dev->lock);
	return st;
}

npu_status_t npu_parallel_kernel(npu_function_t f, npu_dim3 grid,
				 npu_dim3 block, unsigned int scratch_bytes,
				 npu_stream_t stream, void **args)
{
	npu_status_t st = npu_launch_kernel(f, grid, block, scratch_bytes,
					    stream, args);

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
