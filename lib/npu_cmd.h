/* SPDX-License-Identifier: MIT */
/*
 * npu_cmd.h - the command writer: every packet libnpu queues is written
 * through these calls (npu_cmd.c), into a buffer the caller owns.
 *
 * A writer is a buffer (host mapping and device VA) with a capacity. Each
 * call appends one packet (or the few packets of one operation) and
 * returns 0, or -ENOSPC when it does not fit: then nothing of it is
 * written and the writer is marked full, so that a caller may write a
 * series and look once at the end (npu_cmdw_full). Packets are 4-byte
 * aligned; the 64-bit fields of every packet but an inline NOP are at
 * 8-byte offsets when the buffer and every packet before them are.
 *
 * The packet layouts come from include/npu_hw.h alone. The writer knows
 * nothing of where the buffer lives: today it is a slice of a stream's
 * command ring or of a graph's command slot, handed to the SUBMIT ioctl;
 * a user queue would hand it a slice of its own ring.
 */
#ifndef NPU_CMD_H
#define NPU_CMD_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "npu_hw.h"

struct npu_cmdw {
	uint8_t *buf;		/* host view of the buffer */
	uint64_t va;		/* device VA of buf[0] */
	uint32_t len;		/* bytes written */
	uint32_t cap;		/* bytes buf holds */
	bool full;		/* a packet did not fit (and was not written) */
};

static inline void npu_cmdw_init(struct npu_cmdw *w, void *buf, uint64_t va,
				 uint32_t cap)
{
	w->buf = buf;
	w->va = va;
	w->len = 0;
	w->cap = cap;
	w->full = false;
}

static inline bool npu_cmdw_full(const struct npu_cmdw *w)
{
	return w->full;
}

/* The device VA the next packet goes to. */
static inline uint64_t npu_cmdw_va(const struct npu_cmdw *w)
{
	return w->va + w->len;
}

/* Room for bytes (rounded up to 4) at the end, for a packet written in
 * place: NULL (and full) when they do not fit. */
static inline void *npu_cmd_reserve(struct npu_cmdw *w, uint32_t bytes)
{
	uint32_t n = (bytes + 3) & ~3u;
	void *p;

	if (__builtin_expect(n > w->cap - w->len || w->full, 0)) {
		w->full = true;
		return NULL;
	}
	p = w->buf + w->len;
	w->len += n;
	return p;
}

/* Bytes the packets of the calls below take at most. */
#define NPU_CMD_COPY_BYTES	((uint32_t)sizeof(struct npu_pkt_copy))
#define NPU_CMD_FILL_BYTES	((uint32_t)sizeof(struct npu_pkt_fill))
#define NPU_CMD_TS_BYTES	((uint32_t)sizeof(struct npu_pkt_timestamp))
#define NPU_CMD_SEM_BYTES	((uint32_t)sizeof(struct npu_pkt_sem))
#define NPU_CMD_SIGNAL_BYTES	((uint32_t)sizeof(struct npu_pkt_signal))
#define NPU_CMD_WAIT64_BYTES	((uint32_t)sizeof(struct npu_pkt_wait_mem64))
#define NPU_CMD_INDIRECT_BYTES	((uint32_t)sizeof(struct npu_pkt_indirect))
/* n bytes inline (npu_cmd_inline) */
#define NPU_CMD_INLINE_BYTES(n)	((((2 + ((n) + 3) / 4) + 1) & ~1u) * 4)
/* a memset: an inline word and a COPY on each unaligned end, a FILL */
#define NPU_CMD_MEMSET_BYTES \
	(2 * (NPU_CMD_INLINE_BYTES(3) + NPU_CMD_COPY_BYTES) + NPU_CMD_FILL_BYTES)
#define NPU_CMD_LAUNCH_BYTES(nargs) \
	((uint32_t)sizeof(struct npu_pkt_launch) + 8 * (nargs))
#define NPU_CMD_LAUNCH_CODE_BYTES(nargs) \
	((uint32_t)sizeof(struct npu_pkt_launch_code) + 8 * (nargs))
#define NPU_CMD_LAUNCH_CODE_SHORT_BYTES(nargs) \
	((uint32_t)sizeof(struct npu_pkt_launch_code_short) + 8 * (nargs))

/* COPY of size bytes from src to dst. */
int npu_cmd_copy(struct npu_cmdw *w, uint64_t src, uint64_t dst,
		 uint64_t size);
/* FILL of size bytes (a multiple of 4) at dst with the word value. */
int npu_cmd_fill(struct npu_cmdw *w, uint64_t dst, uint32_t value,
		 uint64_t size);
/* n bytes of data inside a NOP (an even number of dwords, so the packets
 * after it stay 8-aligned); *va is where the device sees them. */
int npu_cmd_inline(struct npu_cmdw *w, const void *data, uint32_t n,
		   uint64_t *va);
/* count bytes at dst set to the byte value: FILL for the aligned words,
 * inline bytes and a COPY for each unaligned end (at most
 * NPU_CMD_MEMSET_BYTES). */
int npu_cmd_memset(struct npu_cmdw *w, uint64_t dst, uint8_t value,
		   uint64_t count);
/* TIMESTAMP: the device clock to the 64-bit word at dst. */
int npu_cmd_timestamp(struct npu_cmdw *w, uint64_t dst);
/* SEM_WAIT (the word at addr reaches value) or SEM_SIGNAL (value to it). */
int npu_cmd_sem_wait(struct npu_cmdw *w, uint64_t addr, uint32_t value);
int npu_cmd_sem_signal(struct npu_cmdw *w, uint64_t addr, uint32_t value);
/* SIGNAL: after every earlier packet, value (and the device clock) to the
 * memory signal (struct npu_signal) at addr. WAIT_MEM64: the u64 at addr
 * reaches value (flags: 0 or NPU_WAIT_DOORBELL). INDIRECT: the size bytes
 * of packets at addr. NOP: bytes (a multiple of 4, at least 4) of
 * padding. */
