// SPDX-License-Identifier: MIT
/* diag.c - one error per run: compilation stops at the first problem. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"

static const char *src_path = "<input>";
static const char *src_text = "";

void diag_set_source(const char *path, const char *text)
{
	src_path = path;
	src_text = text;
}

const char *diag_path(void)
{
	return src_path;
}

void diag_error(struct loc loc, const char *fmt, ...)
{
	const char *p = src_text, *end;
	va_list ap;
	int line = 1, i;

	fflush(stdout);
	if (loc.line < 1)
		loc.line = 1;
	if (loc.col < 1)
		loc.col = 1;
	fprintf(stderr, "%s:%d:%d: error: ", src_path, loc.line, loc.col);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	while (*p && line < loc.line) {
		if (*p++ == '\n')
			line++;
	}
	end = strchr(p, '\n');
	if (!end)
		end = p + strlen(p);
	fprintf(stderr, "%.*s\n", (int)(end - p), p);
	/* keep tabs so the caret lines up under the column */
	for (i = 1; i < loc.col && p + i - 1 < end; i++)
		fputc(p[i - 1] == '\t' ? '\t' : ' ', stderr);
	for (; i < loc.col; i++)
		fputc(' ', stderr);
	fputs("^\n", stderr);
	exit(1);
}
