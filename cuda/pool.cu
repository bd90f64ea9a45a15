// Max and average pooling kernels of the CUDA backend. Forward: one thread per output (the
// average a block per output for windows of 512 taps or more: global pools). Backward:
// one thread per input element gathers from the outputs whose windows cover it, in (p, q)
// order: the CPU twin's scatter order, without atomics, so sums are the same bits as the CPU's.
#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {

__host__ __device__ inline int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
__host__ __device__ inline int64_t max64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

// Window of output (p, q), as the CPU twin: taps [i0, i1) x [j0, j1) inside the input, tap
// (i, j) at (hs + i*dilation_h, ws + j*dilation_w); area counts padding up to H + pad_h_end,
// W + pad_w_end (count_include_pad), or only the elements inside the input.
struct Window {
  int64_t hs, ws, i0, i1, j0, j1, area;
};

__device__ void taps_inside(int64_t s, int64_t k, int64_t dil, int64_t in, int64_t& t0,
                            int64_t& t1) {
  t0 = s >= 0 ? 0 : min64(k, (-s + dil - 1) / dil);
  t1 = in - s <= 0 ? t0 : max64(t0, min64(k, (in - s + dil - 1) / dil));
}

__device__ Window window(const Pool2dGeometry& g, int64_t p, int64_t q) {
  Window v;
  v.hs = p * g.stride_h - g.pad_h;
  v.ws = q * g.stride_w - g.pad_w;
  taps_inside(v.hs, g.kernel_h, g.dilation_h, g.H, v.i0, v.i1);
  taps_inside(v.ws, g.kernel_w, g.dilation_w, g.W, v.j0, v.j1);
  const int64_t he = min64(v.hs + g.kernel_h, g.H + g.pad_h_end);
  const int64_t we = min64(v.ws + g.kernel_w, g.W + g.pad_w_end);
  v.area = g.count_include_pad ? (he - v.hs) * (we - v.ws) : (v.i1 - v.i0) * (v.j1 - v.j0);
  return v;
}

// Outputs [lo, hi) along one axis whose windows (start o*stride - pad, k taps dil apart) span
// input i (a superset where dil > 1: the callers test the tap).
struct Range {
  int64_t lo, hi;
};
__device__ Range covering(int64_t i, int64_t out, int64_t k, int64_t stride, int64_t pad,
                          int64_t dil) {
  const int64_t a = i + pad - (k - 1) * dil;  // o*stride >= a
  return {a <= 0 ? 0 : (a + stride - 1) / stride, min64(out, (i + pad) / stride + 1)};
}

// x (N,C,H,W)  y (N,C,P,Q)  index (N,C,P,Q) u8 or null: row-major argmax in the full window;
// padding never wins, NaN wins, ties keep the first. One thread per output o.
template <typename T>
__global__ void maxpool2d_forward_kernel(Pool2dGeometry g, const T* x, T* y, uint8_t* index,
                                         int64_t n) {
  const int64_t o = thread_index();
  if (o >= n) return;
  const int64_t q = o % g.Q, p = o / g.Q % g.P, nc = o / (g.P * g.Q);
  const Window v = window(g, p, q);
  const T* xp = x + nc * g.H * g.W;
  int64_t best = v.i0 * g.kernel_w + v.j0;
  T m = xp[(v.hs + v.i0 * g.dilation_h) * g.W + v.ws + v.j0 * g.dilation_w];
  for (int64_t i = v.i0; i < v.i1; ++i)
    for (int64_t j = v.j0; j < v.j1; ++j) {
      const T val = xp[(v.hs + i * g.dilation_h) * g.W + v.ws + j * g.dilation_w];
      if (val > m || isnan(val)) {
        m = val;
        best = i * g.kernel_w + j;
      }
    }
  y[o] = m;
  if (index) index[o] = static_cast<uint8_t>(best);
}

