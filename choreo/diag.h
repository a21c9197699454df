/* SPDX-License-Identifier: MIT */
/* diag.h - compile-time diagnostics: file:line:col, source line, caret. */
#ifndef NPU_CHOREO_DIAG_H
#define NPU_CHOREO_DIAG_H

#include "ast.h"

void diag_set_source(const char *path, const char *text);
const char *diag_path(void);
/* print "FILE:LINE:COL: error: MESSAGE", the line and a caret; exit 1 */
_Noreturn void diag_error(struct loc loc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* the same with "warning:", and compilation goes on */
void diag_warning(struct loc loc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
