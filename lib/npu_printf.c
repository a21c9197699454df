// SPDX-License-Identifier: MIT
/*
 * npu_printf.c - device printf (as CUDA's): each launch of a kernel that
 * calls npu_printf (a stream launch, or a kernel node of a graph launch)
 * gets a buffer from a pool of pinned memory; when a
 * synchronize or a query sees the launch complete, its records are
 * formatted here, launches in submission order, and queued as text
 * (npu_printf_queue, npu_outq.c); the text is written to stdout by
 * npu_printf_output() once dev->lock is dropped, so a stdout nobody reads blocks only the thread writing it. A
 * full buffer drops records and the device counts them; the count is
 * reported on stderr. Nothing grows: with every buffer in use, a launch
 * first waits for the oldest one.
 */
#define _GNU_SOURCE	/* open_memstream */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu_core.h"
#include "npu_code.h"
#include "npu_module.h"
#include "npu_printf.h"

#define SLOT_BYTES	(16u << 10)
#define NSLOTS		64

struct pslot {
	bool used, tracked;
	uint64_t seq;			/* submission order */
	struct tl *tl;			/* done when (tl, point) signals */
	uint64_t point;
	char kernel[NPU_CODE_NAME_MAX];
};

struct printf_pool {
	uint32_t handle;
	uint8_t *map;
	uint64_t va;
	uint64_t seq;
	struct pslot slot[NSLOTS];
};

static struct printf_pool *pool_get(struct device *dev)
{
	struct printf_pool *p = dev->printf_pool;

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	if (npu_host_bo(dev, (uint64_t)SLOT_BYTES * NSLOTS, &p->handle, &p->va,
			(void **)&p->map)) {
		free(p);
		return NULL;
	}
	dev->printf_pool = p;
	return p;
}

/* Walk one format as npu-rt.c's npu_printf did, printing into out. */
static void format_record(FILE *out, const char *fmt, const uint64_t *v,
			  unsigned n)
{
	unsigned k = 0;
	const char *p = fmt;

	while (*p) {
		char spec[64], tmp[512];
		const char *start = p;
		size_t sl;

		if (*p != '%') {
			fputc(*p++, out);
			continue;
		}
		p++;
		if (*p == '%') {
			fputc('%', out);
			p++;
			continue;
		}
		while (*p && strchr("-+ #0", *p))
			p++;
		if (*p == '*')
			p++;
		while (*p >= '0' && *p <= '9')
			p++;
		if (*p == '.') {
			p++;
			if (*p == '*')
				p++;
			while (*p >= '0' && *p <= '9')
				p++;
		}
		while (*p && strchr("hlzjtL", *p))
			p++;
		if (!*p) {
			fputs(start, out);
			break;
		}
		/* the spec without length modifiers, with ll for integers */
		sl = 0;
		for (const char *q = start; q < p && sl < sizeof(spec) - 4; q++)
			if (!strchr("hlzjtL", *q))
				spec[sl++] = *q;
		{
			int star[2], nstar = 0;

			for (const char *q = start; q < p; q++)
				if (*q == '*' && nstar < 2)
					star[nstar++] = k < n ? (int)(int64_t)v[k++] : 0;
			if (strchr("diouxX", *p)) {
				spec[sl++] = 'l';
				spec[sl++] = 'l';
			}
			spec[sl++] = *p;
			spec[sl] = 0;
			tmp[0] = 0;
			switch (*p) {
			case 'd': case 'i': case 'o': case 'u': case 'x': case 'X':
			case 'c': {
				uint64_t x = k < n ? v[k++] : 0;

				if (*p == 'c')
					x = (unsigned char)x;
				if (nstar == 2)
					snprintf(tmp, sizeof(tmp), spec, star[0], star[1], x);
				else if (nstar == 1)
					snprintf(tmp, sizeof(tmp), spec, star[0], x);
				else
					snprintf(tmp, sizeof(tmp), spec, x);
				break;
			}
			case 'e': case 'E': case 'f': case 'F': case 'g':
			case 'G': case 'a': case 'A': {
				double d = 0;

				if (k < n)
					memcpy(&d, &v[k++], 8);
				if (nstar == 2)
					snprintf(tmp, sizeof(tmp), spec, star[0], star[1], d);
				else if (nstar == 1)
					snprintf(tmp, sizeof(tmp), spec, star[0], d);
				else
					snprintf(tmp, sizeof(tmp), spec, d);
				break;
			}
			case 's': {
				char str[256];
				uint64_t a = k < n ? v[k++] : 0;

				if (!npu_module_string(a, str, sizeof(str)))
					snprintf(str, sizeof(str), "(string at 0x%" PRIx64
						 " not in a code object)", a);
				if (nstar == 2)
					snprintf(tmp, sizeof(tmp), spec, star[0], star[1], str);
				else if (nstar == 1)
					snprintf(tmp, sizeof(tmp), spec, star[0], str);
				else
					snprintf(tmp, sizeof(tmp), spec, str);
				break;
			}
			case 'p':
				snprintf(tmp, sizeof(tmp), "0x%" PRIx64, k < n ? v[k++] : 0);
				break;
			default:	/* unknown: as written */
				snprintf(tmp, sizeof(tmp), "%.*s", (int)(p + 1 - start),
					 start);
				break;
			}
			fputs(tmp, out);
		}
		p++;
	}
}

