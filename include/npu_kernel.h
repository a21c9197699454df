/* SPDX-License-Identifier: MIT */
/*
 * npu_kernel.h - device-side header for kernels that run on the npu's
 * compute units (RV64G, C with Debian's clang-14 and picolibc), as npu-cc
 * compiles them:
 *
 *   clang --target=riscv64-unknown-elf -march=rv64g -mabi=lp64d
 *         -mcmodel=medany -mno-relax -fPIE -ftls-model=local-exec
 *         -nostdlibinc -isystem <picolibc>/include/release -O2 -c k.c
 *
 * A thread starts at the launch's entry with a0..a7 = the launch's first
 * eight arguments, sp at the end of its stack and ra = NPU_EXIT_PC, so a
 * plain C function is a kernel: it ends when it returns. The programmer's
 * model (CSRs, local windows) is in npu_hw.h and Documentation/hw/npu.rst.
 *
 * Kernels for libnpu are compiled by npu-cc into code objects
 * (npu_code.h) and defined with NPU_KERNEL, which records their name and
 * argument layout for the loader:
 *
 *   NPU_KERNEL(saxpy, (float, a), (const float *, x), (float *, y),
 *              (unsigned, n))
 *   {
 *           unsigned i = npu_block_index() * npu_block_threads() +
 *                        npu_thread_index();
 *
 *           if (i < n)
 *                   y[i] += a * x[i];
 *   }
 *
 * Up to NPU_CODE_MAX_ARGS scalar or pointer parameters of at most 8 bytes.
 * NPU_KERNEL_EX(name, scratch_bytes, max_threads, stack_bytes, ...) also
 * declares the static scratchpad per block, the largest block the kernel
 * supports and the stack it needs per thread (0: defaults).
 */
#ifndef NPU_KERNEL_H
#define NPU_KERNEL_H

#include "npu_hw.h"
#include "npu_code.h"

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

/* Atomics on device memory (RV64A), returning the old value. */
#define npu_atomic_add(p, v)	__atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define npu_atomic_and(p, v)	__atomic_fetch_and((p), (v), __ATOMIC_RELAXED)
#define npu_atomic_or(p, v)	__atomic_fetch_or((p), (v), __ATOMIC_RELAXED)
#define npu_atomic_xor(p, v)	__atomic_fetch_xor((p), (v), __ATOMIC_RELAXED)
#define npu_atomic_min(p, v)	__atomic_fetch_min((p), (v), __ATOMIC_RELAXED)
#define npu_atomic_max(p, v)	__atomic_fetch_max((p), (v), __ATOMIC_RELAXED)
#define npu_atomic_exch(p, v)	__atomic_exchange_n((p), (v), __ATOMIC_RELAXED)
#define npu_atomic_cas(p, expected, desired) __extension__ ({ \
	__typeof__(*(p)) e_ = (expected); \
	__atomic_compare_exchange_n((p), &e_, (desired), 0, __ATOMIC_RELAXED, \
				    __ATOMIC_RELAXED); \
	e_; })

