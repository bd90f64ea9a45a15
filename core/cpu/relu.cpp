// ReLU kernels of the CPU backend. The 1-bit mask is written and read through bitmask.h.
#include "core/cpu/bitmask.h"

namespace frugal {

namespace {
// x (n)  y (n)  mask (ceil(n/8)) optional; y may alias x.
template <typename T>
void relu_forward_t(const T* x, T* y, uint8_t* mask, int64_t n) {
  write_mask(n, mask, [&](int64_t i) {
    const bool pos = x[i] > T(0);
    y[i] = pos ? x[i] : T(0);
    return pos;
  });
}

template <typename T>
void relu_backward_mask_t(const T* dy, const uint8_t* mask, T* dx, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) dx[i] = mask_bit(mask, i) ? dy[i] : T(0);
}

template <typename T>
void relu_backward_output_t(const T* dy, const T* y, T* dx, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) dx[i] = y[i] > T(0) ? dy[i] : T(0);
}
}  // namespace

void CpuBackend::relu_forward(const Tensor& x, Tensor& y, Tensor& mask) {
  FRUGAL_CHECK(x.meta() == y.meta(), "relu: x ", x.shape(), " y ", y.shape());
  check_mask("relu", mask, x.numel());
  uint8_t* m = mask.defined() ? mask.data<uint8_t>() : nullptr;
  if (x.dtype() == DType::f32)
    relu_forward_t(x.data<float>(), y.data<float>(), m, x.numel());
  else
    relu_forward_t(x.data<double>(), y.data<double>(), m, x.numel());
}

void CpuBackend::relu_backward_mask(const Tensor& dy, const Tensor& mask, Tensor& dx) {
  FRUGAL_CHECK(mask.defined(), "relu backward: no mask");
  check_mask("relu backward", mask, dy.numel());
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
