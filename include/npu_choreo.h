/* SPDX-License-Identifier: MIT */
/*
 * npu_choreo.h - calling the functions npu-choreo compiles from Choreo
 * __co__ functions (npu-choreo build FILE.co -o FILE.o --header FILE.h).
 *
 * Spanned data is passed as a view of memory the device reaches directly:
 * npu_host_alloc() (mapped pinned memory), npu_host_register(), or
 * npu_malloc() (device memory; host code of the function then must not
 * read it with .at()). A __co__ function
 *
 *   __co__ T foo(stream s0, f32[M] a, int k)
 *
 * becomes
 *
 *   npu_status_t foo(npu_stream_t s0, struct npu_choreo_view a, int k,
 *                    T *ret);
 *
 * (ret only when T is not void; a returned spanned value is a view of
 * memory the function allocated, released with npu_choreo_view_free()).
 * A call with the wrong rank or element type, dimensions that disagree on
 * a bound symbol (M above) or memory the device cannot reach returns
 * NPU_ERROR_INVALID_VALUE, prints FILE.co:LINE: error: ... naming the
 * parameter to stderr and launches nothing.
 */
#ifndef NPU_CHOREO_H
#define NPU_CHOREO_H

#include <stddef.h>

#include <npu.h>
#include "npu_half.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NPU_CHOREO_MAX_RANK	6

/* element types: Choreo's u8 s8 u16 s16 u32 s32 s64 f32 f64 f16 bf16
 * f8_e4m3 f8_e5m2 (these four are their bits: npu_half.h), then u64
 * (added last: the values before it keep their numbers) */
enum npu_choreo_elem {
	NPU_CHOREO_U8,
	NPU_CHOREO_S8,
	NPU_CHOREO_U16,
	NPU_CHOREO_S16,
	NPU_CHOREO_U32,
	NPU_CHOREO_S32,
	NPU_CHOREO_S64,
	NPU_CHOREO_F32,
	NPU_CHOREO_F64,
	NPU_CHOREO_F16,
	NPU_CHOREO_BF16,
	NPU_CHOREO_F8_E4M3,
	NPU_CHOREO_F8_E5M2,
	NPU_CHOREO_U64,
};

/* row-major data of rank dimensions dims[0..rank-1] */
struct npu_choreo_view {
	void *data;
	enum npu_choreo_elem elem;
	unsigned int rank;
	size_t dims[NPU_CHOREO_MAX_RANK];
};

/* Bytes of one element. */
static inline size_t npu_choreo_elem_size(enum npu_choreo_elem elem)
{
	static const unsigned char size[] = { 1, 1, 2, 2, 4, 4, 8, 4, 8, 2, 2, 1, 1, 8 };

	return (unsigned)elem < sizeof(size) ? size[elem] : 0;
}

/* Release the memory of a view returned by a __co__ function (it was
 * allocated with npu_host_alloc); waits for the device first. Takes the
 * view or its address. */
static inline npu_status_t npu_choreo_view_free_ptr(struct npu_choreo_view *view)
{
	npu_status_t st = view->data ? npu_host_free(view->data) : NPU_SUCCESS;

	view->data = NULL;
	return st;
}

static inline npu_status_t npu_choreo_view_free_val(struct npu_choreo_view view)
{
	return npu_choreo_view_free_ptr(&view);
}

#ifndef __cplusplus
#define npu_choreo_view_free(v) _Generic((v), \
	struct npu_choreo_view *: npu_choreo_view_free_ptr, \
	default: npu_choreo_view_free_val)(v)
#else
}
static inline npu_status_t npu_choreo_view_free(npu_choreo_view *v)
{
	return npu_choreo_view_free_ptr(v);
}
static inline npu_status_t npu_choreo_view_free(npu_choreo_view v)
{
	return npu_choreo_view_free_val(v);
}
extern "C" {
#endif

#ifdef __cplusplus
}
#endif

#endif /* NPU_CHOREO_H */
