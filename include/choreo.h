/* SPDX-License-Identifier: MIT */
/*
 * choreo.h - the host-side C++ API of Choreo (Croqtile) programs over
 * libnpu: the C++ `int main()` of a .co file drives its __co__ functions
 * with it, as with Croqtile's own runtime header of the same name.
 *
 *   auto a = choreo::make_spandata<choreo::s32>(2, 3, 64);
 *   a.fill_random(-10, 10);
 *   auto res = ele_add(a.view(), b.view());     // a __co__ function
 *   if (res[i][j] != a[i][j] + b[i][j]) ...
 *   choreo::choreo_assert(ok, "values are not equal.");
 *
 * spanned_data owns row-major elements in mapped pinned memory
 * (npu_host_alloc with NPU_HOST_ALLOC_MAPPED), so kernels reach it
 * directly; spanned_view is a view of such memory (or of any memory the
 * device reaches: npu_host_register, npu_malloc). A __co__ function that
 * returns spanned data hands it back as a spanned_data (npu-choreo
 * declares, for the host program, one C++ function per __co__ function:
 * spanned parameters are spanned_view, streams npu_stream_t; a failed call
 * prints its error and exits with status 1).
 *
 * Elements are indexed one dimension at a time (res[i][j]); an index out
 * of range fails choreo_assert.
 *
 * Croqtile's GPU host programs also call the CUDA runtime for streams,
 * device memory and copies: those few names are declared at the end, as
 * the libnpu calls they correspond to.
 */
#ifndef NPU_CHOREO_HOST_H
#define NPU_CHOREO_HOST_H

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iostream>
#include <random>
#include <type_traits>
#include <utility>

#include <npu.h>
#include <npu/npu_choreo.h>

namespace choreo {

/* Choreo's element type names */
using u8 = uint8_t;
using s8 = int8_t;
using u16 = uint16_t;
using s16 = int16_t;
using u32 = uint32_t;
using s32 = int32_t;
using s64 = int64_t;
using u64 = uint64_t;
using f32 = float;
using f64 = double;

/* f16 (IEEE binary16), bf16 (bfloat16), f8_e4m3 and f8_e5m2 (OCP FP8):
 * their bits in memory, f32 in arithmetic. Made from any number (rounded
 * to nearest even, through f32; the fp8 types saturate at their largest
 * finite value), read as the f32 of the same value, so a[i] + b[i] is the
 * f32 sum and storing it rounds once; printed as the f32. The conversions
 * are npu_half.h's, the device's. */
template <npu_choreo_elem E>
class small_float {
public:
	using storage = typename std::conditional<E == NPU_CHOREO_F16 || E == NPU_CHOREO_BF16,
						  uint16_t, uint8_t>::type;

	small_float() = default;
	template <typename U, typename = typename std::enable_if<
				      std::is_arithmetic<U>::value>::type>
	small_float(U v) : bits_(encode(static_cast<float>(v))) {}
	template <npu_choreo_elem F>
	explicit small_float(small_float<F> v) : bits_(encode(static_cast<float>(v))) {}

	operator float() const
	{
		switch (E) {
		case NPU_CHOREO_F16: return npu_f16_to_f32(bits_);
		case NPU_CHOREO_BF16: return npu_bf16_to_f32(bits_);
		case NPU_CHOREO_F8_E4M3: return npu_f8_e4m3_to_f32((uint8_t)bits_);
		default: return npu_f8_e5m2_to_f32((uint8_t)bits_);
		}
	}

	storage bits() const { return bits_; }
	static small_float from_bits(storage b)
	{
		small_float h;

		h.bits_ = b;
		return h;
	}

private:
	static storage encode(float f)
	{
		switch (E) {
		case NPU_CHOREO_F16: return npu_f16_from_f32(f);
		case NPU_CHOREO_BF16: return npu_bf16_from_f32(f);
		case NPU_CHOREO_F8_E4M3: return npu_f8_e4m3_from_f32(f);
		default: return npu_f8_e5m2_from_f32(f);
		}
	}
	storage bits_ = 0;
};

using f16 = small_float<NPU_CHOREO_F16>;
using bf16 = small_float<NPU_CHOREO_BF16>;
using f8_e4m3 = small_float<NPU_CHOREO_F8_E4M3>;
using f8_e5m2 = small_float<NPU_CHOREO_F8_E5M2>;
using half = f16;
using bfp16 = bf16;

/* integers narrower than a byte (u6, s4, u1, bin1 ...): one a byte, as
 * the device holds them; made from any integer by keeping its low Bits
 * bits (sign-extended when Signed), read as an int */
template <int Bits, bool Signed>
class small_int {
public:
	using storage = typename std::conditional<Signed, int8_t, uint8_t>::type;

