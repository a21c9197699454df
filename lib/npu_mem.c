/* SPDX-License-Identifier: MIT */
/*
 * npu_mem.c - allocations, copies, fills, kernels and launch.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <xf86drm.h>

#include "npu_core.h"
#include "npu_printf.h"


#define PAGE 4096ull
/* where device memory's size is set, for out-of-memory messages */
#define DEVMEM_OPTION_HINT \
	"; the device's size is QEMU's -device npu,devmem-size=SIZE " \
	"(tests/guest/run.sh --device-opts ,devmem-size=SIZE)"

/* ------------------------------------------------------------------------
 * Allocation tables, sorted by key
 */
static unsigned tab_lower(const struct alloc_table *t, uint64_t key)
{
	unsigned lo = 0, hi = t->n;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (t->v[mid].key <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;		/* first entry with key > addr */
}

/* Entry containing addr, or NULL. */
static struct alloc *tab_find(struct alloc_table *t, uint64_t addr)
{
	unsigned i = tab_lower(t, addr);

	if (!i)
		return NULL;
	if (addr - t->v[i - 1].key < t->v[i - 1].size)
		return &t->v[i - 1];
	return NULL;
}

static bool tab_overlaps(struct alloc_table *t, uint64_t key, uint64_t size)
{
	unsigned i = tab_lower(t, key);

	if (i && t->v[i - 1].key + t->v[i - 1].size > key)
		return true;
	if (i < t->n && t->v[i].key < key + size)
		return true;
	return false;
}

/* Caller holds dev->lock; t->lock is taken here (npu_internal.h). */
static int tab_insert(struct alloc_table *t, const struct alloc *a)
{
	unsigned i;

	pthread_rwlock_wrlock(&t->lock);
	if (t->n == t->cap) {
		unsigned ncap = t->cap ? t->cap * 2 : 64;
		struct alloc *nv = realloc(t->v, ncap * sizeof(*nv));

		if (!nv) {
			pthread_rwlock_unlock(&t->lock);
			return -1;
		}
		t->v = nv;
		t->cap = ncap;
	}
	i = tab_lower(t, a->key);
	memmove(&t->v[i + 1], &t->v[i], (t->n - i) * sizeof(*a));
	t->v[i] = *a;
	t->n++;
	pthread_rwlock_unlock(&t->lock);
	return 0;
}

static void tab_remove(struct alloc_table *t, struct alloc *a)
{
	unsigned i = (unsigned)(a - t->v);

	pthread_rwlock_wrlock(&t->lock);
	memmove(&t->v[i], &t->v[i + 1], (t->n - i - 1) * sizeof(*a));
	t->n--;
	pthread_rwlock_unlock(&t->lock);
}

static void gem_close(struct device *dev, uint32_t handle)
{
	struct drm_gem_close c = { .handle = handle };

	drmIoctl(dev->fd, DRM_IOCTL_GEM_CLOSE, &c);
}

/* ------------------------------------------------------------------------
 * Allocation
 */
npu_status_t npu_malloc(void **devptr, size_t size)
{
	struct device *dev;
	struct drm_npu_bo_create c;
	struct alloc a;
	npu_status_t st;

	if (!devptr)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "devptr is NULL");
	st = npu_cur_dev(&dev);
	if (st)
		return st;
	if (!size) {
		*devptr = NULL;
		return NPU_SUCCESS;
	}
	if (size > dev->prop.devmem_size || size > UINT64_MAX - PAGE)
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY,
				"%zu bytes exceed device memory (%llu)%s", size,
				(unsigned long long)dev->prop.devmem_size,
				DEVMEM_OPTION_HINT);
	memset(&c, 0, sizeof(c));
	c.size = (size + PAGE - 1) & ~(PAGE - 1);
	c.flags = DRM_NPU_BO_DEVMEM;
	if (drmIoctl(dev->fd, DRM_IOCTL_NPU_BO_CREATE, &c))
		return npu_fail(errno == ENOMEM || errno == ENOSPC || errno == EINVAL ?
				NPU_ERROR_OUT_OF_MEMORY : NPU_ERROR_OS,
				"BO_CREATE(devmem, %zu): %s (device memory %llu MiB%s)",
				size, npu_strerror(errno),
				(unsigned long long)(dev->prop.devmem_size >> 20),
				DEVMEM_OPTION_HINT);
	memset(&a, 0, sizeof(a));
	a.key = c.va;
	a.size = size;
	a.va = c.va;
	a.handle = c.handle;
	pthread_mutex_lock(&dev->lock);
	if (tab_insert(&dev->dmem, &a)) {
		pthread_mutex_unlock(&dev->lock);
		gem_close(dev, c.handle);
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "allocation table");
	}
	pthread_mutex_unlock(&dev->lock);
	*devptr = (void *)(uintptr_t)c.va;
	return NPU_SUCCESS;
}

