/* SPDX-License-Identifier: MIT */
/*
 * npu_core.c - errors, handle registry, devices, timelines and submission.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sched.h>
#include <unistd.h>

#include <xf86drm.h>

#include "npu_core.h"

/* ------------------------------------------------------------------------
 * Per-thread errors
 */
static _Thread_local npu_status_t tls_last_error;
static _Thread_local char tls_msg[512];

npu_status_t npu_fail(npu_status_t st, const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	if (st == NPU_SUCCESS)
		return st;
	/* an OS call on the device file that failed with ENODEV: the driver
	 * was unbound (drm_dev_unplug), the device is gone for good */
	if (st == NPU_ERROR_OS && err == ENODEV)
		st = NPU_ERROR_DEVICE_LOST;
	tls_last_error = st;
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(tls_msg, sizeof(tls_msg), fmt, ap);
		va_end(ap);
	} else {
		snprintf(tls_msg, sizeof(tls_msg), "%s", npu_status_string(st));
	}
	return st;
}

void npu_note_errno(struct device *dev, int err)
{
	if (err == ENODEV)
		atomic_store_explicit(&dev->lost, true, memory_order_release);
}

bool npu_dev_lost(struct device *dev)
{
	return atomic_load_explicit(&dev->lost, memory_order_acquire);
}

npu_status_t npu_fail_lost(void)
{
	return npu_fail(NPU_ERROR_DEVICE_LOST,
			"the device was lost (its driver was unbound)");
}

npu_status_t npu_fail_wait(struct device *dev)
{
	int err = errno;

	if (npu_dev_lost(dev))
		return npu_fail_lost();
	return npu_fail(NPU_ERROR_OS, "syncobj wait: %s", npu_strerror(err));
}

npu_status_t npu_fail_sticky(struct device *dev, npu_status_t st)
{
	tls_last_error = st;
	snprintf(tls_msg, sizeof(tls_msg), "%s", dev->sticky_msg);
	return st;
}

const char *npu_strerror(int e)
{
	static _Thread_local char buf[128];

	return strerror_r(e, buf, sizeof(buf));	/* the GNU form */
}

void npu_set_last_error(npu_status_t st)
{
	tls_last_error = st;
}

npu_status_t npu_get_last_error(void)
{
	npu_status_t st = tls_last_error;

	tls_last_error = NPU_SUCCESS;
	return st;
}

npu_status_t npu_peek_last_error(void)
{
	return tls_last_error;
}

const char *npu_last_error_message(void)
{
	if (tls_last_error == NPU_SUCCESS && !tls_msg[0])
		return "no error";
	return tls_msg;
}

static const struct {
	const char *name, *text;
} status_tab[] = {
	[NPU_SUCCESS] = { "NPU_SUCCESS", "no error" },
	[NPU_ERROR_INVALID_VALUE] = { "NPU_ERROR_INVALID_VALUE", "invalid value" },
	[NPU_ERROR_OUT_OF_MEMORY] = { "NPU_ERROR_OUT_OF_MEMORY", "out of memory" },
	[NPU_ERROR_NOT_INITIALIZED] = { "NPU_ERROR_NOT_INITIALIZED", "initialization error" },
	[NPU_ERROR_NO_DEVICE] = { "NPU_ERROR_NO_DEVICE", "no npu device is available" },
	[NPU_ERROR_INVALID_DEVICE] = { "NPU_ERROR_INVALID_DEVICE", "invalid device ordinal" },
	[NPU_ERROR_INVALID_HANDLE] = { "NPU_ERROR_INVALID_HANDLE", "invalid resource handle" },
	[NPU_ERROR_INVALID_POINTER] = { "NPU_ERROR_INVALID_POINTER", "invalid pointer" },
	[NPU_ERROR_INVALID_KERNEL] = { "NPU_ERROR_INVALID_KERNEL", "unknown kernel" },
	[NPU_ERROR_INVALID_CONFIGURATION] = { "NPU_ERROR_INVALID_CONFIGURATION", "invalid launch configuration" },
	[NPU_ERROR_NOT_READY] = { "NPU_ERROR_NOT_READY", "device not ready" },
	[NPU_ERROR_ILLEGAL_ADDRESS] = { "NPU_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered" },
	[NPU_ERROR_LAUNCH_FAILURE] = { "NPU_ERROR_LAUNCH_FAILURE", "unspecified launch failure" },
	[NPU_ERROR_LAUNCH_TIMEOUT] = { "NPU_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated" },
	[NPU_ERROR_NOT_SUPPORTED] = { "NPU_ERROR_NOT_SUPPORTED", "operation not supported" },
	[NPU_ERROR_OS] = { "NPU_ERROR_OS", "OS call failed" },
	[NPU_ERROR_ALREADY_MAPPED] = { "NPU_ERROR_ALREADY_MAPPED", "host memory already registered" },
	[NPU_ERROR_NOT_MAPPED] = { "NPU_ERROR_NOT_MAPPED", "host memory not registered" },
	/* graphs (npu_graph.c) */
	[NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED] = { "NPU_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing" },
	[NPU_ERROR_STREAM_CAPTURE_INVALIDATED] = { "NPU_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture" },
	[NPU_ERROR_STREAM_CAPTURE_UNJOINED] = { "NPU_ERROR_STREAM_CAPTURE_UNJOINED", "capture was not joined to the origin stream" },
	[NPU_ERROR_STREAM_CAPTURE_IMPLICIT] = { "NPU_ERROR_STREAM_CAPTURE_IMPLICIT", "operation would make the legacy stream depend on a capturing blocking stream" },
	[NPU_ERROR_STREAM_CAPTURE_UNMATCHED] = { "NPU_ERROR_STREAM_CAPTURE_UNMATCHED", "the capture was not initiated in this stream" },
	[NPU_ERROR_STREAM_CAPTURE_WRONG_THREAD] = { "NPU_ERROR_STREAM_CAPTURE_WRONG_THREAD", "attempt to terminate a thread-local capture sequence from another thread" },
	/* code objects (npu_module.c) */
	[NPU_ERROR_INVALID_IMAGE] = { "NPU_ERROR_INVALID_IMAGE", "device kernel image is invalid" },
	[NPU_ERROR_NOT_FOUND] = { "NPU_ERROR_NOT_FOUND", "named symbol not found" },
	[NPU_ERROR_FILE_NOT_FOUND] = { "NPU_ERROR_FILE_NOT_FOUND", "file not found" },
	[NPU_ERROR_IN_USE] = { "NPU_ERROR_IN_USE", "resource in use" },
	[NPU_ERROR_DEVICE_LOST] = { "NPU_ERROR_DEVICE_LOST", "the device was lost (its driver was unbound)" },
};

const char *npu_status_string(npu_status_t st)
{
	if ((unsigned)st < sizeof(status_tab) / sizeof(status_tab[0]))
		return status_tab[st].text;
	return "unknown status";
}

const char *npu_status_name(npu_status_t st)
{
	if ((unsigned)st < sizeof(status_tab) / sizeof(status_tab[0]))
		return status_tab[st].name;
	return "NPU_ERROR_UNKNOWN";
}

/* ------------------------------------------------------------------------
 * Built-in kernels: here, below every user of the table (launch, graphs,
 * fault messages, the trace)
 */
static const struct npu_kinfo kernels[] = {
	{ NPU_KERNEL_NOP, "nop", 0 },
	{ NPU_KERNEL_FILL_F32, "fill_f32", 3 },
	{ NPU_KERNEL_SCALE_F32, "scale_f32", 4 },
	{ NPU_KERNEL_VADD_F32, "vadd_f32", 4 },
	{ NPU_KERNEL_SAXPY_F32, "saxpy_f32", 4 },
	{ NPU_KERNEL_RELU_F32, "relu_f32", 3 },
	{ NPU_KERNEL_GEMM_F32, "gemm_f32", 9 },
	{ NPU_KERNEL_BIAS_ADD_F32, "bias_add_f32", 4 },
	{ NPU_KERNEL_REDUCE_SUM_F32, "reduce_sum_f32", 3 },
	{ NPU_KERNEL_SOFTMAX_F32, "softmax_f32", 4 },
	{ NPU_KERNEL_RELU_GRAD_F32, "relu_grad_f32", 4 },
	{ NPU_KERNEL_SOFTMAX_XENT_F32, "softmax_xent_f32", 6 },
	{ NPU_KERNEL_COL_SUM_F32, "col_sum_f32", 4 },
	{ NPU_KERNEL_ARGMAX_F32, "argmax_f32", 4 },
	{ NPU_KERNEL_TEST_SPIN, "test_spin", 1 },
	{ NPU_KERNEL_TEST_HANG, "test_hang", 0 },
	{ NPU_KERNEL_TEST_FAULT, "test_fault", 1 },
};

