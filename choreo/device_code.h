/* SPDX-License-Identifier: MIT */
/*
 * device_code.h - the device functions a Choreo program writes in C:
 * `__device__` functions at file level and the contents of `__cok__ { }`
 * blocks. They go into the kernel C (npu-cc compiles them with the
 * kernels) and out of the host program; `call f(...)` in a parallel body
 * calls them.
 */
#ifndef NPU_CHOREO_DEVICE_CODE_H
#define NPU_CHOREO_DEVICE_CODE_H

#include <stdbool.h>
#include <stdio.h>

/* find them in the source text (outside the __co__ functions, which the
 * lexer has found: co_ranges); C++ the npu's C kernels cannot take is
 * refused here */
void device_code_scan(const char *text);
/* does the program define (or declare) device function `name`? */
bool device_function(const char *name);
/* blank them out of the host program's text (newlines kept) */
void device_code_blank(char *host);
/* write them into the kernel C, each after a #line of its place */
void device_code_emit(FILE *o);

#endif
