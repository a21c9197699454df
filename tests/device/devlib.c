// SPDX-License-Identifier: MIT
/*
 * devlib: harness of the npu device tests (qtest protocol, no guest kernel).
 *
 * Guest-physical layout used (-m 256M):
 *   0x00100000 + r * 0x10000   ring r (16 KiB)
 *   0x00200000 ...             page tables (root first)
 *   0x00300000                 fence words, 0x00310000 MSI-X targets
 *   0x00380000                 user-queue event ring (64 KiB)
 *   0x00400000                 user-queue descriptor table (1 MiB)
 *   0x01000000 ...             host buffers (mapped in reverse page order)
 *   0x80000000                 BAR2 (device memory, up to 1 GiB), 0xfe000000 BAR0,
 *   0xfe010000                 BAR4 (MSI-X), 0xfe100000 BAR1 (doorbells)
 */
#define _GNU_SOURCE
#include <libgen.h>
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
#include "kselftest.h"


const char *qemu_bin;
struct qt *q;

/* ---------------------------------------------------------------- TAP */

/* Results go through kselftest.h, the harness every C test here uses. */
void ok(int cond, const char *fmt, ...)
{
	char what[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (cond)
		ksft_test_result_pass("- %s\n", what);
	else
		ksft_test_result_fail("- %s\n", what);
	fflush(stdout);
}

void diag(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ksft_print_msg("%s\n", msg);
	fflush(stdout);
}

uint64_t host_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* ---------------------------------------------------------- registers */

uint32_t cfg_addr(unsigned off)
{
	return 0x80000000u | SLOT << 11 | (off & 0xfc);
}

uint32_t cfg_readl(unsigned off)
{
	qt_outl(q, 0xcf8, cfg_addr(off));
	return qt_inl(q, 0xcfc);
}

void cfg_writel(unsigned off, uint32_t v)
{
	qt_outl(q, 0xcf8, cfg_addr(off));
	qt_outl(q, 0xcfc, v);
}

uint32_t rd(uint32_t reg)
{
	return qt_readl(q, BAR0 + reg);
}

void wr(uint32_t reg, uint32_t v)
{
	qt_writel(q, BAR0 + reg, v);
}

uint32_t rrd(int r, uint32_t reg)
{
	return rd(NPU_RING_BASE(r) + reg);
}

void rwr(int r, uint32_t reg, uint32_t v)
{
	wr(NPU_RING_BASE(r) + reg, v);
}

uint64_t rrd64(int r, uint32_t reg)
{
	uint64_t lo = rrd(r, reg);

	return lo | (uint64_t)rrd(r, reg + 4) << 32;
}

uint64_t dev_clock(void)
{
	uint64_t lo = rd(NPU_REG_CLOCK_LO);

	return lo | (uint64_t)rd(NPU_REG_CLOCK_HI) << 32;
}

int msix_cap;
unsigned nvec;

void pci_setup(void)
{
	unsigned cap;

	cfg_writel(0x10, (uint32_t)BAR0);
	cfg_writel(0x14, (uint32_t)BAR1);
	cfg_writel(0x18, (uint32_t)BAR2);
	cfg_writel(0x1c, BAR2 >> 32);
	cfg_writel(0x20, (uint32_t)BAR4);
	cfg_writel(0x04, 0x6);	/* memory space + bus master */
	msix_cap = 0;
	for (cap = cfg_readl(0x34) & 0xfc; cap; cap = (cfg_readl(cap) >> 8) & 0xfc) {
		if ((cfg_readl(cap) & 0xff) == 0x11) {
			msix_cap = cap;
			break;
		}
	}
	if (msix_cap) {
		uint32_t ctl = cfg_readl(msix_cap);

		nvec = ((ctl >> 16) & 0x7ff) + 1;
		/* enable MSI-X, clear the function mask */
		cfg_writel(msix_cap, (ctl & ~(1u << 30)) | 1u << 31);
	}
}

/* Vector v writes data 0x1000+v to MSI_PA + 4*v (ordinary guest RAM). */
void msix_setup(void)
{
	unsigned v;

	for (v = 0; v < nvec; v++) {
		qt_writel(q, BAR4 + v * 16 + 0, (uint32_t)(MSI_PA + 4 * v));
		qt_writel(q, BAR4 + v * 16 + 4, 0);
		qt_writel(q, BAR4 + v * 16 + 8, 0x1000 + v);
		qt_writel(q, BAR4 + v * 16 + 12, 0);
		qt_writel(q, MSI_PA + 4 * v, 0);
	}
}

uint32_t msi_word(unsigned v)
{
	return qt_readl(q, MSI_PA + 4 * v);
}

int wait_msi(unsigned v, int timeout_ms)
{
	uint64_t end = host_ns() + timeout_ms * 1000000ull;

	while (host_ns() < end && !q->dead) {
		if (msi_word(v) == 0x1000 + v)
			return 1;
		usleep(200);
	}
	return 0;
}

/* -------------------------------------------------------- page tables */

uint64_t pt[PT_MAX][512];
int pt_dirty[PT_MAX];
int pt_used;
uint64_t host_next, va_next, dev_next;

uint64_t pt_pa(int i)
{
	return PT_PA + i * 4096ull;
}

void pt_reset(void)
{
	memset(pt, 0, sizeof(pt));
	pt_used = 1;
	pt_dirty[0] = 1;
	host_next = HOST_PA;
	va_next = VA_BASE;
	dev_next = 0;
}

int pt_child(int t, unsigned idx)
{
	if (!(pt[t][idx] & NPU_PTE_VALID)) {
		int n = pt_used++;

		if (n >= PT_MAX) {
			fprintf(stderr, "out of page tables\n");
			exit(2);
		}
		memset(pt[n], 0, sizeof(pt[n]));
		pt_dirty[n] = 1;
		pt[t][idx] = pt_pa(n) | NPU_PTE_VALID;
		pt_dirty[t] = 1;
	}
	return (int)(((pt[t][idx] & NPU_PTE_ADDR_MASK) - PT_PA) / 4096);
}

void pt_map(uint64_t va, uint64_t pte)
{
	int l1 = pt_child(0, NPU_PT_INDEX(va, 2));
	int l0 = pt_child(l1, NPU_PT_INDEX(va, 1));

	pt[l0][NPU_PT_INDEX(va, 0)] = pte;
	pt_dirty[l0] = 1;
}

void pt_sync(void)
{
	int i;

	for (i = 0; i < pt_used; i++) {
		if (pt_dirty[i]) {
			qt_memwrite(q, pt_pa(i), pt[i], 4096);
			pt_dirty[i] = 0;
		}
	}
}

/* A buffer: VA range mapped page by page. */

/* Guest-physical (or BAR2) address of byte off of the buffer. */
uint64_t buf_phys(const struct buf *b, uint64_t off)
{
	uint64_t page = off / 4096;

	if (b->dev)
		return BAR2 + b->base + page * 4096 + off % 4096;
	/* host buffers are mapped in reverse page order */
	return b->base + (b->npages - 1 - page) * 4096 + off % 4096;
}

struct buf alloc_buf(uint64_t size, int dev, int writable)
{
	struct buf b = { .va = va_next, .size = size, .dev = dev };
	uint64_t i;

	b.npages = (size + 4095) / 4096;
	if (!b.npages)
		b.npages = 1;
	if (dev) {
		b.base = dev_next;
		dev_next += b.npages * 4096;
	} else {
		b.base = host_next;
		host_next += b.npages * 4096;
		if (host_next > HOST_END) {
			fprintf(stderr, "out of host memory\n");
			exit(2);
		}
	}
	for (i = 0; i < b.npages; i++) {
		uint64_t pte = NPU_PTE_VALID | (writable ? NPU_PTE_WRITE : 0);

		if (dev)
			pte |= NPU_PTE_DEVMEM | (b.base + i * 4096);
		else
			pte |= b.base + (b.npages - 1 - i) * 4096;
		pt_map(b.va + i * 4096, pte);
	}
	/* leave an unmapped guard page after each buffer */
	va_next += (b.npages + 1) * 4096;
	pt_sync();
	return b;
}

void buf_write(const struct buf *b, uint64_t off, const void *data,
		      uint64_t len)
{
	const uint8_t *p = data;

	while (len) {
		uint64_t n = 4096 - (off % 4096);

		if (n > len)
			n = len;
		qt_memwrite(q, buf_phys(b, off), p, n);
		off += n;
		p += n;
		len -= n;
	}
}

void buf_read(const struct buf *b, uint64_t off, void *data,
		     uint64_t len)
{
	uint8_t *p = data;

	while (len) {
		uint64_t n = 4096 - (off % 4096);

		if (n > len)
			n = len;
		qt_memread(q, buf_phys(b, off), p, n);
		off += n;
		p += n;
		len -= n;
	}
}

/* ------------------------------------------------------------ packets */


void pk_dw(struct pk *p, uint32_t v)
{
	p->dw[p->n++] = v;
}

void pk_qw(struct pk *p, uint64_t v)
{
	pk_dw(p, (uint32_t)v);
	pk_dw(p, v >> 32);
}

void pk_nop(struct pk *p, unsigned ndw)
{
	unsigned i;

	pk_dw(p, NPU_PKT_HDR(NPU_OP_NOP, 0, ndw));
	for (i = 1; i < ndw; i++)
		pk_dw(p, 0xdeadbeef);
}

void pk_copy(struct pk *p, uint64_t src, uint64_t dst, uint64_t size)
{
	pk_dw(p, NPU_PKT_HDR(NPU_OP_COPY, 0, 8));
	pk_dw(p, 0);
	pk_qw(p, src);
	pk_qw(p, dst);
	pk_qw(p, size);
}

void pk_fill(struct pk *p, uint64_t dst, uint64_t size, uint32_t v)
{
	pk_dw(p, NPU_PKT_HDR(NPU_OP_FILL, 0, 6));
	pk_dw(p, v);
	pk_qw(p, dst);
	pk_qw(p, size);
}

void pk_launch(struct pk *p, uint32_t kernel, uint32_t gx,
		      unsigned nargs, const uint64_t *args)
{
	unsigned i;

	pk_dw(p, NPU_PKT_HDR(NPU_OP_LAUNCH, 0, 6 + 2 * nargs));
	pk_dw(p, kernel);
	pk_dw(p, gx);
	pk_dw(p, 1);
	pk_dw(p, 1);
	pk_dw(p, nargs);
	for (i = 0; i < nargs; i++)
		pk_qw(p, args[i]);
}


void pk_ts(struct pk *p, uint64_t dst)
{
	pk_dw(p, NPU_PKT_HDR(NPU_OP_TIMESTAMP, 0, 4));
	pk_dw(p, 0);
	pk_qw(p, dst);
}

void pk_sem(struct pk *p, int wait, uint64_t addr, uint32_t v)
{
	pk_dw(p, NPU_PKT_HDR(wait ? NPU_OP_SEM_WAIT : NPU_OP_SEM_SIGNAL, 0, 4));
	pk_dw(p, v);
	pk_qw(p, addr);
}

void pk_signal(struct pk *p, uint64_t addr, uint64_t value)
{
	pk_dw(p, NPU_PKT_HDR(NPU_OP_SIGNAL, 0, 6));
	pk_dw(p, 0);
	pk_qw(p, addr);
	pk_qw(p, value);
}

void pk_wait64(struct pk *p, uint64_t addr, uint64_t value)
{
	pk_dw(p, NPU_PKT_HDR(NPU_OP_WAIT_MEM64, 0, 6));
	pk_dw(p, 0);
	pk_qw(p, addr);
	pk_qw(p, value);
}

void pk_ib(struct pk *p, uint64_t va, uint32_t size)
{
	pk_dw(p, NPU_PKT_HDR(NPU_OP_INDIRECT, 0, 4));
	pk_dw(p, size);
	pk_qw(p, va);
}

void pk_ctx(struct pk *p, uint32_t ctx, uint64_t root)
{
	pk_dw(p, NPU_PKT_HDR(NPU_OP_SET_CONTEXT, 0, 4));
	pk_dw(p, ctx);
	pk_qw(p, root);
}

void pk_fence(struct pk *p, uint32_t seq, uint64_t addr, int irq)
{
	pk_dw(p, NPU_PKT_HDR(NPU_OP_FENCE, irq ? NPU_FENCE_IRQ : 0, 4));
	pk_dw(p, seq);
	pk_qw(p, addr);
}

void pk_flush(struct pk *p)
{
	pk_dw(p, NPU_PKT_HDR(NPU_OP_RING_CTRL, NPU_RING_CTRL_FLUSH_TLB, 1));
}

/* -------------------------------------------------------------- rings */

uint32_t tail[NPU_MAX_RINGS];
uint32_t seqno[NPU_MAX_RINGS];
unsigned nrings;
unsigned ncompute;

void ring_init(int r)
{
	qt_memset(q, RING_PA(r), 0, RING_BYTES);
	rwr(r, NPU_RING_BASE_LO, (uint32_t)RING_PA(r));
	rwr(r, NPU_RING_BASE_HI, 0);
	rwr(r, NPU_RING_SIZE, RING_BYTES);
	rwr(r, NPU_RING_CONTROL, NPU_RING_CTL_ENABLE);
	tail[r] = rrd(r, NPU_RING_TAIL);
}

/* Copy packets into ring r (wrapping) and ring the doorbell. */
void ring_submit(int r, const struct pk *p)
{
	unsigned i = 0;

	while (i < p->n) {
		unsigned room = (RING_BYTES - tail[r]) / 4;
		unsigned n = p->n - i < room ? p->n - i : room;

		qt_memwrite(q, RING_PA(r) + tail[r], p->dw + i, n * 4);
		tail[r] = (tail[r] + n * 4) % RING_BYTES;
		i += n;
	}
	rwr(r, NPU_RING_TAIL, tail[r]);
}

uint64_t fence_pa(int r)
{
	return FENCE_PA + r * 4;
}

/* Wait until the ring is idle or halted; returns STATUS (0 on timeout). */
uint32_t ring_wait(int r, int timeout_ms)
{
	uint64_t end = host_ns() + timeout_ms * 1000000ull;

	/* a QEMU that stopped answering answers no more: do not wait for it */
	while (host_ns() < end && !q->dead) {
		uint32_t st = rrd(r, NPU_RING_STATUS);

		if (st & (NPU_RING_STS_IDLE | NPU_RING_STS_HALTED))
			return st;
		usleep(200);
	}
	return 0;
}

/* Submit p followed by a fence and wait; true if it completed cleanly. */
bool ring_run(int r, struct pk *p, int timeout_ms)
{
	uint32_t st;

	pk_fence(p, ++seqno[r], fence_pa(r), 0);
	ring_submit(r, p);
	st = ring_wait(r, timeout_ms);
	return st == (NPU_RING_STS_IDLE | NPU_RING_STS_ENABLED) &&
	       rrd(r, NPU_RING_FENCE) == seqno[r] &&
	       qt_readl(q, fence_pa(r)) == seqno[r];
}

void ring_ctx(int r)
{
	struct pk p = { .n = 0 };

	pk_ctx(&p, CTX_ID, PT_PA);
	ring_submit(r, &p);
	ring_wait(r, 2000);
}

/* Ring r halted with error code err? Then resume it. */
bool expect_error(int r, uint32_t err, uint64_t fault, uint32_t info)
{
	uint32_t st = ring_wait(r, 5000);
	uint32_t e = rrd(r, NPU_RING_ERROR);
	uint64_t f = rrd64(r, NPU_RING_FAULT_LO);
	uint32_t i = rrd(r, NPU_RING_ERROR_INFO);
	bool good = (st & NPU_RING_STS_HALTED) && e == err &&
		    (fault == ~0ull || f == fault) &&
		    (info == ~0u || i == info) &&
		    (rd(NPU_REG_ERR_PENDING) & (1u << r));

	if (!good)
		diag("ring %d: status 0x%x error %u fault 0x%llx info 0x%x "
		     "pending 0x%x (want error %u fault 0x%llx info 0x%x)", r,
		     st, e, (unsigned long long)f, i, rd(NPU_REG_ERR_PENDING),
		     err, (unsigned long long)fault, info);
	return good;
}

void ring_resume(int r)
{
	wr(NPU_REG_ERR_PENDING, 1u << r);
	rwr(r, NPU_RING_CONTROL, NPU_RING_CTL_ENABLE | NPU_RING_CTL_RESUME);
}

void ring_reset(int r)
{
	rwr(r, NPU_RING_CONTROL, NPU_RING_CTL_RESET);
	tail[r] = 0;
	ring_init(r);
	ring_ctx(r);
}

/* ---------------------------------------------------------- instances */

void start(const char *devopts, int with_qmp)
{
	char dev[512];
	const char *extra[] = { "-device", dev, NULL };

	snprintf(dev, sizeof(dev), "npu,addr=%d%s%s", SLOT,
		 devopts && *devopts ? "," : "", devopts ? devopts : "");
	q = qt_start(qemu_bin, extra, with_qmp);
	if (!q || q->dead)
		ksft_exit_fail_msg("cannot start %s\n", qemu_bin);
	pci_setup();
	msix_setup();
	pt_reset();
	pt_sync();
	ncompute = NPU_CAPS_COMPUTE_RINGS(rd(NPU_REG_CAPS));
	nrings = ncompute + NPU_CAPS_COPY_RINGS(rd(NPU_REG_CAPS));
	memset(tail, 0, sizeof(tail));
	memset(seqno, 0, sizeof(seqno));
	for (unsigned r = 0; r < nrings; r++) {
		ring_init(r);
		ring_ctx(r);
	}
}

void stop(const char *what)
{
	int alive = qt_alive(q);
	int rc = qt_quit(q);

	ok(alive && rc == 0, "%s: QEMU responsive and exits cleanly", what);
	q = NULL;
}

/* --------------------------------------------------------------- math */

uint32_t rng_state = 12345;

uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return rng_state;
}