/* Float add (no AMO for floats: a compare-and-swap loop). */
static inline float npu_atomic_add_f32(float *p, float v)
{
	unsigned int *w = (unsigned int *)p, old = *(volatile unsigned int *)w, nw;
	float f;

	do {
		__builtin_memcpy(&f, &old, 4);
		f += v;
		__builtin_memcpy(&nw, &f, 4);
	} while (!__atomic_compare_exchange_n(w, &old, nw, 0, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	__builtin_memcpy(&f, &old, 4);
	return f;
}

/* Float exchange: the bits swapped as an integer. */
static inline float npu_atomic_exch_f32(float *p, float v)
{
	unsigned int nw, old;
	float f;

	__builtin_memcpy(&nw, &v, 4);
	old = __atomic_exchange_n((unsigned int *)p, nw, __ATOMIC_RELAXED);
	__builtin_memcpy(&f, &old, 4);
	return f;
}

/*
 * Tensor engine and tile DMA (Documentation/hw/npu.rst, "Tensor engine and
 * tile DMA"): devices with NPU_FEATURE_TENSOR execute them; on one
 * without, they fault with CU_ILLEGAL.
 *
 * Tile registers are named by integer constants 0..NPU_TILE_REGS-1; a
 * tile lives in the thread, not in C, so the compiler only orders these
 * statements (all volatile) and, for the ones that touch the scratchpad,
 * treats them as reading and writing memory. Emitted with clang's .insn.
 */
#define npu__tile(t) (0 * sizeof(char[(t) >= 0 && (t) < NPU_TILE_REGS ? 1 : -1]) + (t))

#define npu__tile_mem(f3, f7, t, addr, stride) \
	__asm__ volatile(".insn r " NPU_KSTR(NPU_OPC_TENSOR) ", %0, %1, x%2, %3, %4" \
			 : : "i"(f3), "i"(f7), "i"(npu__tile(t)), \
			   "r"((unsigned long)(addr)), "r"((unsigned long)(stride)) \
			 : "memory")

#define npu__tile_op(f3, f7, d, a, b) \
	__asm__ volatile(".insn r " NPU_KSTR(NPU_OPC_TENSOR) ", %0, %1, x%2, x%3, x%4" \
			 : : "i"(f3), "i"(f7), "i"(npu__tile(d)), \
			   "i"(npu__tile(a)), "i"(npu__tile(b)))

/* Tile t <-> 16 rows of 16 elements of NPU_TILE_E8/E16/E32 at addr in the
 * scratchpad, rows stride bytes apart; the _t forms transpose. */
#define npu_tile_load(t, addr, stride, esize) \
	npu__tile_mem(NPU_TENSOR_TLOAD, (esize), t, addr, stride)
#define npu_tile_load_t(t, addr, stride, esize) \
	npu__tile_mem(NPU_TENSOR_TLOAD, (esize) | NPU_TILE_TRANS, t, addr, stride)
#define npu_tile_store(t, addr, stride, esize) \
	npu__tile_mem(NPU_TENSOR_TSTORE, (esize), t, addr, stride)
#define npu_tile_store_t(t, addr, stride, esize) \
	npu__tile_mem(NPU_TENSOR_TSTORE, (esize) | NPU_TILE_TRANS, t, addr, stride)

/* Every cell of t = the low bits of value (an element of esize). */
#define npu_tile_fill(t, value, esize) \
	__asm__ volatile(".insn r " NPU_KSTR(NPU_OPC_TENSOR) ", %0, %1, x%2, %3, x0" \
			 : : "i"(NPU_TENSOR_TFILL), "i"(esize), "i"(npu__tile(t)), \
			   "r"((unsigned long)(value)))
#define npu_tile_zero(t) \
	__asm__ volatile(".insn r " NPU_KSTR(NPU_OPC_TENSOR) ", %0, %1, x%2, x0, x0" \
			 : : "i"(NPU_TENSOR_TFILL), "i"(NPU_TILE_E32), "i"(npu__tile(t)))
#define npu_tile_fill_f32(t, f) \
	npu_tile_fill(t, __extension__ ({ float f_ = (f); unsigned u_; \
		__builtin_memcpy(&u_, &f_, 4); u_; }), NPU_TILE_E32)

/* C += A x B, 16x16x16: f16/bf16/f32 inputs into f32, s8/s32 into s32. */
#define npu_mma_f16(c, a, b)	npu__tile_op(NPU_TENSOR_TMMA, NPU_MMA_F16, c, a, b)
#define npu_mma_bf16(c, a, b)	npu__tile_op(NPU_TENSOR_TMMA, NPU_MMA_BF16, c, a, b)
#define npu_mma_f32(c, a, b)	npu__tile_op(NPU_TENSOR_TMMA, NPU_MMA_F32, c, a, b)
#define npu_mma_s8(c, a, b)	npu__tile_op(NPU_TENSOR_TMMA, NPU_MMA_S8, c, a, b)
#define npu_mma_s32(c, a, b)	npu__tile_op(NPU_TENSOR_TMMA, NPU_MMA_S32, c, a, b)

/* Element-wise on f32 tiles (enum npu_tew_op); one-operand ops encode
 * rs2 = 0. */
#define npu_tile_add(d, a, b)	npu__tile_op(NPU_TENSOR_TEW, NPU_TEW_ADD, d, a, b)
#define npu_tile_sub(d, a, b)	npu__tile_op(NPU_TENSOR_TEW, NPU_TEW_SUB, d, a, b)
#define npu_tile_mul(d, a, b)	npu__tile_op(NPU_TENSOR_TEW, NPU_TEW_MUL, d, a, b)
#define npu_tile_max(d, a, b)	npu__tile_op(NPU_TENSOR_TEW, NPU_TEW_MAX, d, a, b)
#define npu_tile_addrow(d, a, b) npu__tile_op(NPU_TENSOR_TEW, NPU_TEW_ADDROW, d, a, b)
#define npu_tile_relu(d, a)	npu__tile_op(NPU_TENSOR_TEW, NPU_TEW_RELU, d, a, 0)
#define npu_tile_exp(d, a)	npu__tile_op(NPU_TENSOR_TEW, NPU_TEW_EXP, d, a, 0)
#define npu_tile_rcp(d, a)	npu__tile_op(NPU_TENSOR_TEW, NPU_TEW_RCP, d, a, 0)
#define npu_tile_rowmax(d, a)	npu__tile_op(NPU_TENSOR_TEW, NPU_TEW_ROWMAX, d, a, 0)
#define npu_tile_rowsum(d, a)	npu__tile_op(NPU_TENSOR_TEW, NPU_TEW_ROWSUM, d, a, 0)
#define npu_tile_cvt_f16(d, a)	npu__tile_op(NPU_TENSOR_TEW, NPU_TEW_CVTF16, d, a, 0)
#define npu_tile_cvt_bf16(d, a)	npu__tile_op(NPU_TENSOR_TEW, NPU_TEW_CVTBF16, d, a, 0)

/* Start the copy *desc describes (read now: it may be reused at once). */
static inline void npu_tdma_issue(const struct npu_tdma_desc *desc)
{
	__asm__ volatile(".insn r " NPU_KSTR(NPU_OPC_TDMA) ", %0, 0, x0, %1, x0"
			 : : "i"(NPU_TDMA_ISSUE), "r"(desc) : "memory");
}

/* Wait until target copies naming *bar have completed (wrap-safe);
 * returns the count seen. */
static inline unsigned npu_tdma_wait(struct npu_tdma_barrier *bar,
				     unsigned target)
{
	unsigned long seen;

	__asm__ volatile(".insn r " NPU_KSTR(NPU_OPC_TDMA) ", %1, 0, %0, %2, %3"
			 : "=r"(seen) : "i"(NPU_TDMA_WAIT), "r"(bar),
			   "r"((unsigned long)target) : "memory");
	return (unsigned)seen;
}

/* A 2-D copy of rows rows of row_bytes bytes between device memory and the
 * scratchpad (to_mem: scratchpad -> memory), completion counted on *bar. */
static inline void npu_tdma_2d(struct npu_tdma_barrier *bar, void *scratch,
			       unsigned long mem, unsigned row_bytes,
			       unsigned rows, unsigned long mem_stride,
			       unsigned scratch_stride, int to_mem)
{
	struct npu_tdma_desc d = {
		.mem = mem, .scratch = (unsigned long)scratch,
		.barrier = (unsigned long)bar,
		.mem_stride = { mem_stride, 0 },
		.scratch_stride = { scratch_stride, 0 },
		.size = { row_bytes, rows, 1 },
		.flags = to_mem ? NPU_TDMA_TO_MEM : 0,
	};

	npu_tdma_issue(&d);
}

/*
 * printf as in CUDA: the record (format address and values) goes to the
 * launch's printf buffer; the library formats it on the host when the
 * host observes the launch's completion. Conversions: d i u o x X c s p
 * e E f F g G a A with flags, width, precision (also *) and length
 * modifiers; %s strings must lie in the code object (string literals).
 * Returns the number of values recorded. From the code object's runtime.
 */
int npu_printf(const char *format, ...) __attribute__((format(printf, 1, 2)));
#ifndef NPU_NO_PRINTF_MACRO
#define printf npu_printf
#endif

/*
 * Thread-local storage (picolibc's errno): code objects that have any get
 * each thread's copy set up by the entry stub, in __npu_tls_entry
 * (npu-rt.c). The test costs three instructions, the size of the TLS
 * image being an absolute symbol of the linker script; the call links
 * through t0 and the callee keeps ra, so the stub needs no frame. Nothing
 * is live yet: the registers the callee may change are clobbers.
 */
#define npu__tls() __asm__ volatile( \
	"lui t1, %%hi(__npu_tls_size)\n\t" \
	"addi t1, t1, %%lo(__npu_tls_size)\n\t" \
	"beqz t1, 1f\n\t" \
	"jal t0, __npu_tls_entry\n" \
	"1:" : : : "t0", "t1", "t2", "t3", "t4", "t5", "t6", "a0", "a1", \
	"a2", "a3", "a4", "a5", "a6", "a7", "ft0", "ft1", "ft2", "ft3", \
	"ft4", "ft5", "ft6", "ft7", "ft8", "ft9", "ft10", "ft11", "fa0", \
	"fa1", "fa2", "fa3", "fa4", "fa5", "fa6", "fa7", "memory")

/* ---- kernel definitions: NPU_KERNEL(name, (type, arg), ...) ---- */
#define NPU__N(...) NPU__N_(0, ##__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define NPU__N_(_0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, n, ...) n
#define NPU__CAT(a, b) NPU__CAT_(a, b)
#define NPU__CAT_(a, b) a##b
#define NPU__T(t, n) t
#define NPU__D(t, n) t n
/* one 64-bit argument word as the parameter's type (its low bytes) */
#define NPU__L(i, t, n) __extension__ ({ t v_; \
	__builtin_memcpy(&v_, &npu__p[i], sizeof(v_)); v_; })
