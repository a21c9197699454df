/* SPDX-License-Identifier: MIT */
/*
 * npu_hw.h - hardware interface of the npu virtual NPU.
 *
 * The one description of the device's registers, command packets, page-table
 * format, error codes and built-in kernels. It is included by the QEMU device
 * model, the kernel driver and the user-space library (which writes packets
 * into command buffers), so it uses only fixed-width C types and macros.
 * Documentation/hw/npu.rst explains every item below.
 */
#ifndef NPU_HW_H
#define NPU_HW_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

/* ------------------------------------------------------------------------
 * PCI identity
 */
#define NPU_PCI_VENDOR_ID	0x1b36	/* Red Hat, Inc. (QEMU virtual devices) */
#define NPU_PCI_DEVICE_ID	0x0120	/* unused in QEMU's list; ours */
#define NPU_PCI_CLASS		0x1200	/* processing accelerator */
#define NPU_PCI_REVISION	0x01

#define NPU_BAR_REGS		0	/* 64 KiB of registers */
#define NPU_BAR_DOORBELL	1	/* user-queue doorbell pages (32-bit) */
#define NPU_BAR_DEVMEM		2	/* 64-bit prefetchable device memory */
#define NPU_BAR_MSIX		4	/* MSI-X table and PBA */
#define NPU_REGS_SIZE		0x10000

#define NPU_MAX_RINGS		16
#define NPU_MAX_CUS		64

/* ------------------------------------------------------------------------
 * Global registers (BAR0). All registers are 32 bits wide; 64-bit values are
 * split into _LO/_HI pairs. Reading _LO of CLOCK latches _HI.
 */
#define NPU_REG_ID		0x000	/* RO: NPU_ID_MAGIC */
#define NPU_ID_MAGIC		0x3155504e	/* "NPU1" little endian */
#define NPU_REG_VERSION		0x004	/* RO: major << 16 | minor */
#define NPU_VERSION		0x00010002	/* 1.1: SIGNAL, WAIT_MEM64;
						 * 1.2: NPU_WAIT_DOORBELL */
#define NPU_REG_CAPS		0x008	/* RO: ring and unit counts */
#define NPU_CAPS_COMPUTE_RINGS(c)	((c) & 0xff)
#define NPU_CAPS_COPY_RINGS(c)		(((c) >> 8) & 0xff)
#define NPU_CAPS_CUS(c)			(((c) >> 16) & 0xff)
#define NPU_REG_FEATURES	0x00c	/* RO: NPU_FEATURE_* */
#define NPU_FEATURE_TIMING	(1u << 0)	/* timing model is on */
#define NPU_FEATURE_USER_CODE	(1u << 1)	/* LAUNCH_CODE, RISC-V units */
#define NPU_FEATURE_VIRTUAL_TIME (1u << 2)	/* device clock = model time */
#define NPU_FEATURE_USER_QUEUES	(1u << 3)	/* UQ_* registers, BAR1 */
#define NPU_FEATURE_TENSOR	(1u << 4)	/* tensor engine, tile DMA */
#define NPU_REG_DEVMEM_SIZE_LO	0x010	/* RO: bytes of device memory */
#define NPU_REG_DEVMEM_SIZE_HI	0x014
#define NPU_REG_CLOCK_HZ	0x018	/* RO: device clock rate (ticks/s) */
#define NPU_REG_CLOCK_LO	0x020	/* RO: device clock, latches _HI */
#define NPU_REG_CLOCK_HI	0x024
#define NPU_REG_RESET		0x030	/* WO: write NPU_RESET_MAGIC */
#define NPU_RESET_MAGIC		0x52534554	/* "RSET" */
#define NPU_REG_ERR_PENDING	0x034	/* RW1C: bit r = ring r halted */
#define NPU_REG_SCRATCH		0x038	/* RW: free for software */
/*
 * WO: context id whose cached translations every ring drops, 0 = all
 * contexts. The write completes when no ring still uses a translation it
 * obtained before the write (see Documentation/hw/npu.rst, MMU). Reads 0.
 */
#define NPU_REG_MMU_INVALIDATE	0x03c
#define NPU_MMU_INVALIDATE_ALL	0

/* Timing model figures (RO), as set by the device's properties. */
#define NPU_REG_LINK_BW_MBPS	0x040	/* host link bandwidth, MB/s */
#define NPU_REG_MEM_BW_MBPS	0x044	/* device memory bandwidth, MB/s */
#define NPU_REG_CU_MOPS		0x048	/* per compute unit, M ops/s */
#define NPU_REG_LAUNCH_NS	0x04c	/* kernel launch latency, ns */
#define NPU_REG_COPY_NS		0x050	/* copy setup latency, ns */
/* Programmable compute units (RO), as set by the device's properties. */
#define NPU_REG_CU_THREADS	0x054	/* hardware thread slots per unit */
#define NPU_REG_CU_SCRATCH	0x058	/* scratchpad bytes per unit */
#define NPU_REG_CU_CLOCK_MHZ	0x05c	/* compute unit clock, MHz */
#define NPU_REG_L2_KIB		0x060	/* L2 size, KiB (0: none) */
#define NPU_REG_L2_BW_MBPS	0x064	/* L2 bandwidth, MB/s */

/* Per compute unit busy time in ns (RO, 64 bit), at CU_BUSY(cu). */
#define NPU_REG_CU_BUSY_LO(cu)	(0x800 + (cu) * 8)
#define NPU_REG_CU_BUSY_HI(cu)	(0x804 + (cu) * 8)

/*
 * Per compute unit cycle counters (RO, 64 bit): cycles with at least one
 * resident block, and instructions retired, at CU_CYCLES(cu) / CU_INSTRS(cu).
 */
#define NPU_REG_CU_CYCLES_LO(cu)	(0xa00 + (cu) * 16)
#define NPU_REG_CU_CYCLES_HI(cu)	(0xa04 + (cu) * 16)
#define NPU_REG_CU_INSTRS_LO(cu)	(0xa08 + (cu) * 16)
#define NPU_REG_CU_INSTRS_HI(cu)	(0xa0c + (cu) * 16)

