/* SPDX-License-Identifier: MIT */
/*
 * lib_builtins_launch: npu_launch() of a built-in kernel runs libnpu's
 * kernel library (the code of lib/kernels/builtins.c embedded in
 * libnpu.so), and so do graph nodes and stream capture:
 *   - results bit for bit as the host reference of the code's order
 *     (tests/common/npu_builtin_ref.h): gemm with each transpose (its
 *     fused multiply-adds), col_sum, reduce_sum, argmax, vadd;
 *   - a graph node and a captured launch give the same bits;
 *   - the library's argument limits: sizes, flags, rows without
 *     columns; an out-of-range label stops the code and the error says
 *     so; npu_device_reset recovers.
 */
#include "tap.h"
#include "../common/npu_builtin_ref.h"

#include <math.h>

static unsigned rng = 4242;

static float rnd_f(void)
{
	rng = rng * 1103515245u + 12345u;
	return ((float)((rng >> 8) % 20001) - 10000.0f) / 997.0f;
}

static void *dev_copy(const void *h, size_t bytes)
{
	void *d;

	MUST(npu_malloc(&d, bytes ? bytes : 4));
	if (bytes)
		MUST(npu_memcpy(d, h, bytes, NPU_MEMCPY_HOST_TO_DEVICE));
	return d;
}

static unsigned differ(const float *a, const float *b, size_t n)
{
	unsigned bad = 0;

	for (size_t i = 0; i < n; i++)
		bad += !!memcmp(&a[i], &b[i], 4);
	return bad;
}

#define M 40
#define N 24
#define K 50

static float hA[M * K], hB[K * N], hC[M * N];

static void gemm_args(uint64_t *a, void *A, void *B, void *C, uint64_t fl)
{
	a[0] = npu_arg_ptr(A), a[1] = npu_arg_ptr(B), a[2] = npu_arg_ptr(C);
	a[3] = M, a[4] = N, a[5] = K, a[6] = fl;
	a[7] = npu_arg_f32(0.5f), a[8] = npu_arg_f32(-2.0f);
}

/* gemm by npu_launch, by a graph node and by a captured launch */
static void test_gemm(void)
{
	void *A = dev_copy(hA, sizeof(hA)), *B = dev_copy(hB, sizeof(hB));
	void *C = dev_copy(hC, sizeof(hC));
	float want[M * N], got[M * N];
	uint64_t a[9];

	for (uint64_t fl = 0; fl < 4; fl++) {
		memcpy(want, hC, sizeof(want));
		npu_ref_gemm_f32(hA, hB, want, M, N, K, fl, 0.5f, -2.0f);
		MUST(npu_memcpy(C, hC, sizeof(hC), NPU_MEMCPY_HOST_TO_DEVICE));
		gemm_args(a, A, B, C, fl);
		ST(npu_launch(NPU_K_GEMM_F32, npu_grid(1, 1, 1), a, 9, NULL,
			      NPU_LAUNCH_SYNC_DEVICE), NPU_SUCCESS,
		   "gemm %ux%ux%u flags %llu by npu_launch", M, N, K,
		   (unsigned long long)fl);
		MUST(npu_memcpy(got, C, sizeof(got), NPU_MEMCPY_DEVICE_TO_HOST));
		tap_ok(!differ(got, want, M * N), "  bit for bit as the code's "
		       "order (fused multiply-adds): %u of %u differ",
		       differ(got, want, M * N), M * N);
	}

	/* a graph node, then a captured launch, of flags 3 */
	{
		npu_kernel_node_params p = { .kernel = NPU_K_GEMM_F32,
					     .grid = { 1, 1, 1 }, .nargs = 9 };
		npu_graph_t g;
		npu_graph_exec_t x;
		npu_graph_node_t node;
		npu_stream_t s;

		memcpy(want, hC, sizeof(want));
		npu_ref_gemm_f32(hA, hB, want, M, N, K, 3, 0.5f, -2.0f);
		gemm_args(p.args, A, B, C, 3);
		MUST(npu_memcpy(C, hC, sizeof(hC), NPU_MEMCPY_HOST_TO_DEVICE));
		MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
		MUST(npu_graph_create(&g, 0));
		MUST(npu_graph_add_kernel_node(&node, g, NULL, 0, &p));
		ST(npu_graph_instantiate(&x, g, 0), NPU_SUCCESS,
		   "a graph of a gemm node instantiates");
		ST(npu_graph_launch(x, s), NPU_SUCCESS, "and launches");
		MUST(npu_stream_synchronize(s));
		MUST(npu_memcpy(got, C, sizeof(got), NPU_MEMCPY_DEVICE_TO_HOST));
		tap_ok(!differ(got, want, M * N), "  graph node: bit for bit as "
		       "npu_launch, %u differ", differ(got, want, M * N));
		/* the node's parameters stay the built-in's */
		MUST(npu_graph_kernel_node_get_params(node, &p));
		tap_ok(!p.function && p.kernel == NPU_K_GEMM_F32,
		       "  the node still names the built-in kernel");
		p.args[7] = npu_arg_f32(1.0f);
		ST(npu_graph_exec_kernel_node_set_params(x, node, &p),
		   NPU_SUCCESS, "  its executable node takes new arguments");
		MUST(npu_memcpy(C, hC, sizeof(hC), NPU_MEMCPY_HOST_TO_DEVICE));
		MUST(npu_graph_launch(x, s));
		MUST(npu_stream_synchronize(s));
		memcpy(want, hC, sizeof(want));
		npu_ref_gemm_f32(hA, hB, want, M, N, K, 3, 1.0f, -2.0f);
		MUST(npu_memcpy(got, C, sizeof(got), NPU_MEMCPY_DEVICE_TO_HOST));
		tap_ok(!differ(got, want, M * N), "  and uses them: %u differ",
		       differ(got, want, M * N));
		MUST(npu_graph_exec_destroy(x));
		MUST(npu_graph_destroy(g));

		MUST(npu_memcpy(C, hC, sizeof(hC), NPU_MEMCPY_HOST_TO_DEVICE));
		MUST(npu_stream_begin_capture(s, NPU_STREAM_CAPTURE_MODE_GLOBAL));
		gemm_args(p.args, A, B, C, 3);
		ST(npu_launch(NPU_K_GEMM_F32, npu_grid(1, 1, 1), p.args, 9, s,
			      NPU_LAUNCH_ASYNC), NPU_SUCCESS,
		   "a gemm launch on a capturing stream is captured");
		MUST(npu_stream_end_capture(s, &g));
		MUST(npu_graph_instantiate(&x, g, 0));
		MUST(npu_graph_launch(x, s));
		MUST(npu_stream_synchronize(s));
		memcpy(want, hC, sizeof(want));
		npu_ref_gemm_f32(hA, hB, want, M, N, K, 3, 0.5f, -2.0f);
		MUST(npu_memcpy(got, C, sizeof(got), NPU_MEMCPY_DEVICE_TO_HOST));
		tap_ok(!differ(got, want, M * N), "  the captured graph: bit for "
		       "bit, %u differ", differ(got, want, M * N));
		MUST(npu_graph_exec_destroy(x));
		MUST(npu_graph_destroy(g));
		MUST(npu_stream_destroy(s));
	}
	npu_free(A), npu_free(B), npu_free(C);
}