int npu_mem_protect(struct device *dev, void *devptr, uint64_t size)
{
	struct drm_npu_bo_protect p;
	struct alloc *a;

	memset(&p, 0, sizeof(p));
	pthread_mutex_lock(&dev->lock);
	a = tab_find(&dev->dmem, (uintptr_t)devptr);
	if (!a || a->key != (uintptr_t)devptr || size > a->size) {
		pthread_mutex_unlock(&dev->lock);
		errno = EINVAL;
		return -1;
	}
	p.handle = a->handle;
	pthread_mutex_unlock(&dev->lock);
	p.flags = DRM_NPU_BO_PROTECT_READ_ONLY;
	p.size = size;
	return drmIoctl(dev->fd, DRM_IOCTL_NPU_BO_PROTECT, &p) ? -1 : 0;
}

/* Remove the entry with key ptr from tab (user == NULL: allocations;
 * otherwise registrations), wait for the device, release it. */
static npu_status_t release(struct alloc_table *(*which)(struct device *),
			    void *ptr, bool registered, const char *what)
{
	struct device *dev;
	struct alloc *e, a;
	npu_status_t st;

	if (!ptr)
		return NPU_SUCCESS;
	st = npu_cur_dev(&dev);
	if (st)
		return st;
	pthread_mutex_lock(&dev->lock);
	e = tab_find(which(dev), (uintptr_t)ptr);
	if (!e || e->key != (uintptr_t)ptr || (registered != (e->user != NULL))) {
		pthread_mutex_unlock(&dev->lock);
		return npu_fail(registered ? NPU_ERROR_NOT_MAPPED :
				NPU_ERROR_INVALID_POINTER,
				"%p is not a pointer returned by %s", ptr, what);
	}
	a = *e;
	tab_remove(which(dev), e);
	npu_dev_sync_locked(dev);	/* as cudaFree: wait for the device */
	pthread_mutex_unlock(&dev->lock);
	npu_host_bo_free(dev, a.handle, a.map, a.map_size);
	return NPU_SUCCESS;
}

static struct alloc_table *dtab(struct device *d) { return &d->dmem; }
static struct alloc_table *htab(struct device *d) { return &d->hmem; }

npu_status_t npu_free(void *devptr)
{
	return release(dtab, devptr, false, "npu_malloc");
}

npu_status_t npu_host_alloc(void **ptr, size_t size, unsigned int flags)
{
	struct device *dev;
	struct alloc a;
	npu_status_t st;
	void *map;
	int r;

	if (!ptr)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "ptr is NULL");
	if (flags & ~(NPU_HOST_ALLOC_PORTABLE | NPU_HOST_ALLOC_MAPPED))
		return npu_fail(NPU_ERROR_INVALID_VALUE, "unknown flags 0x%x", flags);
	st = npu_cur_dev(&dev);
	if (st)
		return st;
	if (!size) {
		*ptr = NULL;
		return NPU_SUCCESS;
	}
	if (size > UINT64_MAX / 2)
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "%zu bytes", size);
	memset(&a, 0, sizeof(a));
	a.map_size = (size + PAGE - 1) & ~(PAGE - 1);
	r = npu_host_bo(dev, a.map_size, &a.handle, &a.va, &map);
	if (r)
		return npu_fail(r == -ENOMEM || r == -EINVAL || r == -ENOSPC ?
				NPU_ERROR_OUT_OF_MEMORY : NPU_ERROR_OS,
				"pinned host BO of %zu bytes: %s%s", size,
				npu_strerror(-r), npu_pin_hint(-r));
	a.map = map;
	a.key = (uintptr_t)map;
	a.size = size;
	pthread_mutex_lock(&dev->lock);
	r = tab_insert(&dev->hmem, &a);
	pthread_mutex_unlock(&dev->lock);
	if (r) {
		npu_host_bo_free(dev, a.handle, map, a.map_size);
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "allocation table");
	}
	*ptr = map;
	return NPU_SUCCESS;
}

npu_status_t npu_host_free(void *ptr)
{
	return release(htab, ptr, false, "npu_host_alloc");
}