uint64_t rnd64(void)
{
	return (uint64_t)rnd() << 32 | rnd();
}

float frand(void)
{
	return (float)((int)(rnd() % 2001) - 1000) / 250.0f;
}

uint64_t fbits(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

void frand_fill(float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		x[i] = frand();
}

bool close_enough(const float *got, const float *want, size_t n,
			 float tol, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		float d = fabsf(got[i] - want[i]);

		if (!(d <= tol * (1.0f + fabsf(want[i])))) {
			diag("%s[%zu]: got %g want %g", what, i, got[i], want[i]);
			return false;
		}
	}
	return true;
}

/* ------------------------------------------------------ compute units */

const char *kernel_dir;

void set_kernel_dir(const char *argv0)
{
	char *self = strdup(argv0);
	char *dir;

	if (!self || asprintf(&dir, "%s/kernels", dirname(self)) < 0)
		ksft_exit_fail_msg("out of memory\n");
	kernel_dir = dir;
	free(self);
}

int devtest_main(int argc, char **argv, void (*run_all)(void))
{
	uint64_t t0 = host_ns();

	if (argc < 2) {
		fprintf(stderr, "usage: %s <qemu-system-x86_64>\n", argv[0]);
		return 2;
	}
	qemu_bin = argv[1];
	set_kernel_dir(argv[0]);
	ksft_print_header();
	run_all();
	ksft_set_plan(ksft_test_num());
	diag("%u tests, %d failed, %.1f s", ksft_test_num(),
	     ksft_get_fail_cnt(), (host_ns() - t0) / 1e9);
	ksft_print_cnts();
	return ksft_get_fail_cnt() ? KSFT_FAIL : KSFT_PASS;
}

