// SPDX-License-Identifier: MIT
/* reduction's kernel: each block sums its part of the input with a tree
 * in the scratchpad, one barrier per level; partial sums per block. */
#include <npu_kernel.h>

NPU_KERNEL(reduce_sum, (const float *, in), (unsigned, n), (float *, partial))
{
	float *s = npu_scratch();
	unsigned t = npu_thread_index(), P = npu_block_threads();
	float acc = 0;

	for (unsigned i = npu_block_x() * P + t; i < n; i += P * npu_grid_x())
		acc += in[i];
	s[t] = acc;
	npu_barrier();
	for (unsigned half = P / 2; half; half /= 2) {
		if (t < half)
			s[t] += s[t + half];
		npu_barrier();
	}
	if (!t)
		partial[npu_block_x()] = s[0];
}
