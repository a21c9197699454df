// SPDX-License-Identifier: MIT
/*
 * npu-devtest: tests of the npu QEMU device through the qtest protocol, no
 * guest kernel. Usage: npu-devtest <qemu-system-x86_64>. Prints TAP 13.
 * The harness (layout, rings, page tables, packets) is devlib.c.
 */
#define _GNU_SOURCE
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "devlib.h"

/* ------------------------------------------------------------- tests */

/* Resident memory of the QEMU under test, KiB (0 if unknown). */
static unsigned long qemu_rss_kib(void)
{
	unsigned long kib = 0;
	char path[64], line[128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)q->pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %lu kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static void test_identity(void)
{
	uint32_t caps = rd(NPU_REG_CAPS), v;
	uint64_t c1, c2, cq;

	ok(cfg_readl(0) == (NPU_PCI_DEVICE_ID << 16 | NPU_PCI_VENDOR_ID) &&
	   cfg_readl(8) >> 16 == NPU_PCI_CLASS &&
	   (cfg_readl(8) & 0xff) == NPU_PCI_REVISION,
	   "PCI vendor/device/class/revision");
	cfg_writel(0x18, 0xffffffff);
	v = cfg_readl(0x18);
	cfg_writel(0x18, (uint32_t)BAR2);
	ok((v & 0xf) == 0xc && (v & ~0xfu) == (uint32_t)-(1u << 30),
	   "BAR2 is 64-bit prefetchable, 1 GiB by default (0x%x)", v);
	/* far below the BAR: its RAM is mapped, not touched */
	ok(qemu_rss_kib() > 0 && qemu_rss_kib() < (256u << 10),
	   "1 GiB of device memory costs no host RAM until used (QEMU's "
	   "VmRSS %lu KiB)", qemu_rss_kib());
	ok(msix_cap && nvec == nrings + 2,
	   "MSI-X with %u vectors (the last one for user queues)", nvec);
	ok(rd(NPU_REG_ID) == NPU_ID_MAGIC && rd(NPU_REG_VERSION) == NPU_VERSION,
	   "ID and VERSION");
	ok(NPU_CAPS_COMPUTE_RINGS(caps) == 8 && NPU_CAPS_COPY_RINGS(caps) == 2 &&
	   NPU_CAPS_CUS(caps) == 8, "CAPS 0x%x: 8 compute, 2 copy, 8 units",
	   caps);
	ok(rd(NPU_REG_FEATURES) ==
	   (NPU_FEATURE_TIMING | NPU_FEATURE_USER_CODE |
	    NPU_FEATURE_USER_QUEUES | NPU_FEATURE_TENSOR) &&
	   rd(NPU_REG_DEVMEM_SIZE_LO) == 1u << 30 &&
	   rd(NPU_REG_DEVMEM_SIZE_HI) == 0 &&
	   rd(NPU_REG_CLOCK_HZ) == 1000000000, "FEATURES, DEVMEM_SIZE, CLOCK_HZ");
	ok(rd(NPU_REG_LINK_BW_MBPS) == 4000 && rd(NPU_REG_MEM_BW_MBPS) == 32000 &&
	   rd(NPU_REG_CU_MOPS) == 2000 && rd(NPU_REG_LAUNCH_NS) == 4000 &&
	   rd(NPU_REG_COPY_NS) == 2000 && rd(NPU_REG_L2_KIB) == 4096 &&
	   rd(NPU_REG_L2_BW_MBPS) == 128000,
	   "timing figures from the properties");
	c1 = dev_clock();
	usleep(5000);
	c2 = dev_clock();
	cq = qt_readq(q, BAR0 + NPU_REG_CLOCK_LO);
	ok(c2 > c1 + 4000000 && c2 < c1 + 2000000000ull && cq >= c2,
	   "device clock counts ns (%llu ns over 5 ms), 64-bit read",
	   (unsigned long long)(c2 - c1));
	wr(NPU_REG_SCRATCH, 0xa5a5f00d);
	ok(rd(NPU_REG_SCRATCH) == 0xa5a5f00d && rd(0x7fc) == 0 &&
	   rd(NPU_RING_BASE(15) + NPU_RING_HEAD) == 0, "SCRATCH; unknown registers read 0");

	/* whole-device reset, then every ring register at its reset value */
	wr(NPU_REG_RESET, NPU_RESET_MAGIC);
	c1 = dev_clock();
	{
		bool good = true;

		for (unsigned r = 0; r < nrings; r++) {
			good &= rrd(r, NPU_RING_BASE_LO) == 0 &&
				rrd(r, NPU_RING_SIZE) == 0 &&
				rrd(r, NPU_RING_HEAD) == 0 &&
				rrd(r, NPU_RING_TAIL) == 0 &&
				rrd(r, NPU_RING_CONTROL) == 0 &&
				rrd(r, NPU_RING_STATUS) == NPU_RING_STS_IDLE &&
				rrd(r, NPU_RING_KIND) ==
				(r < ncompute ? NPU_RING_KIND_COMPUTE : NPU_RING_KIND_COPY) &&
				rrd(r, NPU_RING_FENCE) == 0 &&
				rrd(r, NPU_RING_ERROR) == 0 &&
				rrd64(r, NPU_RING_CMDS_LO) == 0 &&
				rrd64(r, NPU_RING_BUSY_LO) == 0;
		}
		ok(good && rd(NPU_REG_ERR_PENDING) == 0 && rd(NPU_REG_SCRATCH) == 0 &&
		   c1 < 1000000000ull, "ring registers at reset values after RESET");
	}
	for (unsigned r = 0; r < nrings; r++) {
		tail[r] = 0;
		ring_init(r);
		ring_ctx(r);
	}
	ok(rrd(0, NPU_RING_STATUS) == (NPU_RING_STS_IDLE | NPU_RING_STS_ENABLED) &&
	   rrd(0, NPU_RING_CONTEXT) == CTX_ID, "ring enabled, SET_CONTEXT sets CONTEXT");
}

static void test_fences(void)
{
	struct pk p = { .n = 0 };
	bool good = true;
	unsigned r, v;

	for (r = 0; r < nrings; r++) {
		for (v = 0; v < nvec; v++)
			qt_writel(q, MSI_PA + 4 * v, 0);
		p.n = 0;
		pk_fence(&p, 0x100 + r, fence_pa(r), 1);
		ring_submit(r, &p);
		good &= wait_msi(r, 5000);
		good &= qt_readl(q, fence_pa(r)) == 0x100 + r &&
			rrd(r, NPU_RING_FENCE) == 0x100 + r;
		for (v = 0; v < nvec; v++)
			if (v != r && msi_word(v))
				good = false;
		seqno[r] = 0x100 + r;
	}
	ok(good, "FENCE with IRQ: seqno in memory and RING_FENCE, MSI-X vector r per ring only");

	qt_writel(q, MSI_PA, 0);
	p.n = 0;
	pk_nop(&p, 1);
	pk_nop(&p, 7);
	for (v = 1; v <= 5; v++)
		pk_fence(&p, seqno[0] + v, fence_pa(0), 0);
	seqno[0] += 5;
	ring_submit(0, &p);
	ring_wait(0, 5000);
	ok(qt_readl(q, fence_pa(0)) == seqno[0] && rrd(0, NPU_RING_FENCE) == seqno[0] &&
	   msi_word(0) == 0 && rrd(0, NPU_RING_HEAD) == tail[0],
	   "NOPs and fences in order, no IRQ without the flag, HEAD reaches TAIL");

	/* ordering: the copy's data is visible once the fence is */
	{
		struct buf h = alloc_buf(256 * 1024, 0, 1), d = alloc_buf(256 * 1024, 1, 1);
		uint32_t *x = malloc(h.size), *y = malloc(h.size);
		uint64_t end;

		for (size_t i = 0; i < h.size / 4; i++)
			x[i] = rnd();
		buf_write(&h, 0, x, h.size);
		p.n = 0;
		pk_copy(&p, h.va, d.va, h.size);
		pk_fence(&p, ++seqno[0], fence_pa(0), 1);
		ring_submit(0, &p);
		end = host_ns() + 5000000000ull;
		while (qt_readl(q, fence_pa(0)) != seqno[0] && host_ns() < end)
			usleep(100);
		buf_read(&d, 0, y, d.size);
		ok(!memcmp(x, y, h.size) && wait_msi(0, 5000),
		   "fence written after the preceding copy's data, then the IRQ");
		free(x);
		free(y);
	}
	/* fence seqno wraps: the device writes any 32-bit value */
	p.n = 0;
	pk_fence(&p, 0xffffffff, fence_pa(1), 0);
	pk_fence(&p, 0x00000002, fence_pa(1), 0);
	ring_submit(1, &p);
	ring_wait(1, 5000);
	ok(qt_readl(q, fence_pa(1)) == 2 && npu_seqno_passed(2, 0xffffffff),
	   "fence seqno wrap (0xffffffff then 2)");
	seqno[1] = 2;
}

static void test_copies(void)
{
	const uint64_t n = 3 * 4096 + 1234;
	struct buf h1 = alloc_buf(n + 8, 0, 1), h2 = alloc_buf(n + 8, 0, 1);
	struct buf d1 = alloc_buf(n + 8, 1, 1), d2 = alloc_buf(n + 8, 1, 1);
	uint8_t *a = malloc(n), *b = malloc(n);
	struct pk p = { .n = 0 };
	uint32_t f[4096];
	bool good;

	for (uint64_t i = 0; i < n; i++)
		a[i] = rnd();
	buf_write(&h1, 0, a, n);
	pk_copy(&p, h1.va + 3, d1.va + 5, n - 8);	/* H2D, unaligned */
	good = ring_run(COPY0, &p, 5000);
	memset(b, 0, n);
	buf_read(&d1, 5, b, n - 8);
	ok(good && !memcmp(a + 3, b, n - 8), "COPY host->device memory across pages (copy ring)");

	p.n = 0;
	pk_copy(&p, d1.va, d2.va, n);
	good = ring_run(COPY1, &p, 5000);
	memset(b, 0, n);
	qt_memread(q, BAR2 + d2.base, b, n);	/* contiguous in devmem */
	buf_read(&d1, 0, a, n);
	ok(good && !memcmp(a, b, n), "COPY device->device, visible through BAR2");

	p.n = 0;
	pk_copy(&p, d2.va, h2.va, n);
	good = ring_run(0, &p, 5000);
	memset(b, 0, n);
	buf_read(&h2, 0, b, n);
	ok(good && !memcmp(a, b, n), "COPY device->host (compute ring)");

	p.n = 0;
	pk_copy(&p, h1.va, h2.va, 0);
	ok(ring_run(0, &p, 5000), "COPY of 0 bytes is a no-op");

	p.n = 0;
	pk_fill(&p, h2.va + 4, 8192 + 12, 0x3f800000);
	pk_fill(&p, d1.va, 4096 * 2, 0xcafef00d);
	good = ring_run(COPY0, &p, 5000);
	buf_read(&h2, 0, f, 8192 + 20);
	for (unsigned i = 1; i < (8192 + 12) / 4 + 1; i++)
		good &= f[i] == 0x3f800000;
	good &= f[(8192 + 16) / 4] != 0x3f800000 || a[8192 + 16] == 0 ;
	buf_read(&d1, 0, f, 8192);
	for (unsigned i = 0; i < 2048; i++)
		good &= f[i] == 0xcafef00d;
	ok(good, "FILL host and device memory");
	free(a);
	free(b);
}

static float *fget(const struct buf *b, size_t n)
{
	float *x = malloc(n * 4 + 4);

	buf_read(b, 0, x, n * 4);
	return x;
}

/*
 * The LAUNCH packet's kernels are diagnostics: NOP runs; the former
 * built-in math ids (1..13, now libnpu's kernel library as code) fail
 * BAD_KERNEL as any unknown id does (test_faults), and the ring resumes.
 */
static void test_kernels(void)
{
	struct pk p = { .n = 0 };
	bool good = true;

	LAUNCH(&p, NPU_KERNEL_NOP, 1, 0);
	p.n = 0;
	pk_launch(&p, NPU_KERNEL_NOP, 1, 0, NULL);
	ok(ring_run(0, &p, 5000), "kernel NOP");

	for (uint32_t id = 1; id <= 13; id++) {
		uint64_t a[4] = { 0, 0, 0, 0 };

		p.n = 0;
		pk_launch(&p, id, 1, 4, a);
		ring_submit(0, &p);
		good &= expect_error(0, NPU_ERR_BAD_KERNEL, ~0ull,
				     NPU_OP_LAUNCH | id << 16);
		ring_resume(0);
	}
	ok(good, "LAUNCH of a former built-in math id (1..13): BAD_KERNEL");
	p.n = 0;
	pk_launch(&p, NPU_KERNEL_NOP, 1, 0, NULL);
	ok(ring_run(0, &p, 5000), "the ring runs on after them");
}

static void test_timestamp_ib(void)
{
	struct buf b = alloc_buf(64, 0, 1), ib = alloc_buf(8192, 0, 0);
	struct buf src = alloc_buf(4096, 0, 1), dst = alloc_buf(4096, 1, 1);
	struct pk p = { .n = 0 }, i = { .n = 0 };
	uint64_t c0, c1, ts[2];
	uint8_t a[4096], c[4096];
	bool good;

	c0 = dev_clock();
	pk_ts(&p, b.va);
	good = ring_run(0, &p, 5000);
	c1 = dev_clock();
	buf_read(&b, 0, ts, 8);
	ok(good && c0 <= ts[0] && ts[0] <= c1, "TIMESTAMP writes the device clock");

	/* user packets in an indirect buffer */
	for (int k = 0; k < 4096; k++)
		a[k] = rnd();
	buf_write(&src, 0, a, 4096);
	pk_nop(&i, 3);
	pk_ts(&i, b.va);
	pk_copy(&i, src.va, dst.va, 4096);
	pk_ts(&i, b.va + 8);
	buf_write(&ib, 0, i.dw, i.n * 4);
	p.n = 0;
	pk_ib(&p, ib.va, i.n * 4);
	good = ring_run(1, &p, 5000);
	buf_read(&dst, 0, c, 4096);
	buf_read(&b, 0, ts, 16);
	ok(good && !memcmp(a, c, 4096) && ts[1] >= ts[0] + 2000,
	   "INDIRECT runs user packets from a read-only IB (copy takes >= copy-ns)");

	/* privileged packet in an IB: refused, HEAD after the INDIRECT */
	i.n = 0;
	pk_ts(&i, b.va);
	pk_fence(&i, 99, fence_pa(1), 0);
	pk_ts(&i, b.va + 8);
	buf_write(&ib, 4096, i.dw, i.n * 4);
	qt_writel(q, MSI_PA + 4 * nrings, 0);
	p.n = 0;
	pk_ib(&p, ib.va + 4096, i.n * 4);
	ring_submit(1, &p);
	{
		uint32_t head_after = tail[1];

		good = expect_error(1, NPU_ERR_PRIVILEGED, ib.va + 4096 + 16,
				    0x100 | NPU_OP_FENCE);
		ok(good && rrd(1, NPU_RING_HEAD) == head_after &&
		   rrd(1, NPU_RING_ERROR_CTX) == CTX_ID &&
		   qt_readl(q, fence_pa(1)) != 99,
		   "FENCE in an IB refused: PRIVILEGED, FAULT = packet VA, HEAD after INDIRECT");
		ok(wait_msi(nrings, 5000), "error MSI-X vector raised");
	}
	p.n = 0;
	pk_nop(&p, 1);
	pk_fence(&p, ++seqno[1], fence_pa(1), 0);
	ring_submit(1, &p);
	usleep(20000);
	ok(rrd(1, NPU_RING_FENCE) != seqno[1], "halted ring does not run new packets");
	ring_resume(1);
	ring_wait(1, 5000);
	ok(rrd(1, NPU_RING_FENCE) == seqno[1] && rrd(1, NPU_RING_STATUS) ==
	   (NPU_RING_STS_IDLE | NPU_RING_STS_ENABLED) &&
	   !(rd(NPU_REG_ERR_PENDING) & 2), "RESUME continues from HEAD; ERR_PENDING is RW1C");

	/* other privileged packets in an IB */
	{
		uint32_t ops[] = { NPU_OP_INDIRECT, NPU_OP_SET_CONTEXT, NPU_OP_RING_CTRL };

		good = true;
		for (unsigned k = 0; k < 3; k++) {
			i.n = 0;
			if (ops[k] == NPU_OP_INDIRECT)
				pk_ib(&i, ib.va, 4);
			else if (ops[k] == NPU_OP_SET_CONTEXT)
				pk_ctx(&i, 1, 0);
			else
				pk_flush(&i);
			buf_write(&ib, 4096, i.dw, i.n * 4);
			p.n = 0;
			pk_ib(&p, ib.va + 4096, i.n * 4);
			ring_submit(2, &p);
			good &= expect_error(2, NPU_ERR_PRIVILEGED, ib.va + 4096,
					     0x100 | ops[k]);
			ring_resume(2);
		}
		p.n = 0;
		good &= ring_run(2, &p, 5000) && rrd(2, NPU_RING_CONTEXT) == CTX_ID;
		ok(good, "INDIRECT, SET_CONTEXT, RING_CTRL refused inside an IB");
	}
}

static void test_control(void)
{
	struct buf b = alloc_buf(64, 0, 1);
	struct pk p = { .n = 0 };
	uint32_t pba;
	bool good;

	/* a masked vector sets its PBA bit; unmasking delivers the message */
	qt_writel(q, MSI_PA + 4 * 3, 0);
	qt_writel(q, BAR4 + 3 * 16 + 12, 1);
	pk_fence(&p, ++seqno[3], fence_pa(3), 1);
	ring_submit(3, &p);
	ring_wait(3, 5000);
	usleep(20000);
	pba = qt_readl(q, BAR4 + 2048);
	good = rrd(3, NPU_RING_FENCE) == seqno[3] && msi_word(3) == 0 &&
	       (pba & (1u << 3));
	qt_writel(q, BAR4 + 3 * 16 + 12, 0);
	ok(good && wait_msi(3, 5000) && !(qt_readl(q, BAR4 + 2048) & (1u << 3)),
	   "masked MSI-X vector: PBA bit set, message sent on unmask");

	/* clearing ENABLE stops fetching; setting it again goes on */
	rwr(2, NPU_RING_CONTROL, 0);
	p.n = 0;
	pk_fence(&p, ++seqno[2], fence_pa(2), 0);
	ring_submit(2, &p);
	usleep(20000);
	good = rrd(2, NPU_RING_FENCE) != seqno[2] && rrd(2, NPU_RING_STATUS) == 0 &&
	       rrd(2, NPU_RING_CONTROL) == 0;
	rwr(2, NPU_RING_CONTROL, NPU_RING_CTL_ENABLE);
	ring_wait(2, 5000);
	ok(good && rrd(2, NPU_RING_FENCE) == seqno[2],
	   "ring stops while ENABLE is clear, runs when it is set again");

	/* 64-bit register writes: BASE as one quadword */
	rwr(2, NPU_RING_CONTROL, NPU_RING_CTL_RESET);
	qt_writeq(q, BAR0 + NPU_RING_BASE(2) + NPU_RING_BASE_LO, 0x0000123400005000ull);
	good = rrd(2, NPU_RING_BASE_LO) == 0x5000 && rrd(2, NPU_RING_BASE_HI) == 0x1234;
	ok(good, "64-bit write to BASE_LO sets both halves");
	tail[2] = 0;
	ring_init(2);
	ring_ctx(2);

	/* an error in the middle of an IB: earlier packets took effect */
	{
		struct buf ib = alloc_buf(4096, 0, 1);
		struct pk i = { .n = 0 };
		uint64_t ts[3] = { 0 };
		uint32_t after;

		buf_write(&b, 0, ts, 24);
		pk_ts(&i, b.va);
		pk_copy(&i, b.va, b.va + 4096 * 64, 8);	/* unmapped */
		pk_ts(&i, b.va + 8);
		buf_write(&ib, 0, i.dw, i.n * 4);
		p.n = 0;
		pk_ib(&p, ib.va, i.n * 4);
		after = (tail[2] + 16) % RING_BYTES;
		pk_ts(&p, b.va + 16);
		ring_submit(2, &p);
		good = expect_error(2, NPU_ERR_MMU_FAULT, b.va + 4096 * 64,
				    0x100 | NPU_OP_COPY);
		good &= rrd(2, NPU_RING_HEAD) == after;
		ring_resume(2);
		ring_wait(2, 5000);
		buf_read(&b, 0, ts, 24);
		ok(good && ts[0] && !ts[1] && ts[2] >= ts[0],
		   "fault inside an IB: earlier IB packets done, rest skipped, "
		   "RESUME runs the next ring packet");
	}
}

static void test_semaphores(void)
{
	struct buf s = alloc_buf(4096, 0, 1), t = alloc_buf(64, 1, 1);
	struct pk p = { .n = 0 };
	uint64_t ts[4];
	uint32_t zero = 0;
	bool good;

	buf_write(&s, 0, &zero, 4);
	/* the first copy ring waits for the semaphore, ring 0 signals it late */
	pk_sem(&p, 1, s.va, 5);
	pk_ts(&p, t.va + 8);
	pk_fence(&p, ++seqno[COPY1], fence_pa(COPY1), 0);
	ring_submit(COPY1, &p);
	usleep(20000);
	good = !(rrd(COPY1, NPU_RING_STATUS) & NPU_RING_STS_IDLE);
	p.n = 0;
	LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 1, 30000000);
	pk_ts(&p, t.va);
	pk_sem(&p, 0, s.va, 5);
	good &= ring_run(0, &p, 5000);
	good &= ring_wait(COPY1, 5000) == (NPU_RING_STS_IDLE | NPU_RING_STS_ENABLED);
	buf_read(&t, 0, ts, 16);
	ok(good && ts[1] >= ts[0] && rrd(COPY1, NPU_RING_FENCE) == seqno[COPY1],
	   "SEM_WAIT on a copy ring stalls until SEM_SIGNAL from a compute ring");

	/* wrap-safe: value 0x80000010 passed by 0x80000020, 0xfffffff0 by 0x10 */
	{
		uint32_t v = 0x10;

		buf_write(&s, 0, &v, 4);
		p.n = 0;
		pk_sem(&p, 1, s.va, 0xfffffff0);
		pk_sem(&p, 1, s.va, 0x10);
		ok(ring_run(COPY0, &p, 5000), "SEM_WAIT compares wrap-safe");
	}
	p.n = 0;
	pk_sem(&p, 0, s.va + 2, 1);
	ring_submit(COPY0, &p);
	ok(expect_error(COPY0, NPU_ERR_BAD_PACKET, s.va + 2, NPU_OP_SEM_SIGNAL),
	   "unaligned semaphore address is BAD_PACKET");
	ring_resume(COPY0);
}

/* The event ring: 4 KiB at UQ_EVENT_PA, emptied (HEAD = TAIL). */
static void uq_events_init(void)
{
	qt_memset(q, UQ_EVENT_PA, 0, 4096);
	wr(NPU_REG_UQ_EVENT_BASE_LO, (uint32_t)UQ_EVENT_PA);
	wr(NPU_REG_UQ_EVENT_BASE_HI, 0);
	wr(NPU_REG_UQ_EVENT_SIZE, 4096);
}

/* The event record at byte offset off of the event ring. */
static struct npu_uq_event uq_event_at(uint32_t off)
{
	struct npu_uq_event ev;

	qt_memread(q, UQ_EVENT_PA + off, &ev, sizeof(ev));
	return ev;
}

/*
 * SIGNAL and WAIT_MEM64 (VERSION 1.1) on rings and in indirect buffers:
 * value and timestamp in order, an event and the user-queue vector only
 * for an armed signal with an event ring programmed, 64-bit waits.
 */
