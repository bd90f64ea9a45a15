// ReLU kernels of the CUDA backend: one thread per element; the 1-bit mask is written by warp
// ballots (launch.cuh), so it equals the CPU twin's mask bit for bit. As the CPU twin, y keeps
// NaN (x unless x <= 0) and the bit is x > 0.
#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {
// x (n)  y (n)  mask (ceil(n/8)) or null; y may alias x.
template <typename T>
__global__ void relu_forward_kernel(const T* x, T* y, uint8_t* mask, int64_t n) {
  const int64_t i = thread_index();
  bool pos = false;
  if (i < n) {
    const T xi = x[i];
    pos = xi > T(0);
    y[i] = relu_bits(xi);  // NaN kept, bit for bit
  }
  store_mask_bit(mask, i, n, pos);  // every lane, past the end too
}

// dy (n)  mask (ceil(n/8))  dx (n)
template <typename T>
__global__ void relu_backward_mask_kernel(const T* dy, const uint8_t* mask, T* dx, int64_t n) {
  const int64_t i = thread_index();
  if (i < n) dx[i] = mask_bit(mask, i) ? dy[i] : T(0);
}

// dy (n)  y (n)  dx (n)
template <typename T>
__global__ void relu_backward_output_kernel(const T* dy, const T* y, T* dx, int64_t n) {
  const int64_t i = thread_index();
  if (i < n) dx[i] = y[i] > T(0) ? dy[i] : T(0);
}
}  // namespace

void CudaBackend::relu_forward(const Tensor& x, Tensor& y, Tensor& mask) {
  check_same("relu", x, y, device());
  check_mask("relu", mask, x.numel(), device());
  uint8_t* m = mask.defined() ? mask.device_data<uint8_t>() : nullptr;
  const int64_t n = x.numel();
  if (x.dtype() == DType::f32)
    launch(n, relu_forward_kernel<float>, x.device_data<float>(), y.device_data<float>(), m, n);
  else
    launch(n, relu_forward_kernel<double>, x.device_data<double>(), y.device_data<double>(), m, n);
}

void CudaBackend::relu_backward_mask(const Tensor& dy, const Tensor& mask, Tensor& dx) {
  check_same("relu backward", dy, dx, device());
  check_required_mask("relu backward", mask, dy.numel(), device());
  const int64_t n = dy.numel();
  const uint8_t* m = mask.device_data<uint8_t>();
  if (dy.dtype() == DType::f32)
    launch(n, relu_backward_mask_kernel<float>, dy.device_data<float>(), m, dx.device_data<float>(),
           n);
  else
    launch(n, relu_backward_mask_kernel<double>, dy.device_data<double>(), m,
           dx.device_data<double>(), n);
}

void CudaBackend::relu_backward_output(const Tensor& dy, const Tensor& y, Tensor& dx) {
  check_same("relu backward", dy, dx, device());
  check_same("relu backward", y, dx, device());
  const int64_t n = dy.numel();
  if (dy.dtype() == DType::f32)
    launch(n, relu_backward_output_kernel<float>, dy.device_data<float>(), y.device_data<float>(),
           dx.device_data<float>(), n);
  else
    launch(n, relu_backward_output_kernel<double>, dy.device_data<double>(),
           y.device_data<double>(), dx.device_data<double>(), n);
}

}  // namespace frugal
