/* SPDX-License-Identifier: MIT */
/*
 * The program kernels/tensor_prog.c runs, shared with npu-tensortest: one
 * step per instruction, on tiles A = t0, B = t1, C = t2, D = t3 (loads,
 * stores and fills: any of t0..t7 / t0..t3). Offsets are from the
 * thread's part of the scratchpad.
 */
#ifndef NPU_TEST_TENSOR_PROG_H
#define NPU_TEST_TENSOR_PROG_H

enum {
	TP_LOAD = 1,	/* sub = TP_SUB_MEM(tile, funct7); off; arg = stride */
	TP_STORE = 2,	/* the same */
	TP_FILL = 3,	/* sub = TP_SUB_FILL(tile, esize); arg = value */
	TP_MMA = 4,	/* sub = TP_SUB_MMA(type, form) */
	TP_TEW = 5,	/* sub = TP_SUB_TEW(op, form) */
	TP_DMA = 6,	/* TDMA.ISSUE of the descriptor at off */
	TP_WAIT = 7,	/* TDMA.WAIT on the word at off for arg; the count
			 * seen goes to u64 word sub of the thread's part */
	TP_BARRIER = 8,	/* the block barrier */
	TP_CYCLE = 10,	/* rdcycle to the u64 at off */
	TP_TIMING = 9,	/* sub = TP_TIME_*: the cycles of a straight-line
			 * sequence on the data at arg go to the u64 at
			 * off, its first cycle to the u64 after it */
};

/* TP_TIMING sequences, from one rdcycle to the next */
enum {
	TP_TIME_MMA_ACC,	/* TMMA f32 t2 += t0 t1 twice; TSTORE t2 at arg */
	TP_TIME_MMA_TYPES,	/* TMMA f32 then f16 into t2; TSTORE t2 */
	TP_TIME_PORT,		/* TLOAD t0, TLOAD t1 from arg; TMMA f16 */
	TP_TIME_DMA,		/* TDMA.ISSUE of the descriptor at arg, whose
				 * barrier word is at arg + 64; TDMA.WAIT 1 */
	TP_TIME_DMA2,		/* the same, then the one at arg + 128; WAIT 2 */
	TP_TIME_TEW,		/* TEW EXP t3 = e^t0, ADD t4 = t0 + t1; TSTORE t4 */
	TP_TIME_S8,		/* TMMA s8 t2 += t0 t1 three times; TSTORE t2 */
	TP_TIME_PORT16,		/* TLOAD t0, TLOAD t1 (e16) from arg; TMMA f16 */
};

#define TP_A	0
#define TP_B	1
#define TP_C	2
#define TP_D	3

#define TP_SUB_MEM(t, f7)	((t) << 3 | (f7))
#define TP_SUB_FILL(t, e)	((t) << 2 | (e))
/* form 0: C += A x B; 1: A += A x B; 2: B += A x B */
#define TP_SUB_MMA(ty, form)	((ty) << 2 | (form))
/* form 0: D = op(A, B); 1: A = op(A, A) (B: 0 for one-operand ops) */
#define TP_SUB_TEW(op, form)	((op) << 1 | (form))

struct tp_step {
	unsigned int kind, sub;
	unsigned long long off, arg;
};

#endif
