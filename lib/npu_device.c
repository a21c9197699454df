// SPDX-License-Identifier: MIT
/*
 * npu_device.c - device enumeration, opening, properties and the current device.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <xf86drm.h>

#include "npu_core.h"

/* ------------------------------------------------------------------------
 * Devices
 */
static pthread_once_t enum_once = PTHREAD_ONCE_INIT;
static struct device devices[NPU_MAX_DEVICES];
static int ndevices;
static _Thread_local int tls_device;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A hexadecimal attribute of the device behind character device rdev. */
static bool sysfs_char_hex(dev_t rdev, const char *attr, unsigned *v)
{
	char sys[96];
	FILE *f;
	bool ok;

	snprintf(sys, sizeof(sys), "/sys/dev/char/%u:%u/device/%s",
		 major(rdev), minor(rdev), attr);
	f = fopen(sys, "re");
	if (!f)
		return false;
	ok = fscanf(f, "%x", v) == 1;
	fclose(f);
	return ok;
}

/* Does sysfs say the character device at path is an npu PCI function?
 * Read before any open, so that other vendors' nodes are never opened
 * (opening a DRM node can wake a GPU or log on its driver). */
static bool is_npu_pci(const char *path)
{
	unsigned vendor, device;
	struct stat st;

	return !stat(path, &st) && S_ISCHR(st.st_mode) &&
	       sysfs_char_hex(st.st_rdev, "vendor", &vendor) &&
	       sysfs_char_hex(st.st_rdev, "device", &device) &&
	       vendor == NPU_PCI_VENDOR_ID && device == NPU_PCI_DEVICE_ID;
}

static bool is_npu_node(const char *path)
{
	drmVersionPtr v;
	bool ok = false;
	int fd;

	if (!is_npu_pci(path))
		return false;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return false;
	v = drmGetVersion(fd);
	if (v) {
		ok = v->name && strcmp(v->name, "npu") == 0;
		drmFreeVersion(v);
	}
	close(fd);
	return ok;
}

/*
 * The npu devices: /dev/accel/accel* (6.2 and later), then
 * /dev/dri/renderD* (6.1), in path order, whose PCI function (sysfs) is
 * the npu's and whose driver says "npu". Not libdrm's drmGetDevices2:
 * Debian 12's libdrm (2.4.114) lists /dev/dri only and recognises only
 * card, controlD and renderD names and nodes with a device/drm directory
 * in sysfs, so it never sees an accel node (Documentation/lib/libnpu.rst).
 */
static void enumerate(void)
{
	static const char *pats[] = { "/dev/accel/accel*", "/dev/dri/renderD*" };
	unsigned p;
	size_t i;

	for (p = 0; p < 2 && ndevices < NPU_MAX_DEVICES; p++) {
		glob_t g;
		char **names;

		if (glob(pats[p], 0, NULL, &g))
			continue;
		names = g.gl_pathv;
		qsort(names, g.gl_pathc, sizeof(char *), cmp_str);
		for (i = 0; i < g.gl_pathc && ndevices < NPU_MAX_DEVICES; i++) {
			if (!is_npu_node(names[i]))
				continue;
			struct device *d = &devices[ndevices++];

			pthread_mutexattr_t ma;

			/* short critical sections: spin a little before sleeping */
			pthread_mutexattr_init(&ma);
			pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
			pthread_mutex_init(&d->lock, &ma);
			pthread_mutexattr_destroy(&ma);
			pthread_mutex_init(&d->maps_lock, NULL);
			pthread_rwlock_init(&d->dmem.lock, NULL);
			pthread_rwlock_init(&d->hmem.lock, NULL);
			pthread_cond_init(&d->thread_cond, NULL);
			d->fd = -1;
			snprintf(d->node, sizeof(d->node), "%s", names[i]);
		}
		globfree(&g);
	}
}

npu_status_t npu_device_count(int *count)
{
	if (!count)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "count is NULL");
	pthread_once(&enum_once, enumerate);
	*count = ndevices;
	if (!ndevices)
		return npu_fail(NPU_ERROR_NO_DEVICE,
				"no DRM node of an npu PCI device (%04x:%04x) with "
				"driver \"npu\" in /dev/accel or /dev/dri",
				NPU_PCI_VENDOR_ID, NPU_PCI_DEVICE_ID);
	return NPU_SUCCESS;
}

npu_status_t npu_runtime_get_version(int *version)
{
	if (!version)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "version is NULL");
	*version = NPU_LIB_VERSION;
	return NPU_SUCCESS;
}

npu_status_t npu_driver_get_version(int *version)
{
	struct device *dev;
	drmVersionPtr v;
	npu_status_t st;

	if (!version)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "version is NULL");
	st = npu_cur_dev(&dev);
	if (st)
		return st;
	v = drmGetVersion(dev->fd);
	if (!v)
		return npu_fail(NPU_ERROR_OS, "DRM_IOCTL_VERSION: %s",
				npu_strerror(errno));
	*version = 1000 * v->version_major + 10 * v->version_minor +
		   v->version_patchlevel;
	drmFreeVersion(v);
	return NPU_SUCCESS;
}