/* ------------------------------------------------------------------------
 * Ring registers. Rings 0 .. compute_rings-1 are compute rings, the rest
 * (up to compute_rings + copy_rings - 1) are copy rings.
 * MSI-X vector r belongs to ring r; vector NPU_CAPS total rings = errors.
 */
#define NPU_RING_BASE(r)	(0x1000 + (r) * 0x100)

#define NPU_RING_BASE_LO	0x00	/* RW: guest-physical ring address */
#define NPU_RING_BASE_HI	0x04
#define NPU_RING_SIZE		0x08	/* RW: bytes, power of 2, 4K..1M */
#define NPU_RING_HEAD		0x0c	/* RO: next byte offset to read */
#define NPU_RING_TAIL		0x10	/* RW: doorbell, byte offset */
#define NPU_RING_CONTROL	0x14	/* RW: NPU_RING_CTL_* */
#define NPU_RING_CTL_ENABLE	(1u << 0)	/* run while set */
#define NPU_RING_CTL_RESET	(1u << 1)	/* WO: abort, head=tail=0, off */
#define NPU_RING_CTL_RESUME	(1u << 2)	/* WO: leave HALTED, go on */
#define NPU_RING_STATUS		0x18	/* RO: NPU_RING_STS_* */
#define NPU_RING_STS_IDLE	(1u << 0)	/* head == tail, nothing running */
#define NPU_RING_STS_HALTED	(1u << 1)	/* stopped by an error */
#define NPU_RING_STS_ENABLED	(1u << 2)
#define NPU_RING_KIND		0x1c	/* RO: NPU_RING_KIND_* */
#define NPU_RING_KIND_COMPUTE	0
#define NPU_RING_KIND_COPY	1
#define NPU_RING_FENCE		0x20	/* RO: last fence seqno written */
#define NPU_RING_CONTEXT	0x24	/* RO: current context id */
#define NPU_RING_ERROR		0x28	/* RO: NPU_ERR_* of the halt */
#define NPU_RING_ERROR_CTX	0x2c	/* RO: context id at the error */
#define NPU_RING_FAULT_LO	0x30	/* RO: faulting address (VA or PA) */
#define NPU_RING_FAULT_HI	0x34
#define NPU_RING_ERROR_INFO	0x38	/* RO: opcode/kernel id at the error */
/* Counters (RO, 64 bit, reset with the device) */
#define NPU_RING_BUSY_LO	0x40	/* ns spent executing commands, the
					 * executing one's so far included */
#define NPU_RING_BUSY_HI	0x44
#define NPU_RING_CMDS_LO	0x48	/* commands completed */
#define NPU_RING_CMDS_HI	0x4c
#define NPU_RING_BYTES_LO	0x50	/* bytes moved or touched */
#define NPU_RING_BYTES_HI	0x54
#define NPU_RING_OPS_LO		0x58	/* arithmetic operations */
#define NPU_RING_OPS_HI		0x5c
/* Where a compute-unit fault happened (RO, valid when ERROR is a fault of a
 * LAUNCH_CODE thread; FAULT holds the data address or the PC).
 */
#define NPU_RING_FAULT_PC_LO	0x60	/* PC of the faulting instruction */
#define NPU_RING_FAULT_PC_HI	0x64
#define NPU_RING_FAULT_BLOCK	0x68	/* linear block index in the grid */
#define NPU_RING_FAULT_THREAD	0x6c	/* linear thread index in the block */
#define NPU_RING_FAULT_UNIT	0x70	/* compute unit */
#define NPU_RING_FAULT_ENTRY_LO	0x78	/* entry VA of the faulting launch */
#define NPU_RING_FAULT_ENTRY_HI	0x7c

#define NPU_RING_SIZE_MIN	4096u
#define NPU_RING_SIZE_MAX	(1u << 20)

/* Error causes (NPU_RING_ERROR). */
enum npu_error {
	NPU_ERR_NONE = 0,
	NPU_ERR_BAD_OPCODE = 1,		/* unknown packet opcode */
	NPU_ERR_BAD_PACKET = 2,		/* bad length, flags or field */
	NPU_ERR_PRIVILEGED = 3,		/* privileged packet in an IB */
	NPU_ERR_MMU_FAULT = 4,		/* VA not mapped */
	NPU_ERR_MMU_WRITE = 5,		/* write to a read-only page */
	NPU_ERR_BAD_DMA = 6,		/* physical address not guest RAM */
	NPU_ERR_DEVMEM_RANGE = 7,	/* PTE points past device memory */
	NPU_ERR_BAD_KERNEL = 8,		/* unknown kernel id */
	NPU_ERR_BAD_ARGS = 9,		/* kernel arguments out of range */
	NPU_ERR_RING_CONFIG = 10,	/* bad ring base/size/tail */
	NPU_ERR_NO_CONTEXT = 11,	/* user packet before SET_CONTEXT */
	NPU_ERR_KERNEL_FAULT = 12,	/* the fault test kernel */
	/* faults of LAUNCH_CODE threads (FAULT_PC/BLOCK/THREAD/UNIT say where) */
	NPU_ERR_CU_ILLEGAL = 13,	/* illegal or privileged instruction */
	NPU_ERR_CU_MISALIGNED = 14,	/* misaligned PC, load, store or AMO */
	NPU_ERR_CU_LOCAL_RANGE = 15,	/* outside scratchpad, stack or params */
	NPU_ERR_CU_BREAK = 16,		/* EBREAK */
	NPU_ERR_STOPPED = 17,		/* user queue stopped by UQ_CMD STOP */
	NPU_ERR_COUNT
};

/* ------------------------------------------------------------------------
 * Command packets. Every packet starts with a 32-bit header; the whole
 * packet is NPU_PKT_LEN(header) dwords long (header included) and packets are
 * dword aligned. All addresses in user packets are device virtual addresses
 * (translated by the MMU in the ring's current context); addresses in
 * privileged packets are guest-physical.
 */
#define NPU_PKT_HDR(op, flags, ndw) \
	((uint32_t)(op) | ((uint32_t)(flags) << 8) | ((uint32_t)(ndw) << 16))
