// Fill, copy, accumulate, subtract, the finiteness check and the SGD and AdamW steps of the
// CUDA backend: one thread per element.
#include "core/adamw.h"
#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {
// t (n) = value
template <typename T>
__global__ void fill_kernel(T* t, T value, int64_t n) {
  const int64_t i = thread_index();
  if (i < n) t[i] = value;
}

// x (n)  y (n):  y += x
template <typename T>
__global__ void accumulate_kernel(const T* x, T* y, int64_t n) {
  const int64_t i = thread_index();
  if (i < n) y[i] += x[i];
}

// t (n):  *first = min over n of the i with t[i] NaN or +-inf (a minimum: the same in any order)
template <typename T>
__global__ void first_non_finite_kernel(const T* t, unsigned long long* first, int64_t n) {
  const int64_t i = thread_index();
  if (i < n && !isfinite(t[i])) atomicMin(first, static_cast<unsigned long long>(i));
}

// a (n)  b (n)  y (n):  y = a - b; y may alias a or b
template <typename T>
__global__ void subtract_kernel(const T* a, const T* b, T* y, int64_t n) {
  const int64_t i = thread_index();
  if (i < n) y[i] = a[i] - b[i];
}

// w, dw, v (n):  g = dw + wd w;  v = m v + g;  w -= lr v
template <typename T>
__global__ void sgd_kernel(T* w, const T* dw, T* v, T lr, T m, T wd, int64_t n) {
  const int64_t i = thread_index();
  if (i >= n) return;
  const T g = dw[i] + wd * w[i];
  v[i] = m * v[i] + g;
  w[i] -= lr * v[i];
}

template <typename T>
void sgd_t(Tensor& w, const Tensor& dw, Tensor& v, const OptimizerConfig& c) {
  launch(w.numel(), sgd_kernel<T>, w.device_data<T>(), dw.device_data<T>(), v.device_data<T>(),
         static_cast<T>(c.lr), static_cast<T>(c.momentum), static_cast<T>(c.weight_decay),
         w.numel());
}

template <typename T>
__global__ void adamw_kernel(T* w, const T* dw, T* m, T* v, AdamwScalars<T> k, int64_t n) {
  const int64_t i = thread_index();
  if (i < n) adamw_element(k, w[i], dw[i], m[i], v[i]);
}

template <typename T>
void adamw_t(Tensor& w, const Tensor& dw, Tensor& m, Tensor& v, const OptimizerConfig& c) {
  launch(w.numel(), adamw_kernel<T>, w.device_data<T>(), dw.device_data<T>(), m.device_data<T>(),
         v.device_data<T>(), adamw_scalars<T>(c), w.numel());
}
}  // namespace

void CudaBackend::fill(Tensor& t, double value) {
  check_device("fill", {&t}, device());
  const int64_t n = t.numel();
  switch (t.dtype()) {
    case DType::f32:
      launch(n, fill_kernel<float>, t.device_data<float>(), static_cast<float>(value), n);
      break;
    case DType::f64:
      launch(n, fill_kernel<double>, t.device_data<double>(), value, n);
      break;
    case DType::i32:
      launch(n, fill_kernel<int32_t>, t.device_data<int32_t>(), static_cast<int32_t>(value), n);
      break;
    case DType::u8:
      FRUGAL_CUDA_CHECK(cudaMemsetAsync(t.device_raw(), static_cast<int>(value), t.bytes()));
      break;
  }
}

// Device to device runs on the stream; a copy with host memory on either side returns when the
// host may read or reuse its side.
void CudaBackend::copy(const Tensor& x, Tensor& y) {
  check_copy(x, y);
  if (x.bytes() == 0 || x.device_raw() == y.device_raw()) return;
  if (x.device().kind == DeviceKind::cuda && y.device().kind == DeviceKind::cuda)
    FRUGAL_CUDA_CHECK(
        cudaMemcpyAsync(y.device_raw(), x.device_raw(), x.bytes(), cudaMemcpyDeviceToDevice));
  else
    FRUGAL_CUDA_CHECK(cudaMemcpy(y.device_raw(), x.device_raw(), x.bytes(), cudaMemcpyDefault));
}

