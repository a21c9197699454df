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
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
/* Handles removed so far (under reg_lock). A thread's last handle found
 * live stays live until the next removal: a thread that launches on its
 * stream again and again checks it without reg_lock (which every thread's
 * launch would otherwise take: a process-wide mutex on the launch path).
 * An object freed and another made at its address was removed between. */
static atomic_uint reg_removals;
static __thread const void *reg_last;
static __thread int reg_last_type;
static __thread unsigned reg_last_removals;
static struct {
	const void *p;
	int type;
} *reg_tab;
static size_t reg_cap, reg_used;	/* used counts tombstones too */
#define REG_TOMB ((const void *)1)

static size_t reg_hash(const void *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x;
}

/* Rehash without the tombstones; double the table only if the live
 * entries need it. A table that grew whenever tombstones filled it would
 * grow without bound in a process that keeps making and destroying
 * events at new addresses. */
static int reg_grow(void)
{
	size_t live = 0, ncap, i, j;
	__typeof__(reg_tab) nt;

	for (i = 0; i < reg_cap; i++)
		live += reg_tab[i].p && reg_tab[i].p != REG_TOMB;
	/* live entries at most 3/8 of the table: a rehash at half full
	 * comes after another cap/8 additions at least */
	ncap = !reg_cap ? 256 : (live + 1) * 8 <= reg_cap * 3 ? reg_cap :
	       reg_cap * 2;
	nt = calloc(ncap, sizeof(*nt));
	if (!nt)
		return -1;
	reg_used = 0;
	for (i = 0; i < reg_cap; i++) {
		if (!reg_tab[i].p || reg_tab[i].p == REG_TOMB)
			continue;
		for (j = reg_hash(reg_tab[i].p) & (ncap - 1); nt[j].p;
		     j = (j + 1) & (ncap - 1))
			;
		nt[j] = reg_tab[i];
		reg_used++;
	}
	free(reg_tab);
	reg_tab = nt;
	reg_cap = ncap;
	return 0;
}

int npu_reg_add(const void *p, int type)
{
	size_t j;
	int ret = 0;

	pthread_mutex_lock(&reg_lock);
	if ((reg_used + 1) * 2 > reg_cap && reg_grow()) {
		ret = -1;
		goto out;
	}
	for (j = reg_hash(p) & (reg_cap - 1); reg_tab[j].p && reg_tab[j].p != REG_TOMB;
	     j = (j + 1) & (reg_cap - 1))
		;
	if (!reg_tab[j].p)
		reg_used++;
	reg_tab[j].p = p;
	reg_tab[j].type = type;
out:
	pthread_mutex_unlock(&reg_lock);
	return ret;
}

static size_t reg_find(const void *p, int type)
{
	size_t j;

	if (!reg_cap || !p)
		return SIZE_MAX;
	for (j = reg_hash(p) & (reg_cap - 1); reg_tab[j].p; j = (j + 1) & (reg_cap - 1))
		if (reg_tab[j].p == p)
			return reg_tab[j].type == type ? j : SIZE_MAX;
	return SIZE_MAX;
}

bool npu_reg_check(const void *p, int type)
{
	unsigned removals;
	bool ok;

	if (p && p == reg_last && type == reg_last_type &&
	    reg_last_removals == atomic_load_explicit(&reg_removals,
						      memory_order_acquire))
		return true;
	pthread_mutex_lock(&reg_lock);
	removals = atomic_load_explicit(&reg_removals, memory_order_relaxed);
	ok = reg_find(p, type) != SIZE_MAX;
	pthread_mutex_unlock(&reg_lock);
	if (ok) {
		reg_last = p;
		reg_last_type = type;
		reg_last_removals = removals;
	}
	return ok;
}

bool npu_reg_remove(const void *p, int type)
{
	size_t j;

	pthread_mutex_lock(&reg_lock);
	j = reg_find(p, type);
	if (j != SIZE_MAX) {
		reg_tab[j].p = REG_TOMB;
		atomic_fetch_add_explicit(&reg_removals, 1, memory_order_release);
	}
	pthread_mutex_unlock(&reg_lock);
	return j != SIZE_MAX;
}
