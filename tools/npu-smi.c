// SPDX-License-Identifier: MIT
/*
 * npu-smi - the npu devices and who uses them, like nvidia-smi.
 *
 *   npu-smi [-i MS] [-j]                 one report per device
 *   npu-smi -l SECONDS [-c COUNT] [-j]   one line per device per interval
 *
 * Two kinds of utilization (Documentation/tools/npu-smi.rst):
 *  - of a ring, user-queue engine or compute unit: its busy time
 *    (DRM_IOCTL_NPU_COUNTERS)
 *    over the device-clock time between two reads; "since start" divides
 *    the busy time by the device clock itself, so it stays meaningful after
 *    the work is over;
 *  - of a process: the growth of its drm-engine-<class> keys in
 *    /proc/PID/fdinfo/FD (ns its jobs occupied rings of that class, and
 *    its user queues engines)
 *    over the wall-clock interval times the class's capacity.
 * Talks to the driver directly (no libnpu), so it also works while libnpu
 * is broken or absent. JSON goes through json-c.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <drm.h>
#include <json-c/json.h>
#include "npu_accel.h"

#define MAX_DEVS 16
#define MAX_RINGS 64
#define MAX_UQ_ENGINES 64
#define MAX_CUS 256
#define MAX_CLIENTS 256

/* One open device file (a DRM client) as its fdinfo describes it. */
struct client {
	long pid;
	uint64_t id;			/* drm-client-id */
	uint64_t engine_ns[2];		/* drm-engine-compute, -copy */
	unsigned int capacity[2];	/* drm-engine-capacity-compute, -copy */
	uint64_t memory;		/* drm-total-memory, bytes */
	int fds;			/* descriptors on this client */
};

/* Everything read from one device at one moment. */
struct sample {
	struct drm_npu_ring_counters ring[MAX_RINGS];
	struct drm_npu_ring_counters uq[MAX_UQ_ENGINES];	/* user-queue engines */
	uint64_t cu[MAX_CUS];
	uint32_t nring, nuq, ncu;
	int counters_ok;
	uint64_t clock;			/* device clock ticks */
	uint64_t wall_ns;		/* CLOCK_MONOTONIC */
	struct client client[MAX_CLIENTS];
	int nclient;
};

struct device {
	char node[64];
	int fd, index;
	dev_t rdev;
	uint64_t id, rev, ncomp, ncopy, ncus, mem, hz, feat, tmo;
	uint64_t uq_engines;		/* compute [7:0], copy [15:8] */
	struct sample *prev, *cur;
};

static const char *const engine_class[2] = { "compute", "copy" };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int get_param(int fd, uint32_t param, uint64_t *v)
{
	struct drm_npu_get_param p = { .param = param };

	if (ioctl(fd, DRM_IOCTL_NPU_GET_PARAM, &p))
		return -errno;
	*v = p.value;
	return 0;
}

static int is_npu(int fd)
{
	struct drm_version v;
	char name[32] = "";

	memset(&v, 0, sizeof(v));
	v.name = name;
	v.name_len = sizeof(name) - 1;
	if (ioctl(fd, DRM_IOCTL_VERSION, &v))
		return 0;
	name[sizeof(name) - 1] = 0;
	return !strcmp(name, "npu");
}

static void read_counters(int fd, struct sample *s)
{
	struct drm_npu_counters c;

	memset(&c, 0, sizeof(c));
	c.rings = (uint64_t)(uintptr_t)s->ring;
	c.cu_busy_ns = (uint64_t)(uintptr_t)s->cu;
	c.ring_count = MAX_RINGS;
	c.cu_count = MAX_CUS;
	c.uq_engines = (uint64_t)(uintptr_t)s->uq;
	c.uq_engine_count = MAX_UQ_ENGINES;
	s->counters_ok = !ioctl(fd, DRM_IOCTL_NPU_COUNTERS, &c);
	if (!s->counters_ok) {
		s->nring = s->nuq = s->ncu = 0;
		return;
	}
	s->nring = c.ring_count < MAX_RINGS ? c.ring_count : MAX_RINGS;
	s->nuq = c.uq_engine_count < MAX_UQ_ENGINES ? c.uq_engine_count : MAX_UQ_ENGINES;
	s->ncu = c.cu_count < MAX_CUS ? c.cu_count : MAX_CUS;
	s->clock = c.clock;
}

