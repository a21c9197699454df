/* SPDX-License-Identifier: MIT */
/*
 * npu_half.h - Choreo's 16-bit floating-point element types, f16 (IEEE
 * 754 binary16: 1 sign, 5 exponent, 10 fraction bits) and bf16 (bfloat16:
 * the upper half of an f32), held as their bits in a uint16_t.
 *
 * Device memory stores the 16 bits; arithmetic is done in f32 (the RISC-V
 * compute units have no 16-bit floating point, as CUDA computes __half
 * in f32 without native support). Storing an f32 rounds to nearest, ties
 * to even; values beyond the largest finite f16 (65504) become infinity,
 * tiny ones f16 denormals or zero; a NaN stays a quiet NaN of the same
 * sign. Widening to f32 is exact.
 *
 * The 8-bit types f8_e4m3 and f8_e5m2 (OCP FP8, CUDA's __nv_fp8_e4m3 and
 * __nv_fp8_e5m2) are held and computed with the same way. e4m3: 4
 * exponent bits (bias 7), 3 fraction bits, no infinities (S.1111.111 is
 * NaN), largest finite 448; e5m2: f16's upper byte (bias 15, 2 fraction
 * bits), largest finite 57344. Their stores round to nearest even and
 * saturate, as CUDA's default conversion (__NV_SATFINITE): anything beyond
 * the largest finite value, infinity included, becomes it; NaN stays NaN.
 *
 * Plain C with <stdint.h> only: kernels (npu-cc), host C and C++
 * (choreo.h) share these functions.
 */
#ifndef NPU_HALF_H
#define NPU_HALF_H

#include <stdint.h>

static inline uint32_t npu_f32_bits(float f)
{
	uint32_t x;

	__builtin_memcpy(&x, &f, sizeof(x));
	return x;
}

static inline float npu_bits_f32(uint32_t x)
{
	float f;

	__builtin_memcpy(&f, &x, sizeof(f));
	return f;
}

/* f32 -> f16 bits, round to nearest even */
static inline uint16_t npu_f16_from_f32(float f)
{
	uint32_t x = npu_f32_bits(f);
	uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
	uint32_t h, mant, rem, half;
	int e, shift;

	if (ax > 0x7f800000u)		/* NaN: quiet, upper payload bits kept */
		return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
	e = (int)(ax >> 23) - 127 + 15;
	if (e >= 31)			/* infinity, or too large */
		return (uint16_t)(sign | 0x7c00u);
	if (e <= 0) {			/* an f16 denormal, or zero */
		if (e < -10)
			return (uint16_t)sign;
		mant = (ax & 0x7fffffu) | 0x800000u;
		shift = 14 - e;
		h = mant >> shift;
		rem = mant & ((1u << shift) - 1);
		half = 1u << (shift - 1);
		if (rem > half || (rem == half && (h & 1)))
			h++;		/* may carry into the smallest normal */
		return (uint16_t)(sign | h);
	}
	h = ((uint32_t)e << 10) | ((ax >> 13) & 0x3ffu);
	rem = ax & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
		h++;			/* may carry into the exponent: infinity */
	return (uint16_t)(sign | h);
}

/* f16 bits -> f32, exact */
static inline float npu_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
	float f;

	if (e == 31)
		return npu_bits_f32(sign | 0x7f800000u | (m << 13));
	if (e)
		return npu_bits_f32(sign | ((e + 112) << 23) | (m << 13));
	f = (float)m * 0x1p-24f;	/* denormal or zero: exact */
	return sign ? -f : f;
}

/* f32 -> bf16 bits, round to nearest even */
static inline uint16_t npu_bf16_from_f32(float f)
{
	uint32_t x = npu_f32_bits(f);

	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x0040u);
	return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

/* bf16 bits -> f32, exact */
static inline float npu_bf16_to_f32(uint16_t h)
{
	return npu_bits_f32((uint32_t)h << 16);
}

/* f32 -> an 8-bit float of mbits fraction bits and exponent bias bias,
 * round to nearest even, saturating at maxbits; NaN is nanbits */
static inline uint8_t npu_fp8_from_f32(float f, int mbits, int bias,
				       uint32_t maxbits, uint32_t nanbits)
{
	uint32_t x = npu_f32_bits(f);
	uint32_t sign = (x >> 24) & 0x80u, ax = x & 0x7fffffffu;
	uint32_t h, mant, rem, half;
	int e, shift, drop = 23 - mbits;

	if (ax > 0x7f800000u)
		return (uint8_t)(sign | nanbits);
	e = (int)(ax >> 23) - 127 + bias;
	if (e > (int)(maxbits >> mbits))	/* infinity, or too large */
		return (uint8_t)(sign | maxbits);
	if (e <= 0) {			/* a denormal, or zero */
		if (e < -mbits)
			return (uint8_t)sign;
		mant = (ax & 0x7fffffu) | 0x800000u;
		shift = drop + 1 - e;
		h = mant >> shift;
		rem = mant & ((1u << shift) - 1);
		half = 1u << (shift - 1);
	} else {
		h = ((uint32_t)e << mbits) | ((ax >> drop) & ((1u << mbits) - 1));
		rem = ax & ((1u << drop) - 1);
		half = 1u << (drop - 1);
	}
	if (rem > half || (rem == half && (h & 1)))
		h++;
	if (h > maxbits)
		h = maxbits;
	return (uint8_t)(sign | h);
}

static inline uint8_t npu_f8_e4m3_from_f32(float f)
{
	return npu_fp8_from_f32(f, 3, 7, 0x7eu, 0x7fu);
}

static inline uint8_t npu_f8_e5m2_from_f32(float f)
{
	return npu_fp8_from_f32(f, 2, 15, 0x7bu, 0x7fu);
}

/* f8_e4m3 bits -> f32, exact */
static inline float npu_f8_e4m3_to_f32(uint8_t b)
{
	uint32_t sign = (uint32_t)(b & 0x80u) << 24;
	uint32_t e = (b >> 3) & 0xfu, m = b & 0x7u;
	float f;

	if ((b & 0x7fu) == 0x7fu)
		return npu_bits_f32(sign | 0x7fc00000u);
	if (e)
		return npu_bits_f32(sign | ((e + 120) << 23) | (m << 20));
	f = (float)m * 0x1p-9f;
	return sign ? -f : f;
}

/* f8_e5m2 bits -> f32, exact (f16's upper byte) */
static inline float npu_f8_e5m2_to_f32(uint8_t b)
{
	return npu_f16_to_f32((uint16_t)(b << 8));
}

#endif /* NPU_HALF_H */
