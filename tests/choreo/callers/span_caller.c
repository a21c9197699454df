/* SPDX-License-Identifier: MIT */
/*
 * span_caller: C calls of the __co__ functions of spans.co: symbolic
 * dimensions taken from the views (one symbol in two parameters, in two
 * orders), a returned spanned value the caller frees, scalar results,
 * device memory (npu_malloc) as well as pinned memory as parameters.
 */
#include "tap.h"
#include <npu/npu_choreo.h>
#include "spans.h"

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

static void test_scaled(void)
{
	float *a;
	struct npu_choreo_view out;
	const float *r;
	size_t i, n = 37;
	int ok = 1;

	MUST(npu_host_alloc((void **)&a, n * sizeof(float), NPU_HOST_ALLOC_MAPPED));
	for (i = 0; i < n; i++)
		a[i] = (float)i - 10.0f;
	memset(&out, 0, sizeof(out));
	ST(scaled(view(a, NPU_CHOREO_F32, 1, n, 0), 0.5f, &out), NPU_SUCCESS,
	   "scaled(f32[37], 0.5) returns");
	tap_ok(out.data && out.elem == NPU_CHOREO_F32 && out.rank == 1 && out.dims[0] == n,
	       "the result is an f32[37] view (rank %u, dims[0] %zu)", out.rank, out.dims[0]);
	r = out.data;
	for (i = 0; r && i < n; i++)
		if (r[i] != ((float)i - 10.0f) * 0.5f)
			ok = 0;
	tap_ok(r && ok, "scaled: a[i] * k");
	tap_ok(a[36] == 26.0f, "the argument is left as it was");
	npu_choreo_view_free(&out);
	MUST(npu_host_free(a));
}

static void test_grid(void)
{
	int32_t *g, *t;
	int32_t total = 0;
	size_t i, j, rows = 3, cols = 5;
	int ok = 1;
	void *dev;

	MUST(npu_host_alloc((void **)&g, rows * cols * sizeof(int32_t), NPU_HOST_ALLOC_MAPPED));
	MUST(npu_host_alloc((void **)&t, rows * cols * sizeof(int32_t), NPU_HOST_ALLOC_MAPPED));
	for (i = 0; i < rows * cols; i++)
		g[i] = (int32_t)(i * i) - 20;
	ST(grid_total(view(g, NPU_CHOREO_S32, 2, rows, cols), &total), NPU_SUCCESS,
	   "grid_total(s32[3, 5]) returns");
	tap_ok(total == 715, "grid_total = sum of i*i - 20 over 15 elements (%d)", (int)total);

	memset(t, 0, rows * cols * sizeof(int32_t));
	ST(transpose(view(g, NPU_CHOREO_S32, 2, rows, cols), view(t, NPU_CHOREO_S32, 2, cols, rows)),
	   NPU_SUCCESS, "transpose(s32[3, 5] -> s32[5, 3]) returns");
	for (i = 0; i < rows; i++)
		for (j = 0; j < cols; j++)
			if (t[j * rows + i] != g[i * cols + j])
				ok = 0;
	tap_ok(ok, "transpose: dst(j, i) = src(i, j), row-major");

	/* device memory as a parameter: the kernel reads it directly */
	MUST(npu_malloc(&dev, rows * cols * sizeof(int32_t)));
	MUST(npu_memcpy(dev, g, rows * cols * sizeof(int32_t), NPU_MEMCPY_HOST_TO_DEVICE));
	total = 0;
	ST(grid_total(view(dev, NPU_CHOREO_S32, 2, rows, cols), &total), NPU_SUCCESS,
	   "grid_total of device memory returns");
	tap_ok(total == 715, "grid_total of device memory (%d)", (int)total);
	MUST(npu_free(dev));
	MUST(npu_host_free(g));
	MUST(npu_host_free(t));
}

static void test_count(void)
{
	int64_t *v;
	size_t i, n = 20;
	int above = -1;

	MUST(npu_host_alloc((void **)&v, n * sizeof(int64_t), NPU_HOST_ALLOC_MAPPED));
	for (i = 0; i < n; i++)
		v[i] = (int64_t)i * 1000000000;
	ST(count_above(view(v, NPU_CHOREO_S64, 1, n, 0), 12000000000, 0, &above), NPU_SUCCESS,
	   "count_above(s64[20], 12e9, false) returns");
	tap_ok(above == 7, "count_above: 13e9 .. 19e9 (%d)", above);
	above = -1;
	ST(count_above(view(v, NPU_CHOREO_S64, 1, n, 0), 12000000000, 1, &above), NPU_SUCCESS,
	   "count_above(s64[20], 12e9, true) returns");
	tap_ok(above == 8, "count_above inclusive: 12e9 .. 19e9 (%d)", above);
	MUST(npu_host_free(v));
}

int main(void)
{
	tap_need_device();
	test_scaled();
	test_grid();
	test_count();
	return tap_done();
}
