/* SPDX-License-Identifier: MIT */
/*
 * lib_tune: auto-tuning (npu_tune). The tuner must pick the candidate that
 * the device's timing model says is fastest, report times that agree with
 * the model's lower bounds, measure under load no faster than in
 * isolation, report a faulting or invalid candidate as failed while the
 * others still get results (and leave no sticky error behind), not swallow
 * a fault of other work, work from two threads at once, and refuse bad
 * input with NPU_ERROR_INVALID_VALUE without touching the results.
 *
 * The winners follow from the model (Documentation/hw/npu.rst): a launch
 * takes min(blocks, free units) compute units and waits while none is
 * free, TEST_SPIN lasts its given time whatever the units, so w spins of
 * grid g on s streams run ceil(w / min(s, rings, ceil(units / g))) waves.
 * Every assertion on times compares device times (events) with the model
 * or with each other, with margins of 1.25x where the model predicts 2x
 * or more; nothing depends on the host clock.
 */
#include "tap.h"

#include <pthread.h>

#define T_MS	40.0		/* one spin. The winner's lead is 40 ms
				   (2x) in the model; a run's overhead
				   (cross-ring fork/join in the guest
				   kernel) is ~4 ms, ~20 ms under ASan, and
				   the 1.25x margins below hold up to ~28 ms */
#define W	4		/* spins per workload */
#define RUNS	5

static npu_device_prop prop;
static uint64_t bad_va;

/* ------------------------------------------------------------------------
 * The spin workload: W spins of T_MS, split over some streams with some
 * grid. Candidates 5 and 6 are broken on purpose.
 */
struct split {
	const char *name;
	unsigned streams, grid;
	int fault, badgrid;
};

static const struct split splits[] = {
	{ "1 stream, grid 1", 1, 1, 0, 0 },
	{ "4 streams, grid = all units", 4, 0 /* units */, 0, 0 },
	{ "4 streams, grid 2", 4, 2, 0, 0 },
	{ "4 streams, grid 4", 4, 4, 0, 0 },
	{ "2 streams, grid 1", 2, 1, 0, 0 },
	{ "faulting", 1, 1, 1, 0 },
	{ "grid 0 (invalid)", 1, 1, 0, 1 },
};
#define NSPLIT (sizeof(splits) / sizeof(splits[0]))

static unsigned split_grid(const struct split *sp)
{
	return sp->grid ? sp->grid : prop.compute_units;
}

/* Modelled device time of a split, in ms. */
static double split_model(const struct split *sp)
{
	unsigned g = split_grid(sp);
	unsigned conc = sp->streams, per_unit = (prop.compute_units + g - 1) / g;

	if (conc > prop.compute_rings)
		conc = prop.compute_rings;
	if (conc > per_unit)
		conc = per_unit;
	return T_MS * ((W + conc - 1) / conc);
}

/*
 * What a split takes at least whatever else runs: a launch takes the free
 * units (at least one), so other work holding units lets the split's own
 * launches overlap; only rings and units bound how many run at once.
 */
static double split_floor(const struct split *sp)
{
	unsigned conc = sp->streams;

	if (conc > prop.compute_rings)
		conc = prop.compute_rings;
	if (conc > prop.compute_units)
		conc = prop.compute_units;
	return T_MS * ((W + conc - 1) / conc);
}

static npu_status_t enqueue_split(unsigned int i, const npu_stream_t *s,
				  unsigned int ns, void *user)
{
	const struct split *sp = &splits[i];
	uint64_t a[1] = { ms_to_ns(T_MS) };
	npu_status_t st;
	unsigned k;

	(void)user;
	if (sp->streams > ns)
		return NPU_ERROR_INVALID_VALUE;
	if (sp->fault) {
		uint64_t f[1] = { bad_va };

		return npu_launch(NPU_K_TEST_FAULT, npu_grid(1, 1, 1), f, 1, s[0], 0);
	}
	for (k = 0; k < W; k++) {
		st = npu_launch(NPU_K_TEST_SPIN,
				npu_grid(sp->badgrid ? 0 : split_grid(sp), 1, 1),
				a, 1, s[k % sp->streams], 0);
		if (st)
			return st;
	}
	return NPU_SUCCESS;
}