static void test_signals(void)
{
	struct buf sg = alloc_buf(4096, 0, 1), t = alloc_buf(64, 1, 1);
	struct buf ibb = alloc_buf(8192, 0, 0);
	struct pk p = { .n = 0 }, ib = { .n = 0 };
	struct npu_signal sig;
	struct npu_uq_event ev;
	unsigned uqv = nrings + 1;
	uint64_t ts[2], w;
	uint32_t one = 1;
	bool good;

	ok(rd(NPU_REG_VERSION) == 0x00010002 && NPU_VERSION == 0x00010002,
	   "VERSION 1.2");
	qt_memset(q, sg.base, 0, 4096);
	qt_writel(q, MSI_PA + 4 * uqv, 0);
	/* no event ring: armed or not, the value is written, nothing raised */
	wr(NPU_REG_UQ_EVENT_SIZE, 0);
	buf_write(&sg, 16, &one, 4);
	pk_ts(&p, t.va);
	pk_signal(&p, sg.va, 42);
	pk_ts(&p, t.va + 8);
	good = ring_run(0, &p, 5000);
	buf_read(&sg, 0, &sig, sizeof(sig));
	buf_read(&t, 0, ts, 16);
	ok(good && sig.value == 42 && sig.timestamp >= ts[0] &&
	   sig.timestamp <= ts[1] && sig.armed == 1 && !msi_word(uqv) &&
	   rd(NPU_REG_UQ_EVENT_TAIL) == 0,
	   "SIGNAL writes value and a timestamp between its neighbours' "
	   "(%llu <= %llu <= %llu); armed without an event ring raises nothing",
	   (unsigned long long)ts[0], (unsigned long long)sig.timestamp,
	   (unsigned long long)ts[1]);

	uq_events_init();
	/* not armed: no event */
	qt_memset(q, sg.base + 16, 0, 4);
	p.n = 0;
	pk_signal(&p, sg.va, 43);
	good = ring_run(0, &p, 5000);
	buf_read(&sg, 0, &sig, sizeof(sig));
	ok(good && sig.value == 43 && rd(NPU_REG_UQ_EVENT_TAIL) == 0 &&
	   !msi_word(uqv), "SIGNAL not armed: no event, no interrupt");

	/* NPU_SIGNAL_MAX: a greater value stays (timestamp too), a lower or
	 * equal one is written; without the flag a lower one is written */
	{
		uint64_t ts43 = sig.timestamp;
		static const uint64_t vals[3] = { 40, 43, 45 };
		uint64_t seen[3];
		bool same_ts;

		for (unsigned i = 0; i < 3; i++) {
			p.n = 0;
			pk_dw(&p, NPU_PKT_HDR(NPU_OP_SIGNAL, NPU_SIGNAL_MAX, 6));
			pk_dw(&p, 0);
			pk_qw(&p, sg.va);
			pk_qw(&p, vals[i]);
			good &= ring_run(0, &p, 5000);
			buf_read(&sg, 0, &sig, sizeof(sig));
			seen[i] = sig.value;
			if (!i)
				same_ts = sig.timestamp == ts43;
		}
		ok(good && seen[0] == 43 && same_ts && seen[1] == 43 &&
		   seen[2] == 45,
		   "SIGNAL with NPU_SIGNAL_MAX leaves a greater value and its "
		   "timestamp, writes an equal or greater one (%llu %llu %llu)",
		   (unsigned long long)seen[0], (unsigned long long)seen[1],
		   (unsigned long long)seen[2]);
		p.n = 0;
		pk_signal(&p, sg.va, 43);
		good = ring_run(0, &p, 5000);
		buf_read(&sg, 0, &sig, sizeof(sig));
		ok(good && sig.value == 43 && rd(NPU_REG_UQ_EVENT_TAIL) == 0,
		   "SIGNAL without the flag writes a lower value");
	}

	/* armed, from a copy ring: an event record and vector nrings + 1 */
	buf_write(&sg, 16, &one, 4);
	p.n = 0;
	pk_signal(&p, sg.va, 44);
	good = ring_run(COPY0, &p, 5000);
	good &= wait_msi(uqv, 5000);
	ev = uq_event_at(0);
	ok(good && rd(NPU_REG_UQ_EVENT_TAIL) == 16 &&
	   ev.kind == NPU_UQ_EVENT_SIGNAL && ev.ctx == CTX_ID &&
	   ev.queue == (NPU_UQ_EVENT_RING | COPY0) && ev.data == sg.va,
	   "SIGNAL armed: event (kind %u ctx %u queue 0x%x data 0x%llx) and "
	   "MSI-X vector %u", ev.kind, ev.ctx, ev.queue,
	   (unsigned long long)ev.data, uqv);

	/* in an indirect buffer, 255 records fill the ring, the next overflows */
	wr(NPU_REG_UQ_EVENT_HEAD, 16);
	for (unsigned i = 0; i < 256; i++)
		pk_signal(&ib, sg.va, 100 + i);
	buf_write(&ibb, 0, ib.dw, ib.n * 4);
	p.n = 0;
	pk_ib(&p, ibb.va, ib.n * 4);
	good = ring_run(0, &p, 5000);
	buf_read(&sg, 0, &sig, sizeof(sig));
	ok(good && sig.value == 355 && rd(NPU_REG_UQ_EVENT_TAIL) == 0 &&
	   rd(NPU_REG_UQ_EVENT_STATUS) == NPU_UQ_EVENT_STS_OVERFLOW &&
	   uq_event_at(4080).data == sg.va,
	   "SIGNAL in an IB; a full event ring drops the record and sets "
	   "OVERFLOW (tail 0x%x status 0x%x)", rd(NPU_REG_UQ_EVENT_TAIL),
	   rd(NPU_REG_UQ_EVENT_STATUS));
	wr(NPU_REG_UQ_EVENT_STATUS, NPU_UQ_EVENT_STS_OVERFLOW);
	ok(rd(NPU_REG_UQ_EVENT_STATUS) == 0, "UQ_EVENT_STATUS is RW1C");

	/* armed with a wake_value: the signals below it raise nothing, the
	 * one that reaches it does (and a MAX signal that leaves a greater
	 * value compares that one) */
	{
		uint64_t wake = 500;
		uint32_t tail;

		wr(NPU_REG_UQ_EVENT_HEAD, rd(NPU_REG_UQ_EVENT_TAIL));
		tail = rd(NPU_REG_UQ_EVENT_TAIL);
		qt_writel(q, MSI_PA + 4 * uqv, 0);
		buf_write(&sg, offsetof(struct npu_signal, wake_value), &wake, 8);
		p.n = 0;
		pk_signal(&p, sg.va, 400);
		pk_signal(&p, sg.va, 499);
		good = ring_run(0, &p, 5000);
		ok(good && rd(NPU_REG_UQ_EVENT_TAIL) == tail && !msi_word(uqv),
		   "SIGNAL armed below its wake_value: no event, no interrupt "
		   "(tail 0x%x, was 0x%x)", rd(NPU_REG_UQ_EVENT_TAIL), tail);
		p.n = 0;
		pk_signal(&p, sg.va, 500);
		good = ring_run(0, &p, 5000) && wait_msi(uqv, 5000);
		ev = uq_event_at(tail);
		ok(good && rd(NPU_REG_UQ_EVENT_TAIL) == (tail + 16) % 4096 &&
		   ev.kind == NPU_UQ_EVENT_SIGNAL && ev.data == sg.va,
		   "SIGNAL that reaches its wake_value: event and interrupt");
		wr(NPU_REG_UQ_EVENT_HEAD, rd(NPU_REG_UQ_EVENT_TAIL));
		tail = rd(NPU_REG_UQ_EVENT_TAIL);
		qt_writel(q, MSI_PA + 4 * uqv, 0);
		wake = 480;
		buf_write(&sg, offsetof(struct npu_signal, wake_value), &wake, 8);
		p.n = 0;
		pk_dw(&p, NPU_PKT_HDR(NPU_OP_SIGNAL, NPU_SIGNAL_MAX, 6));
		pk_dw(&p, 0);
		pk_qw(&p, sg.va);
		pk_qw(&p, 450);
		good = ring_run(0, &p, 5000) && wait_msi(uqv, 5000);
		buf_read(&sg, 0, &sig, sizeof(sig));
		ok(good && sig.value == 500 &&
		   rd(NPU_REG_UQ_EVENT_TAIL) == (tail + 16) % 4096,
		   "SIGNAL_MAX of 450 leaving 500, wake_value 480: the value "
		   "left is compared, an event");
		wake = 0;
		buf_write(&sg, offsetof(struct npu_signal, wake_value), &wake, 8);
	}
	qt_memset(q, sg.base + 16, 0, 4);

	/* WAIT_MEM64: 64-bit unsigned compare, satisfied at once */
	w = 0x100000005ull;
	buf_write(&sg, 64, &w, 8);
	p.n = 0;
	pk_wait64(&p, sg.va + 64, 0x100000005ull);
	pk_wait64(&p, sg.va + 64, 7);
	ok(ring_run(0, &p, 5000), "WAIT_MEM64 satisfied (u64 >= value)");

	/* unsatisfied: 0xffffffff is below 2^32 (no wrap-safe compare) */
	w = 0xffffffffull;
	buf_write(&sg, 64, &w, 8);
	p.n = 0;
	pk_wait64(&p, sg.va + 64, 0x100000000ull);
	pk_ts(&p, t.va + 8);
	pk_fence(&p, ++seqno[COPY1], fence_pa(COPY1), 0);
	ring_submit(COPY1, &p);
	usleep(30000);
	good = !(rrd(COPY1, NPU_RING_STATUS) & NPU_RING_STS_IDLE);
	/* a device write releases it: ring 0 signals the word (SIGNAL value) */
	p.n = 0;
	pk_ts(&p, t.va);
	pk_signal(&p, sg.va + 64, 0x100000000ull);
	good &= ring_run(0, &p, 5000);
	good &= ring_wait(COPY1, 5000) ==
		(NPU_RING_STS_IDLE | NPU_RING_STS_ENABLED);
	buf_read(&t, 0, ts, 16);
	ok(good && rrd(COPY1, NPU_RING_FENCE) == seqno[COPY1] && ts[1] >= ts[0],
	   "WAIT_MEM64 stalls below the value (0xffffffff < 2^32) and a "
	   "SIGNAL by another ring releases it");

	/* inside an IB, released by a host write */
	ib.n = 0;
	pk_wait64(&ib, sg.va + 64, 0x200000000ull);
	buf_write(&ibb, 0, ib.dw, ib.n * 4);
	p.n = 0;
	pk_ib(&p, ibb.va, ib.n * 4);
	pk_fence(&p, ++seqno[COPY1], fence_pa(COPY1), 0);
	ring_submit(COPY1, &p);
	usleep(20000);
	good = !(rrd(COPY1, NPU_RING_STATUS) & NPU_RING_STS_IDLE);
	w = 0x200000001ull;
	buf_write(&sg, 64, &w, 8);
	good &= ring_wait(COPY1, 5000) ==
		(NPU_RING_STS_IDLE | NPU_RING_STS_ENABLED);
	ok(good && rrd(COPY1, NPU_RING_FENCE) == seqno[COPY1],
	   "WAIT_MEM64 in an IB, released by a host write");

	/* alignment: SIGNAL 32 bytes, WAIT_MEM64 8 bytes */
	p.n = 0;
	pk_signal(&p, sg.va + 8, 1);
	ring_submit(COPY0, &p);
	ok(expect_error(COPY0, NPU_ERR_BAD_PACKET, sg.va + 8, NPU_OP_SIGNAL),
	   "SIGNAL to an address not 32-byte aligned is BAD_PACKET");
	ring_resume(COPY0);
	p.n = 0;
	pk_wait64(&p, sg.va + 68, 1);
	ring_submit(COPY0, &p);
	ok(expect_error(COPY0, NPU_ERR_BAD_PACKET, sg.va + 68,
			NPU_OP_WAIT_MEM64),
	   "WAIT_MEM64 on an address not 8-byte aligned is BAD_PACKET");
	ring_resume(COPY0);
	p.n = 0;
	pk_dw(&p, NPU_PKT_HDR(NPU_OP_SIGNAL, 0, 4));
	pk_dw(&p, 0);
	pk_qw(&p, sg.va);
	ring_submit(COPY0, &p);
	ok(expect_error(COPY0, NPU_ERR_BAD_PACKET, ~0ull, NPU_OP_SIGNAL),
	   "SIGNAL of the wrong length is BAD_PACKET");
	ring_resume(COPY0);
	wr(NPU_REG_ERR_PENDING, ~0u);
}

static void test_faults(void)
{
	struct buf h = alloc_buf(8192, 0, 1), ro = alloc_buf(4096, 0, 0);
	uint64_t unmapped = h.va + 8192;	/* guard page */
	struct pk p = { .n = 0 };
	bool good;

	pk_copy(&p, h.va, unmapped - 16, 64);
	ring_submit(0, &p);
	good = expect_error(0, NPU_ERR_MMU_FAULT, unmapped, NPU_OP_COPY);
	ok(good && rrd(0, NPU_RING_ERROR_CTX) == CTX_ID,
	   "write across into an unmapped page: MMU_FAULT, FAULT = VA, ERROR_CTX");
	/* another ring keeps running while ring 0 is halted */
	p.n = 0;
	ok(ring_run(1, &p, 5000) && (rrd(0, NPU_RING_STATUS) & NPU_RING_STS_HALTED),
	   "other rings keep running while one is halted");
	ring_resume(0);

	p.n = 0;
	pk_fill(&p, ro.va, 16, 1);
	ring_submit(0, &p);
	ok(expect_error(0, NPU_ERR_MMU_WRITE, ro.va, NPU_OP_FILL),
	   "write to a read-only page: MMU_WRITE");
	ring_resume(0);

	p.n = 0;
	LAUNCH(&p, NPU_KERNEL_TEST_FAULT, 1, unmapped + 0x44);
	ring_submit(0, &p);
	ok(expect_error(0, NPU_ERR_MMU_FAULT, unmapped + 0x44,
			NPU_OP_LAUNCH | NPU_KERNEL_TEST_FAULT << 16),
	   "TEST_FAULT kernel: MMU_FAULT at its address, ERROR_INFO has the kernel");
	ring_resume(0);
	p.n = 0;
	LAUNCH(&p, NPU_KERNEL_TEST_FAULT, 1, h.va);
	ring_submit(0, &p);
	ok(expect_error(0, NPU_ERR_KERNEL_FAULT, h.va, ~0u),
	   "TEST_FAULT on a mapped address: KERNEL_FAULT");
	ring_resume(0);

	p.n = 0;
	pk_copy(&p, 1ull << 39, h.va, 4);
	ring_submit(0, &p);
	ok(expect_error(0, NPU_ERR_MMU_FAULT, 1ull << 39, NPU_OP_COPY),
	   "VA beyond 39 bits: MMU_FAULT");
	ring_resume(0);

	/* a ring with no context */
	p.n = 0;
	pk_ctx(&p, 3, 0);
	pk_copy(&p, h.va, h.va + 8, 4);
	ring_submit(3, &p);
	ok(expect_error(3, NPU_ERR_NO_CONTEXT, ~0ull, NPU_OP_COPY) &&
	   rrd(3, NPU_RING_ERROR_CTX) == 3, "user packet without a context: NO_CONTEXT");
	ring_resume(3);
	ring_ctx(3);
	ring_wait(3, 5000);
}

static void test_bounds(void)
{
	struct buf h = alloc_buf(4096, 0, 1);
	uint64_t va = va_next;
	struct pk p = { .n = 0 };
	int r = 2;

	/* PTE to an address outside guest RAM, and into MMIO (BAR0) */
	pt_map(va, NPU_PTE_VALID | NPU_PTE_WRITE | 0x40000000ull);
	pt_map(va + 4096, NPU_PTE_VALID | NPU_PTE_WRITE | BAR0);
	pt_map(va + 8192, NPU_PTE_VALID | NPU_PTE_WRITE | NPU_PTE_DEVMEM |
	       ((uint64_t)rd(NPU_REG_DEVMEM_SIZE_HI) << 32 |
		rd(NPU_REG_DEVMEM_SIZE_LO)));
	va_next += 4 * 4096;
	pt_sync();
	pk_copy(&p, va + 8, h.va, 16);
	ring_submit(r, &p);
	ok(expect_error(r, NPU_ERR_BAD_DMA, 0x40000008ull, NPU_OP_COPY),
	   "PTE to a physical address outside RAM: BAD_DMA, FAULT = PA");
	ring_resume(r);
	p.n = 0;
	pk_fill(&p, va + 4096, 4, 0);
	ring_submit(r, &p);
	ok(expect_error(r, NPU_ERR_BAD_DMA, BAR0, NPU_OP_FILL) && rd(NPU_REG_ID) == NPU_ID_MAGIC,
	   "DMA to MMIO (own BAR0) refused: BAD_DMA");
	ring_resume(r);
	p.n = 0;
	pk_copy(&p, va + 8192, h.va, 4);
	ring_submit(r, &p);
	ok(expect_error(r, NPU_ERR_DEVMEM_RANGE, va + 8192, NPU_OP_COPY),
	   "device-memory PTE past the end: DEVMEM_RANGE");
	ring_resume(r);
	p.n = 0;
	pk_fence(&p, 1, 0x50000000ull, 0);
	ring_submit(r, &p);
	ok(expect_error(r, NPU_ERR_BAD_DMA, 0x50000000ull, NPU_OP_FENCE),
	   "FENCE to a physical address outside RAM: BAD_DMA");
	ring_resume(r);
	/* page table pointing outside RAM */
	p.n = 0;
	pk_ctx(&p, 9, 0x7ffff000ull);
	pk_copy(&p, h.va, h.va, 4);
	ring_submit(r, &p);
	ok(expect_error(r, NPU_ERR_BAD_DMA, 0x7ffff000ull + NPU_PT_INDEX(h.va, 2) * 8,
			NPU_OP_COPY) && rrd(r, NPU_RING_ERROR_CTX) == 9,
	   "page-table root outside RAM: BAD_DMA at the PTE address");
	ring_resume(r);
	ring_ctx(r);

	/* ring base outside RAM */
	rwr(r, NPU_RING_CONTROL, NPU_RING_CTL_RESET);
	rwr(r, NPU_RING_BASE_LO, 0x30000000);
	rwr(r, NPU_RING_SIZE, RING_BYTES);
	rwr(r, NPU_RING_CONTROL, NPU_RING_CTL_ENABLE);
	rwr(r, NPU_RING_TAIL, 16);
	ok(expect_error(r, NPU_ERR_BAD_DMA, 0x30000000ull, ~0u) &&
	   rrd(r, NPU_RING_HEAD) == 0, "ring base outside RAM: BAD_DMA, HEAD unchanged");
	/* bad ring configurations */
	rwr(r, NPU_RING_CONTROL, NPU_RING_CTL_RESET);
	rwr(r, NPU_RING_BASE_LO, (uint32_t)RING_PA(r));
	rwr(r, NPU_RING_SIZE, 3000);
	rwr(r, NPU_RING_CONTROL, NPU_RING_CTL_ENABLE);
	rwr(r, NPU_RING_TAIL, 16);
	ok(expect_error(r, NPU_ERR_RING_CONFIG, RING_PA(r), ~0u),
	   "ring size not a power of two: RING_CONFIG");
	rwr(r, NPU_RING_SIZE, RING_BYTES);
	rwr(r, NPU_RING_TAIL, 18);
	ring_resume(r);
	ok(expect_error(r, NPU_ERR_RING_CONFIG, RING_PA(r), ~0u),
	   "unaligned TAIL: RING_CONFIG");
	rwr(r, NPU_RING_TAIL, RING_BYTES);
	ring_resume(r);
	ok(expect_error(r, NPU_ERR_RING_CONFIG, RING_PA(r), ~0u),
	   "TAIL beyond the ring: RING_CONFIG");
	rwr(r, NPU_RING_BASE_LO, (uint32_t)RING_PA(r) + 0x100);
	rwr(r, NPU_RING_TAIL, 0);
	ring_resume(r);
	rwr(r, NPU_RING_TAIL, 16);
	ok(expect_error(r, NPU_ERR_RING_CONFIG, RING_PA(r) + 0x100, ~0u),
	   "unaligned ring base: RING_CONFIG");
	ring_reset(r);
}

static void test_bad_packets(void)
{
	struct pk p = { .n = 0 };
	struct buf h = alloc_buf(4096, 0, 1);
	uint32_t base = RING_PA(0);

	p.n = 0;
	pk_dw(&p, NPU_PKT_HDR(0x42, 0, 1));
	ring_submit(0, &p);
	ok(expect_error(0, NPU_ERR_BAD_OPCODE, base + (tail[0] - 4) % RING_BYTES, 0x42),
	   "unknown opcode: BAD_OPCODE, FAULT = packet address");
	ring_resume(0);

	p.n = 0;
	pk_dw(&p, NPU_PKT_HDR(NPU_OP_COPY, 0, 7));
	for (int i = 0; i < 6; i++)
		pk_dw(&p, 0);
	ring_submit(0, &p);
	ok(expect_error(0, NPU_ERR_BAD_PACKET, ~0ull, NPU_OP_COPY),
	   "wrong packet length: BAD_PACKET");
	ring_resume(0);

	p.n = 0;
	pk_dw(&p, NPU_PKT_HDR(NPU_OP_NOP, 0, 0));
	ring_submit(0, &p);
	ok(expect_error(0, NPU_ERR_BAD_PACKET, ~0ull, 0) &&
	   rrd(0, NPU_RING_HEAD) == tail[0], "zero-length packet: BAD_PACKET, skipped");
	ring_resume(0);

	p.n = 0;
	pk_dw(&p, NPU_PKT_HDR(NPU_OP_NOP, 0, 9));
	ring_submit(0, &p);
	ok(expect_error(0, NPU_ERR_BAD_PACKET, ~0ull, 0),
	   "packet extending past TAIL: BAD_PACKET");
	/* the rest of that NOP is garbage now: reset the ring */
	ring_reset(0);

	p.n = 0;
	LAUNCH(&p, NPU_KERNEL_NOP, 1, 0);
	ring_submit(COPY0, &p);
	ok(expect_error(COPY0, NPU_ERR_BAD_PACKET, ~0ull, NPU_OP_LAUNCH),
	   "LAUNCH on a copy ring: BAD_PACKET");
	ring_resume(COPY0);

	p.n = 0;
	LAUNCH(&p, 0x77, 1, 0);
	ring_submit(0, &p);
	ok(expect_error(0, NPU_ERR_BAD_KERNEL, ~0ull, NPU_OP_LAUNCH | 0x77 << 16),
	   "unknown kernel: BAD_KERNEL");
	ring_resume(0);

	{
		/* kernel, nargs, its argument */
		static const uint64_t cases[][3] = {
			{ NPU_KERNEL_TEST_SPIN, 1, 1ull << 62 },	/* absurd */
			{ NPU_KERNEL_TEST_SPIN, 0, 0 },	/* too few args */
			{ NPU_KERNEL_TEST_FAULT, 0, 0 },	/* too few args */
		};
		bool good = true;

		for (unsigned k = 0; k < 3; k++) {
			uint64_t a[1] = { cases[k][2] };

			p.n = 0;
			pk_launch(&p, (uint32_t)cases[k][0], 1,
				  (unsigned)cases[k][1], a);
			ring_submit(0, &p);
			good &= expect_error(0, NPU_ERR_BAD_ARGS, ~0ull, ~0u);
			ring_resume(0);
		}
		ok(good, "an absurd spin, missing args: BAD_ARGS");
	}
	/* nargs inconsistent with length, zero grid, grid product overflow */
	{
		bool good = true;

		for (int k = 0; k < 3; k++) {
			p.n = 0;
			pk_launch(&p, NPU_KERNEL_NOP, 1, 0, NULL);
			if (k == 0)
				p.dw[5] = 1;
			if (k == 1)
				p.dw[3] = 0;
			if (k == 2)
				p.dw[2] = p.dw[3] = p.dw[4] = 0x10000;
			ring_submit(0, &p);
			good &= expect_error(0, NPU_ERR_BAD_PACKET, ~0ull, NPU_OP_LAUNCH);
			ring_resume(0);
		}
		p.n = 0;
		pk_dw(&p, NPU_PKT_HDR(NPU_OP_FENCE, 0x80, 4));
		pk_dw(&p, 0);
		pk_qw(&p, fence_pa(0));
		ring_submit(0, &p);
		good &= expect_error(0, NPU_ERR_BAD_PACKET, ~0ull, NPU_OP_FENCE);
		ring_resume(0);
		p.n = 0;
		pk_ib(&p, h.va, 6);
		ring_submit(0, &p);
		good &= expect_error(0, NPU_ERR_BAD_PACKET, ~0ull, NPU_OP_INDIRECT);
		ring_resume(0);
		p.n = 0;
		pk_fill(&p, h.va, 6, 0);
		ring_submit(0, &p);
		good &= expect_error(0, NPU_ERR_BAD_PACKET, ~0ull, NPU_OP_FILL);
		ring_resume(0);
		ok(good, "LAUNCH nargs/length mismatch, zero grid, grid overflow, bad flags, "
		   "IB size, FILL size: BAD_PACKET");
		p.n = 0;
		ok(ring_run(0, &p, 5000), "ring 0 still works");
	}
}

static void test_tlb(void)
{
	struct buf a = alloc_buf(4096, 0, 1), b = alloc_buf(4096, 0, 1);
	struct buf out = alloc_buf(64, 0, 1);
	uint64_t va = va_next;
	uint32_t va_val = 0x11111111, vb_val = 0x22222222, got[2];
	struct pk p = { .n = 0 };

	va_next += 2 * 4096;
	buf_write(&a, 0, &va_val, 4);
	buf_write(&b, 0, &vb_val, 4);
	pt_map(va, NPU_PTE_VALID | a.base);
	pt_sync();
	pk_copy(&p, va, out.va, 4);
	ring_run(0, &p, 5000);
	pt_map(va, NPU_PTE_VALID | b.base);
	pt_sync();
	p.n = 0;
	pk_copy(&p, va, out.va + 4, 4);
	ring_run(0, &p, 5000);
	buf_read(&out, 0, got, 8);
	p.n = 0;
	pk_flush(&p);
	pk_copy(&p, va, out.va + 4, 4);
	ring_run(0, &p, 5000);
	buf_read(&out, 4, &va_val, 4);
	ok(got[0] == 0x11111111 && got[1] == 0x11111111 && va_val == 0x22222222,
	   "translations are cached until RING_CTRL FLUSH_TLB");
}

/* Run "COPY va -> dst" on ring r; returns the word it read. */
static uint32_t copy_word(int r, uint64_t va, const struct buf *out,
			  uint64_t off)
{
	struct pk p = { .n = 0 };
	uint32_t v = 0;

	pk_copy(&p, va, out->va + off, 4);
	if (!ring_run(r, &p, 5000))
		return 0xdead;
	buf_read(out, off, &v, 4);
	return v;
}

/*
 * MMU_INVALIDATE: a ring keeps using its cached translation after the PTE
 * changed in guest memory, until the register is written with its context
 * (or 0); rings in other contexts keep theirs.
 */
static void test_mmu_invalidate(void)
{
	struct buf a = alloc_buf(4096, 0, 1), b = alloc_buf(4096, 0, 1);
	struct buf out = alloc_buf(4096, 0, 1);
	const uint32_t va_a = 0xaaaa0001, va_b = 0xbbbb0002, other = CTX_ID + 1;
	uint64_t va = va_next;
	uint32_t zero = 0, one = 1;
	struct pk p = { .n = 0 };
	bool good = true;
	int r;

	va_next += 2 * 4096;
	buf_write(&a, 0, &va_a, 4);
	buf_write(&b, 0, &va_b, 4);
	/* rings 0 and 1 run in CTX_ID, ring 2 in another context id */
	pk_ctx(&p, other, PT_PA);
	ring_submit(2, &p);
	ring_wait(2, 2000);
	good &= rrd(2, NPU_RING_CONTEXT) == other;

	pt_map(va, NPU_PTE_VALID | a.base);
	pt_sync();
	for (r = 0; r < 3; r++)
		good &= copy_word(r, va, &out, 4 * r) == va_a;
	ok(good && rd(NPU_REG_MMU_INVALIDATE) == 0,
	   "MMU_INVALIDATE reads 0; three rings cached the translation");

	pt_map(va, NPU_PTE_VALID | b.base);
	pt_sync();
	good = true;
	for (r = 0; r < 3; r++)
		good &= copy_word(r, va, &out, 4 * r) == va_a;
	ok(good, "PTE changed in guest memory: rings still use the old page");

	wr(NPU_REG_MMU_INVALIDATE, CTX_ID + 100);
	good = true;
	for (r = 0; r < 3; r++)
		good &= copy_word(r, va, &out, 4 * r) == va_a;
	ok(good, "MMU_INVALIDATE of an unused context changes nothing");

	wr(NPU_REG_MMU_INVALIDATE, CTX_ID);
	good = copy_word(0, va, &out, 0) == va_b &&
	       copy_word(1, va, &out, 4) == va_b &&
	       copy_word(2, va, &out, 8) == va_a;
	ok(good, "MMU_INVALIDATE(ctx): both rings of ctx use the new page, "
	   "the ring in another context keeps its translation");

	wr(NPU_REG_MMU_INVALIDATE, other);
	ok(copy_word(2, va, &out, 8) == va_b,
	   "MMU_INVALIDATE(other ctx) reaches the ring in that context");

	pt_map(va, NPU_PTE_VALID | a.base);
	pt_sync();
	wr(NPU_REG_MMU_INVALIDATE, NPU_MMU_INVALIDATE_ALL);
	good = true;
	for (r = 0; r < 3; r++)
		good &= copy_word(r, va, &out, 4 * r) == va_a;
	ok(good, "MMU_INVALIDATE(0) reaches every context");

	/*
	 * A running command picks up the change: SEM_WAIT polls the word at va
	 * (page a, 0); va is moved to page b (1). It stays stalled on the
	 * cached page until the invalidation, then completes.
	 */
	buf_write(&a, 0, &zero, 4);
	buf_write(&b, 0, &one, 4);
	p.n = 0;
	pk_sem(&p, 1, va, 1);
	pk_fence(&p, ++seqno[0], fence_pa(0), 0);
	ring_submit(0, &p);
	usleep(20000);
	pt_map(va, NPU_PTE_VALID | b.base);
	pt_sync();
	usleep(50000);
	good = !(rrd(0, NPU_RING_STATUS) & NPU_RING_STS_IDLE);
	wr(NPU_REG_MMU_INVALIDATE, other);
	usleep(20000);
	good &= !(rrd(0, NPU_RING_STATUS) & NPU_RING_STS_IDLE);
	wr(NPU_REG_MMU_INVALIDATE, CTX_ID);
	ok(good && ring_wait(0, 5000) == (NPU_RING_STS_IDLE | NPU_RING_STS_ENABLED) &&
	   rrd(0, NPU_RING_FENCE) == seqno[0],
	   "SEM_WAIT in progress keeps the stale page until MMU_INVALIDATE(ctx)");

	p.n = 0;
	pk_ctx(&p, CTX_ID, PT_PA);
	ring_submit(2, &p);
	ring_wait(2, 2000);
	ok(rrd(2, NPU_RING_CONTEXT) == CTX_ID, "ring 2 back in CTX_ID");
}

