/* SPDX-License-Identifier: MIT */
/*
 * lib_libc: kernels get a C library and libm (Debian's picolibc, linked by
 * npu-cc; kernels/libc.c). On the device: expf within 1 ulp of the host's
 * libm, sqrtf and fmaf exactly equal (IEEE correctly rounded both sides),
 * memcpy, snprintf giving the host's text, errno per thread (thread-local
 * storage), and the device printf still the device printf with <stdio.h>
 * included.
 */
#include "tap.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#define N 1024u
#define NF 32u			/* snprintf's threads: formatting doubles is long */
#define T 16u			/* threads per block (the default unit's slots) */

static uint32_t bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

/* distance in units in the last place between two finite floats */
static uint64_t ulps(float a, float b)
{
	int64_t x = (int32_t)bits(a), y = (int32_t)bits(b);

	if (x < 0)
		x = INT32_MIN - x;
	if (y < 0)
		y = INT32_MIN - y;
	return (uint64_t)(x > y ? x - y : y - x);
}

static void *dev_copy(const void *src, size_t n)
{
	void *d;

	MUST(npu_malloc(&d, n));
	MUST(npu_memcpy(d, src, n, NPU_MEMCPY_HOST_TO_DEVICE));
	return d;
}

static void launch(npu_function_t f, unsigned n, void **args)
{
	MUST(npu_launch_kernel(f, (npu_dim3){ (n + T - 1) / T, 1, 1 },
			       (npu_dim3){ T, 1, 1 }, 0, NULL, args));
	MUST(npu_device_synchronize());
}

int main(void)
{
	static float x[N], y[N], z[N], out[4 * N];
	static char text[64 * N];
	static int errs[2 * N];
	npu_function_t math, format, errnos, hello;
	uint64_t worst_exp = 0;
	unsigned bad_sqrt = 0, bad_fma = 0, bad_copy = 0, bad_text = 0;
	unsigned bad_errno = 0, n = N;
	void *dx, *dy, *dz, *dout, *dtext, *derrs;
	npu_device_prop prop;
	npu_module_t m;

	tap_need_user_module(&prop, &m, "kernels/libc.npu");
	MUST(npu_module_get_function(&math, m, "math"));
	MUST(npu_module_get_function(&format, m, "format"));
	MUST(npu_module_get_function(&errnos, m, "errnos"));
	MUST(npu_module_get_function(&hello, m, "hello"));

	/* expf's whole finite range, subnormal results included; odd
	 * fractions and signs so that every path of the polynomials runs */
	srand(33);
	for (unsigned i = 0; i < N; i++) {
		x[i] = -103.0f + 192.0f * (float)i / N +
		       (float)rand() / (float)RAND_MAX;
		y[i] = (float)rand() / (float)RAND_MAX * 1e3f - 5e2f;
		z[i] = (float)rand() / (float)RAND_MAX * 1e-3f;
	}
	x[0] = 0.0f;
	x[1] = -0.0f;
	x[2] = 1.0f;
	dx = dev_copy(x, sizeof(x));
	dy = dev_copy(y, sizeof(y));
	dz = dev_copy(z, sizeof(z));
	MUST(npu_malloc(&dout, sizeof(out)));
	{
		void *args[] = { &dx, &dy, &dz, &dout, &n };

		launch(math, N, args);
	}
	MUST(npu_memcpy(out, dout, sizeof(out), NPU_MEMCPY_DEVICE_TO_HOST));
	for (unsigned i = 0; i < N; i++) {
		uint64_t u = ulps(out[4 * i], expf(x[i]));

		if (u > worst_exp)
			worst_exp = u;
		bad_sqrt += bits(out[4 * i + 1]) != bits(sqrtf(fabsf(x[i])));
		bad_fma += bits(out[4 * i + 2]) != bits(fmaf(x[i], y[i], z[i]));
		bad_copy += bits(out[4 * i + 3]) != bits(x[i]);
	}
	tap_ok(worst_exp <= 1, "expf over [-103, 90]: within 1 ulp of the "
	       "host's (worst %llu ulp)", (unsigned long long)worst_exp);
	tap_ok(!bad_sqrt, "sqrtf equals the host's bit for bit (%u differ)",
	       bad_sqrt);
	tap_ok(!bad_fma, "fmaf equals the host's bit for bit (%u differ)",
	       bad_fma);
	tap_ok(!bad_copy, "memcpy copies (%u differ)", bad_copy);

	MUST(npu_malloc(&dtext, sizeof(text)));
	{
		unsigned nf = NF;
		void *args[] = { &dtext, &dx, &nf };

		launch(format, NF, args);
	}
	MUST(npu_memcpy(text, dtext, sizeof(text), NPU_MEMCPY_DEVICE_TO_HOST));
	for (unsigned i = 0; i < NF; i++) {
		char want[64];

		snprintf(want, sizeof(want), "%u|%-5d|%08.3f|%.6e|%s|%#x", i,
			 -(int)i, x[i], x[i], i % 2 ? "odd" : "even", i * 77);
		if (strncmp(text + 64 * i, want, 64)) {
			if (!bad_text++)
				tap_diag("device \"%.64s\", host \"%s\"",
					 text + 64 * i, want);
		}
	}
	tap_ok(!bad_text, "snprintf writes what the host's writes (%u of %u "
	       "differ), e.g. \"%.64s\"", bad_text, NF, text + 64 * 5);

	MUST(npu_malloc(&derrs, sizeof(errs)));
	{
		unsigned nt = T;	/* one block: the barrier spans them all */
		void *args[] = { &derrs, &nt };

		launch(errnos, T, args);
	}
	MUST(npu_memcpy(errs, derrs, sizeof(errs), NPU_MEMCPY_DEVICE_TO_HOST));
	for (unsigned i = 0; i < T; i++)
		bad_errno += errs[2 * i] != (i % 2 ? ERANGE : 0) ||
			     errs[2 * i + 1] != !(i % 2);
	tap_ok(!bad_errno, "errno is each thread's own: ERANGE where strtol "
	       "overflowed, 0 in the others (%u threads wrong)", bad_errno);

	{
		char tmpl[] = "/tmp/lib_libc.XXXXXX";
		int t = mkstemp(tmpl), saved = dup(1);
		unsigned tag = 42;
		void *args[] = { &tag };
		char buf[256] = "";
		FILE *f;

		fflush(stdout);
		dup2(t, 1);
		MUST(npu_launch_kernel(hello, (npu_dim3){ 1, 1, 1 },
				       (npu_dim3){ 1, 1, 1 }, 0, NULL, args));
		MUST(npu_device_synchronize());
		fflush(stdout);
		dup2(saved, 1);
		close(saved);
		close(t);
		f = fopen(tmpl, "r");
		if (f) {
			size_t r = fread(buf, 1, sizeof(buf) - 1, f);

			buf[r] = 0;
			fclose(f);
		}
		unlink(tmpl);
		tap_ok(strstr(buf, "hello from the device 42\n") != NULL,
		       "printf with <stdio.h> included is the device printf "
		       "(got \"%.60s\")", buf);
	}

	npu_free(dx);
	npu_free(dy);
	npu_free(dz);
	npu_free(dout);
	npu_free(dtext);
	npu_free(derrs);
	MUST(npu_module_unload(m));
	return tap_done();
}