/* Background load: spins that want every unit. */
static double load_ms = 5.0;

static npu_status_t enqueue_load(unsigned int j, const npu_stream_t *s,
				 unsigned int ns, void *user)
{
	uint64_t a[1] = { ms_to_ns(load_ms) };

	(void)j;
	(void)ns;
	(void)user;
	return npu_launch(NPU_K_TEST_SPIN, npu_grid(prop.compute_units, 1, 1), a,
			  1, s[0], 0);
}

static npu_tune_config split_config(unsigned modes)
{
	npu_tune_config c;

	memset(&c, 0, sizeof(c));
	c.candidates = NSPLIT;
	c.enqueue = enqueue_split;
	c.modes = modes;
	c.runs = RUNS;
	c.warmup = 1;
	c.streams = 4;
	return c;
}

static void print_results(const char *what, const npu_tune_result *r,
			  unsigned n, const char *const *names, const double *model)
{
	unsigned i, m;

	for (m = 0; m < NPU_TUNE_MODES; m++) {
		for (i = 0; i < n; i++) {
			const npu_tune_stats *s = &r[i].mode[m];

			if (s->status == NPU_ERROR_NOT_READY && !s->runs)
				continue;
			if (s->status != NPU_SUCCESS) {
				tap_diag("%s %s #%u %-28s %s: %s", what,
					 m ? "loaded  " : "isolated", i, names[i],
					 npu_status_name(s->status), r[i].message);
				continue;
			}
			tap_diag("%s %s #%u %-28s model >= %6.2f  min %6.2f  "
				 "median %6.2f  mean %6.2f  max %6.2f ms (%u runs)",
				 what, m ? "loaded  " : "isolated", i, names[i],
				 model ? model[i] : 0.0, s->min_ms, s->median_ms,
				 s->mean_ms, s->max_ms, s->runs);
		}
	}
}

static int stats_sane(const npu_tune_stats *s, unsigned runs)
{
	return s->status == NPU_SUCCESS && s->runs == runs && s->min_ms > 0 &&
	       s->min_ms <= s->median_ms && s->median_ms <= s->max_ms &&
	       s->min_ms <= s->mean_ms && s->mean_ms <= s->max_ms;
}

/* ------------------------------------------------------------------------
 * Bad input
 */
static void test_invalid(void)
{
	npu_tune_result r[2], pattern[2];
	npu_tune_config c = split_config(0), b;
	int best[NPU_TUNE_MODES] = { 7, 7 };
	npu_kernel_node_params kp;

	memset(pattern, 0x5a, sizeof(pattern));
	memcpy(r, pattern, sizeof(r));
	memset(&kp, 0, sizeof(kp));
	c.candidates = 2;

	ST(npu_tune(NULL, r, best), NPU_ERROR_INVALID_VALUE, "NULL config");
	ST(npu_tune(&c, NULL, best), NPU_ERROR_INVALID_VALUE, "NULL results");
	tap_ok(strstr(npu_last_error_message(), "results") != NULL,
	       "the message names the problem (\"%s\")", npu_last_error_message());
#define BAD(stmt, desc) do {						\
		b = c;							\
		stmt;							\
		ST(npu_tune(&b, r, best), NPU_ERROR_INVALID_VALUE, desc); \
	} while (0)
	BAD(b.candidates = 0, "zero candidates");
	BAD(b.candidates = NPU_TUNE_MAX_CANDIDATES + 1,
	    "more than NPU_TUNE_MAX_CANDIDATES candidates");
	BAD(b.enqueue = NULL, "neither enqueue nor kernels");
	BAD(b.kernels = &kp, "both enqueue and kernels");
	BAD(b.modes = 4, "unknown mode bit");
	BAD(b.flags = 1, "non-zero flags");
	BAD(b.runs = NPU_TUNE_MAX_RUNS + 1, "too many runs");
	BAD(b.warmup = NPU_TUNE_MAX_RUNS + 1, "too many warmup runs");
	BAD(b.streams = NPU_TUNE_MAX_STREAMS + 1, "too many streams per candidate");
	BAD(b.concurrency = NPU_TUNE_MAX_STREAMS + 1, "too much concurrency");
	BAD(b.load_streams = 2, "load streams without a load function");
	BAD((b.load = enqueue_load, b.load_streams = NPU_TUNE_MAX_STREAMS + 1),
	    "too many load streams");
	BAD((b.candidates = 1, b.modes = NPU_TUNE_UNDER_LOAD),
	    "under load with no load at all (one candidate, no load function)");
	BAD((b.concurrency = 1, b.modes = 0), "both modes, concurrency 1, no load");
