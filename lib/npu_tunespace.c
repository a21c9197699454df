// SPDX-License-Identifier: MIT
/*
 * npu_tunespace.c - tuning over a parameter space (Documentation/lib/tuning.rst):
 * every point is the kernel built from one source with -D<name>=<value>
 * per parameter (npu-cc --cache: built on demand, cached by content), and
 * measured in batches with npu_tune (several candidates at once, in
 * isolation or under each other's load). Strategies: exhaustive, random
 * sampling, and Bayesian optimisation: a Gaussian-process surrogate of
 * log(time) over the parameters' normalised indices (squared-exponential
 * kernel, length scale by marginal likelihood; linear algebra from GSL)
 * and expected improvement, as Kernel Tuner's bayes_opt.
 *
 * Built only on public calls (npu_module_load, npu_tune, ...).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "npu_core.h"

extern char **environ;

#define MAX_POINTS	100000

struct point {
	unsigned idx[NPU_TUNE_SPACE_MAX_PARAMS];	/* value indices */
	float ms;			/* median, NAN until measured */
	bool done, failed;
	bool confirmed;			/* taken to be measured again (confirm()) */
	unsigned eval;			/* evaluations when it was measured */
	npu_module_t mod;
	npu_function_t f;
};

struct space {
	const npu_tune_space_config *c;
	struct point *p;
	unsigned n;			/* valid points */
	unsigned evals, to_best, failed;
	int best;
	/* the batch npu_tune measures */
	unsigned batch[NPU_TUNE_MAX_CANDIDATES];
	unsigned nbatch;
};

static void values_of(const struct space *S, const struct point *p, long *v)
{
	unsigned k;

	for (k = 0; k < S->c->nparams; k++)
		v[k] = S->c->params[k].values[p->idx[k]];
}