/*
 * MMU_INVALIDATE while every ring streams data through the MMU (fast-path
 * copies and page-by-page kernel accesses): each write waits for the rings'
 * accesses in progress, nothing hangs and the data is right.
 */
static void test_mmu_invalidate_busy(void)
{
	const size_t n = 262144;	/* 1 MiB */
	struct buf src = alloc_buf(n * 4, 0, 1), dst[6], scaled;
	float *x = malloc(n * 4), *y;
	uint64_t t0, worst = 0;
	struct pk p;
	bool good = true;
	int i, r, writes = 0, busy = 0;

	for (size_t k = 0; k < n; k++)
		x[k] = (float)k;
	buf_write(&src, 0, x, n * 4);
	scaled = alloc_buf(n * 4, 1, 1);
	for (r = 0; r < 6; r++)
		dst[r] = alloc_buf(n * 4, r & 1, 1);
	load_kernel("vadd", 0);
	for (r = 0; r < 6; r++) {
		p.n = 0;
		for (i = 0; i < 32; i++)
			pk_copy(&p, src.va, dst[r].va, n * 4);
		if (r == 3)	/* scaled = src + src = 2 src, exact */
			for (i = 0; i < 16; i++)
				pk_launch_code(&p, &(struct launch){
					.grid = { 8 }, .block = { 4 },
					.stack = 256, .nargs = 4,
					.args = { src.va, src.va, scaled.va,
						  n } });
		pk_fence(&p, ++seqno[r], fence_pa(r), 0);
		ring_submit(r, &p);
	}
	for (r = 0; r < 6; r++)
		busy += !(rrd(r, NPU_RING_STATUS) & NPU_RING_STS_IDLE);
	t0 = host_ns();
	while (writes < 200 && host_ns() - t0 < 1000000000ull) {
		uint64_t t1 = host_ns();

		wr(NPU_REG_MMU_INVALIDATE,
		   writes++ & 1 ? CTX_ID : NPU_MMU_INVALIDATE_ALL);
		if (host_ns() - t1 > worst)
			worst = host_ns() - t1;
	}
	for (r = 0; r < 6; r++) {
		good &= ring_wait(r, 20000) == (NPU_RING_STS_IDLE | NPU_RING_STS_ENABLED) &&
			rrd(r, NPU_RING_FENCE) == seqno[r];
		y = fget(&dst[r], n);
		good &= !memcmp(x, y, n * 4);
		free(y);
	}
	y = fget(&scaled, n);
	for (size_t k = 0; k < n; k++)
		good &= y[k] == 2.0f * x[k];
	free(y);
	free(x);
	ok(good && busy && qt_alive(q),
	   "%d MMU_INVALIDATE writes while %d rings copy and scale: data "
	   "right (slowest write %.2f ms)", writes, busy, worst / 1e6);
}

/*
 * Once MMU_INVALIDATE has returned, no access through the old translation
 * is still in flight: a FILL over 32 MiB of VA that all alias page P is
 * moved to page Q; after the write returns, P is overwritten by the test
 * and must keep that content (the device does not write P any more).
 */
static void test_mmu_invalidate_inflight(void)
{
	const uint64_t span = 32ull << 20;
	struct buf pb = alloc_buf(4096, 0, 1), qb = alloc_buf(4096, 0, 1);
	uint64_t va = va_next, off;
	uint32_t pg[1024];
	struct pk p = { .n = 0 };
	bool busy, clean = true, filled = true;
	int i;

	va_next += span + 4096;
	for (off = 0; off < span; off += 4096)
		pt_map(va + off, NPU_PTE_VALID | NPU_PTE_WRITE | pb.base);
	pt_sync();
	for (i = 0; i < 8; i++)
		pk_fill(&p, va, span, 0x11111111);
	pk_fence(&p, ++seqno[0], fence_pa(0), 0);
	ring_submit(0, &p);
	usleep(5000);
	busy = !(rrd(0, NPU_RING_STATUS) & NPU_RING_STS_IDLE);
	for (off = 0; off < span; off += 4096)
		pt_map(va + off, NPU_PTE_VALID | NPU_PTE_WRITE | qb.base);
	pt_sync();
	wr(NPU_REG_MMU_INVALIDATE, CTX_ID);
	qt_memset(q, pb.base, 0x5e, 4096);
	ring_wait(0, 20000);
	qt_memread(q, pb.base, pg, 4096);
	for (i = 0; i < 1024; i++)
		clean &= pg[i] == 0x5e5e5e5e;
	qt_memread(q, qb.base, pg, 4096);
	for (i = 0; i < 1024; i++)
		filled &= pg[i] == 0x11111111;
	ok(clean && filled && rrd(0, NPU_RING_FENCE) == seqno[0],
	   "no write to the old page after MMU_INVALIDATE returned (FILL %s "
	   "at the write)", busy ? "running" : "already done");
}

static void test_concurrency(void)
{
	struct buf t = alloc_buf(4096, 0, 1);
	struct pk p = { .n = 0 };
	uint64_t ts[8], span;
	const uint64_t spin = 100000000;	/* 100 ms */
	bool good = true;

	/* two small kernels on two rings overlap (best of three on a busy host) */
	for (int try = 0; try < 3; try++) {
		good = true;
		for (int r = 0; r < 2; r++) {
			p.n = 0;
			pk_ts(&p, t.va + 16 * r);
			LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 2, spin);
			pk_ts(&p, t.va + 16 * r + 8);
			pk_fence(&p, ++seqno[r], fence_pa(r), 0);
			ring_submit(r, &p);
		}
		for (int r = 0; r < 2; r++)
			good &= ring_wait(r, 10000) ==
				(NPU_RING_STS_IDLE | NPU_RING_STS_ENABLED);
		buf_read(&t, 0, ts, 32);
		span = (ts[1] > ts[3] ? ts[1] : ts[3]) -
		       (ts[0] < ts[2] ? ts[0] : ts[2]);
		good &= ts[0] < ts[3] && ts[2] < ts[1] && ts[1] - ts[0] >= spin &&
			ts[3] - ts[2] >= spin;
		if (good && span < 2 * spin - spin / 4)
			break;
	}
	ok(good && span < 2 * spin - spin / 4,
	   "two TEST_SPIN(100 ms, 2 blocks) on two rings overlap (span %.1f ms)",
	   span / 1e6);

	/* a short command is not stretched to the host's timer slack */
	{
		uint64_t best = ~0ull;

		for (int k = 0; k < 5; k++) {
			p.n = 0;
			pk_ts(&p, t.va);
			LAUNCH(&p, NPU_KERNEL_NOP, 1, 0);
			pk_ts(&p, t.va + 8);
			good = ring_run(0, &p, 5000);
			buf_read(&t, 0, ts, 16);
			if (ts[1] - ts[0] < best)
				best = ts[1] - ts[0];
		}
		ok(good && best >= 4000, "NOP launch takes >= launch-ns (best %.1f us, model 4 us)",
		   best / 1e3);
	}

	/* two kernels each wanting all 8 units serialize */
	good = true;
	for (int r = 2; r < 4; r++) {
		p.n = 0;
		pk_ts(&p, t.va + 16 * r);
		LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 8, spin);
		pk_ts(&p, t.va + 16 * r + 8);
		pk_fence(&p, ++seqno[r], fence_pa(r), 0);
		ring_submit(r, &p);
	}
	for (int r = 2; r < 4; r++)
		good &= ring_wait(r, 10000) == (NPU_RING_STS_IDLE | NPU_RING_STS_ENABLED);
	buf_read(&t, 32, ts, 32);
	span = (ts[1] > ts[3] ? ts[1] : ts[3]) - (ts[0] < ts[2] ? ts[0] : ts[2]);
	ok(good && span >= 2 * spin,
	   "two TEST_SPIN(100 ms, 8 blocks) on 8 units serialize (span %.1f ms)",
	   span / 1e6);

	/* per-CU busy counters */
	{
		uint64_t busy = 0;
		int nbusy = 0;

		for (int cu = 0; cu < 8; cu++) {
			uint64_t b = rd(NPU_REG_CU_BUSY_LO(cu)) |
				     (uint64_t)rd(NPU_REG_CU_BUSY_HI(cu)) << 32;

			busy += b;
			nbusy += b >= spin;
		}
		ok(nbusy == 8 && busy >= 20 * spin,
		   "CU_BUSY counters: every unit busy >= 100 ms (total %.0f ms)",
		   busy / 1e6);
	}
	/* ring counters */
	{
		struct buf h = alloc_buf(65536, 0, 1), d = alloc_buf(65536, 1, 1);
		uint64_t c0 = rrd64(COPY1, NPU_RING_CMDS_LO), b0 = rrd64(COPY1, NPU_RING_BYTES_LO);
		uint64_t busy0 = rrd64(COPY1, NPU_RING_BUSY_LO), o0 = rrd64(1, NPU_RING_OPS_LO);

		p.n = 0;
		pk_copy(&p, h.va, d.va, 65536);
		pk_copy(&p, d.va, h.va, 1000);
		good = ring_run(COPY1, &p, 5000);
		good &= rrd64(COPY1, NPU_RING_CMDS_LO) - c0 == 3 &&	/* + fence */
			rrd64(COPY1, NPU_RING_BYTES_LO) - b0 == 65536 + 1000 + 4 &&
			rrd64(COPY1, NPU_RING_BUSY_LO) > busy0 + 2 * 2000;
		/* a kernel's ops are its instructions: at least two loads,
		 * an add and a store per element */
		load_kernel("vadd", 0);
		p.n = 0;
		pk_launch_code(&p, &(struct launch){
			.grid = { 1 }, .block = { 1 }, .stack = 256, .nargs = 4,
			.args = { d.va, d.va, d.va, 1000 } });
		good &= ring_run(1, &p, 5000) &&
			rrd64(1, NPU_RING_OPS_LO) - o0 >= 4 * 1000 &&
			rrd64(1, NPU_RING_OPS_LO) - o0 < 64 * 1000;
		ok(good, "ring counters: commands, bytes, busy ns, ops");
	}
}

static void test_resets(void)
{
	struct buf s = alloc_buf(4096, 0, 1);
	struct pk p = { .n = 0 };
	uint32_t zero = 0;
	uint64_t t0;
	bool good;

	/* ring reset while a kernel hangs */
	LAUNCH(&p, NPU_KERNEL_TEST_HANG, 8, 0);
	pk_fence(&p, ++seqno[0], fence_pa(0), 0);
	ring_submit(0, &p);
	usleep(30000);
	good = rrd(0, NPU_RING_STATUS) == NPU_RING_STS_ENABLED;
	/* the hang holds all 8 units: a launch on ring 1 must wait */
	p.n = 0;
	LAUNCH(&p, NPU_KERNEL_NOP, 1, 0);
	pk_fence(&p, ++seqno[1], fence_pa(1), 0);
	ring_submit(1, &p);
	usleep(30000);
	good &= rrd(1, NPU_RING_FENCE) != seqno[1];
	t0 = host_ns();
	rwr(0, NPU_RING_CONTROL, NPU_RING_CTL_RESET);
	ok(good && rrd(0, NPU_RING_STATUS) == NPU_RING_STS_IDLE &&
	   rrd(0, NPU_RING_HEAD) == 0 && rrd(0, NPU_RING_TAIL) == 0 &&
	   rrd(0, NPU_RING_FENCE) == seqno[0] - 1 && host_ns() - t0 < 1000000000ull,
	   "ring reset aborts TEST_HANG: idle, disabled, HEAD = TAIL = 0");
	ok(ring_wait(1, 5000) && rrd(1, NPU_RING_FENCE) == seqno[1],
	   "units freed by the reset: the waiting launch on ring 1 runs");
	seqno[0]--;
	tail[0] = 0;
	ring_init(0);
	ring_ctx(0);
	p.n = 0;
	LAUNCH(&p, NPU_KERNEL_NOP, 8, 0);
	ok(ring_run(0, &p, 5000), "ring 0 works again after its reset");

	/* ring reset during SEM_WAIT */
	buf_write(&s, 0, &zero, 4);
	p.n = 0;
	pk_sem(&p, 1, s.va, 1);
	ring_submit(COPY1, &p);
	usleep(20000);
	good = !(rrd(COPY1, NPU_RING_STATUS) & NPU_RING_STS_IDLE);
	rwr(COPY1, NPU_RING_CONTROL, NPU_RING_CTL_RESET);
	ok(good && rrd(COPY1, NPU_RING_STATUS) == NPU_RING_STS_IDLE, "ring reset aborts SEM_WAIT");
	tail[COPY1] = 0;
	ring_init(COPY1);
	ring_ctx(COPY1);

	/* whole-device reset with rings busy */
	p.n = 0;
	LAUNCH(&p, NPU_KERNEL_TEST_HANG, 1, 0);
	ring_submit(2, &p);
	p.n = 0;
	pk_sem(&p, 1, s.va, 1);
	ring_submit(COPY0, &p);
	p.n = 0;
	LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 1, 5000000000ull);
	ring_submit(3, &p);
	usleep(20000);
	t0 = host_ns();
	wr(NPU_REG_RESET, NPU_RESET_MAGIC);
	good = host_ns() - t0 < 1000000000ull;
	for (unsigned r = 0; r < nrings; r++)
		good &= rrd(r, NPU_RING_STATUS) == NPU_RING_STS_IDLE &&
			rrd64(r, NPU_RING_CMDS_LO) == 0 && rrd(r, NPU_RING_FENCE) == 0;
	good &= rd(NPU_REG_CU_BUSY_LO(0)) == 0 && dev_clock() < 500000000ull;
	ok(good, "device reset aborts hang, SEM_WAIT and SPIN; clears counters and clock");
	for (unsigned r = 0; r < nrings; r++) {
		tail[r] = 0;
		seqno[r] = 0;
		ring_init(r);
		ring_ctx(r);
	}
	good = true;
	for (unsigned r = 0; r < nrings; r++) {
		p.n = 0;
		good &= ring_run(r, &p, 5000);
	}
	ok(good, "all rings work after the device reset");
}

/* ------------------------------------------------------------- fuzz */

static struct buf fz_host, fz_dev;

static uint64_t fuzz_va(void)
{
	switch (rnd() % 10) {
	case 0:
		return rnd64() & ((1ull << 40) - 1);
	case 1:
		return fz_dev.va + rnd() % fz_dev.size;
	case 2:
		return fz_host.va + fz_host.size + rnd() % 4096;	/* guard */
	default:
		return fz_host.va + (rnd() % fz_host.size & (rnd() & 1 ? ~3u : ~0u));
	}
}

static uint64_t fuzz_size(void)
{
	switch (rnd() % 5) {
	case 0:
		return rnd64() >> (rnd() % 64);
	case 1:
		return rnd() % 70000;
	default:
		return rnd() % 4096;
	}
}

static void fuzz_packet(struct pk *p, unsigned r)
{
	static const uint8_t ops[] = {
		NPU_OP_NOP, NPU_OP_COPY, NPU_OP_FILL, NPU_OP_LAUNCH,
		NPU_OP_LAUNCH, NPU_OP_LAUNCH, NPU_OP_TIMESTAMP, NPU_OP_SEM_WAIT,
		NPU_OP_SEM_SIGNAL, NPU_OP_INDIRECT, NPU_OP_SET_CONTEXT,
		NPU_OP_FENCE, NPU_OP_RING_CTRL, NPU_OP_SIGNAL, NPU_OP_WAIT_MEM64,
	};
	uint32_t op = ops[rnd() % sizeof(ops)];
	unsigned start = p->n;

	if (rnd() % 10 == 0) {
		/* anything at all */
		unsigned len = rnd() % 4 ? 1 + rnd() % 12 : rnd() % 64;

		pk_dw(p, NPU_PKT_HDR(rnd() & 0xff, rnd() % 4 ? 0 : rnd(), len));
		for (unsigned j = 1; j < len; j++)
			pk_dw(p, rnd());
		return;
	}
	switch (op) {
	case NPU_OP_NOP:
		pk_nop(p, 1 + rnd() % 8);
		break;
	case NPU_OP_COPY:
		pk_copy(p, fuzz_va(), fuzz_va(), fuzz_size());
		break;
	case NPU_OP_FILL:
		pk_fill(p, fuzz_va(), fuzz_size() & (rnd() % 4 ? ~3ull : ~0ull), rnd());
		break;
	case NPU_OP_LAUNCH: {
		uint64_t a[NPU_LAUNCH_MAX_ARGS];
		uint32_t kernel = rnd() % 8 ? rnd() % 14 :
				  rnd() % 2 ? 0x100 + rnd() % 4 : rnd();

		for (unsigned j = 0; j < NPU_LAUNCH_MAX_ARGS; j++) {
			switch (rnd() % 4) {
			case 0:
				a[j] = fuzz_va();
				break;
			case 1:
				a[j] = rnd() % 64;
				break;
			case 2:
				a[j] = rnd() % 600;
				break;
			default:
				a[j] = fuzz_size();
				break;
			}
		}
		if (kernel == NPU_KERNEL_TEST_SPIN)
			a[0] = rnd() % 2000000;
		if (kernel == NPU_KERNEL_TEST_HANG && rnd() % 4)
			kernel = NPU_KERNEL_NOP;
		pk_launch(p, kernel, 1 + rnd() % 16, rnd() % 4 ? 9 : rnd() % 17, a);
		p->dw[start + 3] = rnd() % 8 ? 1 : rnd();
		break;
	}
	case NPU_OP_TIMESTAMP:
		pk_ts(p, fuzz_va());
		break;
	case NPU_OP_SEM_WAIT:
		/* mostly values that pass (0 is always passed by small words) */
		pk_sem(p, 1, fuzz_va() & ~3ull, rnd() % 8 ? 0 : rnd());
		break;
	case NPU_OP_SEM_SIGNAL:
		pk_sem(p, 0, fuzz_va(), rnd());
		break;
	case NPU_OP_SIGNAL:
		pk_signal(p, fuzz_va() & (rnd() % 4 ? ~31ull : ~0ull), rnd64());
		break;
	case NPU_OP_WAIT_MEM64:
		pk_wait64(p, fuzz_va() & (rnd() % 4 ? ~7ull : ~0ull),
			  rnd() % 8 ? 0 : rnd64());
		break;
	case NPU_OP_INDIRECT:
		pk_ib(p, fuzz_va() & ~3ull, (rnd() % 1024) * 4);
		break;
	case NPU_OP_SET_CONTEXT:
		pk_ctx(p, rnd(), rnd() % 4 ? PT_PA : rnd() % 2 ? 0 :
		       rnd64() & ~0xfffull & ((1ull << 40) - 1));
		break;
	case NPU_OP_FENCE:
		pk_fence(p, rnd(), rnd() % 4 ? fence_pa(r) :
			 (rnd() % 0x40000000) & ~3u, rnd() & 1);
		break;
	default:
		pk_flush(p);
		break;
	}
	/* sometimes corrupt one dword (the header included) */
	if (rnd() % 8 == 0)
		p->dw[start + rnd() % (p->n - start)] ^= 1u << (rnd() % 32);
}

static void test_fuzz(void)
{
	const int iters = 20000;
	uint64_t t0 = host_ns(), cmds = 0;
	unsigned halts = 0, resets = 0;
	uint32_t *junk;
	bool good;
	int i;

	fz_host = alloc_buf(65536, 0, 1);
	fz_dev = alloc_buf(65536, 1, 1);
	/* the host buffer holds random packets, for random IBs */
	junk = malloc(65536);
	for (i = 0; i < 16384; ) {
		struct pk p = { .n = 0 };

		fuzz_packet(&p, 0);
		for (unsigned j = 0; j < p.n && i < 16384; j++)
			junk[i++] = p.dw[j];
	}
	buf_write(&fz_host, 0, junk, 65536);
	free(junk);

	for (i = 0; i < iters && !q->dead; i++) {
		unsigned r = rnd() % nrings;
		uint32_t k = rnd() % 64;

		if (k < 2) {
			/* random register write; the RESET magic now and then */
			uint32_t off = rnd() % 0x2000 & ~3u;

			if (rnd() % 64 == 0) {
				wr(NPU_REG_RESET, NPU_RESET_MAGIC);
				resets++;
			} else if (off != NPU_REG_RESET) {
				wr(off, rnd() % 4 ? rnd() : (rnd() & 0xffff));
			}
		} else if (k < 3) {
			rd(rnd() % 0x2000 & ~3u);
		} else if (k < 4) {
			rwr(r, NPU_RING_CONTROL, rnd() & 7);
		} else if (k < 5) {
			/* re-program a ring that a random write broke */
			rwr(r, NPU_RING_CONTROL, NPU_RING_CTL_RESET);
			tail[r] = 0;
			ring_init(r);
		} else {
			struct pk p = { .n = 0 };
			unsigned n = 1 + rnd() % 4;

			for (unsigned j = 0; j < n; j++)
				fuzz_packet(&p, r);
			if (p.n < RING_BYTES / 8)
				ring_submit(r, &p);
			if (rnd() % 2) {
				uint32_t pend = rd(NPU_REG_ERR_PENDING);

				halts += __builtin_popcount(pend);
				for (unsigned j = 0; j < nrings; j++)
					if (pend & (1u << j))
						ring_resume(j);
			}
		}
	}
	for (unsigned r = 0; r < nrings; r++)
		cmds += rrd64(r, NPU_RING_CMDS_LO);
	good = !q->dead && qt_alive(q);
	ok(good, "fuzz: %d iterations in %.1f s (%u halts seen, %u device resets, "
	   "%llu commands since the last), QEMU responsive", i,
	   (host_ns() - t0) / 1e9, halts, resets, (unsigned long long)cmds);
	wr(NPU_REG_RESET, NPU_RESET_MAGIC);
	pci_setup();
	msix_setup();
	for (int t = 0; t < pt_used; t++)
		pt_dirty[t] = 1;
	pt_sync();
	good = true;
	for (unsigned r = 0; r < nrings; r++) {
		struct pk p = { .n = 0 };

		tail[r] = 0;
		seqno[r] = 0;
		ring_init(r);
		ring_ctx(r);
		pk_fill(&p, fz_host.va, 64, r);
		if (r < 4)
			LAUNCH(&p, NPU_KERNEL_NOP, 1, 0);
		good &= ring_run(r, &p, 5000);
	}
	ok(good && rd(NPU_REG_ID) == NPU_ID_MAGIC, "after the fuzz: device reset, all rings work");
}

/* Timing model, on an instance with slow figures. */
static void test_timing(void)
{
	struct buf t, h, d, d2;
	struct pk p = { .n = 0 };
	uint64_t ts[2];
	const uint64_t sz = 2 << 20;
	/* link 20 MB/s, mem 80 MB/s */
	const double link = 20e6, mem = 80e6, copy_ns = 100000,
		     launch_ns = 200000;
	bool good;

	start("link-bw-mbps=20,mem-bw-mbps=80,cu-mops=4,launch-ns=200000,"
	      "copy-ns=100000,compute-units=4,devmem-size=16M", 0);
	ok(rd(NPU_REG_LINK_BW_MBPS) == 20 && rd(NPU_REG_DEVMEM_SIZE_LO) == 16u << 20 &&
	   NPU_CAPS_CUS(rd(NPU_REG_CAPS)) == 4, "properties reflected in registers");
	t = alloc_buf(4096, 0, 1);
	h = alloc_buf(sz, 0, 1);
	d = alloc_buf(sz, 1, 1);
	d2 = alloc_buf(sz, 1, 1);

/*
 * Time a command between two TIMESTAMPs. It must never complete early; on a
 * loaded host it may be late, so the best of up to three runs must be within
 * 25% (+ 5 ms) of the model.
 */
#define MEASURE(ring, what, expect_ns) do { \
	double got_ = 0, best_ = 1e30, want_ = (expect_ns); \
	bool early_ = false; \
	good = true; \
	for (int try_ = 0; try_ < 3; try_++) { \
		p.n = 0; \
		pk_ts(&p, t.va); \
		what; \
		pk_ts(&p, t.va + 8); \
		good &= ring_run(ring, &p, 20000); \
		buf_read(&t, 0, ts, 16); \
		got_ = ts[1] - ts[0]; \
		early_ |= got_ < want_ * 0.99; \
		best_ = got_ < best_ ? got_ : best_; \
		if (best_ <= want_ * 1.25 + 5e6) \
			break; \
	} \
	ok(good && !early_ && best_ <= want_ * 1.25 + 5e6, \
	   "timing: %s took %.2f ms, model %.2f ms", #what, best_ / 1e6, \
	   want_ / 1e6); \
} while (0)

	MEASURE(4, pk_copy(&p, h.va, d.va, sz), copy_ns + sz / link * 1e9);
	MEASURE(5, pk_copy(&p, d.va, d2.va, sz), copy_ns + sz / mem * 1e9);
	MEASURE(4, pk_fill(&p, d.va, sz, 0), sz / mem * 1e9);
	MEASURE(5, pk_fill(&p, h.va, sz / 2, 0), sz / 2 / link * 1e9);
	/* the diagnostic kernels: the launch overhead, and TEST_SPIN's ns */
	MEASURE(2, LAUNCH(&p, NPU_KERNEL_NOP, 4, 0), launch_ns);
	MEASURE(3, LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 1, 30000000), launch_ns + 30e6);
	stop("timing instance");

	/* timing off: commands run as fast as possible, TEST_SPIN still spins */
	start("timing=off,link-bw-mbps=1,mem-bw-mbps=1,cu-mops=1", 0);
	t = alloc_buf(4096, 0, 1);
	h = alloc_buf(sz, 0, 1);
	d = alloc_buf(sz, 1, 1);
	p.n = 0;
	pk_ts(&p, t.va);
	pk_copy(&p, h.va, d.va, sz);
	LAUNCH(&p, NPU_KERNEL_NOP, 1, 0);
	pk_ts(&p, t.va + 8);
	good = ring_run(0, &p, 20000);
	buf_read(&t, 0, ts, 16);
	ok(good && rd(NPU_REG_FEATURES) ==
	   (NPU_FEATURE_USER_CODE | NPU_FEATURE_USER_QUEUES |
	    NPU_FEATURE_TENSOR) &&
	   ts[1] - ts[0] < 500000000ull,
	   "timing=off: a copy modelled at seconds and a NOP take %.1f ms",
	   (ts[1] - ts[0]) / 1e6);
	MEASURE(0, LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 1, 20000000), 20e6);

	/* diagnostic only: 64 MiB of COPY host->devmem and FILL, timing off */
	d2 = alloc_buf(sz, 1, 1);
	for (int kind = 0; kind < 5; kind++) {
		static const char *const what[] = {
			"COPY host->devmem", "COPY devmem->host",
			"COPY devmem->devmem", "FILL devmem", "FILL host"
		};

		p.n = 0;
		pk_ts(&p, t.va);
		for (int i = 0; i < 32; i++) {
			if (kind == 0)
				pk_copy(&p, h.va, d.va, sz);
			else if (kind == 1)
				pk_copy(&p, d.va, h.va, sz);
			else if (kind == 2)
				pk_copy(&p, d.va, d2.va, sz);
			else
				pk_fill(&p, kind == 3 ? d.va : h.va, sz, i);
		}
		pk_ts(&p, t.va + 8);
		good = ring_run(0, &p, 20000);
		buf_read(&t, 0, ts, 16);
		diag("timing=off: 64 MiB %s: %.0f MB/s", what[kind],
		     good ? 32.0 * sz * 1e3 / (ts[1] - ts[0]) : 0.0);
	}
	stop("timing=off instance");
}

