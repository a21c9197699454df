/* SPDX-License-Identifier: MIT */
/*
 * npu_module.h - loaded code objects and their kernels (npu_module.c),
 * shared with user-kernel launches (npu_ukernel.c) and device printf
 * (npu_printf.c).
 */
#ifndef NPU_MODULE_H
#define NPU_MODULE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "npu_code.h"
#include "npu_hw.h"
#include "npu_core.h"
#include "npu_internal.h"

struct npu_function {
	uint32_t magic;
	struct npu_module *mod;
	struct npu_code_desc desc;	/* as in the code object, checked */
	uint64_t entry_off;		/* entry, from the image's start */
	uint64_t entry;			/* ... its device address */
	unsigned stack_bytes;		/* per thread */
	unsigned max_threads;		/* largest block it can run */
	uint64_t scratch_room;		/* largest dynamic scratchpad */
	struct device *dev;		/* mod->dev, mod->uses_printf: */
	bool uses_printf;		/* ... read by every launch */
	/* log2 of argument i's size in bits 2i+1..2i: a launch loads one
	 * word, not a size per argument */
	uint32_t arg_log2;
	/* its LAUNCH_CODE_SHORT packet without grid, block, scratchpad and
	 * arguments: a launch copies it and fills those in */
	struct npu_pkt_launch_code_short packet;
};

struct npu_module {
	uint32_t magic;
	struct npu_module *next;	/* every loaded module (mod_lock) */
	struct device *dev;
	char name[128];			/* file name, or "(memory)" */
	void *file;			/* the code object as given */
	size_t file_size;
	uint8_t *image;			/* relocated image, host copy */
	uint64_t base;			/* its device address (npu_malloc) */
	uint64_t size;
	bool uses_printf;
	void *elf, *dwarf;		/* Elf * and Dwarf * of file, opened on
					   first use (mod_lock) */
	/* npu_module_line's answers by PC, direct-mapped (mod_lock): a
	 * profile looks up the same few PCs for thousands of samples */
	struct line_memo {
		uint64_t pc;		/* 0: empty */
		char text[96];
	} *line_memo;
	unsigned nfuncs;
	struct npu_function *funcs;
	/* kernel nodes of graphs and executable graphs that name one of its
	 * kernels (mod_lock): while any, npu_module_unload() refuses */
	unsigned users;
};

/* A user-kernel launch runs the inline functions below so that its path
 * makes no call a built-in launch (npu_launch) does not make: under TCG
 * each call, struct copy and memcpy is a measurable part of a launch. */

/* The thread's last valid function, valid while no module was unloaded
 * (npu_mod_gen): launching one kernel again and again takes no lock. */
extern __thread npu_function_t npu_last_function
	__attribute__((tls_model("initial-exec")));
extern __thread unsigned npu_last_function_gen
	__attribute__((tls_model("initial-exec")));
extern atomic_uint npu_mod_gen;
npu_status_t npu_function_check_slow(npu_function_t f);

static inline npu_status_t npu_function_check(npu_function_t f)
{
	if (f && f == npu_last_function &&
	    npu_last_function_gen ==
	    atomic_load_explicit(&npu_mod_gen, memory_order_acquire))
		return NPU_SUCCESS;
	return npu_function_check_slow(f);
}

/* A graph or executable-graph node names f: its module stays loaded
 * until the node lets go (npu_function_release). INVALID_HANDLE (error
 * set) if f is not a function of a loaded module. */
npu_status_t npu_function_hold(npu_function_t f);
void npu_function_release(npu_function_t f);

/* npu_module_load_data() of an image called what in messages (the
 * library's own code objects) */
npu_status_t npu_module_load_named(npu_module_t *module, const void *image,
				   size_t size, const char *what);
bool npu_module_string(uint64_t va, char *buf, size_t n);
void npu_module_line(uint64_t pc, char *buf, size_t n);
bool npu_module_kernel_name(uint64_t entry, char *buf, size_t n);

/* What is wrong with a launch's configuration / arguments (the error is
 * set); the inline functions below call them only when something is. */
npu_status_t npu_ukernel_check(npu_function_t f, npu_dim3 grid, npu_dim3 block,
			       uint64_t scratch_bytes);
npu_status_t npu_ukernel_args_fail(npu_function_t f, void **args);

