// Threshold, dropout, masked scale (their shared backward), add and channel concatenation of
// the CUDA backend. Elementwise kernels run one thread per element, each element read before
// it is written by the same thread, so in place (y aliasing x) gives the same bits. Dropout
// draws from the same counter-based generator as core/rng.cpp: its masks equal the CPU's.
#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {
// core/rng.cpp's random_uniform(seed, stream, index), on the device (splitmix64 mixing).
__device__ inline uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
__device__ inline double device_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
  return static_cast<double>(mix(mix(mix(seed) ^ stream) ^ index) >> 11) * 0x1.0p-53;
}

// x (n)  y (n)  mask (ceil(n/8)) or null:  y = x <= th ? value : x (NaN kept), bit = x > th
template <typename T>
__global__ void threshold_forward_kernel(const T* x, T th, T value, T* y, uint8_t* mask,
                                         int64_t n) {
  const int64_t i = thread_index();
  bool keep = false;
  if (i < n) {
    const T xi = x[i];
    keep = xi > th;
    y[i] = xi <= th ? value : xi;
  }
  store_mask_bit(mask, i, n, keep);
}

// x (n)  y (n)  mask (ceil(n/8)) or null:  keep = uniform(seed, stream, i) >= p;
// y = keep ? x * scale : x - x (+0, or NaN where x is NaN or +-inf, as the CPU twin)
template <typename T>
__global__ void dropout_forward_kernel(const T* x, double p, uint64_t seed, uint64_t stream,
                                       T scale, T* y, uint8_t* mask, int64_t n) {
  const int64_t i = thread_index();
  bool keep = false;
  if (i < n) {
    const T xi = x[i];
    keep = device_uniform(seed, stream, static_cast<uint64_t>(i)) >= p;
    y[i] = keep ? xi * scale : xi - xi;
  }
  store_mask_bit(mask, i, n, keep);
}

// dy (n)  mask (ceil(n/8))  dx (n):  dx = bit ? dy * scale : 0
template <typename T>
__global__ void masked_scale_kernel(const T* dy, const uint8_t* mask, T scale, T* dx, int64_t n) {
  const int64_t i = thread_index();
  if (i < n) dx[i] = mask_bit(mask, i) ? dy[i] * scale : T(0);
}

// a (n)  b (n)  y (n):  y = a + b
template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* y, int64_t n) {
  const int64_t i = thread_index();
  if (i < n) y[i] = a[i] + b[i];
}

template <typename T>
void dropout_t(const Tensor& x, double p, uint64_t seed, uint64_t stream, Tensor& y,
               uint8_t* mask) {
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  launch(x.numel(), dropout_forward_kernel<T>, x.device_data<T>(), p, seed, stream, scale,
         y.device_data<T>(), mask, x.numel());
}
}  // namespace

void CudaBackend::threshold_forward(const Tensor& x, double threshold, double value, Tensor& y,
                                    Tensor& mask) {
  check_same("threshold", x, y, device());
  check_mask("threshold", mask, x.numel(), device());
  uint8_t* m = mask.defined() ? mask.device_data<uint8_t>() : nullptr;
  const int64_t n = x.numel();
  if (x.dtype() == DType::f32)
    launch(n, threshold_forward_kernel<float>, x.device_data<float>(),
           static_cast<float>(threshold), static_cast<float>(value), y.device_data<float>(), m, n);
  else
    launch(n, threshold_forward_kernel<double>, x.device_data<double>(), threshold, value,
           y.device_data<double>(), m, n);
}

void CudaBackend::dropout_forward(const Tensor& x, double p, uint64_t seed, uint64_t stream,
                                  Tensor& y, Tensor& mask) {
  check_same("dropout", x, y, device());
  check_mask("dropout", mask, x.numel(), device());
  check_dropout_p(p);
  uint8_t* m = mask.defined() ? mask.device_data<uint8_t>() : nullptr;
  if (x.dtype() == DType::f32)
    dropout_t<float>(x, p, seed, stream, y, m);
  else
    dropout_t<double>(x, p, seed, stream, y, m);
}

void CudaBackend::masked_scale(const Tensor& dy, const Tensor& mask, double scale, Tensor& dx) {
  check_same("masked_scale", dy, dx, device());
  check_required_mask("masked_scale", mask, dy.numel(), device());
  const uint8_t* m = mask.device_data<uint8_t>();
  const int64_t n = dy.numel();
  if (dy.dtype() == DType::f32)
    launch(n, masked_scale_kernel<float>, dy.device_data<float>(), m, static_cast<float>(scale),
           dx.device_data<float>(), n);
  else
    launch(n, masked_scale_kernel<double>, dy.device_data<double>(), m, scale,
           dx.device_data<double>(), n);
}

void CudaBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  check_add(a, b, y, device());
  const int64_t n = a.numel();
  if (a.dtype() == DType::f32)
    launch(n, add_kernel<float>, a.device_data<float>(), b.device_data<float>(),
           y.device_data<float>(), n);
  else
    launch(n, add_kernel<double>, a.device_data<double>(), b.device_data<double>(),
           y.device_data<double>(), n);
}

// Channel concatenation as 2-D copies: part i is, for each of the N samples, one contiguous
// block of Ci*H*W elements at byte offset (sum_{j<i} Cj)*H*W inside y's sample. Backward skips
// undefined parts, which still carry their shape.
namespace {
void concat_copy(std::span<const Tensor> xs, const Tensor& y, bool to_y) {
  const int64_t N = y.shape()[0];
  if (N == 0) return;
  const size_t y_sample = y.bytes() / static_cast<size_t>(N);
  size_t offset = 0;
  for (const Tensor& x : xs) {
    const size_t x_sample = x.bytes() / static_cast<size_t>(N);
    if (x.defined() && x_sample > 0) {
      char* yp = static_cast<char*>(y.device_raw()) + offset;
      if (to_y)
        FRUGAL_CUDA_CHECK(cudaMemcpy2DAsync(yp, y_sample, x.device_raw(), x_sample, x_sample,
                                            static_cast<size_t>(N), cudaMemcpyDeviceToDevice));
      else
        FRUGAL_CUDA_CHECK(cudaMemcpy2DAsync(x.device_raw(), x_sample, yp, y_sample, x_sample,
                                            static_cast<size_t>(N), cudaMemcpyDeviceToDevice));
    }
    offset += x_sample;
  }
}
}  // namespace

void CudaBackend::concat_forward(std::span<const Tensor> xs, Tensor& y) {
  check_concat_forward(xs, y, device());
  concat_copy(xs, y, true);
}

void CudaBackend::concat_backward(const Tensor& dy, std::span<Tensor> dxs) {
  check_concat("concat backward", dxs, dy, device());
  concat_copy(dxs, dy, false);
}

}  // namespace frugal
