// SPDX-License-Identifier: MIT
/*
 * npu-json-check - strict JSON validation of the files the project writes
 * (traces, bench results, npu-smi -j): json-c's strict tokener with UTF-8
 * validation, the whole input one value, and no NaN or Infinity anywhere.
 *
 *   npu-json-check [-q] FILE...     (- reads standard input)
 *
 * Prints "ok FILE" or "FILE: byte N: what is wrong" per file; exits 1 if
 * any file is not strict JSON.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* json-c accepts NaN and Infinity literals even when strict: reject them. */
static int all_finite(struct json_object *o)
{
	size_t i, n;

	switch (json_object_get_type(o)) {
	case json_type_double:
		return isfinite(json_object_get_double(o));
	case json_type_array:
		n = json_object_array_length(o);
		for (i = 0; i < n; i++)
			if (!all_finite(json_object_array_get_idx(o, i)))
				return 0;
		return 1;
	case json_type_object: {
		json_object_object_foreach(o, key, val) {
			(void)key;
			if (!all_finite(val))
				return 0;
		}
		return 1;
	}
	default:
		return 1;
	}
}

/*
 * json-c's strict mode still takes single-quoted strings and raw control
 * characters inside strings; RFC 8259 allows neither. Returns the offset
 * of the first such byte + 1, or 0.
 */
static size_t lexical_error(const char *b, size_t len)
{
	int in_string = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)b[i];

		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = 0;
			else if (c < 0x20)
				return i + 1;
		} else if (c == '"') {
			in_string = 1;
		} else if (c == '\'') {
			return i + 1;
		}
	}
	return 0;
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	size_t cap = 1 << 16, got;
	char *buf, *nb;

	if (!f)
		return NULL;
	buf = malloc(cap);
	*len = 0;
	while (buf && (got = fread(buf + *len, 1, cap - *len, f)) > 0) {
		*len += got;
		if (*len == cap) {
			nb = realloc(buf, cap *= 2);
			if (!nb) {
				free(buf);
				buf = NULL;
			}
			buf = nb;
		}
	}
	if (buf && ferror(f)) {
		free(buf);
		buf = NULL;
	}
	if (f != stdin)
		fclose(f);
	return buf;
}

/* 0 if path holds exactly one strict JSON value */
static int check(const char *path, int quiet)
{
	struct json_tokener *tok;
	struct json_object *root;
	enum json_tokener_error err;
	size_t len, end, lex;
	char *buf = read_all(path, &len);
	int rc = 1;

	if (!buf) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno ? errno : ENOMEM));
		return 1;
	}
	tok = json_tokener_new();
	if (!tok) {
		free(buf);
		fprintf(stderr, "%s: out of memory\n", path);
		return 1;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	root = json_tokener_parse_ex(tok, buf, (int)len);
	err = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	while (end < len && strchr(" \t\r\n", buf[end]))
		end++;
	if (len > (size_t)0x7fffffff)
		fprintf(stderr, "%s: too large (%zu bytes)\n", path, len);
	else if (err == json_tokener_continue || (!root && err == json_tokener_success))
		fprintf(stderr, "%s: byte %zu: unexpected end of input\n", path, len);
	else if (err != json_tokener_success)
		fprintf(stderr, "%s: byte %zu: %s\n", path, end, json_tokener_error_desc(err));
	else if (end != len)
		fprintf(stderr, "%s: byte %zu: more after the JSON value\n", path, end);
	else if ((lex = lexical_error(buf, len)))
		fprintf(stderr, "%s: byte %zu: a single quote or a raw control character\n",
			path, lex - 1);
	else if (!all_finite(root))
		fprintf(stderr, "%s: a number is NaN or infinite\n", path);
	else
		rc = 0;
	if (!rc && !quiet)
		printf("ok %s\n", path);
	json_object_put(root);
	json_tokener_free(tok);
	free(buf);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int quiet = 0, rc = 0, c, i;

	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		if (c == 'q') {
			quiet = 1;
		} else {
			fprintf(c == 'h' ? stdout : stderr,
				"usage: npu-json-check [-q|--quiet] FILE...\n"
				"Check that each FILE (- for standard input) is one strict JSON\n"
				"value in UTF-8, without NaN or Infinity.\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind == argc) {
		fprintf(stderr, "usage: npu-json-check [-q|--quiet] FILE...\n");
		return 2;
	}
	for (i = optind; i < argc; i++)
		rc |= check(argv[i], quiet);
	return rc;
}