#define NPU_PKT_OP(h)		((h) & 0xff)
#define NPU_PKT_FLAGS(h)	(((h) >> 8) & 0xff)
#define NPU_PKT_LEN(h)		((h) >> 16)

enum npu_opcode {
	/* unprivileged: allowed in rings and indirect buffers */
	NPU_OP_NOP = 0x00,
	NPU_OP_COPY = 0x10,
	NPU_OP_FILL = 0x11,
	NPU_OP_LAUNCH = 0x12,
	NPU_OP_TIMESTAMP = 0x13,
	NPU_OP_SEM_WAIT = 0x14,
	NPU_OP_SEM_SIGNAL = 0x15,
	NPU_OP_LAUNCH_CODE = 0x16,
	NPU_OP_LAUNCH_CODE_SHORT = 0x17,
	NPU_OP_SIGNAL = 0x18,
	NPU_OP_WAIT_MEM64 = 0x19,
	/* privileged: ring only, refused in an indirect buffer */
	NPU_OP_INDIRECT = 0x80,
	NPU_OP_SET_CONTEXT = 0x81,
	NPU_OP_FENCE = 0x82,
	NPU_OP_RING_CTRL = 0x83,
};

#define NPU_OP_IS_PRIVILEGED(op)	((op) & 0x80)

/* NOP: header only, or longer to pad (contents ignored). */

/* COPY: size bytes from src to dst (any mix of host and device memory). */
struct npu_pkt_copy {
	uint32_t header;	/* NPU_OP_COPY, 8 dwords */
	uint32_t reserved;
	uint64_t src;
	uint64_t dst;
	uint64_t size;
};

/* FILL: size bytes at dst (multiple of 4) with the 32-bit value. */
struct npu_pkt_fill {
	uint32_t header;	/* NPU_OP_FILL, 6 dwords */
	uint32_t value;
	uint64_t dst;
	uint64_t size;
};

/* LAUNCH: run built-in kernel over grid_x*grid_y*grid_z blocks. */
#define NPU_LAUNCH_MAX_ARGS	16
struct npu_pkt_launch {
	uint32_t header;	/* NPU_OP_LAUNCH, 6 + 2 * nargs dwords */
	uint32_t kernel;	/* enum npu_kernel */
	uint32_t grid[3];	/* each >= 1 */
	uint32_t nargs;		/* <= NPU_LAUNCH_MAX_ARGS */
	uint64_t args[];	/* addresses and scalars, per kernel */
};

/*
 * LAUNCH_CODE: run a RISC-V kernel (RV64G code at VA entry) over a grid of
 * blocks of threads on the compute units (Documentation/hw/npu.rst,
 * "Compute units"). Every field is validated before any block runs; a bad
 * field halts the ring with NPU_ERR_BAD_PACKET and FAULT = the address of
 * the field's first dword.
 */
#define NPU_CODE_MAX_ARGS	16
#define NPU_CODE_MAX_THREADS	1024	/* threads per block, upper bound */
#define NPU_CODE_MAX_STACK	(64u << 10)	/* stack bytes per thread */
#define NPU_CODE_MAX_PRINTF	(16u << 20)	/* printf buffer bytes */
#define NPU_CODE_MAX_TRACE	(256u << 20)	/* trace buffer bytes */
/* flags */
#define NPU_CODE_ITRACE		0x1	/* trace instructions of trace_block */
#define NPU_CODE_STATS_TENSOR	0x2	/* stats: struct npu_launch_stats_tensor
					 * follows struct npu_launch_stats */
#define NPU_CODE_FLAGS_ALL	0x3
struct npu_pkt_launch_code {
	uint32_t header;	/* NPU_OP_LAUNCH_CODE, 24 + 2 * nargs dwords */
	uint32_t flags;		/* NPU_CODE_* */
	uint64_t entry;		/* VA of the first instruction, 4-byte aligned */
	uint32_t grid[3];	/* blocks in x, y, z: each >= 1, product < 2^32 */
	uint32_t block[3];	/* threads per block: each >= 1, product <=
				 * NPU_REG_CU_THREADS */
	uint32_t scratch_bytes;	/* per block, <= NPU_REG_CU_SCRATCH */
	uint32_t stack_bytes;	/* per thread, multiple of 16,
				 * <= NPU_CODE_MAX_STACK */
	uint64_t stats;		/* VA of struct npu_launch_stats, 8-aligned,
				 * or 0 */
	uint64_t trace;		/* VA of the trace buffer, 8-aligned, or 0 */
	uint32_t trace_bytes;	/* size of the trace buffer,
				 * <= NPU_CODE_MAX_TRACE */
	uint32_t sample_period;	/* PC sampling: cycles between samples of a
				 * unit, 0 = off (needs trace) */
	uint32_t trace_block;	/* linear block index, with NPU_CODE_ITRACE */
	uint32_t nargs;		/* <= NPU_CODE_MAX_ARGS */
	uint64_t printf_buf;	/* VA of the printf buffer, 8-aligned, or 0 */
	uint32_t printf_bytes;	/* its size, <= NPU_CODE_MAX_PRINTF */
	uint32_t reserved;	/* must be 0 */
	uint64_t args[];	/* a0..a7 = args[0..7]; all at NPU_LOCAL_PARAMS */
};
#define NPU_PKT_LAUNCH_CODE_DW	24

/*
 * LAUNCH_CODE_SHORT: the launch as LAUNCH_CODE without statistics, trace
 * and printf: dwords 0-11 are LAUNCH_CODE's (flags must be 0), then the
 * arguments; nargs = (ndw - 12) / 2. The common launch, in half the bytes.
 */
struct npu_pkt_launch_code_short {
	uint32_t header;	/* NPU_OP_LAUNCH_CODE_SHORT, 12 + 2 * nargs
				 * dwords */
	uint32_t flags;		/* 0 */
	uint64_t entry;
	uint32_t grid[3];
	uint32_t block[3];
	uint32_t scratch_bytes;
	uint32_t stack_bytes;
	uint64_t args[];
};
#define NPU_PKT_LAUNCH_CODE_SHORT_DW	12

/* TIMESTAMP: write the 64-bit device clock to dst when all earlier
 * commands of the ring have completed.
 */