_Static_assert((int)NPU_K_SAXPY_F32 == (int)NPU_KERNEL_SAXPY_F32 &&
	       (int)NPU_K_ARGMAX_F32 == (int)NPU_KERNEL_ARGMAX_F32 &&
	       (int)NPU_K_TEST_SPIN == (int)NPU_KERNEL_TEST_SPIN &&
	       (int)NPU_K_TEST_HANG == (int)NPU_KERNEL_TEST_HANG &&
	       (int)NPU_K_TEST_FAULT == (int)NPU_KERNEL_TEST_FAULT &&
	       (int)NPU_K_GEMM_F32 == (int)NPU_KERNEL_GEMM_F32 &&
	       NPU_GEMM_TRANSPOSE_A == NPU_GEMM_TRANS_A &&
	       NPU_GEMM_TRANSPOSE_B == NPU_GEMM_TRANS_B &&
	       NPU_MAX_KERNEL_ARGS == NPU_LAUNCH_MAX_ARGS,
	       "npu.h kernel ids must match npu_hw.h");

const struct npu_kinfo *npu_kernel_find(uint32_t id)
{
	size_t i;

	for (i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++)
		if (kernels[i].id == id)
			return &kernels[i];
	return NULL;
}

npu_status_t npu_kernel_by_name(const char *name, npu_kernel_t *kernel)
{
	size_t i;

	if (!name || !kernel)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "NULL name or kernel");
	for (i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++)
		if (!strcmp(kernels[i].name, name)) {
			*kernel = (npu_kernel_t)kernels[i].id;
			return NPU_SUCCESS;
		}
	return npu_fail(NPU_ERROR_INVALID_KERNEL, "no kernel named \"%s\"", name);
}

npu_status_t npu_kernel_info(npu_kernel_t kernel, const char **name,
			     unsigned int *nargs)
{
	const struct npu_kinfo *k = npu_kernel_find((uint32_t)kernel);

	if (!k)
		return npu_fail(NPU_ERROR_INVALID_KERNEL, "no built-in kernel %d",
				(int)kernel);
	if (name)
		*name = k->name;
	if (nargs)
		*nargs = k->nargs;
	return NPU_SUCCESS;
}

/* ------------------------------------------------------------------------
 * Handle registry: an open-addressing set of live stream and event
 * pointers, so that NULL, destroyed and foreign handles are recognised
 * without dereferencing them.
 */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	const void *p;
	int type;
} *reg_tab;
static size_t reg_cap, reg_used;	/* used counts tombstones too */
#define REG_TOMB ((const void *)1)

static size_t reg_hash(const void *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x;
}

/* Rehash without the tombstones; double the table only if the live
 * entries need it. A table that grew whenever tombstones filled it would
 * grow without bound in a process that keeps making and destroying
 * events at new addresses. */
static int reg_grow(void)
{
	size_t live = 0, ncap, i, j;
	__typeof__(reg_tab) nt;

	for (i = 0; i < reg_cap; i++)
		live += reg_tab[i].p && reg_tab[i].p != REG_TOMB;
	/* live entries at most 3/8 of the table: a rehash at half full
	 * comes after another cap/8 additions at least */
	ncap = !reg_cap ? 256 : (live + 1) * 8 <= reg_cap * 3 ? reg_cap :
	       reg_cap * 2;
	nt = calloc(ncap, sizeof(*nt));
	if (!nt)
		return -1;
	reg_used = 0;
	for (i = 0; i < reg_cap; i++) {
		if (!reg_tab[i].p || reg_tab[i].p == REG_TOMB)
			continue;
		for (j = reg_hash(reg_tab[i].p) & (ncap - 1); nt[j].p;
		     j = (j + 1) & (ncap - 1))
			;
		nt[j] = reg_tab[i];
		reg_used++;
	}
	free(reg_tab);
	reg_tab = nt;
	reg_cap = ncap;
	return 0;
}

int npu_reg_add(const void *p, int type)
{
	size_t j;
	int ret = 0;

	pthread_mutex_lock(&reg_lock);
	if ((reg_used + 1) * 2 > reg_cap && reg_grow()) {
		ret = -1;
		goto out;
	}
	for (j = reg_hash(p) & (reg_cap - 1); reg_tab[j].p && reg_tab[j].p != REG_TOMB;
	     j = (j + 1) & (reg_cap - 1))
		;
	if (!reg_tab[j].p)
		reg_used++;
	reg_tab[j].p = p;
	reg_tab[j].type = type;
out:
	pthread_mutex_unlock(&reg_lock);
	return ret;
}

static size_t reg_find(const void *p, int type)
{
	size_t j;

	if (!reg_cap || !p)
		return SIZE_MAX;
	for (j = reg_hash(p) & (reg_cap - 1); reg_tab[j].p; j = (j + 1) & (reg_cap - 1))
		if (reg_tab[j].p == p)
			return reg_tab[j].type == type ? j : SIZE_MAX;
	return SIZE_MAX;
}

bool npu_reg_check(const void *p, int type)
{
	bool ok;

	pthread_mutex_lock(&reg_lock);
	ok = reg_find(p, type) != SIZE_MAX;
	pthread_mutex_unlock(&reg_lock);
	return ok;
}

bool npu_reg_remove(const void *p, int type)
{
	size_t j;

	pthread_mutex_lock(&reg_lock);
	j = reg_find(p, type);
	if (j != SIZE_MAX)
		reg_tab[j].p = REG_TOMB;
	pthread_mutex_unlock(&reg_lock);
	return j != SIZE_MAX;
}

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
	unsigned i;

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

/* ------------------------------------------------------------------------
 * Timelines
 */
struct tl *npu_tl_new(struct device *dev)
{
	struct tl *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	if (drmSyncobjCreate(dev->fd, 0, &t->handle)) {
		free(t);
		return NULL;
	}
	t->refs = 1;
	return t;
}

void npu_tl_put(struct device *dev, struct tl *t)
{
	if (t && --t->refs == 0) {
		drmSyncobjDestroy(dev->fd, t->handle);
		npu_tl_put(dev, t->via);
		free(t);
	}
}

/* Has the device written point (or a later one) to t's completion word?
 * A stream's jobs run in stream order, so a later point covers the earlier
 * ones; points after word_pt (host functions, empty jobs) are not written.
 * Points are compared wrap-safe in 32 bits. */
static bool word_passed(const struct tl *t, uint64_t point)
{
	uint32_t w;

	if (!t->word || point > t->word_pt)
		return false;
	w = __atomic_load_n(t->word, __ATOMIC_ACQUIRE);
	return (int32_t)(w - (uint32_t)point) >= 0;
}

/* Is point complete? Updates the cache. Caller holds dev->lock. */
bool npu_tl_done(struct device *dev, struct tl *t, uint64_t point)
{
	uint64_t v = 0;

	if (point <= t->completed)
		return true;
	if (word_passed(t, point) ||
	    (t->via && point == t->via_ev_pt && word_passed(t->via, t->via_pt))) {
		t->completed = point;
		return true;
	}
	if (point > t->submitted)
		return false;
	if (drmSyncobjQuery(dev->fd, &t->handle, &v, 1)) {
		npu_note_errno(dev, errno);
		return false;
	}
	if (v > t->completed)
		t->completed = v;
	return point <= t->completed;
}

/* How long one syncobj wait ioctl may sleep before the device is looked
 * at: a wait the kernel entered before the driver was unbound is not
 * woken by the unbind when its point has no fence yet (a job the library
 * still holds back, a host function's point). */
#define WAIT_SLICE_NS 250000000ll

int npu_syncobj_wait(struct device *dev, uint32_t *handles, uint64_t *points,
		     unsigned n, unsigned flags)
{
	struct timespec ts;
	uint64_t v;
	int r, err;

	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = drmSyncobjTimelineWait(dev->fd, handles, points, n,
					   (int64_t)ts.tv_sec * 1000000000ll +
					   ts.tv_nsec + WAIT_SLICE_NS, flags, NULL);
		err = r == -1 ? errno : -r;
		if (!r || (err != EINTR && err != ETIME))
			break;
		if (err == ETIME && drmSyncobjQuery(dev->fd, handles, &v, 1) &&
		    errno == ENODEV) {
			err = ENODEV;
			break;
		}
	}
	if (r) {
		npu_note_errno(dev, err);
		errno = err;
		return -1;
	}
	return 0;
}

