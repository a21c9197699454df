// SPDX-License-Identifier: MIT
/*
 * npu_builtin_code.c - npu_launch(): the built-in kernels (npu.h's NPU_K_*)
 * run as code, libnpu's kernel library (lib/kernels/builtins.c, compiled
 * by npu-cc and embedded in libnpu.so), launched as users' kernels are.
 *
 * The library is loaded on a device at its first built-in launch and stays
 * for the process. The code cannot refuse a launch, so sizes and flags are
 * checked here (npu_builtin_check). NOP and the test kernels are the
 * device's diagnostic kernels (a LAUNCH packet; npu_hw.h).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "npu_core.h"
#include "npu_module.h"
#include "kernels/builtins.h"

/* The code object, built by lib/Makefile ($(OUT)/npu/builtins.npu). */
__asm__(".section .rodata.npu_kernel_lib,\"a\"\n"
	".balign 16\n"
	".hidden npu_kernel_lib_image\n"
	".hidden npu_kernel_lib_end\n"
	"npu_kernel_lib_image:\n"
	".incbin \"" NPU_KERNEL_LIB_IMAGE "\"\n"
	"npu_kernel_lib_end:\n"
	".previous\n");
extern const unsigned char npu_kernel_lib_image[], npu_kernel_lib_end[];

static const char *const code_name[NPU_K_ARGMAX_F32 + 1] = {
	[NPU_K_FILL_F32] = "bi_fill_f32",
	[NPU_K_SCALE_F32] = "bi_scale_f32",
	[NPU_K_VADD_F32] = "bi_vadd_f32",
	[NPU_K_SAXPY_F32] = "bi_saxpy_f32",
	[NPU_K_RELU_F32] = "bi_relu_f32",
	[NPU_K_GEMM_F32] = "bi_gemm_f32",
	[NPU_K_BIAS_ADD_F32] = "bi_bias_add_f32",
	[NPU_K_REDUCE_SUM_F32] = "bi_reduce_sum_f32",
	[NPU_K_SOFTMAX_F32] = "bi_softmax_f32",
	[NPU_K_RELU_GRAD_F32] = "bi_relu_grad_f32",
	[NPU_K_SOFTMAX_XENT_F32] = "bi_softmax_xent_f32",
	[NPU_K_COL_SUM_F32] = "bi_col_sum_f32",
	[NPU_K_ARGMAX_F32] = "bi_argmax_f32",
};

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

_Static_assert(NPU_GEMM_TRANSPOSE_A == NPU_BI_GEMM_TRANS_A &&
	       NPU_GEMM_TRANSPOSE_B == NPU_BI_GEMM_TRANS_B,
	       "npu.h's gemm flags must be the kernel library's");

/* The math kernels are the library's code; NOP and the test kernels are
 * the device's diagnostics: NOP is the cheapest job the benchmarks and
 * the queue tests time, and TEST_SPIN, _HANG and _FAULT model a busy,
 * hung or faulting unit for the driver's tests (no code could spin for
 * an exact device time or hang the unit past the job timeout as they do). */
bool npu_builtin_coded(npu_kernel_t kernel)
{
	return kernel >= NPU_K_FILL_F32 && kernel <= NPU_K_ARGMAX_F32;
}

static const char *bad_dims(uint64_t rows, uint64_t cols, uint64_t limit)
{
	if (rows > limit || cols > limit || rows * cols > limit)
		return "more elements than the library's limit";
	return NULL;
}