static uint64_t qemu_cpu_ns_of(bool engines);

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/*
 * The launch pipeline (timing=virtual, exact): a NOP the engine meets cold
 * costs launch-ns; one right behind another launch, with only zero-time
 * commands between, costs launch-gap-ns; after the ring idled, cold again.
 */
static void test_launch_gap(void)
{
	struct buf t;
	struct pk p = { .n = 0 };
	uint64_t ts[4];
	bool good;

	start("timing=virtual,launch-ns=4000,launch-gap-ns=500", 0);
	t = alloc_buf(4096, 0, 1);
	pk_ts(&p, t.va);
	LAUNCH(&p, NPU_KERNEL_NOP, 1, 0);
	pk_ts(&p, t.va + 8);
	for (int i = 0; i < 4; i++)
		LAUNCH(&p, NPU_KERNEL_NOP, 1, 0);
	pk_ts(&p, t.va + 16);
	good = ring_run(0, &p, 5000);
	buf_read(&t, 0, ts, 24);
	ok(good && ts[1] - ts[0] == 4000 && ts[2] - ts[1] == 4 * 500,
	   "a cold NOP takes launch-ns (%llu ns), four behind it launch-gap-ns "
	   "each (%llu ns)", (unsigned long long)(ts[1] - ts[0]),
	   (unsigned long long)(ts[2] - ts[1]));
	p.n = 0;
	pk_ts(&p, t.va);
	LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 1, 10000);
	pk_ts(&p, t.va + 8);
	LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 1, 10000);
	pk_ts(&p, t.va + 16);
	good = ring_run(0, &p, 5000);
	buf_read(&t, 0, ts, 24);
	ok(good && ts[1] - ts[0] == 4000 + 10000 && ts[2] - ts[1] == 500 + 10000,
	   "after an idle ring the first launch is cold again (%llu, then %llu ns)",
	   (unsigned long long)(ts[1] - ts[0]),
	   (unsigned long long)(ts[2] - ts[1]));
	stop("launch-gap instance");

	start("timing=virtual,launch-ns=1000,launch-gap-ns=3000", 0);
	t = alloc_buf(4096, 0, 1);
	p.n = 0;
	pk_ts(&p, t.va);
	LAUNCH(&p, NPU_KERNEL_NOP, 1, 0);
	LAUNCH(&p, NPU_KERNEL_NOP, 1, 0);
	pk_ts(&p, t.va + 8);
	good = ring_run(0, &p, 5000);
	buf_read(&t, 0, ts, 16);
	ok(good && ts[1] - ts[0] == 2000,
	   "launch-gap-ns above launch-ns costs launch-ns (%llu ns for two)",
	   (unsigned long long)(ts[1] - ts[0]));
	stop("launch-gap clamp instance");
}

/*
 * How precisely short commands take their modelled time (timing=on,
 * default properties): 200 back-to-back COPYs of 4 KiB host -> device
 * memory (model 3024 ns) and 100 TEST_SPINs of 20 us (model 24 us), each
 * between two TIMESTAMPs. None may be early; the median and 90th
 * percentile of the excess are reported.
 */
static void test_timing_precision(void)
{
	enum { NC = 200, NS = 100 };
	struct buf t, h, d;
	struct pk p = { .n = 0 };
	static uint64_t ts[2 * NC];
	int64_t ex[NC];
	bool good, early = false;

	start(NULL, 0);
	t = alloc_buf(sizeof(ts), 0, 1);
	h = alloc_buf(4096, 0, 1);
	d = alloc_buf(4096, 1, 1);
	for (int kind = 0; kind < 2; kind++) {
		int n = kind ? NS : NC;
		/* a TEST_SPIN behind another one: its ns, and a launch gap
		 * that counts from the one before's end (it may be over) */
		int64_t model = kind ? 20000 : 2000 + 4096 * 1000 / 4000;

		p.n = 0;
		for (int i = 0; i < n; i++) {
			pk_ts(&p, t.va + 16 * i);
			if (kind)
				LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 1, 20000);
			else
				pk_copy(&p, h.va, d.va, 4096);
			pk_ts(&p, t.va + 16 * i + 8);
		}
		good = ring_run(kind ? 0 : COPY0, &p, 20000);
		buf_read(&t, 0, ts, 16 * n);
		for (int i = 0; i < n; i++) {
			ex[i] = (int64_t)(ts[2 * i + 1] - ts[2 * i]) - model -
				(kind && !i ? 4000 : 0);
			early |= ex[i] < 0;
		}
		qsort(ex, n, sizeof(ex[0]), cmp_i64);
		diag("timing precision: %s, model %lld ns: excess median %.1f us, "
		     "p90 %.1f us, max %.1f us", kind ? "TEST_SPIN 20 us" : "COPY 4 KiB",
		     (long long)model, ex[n / 2] / 1e3, ex[n * 9 / 10] / 1e3,
		     ex[n - 1] / 1e3);
		ok(good && !early, "timing precision: no %s completes early",
		   kind ? "TEST_SPIN" : "COPY");
	}
	/* 100 NOPs in an indirect buffer, a TIMESTAMP before the first and
	 * after each: a packet there starts where the one before ended, so
	 * the host work between two launches is inside launch-gap-ns, but
	 * none may end before the model lets it (launch-ns for the cold
	 * first, launch-gap-ns after each launch's end) */
	{
		enum { NI = 100 };
		struct pk ib = { .n = 0 };
		struct buf ibb = alloc_buf(16 * NI + 4096, 0, 1);

		pk_ts(&ib, t.va);
		for (int i = 0; i < NI; i++) {
			LAUNCH(&ib, NPU_KERNEL_NOP, 1, 0);
			pk_ts(&ib, t.va + 8 + 8 * i);
		}
		buf_write(&ibb, 0, ib.dw, ib.n * 4);
		p.n = 0;
		pk_ib(&p, ibb.va, ib.n * 4);
		good = ring_run(0, &p, 20000);
		buf_read(&t, 0, ts, 8 * (NI + 1));
		early = false;
		for (int i = 0; i < NI; i++)
			early |= ts[1 + i] < ts[0] + 4000 + 500 * (uint64_t)i;
		diag("timing precision: %d NOPs in an IB took %.2f us (model "
		     "%.1f us)", NI, (ts[NI] - ts[0]) / 1e3,
		     (4000 + 500 * (NI - 1)) / 1e3);
		ok(good && !early, "timing precision: no NOP of an IB completes "
		   "early");
	}
	/* what waiting out modelled time costs the host: 100 x 1 ms */
	{
		uint64_t c0, c1, w0, w1;

		p.n = 0;
		for (int i = 0; i < 100; i++)
			LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 1, 1000000);
		c0 = qemu_cpu_ns_of(true);
		w0 = host_ns();
		good = ring_run(0, &p, 20000);
		w1 = host_ns();
		c1 = qemu_cpu_ns_of(true);
		diag("timing precision: 100 TEST_SPINs of 1 ms took %.1f ms, "
		     "the device's threads' CPU %.1f ms", (w1 - w0) / 1e6,
		     (c1 - c0) / 1e6);
		ok(good, "timing precision: 100 TEST_SPINs of 1 ms");
	}
	stop("timing precision instance");
}

/* The largest configuration: 16 compute rings, 64 units. */
static void test_max_config(void)
{
	struct pk p = { .n = 0 };
	bool good = true;

	start("compute-rings=16,copy-rings=0,compute-units=64,devmem-size=1M", 0);
	ok(nrings == 16 && nvec == 18 && NPU_CAPS_CUS(rd(NPU_REG_CAPS)) == 64 &&
	   rd(NPU_REG_DEVMEM_SIZE_LO) == 1u << 20,
	   "16 rings, 18 MSI-X vectors, 64 units, 1 MiB device memory");
	for (unsigned r = 0; r < nrings; r++) {
		p.n = 0;
		pk_fence(&p, 0x500 + r, fence_pa(r), 1);
		ring_submit(r, &p);
	}
	for (unsigned r = 0; r < nrings; r++)
		good &= wait_msi(r, 5000) && rrd(r, NPU_RING_FENCE) == 0x500 + r;
	ok(good, "fence + MSI-X on each of 16 rings");
	p.n = 0;
	pk_dw(&p, NPU_PKT_HDR(0x7f, 0, 1));
	ring_submit(15, &p);
	ok(expect_error(15, NPU_ERR_BAD_OPCODE, ~0ull, 0x7f) && wait_msi(16, 5000),
	   "error on ring 15 raises vector 16");
	p.n = 0;
	LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 100, 1000000);
	ok(ring_run(0, &p, 5000) && rd(NPU_REG_CU_BUSY_LO(63)) >= 1000000 &&
	   rd(NPU_REG_CU_BUSY_LO(64)) == 0, "a 100-block launch holds all 64 units");
	stop("max-config instance");
}

static int run_capture(const char *const *argv, char *out, size_t max)
{
	int pfd[2], status;
	size_t n = 0;
	ssize_t r;
	pid_t pid;

	if (pipe(pfd))
		return -1;
	pid = fork();
	if (!pid) {
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		close(pfd[0]);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	while (n + 1 < max && (r = read(pfd[0], out + n, max - n - 1)) > 0)
		n += r;
	out[n] = 0;
	close(pfd[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_properties(void)
{
	static char out[65536];
	const char *props[] = { "compute-rings", "copy-rings", "compute-units",
		"devmem-size", "timing", "link-bw-mbps", "mem-bw-mbps", "cu-mops",
		"launch-ns", "launch-gap-ns", "copy-ns", "uq-compute-engines", "uq-copy-engines",
		"uq-max-queues", "uq-doorbell-pages", "uq-timeslice-us",
		"uq-switch-ns", "l2-kib", "l2-bw-mbps" };
	const char *argv[] = { qemu_bin, "-device", "npu,help", NULL };
	const char *bad[] = { "compute-rings=0", "compute-rings=12,copy-rings=5",
		"compute-units=65", "devmem-size=3M", "cu-mops=0", "launch-ns=2000000000", "launch-gap-ns=2000000000",
		"uq-compute-engines=17", "uq-copy-engines=17", "uq-max-queues=0",
		"uq-max-queues=65537", "uq-doorbell-pages=3",
		"uq-doorbell-pages=8192", "uq-timeslice-us=5",
		"uq-switch-ns=1000001", "l2-kib=32", "l2-kib=96",
		"l2-kib=131072", "l2-bw-mbps=0" };
	bool good;
	int rc;

	rc = run_capture(argv, out, sizeof(out));
	good = rc == 0;
	for (unsigned i = 0; i < sizeof(props) / sizeof(props[0]); i++)
		good &= strstr(out, props[i]) != NULL;
	ok(good, "-device npu,help lists all properties");

	good = true;
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char dev[128];
		const char *av[] = { qemu_bin, "-machine", "pc", "-accel", "qtest",
			"-display", "none", "-nodefaults", "-nic", "none",
			"-L", "/usr/share/seabios", "-L", "/usr/share/qemu",
			"-device", dev, NULL };

		snprintf(dev, sizeof(dev), "npu,%s", bad[i]);
		rc = run_capture(av, out, sizeof(out));
		if (rc != 1 || !strstr(out, "npu")) {
			diag("%s: rc %d, %s", bad[i], rc, out);
			good = false;
		}
	}
	ok(good, "invalid properties rejected with an error, no crash");
}

static void test_hotplug(void)
{
	const char *extra[] = { NULL };
	const char *r;
	bool good;
	struct pk p = { .n = 0 };

	q = qt_start(qemu_bin, extra, 1);
	if (!q || q->dead) {
		ok(0, "start QEMU with QMP");
		return;
	}
	r = qmp_cmd(q, "{\"execute\":\"device_add\",\"arguments\":{\"driver\":\"npu\","
		    "\"id\":\"npu0\",\"addr\":\"4\",\"compute-rings\":2,\"copy-rings\":1}}");
	ok(r && strstr(r, "\"return\""), "device_add npu");
	r = qmp_cmd(q, "{\"execute\":\"device_add\",\"arguments\":{\"driver\":\"npu\","
		    "\"id\":\"npu9\",\"addr\":\"5\",\"compute-units\":0}}");
	ok(r && strstr(r, "\"error\"") && strstr(r, "compute-units"),
	   "device_add with a bad property fails cleanly");

	pci_setup();
	msix_setup();
	pt_reset();
	pt_sync();
	ncompute = 2;
	nrings = 3;
	memset(tail, 0, sizeof(tail));
	for (unsigned k = 0; k < nrings; k++) {
		ring_init(k);
		ring_ctx(k);
	}
	good = rd(NPU_REG_CAPS) == (2 | 1 << 8 | 8 << 16);
	p.n = 0;
	good &= ring_run(2, &p, 5000);
	/* leave work hanging on two rings, then unplug */
	p.n = 0;
	LAUNCH(&p, NPU_KERNEL_TEST_HANG, 1, 0);
	ring_submit(0, &p);
	p.n = 0;
	LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 1, 5000000000ull);
	ring_submit(1, &p);
	usleep(20000);
	ok(good, "hot-plugged device works");
	r = qmp_cmd(q, "{\"execute\":\"device_del\",\"arguments\":{\"id\":\"npu0\"}}");
	qt_outl(q, 0xae08, 1u << SLOT);	/* ACPI eject */
	good = r && strstr(r, "\"return\"") && !qmp_wait_event(q, "DEVICE_DELETED", 10000);
	ok(good && cfg_readl(0) == 0xffffffff,
	   "device_del with a hanging kernel: threads joined, device gone");
	r = qmp_cmd(q, "{\"execute\":\"device_add\",\"arguments\":{\"driver\":\"npu\","
		    "\"id\":\"npu1\",\"addr\":\"4\"}}");
	ok(r && strstr(r, "\"return\"") && qmp_cmd(q, "{\"execute\":\"query-status\"}"),
	   "device_add again after removal");

	/* system_reset (the DeviceClass reset) with a hanging kernel */
	pci_setup();
	msix_setup();
	pt_sync();
	ncompute = 8;
	nrings = 10;
	memset(tail, 0, sizeof(tail));
	ring_init(0);
	ring_ctx(0);
	p.n = 0;
	LAUNCH(&p, NPU_KERNEL_TEST_HANG, 8, 0);
	ring_submit(0, &p);
	wr(NPU_REG_SCRATCH, 0x1234);
	usleep(20000);
	good = rrd(0, NPU_RING_STATUS) == NPU_RING_STS_ENABLED;
	r = qmp_cmd(q, "{\"execute\":\"system_reset\"}");
	good &= r && strstr(r, "\"return\"");
	usleep(50000);
	pci_setup();
	ok(good && rd(NPU_REG_SCRATCH) == 0 && rrd(0, NPU_RING_STATUS) == NPU_RING_STS_IDLE &&
	   rrd(0, NPU_RING_BASE_LO) == 0 && rrd64(0, NPU_RING_CMDS_LO) == 0,
	   "system_reset resets the device, aborting a hanging kernel");
	stop("hotplug instance");
}

/* ------------------------------------------------- bus mastering */

/*
 * Re-arm every ring after a reset: bus mastering on, rings enabled, in the
 * test context, fences from 0.
 */
static void rings_rearm(void)
{
	cfg_writel(0x04, 0x6);
	for (unsigned r = 0; r < nrings; r++) {
		tail[r] = 0;
		seqno[r] = 0;
		ring_init(r);
		ring_ctx(r);
	}
}

/*
 * The guest clears bus mastering while every ring is copying, then resets
 * the rings or the device in the same batch (QEMU holds its global lock
 * from the first command to the last). An engine whose DMA was under way at
 * the instant bus mastering went off must neither dispatch an access that
 * takes that lock nor keep the reset waiting: QEMU answers every batch.
 * The window is a DMA's own duration, so the trigger is repeated (bounded
 * in count and time); half the rings copy page by page (source and
 * destination overlap), half by the mapped fast path.
 */
static void test_busmaster_reset(void)
{
	const uint64_t size = 2u << 20;
	struct buf b[NPU_MAX_RINGS];
	unsigned iters = 0, answered = 0;
	uint64_t t0;
	bool good = true;

	start("timing=off", 0);
	for (unsigned r = 0; r < nrings; r++)
		b[r] = alloc_buf(2 * size, 0, 1);
	t0 = host_ns();
	while (iters < 400 && host_ns() - t0 < 20000000000ull && !q->dead) {
		char cmds[2048];
		int n, lines = 2;
		struct pk p;

		for (unsigned r = 0; r < nrings; r++) {
			p.n = 0;
			pk_copy(&p, b[r].va, b[r].va + (r % 2 ? size : 4096),
				size);
			ring_submit(r, &p);
		}
		usleep(100 + rnd() % 400);
		n = snprintf(cmds, sizeof(cmds),
			     "outl 0xcf8 0x%x\noutl 0xcfc 0x2\n", cfg_addr(4));
		if (iters % 2) {
			n += snprintf(cmds + n, sizeof(cmds) - n,
				      "writel 0x%llx 0x%x\n",
				      (unsigned long long)BAR0 + NPU_REG_RESET,
				      NPU_RESET_MAGIC);
			lines++;
		} else {
			for (unsigned r = 0; r < nrings; r++, lines++)
				n += snprintf(cmds + n, sizeof(cmds) - n,
					      "writel 0x%llx 0x%x\n",
					      (unsigned long long)BAR0 +
					      NPU_RING_BASE(r) + NPU_RING_CONTROL,
					      NPU_RING_CTL_RESET);
		}
		iters++;
		if (qt_batch(q, cmds, 10000) != lines)
			break;
		answered++;
		rings_rearm();
	}
	ok(!q->dead && answered == iters && iters >= 20,
	   "bus mastering cleared under busy rings, then ring or device reset: "
	   "QEMU answers all %u of %u batches", answered, iters);
	if (q->dead) {
		stop("bus-master instance");
		return;
	}

	/* with bus mastering off a ring's fetch and DMA fail: BAD_DMA */
	wr(NPU_REG_RESET, NPU_RESET_MAGIC);
	rings_rearm();
	cfg_writel(0x04, 0x2);
	{
		struct pk p = { .n = 0 };

		pk_fence(&p, 1, fence_pa(0), 1);
		ring_submit(0, &p);
	}
	good = expect_error(0, NPU_ERR_BAD_DMA, RING_PA(0) + tail[0] - 16,
			    ~0u) && qt_readl(q, fence_pa(0)) == 0;
	ok(good, "bus mastering off: the ring's fetch fails with BAD_DMA");
	wr(NPU_REG_RESET, NPU_RESET_MAGIC);
	rings_rearm();
	good = true;
	for (unsigned r = 0; r < nrings; r++) {
		struct pk p = { .n = 0 };
		uint32_t v = 0x5a5a0000 + r, got = 0;

		buf_write(&b[r], 0, &v, 4);
		pk_copy(&p, b[r].va, b[r].va + size, 4);
		good &= ring_run(r, &p, 5000);
		buf_read(&b[r], size, &got, 4);
		good &= got == v;
	}
	ok(good, "every ring works again once bus mastering is back");

	/*
	 * A ring busy across the change (a semaphore wait polls its word)
	 * keeps no translation of before it: with bus mastering off, its
	 * next poll fails and the copy behind the wait never runs.
	 */
	{
		struct pk p = { .n = 0 };
		uint32_t zero = 0, one = 1, v = 0x77, got = 0;

		buf_write(&b[0], 64, &zero, 4);
		buf_write(&b[0], 128, &v, 4);
		buf_write(&b[0], 192, &zero, 4);
		pk_sem(&p, 1, b[0].va + 64, 1);
		pk_copy(&p, b[0].va + 128, b[0].va + 192, 4);
		ring_submit(0, &p);
		usleep(50000);          /* the wait has read its word */
		good = !(rrd(0, NPU_RING_STATUS) & NPU_RING_STS_HALTED);
		cfg_writel(0x04, 0x2);
		buf_write(&b[0], 64, &one, 4);
		/* alloc_buf maps the pages in reverse */
		good &= expect_error(0, NPU_ERR_BAD_DMA,
				     b[0].base + (b[0].npages - 1) * 4096 + 64,
				     ~0u);
		buf_read(&b[0], 192, &got, 4);
		ok(good && got == 0,
		   "bus mastering off under a waiting ring: its next poll "
		   "fails with BAD_DMA at the word (copy not run: 0x%x)", got);
	}
	stop("bus-master instance");
}

/* ---------------------------------------------------- VM run state */

static bool qmp_ok(const char *json)
{
	const char *r = qmp_cmd(q, json);

	return r && strstr(r, "\"return\"");
}

/*
 * The VM stopped (QMP stop) with work queued and running: nothing
 * completes, no fence is written, no interrupt is sent and the device clock
 * stands still until cont; then the work finishes, the pause not counted
 * in its busy time.
 */
static void test_vm_stop(void)
{
	struct buf h, d;
	struct pk p = { .n = 0 };
	uint64_t c1, c2, busy;
	bool good;

	start(NULL, 1);
	h = alloc_buf(64 << 10, 0, 1);
	d = alloc_buf(64 << 10, 1, 1);
	LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 1, 300000000ull);
	pk_copy(&p, h.va, d.va, 64 << 10);
	pk_fence(&p, ++seqno[0], fence_pa(0), 1);
	ring_submit(0, &p);
	usleep(50000);
	good = qmp_ok("{\"execute\":\"stop\"}");
	c1 = dev_clock();
	usleep(600000);
	c2 = dev_clock();
	good &= qt_readl(q, fence_pa(0)) != seqno[0] &&
		rrd(0, NPU_RING_FENCE) != seqno[0] && msi_word(0) == 0 &&
		!(rrd(0, NPU_RING_STATUS) & NPU_RING_STS_IDLE);
	ok(good && c2 - c1 < 1000000,
	   "VM stopped: a 300 ms kernel and the copy and fence after it do not "
	   "complete in 600 ms, no MSI-X, device clock stands (%llu ns)",
	   (unsigned long long)(c2 - c1));
	good = qmp_ok("{\"execute\":\"cont\"}");
	good &= (ring_wait(0, 5000) & NPU_RING_STS_IDLE) &&
		rrd(0, NPU_RING_FENCE) == seqno[0] &&
		qt_readl(q, fence_pa(0)) == seqno[0] && wait_msi(0, 2000);
	busy = rrd64(0, NPU_RING_BUSY_LO);
	ok(good && busy >= 300000000ull && busy < 550000000ull,
	   "after cont the work completes with its interrupt; busy %llu ms "
	   "excludes the pause", (unsigned long long)(busy / 1000000));
	stop("run-state instance");
}

/* ---------------------------------------------------- waiting costs */

/*
 * CPU time QEMU's threads have run, ns (schedstat: nanosecond resolution);
 * with engines set, only the device's threads (npu-ring*, npu-cu).
 */
static uint64_t qemu_cpu_ns_of(bool engines)
{
	char path[64];
	uint64_t sum = 0;
	glob_t gl;

	snprintf(path, sizeof(path), "/proc/%d/task/*/schedstat", (int)q->pid);
	if (glob(path, 0, NULL, &gl))
		return 0;
	for (size_t i = 0; i < gl.gl_pathc; i++) {
		char comm[PATH_MAX], name[32] = "";
		unsigned long long ns = 0;
		FILE *f;

		snprintf(comm, sizeof(comm), "%.*s/comm",
			 (int)(strrchr(gl.gl_pathv[i], '/') - gl.gl_pathv[i]),
			 gl.gl_pathv[i]);
		f = fopen(comm, "r");
		if (f) {
			if (!fgets(name, sizeof(name), f))
				name[0] = 0;
			fclose(f);
		}
		if (engines && strncmp(name, "npu-", 4))
			continue;
		f = fopen(gl.gl_pathv[i], "r");
		if (f && fscanf(f, "%llu", &ns) == 1)
			sum += ns;
		if (f)
			fclose(f);
	}
	globfree(&gl);
	return sum;
}

static uint64_t qemu_cpu_ns(void)
{
	return qemu_cpu_ns_of(false);
}

/*
 * A ring waiting on a host-written semaphore for 1 s: QEMU's CPU time
 * over that second (against an idle second) must stay small, and the
 * release must still be seen promptly. A semaphore another ring signals
 * releases its waiter at once, however long it waited.
 */
static void test_sem_wait_cost(void)
{
	struct buf g = alloc_buf(4096, 0, 1), t = alloc_buf(64, 0, 1);
	struct pk p = { .n = 0 };
	uint64_t c0, c1, c2, t0, lat, ts[2];
	uint32_t zero = 0, one = 1;
	bool good;

	buf_write(&g, 0, &zero, 4);
	c0 = qemu_cpu_ns();
	usleep(1000000);
	c1 = qemu_cpu_ns();
	pk_sem(&p, 1, g.va, 1);
	pk_fence(&p, ++seqno[0], fence_pa(0), 0);
	ring_submit(0, &p);
	usleep(1000000);
	c2 = qemu_cpu_ns();
	t0 = host_ns();
	buf_write(&g, 0, &one, 4);
	good = (ring_wait(0, 5000) & NPU_RING_STS_IDLE) &&
	       qt_readl(q, fence_pa(0)) == seqno[0];
	lat = host_ns() - t0;
	diag("SEM_WAIT on a host word for 1 s: QEMU CPU %.1f ms (idle second "
	     "%.1f ms); release seen after %.2f ms", (c2 - c1) / 1e6,
	     (c1 - c0) / 1e6, lat / 1e6);
	ok(good && c2 - c1 < 20000000ull + (c1 - c0) && lat < 50000000ull,
	   "a ring waiting 1 s on a host-written semaphore costs %.1f ms of "
	   "CPU and sees the release within %.1f ms", (c2 - c1) / 1e6, lat / 1e6);

	/* ring 1 waits 300 ms, then ring 2 signals: released at once */
	buf_write(&g, 0, &zero, 4);
	p.n = 0;
	pk_sem(&p, 1, g.va, 2);
	pk_ts(&p, t.va + 8);
	pk_fence(&p, ++seqno[1], fence_pa(1), 0);
	ring_submit(1, &p);
	usleep(300000);
	p.n = 0;
	pk_ts(&p, t.va);
	pk_sem(&p, 0, g.va, 2);
	good = ring_run(2, &p, 5000) && (ring_wait(1, 5000) & NPU_RING_STS_IDLE);
	buf_read(&t, 0, ts, 16);
	diag("SEM_SIGNAL by a ring to a ring waiting 300 ms: released %.1f us "
	     "after the signal's TIMESTAMP", (double)(ts[1] - ts[0]) / 1e3);
	ok(good && ts[1] >= ts[0],
	   "a ring's SEM_SIGNAL releases a long SEM_WAIT (%.1f us)",
	   (double)(ts[1] - ts[0]) / 1e3);
}

static void test_sem_wait_cost_alone(void)
{
	start(NULL, 0);
	test_sem_wait_cost();
	stop("sem_wait_cost instance");
}

/*
 * A SEM_SIGNAL is accounted before its write: whoever has seen the value
 * reads a CMDS that counts it (x-signal-delay-us holds the device between
 * the two halves, so a reversed order shows on every run).
 */
static void test_signal_counted(void)
{
	struct buf s;
	struct pk p = { .n = 0 };
	uint32_t v = 0;
	uint64_t c0, c1 = 0, end;

	start("x-signal-delay-us=300000", 0);
	s = alloc_buf(4096, 0, 1);
	buf_write(&s, 0, &v, 4);
	c0 = rrd64(0, NPU_RING_CMDS_LO);
	pk_sem(&p, 0, s.va, 7);
	ring_submit(0, &p);
	end = host_ns() + 5000000000ull;
	while (v != 7 && host_ns() < end) {
		buf_read(&s, 0, &v, 4);
		if (v == 7)
			c1 = rrd64(0, NPU_RING_CMDS_LO);
	}
	ok(v == 7 && c1 == c0 + 1,
	   "a SEM_SIGNAL's value is seen only once CMDS counts it (+%llu)",
	   (unsigned long long)(c1 - c0));
	ring_wait(0, 5000);
	stop("x-signal-delay-us instance");
}

static void test_sem_wait_cost_vt(void)
{
	start("timing=virtual", 0);
	test_sem_wait_cost();
	stop("sem_wait_cost timing=virtual instance");
}

/* ---------------------------------------------------- migration */

/* Poll query-migrate until the migration is completed or has failed. */
static bool migrate_wait(int timeout_ms)
{
	uint64_t end = host_ns() + timeout_ms * 1000000ull;

	while (host_ns() < end && !q->dead) {
		const char *r = qmp_cmd(q, "{\"execute\":\"query-migrate\"}");

		if (!r)
			return false;
		if (strstr(r, "\"completed\""))
			return true;
		if (strstr(r, "\"failed\"") || strstr(r, "\"cancelled\"")) {
			diag("query-migrate: %.300s", r);
			return false;
		}
		usleep(20000);
	}
	return false;
}

/* Wait until the VM runs (an incoming migration finished loading). */
static bool wait_running(int timeout_ms)
{
	uint64_t end = host_ns() + timeout_ms * 1000000ull;

	while (host_ns() < end && !q->dead) {
		const char *r = qmp_cmd(q, "{\"execute\":\"query-status\"}");

		if (r && strstr(r, "\"running\": true"))
			return true;
		if (r && strstr(r, "\"running\":true"))
			return true;
		usleep(20000);
	}
	return false;
}

/*
 * Start the migration's destination QEMU (extra: its -incoming options)
 * and wait until it runs; the migration file goes either way. -1 (after a
 * failed check) if it does not start, else whether it runs.
 */
static int start_incoming(const char *extra[], const char *file)
{
	bool running;

	q = qt_start(qemu_bin, extra, 1);
	if (!q || q->dead) {
		ok(0, "QEMU starts with -incoming");
		unlink(file);
		return -1;
	}
	running = wait_running(20000);
	unlink(file);
	return running;
}

/*
 * Migrate a busy device to a second QEMU through a file (exec: URIs, QEMU
 * 7.2 has no file: migration): ring 0 waits on a host semaphore with a
 * launch and a copy queued behind it; ring 1 runs an indirect buffer whose
 * in-place VADD has run and whose SEM_WAIT (on the same gate) stalls it;
 * ring 2 is inside a 400 ms TEST_SPIN when the migration starts, with a
 * FILL after it; ring 3 is idle with counters; device memory holds the
 * inputs. In the second QEMU the registers, counters, device memory, PCI
 * config and MSI-X are back; releasing the gate finishes the work exactly
 * once (the IB resumes at its SEM_WAIT: its VADD is not run again) with
 * interrupts, and the device clock did not go back.
 */
static const char *mig_opts;	/* extra device properties */

static void test_migration(void)
{
	char file[64], out_uri[128], in_uri[128], dev[64], json[256];
	const char *extra[] = { "-device", dev, "-incoming", in_uri, NULL };
	struct buf gate, x, y, z, out, fill, ibb;
	struct pk p = { .n = 0 }, ib = { .n = 0 };
	float xv[1024], yv[1024], got[1024], want[1024];
	uint32_t one = 1, zero = 0, wfill[512];
	uint64_t cmds3, clk, head0, head1;
	const char *r;
	bool good;
	int started;

	snprintf(file, sizeof(file), "/tmp/npu-devtest-mig-%d", (int)getpid());
	snprintf(out_uri, sizeof(out_uri), "exec:cat > %s", file);
	snprintf(in_uri, sizeof(in_uri), "exec:cat %s", file);
	snprintf(dev, sizeof(dev), "npu,addr=%d%s%s", SLOT, mig_opts ? "," : "",
		 mig_opts ? mig_opts : "");
	unlink(file);

	start(mig_opts, 1);
	gate = alloc_buf(4096, 0, 1);
	x = alloc_buf(sizeof(xv), 1, 1);
	y = alloc_buf(sizeof(yv), 1, 1);
	z = alloc_buf(sizeof(yv), 1, 1);
	out = alloc_buf(sizeof(yv), 0, 1);
	fill = alloc_buf(sizeof(wfill), 0, 1);
	ibb = alloc_buf(4096, 0, 0);
	for (int i = 0; i < 1024; i++) {
		xv[i] = frand();
		yv[i] = frand();
	}
	buf_write(&gate, 0, &zero, 4);
	buf_write(&x, 0, xv, sizeof(xv));
	buf_write(&y, 0, yv, sizeof(yv));
	buf_write(&z, 0, yv, sizeof(yv));

	/* ring 3: idle, with counters */
	p.n = 0;
	pk_fill(&p, fill.va, sizeof(wfill), 7);
	good = ring_run(3, &p, 5000);
	cmds3 = rrd64(3, NPU_RING_CMDS_LO);

	/* ring 5: halted by a unit fault, its FAULT_ENTRY (a subsection) set */
	load_kernel("vadd", 0);
	p.n = 0;
	pk_launch_code(&p, &(struct launch){
		.grid = { 1 }, .block = { 1 }, .stack = 256, .nargs = 4,
		.args = { x.va, x.va, 0x2000000000ull, 4 } });	/* c unmapped */
	ring_submit(5, &p);
	good &= expect_error(5, NPU_ERR_MMU_FAULT, ~0ull, ~0u) &&
		rrd64(5, NPU_RING_FAULT_ENTRY_LO) == DEVTEST_CODE_VA;

	/* ring 0: gate, then y += x (kernels/vadd.c), y -> out, fence +
	 * MSI-X */
	p.n = 0;
	pk_sem(&p, 1, gate.va, 1);
	pk_launch_code(&p, &(struct launch){
		.grid = { 2 }, .block = { 2 }, .stack = 256, .nargs = 4,
		.args = { y.va, x.va, y.va, 1024 } });
	pk_copy(&p, y.va, out.va, sizeof(yv));
	pk_fence(&p, ++seqno[0], fence_pa(0), 1);
	ring_submit(0, &p);

	/* ring 1: IB of z = z + x (in place), gate, z -> z (no-op copy) */
	pk_launch_code(&ib, &(struct launch){
		.grid = { 2 }, .block = { 2 }, .stack = 256, .nargs = 4,
		.args = { z.va, x.va, z.va, 1024 } });
	pk_sem(&ib, 1, gate.va, 1);
	pk_fill(&ib, fill.va, 1024, 0x55);
	buf_write(&ibb, 0, ib.dw, ib.n * 4);
	p.n = 0;
	pk_ib(&p, ibb.va, ib.n * 4);
	pk_fence(&p, ++seqno[1], fence_pa(1), 1);
	ring_submit(1, &p);

	/*
	 * ring 2: a 400 ms spin, then a FILL (timing=virtual: the spin would
	 * be over at once, so it waits on the gate too)
	 */
	p.n = 0;
	if (mig_opts)
		pk_sem(&p, 1, gate.va, 1);
	LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 1, 400000000ull);
	pk_fill(&p, fill.va + 1024, 1024, 0x66);
	pk_fence(&p, ++seqno[2], fence_pa(2), 1);
	ring_submit(2, &p);
	usleep(100000);

	head0 = rrd(0, NPU_RING_HEAD);
	head1 = rrd(1, NPU_RING_HEAD);
	good &= !(rrd(0, NPU_RING_STATUS) & NPU_RING_STS_IDLE) &&
		!(rrd(1, NPU_RING_STATUS) & NPU_RING_STS_IDLE) &&
		!(rrd(2, NPU_RING_STATUS) & NPU_RING_STS_IDLE);
	clk = dev_clock();
	snprintf(json, sizeof(json),
		 "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"%s\"}}", out_uri);
	r = qmp_cmd(q, json);
	if (!r || !strstr(r, "\"return\""))
		diag("migrate: %.300s", r ? r : "(no answer)");
	good &= r && strstr(r, "\"return\"") && migrate_wait(20000);
	ok(good, "a device with rings waiting, an IB stalled inside and a "
	   "launch running migrates out");
	stop("migration source");
	if (!good) {
		unlink(file);
		return;
	}

	started = start_incoming(extra, file);
	if (started < 0)
		return;
	good = started;
	ok(good, "the second QEMU loads the device and runs");
	good &= rrd(0, NPU_RING_HEAD) == head0 && rrd(1, NPU_RING_HEAD) == head1 &&
		rrd(0, NPU_RING_TAIL) == tail[0] && rrd(1, NPU_RING_TAIL) == tail[1] &&
		rrd(0, NPU_RING_SIZE) == RING_BYTES &&
		rrd64(0, NPU_RING_BASE_LO) == RING_PA(0) &&
		rrd(0, NPU_RING_CONTEXT) == CTX_ID &&
		rrd64(3, NPU_RING_CMDS_LO) == cmds3 &&
		(rrd(3, NPU_RING_STATUS) & NPU_RING_STS_IDLE) &&
		!(rrd(0, NPU_RING_STATUS) & NPU_RING_STS_IDLE) &&
		!(rrd(1, NPU_RING_STATUS) & NPU_RING_STS_IDLE) &&
		(rrd(5, NPU_RING_STATUS) & NPU_RING_STS_HALTED) &&
		rrd64(5, NPU_RING_FAULT_ENTRY_LO) == DEVTEST_CODE_VA;
	ok(good && dev_clock() >= clk,
	   "registers, counters and the device clock are back (ring 5's "
	   "FAULT_ENTRY 0x%llx too); rings 0 and 1 still wait on the gate",
	   (unsigned long long)rrd64(5, NPU_RING_FAULT_ENTRY_LO));
	buf_read(&x, 0, got, sizeof(got));
	ok(!memcmp(got, xv, sizeof(xv)), "device memory migrated");

	buf_write(&gate, 0, &one, 4);
	good = (ring_wait(0, 10000) & NPU_RING_STS_IDLE) &&
	       (ring_wait(1, 10000) & NPU_RING_STS_IDLE) &&
	       (ring_wait(2, 10000) & NPU_RING_STS_IDLE);
	good &= qt_readl(q, fence_pa(0)) == seqno[0] &&
		qt_readl(q, fence_pa(1)) == seqno[1] &&
		qt_readl(q, fence_pa(2)) == seqno[2] &&
		wait_msi(0, 2000) && wait_msi(1, 2000) && wait_msi(2, 2000);
	ok(good, "released after the migration: the three rings finish with "
	   "their fences and interrupts");
	for (int i = 0; i < 1024; i++)
		want[i] = yv[i] + xv[i];
	buf_read(&out, 0, got, sizeof(got));
	good = close_enough(got, want, 1024, 0, "vadd behind the gate");
	buf_read(&z, 0, got, sizeof(got));
	good &= close_enough(got, want, 1024, 0, "vadd in the IB");
	buf_read(&fill, 0, wfill, sizeof(wfill));
	for (int i = 0; i < 512; i++)
		good &= wfill[i] == (i < 256 ? 0x55u : 0x66u);
	ok(good, "results exact: the launch behind the gate ran once, the IB's "
	   "in-place VADD was not run again, the FILLs landed");
	ok(rrd64(2, NPU_RING_CMDS_LO) == (mig_opts ? 4 : 3),
	   "the spin running at the migration counted once (CMDS %llu)",
	   (unsigned long long)rrd64(2, NPU_RING_CMDS_LO));

	/* an endless kernel cannot be drained: the save fails, the VM runs on */
	p.n = 0;
	LAUNCH(&p, NPU_KERNEL_TEST_HANG, 1, 0);
	ring_submit(4, &p);
	usleep(20000);
	r = qmp_cmd(q, "{\"execute\":\"migrate\",\"arguments\":"
		    "{\"uri\":\"exec:cat > /dev/null\"}}");
	good = r && strstr(r, "\"return\"") && !migrate_wait(20000) &&
	       wait_running(5000) &&
	       !(rrd(4, NPU_RING_STATUS) & NPU_RING_STS_IDLE);
	ring_reset(4);
	p.n = 0;
	pk_fill(&p, fill.va, 4, 9);
	good &= ring_run(4, &p, 5000);
	ok(good, "a migration with an endless kernel running fails; the VM "
	   "runs on and a ring reset stops the kernel");
	stop("migration destination");
}