npu_status_t npu_host_register(void *ptr, size_t size, unsigned int flags)
{
	struct device *dev;
	struct drm_npu_userptr u;
	struct alloc a;
	uint64_t base, end, p = (uintptr_t)ptr;
	npu_status_t st;

	if (!ptr || !size)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "NULL pointer or zero size");
	if (flags & ~NPU_HOST_REGISTER_READ_ONLY)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "unknown flags 0x%x", flags);
	if (p + size < p || p + size > UINT64_MAX - PAGE)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "range overflows");
	st = npu_cur_dev(&dev);
	if (st)
		return st;
	if (!(dev->prop.features & DRM_NPU_FEATURE_USERPTR))
		return npu_fail(NPU_ERROR_NOT_SUPPORTED, "driver has no USERPTR");
	base = p & ~(PAGE - 1);
	end = (p + size + PAGE - 1) & ~(PAGE - 1);
	pthread_mutex_lock(&dev->lock);
	if (tab_overlaps(&dev->hmem, p, size)) {
		pthread_mutex_unlock(&dev->lock);
		return npu_fail(NPU_ERROR_ALREADY_MAPPED,
				"[%p, +%zu) overlaps registered or pinned memory",
				ptr, size);
	}
	memset(&u, 0, sizeof(u));
	u.addr = base;
	u.size = end - base;
	u.flags = flags & NPU_HOST_REGISTER_READ_ONLY ? DRM_NPU_USERPTR_READ_ONLY : 0;
	if (drmIoctl(dev->fd, DRM_IOCTL_NPU_USERPTR, &u)) {
		int e = errno;

		pthread_mutex_unlock(&dev->lock);
		return npu_fail(e == ENOMEM ? NPU_ERROR_OUT_OF_MEMORY :
				e == EFAULT || e == EINVAL ? NPU_ERROR_INVALID_VALUE :
				NPU_ERROR_OS, "USERPTR [%p, +%zu): %s%s", ptr, size,
				npu_strerror(e), npu_pin_hint(e));
	}
	memset(&a, 0, sizeof(a));
	a.key = p;
	a.size = size;
	a.va = u.va + (p - base);
	a.handle = u.handle;
	a.user = ptr;
	if (tab_insert(&dev->hmem, &a)) {
		pthread_mutex_unlock(&dev->lock);
		gem_close(dev, u.handle);
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "allocation table");
	}
	pthread_mutex_unlock(&dev->lock);
	return NPU_SUCCESS;
}

npu_status_t npu_host_unregister(void *ptr)
{
	if (!ptr)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "ptr is NULL");
	return release(htab, ptr, true, "npu_host_register");
}

/* ------------------------------------------------------------------------
 * PRIME sharing of pinned memory
 */
npu_status_t npu_mem_export_fd(void *ptr, int *fd)
{
	struct device *dev;
	struct alloc *a;
	npu_status_t st;
	uint32_t handle;
	bool pinned;

	if (!ptr || !fd)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "NULL pointer or fd");
	st = npu_cur_dev(&dev);
	if (st)
		return st;
	pthread_mutex_lock(&dev->lock);
	a = tab_find(&dev->dmem, (uintptr_t)ptr);
	if (a && a->key == (uintptr_t)ptr) {
		pthread_mutex_unlock(&dev->lock);
		return npu_fail(NPU_ERROR_NOT_SUPPORTED,
				"device memory cannot be exported by this driver");
	}
	a = tab_find(&dev->hmem, (uintptr_t)ptr);
	if (!a || a->key != (uintptr_t)ptr) {
		pthread_mutex_unlock(&dev->lock);
		return npu_fail(NPU_ERROR_INVALID_POINTER,
				"%p is not a pointer returned by npu_host_alloc", ptr);
	}
	pinned = a->map != NULL;
	handle = a->handle;
	pthread_mutex_unlock(&dev->lock);
	if (!pinned)
		return npu_fail(NPU_ERROR_NOT_SUPPORTED,
				"registered memory cannot be exported by this driver");
	if (drmPrimeHandleToFD(dev->fd, handle, DRM_CLOEXEC | DRM_RDWR, fd))
		return npu_fail(errno == EOPNOTSUPP ? NPU_ERROR_NOT_SUPPORTED :
				NPU_ERROR_OS, "drmPrimeHandleToFD: %s", npu_strerror(errno));
	return NPU_SUCCESS;
}

