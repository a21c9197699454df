// SPDX-License-Identifier: MIT
/*
 * npu-printf.c - npu_printf's recording side, from the runtime archive
 * (libnpu-rt.a): linked into a code object only when a kernel calls
 * printf, so the library gives printf buffers to those modules only.
 * Built for the device (RV64G, -fPIE).
 */
#include <stdarg.h>
#include <stddef.h>

#define NPU_NO_PRINTF_MACRO
#include "npu_kernel.h"

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_flag(char c)
{
	return c == '-' || c == '+' || c == ' ' || c == '#' || c == '0';
}

/*
 * Walk the format as the host will (npu_printf.c in libnpu) and record one
 * 64-bit word per value: '*' widths and precisions, then the conversion's
 * argument, integers extended by their length modifier.
 */
int npu_printf(const char *format, ...)
{
	/* struct npu_printf_payload: bytes | nvalues << 32, format, values */
	unsigned long long r[2 + NPU_PRINTF_MAX_VALUES] __attribute__((aligned(8)));
	unsigned long long *v = r + 2;
	const char *p = format;
	unsigned int n = 0;
	va_list ap;

	va_start(ap, format);
	while (*p && n < NPU_PRINTF_MAX_VALUES) {
		int len = 0;	/* 0 int, 1 long, 2 long long, -1 short, -2 char */

		if (*p++ != '%')
			continue;
		if (*p == '%') {
			p++;
			continue;
		}
		while (is_flag(*p))
			p++;
		if (*p == '*') {
			v[n++] = (unsigned long long)(long long)va_arg(ap, int);
			p++;
		}
		while (is_digit(*p))
			p++;
		if (*p == '.') {
			p++;
			if (*p == '*' && n < NPU_PRINTF_MAX_VALUES) {
				v[n++] = (unsigned long long)(long long)va_arg(ap, int);
				p++;
			}
			while (is_digit(*p))
				p++;
		}
		for (;;) {
			if (*p == 'h')
				len = len < 0 ? -2 : -1;
			else if (*p == 'l')
				len = len > 0 ? 2 : 1;
			else if (*p == 'z' || *p == 'j' || *p == 't')
				len = 1;
			else if (*p != 'L')
				break;
			p++;
		}
		if (n >= NPU_PRINTF_MAX_VALUES)
			break;
		switch (*p) {
		case 'd': case 'i':
			v[n++] = len > 0 ? (unsigned long long)va_arg(ap, long long)
					   : (unsigned long long)(long long)va_arg(ap, int);
			break;
		case 'u': case 'o': case 'x': case 'X': case 'c':
			v[n++] = len > 0 ? va_arg(ap, unsigned long long)
					   : (unsigned long long)va_arg(ap, unsigned int);
			break;
		case 'e': case 'E': case 'f': case 'F':
		case 'g': case 'G': case 'a': case 'A': {
			double d = va_arg(ap, double);

			__builtin_memcpy(&v[n++], &d, 8);
			break;
		}
		case 's': case 'p':
			v[n++] = (unsigned long long)va_arg(ap, void *);
			break;
		default:	/* unknown conversion: the host prints it as is */
			break;
		}
		if (*p)
			p++;
	}
	va_end(ap);
	r[0] = (16 + 8ull * n) | (unsigned long long)n << 32;
	r[1] = (unsigned long long)format;
	__asm__ volatile("csrw " NPU_KSTR(NPU_CSR_PRINTF) ", %0"
			 : : "r"(r) : "memory");
	return (int)n;
}