npu_status_t npu_builtin_check(const struct npu_kinfo *k, const uint64_t *a)
{
	const char *why = NULL;
	unsigned long long lim = NPU_BI_MAX_ELEMS;

	switch (k->id) {
	case NPU_K_FILL_F32:
		why = a[1] > NPU_BI_MAX_ELEMS ? "n is larger than the library's limit" : NULL;
		break;
	case NPU_K_SCALE_F32:
	case NPU_K_SAXPY_F32:
	case NPU_K_RELU_F32:
	case NPU_K_REDUCE_SUM_F32:
		why = a[2] > NPU_BI_MAX_ELEMS ? "n is larger than the library's limit" : NULL;
		break;
	case NPU_K_VADD_F32:
	case NPU_K_RELU_GRAD_F32:
		why = a[3] > NPU_BI_MAX_ELEMS ? "n is larger than the library's limit" : NULL;
		break;
	case NPU_K_GEMM_F32: {
		uint64_t m = a[3], n = a[4], kk = a[5];

		lim = NPU_BI_GEMM_MAX_ELEMS;
		if (a[6] & ~(uint64_t)(NPU_GEMM_TRANSPOSE_A | NPU_GEMM_TRANSPOSE_B))
			return npu_fail(NPU_ERROR_INVALID_VALUE, "kernel gemm_f32: "
					"unknown flags 0x%llx (NPU_GEMM_TRANSPOSE_A, "
					"_B only)", (unsigned long long)a[6]);
		why = bad_dims(m, kk, lim);
		if (!why)
			why = bad_dims(kk, n, lim);
		if (!why)
			why = bad_dims(m, n, lim);
		if (!why && m && n && kk > NPU_BI_GEMM_MAX_MACS / (m * n)) {
			why = "M * N * K is larger than the library's limit";
			lim = NPU_BI_GEMM_MAX_MACS;
		}
		break;
	}
	case NPU_K_BIAS_ADD_F32:
	case NPU_K_SOFTMAX_F32:
	case NPU_K_COL_SUM_F32:
	case NPU_K_ARGMAX_F32:
		why = bad_dims(a[2], a[3], lim);
		if (!why && k->id == NPU_K_ARGMAX_F32 && a[2] && !a[3])
			return npu_fail(NPU_ERROR_INVALID_VALUE, "kernel "
					"argmax_f32: %llu rows of 0 columns have "
					"no maximum: pass cols >= 1 (or rows 0)",
					(unsigned long long)a[2]);
		break;
	case NPU_K_SOFTMAX_XENT_F32:
		why = bad_dims(a[4], a[5], lim);
		if (!why && a[4] && !a[5])
			return npu_fail(NPU_ERROR_INVALID_VALUE, "kernel "
					"softmax_xent_f32: %llu rows of 0 columns "
					"have no class for their labels: pass cols "
					">= 1 (or rows 0)", (unsigned long long)a[4]);
		break;
	default:
		break;
	}
	if (why)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "kernel %s: %s (%llu "
				"elements at most): split the work into smaller "
				"launches", k->name, why, lim);
	return NPU_SUCCESS;
}

/* The index of dev (npu_device_set takes an ordinal). */
static int ordinal_of(struct device *dev)
{
	struct device *d;
	int i;

	for (i = 0; i < NPU_MAX_DEVICES; i++)
		if (!npu_dev_by_ordinal(i, &d) && d == dev)
			return i;
	return -1;
}

/* Why a launch of the library's kernel at entry failed, when the code
 * stopped it on purpose (npu_fault.c appends it to the fault). */
static const char *fault_note(uint64_t entry, uint32_t cause)
{
	char name[64];

	if (cause == NPU_ERR_CU_BREAK &&
	    npu_module_kernel_name(entry, name, sizeof(name)) &&
	    !strcmp(name, code_name[NPU_K_SOFTMAX_XENT_F32]))
		return "a label >= cols: fix the labels (class indices "
		       "below cols)";
	return NULL;
}

/* The library's kernels on dev, loaded on first use (not under dev->lock:
 * loading allocates device memory). */
static npu_status_t lib_get(struct device *dev, npu_function_t **fns)
{
	struct npu_module *m;
	npu_status_t st = NPU_SUCCESS;
	int cur = -1, ord;

	if (atomic_load_explicit(&dev->kernel_lib, memory_order_acquire)) {
		*fns = dev->kernel_fn;
		return NPU_SUCCESS;
	}
	pthread_mutex_lock(&load_lock);
	if (!atomic_load_explicit(&dev->kernel_lib, memory_order_relaxed)) {
		ord = ordinal_of(dev);
		npu_device_get(&cur);
		if (ord < 0)
			st = npu_fail(NPU_ERROR_INVALID_DEVICE, "device not open");
		if (!st && ord != cur)
			st = npu_device_set(ord);
		if (!st)
			st = npu_module_load_named(&m, npu_kernel_lib_image,
						   (size_t)(npu_kernel_lib_end -
							    npu_kernel_lib_image),
						   "libnpu kernel library");
		if (ord >= 0 && ord != cur)
			npu_device_set(cur);
		for (unsigned i = 0; !st && i <= NPU_K_ARGMAX_F32; i++)
			if (code_name[i])
				st = npu_module_get_function(&dev->kernel_fn[i], m,
							     code_name[i]);
		if (!st) {
			npu_fault_note_hook = fault_note;
			atomic_store_explicit(&dev->kernel_lib, m,
					      memory_order_release);
		}
	}
	pthread_mutex_unlock(&load_lock);
	if (st) {
		char why[200];

		snprintf(why, sizeof(why), "%s", npu_last_error_message());
		return npu_fail(st, "libnpu's kernel library (the built-in "
				"kernels as code) did not load: %s", why);
	}
	*fns = dev->kernel_fn;
	return NPU_SUCCESS;
}

