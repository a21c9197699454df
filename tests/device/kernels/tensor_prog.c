// SPDX-License-Identifier: MIT
/*
 * The tensor engine's conformance kernel (npu-tensortest): each thread
 * copies its image of the scratchpad in from memory, runs a program of
 * tensor instructions, and copies the scratchpad back out. The tile
 * numbers and funct7 fields are immediates of the instructions, so the
 * program picks among cases that name each one (tensor_prog.h).
 */
#include "kernel.h"
#include "tensor_prog.h"

#define LOAD_CASES(t) \
	LOAD_CASE(t, 0) LOAD_CASE(t, 1) LOAD_CASE(t, 2) \
	LOAD_CASE(t, 4) LOAD_CASE(t, 5) LOAD_CASE(t, 6)
#define LOAD_CASE(t, f7) \
	case TP_SUB_MEM(t, f7): \
		if (kind == TP_LOAD) \
			npu__tile_mem(NPU_TENSOR_TLOAD, f7, t, addr, arg); \
		else \
			npu__tile_mem(NPU_TENSOR_TSTORE, f7, t, addr, arg); \
		break;
#define FILL_CASE(t, e) \
	case TP_SUB_FILL(t, e): \
		__asm__ volatile(".insn r " NPU_KSTR(NPU_OPC_TENSOR) ", %0, %1, x%2, %3, x0" \
				 : : "i"(NPU_TENSOR_TFILL), "i"(e), "i"(t), "r"(arg)); \
		break;
#define FILL_CASES(t) FILL_CASE(t, 0) FILL_CASE(t, 1) FILL_CASE(t, 2)
#define MMA_CASES(ty) \
	case TP_SUB_MMA(ty, 0): \
		npu__tile_op(NPU_TENSOR_TMMA, ty, TP_C, TP_A, TP_B); break; \
	case TP_SUB_MMA(ty, 1): \
		npu__tile_op(NPU_TENSOR_TMMA, ty, TP_A, TP_A, TP_B); break; \
	case TP_SUB_MMA(ty, 2): \
		npu__tile_op(NPU_TENSOR_TMMA, ty, TP_B, TP_A, TP_B); break;
#define TEW_CASES(op) \
	case TP_SUB_TEW(op, 0): \
		npu__tile_op(NPU_TENSOR_TEW, op, TP_D, TP_A, \
			     op < NPU_TEW_RELU ? TP_B : 0); break; \
	case TP_SUB_TEW(op, 1): \
		npu__tile_op(NPU_TENSOR_TEW, op, TP_A, TP_A, \
			     op < NPU_TEW_RELU ? TP_A : 0); break;

#define TMMA(type, c, a, b) \
	".insn r " NPU_KSTR(NPU_OPC_TENSOR) ", 3, " #type ", x" #c ", x" #a ", x" #b "\n"

/* tile t loaded (e32) from %2 or stored to it, rows %3 apart */
#define TLOAD(t) \
	".insn r " NPU_KSTR(NPU_OPC_TENSOR) ", 0, 2, x" #t ", %2, %3\n"
#define TSTORE(t) \
	".insn r " NPU_KSTR(NPU_OPC_TENSOR) ", 1, 2, x" #t ", %2, %3\n"
/* the same, e16 */
#define TLOAD16(t) \
	".insn r " NPU_KSTR(NPU_OPC_TENSOR) ", 0, 1, x" #t ", %2, %3\n"

/* seq between two rdcycles (t0, t1), with p as %2 and stride as %3 */
#define TIMED(seq) \
	__asm__ volatile("rdcycle %0\n" seq "rdcycle %1\n" \
			 : "=&r"(t0), "=&r"(t1) : "r"(p), "r"(stride) \
			 : "memory")

/* The cycles from one rdcycle to the next around a sequence on p; the
 * first rdcycle's value in *start. */
