// SPDX-License-Identifier: MIT
/*
 * trace_json_test - libnpu's trace JSON read back strictly (json-c, UTF-8
 * validated): kernels with hostile names (kernels/hostile_names.c) keep
 * their names exactly, a name cut inside a UTF-8 character by the 32-byte
 * trace record ends in U+FFFD, and one cross-stream event dependency
 * becomes one flow ("s" in the command before the record, "f" bound to
 * the command after the wait), on the right stream lanes.
 */
#include <json-c/json.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "npu.h"

#define HOSTILE		"q\"b\\s\nl\tt\xc3\xa9\xe2\x9c\x93"
#define CUT		"cut_at_thirty_one_bytes_______\xc3\xa9_tail"
#define CUT_IN_TRACE	"cut_at_thirty_one_bytes_______\xef\xbf\xbd"

static struct json_object *parse_strict(const char *path)
{
	struct json_tokener *tok;
	struct json_object *o;
	char *buf = NULL;
	size_t cap = 0;
	ssize_t len;
	FILE *f = fopen(path, "r");

	if (!f)
		return NULL;
	len = getdelim(&buf, &cap, 0, f);	/* the whole file (no NUL in JSON) */
	fclose(f);
	if (len <= 0) {
		free(buf);
		return NULL;
	}
	tok = json_tokener_new();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, buf, (int)len);
	if (o && (json_tokener_get_error(tok) != json_tokener_success ||
		  strspn(buf + json_tokener_get_parse_end(tok), " \t\r\n") !=
		  (size_t)len - json_tokener_get_parse_end(tok))) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	free(buf);
	return o;
}

static const char *str(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static double num(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : NAN;
}

TEST(hostile_names_and_flows)
{
	char self[4096], path[4200];
	npu_device_prop prop;
	npu_module_t m;
	npu_function_t fh, fc;
	npu_stream_t s1, s2;
	npu_event_t e;
	struct json_object *root, *evs;
	struct json_object *xh = NULL, *xc = NULL, *fs = NULL, *ff = NULL;
	int n_hostile = 0, n_cut = 0, n_s = 0, n_f = 0;
	size_t i, n;
	ssize_t sl;

	if (npu_device_get_properties(&prop, 0) != NPU_SUCCESS)
		SKIP(return, "no npu device");
	if (!(prop.features & NPU_FEATURE_USER_KERNELS))
		SKIP(return, "the device runs no user kernels");
	sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ASSERT_GT(sl, 0);
	self[sl] = 0;
	snprintf(path, sizeof(path), "%s/kernels/hostile_names.npu", dirname(self));
	ASSERT_EQ(NPU_SUCCESS, npu_module_load(&m, path)) {
		TH_LOG("%s: %s", path, npu_last_error_message());
	}
	ASSERT_EQ(NPU_SUCCESS, npu_module_get_function(&fh, m, HOSTILE));
	ASSERT_EQ(NPU_SUCCESS, npu_module_get_function(&fc, m, CUT));
	ASSERT_EQ(NPU_SUCCESS, npu_stream_create(&s1, NPU_STREAM_NON_BLOCKING, 0));
	ASSERT_EQ(NPU_SUCCESS, npu_stream_create(&s2, NPU_STREAM_NON_BLOCKING, 0));
	ASSERT_EQ(NPU_SUCCESS, npu_event_create(&e, 0));

	ASSERT_EQ(NPU_SUCCESS, npu_profiler_start());
	ASSERT_EQ(NPU_SUCCESS, npu_launch_kernel(fh, npu_grid(1, 1, 1), npu_grid(1, 1, 1),
						 0, s1, NULL));
	ASSERT_EQ(NPU_SUCCESS, npu_event_record(e, s1));
	ASSERT_EQ(NPU_SUCCESS, npu_stream_wait_event(s2, e, 0));
	ASSERT_EQ(NPU_SUCCESS, npu_launch_kernel(fc, npu_grid(1, 1, 1), npu_grid(1, 1, 1),
						 0, s2, NULL));
	/* no dependency: no flow */
	ASSERT_EQ(NPU_SUCCESS, npu_launch_kernel(fh, npu_grid(1, 1, 1), npu_grid(1, 1, 1),
						 0, s1, NULL));
	ASSERT_EQ(NPU_SUCCESS, npu_device_synchronize());
	ASSERT_EQ(NPU_SUCCESS, npu_trace_write_json("trace-names.json"));
	ASSERT_EQ(NPU_SUCCESS, npu_profiler_stop());

	root = parse_strict("trace-names.json");
	ASSERT_NE(NULL, root) {
		TH_LOG("trace-names.json is not strict JSON in UTF-8");
	}
	ASSERT_TRUE(json_object_object_get_ex(root, "traceEvents", &evs));
	n = json_object_array_length(evs);
	for (i = 0; i < n; i++) {
		struct json_object *ev = json_object_array_get_idx(evs, i);
		const char *ph = str(ev, "ph"), *name = str(ev, "name"), *cat = str(ev, "cat");

		if (!ph || !name)
			continue;
		if (!strcmp(ph, "X") && !strcmp(name, HOSTILE)) {
			n_hostile++;
			if (cat && !strcmp(cat, "stream") && !xh)
				xh = ev;	/* the first, on s1 */
		} else if (!strcmp(ph, "X") && !strcmp(name, CUT_IN_TRACE)) {
			n_cut++;
			if (cat && !strcmp(cat, "stream"))
				xc = ev;
		} else if (!strcmp(ph, "s")) {
			n_s++;
			fs = ev;
		} else if (!strcmp(ph, "f")) {
			n_f++;
			ff = ev;
		}
	}
	EXPECT_EQ(4, n_hostile);	/* two launches, ring and stream lane each */
	EXPECT_EQ(2, n_cut);
	ASSERT_EQ(1, n_s);
	ASSERT_EQ(1, n_f);
	ASSERT_NE(NULL, xh);
	ASSERT_NE(NULL, xc);
	EXPECT_EQ(num(fs, "id"), num(ff, "id"));
	EXPECT_STREQ("e", str(ff, "bp"));
	/* each end on its command's stream lane, inside that command */
	EXPECT_EQ(num(xh, "tid"), num(fs, "tid"));
	EXPECT_EQ(num(xc, "tid"), num(ff, "tid"));
	EXPECT_NE(num(xh, "tid"), num(xc, "tid"));
	EXPECT_TRUE(num(fs, "ts") >= num(xh, "ts") - 0.001 &&
		    num(fs, "ts") <= num(xh, "ts") + num(xh, "dur") + 0.001);
	EXPECT_TRUE(num(ff, "ts") >= num(xc, "ts") - 0.001 &&
		    num(ff, "ts") <= num(xc, "ts") + num(xc, "dur") + 0.001);
	json_object_put(root);
	npu_event_destroy(e);
	npu_stream_destroy(s1);
	npu_stream_destroy(s2);
	npu_module_unload(m);
}

TEST_HARNESS_MAIN