	small_int() = default;
	template <typename U, typename = typename std::enable_if<
				      std::is_arithmetic<U>::value>::type>
	small_int(U v) : v_(wrap(static_cast<long long>(v))) {}
	operator int() const { return v_; }

private:
	static storage wrap(long long v)
	{
		unsigned m = (1u << Bits) - 1, b = (unsigned)v & m;

		if (Signed && (b >> (Bits - 1)))
			return (storage)((int)b - (int)(m + 1));
		return (storage)b;
	}
	storage v_ = 0;
};

using u6 = small_int<6, false>;
using s6 = small_int<6, true>;
using u4 = small_int<4, false>;
using s4 = small_int<4, true>;
using u2 = small_int<2, false>;
using s2 = small_int<2, true>;
using u1 = small_int<1, false>;
using bin1 = small_int<1, false>;

template <typename T>
struct is_small_int : std::false_type {};
template <int Bits, bool Signed>
struct is_small_int<small_int<Bits, Signed>> : std::true_type {};

/* Croqtile's named conversions: rounded to nearest even, read exactly */
inline f16 f32_to_f16(float v) { return f16(v); }
inline float f16_to_f32(f16 v) { return static_cast<float>(v); }
inline bf16 f32_to_bf16(float v) { return bf16(v); }
inline float bf16_to_f32(bf16 v) { return static_cast<float>(v); }
template <typename T>
inline float to_f32(T v) { return static_cast<float>(v); }

template <npu_choreo_elem E>
inline std::ostream &operator<<(std::ostream &os, small_float<E> v)
{
	return os << static_cast<float>(v);
}

template <typename T>
struct is_half : std::false_type {};
template <npu_choreo_elem E>
struct is_half<small_float<E>> : std::true_type {};

/* the dimensions of spanned data of rank Rank */
template <size_t Rank>
using mdspan = std::array<size_t, Rank>;

/* Prints FILE:LINE: choreo assertion failed: MSG and aborts when p is
 * false; FILE:LINE default to the caller's. */
inline void choreo_assert(bool p, const char *msg,
			  const char *file = __builtin_FILE(),
			  int line = __builtin_LINE())
{
	if (!p) {
		std::fflush(stdout);
		std::printf("%s:%d: choreo assertion failed: %s\n", file, line, msg);
		std::fflush(stdout);
		std::abort();
	}
}

inline void runtime_check(bool p, const char *msg)
{
	if (!p) {
		std::cout.flush();
		std::cerr << "choreo runtime check failed: " << msg << std::endl;
		std::abort();
	}
}

namespace detail {

template <typename T> struct elem_of;
template <> struct elem_of<u8> { static constexpr npu_choreo_elem value = NPU_CHOREO_U8; };
template <> struct elem_of<s8> { static constexpr npu_choreo_elem value = NPU_CHOREO_S8; };
template <> struct elem_of<u16> { static constexpr npu_choreo_elem value = NPU_CHOREO_U16; };
template <> struct elem_of<s16> { static constexpr npu_choreo_elem value = NPU_CHOREO_S16; };
template <> struct elem_of<u32> { static constexpr npu_choreo_elem value = NPU_CHOREO_U32; };
template <> struct elem_of<s32> { static constexpr npu_choreo_elem value = NPU_CHOREO_S32; };
template <> struct elem_of<s64> { static constexpr npu_choreo_elem value = NPU_CHOREO_S64; };
template <> struct elem_of<u64> { static constexpr npu_choreo_elem value = NPU_CHOREO_U64; };
template <> struct elem_of<f32> { static constexpr npu_choreo_elem value = NPU_CHOREO_F32; };
template <> struct elem_of<f64> { static constexpr npu_choreo_elem value = NPU_CHOREO_F64; };
template <> struct elem_of<f16> { static constexpr npu_choreo_elem value = NPU_CHOREO_F16; };
template <> struct elem_of<bf16> { static constexpr npu_choreo_elem value = NPU_CHOREO_BF16; };
template <> struct elem_of<f8_e4m3> { static constexpr npu_choreo_elem value = NPU_CHOREO_F8_E4M3; };
template <> struct elem_of<f8_e5m2> { static constexpr npu_choreo_elem value = NPU_CHOREO_F8_E5M2; };
template <int Bits, bool Signed> struct elem_of<small_int<Bits, Signed>> {
	static constexpr npu_choreo_elem value = Signed ? NPU_CHOREO_S8 : NPU_CHOREO_U8;
};

template <size_t Rank>
inline size_t count(const mdspan<Rank> &dims)
{
	size_t n = 1;

	for (size_t d : dims)
		n *= d;
	return n;
}

/* a call of a __co__ function that failed ends the program, as a failed
 * CUDA call does in Croqtile's generated host code */
inline void check_call(npu_status_t st, const char *func)
{
	if (st != NPU_SUCCESS) {
		std::cout.flush();
		std::fprintf(stderr, "choreo: %s failed: %s\n", func,
			     npu_status_string(st));
		std::exit(1);
	}
}

/* elements of rank Rank at ptr, dimensions dims[0..Rank-1]: [i] is the
 * element (Rank 1) or the sub-array (Rank > 1) */
template <typename T, size_t Rank>
class elements {
public:
	elements(T *ptr, const size_t *dims) : ptr_(ptr), dims_(dims) {}

