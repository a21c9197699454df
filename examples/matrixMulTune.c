/* SPDX-License-Identifier: MIT */
/*
 * matrixMulTune: npu_tune over the tiled SGEMM's space of (tile size,
 * threads per block), in isolation and under the load of the other
 * candidates running at once; then one profiled launch per candidate for
 * its achieved occupancy and top stall reason. Prints whether the best
 * choice in isolation is still the best under load (the point of tuning
 * under concurrency: a configuration that fills the device alone can lose
 * when it shares the units).
 */
#include "common.h"

#define D 32			/* C (D x D) = A (D x D) * B (D x D) */
#define MAXC 16

static const unsigned tiles[] = { 4, 8, 16 }, threads[] = { 4, 8, 16 };

int main(void)
{
	npu_kernel_node_params kp[MAXC];
	npu_tune_result res[MAXC];
	npu_kernel_profile prof[MAXC];
	unsigned cand_t[MAXC], cand_p[MAXC], nc = 0, m = D, t[MAXC];
	void *dA, *dB, *dC, *args[MAXC][7];
	int best[NPU_TUNE_MODES];
	npu_function_t tiled;
	npu_device_prop p;
	npu_tune_config c;
	npu_module_t mod;

	print_device();
	CHECK(npu_device_get_properties(&p, 0));
	mod = load_kernels("matrixMul");
	CHECK(npu_module_get_function(&tiled, mod, "sgemm_tiled"));
	CHECK(npu_malloc(&dA, D * D * 4));
	CHECK(npu_malloc(&dB, D * D * 4));
	CHECK(npu_malloc(&dC, D * D * 4));
	CHECK(npu_memset(dA, 0, D * D * 4));
	CHECK(npu_memset(dB, 0, D * D * 4));
	for (unsigned i = 0; i < 3; i++)
		for (unsigned j = 0; j < 3; j++) {
			unsigned T = tiles[i], P = threads[j];

			if (P > p.unit_threads || (T * T) % P || T * T / P > 64 ||
			    D % T || 8 * T * T > p.unit_scratch_bytes)
				continue;
			t[nc] = T;
			args[nc][0] = &dA;
			args[nc][1] = &dB;
			args[nc][2] = &dC;
			args[nc][3] = &m;
			args[nc][4] = &m;
			args[nc][5] = &m;
			args[nc][6] = &t[nc];
			CHECK(npu_kernel_node_params_init(&kp[nc], tiled,
							  npu_grid(D / T, D / T, 1),
							  npu_grid(P, 1, 1), 8 * T * T,
							  args[nc]));
			cand_t[nc] = T;
			cand_p[nc] = P;
			nc++;
		}
	memset(&c, 0, sizeof(c));
	c.candidates = nc;
	c.kernels = kp;
	c.runs = 3;
	c.warmup = 1;
	c.concurrency = 3;	/* under load: 3 candidates at once */
	CHECK(npu_tune(&c, res, best));

	/* one profiled launch per candidate */
	CHECK(npu_device_synchronize());
	printf("%-6s %-8s %12s %12s %10s  %s\n", "tile", "threads", "isolated ms",
	       "loaded ms", "occupancy", "top stall");
	for (unsigned i = 0; i < nc; i++) {
		size_t n = 1;
		const char *top = "-";
		uint64_t most = 0;

		CHECK(npu_profiler_start());
		CHECK(npu_launch_kernel(tiled, kp[i].grid, kp[i].block,
					kp[i].scratch_bytes, NULL, args[i]));
		CHECK(npu_device_synchronize());
		CHECK(npu_profiler_stop());
		CHECK(npu_profile_get_kernels(&prof[i], &n));
		for (unsigned r = 2; r < NPU_PROFILE_STALLS; r++)	/* stalls only */
			if (prof[i].stall[r] > most) {
				most = prof[i].stall[r];
				top = npu_profile_stall_name(r);
			}
		printf("%-6u %-8u %12.3f %12.3f %9.1f%%  %s\n", cand_t[i], cand_p[i],
		       res[i].mode[0].median_ms, res[i].mode[1].median_ms,
		       100 * prof[i].achieved_occupancy, top);
	}
	if (best[0] < 0 || best[1] < 0) {
		printf("FAILED: no best candidate\n");
		return 1;
	}
	printf("best in isolation: tile %u, %u threads; under load: tile %u, %u "
	       "threads (%s)\n", cand_t[best[0]], cand_p[best[0]],
	       cand_t[best[1]], cand_p[best[1]], best[0] == best[1] ?
	       "the same choice" : "a different choice: tune under the load "
	       "the kernel will meet");
	printf("Test PASSED\n");
	CHECK(npu_module_unload(mod));
	return 0;
}
