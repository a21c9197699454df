/* SPDX-License-Identifier: MIT */
/*
 * lib_tune_space: npu_tune_space over a tunable SGEMM (kernels/
 * sgemm_space.c, four parameters, 288 valid points): exhaustive search as
 * the reference, then random sampling and Bayesian optimisation within a
 * quarter of the evaluations; bad configurations refused. The points'
 * code objects are built on the host by `make` (npu-cc --cache, the list
 * from --print-points) and found in the guest by the same npu-cc key.
 *
 *   lib_tune_space                 the suite (TAP)
 *   lib_tune_space --print-points  one line of npu-cc -D options per point
 */
#include "tap.h"
#include "../common/tune_points.h"

#include <limits.h>

#define D 32				/* C (D x D) = A (D x D) * B (D x D) */

static const long v_tm[] = { 2, 4, 8, 16 }, v_tn[] = { 2, 4, 8, 16 },
		  v_tk[] = { 2, 4, 8, 16 }, v_p[] = { 1, 2, 4, 8, 16 };
static const npu_tune_param params[] = {
	{ "TM", 4, v_tm }, { "TN", 4, v_tn }, { "TK", 4, v_tk }, { "P", 5, v_p },
};

static int valid(const long *v, void *user)
{
	long tm = v[0], tn = v[1], p = v[3];

	(void)user;
	return tm * tn % p == 0 && tm * tn / p <= 64 && p <= 16;
}

static void *dA, *dB, *dC;

/* The next flatter_left launches of the point flatter_v multiply nothing
 * (K = 0): far less work, as if one measurement had been lucky. */
static long flatter_v[4];
static int flatter_left;

static npu_status_t launch(npu_function_t f, const long *v, npu_stream_t s,
			   void *user)
{
	unsigned m = D;
	void *args[6] = { &dA, &dB, &dC, &m, &m, &m };

	(void)user;
	if (flatter_left > 0 && !memcmp(v, flatter_v, sizeof(flatter_v))) {
		unsigned k = 0;

		flatter_left--;
		args[5] = &k;
		return npu_launch_kernel(f, npu_grid(D / v[1], D / v[0], 1),
					 npu_grid((unsigned)v[3], 1, 1), 0, s,
					 args);
	}
	return npu_launch_kernel(f, npu_grid(D / v[1], D / v[0], 1),
				 npu_grid((unsigned)v[3], 1, 1), 0, s, args);
}

static char src[PATH_MAX + 32], cache[PATH_MAX + 32];

static npu_tune_space_config config(npu_tune_strategy_t s, unsigned budget)
{
	npu_tune_space_config c;

	memset(&c, 0, sizeof(c));
	c.source = src;
	c.kernel = "sgemm";
	c.params = params;
	c.nparams = 4;
	c.valid = valid;
	c.launch = launch;
	c.strategy = s;
	c.budget = budget;
	c.batch = 4;
	c.runs = 1;
	c.mode = NPU_TUNE_MODE_ISOLATED;
	c.seed = 7;
	c.cache_dir = cache;
	return c;
}

/* A space whose point count overflows 64 bits is refused as too large:
 * 65536^4 * 5 = 5 * 2^64 wraps to 0 in a 64-bit product. */
static void test_point_overflow(void)
{
	enum { NV = 65536 };
	long *many = calloc(NV, sizeof(*many));
	npu_tune_param huge[5];
	npu_tune_space_config c;
	npu_tune_space_result r;

	for (unsigned k = 0; k < 5; k++)
		huge[k] = (npu_tune_param){ params[k % 4].name,
					    k < 4 ? NV : 5, many };
	c = config(NPU_TUNE_RANDOM, 10);
	c.params = huge;
	c.nparams = 5;
	c.valid = NULL;
	ST(npu_tune_space(&c, &r, NULL), NPU_ERROR_INVALID_VALUE,
	   "a space of 5 * 2^64 points: INVALID_VALUE");
	tap_ok(strstr(npu_last_error_message(), "at most") != NULL,
	       "refused as too many points: %s", npu_last_error_message());
	free(many);
}

