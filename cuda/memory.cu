// Fill, copy, accumulate, subtract and the SGD step of the CUDA backend: one thread per element.
#include "cuda/cuda_backend.h"
#include "cuda/kernel_checks.h"
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
void sgd_t(Tensor& w, const Tensor& dw, Tensor& v, const SgdConfig& c) {
  launch(w.numel(), sgd_kernel<T>, w.data<T>(), dw.data<T>(), v.data<T>(), static_cast<T>(c.lr),
         static_cast<T>(c.momentum), static_cast<T>(c.weight_decay), w.numel());
}
}  // namespace

void CudaBackend::fill(Tensor& t, double value) {
  check_on_device("fill", {&t});
  const int64_t n = t.numel();
  switch (t.dtype()) {
    case DType::f32:
      launch(n, fill_kernel<float>, t.data<float>(), static_cast<float>(value), n);
      break;
    case DType::f64:
      launch(n, fill_kernel<double>, t.data<double>(), value, n);
      break;
    case DType::i32:
      launch(n, fill_kernel<int32_t>, t.data<int32_t>(), static_cast<int32_t>(value), n);
      break;
    case DType::u8:
      FRUGAL_CUDA_CHECK(cudaMemsetAsync(t.raw(), static_cast<int>(value), t.bytes()));
      break;
  }
}

// Device to device runs on the stream; a copy with host memory on either side returns when the
// host may read or reuse its side.
void CudaBackend::copy(const Tensor& x, Tensor& y) {
  FRUGAL_CHECK(x.bytes() == y.bytes(), "copy: ", x.shape(), " and ", y.shape(), " differ in size");
  if (x.bytes() == 0 || x.raw() == y.raw()) return;
  if (x.device().kind == DeviceKind::cuda && y.device().kind == DeviceKind::cuda)
    FRUGAL_CUDA_CHECK(cudaMemcpyAsync(y.raw(), x.raw(), x.bytes(), cudaMemcpyDeviceToDevice));
  else
    FRUGAL_CUDA_CHECK(cudaMemcpy(y.raw(), x.raw(), x.bytes(), cudaMemcpyDefault));
}

void CudaBackend::accumulate(const Tensor& x, Tensor& y) {
  FRUGAL_CHECK(x.meta() == y.meta(), "accumulate: ", x.shape(), " into ", y.shape());
  check_same("accumulate", x, y);
  if (x.dtype() == DType::f32)
    launch(x.numel(), accumulate_kernel<float>, x.data<float>(), y.data<float>(), x.numel());
  else
    launch(x.numel(), accumulate_kernel<double>, x.data<double>(), y.data<double>(), x.numel());
}

void CudaBackend::subtract(const Tensor& a, const Tensor& b, Tensor& y) {
  FRUGAL_CHECK(a.meta() == b.meta() && a.meta() == y.meta(), "subtract: a ", a.shape(), " b ",
               b.shape(), " y ", y.shape(), " must match");
  check_same("subtract", a, y);
  check_on_device("subtract", {&b});
  const int64_t n = a.numel();
  if (a.dtype() == DType::f32)
    launch(n, subtract_kernel<float>, a.data<float>(), b.data<float>(), y.data<float>(), n);
  else
    launch(n, subtract_kernel<double>, a.data<double>(), b.data<double>(), y.data<double>(), n);
}

void CudaBackend::sgd_step(Tensor& w, const Tensor& dw, Tensor& v, const SgdConfig& c) {
  FRUGAL_CHECK(w.meta() == dw.meta() && w.meta() == v.meta(), "sgd: weight ", w.shape(),
               ", gradient ", dw.shape(), ", momentum ", v.shape(), " must match");
  check_same("sgd", w, dw);
  check_on_device("sgd", {&v});
  if (w.dtype() == DType::f32)
    sgd_t<float>(w, dw, v, c);
  else
    sgd_t<double>(w, dw, v, c);
}

}  // namespace frugal
