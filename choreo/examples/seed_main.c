// SPDX-License-Identifier: MIT
/* Calls seed.co's functions from C: views of mapped pinned memory and of
 * device memory, and the checks of a bad call. */
#include <stdio.h>
#include <string.h>

#include "seed.h"

#define CHECK(x) do { npu_status_t st_ = (x); if (st_) { \
	fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, \
		npu_status_name(st_)); return 1; } } while (0)

int main(void)
{
	struct npu_choreo_view a = { .elem = NPU_CHOREO_F32, .rank = 1, .dims = { 16 } };
	struct npu_choreo_view b = { .elem = NPU_CHOREO_F32, .rank = 1, .dims = { 8 } };
	struct npu_choreo_view v = { .elem = NPU_CHOREO_S32, .rank = 1, .dims = { 5 } };
	npu_stream_t s0, s1;
	float *fa, *fb;
	int *iv, i, bad = 0;
	int32_t total = 0;
	npu_status_t st;

	CHECK(npu_stream_create(&s0, 0, 0));
	CHECK(npu_stream_create(&s1, 0, 0));
	CHECK(npu_host_alloc(&a.data, 16 * sizeof(float), NPU_HOST_ALLOC_MAPPED));
	CHECK(npu_host_alloc(&b.data, 8 * sizeof(float), NPU_HOST_ALLOC_MAPPED));
	CHECK(npu_host_alloc(&v.data, 5 * sizeof(int), NPU_HOST_ALLOC_MAPPED));
	fa = a.data;
	fb = b.data;
	iv = v.data;
	for (i = 0; i < 16; i++)
		fa[i] = (float)i;
	for (i = 0; i < 8; i++)
		fb[i] = (float)(10 * i);
	for (i = 0; i < 5; i++)
		iv[i] = i * i;
	CHECK(foo(s0, s1, a, b));
	CHECK(npu_device_synchronize());
	CHECK(bar(s0, a));
	for (i = 0; i < 16; i++)
		if (fa[i] != 2.0f * i + (i < 8)) {
			printf("a[%d] = %g\n", i, fa[i]);
			bad = 1;
		}
	for (i = 0; i < 8; i++)
		if (fb[i] != 10.0f * i + 1) {
			printf("b[%d] = %g\n", i, fb[i]);
			bad = 1;
		}
	CHECK(sum(v, &total));
	printf("sum %d\n", total);
	/* bad calls: launch nothing, say why */
	a.rank = 2;
	st = bar(s0, a);
	printf("rank 2: %s\n", npu_status_name(st));
	a.rank = 1;
	a.elem = NPU_CHOREO_S32;
	st = bar(s0, a);
	printf("s32: %s\n", npu_status_name(st));
	a.elem = NPU_CHOREO_F32;
	{
		static float pageable[16];
		struct npu_choreo_view p = a;

		p.data = pageable;
		st = bar(s0, p);
		printf("pageable: %s\n", npu_status_name(st));
	}
	{
		void *d;

		CHECK(npu_malloc(&d, 16 * sizeof(float)));
		CHECK(npu_memset(d, 0, 16 * sizeof(float)));
		a.data = d;
		CHECK(bar(s0, a));
		CHECK(npu_memcpy(fa, d, 16 * sizeof(float), NPU_MEMCPY_DEVICE_TO_HOST));
		printf("device memory: %g %g %g\n", fa[0], fa[7], fa[8]);
		/* sum reads its parameter on the host: not device memory */
		v.data = d;
		st = sum(v, &total);
		printf("sum of device memory: %s\n", npu_status_name(st));
		v.data = iv;
		CHECK(sum(v, &total));
		CHECK(npu_free(d));
	}
	{
		struct npu_choreo_view x = b, y = b;

		y.dims[0] = 4;	/* N is 8 by x */
		st = axpy(2.0f, x, y);
		printf("N mismatch: %s\n", npu_status_name(st));
		CHECK(axpy(2.0f, b, b));
		printf("axpy: %g %g\n", fb[0], fb[7]);
		bad |= fb[7] != 3.0f * 71;
	}
	printf("%s\n", bad || total != 30 ? "FAILED" : "seed ok");
	return bad || total != 30;
}
