// e^x for 8 floats at once with the bits of std::exp(float) on the machines frugal runs on:
// Debian 12's glibc (2.36) evaluates expf, on every CPU with FMA, with its __expf_fma (ARM's
// optimized-routines algorithm: x * 32/ln2 split into k + r in double, 2^(k/32) from a table of
// 32, a cubic in r, one rounding to float at the end). expf8 runs those operations, fused where
// that function fuses them, on 4 doubles at a time; lanes that function sends elsewhere (|x| of
// 88 or more, infinities, NaN) are left to std::exp itself. All 2^32 floats gave std::exp's
// bits when this was written (a scratch program, 34 s); tests/test_activation.cpp compares the
// kernels that use it with their scalar loops over 2^20 floats spread over the whole range and
// the ends of the main path, so a C library that computes expf another way fails there. Only
// where the compiler targets AVX2 and FMA (the native and haswell builds); other builds keep the
// scalar loops.
#pragma once

#if defined(__AVX2__) && defined(__FMA__)
#define FRUGAL_EXPF8 1
#include <immintrin.h>

#include <cmath>
#include <cstdint>

namespace frugal::cpu_math {

// glibc's __exp2f_data (sysdeps/ieee754/flt-32/e_exp2f_data.c), as its 2.36 build holds it:
// 2^(i/32) with i << 47 taken off its bits, then 32/ln2, the cubic's coefficients for r scaled
// by 32, and 1.5 * 2^52 (adding it rounds to an integer, ties to even).
inline constexpr uint64_t kExpfTable[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
    0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
    0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
    0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
    0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
    0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540};
inline constexpr uint64_t kExpfInvLn2N = 0x40471547652b82fe;
inline constexpr uint64_t kExpfC0 = 0x3ebc6af84b912394;
inline constexpr uint64_t kExpfC1 = 0x3f2ebfce50fac4f3;
inline constexpr uint64_t kExpfC2 = 0x3f962e42ff0c52d6;
inline constexpr uint64_t kExpfShift = 0x4338000000000000;

inline __m256d expf_double(uint64_t bits) {
  return _mm256_castsi256_pd(_mm256_set1_epi64x(static_cast<long long>(bits)));
}

// 4 lanes of the main path, in __expf_fma's order.
inline __m128 expf4(__m128 x) {
  const __m256d xd = _mm256_cvtps_pd(x);
  const __m256d inv = expf_double(kExpfInvLn2N), shift = expf_double(kExpfShift);
  const __m256d kshift = _mm256_fmadd_pd(xd, inv, shift);  // z + SHIFT, z = x * 32/ln2
  const __m256i ki = _mm256_castpd_si256(kshift);
  const __m256d r = _mm256_fmsub_pd(xd, inv, _mm256_sub_pd(kshift, shift));  // z - k
  const __m256i index = _mm256_and_si256(ki, _mm256_set1_epi64x(31));
  const __m256i t = _mm256_add_epi64(
      _mm256_i64gather_epi64(reinterpret_cast<const long long*>(kExpfTable), index, 8),
      _mm256_slli_epi64(ki, 47));
  const __m256d s = _mm256_castsi256_pd(t);  // 2^(k/32)
  const __m256d z = _mm256_fmadd_pd(r, expf_double(kExpfC0), expf_double(kExpfC1));
  const __m256d r2 = _mm256_mul_pd(r, r);
  const __m256d y = _mm256_fmadd_pd(r, expf_double(kExpfC2), _mm256_set1_pd(1.0));
  return _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_fmadd_pd(z, r2, y), s));
}

// e^x, lane by lane as std::exp(float) gives it.
inline __m256 expf8(__m256 x) {
  const __m256i top =
      _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(x), 20), _mm256_set1_epi32(0x7ff));
  const int special =
      _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(top, _mm256_set1_epi32(0x42a))));
  __m256 y = _mm256_set_m128(expf4(_mm256_extractf128_ps(x, 1)), expf4(_mm256_castps256_ps128(x)));
  if (special != 0) {  // |x| >= 88, infinite or NaN: glibc's own checks
    alignas(32) float in[8], out[8];
    _mm256_store_ps(in, x);
    _mm256_store_ps(out, y);
    for (int i = 0; i < 8; ++i)
      if (special >> i & 1) out[i] = std::exp(in[i]);
    y = _mm256_load_ps(out);
  }
  return y;
}

}  // namespace frugal::cpu_math
#endif
