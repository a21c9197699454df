// SPDX-License-Identifier: MIT
/*
 * Every tensor-engine and tile-DMA intrinsic of npu_kernel.h once, in the
 * order tensor-insn-check.py expects. A compile test only (the device does
 * not execute these yet, issue 32): the operands the intrinsics take in
 * integer registers are pinned, so every field of every word is known.
 */
#include "npu_kernel.h"

void tensor_insn(unsigned long addr, unsigned long stride, unsigned long value,
		 struct npu_tdma_barrier *bar)
{
	register unsigned long r_addr __asm__("a0") = addr;
	register unsigned long r_stride __asm__("a1") = stride;
	register unsigned long r_value __asm__("a2") = value;
	register struct npu_tdma_barrier *r_bar __asm__("a3") = bar;
	register const struct npu_tdma_desc *r_desc __asm__("a4") =
		(const struct npu_tdma_desc *)(NPU_LOCAL_SCRATCH + 64);

	npu_tile_load(0, r_addr, r_stride, NPU_TILE_E8);
	npu_tile_load(1, r_addr, r_stride, NPU_TILE_E16);
	npu_tile_load(2, r_addr, r_stride, NPU_TILE_E32);
	npu_tile_load_t(3, r_addr, r_stride, NPU_TILE_E16);
	npu_tile_store(4, r_addr, r_stride, NPU_TILE_E32);
	npu_tile_store_t(5, r_addr, r_stride, NPU_TILE_E8);
	npu_tile_fill(6, r_value, NPU_TILE_E16);
	npu_tile_zero(7);
	npu_mma_f16(0, 1, 2);
	npu_mma_bf16(1, 2, 3);
	npu_mma_f32(2, 3, 4);
	npu_mma_s8(3, 4, 5);
	npu_mma_s32(4, 5, 6);
	npu_tile_add(5, 6, 7);
	npu_tile_sub(6, 7, 0);
	npu_tile_mul(7, 0, 1);
	npu_tile_max(0, 1, 2);
	npu_tile_addrow(1, 2, 3);
	npu_tile_relu(2, 3);
	npu_tile_exp(3, 4);
	npu_tile_rcp(4, 5);
	npu_tile_rowmax(5, 6);
	npu_tile_rowsum(6, 7);
	npu_tile_cvt_f16(7, 0);
	npu_tile_cvt_bf16(0, 7);
	npu_tdma_issue(r_desc);
	r_value = npu_tdma_wait(r_bar, (unsigned)r_stride);
	npu_tile_fill_f32(1, 1.5f);
	npu_tdma_2d(r_bar, (void *)NPU_LOCAL_SCRATCH, r_addr, 64, 16, r_stride,
		    64, 1);
	__asm__ volatile("" : : "r"(r_value));
#ifdef NPU_TEST_BAD_TILE
	npu_mma_f16(NPU_TILE_REGS, 0, 1);	/* no t8: must not compile */
#endif
}