int npu_cmd_wait_mem64(struct npu_cmdw *w, uint64_t addr, uint64_t value,
		       uint32_t flags);
int npu_cmd_indirect(struct npu_cmdw *w, uint64_t addr, uint32_t size);
int npu_cmd_nop(struct npu_cmdw *w, uint32_t bytes);

/* SIGNAL and a built-in kernel's LAUNCH are written on every launch's
 * fast path (a user-queue stream's), so they are inline too (see below).
 * LAUNCH of built-in kernel over grid[3], nargs arguments. */
static inline int npu_cmd_launch(struct npu_cmdw *w, uint32_t kernel,
				 const uint32_t grid[3], const uint64_t *args,
				 uint32_t nargs)
{
	struct npu_pkt_launch *p;

	if (nargs > NPU_LAUNCH_MAX_ARGS) {
		w->full = true;		/* the packet cannot be written */
		return -EINVAL;
	}
	p = npu_cmd_reserve(w, NPU_CMD_LAUNCH_BYTES(nargs));
	if (!p)
		return -ENOSPC;
	p->header = NPU_PKT_HDR(NPU_OP_LAUNCH, 0, 6 + 2 * nargs);
	p->kernel = kernel;
	p->grid[0] = grid[0];
	p->grid[1] = grid[1];
	p->grid[2] = grid[2];
	p->nargs = nargs;
	if (nargs)
		memcpy(p->args, args, 8 * nargs);
	return 0;
}

static inline int npu_cmd_signal(struct npu_cmdw *w, uint64_t addr,
				 uint64_t value)
{
	struct npu_pkt_signal *p = npu_cmd_reserve(w, sizeof(*p));

	if (!p)
		return -ENOSPC;
	/* a stream's signal: its copy queue, or the host thread of a host
	 * function, may have written a later point already */
	p->header = NPU_PKT_HDR(NPU_OP_SIGNAL, NPU_SIGNAL_MAX, 6);
	p->reserved = 0;
	p->addr = addr;
	p->value = value;
	return 0;
}

/*
 * User kernels. Their launch packets are written on the launch path of
 * every user-kernel launch, field by field (a whole-struct copy becomes a
 * rep movs, slow under TCG), so these are inline.
 */

/* The head of a LAUNCH_CODE_SHORT packet of a kernel at entry taking
 * nargs arguments, with the fields that do not change between launches
 * (npu_ukernel_short fills the rest). */
static inline void npu_cmd_short_template(struct npu_pkt_launch_code_short *t,
					  uint64_t entry, uint32_t nargs,
					  uint32_t stack_bytes)
{
	memset(t, 0, sizeof(*t));
	t->header = NPU_PKT_HDR(NPU_OP_LAUNCH_CODE_SHORT, 0,
				NPU_PKT_LAUNCH_CODE_SHORT_DW + 2 * nargs);
	t->entry = entry;
	t->stack_bytes = stack_bytes;
}

/* A LAUNCH_CODE_SHORT packet from template t (npu_cmd_short_template)
 * with this launch's grid, block and scratch; returns where its nargs
 * arguments go, or NULL (full). */
static inline __attribute__((always_inline)) uint64_t *
npu_cmd_launch_code_short(struct npu_cmdw *w,
			  const struct npu_pkt_launch_code_short *t,
			  const uint32_t grid[3], const uint32_t block[3],
			  uint32_t scratch_bytes)
{
	uint32_t bytes = 4 * NPU_PKT_LEN(t->header);
	struct npu_pkt_launch_code_short *p = npu_cmd_reserve(w, bytes);

	if (!p)
		return NULL;
	memcpy(p, t, offsetof(struct npu_pkt_launch_code_short, grid));
	p->grid[0] = grid[0];
	p->grid[1] = grid[1];
	p->grid[2] = grid[2];
	p->block[0] = block[0];
	p->block[1] = block[1];
	p->block[2] = block[2];
	p->scratch_bytes = scratch_bytes;
	p->stack_bytes = t->stack_bytes;
	return p->args;
}

/* A full LAUNCH_CODE packet: extra's printf, statistics and trace fields,
 * the kernel at entry with nargs arguments; returns where the arguments
 * go, or NULL (full). */
static inline __attribute__((always_inline)) uint64_t *
npu_cmd_launch_code(struct npu_cmdw *w, const struct npu_pkt_launch_code *extra,
		    uint64_t entry, uint32_t nargs, const uint32_t grid[3],
		    const uint32_t block[3], uint32_t scratch_bytes,
		    uint32_t stack_bytes)
{
	struct npu_pkt_launch_code *p =
		npu_cmd_reserve(w, sizeof(*p) + 8 * nargs);

	if (!p)
		return NULL;
	*p = *extra;
	p->header = NPU_PKT_HDR(NPU_OP_LAUNCH_CODE, 0,
				NPU_PKT_LAUNCH_CODE_DW + 2 * nargs);
	p->entry = entry;
	p->grid[0] = grid[0];
	p->grid[1] = grid[1];
	p->grid[2] = grid[2];
	p->block[0] = block[0];
	p->block[1] = block[1];
	p->block[2] = block[2];
	p->scratch_bytes = scratch_bytes;
	p->stack_bytes = stack_bytes;
	p->nargs = nargs;
	p->reserved = 0;
	return p->args;
}

#endif /* NPU_CMD_H */
