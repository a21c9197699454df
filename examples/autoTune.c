/* SPDX-License-Identifier: MIT */
/*
 * autoTune - choose how to run a batch of GEMMs with npu_tune(): over how
 * many streams, and with what grid (how many compute units each launch
 * asks for). Each configuration is measured with device-timed events in
 * isolation and under load (another program's GEMM running on its own
 * stream, all units wanted), and the fastest one per mode is reported.
 * The best configuration is then run once more and its results are
 * checked against the CPU.
 *
 * What to expect (Documentation/lib/tuning.rst): more streams use more
 * rings. The built-in GEMM is libnpu's kernel library, code whose grid
 * its sizes set (the grid given to npu_launch is not used), so grids tie
 * within noise and the streams tell configurations apart.
 */
#include "common.h"

#define BATCH	8
#define M	128

struct cfg {
	unsigned streams, grid;
};

static struct cfg cfgs[16];
static unsigned ncfg;
static void *dA[BATCH], *dB[BATCH], *dC[BATCH];
static void *lA, *lC;

static npu_status_t enqueue(unsigned int i, const npu_stream_t *s,
			    unsigned int ns, void *user)
{
	const struct cfg *c = &cfgs[i];
	npu_status_t st;
	unsigned b;

	(void)ns;
	(void)user;
	for (b = 0; b < BATCH; b++) {
		uint64_t a[9] = { npu_arg_ptr(dA[b]), npu_arg_ptr(dB[b]),
				  npu_arg_ptr(dC[b]), M, M, M, 0, arg_f(1.0f), 0 };

		st = npu_launch(NPU_K_GEMM_F32, npu_grid(c->grid, 1, 1), a, 9,
				s[b % c->streams], 0);
		if (st)
			return st;
	}
	return NPU_SUCCESS;
}

/* The load: a 256^3 GEMM that wants every unit, again and again. */
static npu_status_t load(unsigned int j, const npu_stream_t *s,
			 unsigned int ns, void *user)
{
	unsigned units = *(unsigned *)user;
	uint64_t a[9] = { npu_arg_ptr(lA), npu_arg_ptr(lA), npu_arg_ptr(lC),
			  256, 256, 256, 0, arg_f(1.0f), 0 };

	(void)j;
	(void)ns;
	return npu_launch(NPU_K_GEMM_F32, npu_grid(units, 1, 1), a, 9, s[0], 0);
}

int main(void)
{
	static float hA[M * M], hB[M * M], hC[M * M];
	static const unsigned streams[] = { 1, 2, 4 };
	npu_tune_result res[16];
	npu_tune_config tc;
	npu_device_prop p;
	npu_stream_t s[4];
	int best[NPU_TUNE_MODES];
	unsigned i, j, b, grids[3];
	double err = 0;

	print_device();
	CHECK(npu_device_get_properties(&p, 0));
	grids[0] = 1;
	grids[1] = 2;
	grids[2] = p.compute_units;
	for (i = 0; i < 3; i++)
		for (j = 0; j < 3; j++) {
			cfgs[ncfg].streams = streams[i];
			cfgs[ncfg++].grid = grids[j];
		}
	for (i = 0; i < M * M; i++) {
		hA[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
		hB[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
	}
	for (b = 0; b < BATCH; b++) {
		CHECK(npu_malloc(&dA[b], sizeof(hA)));
		CHECK(npu_malloc(&dB[b], sizeof(hB)));
		CHECK(npu_malloc(&dC[b], sizeof(hC)));
		CHECK(npu_memcpy(dA[b], hA, sizeof(hA), NPU_MEMCPY_HOST_TO_DEVICE));
		CHECK(npu_memcpy(dB[b], hB, sizeof(hB), NPU_MEMCPY_HOST_TO_DEVICE));
	}
	CHECK(npu_malloc(&lA, 256 * 256 * 4));
	CHECK(npu_malloc(&lC, 256 * 256 * 4));
	CHECK(npu_memset(lA, 0, 256 * 256 * 4));

	memset(&tc, 0, sizeof(tc));
	tc.candidates = ncfg;
	tc.enqueue = enqueue;
	tc.runs = 5;
	tc.warmup = 1;
	tc.streams = 4;
	tc.concurrency = 1;		/* every candidate meets the same load */
	tc.load = load;
	tc.load_user = &p.compute_units;
	CHECK(npu_tune(&tc, res, best));

	printf("batch of %d GEMMs %dx%dx%d; device time per batch (ms), %u runs\n",
	       BATCH, M, M, M, tc.runs);
	printf("%-20s %10s %10s %10s   %10s %10s\n", "config", "iso min",
	       "iso median", "iso mean", "load med", "load mean");
	for (i = 0; i < ncfg; i++) {
		const npu_tune_stats *a = &res[i].mode[NPU_TUNE_MODE_ISOLATED];
		const npu_tune_stats *l = &res[i].mode[NPU_TUNE_MODE_UNDER_LOAD];
		char name[32];

		snprintf(name, sizeof(name), "%u stream%s, grid %u", cfgs[i].streams,
			 cfgs[i].streams > 1 ? "s" : "", cfgs[i].grid);
		if (a->status || l->status) {
			printf("%-20s failed: %s\n", name, res[i].message);
			continue;
		}
		printf("%-20s %10.2f %10.2f %10.2f   %10.2f %10.2f%s%s\n", name,
		       a->min_ms, a->median_ms, a->mean_ms, l->median_ms, l->mean_ms,
		       (int)i == best[0] ? "  <- best isolated" : "",
		       (int)i == best[1] ? "  <- best under load" : "");
	}
	if (best[0] < 0 || best[1] < 0) {
		fprintf(stderr, "no configuration succeeded\n");
		return 1;
	}

	/* run the winner once and check it */
	for (i = 0; i < 4; i++)
		CHECK(npu_stream_create(&s[i], NPU_STREAM_NON_BLOCKING, 0));
	for (b = 0; b < BATCH; b++)
		CHECK(npu_memset(dC[b], 0, sizeof(hC)));
	CHECK(enqueue((unsigned)best[0], s, 4, NULL));
	CHECK(npu_device_synchronize());
	CHECK(npu_memcpy(hC, dC[BATCH - 1], sizeof(hC), NPU_MEMCPY_DEVICE_TO_HOST));
	for (i = 0; i < M; i++)
		for (j = 0; j < M; j++) {
			double ref = 0;
			unsigned k;

			for (k = 0; k < M; k++)
				ref += (double)hA[i * M + k] * hB[k * M + j];
			if (fabs(ref - hC[i * M + j]) > err)
				err = fabs(ref - hC[i * M + j]);
		}
	printf("best isolated: %u streams, grid %u; max |error| vs CPU %.2e\n",
	       cfgs[best[0]].streams, cfgs[best[0]].grid, err);
	for (i = 0; i < 4; i++)
		CHECK(npu_stream_destroy(s[i]));
	for (b = 0; b < BATCH; b++) {
		npu_free(dA[b]);
		npu_free(dB[b]);
		npu_free(dC[b]);
	}
	npu_free(lA);
	npu_free(lC);
	return err < 1e-3 ? 0 : 1;
}
