// SPDX-License-Identifier: MIT
/*
 * npu-golden: the compute units' golden differential test (issue 31). Runs
 * every kernel of the device test corpus (the kernels/ directory beside
 * this program) at 1, 2, 4 and 16 threads, 1 and 12 blocks, as two
 * launches at once, PC-sampled and instruction-traced, on a device with
 * timing=virtual, and compares a text record of each case with the one in
 * golden/KERNEL.txt, byte for byte: the statistics record without its
 * wall-clock fields (start_ns, end_ns), the trace buffer (header, first
 * records decoded, SHA-256 of all its bytes and of slices of them), the
 * fault registers of a faulting launch, and the memory the kernel wrote.
 *
 * Usage: npu-golden [--record] [--golden DIR] [--only KERNEL] <qemu>
 *   --record       write the records of the device under test as the new
 *                  golden ones (only when the model changes on purpose)
 *   --golden DIR   where the records are (default: tests/device/golden of
 *                  the source tree this program was built from)
 *   --only KERNEL  run one kernel's cases
 * Prints TAP 13, one line per case; a case that differs prints the lines
 * that differ (golden, then device).
 *
 * Every kernel runs on a fresh device, its cases in a fixed order, so
 * absolute device cycles (start_cycle, trace cycles, which cycles are
 * sampled) are part of the record too. Two launches at once wait on one
 * semaphore the host writes when both are queued: timing=virtual orders
 * them by ring and starts them together, whatever the host's timing.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "conformance.h"
#include "devlib.h"
#include "npu_half.h"
#include "tensor_prog.h"

#ifndef GOLDEN_DIR
#define GOLDEN_DIR "golden"
#endif

#define MAX_RES		4
#define TRACE_BYTES	(4u << 20)
#define TIMEOUT_MS	120000
#define DIFF_LINES	40	/* differing lines shown per case */
#define BLOB_HEX	256	/* blobs up to this size are shown in hex */
#define BLOB_SLICES	16	/* larger ones: at most this many slices */
#define TRACE_SHOWN	4	/* trace records decoded in the record */

/* ------------------------------------------------------------ records */

struct text {
	char *s;
	size_t len, cap;
};

static void __attribute__((format(printf, 2, 3)))
tp(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->s ? t->s + t->len : NULL,
			      t->s ? t->cap - t->len : 0, fmt, ap);
		va_end(ap);
		if (t->s && t->len + n < t->cap)
			break;
		t->cap = (t->cap + n + 1) * 2;
		t->s = realloc(t->s, t->cap);
		if (!t->s) {
			fprintf(stderr, "out of memory\n");
			exit(2);
		}
	}
	t->len += n;
}

static void sha256_hex(const void *data, size_t n, char out[65])
{
	gchar *h = g_compute_checksum_for_data(G_CHECKSUM_SHA256, data, n);

	snprintf(out, 65, "%s", h);
	g_free(h);
}

/*
 * Bytes as hex lines when short; else the SHA-256 of all of them and of up
 * to BLOB_SLICES slices (a multiple of unit bytes each), so a difference
 * shows where it is.
 */
static void emit_blob(struct text *t, const char *name, const uint8_t *d,
		      size_t n, size_t unit)
{
	char h[65];
	size_t off, slice;

	if (n <= BLOB_HEX) {
		for (off = 0; off < n; off += 32) {
			tp(t, "%s +0x%04zx", name, off);
			for (size_t i = off; i < n && i < off + 32; i++)
				tp(t, "%s%02x", i % 8 ? "" : " ", d[i]);
			tp(t, "\n");
		}
		if (!n)
			tp(t, "%s empty\n", name);
		return;
	}
	sha256_hex(d, n, h);
	tp(t, "%s bytes %zu sha256 %s\n", name, n, h);
	slice = (n + BLOB_SLICES - 1) / BLOB_SLICES;
	slice = (slice + unit - 1) / unit * unit;
	for (off = 0; off < n; off += slice) {
		size_t len = n - off < slice ? n - off : slice;

		sha256_hex(d + off, len, h);
		tp(t, "%s +0x%06zx..+0x%06zx sha256/128 %.32s\n", name, off,
		   off + len, h);
	}
}

static const char *const stall_names[NPU_STALL_COUNT] = {
	"selected", "not_selected", "wait", "short_scoreboard",
	"long_scoreboard", "math_pipe_throttle", "lg_throttle", "barrier",
	"branch_resolving",
};