/* Build (or find in the cache) the point's code object: npu-cc --cache. */
static npu_status_t build(const struct space *S, struct point *p)
{
	const npu_tune_space_config *c = S->c;
	const char *cc = c->npu_cc ? c->npu_cc :
			 getenv("NPU_CC") ? getenv("NPU_CC") : "npu-cc";
	const char *dir = c->cache_dir ? c->cache_dir :
			  getenv("NPU_TUNE_CACHE") ? getenv("NPU_TUNE_CACHE") :
			  "npu-tune-cache";
	char *argv[NPU_TUNE_SPACE_MAX_PARAMS + 8], defs[NPU_TUNE_SPACE_MAX_PARAMS][96];
	char out[4096];
	long v[NPU_TUNE_SPACE_MAX_PARAMS];
	posix_spawn_file_actions_t fa;
	int pipefd[2], st, a = 0;
	ssize_t got = 0, r;
	npu_status_t s;
	pid_t pid;
	unsigned k;

	values_of(S, p, v);
	argv[a++] = (char *)cc;
	argv[a++] = (char *)"--cache";
	argv[a++] = (char *)dir;
	for (k = 0; k < c->nparams; k++) {
		snprintf(defs[k], sizeof(defs[k]), "-D%s=%ld", c->params[k].name, v[k]);
		argv[a++] = defs[k];
	}
	argv[a++] = (char *)c->source;
	argv[a] = NULL;
	if (pipe2(pipefd, O_CLOEXEC))
		return npu_fail(NPU_ERROR_OS, "pipe: %s", strerror(errno));
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	st = posix_spawnp(&pid, cc, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (st) {
		close(pipefd[0]);
		return npu_fail(NPU_ERROR_FILE_NOT_FOUND, "cannot run %s: %s",
				cc, strerror(st));
	}
	while (got < (ssize_t)sizeof(out) - 1 &&
	       (r = read(pipefd[0], out + got, sizeof(out) - 1 - got)) > 0)
		got += r;
	close(pipefd[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	out[got] = 0;
	if (got && out[got - 1] == '\n')
		out[got - 1] = 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) || !out[0])
		return npu_fail(NPU_ERROR_INVALID_IMAGE, "%s --cache %s failed "
				"for a point of %s", cc, dir, c->source);
	s = npu_module_load(&p->mod, out);
	if (!s)
		s = npu_module_get_function(&p->f, p->mod, c->kernel);
	return s;
}

static npu_status_t enqueue(unsigned int i, const npu_stream_t *st,
			    unsigned int ns, void *user)
{
	struct space *S = user;
	struct point *p = &S->p[S->batch[i]];
	long v[NPU_TUNE_SPACE_MAX_PARAMS];

	(void)ns;
	values_of(S, p, v);
	return S->c->launch(p->f, v, st[0], S->c->user);
}

/* Measure the batch; an error stops tuning. again: points measured
 * before, measured once more with at least 3 runs (confirm()). */
static npu_status_t measure(struct space *S, bool again)
{
	const npu_tune_space_config *c = S->c;
	npu_tune_result *res;
	npu_tune_config tc;
	unsigned i, k = 0;
	npu_status_t st;

	/* build first: points that do not build fail alone */
	for (i = 0; i < S->nbatch; i++) {
		struct point *p = &S->p[S->batch[i]];

		if (build(S, p)) {
			p->failed = p->done = true;
			S->failed++;
			if (!again)
				p->eval = ++S->evals;
			continue;
		}
		S->batch[k++] = S->batch[i];
	}
	S->nbatch = k;
	if (!k)
		return NPU_SUCCESS;
	res = calloc(k, sizeof(*res));
	if (!res)
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "tuning results");
	memset(&tc, 0, sizeof(tc));
	tc.candidates = k;
	tc.enqueue = enqueue;
	tc.user = S;
	tc.modes = c->mode == NPU_TUNE_MODE_UNDER_LOAD ? NPU_TUNE_UNDER_LOAD :
		   NPU_TUNE_ISOLATED;
	tc.runs = c->runs ? c->runs : 3;
	if (again && tc.runs < 3)
		tc.runs = 3;
	tc.warmup = 1;
	tc.concurrency = k > 1 ? (k < NPU_TUNE_MAX_STREAMS ? k : NPU_TUNE_MAX_STREAMS) : 1;
	if (tc.modes == NPU_TUNE_UNDER_LOAD && k == 1)
		tc.modes = NPU_TUNE_ISOLATED;	/* nothing to load it with */
	st = npu_tune(&tc, res, NULL);
	for (i = 0; i < k && !st; i++) {
		struct point *p = &S->p[S->batch[i]];
		const npu_tune_stats *ts = &res[i].mode[tc.modes == NPU_TUNE_UNDER_LOAD ?
					NPU_TUNE_MODE_UNDER_LOAD : NPU_TUNE_MODE_ISOLATED];

		if (!again) {
			p->done = true;
			p->eval = ++S->evals;
		}
		if (ts->status) {
			p->failed = true;
			S->failed++;
			continue;
		}
		p->ms = ts->median_ms;
		if (!again && (S->best < 0 || p->ms < S->p[S->best].ms)) {
			S->best = (int)(p - S->p);
			S->to_best = S->evals;
		}
	}
	for (i = 0; i < k; i++) {	/* keep few modules loaded */
		struct point *p = &S->p[S->batch[i]];

		if (p->mod)
			npu_module_unload(p->mod);
		p->mod = NULL;
		p->f = NULL;
	}
	free(res);
	S->nbatch = 0;
	return st;
}

/* ------------------------------------------------------------------------
 * Gaussian process over normalised parameter indices
 */
static void coords(const struct space *S, const struct point *p, double *x)
{
	unsigned k;

	for (k = 0; k < S->c->nparams; k++) {
		unsigned n = S->c->params[k].nvalues;

		x[k] = n > 1 ? (double)p->idx[k] / (n - 1) : 0;
	}
}

static double kernel(const double *a, const double *b, unsigned d, double ell)
{
	double s = 0;
	unsigned k;

	for (k = 0; k < d; k++)
		s += (a[k] - b[k]) * (a[k] - b[k]);
	return exp(-0.5 * s / (ell * ell));
}

struct gp {
	unsigned n, d;
	double *x;			/* n x d */
	gsl_matrix *L;			/* Cholesky factor of K + noise */
	gsl_vector *alpha;		/* (K + noise)^-1 y */
	double ell, ybest, mean, sd;
};

