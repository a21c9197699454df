/* SPDX-License-Identifier: MIT */
/*
 * lib_profile: device counters, the command trace (device timestamps),
 * its Chrome trace JSON, and the roofline verdicts of the profile report.
 * Overlap and ordering are judged from device timestamps only.
 */
#include "tap.h"

#include <dlfcn.h>
#include <stddef.h>

#define N (1 << 16)

/* A minimal JSON syntax check: returns the end of the value or NULL. */
static const char *jvalue(const char *p);

static const char *ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static const char *jstring(const char *p)
{
	if (*p != '"')
		return NULL;
	for (p++; *p && *p != '"'; p++)
		if (*p == '\\' && p[1])
			p++;
	return *p == '"' ? p + 1 : NULL;
}

static const char *jvalue(const char *p)
{
	p = ws(p);
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';
		int obj = *p == '{';

		p = ws(p + 1);
		if (*p == close)
			return p + 1;
		for (;;) {
			if (obj) {
				p = jstring(ws(p));
				if (!p)
					return NULL;
				p = ws(p);
				if (*p++ != ':')
					return NULL;
			}
			p = jvalue(p);
			if (!p)
				return NULL;
			p = ws(p);
			if (*p == ',') {
				p++;
				continue;
			}
			return *p == close ? p + 1 : NULL;
		}
	}
	if (*p == '"')
		return jstring(p);
	if (!strncmp(p, "true", 4) || !strncmp(p, "null", 4))
		return p + 4;
	if (!strncmp(p, "false", 5))
		return p + 5;
	if (*p == '-' || (*p >= '0' && *p <= '9')) {
		char *e;

		strtod(p, &e);
		return e;
	}
	return NULL;
}

static int count_str(const char *s, const char *w)
{
	int n = 0;

	while ((s = strstr(s, w))) {
		n++;
		s += strlen(w);
	}
	return n;
}

static npu_device_prop prop;

/* A counter summed over one class of engines (compute or copy): its rings
 * and, for streams on user queues, its user-queue engines. */
static uint64_t sum_rings(const npu_device_counters *c, int copy, int field)
{
	uint32_t r, a = copy ? c->compute_rings : 0;
	uint32_t b = copy ? c->compute_rings + c->copy_rings : c->compute_rings;
	uint32_t ua = copy ? c->uq_compute_engines : 0;
	uint32_t ub = copy ? c->uq_compute_engines + c->uq_copy_engines :
		c->uq_compute_engines;
	const npu_ring_counters *e;
	uint64_t v = 0;

	for (r = a; r < b + ub - ua; r++) {
		e = r < b ? &c->ring[r] : &c->uq_engine[ua + r - b];
		v += field == 0 ? e->commands : field == 1 ? e->bytes :
			field == 2 ? e->ops : e->busy_ns;
	}
	return v;
}