npu_status_t npu_builtin_load(struct device *dev)
{
	npu_function_t *fns;

	return lib_get(dev, &fns);
}

static uint32_t blocks(uint64_t n, uint64_t per)
{
	return n ? (uint32_t)((n + per - 1) / per) : 1;
}

/* The grid of a math kernel's code for arguments a (checked). */
static npu_dim3 code_grid(uint32_t id, const uint64_t *a)
{
	switch (id) {
	case NPU_K_FILL_F32:
		return npu_grid(blocks(a[1], NPU_BI_EW_BLOCK), 1, 1);
	case NPU_K_SCALE_F32:
	case NPU_K_SAXPY_F32:
	case NPU_K_RELU_F32:
		return npu_grid(blocks(a[2], NPU_BI_EW_BLOCK), 1, 1);
	case NPU_K_VADD_F32:
	case NPU_K_RELU_GRAD_F32:
		return npu_grid(blocks(a[3], NPU_BI_EW_BLOCK), 1, 1);
	case NPU_K_BIAS_ADD_F32:
		return npu_grid(blocks(a[3], NPU_TILE_DIM),
				blocks(a[2], NPU_TILE_DIM), 1);
	case NPU_K_SOFTMAX_F32:
		return npu_grid(blocks(a[2], 1), 1, 1);
	case NPU_K_ARGMAX_F32:
		return npu_grid(blocks(a[2], NPU_TILE_DIM), 1, 1);
	case NPU_K_COL_SUM_F32:
		return npu_grid(blocks(a[3], NPU_TILE_CELLS), 1, 1);
	default:	/* reduce_sum, softmax_xent: one block */
		return npu_grid(1, 1, 1);
	}
}

/* gemm's grid and block for arguments a: the largest block (it reads each
 * chunk of A and B once for more of C) whose grid still fills every
 * thread slot of every unit (smaller GEMMs, such as the demo's, keep
 * single-thread blocks: larger ones would leave units idle), halving its
 * rows of threads first, then its columns. */
static void gemm_shape(const npu_device_prop *p, const uint64_t *a,
		       npu_dim3 *grid, npu_dim3 *block)
{
	uint64_t m = a[3], n = a[4];
	uint64_t slots = (uint64_t)p->compute_units * p->unit_threads;
	uint32_t tx = NPU_BI_GEMM_MAX_TX, ty = NPU_BI_GEMM_MAX_TY;

	while (tx * ty > 1 && (uint64_t)blocks(n, NPU_BI_GEMM_COLS * tx) *
	       blocks(m, NPU_TILE_DIM * ty) * tx * ty < slots) {
		if (ty > 1)
			ty /= 2;
		else
			tx /= 2;
	}
	*grid = npu_grid(blocks(n, NPU_BI_GEMM_COLS * tx),
			 blocks(m, NPU_TILE_DIM * ty), 1);
	*block = npu_grid(tx, ty, 1);
}

npu_status_t npu_builtin_code_params(struct device *dev,
				     const npu_kernel_node_params *in,
				     npu_kernel_node_params *out)
{
	npu_function_t *fns;
	npu_status_t st = lib_get(dev, &fns);
	uint32_t id = (uint32_t)in->kernel;

	if (st)
		return st;
	*out = *in;
	out->function = fns[id];
	if (id == NPU_K_GEMM_F32) {
		gemm_shape(&dev->prop, in->args, &out->grid,
			   &out->block);
	} else {
		out->grid = code_grid(id, in->args);
		out->block = npu_grid(1, 1, 1);
	}
	out->scratch_bytes = 0;
	/* the arguments are the kernels' words as they are: pointers and
	 * sizes 8 bytes, f32 in the low 4 (NPU_KERNEL_EX's order) */
	return NPU_SUCCESS;
}

/* ------------------------------------------------------------------------
 * Launch
 */
