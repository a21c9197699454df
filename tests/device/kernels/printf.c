// SPDX-License-Identifier: MIT
/* Each thread appends a 24-byte record (size, block, thread, g * 10). */
#include "kernel.h"

struct rec {
	unsigned int bytes;
	unsigned int block;
	unsigned long thread;
	unsigned long value;
};

KERNEL void kmain(void)
{
	unsigned b = npu_block_index(), t = npu_thread_index();
	struct rec r = {
		.bytes = sizeof(r), .block = b, .thread = t,
		.value = (b * npu_block_threads() + t) * 10ul,
	};

	npu_csr_write(NPU_CSR_PRINTF, (unsigned long)&r);
}