int npu_get_param(struct device *dev, uint32_t param, uint64_t *value)
{
	struct drm_npu_get_param gp = { .param = param };

	if (drmIoctl(dev->fd, DRM_IOCTL_NPU_GET_PARAM, &gp))
		return -errno;
	*value = gp.value;
	return 0;
}

static npu_status_t device_open(struct device *d)
{
	static const struct { uint32_t param; size_t off; int size; } params[] = {
#define P(p, f) { p, offsetof(npu_device_prop, f), sizeof(((npu_device_prop *)0)->f) }
		P(DRM_NPU_PARAM_DEVICE_ID, pci_id),
		P(DRM_NPU_PARAM_REVISION, revision),
		P(DRM_NPU_PARAM_NUM_COMPUTE_RINGS, compute_rings),
		P(DRM_NPU_PARAM_NUM_COPY_RINGS, copy_rings),
		P(DRM_NPU_PARAM_NUM_CUS, compute_units),
		P(DRM_NPU_PARAM_DEVMEM_SIZE, devmem_size),
		P(DRM_NPU_PARAM_CLOCK_HZ, clock_hz),
		P(DRM_NPU_PARAM_FEATURES, features),
		P(DRM_NPU_PARAM_LINK_BW_MBPS, link_bw_mbps),
		P(DRM_NPU_PARAM_MEM_BW_MBPS, mem_bw_mbps),
		P(DRM_NPU_PARAM_CU_MOPS, cu_mops),
		P(DRM_NPU_PARAM_LAUNCH_NS, launch_ns),
		P(DRM_NPU_PARAM_COPY_NS, copy_ns),
		P(DRM_NPU_PARAM_VA_SIZE, va_size),
		P(DRM_NPU_PARAM_MAX_JOBS, max_jobs_per_submit),
		P(DRM_NPU_PARAM_MAX_CMD_SIZE, max_cmd_size),
		P(DRM_NPU_PARAM_JOB_TIMEOUT_MS, job_timeout_ms),
		P(DRM_NPU_PARAM_CU_THREADS, unit_threads),
		P(DRM_NPU_PARAM_CU_SCRATCH_BYTES, unit_scratch_bytes),
		P(DRM_NPU_PARAM_CU_CLOCK_MHZ, unit_clock_mhz),
#undef P
	};
	npu_device_prop *pr = &d->prop;
	const char *queues = getenv("NPU_QUEUES");
	unsigned i;

	if (queues && strcmp(queues, "user") && strcmp(queues, "kernel"))
		return npu_fail(NPU_ERROR_NOT_INITIALIZED,
				"NPU_QUEUES=%s: set it to user or kernel, or "
				"unset it (user queues where the driver has them)",
				queues);
	d->fd = open(d->node, O_RDWR | O_CLOEXEC);
	if (d->fd < 0)
		return npu_fail(NPU_ERROR_NOT_INITIALIZED, "open %s: %s", d->node,
				npu_strerror(errno));
	memset(pr, 0, sizeof(*pr));
	for (i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
		uint64_t v = 0;
		int r = npu_get_param(d, params[i].param, &v);

		if (r && params[i].param <= DRM_NPU_PARAM_FEATURES) {
			close(d->fd);
			d->fd = -1;
			return npu_fail(NPU_ERROR_NOT_INITIALIZED,
					"%s: GET_PARAM %u: %s", d->node,
					params[i].param, npu_strerror(-r));
		}
		if (params[i].size == 8)
			memcpy((char *)pr + params[i].off, &v, 8);
		else {
			uint32_t v32 = (uint32_t)v;

			memcpy((char *)pr + params[i].off, &v32, 4);
		}
	}
	snprintf(pr->node, sizeof(pr->node), "%s", d->node);
	{
		/* older drivers do not say: their window also starts at 1 MiB */
		uint64_t lo = 1ull << 20;

		npu_get_param(d, DRM_NPU_PARAM_VA_START, &lo);
		d->va_lo = lo;
		d->va_hi = lo + pr->va_size;
	}
	{
		const char *m = getenv("NPU_SUBMIT");

		pthread_cond_init(&d->flush_cond, NULL);
		d->batch = !(m && !strcmp(m, "direct"));
		/* user queues unless NPU_QUEUES=kernel: no system call per
		 * launch, copy or event */
		d->uq_default = !(queues && !strcmp(queues, "kernel"));
		d->uq_ok = !!(pr->features & DRM_NPU_FEATURE_USER_QUEUES);
		if (d->uq_ok) {
			uint64_t e = 0;

			npu_get_param(d, DRM_NPU_PARAM_USERQ_ENGINES, &e);
			d->uq_engines = (uint32_t)e;
		}
		m = getenv("NPU_WAIT_SPIN_US");
		d->spin_ns = (m ? strtoull(m, NULL, 10) : NPU_WAIT_SPIN_US) * 1000;
	}
	snprintf(pr->name, sizeof(pr->name), "npu %04x:%04x rev %u.%u",
		 pr->pci_id >> 16, pr->pci_id & 0xffff, pr->revision >> 16,
		 pr->revision & 0xffff);
	pr->stream_priority_least = 1;
	pr->stream_priority_greatest = -1;
	if (!pr->clock_hz)
		pr->clock_hz = 1000000000ull;
	if (!pr->compute_rings) {
		close(d->fd);
		d->fd = -1;
		return npu_fail(NPU_ERROR_NOT_INITIALIZED, "%s: no compute rings",
				d->node);
	}
	/* the legacy stream (made on first use, npu_stream.c) takes ring 0
	 * of each kind; other streams spread over the rings after it */
	d->rr[Q_COMPUTE] = d->rr[Q_COPY] = 1;
	d->pid = getpid();
	d->open = true;
	return NPU_SUCCESS;
}

