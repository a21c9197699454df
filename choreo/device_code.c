// SPDX-License-Identifier: MIT
/*
 * device_code.c - the program's own device functions (device_code.h).
 *
 * The host code around the __co__ functions is C++, which npu-choreo does
 * not parse; this scan knows only what it must to find the device code in
 * it: comments, string and character literals, preprocessor lines and
 * braces. At file level (brace depth 0), `__cok__ { ... }` is a block of
 * device code and `__device__ ...` a device function (up to its body's
 * closing brace, or its `;` if a declaration). npu-cc compiles C, so the
 * C++-only words of a device function are refused by name.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ast.h"
#include "device_code.h"
#include "diag.h"

struct segment {
	long start, end;	/* the device code taken into the kernel C */
	long blank_start, blank_end;	/* taken out of the host program */
	bool device_kw;		/* starts with `__device__` (made `static`) */
	bool directive;		/* a file-level #define or #undef: the device
				 * code after it sees it too (host code keeps it) */
};

static const char *src;
static long src_len;
static struct segment *segs;
static int nsegs;
static char **names;
static int nnames;

static bool ident_start(char c)
{
	return isalpha((unsigned char)c) || c == '_';
}

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* The length of the identifier that starts at i (before end), or 0 when
 * none does there (not an identifier character, or inside a longer word). */
static long word_at(long i, long end)
{
	long n;

	if (!ident_start(src[i]) || (i > 0 && ident_char(src[i - 1])))
		return 0;
	for (n = 0; i + n < end && ident_char(src[i + n]); n++)
		;
	return n;
}

static struct loc loc_of(long off)
{
	struct loc l = { 1, 1 };
	long i;

	for (i = 0; i < off && i < src_len; i++) {
		if (src[i] == '\n') {
			l.line++;
			l.col = 1;
		} else {
			l.col++;
		}
	}
	return l;
}

/* the end of the comment, literal or preprocessor line at i, or i */
static long skip_noncode(long i)
{
	if (src[i] == '/' && i + 1 < src_len && src[i + 1] == '/') {
		while (i < src_len && src[i] != '\n')
			i++;
		return i;
	}
	if (src[i] == '/' && i + 1 < src_len && src[i + 1] == '*') {
		const char *e = strstr(src + i + 2, "*/");

		return e ? e - src + 2 : src_len;
	}
	if (src[i] == '"' || src[i] == '\'') {
		char q = src[i++];

		while (i < src_len && src[i] != q && src[i] != '\n')
			i += src[i] == '\\' ? 2 : 1;
		return i < src_len ? i + 1 : src_len;
	}
	if (src[i] == '#') {
		long b = i;

		/* a directive: # first on its line */
		while (b > 0 && (src[b - 1] == ' ' || src[b - 1] == '\t'))
			b--;
		if (b > 0 && src[b - 1] != '\n')
			return i;
		while (i < src_len && src[i] != '\n')
			i += src[i] == '\\' && i + 1 < src_len ? 2 : 1;
		return i;
	}
	return i;
}

/* the __co__ function at i: where it ends (lexer.l: co_ranges), or i */
static long skip_co(long i)
{
	int r;

	for (r = 0; r < n_co_ranges; r++)
		if (co_ranges[r].start == i)
			return co_ranges[r].end < 0 ? src_len : co_ranges[r].end;
	return i;
}

/* the `}` that closes the `{` at open */
static long closing_brace(long open, const char *what)
{
	int depth = 0;
	long i = open, j;

	while (i < src_len) {
		j = skip_noncode(i);
		if (j != i) {
			i = j;
			continue;
		}
		if (src[i] == '{')
			depth++;
		else if (src[i] == '}' && !--depth)
			return i;
		i++;
	}
	diag_error(loc_of(open), "syntax error, %s without its closing '}'", what);
}

/* C++ the npu's C kernels cannot take, by the word that starts it */
static const struct {
	const char *word, *what;
} cxx_words[] = {
	{ "template", "templates" }, { "typename", "templates" },
	{ "namespace", "namespaces" }, { "using", "'using'" },
	{ "class", "classes" }, { "operator", "operator overloading" },
	{ "nullptr", "nullptr" }, { "constexpr", "constexpr" },
	{ "static_cast", "C++ casts" }, { "reinterpret_cast", "C++ casts" },
	{ "const_cast", "C++ casts" }, { "dynamic_cast", "C++ casts" },
};

