// SPDX-License-Identifier: MIT
/*
 * npu_outq.c - device printf text waiting for stdout.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu_core.h"

/* ------------------------------------------------------------------------
 * Device printf text waiting for stdout (npu_printf.c formats it; every
 * layer that finds launches complete writes it once dev->lock is dropped)
 */
/* Formatted output not yet written to stdout, oldest first. */
struct pending_text {
	struct pending_text *next;
	size_t len;
	char text[];
};

/* pending_lock protects pending_head/pending_tail (pending_head is also
 * read without it, atomically); a leaf lock, held only to link or
 * unlink, never while writing. */
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pending_text *pending_head, *pending_tail;
/* write_lock serializes the writers of stdout, so the text of the
 * launches comes out in the order it was queued. */
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;

void npu_printf_queue(const char *text, size_t len)
{
	struct pending_text *t;

	if (!len)
		return;
	t = malloc(sizeof(*t) + len);
	if (!t) {
		fputs("npu: device printf output lost: out of memory\n", stderr);
		return;
	}
	t->next = NULL;
	t->len = len;
	memcpy(t->text, text, len);
	pthread_mutex_lock(&pending_lock);
	if (pending_tail)
		pending_tail->next = t;
	else
		__atomic_store_n(&pending_head, t, __ATOMIC_RELEASE);
	pending_tail = t;
	pthread_mutex_unlock(&pending_lock);
}

/* Lock-free: every library call ends with npu_printf_output, and text
 * queued after a call has read "empty" is written by the next one. */
static bool pending_empty(void)
{
	return !__atomic_load_n(&pending_head, __ATOMIC_ACQUIRE);
}

void npu_printf_output(void)
{
	/* a writer already at work writes what is queued now too: it looks
	 * again after letting go of write_lock */
	while (!pending_empty() && !pthread_mutex_trylock(&write_lock)) {
		struct pending_text *t;

		pthread_mutex_lock(&pending_lock);
		t = pending_head;
		__atomic_store_n(&pending_head, NULL, __ATOMIC_RELAXED);
		pending_tail = NULL;
		pthread_mutex_unlock(&pending_lock);
		while (t) {
			struct pending_text *next = t->next;

			fwrite(t->text, 1, t->len, stdout);
			free(t);
			t = next;
		}
		fflush(stdout);
		pthread_mutex_unlock(&write_lock);
	}
}