/* Fit for length scale ell; returns the log marginal likelihood, or -inf. */
static double gp_fit(struct gp *g, const double *y, double ell)
{
	gsl_vector_const_view yv = gsl_vector_const_view_array(y, g->n);
	double lml = 0;
	unsigned i, j;

	g->ell = ell;
	for (i = 0; i < g->n; i++)
		for (j = 0; j < g->n; j++)
			gsl_matrix_set(g->L, i, j, kernel(g->x + i * g->d,
						g->x + j * g->d, g->d, ell) +
				       (i == j ? 1e-4 : 0));
	if (gsl_linalg_cholesky_decomp1(g->L))
		return -INFINITY;
	gsl_linalg_cholesky_solve(g->L, &yv.vector, g->alpha);
	gsl_blas_ddot(&yv.vector, g->alpha, &lml);
	lml *= -0.5;
	for (i = 0; i < g->n; i++)
		lml -= log(gsl_matrix_get(g->L, i, i));
	return lml;
}

/* Expected improvement (minimising) at x. */
static double gp_ei(const struct gp *g, const double *x)
{
	gsl_vector *k = gsl_vector_alloc(g->n);
	double mu = 0, var, sd, z;
	unsigned i;

	for (i = 0; i < g->n; i++)
		gsl_vector_set(k, i, kernel(x, g->x + i * g->d, g->d, g->ell));
	gsl_blas_ddot(k, g->alpha, &mu);
	gsl_blas_dtrsv(CblasLower, CblasNoTrans, CblasNonUnit, g->L, k);
	gsl_blas_ddot(k, k, &var);
	gsl_vector_free(k);
	var = 1.0 - var;
	sd = var > 1e-12 ? sqrt(var) : 1e-6;
	z = (g->ybest - mu - 0.01) / sd;
	return (g->ybest - mu - 0.01) * gsl_cdf_ugaussian_P(z) +
	       sd * gsl_ran_ugaussian_pdf(z);
}

/* Choose the next batch by expected improvement. */
static npu_status_t bayes_batch(struct space *S, unsigned want)
{
	static const double ells[] = { 0.1, 0.2, 0.35, 0.6, 1.0 };
	unsigned d = S->c->nparams, n = 0, i, j;
	double *y, *ei, best_lml = -INFINITY, best_ell = 0.35, sum = 0, sq = 0;
	struct gp g = { .d = d };

	for (i = 0; i < S->n; i++)
		n += S->p[i].done && !S->p[i].failed;
	g.n = n;
	g.x = malloc((size_t)n * d * sizeof(double));
	y = malloc((n ? n : 1) * sizeof(double));
	ei = malloc(S->n * sizeof(double));
	g.L = n ? gsl_matrix_alloc(n, n) : NULL;
	g.alpha = n ? gsl_vector_alloc(n) : NULL;
	if (!g.x || !y || !ei || !n || !g.L || !g.alpha) {
		free(g.x);
		free(y);
		free(ei);
		if (g.L)
			gsl_matrix_free(g.L);
		if (g.alpha)
			gsl_vector_free(g.alpha);
		return n ? npu_fail(NPU_ERROR_OUT_OF_MEMORY, "surrogate") :
			   NPU_ERROR_NOT_READY;
	}
	for (i = 0, j = 0; i < S->n; i++) {
		if (!S->p[i].done || S->p[i].failed)
			continue;
		coords(S, &S->p[i], g.x + j * d);
		y[j] = log(S->p[i].ms > 0 ? S->p[i].ms : 1e-6);
		sum += y[j];
		sq += y[j] * y[j];
		j++;
	}
	g.mean = sum / n;
	g.sd = sqrt(fmax(sq / n - g.mean * g.mean, 1e-12));
	g.ybest = INFINITY;
	for (i = 0; i < n; i++) {
		y[i] = (y[i] - g.mean) / g.sd;
		g.ybest = fmin(g.ybest, y[i]);
	}
	for (i = 0; i < sizeof(ells) / sizeof(ells[0]); i++) {
		double l = gp_fit(&g, y, ells[i]);

		if (l > best_lml) {
			best_lml = l;
			best_ell = ells[i];
		}
	}
	gp_fit(&g, y, best_ell);
	for (i = 0; i < S->n; i++) {
		double x[NPU_TUNE_SPACE_MAX_PARAMS];

		ei[i] = -1;
		if (S->p[i].done)
			continue;
		coords(S, &S->p[i], x);
		ei[i] = gp_ei(&g, x);
	}
	while (S->nbatch < want) {
		int pick = -1;

		for (i = 0; i < S->n; i++)
			if (ei[i] >= 0 && (pick < 0 || ei[i] > ei[pick]))
				pick = (int)i;
		if (pick < 0)
			break;
		ei[pick] = -1;
		S->batch[S->nbatch++] = (unsigned)pick;
	}
	free(g.x);
	free(y);
	free(ei);
	gsl_matrix_free(g.L);
	gsl_vector_free(g.alpha);
	return NPU_SUCCESS;
}

