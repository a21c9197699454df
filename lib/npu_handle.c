// SPDX-License-Identifier: MIT
/*
 * npu_handle.c - the handle registry: live streams and events.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "npu_core.h"

/* ------------------------------------------------------------------------
 * Handle registry: an open-addressing set of live stream and event
 * pointers, so that NULL, destroyed and foreign handles are recognised
 * without dereferencing them.
 */
/* Writers (add, remove, rehash) take reg_lock. A check whose handle is
 * not in its thread's cache below reads the table without it: entries
 * change with single atomic stores, and a rehash frees the old table only
 * once no reader is in it (reg_readers), so the common check costs no
 * call into the C library. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
/* Handles removed so far (under reg_lock). A thread's last handle found
 * live stays live until the next removal: a thread that launches on its
 * stream again and again checks it with two loads. An object freed and
 * another made at its address was removed between. */
atomic_uint npu_reg_removals;
/* the thread's last handle found live (npu_reg_check in npu_core.h) */
NPU_REG_TLS const void *npu_reg_last;
NPU_REG_TLS int npu_reg_last_type;
NPU_REG_TLS unsigned npu_reg_last_removals;

struct reg_table {
	size_t cap;			/* a power of 2 */
	struct {
		const void *_Atomic p;	/* NULL: free; REG_TOMB: removed */
		_Atomic int type;	/* written before p */
	} e[];
};
static struct reg_table *reg_tab;	/* under reg_lock */
static struct reg_table *_Atomic reg_view;	/* the same, for readers */
static atomic_uint reg_readers;		/* lock-free readers in reg_view */
static size_t reg_used;			/* used counts tombstones too */
#define REG_TOMB ((const void *)1)

static size_t reg_hash(const void *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x;
}

static const void *reg_at(const struct reg_table *t, size_t j)
{
	return atomic_load_explicit(&t->e[j].p, memory_order_acquire);
}

/* Rehash without the tombstones; double the table only if the live
 * entries need it. A table that grew whenever tombstones filled it would
 * grow without bound in a process that keeps making and destroying
 * events at new addresses. Caller holds reg_lock. */
static int reg_grow(void)
{
	size_t cap = reg_tab ? reg_tab->cap : 0, live = 0, ncap, i, j;
	struct reg_table *nt, *old = reg_tab;

	for (i = 0; i < cap; i++)
		live += reg_at(old, i) && reg_at(old, i) != REG_TOMB;
	/* live entries at most 3/8 of the table: a rehash at half full
	 * comes after another cap/8 additions at least */
	ncap = !cap ? 256 : (live + 1) * 8 <= cap * 3 ? cap : cap * 2;
	nt = calloc(1, sizeof(*nt) + ncap * sizeof(nt->e[0]));
	if (!nt)
		return -1;
	nt->cap = ncap;
	reg_used = 0;
	for (i = 0; i < cap; i++) {
		const void *p = reg_at(old, i);

		if (!p || p == REG_TOMB)
			continue;
		for (j = reg_hash(p) & (ncap - 1); nt->e[j].p; j = (j + 1) & (ncap - 1))
			;
		atomic_init(&nt->e[j].type,
			    atomic_load_explicit(&old->e[i].type, memory_order_relaxed));
		atomic_init(&nt->e[j].p, p);
		reg_used++;
	}
	reg_tab = nt;
	/* a reader that took the old table counted itself in first (both
	 * sequentially consistent): wait for it to leave */
	atomic_store_explicit(&reg_view, nt, memory_order_seq_cst);
	while (atomic_load_explicit(&reg_readers, memory_order_seq_cst))
		sched_yield();
	free(old);
	return 0;
}

int npu_reg_add(const void *p, int type)
{
	size_t j, mask;
	int ret = 0;

	pthread_mutex_lock(&reg_lock);
	if ((!reg_tab || (reg_used + 1) * 2 > reg_tab->cap) && reg_grow()) {
		ret = -1;
		goto out;
	}
	mask = reg_tab->cap - 1;
	for (j = reg_hash(p) & mask; reg_at(reg_tab, j) && reg_at(reg_tab, j) != REG_TOMB;
	     j = (j + 1) & mask)
		;
	if (!reg_at(reg_tab, j))
		reg_used++;
	atomic_store_explicit(&reg_tab->e[j].type, type, memory_order_relaxed);
	atomic_store_explicit(&reg_tab->e[j].p, p, memory_order_release);
out:
	pthread_mutex_unlock(&reg_lock);
	return ret;
}

static size_t reg_find(const struct reg_table *t, const void *p, int type)
{
	size_t j, mask;
	const void *q;

	if (!t || !p)
		return SIZE_MAX;
	mask = t->cap - 1;
	for (j = reg_hash(p) & mask; (q = reg_at(t, j)); j = (j + 1) & mask)
		if (q == p)
			return atomic_load_explicit(&t->e[j].type,
						    memory_order_relaxed) == type ?
			       j : SIZE_MAX;
	return SIZE_MAX;
}

bool npu_reg_check_slow(const void *p, int type)
{
	unsigned removals;
	bool ok;

	/* the count before the look: a removal after it makes the cache
	 * entry below stale at once */
	atomic_fetch_add_explicit(&reg_readers, 1, memory_order_seq_cst);
	removals = atomic_load_explicit(&npu_reg_removals, memory_order_acquire);
	ok = reg_find(atomic_load_explicit(&reg_view, memory_order_seq_cst),
		      p, type) != SIZE_MAX;
	atomic_fetch_sub_explicit(&reg_readers, 1, memory_order_release);
	if (ok) {
		npu_reg_last = p;
		npu_reg_last_type = type;
		npu_reg_last_removals = removals;
	}
	return ok;
}

bool npu_reg_remove(const void *p, int type)
{
	size_t j;

	pthread_mutex_lock(&reg_lock);
	j = reg_find(reg_tab, p, type);
	if (j != SIZE_MAX) {
		atomic_store_explicit(&reg_tab->e[j].p, REG_TOMB,
				      memory_order_release);
		atomic_fetch_add_explicit(&npu_reg_removals, 1, memory_order_release);
	}
	pthread_mutex_unlock(&reg_lock);
	return j != SIZE_MAX;
}