/* "123 KiB" and the like (DRM's drm_print_memory_stats units) in bytes. */
static uint64_t parse_size(const char *v)
{
	char *end;
	uint64_t n = strtoull(v, &end, 10);

	while (*end == ' ')
		end++;
	if (!strncmp(end, "KiB", 3))
		return n << 10;
	if (!strncmp(end, "MiB", 3))
		return n << 20;
	if (!strncmp(end, "GiB", 3))
		return n << 30;
	return n;
}

/* Parse /proc/PID/fdinfo/FD; returns 0 for an npu client. */
static int read_fdinfo(long pid, const char *fd, struct client *c)
{
	char path[300], line[256];
	int npu = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/fdinfo/%s", pid, fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	memset(c, 0, sizeof(*c));
	c->pid = pid;
	while (fgets(line, sizeof(line), f)) {
		char *v = strchr(line, ':');
		int k;

		if (!v)
			continue;
		*v++ = 0;
		v += strspn(v, " \t");
		if (!strcmp(line, "drm-driver"))
			npu = !strncmp(v, "npu", 3) && (v[3] == '\n' || !v[3]);
		else if (!strcmp(line, "drm-client-id"))
			c->id = strtoull(v, NULL, 10);
		else if (!strcmp(line, "drm-total-memory"))
			c->memory = parse_size(v);
		for (k = 0; k < 2; k++) {
			char key[48];

			snprintf(key, sizeof(key), "drm-engine-%s", engine_class[k]);
			if (!strcmp(line, key))
				c->engine_ns[k] = strtoull(v, NULL, 10);
			snprintf(key, sizeof(key), "drm-engine-capacity-%s", engine_class[k]);
			if (!strcmp(line, key))
				c->capacity[k] = (unsigned int)strtoul(v, NULL, 10);
		}
	}
	fclose(f);
	return npu ? 0 : -1;
}

