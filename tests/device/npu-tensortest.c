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
static int ref_prog(const struct prog *p, uint8_t *img, uint64_t size,
		    uint64_t *fault)
{
	static const struct npu_ref_tile zero;
	struct npu_ref_tile t[NPU_TILE_REGS];
	struct npu_ref_scratch sc = { img, size };
	int err = NPU_ERR_NONE;

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
static bool dev_prog(const struct prog *p, unsigned nthr,
		     struct npu_launch_stats *st)
{
	struct launch l = {
		.block = { nthr }, .scratch = nthr * IMG, .stack = 256,
		.stats = stats_buf.va, .nargs = 4,
		.args = { prog_buf.va, p->n, img_buf.va, IMG },
	};
	struct pk pk = { .n = 0 };
	bool done;

	buf_write(&prog_buf, 0, p->s, p->n * sizeof(p->s[0]));
	buf_write(&img_buf, 0, imgs, nthr * IMG);
	pk_launch_code(&pk, &l);
	done = ring_run(0, &pk, 30000);
	if (done) {
		buf_read(&img_buf, 0, imgs, nthr * IMG);
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

					memcpy(&v, at + 4 * i, 4);
					/* npu_ref_exp_f32 aborts where expl()
					 * overflows (x > 11356): keep below */
					if (op == NPU_TEW_EXP &&
					    npu_bits_f32(v) > 1e4f &&
					    npu_bits_f32(v) < INFINITY) {
						v = exp_edges[0];
						memcpy(at + 4 * i, &v, 4);
					}
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

static void run_all(void)
{
	start(NULL, 0);
	prog_buf = alloc_buf(sizeof(((struct prog *)0)->s), 1, 0);
	img_buf = alloc_buf(MAX_THREADS * IMG, 1, 1);
	mem_buf = alloc_buf(64 * 1024, 1, 1);
	stats_buf = alloc_buf(4096, 1, 1);
	load_kernel("tensor_prog", 1);
	ok((rd(NPU_REG_FEATURES) & NPU_FEATURE_TENSOR) != 0,
	   "FEATURES has NPU_FEATURE_TENSOR");
	test_mma();
	test_tew();
	test_load_store();
	stop("tensor instance");
}

int main(int argc, char **argv)
{
	return devtest_main(argc, argv, run_all);
}