struct npu_pkt_timestamp {
	uint32_t header;	/* NPU_OP_TIMESTAMP, 4 dwords */
	uint32_t reserved;
	uint64_t dst;
};

/* SEM_WAIT: stall the ring until the 32-bit word at addr, compared wrap-safe,
 * is >= value. SEM_SIGNAL: write value to addr (after earlier commands).
 */
struct npu_pkt_sem {
	uint32_t header;	/* NPU_OP_SEM_WAIT / _SIGNAL, 4 dwords */
	uint32_t value;
	uint64_t addr;
};

/*
 * SIGNAL: when all earlier commands have completed, write the device clock
 * to the memory signal's timestamp, then value to its value, then (after a
 * full barrier) read armed and wake_value: armed non-zero and the signal's
 * value now >= wake_value appends a SIGNAL event and raises the user-queue
 * event vector (if an event ring is programmed). addr is the VA of a
 * struct npu_signal, 32-byte aligned.
 */
struct npu_pkt_signal {
	uint32_t header;	/* NPU_OP_SIGNAL, 6 dwords */
	uint32_t reserved;
	uint64_t addr;
	uint64_t value;
};
#define NPU_SIGNAL_ALIGN	32
/* SIGNAL header flag: leave a value greater than value as it is (no
 * write), for a timeline that several queues and the host write and that
 * must only move forward; armed is read either way (the value compared
 * with wake_value is then the one left). */
#define NPU_SIGNAL_MAX		0x01
struct npu_signal {
	uint64_t value;		/* the signalled value */
	uint64_t timestamp;	/* device clock when value was written */
	uint32_t armed;		/* non-zero: a waiter sleeps on it */
	uint32_t reserved;	/* not touched by the device */
	uint64_t wake_value;	/* while armed: the lowest value a waiter
				 * sleeps for; a smaller one raises no event */
};

/* WAIT_MEM64: stall until the u64 at addr (8-byte aligned) is >= value,
 * unsigned. On a user queue the wait yields the queue's engine.
 */
struct npu_pkt_wait_mem64 {
	uint32_t header;	/* NPU_OP_WAIT_MEM64, 6 dwords */
	uint32_t reserved;
	uint64_t addr;
	uint64_t value;
};
/* WAIT_MEM64 header flag: the owner rings the queue's doorbell (any
 * value) after each write to the word, so a user queue looks at the word
 * on its doorbell writes and otherwise only every uq-doorbell-poll-us (the
 * hw spec's "Waits yield"). No effect on rings. */
#define NPU_WAIT_DOORBELL	0x01
#define NPU_WAIT_DOORBELL_VERSION 0x00010002	/* VERSION that has it */

/* INDIRECT (ring only): execute size bytes of packets at VA addr in the
 * current context. IBs do not nest.
 */
struct npu_pkt_indirect {
	uint32_t header;	/* NPU_OP_INDIRECT, 4 dwords */
	uint32_t size;		/* bytes, multiple of 4, <= NPU_IB_MAX_SIZE */
	uint64_t addr;
};
#define NPU_IB_MAX_SIZE		(1u << 20)

/* SET_CONTEXT (ring only): later user packets run in context ctx whose page
 * table root (level 2 table, guest-physical, 4 KiB aligned) is pt_root.
 * pt_root == 0 means "no context": user packets then fault.
 */
struct npu_pkt_set_context {
	uint32_t header;	/* NPU_OP_SET_CONTEXT, 4 dwords */
	uint32_t ctx;
	uint64_t pt_root;
};

/* FENCE (ring only): when all earlier commands completed, write seqno to the
 * 32-bit word at guest-physical addr and to NPU_RING_FENCE, then raise the
 * ring's MSI-X vector if NPU_FENCE_IRQ is set in the header flags.
 */
#define NPU_FENCE_IRQ		0x01
struct npu_pkt_fence {
	uint32_t header;	/* NPU_OP_FENCE, 4 dwords */
	uint32_t seqno;
	uint64_t addr;
};

/* RING_CTRL (ring only): flags NPU_RING_CTRL_FLUSH_TLB drops the ring's
 * cached translations. NPU_REG_MMU_INVALIDATE does so for every ring.
 */
#define NPU_RING_CTRL_FLUSH_TLB	0x01
struct npu_pkt_ring_ctrl {
	uint32_t header;	/* NPU_OP_RING_CTRL, 1 dword */
};

/* Wrap-safe sequence comparison: a is at or after b. */
static inline int npu_seqno_passed(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) >= 0;
}

/* ------------------------------------------------------------------------
 * User queues (Documentation/hw/npu.rst, "User queues"): registers in BAR0,
 * a descriptor table and an event ring in guest RAM, doorbells in BAR1.
 */
#define NPU_REG_UQ_MAX_QUEUES	0x2000	/* RO: uq-max-queues */
#define NPU_REG_UQ_ENGINES	0x2004	/* RO: compute [7:0], copy [15:8] */
#define NPU_UQ_ENGINES_COMPUTE(v)	((v) & 0xff)
#define NPU_UQ_ENGINES_COPY(v)		(((v) >> 8) & 0xff)
#define NPU_REG_UQ_DOORBELL_PAGES 0x2008	/* RO: pages of BAR1 */
#define NPU_REG_UQ_TIMESLICE_US	0x200c	/* RO */
#define NPU_REG_UQ_TABLE_BASE_LO 0x2010	/* RW: descriptor table, GPA, 4K */
#define NPU_REG_UQ_TABLE_BASE_HI 0x2014
#define NPU_REG_UQ_TABLE_ENTRIES 0x2018	/* RW: <= UQ_MAX_QUEUES */
#define NPU_REG_UQ_SWITCH_NS	0x201c	/* RO */
#define NPU_REG_UQ_EVENT_BASE_LO 0x2020	/* RW: event ring, GPA, 4K */
#define NPU_REG_UQ_EVENT_BASE_HI 0x2024
#define NPU_REG_UQ_EVENT_SIZE	0x2028	/* RW: bytes, power of 2, 4K..1M */
#define NPU_REG_UQ_EVENT_HEAD	0x202c	/* RW: next record the driver reads */
#define NPU_REG_UQ_EVENT_TAIL	0x2030	/* RO: after the last record written */
#define NPU_REG_UQ_EVENT_STATUS	0x2034	/* RW1C: NPU_UQ_EVENT_STS_* */
#define NPU_UQ_EVENT_STS_OVERFLOW	(1u << 0)
#define NPU_REG_UQ_CMD		0x2038	/* WO: op [7:0], queue [31:8] */
#define NPU_UQ_CMD(op, q)	((uint32_t)(op) | ((uint32_t)(q) << 8))
#define NPU_REG_UQ_CMD_STATUS	0x203c	/* RO: NPU_ERR_* of the last command */
#define NPU_REG_UQ_ENGINE_QUEUE(e) (0x2100 + (e) * 4) /* RO: queue or ~0 */
#define NPU_UQ_MAX_ENGINES	16	/* per class */
#define NPU_UQ_ENGINE_IDLE	0xffffffffu
/*
 * Engine counters (RO, 64 bit, reset with the device): 32 bytes at
 * UQ_ENGINE_CNT(e), compute engines first, laid out as a ring's
 * BUSY..OPS. They count whatever queue the engine ran, copies on a
 * compute-class queue included.
 */