static void emit_stats(struct text *t, const char *p,
		       const struct npu_launch_stats *st)
{
	unsigned i;

	tp(t, "%s blocks %llu instructions %llu cycles %llu start_cycle %llu\n",
	   p, (unsigned long long)st->blocks,
	   (unsigned long long)st->instructions,
	   (unsigned long long)st->cycles,
	   (unsigned long long)st->start_cycle);
	tp(t, "%s thread_cycles %llu unit_cycles %llu\n", p,
	   (unsigned long long)st->thread_cycles,
	   (unsigned long long)st->unit_cycles);
	for (i = 0; i < NPU_STALL_COUNT; i++)
		tp(t, "%s stall %s %llu\n", p, stall_names[i],
		   (unsigned long long)st->stall[i]);
	tp(t, "%s bytes_read", p);
	for (i = 0; i < NPU_SPACE_COUNT; i++)
		tp(t, " %llu", (unsigned long long)st->bytes_read[i]);
	tp(t, "\n%s bytes_written", p);
	for (i = 0; i < NPU_SPACE_COUNT; i++)
		tp(t, " %llu", (unsigned long long)st->bytes_written[i]);
	tp(t, "\n%s trace_records %llu trace_lost %llu printf_records %llu "
	   "printf_lost %llu\n", p, (unsigned long long)st->trace_records,
	   (unsigned long long)st->trace_lost,
	   (unsigned long long)st->printf_records,
	   (unsigned long long)st->printf_lost);
}

/* The trace buffer: header, the first records decoded, then all bytes. */
static void emit_trace(struct text *t, const char *p, const struct buf *tb)
{
	struct npu_cu_trace_header h;
	struct npu_cu_trace_record r;
	uint64_t nrec, max = (tb->size - sizeof(h)) / sizeof(r);
	uint8_t *all;
	char name[64];

	buf_read(tb, 0, &h, sizeof(h));
	tp(t, "%s trace magic 0x%08x record_bytes %u records %llu lost %llu\n",
	   p, h.magic, h.record_bytes, (unsigned long long)h.records,
	   (unsigned long long)h.lost);
	nrec = h.records < max ? h.records : max;
	all = malloc(sizeof(h) + nrec * sizeof(r));
	if (!all) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	buf_read(tb, 0, all, sizeof(h) + nrec * sizeof(r));
	for (uint64_t i = 0; i < nrec && i < TRACE_SHOWN; i++) {
		memcpy(&r, all + sizeof(h) + i * sizeof(r), sizeof(r));
		tp(t, "%s trace[%llu] kind %u cycle %llu pc 0x%llx insn 0x%08x "
		   "addr 0x%llx block %u thread %u unit %u stall %u\n", p,
		   (unsigned long long)i, r.kind, (unsigned long long)r.cycle,
		   (unsigned long long)r.pc, r.insn, (unsigned long long)r.addr,
		   r.block, r.thread, r.unit, r.stall);
	}
	snprintf(name, sizeof(name), "%s trace", p);
	emit_blob(t, name, all + sizeof(h), nrec * sizeof(r), sizeof(r));
	free(all);
}

/* ----------------------------------------------------- launches of cases */

struct res {
	const char *name;
	struct buf b;
	uint64_t bytes;		/* 0: a printf buffer (header + used) */
};

struct job {
	struct launch l;
	struct buf stats, trace;
	unsigned nres;
	struct res res[MAX_RES];
	bool fault;		/* expected to halt the ring */
};

static void res_add(struct job *j, const char *name, struct buf b,
		    uint64_t bytes)
{
	j->res[j->nres++] = (struct res){ .name = name, .b = b,
					  .bytes = bytes };
}

/* A device buffer of n bytes, zeroed, kept as a result of the job. */
static struct buf out_buf(struct job *j, const char *name, uint64_t n)
{
	struct buf b = alloc_buf(n, 1, 1);
	uint8_t *zero = calloc(1, n);

	buf_write(&b, 0, zero, n);
	free(zero);
	res_add(j, name, b, n);
	return b;
}

static void fill_words(struct buf *b, uint64_t n, uint32_t seed)
{
	uint32_t *w = malloc(n);

	for (uint64_t i = 0; i < n / 4; i++)
		w[i] = (uint32_t)(i * 2654435761u) ^ seed;
	buf_write(b, 0, w, n / 4 * 4);
	free(w);
}

/*
 * Per kernel: set up the job's arguments and result buffers for a launch
 * of T threads x B blocks (the caller sets grid and block).
 */
typedef void (*setup_fn)(struct job *j, unsigned T, unsigned B);

static void setup_barrier(struct job *j, unsigned T, unsigned B)
{
	struct buf out = out_buf(j, "out", 8ull * T * B);

	j->l.scratch = 64;
	j->l.nargs = 2;
	j->l.args[0] = out.va;
	j->l.args[1] = 200;
}