	decltype(auto) operator[](long long index) const
	{
		size_t stride = 1;

		choreo_assert(index >= 0 && (size_t)index < dims_[0],
			      "index out of bounds");
		for (size_t k = 1; k < Rank; k++)
			stride *= dims_[k];
		if constexpr (Rank == 1)
			return (ptr_[index]);
		else
			return elements<T, Rank - 1>(ptr_ + index * stride, dims_ + 1);
	}

private:
	T *ptr_;
	const size_t *dims_;
};

/* what spanned_view and spanned_data share: elements, dimensions, fills */
template <typename T, size_t Rank, typename Self>
class span_ops {
public:
	const mdspan<Rank> &shape() const { return self().dims_; }
	size_t rank() const { return Rank; }
	size_t element_count() const { return count<Rank>(self().dims_); }
	size_t bytes() const { return element_count() * sizeof(T); }

	decltype(auto) operator[](long long index) const
	{
		return elements<T, Rank>(self().ptr(), self().dims_.data())[index];
	}

	template <typename U>
	void fill(U value)
	{
		std::fill_n(self().ptr(), element_count(), static_cast<T>(value));
	}

	/* uniform in [lb, ub] */
	template <typename U>
	void fill_random(U lb, U ub)
	{
		static std::mt19937 gen(std::random_device{}());
		T *p = self().ptr();

		if constexpr (std::is_floating_point<T>::value) {
			std::uniform_real_distribution<T> dist((T)lb, (T)ub);

			for (size_t i = 0; i < element_count(); i++)
				p[i] = dist(gen);
		} else if constexpr (is_half<T>::value) {
			/* drawn in f32, rounded to the type */
			std::uniform_real_distribution<float> dist((float)lb, (float)ub);

			for (size_t i = 0; i < element_count(); i++)
				p[i] = T(dist(gen));
		} else if constexpr (is_small_int<T>::value) {
			std::uniform_int_distribution<long long> dist((long long)lb,
								 (long long)ub);

			for (size_t i = 0; i < element_count(); i++)
				p[i] = T(dist(gen));
		} else {
			/* 8-bit types are not distribution types */
			using W = typename std::conditional<std::is_signed<T>::value,
							    long long,
							    unsigned long long>::type;
			std::uniform_int_distribution<W> dist((W)lb, (W)ub);

			for (size_t i = 0; i < element_count(); i++)
				p[i] = (T)dist(gen);
		}
	}

private:
	const Self &self() const { return *static_cast<const Self *>(this); }
	Self &self() { return *static_cast<Self *>(this); }
};

} /* namespace detail */

/* a view of row-major elements the device can reach; copies are views of
 * the same memory */
template <typename T, size_t Rank>
class spanned_view : public detail::span_ops<T, Rank, spanned_view<T, Rank>> {
	friend class detail::span_ops<T, Rank, spanned_view<T, Rank>>;

public:
	spanned_view(T *ptr, const mdspan<Rank> &dims) : ptr_(ptr), dims_(dims) {}

