/* SPDX-License-Identifier: MIT */
/*
 * dims_mismatch: calls of a __co__ function (dims.co) with arguments that
 * break its signature: two lengths for one symbol M, another element
 * type, another rank, memory the device cannot reach. Each must return
 * NPU_ERROR_INVALID_VALUE with "dims.co:LINE: error: ..." naming the
 * parameter on stderr, and launch nothing; a good call still works after.
 */
#include "tap.h"

#include <fcntl.h>
#include <regex.h>

#include <npu/npu_choreo.h>
#include "dims.h"

static struct npu_choreo_view view(void *data, enum npu_choreo_elem elem,
				   unsigned int rank, size_t d0, size_t d1)
{
	struct npu_choreo_view v;

	memset(&v, 0, sizeof(v));
	v.data = data;
	v.elem = elem;
	v.rank = rank;
	v.dims[0] = d0;
	v.dims[1] = d1;
	return v;
}

/* Call add_into with stderr captured into buf. */
static npu_status_t call_captured(struct npu_choreo_view first,
				  struct npu_choreo_view second,
				  char *buf, size_t size)
{
	char path[] = "/tmp/dims_mismatch.XXXXXX";
	int fd = mkstemp(path), saved;
	npu_status_t st;
	ssize_t len;

	if (fd < 0) {
		tap_ok(0, "mkstemp");
		exit(tap_done() | 1);
	}
	unlink(path);
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	st = add_into(first, second);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	lseek(fd, 0, SEEK_SET);
	len = read(fd, buf, size - 1);
	buf[len > 0 ? len : 0] = '\0';
	close(fd);
	return st;
}

/* "dims.co:LINE: error: " followed by a message naming param */
static int names_param(const char *msg, const char *param)
{
	char pattern[128];
	regex_t re;
	int ok;

	snprintf(pattern, sizeof(pattern),
		 "dims\\.co:[0-9]+: error: .*\\b%s\\b", param);
	if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB))
		return 0;
	ok = regexec(&re, msg, 0, NULL, 0) == 0;
	regfree(&re);
	return ok;
}

static void check_refused(const char *what, struct npu_choreo_view first,
			  struct npu_choreo_view second, const char *param,
			  const float *watch, float watch_value)
{
	char msg[4096];
	npu_status_t st = call_captured(first, second, msg, sizeof(msg));

	tap_ok(st == NPU_ERROR_INVALID_VALUE, "%s: NPU_ERROR_INVALID_VALUE (%s)",
	       what, npu_status_name(st));
	tap_ok(names_param(msg, param), "%s: the message names '%s'", what, param);
	if (!names_param(msg, param))
		tap_diag("stderr was: %s", msg);
	MUST(npu_device_synchronize());
	tap_ok(*watch == watch_value, "%s: nothing was launched", what);
}

int main(void)
{
	float *first, *second, *pageable;
	int32_t *ints;
	size_t i;

	tap_need_device();
	MUST(npu_host_alloc((void **)&first, 8 * sizeof(float), NPU_HOST_ALLOC_MAPPED));
	MUST(npu_host_alloc((void **)&second, 8 * sizeof(float), NPU_HOST_ALLOC_MAPPED));
	MUST(npu_host_alloc((void **)&ints, 8 * sizeof(int32_t), NPU_HOST_ALLOC_MAPPED));
	pageable = calloc(8, sizeof(float));
	for (i = 0; i < 8; i++) {
		first[i] = (float)i;
		second[i] = 100.0f;
		ints[i] = 1;
	}

	check_refused("M = 8 for first, 6 for second",
		      view(first, NPU_CHOREO_F32, 1, 8, 0),
		      view(second, NPU_CHOREO_F32, 1, 6, 0), "second", &first[1], 1.0f);
	check_refused("s32 data for f32 second",
		      view(first, NPU_CHOREO_F32, 1, 8, 0),
		      view(ints, NPU_CHOREO_S32, 1, 8, 0), "second", &first[1], 1.0f);
	check_refused("rank 2 for f32[M] first",
		      view(first, NPU_CHOREO_F32, 2, 2, 4),
		      view(second, NPU_CHOREO_F32, 1, 8, 0), "first", &first[1], 1.0f);
	check_refused("pageable memory for second",
		      view(first, NPU_CHOREO_F32, 1, 8, 0),
		      view(pageable, NPU_CHOREO_F32, 1, 8, 0), "second", &first[1], 1.0f);

	ST(add_into(view(first, NPU_CHOREO_F32, 1, 8, 0), view(second, NPU_CHOREO_F32, 1, 8, 0)),
	   NPU_SUCCESS, "a good call after the refused ones");
	{
		int ok = 1;

		for (i = 0; i < 8; i++)
			if (first[i] != (float)i + 100.0f)
				ok = 0;
		tap_ok(ok, "first[i] + second[i] (first[3] = %g)", first[3]);
	}
	free(pageable);
	MUST(npu_host_free(first));
	MUST(npu_host_free(second));
	MUST(npu_host_free(ints));
	return tap_done();
}
