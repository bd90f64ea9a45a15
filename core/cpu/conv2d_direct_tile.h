// The pieces both passes of the direct f32 convolution share (private to core/cpu/: see
// conv2d_direct.h): the constants of the register block, the convolution as the kernel runs it,
// output vectors, the AVX loads and stores of a vector's first lanes, and the zero-padded
// copies of input rows. conv2d_direct.cpp holds the forward and data-gradient kernel,
// conv2d_direct_filter.cpp the filter-gradient kernel.
#pragma once

#if defined(__AVX__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/backend.h"

namespace frugal::direct_conv {

inline constexpr int64_t kLanes = 8;  // floats in one AVX vector
#if defined(__AVX512VL__)
inline constexpr int64_t kBlockK = 8;  // output channels in the register block: 32 vector registers
#else
inline constexpr int64_t kBlockK = 4;  // 16 vector registers
#endif
inline constexpr int64_t kPackBudget = int64_t{1} << 18;  // bytes of packed filters per thread
inline constexpr int64_t kSlack =
    2 * kLanes;                        // floats past a tile: a short vector's lanes read past it
inline constexpr int64_t kChunk = 64;  // at most this many input channels per chunk

// One stride-1 convolution as the kernel runs it: in (N, C, H, W), zero-padded by (ph, pw),
// gives out (N, K, P, Q) with P = H + 2 ph - R + 1 and Q = W + 2 pw - S + 1.
struct Conv {
  int64_t N, C, H, W, K, R, S, ph, pw, P, Q;
  int64_t Wp() const { return W + 2 * pw; }
  int64_t blocks() const { return (K + kBlockK - 1) / kBlockK; }  // of output channels
  // Input channels per chunk, and the floats of one chunk's packed filters.
  int64_t chunk() const {
    const int64_t channel = blocks() * kBlockK * R * S * int64_t{sizeof(float)};
    return std::clamp<int64_t>(kPackBudget / channel, 1, std::clamp<int64_t>(C, 1, kChunk));
  }
  int64_t packed() const { return blocks() * kBlockK * chunk() * R * S; }
};

inline Conv forward_conv(const Conv2dGeometry& g) {
  return {g.N, g.C, g.H, g.W, g.K, g.R, g.S, g.pad_h, g.pad_w, g.P, g.Q};
}

#if defined(__AVX__) && defined(__FMA__)

inline constexpr bool kBuilt = true;

// An output vector: `lanes` outputs of row p from column q on.
struct Vec {
  int64_t p, q, lanes;
};
inline std::vector<Vec> vectors(int64_t p0, int64_t p1, int64_t Q) {
  std::vector<Vec> v;
  for (int64_t p = p0; p < p1; ++p)
    for (int64_t q = 0; q < Q; q += kLanes) v.push_back({p, q, std::min(kLanes, Q - q)});
  return v;
}

// Loads and stores of the first `lanes` floats of a vector (lanes <= 8): AVX-512's mask
// registers where there are some (AVX's vmaskmovps stores are slow on AMD's cores).
#if defined(__AVX512VL__)
inline __m256 load_first(const float* p, int64_t lanes) {
  return _mm256_maskz_loadu_ps(static_cast<__mmask8>((1u << lanes) - 1), p);
}
inline void store_first(float* p, int64_t lanes, __m256 v) {
  _mm256_mask_storeu_ps(p, static_cast<__mmask8>((1u << lanes) - 1), v);
}
#else
inline constexpr int32_t kMaskTable[2 * kLanes] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                   0,  0,  0,  0,  0,  0,  0,  0};
inline __m256i mask(int64_t lanes) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMaskTable + kLanes - lanes));
}
inline __m256 load_first(const float* p, int64_t lanes) {
  return _mm256_maskload_ps(p, mask(lanes));
}
inline void store_first(float* p, int64_t lanes, __m256 v) {
  _mm256_maskstore_ps(p, mask(lanes), v);
}
#endif
inline __m256 load(const float* p, int64_t lanes) {
  return lanes == kLanes ? _mm256_loadu_ps(p) : load_first(p, lanes);
}
inline void store(float* p, int64_t lanes, __m256 v) {
  if (lanes == kLanes)
    _mm256_storeu_ps(p, v);
  else
    store_first(p, lanes, v);
}

// Writes one padded row dst [0, Wp) = pw zeros, src [0, W), zeros, in whole vectors: the rows
// are short (8 to 34 floats on CIFAR nets), where calls to memcpy and memset, or masked
// stores, cost more than the copying. The stores run up to 8 floats past the row; the caller
// writes the rows in order, each over what the one before spilled, and keeps kSlack floats
// after the last. src is read only inside [0, W).
inline void pad_row(const float* src, int64_t W, int64_t pw, int64_t Wp, float* dst) {
  if (pw > kLanes) {  // wider padding than one vector: no such layer in the model zoo
    std::fill(dst, dst + Wp, 0.0f);
    std::copy(src, src + W, dst + pw);
    return;
  }
  const __m256 zero = _mm256_setzero_ps();
  if (pw > 0) _mm256_storeu_ps(dst, zero);
  int64_t i = 0;
  for (; i + kLanes <= W; i += kLanes) _mm256_storeu_ps(dst + pw + i, _mm256_loadu_ps(src + i));
  if (i < W) _mm256_storeu_ps(dst + pw + i, load_first(src + i, W - i));  // zeros past W
  if (Wp > pw + W) _mm256_storeu_ps(dst + pw + W, zero);
}
inline void zero_row(int64_t Wp, float* dst) {
  for (int64_t i = 0; i < Wp; i += kLanes) _mm256_storeu_ps(dst + i, _mm256_setzero_ps());
}

// Copies rows [h0, h0 + rows) of channels [c0, c1) of one sample's planes (C, H, W),
// zero-padded, into t (c1 - c0, rows, Wp); row h0 + i is input row h0 + i - ph (zero outside
// [0, H)); kSlack zeros follow.
inline void pad_rows(const Conv& cv, const float* in, int64_t c0, int64_t c1, int64_t h0,
                     int64_t rows, float* t) {
  const int64_t Wp = cv.Wp();
  for (int64_t c = c0; c < c1; ++c)
    for (int64_t i = 0; i < rows; ++i) {
      float* dst = t + ((c - c0) * rows + i) * Wp;
      const int64_t h = h0 + i - cv.ph;
      if (h < 0 || h >= cv.H)
        zero_row(Wp, dst);
      else
        pad_row(in + (c * cv.H + h) * cv.W, cv.W, cv.pw, Wp, dst);
    }
  std::fill(t + (c1 - c0) * rows * Wp, t + (c1 - c0) * rows * Wp + kSlack, 0.0f);
}

// Keeps a loaded vector in a register: without this GCC folds the load into every
// multiply-add that uses it, and the loads, not the multiply-adds, bound the loop.
#define FRUGAL_IN_REGISTER(v) asm("" : "+x"(v))

#else

inline constexpr bool kBuilt = false;

#endif

}  // namespace frugal::direct_conv