#undef BAD
	tap_ok(!memcmp(r, pattern, sizeof(r)) && best[0] == 7 && best[1] == 7,
	       "refused calls leave results and best untouched");
	b = c;
	b.candidates = 1;
	b.modes = NPU_TUNE_ISOLATED;
	b.runs = 1;
	b.warmup = 0;
	ST(npu_tune(&b, r, NULL), NPU_SUCCESS,
	   "isolation alone needs no load; best may be NULL");
	tap_ok(r[0].mode[NPU_TUNE_MODE_UNDER_LOAD].status == NPU_ERROR_NOT_READY &&
	       r[0].mode[NPU_TUNE_MODE_UNDER_LOAD].runs == 0,
	       "a mode not asked for is reported as not measured (NOT_READY)");
	tap_ok(npu_peek_last_error() == NPU_ERROR_INVALID_VALUE,
	       "a successful call leaves the thread's last error as it was (%s)",
	       npu_status_name(npu_peek_last_error()));
	npu_get_last_error();
}

/* ------------------------------------------------------------------------
 * Splits of a spin workload: the model's winner, lower bounds, faults
 */
static npu_tune_result split_res[NSPLIT];

static void test_splits(void)
{
	npu_tune_config c = split_config(0);
	const char *names[NSPLIT];
	double model[NSPLIT];
	int best[NPU_TUNE_MODES];
	unsigned i, want = 0, m;
	char hex[32];
	npu_stream_t s;

	for (i = 0; i < NSPLIT; i++) {
		names[i] = splits[i].name;
		model[i] = splits[i].fault || splits[i].badgrid ? 0 : split_model(&splits[i]);
		if (model[i] && model[i] < model[want])
			want = i;
	}
	/* the load: all-unit spins, concurrency 1 so that every candidate
	 * meets the same load */
	c.load = enqueue_load;
	c.concurrency = 1;
	npu_get_last_error();
	ST(npu_tune(&c, split_res, best), NPU_SUCCESS,
	   "npu_tune of %zu splits of %d x %.0f ms spins, both modes", NSPLIT, W, T_MS);
	tap_ok(npu_peek_last_error() == NPU_SUCCESS,
	       "after success the thread's last error is unchanged (%s)",
	       npu_status_name(npu_peek_last_error()));
	print_results("split", split_res, NSPLIT, names, model);

	for (m = 0; m < NPU_TUNE_MODES; m++) {
		const npu_tune_result *r = split_res;
		const char *mn = m ? "under load" : "isolated";

		tap_ok(r[5].mode[m].status == NPU_ERROR_ILLEGAL_ADDRESS &&
		       r[5].mode[m].runs == 0,
		       "%s: the faulting candidate is failed with "
		       "NPU_ERROR_ILLEGAL_ADDRESS (%s), no times", mn,
		       npu_status_name(r[5].mode[m].status));
		tap_ok(r[6].mode[m].status == NPU_ERROR_INVALID_CONFIGURATION,
		       "%s: the grid-0 candidate is failed with "
		       "NPU_ERROR_INVALID_CONFIGURATION (%s)", mn,
		       npu_status_name(r[6].mode[m].status));
		for (i = 0; i < 5; i++)
			tap_ok(stats_sane(&r[i].mode[m], RUNS),
			       "%s: %s: %u runs, 0 < min <= median <= max, "
			       "min <= mean <= max", mn, names[i], r[i].mode[m].runs);
		for (i = 0; i < 5; i++) {
			double lo = m ? split_floor(&splits[i]) : model[i];

			tap_ok(r[i].mode[m].min_ms >= 0.98 * lo,
			       "%s: %s: device time %.2f ms >= %s %.0f ms",
			       mn, names[i], r[i].mode[m].min_ms,
			       m ? "floor with units shared" : "modelled", lo);
		}
	}
	snprintf(hex, sizeof(hex), "%llx", (unsigned long long)bad_va);
	tap_ok(strstr(split_res[5].message, "test_fault") &&
	       strstr(split_res[5].message, hex),
	       "its message names the kernel and the address 0x%s", hex);
	tap_ok(split_res[6].message[0] != 0, "the invalid one has a message too");

	/* the model's winner, in both modes, with a wide margin */
	tap_diag("model: best is #%u (%s, %.0f ms); every other >= 2x", want,
		 names[want], model[want]);
	tap_ok(best[NPU_TUNE_MODE_ISOLATED] == (int)want,
	       "isolated: best is #%d, the model's winner #%u (%s)",
	       best[NPU_TUNE_MODE_ISOLATED], want, names[want]);
	for (i = 0; i < 5; i++) {
		const npu_tune_stats *b = &split_res[want].mode[0], *o = &split_res[i].mode[0];

		if (i == want)
			continue;
		tap_ok(o->median_ms >= 1.25 * b->median_ms,
		       "isolated: %s (%.1f ms) is >= 1.25x the winner (%.1f ms), "
		       "model %.1fx", names[i], o->median_ms, b->median_ms,
		       model[i] / model[want]);
	}
	/* under load every spin waits at most for the load's queued
	 * instances on a shared ring (2 x load_ms) plus one holding the
	 * units (load_ms): 15 ms, less than the model's 40 ms lead */
	tap_ok(best[NPU_TUNE_MODE_UNDER_LOAD] == (int)want,
	       "under load: best is #%d, still the model's winner #%u "
	       "(the load delays a wave by at most %.0f ms)",
	       best[NPU_TUNE_MODE_UNDER_LOAD], want, 3 * load_ms);
	/* the load holds every unit in turns: it can only delay */
	for (i = 0; i < 5; i++)
		tap_ok(split_res[i].mode[1].median_ms >= 0.95 * split_res[i].mode[0].min_ms,
		       "%s: under load (median %.2f ms) not faster than isolated "
		       "(min %.2f ms)", names[i], split_res[i].mode[1].median_ms,
		       split_res[i].mode[0].min_ms);

	/* the faults were the tuner's: cleared, the device goes on */
	ST(npu_device_synchronize(), NPU_SUCCESS,
	   "no sticky error is left behind by the faulting candidate");
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	ST(spin(s, 1000), NPU_SUCCESS, "new work is accepted");
	ST(npu_stream_synchronize(s), NPU_SUCCESS, "and completes");
	npu_stream_destroy(s);
}

