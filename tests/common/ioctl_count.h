/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * ioctl_count.h - count every ioctl of this process, libnpu's and libdrm's
 * included: the program that includes it (once) defines ioctl() and is
 * linked with -rdynamic, so the libraries' calls reach it. Gives system
 * calls per launch (npu-bench, lib_userq), and can hold one request back
 * to stage a slow driver (a debug kernel's SUBMIT).
 */
#ifndef IOCTL_COUNT_H
#define IOCTL_COUNT_H

#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

static unsigned long n_ioctls;
/* calls of ioctl_slow_request sleep ioctl_slow_us before the system call */
static unsigned long ioctl_slow_request;
static unsigned ioctl_slow_us;
/* calls of ioctl_counted_request, counted apart */
static unsigned long ioctl_counted_request;
static unsigned long n_counted;

int ioctl(int fd, unsigned long request, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	__atomic_fetch_add(&n_ioctls, 1, __ATOMIC_RELAXED);
	if (request == __atomic_load_n(&ioctl_counted_request, __ATOMIC_RELAXED))
		__atomic_fetch_add(&n_counted, 1, __ATOMIC_RELAXED);
	if (request == __atomic_load_n(&ioctl_slow_request, __ATOMIC_RELAXED))
		usleep(__atomic_load_n(&ioctl_slow_us, __ATOMIC_RELAXED));
	return (int)syscall(SYS_ioctl, fd, request, arg);
}

/* ioctls made so far */
static unsigned long ioctls(void)
{
	return __atomic_load_n(&n_ioctls, __ATOMIC_RELAXED);
}

#endif