int main(int argc, char **argv)
{
	npu_tune_space_result ex, rnd, bo, r;
	npu_tune_space_config c;
	float *times, A[D * D], B[D * D], C[D * D];
	int ok = 1;

	if (argc == 2 && !strcmp(argv[1], "--print-points")) {
		print_tune_points(params, 4, valid);
		return 0;
	}
	tap_beside_self(src, sizeof(src), "kernels/sgemm_space.c");
	tap_beside_self(cache, sizeof(cache), "tune-cache");
	tap_need_device();
	for (int i = 0; i < D * D; i++) {
		A[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
		B[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
	}
	MUST(npu_malloc(&dA, sizeof(A)));
	MUST(npu_malloc(&dB, sizeof(B)));
	MUST(npu_malloc(&dC, sizeof(C)));
	MUST(npu_memcpy(dA, A, sizeof(A), NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_memcpy(dB, B, sizeof(B), NPU_MEMCPY_HOST_TO_DEVICE));
	test_point_overflow();

	/* the reference: every point */
	c = config(NPU_TUNE_EXHAUSTIVE, 0);
	times = calloc(1000, sizeof(*times));
	ST(npu_tune_space(&c, &ex, times), NPU_SUCCESS, "exhaustive search");
	tap_ok(ex.points >= 200 && ex.evaluations == ex.points && !ex.failed,
	       "%u points, all measured, none failed (%u)", ex.points, ex.failed);
	for (unsigned i = 0; i < ex.points; i++)
		ok &= times[i] >= ex.best_ms;
	{
		unsigned near = 0;
		float worst = 0;

		for (unsigned i = 0; i < ex.points; i++) {
			near += times[i] <= 1.05f * ex.best_ms;
			if (times[i] > worst)
				worst = times[i];
		}
		tap_diag("%u of %u points within 5%% of the best; the worst is "
			 "%.1fx the best", near, ex.points, worst / ex.best_ms);
	}
	tap_ok(ok && ex.best_ms > 0, "the best (TM %ld, TN %ld, TK %ld, P %ld: "
	       "%.3f ms) is the minimum of all %u", ex.best[0], ex.best[1],
	       ex.best[2], ex.best[3], ex.best_ms, ex.points);
	{
		/* the best configuration computes the right product */
		npu_tune_space_config one = c;
		npu_tune_param p1[4];

		for (int k = 0; k < 4; k++) {
			p1[k] = params[k];
			p1[k].nvalues = 1;
			p1[k].values = &ex.best[k];
		}
		one.params = p1;
		MUST(npu_memset(dC, 0, sizeof(C)));
		MUST(npu_tune_space(&one, &r, NULL));
		MUST(npu_memcpy(C, dC, sizeof(C), NPU_MEMCPY_DEVICE_TO_HOST));
		ok = 1;
		for (int i = 0; i < D; i++)
			for (int j = 0; j < D; j++) {
				float s = 0;

				for (int k = 0; k < D; k++)
					s += A[i * D + k] * B[k * D + j];
				ok &= fabsf(C[i * D + j] - s) < 1e-4f;
			}
		tap_ok(ok && r.points == 1, "the best configuration's product "
		       "matches the CPU");
	}

	/* a quarter of the evaluations */
	c = config(NPU_TUNE_RANDOM, ex.points / 4);
	ST(npu_tune_space(&c, &rnd, NULL), NPU_SUCCESS, "random sampling, %u "
	   "evaluations", ex.points / 4);
	c = config(NPU_TUNE_BAYES, ex.points / 4);
	ST(npu_tune_space(&c, &bo, NULL), NPU_SUCCESS, "Bayesian optimisation, "
	   "%u evaluations", ex.points / 4);
	tap_diag("exhaustive: best %.3f ms after %u of %u evaluations",
		 ex.best_ms, ex.evaluations_to_best, ex.evaluations);
	tap_diag("random:     best %.3f ms (%.1f%% above) after %u of %u",
		 rnd.best_ms, 100 * (rnd.best_ms / ex.best_ms - 1),
		 rnd.evaluations_to_best, rnd.evaluations);
	tap_diag("bayes:      best %.3f ms (%.1f%% above) after %u of %u",
		 bo.best_ms, 100 * (bo.best_ms / ex.best_ms - 1),
		 bo.evaluations_to_best, bo.evaluations);
	tap_ok(bo.evaluations <= ex.points / 4 && bo.best_ms <= 1.05f * ex.best_ms,
	       "Bayesian optimisation within 5%% of the exhaustive optimum "
	       "(%.3f vs %.3f ms) in %u evaluations (<= 25%% of %u)",
	       bo.best_ms, ex.best_ms, bo.evaluations, ex.points);

	/* the best is measured again before it is reported: a point that
	 * one run flattered is not (TM, TN of the optimum; every TK, P) */
	{
		npu_tune_param sub[4];
		npu_tune_space_result fl;
		float t2[32], worst = -1;
		unsigned idx = 0;

		memcpy(sub, params, sizeof(sub));
		sub[0].nvalues = sub[1].nvalues = 1;
		sub[0].values = &ex.best[0];
		sub[1].values = &ex.best[1];
		c = config(NPU_TUNE_EXHAUSTIVE, 0);
		c.params = sub;
		MUST(npu_tune_space(&c, &r, t2));
		/* the slowest, in enumeration order (first parameter fastest) */
		for (unsigned p = 0; p < 5; p++)
			for (unsigned k = 0; k < 4; k++) {
				long v[4] = { ex.best[0], ex.best[1], v_tk[k], v_p[p] };

				if (!valid(v, NULL))
					continue;
				if (idx < r.points && t2[idx] > worst) {
					worst = t2[idx];
					memcpy(flatter_v, v, sizeof(v));
				}
				idx++;
			}
		flatter_left = 2;	/* the warm-up and the one timed run */
		MUST(npu_tune_space(&c, &fl, NULL));
		flatter_left = 0;
		tap_ok(idx == r.points && memcmp(fl.best, flatter_v,
						 sizeof(flatter_v)) &&
		       fl.best_ms <= 1.05f * r.best_ms,
		       "a point one run flattered (TK %ld, P %ld: %.3f ms) is "
		       "measured again, not reported as the best (TK %ld, P %ld: "
		       "%.3f ms; %.3f ms unflattered)", flatter_v[2],
		       flatter_v[3], worst, fl.best[2], fl.best[3], fl.best_ms,
		       r.best_ms);
	}

	/* bad configurations */
	c = config(NPU_TUNE_BAYES, 10);
	c.nparams = 0;
	ST(npu_tune_space(&c, &r, NULL), NPU_ERROR_INVALID_VALUE, "no parameter");
	c = config(NPU_TUNE_RANDOM, 10);
	c.source = "/nonexistent.c";
	ST(npu_tune_space(&c, &r, NULL), NPU_ERROR_FILE_NOT_FOUND,
	   "a missing source");
	c = config(NPU_TUNE_RANDOM, 10);
	c.strategy = (npu_tune_strategy_t)9;
	ST(npu_tune_space(&c, &r, NULL), NPU_ERROR_INVALID_VALUE,
	   "an unknown strategy");
	free(times);
	npu_free(dA);
	npu_free(dB);
	npu_free(dC);
	return tap_done();
}
