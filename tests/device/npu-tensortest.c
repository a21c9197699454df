// SPDX-License-Identifier: MIT
/*
 * npu-tensortest: the tensor engine and the tile DMA of the compute units
 * over qtest (Documentation/hw/npu.rst, "Tensor engine and tile DMA"):
 * kernels/tensor_prog.c runs programs of tile loads, stores, fills, MMAs
 * of every type, element-wise operations and copies, and every byte of
 * each thread's scratchpad afterwards is compared with the host
 * reference (tests/common/npu_tensor_ref.c) running the same program;
 * faults, illegal encodings, waits, timing and counters.
 * Usage: npu-tensortest <qemu-system-x86_64>. Prints TAP 13.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "devlib.h"
#include "npu_half.h"
#include "npu_tensor_ref.h"
#include "tensor_prog.h"

#define IMG		4096u		/* bytes of scratchpad per thread */
#define MAX_THREADS	16
#define TILE_BYTES	1024u

struct prog {
	struct tp_step s[128];
	unsigned n;
};

static struct buf prog_buf, img_buf, mem_buf, stats_buf;
static uint8_t imgs[MAX_THREADS][IMG], want[MAX_THREADS][IMG];

static void step(struct prog *p, unsigned kind, unsigned sub, uint64_t off,
		 uint64_t arg)
{
	p->s[p->n++] = (struct tp_step){ kind, sub, off, arg };
}

/* Load A, B, C from their 1 KiB slots (32-bit cells, as written). */
static void load_abc(struct prog *p)
{
	step(p, TP_LOAD, TP_SUB_MEM(TP_A, NPU_TILE_E32), 0, 64);
	step(p, TP_LOAD, TP_SUB_MEM(TP_B, NPU_TILE_E32), TILE_BYTES, 64);
	step(p, TP_LOAD, TP_SUB_MEM(TP_C, NPU_TILE_E32), 2 * TILE_BYTES, 64);
}

/*
 * The host reference's run of p on one thread's image (its scratchpad of
 * size bytes); NPU_ERR_NONE or the fault of the first step that faults.
 */
/* The memory side of the reference's copies: a host copy of mem_buf. */
static struct npu_ref_mem ref_mem;
static uint8_t mem_host[64 * 1024];

static int ref_prog(const struct prog *p, uint8_t *img, uint64_t size,
		    uint64_t *fault)
{
	static const struct npu_ref_tile zero;
	struct npu_ref_tile t[NPU_TILE_REGS];
	struct npu_ref_scratch sc = { img, size };
	int err = NPU_ERR_NONE;
	struct npu_tdma_desc d;
	uint32_t count;
	uint64_t seen;
	int at_pc;

	for (unsigned i = 0; i < NPU_TILE_REGS; i++)
		t[i] = zero;
	for (unsigned i = 0; i < p->n && !err; i++) {
		const struct tp_step *s = &p->s[i];
		uint64_t addr = NPU_LOCAL_SCRATCH + s->off;
		unsigned type = s->sub >> 2, op = s->sub >> 1;

		switch (s->kind) {
		case TP_LOAD:
			err = npu_ref_tload(&t[s->sub >> 3], &sc, addr, s->arg,
					    s->sub & 7, fault);
			break;
		case TP_STORE:
			err = npu_ref_tstore(&t[s->sub >> 3], &sc, addr, s->arg,
					     s->sub & 7, fault);
			break;
		case TP_FILL:
			npu_ref_tfill(&t[s->sub >> 2], s->arg, s->sub & 3);
			break;
		case TP_MMA:
			if ((s->sub & 3) == 0)
				npu_ref_mma(&t[TP_C], &t[TP_A], &t[TP_B], type);
			else if ((s->sub & 3) == 1)
				npu_ref_mma(&t[TP_A], &t[TP_A], &t[TP_B], type);
			else
				npu_ref_mma(&t[TP_B], &t[TP_A], &t[TP_B], type);
			break;
		case TP_TEW:
			if (s->sub & 1)
				npu_ref_tew(&t[TP_A], &t[TP_A], &t[TP_A], op);
			else
				npu_ref_tew(&t[TP_D], &t[TP_A],
					    op < NPU_TEW_RELU ? &t[TP_B] : &t[TP_A],
					    op);
			break;
		case TP_DMA:
			/* the descriptor's own checks (npu_ref_tdma takes it
			 * read) */
			*fault = addr;
			if (addr % 8) {
				err = NPU_ERR_CU_MISALIGNED;
				break;
			}
			if (s->off + sizeof(d) > size) {
				err = NPU_ERR_CU_LOCAL_RANGE;
				break;
			}
			memcpy(&d, img + s->off, sizeof(d));
			err = npu_ref_tdma(&d, &sc, &ref_mem, fault, &at_pc);
			break;
		case TP_WAIT:
			/* every copy completed at its issue */
			memcpy(&count, img + s->off, 4);
			seen = count;
			memcpy(img + 8 * s->sub, &seen, 8);
			break;
		default:
			break;
		}
	}
	return err;
}

/*
 * Run p on the device in one block of nthr threads, thread k on imgs[k];
 * imgs[] get the scratchpads back. False if the launch did not complete.
 */
static unsigned nblocks = 1;

static bool dev_prog(const struct prog *p, unsigned nthr,
		     struct npu_launch_stats *st)
{
	struct launch l = {
		.grid = { nblocks }, .block = { nthr },
		.scratch = nthr * IMG, .stack = 256,
		.stats = stats_buf.va, .nargs = 4,
		.args = { prog_buf.va, p->n, img_buf.va, IMG },
	};
	struct pk pk = { .n = 0 };
	bool done;

	buf_write(&prog_buf, 0, p->s, p->n * sizeof(p->s[0]));
	buf_write(&img_buf, 0, imgs, nblocks * nthr * IMG);
	pk_launch_code(&pk, &l);
	done = ring_run(0, &pk, 30000);
	if (done) {
		buf_read(&img_buf, 0, imgs, nblocks * nthr * IMG);
		if (st)
			buf_read(&stats_buf, 0, st, sizeof(*st));
	}
	return done;
}

/* Every thread's scratchpad as the reference leaves it; diag the first
 * difference. */
static bool same_as_ref(const struct prog *p, unsigned nthr, const char *what)
{
	for (unsigned k = 0; k < nthr; k++) {
		uint64_t fault;

		if (ref_prog(p, want[k], IMG, &fault) != NPU_ERR_NONE) {
			diag("%s: the reference faults (thread %u)", what, k);
			return false;
		}
	}
	if (!dev_prog(p, nthr, NULL)) {
		diag("%s: the launch did not complete (error %u, fault 0x%llx)",
		     what, rrd(0, NPU_RING_ERROR),
		     (unsigned long long)rrd64(0, NPU_RING_FAULT_LO));
		ring_reset(0);
		return false;
	}
	for (unsigned k = 0; k < nthr; k++)
		for (unsigned i = 0; i < IMG; i += 4)
			if (memcmp(imgs[k] + i, want[k] + i, 4)) {
				uint32_t g, w;

				memcpy(&g, imgs[k] + i, 4);
				memcpy(&w, want[k] + i, 4);
				diag("%s: thread %u, scratchpad +0x%x: device "
				     "0x%08x, reference 0x%08x", what, k, i, g, w);
				return false;
			}
	return true;
}

/* Set the images (device input and reference input) of nthr threads. */
static void set_images(unsigned nthr)
{
	memcpy(want, imgs, nthr * IMG);
}

/* ------------------------------------------------------------ values */