/*
 * A migration stream is input: npu_post_load must refuse one whose device
 * state the device could never be in. The source saves a device whose
 * SCRATCH holds a marker; the marker's offset in the stream locates the
 * fields saved after it (vmstate_npu in npu.c: SCRATCH, CLOCK_HI latch,
 * pending interrupts, clock, unit time, unit cycle, the units' counters,
 * the IB resume offsets, then each ring's fields). A patched copy that
 * changes valid fields (SCRATCH, a ring's FENCE) loads and reads back,
 * which checks the offsets; each corruption makes the second QEMU's load
 * fail (it exits with an error instead of running a device that hangs).
 */
#define MIG_MARKER		0x9e3779b9u
#define MIG_OFF_IRQ		8	/* from SCRATCH */
#define MIG_OFF_CU_CYCLE	28
#define MIG_OFF_CU_BUSY		36
#define MIG_OFF_RINGS		(MIG_OFF_CU_BUSY + 3 * 8 * NPU_MAX_CUS + \
				 4 * NPU_MAX_RINGS)
#define MIG_RING_BYTES		118
#define MIG_RING_HEAD		12	/* within a ring */
#define MIG_RING_FENCE		22
#define MIG_RING_CMDS		94

static void put_be(unsigned char *p, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--, v >>= 8)
		p[i] = v & 0xff;
}

struct mig_patch {
	const char *what;
	long off;		/* from SCRATCH */
	int bytes;
	uint64_t value;
};

/* Load stream (patched) into a new QEMU; its exit code, or -1 if it runs. */
static int mig_load_patched(const unsigned char *stream, size_t len,
			    long scratch_off, const struct mig_patch *pt,
			    const char *file)
{
	char in_uri[128], dev[64];
	const char *extra[] = { "-device", dev, "-incoming", in_uri, NULL };
	unsigned char *copy = malloc(len);
	FILE *f;
	int rc;

	snprintf(in_uri, sizeof(in_uri), "exec:cat %s", file);
	snprintf(dev, sizeof(dev), "npu,addr=%d", SLOT);
	if (!copy)
		return -2;
	memcpy(copy, stream, len);
	put_be(copy + scratch_off + pt->off, pt->value, pt->bytes);
	f = fopen(file, "wb");
	if (!f || fwrite(copy, 1, len, f) != len) {
		if (f)
			fclose(f);
		free(copy);
		return -2;
	}
	fclose(f);
	free(copy);
	q = qt_start(qemu_bin, extra, 1);
	if (!q)
		return -2;
	for (int i = 0; i < 500; i++) {
		const char *r;

		rc = qt_wait_exit(q, 0);
		if (q->reaped)
			return rc < 0 ? -2 : rc;
		r = q->dead ? NULL :
		    qmp_cmd(q, "{\"execute\":\"query-status\"}");
		if (r && (strstr(r, "\"running\": true") ||
			  strstr(r, "\"running\":true")))
			return -1;
		usleep(20000);
	}
	return -2;
}

/* A 16-thread RISC-V launch on ring 2 finishes within 3 s. */
static bool mig_launch_runs(void)
{
	struct buf out = alloc_buf(4 * 256, 1, 1);
	struct launch l = { .grid = { 1 }, .block = { 16 }, .stack = 256,
			    .nargs = 3, .args = { out.va, 3, 7 } };
	struct pk p = { .n = 0 };

	load_kernel("iota", 0);
	pk_launch_code(&p, &l);
	return ring_run(2, &p, 3000);
}

static void test_migration_corrupt(void)
{
	char file[64], json[160];
	unsigned char *stream = NULL;
	size_t len = 0, cap = 0, n;
	long scratch_off = -1;
	unsigned found = 0, ring1 = MIG_OFF_RINGS + MIG_RING_BYTES;
	struct pk p = { .n = 0 };
	struct buf fill;
	FILE *f;
	bool good;
	int rc;
	const struct mig_patch control = {
		"SCRATCH and ring 1's FENCE", 0, 4, 0x1234567u
	};
	const struct mig_patch bad[] = {
		{ "the unit cycle near 2^64", MIG_OFF_CU_CYCLE, 8,
		  UINT64_MAX - 1000 },
		{ "an interrupt of no ring pending", MIG_OFF_IRQ, 4,
		  1u << 31 },
		{ "ERR_PENDING of no ring", -4, 4, 1u << 31 },
		{ "ring 0's HEAD not dword aligned",
		  MIG_OFF_RINGS + MIG_RING_HEAD, 4, 2 },
		{ "a counter of an absent unit",
		  MIG_OFF_CU_BUSY + 8 * (NPU_MAX_CUS - 1), 8, 5 },
		{ "a counter of an absent ring",
		  MIG_OFF_RINGS + (NPU_MAX_RINGS - 1) * MIG_RING_BYTES +
		  MIG_RING_CMDS, 8, 5 },
	};

	snprintf(file, sizeof(file), "/tmp/npu-devtest-migbad-%d",
		 (int)getpid());
	snprintf(json, sizeof(json), "{\"execute\":\"migrate\",\"arguments\":"
		 "{\"uri\":\"exec:cat > %s\"}}", file);
	unlink(file);
	start(NULL, 1);
	fill = alloc_buf(4096, 0, 1);
	wr(NPU_REG_SCRATCH, MIG_MARKER);
	good = qmp_ok(json) && migrate_wait(20000);
	/* the source is unharmed: it runs on and its rings work */
	good &= qmp_ok("{\"execute\":\"cont\"}") && wait_running(5000);
	pk_fill(&p, fill.va, 4096, 3);
	good &= ring_run(0, &p, 5000) && rd(NPU_REG_SCRATCH) == MIG_MARKER;
	ok(good, "migration out to a file; the source runs on");
	stop("corrupt-stream source");

	f = fopen(file, "rb");
	while (f && (cap - len || (stream = realloc(stream, cap = cap * 2 +
						   (1 << 20))))) {
		n = fread(stream + len, 1, cap - len, f);
		len += n;
		if (!n)
			break;
	}
	if (f)
		fclose(f);
	for (size_t i = 0; stream && i + 4 <= len; i++) {
		if (stream[i] == 0x9e && stream[i + 1] == 0x37 &&
		    stream[i + 2] == 0x79 && stream[i + 3] == 0xb9) {
			scratch_off = i;
			found++;
		}
	}
	good = found == 1 && scratch_off + MIG_OFF_RINGS +
	       NPU_MAX_RINGS * MIG_RING_BYTES <= (long)len;
	ok(good, "the stream (%zu bytes) holds SCRATCH's marker once (%u)",
	   len, found);
	if (!good) {
		free(stream);
		unlink(file);
		return;
	}

	/* valid changes load: the offsets are right */
	put_be(stream + scratch_off + ring1 + MIG_RING_FENCE, 0xabcdef, 4);
	rc = mig_load_patched(stream, len, scratch_off, &control, file);
	good = rc == -1 && rd(NPU_REG_SCRATCH) == control.value &&
	       rrd(1, NPU_RING_FENCE) == 0xabcdef &&
	       rrd64(0, NPU_RING_BASE_LO) == RING_PA(0) && mig_launch_runs();
	ok(good, "a stream with %s changed loads, with them (SCRATCH 0x%x, "
	   "FENCE 0x%x), and runs a launch", control.what, rd(NPU_REG_SCRATCH),
	   rrd(1, NPU_RING_FENCE));
	stop("patched-stream destination");

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rc = mig_load_patched(stream, len, scratch_off, &bad[i], file);
		ok(rc > 0, "a stream with %s is refused: %s", bad[i].what,
		   rc > 0 ? "the load fails, QEMU exits with an error" :
		   rc == -1 ? "QEMU loaded it and runs" : "QEMU failed");
		/* what the refused stream would do: units stuck */
		if (rc == -1 && !i)
			diag("loaded: a 16-thread launch %s within 3 s",
			     mig_launch_runs() ? "finished" : "did not finish");
		if (q->reaped)
			qt_quit(q);
		else
			stop("corrupt-stream destination");
		q = NULL;
	}
	free(stream);
	unlink(file);
}

/* The same with timing=virtual: its clocks migrate too. */
static void test_migration_vt(void)
{
	mig_opts = "timing=virtual";
	test_migration();
	mig_opts = NULL;
}

/* A QMP command; true if it returned, diagnostics if not. */
static bool qmp_do(const char *json)
{
	const char *r = qmp_cmd(q, json);

	if (!r || !strstr(r, "\"return\"")) {
		diag("%.120s: %.300s", json, r ? r : "(no answer)");
		return false;
	}
	return true;
}

/* An HMP command through QMP; true if it printed nothing (success). */
static bool hmp_quiet(const char *line)
{
	char json[256];
	const char *r;

	snprintf(json, sizeof(json), "{\"execute\":\"human-monitor-command\","
		 "\"arguments\":{\"command-line\":\"%s\"}}", line);
	r = qmp_cmd(q, json);
	if (!r || !strstr(r, "\"return\": \"\"")) {
		diag("%s: %.300s", line, r ? r : "(no answer)");
		return false;
	}
	return true;
}

/* Wait for a job to conclude, then dismiss it. */
static bool job_done(const char *id)
{
	uint64_t end = host_ns() + 10000000000ull;
	char json[128];

	while (host_ns() < end && !q->dead) {
		const char *r = qmp_cmd(q, "{\"execute\":\"query-jobs\"}");

		if (r && strstr(r, "\"concluded\"")) {
			snprintf(json, sizeof(json), "{\"execute\":\"job-dismiss\","
				 "\"arguments\":{\"id\":\"%s\"}}", id);
			return qmp_do(json);
		}
		usleep(10000);
	}
	return false;
}

/*
 * savevm and loadvm in one QEMU (snapshots need a qcow2 image: made with
 * blockdev-create, no qemu-img). Saved while ring 0 waits on a gate with
 * y += 2x behind it; the VM runs on and the released work finishes; then
 * loadvm puts everything back as saved (the ring waiting again, y and the
 * gate as they were, in device and host memory), and a second release
 * finishes the work once more, exactly once.
 */
static void test_snapshot(void)
{
	char img[64], json[512];
	struct buf gate, x, y;
	struct pk p = { .n = 0 };
	float xv[1024], yv[1024], got[1024], want[1024];
	uint32_t zero = 0, one = 1, head;
	bool good;

	snprintf(img, sizeof(img), "/tmp/npu-devtest-snap-%d.qcow2", (int)getpid());
	unlink(img);
	start(NULL, 1);
	snprintf(json, sizeof(json), "{\"execute\":\"blockdev-create\",\"arguments\":"
		 "{\"job-id\":\"c1\",\"options\":{\"driver\":\"file\","
		 "\"filename\":\"%s\",\"size\":0}}}", img);
	good = qmp_do(json) && job_done("c1");
	snprintf(json, sizeof(json), "{\"execute\":\"blockdev-add\",\"arguments\":"
		 "{\"driver\":\"file\",\"filename\":\"%s\",\"node-name\":\"f\"}}", img);
	good = good && qmp_do(json) &&
	       qmp_do("{\"execute\":\"blockdev-create\",\"arguments\":"
		      "{\"job-id\":\"c2\",\"options\":{\"driver\":\"qcow2\","
		      "\"file\":\"f\",\"size\":67108864}}}") &&
	       job_done("c2") &&
	       qmp_do("{\"execute\":\"blockdev-add\",\"arguments\":"
		      "{\"driver\":\"qcow2\",\"file\":\"f\",\"node-name\":\"q\"}}");
	ok(good, "a qcow2 image for snapshots (blockdev-create)");
	if (!good) {
		stop("snapshot instance");
		unlink(img);
		return;
	}

	gate = alloc_buf(4096, 0, 1);
	x = alloc_buf(sizeof(xv), 1, 1);
	y = alloc_buf(sizeof(yv), 1, 1);
	for (int i = 0; i < 1024; i++) {
		xv[i] = frand();
		yv[i] = frand();
		want[i] = yv[i] + xv[i];
	}
	buf_write(&gate, 0, &zero, 4);
	buf_write(&x, 0, xv, sizeof(xv));
	buf_write(&y, 0, yv, sizeof(yv));
	load_kernel("vadd", 0);
	head = rrd(0, NPU_RING_HEAD);
	pk_sem(&p, 1, gate.va, 1);
	/* y += x (kernels/vadd.c): run twice, it would add x twice */
	pk_launch_code(&p, &(struct launch){
		.grid = { 2 }, .block = { 2 }, .stack = 256, .nargs = 4,
		.args = { y.va, x.va, y.va, 1024 } });
	pk_fence(&p, ++seqno[0], fence_pa(0), 1);
	ring_submit(0, &p);
	usleep(20000);

	good = hmp_quiet("savevm s1") && wait_running(5000);
	buf_write(&gate, 0, &one, 4);
	good &= (ring_wait(0, 5000) & NPU_RING_STS_IDLE) &&
		qt_readl(q, fence_pa(0)) == seqno[0] && wait_msi(0, 2000);
	buf_read(&y, 0, got, sizeof(got));
	good &= close_enough(got, want, 1024, 1e-5f, "after savevm");
	ok(good, "savevm with a ring waiting on a gate; the VM runs on and the "
	   "released work finishes");

	qt_writel(q, MSI_PA, 0);
	good = hmp_quiet("loadvm s1") && wait_running(5000);
	buf_read(&y, 0, got, sizeof(got));
	good &= !memcmp(got, yv, sizeof(yv)) && qt_readl(q, gate.base) == 0 &&
		qt_readl(q, fence_pa(0)) != seqno[0] &&
		rrd(0, NPU_RING_HEAD) == head && rrd(0, NPU_RING_TAIL) == tail[0] &&
		!(rrd(0, NPU_RING_STATUS) & NPU_RING_STS_IDLE);
	ok(good, "loadvm: the ring waits on the gate again, device memory and "
	   "the gate as saved");
	buf_write(&gate, 0, &one, 4);
	good = (ring_wait(0, 5000) & NPU_RING_STS_IDLE) &&
	       qt_readl(q, fence_pa(0)) == seqno[0] && wait_msi(0, 2000);
	buf_read(&y, 0, got, sizeof(got));
	good &= close_enough(got, want, 1024, 1e-5f, "after loadvm");
	ok(good, "released after loadvm: the work finishes once more, exactly "
	   "once, with its interrupt");
	stop("snapshot instance");
	unlink(img);
}