#define NPU_REG_UQ_ENGINE_CNT(e) (0x2200 + (e) * 0x20)
#define NPU_UQ_ENGINE_BUSY_LO	0x00	/* ns executing packets, the
					 * executing one's so far included */
#define NPU_UQ_ENGINE_CMDS_LO	0x08	/* packets completed */
#define NPU_UQ_ENGINE_BYTES_LO	0x10	/* bytes moved or touched */
#define NPU_UQ_ENGINE_OPS_LO	0x18	/* arithmetic operations */

#define NPU_UQ_EVENT_SIZE_MIN	4096u
#define NPU_UQ_EVENT_SIZE_MAX	(1u << 20)
#define NPU_UQ_RING_SIZE_MIN	4096u
#define NPU_UQ_RING_SIZE_MAX	(16u << 20)
#define NPU_UQ_DOORBELLS_PER_PAGE 512	/* 64-bit doorbells in a 4K page */

enum npu_uq_cmd {
	NPU_UQ_CMD_MAP = 1,
	NPU_UQ_CMD_UNMAP = 2,
	NPU_UQ_CMD_SUSPEND = 3,
	NPU_UQ_CMD_RUN = 4,
	NPU_UQ_CMD_STOP = 5,
	NPU_UQ_CMD_RESET = 6,
	NPU_UQ_CMD_CONTINUE = 7,
	NPU_UQ_CMD_KICK = 8,
};

/*
 * Queue descriptor: NPU_UQD_SIZE bytes at UQ_TABLE_BASE + NPU_UQD_SIZE * q.
 * The driver writes 0x00..0x3f while the queue is unmapped (IRQ_RPTR at
 * any time); the device writes the state from WPTR on.
 */
#define NPU_UQD_SIZE		256
#define NPU_UQD_RING_VA		0x00	/* u64: ring VA, 4K aligned */
#define NPU_UQD_RING_SIZE	0x08	/* u32: power of 2, 4K..16M */
#define NPU_UQD_CONFIG		0x0c	/* u32: NPU_UQ_CONFIG_* */
#define NPU_UQ_CONFIG_COPY		(1u << 0)	/* class: copy */
#define NPU_UQ_CONFIG_PRIO(c)		(((c) >> 1) & 3)
#define NPU_UQ_CONFIG_PRIO_SHIFT	1
#define NPU_UQ_CONFIG_ALL		0x7u
#define NPU_UQ_PRIO_LOW			0
#define NPU_UQ_PRIO_NORMAL		1
#define NPU_UQ_PRIO_HIGH		2
#define NPU_UQ_PRIOS			3
#define NPU_UQD_WB_VA		0x10	/* u64: write-back block, 64-aligned */
#define NPU_UQD_CTX		0x18	/* u32: context id, non-zero */
#define NPU_UQD_DOORBELL	0x1c	/* u32: page [20:9], doorbell [8:0] */
#define NPU_UQ_DOORBELL(page, d)	(((uint32_t)(page) << 9) | (d))
#define NPU_UQD_PT_ROOT		0x20	/* u64: page-table root, GPA, 4K */
#define NPU_UQD_IRQ_RPTR	0x28	/* u64: PROGRESS event at this rptr */
#define NPU_UQD_WPTR		0x30	/* u64: last doorbell value accepted */
#define NPU_UQD_RPTR		0x38	/* u64: bytes of packets completed */
#define NPU_UQD_STATUS		0x40	/* u32: NPU_UQ_STS_* */
#define NPU_UQD_ERROR		0x44	/* u32: NPU_ERR_* of the last halt */
#define NPU_UQD_FAULT		0x48	/* u64: as the ring's FAULT */
#define NPU_UQD_ERROR_INFO	0x50	/* u32 */
#define NPU_UQD_FAULT_BLOCK	0x54	/* u32 */
#define NPU_UQD_FAULT_PC	0x58	/* u64 */
#define NPU_UQD_FAULT_THREAD	0x60	/* u32 */
#define NPU_UQD_FAULT_UNIT	0x64	/* u32 */
#define NPU_UQD_FAULT_ENTRY	0x68	/* u64 */
#define NPU_UQD_IB_VA		0x70	/* u64: IB the queue is inside, or 0 */
#define NPU_UQD_IB_SIZE		0x78	/* u32 */
#define NPU_UQD_IB_OFFSET	0x7c	/* u32: offset of its next packet */
#define NPU_UQD_PROGRESS_NS	0x80	/* u64: clock at the last completion */
#define NPU_UQD_BUSY_NS		0x88	/* u64 */
#define NPU_UQD_CMDS		0x90	/* u64 */
#define NPU_UQD_BYTES		0x98	/* u64 */
#define NPU_UQD_OPS		0xa0	/* u64 */
#define NPU_UQD_RUN_START_NS	0xa8	/* u64: clock at the executing packet's
					 * start, 0 when none */
#define NPU_UQD_STATE_SEQ	0xb0	/* u32: odd while the device writes
					 * 0x30..0xaf */

