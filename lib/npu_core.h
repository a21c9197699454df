/* SPDX-License-Identifier: MIT */
/*
 * npu_core.h - internal interfaces shared by the libnpu source files.
 */
#ifndef NPU_CORE_H
#define NPU_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "npu_hw.h"
#include "drm/npu_accel.h"
#include "npu_internal.h"

#define NPU_EXPORT __attribute__((visibility("default")))

enum { REG_STREAM = 1, REG_EVENT = 2 };

/* One job being built: command bytes go to cmd[0..len) (at most max). */
struct jobctx {
	struct npu_stream *s;
	uint32_t off, max, len;
	uint8_t *cmd;
	struct dep *deps;
	struct dep inline_deps[INLINE_DEPS];
	unsigned ndeps, cap;
	uint32_t bo[2];
	unsigned nbo;
	uint32_t kernel;		/* kernel id + 1 for launches */
	bool no_implicit;		/* legacy fan-in barrier: own order only */
	uint32_t trace;			/* profiler trace slot + 1 (npu_trace.c) */
	bool word;			/* room for the completion word's packet */
};

npu_status_t npu_fail(npu_status_t st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
npu_status_t npu_fail_sticky(struct device *dev, npu_status_t st);
void npu_set_last_error(npu_status_t st);	/* status only, no message */
/* strerror for a library used from many threads (strerror_r) */
const char *npu_strerror(int e);

/* The built-in kernels (npu_core.c): hardware id, name, argument count. */
struct npu_kinfo {
	uint32_t id;
	const char *name;
	unsigned nargs;
};
const struct npu_kinfo *npu_kernel_find(uint32_t id);	/* NULL: none */

/* What a wait that saw work complete runs next (device printf's output,
 * kernel profiles): registered by npu_printf.c and npu_kprofile.c when
 * they first track a launch, so that the stream code below them need not
 * know them. Caller holds dev->lock. */
void npu_on_complete(struct device *dev, void (*fn)(struct device *dev));
void npu_completed(struct device *dev);

int npu_reg_add(const void *p, int type);
bool npu_reg_check(const void *p, int type);
bool npu_reg_remove(const void *p, int type);

/* Helper threads of the library (graph host nodes): fn runs on a new
 * joinable thread, counted by dev, and ends with npu_thread_done(dev)
 * under dev->lock, right before it unlocks and returns; teardown waits
 * for the count to drop and joins them. Caller holds dev->lock. */
int npu_thread_start(struct device *dev, void *(*fn)(void *), void *arg);
void npu_thread_done(struct device *dev);
/* Called first by every thread the library starts: teardown must not be
 * run by one of them (exit() from a host function). */
void npu_thread_is_lib(void);
npu_status_t npu_dev_sync_locked(struct device *dev);
/* npu_trace.c: write the NPU_TRACE file, if any (teardown, first) */
void npu_trace_at_unload(void);

npu_status_t npu_dev_by_ordinal(int ordinal, struct device **out);
npu_status_t npu_cur_dev(struct device **out);
int npu_get_param(struct device *dev, uint32_t param, uint64_t *value);
npu_status_t npu_stream_init_legacy(struct device *dev);

struct tl *npu_tl_new(struct device *dev);
void npu_tl_put(struct device *dev, struct tl *t);
bool npu_tl_done(struct device *dev, struct tl *t, uint64_t point);
int npu_tl_wait_locked(struct device *dev, struct tl *t, uint64_t point);
int npu_tl_wait_now(struct device *dev, struct tl *t, uint64_t point);
int npu_wait_points(struct device *dev, uint32_t *handles, uint64_t *points,
		    unsigned n);

npu_status_t npu_check_faults(struct device *dev);
/* Describes a user kernel's fault PC (" in kernel k (file) at pc ... (file.c:12)"):
 * set by npu_module.c once a module is loaded. */
extern void (*npu_fault_pc_hook)(uint64_t pc, char *buf, size_t n);
void npu_flush_now(struct device *dev);
void npu_flush_deferred(struct device *dev);
int npu_start_flusher(struct device *dev);

npu_status_t npu_job_begin(struct device *dev, struct npu_stream *s,
			   uint32_t max_bytes, struct jobctx *jc);
npu_status_t npu_job_wait(struct jobctx *jc, struct tl *t, uint64_t point);
npu_status_t npu_job_order_after(struct jobctx *jc, struct tl *t,
				 uint64_t point);
npu_status_t npu_job_submit(struct device *dev, struct jobctx *jc, int queue,
			    struct tl *ev, uint64_t ev_point, uint64_t *point);
void npu_job_abort(struct jobctx *jc);
/* Barrier jobs on the legacy stream s until at most keep blocking streams
 * are left for s's next job to wait on. Caller holds dev->lock. */
npu_status_t npu_legacy_fanin(struct device *dev, struct npu_stream *s,
			      int queue, unsigned keep);

static inline void *npu_job_put(struct jobctx *jc, uint32_t bytes)
{
	void *p = jc->cmd + jc->len;

	jc->len += (bytes + 3) & ~3u;
	return p;
}

#endif /* NPU_CORE_H */