static const uint32_t f32_edges[] = {
	0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x00000001,
	0x80000001, 0x007fffff, 0x00800000, 0x80800000, 0x7f7fffff,
	0xff7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001,
	0xffc12345, 0x33800000, 0x4b800000, 0x3f800001, 0x34000000,
	0x1f800000, 0x5f800000, 0x3e800000, 0x40000000,
};
static const uint16_t f16_edges[] = {
	0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00,
	0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe55, 0x3555,
	0x3c01, 0x1400, 0x5800,
};
static const uint16_t bf16_edges[] = {
	0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x0080, 0x3f80, 0xbf80,
	0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffc1, 0x3f81,
	0x0d80, 0x7280,
};
static const uint32_t int_edges[] = {
	0, 1, 0xffffffff, 0x7fffffff, 0x80000000, 0x7f, 0x80, 0xff, 0x81,
	0xffff, 0x10000, 0x12345678, 0xdeadbeef,
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* A float of moderate magnitude (2^-spread .. 2^spread), any sign */
static uint32_t rnd_f32(unsigned spread)
{
	uint32_t e = 127 - spread + rnd() % (2 * spread + 1);

	return (rnd() & 0x80000000u) | e << 23 | (rnd() & 0x7fffff);
}

/*
 * A cell of an input tile of type (enum npu_mma_type, or NPU_MMA_TYPES
 * for an f32 TEW operand): mode 0 mostly edges, 1 all random bits (also
 * in the cell's unused high bits), 2 moderate values only.
 */
static uint32_t rnd_cell(unsigned type, unsigned mode)
{
	bool edge = mode == 0 && rnd() % 3 == 0;

	if (mode == 1)
		return rnd();
	switch (type) {
	case NPU_MMA_F16:
		if (edge)
			return f16_edges[rnd() % NELEM(f16_edges)];
		return npu_f16_from_f32(npu_bits_f32(rnd_f32(6)));
	case NPU_MMA_BF16:
		if (edge)
			return bf16_edges[rnd() % NELEM(bf16_edges)];
		return rnd_f32(10) >> 16;
	case NPU_MMA_S8:
		if (edge)
			return int_edges[rnd() % NELEM(int_edges)] & 0xff;
		return rnd() & 0xff;
	case NPU_MMA_S32:
		if (edge)
			return int_edges[rnd() % NELEM(int_edges)];
		return rnd();
	default:			/* f32 */
		if (edge)
			return f32_edges[rnd() % NELEM(f32_edges)];
		return rnd_f32(mode == 2 ? 4 : 20);
	}
}

static void fill_tile(uint8_t *at, unsigned type, unsigned mode)
{
	for (unsigned i = 0; i < NPU_TILE_CELLS; i++) {
		uint32_t v = rnd_cell(type, mode);

		memcpy(at + 4 * i, &v, 4);
	}
}

static void fill_cells(uint8_t *at, uint32_t v)
{
	for (unsigned i = 0; i < NPU_TILE_CELLS; i++)
		memcpy(at + 4 * i, &v, 4);
}

/* ------------------------------------------------------------- tests */

static const char *const type_names[NPU_MMA_TYPES] = {
	"f16", "bf16", "f32", "s8", "s32",
};

/*
 * TMMA of every type: 16 threads of a block, each its own A, B, C (edge
 * values, random bits, moderate values; crafted cases for signed zeros,
 * a rounding tie and overflow), C += A x B stored back; then the forms
 * where C is A or B, and three TMMAs back to back into one accumulator.
 */
static void test_mma(void)
{
	for (unsigned type = 0; type < NPU_MMA_TYPES; type++) {
		struct prog p = { .n = 0 };
		char what[64];
		bool good;

		for (unsigned k = 0; k < MAX_THREADS; k++) {
			unsigned mode = k % 3;

			fill_tile(imgs[k], type, mode);
			fill_tile(imgs[k] + TILE_BYTES, type, mode);
			fill_tile(imgs[k] + 2 * TILE_BYTES,
				  type >= NPU_MMA_S8 ? NPU_MMA_S32 : NPU_MMA_TYPES,
				  mode);
			memset(imgs[k] + 3 * TILE_BYTES, 0, TILE_BYTES);
		}
		if (type < NPU_MMA_S8) {
			uint32_t one = type == NPU_MMA_F32 ? 0x3f800000 :
				       type == NPU_MMA_F16 ? 0x3c00 : 0x3f80;
			uint32_t mone = one | (type == NPU_MMA_F32 ? 0x80000000u
							       : 0x8000u);
			uint32_t tiny = type == NPU_MMA_F32 ? 0x39800000 :
					type == NPU_MMA_F16 ? 0x0c00 : 0x3980;
			uint32_t big = type == NPU_MMA_F32 ? 0x7f000000 :
				       type == NPU_MMA_F16 ? 0x7bff : 0x7f00;

			/* -0 + sum of (+0 x -1): +0 */
			fill_cells(imgs[13], 0);
			fill_cells(imgs[13] + TILE_BYTES, mone);
			fill_cells(imgs[13] + 2 * TILE_BYTES, 0x80000000);
			/* -0 + sum of (-0 x 1)... : -0 stays */
			fill_cells(imgs[14], type == NPU_MMA_F32 ? 0x80000000
								: 0x8000);
			fill_cells(imgs[14] + TILE_BYTES, one);
			fill_cells(imgs[14] + 2 * TILE_BYTES, 0x80000000);
			/* 1 + 2^-12 * 2^-12 (f16: 2^-12 * 2^-12 too): ties;
			 * max * max overflows to Inf */
			fill_cells(imgs[15], tiny);
			fill_cells(imgs[15] + TILE_BYTES, tiny);
			fill_cells(imgs[15] + 2 * TILE_BYTES, 0x3f800000);
			memcpy(imgs[15] + 4 * 17, &big, 4);
			memcpy(imgs[15] + TILE_BYTES + 4 * 17, &big, 4);
		} else {
			/* extremes: -128 * -128 * 16, wrapping sums */
			uint32_t lo = type == NPU_MMA_S8 ? 0x80 : 0x80000000;

			fill_cells(imgs[15], lo);
			fill_cells(imgs[15] + TILE_BYTES, lo);
			fill_cells(imgs[15] + 2 * TILE_BYTES, 0x7fffffff);
			fill_cells(imgs[14], type == NPU_MMA_S8 ? 0x7f : 0x7fffffff);
			fill_cells(imgs[14] + TILE_BYTES, lo);
			fill_cells(imgs[14] + 2 * TILE_BYTES, 0x80000000);
		}
		set_images(MAX_THREADS);
		load_abc(&p);
		step(&p, TP_MMA, TP_SUB_MMA(type, 0), 0, 0);
		step(&p, TP_STORE, TP_SUB_MEM(TP_C, NPU_TILE_E32), 3 * TILE_BYTES, 64);
		snprintf(what, sizeof(what), "TMMA %s", type_names[type]);
		good = same_as_ref(&p, MAX_THREADS, what);
		ok(good, "TMMA %s: C += A x B of 16 threads' own tiles (edge "
		   "values, random bits, crafted zeros/ties/extremes) bit for "
		   "bit as the reference", type_names[type]);

		/* C is A, C is B; three back to back into C */
		p.n = 0;
		for (unsigned k = 0; k < 4; k++)
			fill_tile(imgs[k] + 3 * TILE_BYTES, NPU_MMA_S32, 1);
		set_images(4);
		load_abc(&p);
		step(&p, TP_MMA, TP_SUB_MMA(type, 0), 0, 0);
		step(&p, TP_MMA, TP_SUB_MMA(type, 0), 0, 0);
		step(&p, TP_MMA, TP_SUB_MMA(type, 0), 0, 0);
		step(&p, TP_STORE, TP_SUB_MEM(TP_C, NPU_TILE_E32), 3 * TILE_BYTES, 64);
		step(&p, TP_MMA, TP_SUB_MMA(type, 1), 0, 0);
		step(&p, TP_STORE, TP_SUB_MEM(TP_A, NPU_TILE_E32), 0, 64);
		step(&p, TP_MMA, TP_SUB_MMA(type, 2), 0, 0);
		step(&p, TP_STORE, TP_SUB_MEM(TP_B, NPU_TILE_E32), TILE_BYTES, 64);
		good = same_as_ref(&p, 4, what);
		ok(good, "TMMA %s: three back to back into one C, then C = A "
		   "and C = B (inputs read before the result)",
		   type_names[type]);
	}
}

/* Inputs of EXP, CVTF16 and CVTBF16 around their boundaries. */
static const uint32_t exp_edges[] = {
	0x42b17217, 0x42b17218, 0x42b17219, 0xc2aeac4f, 0xc2aeac50,
	0xc2cff1b4, 0xc2cff1b5, 0xc2d00000, 0xc2ce8ed0, 0x32000000,
	0xb2000000, 0x3f317218, 0x461c4000, 0xff7fffff, 0x00000001,
	0x7f7fffff, 0x47c35000, 0x46317400, 0xc6317400,
};
static const uint32_t cvt_edges[] = {
	0x477fe000, 0x477fefff, 0x477ff000, 0x477ff001, 0xc77ff000,
	0x33800000, 0x33000000, 0x33000001, 0x33c00000, 0x38800000,
	0x387fc000, 0x387fe000, 0x3f808000, 0x3f818000, 0x7f7f8000,
	0x7f7f7fff, 0xff7f8000, 0x3f800fff, 0x3f801000, 0x3f803000,
	0x00400000, 0x7f800001, 0xffc00000, 0x80000000,
};

/* Every element-wise op, D = op(A, B) and A = op(A, A), on f32 edges. */
static void test_tew(void)
{
	static const char *const names[NPU_TEW_OPS] = {
		"ADD", "SUB", "MUL", "MAX", "ADDROW", "RELU", "EXP", "RCP",
		"ROWMAX", "ROWSUM", "CVTF16", "CVTBF16",
	};

	for (unsigned op = 0; op < NPU_TEW_OPS; op++) {
		struct prog p = { .n = 0 };
		char what[64];

		for (unsigned k = 0; k < 8; k++) {
			for (unsigned tile = 0; tile < 2; tile++) {
				uint8_t *at = imgs[k] + tile * TILE_BYTES;

				fill_tile(at, NPU_MMA_TYPES, k % 3);
				for (unsigned i = 0; i < NPU_TILE_CELLS; i++) {
					uint32_t v;

					if (op == NPU_TEW_EXP && rnd() % 2) {
						v = rnd() % 3 ?
						    npu_f32_bits((float)(rnd() % 200000) / 1000.0f - 110.0f) :
						    exp_edges[rnd() % NELEM(exp_edges)];
					} else if (op >= NPU_TEW_CVTF16 && rnd() % 2) {
						v = cvt_edges[rnd() % NELEM(cvt_edges)];
					} else {
						continue;
					}
					memcpy(at + 4 * i, &v, 4);
				}
			}
			memset(imgs[k] + 2 * TILE_BYTES, 0, 2 * TILE_BYTES);
		}
		set_images(8);
		load_abc(&p);
		step(&p, TP_TEW, TP_SUB_TEW(op, 0), 0, 0);
		step(&p, TP_STORE, TP_SUB_MEM(TP_D, NPU_TILE_E32), 2 * TILE_BYTES, 64);
		step(&p, TP_TEW, TP_SUB_TEW(op, 1), 0, 0);
		step(&p, TP_STORE, TP_SUB_MEM(TP_A, NPU_TILE_E32), 3 * TILE_BYTES, 64);
		snprintf(what, sizeof(what), "TEW %s", names[op]);
		ok(same_as_ref(&p, 8, what),
		   "TEW %s: D = op(A, B) and A = op(A, A) of 8 threads (edge "
		   "values, NaNs, denormals, ties) bit for bit as the reference",
		   names[op]);
	}
}

/*
 * TLOAD and TSTORE of every element size, plain and transposed, with row
 * strides of a row, more, 0 (rows overlap), less than a row and
 * "negative"; TFILL of every size; a tile never written reads 0.
 */
static void test_load_store(void)
{
	static const int64_t strides[] = { 64, 80, 0, 8, -72 };
	struct prog p = { .n = 0 };
	bool good = true;

	for (unsigned f7i = 0; f7i < 6 && good; f7i++) {
		unsigned f7 = f7i < 3 ? f7i : (f7i - 3) | NPU_TILE_TRANS;
		unsigned w = 1u << (f7 & 3);

		for (unsigned si = 0; si < NELEM(strides) && good; si++) {
			int64_t stride = strides[si] * (int64_t)w / 4;
			uint64_t from = stride < 0 ? 3000 : 0;
			char what[64];

			for (unsigned k = 0; k < 2; k++)
				for (unsigned i = 0; i < IMG; i += 4) {
					uint32_t v = rnd();

					memcpy(imgs[k] + i, &v, 4);
				}
			set_images(2);
			p.n = 0;
			step(&p, TP_LOAD, TP_SUB_MEM(5, f7), from, stride);
			/* back out elsewhere, the other orientation */
			step(&p, TP_STORE, TP_SUB_MEM(5, f7 ^ NPU_TILE_TRANS),
			     stride < 0 ? 3500 : 1536, stride);
			step(&p, TP_STORE, TP_SUB_MEM(5, NPU_TILE_E32), 2048, 64);
			snprintf(what, sizeof(what), "funct7 %u stride %lld", f7,
				 (long long)stride);
			good = same_as_ref(&p, 2, what);
		}
	}
	ok(good, "TLOAD/TSTORE: 8-, 16-, 32-bit, plain and transposed, strides "
	   "of a row, more, 0, less than a row and negative, as the reference");

	p.n = 0;
	for (unsigned k = 0; k < 2; k++)
		memset(imgs[k], 0xa5, IMG);
	set_images(2);
	for (unsigned e = 0; e < 3; e++) {
		step(&p, TP_FILL, TP_SUB_FILL(e, e), 0, 0xfedcba9876543210ull);
		step(&p, TP_STORE, TP_SUB_MEM(e, NPU_TILE_E32), e * TILE_BYTES, 64);
	}
	step(&p, TP_STORE, TP_SUB_MEM(7, NPU_TILE_E32), 3 * TILE_BYTES, 64);
	ok(same_as_ref(&p, 2, "TFILL"),
	   "TFILL of each element size keeps the low bits, zero-extended; a "
	   "tile the thread never wrote stores zeros");
}

/* A launch without NPU_CODE_STATS_TENSOR writes 232 bytes of stats. */
static void test_stats_unasked(void)
{
	uint8_t pat[512], after[sizeof(pat)];
	struct prog p = { .n = 0 };
	struct npu_launch_stats st;
	bool done;

	memset(pat, 0xa5, sizeof(pat));
	buf_write(&stats_buf, 0, pat, sizeof(pat));
	memset(imgs[0], 0, IMG);
	step(&p, TP_MMA, TP_SUB_MMA(NPU_MMA_F16, 0), 0, 0);
	done = dev_prog(&p, 1, &st);
	buf_read(&stats_buf, 0, after, sizeof(after));
	ok(done && st.instructions > 0 &&
	   !memcmp(after + sizeof(st), pat, sizeof(pat) - sizeof(st)),
	   "without NPU_CODE_STATS_TENSOR the device writes %zu bytes of "
	   "statistics, nothing after them", sizeof(st));
}

/* ------------------------------------------------- faults, encodings */

/*
 * Run p (one thread) expecting the fault the reference finds: ERROR and
 * FAULT, the unit-fault registers naming thread 0 of block 0; the ring
 * resumes for the next.
 */
static bool faults_as_ref(const struct prog *p, const char *what)
{
	uint64_t fault = 0, pc;
	int err;
	struct launch l = {
		.block = { 1 }, .scratch = IMG, .stack = 256, .nargs = 4,
		.args = { prog_buf.va, p->n, img_buf.va, IMG },
	};
	struct pk pk = { .n = 0 };
	bool good;

	memcpy(want[0], imgs[0], IMG);
	err = ref_prog(p, want[0], IMG, &fault);
	if (err == NPU_ERR_NONE) {
		diag("%s: the reference does not fault", what);
		return false;
	}
	buf_write(&prog_buf, 0, p->s, p->n * sizeof(p->s[0]));
	buf_write(&img_buf, 0, imgs, IMG);
	pk_launch_code(&pk, &l);
	ring_submit(0, &pk);
	good = expect_error(0, err, fault, ~0u);
	pc = rrd64(0, NPU_RING_FAULT_PC_LO);
	good &= pc >= DEVTEST_CODE_VA && pc < DEVTEST_CODE_VA + 0x10000 &&
		rrd(0, NPU_RING_FAULT_THREAD) == 0 &&
		rrd(0, NPU_RING_FAULT_BLOCK) == 0;
	if (!good)
		diag("%s: want error %d fault 0x%llx; FAULT_PC 0x%llx", what,
		     err, (unsigned long long)fault, (unsigned long long)pc);
	ring_resume(0);
	return good;
}

/* TLOAD/TSTORE faults: misaligned address, then stride; outside. */
static void test_tile_faults(void)
{
	static const struct { unsigned kind, f7; uint64_t off, stride; } c[] = {
		{ TP_LOAD, NPU_TILE_E32, 2, 64 },
		{ TP_STORE, NPU_TILE_E16, 0, 33 },
		{ TP_LOAD, NPU_TILE_E16 | NPU_TILE_TRANS, 1, 3 },
		{ TP_LOAD, NPU_TILE_E32, IMG - 512, 64 },
		{ TP_STORE, NPU_TILE_E8, 64, -8ull },
		{ TP_LOAD, NPU_TILE_E32, IMG - 60, 0 },
		{ TP_STORE, NPU_TILE_E32 | NPU_TILE_TRANS, 0, 1ull << 40 },
		/* a device VA: not the scratchpad */
		{ TP_LOAD, NPU_TILE_E8, 0x100000000ull - NPU_LOCAL_SCRATCH, 16 },
	};
	bool good = true;

	for (unsigned i = 0; i < NELEM(c); i++) {
		struct prog p = { .n = 0 };
		char what[64];

		memset(imgs[0], 0, IMG);
		step(&p, c[i].kind, TP_SUB_MEM(4, c[i].f7), c[i].off, c[i].stride);
		snprintf(what, sizeof(what), "tile fault case %u", i);
		good &= faults_as_ref(&p, what);
	}
	ok(good, "TLOAD/TSTORE faults (misaligned address, misaligned stride, "
	   "rows past the scratchpad's end or before its start, a device "
	   "VA): ERROR and FAULT as the reference, FAULT_PC in the kernel");
}

/* One instruction word, then ECALL, as a kernel of its own. */
static bool run_word(struct buf *code, uint32_t word, bool legal)
{
	uint32_t words[2] = { word, 0x00000073 };
	struct launch l = { .entry = code->va, .stack = 256,
			    .scratch = 4096 };
	struct pk pk = { .n = 0 };
	bool good;

	buf_write(code, 0, words, sizeof(words));
	wr(NPU_REG_MMU_INVALIDATE, NPU_MMU_INVALIDATE_ALL);
	pk_launch_code(&pk, &l);
	if (legal)
		return ring_run(0, &pk, 10000);
	ring_submit(0, &pk);
	good = expect_error(0, NPU_ERR_CU_ILLEGAL, code->va, ~0u);
	ring_resume(0);
	return good;
}

#define RTYPE(opc, f3, f7, rd, rs1, rs2) \
	((uint32_t)(f7) << 25 | (rs2) << 20 | (rs1) << 15 | (f3) << 12 | \
	 (rd) << 7 | (opc))

/* Every encoding the spec leaves undefined is CU_ILLEGAL. */
static void test_encodings(void)
{
	struct buf code = alloc_buf(4096, 1, 0);
	const uint32_t T = NPU_OPC_TENSOR, D = NPU_OPC_TDMA;
	const uint32_t bad[] = {
		RTYPE(T, 0, 2, 8, 0, 0),	/* TLOAD t8 */
		RTYPE(T, 1, 2, 31, 0, 0),	/* TSTORE t31 */
		RTYPE(T, 0, 3, 0, 0, 0),	/* esize 3 */
		RTYPE(T, 0, 7, 0, 0, 0),	/* esize 3, transposed */
		RTYPE(T, 0, 0x8, 0, 0, 0),	/* funct7 bit 3 */
		RTYPE(T, 1, 0x42, 0, 0, 0),	/* funct7 bit 6 */
		RTYPE(T, 2, 2, 0, 0, 1),	/* TFILL rs2 != 0 */
		RTYPE(T, 2, 3, 0, 0, 0),	/* TFILL esize 3 */
		RTYPE(T, 2, 6, 0, 0, 0),	/* TFILL transposed */
		RTYPE(T, 3, 5, 2, 0, 1),	/* TMMA type 5 */
		RTYPE(T, 3, 0, 2, 8, 1),	/* TMMA ta = 8 */
		RTYPE(T, 3, 0, 2, 0, 9),	/* TMMA tb = 9 */
		RTYPE(T, 3, 0, 9, 0, 1),	/* TMMA tc = 9 */
		RTYPE(T, 4, 12, 3, 0, 1),	/* TEW op 12 */
		RTYPE(T, 4, 5, 3, 0, 1),	/* RELU with tb */
		RTYPE(T, 4, 11, 3, 0, 2),	/* CVTBF16 with tb */
		RTYPE(T, 4, 0, 3, 0, 8),	/* ADD tb = 8 */
		RTYPE(T, 5, 0, 0, 0, 0),	/* funct3 5..7 */
		RTYPE(T, 6, 0, 0, 0, 0),
		RTYPE(T, 7, 0, 0, 0, 0),
		RTYPE(D, 0, 1, 0, 10, 0),	/* TDMA funct7 != 0 */
		RTYPE(D, 2, 0, 0, 10, 0),	/* TDMA funct3 2 */
		RTYPE(D, 0, 0, 5, 10, 0),	/* TDMA.ISSUE rd != 0 */
		RTYPE(D, 0, 0, 0, 10, 11),	/* TDMA.ISSUE rs2 != 0 */
	};
	const uint32_t good_words[] = {
		RTYPE(T, 2, 2, 7, 0, 0),	/* TFILL t7, x0 */
		RTYPE(T, 3, 4, 2, 0, 1),	/* TMMA s32 */
		RTYPE(T, 3, 1, 0, 0, 0),	/* TMMA bf16 t0 += t0 t0 */
		RTYPE(T, 4, 4, 3, 0, 7),	/* ADDROW */
		RTYPE(T, 4, 10, 3, 0, 0),	/* CVTF16 */
	};
	unsigned nbad = 0, ngood = 0;

	for (unsigned i = 0; i < NELEM(bad); i++) {
		bool g = run_word(&code, bad[i], false);

		if (!g)
			diag("word 0x%08x did not fault CU_ILLEGAL", bad[i]);
		nbad += g;
	}
	for (unsigned i = 0; i < NELEM(good_words); i++) {
		bool g = run_word(&code, good_words[i], true);

		if (!g)
			diag("word 0x%08x did not run", good_words[i]);
		ngood += g;
	}
	ok(nbad == NELEM(bad) && ngood == NELEM(good_words),
	   "%u undefined tensor/TDMA encodings are CU_ILLEGAL at their PC; "
	   "%u defined ones run", nbad, ngood);
}

/* ----------------------------------------------------------- tile DMA */

#define DESC_AT		3072u	/* descriptors in each thread's image */
#define BAR_AT		3968u	/* barrier words */

static void put_desc(unsigned k, unsigned slot, const struct npu_tdma_desc *d)
{
	memcpy(imgs[k] + DESC_AT + slot * sizeof(*d), d, sizeof(*d));
}

/*
 * Copies of 1 to 3 dimensions in both directions, with the memory side
 * in device memory: each thread's scratchpad and the memory afterwards
 * as the reference's.
 */
static bool dma_as_ref(const struct prog *p, const char *what)
{
	uint64_t fault;
	uint8_t mem_dev[sizeof(mem_host)];

	memcpy(want[0], imgs[0], IMG);
	buf_write(&mem_buf, 0, mem_host, sizeof(mem_host));
	if (ref_prog(p, want[0], IMG, &fault) != NPU_ERR_NONE) {
		diag("%s: the reference faults (0x%llx)", what,
		     (unsigned long long)fault);
		return false;
	}
	if (!dev_prog(p, 1, NULL)) {
		diag("%s: the launch did not complete (error %u, fault 0x%llx)",
		     what, rrd(0, NPU_RING_ERROR),
		     (unsigned long long)rrd64(0, NPU_RING_FAULT_LO));
		ring_reset(0);
		return false;
	}
	buf_read(&mem_buf, 0, mem_dev, sizeof(mem_dev));
	for (unsigned i = 0; i < IMG; i++)
		if (imgs[0][i] != want[0][i]) {
			diag("%s: scratchpad +0x%x: device 0x%02x, reference "
			     "0x%02x", what, i, imgs[0][i], want[0][i]);
			return false;
		}
	for (unsigned i = 0; i < sizeof(mem_host); i++)
		if (mem_dev[i] != mem_host[i]) {
			diag("%s: memory +0x%x: device 0x%02x, reference 0x%02x",
			     what, i, mem_dev[i], mem_host[i]);
			return false;
		}
	return true;
}

static void rnd_bytes(uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b[i] = rnd();
}

static void test_dma_shapes(void)
{
	static const struct {
		const char *name;
		uint32_t size[3];
		uint64_t mem_off, mstride[2];
		uint32_t scratch_off, sstride[2];
	} c[] = {
		{ "1-D aligned", { 512, 1, 1 }, 0, { 0, 0 }, 0, { 0, 0 } },
		{ "1-D odd, unaligned", { 333, 1, 1 }, 4093, { 0, 0 }, 7, { 0, 0 } },
		{ "2-D rows", { 48, 16, 1 }, 100, { 200, 0 }, 0, { 48, 0 } },
		{ "2-D across pages", { 64, 8, 1 }, 4000, { 4096, 0 }, 1, { 96, 0 } },
		{ "3-D", { 16, 4, 5 }, 64, { 40, 1000 }, 0, { 16, 64 } },
		{ "overlapping rows", { 64, 10, 1 }, 0, { 64, 0 }, 0, { 8, 0 } },
		{ "stride 0", { 32, 5, 2 }, 512, { 0, 0 }, 100, { 0, 0 } },
		{ "size 0", { 0, 4, 4 }, 0, { 64, 0 }, 0, { 64, 0 } },
		{ "rows 0", { 64, 0, 4 }, 0, { 64, 0 }, 0, { 64, 0 } },
	};
	bool good = true;

	for (unsigned i = 0; i < NELEM(c) && good; i++) {
		for (unsigned dir = 0; dir < 2 && good; dir++) {
			struct npu_tdma_desc d = {
				.mem = mem_buf.va + c[i].mem_off,
				.scratch = NPU_LOCAL_SCRATCH + c[i].scratch_off,
				.barrier = NPU_LOCAL_SCRATCH + BAR_AT,
				.mem_stride = { c[i].mstride[0], c[i].mstride[1] },
				.scratch_stride = { c[i].sstride[0], c[i].sstride[1] },
				.size = { c[i].size[0], c[i].size[1], c[i].size[2] },
				.flags = dir ? NPU_TDMA_TO_MEM : 0,
			};
			struct prog p = { .n = 0 };
			char what[80];
			uint32_t start = rnd();

			rnd_bytes(imgs[0], DESC_AT);
			memset(imgs[0] + DESC_AT, 0, IMG - DESC_AT);
			memcpy(imgs[0] + BAR_AT, &start, 4);
			put_desc(0, 0, &d);
			rnd_bytes(mem_host, sizeof(mem_host));
			step(&p, TP_DMA, 0, DESC_AT, 0);
			step(&p, TP_WAIT, BAR_AT / 8 - 1, BAR_AT, start + 1);
			snprintf(what, sizeof(what), "%s, %s", c[i].name,
				 dir ? "to memory" : "to scratchpad");
			good = dma_as_ref(&p, what);
		}
	}
	ok(good, "TDMA: 1-D, 2-D and 3-D copies both ways (unaligned, across "
	   "pages, overlapping destinations, stride 0, sizes 0) give the "
	   "reference's scratchpad and memory; TDMA.WAIT returns the count");

	/* six copies issued back to back (4 in flight at most), one wait */
	{
		struct prog p = { .n = 0 };

		rnd_bytes(imgs[0], DESC_AT);
		memset(imgs[0] + DESC_AT, 0, IMG - DESC_AT);
		rnd_bytes(mem_host, sizeof(mem_host));
		/* each from its own descriptor */
		for (unsigned k = 0; k < 6; k++) {
			struct npu_tdma_desc d = {
				.mem = mem_buf.va + 4096 * k + 8 * k,
				.scratch = NPU_LOCAL_SCRATCH + 256 * k,
				.barrier = NPU_LOCAL_SCRATCH + BAR_AT,
				.size = { 256 - 8 * k, 1, 1 },
				.flags = k % 2 ? NPU_TDMA_TO_MEM : 0,
			};

			if (k < 4)
				put_desc(0, k, &d);
			else
				memcpy(imgs[0] + 2048 + 64 * (k - 4), &d, sizeof(d));
			step(&p, TP_DMA, 0, k < 4 ? DESC_AT + 64 * k :
			     2048 + 64 * (k - 4), 0);
		}
		step(&p, TP_WAIT, BAR_AT / 8 - 1, BAR_AT, 6);
		ok(dma_as_ref(&p, "six copies"),
		   "TDMA: six copies in a row (four in flight at most) and one "
		   "TDMA.WAIT for all: scratchpad, memory and count as the "
		   "reference");
	}
}

/* Faults at TDMA.ISSUE, and a memory-side one at the copy's end. */
static void test_dma_faults(void)
{
	struct npu_tdma_desc base = {
		.mem = 0, .scratch = NPU_LOCAL_SCRATCH,
		.barrier = NPU_LOCAL_SCRATCH + BAR_AT,
		.size = { 64, 2, 1 }, .mem_stride = { 64, 0 },
		.scratch_stride = { 64, 0 },
	};
	struct dma_case {
		const char *name;
		struct npu_tdma_desc d;
		uint64_t desc_off;
	} c[8];
	unsigned n = 0;
	bool good = true;

	base.mem = mem_buf.va;
	c[n] = (struct dma_case){ "barrier misaligned", base, DESC_AT };
	c[n++].d.barrier += 4;
	c[n] = (struct dma_case){ "barrier outside", base, DESC_AT };
	c[n++].d.barrier = NPU_LOCAL_SCRATCH + IMG;
	c[n] = (struct dma_case){ "scratchpad row outside", base, DESC_AT };
	c[n++].d.scratch = NPU_LOCAL_SCRATCH + IMG - 100;
	c[n] = (struct dma_case){ "memory side at 2^39", base, DESC_AT };
	c[n++].d.mem = (1ull << 39) - 64;
	c[n] = (struct dma_case){ "memory side unmapped", base, DESC_AT };
	c[n++].d.mem = mem_buf.va + 64 * 1024 - 64;
	c[n] = (struct dma_case){ "descriptor misaligned", base, DESC_AT + 4 };
	n++;
	c[n] = (struct dma_case){ "descriptor outside", base, IMG - 32 };
	n++;
	for (unsigned i = 0; i < n; i++) {
		struct prog p = { .n = 0 };

		memset(imgs[0], 0, IMG);
		if (c[i].desc_off + sizeof(c[i].d) <= IMG)
			memcpy(imgs[0] + c[i].desc_off, &c[i].d, sizeof(c[i].d));
		memset(mem_host, 0, sizeof(mem_host));
		step(&p, TP_DMA, 0, c[i].desc_off, 0);
		step(&p, TP_WAIT, 0, BAR_AT, 1);
		good &= faults_as_ref(&p, c[i].name);
	}
	ok(good, "TDMA faults (barrier misaligned or outside, a scratchpad "
	   "row outside, the memory side at 2^39 or unmapped at the copy's "
	   "end): ERROR and FAULT as the reference, FAULT_PC in the kernel");

	{
		/* BAD_ARGS: FAULT is the TDMA.ISSUE's PC */
		struct prog p = { .n = 0 };
		struct npu_tdma_desc d = base;
		struct launch l = {
			.block = { 1 }, .scratch = IMG, .stack = 256, .nargs = 4,
			.args = { prog_buf.va, 1, img_buf.va, IMG },
		};
		struct pk pk = { .n = 0 };
		bool g;

		d.flags = 2;
		memset(imgs[0], 0, IMG);
		memcpy(imgs[0] + DESC_AT, &d, sizeof(d));
		step(&p, TP_DMA, 0, DESC_AT, 0);
		buf_write(&prog_buf, 0, p.s, sizeof(p.s[0]));
		buf_write(&img_buf, 0, imgs, IMG);
		pk_launch_code(&pk, &l);
		ring_submit(0, &pk);
		g = expect_error(0, NPU_ERR_BAD_ARGS, ~0ull, ~0u) &&
		    rrd64(0, NPU_RING_FAULT_LO) == rrd64(0, NPU_RING_FAULT_PC_LO);
		ring_resume(0);
		ok(g, "TDMA flags with an unknown bit: BAD_ARGS, FAULT = FAULT_PC");
	}
}

/*
 * A TDMA.WAIT that no copy releases waits (not a fault) until a ring
 * reset; the ring then runs the next launch.
 */
static void test_dma_wait_forever(void)
{
	struct prog p = { .n = 0 };
	struct pk pk = { .n = 0 };
	struct launch l = {
		.block = { 1 }, .scratch = IMG, .stack = 256, .nargs = 4,
		.args = { prog_buf.va, 1, img_buf.va, IMG },
	};
	uint32_t st;
	bool done;

	{
		/* one copy in flight (from host memory: 857 cycles), waited
		 * for twice over */
		struct npu_tdma_desc d = {
			.mem = mem_buf.va, .scratch = NPU_LOCAL_SCRATCH,
			.barrier = NPU_LOCAL_SCRATCH + BAR_AT,
			.size = { 64, 1, 1 },
		};

		memset(imgs[0], 0, IMG);
		put_desc(0, 0, &d);
	}
	step(&p, TP_DMA, 0, DESC_AT, 0);
	step(&p, TP_WAIT, 0, BAR_AT, 2);
	l.args[1] = p.n;
	buf_write(&prog_buf, 0, p.s, p.n * sizeof(p.s[0]));
	buf_write(&img_buf, 0, imgs, IMG);
	pk_launch_code(&pk, &l);
	done = ring_run(0, &pk, 1000);
	st = rrd(0, NPU_RING_STATUS);
	ok(!done && !(st & NPU_RING_STS_HALTED),
	   "TDMA.WAIT for a count its one copy does not bring: still waiting "
	   "after 1 s, no fault (status 0x%x)", st);
	ring_reset(0);
	p.n = 0;
	memset(imgs[0], 0x11, IMG);
	set_images(1);
	step(&p, TP_FILL, TP_SUB_FILL(0, NPU_TILE_E32), 0, 7);
	step(&p, TP_STORE, TP_SUB_MEM(0, NPU_TILE_E32), 0, 64);
	ok(same_as_ref(&p, 1, "after the reset"),
	   "after a ring reset the ring runs the next launch");
}

/*
 * Two blocks of one launch, each copying into and out of its own
 * scratchpad: each sees only its own bytes; a copy to a scratchpad
 * address past its block's is CU_LOCAL_RANGE, not the other block's.
 */
static void test_dma_isolation(void)
{
	struct prog p = { .n = 0 };
	bool good = true;

	rnd_bytes(mem_host, sizeof(mem_host));
	buf_write(&mem_buf, 0, mem_host, sizeof(mem_host));
	for (unsigned b = 0; b < 2; b++) {
		struct npu_tdma_desc d = {
			.mem = mem_buf.va + 8192 * b,
			.scratch = NPU_LOCAL_SCRATCH,
			.barrier = NPU_LOCAL_SCRATCH + BAR_AT,
			.size = { 2048, 1, 1 },
		};

		memset(imgs[b], 0, IMG);
		put_desc(b, 0, &d);
	}
	step(&p, TP_DMA, 0, DESC_AT, 0);
	step(&p, TP_WAIT, BAR_AT / 8 - 1, BAR_AT, 1);
	nblocks = 2;
	if (!dev_prog(&p, 1, NULL)) {
		diag("two blocks: launch did not complete");
		ring_reset(0);
		good = false;
	}
	nblocks = 1;
	for (unsigned b = 0; b < 2 && good; b++)
		for (unsigned i = 0; i < 2048 && good; i++)
			if (imgs[b][i] != mem_host[8192 * b + i]) {
				diag("block %u: scratchpad +0x%x 0x%02x, memory "
				     "0x%02x", b, i, imgs[b][i],
				     mem_host[8192 * b + i]);
				good = false;
			}
	ok(good, "two blocks copy into their own scratchpads at the same "
	   "address: each holds its own memory's bytes");
}

/*
 * A block may end with copies in flight: a copy to memory the kernel
 * never waits for lands, and a memory-side fault of one it never waits
 * for is still reported.
 */
static void test_dma_at_block_end(void)
{
	struct npu_tdma_desc d = {
		.mem = mem_buf.va + 8192, .scratch = NPU_LOCAL_SCRATCH,
		.barrier = NPU_LOCAL_SCRATCH + BAR_AT,
		.size = { 1000, 1, 1 }, .flags = NPU_TDMA_TO_MEM,
	};
	struct prog p = { .n = 0 };
	uint8_t got[1000];
	bool done;

	rnd_bytes(imgs[0], IMG);
	put_desc(0, 0, &d);
	memset(mem_host, 0, sizeof(mem_host));
	buf_write(&mem_buf, 0, mem_host, sizeof(mem_host));
	step(&p, TP_DMA, 0, DESC_AT, 0);
	done = dev_prog(&p, 1, NULL);
	buf_read(&mem_buf, 8192, got, sizeof(got));
	ok(done && !memcmp(got, imgs[0], sizeof(got)),
	   "a copy to memory the block never waits for completes");

	d.mem = mem_buf.va + 64 * 1024 - 500;	/* runs off the mapping */
	d.flags = 0;
	memset(imgs[0], 0, IMG);
	put_desc(0, 0, &d);
	ok(faults_as_ref(&p, "unwaited fault"),
	   "a memory-side fault of a copy the block never waits for ends the "
	   "launch (MMU_FAULT at the first unmapped byte)");
}

/*
 * The instruction trace: a TLOAD's or TSTORE's record has the tile's
 * address, a TDMA.ISSUE's the descriptor's, a TDMA.WAIT's the barrier
 * word's.
 */
static void test_itrace(void)
{
	struct npu_tdma_desc d = {
		.mem = mem_buf.va, .scratch = NPU_LOCAL_SCRATCH + 256,
		.barrier = NPU_LOCAL_SCRATCH + BAR_AT, .size = { 64, 1, 1 },
	};
	const uint32_t tbytes = 1u << 20;
	struct buf tb = alloc_buf(tbytes, 1, 1);
	struct launch l = {
		.block = { 1 }, .scratch = IMG, .stack = 256,
		.flags = NPU_CODE_ITRACE, .trace_block = 0,
		.trace = tb.va, .trace_bytes = tbytes, .nargs = 4,
		.args = { prog_buf.va, 0, img_buf.va, IMG },
	};
	struct prog p = { .n = 0 };
	struct npu_cu_trace_header h;
	struct npu_cu_trace_record *rec = malloc(tbytes);
	unsigned seen = 0, right = 0;
	struct pk pk = { .n = 0 };
	bool done;

	memset(imgs[0], 0, IMG);
	put_desc(0, 0, &d);
	step(&p, TP_LOAD, TP_SUB_MEM(0, NPU_TILE_E8), 512, 16);
	step(&p, TP_STORE, TP_SUB_MEM(0, NPU_TILE_E16), 1024, 32);
	step(&p, TP_DMA, 0, DESC_AT, 0);
	step(&p, TP_WAIT, 0, BAR_AT, 1);
	l.args[1] = p.n;
	buf_write(&prog_buf, 0, p.s, p.n * sizeof(p.s[0]));
	buf_write(&img_buf, 0, imgs[0], IMG);
	pk_launch_code(&pk, &l);
	done = ring_run(0, &pk, 30000);
	if (!done) {
		diag("itrace: the launch did not complete (error %u)",
		     rrd(0, NPU_RING_ERROR));
		ring_reset(0);
	}
	buf_read(&tb, 0, &h, sizeof(h));
	if (done && !h.lost && h.records * sizeof(*rec) <= tbytes - sizeof(h))
		buf_read(&tb, sizeof(h), rec, h.records * sizeof(*rec));
	else
		h.records = 0;
	for (uint64_t k = 0; k < h.records; k++) {
		uint32_t w = rec[k].insn, f3 = (w >> 12) & 7;
		uint64_t want;

		if (rec[k].kind != NPU_CU_TRACE_INSN ||
		    ((w & 0x7f) != NPU_OPC_TENSOR && (w & 0x7f) != NPU_OPC_TDMA))
			continue;
		seen++;
		if ((w & 0x7f) == NPU_OPC_TENSOR)
			want = NPU_LOCAL_SCRATCH + (f3 == NPU_TENSOR_TLOAD ? 512 : 1024);
		else
			want = NPU_LOCAL_SCRATCH + (f3 == NPU_TDMA_ISSUE ? DESC_AT
								  : BAR_AT);
		if (rec[k].addr == want)
			right++;
		else
			diag("trace: insn 0x%08x addr 0x%llx, want 0x%llx", w,
			     (unsigned long long)rec[k].addr,
			     (unsigned long long)want);
	}
	ok(done && seen == 4 && right == 4, "instruction trace: TLOAD, TSTORE, "
	   "TDMA.ISSUE and TDMA.WAIT records carry the tile's, descriptor's "
	   "and barrier word's addresses (%u of %u)", right, seen);
	free(rec);
}

/* ------------------------------------------------------------ timing */

/*
 * The cycle model's tensor timing against hand-computed cases (npu.rst,
 * "Tensor timing and counters"), from one rdcycle to the next (rdcycle
 * at c0, the first instruction issues at c0 + 1):
 *   TMMA f32 at +1; the next TMMA f32 into the same accumulator when the
 *   pipe is free, +65; TSTORE of it when it is ready, +65 + 68 = +133;
 *   rdcycle at +134.
 *   TMMA f32 at +1, TMMA f16 into it waits for the result: +69; TSTORE
 *   at +69 + 20 = +89; rdcycle +90.
 *   TLOAD at +1, TLOAD at +17 (the tile port, 64 bytes a cycle: 16 for
 *   an e32 tile); TMMA f16 at +17 + 20 = +37; rdcycle +38. The same with
 *   e16 tiles (8 cycles each): TLOAD at +1, +9, TMMA at +9 + 12 = +21;
 *   rdcycle +22.
 *   TDMA.ISSUE of 256 aligned bytes (8 sectors, one a cycle) at +1: the
 *   last sector at +8, complete 120 later, +128, when TDMA.WAIT issues;
 *   rdcycle +129.
 *   The same from host memory (4000 MB/s: 8 cycles a sector): the last
 *   sector at +1 + 7 * 8 = +57, complete 800 later, +857; rdcycle +858.
 *   Two such copies from device memory, issued at +1 and +2, of other
 *   lines: the second starts when the first sent its last sector (+8),
 *   its first sector in the next slot, +9, its last at +16, complete
 *   +136; rdcycle +137. Of the same lines: the L2 serves the second copy
 *   (the first brought its two lines in), four sectors a cycle from +8:
 *   its last at +9, complete +129; rdcycle +130.
 *   TDMA.ISSUE of 256 bytes to device memory: the L2 takes its 8
 *   sectors in, four a cycle, from +1: the last at +2, complete +122;
 *   rdcycle +123 (the write-back is not waited for).
 *   TEW EXP at +1 (64 cycles), TEW ADD into another tile when the pipe
 *   is free, +65 (16); TSTORE of its result at +65 + 20 = +85; rdcycle
 *   +86. (ADD into EXP's tile would wait for it: a write waits for an
 *   older write of its tile.)
 *   TMMA s8 three times into one accumulator, 8 cycles each: +1, +9,
 *   +17; TSTORE at +17 + 12 = +29; rdcycle +30.
 */
static void test_timing(void)
{
	/* the thread's cycles between the two rdcycles by stall reason */
	static const struct {
		unsigned mode;
		uint64_t want;
		const char *what;
		unsigned why[NPU_STALL_MIO_THROTTLE + 1];
		bool host;		/* the copy's memory side */
		/* struct npu_launch_stats_tensor of the launch: tensor_cycles,
		 * mma[f16, bf16, f32, s8, s32], copies, bytes read */
		uint64_t busy, mma[NPU_MMA_TYPES], copies, bytes;
		bool other_lines;	/* the second copy reads other lines */
		bool to_mem;		/* TP_TIME_DMA: scratchpad to memory */
		uint64_t l2;		/* sectors the L2 served */
	} c[] = {
		{ TP_TIME_MMA_ACC, 134, "two TMMA f32 back to back, TSTORE",
		  { [NPU_STALL_SELECTED] = 3,
		    [NPU_STALL_MATH_PIPE_THROTTLE] = 63,
		    [NPU_STALL_WAIT] = 67 }, false, 128, { 0, 0, 2, 0, 0 }, 0, 0,
		  false, false, 0 },
		{ TP_TIME_MMA_TYPES, 90, "TMMA f32 then f16 into it, TSTORE",
		  { [NPU_STALL_SELECTED] = 3, [NPU_STALL_WAIT] = 67 + 19 }, false, 80, { 1, 0, 1, 0, 0 }, 0, 0,
		  false, false, 0 },
		{ TP_TIME_PORT, 38, "TLOAD, TLOAD, TMMA f16",
		  { [NPU_STALL_SELECTED] = 3, [NPU_STALL_MIO_THROTTLE] = 15,
		    [NPU_STALL_SHORT_SCOREBOARD] = 19 }, false, 16, { 1, 0, 0, 0, 0 }, 0, 0,
		  false, false, 0 },
		{ TP_TIME_PORT16, 22, "TLOAD e16, TLOAD e16, TMMA f16",
		  { [NPU_STALL_SELECTED] = 3, [NPU_STALL_MIO_THROTTLE] = 7,
		    [NPU_STALL_SHORT_SCOREBOARD] = 11 }, false, 16,
		  { 1, 0, 0, 0, 0 }, 0, 0, false, false, 0 },
		{ TP_TIME_DMA, 129, "TDMA.ISSUE of 8 sectors, TDMA.WAIT",
		  { [NPU_STALL_SELECTED] = 2,
		    [NPU_STALL_LONG_SCOREBOARD] = 126 }, false, 0, { 0 }, 1, 256,
		  false, false, 0 },
		{ TP_TIME_DMA, 123, "TDMA.ISSUE of 8 sectors to device memory, "
		  "TDMA.WAIT: the L2 takes the write",
		  { [NPU_STALL_SELECTED] = 2,
		    [NPU_STALL_LONG_SCOREBOARD] = 120 }, false, 0, { 0 }, 1, 0,
		  false, true, 0 },
		{ TP_TIME_DMA, 858, "the same from host memory",
		  { [NPU_STALL_SELECTED] = 2,
		    [NPU_STALL_LONG_SCOREBOARD] = 855 }, true, 0, { 0 }, 1, 256,
		  false, false, 0 },
		{ TP_TIME_DMA2, 137, "two copies of 8 sectors, TDMA.WAIT 2",
		  { [NPU_STALL_SELECTED] = 3,
		    [NPU_STALL_LONG_SCOREBOARD] = 133 }, false, 0, { 0 }, 2, 512,
		  true, false, 0 },
		{ TP_TIME_DMA2, 130, "the same 8 sectors twice: the L2 serves "
		  "the second copy",
		  { [NPU_STALL_SELECTED] = 3,
		    [NPU_STALL_LONG_SCOREBOARD] = 126 }, false, 0, { 0 }, 2, 512,
		  false, false, 8 },
		{ TP_TIME_TEW, 86, "TEW EXP, TEW ADD, TSTORE",
		  { [NPU_STALL_SELECTED] = 3,
		    [NPU_STALL_MATH_PIPE_THROTTLE] = 63,
		    [NPU_STALL_WAIT] = 19 }, false, 80, { 0 }, 0, 0,
		  false, false, 0 },
		{ TP_TIME_S8, 30, "three TMMA s8 back to back, TSTORE",
		  { [NPU_STALL_SELECTED] = 4,
		    [NPU_STALL_MATH_PIPE_THROTTLE] = 14,
		    [NPU_STALL_WAIT] = 11 }, false, 24, { 0, 0, 0, 3, 0 }, 0, 0,
		  false, false, 0 },
	};
	const uint32_t tbytes = 4u << 20;
	struct buf tb = alloc_buf(tbytes, 1, 1);
	struct buf hostmem = alloc_buf(4096, 0, 1);
	struct npu_cu_trace_record *rec = malloc(tbytes);

	for (unsigned i = 0; i < NELEM(c); i++) {
		struct prog p = { .n = 0 };
		struct npu_tdma_desc d = {
			.mem = mem_buf.va, .scratch = NPU_LOCAL_SCRATCH,
			.barrier = NPU_LOCAL_SCRATCH + 1024 + 64,
			.size = { 256, 1, 1 },
		};
		struct launch l = {
			.block = { 1 }, .scratch = IMG, .stack = 256,
			.trace = tb.va, .trace_bytes = tbytes,
			.sample_period = 1, .nargs = 4,
			.flags = NPU_CODE_STATS_TENSOR, .stats = stats_buf.va,
			/* only what the sequences use goes in and out */
			.args = { prog_buf.va, 1, img_buf.va, 2304 },
		};
		struct npu_cu_trace_header h;
		struct pk pk = { .n = 0 };
		unsigned why[NPU_STALL_MIO_THROTTLE + 1] = { 0 };
		uint64_t got[2];
		bool done, same = true;

		memset(imgs[0], 0, IMG);
		if (c[i].host)
			d.mem = hostmem.va;
		if (c[i].to_mem)
			d.flags = NPU_TDMA_TO_MEM;
		memcpy(imgs[0] + 1024, &d, sizeof(d));
		d.scratch += 256;
		if (c[i].other_lines)
			d.mem += 256;
		memcpy(imgs[0] + 1024 + 128, &d, sizeof(d));
		step(&p, TP_TIMING, c[i].mode, 2048, 1024);
		buf_write(&prog_buf, 0, p.s, sizeof(p.s[0]));
		buf_write(&img_buf, 0, imgs[0], 2304);
		pk_launch_code(&pk, &l);
		done = ring_run(0, &pk, 30000);
		buf_read(&img_buf, 2048, got, sizeof(got));
		ok(done && got[0] == c[i].want, "timing: %s: %llu cycles (want "
		   "%llu)", c[i].what, (unsigned long long)got[0],
		   (unsigned long long)c[i].want);

		/* the PC samples of each cycle in between, by reason */
		buf_read(&tb, 0, &h, sizeof(h));
		if (!done || h.lost ||
		    h.records * sizeof(*rec) > tbytes - sizeof(h)) {
			ok(false, "timing: %s: trace of %llu records, %llu lost",
			   c[i].what, (unsigned long long)h.records,
			   (unsigned long long)h.lost);
			continue;
		}
		buf_read(&tb, sizeof(h), rec, h.records * sizeof(*rec));
		for (uint64_t k = 0; k < h.records; k++)
			if (rec[k].kind == NPU_CU_TRACE_SAMPLE &&
			    rec[k].cycle > got[1] &&
			    rec[k].cycle < got[1] + got[0] &&
			    rec[k].stall <= NPU_STALL_MIO_THROTTLE)
				why[rec[k].stall]++;
		for (unsigned w = 0; w <= NPU_STALL_MIO_THROTTLE; w++)
			if (why[w] != c[i].why[w]) {
				diag("%s: %u cycles of stall reason %u, want %u",
				     c[i].what, why[w], w, c[i].why[w]);
				same = false;
			}
		ok(same, "timing: %s: each cycle's PC sample has the spec's "
		   "stall reason", c[i].what);

		/* the launch's counters (only this sequence uses the engine) */
		{
			struct npu_launch_stats st;
			struct npu_launch_stats_tensor tn;
			uint64_t sum = 0;

			buf_read(&stats_buf, 0, &st, sizeof(st));
			buf_read(&stats_buf, sizeof(st), &tn, sizeof(tn));
			for (unsigned w = 0; w < NPU_STALL_COUNT; w++)
				sum += st.stall[w];
			same = sum + tn.stall_mio_throttle == st.thread_cycles &&
			       tn.stall_mio_throttle == c[i].why[NPU_STALL_MIO_THROTTLE] &&
			       tn.tensor_cycles == c[i].busy &&
			       !memcmp(tn.mma, c[i].mma, sizeof(tn.mma)) &&
			       tn.tdma_copies == c[i].copies &&
			       tn.tdma_bytes_read == c[i].bytes &&
			       tn.tdma_bytes_written == (c[i].to_mem ? 256 : 0) &&
			       tn.l2_hit_sectors == c[i].l2;
			if (!same)
				diag("%s: stalls %llu + mio %llu, thread-cycles "
				     "%llu; tensor %llu, mma %llu %llu %llu %llu "
				     "%llu, copies %llu, bytes %llu/%llu, L2 "
				     "%llu",
				     c[i].what, (unsigned long long)sum,
				     (unsigned long long)tn.stall_mio_throttle,
				     (unsigned long long)st.thread_cycles,
				     (unsigned long long)tn.tensor_cycles,
				     (unsigned long long)tn.mma[0],
				     (unsigned long long)tn.mma[1],
				     (unsigned long long)tn.mma[2],
				     (unsigned long long)tn.mma[3],
				     (unsigned long long)tn.mma[4],
				     (unsigned long long)tn.tdma_copies,
				     (unsigned long long)tn.tdma_bytes_read,
				     (unsigned long long)tn.tdma_bytes_written,
				     (unsigned long long)tn.l2_hit_sectors);
			ok(done && same, "timing: %s: NPU_CODE_STATS_TENSOR's "
			   "counters (tensor cycles, TMMAs by type, copies, "
			   "bytes, L2 sectors, MIO_THROTTLE completing the "
			   "stall sum)",
			   c[i].what);
		}
	}
	free(rec);
}

/* A fresh instance with the test's buffers and kernel. */
static void instance(const char *devopts)
{
	start(devopts, 0);
	prog_buf = alloc_buf(sizeof(((struct prog *)0)->s), 1, 0);
	img_buf = alloc_buf(MAX_THREADS * IMG, 1, 1);
	mem_buf = alloc_buf(64 * 1024, 1, 1);
	stats_buf = alloc_buf(4096, 1, 1);
	load_kernel("tensor_prog", 1);
	ref_mem = (struct npu_ref_mem){ mem_host, mem_buf.va, sizeof(mem_host) };
}

/*
 * A block does not end while a copy it issued is in flight: on one unit
 * with room for one block at a time, two blocks each issue a copy from
 * host memory (complete 857 cycles after its issue) that they never wait
 * for, and their threads end soon after. Block 1 starts when block 0's
 * copy has completed, and the launch ends when block 1's has: as both
 * blocks run the same program, block 1 starts as long after block 0 as
 * the launch ends after block 1 (block 1's start is its first rdcycle
 * less the copy-in that block 0 took before its own).
 */
static void test_block_drain(void)
{
	struct buf hostmem;
	struct prog p = { .n = 0 };
	struct npu_launch_stats st;
	struct pk pk = { .n = 0 };
	uint64_t cyc[2][2], copy_in, start1, end;
	struct launch l;
	bool done;

	instance("compute-units=1");
	hostmem = alloc_buf(4096, 0, 1);
	for (unsigned b = 0; b < 2; b++) {
		struct npu_tdma_desc d = {
			.mem = hostmem.va, .scratch = NPU_LOCAL_SCRATCH + 256,
			.barrier = NPU_LOCAL_SCRATCH + 64, .size = { 256, 1, 1 },
		};

		memset(imgs[b], 0, 128);
		memcpy(imgs[b], &d, sizeof(d));
	}
	step(&p, TP_CYCLE, 0, 80, 0);
	step(&p, TP_DMA, 0, 0, 0);
	step(&p, TP_CYCLE, 0, 88, 0);
	l = (struct launch){
		.grid = { 2 }, .block = { 1 }, .stack = 256,
		.scratch = 64 * 1024, .stats = stats_buf.va, .nargs = 4,
		.args = { prog_buf.va, p.n, img_buf.va, 128 },
	};
	buf_write(&prog_buf, 0, p.s, p.n * sizeof(p.s[0]));
	buf_write(&img_buf, 0, imgs[0], 128);
	buf_write(&img_buf, 128, imgs[1], 128);
	pk_launch_code(&pk, &l);
	done = ring_run(0, &pk, 30000);
	buf_read(&stats_buf, 0, &st, sizeof(st));
	for (unsigned b = 0; b < 2; b++)
		buf_read(&img_buf, 128 * b + 80, cyc[b], sizeof(cyc[b]));
	copy_in = cyc[0][0] - st.start_cycle;
	start1 = cyc[1][0] - copy_in;
	end = st.start_cycle + st.cycles;
	ok(done && start1 - st.start_cycle == end - start1 &&
	   start1 > cyc[0][1],
	   "a block whose thread ended holds its unit until its copy "
	   "completes: block 1 starts at %llu, %llu after block 0 (and after "
	   "block 0's last rdcycle, %llu); the launch ends %llu after it",
	   (unsigned long long)start1,
	   (unsigned long long)(start1 - st.start_cycle),
	   (unsigned long long)cyc[0][1], (unsigned long long)(end - start1));
	stop("one-unit instance");
}

/*
 * 16 threads contending for the tensor pipe, the tile port and the DMA
 * engine: the event-driven loop (cu-threads=16) gives the same cycles,
 * stalls, counts and results as the plain per-cycle loop, which a unit
 * with more than 64 thread slots takes (cu-threads=65).
 */
static void test_engines(void)
{
	static uint8_t first[MAX_THREADS][IMG];
	struct npu_launch_stats st[2];
	struct prog p = { .n = 0 };
	bool done[2], same = true;

	for (unsigned e = 0; e < 2; e++) {
		instance(e ? "cu-threads=65" : NULL);
		rng_state = 12345;
		rnd_bytes(mem_host, sizeof(mem_host));
		buf_write(&mem_buf, 0, mem_host, sizeof(mem_host));
		for (unsigned k = 0; k < MAX_THREADS; k++) {
			struct npu_tdma_desc d = {
				.mem = mem_buf.va + 1024 * k,
				.scratch = NPU_LOCAL_SCRATCH + k * IMG + 2048,
				.barrier = NPU_LOCAL_SCRATCH + k * IMG + BAR_AT,
				.size = { 512 + 32 * k, 1, 1 },
			};

			fill_tile(imgs[k], NPU_MMA_F16, 2);
			fill_tile(imgs[k] + TILE_BYTES, NPU_MMA_F16, 2);
			memset(imgs[k] + 2 * TILE_BYTES, 0, 2 * TILE_BYTES);
			put_desc(k, 0, &d);
		}
		p.n = 0;
		load_abc(&p);
		step(&p, TP_DMA, 0, DESC_AT, 0);
		step(&p, TP_MMA, TP_SUB_MMA(NPU_MMA_F16, 0), 0, 0);
		step(&p, TP_MMA, TP_SUB_MMA(NPU_MMA_F16, 0), 0, 0);
		step(&p, TP_TEW, TP_SUB_TEW(NPU_TEW_EXP, 0), 0, 0);
		step(&p, TP_MMA, TP_SUB_MMA(NPU_MMA_S8, 2), 0, 0);
		step(&p, TP_STORE, TP_SUB_MEM(TP_D, NPU_TILE_E16), 0, 32);
		step(&p, TP_WAIT, BAR_AT / 8 - 1, BAR_AT, 1);
		step(&p, TP_STORE, TP_SUB_MEM(TP_C, NPU_TILE_E32), 1024, 64);
		done[e] = dev_prog(&p, MAX_THREADS, &st[e]);
		if (!e)
			memcpy(first, imgs, sizeof(first));
		else
			same = !memcmp(first, imgs, sizeof(first));
		stop("tensor engines instance");
	}
	if (!same || st[0].cycles != st[1].cycles ||
	    st[0].thread_cycles != st[1].thread_cycles ||
	    st[0].instructions != st[1].instructions ||
	    memcmp(st[0].stall, st[1].stall, sizeof(st[0].stall)))
		for (unsigned e = 0; e < 2; e++)
			diag("cu-threads %s: results %s, %llu cycles, %llu "
			     "thread-cycles, stalls %llu %llu %llu %llu %llu %llu",
			     e ? "65" : "16", same ? "same" : "differ",
			     (unsigned long long)st[e].cycles,
			     (unsigned long long)st[e].thread_cycles,
			     (unsigned long long)st[e].stall[0],
			     (unsigned long long)st[e].stall[2],
			     (unsigned long long)st[e].stall[3],
			     (unsigned long long)st[e].stall[4],
			     (unsigned long long)st[e].stall[5],
			     (unsigned long long)st[e].stall[6]);
	ok(done[0] && done[1] && same && st[0].cycles == st[1].cycles &&
	   st[0].thread_cycles == st[1].thread_cycles &&
	   st[0].instructions == st[1].instructions &&
	   !memcmp(st[0].stall, st[1].stall, sizeof(st[0].stall)),
	   "16 threads sharing the tensor pipe, tile port and DMA engine: the "
	   "event-driven loop and the per-cycle loop agree (%llu cycles)",
	   (unsigned long long)st[0].cycles);
}

static void run_all(void)
{
	instance(NULL);
	ok((rd(NPU_REG_FEATURES) & NPU_FEATURE_TENSOR) != 0,
	   "FEATURES has NPU_FEATURE_TENSOR");
	test_mma();
	test_tew();
	test_load_store();
	test_stats_unasked();
	test_tile_faults();
	test_encodings();
	test_dma_shapes();
	test_dma_faults();
	test_dma_isolation();
	test_dma_at_block_end();
	test_itrace();
	test_timing();
	test_dma_wait_forever();
	stop("tensor instance");
	test_block_drain();
	test_engines();
}

int main(int argc, char **argv)
{
	return devtest_main(argc, argv, run_all);
}