/* Wait (without dev->lock) until (handle, point) is signalled. */
int npu_wait_points(struct device *dev, uint32_t *handles, uint64_t *points,
		    unsigned n)
{
	if (!n)
		return 0;
	return npu_syncobj_wait(dev, handles, points, n,
				DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL |
				DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT);
}

/* Wait for one point of a timeline; takes and drops dev->lock around the
 * wait. Caller holds dev->lock and keeps a reference to t.
 * npu_tl_wait_locked first asks the kernel whether the point is complete
 * (SYNCOBJ_QUERY, without dropping the lock when it is);
 * npu_tl_wait_now trusts only the cache and otherwise waits at once: one
 * ioctl instead of two when the point is still pending (a wait on a
 * complete point returns at once). */
int npu_tl_wait_locked(struct device *dev, struct tl *t, uint64_t point)
{
	if (npu_tl_done(dev, t, point))
		return 0;
	return npu_tl_wait_now(dev, t, point);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Watch t's completion word for point (as CUDA spins on completion memory
 * before it sleeps): a short job's end is seen without the interrupt and
 * the wake-up behind a syncobj wait. NPU_DEVICE_SCHEDULE_AUTO watches for
 * dev->spin_ns at most (false: not seen), SPIN and YIELD until the point
 * is complete, whether it succeeded or not. Called without
 * dev->lock, holding a reference to t: the word's slot is reused only once
 * its last point is complete (ts_retire), so a stale look can only be a
 * late one.
 */
static bool word_spin(struct device *dev, const struct tl *t, uint64_t point,
		      unsigned sched)
{
	uint32_t *w = t->word;
	uint32_t h = t->handle;
	bool bounded = sched == NPU_DEVICE_SCHEDULE_AUTO;
	/* a yield is a system call: only now and then, for a thread (the
	 * submit thread) that shares this CPU, unless asked to yield */
	unsigned every = sched == NPU_DEVICE_SCHEDULE_YIELD ? 1 :
			 sched == NPU_DEVICE_SCHEDULE_SPIN ? 1024 : 32;
	uint64_t now = mono_ns(), end = now + dev->spin_ns, look = now;
	unsigned i = 0;

	for (;;) {
		if ((int32_t)(__atomic_load_n(w, __ATOMIC_ACQUIRE) -
			      (uint32_t)point) >= 0)
			return true;
		if (++i % every == 0)
			sched_yield();
		else
			cpu_relax();
		now = mono_ns();
		if (bounded && now >= end)
			return false;
		/* a failed job never writes the word, but its fence is
		 * signalled (with the error): look at the syncobj each ms */
		if (!bounded && now - look >= 1000000) {
			uint64_t v = 0;

			look = now;
			if (!drmSyncobjQuery(dev->fd, &h, &v, 1)) {
				if (v >= point)
					return true;
			} else if (errno == ENODEV) {
				/* device lost: the word will never move;
				 * the caller's wait reports it */
				return false;
			}
		}
	}
}

int npu_tl_wait_now(struct device *dev, struct tl *t, uint64_t point)
{
	uint32_t h = t->handle;
	unsigned sched;
	bool spin;
	int r = 0;

	if (!point || point <= t->completed)
		return 0;
	if (point > t->submitted)
		npu_flush_now(dev);
	sched = dev->sched;
	spin = t->word && point <= t->word_pt &&
	       sched != NPU_DEVICE_SCHEDULE_BLOCKING_SYNC &&
	       (sched != NPU_DEVICE_SCHEDULE_AUTO || dev->spin_ns);
	t->refs++;
	pthread_mutex_unlock(&dev->lock);
	if (!spin || !word_spin(dev, t, point, sched))
		r = npu_wait_points(dev, &h, &point, 1);
	pthread_mutex_lock(&dev->lock);
	if (!r && point > t->completed)
		t->completed = point;
	npu_tl_put(dev, t);
	return r;
}

void npu_on_complete(struct device *dev, void (*fn)(struct device *dev))
{
	unsigned i;

	for (i = 0; i < 2; i++)
		if (dev->complete_hooks[i] == fn || !dev->complete_hooks[i]) {
			dev->complete_hooks[i] = fn;
			return;
		}
}

void npu_completed(struct device *dev)
{
	unsigned i;

	for (i = 0; i < 2 && dev->complete_hooks[i]; i++)
		dev->complete_hooks[i](dev);
}

/* ------------------------------------------------------------------------
 * Faults: DRM_IOCTL_NPU_GET_FAULT counts the file's failed jobs. A new
 * failure becomes the sticky error of the stream that owns the queue and of
 * the device. Caller holds dev->lock.
 */
void (*npu_fault_pc_hook)(uint64_t pc, uint64_t entry, char *buf, size_t n);

/* What the device's error cause (npu_hw.h enum npu_error) means; addr
 * tells which local window a compute unit overran. */
static const char *fault_cause_text(uint32_t cause, uint64_t addr)
{
	static const char *const text[NPU_ERR_COUNT] = {
		[NPU_ERR_NONE] = "no error",
		[NPU_ERR_BAD_OPCODE] = "unknown packet opcode",
		[NPU_ERR_BAD_PACKET] = "bad packet",
		[NPU_ERR_PRIVILEGED] = "privileged packet in a command buffer",
		[NPU_ERR_MMU_FAULT] = "page not mapped",
		[NPU_ERR_MMU_WRITE] = "write to read-only page",
		[NPU_ERR_BAD_DMA] = "physical address outside guest memory",
		[NPU_ERR_DEVMEM_RANGE] = "page table entry past device memory",
		[NPU_ERR_BAD_KERNEL] = "unknown kernel id",
		[NPU_ERR_BAD_ARGS] = "bad kernel arguments",
		[NPU_ERR_RING_CONFIG] = "bad ring configuration",
		[NPU_ERR_NO_CONTEXT] = "no context set",
		[NPU_ERR_KERNEL_FAULT] = "kernel fault",
		[NPU_ERR_CU_ILLEGAL] = "illegal instruction",
		[NPU_ERR_CU_MISALIGNED] = "misaligned access",
		[NPU_ERR_CU_BREAK] = "breakpoint (ebreak)",
	};

	if (cause == NPU_ERR_CU_LOCAL_RANGE) {
		switch (addr & ~(NPU_LOCAL_WINDOW - 1)) {
		case NPU_LOCAL_SCRATCH:
			/* a stack grows down from its window's start into
			 * the scratchpad's far end */
			if (addr >= NPU_LOCAL_STACK - NPU_LOCAL_WINDOW / 2)
				return "stack overflow (access below the "
				       "thread's stack)";
			return "access past the scratchpad";
		case NPU_LOCAL_STACK:
			return "access past the thread's stack";
		case NPU_LOCAL_PARAMS:
			return "access past the arguments (parameter window)";
		default:
			return "access outside scratchpad, stack and arguments";
		}
	}
	return cause < NPU_ERR_COUNT && text[cause] ? text[cause] :
	       "unknown cause";
}