npu_status_t npu_mem_import_fd(int fd, void **ptr, size_t *size)
{
	struct device *dev;
	struct drm_npu_bo_info info;
	struct alloc a;
	npu_status_t st;
	uint32_t handle;
	unsigned i;
	void *map;

	if (fd < 0 || !ptr || !size)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "bad fd or NULL output");
	st = npu_cur_dev(&dev);
	if (st)
		return st;
	pthread_mutex_lock(&dev->lock);
	if (drmPrimeFDToHandle(dev->fd, fd, &handle)) {
		pthread_mutex_unlock(&dev->lock);
		return npu_fail(NPU_ERROR_INVALID_VALUE, "fd %d is not a dma-buf "
				"this device can import: %s", fd, npu_strerror(errno));
	}
	for (i = 0; i < dev->hmem.n; i++)
		if (dev->hmem.v[i].handle == handle) {
			void *p = (void *)(uintptr_t)dev->hmem.v[i].key;

			pthread_mutex_unlock(&dev->lock);
			return npu_fail(NPU_ERROR_ALREADY_MAPPED,
					"the buffer is already mapped at %p", p);
		}
	memset(&info, 0, sizeof(info));
	info.handle = handle;
	if (drmIoctl(dev->fd, DRM_IOCTL_NPU_BO_INFO, &info) ||
	    (info.flags & DRM_NPU_BO_DEVMEM) || !info.size) {
		gem_close(dev, handle);
		pthread_mutex_unlock(&dev->lock);
		return npu_fail(NPU_ERROR_NOT_SUPPORTED,
				"imported buffer cannot be mapped: %s",
				npu_strerror(errno));
	}
	map = mmap(NULL, info.size, PROT_READ | PROT_WRITE, MAP_SHARED, dev->fd,
		   (off_t)info.mmap_offset);
	if (map == MAP_FAILED) {
		int e = errno;

		gem_close(dev, handle);
		pthread_mutex_unlock(&dev->lock);
		return npu_fail(NPU_ERROR_OS, "mmap of imported buffer: %s",
				npu_strerror(e));
	}
	if (npu_host_map_add(dev, map, info.size)) {	/* for teardown */
		munmap(map, info.size);
		gem_close(dev, handle);
		pthread_mutex_unlock(&dev->lock);
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "mapping table");
	}
	memset(&a, 0, sizeof(a));
	a.key = (uintptr_t)map;
	a.size = info.size;
	a.va = info.va;
	a.handle = handle;
	a.map = map;
	a.map_size = info.size;
	if (tab_insert(&dev->hmem, &a)) {
		npu_host_bo_free(dev, handle, map, info.size);
		pthread_mutex_unlock(&dev->lock);
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "allocation table");
	}
	pthread_mutex_unlock(&dev->lock);
	*ptr = map;
	*size = info.size;
	return NPU_SUCCESS;
}

/* ------------------------------------------------------------------------
 * Pointer classification
 */
enum { LOC_PAGEABLE, LOC_PINNED, LOC_DEVICE };

struct loc {
	int kind;
	uint64_t va;
	uint32_t handle;
};

/* The pinned range whose device addresses hold va, or NULL. Pinned
 * memory is keyed by its host address, so this is a scan; it runs only for
 * addresses inside the device window, which a PIE program's own memory
 * never is. */
static struct alloc *pinned_by_va(struct device *dev, uint64_t va)
{
	unsigned i;

	for (i = 0; i < dev->hmem.n; i++) {
		struct alloc *a = &dev->hmem.v[i];

		if (va - a->va < a->size)
			return a;
	}
	return NULL;
}

/* Can this process read the byte at p? One system call that fails with
 * EFAULT for unmapped and PROT_NONE pages (a sanitizer's shadow gap lies
 * inside the device window); where process_vm_readv is not allowed, fall
 * back to "is the page mapped" (mincore). */
static bool host_readable(uint64_t p)
{
	unsigned char byte, v;
	struct iovec local = { &byte, 1 }, remote = { (void *)(uintptr_t)p, 1 };

	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1)
		return true;
	if (errno == EFAULT)
		return false;
	return !(mincore((void *)(uintptr_t)(p & ~(PAGE - 1)), 1, &v) &&
		 errno == ENOMEM);
}

/*
 * Where is [ptr, ptr + n)? want: -1 infer (NPU_MEMCPY_DEFAULT), 0 host,
 * 1 device. The rule (npu.h, NPU_MEMCPY_DEFAULT), in order:
 *  1. inside a live npu_malloc() allocation: device memory;
 *  2. inside a live pinned range (host address): pinned host memory;
 *  3. the device address of a live pinned range: that pinned memory
 *     (like 1, before any look at the host's mappings);
 *  4. inside the device VA window and not readable by the host: an error
 *     (freed or never allocated), not a copy that would fault;
 *  5. anything else: pageable host memory.
 * An explicit host side skips 1 and 3, an explicit device side accepts
 * only 1 and 3. Caller holds dev->lock.
 */