	T *data() const { return ptr_; }

	/* the C interface's view (npu_choreo.h) */
	npu_choreo_view c_view() const
	{
		npu_choreo_view v = {};

		v.data = (void *)ptr_;
		v.elem = detail::elem_of<T>::value;
		v.rank = Rank;
		for (size_t k = 0; k < Rank; k++)
			v.dims[k] = dims_[k];
		return v;
	}

private:
	T *ptr() const { return ptr_; }
	T *ptr_;
	mdspan<Rank> dims_;
};

namespace detail {

/*
 * A view passed to a __co__ function from C++: memory the device reaches
 * (pinned host memory, device memory) goes as it is; other host memory
 * (a stack array under make_spanview, as Croqtile's own programs pass)
 * is staged as Croqtile's GPU back end copies it: into mapped pinned
 * memory before the call, back after it once the device is idle.
 */
template <typename T, size_t Rank>
class staged_view {
public:
	explicit staged_view(const spanned_view<T, Rank> &v) : v_(v)
	{
		size_t bytes = v.bytes();
		npu_status_t prior = npu_peek_last_error();
		char *p = (char *)v.data();
		void *dev, *last;

		if (!bytes || !p)
			return;
		if (npu_host_get_device_pointer(&dev, p, 0) == NPU_SUCCESS &&
		    npu_host_get_device_pointer(&last, p + bytes - 1, 0) == NPU_SUCCESS &&
		    (char *)last == (char *)dev + bytes - 1)
			return;
		/* device memory: libnpu takes an empty memset only there */
		bool on_device = npu_memset_async(p, 0, 0, NULL) == NPU_SUCCESS &&
				 npu_memset_async(p + bytes - 1, 0, 0, NULL) == NPU_SUCCESS;

		/* the probes' failures are not the caller's last error */
		if (prior == NPU_SUCCESS)
			npu_get_last_error();
		if (on_device)
			return;
		check_call(npu_host_alloc(&copy_, bytes, NPU_HOST_ALLOC_MAPPED),
			   "npu_host_alloc");
		std::memcpy(copy_, p, bytes);
	}

	~staged_view()
	{
		if (!copy_)
			return;
		/* .async launches may still write it */
		check_call(npu_device_synchronize(), "npu_device_synchronize");
		std::memcpy((void *)v_.data(), copy_, v_.bytes());
		npu_host_free(copy_);
	}

	staged_view(const staged_view &) = delete;
	staged_view &operator=(const staged_view &) = delete;

	npu_choreo_view c_view() const
	{
		npu_choreo_view c = v_.c_view();

		if (copy_)
			c.data = copy_;
		return c;
	}

private:
	spanned_view<T, Rank> v_;
	void *copy_ = nullptr;
};

} /* namespace detail */

/* row-major elements in mapped pinned memory, owned (move only) */
template <typename T, size_t Rank>
class spanned_data : public detail::span_ops<T, Rank, spanned_data<T, Rank>> {
	friend class detail::span_ops<T, Rank, spanned_data<T, Rank>>;
	static_assert(Rank >= 1 && Rank <= NPU_CHOREO_MAX_RANK,
		      "spanned data has rank 1 to NPU_CHOREO_MAX_RANK");

public:
	explicit spanned_data(const mdspan<Rank> &dims) : dims_(dims)
	{
		void *p = nullptr;

		detail::check_call(npu_host_alloc(&p, std::max<size_t>(this->bytes(), 1),
						  NPU_HOST_ALLOC_MAPPED),
				   "npu_host_alloc");
		ptr_ = static_cast<T *>(p);
		std::fill_n(ptr_, this->element_count(), T());
	}

	/* takes over what a __co__ function returned (npu_choreo_view_free) */
	static spanned_data adopt(const npu_choreo_view &v)
	{
		mdspan<Rank> dims;

		runtime_check(v.rank == Rank && v.elem == detail::elem_of<T>::value,
			      "returned data of another type");
		for (size_t k = 0; k < Rank; k++)
			dims[k] = v.dims[k];
		return spanned_data(static_cast<T *>(v.data), dims);
	}

