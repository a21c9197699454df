// SPDX-License-Identifier: MIT
/*
 * Faults of one chosen thread (args: mode, block, thread, out, addr).
 * Every other thread does nothing and ends. Before it faults, the chosen
 * thread stores the faulting instruction's PC at out[0] and its unit at
 * out[1]. Modes without a fault are for the good launches.
 */
#include "kernel.h"

enum {
	M_NONE, M_GOOD, M_ILLEGAL, M_MRET, M_EBREAK, M_LOAD_MIS, M_STORE_MIS,
	M_AMO_MIS, M_JUMP_MIS, M_MMU, M_RO, M_SCRATCH, M_STACK, M_PARAMS,
	M_CSR_WO, M_CSR_RO, M_BAD_RM, M_FETCH, M_LOOP, M_SECRET, M_PEEK,
};

/* pc of label 1 to out[0], then the instruction at 1 (%1 = addr) */
#define FAULT_AT(insn) \
	__asm__ volatile("lla t0, 1f\n\tsd t0, 0(%0)\n" \
			 "1:\t" insn : : "r"(out), "r"(addr) \
			 : "t0", "t1", "ra", "ft0", "memory")

KERNEL void kmain(unsigned long mode, unsigned long block,
		  unsigned long thread, unsigned long *out, unsigned long addr)
{
	unsigned long g = npu_block_index() * npu_block_threads() +
			  npu_thread_index();
	unsigned long *sp = npu_scratch();
	unsigned long i, n = npu_scratch_bytes() / 8, acc = 0;

	if (mode == M_GOOD) {
		out[g] = g * 0x10001 + 5;
		return;
	}
	if (mode == M_SECRET) {
		for (i = npu_thread_index(); i < n; i += npu_block_threads())
			sp[i] = 0x5ec2e75ec2e7ul ^ i;
		return;
	}
	if (mode == M_PEEK) {
		for (i = npu_thread_index(); i < n; i += npu_block_threads())
			acc |= sp[i];
		out[g] = acc;
		return;
	}
	if (npu_block_index() != block || npu_thread_index() != thread)
		return;
	out[1] = npu_unit();
	switch (mode) {
	case M_ILLEGAL:
		FAULT_AT(".word 0");
		break;
	case M_MRET:
		FAULT_AT("mret");
		break;
	case M_EBREAK:
		FAULT_AT("ebreak");
		break;
	case M_LOAD_MIS:
		FAULT_AT("ld t1, 0(%1)");
		break;
	case M_STORE_MIS:
		FAULT_AT("sw zero, 0(%1)");
		break;
	case M_AMO_MIS:
		FAULT_AT("amoadd.w zero, zero, (%1)");
		break;
	case M_JUMP_MIS:
		/* jalr to 2 bytes past label 2: bit 1 set */
		__asm__ volatile("lla t1, 2f\n\taddi t1, t1, 2\n\t"
				 "sd t1, 16(%0)\n\tlla t0, 3f\n\tsd t0, 0(%0)\n"
				 "3:\tjalr t1\n2:\tnop"
				 : : "r"(out) : "t0", "t1", "ra", "memory");
		break;
	case M_MMU:
	case M_RO:
		FAULT_AT("sd zero, 0(%1)");
		break;
	case M_SCRATCH:
	case M_STACK:
	case M_PARAMS:
		FAULT_AT("sd zero, 0(%1)");
		break;
	case M_CSR_WO:
		FAULT_AT("csrr t1, 0x8c0");
		break;
	case M_CSR_RO:
		FAULT_AT("csrw 0xcc0, zero");
		break;
	case M_BAD_RM:
		__asm__ volatile("csrwi frm, 5");	/* reserved mode */
		FAULT_AT("fadd.s ft0, ft0, ft0, dyn");
		break;
	case M_FETCH:
		out[0] = addr;
		__asm__ volatile("jalr %0" : : "r"(addr) : "ra", "memory");
		break;
	case M_LOOP:
		out[0] = 0;
		for (;;)
			__asm__ volatile("" : : : "memory");
	}
	out[2] = 0xdead;	/* not reached */
}