static npu_status_t classify(struct device *dev, const void *ptr, size_t n,
			     int want, struct loc *l, const char *what)
{
	uint64_t p = (uintptr_t)ptr;
	bool in_window;
	struct alloc *a;

	if (!ptr)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "%s is NULL", what);
	if (p + n < p)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "%s range overflows", what);
	in_window = p >= dev->va_lo && p < dev->va_hi;
	a = want != 0 ? tab_find(&dev->dmem, p) : NULL;
	if (a) {
		if (p + n > a->key + a->size)
			return npu_fail(NPU_ERROR_INVALID_VALUE,
					"%s [%p, +%zu) runs past the end of its "
					"%llu-byte allocation", what, ptr, n,
					(unsigned long long)a->size);
		l->kind = LOC_DEVICE;
		l->va = a->va + (p - a->key);
		l->handle = a->handle;
		return NPU_SUCCESS;
	}
	a = want != 1 ? tab_find(&dev->hmem, p) : NULL;
	if (!a && want != 0 && in_window) {
		a = pinned_by_va(dev, p);
		if (a) {
			if (p + n > a->va + a->size)
				return npu_fail(NPU_ERROR_INVALID_VALUE,
						"%s [%p, +%zu) runs past the end of "
						"its pinned range's device addresses",
						what, ptr, n);
			l->kind = LOC_PINNED;
			l->va = p;
			l->handle = a->handle;
			return NPU_SUCCESS;
		}
	}
	if (want == 1)
		return npu_fail(NPU_ERROR_INVALID_POINTER,
				"%s %p is not device memory from npu_malloc "
				"(nor pinned memory's device address)", what, ptr);
	if (a) {
		if (p + n > a->key + a->size)
			return npu_fail(NPU_ERROR_INVALID_VALUE,
					"%s [%p, +%zu) runs past the end of its "
					"pinned range", what, ptr, n);
		l->kind = LOC_PINNED;
		l->va = a->va + (p - a->key);
		l->handle = a->handle;
		return NPU_SUCCESS;
	}
	if (in_window && !host_readable(p))
		return npu_fail(NPU_ERROR_INVALID_VALUE,
				"%s %p is a device address outside every live "
				"allocation (freed?) and not host memory", what, ptr);
	l->kind = LOC_PAGEABLE;
	l->va = 0;
	l->handle = 0;
	return NPU_SUCCESS;
}

/* The allocation of t holding p (under t's read lock): true if there is
 * one; *ok if [p, p + n) lies in it, then l says where (kind). */
static bool table_locate(struct alloc_table *t, uint64_t p, uint64_t n,
			 int kind, struct loc *l, bool *ok)
{
	struct alloc *a;

	pthread_rwlock_rdlock(&t->lock);
	a = tab_find(t, p);
	*ok = a && p + n <= a->key + a->size;
	if (*ok) {
		l->kind = kind;
		l->va = a->va + (p - a->key);
		l->handle = a->handle;
	}
	pthread_rwlock_unlock(&t->lock);
	return a != NULL;
}

/* classify() of device memory (want 1), pinned host memory by its host
 * address (want 0) or either (-1) without dev->lock, under the tables'
 * read locks: for the copy and memset fast path. Anything else (pageable
 * memory, a pinned range's device address, a bad pointer) is left to
 * classify() under dev->lock, which also says what is wrong: false. */
static bool classify_shared(struct device *dev, const void *ptr, size_t n,
			    int want, struct loc *l)
{
	uint64_t p = (uintptr_t)ptr;
	bool ok = false;

	if (!ptr || p + n < p)
		return false;
	if (want != 0 && table_locate(&dev->dmem, p, n, LOC_DEVICE, l, &ok))
		return ok;
	if (want == 1)
		return false;
	table_locate(&dev->hmem, p, n, LOC_PINNED, l, &ok);
	return ok;
}

npu_status_t npu_host_get_device_pointer(void **devptr, void *host_ptr,
					 unsigned int flags)
{
	struct device *dev;
	struct loc l;
	npu_status_t st;

	if (!devptr)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "devptr is NULL");
	if (flags)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "unknown flags 0x%x", flags);
	st = npu_cur_dev(&dev);
	if (st)
		return st;
	pthread_mutex_lock(&dev->lock);
	st = classify(dev, host_ptr, 1, 0, &l, "host pointer");
	if (!st && l.kind != LOC_PINNED)
		st = npu_fail(NPU_ERROR_INVALID_VALUE, "%p is not pinned host "
			      "memory (npu_host_alloc / npu_host_register)",
			      host_ptr);
	pthread_mutex_unlock(&dev->lock);
	if (!st)
		*devptr = (void *)(uintptr_t)l.va;
	return st;
}

/* ------------------------------------------------------------------------
 * Staging (bounce) buffers for pageable memory. Caller holds dev->lock.
 */
static struct staging *staging_get(struct device *dev)
{
	static unsigned victim;

	for (;;) {
		unsigned i;

		for (i = 0; i < dev->nstaging; i++) {
			struct staging *b = &dev->staging[i];

			if (b->point == UINT64_MAX)
				continue;	/* held by a thread */
			if (!b->tl || npu_tl_done(dev, b->tl, b->point)) {
				if (b->tl)
					npu_tl_put(dev, b->tl);
				b->tl = NULL;
				b->point = UINT64_MAX;
				return b;
			}
		}
		if (dev->nstaging < STAGING_MAX) {
			struct staging *b = &dev->staging[dev->nstaging];

			if (npu_host_bo(dev, STAGING_SIZE, &b->handle, &b->va, &b->map))
				return NULL;
			dev->nstaging++;
			b->tl = NULL;
			b->point = UINT64_MAX;
			return b;
		}
		for (i = 0; i < dev->nstaging; i++) {
			struct staging *b = &dev->staging[(victim + i) % dev->nstaging];

			if (b->point != UINT64_MAX && b->tl) {
				struct tl *t = b->tl;
				uint64_t pt = b->point;

				victim++;
				t->refs++;
				npu_tl_wait_locked(dev, t, pt);
				npu_tl_put(dev, t);
				break;
			}
		}
		if (i == dev->nstaging) {	/* all held by other threads */
			pthread_mutex_unlock(&dev->lock);
			usleep(1000);
			pthread_mutex_lock(&dev->lock);
		}
	}
}