npu_status_t npu_dev_by_ordinal(int ordinal, struct device **out)
{
	struct device *d;
	npu_status_t st = NPU_SUCCESS;

	pthread_once(&enum_once, enumerate);
	if (!ndevices)
		return npu_fail(NPU_ERROR_NO_DEVICE,
				"no DRM node with driver \"npu\"");
	if (ordinal < 0 || ordinal >= ndevices)
		return npu_fail(NPU_ERROR_INVALID_DEVICE,
				"device %d of %d", ordinal, ndevices);
	d = &devices[ordinal];
	pthread_mutex_lock(&d->lock);
	if (!d->open)
		st = device_open(d);
	pthread_mutex_unlock(&d->lock);
	if (st)
		return st;
	if (npu_dev_lost(d))
		return npu_fail_lost();
	*out = d;
	return NPU_SUCCESS;
}

npu_status_t npu_cur_dev(struct device **out)
{
	return npu_dev_by_ordinal(tls_device, out);
}

npu_status_t npu_device_get(int *ordinal)
{
	if (!ordinal)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "ordinal is NULL");
	*ordinal = tls_device;
	return NPU_SUCCESS;
}

npu_status_t npu_device_set(int ordinal)
{
	struct device *d;
	npu_status_t st = npu_dev_by_ordinal(ordinal, &d);

	if (st)
		return st;
	tls_device = ordinal;
	return NPU_SUCCESS;
}

npu_status_t npu_device_set_flags(unsigned int flags)
{
	struct device *d;
	npu_status_t st;

	if (flags != NPU_DEVICE_SCHEDULE_AUTO && flags != NPU_DEVICE_SCHEDULE_SPIN &&
	    flags != NPU_DEVICE_SCHEDULE_YIELD &&
	    flags != NPU_DEVICE_SCHEDULE_BLOCKING_SYNC)
		return npu_fail(NPU_ERROR_INVALID_VALUE,
				"device flags 0x%x: one NPU_DEVICE_SCHEDULE_* at most",
				flags);
	st = npu_cur_dev(&d);
	if (st)
		return st;
	d->sched = flags;
	return NPU_SUCCESS;
}

npu_status_t npu_device_get_flags(unsigned int *flags)
{
	struct device *d;
	npu_status_t st;

	if (!flags)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "flags is NULL");
	st = npu_cur_dev(&d);
	if (st)
		return st;
	*flags = d->sched;
	return NPU_SUCCESS;
}

npu_status_t npu_device_get_properties(npu_device_prop *prop, int ordinal)
{
	struct device *d;
	npu_status_t st;

	if (!prop)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "prop is NULL");
	st = npu_dev_by_ordinal(ordinal, &d);
	if (st)
		return st;
	*prop = d->prop;
	return NPU_SUCCESS;
}

npu_status_t npu_device_get_clock(uint64_t *ticks)
{
	struct device *d;
	npu_status_t st;
	int r;

	if (!ticks)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "ticks is NULL");
	st = npu_cur_dev(&d);
	if (st)
		return st;
	r = npu_get_param(d, DRM_NPU_PARAM_CLOCK, ticks);
	if (r)
		return npu_fail(NPU_ERROR_OS, "GET_PARAM CLOCK: %s", npu_strerror(-r));
	return NPU_SUCCESS;
}

struct device *npu_dev_opened(int i)
{
	/* a forked child has the memory but not the threads */
	if (i < 0 || i >= ndevices || !devices[i].open ||
	    devices[i].pid != getpid())
		return NULL;
	return &devices[i];
}

void npu_dev_close(struct device *d)
{
	close(d->fd);
	d->fd = -1;
	d->open = false;
}