/* Format the records of a completed slot into the pending text. */
static void emit(struct printf_pool *pool, struct pslot *sl)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	const uint8_t *buf = pool->map + (size_t)(sl - pool->slot) * SLOT_BYTES;
	struct npu_printf_header h;
	uint32_t off = 0;

	memcpy(&h, buf, sizeof(h));
	if (h.used > SLOT_BYTES - sizeof(h))
		h.used = 0;
	while (off + sizeof(struct npu_printf_record) <= h.used) {
		struct npu_printf_record r;
		struct npu_printf_payload pl;
		uint64_t v[NPU_PRINTF_MAX_VALUES];
		char fmt[1024];
		const uint8_t *rec = buf + sizeof(h) + off;

		memcpy(&r, rec, sizeof(r));
		if (r.bytes < sizeof(r) + sizeof(pl) || r.bytes > h.used - off)
			break;
		memcpy(&pl, rec + sizeof(r), sizeof(pl));
		if (pl.nvalues > NPU_PRINTF_MAX_VALUES ||
		    sizeof(r) + sizeof(pl) + 8ull * pl.nvalues > r.bytes)
			break;
		memcpy(v, rec + sizeof(r) + sizeof(pl), 8ull * pl.nvalues);
		if (!out)
			break;
		if (npu_module_string(pl.format, fmt, sizeof(fmt)))
			format_record(out, fmt, v, pl.nvalues);
		else
			fprintf(out, "(npu printf: format at 0x%" PRIx64 " not "
				"in a code object)\n", pl.format);
		off += (r.bytes + 7) & ~7u;
	}
	if (out) {
		fclose(out);
		npu_printf_queue(text, len);
		free(text);
	} else if (h.used) {
		fputs("npu: device printf output lost: out of memory\n", stderr);
	}
	if (h.lost)
		fprintf(stderr, "npu: %u printf record(s) of kernel %s lost: its "
			"printf buffer (%u KiB) was full\n", h.lost, sl->kernel,
			SLOT_BYTES >> 10);
}

static void release(struct device *dev, struct pslot *sl)
{
	if (sl->tl)
		npu_tl_put(dev, sl->tl);
	memset(sl, 0, sizeof(*sl));
}

/* Print every completed launch, in submission order, stopping at the first
 * that is not complete. Caller holds dev->lock. */
void npu_printf_flush(struct device *dev)
{
	struct printf_pool *pool = dev->printf_pool;

	if (!pool)
		return;
	for (;;) {
		struct pslot *first = NULL;
		unsigned i;

		for (i = 0; i < NSLOTS; i++) {
			struct pslot *sl = &pool->slot[i];

			if (sl->used && sl->tracked &&
			    (!first || sl->seq < first->seq))
				first = sl;
		}
		if (!first || !npu_tl_done(dev, first->tl, first->point))
			return;
		emit(pool, first);
		release(dev, first);
	}
}

npu_status_t npu_printf_slot(struct device *dev, const char *kernel,
			     int *slot, uint64_t *va, uint32_t *bytes)
{
	struct printf_pool *pool = pool_get(dev);
	unsigned i;

	if (!pool)
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "printf buffers");
	for (;;) {
		struct pslot *oldest = NULL;

		npu_printf_flush(dev);
		for (i = 0; i < NSLOTS; i++)
			if (!pool->slot[i].used)
				break;
		if (i < NSLOTS)
			break;
		/* a slot not yet tracked belongs to a launch being queued by
		 * another thread (npu_job_begin may drop dev->lock) */
		for (i = 0; i < NSLOTS; i++)
			if (pool->slot[i].tracked &&
			    (!oldest || pool->slot[i].seq < oldest->seq))
				oldest = &pool->slot[i];
		if (!oldest)
			return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "every printf "
					"buffer is taken by a launch being "
					"queued");
		if (npu_tl_wait_locked(dev, oldest->tl, oldest->point))
			return npu_fail(NPU_ERROR_OS, "waiting for a printf buffer");
	}
	pool->slot[i].used = true;
	pool->slot[i].tracked = false;
	snprintf(pool->slot[i].kernel, sizeof(pool->slot[i].kernel), "%s", kernel);
	memset(pool->map + (size_t)i * SLOT_BYTES, 0, sizeof(struct npu_printf_header));
	*slot = (int)i;
	*va = pool->va + (uint64_t)i * SLOT_BYTES;
	*bytes = SLOT_BYTES;
	return NPU_SUCCESS;
}

void npu_printf_track(struct device *dev, int slot, struct tl *tl,
		      uint64_t point)
{
	struct pslot *sl = &dev->printf_pool->slot[slot];

	npu_on_complete(dev, npu_printf_flush);	/* from now on */
	tl->refs++;
	sl->tl = tl;
	sl->point = point;
	sl->seq = ++dev->printf_pool->seq;
	sl->tracked = true;
}

void npu_printf_cancel(struct device *dev, int slot)
{
	release(dev, &dev->printf_pool->slot[slot]);
}