/* ------------------------------------------------------------------------
 * Under load from the other candidates (concurrent evaluation), with a
 * fault among them
 */
static void test_concurrent(void)
{
	npu_tune_config c = split_config(NPU_TUNE_UNDER_LOAD);
	npu_tune_result r[NSPLIT];
	const char *names[NSPLIT];
	int best[NPU_TUNE_MODES];
	unsigned i;

	for (i = 0; i < NSPLIT; i++)
		names[i] = splits[i].name;
	c.concurrency = 2;	/* 2 candidates x 4 streams on the rings */
	ST(npu_tune(&c, r, best), NPU_SUCCESS,
	   "npu_tune under load of the other candidates (2 at a time, no load "
	   "function)");
	print_results("concurrent", r, NSPLIT, names, NULL);
	tap_ok(r[5].mode[1].status == NPU_ERROR_ILLEGAL_ADDRESS,
	       "the fault, hit while another candidate ran, is the faulting "
	       "candidate's (%s)", npu_status_name(r[5].mode[1].status));
	for (i = 0; i < 5; i++)
		tap_ok(stats_sane(&r[i].mode[1], RUNS), "%s: measured (%u runs)",
		       names[i], r[i].mode[1].runs);
	for (i = 0; i < 5; i++)
		tap_ok(r[i].mode[1].min_ms >= 0.98 * split_floor(&splits[i]),
		       "%s: device time %.2f ms >= floor with units shared "
		       "%.0f ms", names[i], r[i].mode[1].min_ms,
		       split_floor(&splits[i]));
	tap_ok(r[0].mode[0].status == NPU_ERROR_NOT_READY,
	       "isolation was not asked for");
	tap_ok(best[NPU_TUNE_MODE_ISOLATED] == -1 && best[1] >= 0,
	       "best: -1 for the mode not run, #%d under load", best[1]);
	ST(npu_device_synchronize(), NPU_SUCCESS, "no sticky error left");
}

