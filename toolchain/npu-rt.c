// SPDX-License-Identifier: MIT
/*
 * npu-rt.c - the memory functions the compiler may call in freestanding
 * code, from the runtime archive every code object is linked with
 * (libnpu-rt.a, npu-cc). Built for the device (RV64G, -fPIE).
 */
#include <stdarg.h>
#include <stddef.h>

#define NPU_NO_PRINTF_MACRO
#include "npu_kernel.h"

void *memcpy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	while (n--)
		*d++ = *s++;
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	if (d < s || d >= s + n)
		return memcpy(dst, src, n);
	while (n--)
		d[n] = s[n];
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	unsigned char *d = dst;

	while (n--)
		*d++ = (unsigned char)c;
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;

	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}
