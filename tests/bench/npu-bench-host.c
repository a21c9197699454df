// SPDX-License-Identifier: MIT
/*
 * npu-bench-host - the host floors of tests/bench/run.sh: memcpy bandwidth
 * and a plain reference GEMM on the host CPU, measured right before the
 * guest runs (the QEMU process that runs the device's copies and kernels
 * runs on this same host).
 *
 *   npu-bench-host [--tiny] [--trials N]   prints JSON on stdout
 *
 * memcpy: 16 MiB buffers (the size npu-bench copies), glibc memcpy, MB/s =
 * 1e6 bytes/s. GEMM: f32 n x n x n (n = 512), the i-k-j triple loop (no
 * blocking, no SIMD intrinsics; gcc -O2 may vectorise the inner loop), one
 * thread: the kind of code a device model would run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* A measured number, or null if it is not finite (JSON has no NaN). */
static struct json_object *num(double v)
{
	return isfinite(v) ? json_object_new_double(v) : NULL;
}

static void add_stat(struct json_object *root, const char *key, double *v, int n)
{
	struct json_object *o = json_object_new_object();

	qsort(v, n, sizeof(double), cmp_d);
	json_object_object_add(o, "median", num(n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2));
	json_object_object_add(o, "min", num(v[0]));
	json_object_object_add(o, "max", num(v[n - 1]));
	json_object_object_add(o, "trials", json_object_new_int(n));
	json_object_object_add(root, key, o);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "tiny", no_argument, NULL, 't' },
		{ "trials", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int tiny = 0, trials = 7, t, i, c;
	char *end;
	long v;
	size_t bytes, n, e;
	double mc[64], gf[64];
	char *a, *b;
	float *A, *B, *C;
	struct json_object *root;

	while ((c = getopt_long(argc, argv, "tn:h", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			tiny = 1;
			break;
		case 'n':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 1 || v > 64) {
				fprintf(stderr, "npu-bench-host: --trials: '%s' is not a number "
					"in 1..64\n", optarg);
				return 2;
			}
			trials = (int)v;
			break;
		case 'h':
			printf("usage: npu-bench-host [OPTION]...\n"
			       "Measure the host floors of make bench (memcpy bandwidth, a\n"
			       "reference GEMM) and print them as JSON on stdout.\n\n"
			       "  -t, --tiny       tiny sizes (a quick check, not a measurement)\n"
			       "  -n, --trials N   trials per figure, 1..64 (default 7)\n"
			       "  -h, --help       print this help and exit\n");
			return 0;
		default:	/* getopt has said what was wrong */
			fprintf(stderr, "Try 'npu-bench-host --help' for more information.\n");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "npu-bench-host: unexpected argument '%s'\n"
			"Try 'npu-bench-host --help' for more information.\n", argv[optind]);
		return 2;
	}
	bytes = tiny ? 65536 : 16u << 20;
	n = tiny ? 32 : 512;
	e = n * n;
	a = malloc(bytes);
	b = malloc(bytes);
	A = malloc(e * 4);
	B = malloc(e * 4);
	C = malloc(e * 4);
	if (!a || !b || !A || !B || !C)
		return 1;
	memset(a, 1, bytes);
	memset(b, 2, bytes);
	for (i = 0; i < (int)e; i++) {
		A[i] = (float)((i * 7) % 13) / 13.0f;
		B[i] = (float)((i * 5) % 11) / 11.0f;
	}
	for (t = 0; t < trials; t++) {
		double t0 = now_s();
		int reps = tiny ? 1 : 4, r;
		size_t p, q, k;

		for (r = 0; r < reps; r++) {
			memcpy(r % 2 ? a : b, r % 2 ? b : a, bytes);
			__asm__ volatile("" : : "r"(a), "r"(b) : "memory");
		}
		mc[t] = bytes * (double)reps / (now_s() - t0) / 1e6;

		t0 = now_s();
		memset(C, 0, e * 4);
		for (p = 0; p < n; p++)
			for (k = 0; k < n; k++) {
				float x = A[p * n + k];

				for (q = 0; q < n; q++)
					C[p * n + q] += x * B[k * n + q];
			}
		__asm__ volatile("" : : "r"(C) : "memory");
		gf[t] = 2.0 * n * n * n / (now_s() - t0) / 1e9;
	}
	root = json_object_new_object();
	json_object_object_add(root, "gemm_n", json_object_new_int64((int64_t)n));
	json_object_object_add(root, "gemm_reference", json_object_new_string(
				       "i-k-j triple loop, f32, one thread, gcc -O2"));
	add_stat(root, "host_memcpy_mbps", mc, trials);
	add_stat(root, "host_gemm_gflops", gf, trials);
	printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
						      JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(root);
	return 0;
}