static void staging_put(struct staging *b, struct tl *t, uint64_t point)
{
	if (t)
		t->refs++;
	b->tl = t;
	b->point = t ? point : 0;
}

/* ------------------------------------------------------------------------
 * Copy jobs
 */
static void add_bo(struct jobctx *jc, const struct loc *l)
{
	if (l->kind != LOC_PAGEABLE && jc->nbo < 2 &&
	    (jc->nbo == 0 || jc->bo[0] != l->handle))
		jc->bo[jc->nbo++] = l->handle;
}

/* Submit a copy or memset job: on a user-queue stream, to its copy-class
 * queue (made on its first copy). */
static npu_status_t copy_submit(struct device *dev, struct jobctx *jc,
				uint64_t *point)
{
	npu_stream_uq_copy(dev, jc->s);
	return npu_job_submit(dev, jc, Q_COPY, NULL, 0, point);
}

/* One copy job between device-reachable locations. */
static npu_status_t copy_job(struct device *dev, struct npu_stream *s,
			     const struct loc *d, const struct loc *sr,
			     uint64_t n, uint64_t *point)
{
	struct jobctx jc;
	npu_status_t st = npu_job_begin(dev, s, NPU_CMD_COPY_BYTES, &jc);

	if (st)
		return st;
	npu_cmd_copy(&jc.w, sr->va, d->va, n);
	add_bo(&jc, d);
	add_bo(&jc, sr);
	return copy_submit(dev, &jc, point);
}

/*
 * Which side of a copy must be device memory, from its kind: 1 device,
 * 0 host, -1 either (NPU_MEMCPY_DEFAULT infers it from the pointer).
 */
npu_status_t npu_copy_kind_sides(npu_memcpy_kind_t kind, int *dst_dev,
				 int *src_dev)
{
	switch (kind) {
	case NPU_MEMCPY_HOST_TO_HOST:	*dst_dev = 0;  *src_dev = 0;  break;
	case NPU_MEMCPY_HOST_TO_DEVICE:	*dst_dev = 1;  *src_dev = 0;  break;
	case NPU_MEMCPY_DEVICE_TO_HOST:	*dst_dev = 0;  *src_dev = 1;  break;
	case NPU_MEMCPY_DEVICE_TO_DEVICE: *dst_dev = 1; *src_dev = 1; break;
	case NPU_MEMCPY_DEFAULT:	*dst_dev = -1; *src_dev = -1; break;
	default:
		return npu_fail(NPU_ERROR_INVALID_VALUE, "unknown copy kind %d",
				(int)kind);
	}
	return NPU_SUCCESS;
}

/* Enqueue a copy of n bytes on s; sync: wait for completion (CUDA's
 * synchronous cudaMemcpy rules). Caller holds dev->lock; it is dropped
 * while the CPU moves bytes (host to host, bounce buffers) and while
 * waiting. */
