// SPDX-License-Identifier: MIT
/*
 * npu_thread.c - helper threads of the library and stopping them at teardown.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "npu_core.h"

/* ------------------------------------------------------------------------
 * Helper threads, and the parts of teardown (npu_unload.c) that are the
 * submission layer's: no thread of the library may run on after dlclose.
 */
static _Thread_local bool tls_lib_thread;

void npu_thread_is_lib(void)
{
	tls_lib_thread = true;
}

/* Join the helper threads that have finished. Each added itself under
 * dev->lock, which it dropped right before returning, so the joins wait
 * at most for a return. Caller holds dev->lock. */
static void threads_reap(struct device *dev)
{
	unsigned i;

	for (i = 0; i < dev->nthreads_done; i++)
		pthread_join(dev->threads_done[i], NULL);
	dev->nthreads_done = 0;
}

int npu_thread_start(struct device *dev, void *(*fn)(void *), void *arg)
{
	pthread_t th;

	threads_reap(dev);
	if (dev->nthreads_done + dev->nthreads + 1 > dev->threads_done_cap) {
		/* room to finish in, reserved now: npu_thread_done must
		 * not fail */
		unsigned ncap = (dev->nthreads + 1) * 2;
		pthread_t *nv = realloc(dev->threads_done, ncap * sizeof(*nv));

		if (!nv)
			return -1;
		dev->threads_done = nv;
		dev->threads_done_cap = ncap;
	}
	if (pthread_create(&th, NULL, fn, arg))
		return -1;
	dev->nthreads++;
	return 0;
}

void npu_thread_done(struct device *dev)
{
	dev->threads_done[dev->nthreads_done++] = pthread_self();
	dev->nthreads--;
	pthread_cond_broadcast(&dev->thread_cond);
}

bool npu_thread_in_lib(void)
{
	return tls_lib_thread;
}

void npu_dev_stop_threads(struct device *d)
{
	while (d->nthreads)
		pthread_cond_wait(&d->thread_cond, &d->lock);
	threads_reap(d);
	if (d->flusher_started) {
		d->flusher_stop = true;
		pthread_cond_signal(&d->flush_cond);
		pthread_mutex_unlock(&d->lock);
		pthread_join(d->flusher, NULL);
		pthread_mutex_lock(&d->lock);
		d->flusher_started = false;
	}
}
