// LeakyReLU kernels of the CPU backend: y = x > 0 ? x : slope * x and its backward, with the
// 1-bit mask of x > 0 (bit i % 8 of byte i / 8) where backward reads the mask.
#include <algorithm>

#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

// x (n)  y (n)  mask (ceil(n/8)) or null.  y may alias x: y[i] depends on x[i] alone. One mask
// byte (8 elements) per iteration, so threads never share a byte.
template <typename T>
void leaky_relu_forward_t(const T* x, T slope, T* y, uint8_t* mask, int64_t n) {
  const int64_t bytes = mask_bytes(n);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < bytes; ++b) {
    uint8_t bits = 0;
    for (int64_t i = 8 * b; i < std::min(n, 8 * b + 8); ++i) {
      const bool positive = x[i] > T(0);
      y[i] = positive ? x[i] : slope * x[i];
      bits |= static_cast<uint8_t>(positive << (i - 8 * b));
    }
    if (mask) mask[b] = bits;
  }
}

// dy (n)  y (n) or mask (ceil(n/8))  dx (n).  dx may alias dy.
template <typename T>
void leaky_relu_backward_t(const T* dy, const T* y, const uint8_t* mask, T slope, T* dx,
                           int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const bool positive = mask ? (mask[i / 8] >> (i % 8)) & 1 : y[i] > T(0);
    dx[i] = positive ? dy[i] : slope * dy[i];
  }
}

}  // namespace

void CpuBackend::leaky_relu_forward(const Tensor& x, double slope, Tensor& y, Tensor& mask) {
  check_same("leaky_relu", x, y, device());
  check_mask("leaky_relu", mask, x.numel(), device());
  uint8_t* m = mask.defined() ? mask.data<uint8_t>() : nullptr;
  if (x.dtype() == DType::f32)
    leaky_relu_forward_t(x.data<float>(), static_cast<float>(slope), y.data<float>(), m, x.numel());
  else
    leaky_relu_forward_t(x.data<double>(), slope, y.data<double>(), m, x.numel());
}

void CpuBackend::leaky_relu_backward_mask(const Tensor& dy, const Tensor& mask, double slope,
                                          Tensor& dx) {
  check_same("leaky_relu backward", dy, dx, device());
  check_required_mask("leaky_relu backward", mask, dy.numel(), device());
  const uint8_t* m = mask.data<uint8_t>();
  if (dy.dtype() == DType::f32)
    leaky_relu_backward_t<float>(dy.data<float>(), nullptr, m, static_cast<float>(slope),
                                 dx.data<float>(), dy.numel());
  else
    leaky_relu_backward_t<double>(dy.data<double>(), nullptr, m, slope, dx.data<double>(),
                                  dy.numel());
}

void CpuBackend::leaky_relu_backward_output(const Tensor& dy, const Tensor& y, double slope,
                                            Tensor& dx) {
  check_same("leaky_relu backward", dy, dx, device());
  check_same("leaky_relu backward", y, dx, device());
  if (dy.dtype() == DType::f32)
    leaky_relu_backward_t<float>(dy.data<float>(), y.data<float>(), nullptr,
                                 static_cast<float>(slope), dx.data<float>(), dy.numel());
  else
    leaky_relu_backward_t<double>(dy.data<double>(), y.data<double>(), nullptr, slope,
                                  dx.data<double>(), dy.numel());
}

}  // namespace frugal
