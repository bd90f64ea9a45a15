// Activation and pow kernels of the CPU backend: one element function per activation
// (core/activation.h, shared with the CUDA kernels), applied over static OpenMP splits.
#include "core/activation.h"

#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

template <typename T>
void forward_t(Activation a, const T* x, T* y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 16384)
  for (int64_t i = 0; i < n; ++i) y[i] = activation_math::forward(a, x[i]);
}

template <typename T>
void backward_t(Activation a, const T* v, const T* dy, T* dx, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 16384)
  for (int64_t i = 0; i < n; ++i) dx[i] = activation_math::backward(a, v[i], dy[i]);
}

template <typename T>
void pow_forward_t(const T* x, T e, T* y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 16384)
  for (int64_t i = 0; i < n; ++i) y[i] = activation_math::pow_forward(x[i], e);
}

template <typename T>
void pow_backward_t(const T* x, T e, const T* dy, T* dx, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 16384)
  for (int64_t i = 0; i < n; ++i) dx[i] = activation_math::pow_backward(x[i], e, dy[i]);
}

template <typename T>
void clamp_forward_t(const T* x, T lo, T hi, T* y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 16384)
  for (int64_t i = 0; i < n; ++i) y[i] = activation_math::clamp_forward(x[i], lo, hi);
}

template <typename T>
void clamp_backward_t(const T* x, T lo, T hi, const T* dy, T* dx, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 16384)
  for (int64_t i = 0; i < n; ++i) dx[i] = activation_math::clamp_backward(x[i], lo, hi, dy[i]);
}

}  // namespace

void CpuBackend::clamp_forward(const Tensor& x, double lo, double hi, Tensor& y) {
  check_same("clamp", x, y, device());
  if (x.dtype() == DType::f32)
    clamp_forward_t(x.data<float>(), static_cast<float>(lo), static_cast<float>(hi),
                    y.data<float>(), x.numel());
  else
    clamp_forward_t(x.data<double>(), lo, hi, y.data<double>(), x.numel());
}

void CpuBackend::clamp_backward(const Tensor& x, double lo, double hi, const Tensor& dy,
                                Tensor& dx) {
  check_same("clamp backward", dy, dx, device());
  check_same("clamp backward", x, dx, device());
  if (x.dtype() == DType::f32)
    clamp_backward_t(x.data<float>(), static_cast<float>(lo), static_cast<float>(hi),
                     dy.data<float>(), dx.data<float>(), x.numel());
  else
    clamp_backward_t(x.data<double>(), lo, hi, dy.data<double>(), dx.data<double>(), x.numel());
}

void CpuBackend::pow_forward(const Tensor& x, double e, Tensor& y) {
  check_same("pow", x, y, device());
  if (x.dtype() == DType::f32)
    pow_forward_t(x.data<float>(), static_cast<float>(e), y.data<float>(), x.numel());
  else
    pow_forward_t(x.data<double>(), e, y.data<double>(), x.numel());
}

void CpuBackend::pow_backward(const Tensor& x, double e, const Tensor& dy, Tensor& dx) {
  check_same("pow backward", dy, dx, device());
  check_same("pow backward", x, dx, device());
  if (x.dtype() == DType::f32)
    pow_backward_t(x.data<float>(), static_cast<float>(e), dy.data<float>(), dx.data<float>(),
                   x.numel());
  else
    pow_backward_t(x.data<double>(), e, dy.data<double>(), dx.data<double>(), x.numel());
}

void CpuBackend::activation_forward(Activation a, const Tensor& x, Tensor& y) {
  check_same(activation_name(a), x, y, device());
  if (x.dtype() == DType::f32)
    forward_t(a, x.data<float>(), y.data<float>(), x.numel());
  else
    forward_t(a, x.data<double>(), y.data<double>(), x.numel());
}

void CpuBackend::activation_backward(Activation a, const Tensor& v, const Tensor& dy, Tensor& dx) {
  check_same(activation_name(a), dy, dx, device());
  check_same(activation_name(a), v, dx, device());
  if (v.dtype() == DType::f32)
    backward_t(a, v.data<float>(), dy.data<float>(), dx.data<float>(), v.numel());
  else
    backward_t(a, v.data<double>(), dy.data<double>(), dx.data<double>(), v.numel());
}

}  // namespace frugal