static void test_counters(void *da, void *db, void *dc, float *h)
{
	npu_device_counters c0, c1, c2;
	uint64_t a[4] = { npu_arg_ptr(da), npu_arg_ptr(db), npu_arg_ptr(dc), N };
	npu_stream_t s;
	unsigned sf = 0;
	int i, uq, kq, cls;

	if (!(prop.features & NPU_FEATURE_COUNTERS)) {
		tap_skip("device has no counters");
		return;
	}
	/* the kind of queue the run asks for (queues.sh kernel: kernel
	 * queues, else user queues), named so that npu_stream_get_flags
	 * says which the stream got */
	kq = getenv("NPU_QUEUES") && !strcmp(getenv("NPU_QUEUES"), "kernel");
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING |
			       (kq ? NPU_STREAM_KERNEL_QUEUE : NPU_STREAM_USER_QUEUE), 0));
	MUST(npu_stream_get_flags(s, &sf));
	uq = !!(sf & NPU_STREAM_USER_QUEUE);
	if (prop.features & NPU_FEATURE_USERQ)
		tap_ok(uq == !kq, "the stream is on a %s queue",
		       kq ? "kernel" : "user");
	/* the kernel library loads at the first built-in launch: before c0 */
	MUST(npu_launch(NPU_K_VADD_F32, npu_grid(4, 1, 1), a, 4, s, 0));
	MUST(npu_device_synchronize());
	MUST(npu_device_get_counters(&c0));
	tap_ok(c0.compute_rings == prop.compute_rings && c0.compute_units == prop.compute_units,
	       "counters describe %u compute rings, %u units", c0.compute_rings,
	       c0.compute_units);
	if (uq)
		tap_ok(c0.uq_compute_engines > 0 &&
		       c0.uq_compute_engines + c0.uq_copy_engines <= NPU_MAX_UQ_ENGINES,
		       "... and %u + %u user-queue engines (the stream is on a user queue)",
		       c0.uq_compute_engines, c0.uq_copy_engines);
	{
		/* a program built before the user-queue engines calls the
		 * old symbol with the old, shorter struct */
		npu_status_t (*old)(npu_device_counters *) =
			(npu_status_t (*)(npu_device_counters *))
			dlsym(RTLD_DEFAULT, "npu_device_get_counters");
		size_t known = offsetof(npu_device_counters, uq_compute_engines);
		npu_device_counters o;
		unsigned char *b = (unsigned char *)&o;
		size_t k, past = 0;

		memset(&o, 0xab, sizeof(o));
		tap_ok(old && old(&o) == NPU_SUCCESS &&
		       o.compute_rings == c0.compute_rings &&
		       o.compute_units == c0.compute_units,
		       "the old npu_device_get_counters symbol still answers");
		for (k = known; k < sizeof(o); k++)
			past += b[k] != 0xab;
		tap_ok(past == 0, "... and writes nothing past the old struct "
		       "(%zu bytes changed)", past);
	}
	for (i = 0; i < 10; i++)
		MUST(npu_launch(NPU_K_VADD_F32, npu_grid(4, 1, 1), a, 4, s, 0));
	MUST(npu_stream_synchronize(s));
	MUST(npu_device_get_counters(&c1));
	/* a built-in is the kernel library's code: its ops are the
	 * instructions its threads retired */
	/* a job is its packets, the library's completion-word SEM_SIGNAL
	 * and, on a kernel queue, the driver's FENCE packet */
	tap_ok(sum_rings(&c1, 0, 0) - sum_rings(&c0, 0, 0) >= 20 &&
	       sum_rings(&c1, 0, 0) - sum_rings(&c0, 0, 0) <= 30,
	       "compute commands +10 launches, +10 completion words (+ fences) (%llu)",
	       (unsigned long long)(sum_rings(&c1, 0, 0) - sum_rings(&c0, 0, 0)));
	tap_ok(sum_rings(&c1, 0, 2) - sum_rings(&c0, 0, 2) >= 10ull * N / 4096,
	       "compute ops: the code's instructions, at least one per block "
	       "(%llu)",
	       (unsigned long long)(sum_rings(&c1, 0, 2) - sum_rings(&c0, 0, 2)));
	MUST(npu_memcpy_async(da, h, N * 4, NPU_MEMCPY_HOST_TO_DEVICE, s));
	MUST(npu_stream_synchronize(s));
	MUST(npu_device_get_counters(&c2));
	/* a kernel-queue stream copies on a copy ring; a user-queue stream
	 * on its copy-class queue, so on a copy engine (each on the compute
	 * side when the device has none) */
	cls = uq ? c1.uq_copy_engines > 0 : prop.copy_rings > 0;
	{
		uint64_t dc_ = sum_rings(&c2, cls, 0) - sum_rings(&c1, cls, 0);
		uint64_t db_ = sum_rings(&c2, cls, 1) - sum_rings(&c1, cls, 1);

		tap_ok(dc_ >= 2 && dc_ <= 3 && db_ >= 4ull * N && db_ <= 4ull * N + 64,
		       "%s: +1 copy, +1 completion word (+ fence), +%d bytes (%llu, %llu)",
		       uq ? (cls ? "copy user-queue engines" :
			     "compute user-queue engines") :
		       cls ? "copy rings" : "compute rings",
		       4 * N, (unsigned long long)dc_, (unsigned long long)db_);
	}
	{
		uint64_t b0 = 0, b1 = 0;

		for (i = 0; i < (int)c0.compute_units; i++) {
			b0 += c0.cu_busy_ns[i];
			b1 += c1.cu_busy_ns[i];
		}
		tap_ok(b1 > b0 && sum_rings(&c1, 0, 3) > sum_rings(&c0, 0, 3) &&
		       sum_rings(&c2, cls, 3) > sum_rings(&c1, cls, 3),
		       "engine and unit busy time increase");
	}
	tap_ok(c2.clock > c1.clock && c1.clock > c0.clock, "counter clock advances");
	npu_stream_destroy(s);
}