/* ---------------------------------------------------- trace events */

/*
 * QEMU's -trace reaches the device's events: a fence to a physical address
 * outside RAM halts the ring; npu_dma_fault and npu_ring_halt report it in
 * the -D log.
 */
static void test_trace_events(void)
{
	char log[64], dev[64], text[8192] = "", want[128];
	const char *extra[] = { "-device", dev, "-trace", "npu_ring_halt",
				"-trace", "npu_dma_fault", "-D", log, NULL };
	struct pk p = { .n = 0 };
	bool good;
	FILE *f;
	size_t n;

	snprintf(log, sizeof(log), "/tmp/npu-devtest-trace-%d.log", (int)getpid());
	snprintf(dev, sizeof(dev), "npu,addr=%d", SLOT);
	unlink(log);
	q = qt_start(qemu_bin, extra, 0);
	if (!q || q->dead) {
		ok(0, "QEMU starts with -trace npu_ring_halt -trace npu_dma_fault");
		if (q)
			qt_quit(q);
		q = NULL;
		return;
	}
	pci_setup();
	msix_setup();
	pt_reset();
	pt_sync();
	memset(tail, 0, sizeof(tail));
	memset(seqno, 0, sizeof(seqno));
	ring_init(0);
	ring_ctx(0);
	pk_fence(&p, 1, 0x50000000ull, 0);
	ring_submit(0, &p);
	good = expect_error(0, NPU_ERR_BAD_DMA, 0x50000000ull, NPU_OP_FENCE);
	stop("trace instance");
	f = fopen(log, "r");
	n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
	text[n] = 0;
	if (f)
		fclose(f);
	unlink(log);
	snprintf(want, sizeof(want), "npu_ring_halt ring 0 error %u ctx %u addr 0x50000000",
		 NPU_ERR_BAD_DMA, CTX_ID);
	good &= strstr(text, want) != NULL &&
		strstr(text, "npu_dma_fault pa 0x50000000 len 4 write 1") != NULL;
	if (!good)
		diag("trace log: %.400s", text);
	ok(good, "-trace npu_ring_halt and npu_dma_fault: the halt and the DMA fault are in the -D log");
}

/* ------------------------------------------------------------ user queues */

struct tq {
	unsigned idx;
	uint32_t db;
	uint32_t size;
	uint32_t config;
	struct buf ring, wb;
	uint64_t wptr;
};

static uint64_t uqd_pa(unsigned idx)
{
	return UQ_TABLE_PA + (uint64_t)NPU_UQD_SIZE * idx;
}

/* BUSY, CMDS, BYTES, OPS summed over the user-queue engines present. */
static void eng_cnt(uint64_t c[4])
{
	uint32_t e, n = rd(NPU_REG_UQ_ENGINES), k;

	n = NPU_UQ_ENGINES_COMPUTE(n) + NPU_UQ_ENGINES_COPY(n);
	memset(c, 0, 4 * sizeof(*c));
	for (e = 0; e < n; e++)
		for (k = 0; k < 4; k++) {
			uint32_t r = NPU_REG_UQ_ENGINE_CNT(e) + 8 * k;
			uint64_t lo = rd(r);

			c[k] += lo | (uint64_t)rd(r + 4) << 32;
		}
}

static uint64_t uqd64(unsigned idx, unsigned off)
{
	return qt_readq(q, uqd_pa(idx) + off);
}

static uint32_t uqd32(unsigned idx, unsigned off)
{
	return qt_readl(q, uqd_pa(idx) + off);
}

static uint32_t uq_cmd(uint32_t op, unsigned idx)
{
	wr(NPU_REG_UQ_CMD, NPU_UQ_CMD(op, idx));
	return rd(NPU_REG_UQ_CMD_STATUS);
}

/* Table and event ring programmed, every descriptor zeroed. */
static void uq_setup(unsigned entries)
{
	qt_memset(q, UQ_TABLE_PA, 0, (size_t)NPU_UQD_SIZE * entries);
	wr(NPU_REG_UQ_TABLE_BASE_LO, (uint32_t)UQ_TABLE_PA);
	wr(NPU_REG_UQ_TABLE_BASE_HI, 0);
	wr(NPU_REG_UQ_TABLE_ENTRIES, entries);
	uq_events_init();
}

/* Descriptor idx for a queue with a ring of size bytes (not mapped yet). */
static void uq_desc(struct tq *t, unsigned idx, uint32_t config,
		    uint32_t size)
{
	uint64_t pa = uqd_pa(idx);

	memset(t, 0, sizeof(*t));
	t->idx = idx;
	t->db = NPU_UQ_DOORBELL(idx / 8, idx % 8 * 3);
	t->size = size;
	t->config = config;
	t->ring = alloc_buf(size, 0, 0);
	t->wb = alloc_buf(4096, 0, 1);
	qt_memset(q, pa, 0, NPU_UQD_SIZE);
	qt_writeq(q, pa + NPU_UQD_RING_VA, t->ring.va);
	qt_writel(q, pa + NPU_UQD_RING_SIZE, size);
	qt_writel(q, pa + NPU_UQD_CONFIG, config);
	qt_writeq(q, pa + NPU_UQD_WB_VA, t->wb.va);
	qt_writel(q, pa + NPU_UQD_CTX, CTX_ID);
	qt_writel(q, pa + NPU_UQD_DOORBELL, t->db);
	qt_writeq(q, pa + NPU_UQD_PT_ROOT, PT_PA);
}

static bool uq_new(struct tq *t, unsigned idx, uint32_t config)
{
	uq_desc(t, idx, config, 4096);
	return uq_cmd(NPU_UQ_CMD_MAP, idx) == 0;
}

/* Copy packets into the ring at wptr (wrapping), no doorbell. */
static void uq_put(struct tq *t, const struct pk *p)
{
	for (unsigned i = 0; i < p->n; i++) {
		uint32_t off = (t->wptr + 4 * i) & (t->size - 1);

		qt_writel(q, buf_phys(&t->ring, off), p->dw[i]);
	}
	t->wptr += 4 * p->n;
}

static void uq_ring(struct tq *t)
{
	qt_writeq(q, BAR1 + 8ull * t->db, t->wptr);
}

static void uq_push(struct tq *t, const struct pk *p)
{
	uq_put(t, p);
	uq_ring(t);
}

/* Until the queue is idle or halted: its status. */
static uint32_t uq_wait(struct tq *t, int timeout_ms)
{
	uint64_t end = host_ns() + timeout_ms * 1000000ull;
	uint32_t st;

	do {
		st = uqd32(t->idx, NPU_UQD_STATUS);
		if ((st & NPU_UQ_STS_HALTED) ||
		    ((st & NPU_UQ_STS_IDLE) && uqd64(t->idx, NPU_UQD_RPTR) ==
		     t->wptr))
			return st;
		usleep(200);
	} while (host_ns() < end && !q->dead);
	return st;
}

static struct npu_uq_wb uq_wb(struct tq *t)
{
	struct npu_uq_wb wb;

	buf_read(&t->wb, 0, &wb, sizeof(wb));
	return wb;
}

/* The first event of kind for queue idx from the ring's start, or kind 0. */
static struct npu_uq_event uq_find_event(uint8_t kind, uint32_t queue)
{
	uint32_t tail = rd(NPU_REG_UQ_EVENT_TAIL);
	struct npu_uq_event ev = { 0 };

	for (uint32_t off = 0; off != tail; off = (off + 16) & 4095) {
		ev = uq_event_at(off);
		if (ev.kind == kind && ev.queue == queue)
			return ev;
	}
	memset(&ev, 0, sizeof(ev));
	return ev;
}

#define UQ_RUNNABLE (NPU_UQ_STS_MAPPED | NPU_UQ_STS_RUNNABLE)

/*
 * A user queue's completed packet reaches its write-back block before its
 * descriptor's rptr: a wait on the descriptor (WAIT_MEM_RPTR, USERQ_SIGNAL's
 * fences) then finds the write-back block as far. x-signal-delay-us holds
 * the device between the two writes, so a reversed order shows every run.
 */
static void test_uq_wb_first(void)
{
	struct tq a;
	struct buf d;
	struct pk p = { .n = 0 };
	uint64_t end, wb_rptr = 0;
	bool seen = false;

	start("uq-compute-engines=1,uq-copy-engines=1,x-signal-delay-us=300000",
	      0);
	d = alloc_buf(4096, 0, 1);
	uq_setup(4);
	uq_new(&a, 1, 0);
	pk_fill(&p, d.va, 4096, 9);
	uq_push(&a, &p);
	end = host_ns() + 5000000000ull;
	while (!seen && host_ns() < end && !q->dead) {
		if (uqd64(1, NPU_UQD_RPTR) == a.wptr) {
			wb_rptr = uq_wb(&a).rptr;
			seen = true;
		}
	}
	ok(seen && wb_rptr == a.wptr,
	   "a user queue's rptr is in its write-back block (%llu) once its "
	   "descriptor shows it (%llu)", (unsigned long long)wb_rptr,
	   (unsigned long long)a.wptr);
	stop("x-signal-delay-us user-queue instance");
}

/* The owner's wptr in the write-back block (NPU_UQ_STS_WATCHED). */
static void uq_wb_set_wptr(struct tq *t)
{
	qt_writeq(q, buf_phys(&t->wb, offsetof(struct npu_uq_wb, wptr)),
		  t->wptr);
}

/* Until the write-back status has all of bits, or timeout: the status. */
static uint32_t uq_wb_until(struct tq *t, uint32_t bits, int timeout_ms)
{
	uint64_t end = host_ns() + timeout_ms * 1000000ull;
	uint32_t st;

	do {
		st = uq_wb(t).status;
		if ((st & bits) == bits)
			break;
		usleep(200);
	} while (host_ns() < end && !q->dead);
	return st;
}

/*
 * A queue an engine serves is WATCHED: packets the owner announces with
 * the write-back block's wptr alone run, with no doorbell, and the device
 * never overwrites that wptr; an idle queue is not WATCHED and needs the
 * doorbell; a bad wptr there halts the queue as a bad doorbell does.
 */
static void test_uq_wb_wptr(void)
{
	struct tq a;
	struct buf d, sg;
	struct pk p = { .n = 0 };
	struct npu_uq_wb wb;
	uint32_t st, v = 0;
	uint64_t r0;
	bool good;

	start("uq-compute-engines=1,uq-copy-engines=1", 0);
	d = alloc_buf(4096, 0, 1);
	sg = alloc_buf(4096, 0, 1);
	uq_setup(4);
	good = uq_new(&a, 1, 0);
	pk_fill(&p, d.va, 4096, 0x11110001);
	uq_put(&a, &p);
	uq_wb_set_wptr(&a);
	usleep(50000);
	wb = uq_wb(&a);
	ok(good && !(wb.status & NPU_UQ_STS_WATCHED) &&
	   (wb.status & NPU_UQ_STS_IDLE) && uqd64(1, NPU_UQD_RPTR) == 0 &&
	   uqd64(1, NPU_UQD_WPTR) == 0,
	   "an idle queue is not WATCHED (status 0x%x): a wptr in its "
	   "write-back block alone runs nothing", wb.status);
	uq_ring(&a);
	st = uq_wait(&a, 5000);
	buf_read(&d, 0, &v, 4);
	wb = uq_wb(&a);
	ok(v == 0x11110001 && (st & NPU_UQ_STS_IDLE) &&
	   !(wb.status & NPU_UQ_STS_WATCHED) && wb.wptr == a.wptr,
	   "the doorbell runs it; idle again, not WATCHED, the owner's wptr "
	   "(%llu) left as it was", (unsigned long long)wb.wptr);

	/* busy: while a 300 ms TEST_SPIN runs the queue is WATCHED */
	p.n = 0;
	LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 1, 300000000);
	uq_push(&a, &p);
	st = uq_wb_until(&a, NPU_UQ_STS_RUNNING, 5000);
	r0 = uqd64(1, NPU_UQD_RPTR);
	p.n = 0;
	pk_fill(&p, d.va, 4096, 0x22220002);
	pk_signal(&p, sg.va, 9);
	uq_put(&a, &p);
	uq_wb_set_wptr(&a);
	good = (st & NPU_UQ_STS_WATCHED) && r0 < a.wptr;
	st = uq_wait(&a, 5000);
	buf_read(&d, 4092, &v, 4);
	wb = uq_wb(&a);
	ok(good && v == 0x22220002 && qt_readq(q, sg.base) == 9 &&
	   (st & NPU_UQ_STS_IDLE) && uqd64(1, NPU_UQD_WPTR) == a.wptr &&
	   wb.rptr == a.wptr && !(wb.status & NPU_UQ_STS_WATCHED),
	   "a running queue is WATCHED: FILL and SIGNAL announced in the "
	   "write-back block only run after the spin; descriptor wptr %llu",
	   (unsigned long long)uqd64(1, NPU_UQD_WPTR));

	/* waiting: a queue at an unsatisfied WAIT_MEM64 stays WATCHED; a
	 * doorbell of its old wptr (the owner's "I wrote the word") and the
	 * wptr in the write-back block then run what follows the wait */
	p.n = 0;
	pk_wait64(&p, sg.va + 64, 1);
	uq_push(&a, &p);
	st = uq_wb_until(&a, NPU_UQ_STS_WAITING, 5000);
	r0 = uqd64(1, NPU_UQD_RPTR);
	p.n = 0;
	pk_fill(&p, d.va, 4096, 0x33330003);
	uq_put(&a, &p);
	uq_wb_set_wptr(&a);
	good = (st & NPU_UQ_STS_WAITING) && (st & NPU_UQ_STS_WATCHED) &&
	       !(st & NPU_UQ_STS_RUNNING);
	usleep(20000);
	good = good && uqd64(1, NPU_UQD_RPTR) == r0;
	qt_writeq(q, sg.base + 64, 1);
	qt_writeq(q, BAR1 + 8ull * a.db, r0 + sizeof(struct npu_pkt_wait_mem64));
	st = uq_wait(&a, 5000);
	buf_read(&d, 4092, &v, 4);
	ok(good && v == 0x33330003 && (st & NPU_UQ_STS_IDLE) &&
	   uqd64(1, NPU_UQD_WPTR) == a.wptr,
	   "a waiting queue stays WATCHED off its engine; released by the "
	   "owner's kick, it runs the FILL its write-back wptr announced");

	/* ready, waiting for the engine another queue holds: the doorbell
	 * that made it ready made it WATCHED where its owner looks, and what
	 * the owner then announces in the write-back block alone runs */
	{
		struct tq b;
		struct npu_uq_wb bw;

		p.n = 0;
		LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 1, 300000000);
		uq_push(&a, &p);
		st = uq_wb_until(&a, NPU_UQ_STS_RUNNING, 5000);
		good = uq_new(&b, 2, 0) && (st & NPU_UQ_STS_RUNNING);
		p.n = 0;
		pk_fill(&p, d.va, 64, 0x44440004);
		uq_push(&b, &p);
		usleep(20000);
		bw = uq_wb(&b);
		p.n = 0;
		pk_fill(&p, d.va + 64, 64, 0x55550005);
		uq_put(&b, &p);
		uq_wb_set_wptr(&b);
		good = good && (bw.status & NPU_UQ_STS_WATCHED) &&
		       !(bw.status & NPU_UQ_STS_RUNNING) && bw.rptr == 0;
		st = uq_wait(&b, 5000);
		buf_read(&d, 64, &v, 4);
		ok(good && v == 0x55550005 && (st & NPU_UQ_STS_IDLE) &&
		   uqd64(2, NPU_UQD_RPTR) == b.wptr,
		   "a queue rung while the engine serves another is WATCHED "
		   "before it runs (status 0x%x): a FILL announced in its "
		   "write-back block alone runs after the spin", bw.status);
		uq_wait(&a, 5000);
	}

	/* a misaligned wptr there halts it with RING_CONFIG */
	p.n = 0;
	LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 1, 300000000);
	uq_push(&a, &p);
	st = uq_wb_until(&a, NPU_UQ_STS_RUNNING, 5000);
	qt_writeq(q, buf_phys(&a.wb, offsetof(struct npu_uq_wb, wptr)),
		  a.wptr + 6);
	good = !!(st & NPU_UQ_STS_WATCHED);
	st = uq_wait(&a, 5000);
	ok(good && (st & NPU_UQ_STS_HALTED) &&
	   uqd32(1, NPU_UQD_ERROR) == NPU_ERR_RING_CONFIG &&
	   uqd64(1, NPU_UQD_FAULT) == a.wptr + 6 &&
	   uqd64(1, NPU_UQD_RPTR) == a.wptr,
	   "a misaligned wptr in the write-back block halts the queue after "
	   "its packet (RING_CONFIG, fault = value)");
	stop("write-back wptr instance");
}

/*
 * The write-back block ends as the queue's last state: the poller that
 * releases a waiting queue and the engine that then runs it both write the
 * block, and the later state is written last. x-wb-delay-us holds the
 * poller between reading the queue's state and writing it, so a stale
 * write after the engine's shows every run.
 */
static void test_uq_wb_last(void)
{
	struct tq a;
	struct buf d;
	struct pk p = { .n = 0 };
	struct npu_uq_wb wb;
	uint64_t one = 1, end;
	bool waited = false;

	start("uq-compute-engines=1,uq-copy-engines=1,x-wb-delay-us=300000",
	      0);
	d = alloc_buf(4096, 0, 1);
	uq_setup(4);
	uq_new(&a, 1, 0);
	pk_wait64(&p, d.va, 1);
	pk_fill(&p, d.va + 64, 64, 7);
	uq_push(&a, &p);
	end = host_ns() + 5000000000ull;
	while (!waited && host_ns() < end && !q->dead)
		waited = uqd32(1, NPU_UQD_STATUS) & NPU_UQ_STS_WAITING;
	buf_write(&d, 0, &one, 8);
	uq_ring(&a);		/* the same wptr: look at the word again */
	uq_wait(&a, 5000);
	usleep(700000);		/* every delayed write has landed */
	wb = uq_wb(&a);
	ok(waited && wb.rptr == a.wptr && (wb.status & NPU_UQ_STS_IDLE) &&
	   !(wb.status & NPU_UQ_STS_RUNNING),
	   "a released queue's write-back block ends as its last state: rptr "
	   "%llu of %llu, status %#x", (unsigned long long)wb.rptr,
	   (unsigned long long)a.wptr, wb.status);
	stop("x-wb-delay-us user-queue instance");
}

/*
 * WAIT_MEM64 with NPU_WAIT_DOORBELL: the owner's doorbell (any value, an
 * old wptr too) tells the device the word was written, so the device does
 * not poll it. With uq-doorbell-poll-us at 5 s, a write of the word alone
 * is not seen for 100 ms, where a wait without the flag is seen within a
 * quarter of its wait; a doorbell then releases it. Another flag bit is a
 * BAD_PACKET.
 */
static void uq_wait_flagged(struct pk *p, uint32_t flags, uint64_t addr,
			    uint64_t value)
{
	pk_dw(p, NPU_PKT_HDR(NPU_OP_WAIT_MEM64, flags, 6));
	pk_dw(p, 0);
	pk_qw(p, addr);
	pk_qw(p, value);
}

static void test_uq_doorbell_wait(void)
{
	struct tq a;
	struct buf d;
	struct pk p = { .n = 0 };
	uint64_t one = 1, r0;
	uint32_t st, v = 0;
	bool unseen, plain_seen;

	start("uq-compute-engines=1,uq-copy-engines=1,"
	      "uq-doorbell-poll-us=5000000", 0);
	d = alloc_buf(4096, 0, 1);
	uq_setup(4);
	uq_new(&a, 1, 0);
	uq_wait_flagged(&p, NPU_WAIT_DOORBELL, d.va, 1);
	pk_fill(&p, d.va + 64, 64, 0x44440004);
	uq_push(&a, &p);
	st = uq_wb_until(&a, NPU_UQ_STS_WAITING, 5000);
	r0 = uqd64(1, NPU_UQD_RPTR);
	buf_write(&d, 0, &one, 8);
	usleep(100000);
	unseen = (st & NPU_UQ_STS_WAITING) &&
		 (uqd32(1, NPU_UQD_STATUS) & NPU_UQ_STS_WAITING) &&
		 uqd64(1, NPU_UQD_RPTR) == r0;
	uq_ring(&a);		/* the same wptr: "I wrote the word" */
	st = uq_wait(&a, 5000);
	buf_read(&d, 64, &v, 4);
	ok(unseen && (st & NPU_UQ_STS_IDLE) && v == 0x44440004,
	   "WAIT_MEM64 with DOORBELL: the word's write alone is not polled "
	   "(100 ms), the owner's doorbell releases it");

	/* the same wait without the flag: seen by polling, no doorbell */
	p.n = 0;
	pk_wait64(&p, d.va + 8, 1);
	pk_fill(&p, d.va + 128, 64, 0x55550005);
	uq_push(&a, &p);
	uq_wb_until(&a, NPU_UQ_STS_WAITING, 5000);
	buf_write(&d, 8, &one, 8);
	st = uq_wait(&a, 2000);
	buf_read(&d, 128, &v, 4);
	plain_seen = (st & NPU_UQ_STS_IDLE) && v == 0x55550005;
	ok(plain_seen, "WAIT_MEM64 without the flag: the word's write is seen "
	   "by polling");

	p.n = 0;
	uq_wait_flagged(&p, 0x02, d.va, 1);
	uq_push(&a, &p);
	st = uq_wait(&a, 5000);
	ok((st & NPU_UQ_STS_HALTED) &&
	   uqd32(1, NPU_UQD_ERROR) == NPU_ERR_BAD_PACKET,
	   "WAIT_MEM64 with an unknown flag halts the queue (BAD_PACKET)");
	stop("uq-doorbell-poll-us instance");
}

/*
 * A busy queue writes its write-back block at most NPU_UQ_DEFER_MAX (16)
 * packets behind what it ran while more are queued, and at once when it
 * drains: sampled (a launch's SIGNAL, then the block's rptr) while 200
 * empty launches, each followed by a SIGNAL of its number, run. On the
 * virtual clock, with x-signal-delay-us holding each SIGNAL 1 ms of wall
 * time and none of device time, a sample sees the block as the device
 * left it (the bound of 20 us of device time is not reached first).
 */
static void test_uq_wb_lag(void)
{
	enum { N = 200, RING = 64 * 1024, DEFER_MAX = 16 };
	static uint32_t ring[RING / 4];
	static uint64_t pos[N + 1];	/* rptr after pair i's SIGNAL */
	struct tq a;
	struct buf sg;
	struct pk p;
	uint64_t v = 0, r, lag, max_lag = 0, end, pair = 0;
	unsigned samples = 0, behind = 0;
	bool mapped;

	start("timing=virtual,uq-compute-engines=1,uq-copy-engines=1,"
	      "x-signal-delay-us=1000", 0);
	sg = alloc_buf(4096, 0, 1);
	uq_setup(4);
	uq_desc(&a, 1, 0, RING);
	mapped = uq_cmd(NPU_UQ_CMD_MAP, 1) == 0;
	for (unsigned i = 0; i < N; i++) {
		p.n = 0;
		LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 1, 0);
		pk_signal(&p, sg.va, i + 1);
		memcpy((uint8_t *)ring + a.wptr, p.dw, 4 * p.n);
		a.wptr += 4 * p.n;
		pos[i + 1] = a.wptr;
		pair = 4 * p.n;
	}
	buf_write(&a.ring, 0, ring, a.wptr);
	uq_ring(&a);
	end = host_ns() + 20000000000ull;
	while (v < N && host_ns() < end && !q->dead) {
		v = qt_readq(q, sg.base);
		r = uq_wb(&a).rptr;
		if (!v || v > N)
			continue;
		/* packets run but not in the block: two per pair */
		lag = pos[v] > r ? (pos[v] - r + pair - 1) / pair * 2 : 0;
		if (lag > max_lag)
			max_lag = lag;
		samples++;
		behind += lag > 0;
	}
	uq_wait(&a, 5000);
	r = uq_wb(&a).rptr;
	/* the pair whose SIGNAL was read may not have finished its step */
	ok(mapped && v == N && behind && max_lag <= DEFER_MAX + 2 &&
	   r == a.wptr,
	   "a busy queue's write-back rptr is behind in some samples but at "
	   "most %d packets (%llu in %u samples, %u behind), and its end "
	   "once it drains (%llu of %llu)", DEFER_MAX, (unsigned long long)max_lag, samples,
	   behind, (unsigned long long)r, (unsigned long long)a.wptr);
	stop("write-back lag instance");
}

/* test_uq's device: "" or "timing=virtual," (test_uq_vt_all) */
static const char *uq_timing = "";