/* Queue status, in the descriptor and in the write-back block. */
#define NPU_UQ_STS_MAPPED	(1u << 0)	/* in the scheduler */
#define NPU_UQ_STS_RUNNABLE	(1u << 1)	/* not suspended */
#define NPU_UQ_STS_IDLE		(1u << 2)	/* rptr == wptr, nothing runs */
#define NPU_UQ_STS_WAITING	(1u << 3)	/* at an unsatisfied wait */
#define NPU_UQ_STS_HALTED	(1u << 4)	/* by an error or STOP */
#define NPU_UQ_STS_RUNNING	(1u << 5)	/* on an engine now */
#define NPU_UQ_STS_WATCHED	(1u << 6)	/* the device reads the write-back
						 * block's wptr before it idles:
						 * no doorbell needed */

/* Write-back block: 64 bytes at wb_va, the owner's view. */
#define NPU_UQ_WB_SIZE		64
struct npu_uq_wb {
	uint64_t rptr;
	uint32_t status;	/* NPU_UQ_STS_* */
	uint32_t error;		/* NPU_ERR_* */
	uint64_t fault;
	uint32_t error_info;
	uint32_t reserved0;
	uint64_t progress_ns;
	uint64_t wptr;		/* owner: its write pointer (the device reads
				 * it while the queue is WATCHED) */
	uint64_t reserved1[2];
};
/* The device writes the write-back block up to wptr, never wptr itself. */
#define NPU_UQ_WB_DEVICE_BYTES	40

/* Event ring records (16 bytes) the device writes for the driver. */
enum npu_uq_event_kind {
	NPU_UQ_EVENT_SIGNAL = 1,	/* data = VA of the memory signal */
	NPU_UQ_EVENT_PROGRESS = 2,	/* data = rptr that reached irq_rptr */
	NPU_UQ_EVENT_HALT = 3,		/* data = error */
	NPU_UQ_EVENT_OFF = 4,		/* a delayed SUSPEND/UNMAP took effect */
};
#define NPU_UQ_EVENT_RING	0x80000000u	/* queue: SIGNAL on ring r */
struct npu_uq_event {
	uint8_t kind;		/* enum npu_uq_event_kind */
	uint8_t flags;
	uint16_t ctx;
	uint32_t queue;		/* queue index, or NPU_UQ_EVENT_RING | r */
	uint64_t data;
};

/* ------------------------------------------------------------------------
 * MMU: 3-level page tables of 512 64-bit entries, 4 KiB pages, 39-bit VA.
 * Level 2 (root) is indexed by VA[38:30], level 1 by VA[29:21], level 0 by
 * VA[20:12]. A table entry holds the guest-physical address of the next
 * table. A leaf (level 0) entry holds a guest-physical page address, or with
 * NPU_PTE_DEVMEM an offset into device memory.
 */
#define NPU_PAGE_SHIFT		12
#define NPU_PAGE_SIZE		(1ull << NPU_PAGE_SHIFT)
#define NPU_VA_BITS		39
#define NPU_PT_ENTRIES		512
#define NPU_PT_INDEX(va, lvl)	(((va) >> (NPU_PAGE_SHIFT + 9 * (lvl))) & 0x1ff)

#define NPU_PTE_VALID		(1ull << 0)
#define NPU_PTE_WRITE		(1ull << 1)	/* leaf: writable */
#define NPU_PTE_DEVMEM		(1ull << 2)	/* leaf: device memory */
#define NPU_PTE_ADDR_MASK	0x000ffffffffff000ull

/* ------------------------------------------------------------------------
 * Diagnostic kernels of the LAUNCH packet (arguments in npu_pkt_launch.args,
 * 64-bit each). They compute nothing: computation is LAUNCH_CODE (the
 * built-in math is libnpu's kernel library, code like any user's). They
 * exist for the driver's and the device's tests: a cheapest job, units
 * busy for an exact time, a hung unit, a faulting kernel. Any other id
 * fails BAD_KERNEL.
 */
enum npu_kernel {
	NPU_KERNEL_NOP = 0,		/* no args: does nothing */
	NPU_KERNEL_TEST_SPIN = 0x100,	/* ns: occupy the units for ns */
	NPU_KERNEL_TEST_HANG = 0x101,	/* never finishes until reset */
	NPU_KERNEL_TEST_FAULT = 0x102,	/* va: read va (expected unmapped) */
};

/* ------------------------------------------------------------------------
 * Compute units: the programmer's model of a LAUNCH_CODE thread (RV64G:
 * RV64IMAFD, Zicsr, Zifencei; no compressed instructions; little endian).
 *
 * Addresses below 2^39 are device VAs translated by the MMU in the launch's
 * context. Above them, three local windows and the exit address:
 */
#define NPU_LOCAL_SCRATCH	0x10000000000ull /* block's scratchpad */
#define NPU_LOCAL_STACK		0x20000000000ull /* thread's stack; sp starts
						  * at its end */
#define NPU_LOCAL_PARAMS	0x30000000000ull /* launch args, read only */
#define NPU_LOCAL_WINDOW	0x10000000000ull /* size of each window */
#define NPU_EXIT_PC		0x40000000000ull /* ra at entry: the thread
						  * ends when it jumps here */

/* Read-only custom CSRs (csrr rd, csr). */
#define NPU_CSR_BLOCK_X		0xcc0	/* block index in the grid */
#define NPU_CSR_BLOCK_Y		0xcc1
#define NPU_CSR_BLOCK_Z		0xcc2
#define NPU_CSR_GRID_X		0xcc3	/* grid size in blocks */
#define NPU_CSR_GRID_Y		0xcc4
#define NPU_CSR_GRID_Z		0xcc5
#define NPU_CSR_THREAD_X	0xcc6	/* thread index in the block */
#define NPU_CSR_THREAD_Y	0xcc7
#define NPU_CSR_THREAD_Z	0xcc8
#define NPU_CSR_BDIM_X		0xcc9	/* block size in threads */
#define NPU_CSR_BDIM_Y		0xcca
#define NPU_CSR_BDIM_Z		0xccb
#define NPU_CSR_UNIT		0xccc	/* compute unit running the block */
#define NPU_CSR_SLOT		0xccd	/* hardware thread slot on the unit */
#define NPU_CSR_SCRATCH_BYTES	0xcce	/* the block's scratchpad size */
#define NPU_CSR_STACK_BYTES	0xccf	/* the thread's stack size */
#define NPU_CSR_NARGS		0xcd0	/* number of launch arguments */
/* Write-only custom CSRs (csrw csr, rs1); reads are illegal. */
#define NPU_CSR_BARRIER		0x8c0	/* wait for the block's threads */
#define NPU_CSR_PRINTF		0x8c1	/* append the record at VA rs1 */
/* Standard counters: cycle = the unit's cycle counter, time = the device
 * clock in ns, instret = instructions the thread retired.
 */