static npu_status_t do_copy(struct device *dev, struct npu_stream *s, void *dst,
			    const void *src, size_t n, npu_memcpy_kind_t kind,
			    bool sync)
{
	struct loc dl, sl;
	npu_status_t st;
	int wd, ws;
	uint64_t point = 0;

	st = npu_copy_kind_sides(kind, &wd, &ws);
	if (st)
		return st;
	st = classify(dev, dst, n, wd, &dl, "destination");
	if (!st)
		st = classify(dev, src, n, ws, &sl, "source");
	if (st)
		return st;
	if (dev->sticky)
		return npu_fail_sticky(dev, dev->sticky);
	if (!n)
		return NPU_SUCCESS;

	if (dl.kind == LOC_PAGEABLE && sl.kind == LOC_PAGEABLE) {
		/* host to host: by the CPU, after the stream's earlier work,
		 * without dev->lock: the bytes are the caller's alone, and
		 * other threads need not wait for them */
		st = npu_stream_sync_locked(dev, s);
		if (!st) {
			pthread_mutex_unlock(&dev->lock);
			memmove(dst, src, n);
			pthread_mutex_lock(&dev->lock);
		}
		return st;
	}
	if (dl.kind != LOC_PAGEABLE && sl.kind != LOC_PAGEABLE) {
		st = copy_job(dev, s, &dl, &sl, n, &point);
		if (st)
			return st;
		if (sync && !(dl.kind == LOC_DEVICE && sl.kind == LOC_DEVICE))
			return npu_stream_sync_locked(dev, s);
		return NPU_SUCCESS;
	}
	if (sl.kind == LOC_PAGEABLE) {
		/* from pageable memory: inline or through bounce buffers */
		if (n <= INLINE_COPY_MAX) {
			struct jobctx jc;

			uint64_t iva;

			st = npu_job_begin(dev, s, NPU_CMD_INLINE_BYTES((uint32_t)n) +
					   NPU_CMD_COPY_BYTES, &jc);
			if (st)
				return st;
			if (!npu_cmd_inline(&jc.w, src, (uint32_t)n, &iva))
				npu_cmd_copy(&jc.w, iva, dl.va, n);
			add_bo(&jc, &dl);
			st = copy_submit(dev, &jc, &point);
		} else {
			size_t off;

			for (off = 0; off < n && !st; off += STAGING_SIZE) {
				size_t c = n - off < STAGING_SIZE ? n - off : STAGING_SIZE;
				struct staging *b = staging_get(dev);
				struct loc bl = { LOC_PINNED, 0, 0 }, d2 = dl;

				if (!b)
					return npu_fail(NPU_ERROR_OUT_OF_MEMORY,
							"staging buffer");
				/* b is this thread's (staging_get) until
				 * staging_put: fill it without dev->lock; the
				 * job is queued after, so stream order is
				 * the caller's order */
				pthread_mutex_unlock(&dev->lock);
				memcpy(b->map, (const char *)src + off, c);
				pthread_mutex_lock(&dev->lock);
				bl.va = b->va;
				bl.handle = b->handle;
				d2.va += off;
				st = copy_job(dev, s, &d2, &bl, c, &point);
				staging_put(b, st ? NULL : s->tl, point);
			}
		}
		if (st)
			return st;
		return sync ? npu_stream_sync_locked(dev, s) : NPU_SUCCESS;
	}
	/* to pageable memory: through bounce buffers, always synchronous */
	{
		size_t off;

		for (off = 0; off < n; off += STAGING_SIZE) {
			size_t c = n - off < STAGING_SIZE ? n - off : STAGING_SIZE;
			struct staging *b = staging_get(dev);
			struct loc bl = { LOC_PINNED, 0, 0 }, s2 = sl;

			if (!b)
				return npu_fail(NPU_ERROR_OUT_OF_MEMORY,
						"staging buffer");
			bl.va = b->va;
			bl.handle = b->handle;
			s2.va += off;
			st = copy_job(dev, s, &bl, &s2, c, &point);
			if (!st)
				st = npu_stream_sync_locked(dev, s);
			if (!st) {	/* b is still this thread's: drain it
					 * without dev->lock */
				pthread_mutex_unlock(&dev->lock);
				memcpy((char *)dst + off, b->map, c);
				pthread_mutex_lock(&dev->lock);
			}
			staging_put(b, NULL, 0);
			if (st)
				return st;
		}
	}
	return NPU_SUCCESS;
}

npu_status_t npu_memcpy_async(void *dst, const void *src, size_t count,
			      npu_memcpy_kind_t kind, npu_stream_t stream)
{
	struct device *dev;
	struct npu_stream *s;
	struct loc dl, sl;
	struct uq_fast fq;
	npu_status_t st;
	int wd, ws;

	if (npu_capturing()) {	/* stream capture hook (npu_core.h) */
		npu_status_t cst;

		if (npu_capture()->memcpy(stream, dst, src, count, kind, false, &cst))
			return cst;
	}
	st = npu_get_stream(stream, &dev, &s);
	if (st)
		return st;
	/* between device and pinned memory, on a user-queue stream: one
	 * COPY packet under the stream's lock alone (npu_internal.h) */
	if (count && kind >= NPU_MEMCPY_HOST_TO_HOST && kind <= NPU_MEMCPY_DEFAULT &&
	    !npu_copy_kind_sides(kind, &wd, &ws) &&
	    classify_shared(dev, dst, count, wd, &dl) &&
	    classify_shared(dev, src, count, ws, &sl) &&
	    npu_uq_fast_begin(dev, s, Q_COPY, NPU_CMD_COPY_BYTES, &fq)) {
		npu_cmd_copy(&fq.w, sl.va, dl.va, count);
		return npu_uq_fast_end(dev, &fq);
	}
	pthread_mutex_lock(&dev->lock);
	st = do_copy(dev, s, dst, src, count, kind, false);
	pthread_mutex_unlock(&dev->lock);
	return st;
}

npu_status_t npu_memcpy(void *dst, const void *src, size_t count,
			npu_memcpy_kind_t kind)
{
	struct device *dev;
	struct npu_stream *s;
	npu_status_t st;

	if (npu_capturing()) {	/* stream capture hook (npu_core.h) */
		npu_status_t cst;

		if (npu_capture()->memcpy(NULL, dst, src, count, kind, true, &cst))
			return cst;
	}
	st = npu_get_stream(NULL, &dev, &s);
	if (st)
		return st;
	pthread_mutex_lock(&dev->lock);
	st = do_copy(dev, s, dst, src, count, kind, true);
	pthread_mutex_unlock(&dev->lock);
	npu_printf_output();
	return st;
}