static void setup_bench_compute(struct job *j, unsigned T, unsigned B)
{
	struct buf out = out_buf(j, "out", 8ull * T);

	(void)B;
	j->l.nargs = 3;
	j->l.args[0] = out.va;
	j->l.args[1] = 150;
	j->l.args[2] = 12345;
}

static void setup_chase(struct job *j, unsigned T, unsigned B)
{
	struct buf list = alloc_buf(64 * 4096, 1, 1);
	struct buf out = out_buf(j, "out", 8ull * T);

	(void)B;
	/* a list that jumps a page each hop: x -> 37x + 11 mod 64 */
	for (unsigned i = 0; i < 64; i++) {
		unsigned k = (i * 37 + 11) % 64;
		uint64_t next = list.va + k * 4096 + (k % 8) * 64;

		buf_write(&list, i * 4096 + (i % 8) * 64, &next, 8);
	}
	j->l.nargs = 3;
	j->l.args[0] = list.va;
	j->l.args[1] = 100;
	j->l.args[2] = out.va;
}

static void setup_code_alias(struct job *j, unsigned T, unsigned B)
{
	struct buf out = out_buf(j, "out", 8ull * T);

	(void)B;
	j->l.nargs = 3;
	j->l.args[0] = out.va;
	j->l.args[1] = 200;
	j->l.args[2] = 2;	/* two pages: one set, no eviction */
}

static void setup_fpchain(struct job *j, unsigned T, unsigned B)
{
	struct buf out = out_buf(j, "out", 8ull * T * B);

	j->l.nargs = 2;
	j->l.args[0] = out.va;
	j->l.args[1] = 200;
}

static void setup_iota(struct job *j, unsigned T, unsigned B)
{
	struct buf out = out_buf(j, "out", 4ull * T * B);

	j->l.nargs = 3;
	j->l.args[0] = out.va;
	j->l.args[1] = 3;
	j->l.args[2] = 7;
}

static void setup_vadd(struct job *j, unsigned T, unsigned B)
{
	enum { N = 1000 };
	struct buf a = alloc_buf(4 * N, 1, 1);
	struct buf c = out_buf(j, "c", 4 * N);
	float x[N];

	(void)T, (void)B;
	for (int i = 0; i < N; i++)
		x[i] = (float)i * 0.5f - 100.25f;
	buf_write(&a, 0, x, sizeof(x));
	j->l.nargs = 4;
	j->l.args[0] = a.va;
	j->l.args[1] = a.va;
	j->l.args[2] = c.va;
	j->l.args[3] = N;
}

static void setup_isa_atomic(struct job *j, unsigned T, unsigned B)
{
	/* struct atom of kernels/isa_atomic.c: min32, max32 start at the
	 * extremes, minu64 and the ANDs at all ones */
	uint32_t w32[4] = { 0, 0, 0x7fffffff, 0x80000000 };
	uint64_t w64[8] = { 0, 0, ~0ull, 0, 0, ~0ull, 0, 0 };
	uint32_t t32[4] = { 0, ~0u, 0, 0 };
	struct buf w = out_buf(j, "w", 96);
	struct buf swaps = out_buf(j, "swaps", 8ull * T * B);

	buf_write(&w, 0, w32, sizeof(w32));
	buf_write(&w, 16, w64, sizeof(w64));
	buf_write(&w, 80, t32, sizeof(t32));
	j->l.nargs = 3;
	j->l.args[0] = w.va;
	j->l.args[1] = swaps.va;
	j->l.args[2] = 4;
}

#define CONF_CASES 96

static void setup_isa_conf(struct job *j, unsigned T, unsigned B)
{
	struct conf_case c[CONF_CASES];
	struct buf cases = alloc_buf(sizeof(c), 1, 0);
	struct buf res = out_buf(j, "results",
				 CONF_CASES * sizeof(struct conf_res));

	(void)T;
	(void)B;
	rng_state = 4242;
	for (unsigned i = 0; i < CONF_CASES; i++) {
		c[i].fn = (i * 7) % CF_COUNT;
		c[i].rm = i % 5;
		c[i].sticky = i % 3 ? 0 : 1;	/* NX already set */
		c[i].a = rnd64();
		c[i].b = rnd64() >> (i % 3 * 20);
		c[i].c = rnd64();
	}
	buf_write(&cases, 0, c, sizeof(c));
	j->l.stack = 1024;
	j->l.nargs = 3;
	j->l.args[0] = cases.va;
	j->l.args[1] = res.va;
	j->l.args[2] = CONF_CASES;
}

enum { M_GOOD = 1, M_LOAD_MIS = 5 };	/* kernels/isa_fault.c */