npu_status_t npu_check_faults(struct device *dev)
{
	struct drm_npu_get_fault f;
	struct npu_stream *s, *hit = NULL;
	npu_status_t st;
	const char *kname = NULL;
	uint32_t kid = UINT32_MAX;
	char kbuf[200] = "";
	unsigned nargs;
	int n;

	memset(&f, 0, sizeof(f));
	if (drmIoctl(dev->fd, DRM_IOCTL_NPU_GET_FAULT, &f)) {
		npu_note_errno(dev, errno);
		if (npu_dev_lost(dev) && dev->sticky != NPU_ERROR_DEVICE_LOST) {
			/* what ran and what did not is unknown: every
			 * stream and the device report the loss */
			dev->sticky = NPU_ERROR_DEVICE_LOST;
			snprintf(dev->sticky_msg, sizeof(dev->sticky_msg), "%s",
				 npu_status_string(NPU_ERROR_DEVICE_LOST));
			for (s = dev->streams; s; s = s->next)
				s->sticky = NPU_ERROR_DEVICE_LOST;
		}
		return dev->sticky;
	}
	if (f.count == dev->faults_seen) {
		/* everything complete so far ran without a fault */
		for (s = dev->streams; s; s = s->next)
			s->fault_clean = s->tl->completed;
		return dev->sticky;
	}
	for (s = dev->streams; s; s = s->next)
		if (s->queue[Q_COMPUTE] == f.queue_id || s->queue[Q_COPY] == f.queue_id)
			hit = s;
	/* the failed jobs since the last check, counted against the tuner
	 * when the latest one ran on a stream of npu_tune() (npu_tune.c) */
	if (hit && hit->tune)
		dev->faults_tune += f.count - dev->faults_seen;
	dev->faults_seen = f.count;
	if (f.kind == DRM_NPU_FAULT_TIMEOUT) {
		st = NPU_ERROR_LAUNCH_TIMEOUT;
		/* the driver does not say which kernel hung: name the
		 * stream's first launch after the last fault-free check */
		if (hit) {
			unsigned i;

			for (i = 0; i < hit->span_count; i++) {
				struct cmd_span *sp =
					&hit->span[(hit->span_head + i) % CMD_INFLIGHT];

				if (sp->point > hit->fault_clean && sp->kernel) {
					kid = sp->kernel - 1;
					break;
				}
			}
		}
	} else if (f.cause == NPU_ERR_MMU_FAULT || f.cause == NPU_ERR_MMU_WRITE ||
		   f.cause == NPU_ERR_KERNEL_FAULT || f.cause == NPU_ERR_BAD_DMA ||
		   f.cause == NPU_ERR_DEVMEM_RANGE) {
		st = NPU_ERROR_ILLEGAL_ADDRESS;
	} else {
		st = NPU_ERROR_LAUNCH_FAILURE;
	}
	if (f.kind != DRM_NPU_FAULT_TIMEOUT && (f.info & 0xff) == NPU_OP_LAUNCH)
		kid = f.info >> 16;
	if (f.kind != DRM_NPU_FAULT_TIMEOUT &&
	    ((f.info & 0xff) == NPU_OP_LAUNCH_CODE ||
	     (f.info & 0xff) == NPU_OP_LAUNCH_CODE_SHORT) && f.pc) {
		char where[160] = "";
		uint64_t entry = f.entry;

		/* the launched kernel (the PC may be in a callee): the device
		 * names it; a driver without f.entry leaves 0, then take the
		 * stream's first user launch after its last fault-free check */
		for (unsigned i = 0; !entry && hit && i < hit->span_count; i++) {
			struct cmd_span *sp =
				&hit->span[(hit->span_head + i) % CMD_INFLIGHT];

			if (sp->point > hit->fault_clean && sp->entry) {
				entry = sp->entry;
				break;
			}
		}
		if (npu_fault_pc_hook)
			npu_fault_pc_hook(f.pc, entry, where, sizeof(where));
		snprintf(kbuf, sizeof(kbuf), "%s, block %u thread %u",
			 where[0] ? where : " in a user kernel", f.block, f.thread);
	} else if (kid != UINT32_MAX) {
		if (npu_kernel_info((npu_kernel_t)kid, &kname, &nargs) == NPU_SUCCESS)
			snprintf(kbuf, sizeof(kbuf), " in kernel %s (id 0x%x)", kname, kid);
		else
			snprintf(kbuf, sizeof(kbuf), " in kernel id 0x%x", kid);
	}
	if (f.kind == DRM_NPU_FAULT_TIMEOUT)
		n = snprintf(dev->sticky_msg, sizeof(dev->sticky_msg),
			     "%s: job%s did not finish within the driver's %u ms "
			     "timeout and was terminated (module parameter "
			     "npu.job_timeout_ms; NPU_MODPARAMS=job_timeout_ms=N "
			     "for tests/guest/run.sh)",
			     npu_status_name(st), kbuf, dev->prop.job_timeout_ms);
	else
		n = snprintf(dev->sticky_msg, sizeof(dev->sticky_msg),
			     "%s: device error %u (%s) at device address 0x%" PRIx64
			     "%s, packet opcode 0x%02x%s",
			     npu_status_name(st), f.cause,
			     fault_cause_text(f.cause, f.addr),
			     (uint64_t)f.addr, kbuf, f.info & 0xff,
			     f.info & 0x100 ? " in a command buffer" : "");
	if (n > 0 && (size_t)n < sizeof(dev->sticky_msg))
		snprintf(dev->sticky_msg + n, sizeof(dev->sticky_msg) - (size_t)n,
			 "; ring %u, stream %p; %u failed job(s) in this process",
			 f.ring, (void *)hit, f.count);
	if (!dev->sticky)
		dev->sticky = st;
	if (hit && !hit->sticky)
		hit->sticky = st;
	return dev->sticky;
}

/* ------------------------------------------------------------------------
 * Submission
 */
static bool dep_ready(const struct dep *d)
{
	return d->tl->submitted >= d->point;
}

/* Submit one job now. Caller holds dev->lock; all deps are submitted. */
/* ------------------------------------------------------------------------
 * Queues: streams and executable graphs take theirs here. Idle queues of
 * destroyed streams are kept for the next user of the same kind, ring and
 * priority (creating one costs an ioctl; a file has a limited number).
 */
static void queue_destroy(struct device *dev, uint32_t id)
{
	struct drm_npu_queue_destroy d = { .queue_id = id };

	drmIoctl(dev->fd, DRM_IOCTL_NPU_QUEUE_DESTROY, &d);
}

int npu_queue_get(struct device *dev, struct drm_npu_queue_create *c)
{
	unsigned i;
	int r;

	for (i = 0; i < dev->queue_pool_n; i++) {
		struct idle_queue *iq = &dev->queue_pool[i];

		if (iq->kind == c->kind && iq->ring == c->ring &&
		    iq->priority == c->priority) {
			c->queue_id = iq->id;
			*iq = dev->queue_pool[--dev->queue_pool_n];
			return 0;
		}
	}
	r = drmIoctl(dev->fd, DRM_IOCTL_NPU_QUEUE_CREATE, c) ? errno : 0;
	if (r && r != EACCES && dev->queue_pool_n) {
		/* out of queues: give back the idle ones and try again */
		while (dev->queue_pool_n)
			queue_destroy(dev, dev->queue_pool[--dev->queue_pool_n].id);
		r = drmIoctl(dev->fd, DRM_IOCTL_NPU_QUEUE_CREATE, c) ? errno : 0;
	}
	return r;
}

void npu_queue_put(struct device *dev, uint32_t id, uint32_t kind,
		   uint32_t ring, uint32_t priority, bool idle)
{
	struct idle_queue *iq;

	if (!idle || dev->queue_pool_n >= QUEUE_POOL_MAX) {
		queue_destroy(dev, id);
		return;
	}
	iq = &dev->queue_pool[dev->queue_pool_n++];
	iq->id = id;
	iq->kind = kind;
	iq->ring = ring;
	iq->priority = priority;
}

/* ------------------------------------------------------------------------
 * Submission
 */
unsigned npu_submit_max(const struct device *dev)
{
	return dev->prop.max_jobs_per_submit ? dev->prop.max_jobs_per_submit : 64;
}

int npu_submit(struct device *dev, struct drm_npu_job *jobs, unsigned n,
	       unsigned *sent, unsigned *ioctls)
{
	unsigned max = npu_submit_max(dev), done = 0, calls = 0;
	int r = 0;

	while (done < n && !r) {
		struct drm_npu_submit sub = {
			.jobs = (uintptr_t)&jobs[done],
			.job_count = n - done < max ? n - done : max,
			.job_stride = sizeof(*jobs),
		};

		r = drmIoctl(dev->fd, DRM_IOCTL_NPU_SUBMIT, &sub) ? -errno : 0;
		if (r)
			npu_note_errno(dev, -r);
		calls++;
		if (!r)
			done += sub.job_count;
	}
	if (sent)
		*sent = done;
	if (ioctls)
		*ioctls = calls;
	return r;
}