// dy (N,C,P,Q)  index (N,C,P,Q)  dx (N,C,H,W): dx = sum of dy over the outputs whose argmax is
// this element. One thread per input element i.
template <typename T>
__global__ void maxpool2d_backward_kernel(Pool2dGeometry g, const T* dy, const uint8_t* index,
                                          T* dx, int64_t n) {
  const int64_t i = thread_index();
  if (i >= n) return;
  const int64_t w = i % g.W, h = i / g.W % g.H, nc = i / (g.H * g.W);
  const Range ps = covering(h, g.P, g.kernel_h, g.stride_h, g.pad_h, g.dilation_h);
  const Range qs = covering(w, g.Q, g.kernel_w, g.stride_w, g.pad_w, g.dilation_w);
  T sum = 0;
  for (int64_t p = ps.lo; p < ps.hi; ++p)
    for (int64_t q = qs.lo; q < qs.hi; ++q) {
      const int64_t o = (nc * g.P + p) * g.Q + q;
      const int64_t k = index[o];
      if (p * g.stride_h - g.pad_h + k / g.kernel_w * g.dilation_h == h &&
          q * g.stride_w - g.pad_w + k % g.kernel_w * g.dilation_w == w)
        sum += dy[o];
    }
  dx[i] = sum;
}

// x (N,C,H,W)  y (N,C,P,Q):  y = window sum / window area. One thread per output o.
template <typename T>
__global__ void avgpool2d_forward_kernel(Pool2dGeometry g, const T* x, T* y, int64_t n) {
  const int64_t o = thread_index();
  if (o >= n) return;
  const int64_t q = o % g.Q, p = o / g.Q % g.P, nc = o / (g.P * g.Q);
  const Window v = window(g, p, q);
  const T* xp = x + nc * g.H * g.W;
  T sum = 0;  // no dilation (check_avgpool)
  for (int64_t h = v.hs + v.i0; h < v.hs + v.i1; ++h)
    for (int64_t w = v.ws + v.j0; w < v.ws + v.j1; ++w) sum += xp[h * g.W + w];
  y[o] = sum / static_cast<T>(v.area);
}

// The same sums for large windows (global pools): a block per output, the window's taps in
// row-major order through ordered_block_sum. Adding them to +0 at the end gives the loop's
// sign of zero (the loop starts from +0; ordered_block_sum from the first tap).
template <typename T>
__global__ void avgpool2d_forward_blocks_kernel(Pool2dGeometry g, const T* x, T* y) {
  const int64_t o = blockIdx.x;
  const int64_t q = o % g.Q, p = o / g.Q % g.P, nc = o / (g.P * g.Q);
  const Window v = window(g, p, q);
  const int64_t cols = v.j1 - v.j0;
  const T* xp = x + nc * g.H * g.W + (v.hs + v.i0) * g.W + v.ws + v.j0;
  const T sum = ordered_block_sum<T>((v.i1 - v.i0) * cols,
                                     [&](int64_t t) { return xp[t / cols * g.W + t % cols]; });
  if (threadIdx.x == 0) y[o] = (T(0) + sum) / static_cast<T>(v.area);
}

// dy (N,C,P,Q)  dx (N,C,H,W):  dx = sum of dy / area over the windows holding the element.
template <typename T>
__global__ void avgpool2d_backward_kernel(Pool2dGeometry g, const T* dy, T* dx, int64_t n) {
  const int64_t i = thread_index();
  if (i >= n) return;
  const int64_t w = i % g.W, h = i / g.W % g.H, nc = i / (g.H * g.W);
  const Range ps = covering(h, g.P, g.kernel_h, g.stride_h, g.pad_h, 1);
  const Range qs = covering(w, g.Q, g.kernel_w, g.stride_w, g.pad_w, 1);
  T sum = 0;
  for (int64_t p = ps.lo; p < ps.hi; ++p)
    for (int64_t q = qs.lo; q < qs.hi; ++q)
      sum += dy[(nc * g.P + p) * g.Q + q] / static_cast<T>(window(g, p, q).area);
  dx[i] = sum;
}

// x (N,C,H,W)  y (N,C,H kh,W kw); one thread per element of y.
template <typename T>
__global__ void upsample_nearest_forward_kernel(Pool2dGeometry g, const T* x, T* y, int64_t n) {
  const int64_t i = thread_index();
  if (i >= n) return;
  const int64_t q = i % g.Q, p = i / g.Q % g.P, nc = i / (g.P * g.Q);
  y[i] = x[(nc * g.H + p / g.kernel_h) * g.W + q / g.kernel_w];
}