static npu_status_t do_memset(npu_stream_t stream, void *devptr, int value,
			      size_t n, bool sync)
{
	struct device *dev;
	struct npu_stream *s;
	struct jobctx jc;
	struct uq_fast fq;
	struct loc l;
	npu_status_t st;

	if (npu_capturing()) {	/* stream capture hook (npu_core.h) */
		npu_status_t cst;

		if (npu_capture()->memset(stream, devptr, value, n, sync, &cst))
			return cst;
	}
	st = npu_get_stream(stream, &dev, &s);
	if (st)
		return st;
	/* async on a user-queue stream: one FILL packet under the stream's
	 * lock alone (npu_internal.h) */
	if (!sync && n && classify_shared(dev, devptr, n, 1, &l) &&
	    npu_uq_fast_begin(dev, s, Q_COPY, NPU_CMD_MEMSET_BYTES, &fq)) {
		npu_cmd_memset(&fq.w, l.va, (uint8_t)value, n);
		return npu_uq_fast_end(dev, &fq);
	}
	pthread_mutex_lock(&dev->lock);
	st = classify(dev, devptr, n, 1, &l, "destination");
	if (st)
		goto out;
	if (dev->sticky) {
		st = npu_fail_sticky(dev, dev->sticky);
		goto out;
	}
	if (!n)
		goto out;
	st = npu_job_begin(dev, s, NPU_CMD_MEMSET_BYTES, &jc);
	if (st)
		goto out;
	npu_cmd_memset(&jc.w, l.va, (uint8_t)value, n);
	add_bo(&jc, &l);
	st = copy_submit(dev, &jc, NULL);
	if (!st && sync)
		st = npu_stream_sync_locked(dev, s);
out:
	pthread_mutex_unlock(&dev->lock);
	return st;
}

npu_status_t npu_memset(void *devptr, int value, size_t count)
{
	return do_memset(NULL, devptr, value, count, true);
}

npu_status_t npu_memset_async(void *devptr, int value, size_t count,
			      npu_stream_t stream)
{
	return do_memset(stream, devptr, value, count, false);
}

/* ------------------------------------------------------------------------
 * Stream memory operations: one SEM_WAIT or SEM_SIGNAL packet, on the
 * stream's current queue so that the work behind a wait is already on the
 * same ring (a job on the other queue would reach its ring only after the
 * wait's fence).
 */
static npu_status_t value_op(npu_stream_t stream, uint32_t *addr,
			     uint32_t value, unsigned int flags, uint32_t op)
{
	struct device *dev;
	struct npu_stream *s;
	struct jobctx jc;
	struct loc l;
	npu_status_t st;

	if (npu_capturing() &&	/* stream capture hook (npu_core.h) */
	    npu_capture()->uncaptured(stream, false, &st))
		return st;
	st = npu_get_stream(stream, &dev, &s);
	if (st)
		return st;
	if (flags)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "unknown flags 0x%x", flags);
	if ((uintptr_t)addr & 3)
		return npu_fail(NPU_ERROR_INVALID_VALUE,
				"address %p is not 4-byte aligned", (void *)addr);
	pthread_mutex_lock(&dev->lock);
	st = classify(dev, addr, 4, -1, &l, "address");
	if (!st && l.kind == LOC_PAGEABLE)
		st = npu_fail(NPU_ERROR_INVALID_POINTER,
			      "address %p is neither device nor pinned host "
			      "memory", (void *)addr);
	if (!st && dev->sticky)
		st = npu_fail_sticky(dev, dev->sticky);
	if (!st)
		st = npu_job_begin(dev, s, NPU_CMD_SEM_BYTES, &jc);
	if (!st) {
		if (op == NPU_OP_SEM_WAIT)
			npu_cmd_sem_wait(&jc.w, l.va, value);
		else
			npu_cmd_sem_signal(&jc.w, l.va, value);
		add_bo(&jc, &l);
		st = npu_job_submit(dev, &jc, s->last_queue == Q_NONE ?
				    Q_COMPUTE : s->last_queue, NULL, 0, NULL);
	}
	pthread_mutex_unlock(&dev->lock);
	return st;
}

npu_status_t npu_stream_wait_value32(npu_stream_t stream, uint32_t *addr,
				     uint32_t value, unsigned int flags)
{
	return value_op(stream, addr, value, flags, NPU_OP_SEM_WAIT);
}

npu_status_t npu_stream_write_value32(npu_stream_t stream, uint32_t *addr,
				      uint32_t value, unsigned int flags)
{
	return value_op(stream, addr, value, flags, NPU_OP_SEM_SIGNAL);
}