	spanned_data(spanned_data &&o) noexcept : ptr_(o.ptr_), dims_(o.dims_)
	{
		o.ptr_ = nullptr;
	}
	spanned_data &operator=(spanned_data &&o) noexcept
	{
		std::swap(ptr_, o.ptr_);
		std::swap(dims_, o.dims_);
		return *this;
	}
	spanned_data(const spanned_data &) = delete;
	spanned_data &operator=(const spanned_data &) = delete;
	~spanned_data()
	{
		if (ptr_)
			npu_host_free(ptr_);	/* waits for the device */
	}

	T *data() { return ptr_; }
	const T *data() const { return ptr_; }
	spanned_view<T, Rank> view() const { return spanned_view<T, Rank>(ptr_, dims_); }

private:
	spanned_data(T *ptr, const mdspan<Rank> &dims) : ptr_(ptr), dims_(dims) {}
	T *ptr() const { return ptr_; }
	T *ptr_;
	mdspan<Rank> dims_;
};

/* make_spandata<s32>(2, 3, 64): zeroed data of those dimensions */
template <typename T, typename... Dims>
spanned_data<T, sizeof...(Dims)> make_spandata(Dims... dims)
{
	return spanned_data<T, sizeof...(Dims)>(mdspan<sizeof...(Dims)>{ (size_t)dims... });
}

/* make_spandata<s32, 3>({2, 3, 64}): the same, its dimensions a list */
template <typename T, size_t Rank>
spanned_data<T, Rank> make_spandata(const mdspan<Rank> &dims)
{
	return spanned_data<T, Rank>(dims);
}

/* make_spanview<2, f32>(ptr, {m, n}): a view of memory the device reaches */
template <size_t Rank, typename T>
spanned_view<typename std::remove_const<T>::type, Rank>
make_spanview(T *ptr, std::initializer_list<size_t> dims)
{
	using U = typename std::remove_const<T>::type;
	mdspan<Rank> d{};

	runtime_check(dims.size() == Rank, "make_spanview: rank and dimensions differ");
	std::copy(dims.begin(), dims.end(), d.begin());
	return spanned_view<U, Rank>(const_cast<U *>(ptr), d);
}

/* a failed runtime call ends the program (Croqtile: abend_true) */
inline void abend_true(npu_status_t st)
{
	if (st != NPU_SUCCESS) {
		std::cout.flush();
		std::fprintf(stderr, "Runtime failure: %s\n", npu_status_string(st));
		std::exit(1);
	}
}

} /* namespace choreo */

/* The CUDA runtime names of Croqtile's GPU host programs, over libnpu */
using cudaError_t = npu_status_t;
using cudaStream_t = npu_stream_t;
using cudaMemcpyKind = npu_memcpy_kind_t;
constexpr npu_status_t cudaSuccess = NPU_SUCCESS;
constexpr npu_memcpy_kind_t cudaMemcpyHostToHost = NPU_MEMCPY_HOST_TO_HOST;
constexpr npu_memcpy_kind_t cudaMemcpyHostToDevice = NPU_MEMCPY_HOST_TO_DEVICE;
constexpr npu_memcpy_kind_t cudaMemcpyDeviceToHost = NPU_MEMCPY_DEVICE_TO_HOST;
constexpr npu_memcpy_kind_t cudaMemcpyDeviceToDevice = NPU_MEMCPY_DEVICE_TO_DEVICE;
constexpr npu_memcpy_kind_t cudaMemcpyDefault = NPU_MEMCPY_DEFAULT;

inline cudaError_t cudaStreamCreate(cudaStream_t *s) { return npu_stream_create(s, NPU_STREAM_DEFAULT, 0); }
inline cudaError_t cudaStreamDestroy(cudaStream_t s) { return npu_stream_destroy(s); }
inline cudaError_t cudaStreamSynchronize(cudaStream_t s) { return npu_stream_synchronize(s); }
inline cudaError_t cudaDeviceSynchronize() { return npu_device_synchronize(); }
inline cudaError_t cudaGetLastError() { return npu_get_last_error(); }
inline const char *cudaGetErrorString(cudaError_t e) { return npu_status_string(e); }
template <typename T>
inline cudaError_t cudaMalloc(T **p, size_t n)
{
	return npu_malloc(reinterpret_cast<void **>(p), n);
}
inline cudaError_t cudaFree(void *p) { return npu_free(p); }
inline cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind k)
{
	return npu_memcpy(dst, src, n, k);
}
inline cudaError_t cudaMemset(void *p, int v, size_t n) { return npu_memset(p, v, n); }

#endif /* NPU_CHOREO_HOST_H */