static void setup_isa_fault(struct job *j, unsigned T, unsigned B)
{
	struct buf out = out_buf(j, "out", 8ull * T * B);

	j->l.scratch = 256;
	j->l.nargs = 5;
	j->l.args[0] = M_GOOD;
	j->l.args[3] = out.va;
}

/* A misaligned ld by thread min(3, T-1) of block min(5, B-1). */
static void setup_isa_fault_load(struct job *j, unsigned T, unsigned B)
{
	struct buf out = out_buf(j, "out", 4096);

	j->fault = true;
	j->l.scratch = 256;
	j->l.nargs = 5;
	j->l.args[0] = M_LOAD_MIS;
	j->l.args[1] = B > 5 ? 5 : B - 1;
	j->l.args[2] = T > 3 ? 3 : T - 1;
	j->l.args[3] = out.va;
	j->l.args[4] = out.va + 0x101;
	j->res[j->nres - 1].bytes = 24;
}

static void setup_isa_lrsc(struct job *j, unsigned T, unsigned B)
{
	struct buf w = out_buf(j, "w", 8);
	struct buf out = out_buf(j, "out", 32);

	(void)T;
	(void)B;
	j->l.nargs = 2;
	j->l.args[0] = w.va;
	j->l.args[1] = out.va;
}

static void setup_isa_rvchk(struct job *j, unsigned T, unsigned B)
{
	struct buf out = out_buf(j, "out", 4096);
	struct buf mem = out_buf(j, "mem", 16);

	(void)T;
	(void)B;
	j->l.nargs = 2;
	j->l.args[0] = out.va;
	j->l.args[1] = mem.va;
}

/* mode 2: LR, another thread's store to the word, SC */
static void setup_lrsc_phys(struct job *j, unsigned T, unsigned B)
{
	struct buf w = out_buf(j, "w", 4);
	struct buf out = out_buf(j, "out", 16);
	uint32_t init = 11;

	(void)T;
	(void)B;
	buf_write(&w, 0, &init, 4);
	j->l.nargs = 4;
	j->l.args[0] = 2;
	j->l.args[1] = w.va;
	j->l.args[2] = w.va;
	j->l.args[3] = out.va;
}

static void setup_memlat(struct job *j, unsigned T, unsigned B)
{
	struct buf a = alloc_buf(64 * 1024, 1, 0);
	struct buf out = out_buf(j, "out", 8ull * T * B);

	fill_words(&a, 64 * 1024, 0x5a5a5a5a);
	j->l.nargs = 4;
	j->l.args[0] = a.va;
	j->l.args[1] = 100;
	j->l.args[2] = 16 * 1024 - 1;
	j->l.args[3] = out.va;
}

/* mode 1: read *x, write the unit, store to *x */
static void setup_mmu_late(struct job *j, unsigned T, unsigned B)
{
	struct buf x = out_buf(j, "x", 4);
	struct buf flag = alloc_buf(4096, 1, 1);
	struct buf out = out_buf(j, "out", 16);
	uint32_t v = 0x12345678, one = 1;

	(void)T;
	(void)B;
	buf_write(&x, 0, &v, 4);
	buf_write(&flag, 0, &one, 4);
	j->l.nargs = 4;
	j->l.args[0] = 1;
	j->l.args[1] = x.va;
	j->l.args[2] = flag.va;
	j->l.args[3] = out.va;
}

static void setup_printf(struct job *j, unsigned T, unsigned B)
{
	struct buf pb = alloc_buf(64 * 1024, 0, 1);

	(void)T;
	(void)B;
	qt_memset(q, pb.base, 0, 64 * 1024);
	res_add(j, "printf", pb, 0);
	j->l.printf_buf = pb.va;
	j->l.printf_bytes = 64 * 1024;
}

/*
 * A tensor program on each thread's own 3 KiB of scratchpad: f16 tiles
 * loaded plain and transposed, a fill, two MMAs back to back, a RELU,
 * stores of 32- and 16-bit elements, and a tile DMA copy of 2 x 128
 * bytes from device memory with its wait.
 */
