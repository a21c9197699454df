/* SPDX-License-Identifier: MIT */
/*
 * npu_module.h - loaded code objects and their kernels (npu_module.c),
 * shared with user-kernel launches (npu_ukernel.c) and device printf
 * (npu_printf.c).
 */
#ifndef NPU_MODULE_H
#define NPU_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu_code.h"
#include "npu_hw.h"
#include "npu_internal.h"

struct npu_function {
	uint32_t magic;
	struct npu_module *mod;
	struct npu_code_desc desc;	/* as in the code object, checked */
	uint64_t entry_off;		/* entry, from the image's start */
	uint64_t entry;			/* ... its device address */
	unsigned stack_bytes;		/* per thread */
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
	unsigned nfuncs;
	struct npu_function *funcs;
};

npu_status_t npu_function_check(npu_function_t f);
unsigned npu_func_max_threads(npu_function_t f);
bool npu_module_string(uint64_t va, char *buf, size_t n);
void npu_module_line(uint64_t pc, char *buf, size_t n);
bool npu_module_kernel_name(uint64_t entry, char *buf, size_t n);

/* A launch of f: check its configuration (the error is set), pack its
 * arguments (args[i] points to argument i) into words[NPU_CODE_MAX_ARGS],
 * write its LAUNCH_CODE packet at cmd (extra: printf, statistics and trace
 * fields, or NULL) and return the packet's bytes. */
npu_status_t npu_ukernel_check(npu_function_t f, npu_dim3 grid, npu_dim3 block,
			       uint64_t scratch_bytes);
npu_status_t npu_ukernel_pack(npu_function_t f, void **args, uint64_t *words);
/* all three: the function handle, the configuration, the arguments */
npu_status_t npu_ukernel_prepare(npu_function_t f, npu_dim3 grid,
				 npu_dim3 block, uint64_t scratch_bytes,
				 void **args, uint64_t *words);
/* ... and queue it as one job on s's compute queue (dev->lock held) */
npu_status_t npu_ukernel_submit(struct device *dev, struct npu_stream *s,
				npu_function_t f, npu_dim3 grid, npu_dim3 block,
				uint64_t scratch_bytes, const uint64_t *words,
				const struct npu_pkt_launch_code *extra,
				uint64_t *point);
uint32_t npu_ukernel_packet(uint8_t *cmd, npu_function_t f, npu_dim3 grid,
			    npu_dim3 block, uint64_t scratch_bytes,
			    const uint64_t *words,
			    const struct npu_pkt_launch_code *extra);

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