/* ------------------------------------------------------------------------
 * The search
 */
static npu_status_t enumerate(struct space *S)
{
	const npu_tune_space_config *c = S->c;
	unsigned idx[NPU_TUNE_SPACE_MAX_PARAMS] = { 0 }, k;
	uint64_t total = 1;
	long v[NPU_TUNE_SPACE_MAX_PARAMS];

	/* checked at each factor: eight counts of up to 2^32 - 1 would
	 * overflow the product (nvalues >= 1: see check()) */
	for (k = 0; k < c->nparams; k++) {
		if (c->params[k].nvalues > MAX_POINTS / total)
			return npu_fail(NPU_ERROR_INVALID_VALUE, "more than %u "
					"points (parameter %u has %u values, "
					"the ones before it %llu combinations): "
					"at most %u", MAX_POINTS, k,
					c->params[k].nvalues,
					(unsigned long long)total, MAX_POINTS);
		total *= c->params[k].nvalues;
	}
	S->p = calloc(total, sizeof(*S->p));
	if (!S->p)
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "tuning space");
	for (uint64_t t = 0; t < total; t++) {
		for (k = 0; k < c->nparams; k++)
			v[k] = c->params[k].values[idx[k]];
		if (!c->valid || c->valid(v, c->user)) {
			memcpy(S->p[S->n].idx, idx, sizeof(idx));
			S->p[S->n].ms = NAN;
			S->n++;
		}
		for (k = 0; k < c->nparams && ++idx[k] == c->params[k].nvalues; k++)
			idx[k] = 0;
	}
	if (!S->n)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "no point of the space "
				"satisfies the constraints");
	return NPU_SUCCESS;
}

static npu_status_t check(const npu_tune_space_config *c)
{
	unsigned k;

	if (!c || !c->source || !c->kernel || !c->launch || !c->params)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "config, source, kernel, "
				"launch and params are required");
	if (!c->nparams || c->nparams > NPU_TUNE_SPACE_MAX_PARAMS)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "%u parameters (1..%u)",
				c->nparams, NPU_TUNE_SPACE_MAX_PARAMS);
	for (k = 0; k < c->nparams; k++)
		if (!c->params[k].name || !c->params[k].nvalues ||
		    !c->params[k].values)
			return npu_fail(NPU_ERROR_INVALID_VALUE, "parameter %u has "
					"no name or no values", k);
	if (c->strategy > NPU_TUNE_BAYES || c->batch > NPU_TUNE_MAX_STREAMS ||
	    (c->mode != NPU_TUNE_MODE_ISOLATED &&
	     c->mode != NPU_TUNE_MODE_UNDER_LOAD) || c->flags)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "unknown strategy, mode "
				"or flags, or batch above %u",
				NPU_TUNE_MAX_STREAMS);
	if (access(c->source, R_OK))
		return npu_fail(NPU_ERROR_FILE_NOT_FOUND, "%s: %s", c->source,
				strerror(errno));
	return NPU_SUCCESS;
}

/*
 * The best measured point, once measured again with at least 3 runs: a
 * search with runs = 1 could otherwise report a point that one fast run
 * flattered. Measures the best unconfirmed points, a batch at a time, until
 * the fastest point is a confirmed one. Not counted as evaluations.
 */