static void refuse_cxx(long at, const char *what)
{
	diag_error(loc_of(at), "not supported yet: C++ in a device function (%s)",
		   what);
}

/* words a name followed by '(' can be that is not a function's */
static bool c_keyword(const char *w, long n)
{
	static const char *const kw[] = {
		"if", "for", "while", "switch", "return", "sizeof", "do",
		"__attribute__", "_Alignas", "_Alignof", "typeof", "__typeof__",
		"_Static_assert", "__asm__", "asm", "_Generic",
	};
	unsigned k;

	for (k = 0; k < sizeof(kw) / sizeof(kw[0]); k++)
		if ((long)strlen(kw[k]) == n && !strncmp(w, kw[k], n))
			return true;
	return false;
}

static void add_name(const char *w, long n)
{
	char *s = xmalloc(n + 1);

	memcpy(s, w, n);
	s[n] = 0;
	names = realloc(names, (nnames + 1) * sizeof(*names));
	if (!names)
		diag_error(loc_of(0), "out of memory");
	names[nnames++] = s;
}

/*
 * One segment's words: C++ is refused; a name followed by '(' outside
 * any brace or parenthesis is a function it defines or declares.
 */
static void check_segment(const struct segment *s)
{
	int braces = 0, parens = 0;
	long i = s->start, j, n;
	unsigned k;

	while (i < s->end) {
		j = skip_noncode(i);
		if (j != i) {
			i = j;
			continue;
		}
		if (src[i] == ':' && i + 1 < s->end && src[i + 1] == ':')
			refuse_cxx(i, "'::' scopes");
		if (src[i] == '{' || src[i] == '}') {
			braces += src[i] == '{' ? 1 : -1;
			i++;
			continue;
		}
		if (src[i] == '(' || src[i] == ')') {
			parens += src[i] == '(' ? 1 : -1;
			i++;
			continue;
		}
		n = word_at(i, s->end);
		if (!n) {
			i++;
			continue;
		}
		for (k = 0; k < sizeof(cxx_words) / sizeof(cxx_words[0]); k++)
			if ((long)strlen(cxx_words[k].word) == n &&
			    !strncmp(src + i, cxx_words[k].word, n))
				refuse_cxx(i, cxx_words[k].what);
		if (n == 13 && !strncmp(src + i, "__co_device__", 13))
			diag_error(loc_of(i), "not supported yet: __co_device__ "
				   "functions (Croqtile-style device code)");
		j = i + n;
		while (j < s->end && isspace((unsigned char)src[j]))
			j++;
		if (n == 6 && !strncmp(src + i, "extern", 6) && j < s->end &&
		    src[j] == '"')
			refuse_cxx(i, "extern \"C\"");
		if (!braces && !parens && j < s->end && src[j] == '(' &&
		    !c_keyword(src + i, n))
			add_name(src + i, n);
		i += n;
	}
}

static void add_segment(long start, long end, long blank_start, long blank_end,
			bool device_kw)
{
	segs = realloc(segs, (nsegs + 1) * sizeof(*segs));
	if (!segs)
		diag_error(loc_of(0), "out of memory");
	segs[nsegs].start = start;
	segs[nsegs].end = end;
	segs[nsegs].blank_start = blank_start;
	segs[nsegs].blank_end = blank_end;
	segs[nsegs].device_kw = device_kw;
	segs[nsegs].directive = blank_start == blank_end;
	if (!segs[nsegs].directive)
		check_segment(&segs[nsegs]);
	nsegs++;
}

/* `__device__ ...` at kw: up to its body's '}' or its ';' */
static long device_fn_end(long kw)
{
	long i = kw, j;

	while (i < src_len) {
		j = skip_noncode(i);
		if (j != i) {
			i = j;
			continue;
		}
		if (src[i] == ';')
			return i + 1;
		if (src[i] == '{')
			return closing_brace(i, "a __device__ function") + 1;
		i++;
	}
	diag_error(loc_of(kw), "syntax error, a __device__ function without "
		   "its body or ';'");
}