/* Load an argument of size 1 << log2 (the low two bits) from a. */
static inline __attribute__((always_inline)) uint64_t
npu_ukernel_arg(const void *a, uint32_t log2)
{
	/* typed loads: the loader accepts sizes 1, 2, 4 and 8 only; pointers,
	 * the commonest, first */
	switch (log2 & 3) {
	case 3:
		return *(const uint64_t *)a;
	case 2:
		return *(const uint32_t *)a;
	case 1:
		return *(const uint16_t *)a;
	default:
		return *(const uint8_t *)a;
	}
}

/* Pack the arguments (checked by npu_ukernel_prepare) into words. */
static inline __attribute__((always_inline)) void
npu_ukernel_pack(npu_function_t f, void **args, uint64_t *words)
{
	uint32_t log2 = f->arg_log2;
	unsigned i;

	for (i = 0; i < f->desc.nargs; i++, log2 >>= 2)
		words[i] = npu_ukernel_arg(args[i], log2);
}

/* Whether a valid f can run this configuration (no error set). */
static inline __attribute__((always_inline)) bool
npu_ukernel_config_ok(npu_function_t f, npu_dim3 grid, npu_dim3 block,
		      uint64_t scratch_bytes)
{
	uint64_t threads = (uint64_t)block.x * block.y * block.z;

	return grid.x && grid.y && grid.z && threads &&
	       threads <= f->max_threads &&
	       (uint64_t)grid.x * grid.y * grid.z <= UINT32_MAX &&
	       scratch_bytes <= f->scratch_room;
}

/* Check the function handle and the configuration (the error is set). */
static inline __attribute__((always_inline)) npu_status_t
npu_ukernel_config(npu_function_t f, npu_dim3 grid, npu_dim3 block,
		   uint64_t scratch_bytes)
{
	npu_status_t st = npu_function_check(f);

	if (st)
		return st;
	/* the common case inline; npu_ukernel_check() says what is wrong */
	if (!npu_ukernel_config_ok(f, grid, block, scratch_bytes))
		return npu_ukernel_check(f, grid, block, scratch_bytes);
	return NPU_SUCCESS;
}

/* Check all three: the function handle, the configuration, the
 * arguments (args[i] points to argument i; the error is set). */
static inline __attribute__((always_inline)) npu_status_t
npu_ukernel_prepare(npu_function_t f, npu_dim3 grid, npu_dim3 block,
		    uint64_t scratch_bytes, void **args)
{
	npu_status_t st = npu_ukernel_config(f, grid, block, scratch_bytes);
	unsigned i;

	if (st)
		return st;
	if (f->desc.nargs && !args)
		return npu_ukernel_args_fail(f, args);
	for (i = 0; i < f->desc.nargs; i++)
		if (!args[i])
			return npu_ukernel_args_fail(f, args);
	return NPU_SUCCESS;
}

/* Write f's launch packet with its arguments packed in words (the full
 * LAUNCH_CODE with extra's printf, statistics and trace fields) with w
 * (npu_cmd.h). Returns 0 or -ENOSPC. */
static inline __attribute__((always_inline)) int
npu_ukernel_packet(struct npu_cmdw *w, npu_function_t f, npu_dim3 grid,
		   npu_dim3 block, uint64_t scratch_bytes, const uint64_t *words,
		   const struct npu_pkt_launch_code *extra)
{
	const uint32_t g[3] = { grid.x, grid.y, grid.z };
	const uint32_t b[3] = { block.x, block.y, block.z };
	uint64_t *a = npu_cmd_launch_code(w, extra, f->entry, f->desc.nargs, g, b,
					  (uint32_t)(f->desc.scratch_bytes +
						     scratch_bytes),
					  f->stack_bytes);

	if (!a)
		return -ENOSPC;
	memcpy(a, words, 8 * f->desc.nargs);
	return 0;
}

/* Queue a launch checked by npu_ukernel_config as one job on s's compute
 * queue (dev->lock held); the arguments (args is not NULL if f takes any)
 * go straight into the packet: a short one unless extra (printf,
 * statistics, trace) is given. A NULL args[i] queues nothing. */
