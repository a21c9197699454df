// SPDX-License-Identifier: MIT
/*
 * npu_cmd.c - the command writer (npu_cmd.h): the packets of
 * include/npu_hw.h, appended to a buffer with a capacity.
 */
#include "npu_cmd.h"

int npu_cmd_copy(struct npu_cmdw *w, uint64_t src, uint64_t dst,
		 uint64_t size)
{
	struct npu_pkt_copy *c = npu_cmd_reserve(w, sizeof(*c));

	if (!c)
		return -ENOSPC;
	c->header = NPU_PKT_HDR(NPU_OP_COPY, 0, 8);
	c->reserved = 0;
	c->src = src;
	c->dst = dst;
	c->size = size;
	return 0;
}

int npu_cmd_fill(struct npu_cmdw *w, uint64_t dst, uint32_t value,
		 uint64_t size)
{
	struct npu_pkt_fill *f = npu_cmd_reserve(w, sizeof(*f));

	if (!f)
		return -ENOSPC;
	f->header = NPU_PKT_HDR(NPU_OP_FILL, 0, 6);
	f->value = value;
	f->dst = dst;
	f->size = size;
	return 0;
}

int npu_cmd_inline(struct npu_cmdw *w, const void *data, uint32_t n,
		   uint64_t *va)
{
	uint32_t dw = 2 + (n + 3) / 4;
	uint32_t *p;

	dw += dw & 1;		/* keep later packets' 64-bit fields aligned */
	p = npu_cmd_reserve(w, dw * 4);
	if (!p)
		return -ENOSPC;
	p[0] = NPU_PKT_HDR(NPU_OP_NOP, 0, dw);
	p[1] = 0;
	memset(&p[2], 0, 4 * (dw - 2));
	memcpy(&p[2], data, n);
	*va = w->va + (uint32_t)((uint8_t *)&p[2] - w->buf);
	return 0;
}

int npu_cmd_memset(struct npu_cmdw *w, uint64_t dst, uint8_t value,
		   uint64_t count)
{
	uint64_t head, body, tail, va;
	uint32_t start = w->len;
	uint8_t bytes[4];
	uint32_t pattern;

	memset(bytes, value, 4);
	memcpy(&pattern, bytes, 4);
	head = (4 - (dst & 3)) & 3;
	if (head > count)
		head = count;
	body = (count - head) & ~3ull;
	tail = count - head - body;
	if (head && (npu_cmd_inline(w, bytes, (uint32_t)head, &va) ||
		     npu_cmd_copy(w, va, dst, head)))
		goto full;
	if (body && npu_cmd_fill(w, dst + head, pattern, body))
		goto full;
	if (tail && (npu_cmd_inline(w, bytes, (uint32_t)tail, &va) ||
		     npu_cmd_copy(w, va, dst + head + body, tail)))
		goto full;
	return 0;
full:
	w->len = start;		/* all of it or nothing */
	return -ENOSPC;
}

int npu_cmd_timestamp(struct npu_cmdw *w, uint64_t dst)
{
	struct npu_pkt_timestamp *t = npu_cmd_reserve(w, sizeof(*t));

	if (!t)
		return -ENOSPC;
	t->header = NPU_PKT_HDR(NPU_OP_TIMESTAMP, 0, 4);
	t->reserved = 0;
	t->dst = dst;
	return 0;
}

static int put_sem(struct npu_cmdw *w, uint32_t op, uint64_t addr,
		   uint32_t value)
{
	struct npu_pkt_sem *p = npu_cmd_reserve(w, sizeof(*p));

	if (!p)
		return -ENOSPC;
	p->header = NPU_PKT_HDR(op, 0, 4);
	p->value = value;
	p->addr = addr;
	return 0;
}

int npu_cmd_sem_wait(struct npu_cmdw *w, uint64_t addr, uint32_t value)
{
	return put_sem(w, NPU_OP_SEM_WAIT, addr, value);
}

int npu_cmd_sem_signal(struct npu_cmdw *w, uint64_t addr, uint32_t value)
{
	return put_sem(w, NPU_OP_SEM_SIGNAL, addr, value);
}

int npu_cmd_wait_mem64(struct npu_cmdw *w, uint64_t addr, uint64_t value,
		       uint32_t flags)
{
	struct npu_pkt_wait_mem64 *p = npu_cmd_reserve(w, sizeof(*p));

	if (!p)
		return -ENOSPC;
	p->header = NPU_PKT_HDR(NPU_OP_WAIT_MEM64, flags, 6);
	p->reserved = 0;
	p->addr = addr;
	p->value = value;
	return 0;
}

int npu_cmd_indirect(struct npu_cmdw *w, uint64_t addr, uint32_t size)
{
	struct npu_pkt_indirect *p = npu_cmd_reserve(w, sizeof(*p));

	if (!p)
		return -ENOSPC;
	p->header = NPU_PKT_HDR(NPU_OP_INDIRECT, 0, 4);
	p->size = size;
	p->addr = addr;
	return 0;
}

int npu_cmd_nop(struct npu_cmdw *w, uint32_t bytes)
{
	uint32_t *p = bytes >= 4 ? npu_cmd_reserve(w, bytes) : NULL;

	if (!p)
		return -ENOSPC;
	p[0] = NPU_PKT_HDR(NPU_OP_NOP, 0, bytes / 4);
	return 0;
}