static void test_uq(void)
{
	char opts[160];
	struct tq a, b, c, many[8];
	struct buf d, sg;
	struct pk p = { .n = 0 };
	struct npu_uq_wb wb;
	struct npu_uq_event ev;
	uint32_t v, st;
	uint64_t w, ec0[4], ec1[4];
	bool good;

	/* without engines: no UQ block, no vector, no FEATURES bit */
	start("uq-compute-engines=0,uq-copy-engines=0", 0);
	wr(NPU_REG_UQ_EVENT_SIZE, 4096);
	ok(nvec == nrings + 1 &&
	   !(rd(NPU_REG_FEATURES) & NPU_FEATURE_USER_QUEUES) &&
	   rd(NPU_REG_UQ_MAX_QUEUES) == 0 && rd(NPU_REG_UQ_EVENT_SIZE) == 0 &&
	   rd(NPU_REG_VERSION) == NPU_VERSION,
	   "no user-queue engines: %u vectors, FEATURES bit 3 clear, UQ_* "
	   "read 0 (VERSION still 1.1)", nvec);
	stop("instance without user queues");

	snprintf(opts, sizeof(opts), "%suq-compute-engines=2,uq-copy-engines=1,"
		 "uq-max-queues=64,uq-doorbell-pages=4", uq_timing);
	start(opts, 0);
	sg = alloc_buf(4096, 0, 1);
	d = alloc_buf(1 << 16, 0, 1);
	ok(rd(NPU_REG_UQ_MAX_QUEUES) == 64 &&
	   rd(NPU_REG_UQ_ENGINES) == (2 | 1 << 8) &&
	   rd(NPU_REG_UQ_DOORBELL_PAGES) == 4 &&
	   rd(NPU_REG_UQ_TIMESLICE_US) == 1000 &&
	   rd(NPU_REG_UQ_SWITCH_NS) == 1000 &&
	   rd(NPU_REG_UQ_ENGINE_QUEUE(0)) == NPU_UQ_ENGINE_IDLE &&
	   rd(NPU_REG_UQ_ENGINE_QUEUE(3)) == 0,
	   "UQ registers show the properties; engines idle");
	ok(uq_cmd(NPU_UQ_CMD_MAP, 0) == NPU_ERR_RING_CONFIG,
	   "MAP with no descriptor table is RING_CONFIG");
	uq_setup(16);

	/* MAP refusals: each a good descriptor with one field wrong */
	{
		static const struct {
			unsigned off, len;
			uint64_t v;
			uint32_t err;
			const char *what;
		} bad[] = {
			{ NPU_UQD_RING_SIZE, 4, 3000, NPU_ERR_RING_CONFIG, "ring size" },
			{ NPU_UQD_RING_SIZE, 4, 2048, NPU_ERR_RING_CONFIG, "small ring" },
			{ NPU_UQD_RING_VA, 8, 0x100000800ull, NPU_ERR_RING_CONFIG, "ring VA" },
			{ NPU_UQD_WB_VA, 8, 0x100000020ull, NPU_ERR_RING_CONFIG, "wb VA" },
			{ NPU_UQD_CONFIG, 4, 0x8, NPU_ERR_RING_CONFIG, "config bits" },
			{ NPU_UQD_CONFIG, 4, 3 << 1, NPU_ERR_RING_CONFIG, "priority 3" },
			{ NPU_UQD_CTX, 4, 0, NPU_ERR_RING_CONFIG, "ctx 0" },
			{ NPU_UQD_DOORBELL, 4, NPU_UQ_DOORBELL(4, 0), NPU_ERR_RING_CONFIG, "doorbell page" },
			{ NPU_UQD_PT_ROOT, 8, PT_PA + 8, NPU_ERR_BAD_PACKET, "pt_root" },
			{ NPU_UQD_RPTR, 8, 8, NPU_ERR_RING_CONFIG, "wptr < rptr" },
			{ NPU_UQD_WPTR, 8, 8192, NPU_ERR_RING_CONFIG, "wptr - rptr > size" },
		};
		good = true;
		for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			uq_desc(&a, 1, 0, 4096);
			if (bad[i].len == 8)
				qt_writeq(q, uqd_pa(1) + bad[i].off, bad[i].v);
			else
				qt_writel(q, uqd_pa(1) + bad[i].off, bad[i].v);
			v = uq_cmd(NPU_UQ_CMD_MAP, 1);
			if (v != bad[i].err || uqd32(1, NPU_UQD_STATUS)) {
				diag("MAP with bad %s: %u", bad[i].what, v);
				good = false;
			}
		}
		ok(good, "MAP refuses bad ring VA/size, wb VA, config, ctx, "
		   "doorbell, pt_root and pointers");
	}
	ok(uq_cmd(NPU_UQ_CMD_MAP, 16) == NPU_ERR_RING_CONFIG &&
	   uq_cmd(NPU_UQ_CMD_UNMAP, 2) == NPU_ERR_RING_CONFIG,
	   "a queue index past UQ_TABLE_ENTRIES, or UNMAP of an unmapped "
	   "queue, is RING_CONFIG");
	good = uq_new(&a, 1, 0);
	st = uqd32(1, NPU_UQD_STATUS);
	uq_desc(&b, 2, 0, 4096);
	qt_writel(q, uqd_pa(2) + NPU_UQD_DOORBELL, a.db);
	ok(good && st == (UQ_RUNNABLE | NPU_UQ_STS_IDLE) &&
	   uq_cmd(NPU_UQ_CMD_MAP, 2) == NPU_ERR_RING_CONFIG &&
	   uq_cmd(NPU_UQ_CMD_MAP, 1) == NPU_ERR_RING_CONFIG &&
	   uq_wb(&a).status == (UQ_RUNNABLE | NPU_UQ_STS_IDLE),
	   "MAP: MAPPED|RUNNABLE|IDLE in the descriptor and write-back; a "
	   "doorbell bound twice or a second MAP is refused");
	wr(NPU_REG_UQ_TABLE_ENTRIES, 8);
	ok(rd(NPU_REG_UQ_TABLE_ENTRIES) == 16,
	   "UQ_TABLE_* writes are ignored while a queue is mapped");

	/* doorbell: packets run, rptr and write-back follow */
	v = 0;
	p.n = 0;
	pk_fill(&p, d.va, 4096, 0x5a5a0001);
	pk_signal(&p, sg.va, 7);
	eng_cnt(ec0);
	uq_push(&a, &p);
	st = uq_wait(&a, 5000);
	wb = uq_wb(&a);
	buf_read(&d, 4092, &v, 4);
	eng_cnt(ec1);
	ok(ec1[1] - ec0[1] == 2 && ec1[1] - ec0[1] == uqd64(1, NPU_UQD_CMDS) &&
	   ec1[2] - ec0[2] >= 4096 && ec1[2] - ec0[2] == uqd64(1, NPU_UQD_BYTES) &&
	   ec1[0] > ec0[0] &&
	   rd(NPU_REG_UQ_ENGINE_CNT(3) + NPU_UQ_ENGINE_CMDS_LO) == 0,
	   "UQ_ENGINE_CNT: the engines count the queue's packets (+%llu "
	   "commands, +%llu bytes, as its descriptor) and their busy time; "
	   "an engine past UQ_ENGINES reads 0",
	   (unsigned long long)(ec1[1] - ec0[1]),
	   (unsigned long long)(ec1[2] - ec0[2]));
	ok(st == (UQ_RUNNABLE | NPU_UQ_STS_IDLE) && v == 0x5a5a0001 &&
	   uqd64(1, NPU_UQD_RPTR) == a.wptr && uqd64(1, NPU_UQD_WPTR) == a.wptr &&
	   wb.rptr == a.wptr && wb.status == st && uqd64(1, NPU_UQD_CMDS) == 2 &&
	   uqd64(1, NPU_UQD_PROGRESS_NS) > 0 && qt_readq(q, sg.base) == 7,
	   "doorbell: FILL and SIGNAL run; rptr %llu in the descriptor and "
	   "the write-back block; CMDS 2",
	   (unsigned long long)uqd64(1, NPU_UQD_RPTR));

	/* run_start_ns: the clock at the executing packet's start, 0 after */
	{
		uint64_t busy0 = uqd64(1, NPU_UQD_BUSY_NS), rs, clk, busy_mid;
		uint32_t seq0 = uqd32(1, NPU_UQD_STATE_SEQ), seq_mid, seq_end;
		int i;

		p.n = 0;
		LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 1, 200000000);
		uq_push(&a, &p);
		/* the packet starts at once; with timing=virtual the clock
		 * stands still meanwhile (vt-settle-us), so read at once */
		for (i = 0; i < 2000 && !uqd64(1, NPU_UQD_RUN_START_NS); i++)
			usleep(1000);
		if (!*uq_timing)
			usleep(50000);
		seq_mid = uqd32(1, NPU_UQD_STATE_SEQ);
		rs = uqd64(1, NPU_UQD_RUN_START_NS);
		busy_mid = uqd64(1, NPU_UQD_BUSY_NS);
		clk = dev_clock();
		st = uq_wait(&a, 5000);
		seq_end = uqd32(1, NPU_UQD_STATE_SEQ);
		/* with timing=virtual the clock may not have moved yet */
		if (!(rs > 0 && rs <= clk && busy_mid == busy0))
			diag("run_start_ns %llu, clock %llu, busy_ns %llu -> %llu",
			     (unsigned long long)rs, (unsigned long long)clk,
			     (unsigned long long)busy0, (unsigned long long)busy_mid);
		ok(rs > 0 && rs <= clk && busy_mid == busy0 &&
		   st == (UQ_RUNNABLE | NPU_UQ_STS_IDLE) &&
		   uqd64(1, NPU_UQD_RUN_START_NS) == 0 &&
		   uqd64(1, NPU_UQD_BUSY_NS) - busy0 >= 200000000,
		   "run_start_ns: set while a 200 ms packet runs (%llu ns before "
		   "the clock), 0 after it, when busy_ns has grown by it (%llu)%s",
		   (unsigned long long)(clk - rs),
		   (unsigned long long)(uqd64(1, NPU_UQD_BUSY_NS) - busy0),
		   *uq_timing ? " (timing=virtual)" : "");
		ok(seq0 && !(seq0 & 1) && !(seq_mid & 1) && !(seq_end & 1) &&
		   seq_mid > seq0 && seq_end > seq_mid,
		   "state_seq: even between the device's writes of the state, "
		   "and it moved when the packet started and when it ended "
		   "(%u -> %u -> %u)", seq0, seq_mid, seq_end);
	}

	/* stale doorbell ignored; misaligned one halts with RING_CONFIG */
	qt_writeq(q, BAR1 + 8ull * a.db, 4);
	usleep(2000);
	good = uqd64(1, NPU_UQD_WPTR) == a.wptr &&
	       !(uqd32(1, NPU_UQD_STATUS) & NPU_UQ_STS_HALTED);
	qt_writeq(q, BAR1 + 8ull * a.db, a.wptr + 6);
	st = uqd32(1, NPU_UQD_STATUS);
	ev = uq_find_event(NPU_UQ_EVENT_HALT, 1);
	ok(good && (st & NPU_UQ_STS_HALTED) &&
	   uqd32(1, NPU_UQD_ERROR) == NPU_ERR_RING_CONFIG &&
	   uqd64(1, NPU_UQD_FAULT) == a.wptr + 6 &&
	   uq_wb(&a).error == NPU_ERR_RING_CONFIG &&
	   ev.kind == NPU_UQ_EVENT_HALT && ev.data == NPU_ERR_RING_CONFIG &&
	   ev.ctx == CTX_ID && wait_msi(nrings + 1, 2000),
	   "a stale doorbell is ignored; a misaligned one halts the queue "
	   "(RING_CONFIG, fault = value, HALT event, vector %u)", nrings + 1);
	ok(uq_cmd(NPU_UQ_CMD_RESET, 1) == 0 &&
	   uqd32(1, NPU_UQD_STATUS) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE) &&
	   uqd32(1, NPU_UQD_ERROR) == 0, "RESET clears HALTED and the error");

	/* a privileged packet halts its queue at that packet; CONTINUE skips */
	good = uq_new(&b, 2, 0);
	p.n = 0;
	pk_fence(&p, 1, FENCE_PA, 0);
	pk_fill(&p, d.va, 4, 0x77);
	w = b.wptr;
	uq_push(&b, &p);
	st = uq_wait(&b, 5000);
	ok(good && (st & NPU_UQ_STS_HALTED) &&
	   uqd32(2, NPU_UQD_ERROR) == NPU_ERR_PRIVILEGED &&
	   uqd64(2, NPU_UQD_FAULT) == b.ring.va + w &&
	   uqd64(2, NPU_UQD_RPTR) == w && uq_wb(&b).rptr == w,
	   "FENCE on a user queue: PRIVILEGED, fault = its VA, rptr stays at it");
	p.n = 0;
	pk_fill(&p, d.va + 8, 4, 0x88);
	uq_push(&a, &p);
	st = uq_wait(&a, 5000);
	buf_read(&d, 8, &v, 4);
	ok(st == (UQ_RUNNABLE | NPU_UQ_STS_IDLE) && v == 0x88 &&
	   (uqd32(2, NPU_UQD_STATUS) & NPU_UQ_STS_HALTED),
	   "another queue of the same context runs on while one is halted");
	good = uq_cmd(NPU_UQ_CMD_CONTINUE, 2) == 0;
	st = uq_wait(&b, 5000);
	buf_read(&d, 0, &v, 4);
	ok(good && st == (UQ_RUNNABLE | NPU_UQ_STS_IDLE) && v == 0x77,
	   "CONTINUE skips the failed packet and runs the rest");

	/* an MMU fault halts one queue; the write-back says why */
	p.n = 0;
	pk_fill(&p, 0x7000000000ull, 64, 1);
	uq_push(&b, &p);
	p.n = 0;
	pk_fill(&p, d.va + 16, 4, 0x99);
	uq_push(&a, &p);
	st = uq_wait(&b, 5000);
	wb = uq_wb(&b);
	good = uq_wait(&a, 5000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
	buf_read(&d, 16, &v, 4);
	ok(good && (st & NPU_UQ_STS_HALTED) && v == 0x99 &&
	   wb.error == NPU_ERR_MMU_FAULT && wb.fault == 0x7000000000ull &&
	   (wb.status & NPU_UQ_STS_HALTED) &&
	   uqd32(2, NPU_UQD_ERROR_INFO) == NPU_OP_FILL,
	   "an MMU fault halts its queue alone (error %u fault 0x%llx in the "
	   "write-back)", wb.error, (unsigned long long)wb.fault);
	uq_cmd(NPU_UQ_CMD_RESET, 2);

	/* INDIRECT on a user queue; LAUNCH refused on a copy queue */
	{
		struct buf ibb = alloc_buf(4096, 0, 0);
		struct pk ib = { .n = 0 };

		pk_fill(&ib, d.va + 20, 4, 0xabc);
		buf_write(&ibb, 0, ib.dw, ib.n * 4);
		p.n = 0;
		pk_ib(&p, ibb.va, ib.n * 4);
		uq_push(&a, &p);
		st = uq_wait(&a, 5000);
		buf_read(&d, 20, &v, 4);
		ok(st == (UQ_RUNNABLE | NPU_UQ_STS_IDLE) && v == 0xabc,
		   "INDIRECT runs in the queue's context");
	}
	good = uq_new(&c, 3, NPU_UQ_CONFIG_COPY);
	p.n = 0;
	LAUNCH(&p, NPU_KERNEL_NOP, 1);
	uq_push(&c, &p);
	st = uq_wait(&c, 5000);
	ok(good && (st & NPU_UQ_STS_HALTED) &&
	   uqd32(3, NPU_UQD_ERROR) == NPU_ERR_BAD_PACKET,
	   "a copy queue refuses LAUNCH (BAD_PACKET)");
	uq_cmd(NPU_UQ_CMD_RESET, 3);

	/* waits yield: two queues wait, the third still gets an engine */
	{
		uint64_t zero = 0;

		buf_write(&sg, 64, &zero, 8);
		buf_write(&sg, 128, &zero, 8);
		p.n = 0;
		pk_wait64(&p, sg.va + 64, 1);
		pk_fill(&p, d.va + 24, 4, 0x1111);
		uq_push(&a, &p);
		p.n = 0;
		pk_wait64(&p, sg.va + 128, 1);
		pk_fill(&p, d.va + 28, 4, 0x2222);
		uq_push(&b, &p);
		for (unsigned i = 0; i < 5000 &&
		     (!(uqd32(1, NPU_UQD_STATUS) & NPU_UQ_STS_WAITING) ||
		      !(uqd32(2, NPU_UQD_STATUS) & NPU_UQ_STS_WAITING)); i++)
			usleep(1000);
		good = (uqd32(1, NPU_UQD_STATUS) & NPU_UQ_STS_WAITING) &&
		       (uqd32(2, NPU_UQD_STATUS) & NPU_UQ_STS_WAITING) &&
		       rd(NPU_REG_UQ_ENGINE_QUEUE(0)) == NPU_UQ_ENGINE_IDLE &&
		       rd(NPU_REG_UQ_ENGINE_QUEUE(1)) == NPU_UQ_ENGINE_IDLE;
		/* a third compute queue: SIGNAL the word queue b waits on */
		uq_desc(&many[0], 4, 0, 4096);
		good &= uq_cmd(NPU_UQ_CMD_MAP, 4) == 0;
		p.n = 0;
		pk_fill(&p, d.va + 32, 4, 0x3333);
		pk_signal(&p, sg.va + 128, 1);
		uq_push(&many[0], &p);
		good &= uq_wait(&many[0], 5000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
		good &= uq_wait(&b, 5000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
		buf_read(&d, 28, &v, 4);
		good &= v == 0x2222;
		ok(good && (uqd32(1, NPU_UQD_STATUS) & NPU_UQ_STS_WAITING),
		   "two queues waiting hold no engine: a third runs and its "
		   "SIGNAL releases one of them at once");
		w = 1;
		buf_write(&sg, 64, &w, 8);
		good = uq_cmd(NPU_UQ_CMD_KICK, 1) == 0;
		good &= uq_wait(&a, 5000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
		buf_read(&d, 24, &v, 4);
		ok(good && v == 0x1111, "a host write + KICK releases the other");
	}

	/* more queues than engines: 8 queues, per-queue order kept */
	{
		struct buf ts = alloc_buf(8 * 40 * 8, 0, 1);
		uint64_t t[40];

		good = true;
		for (unsigned i = 0; i < 8; i++) {
			if (i)
				uq_desc(&many[i], 4 + i, 0, 4096);
			good &= i ? uq_cmd(NPU_UQ_CMD_MAP, 4 + i) == 0 : true;
		}
		for (unsigned i = 0; i < 8; i++) {
			p.n = 0;
			for (unsigned k = 0; k < 40; k++) {
				pk_ts(&p, ts.va + (i * 40 + k) * 8);
				if (k % 8 == 0)
					LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 1, 300000);
			}
			uq_push(&many[i], &p);
		}
		for (unsigned i = 0; i < 8; i++) {
			good &= uq_wait(&many[i], 20000) ==
				(UQ_RUNNABLE | NPU_UQ_STS_IDLE);
			buf_read(&ts, i * 40 * 8, t, sizeof(t));
			for (unsigned k = 1; k < 40; k++)
				good &= t[k] >= t[k - 1] && t[k];
		}
		ok(good, "8 queues on 2 compute engines all complete, each in "
		   "its own order");
	}

	/* SUSPEND keeps a queue off its engine; RUN lets it go; UNMAP */
	p.n = 0;
	pk_fill(&p, d.va + 36, 4, 0x4444);
	good = uq_cmd(NPU_UQ_CMD_SUSPEND, 1) == 0;
	uq_push(&a, &p);
	usleep(20000);
	buf_read(&d, 36, &v, 4);
	good &= v != 0x4444 && uqd64(1, NPU_UQD_WPTR) == a.wptr &&
		uqd32(1, NPU_UQD_STATUS) == NPU_UQ_STS_MAPPED;
	if (!good)
		diag("suspended: v 0x%x wptr %llu/%llu status 0x%x", v,
		     (unsigned long long)uqd64(1, NPU_UQD_WPTR),
		     (unsigned long long)a.wptr, uqd32(1, NPU_UQD_STATUS));
	good &= uq_cmd(NPU_UQ_CMD_RUN, 1) == 0;
	good &= uq_wait(&a, 5000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
	buf_read(&d, 36, &v, 4);
	ok(good && v == 0x4444,
	   "SUSPEND records doorbells but runs nothing; RUN runs them");
	ok(uq_cmd(NPU_UQ_CMD_UNMAP, 1) == 0 && uqd32(1, NPU_UQD_STATUS) == 0 &&
	   uqd64(1, NPU_UQD_RPTR) == a.wptr,
	   "UNMAP: status 0, the state stays in the descriptor");

	/* STOP of a queue inside a long kernel, bounded as a ring reset */
	p.n = 0;
	LAUNCH(&p, NPU_KERNEL_TEST_HANG, 1);
	uq_push(&b, &p);
	for (unsigned i = 0; i < 5000 &&
	     !(uqd32(2, NPU_UQD_STATUS) & NPU_UQ_STS_RUNNING); i++)
		usleep(1000);
	good = !!(uqd32(2, NPU_UQD_STATUS) & NPU_UQ_STS_RUNNING);
	good &= uq_cmd(NPU_UQ_CMD_STOP, 2) == 0;
	st = uqd32(2, NPU_UQD_STATUS);
	ok(good && (st & NPU_UQ_STS_HALTED) && !(st & NPU_UQ_STS_RUNNING) &&
	   uqd32(2, NPU_UQD_ERROR) == NPU_ERR_STOPPED,
	   "STOP aborts a hung kernel: HALTED with STOPPED (status 0x%x)", st);
	good = uq_cmd(NPU_UQ_CMD_RESET, 2) == 0;
	p.n = 0;
	pk_fill(&p, d.va + 40, 4, 0x5555);
	uq_push(&b, &p);
	good &= uq_wait(&b, 5000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
	buf_read(&d, 40, &v, 4);
	ok(good && v == 0x5555, "after RESET the queue runs new packets");

	/* OFF: SUSPEND of a queue inside a kernel takes effect after it */
	{
		uint32_t tail0 = rd(NPU_REG_UQ_EVENT_TAIL);

		p.n = 0;
		LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 1, 30000000);
		uq_push(&b, &p);
		for (unsigned i = 0; i < 5000 &&
		     !(uqd32(2, NPU_UQD_STATUS) & NPU_UQ_STS_RUNNING); i++)
			usleep(1000);
		good = uq_cmd(NPU_UQ_CMD_SUSPEND, 2) == 0 &&
		       (uqd32(2, NPU_UQD_STATUS) & NPU_UQ_STS_RUNNING);
		for (unsigned i = 0; i < 5000 &&
		     rd(NPU_REG_UQ_EVENT_TAIL) == tail0; i++)
			usleep(1000);
		ev = uq_event_at(tail0);
		st = uqd32(2, NPU_UQD_STATUS);
		ok(good && ev.kind == NPU_UQ_EVENT_OFF && ev.queue == 2 &&
		   st == (NPU_UQ_STS_MAPPED | NPU_UQ_STS_IDLE) &&
		   uqd64(2, NPU_UQD_RPTR) == b.wptr,
		   "SUSPEND of a running queue returns at once; OFF event when "
		   "its packet has completed (status 0x%x)", st);
		uq_cmd(NPU_UQ_CMD_RUN, 2);
	}

	/* PROGRESS: an event when rptr reaches irq_rptr */
	{
		uint32_t tail0 = rd(NPU_REG_UQ_EVENT_TAIL);

		p.n = 0;
		pk_ts(&p, sg.va + 256);
		qt_writeq(q, uqd_pa(2) + NPU_UQD_IRQ_RPTR, b.wptr + 2 * 16);
		for (unsigned k = 0; k < 3; k++)
			uq_put(&b, &p);
		uq_ring(&b);
		good = uq_wait(&b, 5000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
		ev = uq_event_at(tail0);
		/* the rptr the descriptor was written with: at irq_rptr, or
		 * past it by packets of no modelled time (the third TS) */
		ok(good && ev.kind == NPU_UQ_EVENT_PROGRESS && ev.queue == 2 &&
		   ev.data >= b.wptr - 16 && ev.data <= b.wptr &&
		   uqd64(2, NPU_UQD_RPTR) == b.wptr &&
		   rd(NPU_REG_UQ_EVENT_TAIL) == ((tail0 + 16) & 4095),
		   "PROGRESS event once, when rptr reaches irq_rptr (data %llu)",
		   (unsigned long long)ev.data);
		qt_writeq(q, uqd_pa(2) + NPU_UQD_IRQ_RPTR, 0);
	}

	/* bus mastering off: the queue's accesses fail with BAD_DMA */
	{
		uint32_t cmd = cfg_readl(0x04);

		uq_cmd(NPU_UQ_CMD_RESET, 2);
		cfg_writel(0x04, cmd & ~0x4u);
		p.n = 0;
		pk_fill(&p, d.va + 44, 4, 0x6666);
		uq_push(&b, &p);
		usleep(20000);
		cfg_writel(0x04, cmd);
		/* the descriptor could not be written meanwhile: KICK does */
		good = uq_cmd(NPU_UQ_CMD_KICK, 2) == 0;
		st = uqd32(2, NPU_UQD_STATUS);
		good &= (st & NPU_UQ_STS_HALTED) &&
			uqd32(2, NPU_UQD_ERROR) == NPU_ERR_BAD_DMA;
		good &= uq_cmd(NPU_UQ_CMD_CONTINUE, 2) == 0 &&
			uq_wait(&b, 5000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
		buf_read(&d, 44, &v, 4);
		ok(good && v == 0x6666, "bus mastering off: the queue halts "
		   "with BAD_DMA (status 0x%x), shown by the next command; on "
		   "again, CONTINUE runs the packet", st);
	}

	/* random packets, doorbells and commands never crash QEMU */
	{
		struct tq *fq[3] = { &b, &c, &many[1] };
		unsigned halts = 0;

		fz_host = alloc_buf(65536, 0, 1);
		fz_dev = alloc_buf(65536, 1, 1);
		for (int i = 0; i < 1500 && !q->dead; i++) {
			struct tq *t = fq[rnd() % 3];
			uint32_t k = rnd() % 32;

			if (k == 0) {
				uq_cmd(1 + rnd() % 9, rnd() % 18);
			} else if (k == 1) {
				qt_writeq(q, BAR1 + 8ull * (rnd() % 2048),
					  rnd() % 2 ? rnd64() : t->wptr + rnd() % 64);
			} else if (k == 2) {
				uint32_t off = 0x2000 + (rnd() % 0x140 & ~3u);

				if (off != NPU_REG_UQ_TABLE_BASE_LO &&
				    off != NPU_REG_UQ_TABLE_BASE_HI)
					wr(off, rnd());
			} else {
				struct pk fp = { .n = 0 };
				unsigned n = 1 + rnd() % 4;

				for (unsigned j = 0; j < n; j++)
					fuzz_packet(&fp, 0);
				t->wptr = uqd64(t->idx, NPU_UQD_WPTR);
				if (fp.n < 512 && t->wptr -
				    uqd64(t->idx, NPU_UQD_RPTR) < t->size - 2048)
					uq_push(t, &fp);
			}
			if (rnd() % 4 == 0) {
				for (unsigned j = 0; j < 3; j++) {
					if (!(uqd32(fq[j]->idx, NPU_UQD_STATUS) &
					      NPU_UQ_STS_HALTED))
						continue;
					halts++;
					uq_cmd(rnd() % 2 ? NPU_UQ_CMD_CONTINUE :
					       NPU_UQ_CMD_RESET, fq[j]->idx);
				}
			}
		}
		ok(!q->dead && qt_alive(q),
		   "user-queue fuzz: random packets, doorbells, commands and "
		   "UQ register writes (%u halts), QEMU responsive", halts);
	}

	/* a device reset unmaps every queue */
	eng_cnt(ec0);
	wr(NPU_REG_RESET, NPU_RESET_MAGIC);
	eng_cnt(ec1);
	ok(rd(NPU_REG_UQ_TABLE_ENTRIES) == 0 && rd(NPU_REG_UQ_EVENT_SIZE) == 0 &&
	   uq_cmd(NPU_UQ_CMD_UNMAP, 2) == NPU_ERR_RING_CONFIG,
	   "device reset clears the UQ registers and unmaps the queues");
	ok(ec0[1] > 0 && !ec1[0] && !ec1[1] && !ec1[2] && !ec1[3],
	   "... and the engine counters (%llu commands before)",
	   (unsigned long long)ec0[1]);
	stop("user-queue instance");
}

/*
 * Priorities and no starvation on one compute engine with a 1 ms slice.
 * Each packet of the queues below is one INDIRECT of a TIMESTAMP and a
 * 3 ms kernel (a dispatch runs at least one packet, so the pair is split
 * only if the TIMESTAMP took a whole slice): every dispatch runs exactly
 * one of them, and the timestamps give the dispatch order. A low-priority
 * queue ready before two high-priority ones runs after exactly 8 high
 * dispatches.
 */
static void uq_put_timed(struct tq *t, struct buf *ibs, unsigned *nib,
			 uint64_t ts_va)
{
	struct pk ib = { .n = 0 }, p = { .n = 0 };
	uint64_t off = (uint64_t)*nib * 64;

	pk_ts(&ib, ts_va);
	LAUNCH(&ib, NPU_KERNEL_TEST_SPIN, 1, 3000000);
	buf_write(ibs, off, ib.dw, ib.n * 4);
	pk_ib(&p, ibs->va + off, ib.n * 4);
	uq_put(t, &p);
	++*nib;
}

static void test_uq_sched(void)
{
	char opts[160];
	struct tq blk, lo, h1, h2;
	struct buf ts, ibs;
	struct pk p = { .n = 0 };
	uint64_t tl[2], th[2][12];
	unsigned before = 0, before2 = 0, nib = 0;
	bool good, busy;

	snprintf(opts, sizeof(opts), "%suq-compute-engines=1,uq-copy-engines=0,"
		 "uq-max-queues=8,uq-doorbell-pages=1,uq-timeslice-us=1000",
		 uq_timing);
	start(opts, 0);
	ts = alloc_buf(4096, 0, 1);
	ibs = alloc_buf(8192, 0, 0);
	uq_setup(8);
	good = uq_new(&blk, 0, NPU_UQ_PRIO_NORMAL << NPU_UQ_CONFIG_PRIO_SHIFT);
	good &= uq_new(&lo, 1, NPU_UQ_PRIO_LOW << NPU_UQ_CONFIG_PRIO_SHIFT);
	good &= uq_new(&h1, 2, NPU_UQ_PRIO_HIGH << NPU_UQ_CONFIG_PRIO_SHIFT);
	good &= uq_new(&h2, 3, NPU_UQ_PRIO_HIGH << NPU_UQ_CONFIG_PRIO_SHIFT);
	for (unsigned k = 0; k < 2; k++)
		uq_put_timed(&lo, &ibs, &nib, ts.va + k * 8);
	for (unsigned h = 0; h < 2; h++)
		for (unsigned k = 0; k < 12; k++)
			uq_put_timed(h ? &h2 : &h1, &ibs, &nib,
				     ts.va + 256 + (h * 12 + k) * 8);
	/* the engine is busy with blk while the others become ready */
	LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 1, 200000000);
	uq_push(&blk, &p);
	for (unsigned i = 0; i < 5000 && rd(NPU_REG_UQ_ENGINE_QUEUE(0)); i++)
		usleep(1000);
	uq_ring(&lo);
	uq_ring(&h1);
	uq_ring(&h2);
	busy = rd(NPU_REG_UQ_ENGINE_QUEUE(0)) == 0;
	good &= uq_wait(&lo, 20000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
	good &= uq_wait(&h1, 20000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
	good &= uq_wait(&h2, 20000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
	buf_read(&ts, 0, tl, 16);
	buf_read(&ts, 256, th, sizeof(th));
	for (unsigned h = 0; h < 2; h++)
		for (unsigned k = 0; k < 12; k++) {
			before += th[h][k] < tl[0];
			before2 += th[h][k] < tl[1];
		}
	if (!busy)
		diag("the engine finished the blocking queue before the "
		     "doorbells: the order below is not the one tested");
	ok(good && busy && th[0][0] < tl[0] && th[1][0] < tl[0] &&
	   th[0][1] > th[1][0],
	   "high-priority queues go first and take turns (round robin)");
	ok(good && busy && before == 8 && before2 == 16,
	   "the low-priority queue runs after 8 high-priority dispatches, "
	   "and again after 8 more (%u, %u)", before, before2);

	/* MMU_INVALIDATE reaches a user queue's engine (one engine: the same TLB) */
	{
		struct buf m = alloc_buf(4096, 0, 1);
		struct pk p = { .n = 0 };
		bool good;
		uint64_t pte_old = buf_phys(&m, 0), zero = 0;
		struct buf m2 = alloc_buf(4096, 0, 1);

		p.n = 0;
		pk_fill(&p, m.va, 4, 0x1234);
		uq_push(&blk, &p);
		good = uq_wait(&blk, 5000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
		/* remap m.va to m2's page: only an invalidation makes it seen */
		qt_writeq(q, buf_phys(&m2, 0), zero);
		pt_map(m.va, buf_phys(&m2, 0) | NPU_PTE_VALID | NPU_PTE_WRITE);
		pt_sync();
		wr(NPU_REG_MMU_INVALIDATE, CTX_ID);
		p.n = 0;
		pk_fill(&p, m.va, 4, 0x5678);
		uq_push(&blk, &p);
		good &= uq_wait(&blk, 5000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
		ok(good && qt_readl(q, buf_phys(&m2, 0)) == 0x5678 &&
		   qt_readl(q, pte_old) == 0x1234,
		   "MMU_INVALIDATE of the context drops a user queue's cached "
		   "translation");
	}

	/* a queue leaves its engine between two packets of one IB too */
	{
		struct tq x, y;
		struct pk ib = { .n = 0 };
		uint64_t tx[6], ty[6];
		bool in_order = true;

		good = uq_new(&x, 4, NPU_UQ_PRIO_NORMAL << NPU_UQ_CONFIG_PRIO_SHIFT);
		good &= uq_new(&y, 5, NPU_UQ_PRIO_NORMAL << NPU_UQ_CONFIG_PRIO_SHIFT);
		for (unsigned k = 0; k < 6; k++) {
			pk_ts(&ib, ts.va + 1024 + k * 8);
			LAUNCH(&ib, NPU_KERNEL_TEST_SPIN, 1, 3000000);
		}
		buf_write(&ibs, 4096, ib.dw, ib.n * 4);
		p.n = 0;
		pk_ib(&p, ibs.va + 4096, ib.n * 4);
		uq_push(&x, &p);
		for (unsigned i = 0; i < 5000 &&
		     rd(NPU_REG_UQ_ENGINE_QUEUE(0)) != 4; i++)
			usleep(1000);
		for (unsigned k = 0; k < 6; k++)
			uq_put_timed(&y, &ibs, &nib, ts.va + 2048 + k * 8);
		uq_ring(&y);
		good &= uq_wait(&x, 20000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
		good &= uq_wait(&y, 20000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
		buf_read(&ts, 1024, tx, sizeof(tx));
		buf_read(&ts, 2048, ty, sizeof(ty));
		for (unsigned k = 1; k < 6; k++)
			in_order &= tx[k] > tx[k - 1] && ty[k] > ty[k - 1];
		ok(good && in_order && ty[0] < tx[5] && ty[0] > tx[0] &&
		   uqd32(4, NPU_UQD_IB_OFFSET) == 0,
		   "time slices switch queues between the packets of an "
		   "indirect buffer, which resumes where it left off");
	}
	stop("user-queue scheduler instance");
}

/*
 * Every user-queue case of test_uq again, with timing=virtual. A settle
 * time of 100 ms keeps the clock still while the test looks at a queue
 * in the middle of a modelled kernel (it polls with reads, which do not
 * count as touching the device).
 */
static void test_uq_vt_all(void)
{
	uq_timing = "timing=virtual,vt-settle-us=100000,";
	test_uq();
	test_uq_sched();
	uq_timing = "";
}

/*
 * timing=virtual: user queues on the device clock. Queues a, b and c (one
 * compute engine, 25 us slices, 1 us switches) each wait for a gate, then
 * take turns at six TIMESTAMP + FILL pairs (10 us a FILL over the link);
 * while they wait, queue y runs on the compute engine (waiting queues do
 * not hold it); then queue z on the copy engine fills for 10 us and
 * signals the gate. The
 * times follow from the model alone: the first TIMESTAMP is the gate's
 * signal time plus one switch, each slice holds three pairs, the queues
 * go a, b, c, a, b, c, and a switch costs exactly uq-switch-ns. A second
 * run gives the same times (from its gate's signal).
 */
#define UQVT_K 6

static bool uq_vt_run(struct tq *t, struct tq *y, struct tq *z,
		      struct buf *ts, struct buf *d, struct buf *sg,
		      uint64_t run, int64_t rel[3][UQVT_K], uint64_t *sig_ts)
{
	struct pk p = { .n = 0 };
	uint64_t raw[3][UQVT_K], start[3];
	bool good = true;

	for (unsigned i = 0; i < 3; i++) {
		start[i] = t[i].wptr;
		p.n = 0;
		pk_wait64(&p, sg->va, run);
		for (unsigned k = 0; k < UQVT_K; k++) {
			pk_ts(&p, ts->va + (i * UQVT_K + k) * 8);
			pk_fill(&p, d->va + i * 65536, 40000, run);
		}
		uq_push(&t[i], &p);
	}
	/* the three wait (off the engine) before the gate's queue starts */
	for (unsigned i = 0; i < 3; i++)
		for (unsigned w = 0; w < 5000 &&
		     !(uqd32(t[i].idx, NPU_UQD_STATUS) & NPU_UQ_STS_WAITING); w++)
			usleep(1000);
	/* meanwhile a fourth queue has the compute engine to itself */
	p.n = 0;
	pk_fill(&p, d->va + 3 * 65536 + 40960, 4096, run);
	uq_push(y, &p);
	good &= uq_wait(y, 20000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
	for (unsigned i = 0; i < 3; i++)
		good &= (uqd32(t[i].idx, NPU_UQD_STATUS) & NPU_UQ_STS_WAITING) &&
			uqd64(t[i].idx, NPU_UQD_RPTR) == start[i];
	p.n = 0;
	pk_fill(&p, d->va + 3 * 65536, 40000, run);
	pk_signal(&p, sg->va, run);
	uq_push(z, &p);
	for (unsigned i = 0; i < 3; i++)
		good &= uq_wait(&t[i], 20000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
	good &= uq_wait(z, 20000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
	buf_read(ts, 0, raw, sizeof(raw));
	buf_read(sg, offsetof(struct npu_signal, timestamp), sig_ts, 8);
	for (unsigned i = 0; i < 3; i++)
		for (unsigned k = 0; k < UQVT_K; k++)
			rel[i][k] = (int64_t)(raw[i][k] - *sig_ts);
	return good;
}

static void test_uq_vt(void)
{
	struct tq t[3], y, z;
	struct buf ts, d, sg;
	int64_t rel[2][3][UQVT_K], fill = 0;
	uint64_t sig[2], prev = 0;
	unsigned order[3 * UQVT_K], n = 0, runs = 0;
	bool good, same, shape = true;

	start("timing=virtual,uq-compute-engines=1,uq-copy-engines=1,"
	      "uq-max-queues=8,uq-doorbell-pages=1,uq-timeslice-us=25,"
	      "uq-switch-ns=1000", 0);
	ts = alloc_buf(4096, 0, 1);
	d = alloc_buf(4 * 65536, 0, 1);
	sg = alloc_buf(4096, 0, 1);
	uq_setup(8);
	good = true;
	for (unsigned i = 0; i < 3; i++)
		good &= uq_new(&t[i], i, NPU_UQ_PRIO_NORMAL << NPU_UQ_CONFIG_PRIO_SHIFT);
	good &= uq_new(&y, 3, NPU_UQ_PRIO_NORMAL << NPU_UQ_CONFIG_PRIO_SHIFT);
	good &= uq_new(&z, 4, NPU_UQ_CONFIG_COPY);
	good &= uq_vt_run(t, &y, &z, &ts, &d, &sg, 1, rel[0], &sig[0]);
	good &= uq_vt_run(t, &y, &z, &ts, &d, &sg, 2, rel[1], &sig[1]);
	same = !memcmp(rel[0], rel[1], sizeof(rel[0]));
	if (!same)
		for (unsigned i = 0; i < 3; i++)
			diag("queue %u: %lld %lld .. / %lld %lld ..", i,
			     (long long)rel[0][i][0], (long long)rel[0][i][1],
			     (long long)rel[1][i][0], (long long)rel[1][i][1]);
	ok(good && same && sig[1] > sig[0],
	   "timing=virtual: two identical runs of three user queues give the "
	   "same device times; a fourth queue runs on their engine while they "
	   "wait");

	/* the times in the order they happened: which queue, and the gaps */
	while (n < 3 * UQVT_K) {
		int best = -1;
		unsigned bk = 0;

		for (unsigned i = 0; i < 3; i++)
			for (unsigned k = 0; k < UQVT_K; k++)
				if ((uint64_t)rel[0][i][k] >= prev && (n == 0 ||
				     (uint64_t)rel[0][i][k] > prev) &&
				    (best < 0 || rel[0][i][k] < rel[0][best][bk])) {
					best = i;
					bk = k;
				}
		if (best < 0)
			break;
		if (n == 1)
			fill = rel[0][best][bk] - (int64_t)prev;
		if (n && order[n - 1] == (unsigned)best)
			shape &= rel[0][best][bk] - (int64_t)prev == fill;
		else if (n)
			shape &= rel[0][best][bk] - (int64_t)prev == fill + 1000;
		runs += !n || order[n - 1] != (unsigned)best;
		order[n++] = best;
		prev = rel[0][best][bk];
	}
	for (unsigned j = 0; j < n; j++)
		shape &= order[j] == (j / 3) % 3;
	if (!shape || n != 3 * UQVT_K)
		for (unsigned j = 0; j < n; j++)
			diag("%u: queue %u", j, order[j]);
	ok(good && n == 3 * UQVT_K && shape && fill == 10000 &&
	   rel[0][0][0] == 1000 && runs == 6,
	   "timing=virtual: the gate releases the queues at its signal's time "
	   "(+ one 1 us switch), three 10 us FILLs a 25 us slice, round robin "
	   "a b c a b c, each switch 1 us");
	/*
	 * priorities: a low and (rung after it waits) a high queue released
	 * together: the high one goes first, with no switch (its wait was the
	 * engine's last), then the low one after one switch
	 */
	{
		struct tq lo, hi;
		struct pk p = { .n = 0 };
		uint64_t tl[2], th[2], s3;

		good = uq_new(&lo, 5, NPU_UQ_PRIO_LOW << NPU_UQ_CONFIG_PRIO_SHIFT);
		good &= uq_new(&hi, 6, NPU_UQ_PRIO_HIGH << NPU_UQ_CONFIG_PRIO_SHIFT);
		for (unsigned h = 0; h < 2; h++) {
			struct tq *u = h ? &hi : &lo;

			p.n = 0;
			pk_wait64(&p, sg.va, 3);
			for (unsigned k = 0; k < 2; k++) {
				pk_ts(&p, ts.va + 1024 + (h * 2 + k) * 8);
				pk_fill(&p, d.va + (h + 1) * 65536, 40000, 3);
			}
			uq_push(u, &p);
			for (unsigned w = 0; w < 5000 &&
			     !(uqd32(u->idx, NPU_UQD_STATUS) & NPU_UQ_STS_WAITING);
			     w++)
				usleep(1000);
		}
		p.n = 0;
		pk_signal(&p, sg.va, 3);
		uq_push(&z, &p);
		good &= uq_wait(&lo, 20000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
		good &= uq_wait(&hi, 20000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
		buf_read(&ts, 1024, tl, 16);
		buf_read(&ts, 1040, th, 16);
		buf_read(&sg, offsetof(struct npu_signal, timestamp), &s3, 8);
		if (th[0] != s3 || th[1] != s3 + 10000 ||
		    tl[0] != s3 + 21000 || tl[1] != s3 + 31000)
			diag("signal %llu: high +%lld +%lld, low +%lld +%lld",
			     (unsigned long long)s3, (long long)(th[0] - s3),
			     (long long)(th[1] - s3), (long long)(tl[0] - s3),
			     (long long)(tl[1] - s3));
		ok(good && th[0] == s3 && th[1] == s3 + 10000 &&
		   tl[0] == s3 + 21000 && tl[1] == s3 + 31000,
		   "timing=virtual: released together, the high-priority queue "
		   "runs first (no switch: it was the engine's last), the low "
		   "one after one switch");
	}
	stop("user-queue timing=virtual instance");
}

/*
 * Migrate a device with user queues to a second QEMU: queue 0 waits on a
 * gate (WAIT_MEM64) with a FILL behind it; queue 1 is inside an indirect
 * buffer (FILL, a 10 s kernel, a SEM_SIGNAL that counts its runs, FILL)
 * when the migration starts (its RAM copy takes far less, also on a
 * loaded host, where 2 s was too short once; the drain for the save ends
 * the kernel early, so its length costs nothing), and leaves its
 * engine at the IB's next packet for the save; queue 2 is halted by a fault; queue 3 is suspended
 * with work pending. In the second QEMU the doorbells still reach the
 * queues, the gate releases queue 0, queue 1's IB resumes where it was
 * (its count is 1), CONTINUE and RUN work.
 */
static void test_uq_migration(void)
{
	const char *opts = "uq-compute-engines=2,uq-copy-engines=1,"
			   "uq-max-queues=16,uq-doorbell-pages=1,"
			   "devmem-size=16M";
	char file[64], out_uri[128], in_uri[128], dev[160], json[256];
	const char *extra[] = { "-device", dev, "-incoming", in_uri, NULL };
	struct tq a, b, c, d;
	struct buf gate, w, ibb;
	struct pk p = { .n = 0 }, ib = { .n = 0 };
	uint32_t v[4], ib_off;
	uint64_t zero = 0, one = 1;
	const char *r;
	bool good;
	int started;

	snprintf(file, sizeof(file), "/tmp/npu-devtest-uqmig-%d", (int)getpid());
	snprintf(out_uri, sizeof(out_uri), "exec:cat > %s", file);
	snprintf(in_uri, sizeof(in_uri), "exec:cat %s", file);
	snprintf(dev, sizeof(dev), "npu,addr=%d,%s", SLOT, opts);
	unlink(file);

	start(opts, 1);
	gate = alloc_buf(4096, 0, 1);
	w = alloc_buf(4096, 0, 1);
	ibb = alloc_buf(4096, 0, 0);
	buf_write(&gate, 0, &zero, 8);
	uq_setup(16);
	good = uq_new(&a, 0, 0) && uq_new(&b, 1, 0) && uq_new(&c, 2, 0) &&
	       uq_new(&d, 3, NPU_UQ_CONFIG_COPY);
	p.n = 0;
	pk_wait64(&p, gate.va, 1);
	pk_fill(&p, w.va, 4, 0xa1);
	uq_push(&a, &p);
	pk_fill(&ib, w.va + 4, 4, 0xb1);
	LAUNCH(&ib, NPU_KERNEL_TEST_SPIN, 1, 10000000000ull);
	pk_sem(&ib, 0, w.va + 8, 1);
	pk_fill(&ib, w.va + 12, 4, 0xb2);
	buf_write(&ibb, 0, ib.dw, ib.n * 4);
	p.n = 0;
	pk_ib(&p, ibb.va, ib.n * 4);
	uq_push(&b, &p);
	p.n = 0;
	pk_fill(&p, 0x7000000000ull, 4, 1);
	pk_fill(&p, w.va + 16, 4, 0xc1);
	uq_push(&c, &p);
	good &= uq_cmd(NPU_UQ_CMD_SUSPEND, 3) == 0;
	p.n = 0;
	pk_fill(&p, w.va + 20, 4, 0xd1);
	uq_push(&d, &p);
	for (unsigned i = 0; i < 5000 &&
	     !(uqd32(1, NPU_UQD_STATUS) & NPU_UQ_STS_RUNNING); i++)
		usleep(1000);
	good &= (uqd32(0, NPU_UQD_STATUS) & NPU_UQ_STS_WAITING) &&
		(uqd32(1, NPU_UQD_STATUS) & NPU_UQ_STS_RUNNING) &&
		(uq_wait(&c, 5000) & NPU_UQ_STS_HALTED);
	/* the RAM copy at full speed, well inside the kernel's 2 s */
	r = qmp_cmd(q, "{\"execute\":\"migrate-set-parameters\",\"arguments\":"
		    "{\"max-bandwidth\":17179869184}}");
	good &= r && strstr(r, "\"return\"");
	snprintf(json, sizeof(json),
		 "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"%s\"}}", out_uri);
	r = qmp_cmd(q, json);
	good &= r && strstr(r, "\"return\"") && migrate_wait(20000);
	ib_off = uqd32(1, NPU_UQD_IB_OFFSET);
	if (ib_off != 4 * (6 + 8))
		diag("queue 1 after the save: status 0x%x rptr %llu wptr %llu "
	     "ib_va 0x%llx cmds %llu sem %u", uqd32(1, NPU_UQD_STATUS),
	     (unsigned long long)uqd64(1, NPU_UQD_RPTR),
	     (unsigned long long)uqd64(1, NPU_UQD_WPTR),
	     (unsigned long long)uqd64(1, NPU_UQD_IB_VA),
	     (unsigned long long)uqd64(1, NPU_UQD_CMDS),
	     qt_readl(q, buf_phys(&w, 8)));
	ok(good && ib_off == 4 * (6 + 8),
	   "user queues waiting, inside an IB, halted and suspended migrate "
	   "out (queue 1 left its engine at IB offset %u)", ib_off);
	stop("user-queue migration source");
	if (!good) {
		unlink(file);
		return;
	}
	started = start_incoming(extra, file);
	if (started < 0)
		return;
	good = started;
	good &= rd(NPU_REG_UQ_TABLE_ENTRIES) == 16 &&
		(uqd32(0, NPU_UQD_STATUS) & NPU_UQ_STS_WAITING) &&
		(uqd32(2, NPU_UQD_STATUS) & NPU_UQ_STS_HALTED);
	buf_write(&gate, 0, &one, 8);
	good &= uq_cmd(NPU_UQ_CMD_KICK, 0) == 0;
	good &= uq_wait(&a, 5000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
	good &= uq_wait(&b, 5000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
	good &= uq_cmd(NPU_UQ_CMD_CONTINUE, 2) == 0 &&
		uq_wait(&c, 5000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
	good &= uq_cmd(NPU_UQ_CMD_RUN, 3) == 0 &&
		uq_wait(&d, 5000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE);
	buf_read(&w, 0, v, 16);
	ok(good && v[0] == 0xa1 && v[1] == 0xb1 && v[2] == 1 && v[3] == 0xb2 &&
	   qt_readl(q, buf_phys(&w, 16)) == 0xc1 &&
	   qt_readl(q, buf_phys(&w, 20)) == 0xd1,
	   "after the migration: the gate releases queue 0, queue 1's IB "
	   "resumes (not rerun), CONTINUE and RUN work");
	p.n = 0;
	pk_fill(&p, w.va + 24, 4, 0xa2);
	uq_push(&a, &p);
	ok(uq_wait(&a, 5000) == (UQ_RUNNABLE | NPU_UQ_STS_IDLE) &&
	   qt_readl(q, buf_phys(&w, 24)) == 0xa2,
	   "doorbells reach the migrated queues");
	stop("user-queue migration destination");
}

/*
 * NPU_DEVTEST_ONLY=name runs one of the tests that start their own QEMU
 * (a developer's shortcut; make test runs everything).
 */
static const struct {
	const char *name;
	void (*fn)(void);
} standalone[] = {
	{ "busmaster_reset", test_busmaster_reset },
	{ "vm_stop", test_vm_stop },
	{ "migration", test_migration },
	{ "snapshot", test_snapshot },
	{ "migration_vt", test_migration_vt },
	{ "migration_corrupt", test_migration_corrupt },
	{ "sem_wait_cost", test_sem_wait_cost_alone },
	{ "sem_wait_cost_vt", test_sem_wait_cost_vt },
	{ "trace_events", test_trace_events },
	{ "timing", test_timing },
	{ "timing_precision", test_timing_precision },
	{ "max_config", test_max_config },
	{ "properties", test_properties },
	{ "hotplug", test_hotplug },
	{ "uq", test_uq },
	{ "uq_wb_lag", test_uq_wb_lag },
	{ "uq_sched", test_uq_sched },
	{ "uq_migration", test_uq_migration },
	{ "uq_vt", test_uq_vt },
	{ "uq_vt_all", test_uq_vt_all },
};

static void run_all(void)
{
	const char *only = getenv("NPU_DEVTEST_ONLY");

	if (only) {
		for (size_t i = 0; i < sizeof(standalone) / sizeof(standalone[0]); i++)
			if (!strcmp(only, standalone[i].name))
				standalone[i].fn();
		return;
	}
	start(NULL, 0);
	test_identity();
	test_fences();
	test_copies();
	test_kernels();
	test_timestamp_ib();
	test_control();
	test_semaphores();
	test_signals();
	test_sem_wait_cost();
	test_faults();
	test_bounds();
	test_bad_packets();
	test_tlb();
	test_mmu_invalidate();
	test_mmu_invalidate_busy();
	test_mmu_invalidate_inflight();
	test_concurrency();
	test_resets();
	test_fuzz();
	stop("main instance");
	test_busmaster_reset();
	test_sem_wait_cost_vt();
	test_signal_counted();
	test_uq_wb_first();
	test_uq_wb_last();
	test_uq_doorbell_wait();
	test_uq_wb_lag();
	test_uq_wb_wptr();
	test_vm_stop();
	test_migration();
	test_migration_vt();
	test_migration_corrupt();
	test_snapshot();
	test_trace_events();
	test_timing();
	test_launch_gap();
	test_timing_precision();
	test_max_config();
	test_properties();
	test_hotplug();
	test_uq();
	test_uq_sched();
	test_uq_migration();
	test_uq_vt();
	test_uq_vt_all();
}

int main(int argc, char **argv)
{
	return devtest_main(argc, argv, run_all);
}