static void setup_tensor_prog(struct job *j, unsigned T, unsigned B)
{
	static const struct tp_step steps[] = {
		{ TP_DMA, 0, 2048, 0 },
		{ TP_LOAD, TP_SUB_MEM(TP_A, NPU_TILE_E16), 0, 32 },
		{ TP_LOAD, TP_SUB_MEM(TP_B, NPU_TILE_E16 | NPU_TILE_TRANS), 512, 32 },
		{ TP_FILL, TP_SUB_FILL(TP_C, NPU_TILE_E32), 0, 0x3f800000 },
		{ TP_MMA, TP_SUB_MMA(NPU_MMA_F16, 0), 0, 0 },
		{ TP_MMA, TP_SUB_MMA(NPU_MMA_F16, 0), 0, 0 },
		{ TP_TEW, TP_SUB_TEW(NPU_TEW_RELU, 0), 0, 0 },
		{ TP_STORE, TP_SUB_MEM(TP_C, NPU_TILE_E32), 1024, 64 },
		{ TP_STORE, TP_SUB_MEM(TP_D, NPU_TILE_E16), 0, 32 },
		{ TP_WAIT, 2120 / 8, 2112, 1 },
	};
	const unsigned bytes = 3072;
	struct buf prog = alloc_buf(sizeof(steps), 1, 0);
	struct buf img = out_buf(j, "image", (uint64_t)bytes * T * B);
	struct buf src = alloc_buf(4096, 1, 0);
	uint8_t *im = calloc(T * B, bytes), pat[4096];

	buf_write(&prog, 0, steps, sizeof(steps));
	for (unsigned i = 0; i < sizeof(pat); i++)
		pat[i] = i * 7 + 3;
	buf_write(&src, 0, pat, sizeof(pat));
	for (unsigned k = 0; k < T * B; k++) {
		uint16_t *h = (uint16_t *)(im + (size_t)k * bytes);
		unsigned t = k % T;
		struct npu_tdma_desc d = {
			.mem = src.va + 16 * (k % 64),
			.scratch = NPU_LOCAL_SCRATCH + t * bytes + 2176,
			.barrier = NPU_LOCAL_SCRATCH + t * bytes + 2112,
			.mem_stride = { 1024, 0 },
			.scratch_stride = { 128, 0 },
			.size = { 128, 2, 1 },
		};

		for (unsigned i = 0; i < 512; i++)
			h[i] = npu_f16_from_f32((float)((int)((k * 512 + i) * 37 % 61) -
							30) / 8.0f);
		memcpy(im + (size_t)k * bytes + 2048, &d, sizeof(d));
	}
	buf_write(&img, 0, im, (uint64_t)bytes * T * B);
	free(im);
	j->l.scratch = bytes * T;
	j->l.nargs = 4;
	j->l.args[0] = prog.va;
	j->l.args[1] = sizeof(steps) / sizeof(steps[0]);
	j->l.args[2] = img.va;
	j->l.args[3] = bytes;
}

static void setup_spin(struct job *j, unsigned T, unsigned B)
{
	struct buf out = out_buf(j, "out", 16ull * B);

	(void)T;
	j->l.nargs = 2;
	j->l.args[0] = 10000;
	j->l.args[1] = out.va;
}

/*
 * lrsc_phys modes 0 and 1 as two launches at once: the holder (ring 0)
 * takes a reservation once the storer (ring 1) runs, which stores to the
 * word until the holder is done.
 */
static struct buf lrsc_word, lrsc_sync;

static void setup_lrsc_holder(struct job *j, unsigned T, unsigned B)
{
	struct buf out = out_buf(j, "out", 16);
	uint32_t init = 11;

	(void)T;
	(void)B;
	lrsc_word = out_buf(j, "w", 4);
	lrsc_sync = out_buf(j, "sync", 12);
	buf_write(&lrsc_word, 0, &init, 4);
	j->l.nargs = 4;
	j->l.args[0] = 0;
	j->l.args[1] = lrsc_word.va;
	j->l.args[2] = lrsc_sync.va;
	j->l.args[3] = out.va;
}

static void setup_lrsc_storer(struct job *j, unsigned T, unsigned B)
{
	struct buf out = out_buf(j, "out", 16);

	(void)T;
	(void)B;
	j->l.nargs = 4;
	j->l.args[0] = 1;
	j->l.args[1] = lrsc_word.va;
	j->l.args[2] = lrsc_sync.va;
	j->l.args[3] = out.va;
}

struct kernel {
	const char *name;
	setup_fn setup;
	/* a kernel's own extra case: one launch (setup2 NULL) or two */
	const char *extra;
	setup_fn extra1, extra2;
	unsigned extra_t, extra_b;
};

