// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu_regs.c - register access of the npu driver: the 64-bit register
 * pairs (the 32-bit accessors are inline, in npu_regs.h).
 */
#include "npu_regs.h"

/**
 * npu_rd64() - read a 64-bit register pair that does not change while it is
 * read, or whose low half latches the high half (CLOCK)
 * @ndev: device
 * @lo: offset of the low half
 *
 * Return: the value.
 */
u64 npu_rd64(struct npu_device *ndev, u32 lo)
{
	u32 l = npu_rd(ndev, lo);

	return ((u64)npu_rd(ndev, lo + 4) << 32) | l;
}

/**
 * npu_rd64_counter() - read a running 64-bit counter without tearing
 * @ndev: device
 * @lo: offset of the low half
 *
 * The counters do not latch: when the low half wraps between the two
 * reads, the high half changes, and the pair is read again.
 *
 * Return: the value.
 */
u64 npu_rd64_counter(struct npu_device *ndev, u32 lo)
{
	u32 h, l;

	do {
		h = npu_rd(ndev, lo + 4);
		l = npu_rd(ndev, lo);
	} while (npu_rd(ndev, lo + 4) != h);
	return ((u64)h << 32) | l;
}
