// SPDX-License-Identifier: MIT
/*
 * json_escape_test - libnpu's trace string escaper (lib/npu_json.c) on the
 * host: exact output for each kind of character, and every output read
 * back by json-c's strict, UTF-8 validating tokener to the input (valid
 * UTF-8) or to the input with U+FFFD for each invalid byte.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "npu_json.h"

static char *escape(const char *s)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	npu_json_put_string(f, s);
	fclose(f);
	return out;
}

/* The escaped s parsed strictly back to a string, or NULL. */
static char *round_trip(const char *s)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o;
	char *json = escape(s), *back = NULL;

	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, json, (int)strlen(json));
	if (o && json_tokener_get_error(tok) == json_tokener_success &&
	    json_tokener_get_parse_end(tok) == strlen(json) &&
	    json_object_is_type(o, json_type_string))
		back = strdup(json_object_get_string(o));
	json_object_put(o);
	json_tokener_free(tok);
	free(json);
	return back;
}

static const struct {
	const char *in, *out;
} cases[] = {
	{ "gemm_f32", "\"gemm_f32\"" },
	{ "", "\"\"" },
	{ "say \"hi\"", "\"say \\\"hi\\\"\"" },
	{ "a\\b", "\"a\\\\b\"" },
	{ "/", "\"/\"" },
	{ "l1\nl2\tt\rr\bb\ff", "\"l1\\nl2\\tt\\rr\\bb\\ff\"" },
	{ "\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"" },
	{ "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80\"" },
	/* invalid UTF-8: cut, stray, overlong, surrogate, too large */
	{ "cut\xc3", "\"cut\\ufffd\"" },
	{ "\xff\x80", "\"\\ufffd\\ufffd\"" },
	{ "\xc0\xaf", "\"\\ufffd\\ufffd\"" },
	{ "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"" },
	{ "\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"" },
	{ "\xe2\x9c", "\"\\ufffd\\ufffd\"" },
};

TEST(exact_output)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = escape(cases[i].in);

		ASSERT_NE(NULL, got);
		EXPECT_STREQ(cases[i].out, got) {
			TH_LOG("case %zu", i);
		}
		free(got);
	}
}

TEST(null_is_empty)
{
	char *got = escape(NULL);

	ASSERT_NE(NULL, got);
	EXPECT_STREQ("\"\"", got);
	free(got);
}

/* Every single byte, and hostile names a kernel could carry. */
TEST(round_trip_strict)
{
	static const char *const names[] = {
		"q\"b\\s\nl\tt\xc3\xa9\xe2\x9c\x93",
		"</script><b>&amp;",
		"\\u0000 is not a NUL",
		"\xe5\x90\x8d\xe5\x89\x8d",
	};
	char in[2] = { 0, 0 }, *back;
	int c;
	size_t i;

	for (c = 1; c < 256; c++) {
		in[0] = (char)c;
		back = round_trip(in);
		ASSERT_NE(NULL, back) {
			TH_LOG("byte 0x%02x does not read back", c);
		}
		if (c < 0x80) {
			EXPECT_STREQ(in, back);
		} else {
			EXPECT_STREQ("\xef\xbf\xbd", back);	/* U+FFFD */
		}
		free(back);
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		back = round_trip(names[i]);
		ASSERT_NE(NULL, back);
		EXPECT_STREQ(names[i], back);
		free(back);
	}
}

/* Random bytes: the output is always strict JSON in valid UTF-8. */
TEST(random_bytes_stay_valid)
{
	char buf[40], *back;
	int n, i;

	srand(18);
	for (n = 0; n < 20000; n++) {
		int len = rand() % (int)(sizeof(buf) - 1);

		for (i = 0; i < len; i++)
			buf[i] = (char)(1 + rand() % 255);
		buf[len] = 0;
		back = round_trip(buf);
		ASSERT_NE(NULL, back) {
			TH_LOG("random case %d does not read back", n);
		}
		free(back);
	}
}

TEST_HARNESS_MAIN