/* ------------------------------------------------------------------------
 * Tensor engine and tile DMA (Documentation/hw/npu.rst, "Tensor engine and
 * tile DMA"; issue 32), executed when NPU_FEATURE_TENSOR is set.
 *
 * Every thread has NPU_TILE_REGS tile registers of 16x16 32-bit cells;
 * 8- and 16-bit elements sit in a cell's low bits. All instructions are
 * R-type: funct7[31:25] rs2[24:20] rs1[19:15] funct3[14:12] rd[11:7]
 * opcode[6:0].
 */
#define NPU_TILE_REGS		8
#define NPU_TILE_DIM		16	/* rows = columns = the MMA's K */
#define NPU_TILE_CELLS		(NPU_TILE_DIM * NPU_TILE_DIM)

#define NPU_OPC_TENSOR		0x0b	/* custom-0 */
#define NPU_TENSOR_TLOAD	0	/* funct3: rd=td rs1=addr rs2=stride */
#define NPU_TENSOR_TSTORE	1	/* rd=ts (a source) rs1=addr rs2=stride */
#define NPU_TENSOR_TFILL	2	/* rd=td rs1=value rs2=0 */
#define NPU_TENSOR_TMMA		3	/* rd=tc rs1=ta rs2=tb: C += A x B */
#define NPU_TENSOR_TEW		4	/* rd=td rs1=ta rs2=tb: element-wise */

/* TLOAD/TSTORE funct7 = esize | trans << 2; TFILL funct7 = esize */
enum npu_tile_esize {
	NPU_TILE_E8 = 0,
	NPU_TILE_E16 = 1,
	NPU_TILE_E32 = 2,
};
#define NPU_TILE_TRANS		0x4	/* memory (r, c) <-> tile [c][r] */

/* TMMA funct7: the input type; f32 accumulators for the float types */
enum npu_mma_type {
	NPU_MMA_F16 = 0,
	NPU_MMA_BF16 = 1,
	NPU_MMA_F32 = 2,
	NPU_MMA_S8 = 3,		/* s8 x s8 -> s32, wrapping */
	NPU_MMA_S32 = 4,	/* s32 x s32 -> s32, wrapping */
	NPU_MMA_TYPES
};

/* Tensor-pipe cycles one TMMA (16x16x16, 4096 MAC) of a type occupies:
 * one rank-1 update per cycle for f16/bf16, four cycles for the wider f32
 * and s32 multipliers, two updates per cycle for s8. Peak MMA rate per
 * unit = 4096 / NPU_MMA_CYCLES(type) MAC per unit cycle. */
#define NPU_MMA_CYCLES(type) \
	((type) == NPU_MMA_S8 ? 8u : \
	 (type) == NPU_MMA_F32 || (type) == NPU_MMA_S32 ? 64u : 16u)
#define NPU_MMA_MACS		(NPU_TILE_DIM * NPU_TILE_DIM * NPU_TILE_DIM)

/* TEW funct7: element-wise operations on f32 tiles, RNE, canonical NaN */
enum npu_tew_op {
	NPU_TEW_ADD = 0,	/* a + b */
	NPU_TEW_SUB = 1,	/* a - b */
	NPU_TEW_MUL = 2,	/* a * b */
	NPU_TEW_MAX = 3,	/* fmax.s(a, b) */
	NPU_TEW_ADDROW = 4,	/* a[r][c] + b[0][c] (bias) */
	NPU_TEW_RELU = 5,	/* fmax.s(a, +0); rs2 = 0 */
	NPU_TEW_EXP = 6,	/* e^a, correctly rounded; rs2 = 0 */
	NPU_TEW_RCP = 7,	/* 1 / a; rs2 = 0 */
	NPU_TEW_ROWMAX = 8,	/* max of row r, in every column; rs2 = 0 */
	NPU_TEW_ROWSUM = 9,	/* row r summed in column order; rs2 = 0 */
	NPU_TEW_CVTF16 = 10,	/* to binary16 bits, RNE; rs2 = 0 */
	NPU_TEW_CVTBF16 = 11,	/* to bfloat16 bits, RNE; rs2 = 0 */
	NPU_TEW_OPS
};

#define NPU_OPC_TDMA		0x2b	/* custom-1 */
#define NPU_TDMA_ISSUE		0	/* funct3: rs1 = descriptor address */
#define NPU_TDMA_WAIT		1	/* rd = count, rs1 = barrier, rs2 = target */
#define NPU_TDMA_INFLIGHT	4	/* copies per unit issued, not completed */
#define NPU_TDMA_MAX_ROWS	(1u << 20) /* size[1] * size[2] above: BAD_ARGS */

/*
 * One tile DMA copy: for p < size[2], r < size[1], b < size[0] (p
 * outermost) the byte at mem + p*mem_stride[1] + r*mem_stride[0] + b moves
 * to (or, with NPU_TDMA_TO_MEM, from) scratch + p*scratch_stride[1] +
 * r*scratch_stride[0] + b. 8-byte aligned, in the scratchpad or the stack;
 * read at TDMA.ISSUE.
 */
#define NPU_TDMA_TO_MEM		0x1	/* scratchpad -> memory */
struct npu_tdma_desc {
	uint64_t mem;			/* device VA, < 2^39 */
	uint64_t scratch;		/* address in the scratchpad window */
	uint64_t barrier;		/* struct npu_tdma_barrier, scratchpad */
	uint64_t mem_stride[2];		/* bytes between rows, planes */
	uint32_t scratch_stride[2];	/* bytes between rows, planes */
	uint32_t size[3];		/* bytes per row, rows, planes */
	uint32_t flags;			/* NPU_TDMA_TO_MEM */
};