npu_status_t npu_launch(npu_kernel_t kernel, npu_dim3 grid, const uint64_t *args,
			unsigned int nargs, npu_stream_t stream, unsigned int flags)
{
	const struct npu_kinfo *k = npu_kernel_find((uint32_t)kernel);
	struct device *dev;
	struct npu_stream *s;
	const uint32_t g[3] = { grid.x, grid.y, grid.z };
	struct jobctx jc;
	struct uq_fast fq;
	npu_status_t st;
	bool code = npu_builtin_coded(kernel);

	if (flags & ~(NPU_LAUNCH_SYNC | NPU_LAUNCH_SYNC_DEVICE))
		return npu_fail(NPU_ERROR_INVALID_VALUE, "unknown launch flags 0x%x",
				flags);
	if (!k)
		return npu_fail(NPU_ERROR_INVALID_KERNEL, "unknown kernel id 0x%x",
				(unsigned)kernel);
	if (nargs != k->nargs)
		return npu_fail(NPU_ERROR_INVALID_CONFIGURATION,
				"kernel %s takes %u arguments, not %u", k->name,
				k->nargs, nargs);
	if (nargs && !args)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "args is NULL");
	if (!grid.x || !grid.y || !grid.z)
		return npu_fail(NPU_ERROR_INVALID_CONFIGURATION,
				"grid %ux%ux%u has a zero dimension", grid.x,
				grid.y, grid.z);
	st = nargs ? npu_builtin_check(k, args) : NPU_SUCCESS;
	if (st)
		return st;
	if (npu_capturing()) {	/* stream capture hook (npu_core.h) */
		npu_status_t cst;

		/* a graph node of the built-in id: instantiation routes it */
		if (npu_capture()->launch(stream, kernel, grid, args, nargs, flags, &cst))
			return cst;
	}
	st = npu_get_stream(stream, &dev, &s);
	if (st)
		return st;
	if (code) {
		npu_kernel_node_params p = { .kernel = kernel, .nargs = nargs };
		void *ptrs[NPU_MAX_KERNEL_ARGS];

		memcpy(p.args, args, nargs * sizeof(*args));
		st = npu_builtin_code_params(dev, &p, &p);
		for (unsigned i = 0; i < nargs; i++)
			ptrs[i] = &p.args[i];
		if (!st)
			st = npu_launch_kernel(p.function, p.grid, p.block, 0,
					       stream, ptrs);
		if (st || !(flags & (NPU_LAUNCH_SYNC | NPU_LAUNCH_SYNC_DEVICE)))
			return st;
		pthread_mutex_lock(&dev->lock);
		goto sync;
	}
	/* an async launch on a user-queue stream under its own lock */
	if (!(flags & (NPU_LAUNCH_SYNC | NPU_LAUNCH_SYNC_DEVICE)) &&
	    npu_uq_fast_begin(dev, s, Q_COMPUTE, NPU_CMD_LAUNCH_BYTES(nargs),
			      &fq)) {
		npu_cmd_launch(&fq.w, k->id, g, args, nargs);
		return npu_uq_fast_end(dev, &fq);
	}
	pthread_mutex_lock(&dev->lock);
	if (dev->sticky) {
		st = npu_fail_sticky(dev, dev->sticky);
		goto out;
	}
	st = npu_job_begin(dev, s, NPU_CMD_LAUNCH_BYTES(nargs), &jc);
	if (st)
		goto out;
	npu_cmd_launch(&jc.w, k->id, g, args, nargs);
	jc.kernel = k->id + 1;
	st = npu_job_submit(dev, &jc, Q_COMPUTE, NULL, 0, NULL);
	if (st)
		goto out;
sync:
	if (flags & NPU_LAUNCH_SYNC_DEVICE)
		st = npu_dev_sync_locked(dev);
	else if (flags & NPU_LAUNCH_SYNC)
		st = npu_stream_sync_locked(dev, s);
out:
	pthread_mutex_unlock(&dev->lock);
	return st;
}

npu_status_t npu_parallel(npu_kernel_t kernel, npu_dim3 grid,
			  const uint64_t *args, unsigned int nargs,
			  npu_stream_t stream)
{
	return npu_launch(kernel, grid, args, nargs, stream,
			  stream ? NPU_LAUNCH_SYNC : NPU_LAUNCH_SYNC_DEVICE);
}

npu_status_t npu_parallel_async(npu_kernel_t kernel, npu_dim3 grid,
				const uint64_t *args, unsigned int nargs,
				npu_stream_t stream)
{
	return npu_launch(kernel, grid, args, nargs, stream, NPU_LAUNCH_ASYNC);
}