#define NPU__K(t, n) (_Generic((NPU__T(t, n))0, float: NPU_CODE_ARG_FLOAT, \
	double: NPU_CODE_ARG_FLOAT, default: \
	__builtin_classify_type((NPU__T(t, n))0) == 5 ? NPU_CODE_ARG_PTR : \
	NPU_CODE_ARG_INT))
#define NPU__PARAMS_0() void
#define NPU__PARAMS_1(p0) NPU__D p0
#define NPU__PARAMS_2(p0, p1) NPU__D p0, NPU__D p1
#define NPU__PARAMS_3(p0, p1, p2) NPU__D p0, NPU__D p1, NPU__D p2
#define NPU__PARAMS_4(p0, p1, p2, p3) NPU__D p0, NPU__D p1, NPU__D p2, NPU__D p3
#define NPU__PARAMS_5(p0, p1, p2, p3, p4) NPU__D p0, NPU__D p1, NPU__D p2, NPU__D p3, NPU__D p4
#define NPU__PARAMS_6(p0, p1, p2, p3, p4, p5) NPU__D p0, NPU__D p1, NPU__D p2, NPU__D p3, NPU__D p4, NPU__D p5
#define NPU__PARAMS_7(p0, p1, p2, p3, p4, p5, p6) NPU__D p0, NPU__D p1, NPU__D p2, NPU__D p3, NPU__D p4, NPU__D p5, NPU__D p6
#define NPU__PARAMS_8(p0, p1, p2, p3, p4, p5, p6, p7) NPU__D p0, NPU__D p1, NPU__D p2, NPU__D p3, NPU__D p4, NPU__D p5, NPU__D p6, NPU__D p7
#define NPU__PARAMS_9(p0, p1, p2, p3, p4, p5, p6, p7, p8) NPU__D p0, NPU__D p1, NPU__D p2, NPU__D p3, NPU__D p4, NPU__D p5, NPU__D p6, NPU__D p7, NPU__D p8
#define NPU__PARAMS_10(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9) NPU__D p0, NPU__D p1, NPU__D p2, NPU__D p3, NPU__D p4, NPU__D p5, NPU__D p6, NPU__D p7, NPU__D p8, NPU__D p9
#define NPU__PARAMS_11(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10) NPU__D p0, NPU__D p1, NPU__D p2, NPU__D p3, NPU__D p4, NPU__D p5, NPU__D p6, NPU__D p7, NPU__D p8, NPU__D p9, NPU__D p10
#define NPU__PARAMS_12(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11) NPU__D p0, NPU__D p1, NPU__D p2, NPU__D p3, NPU__D p4, NPU__D p5, NPU__D p6, NPU__D p7, NPU__D p8, NPU__D p9, NPU__D p10, NPU__D p11
#define NPU__PARAMS_13(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12) NPU__D p0, NPU__D p1, NPU__D p2, NPU__D p3, NPU__D p4, NPU__D p5, NPU__D p6, NPU__D p7, NPU__D p8, NPU__D p9, NPU__D p10, NPU__D p11, NPU__D p12
#define NPU__PARAMS_14(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13) NPU__D p0, NPU__D p1, NPU__D p2, NPU__D p3, NPU__D p4, NPU__D p5, NPU__D p6, NPU__D p7, NPU__D p8, NPU__D p9, NPU__D p10, NPU__D p11, NPU__D p12, NPU__D p13
#define NPU__PARAMS_15(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14) NPU__D p0, NPU__D p1, NPU__D p2, NPU__D p3, NPU__D p4, NPU__D p5, NPU__D p6, NPU__D p7, NPU__D p8, NPU__D p9, NPU__D p10, NPU__D p11, NPU__D p12, NPU__D p13, NPU__D p14
#define NPU__PARAMS_16(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15) NPU__D p0, NPU__D p1, NPU__D p2, NPU__D p3, NPU__D p4, NPU__D p5, NPU__D p6, NPU__D p7, NPU__D p8, NPU__D p9, NPU__D p10, NPU__D p11, NPU__D p12, NPU__D p13, NPU__D p14, NPU__D p15
#define NPU__SIZES_0()
#define NPU__SIZES_1(p0) sizeof(NPU__T p0)
#define NPU__SIZES_2(p0, p1) sizeof(NPU__T p0), sizeof(NPU__T p1)
#define NPU__SIZES_3(p0, p1, p2) sizeof(NPU__T p0), sizeof(NPU__T p1), sizeof(NPU__T p2)
#define NPU__SIZES_4(p0, p1, p2, p3) sizeof(NPU__T p0), sizeof(NPU__T p1), sizeof(NPU__T p2), sizeof(NPU__T p3)
#define NPU__SIZES_5(p0, p1, p2, p3, p4) sizeof(NPU__T p0), sizeof(NPU__T p1), sizeof(NPU__T p2), sizeof(NPU__T p3), sizeof(NPU__T p4)
#define NPU__SIZES_6(p0, p1, p2, p3, p4, p5) sizeof(NPU__T p0), sizeof(NPU__T p1), sizeof(NPU__T p2), sizeof(NPU__T p3), sizeof(NPU__T p4), sizeof(NPU__T p5)
#define NPU__SIZES_7(p0, p1, p2, p3, p4, p5, p6) sizeof(NPU__T p0), sizeof(NPU__T p1), sizeof(NPU__T p2), sizeof(NPU__T p3), sizeof(NPU__T p4), sizeof(NPU__T p5), sizeof(NPU__T p6)
#define NPU__SIZES_8(p0, p1, p2, p3, p4, p5, p6, p7) sizeof(NPU__T p0), sizeof(NPU__T p1), sizeof(NPU__T p2), sizeof(NPU__T p3), sizeof(NPU__T p4), sizeof(NPU__T p5), sizeof(NPU__T p6), sizeof(NPU__T p7)
#define NPU__SIZES_9(p0, p1, p2, p3, p4, p5, p6, p7, p8) sizeof(NPU__T p0), sizeof(NPU__T p1), sizeof(NPU__T p2), sizeof(NPU__T p3), sizeof(NPU__T p4), sizeof(NPU__T p5), sizeof(NPU__T p6), sizeof(NPU__T p7), sizeof(NPU__T p8)
#define NPU__SIZES_10(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9) sizeof(NPU__T p0), sizeof(NPU__T p1), sizeof(NPU__T p2), sizeof(NPU__T p3), sizeof(NPU__T p4), sizeof(NPU__T p5), sizeof(NPU__T p6), sizeof(NPU__T p7), sizeof(NPU__T p8), sizeof(NPU__T p9)
#define NPU__SIZES_11(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10) sizeof(NPU__T p0), sizeof(NPU__T p1), sizeof(NPU__T p2), sizeof(NPU__T p3), sizeof(NPU__T p4), sizeof(NPU__T p5), sizeof(NPU__T p6), sizeof(NPU__T p7), sizeof(NPU__T p8), sizeof(NPU__T p9), sizeof(NPU__T p10)
#define NPU__SIZES_12(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11) sizeof(NPU__T p0), sizeof(NPU__T p1), sizeof(NPU__T p2), sizeof(NPU__T p3), sizeof(NPU__T p4), sizeof(NPU__T p5), sizeof(NPU__T p6), sizeof(NPU__T p7), sizeof(NPU__T p8), sizeof(NPU__T p9), sizeof(NPU__T p10), sizeof(NPU__T p11)
#define NPU__SIZES_13(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12) sizeof(NPU__T p0), sizeof(NPU__T p1), sizeof(NPU__T p2), sizeof(NPU__T p3), sizeof(NPU__T p4), sizeof(NPU__T p5), sizeof(NPU__T p6), sizeof(NPU__T p7), sizeof(NPU__T p8), sizeof(NPU__T p9), sizeof(NPU__T p10), sizeof(NPU__T p11), sizeof(NPU__T p12)
#define NPU__SIZES_14(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13) sizeof(NPU__T p0), sizeof(NPU__T p1), sizeof(NPU__T p2), sizeof(NPU__T p3), sizeof(NPU__T p4), sizeof(NPU__T p5), sizeof(NPU__T p6), sizeof(NPU__T p7), sizeof(NPU__T p8), sizeof(NPU__T p9), sizeof(NPU__T p10), sizeof(NPU__T p11), sizeof(NPU__T p12), sizeof(NPU__T p13)
#define NPU__SIZES_15(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14) sizeof(NPU__T p0), sizeof(NPU__T p1), sizeof(NPU__T p2), sizeof(NPU__T p3), sizeof(NPU__T p4), sizeof(NPU__T p5), sizeof(NPU__T p6), sizeof(NPU__T p7), sizeof(NPU__T p8), sizeof(NPU__T p9), sizeof(NPU__T p10), sizeof(NPU__T p11), sizeof(NPU__T p12), sizeof(NPU__T p13), sizeof(NPU__T p14)
#define NPU__SIZES_16(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15) sizeof(NPU__T p0), sizeof(NPU__T p1), sizeof(NPU__T p2), sizeof(NPU__T p3), sizeof(NPU__T p4), sizeof(NPU__T p5), sizeof(NPU__T p6), sizeof(NPU__T p7), sizeof(NPU__T p8), sizeof(NPU__T p9), sizeof(NPU__T p10), sizeof(NPU__T p11), sizeof(NPU__T p12), sizeof(NPU__T p13), sizeof(NPU__T p14), sizeof(NPU__T p15)
#define NPU__KINDS_0()
#define NPU__KINDS_1(p0) NPU__K p0
#define NPU__KINDS_2(p0, p1) NPU__K p0, NPU__K p1
#define NPU__KINDS_3(p0, p1, p2) NPU__K p0, NPU__K p1, NPU__K p2
#define NPU__KINDS_4(p0, p1, p2, p3) NPU__K p0, NPU__K p1, NPU__K p2, NPU__K p3
#define NPU__KINDS_5(p0, p1, p2, p3, p4) NPU__K p0, NPU__K p1, NPU__K p2, NPU__K p3, NPU__K p4
#define NPU__KINDS_6(p0, p1, p2, p3, p4, p5) NPU__K p0, NPU__K p1, NPU__K p2, NPU__K p3, NPU__K p4, NPU__K p5
#define NPU__KINDS_7(p0, p1, p2, p3, p4, p5, p6) NPU__K p0, NPU__K p1, NPU__K p2, NPU__K p3, NPU__K p4, NPU__K p5, NPU__K p6
#define NPU__KINDS_8(p0, p1, p2, p3, p4, p5, p6, p7) NPU__K p0, NPU__K p1, NPU__K p2, NPU__K p3, NPU__K p4, NPU__K p5, NPU__K p6, NPU__K p7
#define NPU__KINDS_9(p0, p1, p2, p3, p4, p5, p6, p7, p8) NPU__K p0, NPU__K p1, NPU__K p2, NPU__K p3, NPU__K p4, NPU__K p5, NPU__K p6, NPU__K p7, NPU__K p8
#define NPU__KINDS_10(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9) NPU__K p0, NPU__K p1, NPU__K p2, NPU__K p3, NPU__K p4, NPU__K p5, NPU__K p6, NPU__K p7, NPU__K p8, NPU__K p9
#define NPU__KINDS_11(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10) NPU__K p0, NPU__K p1, NPU__K p2, NPU__K p3, NPU__K p4, NPU__K p5, NPU__K p6, NPU__K p7, NPU__K p8, NPU__K p9, NPU__K p10
#define NPU__KINDS_12(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11) NPU__K p0, NPU__K p1, NPU__K p2, NPU__K p3, NPU__K p4, NPU__K p5, NPU__K p6, NPU__K p7, NPU__K p8, NPU__K p9, NPU__K p10, NPU__K p11
#define NPU__KINDS_13(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12) NPU__K p0, NPU__K p1, NPU__K p2, NPU__K p3, NPU__K p4, NPU__K p5, NPU__K p6, NPU__K p7, NPU__K p8, NPU__K p9, NPU__K p10, NPU__K p11, NPU__K p12
#define NPU__KINDS_14(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13) NPU__K p0, NPU__K p1, NPU__K p2, NPU__K p3, NPU__K p4, NPU__K p5, NPU__K p6, NPU__K p7, NPU__K p8, NPU__K p9, NPU__K p10, NPU__K p11, NPU__K p12, NPU__K p13
#define NPU__KINDS_15(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14) NPU__K p0, NPU__K p1, NPU__K p2, NPU__K p3, NPU__K p4, NPU__K p5, NPU__K p6, NPU__K p7, NPU__K p8, NPU__K p9, NPU__K p10, NPU__K p11, NPU__K p12, NPU__K p13, NPU__K p14
#define NPU__KINDS_16(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15) NPU__K p0, NPU__K p1, NPU__K p2, NPU__K p3, NPU__K p4, NPU__K p5, NPU__K p6, NPU__K p7, NPU__K p8, NPU__K p9, NPU__K p10, NPU__K p11, NPU__K p12, NPU__K p13, NPU__K p14, NPU__K p15
#define NPU__LOADS_0()
#define NPU__LOADS_1(p0) NPU__LI(0, p0)
#define NPU__LOADS_2(p0, p1) NPU__LI(0, p0), NPU__LI(1, p1)
#define NPU__LOADS_3(p0, p1, p2) NPU__LI(0, p0), NPU__LI(1, p1), NPU__LI(2, p2)
#define NPU__LOADS_4(p0, p1, p2, p3) NPU__LI(0, p0), NPU__LI(1, p1), NPU__LI(2, p2), NPU__LI(3, p3)
#define NPU__LOADS_5(p0, p1, p2, p3, p4) NPU__LI(0, p0), NPU__LI(1, p1), NPU__LI(2, p2), NPU__LI(3, p3), NPU__LI(4, p4)
#define NPU__LOADS_6(p0, p1, p2, p3, p4, p5) NPU__LI(0, p0), NPU__LI(1, p1), NPU__LI(2, p2), NPU__LI(3, p3), NPU__LI(4, p4), NPU__LI(5, p5)
#define NPU__LOADS_7(p0, p1, p2, p3, p4, p5, p6) NPU__LI(0, p0), NPU__LI(1, p1), NPU__LI(2, p2), NPU__LI(3, p3), NPU__LI(4, p4), NPU__LI(5, p5), NPU__LI(6, p6)
#define NPU__LOADS_8(p0, p1, p2, p3, p4, p5, p6, p7) NPU__LI(0, p0), NPU__LI(1, p1), NPU__LI(2, p2), NPU__LI(3, p3), NPU__LI(4, p4), NPU__LI(5, p5), NPU__LI(6, p6), NPU__LI(7, p7)
#define NPU__LOADS_9(p0, p1, p2, p3, p4, p5, p6, p7, p8) NPU__LI(0, p0), NPU__LI(1, p1), NPU__LI(2, p2), NPU__LI(3, p3), NPU__LI(4, p4), NPU__LI(5, p5), NPU__LI(6, p6), NPU__LI(7, p7), NPU__LI(8, p8)
#define NPU__LOADS_10(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9) NPU__LI(0, p0), NPU__LI(1, p1), NPU__LI(2, p2), NPU__LI(3, p3), NPU__LI(4, p4), NPU__LI(5, p5), NPU__LI(6, p6), NPU__LI(7, p7), NPU__LI(8, p8), NPU__LI(9, p9)
#define NPU__LOADS_11(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10) NPU__LI(0, p0), NPU__LI(1, p1), NPU__LI(2, p2), NPU__LI(3, p3), NPU__LI(4, p4), NPU__LI(5, p5), NPU__LI(6, p6), NPU__LI(7, p7), NPU__LI(8, p8), NPU__LI(9, p9), NPU__LI(10, p10)
#define NPU__LOADS_12(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11) NPU__LI(0, p0), NPU__LI(1, p1), NPU__LI(2, p2), NPU__LI(3, p3), NPU__LI(4, p4), NPU__LI(5, p5), NPU__LI(6, p6), NPU__LI(7, p7), NPU__LI(8, p8), NPU__LI(9, p9), NPU__LI(10, p10), NPU__LI(11, p11)
#define NPU__LOADS_13(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12) NPU__LI(0, p0), NPU__LI(1, p1), NPU__LI(2, p2), NPU__LI(3, p3), NPU__LI(4, p4), NPU__LI(5, p5), NPU__LI(6, p6), NPU__LI(7, p7), NPU__LI(8, p8), NPU__LI(9, p9), NPU__LI(10, p10), NPU__LI(11, p11), NPU__LI(12, p12)
#define NPU__LOADS_14(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13) NPU__LI(0, p0), NPU__LI(1, p1), NPU__LI(2, p2), NPU__LI(3, p3), NPU__LI(4, p4), NPU__LI(5, p5), NPU__LI(6, p6), NPU__LI(7, p7), NPU__LI(8, p8), NPU__LI(9, p9), NPU__LI(10, p10), NPU__LI(11, p11), NPU__LI(12, p12), NPU__LI(13, p13)
#define NPU__LOADS_15(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14) NPU__LI(0, p0), NPU__LI(1, p1), NPU__LI(2, p2), NPU__LI(3, p3), NPU__LI(4, p4), NPU__LI(5, p5), NPU__LI(6, p6), NPU__LI(7, p7), NPU__LI(8, p8), NPU__LI(9, p9), NPU__LI(10, p10), NPU__LI(11, p11), NPU__LI(12, p12), NPU__LI(13, p13), NPU__LI(14, p14)
#define NPU__LOADS_16(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15) NPU__LI(0, p0), NPU__LI(1, p1), NPU__LI(2, p2), NPU__LI(3, p3), NPU__LI(4, p4), NPU__LI(5, p5), NPU__LI(6, p6), NPU__LI(7, p7), NPU__LI(8, p8), NPU__LI(9, p9), NPU__LI(10, p10), NPU__LI(11, p11), NPU__LI(12, p12), NPU__LI(13, p13), NPU__LI(14, p14), NPU__LI(15, p15)
#define NPU__LI(i, p) NPU__L(i, NPU__T p, 0)

