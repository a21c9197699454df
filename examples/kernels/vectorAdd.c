// SPDX-License-Identifier: MIT
/* vectorAdd's kernel: C = A + B, one element per thread. */
#include <npu_kernel.h>

NPU_KERNEL(vectorAdd, (const float *, a), (const float *, b), (float *, c),
	   (unsigned, n))
{
	unsigned i = npu_block_index() * npu_block_threads() + npu_thread_index();

	if (i < n)
		c[i] = a[i] + b[i];
}