static void test_trace(void *da, void *db, void *dc, float *h)
{
	npu_stream_t s, s1, s2;
	uint64_t a[4] = { npu_arg_ptr(da), npu_arg_ptr(db), npu_arg_ptr(dc), N };
	uint64_t sp[1] = { 300000000 };	/* 300 ms: overlap survives a loaded host */
	npu_trace_record *r;
	size_t n = 0, i;
	int issued = 0, ok_se = 1, ok_order = 1, k;
	uint64_t id_s = 0, id_1 = 0, id_2 = 0;
	npu_trace_record *sp1 = NULL, *sp2 = NULL;
	FILE *f;
	char *json;
	long len;

	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&s1, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_stream_create(&s2, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_device_synchronize());
	MUST(npu_profiler_start());
	for (k = 0; k < 4; k++) {
		MUST(npu_memcpy_async(da, h, N * 4, NPU_MEMCPY_HOST_TO_DEVICE, s));
		MUST(npu_launch(NPU_K_VADD_F32, npu_grid(4, 1, 1), a, 4, s, 0));
		MUST(npu_memset_async(db, 0, N * 4, s));
		MUST(npu_memcpy_async(h, dc, N * 4, NPU_MEMCPY_DEVICE_TO_HOST, s));
		issued += 4;
	}
	MUST(npu_launch(NPU_K_TEST_SPIN, npu_grid(1, 1, 1), sp, 1, s1, 0));
	MUST(npu_launch(NPU_K_TEST_SPIN, npu_grid(1, 1, 1), sp, 1, s2, 0));
	issued += 2;
	MUST(npu_device_synchronize());
	MUST(npu_profiler_stop());
	/* not traced */
	MUST(npu_launch(NPU_K_VADD_F32, npu_grid(4, 1, 1), a, 4, s, 0));
	MUST(npu_stream_synchronize(s));
	MUST(npu_trace_get_records(NULL, &n));
	tap_ok((int)n == issued, "one trace record per command (%zu of %d)", n, issued);
	r = calloc(n + 1, sizeof(*r));
	MUST(npu_trace_get_records(r, &n));
	for (i = 0; i < n; i++)
		if (r[i].start > r[i].end || !r[i].start)
			ok_se = 0;
	tap_ok(ok_se, "every record has 0 < start <= end (device clock)");
	if (n >= (size_t)issued) {
		id_s = r[0].stream_id;
		id_1 = r[n - 2].stream_id;
		id_2 = r[n - 1].stream_id;
		sp1 = &r[n - 2];
		sp2 = &r[n - 1];
	}
	{
		uint64_t last_end = 0;
		int cnt = 0;

		for (i = 0; i < n; i++) {
			if (r[i].stream_id != id_s)
				continue;
			if (r[i].start < last_end)
				ok_order = 0;
			last_end = r[i].end;
			cnt++;
		}
		tap_ok(ok_order && cnt == 16,
		       "records of one stream are ordered and do not overlap (%d)", cnt);
	}
	/* vadd is the kernel library's code, on the grid its size takes
	 * (a block per 4096 elements) */
	tap_ok(n >= 16 && r[1].kind == NPU_TRACE_KERNEL &&
	       r[1].kernel == NPU_TRACE_USER_KERNEL &&
	       !strcmp(r[1].name, "bi_vadd_f32") && r[1].grid.x == N / 4096 &&
	       r[0].kind == NPU_TRACE_COPY && r[0].bytes == 4ull * N &&
	       r[2].kind == NPU_TRACE_FILL && r[2].bytes == 4ull * N,
	       "records carry kind, kernel, grid and bytes");
	tap_ok(prop.copy_rings == 0 || (n >= 2 && r[0].ring >= prop.compute_rings &&
					r[1].ring < prop.compute_rings),
	       "copies on a copy ring, kernels on a compute ring");
	tap_ok(sp1 && sp2 && id_1 != id_2 && sp1->kernel == NPU_K_TEST_SPIN &&
	       sp1->start < sp2->end && sp2->start < sp1->end,
	       "spin kernels on two streams overlap in device time");
	/* JSON */
	MUST(npu_trace_write_json("trace.json"));
	f = fopen("trace.json", "r");
	tap_ok(f != NULL, "trace.json written");
	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	json = calloc(1, (size_t)len + 1);
	if (fread(json, 1, (size_t)len, f) != (size_t)len)
		len = 0;
	fclose(f);
	{
		const char *e = jvalue(json);

		tap_ok(e && *ws(e) == 0, "trace JSON parses");
	}
	tap_ok(strstr(json, "\"traceEvents\":[") != NULL &&
	       count_str(json, "\"ph\":\"X\"") == 2 * (int)n,
	       "traceEvents holds one event per record in its ring lane and one in its stream lane");
	tap_ok(strstr(json, "\"name\":\"thread_name\"") && strstr(json, "compute ring") &&
	       strstr(json, "\"name\":\"stream "),
	       "lanes are named per ring and per stream");
	free(json);
	free(r);
	npu_stream_destroy(s);
	npu_stream_destroy(s1);
	npu_stream_destroy(s2);
}