static npu_status_t confirm(struct space *S, unsigned batch)
{
	npu_status_t st = NPU_SUCCESS;
	unsigned i;

	while (!st && S->best >= 0 && !S->p[S->best].confirmed) {
		while (S->nbatch < batch) {	/* the fastest unconfirmed */
			int pick = -1;

			for (i = 0; i < S->n; i++) {
				const struct point *p = &S->p[i];

				if (p->done && !p->failed && !p->confirmed &&
				    (pick < 0 || p->ms < S->p[pick].ms))
					pick = (int)i;
			}
			if (pick < 0)
				break;
			/* marked now so that the next pick is another */
			S->p[pick].confirmed = true;
			S->batch[S->nbatch++] = (unsigned)pick;
		}
		st = measure(S, true);
		S->best = -1;
		for (i = 0; i < S->n; i++) {
			const struct point *p = &S->p[i];

			if (p->done && !p->failed &&
			    (S->best < 0 || p->ms < S->p[S->best].ms))
				S->best = (int)i;
		}
		if (S->best >= 0)
			S->to_best = S->p[S->best].eval;
	}
	return st;
}

npu_status_t npu_tune_space(const npu_tune_space_config *c,
			    npu_tune_space_result *r, float *times)
{
	struct space S = { .c = c, .best = -1 };
	unsigned batch, budget, i;
	npu_status_t st;
	gsl_rng *rng = NULL;
	unsigned *order = NULL;

	if (!r)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "result is NULL");
	st = check(c);
	if (!st)
		st = enumerate(&S);
	if (st)
		goto out;
	batch = c->batch ? c->batch : 4;
	budget = c->budget && c->budget < S.n ? c->budget : S.n;
	if (c->strategy == NPU_TUNE_EXHAUSTIVE)
		budget = S.n;
	rng = gsl_rng_alloc(gsl_rng_mt19937);
	order = malloc(S.n * sizeof(*order));
	if (!rng || !order) {
		st = npu_fail(NPU_ERROR_OUT_OF_MEMORY, "tuning");
		goto out;
	}
	gsl_rng_set(rng, c->seed ? c->seed : 1);
	for (i = 0; i < S.n; i++)
		order[i] = i;
	if (c->strategy != NPU_TUNE_EXHAUSTIVE)
		gsl_ran_shuffle(rng, order, S.n, sizeof(*order));
	i = 0;
	while (!st && S.evals < budget) {
		unsigned want = budget - S.evals < batch ? budget - S.evals : batch;
		/* Bayesian optimisation starts from random points: 2 per
		 * parameter, at least one batch */
		unsigned initial = 2 * c->nparams > batch ? 2 * c->nparams : batch;

		if (c->strategy == NPU_TUNE_BAYES && S.evals >= initial) {
			st = bayes_batch(&S, want);
			if (st == NPU_ERROR_NOT_READY)	/* nothing measured yet */
				st = NPU_SUCCESS;
		}
		while (S.nbatch < want && i < S.n) {
			if (!S.p[order[i]].done)
				S.batch[S.nbatch++] = order[i];
			i++;
		}
		if (!S.nbatch)
			break;
		st = measure(&S, false);
	}
	if (!st)
		st = confirm(&S, batch);
	if (!st && S.best < 0)
		st = npu_fail(NPU_ERROR_LAUNCH_FAILURE, "no point could be "
			      "measured (%u failed)", S.failed);
out:
	if (!st) {
		memset(r, 0, sizeof(*r));
		values_of(&S, &S.p[S.best], r->best);
		r->best_ms = S.p[S.best].ms;
		r->points = S.n;
		r->evaluations = S.evals;
		r->evaluations_to_best = S.to_best;
		r->failed = S.failed;
		if (times)
			for (i = 0; i < S.n; i++)
				times[i] = S.p[i].done && !S.p[i].failed ?
					   S.p[i].ms : NAN;
	}
	if (rng)
		gsl_rng_free(rng);
	free(order);
	free(S.p);
	return st;
}
