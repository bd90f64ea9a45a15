// The CPU's resizing, bilinear and bicubic: the taps of every output row and column computed
// once (core/resize.h), planes in parallel; backward adds each output gradient into its four
// (sixteen) inputs in output order within a plane, so a plane's sums have one order on any
// thread count.
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

// The taps of every output index along one axis: tap(o) for o in [0, out).
template <typename Tap>
std::vector<Tap> taps_along(int64_t out, auto tap) {
  std::vector<Tap> t;
  for (int64_t o = 0; o < out; ++o) t.push_back(tap(o));
  return t;
}

std::vector<ResizeTap> taps(int64_t in, int64_t out, double scale, ResizeCoordinates mode) {
  return taps_along<ResizeTap>(out, [&](int64_t o) { return resize_tap(o, in, out, scale, mode); });
}

template <typename T>
void forward_t(const ResizeGeometry& g, const T* x, T* y) {
  const std::vector<ResizeTap> rows = taps(g.H, g.P, g.scale_h, g.mode);
  const std::vector<ResizeTap> cols = taps(g.W, g.Q, g.scale_w, g.mode);
#pragma omp parallel for schedule(static)
  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    const T* xp = x + nc * g.H * g.W;
    T* yp = y + nc * g.P * g.Q;
    for (int64_t p = 0; p < g.P; ++p) {
      const ResizeTap r = rows[static_cast<size_t>(p)];
      const T h1 = static_cast<T>(r.l1), h0 = T(1) - h1;
      const T* a = xp + r.i0 * g.W;
      const T* b = xp + r.i1 * g.W;
      for (int64_t q = 0; q < g.Q; ++q) {
        const ResizeTap c = cols[static_cast<size_t>(q)];
        const T w1 = static_cast<T>(c.l1), w0 = T(1) - w1;
        yp[p * g.Q + q] = h0 * (w0 * a[c.i0] + w1 * a[c.i1]) + h1 * (w0 * b[c.i0] + w1 * b[c.i1]);
      }
    }
  }
}

template <typename T>
void backward_t(const ResizeGeometry& g, const T* dy, T* dx) {
  const std::vector<ResizeTap> rows = taps(g.H, g.P, g.scale_h, g.mode);
  const std::vector<ResizeTap> cols = taps(g.W, g.Q, g.scale_w, g.mode);
#pragma omp parallel for schedule(static)
  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    T* dp = dx + nc * g.H * g.W;
    const T* gp = dy + nc * g.P * g.Q;
    for (int64_t i = 0; i < g.H * g.W; ++i) dp[i] = T(0);
    for (int64_t p = 0; p < g.P; ++p) {
      const ResizeTap r = rows[static_cast<size_t>(p)];
      const T h1 = static_cast<T>(r.l1), h0 = T(1) - h1;
      for (int64_t q = 0; q < g.Q; ++q) {
        const ResizeTap c = cols[static_cast<size_t>(q)];
        const T w1 = static_cast<T>(c.l1), w0 = T(1) - w1;
        const T d = gp[p * g.Q + q];
        dp[r.i0 * g.W + c.i0] += h0 * w0 * d;
        dp[r.i0 * g.W + c.i1] += h0 * w1 * d;
        dp[r.i1 * g.W + c.i0] += h1 * w0 * d;
        dp[r.i1 * g.W + c.i1] += h1 * w1 * d;
      }
    }
  }
}

std::vector<ResizeCubicTap> cubic_taps(int64_t in, int64_t out, double scale,
                                       ResizeCoordinates mode, double a) {
  return taps_along<ResizeCubicTap>(
      out, [&](int64_t o) { return resize_cubic_tap(o, in, out, scale, mode, a); });
}

template <typename T>
void cubic_forward_t(const ResizeGeometry& g, const T* x, T* y) {
  const std::vector<ResizeCubicTap> rows = cubic_taps(g.H, g.P, g.scale_h, g.mode, g.cubic_a);
  const std::vector<ResizeCubicTap> cols = cubic_taps(g.W, g.Q, g.scale_w, g.mode, g.cubic_a);
#pragma omp parallel for schedule(static)
  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    const T* xp = x + nc * g.H * g.W;
    T* yp = y + nc * g.P * g.Q;
    for (int64_t p = 0; p < g.P; ++p) {
      const ResizeCubicTap& r = rows[static_cast<size_t>(p)];
      for (int64_t q = 0; q < g.Q; ++q)
        yp[p * g.Q + q] = resize_cubic_value(xp, g.W, r, cols[static_cast<size_t>(q)]);
    }
  }
}

template <typename T>
void cubic_backward_t(const ResizeGeometry& g, const T* dy, T* dx) {
  const std::vector<ResizeCubicTap> rows = cubic_taps(g.H, g.P, g.scale_h, g.mode, g.cubic_a);
  const std::vector<ResizeCubicTap> cols = cubic_taps(g.W, g.Q, g.scale_w, g.mode, g.cubic_a);
#pragma omp parallel for schedule(static)
  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    T* dp = dx + nc * g.H * g.W;
    const T* gp = dy + nc * g.P * g.Q;
    for (int64_t i = 0; i < g.H * g.W; ++i) dp[i] = T(0);
    for (int64_t p = 0; p < g.P; ++p) {
      const ResizeCubicTap& r = rows[static_cast<size_t>(p)];
      for (int64_t q = 0; q < g.Q; ++q)
        resize_cubic_add(dp, g.W, r, cols[static_cast<size_t>(q)], gp[p * g.Q + q]);
    }
  }
}

}  // namespace

void CpuBackend::resize_forward(const ResizeGeometry& g, const Tensor& x, Tensor& y) {
  check_resize("resize", g, x, y, device());
  const bool cubic = g.method == ResizeMethod::cubic;
  if (x.dtype() == DType::f32)
    (cubic ? cubic_forward_t<float> : forward_t<float>)(g, x.data<float>(), y.data<float>());
  else
    (cubic ? cubic_forward_t<double> : forward_t<double>)(g, x.data<double>(), y.data<double>());
}

void CpuBackend::resize_backward(const ResizeGeometry& g, const Tensor& dy, Tensor& dx) {
  check_resize("resize backward", g, dx, dy, device());
  const bool cubic = g.method == ResizeMethod::cubic;
  if (dy.dtype() == DType::f32)
    (cubic ? cubic_backward_t<float> : backward_t<float>)(g, dy.data<float>(), dx.data<float>());
  else
    (cubic ? cubic_backward_t<double> : backward_t<double>)(g, dy.data<double>(),
                                                            dx.data<double>());
}

}  // namespace frugal
