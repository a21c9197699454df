// SPDX-License-Identifier: MIT
/*
 * npu-smi - list npu devices: rings, compute units, memory, clock, current
 * utilization and the processes that have the device open.
 *
 *   npu-smi [-i MS] [-j]
 *
 * Utilization comes from DRM_IOCTL_NPU_COUNTERS read twice, MS milliseconds
 * apart (default 200): busy time of each ring and compute unit over the
 * device-clock time between the two reads. Processes are found by scanning
 * /proc/PID/fd for descriptors whose st_rdev is the device node's. -j prints
 * JSON instead of the table. Talks to the driver directly (no libnpu), so it
 * also works while libnpu is broken or absent.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
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
#include "npu_accel.h"

#define MAX_RINGS 64
#define MAX_CUS 256

struct snap {
	struct drm_npu_ring_counters ring[MAX_RINGS];
	uint64_t cu[MAX_CUS];
	uint32_t nring, ncu;
	uint64_t clock;
};

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

static int read_counters(int fd, struct snap *s)
{
	struct drm_npu_counters c;

	memset(&c, 0, sizeof(c));
	c.rings = (uint64_t)(uintptr_t)s->ring;
	c.cu_busy_ns = (uint64_t)(uintptr_t)s->cu;
	c.ring_count = MAX_RINGS;
	c.cu_count = MAX_CUS;
	if (ioctl(fd, DRM_IOCTL_NPU_COUNTERS, &c))
		return -errno;
	s->nring = c.ring_count < MAX_RINGS ? c.ring_count : MAX_RINGS;
	s->ncu = c.cu_count < MAX_CUS ? c.cu_count : MAX_CUS;
	s->clock = c.clock;
	return 0;
}

static void human(char *buf, size_t n, uint64_t bytes)
{
	if (bytes >= (1ull << 30) && !(bytes % (1ull << 30)))
		snprintf(buf, n, "%llu GiB", (unsigned long long)(bytes >> 30));
	else if (bytes >= (1ull << 20))
		snprintf(buf, n, "%.0f MiB", bytes / 1048576.0);
	else
		snprintf(buf, n, "%llu B", (unsigned long long)bytes);
}

/* Processes with an fd on rdev; prints them as a table or JSON array. */
static void list_procs(dev_t rdev, int json)
{
	DIR *proc = opendir("/proc");
	struct dirent *d;
	int first = 1, any = 0;

	if (json)
		printf("[");
	while (proc && (d = readdir(proc))) {
		char path[300], comm[64] = "?";
		DIR *fds;
		struct dirent *fd;
		int count = 0;
		long pid = strtol(d->d_name, NULL, 10);
		FILE *f;

		if (pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
		fds = opendir(path);
		if (!fds)
			continue;
		while ((fd = readdir(fds))) {
			struct stat st;
			char fp[600];

			if (fd->d_name[0] == '.')
				continue;
			snprintf(fp, sizeof(fp), "%s/%s", path, fd->d_name);
			if (!stat(fp, &st) && S_ISCHR(st.st_mode) && st.st_rdev == rdev)
				count++;
		}
		closedir(fds);
		if (!count)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
		f = fopen(path, "r");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
		if (json) {
			printf("%s{\"pid\": %ld, \"comm\": \"%s\", \"fds\": %d}", first ? "" : ", ",
			       pid, comm, count);
		} else {
			printf("    pid %-8ld %-20s %d fd%s\n", pid, comm, count, count > 1 ? "s" : "");
		}
		first = 0;
		any = 1;
	}
	if (proc)
		closedir(proc);
	if (json)
		printf("]");
	else if (!any)
		printf("    (no processes)\n");
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	static const char *const patterns[] = { "/dev/accel/accel*", "/dev/dri/renderD*" };
	int interval = 200, json = 0, ndev = 0, opt;
	size_t p, i;

	while ((opt = getopt(argc, argv, "i:jh")) != -1) {
		switch (opt) {
		case 'i':
			interval = atoi(optarg);
			if (interval < 1 || interval > 60000)
				interval = 200;
			break;
		case 'j':
			json = 1;
			break;
		default:
			fprintf(stderr, "usage: npu-smi [-i MS] [-j]\n"
				"  -i MS  sample the counters MS milliseconds apart (200)\n"
				"  -j     JSON output\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (json)
		printf("{\"devices\": [");
	for (p = 0; p < sizeof(patterns) / sizeof(patterns[0]); p++) {
		glob_t g;

		if (glob(patterns[p], 0, NULL, &g))
			continue;
		for (i = 0; i < g.gl_pathc; i++) {
			const char *node = g.gl_pathv[i];
			uint64_t id = 0, rev = 0, ncomp = 0, ncopy = 0, ncus = 0, mem = 0, hz = 0;
			uint64_t feat = 0, tmo = 0;
			struct snap *a, *b;
			struct stat st;
			char mb[32];
			double dt_ns;
			uint32_t r, u;
			int fd = open(node, O_RDWR | O_CLOEXEC);

			if (fd < 0)
				continue;
			if (!is_npu(fd) || fstat(fd, &st)) {
				close(fd);
				continue;
			}
			get_param(fd, DRM_NPU_PARAM_DEVICE_ID, &id);
			get_param(fd, DRM_NPU_PARAM_REVISION, &rev);
			get_param(fd, DRM_NPU_PARAM_NUM_COMPUTE_RINGS, &ncomp);
			get_param(fd, DRM_NPU_PARAM_NUM_COPY_RINGS, &ncopy);
			get_param(fd, DRM_NPU_PARAM_NUM_CUS, &ncus);
			get_param(fd, DRM_NPU_PARAM_DEVMEM_SIZE, &mem);
			get_param(fd, DRM_NPU_PARAM_CLOCK_HZ, &hz);
			get_param(fd, DRM_NPU_PARAM_FEATURES, &feat);
			get_param(fd, DRM_NPU_PARAM_JOB_TIMEOUT_MS, &tmo);
			human(mb, sizeof(mb), mem);

			a = calloc(1, sizeof(*a));
			b = calloc(1, sizeof(*b));
			if (!a || !b)
				return 1;
			if (read_counters(fd, a) == 0) {
				sleep_ms(interval);
				if (read_counters(fd, b))
					b->nring = 0;
			} else {
				a->nring = b->nring = 0;
			}
			dt_ns = hz && b->clock > a->clock ? (double)(b->clock - a->clock) * 1e9 / hz : 0;

			if (json) {
				printf("%s{\"index\": %d, \"node\": \"%s\", \"pci_id\": \"%04x:%04x\", "
				       "\"revision\": %llu, \"compute_rings\": %llu, \"copy_rings\": %llu, "
				       "\"compute_units\": %llu, \"devmem_bytes\": %llu, \"clock_hz\": %llu, "
				       "\"features\": %llu, \"job_timeout_ms\": %llu, \"rings\": [",
				       ndev ? ", " : "", ndev, node, (unsigned)(id >> 16),
				       (unsigned)(id & 0xffff), (unsigned long long)rev,
				       (unsigned long long)ncomp, (unsigned long long)ncopy,
				       (unsigned long long)ncus, (unsigned long long)mem,
				       (unsigned long long)hz, (unsigned long long)feat,
				       (unsigned long long)tmo);
			} else {
				printf("npu%d  %s  [%04x:%04x rev %u.%u]\n", ndev, node,
				       (unsigned)(id >> 16), (unsigned)(id & 0xffff),
				       (unsigned)(rev >> 16), (unsigned)(rev & 0xffff));
				printf("  rings: %llu compute + %llu copy   compute units: %llu   "
				       "device memory: %s   clock: %.3f MHz   timing model: %s\n",
				       (unsigned long long)ncomp, (unsigned long long)ncopy,
				       (unsigned long long)ncus, mb, hz / 1e6,
				       feat & DRM_NPU_FEATURE_TIMING_MODEL ? "on" : "off");
				if (!b->nring)
					printf("  counters: unavailable (DRM_IOCTL_NPU_COUNTERS failed)\n");
				else
					printf("  %-16s %6s %12s %14s %14s   (over %.0f ms of device time)\n",
					       "ring", "util", "commands", "bytes", "ops", dt_ns / 1e6);
			}
			for (r = 0; r < b->nring && r < a->nring; r++) {
				double util = dt_ns > 0 ? (double)(b->ring[r].busy_ns - a->ring[r].busy_ns) /
							  dt_ns : 0;
				char name[32];

				if (util > 1)
					util = 1;
				snprintf(name, sizeof(name), "%u %s", r, r < ncomp ? "compute" : "copy");
				if (json)
					printf("%s{\"ring\": %u, \"kind\": \"%s\", \"util\": %.4f, "
					       "\"commands\": %llu, \"bytes\": %llu, \"ops\": %llu}",
					       r ? ", " : "", r, r < ncomp ? "compute" : "copy", util,
					       (unsigned long long)b->ring[r].commands,
					       (unsigned long long)b->ring[r].bytes,
					       (unsigned long long)b->ring[r].ops);
				else
					printf("  %-16s %5.1f%% %12llu %14llu %14llu\n", name, 100 * util,
					       (unsigned long long)b->ring[r].commands,
					       (unsigned long long)b->ring[r].bytes,
					       (unsigned long long)b->ring[r].ops);
			}
			if (json)
				printf("], \"cu_util\": [");
			else if (b->ncu)
				printf("  compute units busy:");
			for (u = 0; u < b->ncu && u < a->ncu; u++) {
				double util = dt_ns > 0 ? (double)(b->cu[u] - a->cu[u]) / dt_ns : 0;

				if (util > 1)
					util = 1;
				printf(json ? "%s%.4f" : "%s%3.0f%%", u ? (json ? ", " : " ") : (json ? "" : " "),
				       json ? util : 100 * util);
			}
			if (json) {
				printf("], \"processes\": ");
				list_procs(st.st_rdev, 1);
				printf("}");
			} else {
				if (b->ncu)
					printf("\n");
				printf("  processes:\n");
				list_procs(st.st_rdev, 0);
			}
			free(a);
			free(b);
			close(fd);
			ndev++;
		}
		globfree(&g);
	}
	if (json)
		printf("]}\n");
	else if (!ndev)
		printf("no npu devices found (is npu.ko loaded?)\n");
	return ndev ? 0 : 1;
}
