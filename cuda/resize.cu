// The CUDA backend's resizing, bilinear and bicubic: forward one thread per output element;
// backward one thread per (n, c) plane walking the outputs in the CPU's order (no atomics: the same
// sums every run, in the CPU's order, though not always its bits where the compiler fuses a
// multiply and add differently).
#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {

template <typename T>
__global__ void resize_forward_kernel(ResizeGeometry g, const T* x, T* y) {
  const int64_t i = thread_index();
  if (i >= g.N * g.C * g.P * g.Q) return;
  const int64_t q = i % g.Q, p = (i / g.Q) % g.P, nc = i / (g.P * g.Q);
  const ResizeTap r = resize_tap(p, g.H, g.P, g.scale_h, g.mode);
  const ResizeTap c = resize_tap(q, g.W, g.Q, g.scale_w, g.mode);
  const T h1 = static_cast<T>(r.l1), h0 = T(1) - h1, w1 = static_cast<T>(c.l1), w0 = T(1) - w1;
  const T* a = x + (nc * g.H + r.i0) * g.W;
  const T* b = x + (nc * g.H + r.i1) * g.W;
  y[i] = h0 * (w0 * a[c.i0] + w1 * a[c.i1]) + h1 * (w0 * b[c.i0] + w1 * b[c.i1]);
}

template <typename T>
__global__ void resize_backward_kernel(ResizeGeometry g, const T* dy, T* dx) {
  const int64_t nc = thread_index();
  if (nc >= g.N * g.C) return;
  T* dp = dx + nc * g.H * g.W;
  const T* gp = dy + nc * g.P * g.Q;
  for (int64_t i = 0; i < g.H * g.W; ++i) dp[i] = T(0);
  for (int64_t p = 0; p < g.P; ++p) {
    const ResizeTap r = resize_tap(p, g.H, g.P, g.scale_h, g.mode);
    const T h1 = static_cast<T>(r.l1), h0 = T(1) - h1;
    for (int64_t q = 0; q < g.Q; ++q) {
      const ResizeTap c = resize_tap(q, g.W, g.Q, g.scale_w, g.mode);
      const T w1 = static_cast<T>(c.l1), w0 = T(1) - w1;
      const T d = gp[p * g.Q + q];
      dp[r.i0 * g.W + c.i0] += h0 * w0 * d;
      dp[r.i0 * g.W + c.i1] += h0 * w1 * d;
      dp[r.i1 * g.W + c.i0] += h1 * w0 * d;
      dp[r.i1 * g.W + c.i1] += h1 * w1 * d;
    }
  }
}

template <typename T>
__global__ void cubic_forward_kernel(ResizeGeometry g, const T* x, T* y) {
  const int64_t i = thread_index();
  if (i >= g.N * g.C * g.P * g.Q) return;
  const int64_t q = i % g.Q, p = (i / g.Q) % g.P, nc = i / (g.P * g.Q);
  const ResizeCubicTap r = resize_cubic_tap(p, g.H, g.P, g.scale_h, g.mode, g.cubic_a);
  const ResizeCubicTap c = resize_cubic_tap(q, g.W, g.Q, g.scale_w, g.mode, g.cubic_a);
  y[i] = resize_cubic_value(x + nc * g.H * g.W, g.W, r, c);
}

template <typename T>
__global__ void cubic_backward_kernel(ResizeGeometry g, const T* dy, T* dx) {
  const int64_t nc = thread_index();
  if (nc >= g.N * g.C) return;
  T* dp = dx + nc * g.H * g.W;
  const T* gp = dy + nc * g.P * g.Q;
  for (int64_t i = 0; i < g.H * g.W; ++i) dp[i] = T(0);
  for (int64_t p = 0; p < g.P; ++p) {
    const ResizeCubicTap r = resize_cubic_tap(p, g.H, g.P, g.scale_h, g.mode, g.cubic_a);
    for (int64_t q = 0; q < g.Q; ++q) {
      const ResizeCubicTap c = resize_cubic_tap(q, g.W, g.Q, g.scale_w, g.mode, g.cubic_a);
      resize_cubic_add(dp, g.W, r, c, gp[p * g.Q + q]);
    }
  }
}

}  // namespace

void CudaBackend::resize_forward(const ResizeGeometry& g, const Tensor& x, Tensor& y) {
  check_resize("resize", g, x, y, device());
  const int64_t n = g.N * g.C * g.P * g.Q;
  const bool cubic = g.method == ResizeMethod::cubic;
  if (x.dtype() == DType::f32)
    launch(n, cubic ? cubic_forward_kernel<float> : resize_forward_kernel<float>, g,
           x.device_data<float>(), y.device_data<float>());
  else
    launch(n, cubic ? cubic_forward_kernel<double> : resize_forward_kernel<double>, g,
           x.device_data<double>(), y.device_data<double>());
}

void CudaBackend::resize_backward(const ResizeGeometry& g, const Tensor& dy, Tensor& dx) {
  check_resize("resize backward", g, dx, dy, device());
  const int64_t planes = g.N * g.C;
  const bool cubic = g.method == ResizeMethod::cubic;
  if (dy.dtype() == DType::f32)
    launch(planes, cubic ? cubic_backward_kernel<float> : resize_backward_kernel<float>, g,
           dy.device_data<float>(), dx.device_data<float>());
  else
    launch(planes, cubic ? cubic_backward_kernel<double> : resize_backward_kernel<double>, g,
           dy.device_data<double>(), dx.device_data<double>());
}

}  // namespace frugal
