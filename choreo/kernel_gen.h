/* SPDX-License-Identifier: MIT */
/* kernel_gen.h - the kernel C file: one NPU_KERNEL per block-level parallel. */
#ifndef NPU_CHOREO_KERNEL_GEN_H
#define NPU_CHOREO_KERNEL_GEN_H

#include <stdio.h>

#include "sema.h"

void kernel_gen(FILE *o, struct program *prog);
/* the kernel's arguments in order: (C type, C name) of capture i, arg j */
int kernel_args(const struct kernel *k, const char *types[], const char *names[],
		char buf[][96], int max);

struct emitter;
void kernel_emit_dyn_bytes(struct emitter *em, const struct sym *s);

#endif
