/* SPDX-License-Identifier: MIT */
/*
 * lib_devtime: the profiler's device times of user kernels against the
 * model (cycles at the unit clock), and the figures of one report agreeing.
 *
 *   lib_devtime on       the device runs with timing=on (the default)
 *   lib_devtime virtual  the device runs with timing=virtual
 *
 * With timing=on the units are interpreted on the host, paced to wall time:
 * a compute-bound kernel on every unit needs far more host time than the
 * model's (about 50 million interpreted instructions per second against
 * units x unit clock), so its measured device time exceeds its modelled
 * time and the report must say so (the host-bound notice, naming the
 * factor and timing=virtual). With timing=virtual the device clock is the
 * model's: the profile's device time equals cycles / clock within 1 % and
 * there is no notice. In both, the device-memory throughput is the bytes
 * over the modelled time, and the report has no figure computed from the
 * modelled busy time over a host-paced interval without saying so.
 */
#include "tap.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>

#define N (1u << 16)	/* saxpy's elements */

static double model_ms(const npu_kernel_profile *p, unsigned mhz)
{
	return (double)p->cycles / (mhz * 1e3);
}

/* The printed throughput of a section agrees with its bytes over the
 * modelled time (to the printed precision). */
static void check_bandwidth(const char *sec, const npu_kernel_profile *p,
			    unsigned mhz)
{
	const char *m = strstr(sec, "memory: device ");
	double gbs = -1, want;
	unsigned long long bytes = 0;

	if (m)
		sscanf(m, "memory: device %lf GB/s (%llu bytes", &gbs, &bytes);
	want = bytes / (model_ms(p, mhz) * 1e6);
	tap_ok(m && bytes > 0 && fabs(gbs - want) <= 0.0005 + want * 1e-3,
	       "%s: device memory %.3f GB/s is its %llu bytes over the "
	       "modelled %.3f ms (%.3f GB/s)", p->name, gbs, bytes,
	       model_ms(p, mhz), want);
}