/* ------------------------------------------------------------------------
 * Built-in GEMMs through the kernels[] form: the kernel library's code,
 * whose grid its sizes set; the candidates are four sizes, so the work
 * orders them (64^3 has 1/64 of 256^3's multiply-adds)
 */
static void test_gemm(void)
{
	enum { M = 256, NG = 4 };
	static const unsigned sizes[NG] = { 256, 192, 128, 64 };
	npu_kernel_node_params kp[NG];
	npu_tune_result r[NG];
	const char *names[NG] = { "gemm 256^3", "gemm 192^3", "gemm 128^3",
				  "gemm 64^3" };
	npu_tune_config c;
	int best[NPU_TUNE_MODES];
	void *A, *B, *C;
	unsigned i, k;

	MUST(npu_malloc(&A, M * M * 4));
	MUST(npu_malloc(&B, M * M * 4));
	MUST(npu_malloc(&C, M * M * 4));
	MUST(npu_memset(A, 0, M * M * 4));
	MUST(npu_memset(B, 0, M * M * 4));
	for (i = 0; i < NG; i++) {
		uint64_t n = sizes[i];
		uint64_t a[9] = { npu_arg_ptr(A), npu_arg_ptr(B), npu_arg_ptr(C),
				  n, n, n, 0, npu_arg_f32(1.0f), 0 };

		memset(&kp[i], 0, sizeof(kp[i]));
		kp[i].kernel = NPU_K_GEMM_F32;
		kp[i].grid = npu_grid(1, 1, 1);
		kp[i].nargs = 9;
		memcpy(kp[i].args, a, sizeof(a));
	}
	memset(&c, 0, sizeof(c));
	c.candidates = NG;
	c.kernels = kp;
	c.runs = RUNS;
	c.warmup = 1;
	c.concurrency = 1;
	c.load = enqueue_load;
	ST(npu_tune(&c, r, best), NPU_SUCCESS,
	   "npu_tune of built-in GEMMs (kernels[] form), both modes");
	print_results("gemm", r, NG, names, NULL);
	for (i = 0; i < NG; i++)
		tap_ok(stats_sane(&r[i].mode[0], RUNS) &&
		       stats_sane(&r[i].mode[1], RUNS),
		       "%s: measured in both modes (min %.3f ms)", names[i],
		       r[i].mode[0].min_ms);
	k = 1;
	for (i = 0; i < NG; i++)
		k &= best[0] >= 0 && r[best[0]].mode[0].median_ms <= r[i].mode[0].median_ms;
	tap_ok(k, "best #%d has the lowest median (%.3f ms)", best[0],
	       best[0] >= 0 ? r[best[0]].mode[0].median_ms : 0);
	tap_ok(best[0] == NG - 1 &&
	       r[0].mode[0].min_ms > r[NG - 1].mode[0].min_ms,
	       "the least work (64^3) is the best, 256^3 the slower (%.3f vs "
	       "%.3f ms)", r[NG - 1].mode[0].min_ms, r[0].mode[0].min_ms);
	npu_free(A);
	npu_free(B);
	npu_free(C);
}