/* Define kernel `name` with parameters given as (type, name) pairs. */
#define NPU_KERNEL(name, ...) NPU_KERNEL_EX(name, 0, 0, 0, ##__VA_ARGS__)

#define NPU_KERNEL_EX(name, scratch, max_threads, stack, ...) \
	static void name(NPU__CAT(NPU__PARAMS_, NPU__N(__VA_ARGS__))(__VA_ARGS__)); \
	__attribute__((used, section(NPU_CODE_DESC_SECTION))) \
	const struct npu_code_desc npu__desc_##name = { \
		NPU_CODE_DESC_MAGIC, NPU_CODE_VERSION, #name, \
		NPU__N(__VA_ARGS__), (scratch), (max_threads), (stack), \
		{ NPU__CAT(NPU__SIZES_, NPU__N(__VA_ARGS__))(__VA_ARGS__) }, \
		{ NPU__CAT(NPU__KINDS_, NPU__N(__VA_ARGS__))(__VA_ARGS__) } }; \
	__attribute__((used, noinline)) void __npu_entry_##name(void) \
	{ \
		const unsigned long long *npu__p = \
			(const unsigned long long *)NPU_LOCAL_PARAMS; \
		(void)npu__p; \
		npu__tls(); \
		name(NPU__CAT(NPU__LOADS_, NPU__N(__VA_ARGS__))(__VA_ARGS__)); \
	} \
	static void name(NPU__CAT(NPU__PARAMS_, NPU__N(__VA_ARGS__))(__VA_ARGS__))

#endif /* NPU_KERNEL_H */