static inline __attribute__((always_inline)) npu_status_t
npu_ukernel_submit(struct device *dev, struct npu_stream *s, npu_function_t f,
		   npu_dim3 grid, npu_dim3 block, uint64_t scratch_bytes,
		   void **args, const struct npu_pkt_launch_code *extra,
		   uint64_t *point)
{
	unsigned nargs = f->desc.nargs, i;
	uint32_t log2 = f->arg_log2;
	uint32_t bytes = extra ? NPU_CMD_LAUNCH_CODE_BYTES(nargs) :
			 NPU_CMD_LAUNCH_CODE_SHORT_BYTES(nargs);
	const uint32_t g[3] = { grid.x, grid.y, grid.z };
	const uint32_t b[3] = { block.x, block.y, block.z };
	uint32_t scratch = (uint32_t)(f->desc.scratch_bytes + scratch_bytes);
	uint64_t *words;
	struct jobctx jc;
	npu_status_t st = npu_job_begin(dev, s, bytes, &jc);

	if (st)
		return st;
	jc.entry = f->entry;	/* a fault names the launched kernel */
	if (extra)
		words = npu_cmd_launch_code(&jc.w, extra, f->entry, nargs, g, b,
					    scratch, f->stack_bytes);
	else
		words = npu_cmd_launch_code_short(&jc.w, &f->packet, g, b,
						  scratch);
	if (__builtin_expect(!words, 0)) {	/* npu_job_begin made room */
		npu_job_abort(&jc);
		return npu_fail(NPU_ERROR_INVALID_VALUE, "command buffer full");
	}
	/* the arguments are checked as they are packed: one pass */
	for (i = 0; i < nargs; i++, log2 >>= 2) {
		const void *a = args[i];

		if (__builtin_expect(!a, 0)) {
			npu_job_abort(&jc);
			return npu_ukernel_args_fail(f, args);
		}
		words[i] = npu_ukernel_arg(a, log2);
	}
	return npu_job_submit(dev, &jc, Q_COMPUTE, NULL, 0, point);
}

/* npu_ukernel_submit's fast path on a user-queue stream: the short packet
 * straight into the stream's ring under s->lock alone (npu_uq_fast_begin).
 * false: not taken (nothing written, no error set), else *st is the
 * launch's status. */
static inline __attribute__((always_inline)) bool
npu_ukernel_fast(struct device *dev, struct npu_stream *s, npu_function_t f,
		 npu_dim3 grid, npu_dim3 block, uint64_t scratch_bytes,
		 void **args, npu_status_t *st)
{
	unsigned nargs = f->desc.nargs, i;
	uint32_t log2 = f->arg_log2;
	const uint32_t g[3] = { grid.x, grid.y, grid.z };
	const uint32_t b[3] = { block.x, block.y, block.z };
	uint64_t *words;
	struct uq_fast fq;

	if (!npu_uq_fast_begin(dev, s, Q_COMPUTE,
			       NPU_CMD_LAUNCH_CODE_SHORT_BYTES(nargs), &fq))
		return false;
	words = npu_cmd_launch_code_short(&fq.w, &f->packet, g, b,
					  (uint32_t)(f->desc.scratch_bytes +
						     scratch_bytes));
	for (i = 0; words && i < nargs; i++, log2 >>= 2) {
		const void *a = args[i];

		if (__builtin_expect(!a, 0)) {
			npu_uq_fast_abort(&fq);
			*st = npu_ukernel_args_fail(f, args);
			return true;
		}
		words[i] = npu_ukernel_arg(a, log2);
	}
	if (__builtin_expect(!words, 0)) {	/* fast_begin made room */
		npu_uq_fast_abort(&fq);
		*st = npu_fail(NPU_ERROR_INVALID_VALUE, "user queue full");
		return true;
	}
	*st = npu_uq_fast_end(dev, &fq);
	return true;
}

/* The per-launch buffers of one launch of a user kernel (dev->lock held):
 * a device printf buffer when its module calls printf (npu_printf.c), a
 * statistics and sample slot while the profiler runs (npu_kprofile.c; none
 * free: the launch goes unprofiled and is counted). Their addresses go
 * into extra's fields. Without a printf buffer a launch fails, unless
 * printless_ok (a graph launch with more printing nodes than buffers):
 * then it goes without one and *printless says so. Once the launch's
 * packet is queued, track them with the (timeline, point) that says it is
 * complete; else cancel them. */
struct ukernel_slots {
	int printf_slot;		/* -1: none */
	int profile_slot;		/* -1: none */
};
npu_status_t npu_ukernel_slots_take(struct device *dev, npu_function_t f,
				    npu_dim3 block, uint64_t scratch_bytes,
				    bool printless_ok,
				    struct npu_pkt_launch_code *extra,
				    struct ukernel_slots *sl, bool *printless);
void npu_ukernel_slots_track(struct device *dev, struct ukernel_slots *sl,
			     struct tl *tl, uint64_t point);
void npu_ukernel_slots_cancel(struct device *dev, struct ukernel_slots *sl);

#endif /* NPU_MODULE_H */
