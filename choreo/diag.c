// SPDX-License-Identifier: MIT
/* diag.c - one error per run: compilation stops at the first problem;
 * warnings go on. */
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

static void report(const char *kind, struct loc loc, const char *fmt, va_list ap)
{
	const char *p = src_text, *end;
	int line = 1, i;

	fflush(stdout);
	if (loc.line < 1)
		loc.line = 1;
	if (loc.col < 1)
		loc.col = 1;
	fprintf(stderr, "%s:%d:%d: %s: ", src_path, loc.line, loc.col, kind);
	vfprintf(stderr, fmt, ap);
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
}

void diag_error(struct loc loc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report("error", loc, fmt, ap);
	va_end(ap);
	exit(1);
}

void diag_warning(struct loc loc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report("warning", loc, fmt, ap);
	va_end(ap);
}