static const struct kernel kernels[] = {
	{ .name = "barrier", .setup = setup_barrier },
	{ .name = "bench_compute", .setup = setup_bench_compute },
	{ .name = "chase", .setup = setup_chase },
	{ .name = "code_alias", .setup = setup_code_alias },
	{ .name = "fpchain", .setup = setup_fpchain },
	{ .name = "iota", .setup = setup_iota },
	{ .name = "isa_atomic", .setup = setup_isa_atomic },
	{ .name = "isa_conf", .setup = setup_isa_conf },
	{ .name = "isa_fault", .setup = setup_isa_fault,
	  .extra = "fault-t16-b12", .extra1 = setup_isa_fault_load,
	  .extra_t = 16, .extra_b = 12 },
	{ .name = "isa_lrsc", .setup = setup_isa_lrsc },
	{ .name = "isa_rvchk", .setup = setup_isa_rvchk },
	{ .name = "lrsc_phys", .setup = setup_lrsc_phys,
	  .extra = "holder-storer", .extra1 = setup_lrsc_holder,
	  .extra2 = setup_lrsc_storer, .extra_t = 1, .extra_b = 1 },
	{ .name = "memlat", .setup = setup_memlat },
	{ .name = "mmu_late", .setup = setup_mmu_late },
	{ .name = "printf", .setup = setup_printf },
	{ .name = "spin", .setup = setup_spin },
	{ .name = "tensor_prog", .setup = setup_tensor_prog },
	{ .name = "vadd", .setup = setup_vadd },
};
#define NKERNELS (sizeof(kernels) / sizeof(kernels[0]))

/* How a case runs its launches. */
struct shape {
	char name[32];
	unsigned T, B;
	unsigned sample_period;	/* PC sampling */
	bool itrace;		/* instruction trace of block min(5, B-1) */
	unsigned nlaunch;	/* 1, or 2: on rings 0 and 1 at once */
	setup_fn setup[2];
};

static void job_init(struct job *j, const struct shape *s, setup_fn setup)
{
	memset(j, 0, sizeof(*j));
	j->l.grid[0] = s->B;
	j->l.block[0] = s->T;
	j->l.stack = 256;
	setup(j, s->T, s->B);
	j->stats = alloc_buf(4096, 0, 1);
	j->l.stats = j->stats.va;
	if (s->sample_period || s->itrace) {
		j->trace = alloc_buf(TRACE_BYTES, 0, 1);
		j->l.trace = j->trace.va;
		j->l.trace_bytes = TRACE_BYTES;
		j->l.sample_period = s->sample_period;
		if (s->itrace) {
			j->l.flags |= NPU_CODE_ITRACE;
			j->l.trace_block = s->B > 5 ? 5 : s->B - 1;
		}
	}
}

static bool ring_done(int r)
{
	return ring_wait(r, TIMEOUT_MS) ==
	       (NPU_RING_STS_IDLE | NPU_RING_STS_ENABLED) &&
	       rrd(r, NPU_RING_FENCE) == seqno[r];
}

/* The fault registers of ring r, then resume it; false if not halted. */
static bool emit_fault(struct text *t, const char *p, int r)
{
	uint32_t st = ring_wait(r, TIMEOUT_MS);

	tp(t, "%s halted %s error %u fault 0x%llx info 0x%x\n", p,
	   st & NPU_RING_STS_HALTED ? "yes" : "no", rrd(r, NPU_RING_ERROR),
	   (unsigned long long)rrd64(r, NPU_RING_FAULT_LO),
	   rrd(r, NPU_RING_ERROR_INFO));
	tp(t, "%s fault_pc 0x%llx block %u thread %u unit %u\n", p,
	   (unsigned long long)rrd64(r, NPU_RING_FAULT_PC_LO),
	   rrd(r, NPU_RING_FAULT_BLOCK), rrd(r, NPU_RING_FAULT_THREAD),
	   rrd(r, NPU_RING_FAULT_UNIT));
	if (!(st & NPU_RING_STS_HALTED)) {
		ring_reset(r);
		return false;
	}
	ring_resume(r);
	return ring_wait(r, TIMEOUT_MS) & NPU_RING_STS_IDLE;
}

static void emit_results(struct text *t, const char *p, const struct job *j)
{
	for (unsigned i = 0; i < j->nres; i++) {
		const struct res *rs = &j->res[i];
		uint64_t n = rs->bytes;
		uint8_t *d;
		char name[64];

		if (!n) {
			struct npu_printf_header h;

			buf_read(&rs->b, 0, &h, sizeof(h));
			n = sizeof(h) + (h.used < rs->b.size - sizeof(h) ?
					 h.used : rs->b.size - sizeof(h));
		}
		d = malloc(n);
		buf_read(&rs->b, 0, d, n);
		snprintf(name, sizeof(name), "%s %s", p, rs->name);
		emit_blob(t, name, d, n, 8);
		free(d);
	}
}

/*
 * Run one case on the current device; its record goes to t. False if a
 * launch did not complete (or halt, for a fault): its ring is reset, so
 * the next cases do not queue behind it.
 */
