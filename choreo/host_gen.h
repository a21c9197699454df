/* SPDX-License-Identifier: MIT */
/* host_gen.h - host C over libnpu: one C function per __co__ function. */
#ifndef NPU_CHOREO_HOST_GEN_H
#define NPU_CHOREO_HOST_GEN_H

#include <stdio.h>

#include "sema.h"

/* image_path: the kernels' code object, taken into the host object by the
 * assembler (unused if there are no kernels) */
void host_gen(FILE *o, struct program *prog, const char *image_path);
/* the C prototype of f, without a trailing ';' */
void host_prototype(FILE *o, const struct node *f);
/* main() calling the parameterless function f, for `npu-choreo exe` */
void host_gen_main(FILE *o, const struct node *f);

/* for a .co file's own C++ main (include/choreo.h): one C++ function per
 * __co__ function, spanned data as choreo::spanned_view/spanned_data */
void host_cxx_wrappers(FILE *o, const struct program *prog);

#endif