/* Barrier word, 8-byte aligned in the scratchpad: count grows by one when
 * a copy naming it completes (wrapping; compare as signed differences). */
struct npu_tdma_barrier {
	uint32_t count;
	uint32_t reserved;	/* never written by the device */
};

/*
 * Stall reasons, Nsight Compute's names: per launch, every thread-cycle of a
 * resident thread is counted under exactly one of them.
 */
enum npu_stall {
	NPU_STALL_SELECTED = 0,		/* issued an instruction */
	NPU_STALL_NOT_SELECTED = 1,	/* ready, another thread issued */
	NPU_STALL_WAIT = 2,		/* fixed-latency dependency */
	NPU_STALL_SHORT_SCOREBOARD = 3,	/* scratchpad or div/sqrt result */
	NPU_STALL_LONG_SCOREBOARD = 4,	/* device or host memory result */
	NPU_STALL_MATH_PIPE_THROTTLE = 5, /* divide/sqrt unit busy */
	NPU_STALL_LG_THROTTLE = 6,	/* memory request queue full */
	NPU_STALL_BARRIER = 7,		/* waiting at the block barrier */
	NPU_STALL_BRANCH_RESOLVING = 8,	/* taken branch or jump */
	NPU_STALL_COUNT,		/* the reasons in npu_launch_stats.stall[] */
	/* tile port busy, or TDMA.ISSUE with NPU_TDMA_INFLIGHT copies in
	 * flight; in PC samples (not in stall[]: see npu.rst) */
	NPU_STALL_MIO_THROTTLE = 9,
};

/* Memory spaces for byte counters. */
enum npu_space {
	NPU_SPACE_SCRATCH = 0,		/* the block's scratchpad */
	NPU_SPACE_STACK = 1,		/* thread stacks and params */
	NPU_SPACE_DEVICE = 2,		/* device memory */
	NPU_SPACE_HOST = 3,		/* host memory over the link */
	NPU_SPACE_COUNT
};

/* Per-launch statistics, written at the launch's end to its stats VA. */
struct npu_launch_stats {
	uint64_t start_ns;	/* device clock when the first block started */
	uint64_t end_ns;	/* ... and when the last block ended */
	uint64_t start_cycle;	/* device cycle when the first block started */
	uint64_t cycles;	/* unit cycles from first start to last end */
	uint64_t instructions;	/* retired, all threads */
	uint64_t blocks;
	uint64_t thread_cycles;	/* resident thread-slot cycles (sum) */
	uint64_t unit_cycles;	/* unit cycles with a block of the launch */
	uint64_t stall[NPU_STALL_COUNT];	/* thread-cycles by reason */
	uint64_t bytes_read[NPU_SPACE_COUNT];
	uint64_t bytes_written[NPU_SPACE_COUNT];
	uint64_t trace_records;	/* records written to the trace buffer */
	uint64_t trace_lost;	/* records dropped: buffer full */
	uint64_t printf_records;
	uint64_t printf_lost;
};

/*
 * The tensor engine's counters, written right after struct
 * npu_launch_stats when the launch has NPU_CODE_STATS_TENSOR (a reader
 * that did not ask keeps its 232-byte record).
 */
struct npu_launch_stats_tensor {
	uint64_t stall_mio_throttle;	/* thread-cycles: stall[] + this =
					 * thread_cycles */
	uint64_t tensor_cycles;		/* units' tensor pipe busy cycles */
	uint64_t mma[NPU_MMA_TYPES];	/* TMMA instructions by type */
	uint64_t tdma_copies;		/* TDMA.ISSUEs that issued */
	uint64_t tdma_bytes_read;	/* memory to scratchpad */
	uint64_t tdma_bytes_written;	/* scratchpad to memory */
	uint64_t l2_hit_sectors;	/* of the copies' device-memory reads
					 * (32-byte sectors), those the L2
					 * served */
};

/*
 * Trace buffer: a header, then records. The device fills it from the
 * start; a record that does not fit is counted in lost, never written.
 */
#define NPU_CU_TRACE_MAGIC	0x5254504e	/* "NPTR" */
struct npu_cu_trace_header {
	uint32_t magic;
	uint32_t record_bytes;	/* sizeof(struct npu_cu_trace_record) */
	uint64_t records;
	uint64_t lost;
};
#define NPU_CU_TRACE_SAMPLE	1	/* PC sample of a resident thread */
#define NPU_CU_TRACE_INSN	2	/* one instruction of trace_block */
struct npu_cu_trace_record {
	uint64_t cycle;		/* unit cycle */
	uint64_t pc;
	uint64_t addr;		/* INSN: memory address accessed, else 0 */
	uint32_t insn;		/* INSN: instruction word */
	uint32_t block;		/* linear block index */
	uint16_t thread;	/* linear thread index in the block */
	uint8_t unit;
	uint8_t kind;		/* NPU_CU_TRACE_* */
	uint8_t stall;		/* SAMPLE: enum npu_stall of the thread */
	uint8_t reserved[3];
};

/*
 * printf buffer: a header, then records. A thread writes NPU_CSR_PRINTF
 * with the VA of a record it built (its first dword = the record's size in
 * bytes, 8..NPU_PRINTF_MAX_RECORD, a multiple of 8); the device appends
 * the thread's record after an npu_printf_record header, in the order
 * the writes retire. A record that does not fit is counted in lost.
 */
#define NPU_PRINTF_MAX_RECORD	512
struct npu_printf_header {
	uint32_t used;		/* bytes of records after this header */
	uint32_t lost;		/* records dropped: buffer full */
};
struct npu_printf_record {
	uint32_t bytes;		/* this header plus the payload */
	uint32_t block;		/* linear block index */
	uint32_t thread;	/* linear thread index in the block */
	uint32_t reserved;
	/* then the thread's record, bytes - 16 bytes */
};

#endif /* NPU_HW_H */
