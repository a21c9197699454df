/* SPDX-License-Identifier: MIT */
/*
 * npu_kernel.h - device-side header for kernels that run on the npu's
 * compute units (RV64G, freestanding C, Debian's clang-14):
 *
 *   clang --target=riscv64-unknown-elf -march=rv64g -mabi=lp64d
 *         -mcmodel=medany -ffreestanding -nostdlib -O2 -c k.c
 *
 * A thread starts at the launch's entry with a0..a7 = the launch's first
 * eight arguments, sp at the end of its stack and ra = NPU_EXIT_PC, so a
 * plain C function is a kernel: it ends when it returns. The programmer's
 * model (CSRs, local windows) is in npu_hw.h and Documentation/hw/npu.rst.
 */
#ifndef NPU_KERNEL_H
#define NPU_KERNEL_H

#include "npu_hw.h"

#define NPU_KSTR_(x)	#x
#define NPU_KSTR(x)	NPU_KSTR_(x)

#define npu_csr_read(csr) __extension__ ({ \
	unsigned long v_; \
	__asm__ volatile("csrr %0, " NPU_KSTR(csr) : "=r"(v_)); \
	v_; })

#define npu_csr_write(csr, val) \
	__asm__ volatile("csrw " NPU_KSTR(csr) ", %0" : : "r"(val) : "memory")

/* Where this thread is: block in the grid, thread in the block. */
static inline unsigned npu_block_x(void) { return npu_csr_read(NPU_CSR_BLOCK_X); }
static inline unsigned npu_block_y(void) { return npu_csr_read(NPU_CSR_BLOCK_Y); }
static inline unsigned npu_block_z(void) { return npu_csr_read(NPU_CSR_BLOCK_Z); }
static inline unsigned npu_grid_x(void) { return npu_csr_read(NPU_CSR_GRID_X); }
static inline unsigned npu_grid_y(void) { return npu_csr_read(NPU_CSR_GRID_Y); }
static inline unsigned npu_grid_z(void) { return npu_csr_read(NPU_CSR_GRID_Z); }
static inline unsigned npu_thread_x(void) { return npu_csr_read(NPU_CSR_THREAD_X); }
static inline unsigned npu_thread_y(void) { return npu_csr_read(NPU_CSR_THREAD_Y); }
static inline unsigned npu_thread_z(void) { return npu_csr_read(NPU_CSR_THREAD_Z); }
static inline unsigned npu_bdim_x(void) { return npu_csr_read(NPU_CSR_BDIM_X); }
static inline unsigned npu_bdim_y(void) { return npu_csr_read(NPU_CSR_BDIM_Y); }
static inline unsigned npu_bdim_z(void) { return npu_csr_read(NPU_CSR_BDIM_Z); }
static inline unsigned npu_unit(void) { return npu_csr_read(NPU_CSR_UNIT); }
static inline unsigned npu_slot(void) { return npu_csr_read(NPU_CSR_SLOT); }
static inline unsigned npu_nargs(void) { return npu_csr_read(NPU_CSR_NARGS); }

/* Linear indices and sizes. */
static inline unsigned npu_block_index(void)
{
	return npu_block_x() + npu_grid_x() *
	       (npu_block_y() + npu_grid_y() * npu_block_z());
}

static inline unsigned npu_thread_index(void)
{
	return npu_thread_x() + npu_bdim_x() *
	       (npu_thread_y() + npu_bdim_y() * npu_thread_z());
}

static inline unsigned npu_block_threads(void)
{
	return npu_bdim_x() * npu_bdim_y() * npu_bdim_z();
}

/* The block's scratchpad (shared by its threads) and its size. */
static inline void *npu_scratch(void)
{
	return (void *)NPU_LOCAL_SCRATCH;
}

static inline unsigned long npu_scratch_bytes(void)
{
	return npu_csr_read(NPU_CSR_SCRATCH_BYTES);
}

/* The launch's arguments as an array of 64-bit words. */
static inline const unsigned long *npu_args(void)
{
	return (const unsigned long *)NPU_LOCAL_PARAMS;
}

/* Wait until every running thread of the block has reached the barrier. */
static inline void npu_barrier(void)
{
	npu_csr_write(NPU_CSR_BARRIER, 0);
}

/* Unit cycles and instructions retired by this thread. */
static inline unsigned long npu_cycles(void)
{
	unsigned long v;

	__asm__ volatile("rdcycle %0" : "=r"(v));
	return v;
}

static inline unsigned long npu_instret(void)
{
	unsigned long v;

	__asm__ volatile("rdinstret %0" : "=r"(v));
	return v;
}

#endif /* NPU_KERNEL_H */
