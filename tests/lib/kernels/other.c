// SPDX-License-Identifier: MIT
/* A second code object for lib_kernels: loaded by another process. */
#include <npu_kernel.h>

NPU_KERNEL(pattern, (unsigned *, out), (unsigned, n), (unsigned, tag))
{
	unsigned i = npu_block_index() * npu_block_threads() + npu_thread_index();

	if (i < n)
		out[i] = i * 3 + tag;
}