/* col_sum, reduce_sum, argmax, vadd against the host */
static void test_others(void)
{
	enum { R = 37, CO = 70, V = 9000 };
	static float x[R * CO], y[V], z[V], want[V], got[V];
	uint32_t amax[R];
	void *dx, *dy, *dz, *dout;
	uint64_t a[4];
	unsigned bad = 0;
	float sum;

	for (size_t i = 0; i < R * CO; i++)
		x[i] = rnd_f();
	for (size_t i = 0; i < V; i++)
		y[i] = rnd_f(), z[i] = rnd_f();
	dx = dev_copy(x, sizeof(x));
	MUST(npu_malloc(&dout, V * 4));
	a[0] = npu_arg_ptr(dx), a[1] = npu_arg_ptr(dout), a[2] = R, a[3] = CO;
	MUST(npu_launch(NPU_K_COL_SUM_F32, npu_grid(1, 1, 1), a, 4, NULL,
			NPU_LAUNCH_SYNC_DEVICE));
	npu_ref_col_sum_f32(x, want, R, CO);
	MUST(npu_memcpy(got, dout, CO * 4, NPU_MEMCPY_DEVICE_TO_HOST));
	tap_ok(!differ(got, want, CO), "col_sum %ux%u: bit for bit, %u differ",
	       R, CO, differ(got, want, CO));

	MUST(npu_launch(NPU_K_ARGMAX_F32, npu_grid(1, 1, 1), a, 4, NULL,
			NPU_LAUNCH_SYNC_DEVICE));
	MUST(npu_memcpy(amax, dout, sizeof(amax), NPU_MEMCPY_DEVICE_TO_HOST));
	for (unsigned r = 0; r < R; r++)
		bad += amax[r] != npu_ref_argmax_f32(x + r * CO, CO);
	tap_ok(!bad, "argmax %ux%u: every row's index, %u differ", R, CO, bad);

	a[2] = R * CO;
	MUST(npu_launch(NPU_K_REDUCE_SUM_F32, npu_grid(1, 1, 1), a, 3, NULL,
			NPU_LAUNCH_SYNC_DEVICE));
	MUST(npu_memcpy(&sum, dout, 4, NPU_MEMCPY_DEVICE_TO_HOST));
	want[0] = npu_ref_reduce_sum_f32(x, R * CO);
	tap_ok(!differ(&sum, want, 1), "reduce_sum of %u: %a, want %a",
	       R * CO, sum, want[0]);

	dy = dev_copy(y, sizeof(y));
	dz = dev_copy(z, sizeof(z));
	a[0] = npu_arg_ptr(dy), a[1] = npu_arg_ptr(dz), a[2] = npu_arg_ptr(dout);
	a[3] = V;
	MUST(npu_launch(NPU_K_VADD_F32, npu_grid(1, 1, 1), a, 4, NULL,
			NPU_LAUNCH_SYNC_DEVICE));
	for (size_t i = 0; i < V; i++)
		want[i] = y[i] + z[i];
	MUST(npu_memcpy(got, dout, sizeof(got), NPU_MEMCPY_DEVICE_TO_HOST));
	tap_ok(!differ(got, want, V), "vadd of %u (3 blocks): bit for bit, %u "
	       "differ", V, differ(got, want, V));
	npu_free(dx), npu_free(dy), npu_free(dz), npu_free(dout);
}

