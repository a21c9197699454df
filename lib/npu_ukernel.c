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
	uint64_t pva = 0, point = 0;
	struct npu_pkt_launch_code extra, *x = NULL;
	const struct npu_code_desc *k;
	struct device *dev;
	struct npu_stream *s;
	uint32_t pbytes = 0;
	int slot = -1, kslot = -1;
	npu_status_t st;

	st = npu_ukernel_prepare(f, grid, block, scratch_bytes, args);
	if (st)
		return st;
	k = &f->desc;
	if (npu_capturing()) {	/* graph capture hook (npu_graph.c) */
		npu_kernel_node_params p;
		npu_status_t cst;

		memset(&p, 0, sizeof(p));
		p.function = f;
		p.grid = grid;
		p.block = block;
		p.scratch_bytes = scratch_bytes;
		p.nargs = k->nargs;
		npu_ukernel_pack(f, args, p.args);
		if (npu_cap_kernel_node(stream, &p, &cst))
			return cst;
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
	if (f->mod->uses_printf || npu_tracing()) {
		memset(&extra, 0, sizeof(extra));
		x = &extra;
	}
	if (f->mod->uses_printf) {
		st = npu_printf_slot(dev, k->name, &slot, &pva, &pbytes);
		if (st)
			goto out;
		extra.printf_buf = pva;
		extra.printf_bytes = pbytes;
	}
	if (npu_tracing() &&
	    !npu_kprofile_slot(dev, f, block.x * block.y * block.z,
			       k->scratch_bytes + (uint64_t)scratch_bytes, &kslot,
			       &extra.stats, &extra.trace, &extra.trace_bytes,
			       &extra.sample_period))
		kslot = -1;
	st = npu_ukernel_submit(dev, s, f, grid, block, scratch_bytes, args,
				x, &point);
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
