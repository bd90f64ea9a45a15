// The CUDA backend's softmax over one axis: one thread per (outer, inner) column, which walks
// the axis in order as the CPU does (maximum, then f64 sums), so the two agree to rounding of
// exp alone.
#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {

template <typename T>
__global__ void softmax_forward_kernel(const T* x, T* y, int64_t outer, int64_t C, int64_t inner) {
  const int64_t t = thread_index();
  if (t >= outer * inner) return;
  const int64_t base = (t / inner) * C * inner + t % inner;
  T m = x[base];
  for (int64_t c = 1; c < C; ++c) {
    const T v = x[base + c * inner];
    m = v > m || isnan(v) ? v : m;
  }
  double s = 0;
  for (int64_t c = 0; c < C; ++c) {
    const T e = exp(x[base + c * inner] - m);
    y[base + c * inner] = e;
    s += static_cast<double>(e);
  }
  for (int64_t c = 0; c < C; ++c)
    y[base + c * inner] = static_cast<T>(static_cast<double>(y[base + c * inner]) / s);
}

template <typename T>
__global__ void softmax_backward_kernel(const T* y, const T* dy, T* dx, int64_t outer, int64_t C,
                                        int64_t inner) {
  const int64_t t = thread_index();
  if (t >= outer * inner) return;
  const int64_t base = (t / inner) * C * inner + t % inner;
  double dot = 0;
  for (int64_t c = 0; c < C; ++c)
    dot += static_cast<double>(dy[base + c * inner]) * static_cast<double>(y[base + c * inner]);
  for (int64_t c = 0; c < C; ++c) {
    const int64_t at = base + c * inner;
    dx[at] = static_cast<T>(static_cast<double>(y[at]) * (static_cast<double>(dy[at]) - dot));
  }
}

}  // namespace

void CudaBackend::softmax_forward(const Tensor& x, int axis, Tensor& y) {
  const AxisDims d = check_softmax("softmax", x, y, Tensor(), axis, device());
  const int64_t n = d.outer * d.inner;
  if (x.dtype() == DType::f32)
    launch(n, softmax_forward_kernel<float>, x.device_data<float>(), y.device_data<float>(),
           d.outer, d.C, d.inner);
  else
    launch(n, softmax_forward_kernel<double>, x.device_data<double>(), y.device_data<double>(),
           d.outer, d.C, d.inner);
}

void CudaBackend::softmax_backward(const Tensor& y, const Tensor& dy, int axis, Tensor& dx) {
  const AxisDims d = check_softmax("softmax backward", y, dx, dy, axis, device());
  const int64_t n = d.outer * d.inner;
  if (y.dtype() == DType::f32)
    launch(n, softmax_backward_kernel<float>, y.device_data<float>(), dy.device_data<float>(),
           dx.device_data<float>(), d.outer, d.C, d.inner);
  else
    launch(n, softmax_backward_kernel<double>, y.device_data<double>(), dy.device_data<double>(),
           dx.device_data<double>(), d.outer, d.C, d.inner);
}

}  // namespace frugal