static void test_roofline(void)
{
	npu_kernel_node_params g, v;
	void *A, *B, *C, *x, *y, *z;
	int cb = -1, vb = -1;
	uint64_t ops, bytes;
	const uint32_t M = 256;
	npu_stream_t s;
	char *buf = NULL;
	size_t blen = 0;
	FILE *mf;

	MUST(npu_malloc(&A, M * M * 4));
	MUST(npu_malloc(&B, M * M * 4));
	MUST(npu_malloc(&C, M * M * 4));
	MUST(npu_malloc(&x, N * 4));
	MUST(npu_malloc(&y, N * 4));
	MUST(npu_malloc(&z, N * 4));
	memset(&g, 0, sizeof(g));
	g.kernel = NPU_K_GEMM_F32;
	g.grid = npu_grid(prop.compute_units, 1, 1);
	g.nargs = 9;
	g.args[0] = npu_arg_ptr(A);
	g.args[1] = npu_arg_ptr(B);
	g.args[2] = npu_arg_ptr(C);
	g.args[3] = M;
	g.args[4] = M;
	g.args[5] = M;
	g.args[6] = 0;
	g.args[7] = npu_arg_f32(1.0f);
	g.args[8] = npu_arg_f32(0.0f);
	memset(&v, 0, sizeof(v));
	v.kernel = NPU_K_VADD_F32;
	v.grid = npu_grid(prop.compute_units, 1, 1);
	v.nargs = 4;
	v.args[0] = npu_arg_ptr(x);
	v.args[1] = npu_arg_ptr(y);
	v.args[2] = npu_arg_ptr(z);
	v.args[3] = N;
	MUST(npu_kernel_roofline(&g, &cb, &ops, &bytes));
	tap_ok(cb == 1 && ops == 2ull * M * M * M + 3ull * M * M,
	       "GEMM %ux%ux%u is compute-bound (%llu ops, %llu bytes)", M, M, M,
	       (unsigned long long)ops, (unsigned long long)bytes);
	MUST(npu_kernel_roofline(&v, &vb, &ops, &bytes));
	tap_ok(vb == 0 && ops == N && bytes == 12ull * N, "vector add is memory-bound");
	/* the report says the same from a trace */
	MUST(npu_stream_create(&s, NPU_STREAM_NON_BLOCKING, 0));
	MUST(npu_device_synchronize());
	MUST(npu_profiler_start());
	MUST(npu_launch(g.kernel, g.grid, g.args, 9, s, 0));
	MUST(npu_launch(v.kernel, v.grid, v.args, 4, s, 0));
	MUST(npu_stream_synchronize(s));
	MUST(npu_profiler_stop());
	mf = open_memstream(&buf, &blen);
	MUST(npu_profile_report(mf));
	fclose(mf);
	fputs(buf, stdout);
	{
		/* the built-ins are profiled as the user kernels they are:
		 * each section's roofline from the device's counters (the
		 * tensor pipe's FLOPs over the bytes moved), and a verdict
		 * that follows it; gemm reuses its tiles, vadd does not */
		char *gl = strstr(buf, "\n  bi_gemm_f32 ("), *vl = strstr(buf, "\n  bi_vadd_f32 (");
		char *gr = gl ? strstr(gl, "    roofline: ") : NULL;
		char *vr = vl ? strstr(vl, "    roofline: ") : NULL;
		char *gv = gl ? strstr(gl, "verdict: ") : NULL;
		char *vv = vl ? strstr(vl, "verdict: ") : NULL;
		double gi = -1, gridge = 0, vi = -1, vridge = 0;

		if (gr)
			sscanf(gr, "    roofline: %lf FLOP/byte (ridge %lf)", &gi, &gridge);
		if (vr)
			sscanf(vr, "    roofline: %lf FLOP/byte (ridge %lf)", &vi, &vridge);
		tap_ok(gv && gi > 0 && gridge > 0 &&
		       !strncmp(gv + 9, gi > gridge ? "compute-bound" : "memory-bound",
				gi > gridge ? 13 : 12),
		       "report: bi_gemm_f32 at %.2f FLOP/byte (ridge %.2f), its "
		       "verdict follows", gi, gridge);
		tap_ok(vv && vi >= 0 && vi < vridge &&
		       !strncmp(vv + 9, "memory-bound", 12),
		       "report: bi_vadd_f32 memory-bound (%.2f FLOP/byte)", vi);
		tap_ok(gi > vi, "gemm's arithmetic intensity above vadd's");
	}
	tap_ok(strstr(buf, "util%") && strstr(buf, "compute units busy"),
	       "report has engine utilization and unit occupancy");
	free(buf);
	npu_stream_destroy(s);
	npu_free(A);
	npu_free(B);
	npu_free(C);
	npu_free(x);
	npu_free(y);
	npu_free(z);
}

