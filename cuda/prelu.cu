// PReLU kernels of the CUDA backend, following the CPU twin's semantics: one thread per element
// for y and dx (the same bits as the CPU's), one block per channel for the slope's gradient
// (block_sum's fixed tree in double; the channels' sums in order where one slope serves them
// all). No atomics: the same bits on every run.
#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {

template <typename T>
__global__ void prelu_forward_kernel(ChannelDims d, const T* x, const T* slope, bool shared, T* y) {
  const int64_t i = thread_index();
  if (i >= d.N * d.C * d.S) return;
  const T a = slope[shared ? 0 : (i / d.S) % d.C];
  y[i] = x[i] > T(0) ? x[i] : a * x[i];
}

template <typename T>
__global__ void prelu_dx_kernel(ChannelDims d, const T* x, const T* dy, const T* slope, bool shared,
                                T* dx) {
  const int64_t i = thread_index();
  if (i >= d.N * d.C * d.S) return;
  const T a = slope[shared ? 0 : (i / d.S) % d.C];
  dx[i] = x[i] > T(0) ? dy[i] : a * dy[i];
}

// Channel c's sum of x dy where x <= 0 over every sample, by the calling block.
template <typename T>
__device__ double channel_dslope(const ChannelDims& d, const T* x, const T* dy, int64_t c) {
  double s = 0;
  for (int64_t k = threadIdx.x; k < d.N * d.S; k += kThreads) {
    const int64_t i = ((k / d.S) * d.C + c) * d.S + k % d.S;
    if (!(x[i] > T(0))) s += static_cast<double>(x[i]) * dy[i];
  }
  return block_sum(s);
}

// Block c: dslope[c]; or, with one slope for every channel, one block summing the channels'
// sums in order.
template <typename T>
__global__ void prelu_dslope_kernel(ChannelDims d, const T* x, const T* dy, bool shared,
                                    T* dslope) {
  double s = 0;
  if (shared)
    for (int64_t c = 0; c < d.C; ++c) s += channel_dslope(d, x, dy, c);
  else
    s = channel_dslope(d, x, dy, blockIdx.x);
  if (threadIdx.x == 0) dslope[shared ? 0 : blockIdx.x] = static_cast<T>(s);
}

template <typename T>
void backward_t(const ChannelDims& d, const Tensor& x, const Tensor& dy, const Tensor& slope,
                bool shared, Tensor& dx, Tensor& dslope) {
  const T *xp = x.device_data<T>(), *dyp = dy.device_data<T>();
  if (dslope.defined())
    launch_blocks(shared ? 1 : d.C, prelu_dslope_kernel<T>, d, xp, dyp, shared,
                  dslope.device_data<T>());
  if (dx.defined())
    launch(d.N * d.C * d.S, prelu_dx_kernel<T>, d, xp, dyp, slope.device_data<T>(), shared,
           dx.device_data<T>());
}

}  // namespace

void CudaBackend::prelu_forward(const Tensor& x, const Tensor& slope, Tensor& y) {
  check_defined("prelu", "y", y);
  const ChannelDims d = check_prelu("prelu", x, slope, {&y}, Tensor(), device());
  const bool shared = slope.numel() == 1 && d.C > 1;
  if (x.dtype() == DType::f32)
    launch(d.N * d.C * d.S, prelu_forward_kernel<float>, d, x.device_data<float>(),
           slope.device_data<float>(), shared, y.device_data<float>());
  else
    launch(d.N * d.C * d.S, prelu_forward_kernel<double>, d, x.device_data<double>(),
           slope.device_data<double>(), shared, y.device_data<double>());
}

void CudaBackend::prelu_backward(const Tensor& x, const Tensor& dy, const Tensor& slope, Tensor& dx,
                                 Tensor& dslope, const Tensor& /*scratch: none needed*/) {
  check_defined("prelu backward", "dy", dy);
  const ChannelDims d = check_prelu("prelu backward", x, slope, {&dy, &dx}, dslope, device());
  const bool shared = slope.numel() == 1 && d.C > 1;
  if (x.dtype() == DType::f32)
    backward_t<float>(d, x, dy, slope, shared, dx, dslope);
  else
    backward_t<double>(d, x, dy, slope, shared, dx, dslope);
}

}  // namespace frugal