static bool run_case(struct text *t, const struct shape *s)
{
	struct job j[2];
	struct pk p;
	bool done[2] = { false, false }, all = true;
	struct buf go;
	unsigned i;

	for (i = 0; i < s->nlaunch; i++)
		job_init(&j[i], s, s->setup[i]);
	if (s->nlaunch == 1) {
		p.n = 0;
		pk_launch_code(&p, &j[0].l);
		if (j[0].fault)
			ring_submit(0, &p);
		else
			done[0] = ring_run(0, &p, TIMEOUT_MS);
	} else {
		/* both rings wait on go, written once both are queued */
		go = alloc_buf(4096, 0, 1);
		qt_writel(q, buf_phys(&go, 0), 0);
		for (i = 0; i < 2; i++) {
			p.n = 0;
			pk_sem(&p, 1, go.va, 1);
			pk_launch_code(&p, &j[i].l);
			pk_fence(&p, ++seqno[i], fence_pa(i), 0);
			ring_submit(i, &p);
		}
		usleep(20000);
		qt_writel(q, buf_phys(&go, 0), 1);
		for (i = 0; i < 2; i++)
			done[i] = ring_done(i);
	}
	for (i = 0; i < s->nlaunch; i++) {
		struct npu_launch_stats st;
		char pre[8];

		snprintf(pre, sizeof(pre), "L%u", i);
		if (j[i].fault) {
			done[i] = emit_fault(t, pre, i);
		} else {
			tp(t, "%s completed %s\n", pre, done[i] ? "yes" : "no");
			if (!done[i])
				ring_reset(i);
		}
		all &= done[i];
		buf_read(&j[i].stats, 0, &st, sizeof(st));
		emit_stats(t, pre, &st);
		if (j[i].l.trace)
			emit_trace(t, pre, &j[i].trace);
		emit_results(t, pre, &j[i]);
	}
	return all;
}

/* The cases of kernel k, in the order they run. */
static unsigned kernel_shapes(const struct kernel *k, struct shape *s)
{
	static const unsigned threads[] = { 1, 2, 4, 16 }, blocks[] = { 1, 12 };
	unsigned n = 0;

	for (unsigned b = 0; b < 2; b++) {
		for (unsigned t = 0; t < 4; t++) {
			s[n] = (struct shape){ .T = threads[t],
					       .B = blocks[b], .nlaunch = 1,
					       .setup = { k->setup } };
			snprintf(s[n].name, sizeof(s[n].name), "t%u-b%u",
				 threads[t], blocks[b]);
			n++;
		}
	}
	s[n++] = (struct shape){ .name = "pair-t16-b12", .T = 16, .B = 12,
				 .nlaunch = 2,
				 .setup = { k->setup, k->setup } };
	s[n++] = (struct shape){ .name = "sampled-p64-t16-b12", .T = 16,
				 .B = 12, .sample_period = 64, .nlaunch = 1,
				 .setup = { k->setup } };
	s[n++] = (struct shape){ .name = "sampled-p7-t1-b1", .T = 1, .B = 1,
				 .sample_period = 7, .nlaunch = 1,
				 .setup = { k->setup } };
	s[n++] = (struct shape){ .name = "itrace-t16-b12", .T = 16, .B = 12,
				 .itrace = true, .nlaunch = 1,
				 .setup = { k->setup } };
	if (k->extra) {
		s[n] = (struct shape){ .T = k->extra_t, .B = k->extra_b,
				       .nlaunch = k->extra2 ? 2 : 1,
				       .setup = { k->extra1, k->extra2 } };
		snprintf(s[n].name, sizeof(s[n].name), "%s", k->extra);
		n++;
	}
	return n;
}

/* ------------------------------------------------- golden files, diffs */

static bool record_mode;
static const char *golden_dir = GOLDEN_DIR;
static const char *only;

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	struct text t = { 0 };
	char line[4096];

	if (!f)
		return NULL;
	tp(&t, "%s", "");
	while (fgets(line, sizeof(line), f))
		tp(&t, "%s", line);
	fclose(f);
	return t.s;
}

/* The record of case name in a golden file's text (malloc'd), or NULL. */
static char *golden_case(const char *file, const char *name)
{
	char head[64];
	const char *a, *e;

	if (!file)
		return NULL;
	snprintf(head, sizeof(head), "\n== %.50s\n", name);
	a = strstr(file, head);
	if (!a)
		return NULL;
	a += strlen(head);
	e = strstr(a, "\n== ");
	e = e ? e + 1 : a + strlen(a);
	return strndup(a, e - a);
}

static const char *next_line(const char *s, int *len)
{
	const char *e;

	if (!s || !*s)
		return NULL;
	e = strchr(s, '\n');
	*len = e ? (int)(e - s) : (int)strlen(s);
	return s;
}

