/* SPDX-License-Identifier: MIT */
/*
 * npu_code.h - the npu code object: what npu-cc writes and libnpu loads
 * (Documentation/lib/kernels.rst). Included by kernels (npu_kernel.h,
 * freestanding RV64) and by the library (host), so only fixed-size types.
 *
 * A code object is an ELF64 little-endian RISC-V (EM_RISCV) shared object
 * (ET_DYN, linked at 0 by ld.lld -pie), double-float ABI, no compressed
 * instructions. It is position independent: the loader copies its PT_LOAD
 * segments to device memory at some base and applies its R_RISCV_RELATIVE
 * relocations (the only dynamic relocations allowed). It carries:
 *  - one struct npu_code_desc per kernel in section NPU_CODE_DESC_SECTION;
 *  - for each, the symbol NPU_CODE_ENTRY_PREFIX<name>: the entry the
 *    device starts every thread at (a0..a7 = the first eight argument
 *    words, sp = the end of the thread's stack, ra = NPU_EXIT_PC);
 *  - DWARF when compiled with -g (for the profiler and fault messages).
 */
#ifndef NPU_CODE_H
#define NPU_CODE_H

#include "npu_hw.h"

#define NPU_CODE_DESC_SECTION	".npu.kernels"
#define NPU_CODE_ENTRY_PREFIX	"__npu_entry_"
#define NPU_CODE_DESC_MAGIC	0x4b55504eu	/* "NPUK" */
#define NPU_CODE_VERSION	1u
#define NPU_CODE_NAME_MAX	64		/* bytes, with the NUL */

/* Each kernel argument is passed as one 64-bit word. */
enum npu_code_arg_kind {
	NPU_CODE_ARG_INT = 0,		/* integer, zero/sign extended */
	NPU_CODE_ARG_PTR = 1,		/* device address */
	NPU_CODE_ARG_FLOAT = 2,		/* float or double, its bits */
};

struct npu_code_desc {
	uint32_t magic;			/* NPU_CODE_DESC_MAGIC */
	uint32_t version;		/* NPU_CODE_VERSION */
	char name[NPU_CODE_NAME_MAX];
	uint32_t nargs;			/* <= NPU_CODE_MAX_ARGS */
	uint32_t scratch_bytes;		/* static scratchpad per block */
	uint32_t max_threads;		/* per block; 0 = the device's limit */
	uint32_t stack_bytes;		/* per thread; 0 = the loader's default */
	uint8_t arg_size[NPU_CODE_MAX_ARGS];	/* 1, 2, 4 or 8 */
	uint8_t arg_kind[NPU_CODE_MAX_ARGS];	/* enum npu_code_arg_kind */
};

/*
 * A device printf record (the payload of a struct npu_printf_record, see
 * npu_hw.h): the format string and every %s argument are device addresses
 * inside a loaded code object; each value is one 64-bit word (integers
 * extended to 64 bits, floating point as double bits).
 */
#define NPU_PRINTF_MAX_VALUES	((NPU_PRINTF_MAX_RECORD - 16) / 8)
struct npu_printf_payload {
	uint32_t bytes;			/* this payload, a multiple of 8 */
	uint32_t nvalues;
	uint64_t format;		/* device address of the format */
	uint64_t value[];		/* nvalues words */
};

#endif /* NPU_CODE_H */
