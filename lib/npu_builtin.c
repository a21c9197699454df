// SPDX-License-Identifier: MIT
/*
 * npu_builtin.c - the built-in kernels' table (ids, names, argument counts):
 * the math is the kernel library's code (npu_builtin_code.c), NOP and the
 * test kernels are the device's diagnostics.
 */
#define _GNU_SOURCE
#include <string.h>

#include "npu_core.h"

/* ------------------------------------------------------------------------
 * Built-in kernels: here, below every user of the table (launch, graphs,
 * fault messages, the trace)
 */
static const struct npu_kinfo kernels[] = {
	{ NPU_K_NOP, "nop", 0 },
	{ NPU_K_FILL_F32, "fill_f32", 3 },
	{ NPU_K_SCALE_F32, "scale_f32", 4 },
	{ NPU_K_VADD_F32, "vadd_f32", 4 },
	{ NPU_K_SAXPY_F32, "saxpy_f32", 4 },
	{ NPU_K_RELU_F32, "relu_f32", 3 },
	{ NPU_K_GEMM_F32, "gemm_f32", 9 },
	{ NPU_K_BIAS_ADD_F32, "bias_add_f32", 4 },
	{ NPU_K_REDUCE_SUM_F32, "reduce_sum_f32", 3 },
	{ NPU_K_SOFTMAX_F32, "softmax_f32", 4 },
	{ NPU_K_RELU_GRAD_F32, "relu_grad_f32", 4 },
	{ NPU_K_SOFTMAX_XENT_F32, "softmax_xent_f32", 6 },
	{ NPU_K_COL_SUM_F32, "col_sum_f32", 4 },
	{ NPU_K_ARGMAX_F32, "argmax_f32", 4 },
	{ NPU_K_TEST_SPIN, "test_spin", 1 },
	{ NPU_K_TEST_HANG, "test_hang", 0 },
	{ NPU_K_TEST_FAULT, "test_fault", 1 },
};

/* NOP and the test kernels are the device's (a LAUNCH packet's id) */
_Static_assert((int)NPU_K_NOP == (int)NPU_KERNEL_NOP &&
	       (int)NPU_K_TEST_SPIN == (int)NPU_KERNEL_TEST_SPIN &&
	       (int)NPU_K_TEST_HANG == (int)NPU_KERNEL_TEST_HANG &&
	       (int)NPU_K_TEST_FAULT == (int)NPU_KERNEL_TEST_FAULT &&
	       NPU_MAX_KERNEL_ARGS == NPU_LAUNCH_MAX_ARGS,
	       "npu.h's diagnostic kernel ids must match npu_hw.h");

const struct npu_kinfo *npu_kernel_find(uint32_t id)
{
	size_t i;

	for (i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++)
		if (kernels[i].id == id)
			return &kernels[i];
	return NULL;
}

npu_status_t npu_kernel_by_name(const char *name, npu_kernel_t *kernel)
{
	size_t i;

	if (!name || !kernel)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "NULL name or kernel");
	for (i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++)
		if (!strcmp(kernels[i].name, name)) {
			*kernel = (npu_kernel_t)kernels[i].id;
			return NPU_SUCCESS;
		}
	return npu_fail(NPU_ERROR_INVALID_KERNEL, "no kernel named \"%s\"", name);
}

npu_status_t npu_kernel_info(npu_kernel_t kernel, const char **name,
			     unsigned int *nargs)
{
	const struct npu_kinfo *k = npu_kernel_find((uint32_t)kernel);

	if (!k)
		return npu_fail(NPU_ERROR_INVALID_KERNEL, "no built-in kernel %d",
				(int)kernel);
	if (name)
		*name = k->name;
	if (nargs)
		*nargs = k->nargs;
	return NPU_SUCCESS;
}
