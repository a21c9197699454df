// SPDX-License-Identifier: MIT
/*
 * npu-rt.c - what the C library (picolibc, linked by npu-cc) needs from
 * the kernels' environment, from the runtime archive every code object is
 * linked with (libnpu-rt.a). Of picolibc's hooks only thread-local
 * storage is needed by what kernels may call (errno); there is no stdin,
 * stdout, heap, exit or system call on the device, and code that needs
 * them fails to link, naming the missing symbol. Built for the device
 * (RV64G, -fPIE).
 */
#include <stddef.h>

#define NPU_NO_PRINTF_MACRO
#include "npu_kernel.h"

/* npu-module.ld: one thread's TLS image, .tdata then .tbss */
extern char __npu_tls_start[] __attribute__((visibility("hidden")));
extern char __npu_tdata_end[] __attribute__((visibility("hidden")));
extern char __npu_tls_end[] __attribute__((visibility("hidden")));

/*
 * Threads start with tp = 0. RISC-V's local-exec TLS addresses a variable
 * at tp + its offset in the TLS image, so each thread gets a copy at the
 * bottom of its own stack window (the same address in every thread, each
 * its own memory) and tp points there; the stack grows down towards it.
 */
void __npu_tls_init(void)
{
	char *tls = (char *)NPU_LOCAL_STACK;
	size_t data = (size_t)(__npu_tdata_end - __npu_tls_start);

	/* picolibc's memcpy and memset (built freestanding: no string.h) */
	__builtin_memcpy(tls, __npu_tls_start, data);
	__builtin_memset(tls + data, 0, (size_t)(__npu_tls_end - __npu_tdata_end));
	__asm__ volatile("mv tp, %0" : : "r"(tls) : "memory");
}

/* Called by the entry stub (npu_kernel.h) with jal t0: keeps ra. */
__asm__(".globl __npu_tls_entry\n"
	".type __npu_tls_entry, @function\n"
	"__npu_tls_entry:\n"
	"	addi sp, sp, -16\n"
	"	sd ra, 0(sp)\n"
	"	sd t0, 8(sp)\n"
	"	call __npu_tls_init\n"
	"	ld ra, 0(sp)\n"
	"	ld t0, 8(sp)\n"
	"	addi sp, sp, 16\n"
	"	jr t0\n"
	".size __npu_tls_entry, . - __npu_tls_entry\n");