/* ------------------------------------------------------------------------
 * A candidate that never finishes: the driver's job timeout stops it
 */
static void test_hang(void)
{
	npu_kernel_node_params kp[3];
	npu_tune_result r[3];
	npu_tune_config c;
	unsigned i;

	memset(kp, 0, sizeof(kp));
	for (i = 0; i < 3; i++) {
		kp[i].kernel = i == 1 ? NPU_K_TEST_HANG : NPU_K_TEST_SPIN;
		kp[i].grid = npu_grid(1, 1, 1);
		kp[i].nargs = i == 1 ? 0 : 1;
		kp[i].args[0] = ms_to_ns(2.0);
	}
	memset(&c, 0, sizeof(c));
	c.candidates = 3;
	c.kernels = kp;
	c.modes = NPU_TUNE_ISOLATED;
	c.runs = 2;
	ST(npu_tune(&c, r, NULL), NPU_SUCCESS,
	   "npu_tune with a candidate that never finishes returns (driver "
	   "timeout %u ms)", prop.job_timeout_ms);
	tap_ok(r[1].mode[0].status == NPU_ERROR_LAUNCH_TIMEOUT && r[1].mode[0].runs == 0,
	       "it fails with NPU_ERROR_LAUNCH_TIMEOUT (%s: %s)",
	       npu_status_name(r[1].mode[0].status), r[1].message);
	tap_ok(stats_sane(&r[0].mode[0], 2) && stats_sane(&r[2].mode[0], 2) &&
	       r[2].mode[0].min_ms >= 2.0,
	       "the candidates before and after it are measured (%.2f, %.2f ms)",
	       r[0].mode[0].median_ms, r[2].mode[0].median_ms);
	ST(npu_device_synchronize(), NPU_SUCCESS, "no sticky error left");
}

/* ------------------------------------------------------------------------
 * A fault of work that is not the tuner's is reported, not swallowed
 */
static npu_stream_t foreign_stream;

static npu_status_t enqueue_foreign(unsigned int i, const npu_stream_t *s,
				    unsigned int ns, void *user)
{
	uint64_t f[1] = { bad_va }, a[1] = { 1000000 };

	(void)ns;
	(void)user;
	if (i == 0)	/* behind the tuner's back, on the caller's stream */
		npu_launch(NPU_K_TEST_FAULT, npu_grid(1, 1, 1), f, 1,
			   foreign_stream, 0);
	return npu_launch(NPU_K_TEST_SPIN, npu_grid(1, 1, 1), a, 1, s[0], 0);
}

