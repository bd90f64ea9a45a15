// Affine coupling kernels of the CUDA backend: one thread per element of x, the same arithmetic
// as the CPU twin (core/cpu/affine.cpp). A scale below min_scale or not finite records the
// smallest such element (atomicMin: the same in any order); the host then reports it as the
// CPU does (core/kernel_checks.h).
#include <limits>

#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {

__device__ inline float device_tanh(float x) {
  return tanhf(x);
}
__device__ inline double device_tanh(double x) {
  return tanh(x);
}

// x (N,m)  h (N,2m)  y (N,m):  y = x·s + t  or  (x - t) / s.  y may alias x.
template <typename T>
__global__ void affine_forward_kernel(const T* x, const T* h, T clamp, T min_scale, bool inverse,
                                      T* y, unsigned long long* bad, int64_t m, int64_t n) {
  const int64_t i = thread_index();
  if (i >= n) return;
  const int64_t r = i / m, j = i % m;
  const T hs = h[r * 2 * m + j], t = h[r * 2 * m + m + j];
  const T s = device_exp(clamp * device_tanh(hs / clamp));
  if (!(s >= min_scale) || !isfinite(s)) atomicMin(bad, static_cast<unsigned long long>(i));
  y[i] = inverse ? (x[i] - t) / s : x[i] * s + t;
}

// y (N,m)  h (N,2m)  dy (N,m)  dx (N,m)  dh (N,2m)  x (N,m) or null; see the CPU twin.
template <typename T>
__global__ void affine_backward_kernel(const T* y, const T* h, const T* dy, T clamp, T min_scale,
                                       bool inverse, T* dx, T* dh, T* x, unsigned long long* bad,
                                       int64_t m, int64_t n) {
  const int64_t i = thread_index();
  if (i >= n) return;
  const int64_t hi = i / m * 2 * m + i % m;
  const T u = device_tanh(h[hi] / clamp), t = h[hi + m];
  const T s = device_exp(clamp * u), d = dy[i];
  if (!(s >= min_scale) || !isfinite(s)) atomicMin(bad, static_cast<unsigned long long>(i));
  if (inverse) {
    dx[i] = d / s;
    dh[hi] = -d * y[i] * (T(1) - u * u);
    dh[hi + m] = -d / s;
  } else {
    dx[i] = d * s;
    dh[hi] = d * (y[i] - t) * (T(1) - u * u);
    dh[hi + m] = d;
    if (x) x[i] = (y[i] - t) / s;
  }
}

int64_t row_elements(const Tensor& x) {
  return x.shape()[0] == 0 ? 0 : x.numel() / x.shape()[0];
}

// Throws for element `bad` (if any), reading its h_s back from the device.
template <typename T>
void report(unsigned long long* status, const Tensor& h, int64_t m, double clamp, double min_scale,
            const Shape& shape, const std::string& who) {
  unsigned long long bad = 0;
  FRUGAL_CUDA_CHECK(cudaMemcpy(&bad, status, sizeof bad, cudaMemcpyDeviceToHost));
  if (bad == std::numeric_limits<unsigned long long>::max()) return;
  const int64_t i = static_cast<int64_t>(bad);
  T hs{};
  FRUGAL_CUDA_CHECK(cudaMemcpy(&hs, h.device_data<T>() + i / m * 2 * m + i % m, sizeof hs,
                               cudaMemcpyDeviceToHost));
  const T c = static_cast<T>(clamp);
  const double s = static_cast<double>(std::exp(c * std::tanh(hs / c)));
  throw_affine_scale(static_cast<double>(hs), s, i, shape, clamp, min_scale, who);
}

}  // namespace

void CudaBackend::affine_forward(const Tensor& x, const Tensor& h, double clamp, double min_scale,
                                 bool inverse, Tensor& y, const std::string& who) {
  check_affine_forward(x, h, y, device());
  const int64_t n = x.numel(), m = row_elements(x);
  FRUGAL_CUDA_CHECK(cudaMemsetAsync(status_, 0xff, sizeof *status_));
  auto run = [&](auto zero) {
    using T = decltype(zero);
    launch(n, affine_forward_kernel<T>, x.device_data<T>(), h.device_data<T>(),
           static_cast<T>(clamp), static_cast<T>(min_scale), inverse, y.device_data<T>(), status_,
           m, n);
    report<T>(status_, h, m, clamp, min_scale, x.shape(), who);
  };
  if (x.dtype() == DType::f32)
    run(0.0f);
  else
    run(0.0);
}

void CudaBackend::affine_backward(const Tensor& y, const Tensor& h, const Tensor& dy, double clamp,
                                  double min_scale, bool inverse, Tensor& dx, Tensor& dh, Tensor& x,
                                  const std::string& who) {
  check_affine_backward(y, h, dy, dx, dh, x, device());
  const int64_t n = y.numel(), m = row_elements(y);
  FRUGAL_CUDA_CHECK(cudaMemsetAsync(status_, 0xff, sizeof *status_));
  auto run = [&](auto zero) {
    using T = decltype(zero);
    launch(n, affine_backward_kernel<T>, y.device_data<T>(), h.device_data<T>(),
           dy.device_data<T>(), static_cast<T>(clamp), static_cast<T>(min_scale), inverse,
           dx.device_data<T>(), dh.device_data<T>(),
           x.defined() ? x.device_data<T>() : static_cast<T*>(nullptr), status_, m, n);
    report<T>(status_, h, m, clamp, min_scale, y.shape(), who);
  };
  if (y.dtype() == DType::f32)
    run(0.0f);
  else
    run(0.0);
}

}  // namespace frugal
