// SPDX-License-Identifier: MIT
/* histogram's kernel: 256 bins of bytes, a private histogram per block in
 * the scratchpad (scratchpad atomics), merged into device memory with
 * device atomics. */
#include <npu_kernel.h>

NPU_KERNEL_EX(histogram256, 256 * 4, 0, 0, (const unsigned char *, data),
	      (unsigned, n), (unsigned *, hist))
{
	unsigned *local = npu_scratch();
	unsigned t = npu_thread_index(), P = npu_block_threads();
	unsigned stride = P * npu_grid_x();

	for (unsigned b = t; b < 256; b += P)
		local[b] = 0;
	npu_barrier();
	for (unsigned i = npu_block_x() * P + t; i < n; i += stride)
		npu_atomic_add(&local[data[i]], 1u);
	npu_barrier();
	for (unsigned b = t; b < 256; b += P)
		if (local[b])
			npu_atomic_add(&hist[b], local[b]);
}