static unsigned long timing(unsigned mode, unsigned long p,
			    volatile unsigned long *start)
{
	unsigned long t0, t1, stride = 64, seen;

	switch (mode) {
	case TP_TIME_MMA_ACC:
		TIMED(TMMA(2, 2, 0, 1) TMMA(2, 2, 0, 1) TSTORE(2));
		break;
	case TP_TIME_MMA_TYPES:
		TIMED(TMMA(2, 2, 0, 1) TMMA(0, 2, 0, 1) TSTORE(2));
		break;
	case TP_TIME_PORT:
		TIMED(TLOAD(0) TLOAD(1) TMMA(0, 2, 0, 1));
		break;
	case TP_TIME_PORT16:
		TIMED(TLOAD16(0) TLOAD16(1) TMMA(0, 2, 0, 1));
		break;
	case TP_TIME_DMA:
		__asm__ volatile("rdcycle %0\n"
				 ".insn r " NPU_KSTR(NPU_OPC_TDMA) ", 0, 0, x0, %3, x0\n"
				 ".insn r " NPU_KSTR(NPU_OPC_TDMA) ", 1, 0, %2, %4, %5\n"
				 "rdcycle %1\n"
				 : "=&r"(t0), "=&r"(t1), "=&r"(seen)
				 : "r"(p), "r"(p + 64), "r"(1ul) : "memory");
		break;
	case TP_TIME_DMA2:
		__asm__ volatile("rdcycle %0\n"
				 ".insn r " NPU_KSTR(NPU_OPC_TDMA) ", 0, 0, x0, %3, x0\n"
				 ".insn r " NPU_KSTR(NPU_OPC_TDMA) ", 0, 0, x0, %6, x0\n"
				 ".insn r " NPU_KSTR(NPU_OPC_TDMA) ", 1, 0, %2, %4, %5\n"
				 "rdcycle %1\n"
				 : "=&r"(t0), "=&r"(t1), "=&r"(seen)
				 : "r"(p), "r"(p + 64), "r"(2ul), "r"(p + 128)
				 : "memory");
		break;
	case TP_TIME_TEW:
		TIMED(".insn r " NPU_KSTR(NPU_OPC_TENSOR) ", 4, 6, x3, x0, x0\n"
		      ".insn r " NPU_KSTR(NPU_OPC_TENSOR) ", 4, 0, x4, x0, x1\n"
		      TSTORE(4));
		break;
	default:		/* TP_TIME_S8 */
		TIMED(TMMA(3, 2, 0, 1) TMMA(3, 2, 0, 1) TMMA(3, 2, 0, 1)
		      TSTORE(2));
		break;
	}
	*start = t0;
	return t1 - t0;
}

static void copy(volatile unsigned long *to, const volatile unsigned long *from,
		 unsigned long words)
{
	for (unsigned long i = 0; i < words; i++)
		to[i] = from[i];
}

/*
 * prog: the steps; image: each thread's scratchpad image, image_bytes
 * apart, the blocks' one after the other (the block's scratchpad split
 * between its threads).
 */
KERNEL void kmain(const struct tp_step *prog, unsigned long nsteps,
		  unsigned long *image, unsigned long image_bytes)
{
	unsigned t = npu_thread_index();
	unsigned long base = NPU_LOCAL_SCRATCH + t * image_bytes;
	unsigned long *mine = image + (npu_block_index() * npu_block_threads() +
				       t) * (image_bytes / 8);

	copy((unsigned long *)base, mine, image_bytes / 8);
	for (unsigned long i = 0; i < nsteps; i++) {
		unsigned kind = prog[i].kind, sub = prog[i].sub;
		unsigned long addr = base + prog[i].off, arg = prog[i].arg;

		switch (kind == TP_LOAD || kind == TP_STORE ? sub : ~0u) {
		LOAD_CASES(0) LOAD_CASES(1) LOAD_CASES(2) LOAD_CASES(3)
		LOAD_CASES(4) LOAD_CASES(5) LOAD_CASES(6) LOAD_CASES(7)
		default:
			break;
		}
		switch (kind == TP_FILL ? sub : ~0u) {
		FILL_CASES(0) FILL_CASES(1) FILL_CASES(2) FILL_CASES(3)
		default:
			break;
		}
		switch (kind == TP_MMA ? sub : ~0u) {
		MMA_CASES(0) MMA_CASES(1) MMA_CASES(2) MMA_CASES(3)
		MMA_CASES(4)
		default:
			break;
		}
		switch (kind == TP_TEW ? sub : ~0u) {
		TEW_CASES(0) TEW_CASES(1) TEW_CASES(2) TEW_CASES(3)
		TEW_CASES(4) TEW_CASES(5) TEW_CASES(6) TEW_CASES(7)
		TEW_CASES(8) TEW_CASES(9) TEW_CASES(10) TEW_CASES(11)
		default:
			break;
		}
		if (kind == TP_DMA)
			npu_tdma_issue((const struct npu_tdma_desc *)addr);
		if (kind == TP_WAIT)
			((volatile unsigned long *)base)[prog[i].sub] =
				npu_tdma_wait((struct npu_tdma_barrier *)addr,
					      (unsigned)arg);
		if (kind == TP_BARRIER)
			npu_barrier();
		if (kind == TP_CYCLE)
			*(volatile unsigned long *)addr = npu_cycles();
		if (kind == TP_TIMING)
			*(volatile unsigned long *)addr =
				timing(sub, base + arg,
				       (volatile unsigned long *)addr + 1);
	}
	copy(mine, (unsigned long *)base, image_bytes / 8);
}