// dy (N,C,H kh,W kw)  dx (N,C,H,W); one thread per element of dx, its block summed row by row
// as the CPU's loop does.
template <typename T>
__global__ void upsample_nearest_backward_kernel(Pool2dGeometry g, const T* dy, T* dx, int64_t n) {
  const int64_t i = thread_index();
  if (i >= n) return;
  const int64_t w = i % g.W, h = i / g.W % g.H, nc = i / (g.H * g.W);
  T sum = 0;
  for (int64_t a = 0; a < g.kernel_h; ++a)
    for (int64_t b = 0; b < g.kernel_w; ++b)
      sum += dy[(nc * g.P + h * g.kernel_h + a) * g.Q + w * g.kernel_w + b];
  dx[i] = sum;
}

}  // namespace

void CudaBackend::maxpool2d_forward(const Pool2dGeometry& g, const Tensor& x, Tensor& y,
                                    Tensor& index) {
  check_maxpool_forward(g, x, y, index, device());
  uint8_t* idx = index.defined() ? index.device_data<uint8_t>() : nullptr;
  const int64_t n = y.numel();
  if (x.dtype() == DType::f32)
    launch(n, maxpool2d_forward_kernel<float>, g, x.device_data<float>(), y.device_data<float>(),
           idx, n);
  else
    launch(n, maxpool2d_forward_kernel<double>, g, x.device_data<double>(), y.device_data<double>(),
           idx, n);
}

void CudaBackend::maxpool2d_backward(const Pool2dGeometry& g, const Tensor& dy, const Tensor& index,
                                     Tensor& dx) {
  check_maxpool_backward(g, dy, index, dx, device());
  const int64_t n = dx.numel();
  const uint8_t* idx = index.device_data<uint8_t>();
  if (dy.dtype() == DType::f32)
    launch(n, maxpool2d_backward_kernel<float>, g, dy.device_data<float>(), idx,
           dx.device_data<float>(), n);
  else
    launch(n, maxpool2d_backward_kernel<double>, g, dy.device_data<double>(), idx,
           dx.device_data<double>(), n);
}

void CudaBackend::avgpool2d_forward(const Pool2dGeometry& g, const Tensor& x, Tensor& y) {
  check_avgpool("avg_pool2d", g, x, y, device());
  const int64_t n = y.numel();
  if (ordered_blocks_pay(g.kernel_h * g.kernel_w, n)) {
    if (x.dtype() == DType::f32)
      launch_blocks(n, avgpool2d_forward_blocks_kernel<float>, g, x.device_data<float>(),
                    y.device_data<float>());
    else
      launch_blocks(n, avgpool2d_forward_blocks_kernel<double>, g, x.device_data<double>(),
                    y.device_data<double>());
  } else if (x.dtype() == DType::f32)
    launch(n, avgpool2d_forward_kernel<float>, g, x.device_data<float>(), y.device_data<float>(),
           n);
  else
    launch(n, avgpool2d_forward_kernel<double>, g, x.device_data<double>(), y.device_data<double>(),
           n);
}

void CudaBackend::avgpool2d_backward(const Pool2dGeometry& g, const Tensor& dy, Tensor& dx) {
  check_pool("avg_pool2d backward", g, dx, dy, device());
  const int64_t n = dx.numel();
  if (dy.dtype() == DType::f32)
    launch(n, avgpool2d_backward_kernel<float>, g, dy.device_data<float>(), dx.device_data<float>(),
           n);
  else
    launch(n, avgpool2d_backward_kernel<double>, g, dy.device_data<double>(),
           dx.device_data<double>(), n);
}

void CudaBackend::upsample_nearest_forward(const Pool2dGeometry& g, const Tensor& x, Tensor& y) {
  check_upsample("upsample_nearest2d", g, x, y, device());
  const int64_t n = y.numel();
  if (x.dtype() == DType::f32)
    launch(n, upsample_nearest_forward_kernel<float>, g, x.device_data<float>(),
           y.device_data<float>(), n);
  else
    launch(n, upsample_nearest_forward_kernel<double>, g, x.device_data<double>(),
           y.device_data<double>(), n);
}

void CudaBackend::upsample_nearest_backward(const Pool2dGeometry& g, const Tensor& dy, Tensor& dx) {
  check_upsample("upsample_nearest2d backward", g, dx, dy, device());
  const int64_t n = dx.numel();
  if (dy.dtype() == DType::f32)
    launch(n, upsample_nearest_backward_kernel<float>, g, dy.device_data<float>(),
           dx.device_data<float>(), n);
  else
    launch(n, upsample_nearest_backward_kernel<double>, g, dy.device_data<double>(),
           dx.device_data<double>(), n);
}

}  // namespace frugal