/* Lines that differ, in order: golden ("-"), then device ("+"). */
static void diff_lines(const char *want, const char *got)
{
	const char *a = want, *b = got;
	int la = 0, lb = 0, shown = 0;

	for (;;) {
		const char *x = next_line(a, &la), *y = next_line(b, &lb);

		if (!x && !y)
			break;
		if (!x || !y || la != lb || memcmp(x, y, la)) {
			if (shown++ >= DIFF_LINES) {
				diag("  ... (more lines differ)");
				break;
			}
			if (x)
				diag("  - %.*s", la, x);
			if (y)
				diag("  + %.*s", lb, y);
		}
		a = x ? x + la + (x[la] == '\n') : NULL;
		b = y ? y + lb + (y[lb] == '\n') : NULL;
	}
}

static void run_kernel(const struct kernel *k)
{
	struct shape shapes[16];
	unsigned n = kernel_shapes(k, shapes);
	char path[1024], *file;
	struct text all = { 0 };
	bool sane = true;

	snprintf(path, sizeof(path), "%s/%s.txt", golden_dir, k->name);
	file = record_mode ? NULL : read_file(path);
	if (!record_mode && !file)
		diag("%s: no golden records (%s)", k->name, strerror(errno));
	start("timing=virtual", 0);
	load_kernel(k->name, 1);
	tp(&all, "# npu-golden records of kernels/%s.c on a timing=virtual "
	   "device.\n# Written by npu-golden --record: change only with the "
	   "model (Documentation/testing.rst).\n", k->name);
	for (unsigned i = 0; i < n; i++) {
		struct text t = { 0 };
		char *want;
		bool done;

		tp(&t, "%s", "");
		done = run_case(&t, &shapes[i]);
		sane &= done;
		tp(&all, "== %s\n%s", shapes[i].name, t.s);
		if (record_mode) {
			ok(done, "%s %s: %s", k->name, shapes[i].name, done ?
			   "recorded" : "a launch did not complete");
		} else {
			want = golden_case(file, shapes[i].name);
			ok(want && !strcmp(want, t.s), "%s %s: %s", k->name,
			   shapes[i].name, !want ? "no golden record" :
			   strcmp(want, t.s) ? "differs from the golden record"
					     : "matches the golden record");
			if (want && strcmp(want, t.s))
				diff_lines(want, t.s);
			free(want);
		}
		free(t.s);
	}
	stop(k->name);
	if (record_mode && !sane) {
		ok(0, "%s: not written (a launch did not complete)", path);
	} else if (record_mode) {
		FILE *f;

		mkdir(golden_dir, 0777);	/* the first record */
		f = fopen(path, "w");

		ok(f && fwrite(all.s, 1, all.len, f) == all.len && !fclose(f),
		   "%s: wrote %s", k->name, path);
	}
	free(all.s);
	free(file);
}

/* Every kernel image must have cases here, so a new kernel is not missed. */
static void check_corpus(void)
{
	DIR *d = opendir(kernel_dir);
	struct dirent *e;
	unsigned missing = 0, seen = 0;

	while (d && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		bool known = false;

		if (len < 5 || strcmp(e->d_name + len - 4, ".bin"))
			continue;
		seen++;
		for (unsigned i = 0; i < NKERNELS; i++)
			known |= strlen(kernels[i].name) == len - 4 &&
				 !strncmp(kernels[i].name, e->d_name, len - 4);
		if (!known) {
			diag("kernels/%s has no golden cases in npu-golden.c",
			     e->d_name);
			missing++;
		}
	}
	if (d)
		closedir(d);
	ok(d && !missing && seen == NKERNELS, "every kernel of the corpus (%u "
	   "in %s) has golden cases", seen, kernel_dir);
}

static void run_all(void)
{
	if (!only)
		check_corpus();
	for (unsigned i = 0; i < NKERNELS; i++)
		if (!only || !strcmp(only, kernels[i].name))
			run_kernel(&kernels[i]);
}

int main(int argc, char **argv)
{
	char *args[2];
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--record")) {
			record_mode = true;
		} else if (!strcmp(argv[i], "--golden") && i + 1 < argc) {
			golden_dir = argv[++i];
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[++i];
		} else {
			break;
		}
	}
	if (i != argc - 1) {
		fprintf(stderr, "usage: %s [--record] [--golden DIR] "
			"[--only KERNEL] <qemu-system-x86_64>\n", argv[0]);
		return 2;
	}
	args[0] = argv[0];
	args[1] = argv[i];
	return devtest_main(2, args, run_all);
}
