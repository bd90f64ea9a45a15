// LeakyReLU kernels of the CUDA backend: one thread per element; the mask by warp ballots
// (launch.cuh), bit for bit the CPU twin's (core/cpu/leaky_relu.cpp).
#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {
// x (n)  y (n)  mask (ceil(n/8)) or null; y may alias x.
template <typename T>
__global__ void leaky_relu_forward_kernel(const T* x, T slope, T* y, uint8_t* mask, int64_t n) {
  const int64_t i = thread_index();
  bool positive = false;
  if (i < n) {
    const T xi = x[i];
    positive = xi > T(0);
    y[i] = positive ? xi : slope * xi;
  }
  store_mask_bit(mask, i, n, positive);  // every lane, past the end too
}

// dy (n)  mask (ceil(n/8)) or null, else y (n)  dx (n); dx may alias dy.
template <typename T>
__global__ void leaky_relu_backward_kernel(const T* dy, const T* y, const uint8_t* mask, T slope,
                                           T* dx, int64_t n) {
  const int64_t i = thread_index();
  if (i >= n) return;
  const bool positive = mask ? mask_bit(mask, i) : y[i] > T(0);
  dx[i] = positive ? dy[i] : slope * dy[i];
}

template <typename T>
void backward_t(const Tensor& dy, const Tensor* y, const Tensor* mask, double slope, Tensor& dx) {
  const int64_t n = dy.numel();
  launch(n, leaky_relu_backward_kernel<T>, dy.device_data<T>(),
         y ? y->device_data<T>() : static_cast<const T*>(nullptr),
         mask ? mask->device_data<uint8_t>() : static_cast<const uint8_t*>(nullptr),
         static_cast<T>(slope), dx.device_data<T>(), n);
}
}  // namespace

void CudaBackend::leaky_relu_forward(const Tensor& x, double slope, Tensor& y, Tensor& mask) {
  check_same("leaky_relu", x, y, device());
  check_mask("leaky_relu", mask, x.numel(), device());
  uint8_t* m = mask.defined() ? mask.device_data<uint8_t>() : nullptr;
  const int64_t n = x.numel();
  if (x.dtype() == DType::f32)
    launch(n, leaky_relu_forward_kernel<float>, x.device_data<float>(), static_cast<float>(slope),
           y.device_data<float>(), m, n);
  else
    launch(n, leaky_relu_forward_kernel<double>, x.device_data<double>(), slope,
           y.device_data<double>(), m, n);
}

void CudaBackend::leaky_relu_backward_mask(const Tensor& dy, const Tensor& mask, double slope,
                                           Tensor& dx) {
  check_same("leaky_relu backward", dy, dx, device());
  check_required_mask("leaky_relu backward", mask, dy.numel(), device());
  if (dy.dtype() == DType::f32)
    backward_t<float>(dy, nullptr, &mask, slope, dx);
  else
    backward_t<double>(dy, nullptr, &mask, slope, dx);
}

void CudaBackend::leaky_relu_backward_output(const Tensor& dy, const Tensor& y, double slope,
                                             Tensor& dx) {
  check_same("leaky_relu backward", dy, dx, device());
  check_same("leaky_relu backward", y, dx, device());
  if (dy.dtype() == DType::f32)
    backward_t<float>(dy, &y, nullptr, slope, dx);
  else
    backward_t<double>(dy, &y, nullptr, slope, dx);
}

}  // namespace frugal