static int submit_now(struct device *dev, uint32_t queue_id, uint64_t cmd_va,
		      uint32_t cmd_size, const struct dep *deps, unsigned ndeps,
		      struct tl *const *out, const uint64_t *out_pt, unsigned nout,
		      const uint32_t *bo, unsigned nbo)
{
	struct drm_npu_sync in_inline[INLINE_DEPS], *in = in_inline;
	struct drm_npu_sync outs[2];
	struct drm_npu_job job;
	unsigned i, nin = 0;
	int r;

	if (ndeps > INLINE_DEPS) {
		in = malloc(ndeps * sizeof(*in));
		if (!in)
			return -ENOMEM;
	}
	for (i = 0; i < ndeps; i++) {
		if (deps[i].order_only || deps[i].point <= deps[i].tl->completed)
			continue;
		in[nin].handle = deps[i].tl->handle;
		in[nin].flags = 0;
		in[nin].point = deps[i].point;
		nin++;
	}
	for (i = 0; i < nout; i++) {
		outs[i].handle = out[i]->handle;
		outs[i].flags = 0;
		outs[i].point = out_pt[i];
	}
	memset(&job, 0, sizeof(job));
	job.queue_id = queue_id;
	job.cmd_va = cmd_size ? cmd_va : 0;
	job.cmd_size = cmd_size;
	job.bo_count = nbo;
	job.bo_handles = (uintptr_t)bo;
	job.in_syncs = (uintptr_t)in;
	job.out_syncs = (uintptr_t)outs;
	job.in_sync_count = nin;
	job.out_sync_count = nout;
	r = npu_submit(dev, &job, 1, NULL, NULL);
	if (in != in_inline)
		free(in);
	if (!r)
		for (i = 0; i < nout; i++)
			out[i]->submitted = out_pt[i];
	return r;
}

static struct djob *djob_alloc(struct device *dev)
{
	struct djob *j = dev->free_djobs;

	if (j) {
		dev->free_djobs = j->next;
		dev->nfree_djobs--;
		memset(j, 0, sizeof(*j));
		return j;
	}
	return calloc(1, sizeof(*j));
}

static void djob_free(struct device *dev, struct djob *j)
{
	unsigned i;

	for (i = 0; i < j->ndeps; i++)
		npu_tl_put(dev, j->deps[i].tl);
	for (i = 0; i < j->nout; i++)
		npu_tl_put(dev, j->out[i]);
	if (j->deps != j->inline_deps)
		free(j->deps);
	if (dev->nfree_djobs >= CMD_INFLIGHT) {
		free(j);
		return;
	}
	j->next = dev->free_djobs;
	dev->free_djobs = j;
	dev->nfree_djobs++;
}

/* Signal points from the host so that nobody waits forever for a job that
 * could not be submitted. */
static void signal_from_host(struct device *dev, struct tl *const *out,
			     const uint64_t *pt, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		drmSyncobjTimelineSignal(dev->fd, &out[i]->handle,
					 (uint64_t *)&pt[i], 1);
		out[i]->submitted = pt[i];
	}
}

/* The driver refused deferred job j (errno): its points are signalled from
 * the host so that nobody waits for ever, and its stream and the device
 * report the failure; a refusal because the device is gone is the loss. */
static void batch_failed(struct device *dev, struct djob *j)
{
	int err = errno;
	npu_status_t st = npu_dev_lost(dev) ? NPU_ERROR_DEVICE_LOST :
			  NPU_ERROR_LAUNCH_FAILURE;

	signal_from_host(dev, j->out, j->out_pt, j->nout);
	if (!j->s->sticky)
		j->s->sticky = st;
	if (!dev->sticky) {
		dev->sticky = st;
		if (st == NPU_ERROR_DEVICE_LOST)
			snprintf(dev->sticky_msg, sizeof(dev->sticky_msg), "%s",
				 npu_status_string(st));
		else
			snprintf(dev->sticky_msg, sizeof(dev->sticky_msg),
				 "NPU_ERROR_LAUNCH_FAILURE: the driver refused a job: %s",
				 npu_strerror(err));
	}
}

/* Submit every deferred job whose dependencies are now submitted. Caller
 * holds dev->lock. */
void npu_flush_deferred(struct device *dev)
{
	bool progress = true;

	if (dev->batch) {
		if (dev->flusher_idle)
			pthread_cond_signal(&dev->flush_cond);
		return;
	}
	while (progress && dev->deferred) {
		struct djob **pp = &dev->deferred, *j;

		progress = false;
		dev->deferred_tail = NULL;
		while ((j = *pp)) {
			unsigned i;
			bool ready = true;

			for (i = 0; i < j->ndeps && ready; i++)
				ready = dep_ready(&j->deps[i]);
			if (!ready) {
				dev->deferred_tail = j;
				pp = &j->next;
				continue;
			}
			*pp = j->next;
			if (submit_now(dev, j->queue_id, j->s->cmd_va + j->cmd_off,
				       j->cmd_size, j->deps, j->ndeps, j->out,
				       j->out_pt, j->nout, j->bo, j->nbo))
				batch_failed(dev, j);
			djob_free(dev, j);
			progress = true;
		}
	}
}

/* ------------------------------------------------------------------------
 * Batched submission. With dev->batch (the default; NPU_SUBMIT=direct turns
 * it off) an enqueue only writes the command buffer and appends the job to
 * dev->deferred; a per-device submit thread takes every job that is ready,
 * in order, and submits up to DRM_NPU_PARAM_MAX_JOBS of them with one
 * DRM_IOCTL_NPU_SUBMIT (the driver resolves waits on points signalled by
 * earlier jobs of the same array). While the thread is inside the ioctl,
 * new launches accumulate, so a burst of launches costs a fraction of an
 * ioctl each, and the first launch after idle reaches the device after one
 * thread wake-up (or none: a waiter submits the ready jobs itself when the
 * thread has no batch under way, npu_flush_now). Points are marked
 * submitted when a job is taken into a batch; that is safe because one
 * batch is under way at a time, batches are taken in order, and every
 * wait uses WAIT_FOR_SUBMIT.
 */
static unsigned collect_batch(struct device *dev, struct djob **out, unsigned max)
{
	struct djob **pp = &dev->deferred, *j;
	unsigned n = 0, i;

	dev->deferred_tail = NULL;
	while ((j = *pp)) {
		bool ready = n < max;

		for (i = 0; i < j->ndeps && ready; i++)
			ready = dep_ready(&j->deps[i]);
		if (!ready) {
			dev->deferred_tail = j;
			pp = &j->next;
			continue;
		}
		*pp = j->next;
		for (i = 0; i < j->nout; i++)
			j->out[i]->submitted = j->out_pt[i];
		out[n++] = j;
	}
	return n;
}

/* Can j run as the tail of the driver job that ends with p? Consecutive
 * jobs of one stream on one queue, back to back in its command ring, that
 * wait for nothing but the stream's own earlier points and list no BOs:
 * one job then signals the later point, which also satisfies every wait
 * for the earlier one (a timeline point is reached by any later one). */
static bool coalesces(struct device *dev, const struct djob *p,
		      const struct djob *j, uint32_t bytes)
{
	unsigned k;

	if (j->s != p->s || j->queue_id != p->queue_id || !j->cmd_size ||
	    !p->cmd_size || j->cmd_off != p->cmd_off + p->cmd_size ||
	    j->nbo || p->nbo || j->nout != 1 || p->nout != 1 ||
	    j->out[0] != p->out[0] ||
	    bytes + j->cmd_size > dev->prop.max_cmd_size)
		return false;
	for (k = 0; k < j->ndeps; k++) {
		const struct dep *d = &j->deps[k];

		if (d->order_only || d->point <= d->tl->completed)
			continue;
		if (d->tl != p->out[0] || d->point > p->out_pt[0])
			return false;
	}
	return true;
}

/* Fill dev->bjobs from the n deferred jobs; returns the number of driver
 * jobs (coalesced ones count once) or a negative errno. */