/* The DRM clients of every process on rdev, one entry per client id. */
static void read_clients(dev_t rdev, struct sample *s)
{
	DIR *proc = opendir("/proc");
	struct dirent *d;

	s->nclient = 0;
	while (proc && (d = readdir(proc))) {
		long pid = strtol(d->d_name, NULL, 10);
		struct dirent *e;
		char path[300];
		DIR *fds;

		if (pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
		fds = opendir(path);
		if (!fds)
			continue;
		while ((e = readdir(fds))) {
			char fp[600];
			struct client c;
			struct stat st;
			int i;

			if (e->d_name[0] == '.')
				continue;
			snprintf(fp, sizeof(fp), "%s/%s", path, e->d_name);
			if (stat(fp, &st) || !S_ISCHR(st.st_mode) || st.st_rdev != rdev ||
			    read_fdinfo(pid, e->d_name, &c))
				continue;
			for (i = 0; i < s->nclient; i++)
				if (s->client[i].pid == pid && s->client[i].id == c.id)
					break;
			if (i < s->nclient) {
				s->client[i].fds++;	/* a dup of a client seen */
			} else if (s->nclient < MAX_CLIENTS) {
				c.fds = 1;
				s->client[s->nclient++] = c;
			}
		}
		closedir(fds);
	}
	if (proc)
		closedir(proc);
}

static void take_sample(struct device *d)
{
	struct sample *t = d->prev;

	d->prev = d->cur;
	d->cur = t;
	read_counters(d->fd, t);
	t->wall_ns = now_ns();
	read_clients(d->rdev, t);
}

static double clamp01(double x)
{
	return x < 0 || !isfinite(x) ? 0 : x > 1 ? 1 : x;
}

/* Device time between the two samples, ns. */
static double device_dt_ns(const struct device *d)
{
	if (!d->hz || d->cur->clock <= d->prev->clock)
		return 0;
	return (double)(d->cur->clock - d->prev->clock) * 1e9 / (double)d->hz;
}

/* Engine e: rings first, then the user-queue engines. */
static const struct drm_npu_ring_counters *engine_of(const struct sample *s, uint32_t e)
{
	if (e < s->nring)
		return &s->ring[e];
	return e - s->nring < s->nuq ? &s->uq[e - s->nring] : NULL;
}

static double ring_util(const struct device *d, uint32_t r)
{
	const struct drm_npu_ring_counters *a = engine_of(d->prev, r), *b = engine_of(d->cur, r);
	double dt = device_dt_ns(d);

	if (!dt || !a || !b || d->prev->nring != d->cur->nring)
		return 0;
	return clamp01((double)(b->busy_ns - a->busy_ns) / dt);
}

/* Busy time over the whole device clock (since power-on or reset). */
static double ring_util_since_start(const struct device *d, uint32_t r)
{
	const struct drm_npu_ring_counters *b = engine_of(d->cur, r);
	double t = d->hz ? (double)d->cur->clock * 1e9 / (double)d->hz : 0;

	return t > 0 && b ? clamp01((double)b->busy_ns / t) : 0;
}

static double cu_util(const struct device *d, uint32_t u)
{
	double dt = device_dt_ns(d);

	if (!dt || u >= d->prev->ncu || u >= d->cur->ncu)
		return 0;
	return clamp01((double)(d->cur->cu[u] - d->prev->cu[u]) / dt);
}

static double cu_util_mean(const struct device *d)
{
	double sum = 0;
	uint32_t u;

	for (u = 0; u < d->cur->ncu; u++)
		sum += cu_util(d, u);
	return d->cur->ncu ? sum / d->cur->ncu : 0;
}

/* A client's share of its engine class over the interval; a client that
 * opened the device during the interval counts from zero. */
static double client_util(const struct device *d, const struct client *c, int k)
{
	double dt = (double)(d->cur->wall_ns - d->prev->wall_ns);
	uint64_t before = 0;
	int i;

	for (i = 0; i < d->prev->nclient; i++)
		if (d->prev->client[i].pid == c->pid && d->prev->client[i].id == c->id)
			before = d->prev->client[i].engine_ns[k];
	if (dt <= 0 || !c->capacity[k] || c->engine_ns[k] < before)
		return 0;
	return clamp01((double)(c->engine_ns[k] - before) / (dt * c->capacity[k]));
}

static void comm_of(long pid, char *buf, size_t n)
{
	char path[64];
	FILE *f;

	snprintf(buf, n, "?");
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(buf, (int)n, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

static void human(char *buf, size_t n, uint64_t bytes)
{
	if (bytes >= (1ull << 30) && !(bytes % (1ull << 30)))
		snprintf(buf, n, "%llu GiB", (unsigned long long)(bytes >> 30));
	else if (bytes >= (1ull << 20))
		snprintf(buf, n, "%.0f MiB", bytes / 1048576.0);
	else if (bytes >= (1ull << 10))
		snprintf(buf, n, "%.0f KiB", bytes / 1024.0);
	else
		snprintf(buf, n, "%llu B", (unsigned long long)bytes);
}

static const char *ring_kind(const struct device *d, uint32_t r)
{
	if (r >= d->cur->nring)
		return r - d->cur->nring < (d->uq_engines & 0xff) ? "compute" : "copy";
	return r < d->ncomp ? "compute" : "copy";
}

/* "3 compute" for ring 3, "uq 1 copy" for user-queue engine 1 */
static void engine_name(const struct device *d, uint32_t r, char *buf, size_t n)
{
	if (r < d->cur->nring)
		snprintf(buf, n, "%u %s", r, ring_kind(d, r));
	else
		snprintf(buf, n, "uq %u %s", r - d->cur->nring, ring_kind(d, r));
}

/* ------------------------------------------------------------- report */

static void print_report(const struct device *d)
{
	const struct sample *s = d->cur;
	char mb[32];
	uint32_t r, u;
	int i;

	human(mb, sizeof(mb), d->mem);
	printf("npu%d  %s  [%04x:%04x rev %u.%u]\n", d->index, d->node,
	       (unsigned int)(d->id >> 16), (unsigned int)(d->id & 0xffff),
	       (unsigned int)(d->rev >> 16), (unsigned int)(d->rev & 0xffff));
	printf("  rings: %llu compute + %llu copy   compute units: %llu   "
	       "device memory: %s   clock: %.3f MHz   timing model: %s\n",
	       (unsigned long long)d->ncomp, (unsigned long long)d->ncopy,
	       (unsigned long long)d->ncus, mb, d->hz / 1e6,
	       d->feat & DRM_NPU_FEATURE_TIMING_MODEL ? "on" : "off");
	if (!s->counters_ok) {
		printf("  counters: unavailable (DRM_IOCTL_NPU_COUNTERS failed)\n");
	} else {
		printf("  device time: %.3f s since start; utilization over the last %.0f ms\n",
		       d->hz ? (double)s->clock / (double)d->hz : 0, device_dt_ns(d) / 1e6);
		printf("  %-14s %6s %12s %6s %10s %14s %14s\n", "ring / engine", "util",
		       "busy", "avg", "commands", "bytes", "ops");
		for (r = 0; r < s->nring + s->nuq; r++) {
			const struct drm_npu_ring_counters *e = engine_of(s, r);
			char name[32];

			engine_name(d, r, name, sizeof(name));
			printf("  %-14s %5.1f%% %10.3f s %5.1f%% %10llu %14llu %14llu\n", name,
			       100 * ring_util(d, r), e->busy_ns / 1e9,
			       100 * ring_util_since_start(d, r),
			       (unsigned long long)e->commands,
			       (unsigned long long)e->bytes,
			       (unsigned long long)e->ops);
		}
		if (s->ncu) {
			printf("  compute units busy:");
			for (u = 0; u < s->ncu; u++)
				printf(" %3.0f%%", 100 * cu_util(d, u));
			printf("\n");
		}
	}
	printf("  processes:\n");
	if (!s->nclient) {
		printf("    (no processes)\n");
		return;
	}
	printf("    %-8s %-16s %6s %8s %8s %12s %12s %10s\n", "pid", "name", "client",
	       "compute", "copy", "compute busy", "copy busy", "memory");
	for (i = 0; i < s->nclient; i++) {
		const struct client *c = &s->client[i];
		char comm[64];

		comm_of(c->pid, comm, sizeof(comm));
		human(mb, sizeof(mb), c->memory);
		printf("    %-8ld %-16s %6llu %7.1f%% %7.1f%% %10.3f s %10.3f s %10s\n", c->pid,
		       comm, (unsigned long long)c->id, 100 * client_util(d, c, 0),
		       100 * client_util(d, c, 1), c->engine_ns[0] / 1e9,
		       c->engine_ns[1] / 1e9, mb);
	}
}

static json_object *json_u64(uint64_t v)
{
	return json_object_new_uint64(v);
}

static json_object *json_report(const struct device *d)
{
	const struct sample *s = d->cur;
	json_object *o = json_object_new_object();
	json_object *rings = json_object_new_array();
	json_object *uqs = json_object_new_array();
	json_object *cus = json_object_new_array();
	json_object *procs = json_object_new_array();
	char id[16];
	uint32_t r, u;
	int i;

	snprintf(id, sizeof(id), "%04x:%04x", (unsigned int)(d->id >> 16),
		 (unsigned int)(d->id & 0xffff));
	json_object_object_add(o, "index", json_object_new_int(d->index));
	json_object_object_add(o, "node", json_object_new_string(d->node));
	json_object_object_add(o, "pci_id", json_object_new_string(id));
	json_object_object_add(o, "revision", json_u64(d->rev));
	json_object_object_add(o, "compute_rings", json_u64(d->ncomp));
	json_object_object_add(o, "copy_rings", json_u64(d->ncopy));
	json_object_object_add(o, "compute_units", json_u64(d->ncus));
	json_object_object_add(o, "devmem_bytes", json_u64(d->mem));
	json_object_object_add(o, "clock_hz", json_u64(d->hz));
	json_object_object_add(o, "features", json_u64(d->feat));
	json_object_object_add(o, "job_timeout_ms", json_u64(d->tmo));
	json_object_object_add(o, "counters", json_object_new_boolean(s->counters_ok));
	json_object_object_add(o, "device_time_s",
			       json_object_new_double(d->hz ? (double)s->clock / d->hz : 0));
	json_object_object_add(o, "interval_ms", json_object_new_double(device_dt_ns(d) / 1e6));
	for (r = 0; r < s->nring + s->nuq; r++) {
		const struct drm_npu_ring_counters *e = engine_of(s, r);
		json_object *x = json_object_new_object();

		json_object_object_add(x, r < s->nring ? "ring" : "engine",
				       json_object_new_int((int)(r < s->nring ? r : r - s->nring)));
		json_object_object_add(x, "kind", json_object_new_string(ring_kind(d, r)));
		json_object_object_add(x, "util", json_object_new_double(ring_util(d, r)));
		json_object_object_add(x, "util_since_start",
				       json_object_new_double(ring_util_since_start(d, r)));
		json_object_object_add(x, "busy_ns", json_u64(e->busy_ns));
		json_object_object_add(x, "commands", json_u64(e->commands));
		json_object_object_add(x, "bytes", json_u64(e->bytes));
		json_object_object_add(x, "ops", json_u64(e->ops));
		json_object_array_add(r < s->nring ? rings : uqs, x);
	}
	json_object_object_add(o, "rings", rings);
	json_object_object_add(o, "uq_engines", uqs);
	for (u = 0; u < s->ncu; u++)
		json_object_array_add(cus, json_object_new_double(cu_util(d, u)));
	json_object_object_add(o, "cu_util", cus);
	for (i = 0; i < s->nclient; i++) {
		const struct client *c = &s->client[i];
		json_object *x = json_object_new_object();
		char comm[64];

		comm_of(c->pid, comm, sizeof(comm));
		json_object_object_add(x, "pid", json_object_new_int64(c->pid));
		json_object_object_add(x, "comm", json_object_new_string(comm));
		json_object_object_add(x, "client_id", json_u64(c->id));
		json_object_object_add(x, "fds", json_object_new_int(c->fds));
		json_object_object_add(x, "compute_util",
				       json_object_new_double(client_util(d, c, 0)));
		json_object_object_add(x, "copy_util",
				       json_object_new_double(client_util(d, c, 1)));
		json_object_object_add(x, "engine_compute_ns", json_u64(c->engine_ns[0]));
		json_object_object_add(x, "engine_copy_ns", json_u64(c->engine_ns[1]));
		json_object_object_add(x, "memory_bytes", json_u64(c->memory));
		json_object_array_add(procs, x);
	}
	json_object_object_add(o, "processes", procs);
	return o;
}

/* ------------------------------------------------------- rolling mode */

static void print_dmon_header(const struct device *d)
{
	uint32_t r;

	printf("# %-8s %4s", "time", "npu");
	for (r = 0; r < d->cur->nring; r++)
		printf(" %c%-4u", r < d->ncomp ? 'c' : 'x', r < d->ncomp ? r : r - (uint32_t)d->ncomp);
	printf(" %5s %5s %5s %5s %6s %6s\n", "uq-c", "uq-x", "cu", "procs", "c-proc",
	       "x-proc");
	printf("# %-8s %4s", "HH:MM:SS", "idx");
	for (r = 0; r < d->cur->nring; r++)
		printf(" %5s", "%");
	printf(" %5s %5s %5s %5s %6s %6s\n", "%", "%", "%", "#", "%", "%");
}

/* Mean utilization of the user-queue engines of class k (0 compute, 1 copy). */
static double uq_util_mean(const struct device *d, int k)
{
	uint32_t ncomp = (uint32_t)(d->uq_engines & 0xff), r, n = 0;
	double sum = 0;

	for (r = 0; r < d->cur->nuq; r++) {
		if ((r >= ncomp) != k)
			continue;
		sum += ring_util(d, d->cur->nring + r);
		n++;
	}
	return n ? sum / n : 0;
}

static void print_dmon_line(const struct device *d, const char *stamp)
{
	double pu[2] = { 0, 0 };
	uint32_t r;
	int i, k;

	for (i = 0; i < d->cur->nclient; i++)
		for (k = 0; k < 2; k++)
			pu[k] += client_util(d, &d->cur->client[i], k);
	printf("  %-8s %4d", stamp, d->index);
	for (r = 0; r < d->cur->nring; r++)
		printf(" %5.1f", 100 * ring_util(d, r));
	printf(" %5.1f %5.1f %5.1f %5d %6.1f %6.1f\n", 100 * uq_util_mean(d, 0),
	       100 * uq_util_mean(d, 1), 100 * cu_util_mean(d), d->cur->nclient,
	       100 * clamp01(pu[0]), 100 * clamp01(pu[1]));
}

static json_object *json_dmon(const struct device *d, const char *stamp)
{
	json_object *o = json_object_new_object();
	json_object *rings = json_object_new_array();
	json_object *uqs = json_object_new_array();
	uint32_t r;

	json_object_object_add(o, "time", json_object_new_string(stamp));
	json_object_object_add(o, "index", json_object_new_int(d->index));
	json_object_object_add(o, "interval_ms", json_object_new_double(device_dt_ns(d) / 1e6));
	for (r = 0; r < d->cur->nring; r++)
		json_object_array_add(rings, json_object_new_double(ring_util(d, r)));
	json_object_object_add(o, "ring_util", rings);
	for (r = 0; r < d->cur->nuq; r++)
		json_object_array_add(uqs, json_object_new_double(ring_util(d, d->cur->nring + r)));
	json_object_object_add(o, "uq_engine_util", uqs);
	json_object_object_add(o, "cu_util", json_object_new_double(cu_util_mean(d)));
	json_object_object_add(o, "processes", json_object_new_int(d->cur->nclient));
	return o;
}

/* -------------------------------------------------------------- main */

static int open_devices(struct device *devs)
{
	static const char *const patterns[] = { "/dev/accel/accel*", "/dev/dri/renderD*" };
	size_t p, i;
	int n = 0;

	for (p = 0; p < sizeof(patterns) / sizeof(patterns[0]); p++) {
		glob_t g;

		if (glob(patterns[p], 0, NULL, &g))
			continue;
		for (i = 0; i < g.gl_pathc && n < MAX_DEVS; i++) {
			struct device *d = &devs[n];
			struct stat st;
			int fd = open(g.gl_pathv[i], O_RDWR | O_CLOEXEC);

			if (fd < 0)
				continue;
			if (!is_npu(fd) || fstat(fd, &st)) {
				close(fd);
				continue;
			}
			memset(d, 0, sizeof(*d));
			snprintf(d->node, sizeof(d->node), "%s", g.gl_pathv[i]);
			d->fd = fd;
			d->index = n;
			d->rdev = st.st_rdev;
			get_param(fd, DRM_NPU_PARAM_DEVICE_ID, &d->id);
			get_param(fd, DRM_NPU_PARAM_REVISION, &d->rev);
			get_param(fd, DRM_NPU_PARAM_NUM_COMPUTE_RINGS, &d->ncomp);
			get_param(fd, DRM_NPU_PARAM_NUM_COPY_RINGS, &d->ncopy);
			get_param(fd, DRM_NPU_PARAM_NUM_CUS, &d->ncus);
			get_param(fd, DRM_NPU_PARAM_DEVMEM_SIZE, &d->mem);
			get_param(fd, DRM_NPU_PARAM_CLOCK_HZ, &d->hz);
			get_param(fd, DRM_NPU_PARAM_FEATURES, &d->feat);
			get_param(fd, DRM_NPU_PARAM_JOB_TIMEOUT_MS, &d->tmo);
			get_param(fd, DRM_NPU_PARAM_USERQ_ENGINES, &d->uq_engines);
			d->prev = calloc(1, sizeof(*d->prev));
			d->cur = calloc(1, sizeof(*d->cur));
			if (!d->prev || !d->cur) {
				fprintf(stderr, "npu-smi: out of memory\n");
				exit(1);
			}
			n++;
		}
		globfree(&g);
	}
	return n;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: npu-smi [OPTION]...\n"
		"Show the npu devices, their utilization and the processes using them.\n\n"
		"  -i, --interval MS     sample window of the report, 1..60000 ms (200)\n"
		"  -l, --loop SECONDS    rolling mode: every SECONDS (0.01..3600), one line\n"
		"                        per device with each ring's utilization over it\n"
		"  -c, --count N         with --loop: stop after N intervals (default: never)\n"
		"  -j, --json            JSON: one document, or with --loop one object a line\n"
		"  -h, --help            print this help and exit\n\n"
		"Exit status: 0 if a device was found, 1 if none, 2 for a bad option.\n");
}

/* A number in [lo, hi] for option opt, or exit 2. */
static double number_arg(const char *opt, const char *v, double lo, double hi)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(v, &end);
	if (errno || end == v || *end || !(x >= lo && x <= hi)) {
		fprintf(stderr, "npu-smi: --%s: '%s' is not a number in %g..%g\n", opt, v, lo, hi);
		exit(2);
	}
	return x;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "loop", required_argument, NULL, 'l' },
		{ "count", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	static struct device devs[MAX_DEVS];
	double interval_ms = 200, loop_s = 0;
	long count = -1, n;
	int json = 0, ndev, opt, i;

	while ((opt = getopt_long(argc, argv, "i:l:c:jh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			interval_ms = number_arg("interval", optarg, 1, 60000);
			break;
		case 'l':
			loop_s = number_arg("loop", optarg, 0.01, 3600);
			break;
		case 'c':
			count = (long)number_arg("count", optarg, 1, 1e9);
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:	/* getopt has said what was wrong */
			fprintf(stderr, "Try 'npu-smi --help' for more information.\n");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "npu-smi: unexpected argument '%s'\n"
			"Try 'npu-smi --help' for more information.\n", argv[optind]);
		return 2;
	}
	if (count > 0 && !loop_s) {
		fprintf(stderr, "npu-smi: --count needs --loop\n");
		return 2;
	}
	json_c_set_serialization_double_format("%.6g", JSON_C_OPTION_GLOBAL);
	setvbuf(stdout, NULL, _IOLBF, 0);

	ndev = open_devices(devs);
	if (!ndev) {
		fprintf(stderr, "npu-smi: no npu devices found (is npu.ko loaded?)\n");
		return 1;
	}
	for (i = 0; i < ndev; i++)
		take_sample(&devs[i]);

	if (!loop_s) {
		json_object *root = json_object_new_object(), *arr = json_object_new_array();

		sleep_ns((uint64_t)(interval_ms * 1e6));
		for (i = 0; i < ndev; i++) {
			take_sample(&devs[i]);
			if (json)
				json_object_array_add(arr, json_report(&devs[i]));
			else
				print_report(&devs[i]);
		}
		json_object_object_add(root, "devices", arr);
		if (json)
			printf("%s\n", json_object_to_json_string_ext(root,
				JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
		json_object_put(root);
		return 0;
	}

	if (!json)
		print_dmon_header(&devs[0]);
	for (n = 0; count < 0 || n < count; n++) {
		char stamp[16];
		time_t t;

		sleep_ns((uint64_t)(loop_s * 1e9));
		t = time(NULL);
		strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime(&t));
		for (i = 0; i < ndev; i++) {
			take_sample(&devs[i]);
			if (json) {
				json_object *o = json_dmon(&devs[i], stamp);

				printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
				json_object_put(o);
			} else {
				print_dmon_line(&devs[i], stamp);
			}
		}
	}
	return 0;
}