int main(int argc, char **argv)
{
	npu_device_prop prop;
	npu_module_t m;
	npu_function_t fma, saxpy;
	npu_kernel_profile prof[8], *pf, *ps;
	char path[PATH_MAX + 32];
	unsigned iters, mhz;
	unsigned long n = N;
	float *out, *x, *y, a = 2.0f;
	char *rep, *sf, *ss;
	size_t np = 8;
	bool on;

	if (argc != 2 || (strcmp(argv[1], "on") && strcmp(argv[1], "virtual"))) {
		fprintf(stderr, "usage: lib_devtime on|virtual (the device's "
			"timing option)\n");
		return 2;
	}
	on = !strcmp(argv[1], "on");
	tap_need_device();
	MUST(npu_device_get_properties(&prop, 0));
	if (!(prop.features & NPU_FEATURE_USER_KERNELS)) {
		tap_ok(0, "the device runs user kernels");
		return tap_done();
	}
	mhz = prop.unit_clock_mhz ? prop.unit_clock_mhz : 1000;
	MUST(npu_module_load(&m, tap_beside_self(path, sizeof(path),
						 "kernels/basic.npu")));
	MUST(npu_module_get_function(&fma, m, "fma_chain"));
	MUST(npu_module_get_function(&saxpy, m, "saxpy"));

	MUST(npu_malloc((void **)&out, prop.compute_units * prop.unit_threads *
			sizeof(float)));
	MUST(npu_malloc((void **)&x, N * sizeof(float)));
	MUST(npu_malloc((void **)&y, N * sizeof(float)));
	MUST(npu_memset(x, 0, N * sizeof(float)));
	MUST(npu_memset(y, 0, N * sizeof(float)));
	/* fma_chain: one full block per unit, about 0.3 M cycles of issue
	 * per unit (a few instructions per iteration, threads sharing the
	 * issue slot): 0.3 ms in the model, 2.4 M interpreted instructions,
	 * a fraction of a second of host time, well inside the 2 s job
	 * timeout make test's boots use */
	iters = 100000 / prop.unit_threads;
	MUST(npu_profiler_start());
	{
		void *fargs[] = { &out, &iters };
		void *sargs[] = { &a, &x, &y, &n };

		MUST(npu_launch_kernel(fma, (npu_dim3){ prop.compute_units, 1, 1 },
				       (npu_dim3){ prop.unit_threads, 1, 1 }, 0,
				       NULL, fargs));
		MUST(npu_launch_kernel(saxpy, (npu_dim3){ prop.compute_units, 1, 1 },
				       (npu_dim3){ prop.unit_threads, 1, 1 }, 0,
				       NULL, sargs));
	}
	MUST(npu_device_synchronize());
	MUST(npu_profiler_stop());
	MUST(npu_profile_get_kernels(prof, &np));
	pf = tap_find_kernel(prof, np, "fma_chain");
	ps = tap_find_kernel(prof, np, "saxpy");
	if (!pf || !ps) {
		tap_ok(0, "both kernels were profiled");
		return tap_done();
	}
	rep = tap_profile_report();
	sf = tap_profile_section(rep, "fma_chain");
	ss = tap_profile_section(rep, "saxpy");
	if (!sf)
		sf = strdup("");
	if (!ss)
		ss = strdup("");
	for (const char *l = rep; l && *l;) {	/* the report, line by line */
		const char *e = strchr(l, '\n');
		int len = e ? (int)(e - l) : (int)strlen(l);

		tap_diag("%.*s", len, l);
		l += len + (e != NULL);
	}
	tap_diag("fma_chain: %.3f ms measured, %llu cycles = %.3f ms at %u MHz",
		 pf->time_ms, (unsigned long long)pf->cycles, model_ms(pf, mhz),
		 mhz);
	tap_diag("saxpy: %.3f ms measured, %llu cycles = %.3f ms at %u MHz",
		 ps->time_ms, (unsigned long long)ps->cycles, model_ms(ps, mhz),
		 mhz);

	if (on) {
		double f = pf->time_ms / model_ms(pf, mhz), got = 0;
		const char *h = strstr(sf, "host-bound: ");

		/* the premise: the host is far slower than 8 units at 1 GHz */
		tap_ok(f > 2, "timing=on: fma_chain's measured device time is "
		       "%.1fx its modelled time (the host interprets the units)",
		       f);
		if (h)
			sscanf(strstr(h, "took ") ? strstr(h, "took ") : h,
			       "took %lfx", &got);
		tap_ok(h && strstr(h, "timing=virtual") &&
		       strstr(h, "npu-run --timing virtual"),
		       "timing=on: fma_chain's section carries the host-bound "
		       "notice naming timing=virtual and how to set it");
		tap_ok(h && fabs(got - f) <= 0.05 + f * 0.01, "the notice's factor "
		       "%.1fx is the measured over the modelled time (%.1fx)",
		       got, f);
		tap_ok(rep && strstr(rep, "\nhost-bound: ") &&
		       strstr(rep, "\ncompute units busy: "),
		       "the report's header says the units' busy time is the "
		       "model's and the device time the host's");
	} else {
		double ef = fabs(pf->time_ms - model_ms(pf, mhz)) / model_ms(pf, mhz);
		double es = fabs(ps->time_ms - model_ms(ps, mhz)) / model_ms(ps, mhz);

		tap_ok(ef <= 0.01, "timing=virtual: fma_chain's device time %.4f "
		       "ms is its cycles at the clock, %.4f ms (%.2f%% off)",
		       pf->time_ms, model_ms(pf, mhz), 100 * ef);
		tap_ok(es <= 0.01, "timing=virtual: saxpy's device time %.4f ms "
		       "is its cycles at the clock, %.4f ms (%.2f%% off)",
		       ps->time_ms, model_ms(ps, mhz), 100 * es);
		tap_ok(rep && !strstr(rep, "host-bound"), "timing=virtual: no "
		       "host-bound notice");
	}
	check_bandwidth(ss, ps, mhz);
	free(sf);
	free(ss);
	free(rep);
	MUST(npu_free(out));
	MUST(npu_free(x));
	MUST(npu_free(y));
	MUST(npu_module_unload(m));
	return tap_done();
}