/* the directive at i (its '#'): 1 #define, 2 #undef, else 0 */
static int is_define(long i)
{
	i++;
	while (i < src_len && (src[i] == ' ' || src[i] == '\t'))
		i++;
	if (!strncmp(src + i, "define", 6) && !ident_char(src[i + 6]))
		return 1;
	return !strncmp(src + i, "undef", 5) && !ident_char(src[i + 5]) ? 2 : 0;
}

/* a #define's macro name: where it is, its length */
static long macro_name(long i, long *len)
{
	i++;
	while (src[i] == ' ' || src[i] == '\t')
		i++;
	i += 6;
	while (src[i] == ' ' || src[i] == '\t')
		i++;
	for (*len = 0; ident_char(src[i + *len]); (*len)++)
		;
	return i;
}

void device_code_scan(const char *text)
{
	long i = 0, j, n;
	int depth = 0;

	src = text;
	src_len = (long)strlen(text);
	while (i < src_len) {
		j = skip_co(i);
		if (j == i)
			j = skip_noncode(i);
		if (j != i && src[i] == '#' && !depth && is_define(i))
			add_segment(i, j, 0, 0, false);
		if (j != i) {
			i = j;
			continue;
		}
		if (src[i] == '{' || src[i] == '}') {
			depth += src[i] == '{' ? 1 : -1;
			i++;
			continue;
		}
		n = word_at(i, src_len);
		if (!n) {
			i++;
			continue;
		}
		if (depth || !((n == 7 && !strncmp(src + i, "__cok__", 7)) ||
			       (n == 10 && !strncmp(src + i, "__device__", 10)))) {
			i += n;
			continue;
		}
		if (n == 10) {
			j = device_fn_end(i);
			add_segment(i, j, i, j, true);
			i = j;
			continue;
		}
		/* __cok__ { ... }: what is between the braces */
		j = i + n;
		for (;;) {
			long k = skip_noncode(j);

			if (k != j) {
				j = k;
			} else if (j < src_len && isspace((unsigned char)src[j])) {
				j++;
			} else {
				break;
			}
		}
		if (j >= src_len || src[j] != '{')
			diag_error(loc_of(j), "syntax error, expected '{' after __cok__");
		n = closing_brace(j, "a __cok__ block");
		add_segment(j + 1, n, i, n + 1, false);
		i = n + 1;
	}
}

bool device_function(const char *name)
{
	int i;

	for (i = 0; i < nnames; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

void device_code_blank(char *host)
{
	long i;
	int s;

	for (s = 0; s < nsegs; s++)
		for (i = segs[s].blank_start; i < segs[s].blank_end; i++)
			if (host[i] != '\n')
				host[i] = ' ';
}

void device_code_emit(FILE *o)
{
	const char *p;
	int s, last = -1;

	for (s = 0; s < nsegs; s++)
		if (!segs[s].directive)
			last = s;
	if (last < 0)
		return;
	fputs("/* the program's device functions: its __device__ functions (made\n"
	      " * static) and __cok__ blocks, with CUDA's qualifiers */\n"
	      "#define __device__\n#define __host__\n"
	      "#define __forceinline__ __attribute__((always_inline)) inline\n", o);
	for (s = 0; s <= last; s++) {
		const struct segment *g = &segs[s];
		long start = g->start;

		fprintf(o, "#line %d \"", loc_of(start).line);
		for (p = diag_path(); *p; p++)
			fprintf(o, *p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
		fputs("\"\n", o);
		/* the column kept: `static` and four blanks for `__device__` */
		if (g->device_kw) {
			fputs("static    ", o);
			start += 10;
		}
		fprintf(o, "%.*s\n", (int)(g->end - start), src + start);
	}
	/* the kernels after them are npu-choreo's: the program's macros
	 * were expanded in its __co__ functions already */
	for (s = 0; s <= last; s++)
		if (segs[s].directive && is_define(segs[s].start) == 1) {
			long n, at = macro_name(segs[s].start, &n);

			fprintf(o, "#undef %.*s\n", (int)n, src + at);
		}
	fputc('\n', o);
}
