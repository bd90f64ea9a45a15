// Activation, ELU-family, pow and clamp kernels of the CUDA backend: one thread per element over
// the element functions the CPU twin uses (core/activation.h).
#include "core/activation.h"
#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {

template <typename T>
__global__ void activation_forward_kernel(Activation a, const T* x, T* y, int64_t n) {
  const int64_t i = thread_index();
  if (i < n) y[i] = activation_math::forward(a, x[i]);
}

template <typename T>
__global__ void activation_backward_kernel(Activation a, const T* v, const T* dy, T* dx,
                                           int64_t n) {
  const int64_t i = thread_index();
  if (i < n) dx[i] = activation_math::backward(a, v[i], dy[i]);
}

template <typename T>
__global__ void pow_forward_kernel(const T* x, T e, T* y, int64_t n) {
  const int64_t i = thread_index();
  if (i < n) y[i] = activation_math::pow_forward(x[i], e);
}

template <typename T>
__global__ void pow_backward_kernel(const T* x, T e, const T* dy, T* dx, int64_t n) {
  const int64_t i = thread_index();
  if (i < n) dx[i] = activation_math::pow_backward(x[i], e, dy[i]);
}

template <typename T>
__global__ void clamp_forward_kernel(const T* x, T lo, T hi, T* y, int64_t n) {
  const int64_t i = thread_index();
  if (i < n) y[i] = activation_math::clamp_forward(x[i], lo, hi);
}

template <typename T>
__global__ void clamp_backward_kernel(const T* x, T lo, T hi, const T* dy, T* dx, int64_t n) {
  const int64_t i = thread_index();
  if (i < n) dx[i] = activation_math::clamp_backward(x[i], lo, hi, dy[i]);
}

template <typename T>
__global__ void elu_forward_kernel(const T* x, activation_math::EluConstants<T> c, T* y,
                                   int64_t n) {
  const int64_t i = thread_index();
  if (i < n) y[i] = activation_math::elu_forward(x[i], c);
}

template <typename T>
__global__ void elu_backward_kernel(const T* v, bool from_output,
                                    activation_math::EluConstants<T> c, const T* dy, T* dx,
                                    int64_t n) {
  const int64_t i = thread_index();
  if (i < n)
    dx[i] = from_output ? activation_math::elu_backward_output(v[i], c, dy[i])
                        : activation_math::elu_backward_input(v[i], c, dy[i]);
}

template <typename T>
void elu_forward_t(const Tensor& x, const EluCoefficients& c, Tensor& y) {
  const int64_t n = x.numel();
  launch(n, elu_forward_kernel<T>, x.device_data<T>(), activation_math::EluConstants<T>(c),
         y.device_data<T>(), n);
}

template <typename T>
void elu_backward_t(const Tensor& v, bool from_output, const EluCoefficients& c, const Tensor& dy,
                    Tensor& dx) {
  const int64_t n = v.numel();
  launch(n, elu_backward_kernel<T>, v.device_data<T>(), from_output,
         activation_math::EluConstants<T>(c), dy.device_data<T>(), dx.device_data<T>(), n);
}

}  // namespace

void CudaBackend::elu_forward(const Tensor& x, const EluCoefficients& c, Tensor& y) {
  check_same("elu", x, y, device());
  if (x.dtype() == DType::f32)
    elu_forward_t<float>(x, c, y);
  else
    elu_forward_t<double>(x, c, y);
}

void CudaBackend::elu_backward(const Tensor& v, bool from_output, const EluCoefficients& c,
                               const Tensor& dy, Tensor& dx) {
  check_elu_backward(v, from_output, c, dy, dx, device());
  if (v.dtype() == DType::f32)
    elu_backward_t<float>(v, from_output, c, dy, dx);
  else
    elu_backward_t<double>(v, from_output, c, dy, dx);
}

void CudaBackend::clamp_forward(const Tensor& x, double lo, double hi, Tensor& y) {
  check_same("clamp", x, y, device());
  const int64_t n = x.numel();
  if (x.dtype() == DType::f32)
    launch(n, clamp_forward_kernel<float>, x.device_data<float>(), static_cast<float>(lo),
           static_cast<float>(hi), y.device_data<float>(), n);
  else
    launch(n, clamp_forward_kernel<double>, x.device_data<double>(), lo, hi,
           y.device_data<double>(), n);
}

void CudaBackend::clamp_backward(const Tensor& x, double lo, double hi, const Tensor& dy,
                                 Tensor& dx) {
  check_same("clamp backward", dy, dx, device());
  check_same("clamp backward", x, dx, device());
  const int64_t n = x.numel();
  if (x.dtype() == DType::f32)
    launch(n, clamp_backward_kernel<float>, x.device_data<float>(), static_cast<float>(lo),
           static_cast<float>(hi), dy.device_data<float>(), dx.device_data<float>(), n);
  else
    launch(n, clamp_backward_kernel<double>, x.device_data<double>(), lo, hi,
           dy.device_data<double>(), dx.device_data<double>(), n);
}

void CudaBackend::pow_forward(const Tensor& x, double e, Tensor& y) {
  check_same("pow", x, y, device());
  const int64_t n = x.numel();
  if (x.dtype() == DType::f32)
    launch(n, pow_forward_kernel<float>, x.device_data<float>(), static_cast<float>(e),
           y.device_data<float>(), n);
  else
    launch(n, pow_forward_kernel<double>, x.device_data<double>(), e, y.device_data<double>(), n);
}

void CudaBackend::pow_backward(const Tensor& x, double e, const Tensor& dy, Tensor& dx) {
  check_same("pow backward", dy, dx, device());
  check_same("pow backward", x, dx, device());
  const int64_t n = x.numel();
  if (x.dtype() == DType::f32)
    launch(n, pow_backward_kernel<float>, x.device_data<float>(), static_cast<float>(e),
           dy.device_data<float>(), dx.device_data<float>(), n);
  else
    launch(n, pow_backward_kernel<double>, x.device_data<double>(), e, dy.device_data<double>(),
           dx.device_data<double>(), n);
}

void CudaBackend::activation_forward(Activation a, const Tensor& x, Tensor& y) {
  check_same(activation_name(a), x, y, device());
  const int64_t n = x.numel();
  if (x.dtype() == DType::f32)
    launch(n, activation_forward_kernel<float>, a, x.device_data<float>(), y.device_data<float>(),
           n);
  else
    launch(n, activation_forward_kernel<double>, a, x.device_data<double>(),
           y.device_data<double>(), n);
}

void CudaBackend::activation_backward(Activation a, const Tensor& v, const Tensor& dy, Tensor& dx) {
  check_same(activation_name(a), dy, dx, device());
  check_same(activation_name(a), v, dx, device());
  const int64_t n = v.numel();
  if (v.dtype() == DType::f32)
    launch(n, activation_backward_kernel<float>, a, v.device_data<float>(), dy.device_data<float>(),
           dx.device_data<float>(), n);
  else
    launch(n, activation_backward_kernel<double>, a, v.device_data<double>(),
           dy.device_data<double>(), dx.device_data<double>(), n);
}

}  // namespace frugal