/* NPU_TRACE=file: a child traced from its first command, JSON at exit */
static int env_child(void)
{
	void *d;
	uint64_t a[3];
	int i;

	if (npu_malloc(&d, 4096))
		return 1;
	a[0] = npu_arg_ptr(d);
	a[1] = 1024;
	a[2] = npu_arg_f32(1.0f);
	for (i = 0; i < 3; i++)
		if (npu_launch(NPU_K_FILL_F32, npu_grid(1, 1, 1), a, 3, NULL, 0))
			return 1;
	return npu_device_synchronize() ? 1 : 0;
}

static void test_env(const char *self)
{
	char cmd[512];
	FILE *f;
	char *json;
	long len;
	int rc;

	unlink("env-trace.json");
	snprintf(cmd, sizeof(cmd), "NPU_TRACE=env-trace.json %s --env-child", self);
	rc = system(cmd);
	f = fopen("env-trace.json", "r");
	tap_ok(rc == 0 && f, "NPU_TRACE=file: the child wrote its trace at exit");
	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	json = calloc(1, (size_t)len + 1);
	if (fread(json, 1, (size_t)len, f) != (size_t)len)
		len = 0;
	fclose(f);
	{
		const char *e = jvalue(json);

		/* the first launch loaded the kernel library (its copies
		 * are traced too) */
		tap_ok(e && *ws(e) == 0 &&
		       count_str(json, "bi_fill_f32\",\"cat\"") == 6,
		       "... valid JSON with its 3 kernels (in ring and stream lanes)");
	}
	free(json);
}

int main(int argc, char **argv)
{
	void *da, *db, *dc;
	float *h;

	if (argc > 1 && !strcmp(argv[1], "--env-child"))
		return env_child();
	tap_need_device();
	MUST(npu_device_get_properties(&prop, 0));
	MUST(npu_malloc(&da, N * 4));
	MUST(npu_malloc(&db, N * 4));
	MUST(npu_malloc(&dc, N * 4));
	MUST(npu_host_alloc((void **)&h, N * 4, 0));
	test_counters(da, db, dc, h);
	test_trace(da, db, dc, h);
	test_roofline();
	test_env(argv[0]);
	return tap_done();
}