void CudaBackend::copy_to_device(const Tensor& host, Tensor& dev) {
  FRUGAL_CHECK(host.device().is_host() && host.bytes() == dev.bytes(), "copy_to_device: host ",
               host.shape(), " (", host.device().str(), ") and device ", dev.shape(),
               " must be host memory of the same size");
  check_device("copy_to_device", {&dev}, device());
  if (host.bytes() == 0) return;
  FRUGAL_CUDA_CHECK(cudaMemcpy(dev.device_raw(), host.raw(), host.bytes(), cudaMemcpyHostToDevice));
}

void CudaBackend::copy_to_host(const Tensor& dev, Tensor& host) {
  FRUGAL_CHECK(host.device().is_host() && host.bytes() == dev.bytes(), "copy_to_host: device ",
               dev.shape(), " and host ", host.shape(), " (", host.device().str(),
               ") must be host memory of the same size");
  check_device("copy_to_host", {&dev}, device());
  if (dev.bytes() == 0) return;
  FRUGAL_CUDA_CHECK(cudaMemcpy(host.raw(), dev.device_raw(), dev.bytes(), cudaMemcpyDeviceToHost));
}

void CudaBackend::accumulate(const Tensor& x, Tensor& y) {
  check_same("accumulate", x, y, device());
  if (x.dtype() == DType::f32)
    launch(x.numel(), accumulate_kernel<float>, x.device_data<float>(), y.device_data<float>(),
           x.numel());
  else
    launch(x.numel(), accumulate_kernel<double>, x.device_data<double>(), y.device_data<double>(),
           x.numel());
}

int64_t CudaBackend::first_non_finite(const Tensor& t) {
  check_device("first_non_finite", {&t}, device());
  if (t.dtype() != DType::f32 && t.dtype() != DType::f64) return -1;
  const int64_t n = t.numel();
  FRUGAL_CUDA_CHECK(cudaMemsetAsync(status_, 0xff, sizeof *status_));
  if (t.dtype() == DType::f32)
    launch(n, first_non_finite_kernel<float>, t.device_data<float>(), status_, n);
  else
    launch(n, first_non_finite_kernel<double>, t.device_data<double>(), status_, n);
  unsigned long long first = 0;
  FRUGAL_CUDA_CHECK(cudaMemcpy(&first, status_, sizeof first, cudaMemcpyDeviceToHost));
  return first == ~0ull ? -1 : static_cast<int64_t>(first);
}

void CudaBackend::subtract(const Tensor& a, const Tensor& b, Tensor& y) {
  check_subtract(a, b, y, device());
  const int64_t n = a.numel();
  if (a.dtype() == DType::f32)
    launch(n, subtract_kernel<float>, a.device_data<float>(), b.device_data<float>(),
           y.device_data<float>(), n);
  else
    launch(n, subtract_kernel<double>, a.device_data<double>(), b.device_data<double>(),
           y.device_data<double>(), n);
}

void CudaBackend::sgd_step(Tensor& w, const Tensor& dw, Tensor& v, const OptimizerConfig& c) {
  check_sgd(w, dw, v, device());
  if (w.dtype() == DType::f32)
    sgd_t<float>(w, dw, v, c);
  else
    sgd_t<double>(w, dw, v, c);
}

void CudaBackend::adamw_step(Tensor& w, const Tensor& dw, Tensor& m, Tensor& v,
                             const OptimizerConfig& c) {
  check_adamw(w, dw, m, v, c, device());
  if (w.dtype() == DType::f32)
    adamw_t<float>(w, dw, m, v, c);
  else
    adamw_t<double>(w, dw, m, v, c);
}

}  // namespace frugal