static void refused(npu_kernel_t k, const uint64_t *a, unsigned n,
		    const char *what, const char *want)
{
	npu_status_t st = npu_launch(k, npu_grid(1, 1, 1), a, n, NULL,
				     NPU_LAUNCH_SYNC_DEVICE);
	const char *msg = npu_last_error_message();

	tap_ok(st == NPU_ERROR_INVALID_VALUE && msg && strstr(msg, want),
	       "%s: refused (%s): %s", what, npu_status_name(st),
	       msg ? msg : "(no message)");
}

static void test_checks(void)
{
	float lg[3 * 4] = { 0 };
	uint32_t lab[3] = { 1, 4, 0 };
	void *d, *dl, *dg, *dloss;
	uint64_t a[9];
	npu_status_t st;
	const char *msg;

	MUST(npu_malloc(&d, 64));
	a[0] = npu_arg_ptr(d), a[1] = (1ull << 24) + 1, a[2] = 0;
	refused(NPU_K_FILL_F32, a, 3, "fill of 2^24 + 1 elements",
		"split the work");
	gemm_args(a, d, d, d, 4);
	refused(NPU_K_GEMM_F32, a, 9, "gemm with flags 4", "unknown flags");
	gemm_args(a, d, d, d, 0);
	a[3] = 1 << 12, a[4] = 1 << 12, a[5] = 1 << 8;
	refused(NPU_K_GEMM_F32, a, 9, "gemm of 2^12 x 2^12 x 2^8",
		"library's limit");
	a[0] = npu_arg_ptr(d), a[1] = npu_arg_ptr(d), a[2] = 3, a[3] = 0;
	refused(NPU_K_ARGMAX_F32, a, 4, "argmax of 3 rows of 0 columns",
		"cols >= 1");
	{
		npu_kernel_node_params p = { .kernel = NPU_K_FILL_F32,
					     .grid = { 1, 1, 1 }, .nargs = 3,
					     .args = { npu_arg_ptr(d),
						       (1ull << 24) + 1 } };
		npu_graph_t g;
		npu_graph_node_t node;

		MUST(npu_graph_create(&g, 0));
		ST(npu_graph_add_kernel_node(&node, g, NULL, 0, &p),
		   NPU_ERROR_INVALID_VALUE, "a graph node of that fill too");
		MUST(npu_graph_destroy(g));
	}

	/* label 4 of 4 columns: only the code sees the labels */
	dl = dev_copy(lg, sizeof(lg));
	MUST(npu_malloc(&dg, sizeof(lg)));
	MUST(npu_malloc(&dloss, 4));
	void *dlab = dev_copy(lab, sizeof(lab));

	a[0] = npu_arg_ptr(dl), a[1] = npu_arg_ptr(dlab), a[2] = npu_arg_ptr(dg);
	a[3] = npu_arg_ptr(dloss), a[4] = 3, a[5] = 4;
	st = npu_launch(NPU_K_SOFTMAX_XENT_F32, npu_grid(1, 1, 1), a, 6, NULL,
			NPU_LAUNCH_SYNC_DEVICE);
	msg = npu_last_error_message();
	tap_ok(st == NPU_ERROR_LAUNCH_FAILURE && msg && strstr(msg, "label"),
	       "softmax_xent with label 4 of 4 columns fails, naming the "
	       "label (%s): %s", npu_status_name(st), msg ? msg : "");
	ST(npu_device_reset(), NPU_SUCCESS, "npu_device_reset clears it");
	lab[1] = 3;
	MUST(npu_memcpy(dlab, lab, sizeof(lab), NPU_MEMCPY_HOST_TO_DEVICE));
	ST(npu_launch(NPU_K_SOFTMAX_XENT_F32, npu_grid(1, 1, 1), a, 6, NULL,
		      NPU_LAUNCH_SYNC_DEVICE), NPU_SUCCESS,
	   "the same launch with label 3 succeeds");
	npu_free(d), npu_free(dl), npu_free(dg), npu_free(dloss), npu_free(dlab);
}

int main(void)
{
	for (size_t i = 0; i < M * K; i++)
		hA[i] = rnd_f();
	for (size_t i = 0; i < K * N; i++)
		hB[i] = rnd_f();
	for (size_t i = 0; i < M * N; i++)
		hC[i] = rnd_f();
	tap_need_device();
	test_gemm();
	test_others();
	test_checks();
	return tap_done();
}
