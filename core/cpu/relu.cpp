// ReLU kernels of the CPU backend. The 1-bit mask is written and read through bitmask.h; in
// f32 on x86-64 eight elements at a time with SSE2 (every x86-64 CPU has it): compares and a
// movemask make a mask byte, a 16-entry table turns a mask nibble back into lanes. Both paths
// give the same bits: y = +0 where x <= 0 (-0 included), y = x elsewhere (NaN kept, as
// PyTorch's relu); the bit is x > 0 (clear at NaN), dx = +0 where it is clear.
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/cpu/bitmask.h"

namespace frugal {

namespace {
// x (n)  y (n)  mask (ceil(n/8)) optional; y may alias x.
template <typename T>
void relu_forward_t(const T* x, T* y, uint8_t* mask, int64_t n) {
  write_mask(n, mask, [&](int64_t i) {
    const T xi = x[i];
    y[i] = xi <= T(0) ? T(0) : xi;
    return xi > T(0);
  });
}

template <typename T>
void relu_backward_mask_t(const T* dy, const uint8_t* mask, T* dx, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) dx[i] = mask_bit(mask, i) ? dy[i] : T(0);
}

#if defined(__SSE2__)
// x (8)  y (8): y = x <= 0 ? +0 : x, returns the 8 bits of x > 0. y may alias x.
// not-less-or-equal is true where x > 0 and where x is NaN (unordered), so y keeps NaN.
inline uint8_t relu8(const float* x, float* y) {
  const __m128 zero = _mm_setzero_ps();
  const __m128 a = _mm_loadu_ps(x), b = _mm_loadu_ps(x + 4);
  _mm_storeu_ps(y, _mm_and_ps(a, _mm_cmpnle_ps(a, zero)));
  _mm_storeu_ps(y + 4, _mm_and_ps(b, _mm_cmpnle_ps(b, zero)));
  const __m128 pa = _mm_cmpgt_ps(a, zero), pb = _mm_cmpgt_ps(b, zero);
  return static_cast<uint8_t>(_mm_movemask_ps(pa) | (_mm_movemask_ps(pb) << 4));
}

// Lane masks of the 16 nibbles: lane j all ones where bit j is set.
struct NibbleLanes {
  alignas(16) uint32_t lanes[16][4];
  NibbleLanes() {
    for (int v = 0; v < 16; ++v)
      for (int j = 0; j < 4; ++j) lanes[v][j] = (v >> j) & 1 ? 0xffffffffu : 0u;
  }
  __m128 operator[](int v) const { return _mm_load_ps(reinterpret_cast<const float*>(lanes[v])); }
};
const NibbleLanes kNibbleLanes;

template <>
void relu_forward_t<float>(const float* x, float* y, uint8_t* mask, int64_t n) {
  const int64_t full = n / 8;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < full; ++b) {
    const uint8_t bits = relu8(x + 8 * b, y + 8 * b);
    if (mask) mask[b] = bits;
  }
  uint8_t bits = 0;
  for (int64_t i = 8 * full; i < n; ++i) {
    const float xi = x[i];
    y[i] = xi <= 0.0f ? 0.0f : xi;
    bits |= static_cast<uint8_t>((xi > 0.0f) << (i - 8 * full));
  }
  if (mask && n % 8) mask[full] = bits;
}

template <>
void relu_backward_mask_t<float>(const float* dy, const uint8_t* mask, float* dx, int64_t n) {
  const int64_t full = n / 8;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < full; ++b) {
    const int m = mask[b];
    _mm_storeu_ps(dx + 8 * b, _mm_and_ps(_mm_loadu_ps(dy + 8 * b), kNibbleLanes[m & 15]));
    _mm_storeu_ps(dx + 8 * b + 4, _mm_and_ps(_mm_loadu_ps(dy + 8 * b + 4), kNibbleLanes[m >> 4]));
  }
  for (int64_t i = 8 * full; i < n; ++i) dx[i] = mask_bit(mask, i) ? dy[i] : 0.0f;
}
#endif

template <typename T>
void relu_backward_output_t(const T* dy, const T* y, T* dx, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) dx[i] = y[i] > T(0) ? dy[i] : T(0);
}
}  // namespace

void CpuBackend::relu_forward(const Tensor& x, Tensor& y, Tensor& mask) {
  check_same("relu", x, y, device());
  check_mask("relu", mask, x.numel(), device());
  uint8_t* m = mask.defined() ? mask.data<uint8_t>() : nullptr;
  if (x.dtype() == DType::f32)
    relu_forward_t(x.data<float>(), y.data<float>(), m, x.numel());
  else
    relu_forward_t(x.data<double>(), y.data<double>(), m, x.numel());
}

void CpuBackend::relu_backward_mask(const Tensor& dy, const Tensor& mask, Tensor& dx) {
  check_required_mask("relu backward", mask, dy.numel(), device());
  if (dy.dtype() == DType::f32)
    relu_backward_mask_t(dy.data<float>(), mask.data<uint8_t>(), dx.data<float>(), dy.numel());
  else
    relu_backward_mask_t(dy.data<double>(), mask.data<uint8_t>(), dx.data<double>(), dy.numel());
}

void CpuBackend::relu_backward_output(const Tensor& dy, const Tensor& y, Tensor& dx) {
  if (dy.dtype() == DType::f32)
    relu_backward_output_t(dy.data<float>(), y.data<float>(), dx.data<float>(), dy.numel());
  else
    relu_backward_output_t(dy.data<double>(), y.data<double>(), dx.data<double>(), dy.numel());
}

}  // namespace frugal