static void test_foreign(void)
{
	npu_tune_config c;
	npu_tune_result r[2], pattern[2];
	uint64_t f[1] = { bad_va };

	memset(&c, 0, sizeof(c));
	c.candidates = 2;
	c.enqueue = enqueue_foreign;
	c.modes = NPU_TUNE_ISOLATED;
	c.runs = 3;
	MUST(npu_stream_create(&foreign_stream, NPU_STREAM_NON_BLOCKING, 0));
	ST(npu_tune(&c, r, NULL), NPU_ERROR_ILLEGAL_ADDRESS,
	   "a fault on the caller's own stream stops the tuner with it");
	tap_ok(strstr(npu_last_error_message(), "test_fault") != NULL,
	       "with the fault's message (%s)", npu_last_error_message());
	ST(npu_stream_synchronize(foreign_stream), NPU_ERROR_ILLEGAL_ADDRESS,
	   "the error stays sticky on the caller's stream");
	ST(npu_device_synchronize(), NPU_ERROR_ILLEGAL_ADDRESS,
	   "and on the device");
	memset(pattern, 0x5a, sizeof(pattern));
	memcpy(r, pattern, sizeof(r));
	c.enqueue = enqueue_split;
	ST(npu_tune(&c, r, NULL), NPU_ERROR_ILLEGAL_ADDRESS,
	   "a sticky error on entry is returned");
	tap_ok(!memcmp(r, pattern, sizeof(r)), "and nothing was touched");
	ST(npu_device_reset(), NPU_SUCCESS, "npu_device_reset clears it");
	/* a sticky error raised before the call */
	MUST(npu_launch(NPU_K_TEST_FAULT, npu_grid(1, 1, 1), f, 1, foreign_stream, 0));
	ST(npu_tune(&c, r, NULL), NPU_ERROR_ILLEGAL_ADDRESS,
	   "a fault still in flight on entry is found by the initial wait");
	ST(npu_device_reset(), NPU_SUCCESS, "reset");
	npu_stream_destroy(foreign_stream);
}

/* ------------------------------------------------------------------------
 * Two tuners at once, one with a faulting candidate
 */
struct thr {
	int with_fault;
	npu_status_t st;
	npu_tune_result r[NSPLIT];
	int best[NPU_TUNE_MODES];
};

static void *tuner_thread(void *arg)
{
	struct thr *t = arg;
	npu_tune_config c = split_config(NPU_TUNE_ISOLATED);

	c.candidates = t->with_fault ? 6 : 5;
	c.runs = 3;
	t->st = npu_tune(&c, t->r, t->best);
	return NULL;
}

static void test_threads(void)
{
	struct thr a, b;
	pthread_t ta, tb;
	unsigned i;
	int ok = 1;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.with_fault = 1;
	pthread_create(&ta, NULL, tuner_thread, &a);
	pthread_create(&tb, NULL, tuner_thread, &b);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	tap_ok(a.st == NPU_SUCCESS && b.st == NPU_SUCCESS,
	       "two threads tune at once (%s, %s)", npu_status_name(a.st),
	       npu_status_name(b.st));
	tap_ok(a.r[5].mode[0].status == NPU_ERROR_ILLEGAL_ADDRESS,
	       "the fault is blamed on the first thread's faulting candidate (%s)",
	       npu_status_name(a.r[5].mode[0].status));
	for (i = 0; i < 5; i++)
		ok &= stats_sane(&a.r[i].mode[0], 3) && stats_sane(&b.r[i].mode[0], 3);
	tap_ok(ok, "every other candidate of both threads is measured");
	ST(npu_device_synchronize(), NPU_SUCCESS, "no sticky error left");
}

int main(void)
{
	int fds;

	tap_need_device();
	MUST(npu_device_get_properties(&prop, 0));
	bad_va = prop.va_size ? ((prop.va_size - 0x200000) & ~0xfffull) : 0x7f00000000ull;
	tap_diag("%u compute rings, %u units, timing model %s, cu %u Mops/s, "
		 "launch %u ns", prop.compute_rings, prop.compute_units,
		 prop.features & NPU_FEATURE_TIMING_MODEL ? "on" : "off",
		 prop.cu_mops, prop.launch_ns);
	fds = count_fds();
	test_invalid();
	test_splits();
	test_concurrent();
	test_gemm();
	test_hang();
	test_foreign();
	test_threads();
	tap_ok(count_fds() == fds, "no file descriptor leaked (%d)", count_fds());
	return tap_done();
}
