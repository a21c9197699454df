/* SPDX-License-Identifier: MIT */
/*
 * npu_tensor_ref.h - host reference of the tensor engine and tile DMA
 * (Documentation/hw/npu.rst, "Tensor engine and tile DMA"): what each
 * instruction computes, bit for bit, and which fault it raises, without
 * the timing. Plain C11 on the host; the device model's results are to be
 * compared against it (issue 32).
 *
 * Addresses are the kernel's: the scratchpad is the bytes of `scratch`
 * at NPU_LOCAL_SCRATCH; the memory side of a DMA is `mem` at device VA
 * mem_va (every other VA faults as unmapped).
 */
#ifndef NPU_TENSOR_REF_H
#define NPU_TENSOR_REF_H

#include <stddef.h>
#include <stdint.h>

#include "npu_hw.h"

struct npu_ref_tile {
	uint32_t cell[NPU_TILE_DIM][NPU_TILE_DIM];	/* [row][column] */
};

struct npu_ref_scratch {
	uint8_t *bytes;
	uint64_t size;		/* the block's scratch_bytes */
};

struct npu_ref_mem {
	uint8_t *bytes;
	uint64_t va;		/* device VA of bytes[0] */
	uint64_t size;
};

/* Each returns NPU_ERR_NONE, or the NPU_ERR_* code with *fault = the
 * FAULT register's value; a faulting instruction changes nothing. */
int npu_ref_tload(struct npu_ref_tile *t, const struct npu_ref_scratch *s,
		  uint64_t addr, uint64_t stride, unsigned funct7,
		  uint64_t *fault);
int npu_ref_tstore(const struct npu_ref_tile *t,
		   const struct npu_ref_scratch *s, uint64_t addr,
		   uint64_t stride, unsigned funct7, uint64_t *fault);
void npu_ref_tfill(struct npu_ref_tile *t, uint64_t value,
		   enum npu_tile_esize esize);

/* C += A x B; -1 for a type the spec does not define (CU_ILLEGAL). */
int npu_ref_mma(struct npu_ref_tile *c, const struct npu_ref_tile *a,
		const struct npu_ref_tile *b, unsigned type);

/* TEW; -1 for an undefined op. */
int npu_ref_tew(struct npu_ref_tile *d, const struct npu_ref_tile *a,
		const struct npu_ref_tile *b, unsigned op);

/* One element-wise result, for tests (RNE, canonical NaN). */
uint32_t npu_ref_exp_f32(uint32_t x);

/*
 * TDMA.ISSUE's checks, the copy and the barrier's count, as if it ran to
 * completion at once. *fault_pc is set when the fault is reported at the
 * PC (BAD_ARGS), where *fault is then meaningless.
 */
int npu_ref_tdma(const struct npu_tdma_desc *d, struct npu_ref_scratch *s,
		 struct npu_ref_mem *m, uint64_t *fault, int *fault_pc);

/* The 32-byte sectors of the copy's memory side that the cycle model
 * charges: each row's bytes rounded out to sector boundaries. */
uint64_t npu_ref_tdma_sectors(const struct npu_tdma_desc *d);

#endif /* NPU_TENSOR_REF_H */
