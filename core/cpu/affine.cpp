// Affine coupling kernels of the CPU backend (layers/affine.h): y = x·s + t or its inverse
// (x - t) / s from h = [h_s, t], s = exp(clamp·tanh(h_s / clamp)), and their backward.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

// Geometry: x is N rows of m = c·H·W elements; row n of h is [h_s (m), t (m)].
struct Rows {
  int64_t N = 0, m = 0;
};

Rows rows_of(const Tensor& x) {
  return {x.shape()[0], x.shape()[0] == 0 ? 0 : x.numel() / x.shape()[0]};
}

// Throws for element `bad`, whose scale is below min_scale or not finite.
template <typename T>
[[noreturn]] void throw_scale(const T* h, Rows g, int64_t bad, double clamp_d, double min_scale,
                              const Shape& shape, const std::string& who) {
  const T hs = h[bad / g.m * 2 * g.m + bad % g.m], clamp = static_cast<T>(clamp_d);
  const double s = static_cast<double>(std::exp(clamp * std::tanh(hs / clamp)));
  throw_affine_scale(static_cast<double>(hs), s, bad, shape, clamp_d, min_scale, who);
}

// x (N,m)  h (N,2m)  y (N,m):  y = x·s + t  or  y = (x - t) / s.  y may alias x.
template <typename T>
void forward_t(const Tensor& xt, const Tensor& ht, double clamp_d, double min_scale_d, bool inverse,
               Tensor& yt, const std::string& who) {
  const Rows g = rows_of(xt);
  const T* x = xt.data<T>();
  const T* h = ht.data<T>();
  T* y = yt.data<T>();
  const T clamp = static_cast<T>(clamp_d), min_scale = static_cast<T>(min_scale_d);
  int64_t bad = std::numeric_limits<int64_t>::max();
#pragma omp parallel for collapse(2) schedule(static) reduction(min : bad)
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t j = 0; j < g.m; ++j) {
      const int64_t i = n * g.m + j;
      const T hs = h[n * 2 * g.m + j], t = h[n * 2 * g.m + g.m + j];
      const T s = std::exp(clamp * std::tanh(hs / clamp));
      if (!(s >= min_scale) || !std::isfinite(s)) bad = std::min(bad, i);
      y[i] = inverse ? (x[i] - t) / s : x[i] * s + t;
    }
  if (bad != std::numeric_limits<int64_t>::max())
    throw_scale(h, g, bad, clamp_d, min_scale_d, xt.shape(), who);
}

// y (N,m)  h (N,2m)  dy (N,m)  dx (N,m)  dh (N,2m)  [x (N,m)], u = tanh(h_s/clamp), s =
// e^(clamp·u), ds/dh_s = s(1 - u²):
//   y = x·s + t:      dx = dy·s,  dh_s = dy·x·s(1 - u²) = dy·(y - t)(1 - u²),  dt = dy
//   y = (x - t)/s:    dx = dy/s,  dh_s = -dy·(x - t)/s²·s(1 - u²) = -dy·y(1 - u²),  dt = -dy/s
// dx may alias dy (each dy[i] is read before dx[i] is written), x may alias y likewise.
template <typename T>
void backward_t(const Tensor& yt, const Tensor& ht, const Tensor& dyt, double clamp_d,
                double min_scale_d, bool inverse, Tensor& dxt, Tensor& dht, Tensor& xt,
                const std::string& who) {
  const Rows g = rows_of(yt);
  const T *y = yt.data<T>(), *h = ht.data<T>(), *dy = dyt.data<T>();
  T *dx = dxt.data<T>(), *dh = dht.data<T>(), *x = xt.defined() ? xt.data<T>() : nullptr;
  const T clamp = static_cast<T>(clamp_d), min_scale = static_cast<T>(min_scale_d);
  int64_t bad = std::numeric_limits<int64_t>::max();
#pragma omp parallel for collapse(2) schedule(static) reduction(min : bad)
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t j = 0; j < g.m; ++j) {
      const int64_t i = n * g.m + j, hi = n * 2 * g.m + j;
      const T u = std::tanh(h[hi] / clamp), t = h[hi + g.m];
      const T s = std::exp(clamp * u), d = dy[i];
      if (!(s >= min_scale) || !std::isfinite(s)) bad = std::min(bad, i);
      if (inverse) {
        dx[i] = d / s;
        dh[hi] = -d * y[i] * (T(1) - u * u);
        dh[hi + g.m] = -d / s;
      } else {
        dx[i] = d * s;
        dh[hi] = d * (y[i] - t) * (T(1) - u * u);
        dh[hi + g.m] = d;
        if (x) x[i] = (y[i] - t) / s;
      }
    }
  if (bad != std::numeric_limits<int64_t>::max())
    throw_scale(h, g, bad, clamp_d, min_scale_d, yt.shape(), who);
}

}  // namespace

void CpuBackend::affine_forward(const Tensor& x, const Tensor& h, double clamp, double min_scale,
                                bool inverse, Tensor& y, const std::string& who) {
  check_affine_forward(x, h, y, device());
  if (x.dtype() == DType::f32)
    forward_t<float>(x, h, clamp, min_scale, inverse, y, who);
  else
    forward_t<double>(x, h, clamp, min_scale, inverse, y, who);
}

void CpuBackend::affine_backward(const Tensor& y, const Tensor& h, const Tensor& dy, double clamp,
                                 double min_scale, bool inverse, Tensor& dx, Tensor& dh, Tensor& x,
                                 const std::string& who) {
  check_affine_backward(y, h, dy, dx, dh, x, device());
  if (y.dtype() == DType::f32)
    backward_t<float>(y, h, dy, clamp, min_scale, inverse, dx, dh, x, who);
  else
    backward_t<double>(y, h, dy, clamp, min_scale, inverse, dx, dh, x, who);
}

}  // namespace frugal
