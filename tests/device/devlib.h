/* SPDX-License-Identifier: MIT */
/*
 * devlib: the device tests' harness: TAP output (kselftest.h), PCI and MSI-X
 * set-up, page tables, buffers, packets, rings and QEMU instances over qtest.
 * Guest-physical layout: see devlib.c.
 */
#ifndef NPU_TEST_DEVLIB_H
#define NPU_TEST_DEVLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu_hw.h"
#include "qtest.h"

#define SLOT		4
#define BAR0		0xfe000000ull
#define BAR2		0x80000000ull	/* 1 GiB aligned: the default BAR */
#define BAR4		0xfe010000ull
#define BAR1		0xfe100000ull	/* user-queue doorbells */
#define RING_PA(r)	(0x100000ull + (r) * 0x10000ull)
#define RING_BYTES	0x4000u
#define PT_PA		0x200000ull
#define PT_MAX		240
#define FENCE_PA	0x300000ull
#define MSI_PA		0x310000ull
#define UQ_EVENT_PA	0x380000ull	/* user-queue event ring, 64 KiB */
#define UQ_TABLE_PA	0x400000ull	/* user-queue descriptors, 1 MiB */
#define HOST_PA		0x1000000ull
#define HOST_END	0x0f000000ull
#define VA_BASE		0x100000000ull
#define CTX_ID		7
#define LAUNCH(p, k, g, ...) do { \
	uint64_t a_[] = { __VA_ARGS__ }; \
	pk_launch(p, k, g, sizeof(a_) / 8, a_); \
} while (0)

struct buf {
	uint64_t va, size;
	int dev;
	uint64_t base;		/* first PA / devmem offset */
	uint64_t npages;
};
struct pk {
	uint32_t dw[4096];
	unsigned n;
};

extern const char *qemu_bin;
extern struct qt *q;
extern int msix_cap;
extern unsigned nvec;
extern uint64_t pt[PT_MAX][512];
extern int pt_dirty[PT_MAX];
extern int pt_used;
extern uint64_t host_next, va_next, dev_next;
extern uint32_t tail[NPU_MAX_RINGS];
extern uint32_t seqno[NPU_MAX_RINGS];
extern unsigned nrings;
/* compute rings come first, then the copy rings (the device's CAPS) */
extern unsigned ncompute;
#define COPY0 (ncompute)
#define COPY1 (ncompute + 1)
extern uint32_t rng_state;

void ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t host_ns(void);
uint32_t cfg_addr(unsigned off);
uint32_t cfg_readl(unsigned off);
void cfg_writel(unsigned off, uint32_t v);
uint32_t rd(uint32_t reg);
void wr(uint32_t reg, uint32_t v);
uint32_t rrd(int r, uint32_t reg);
void rwr(int r, uint32_t reg, uint32_t v);
uint64_t rrd64(int r, uint32_t reg);
uint64_t dev_clock(void);
void pci_setup(void);
void msix_setup(void);
uint32_t msi_word(unsigned v);
int wait_msi(unsigned v, int timeout_ms);
uint64_t pt_pa(int i);
void pt_reset(void);
int pt_child(int t, unsigned idx);
void pt_map(uint64_t va, uint64_t pte);
void pt_sync(void);
uint64_t buf_phys(const struct buf *b, uint64_t off);
struct buf alloc_buf(uint64_t size, int dev, int writable);
void buf_write(const struct buf *b, uint64_t off, const void *data, uint64_t len);
void buf_read(const struct buf *b, uint64_t off, void *data, uint64_t len);
void pk_dw(struct pk *p, uint32_t v);
void pk_qw(struct pk *p, uint64_t v);
void pk_nop(struct pk *p, unsigned ndw);
void pk_copy(struct pk *p, uint64_t src, uint64_t dst, uint64_t size);
void pk_fill(struct pk *p, uint64_t dst, uint64_t size, uint32_t v);
void pk_launch(struct pk *p, uint32_t kernel, uint32_t gx, unsigned nargs, const uint64_t *args);
void pk_ts(struct pk *p, uint64_t dst);
void pk_sem(struct pk *p, int wait, uint64_t addr, uint32_t v);
void pk_signal(struct pk *p, uint64_t addr, uint64_t value);
void pk_wait64(struct pk *p, uint64_t addr, uint64_t value);
void pk_ib(struct pk *p, uint64_t va, uint32_t size);
void pk_ctx(struct pk *p, uint32_t ctx, uint64_t root);
void pk_fence(struct pk *p, uint32_t seq, uint64_t addr, int irq);
void pk_flush(struct pk *p);
void ring_init(int r);
void ring_submit(int r, const struct pk *p);
uint64_t fence_pa(int r);
uint32_t ring_wait(int r, int timeout_ms);
bool ring_run(int r, struct pk *p, int timeout_ms);
void ring_ctx(int r);
bool expect_error(int r, uint32_t err, uint64_t fault, uint32_t info);
void ring_resume(int r);
void ring_reset(int r);
void start(const char *devopts, int with_qmp);
void stop(const char *what);
uint32_t rnd(void);
uint64_t rnd64(void);
float frand(void);
uint64_t fbits(float f);
void frand_fill(float *x, size_t n);
bool close_enough(const float *got, const float *want, size_t n, float tol, const char *what);

/* Compute-unit kernels (kernels/NAME.c, built into $BUILD/device/kernels). */
#define DEVTEST_CODE_VA	0x4000000000ull	/* kernels/kernel.ld */
extern const char *kernel_dir;
/* kernel_dir = the kernels/ directory beside the program argv0. */
void set_kernel_dir(const char *argv0);
/*
 * The device tests' main: argv[1] is the QEMU binary; prints TAP 13 around
 * run_all() and a summary line. Returns the exit status.
 */
int devtest_main(int argc, char **argv, void (*run_all)(void));
/* Map the kernel image name.bin at DEVTEST_CODE_VA (device memory if dev,
 * else host memory, read-only) with extra zeroed pages after it, and
 * invalidate the device's translations. Exits if the image is missing. */
void load_kernel(const char *name, int dev);
/* A LAUNCH_CODE packet: fields not given are 0. */
struct launch {
	uint32_t flags;
	uint64_t entry;
	uint32_t grid[3], block[3];
	uint32_t scratch, stack;
	uint64_t stats, trace;
	uint32_t trace_bytes, sample_period, trace_block;
	uint64_t printf_buf;
	uint32_t printf_bytes;
	unsigned nargs;
	uint64_t args[NPU_CODE_MAX_ARGS];
};
void pk_launch_code(struct pk *p, const struct launch *l);
/* The same launch as LAUNCH_CODE_SHORT (flags and the extras are not
 * written: they must be 0 for the short form to mean the same launch). */
void pk_launch_code_short(struct pk *p, const struct launch *l);

#endif