void load_kernel(const char *name, int dev)
{
	char path[512];
	uint64_t save = va_next, size;
	struct buf b;
	uint8_t *img;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/%s.bin", kernel_dir, name);
	f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) <= 0)
		ksft_exit_fail_msg("cannot read kernel %s\n", path);
	rewind(f);
	size = (n + 4095) / 4096 * 4096 + 16 * 4096;
	img = calloc(1, size);
	if (!img || fread(img, 1, n, f) != (size_t)n)
		ksft_exit_fail_msg("cannot read kernel %s\n", path);
	fclose(f);
	va_next = DEVTEST_CODE_VA;
	b = alloc_buf(size, dev, 0);
	va_next = save;
	buf_write(&b, 0, img, size);
	free(img);
	wr(NPU_REG_MMU_INVALIDATE, NPU_MMU_INVALIDATE_ALL);
}

/* Dwords 0-11, common to LAUNCH_CODE and LAUNCH_CODE_SHORT. */
static void pk_launch_head(struct pk *p, const struct launch *l, uint32_t op,
			   unsigned ndw)
{
	unsigned i;

	pk_dw(p, NPU_PKT_HDR(op, 0, ndw));
	pk_dw(p, l->flags);
	pk_qw(p, l->entry ? l->entry : DEVTEST_CODE_VA);
	for (i = 0; i < 3; i++)
		pk_dw(p, l->grid[i] ? l->grid[i] : 1);
	for (i = 0; i < 3; i++)
		pk_dw(p, l->block[i] ? l->block[i] : 1);
	pk_dw(p, l->scratch);
	pk_dw(p, l->stack);
}

static void pk_launch_args(struct pk *p, const struct launch *l)
{
	for (unsigned i = 0; i < l->nargs; i++)
		pk_qw(p, l->args[i]);
}

void pk_launch_code(struct pk *p, const struct launch *l)
{
	pk_launch_head(p, l, NPU_OP_LAUNCH_CODE,
		       NPU_PKT_LAUNCH_CODE_DW + 2 * l->nargs);
	pk_qw(p, l->stats);
	pk_qw(p, l->trace);
	pk_dw(p, l->trace_bytes);
	pk_dw(p, l->sample_period);
	pk_dw(p, l->trace_block);
	pk_dw(p, l->nargs);
	pk_qw(p, l->printf_buf);
	pk_dw(p, l->printf_bytes);
	pk_dw(p, 0);
	pk_launch_args(p, l);
}

void pk_launch_code_short(struct pk *p, const struct launch *l)
{
	pk_launch_head(p, l, NPU_OP_LAUNCH_CODE_SHORT,
		       NPU_PKT_LAUNCH_CODE_SHORT_DW + 2 * l->nargs);
	pk_launch_args(p, l);
}