static int build_batch(struct device *dev, struct djob **b, unsigned n)
{
	unsigned i, k, total = 0, at = 0, m = 0, out_at = 0;
	struct drm_npu_job *job = NULL;

	for (i = 0; i < n; i++)
		total += b[i]->ndeps + b[i]->nout;
	if (total > dev->bsyncs_cap) {
		struct drm_npu_sync *ns = realloc(dev->bsyncs, total * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		dev->bsyncs = ns;
		dev->bsyncs_cap = total;
	}
	for (i = 0; i < n; i++) {
		struct djob *j = b[i];
		unsigned in0 = at;

		if (job && coalesces(dev, b[i - 1], j, job->cmd_size)) {
			job->cmd_size += j->cmd_size;
			dev->bsyncs[out_at].point = j->out_pt[0];
			continue;
		}
		job = &dev->bjobs[m++];
		memset(job, 0, sizeof(*job));
		for (k = 0; k < j->ndeps; k++) {
			if (j->deps[k].order_only ||
			    j->deps[k].point <= j->deps[k].tl->completed)
				continue;
			dev->bsyncs[at].handle = j->deps[k].tl->handle;
			dev->bsyncs[at].flags = 0;
			dev->bsyncs[at].point = j->deps[k].point;
			at++;
		}
		job->in_syncs = (uintptr_t)&dev->bsyncs[in0];
		job->in_sync_count = at - in0;
		job->out_syncs = (uintptr_t)&dev->bsyncs[at];
		job->out_sync_count = j->nout;
		out_at = at;
		for (k = 0; k < j->nout; k++, at++) {
			dev->bsyncs[at].handle = j->out[k]->handle;
			dev->bsyncs[at].flags = 0;
			dev->bsyncs[at].point = j->out_pt[k];
		}
		job->queue_id = j->queue_id;
		job->cmd_va = j->cmd_size ? j->s->cmd_va + j->cmd_off : 0;
		job->cmd_size = j->cmd_size;
		job->bo_count = j->nbo;
		job->bo_handles = (uintptr_t)j->bo;
	}
	return (int)m;
}


/*
 * Submit the batch b[0..n), just collected under dev->lock: one SUBMIT, or
 * job by job when the driver refuses the array, so that only a bad job
 * fails. unlock: the ioctl runs without dev->lock (the submit thread);
 * batch_busy keeps every other submitter out until the batch is done, so
 * batches reach the driver in order. Caller holds dev->lock.
 */
static void submit_batch(struct device *dev, struct djob **b, unsigned n,
			 bool unlock)
{
	unsigned i;
	int r, m;

	dev->batch_busy = true;
	m = build_batch(dev, b, n);
	if (unlock)
		pthread_mutex_unlock(&dev->lock);
	/* at most batch_max jobs: one ioctl, all or nothing */
	r = m < 0 ? m : npu_submit(dev, dev->bjobs, (unsigned)m, NULL, NULL);
	if (unlock)
		pthread_mutex_lock(&dev->lock);
	if (r) {
		for (i = 0; i < n; i++) {
			struct djob *j = b[i];

			if (submit_now(dev, j->queue_id,
				       j->s->cmd_va + j->cmd_off, j->cmd_size,
				       j->deps, j->ndeps, j->out, j->out_pt,
				       j->nout, j->bo, j->nbo))
				batch_failed(dev, j);
		}
	}
	for (i = 0; i < n; i++)
		djob_free(dev, b[i]);
	dev->batch_busy = false;
	pthread_cond_broadcast(&dev->thread_cond);	/* npu_deferred_drop_stream */
}

void npu_deferred_drop_stream(struct device *dev, struct npu_stream *s)
{
	struct djob **pp = &dev->deferred, *j;

	while (dev->batch_busy)
		pthread_cond_wait(&dev->thread_cond, &dev->lock);
	dev->deferred_tail = NULL;
	while ((j = *pp)) {
		if (j->s != s) {
			dev->deferred_tail = j;
			pp = &j->next;
			continue;
		}
		*pp = j->next;
		signal_from_host(dev, j->out, j->out_pt, j->nout);
		djob_free(dev, j);
	}
}

static unsigned batch_max(const struct device *dev)
{
	unsigned max = npu_submit_max(dev);

	return max > 64 ? 64 : max;
}

/*
 * A thread about to wait for a point that is still deferred submits the
 * ready jobs itself, holding dev->lock through the ioctl, unless the
 * submit thread has a batch under way: the wait does not pay for waking
 * that thread. Caller holds dev->lock.
 */
void npu_flush_now(struct device *dev)
{
	unsigned n;

	if (!dev->batch || dev->batch_busy || !dev->deferred || !dev->wait_batch)
		return;
	n = collect_batch(dev, dev->wait_batch, batch_max(dev));
	if (n)
		submit_batch(dev, dev->wait_batch, n, false);
}

static void *flusher_main(void *arg)
{
	struct device *dev = arg;
	unsigned max = batch_max(dev);
	bool idle_once = false;
	struct djob **b;

	npu_thread_is_lib();
	b = calloc(max, sizeof(*b));
	pthread_mutex_lock(&dev->lock);
	if (!b) {
		/* no batch array: submit directly from now on, and what is
		 * queued already, rather than leave it queued for ever */
		dev->batch = false;
		npu_flush_deferred(dev);
		pthread_mutex_unlock(&dev->lock);
		return NULL;
	}
	while (!dev->flusher_stop) {	/* teardown stops it */
		unsigned n;

		/* a waiter's batch (npu_flush_now) may be under way */
		n = dev->batch_busy ? 0 : collect_batch(dev, b, max);
		if (!n && !idle_once) {
			/* let a caller that is still queueing add more before
			 * we sleep and it has to wake us */
			idle_once = true;
			pthread_mutex_unlock(&dev->lock);
			sched_yield();
			pthread_mutex_lock(&dev->lock);
			continue;
		}
		idle_once = false;
		if (!n) {
			dev->flusher_idle = true;
			pthread_cond_wait(&dev->flush_cond, &dev->lock);
			dev->flusher_idle = false;
			continue;
		}
		submit_batch(dev, b, n, true);
	}
	pthread_mutex_unlock(&dev->lock);
	free(b);
	return NULL;
}

int npu_start_flusher(struct device *dev)
{
	unsigned max = dev->prop.max_jobs_per_submit, i;

	/* stock the free list so that bursts do not allocate */
	for (i = 0; i < CMD_INFLIGHT; i++) {
		struct djob *j = calloc(1, sizeof(*j));

		if (!j)
			break;
		j->next = dev->free_djobs;
		dev->free_djobs = j;
		dev->nfree_djobs++;
	}
	if (!max || max > 64)
		max = 64;
	if (!dev->bjobs) {
		dev->bjobs = calloc(max, sizeof(*dev->bjobs));
		if (!dev->bjobs)
			return -1;
	}
	if (!dev->wait_batch)	/* without it waiters leave it to the thread */
		dev->wait_batch = calloc(max, sizeof(*dev->wait_batch));
	if (pthread_create(&dev->flusher, NULL, flusher_main, dev))
		return -1;
	dev->flusher_started = true;
	return 0;
}

/* Reserve bytes in the stream's command ring. Caller holds dev->lock (it
 * may be dropped while waiting for the device). Returns the offset or -1. */
static int cmd_reserve(struct device *dev, struct npu_stream *s, uint32_t bytes,
		       uint32_t *off)
{
	int pass;

	bytes = (bytes + 7) & ~7u;
	if (bytes > CMD_RING_SIZE / 2)
		return -EINVAL;
	for (pass = 0;; pass++) {
		/* retire completed spans: from the cache first, then (only when
		 * short of space) by asking the kernel */
		while (s->span_count) {
			struct cmd_span *sp = &s->span[s->span_head];

			if (sp->point > s->tl->completed &&
			    (pass == 0 || sp->point > s->tl->submitted ||
			     !npu_tl_done(dev, s->tl, sp->point)))
				break;
			s->span_head = (s->span_head + 1) % CMD_INFLIGHT;
			s->span_count--;
		}
		if (!s->span_count)
			s->cmd_head = 0;
		if (s->span_count < CMD_INFLIGHT) {
			uint32_t tail = s->span_count ? s->span[s->span_head].start : 0;
			uint32_t head = s->cmd_head;

			if (!s->span_count || head > tail) {
				/* free: [head, end) and [0, tail) */
				if (head + bytes <= CMD_RING_SIZE) {
					*off = head;
					return 0;
				}
				if (bytes < tail) {
					*off = 0;
					return 0;
				}
			} else if (head + bytes < tail) {
				*off = head;
				return 0;
			}
		}
		if (pass == 0)
			continue;
		/* full: wait for the oldest span */
		if (npu_tl_wait_locked(dev, s->tl, s->span[s->span_head].point))
			return -EIO;
	}
}

static void cmd_commit(struct npu_stream *s, uint32_t off, uint32_t bytes,
		       uint64_t point, uint32_t kernel, uint64_t entry)
{
	unsigned i = (s->span_head + s->span_count) % CMD_INFLIGHT;

	bytes = (bytes + 7) & ~7u;
	s->span[i].start = off;
	s->span[i].end = off + bytes;
	s->span[i].point = point;
	s->span[i].kernel = kernel;
	s->span[i].entry = entry;
	s->span_count++;
	s->cmd_head = off + bytes;
}

/* Hooks of the capture and the trace (npu_core.h) */
atomic_int npu_capture_active;
const struct npu_capture_hooks *_Atomic npu_capture_hooks;
atomic_int npu_trace_active;
const struct npu_trace_hooks *_Atomic npu_trace_hooks;

npu_status_t npu_job_begin(struct device *dev, struct npu_stream *s,
			   uint32_t max_bytes, struct jobctx *jc)
{
	uint32_t off = 0;
	int r;
	/* profiler trace hook (npu_trace.c): room for two TIMESTAMPs */
	const struct npu_trace_hooks *tr = max_bytes && npu_tracing() ?
					   npu_tracer() : NULL;

	if (tr)
		max_bytes += NPU_TRACE_BYTES;
	memset(jc, 0, sizeof(*jc));
	jc->s = s;
	if (max_bytes && s->tl->word) {
		max_bytes += sizeof(struct npu_pkt_sem);
		jc->word = true;
	}
	if (max_bytes) {
		r = cmd_reserve(dev, s, max_bytes, &off);
		if (r)
			return npu_fail(r == -EINVAL ? NPU_ERROR_INVALID_VALUE :
					NPU_ERROR_OS, "command buffer: %s",
					npu_strerror(-r));
	}
	jc->off = off;
	npu_cmdw_init(&jc->w, s->cmd_map + off, s->cmd_va + off, max_bytes);
	if (tr)
		tr->job_begin(dev, jc);
	return NPU_SUCCESS;
}

static npu_status_t jc_add_dep(struct jobctx *jc, struct tl *t, uint64_t point,
			       bool order_only)
{
	if (!point || (!order_only && point <= t->completed))
		return NPU_SUCCESS;
	if (jc->ndeps == jc->cap) {
		unsigned ncap = jc->cap ? jc->cap * 2 : 16;
		struct dep *nd;

		if (jc->deps == jc->inline_deps || !jc->deps) {
			nd = malloc(ncap * sizeof(*nd));
			if (nd && jc->ndeps)
				memcpy(nd, jc->inline_deps, jc->ndeps * sizeof(*nd));
		} else {
			nd = realloc(jc->deps, ncap * sizeof(*nd));
		}
		if (!nd)
			return NPU_ERROR_OUT_OF_MEMORY;
		jc->deps = nd;
		jc->cap = ncap;
	}
	jc->deps[jc->ndeps].tl = t;
	jc->deps[jc->ndeps].point = point;
	jc->deps[jc->ndeps].order_only = order_only;
	jc->ndeps++;
	return NPU_SUCCESS;
}

npu_status_t npu_job_wait(struct jobctx *jc, struct tl *t, uint64_t point)
{
	if (!jc->deps) {
		jc->deps = jc->inline_deps;
		jc->cap = INLINE_DEPS;
	}
	return jc_add_dep(jc, t, point, false);
}

npu_status_t npu_job_order_after(struct jobctx *jc, struct tl *t, uint64_t point)
{
	if (!jc->deps) {
		jc->deps = jc->inline_deps;
		jc->cap = INLINE_DEPS;
	}
	return jc_add_dep(jc, t, point, true);
}

/* The implicit dependencies of a stream's next operation: its own previous
 * point, and CUDA's legacy-stream rules. When the previous point is a job of
 * the same queue, queue order is enough: once that job is submitted nothing
 * is needed, and before, the job is only submitted after it (order only; a
 * fence wait would hold it in the driver until that job has finished and
 * its interrupt was handled, instead of behind it on the ring). */
static npu_status_t jc_wait(void *jc, struct tl *t, uint64_t point)
{
	return npu_job_wait(jc, t, point);
}

static npu_status_t add_stream_deps(struct device *dev, struct jobctx *jc,
				    int queue)
{
	struct npu_stream *s = jc->s;
	npu_status_t st;
	uint64_t prev = s->tl->next;

	if (prev && (queue == Q_NONE || queue != s->last_queue)) {
		st = npu_job_wait(jc, s->tl, prev);
		if (st)
			return st;
	} else if (prev && s->tl->submitted < prev) {
		st = npu_job_order_after(jc, s->tl, prev);
		if (st)
			return st;
	}
	if (jc->no_implicit)
		return NPU_SUCCESS;
	return npu_legacy_deps(dev, s, jc_wait, jc);
}

npu_status_t npu_legacy_deps(struct device *dev, struct npu_stream *s,
			     npu_status_t (*wait)(void *arg, struct tl *t,
						  uint64_t point),
			     void *arg)
{
	struct npu_stream *b;
	npu_status_t st;

	if (s->legacy) {
		for (b = dev->streams; b; b = b->next) {
			if (b->legacy || (b->flags & NPU_STREAM_NON_BLOCKING))
				continue;
			if (b->tl->next > b->waited_by_legacy) {
				st = wait(arg, b->tl, b->tl->next);
				if (st)
					return st;
			}
		}
	} else if (!(s->flags & NPU_STREAM_NON_BLOCKING) && dev->legacy) {
		struct tl *l = dev->legacy->tl;

		if (l->next > s->legacy_seen) {
			st = wait(arg, l, l->next);
			if (st)
				return st;
		}
	}
	return NPU_SUCCESS;
}

/* A job takes at most 64 in-fences (driver limit). Before a legacy-stream
 * job that would wait on more than LEGACY_FANIN (for a graph launch, keep)
 * blocking streams, empty barrier jobs on the legacy stream absorb them
 * LEGACY_FANIN at a time; the job itself then waits on the last barrier
 * through stream order. */
#define LEGACY_FANIN 48

static bool legacy_candidate(const struct npu_stream *b)
{
	return !b->legacy && !(b->flags & NPU_STREAM_NON_BLOCKING) &&
	       b->tl->next > b->waited_by_legacy && b->tl->next > b->tl->completed;
}

npu_status_t npu_legacy_fanin(struct device *dev, struct npu_stream *s,
			      int queue, unsigned keep)
{
	struct npu_stream *b, *chunk[LEGACY_FANIN];
	uint64_t pts[LEGACY_FANIN];
	unsigned n = 0, k, i;
	npu_status_t st;

	for (b = dev->streams; b; b = b->next)
		n += legacy_candidate(b);
	while (n > keep) {
		struct jobctx jc;

		memset(&jc, 0, sizeof(jc));
		jc.s = s;
		jc.no_implicit = true;
		for (b = dev->streams, k = 0; b && k < LEGACY_FANIN; b = b->next) {
			if (!legacy_candidate(b))
				continue;
			st = npu_job_wait(&jc, b->tl, b->tl->next);
			if (st) {
				npu_job_abort(&jc);
				return st;
			}
			chunk[k] = b;
			pts[k++] = b->tl->next;
		}
		st = npu_job_submit(dev, &jc, queue, NULL, 0, NULL);
		if (st)
			return st;
		for (i = 0; i < k; i++)
			chunk[i]->waited_by_legacy = pts[i];
		n -= k;
	}
	return NPU_SUCCESS;
}

void npu_legacy_deps_commit(struct device *dev, struct npu_stream *s)
{
	struct npu_stream *b;

	if (s->legacy) {
		for (b = dev->streams; b; b = b->next)
			if (!b->legacy && !(b->flags & NPU_STREAM_NON_BLOCKING))
				b->waited_by_legacy = b->tl->next;
	} else if (!(s->flags & NPU_STREAM_NON_BLOCKING) && dev->legacy) {
		s->legacy_seen = dev->legacy->tl->next;
	}
}

static void jc_release(struct jobctx *jc)
{
	if (jc->deps && jc->deps != jc->inline_deps)
		free(jc->deps);
	jc->deps = NULL;
}

void npu_job_abort(struct jobctx *jc)
{
	jc_release(jc);
}

/* Finish a job: the packets written with jc->w. queue is Q_COMPUTE
 * or Q_COPY. ev/ev_point: an extra timeline point to signal (event record).
 * On success *point is the stream point the job signals. Caller holds
 * dev->lock. */
npu_status_t npu_job_submit(struct device *dev, struct jobctx *jc, int queue,
			    struct tl *ev, uint64_t ev_point, uint64_t *point)
{
	struct npu_stream *s = jc->s;
	struct tl *out[2];
	uint64_t out_pt[2];
	unsigned nout = 1, i;
	bool ready = true;
	npu_status_t st;
	int r;

	if (jc->trace)		/* profiler trace hook (npu_trace.c) */
		npu_tracer()->job_end(dev, jc, queue);
	if (!jc->deps) {
		jc->deps = jc->inline_deps;
		jc->cap = INLINE_DEPS;
	}
	if (s->legacy && !jc->no_implicit) {
		st = npu_legacy_fanin(dev, s, queue, LEGACY_FANIN);
		if (st) {
			jc_release(jc);
			return st;
		}
	}
	st = add_stream_deps(dev, jc, queue);
	if (st) {
		jc_release(jc);
		return npu_fail(st, "out of memory");
	}
	out[0] = s->tl;
	out_pt[0] = s->tl->next + 1;
	if (jc->word) {		/* last: the job's point to the completion word */
		npu_cmd_sem_signal(&jc->w, s->tl->word_va, (uint32_t)out_pt[0]);
	}
	if (npu_cmdw_full(&jc->w)) {	/* more packets than npu_job_begin's room */
		jc_release(jc);
		return npu_fail(NPU_ERROR_INVALID_VALUE, "command buffer full");
	}
	if (ev) {
		out[1] = ev;
		out_pt[1] = ev_point;
		nout = 2;
		if (ev->next > ev->submitted) {
			st = npu_job_order_after(jc, ev, ev->next);
			if (st) {
				jc_release(jc);
				return npu_fail(st, "out of memory");
			}
		}
	}
	if (dev->batch)
		ready = false;		/* the submit thread submits it */
	for (i = 0; i < jc->ndeps && ready; i++)
		ready = dep_ready(&jc->deps[i]);
	if (ready) {
		r = submit_now(dev, s->queue[queue], s->cmd_va + jc->off, jc->w.len,
			       jc->deps, jc->ndeps, out, out_pt, nout, jc->bo,
			       jc->nbo);
		if (r) {
			jc_release(jc);
			return npu_fail(r == -ENOMEM ? NPU_ERROR_OUT_OF_MEMORY :
					r == -EINVAL ? NPU_ERROR_INVALID_VALUE :
					r == -ENODEV ? NPU_ERROR_DEVICE_LOST :
					NPU_ERROR_OS,
					"DRM_IOCTL_NPU_SUBMIT: %s", npu_strerror(-r));
		}
	} else {
		struct djob *j = djob_alloc(dev);

		if (!j) {
			jc_release(jc);
			return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "deferred job");
		}
		j->deps = jc->ndeps <= INLINE_DEPS ? j->inline_deps :
			malloc(jc->ndeps * sizeof(*j->deps));
		if (!j->deps) {
			j->deps = j->inline_deps;
			djob_free(dev, j);
			jc_release(jc);
			return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "deferred job");
		}
		memcpy(j->deps, jc->deps, jc->ndeps * sizeof(*j->deps));
		j->ndeps = jc->ndeps;
		for (i = 0; i < j->ndeps; i++)
			j->deps[i].tl->refs++;
		j->s = s;
		j->queue_id = s->queue[queue];
		j->cmd_off = jc->off;
		j->cmd_size = jc->w.len;
		j->nout = nout;
		for (i = 0; i < nout; i++) {
			j->out[i] = out[i];
			j->out_pt[i] = out_pt[i];
			out[i]->refs++;
		}
		memcpy(j->bo, jc->bo, sizeof(j->bo));
		j->nbo = jc->nbo;
		if (dev->deferred_tail)
			dev->deferred_tail->next = j;
		else
			dev->deferred = j;
		dev->deferred_tail = j;
		if (dev->batch) {
			if (!dev->flusher_started && npu_start_flusher(dev)) {
				/* no thread: fall back to direct submission */
				dev->batch = false;
				npu_flush_deferred(dev);
			} else if (dev->flusher_idle) {
				pthread_cond_signal(&dev->flush_cond);
			}
		}
	}
	if (!jc->no_implicit)
		npu_legacy_deps_commit(dev, s);
	s->tl->next = out_pt[0];
	if (jc->word)
		s->tl->word_pt = out_pt[0];
	if (ev) {
		ev->next = ev_point;
		/* a synchronize that saw the stream's word has seen this
		 * record too: so must the event's queries (CUDA) */
		npu_tl_put(dev, ev->via);
		ev->via = NULL;
		if (jc->word) {
			ev->via = s->tl;
			s->tl->refs++;
			ev->via_pt = out_pt[0];
			ev->via_ev_pt = ev_point;
		}
	}
	s->last_queue = queue;
	if (jc->w.len)
		cmd_commit(s, jc->off, jc->w.len, out_pt[0], jc->kernel,
			   jc->entry);
	jc_release(jc);
	if (point)
		*point = out_pt[0];
	return NPU_SUCCESS;
}

