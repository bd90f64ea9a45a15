// ReLU kernels and bit-mask helpers of the CPU backend.
#include <algorithm>

#include "core/cpu/cpu_backend.h"

namespace frugal {

namespace {
// x (n)  y (n)  mask (ceil(n/8)) optional. Each thread owns whole mask bytes (8 elements),
// so the mask is written without races.
template <typename T>
void relu_forward_t(const T* x, T* y, uint8_t* mask, int64_t n) {
  const int64_t bytes = (n + 7) / 8;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < bytes; ++b) {
    uint8_t bits = 0;
    const int64_t end = std::min<int64_t>(n, 8 * b + 8);
    for (int64_t i = 8 * b; i < end; ++i) {
      bool pos = x[i] > T(0);
      bits |= static_cast<uint8_t>(pos) << (i - 8 * b);
      y[i] = pos ? x[i] : T(0);
    }
    if (mask) mask[b] = bits;
  }
}

template <typename T>
void relu_backward_mask_t(const T* dy, const uint8_t* mask, T* dx, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) dx[i] = (mask[i >> 3] >> (i & 7)) & 1 ? dy[i] : T(0);
}

template <typename T>
void relu_backward_output_t(const T* dy, const T* y, T* dx, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) dx[i] = y[i] > T(0) ? dy[i] : T(0);
}
}  // namespace

void CpuBackend::relu_forward(const Tensor& x, Tensor& y, Tensor& mask) {
  FRUGAL_CHECK(x.meta() == y.meta(), "relu: x ", x.shape(), " y ", y.shape());
  uint8_t* m = mask.defined() ? mask.data<uint8_t>() : nullptr;
  if (x.dtype() == DType::f32)
    relu_forward_t(x.data<float>(), y.data<float>(), m, x.numel());
  else
    relu_forward_t(x.data<double>(), y.data<double>(), m, x.numel());
}

void CpuBackend::relu_backward_mask(const Tensor& dy, const Tensor& mask, Tensor& dx) {
  FRUGAL_CHECK(mask.bytes() == static_cast<size_t>(mask_bytes(dy.numel())),
               "relu backward: mask of ", mask.bytes(), " bytes for ", dy.numel(), " elements");
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