/* ------------------------------------------------------------------------
 * Helper threads, and the parts of teardown (npu_unload.c) that are the
 * submission layer's: no thread of the library may run on after dlclose.
 */
static _Thread_local bool tls_lib_thread;

void npu_thread_is_lib(void)
{
	tls_lib_thread = true;
}

/* Join the helper threads that have finished. Each added itself under
 * dev->lock, which it dropped right before returning, so the joins wait
 * at most for a return. Caller holds dev->lock. */
static void threads_reap(struct device *dev)
{
	unsigned i;

	for (i = 0; i < dev->nthreads_done; i++)
		pthread_join(dev->threads_done[i], NULL);
	dev->nthreads_done = 0;
}

int npu_thread_start(struct device *dev, void *(*fn)(void *), void *arg)
{
	pthread_t th;

	threads_reap(dev);
	if (dev->nthreads_done + dev->nthreads + 1 > dev->threads_done_cap) {
		/* room to finish in, reserved now: npu_thread_done must
		 * not fail */
		unsigned ncap = (dev->nthreads + 1) * 2;
		pthread_t *nv = realloc(dev->threads_done, ncap * sizeof(*nv));

		if (!nv)
			return -1;
		dev->threads_done = nv;
		dev->threads_done_cap = ncap;
	}
	if (pthread_create(&th, NULL, fn, arg))
		return -1;
	dev->nthreads++;
	return 0;
}

void npu_thread_done(struct device *dev)
{
	dev->threads_done[dev->nthreads_done++] = pthread_self();
	dev->nthreads--;
	pthread_cond_broadcast(&dev->thread_cond);
}

bool npu_thread_in_lib(void)
{
	return tls_lib_thread;
}

struct device *npu_dev_opened(int i)
{
	/* a forked child has the memory but not the threads */
	if (i < 0 || i >= ndevices || !devices[i].open ||
	    devices[i].pid != getpid())
		return NULL;
	return &devices[i];
}

void npu_dev_stop_threads(struct device *d)
{
	while (d->nthreads)
		pthread_cond_wait(&d->thread_cond, &d->lock);
	threads_reap(d);
	if (d->flusher_started) {
		d->flusher_stop = true;
		pthread_cond_signal(&d->flush_cond);
		pthread_mutex_unlock(&d->lock);
		pthread_join(d->flusher, NULL);
		pthread_mutex_lock(&d->lock);
		d->flusher_started = false;
	}
}

void npu_dev_close(struct device *d)
{
	close(d->fd);
	d->fd = -1;
	d->open = false;
}

/* ------------------------------------------------------------------------
 * Device printf text waiting for stdout (npu_printf.c formats it; every
 * layer that finds launches complete writes it once dev->lock is dropped)
 */
/* Formatted output not yet written to stdout, oldest first. */
struct pending_text {
	struct pending_text *next;
	size_t len;
	char text[];
};

/* pending_lock protects pending_head/pending_tail; a leaf lock, held only
 * to link or unlink, never while writing. */
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pending_text *pending_head, *pending_tail;
/* write_lock serializes the writers of stdout, so the text of the
 * launches comes out in the order it was queued. */
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;

void npu_printf_queue(const char *text, size_t len)
{
	struct pending_text *t;

	if (!len)
		return;
	t = malloc(sizeof(*t) + len);
	if (!t) {
		fputs("npu: device printf output lost: out of memory\n", stderr);
		return;
	}
	t->next = NULL;
	t->len = len;
	memcpy(t->text, text, len);
	pthread_mutex_lock(&pending_lock);
	if (pending_tail)
		pending_tail->next = t;
	else
		pending_head = t;
	pending_tail = t;
	pthread_mutex_unlock(&pending_lock);
}

static bool pending_empty(void)
{
	bool empty;

	pthread_mutex_lock(&pending_lock);
	empty = !pending_head;
	pthread_mutex_unlock(&pending_lock);
	return empty;
}

void npu_printf_output(void)
{
	/* a writer already at work writes what is queued now too: it looks
	 * again after letting go of write_lock */
	while (!pending_empty() && !pthread_mutex_trylock(&write_lock)) {
		struct pending_text *t;

		pthread_mutex_lock(&pending_lock);
		t = pending_head;
		pending_head = pending_tail = NULL;
		pthread_mutex_unlock(&pending_lock);
		while (t) {
			struct pending_text *next = t->next;

			fwrite(t->text, 1, t->len, stdout);
			free(t);
			t = next;
		}
		fflush(stdout);
		pthread_mutex_unlock(&write_lock);
	}
}
