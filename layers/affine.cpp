// Affine transform forward, inverse and backward. No Backend kernel multiplies by a computed
// scale, and a layer cannot add one, so the loops run on host memory (the CPU backend's
// tensors) with OpenMP, like LeakyReLU; on another device the op throws.
#include "layers/affine.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace frugal {

namespace {

// Geometry: x is N rows of m = c·H·W elements; row n of h is [h_s (m), t (m)].
struct Rows {
  int64_t N = 0, m = 0;
};

Rows rows_of(const Tensor& x) {
  return {x.shape()[0], x.shape()[0] == 0 ? 0 : x.numel() / x.shape()[0]};
}

// Throws for the first element whose scale is below min_scale or not finite.
template <typename T>
void throw_scale(const T* h, Rows g, int64_t bad, const AffineOptions& o, const Shape& shape,
                 const std::string& who) {
  const T hs = h[bad / g.m * 2 * g.m + bad % g.m], clamp = static_cast<T>(o.clamp);
  const double s = static_cast<double>(std::exp(clamp * std::tanh(hs / clamp)));
  const std::string at =
      detail::concat(" at element ", bad, " of ", shape, ", from h = ", static_cast<double>(hs),
                     " (clamp ", o.clamp, ")");
  FRUGAL_CHECK(std::isfinite(static_cast<double>(hs)), who, ": scale s is ", s, at,
               ": F returned a non-finite value");
  FRUGAL_CHECK(std::isfinite(s), who, ": scale s is ", s, at, ": e^clamp overflows");
  FRUGAL_CHECK(false, who, ": scale s = exp(clamp·tanh(h/clamp)) = ", s, at, " is below min_scale ",
               o.min_scale, ": (y - t) / s would lose x");
}

// x (N,m)  h (N,2m)  y (N,m):  y = x·s + t  or  y = (x - t) / s.  y may alias x.
template <typename T>
void apply_t(const Tensor& xt, const Tensor& ht, const AffineOptions& o, bool inverse, Tensor& yt,
             const std::string& who) {
  const Rows g = rows_of(xt);
  const T* x = xt.data<T>();
  const T* h = ht.data<T>();
  T* y = yt.data<T>();
  const T clamp = static_cast<T>(o.clamp), min_scale = static_cast<T>(o.min_scale);
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
  if (bad != std::numeric_limits<int64_t>::max()) throw_scale(h, g, bad, o, xt.shape(), who);
}

// y (N,m)  h (N,2m)  dy (N,m)  dx (N,m)  dh (N,2m)  [x (N,m)], u = tanh(h_s/clamp), s =
// e^(clamp·u), ds/dh_s = s(1 - u²):
//   y = x·s + t:      dx = dy·s,  dh_s = dy·x·s(1 - u²) = dy·(y - t)(1 - u²),  dt = dy
//   y = (x - t)/s:    dx = dy/s,  dh_s = -dy·(x - t)/s²·s(1 - u²) = -dy·y(1 - u²),  dt = -dy/s
// dx may alias dy (each dy[i] is read before dx[i] is written).
template <typename T>
void backward_t(const Tensor& yt, const Tensor& ht, const Tensor& dyt, const AffineOptions& o,
                bool inverse, Tensor& dxt, Tensor& dht, Tensor* xt, const std::string& who) {
  const Rows g = rows_of(yt);
  const T *y = yt.data<T>(), *h = ht.data<T>(), *dy = dyt.data<T>();
  T *dx = dxt.data<T>(), *dh = dht.data<T>(), *x = xt ? xt->data<T>() : nullptr;
  const T clamp = static_cast<T>(o.clamp), min_scale = static_cast<T>(o.min_scale);
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
  if (bad != std::numeric_limits<int64_t>::max()) throw_scale(h, g, bad, o, yt.shape(), who);
}

void check_host(const Tensor& t, const std::string& who) {
  FRUGAL_CHECK(t.device().kind == DeviceKind::cpu, who,
               ": runs on host memory, needs the CPU backend, got ", t.device().str());
}

}  // namespace

void affine_check_shapes(const TensorMeta& x, const TensorMeta& h, const AffineOptions& o,
                         const std::string& who) {
  FRUGAL_CHECK(x.dtype == DType::f32 || x.dtype == DType::f64, who, ": x must be f32 or f64, got ",
               dtype_name(x.dtype), " ", x.shape);
  Shape want = x.shape;
  if (want.rank() >= 2) want[1] *= 2;
  FRUGAL_CHECK(x.shape.rank() >= 2 && h.shape == want && h.dtype == x.dtype, who, ": h must be ",
               want, " ", dtype_name(x.dtype), " (scale pre-activation, then shift, along ",
               "channels) for x ", x.shape, ", got ", h.shape, " ", dtype_name(h.dtype));
  FRUGAL_CHECK(std::isfinite(o.clamp) && o.clamp > 0, who, ": clamp must be finite and > 0, got ",
               o.clamp);
  FRUGAL_CHECK(o.min_scale >= 0 && o.min_scale < 1, who, ": min_scale must be in [0, 1), got ",
               o.min_scale);
}

void affine_apply(const Tensor& x, const Tensor& h, const AffineOptions& o, bool inverse, Tensor& y,
                  const std::string& who) {
  check_host(x, who);
  if (x.dtype() == DType::f32)
    apply_t<float>(x, h, o, inverse, y, who);
  else
    apply_t<double>(x, h, o, inverse, y, who);
}

void affine_backward(const Tensor& y, const Tensor& h, const Tensor& dy, const AffineOptions& o,
                     bool inverse, Tensor& dx, Tensor& dh, Tensor* x, const std::string& who) {
  check_host(y, who);
  if (y.dtype() == DType::f32)
    backward_t<float>(y, h, dy, o, inverse, dx, dh, x, who);
  else
    backward_t<double>(y, h, dy, o, inverse, dx, dh, x, who);
}

std::vector<TensorMeta> AffineOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 2, name(), ": expects x and h, got ", in.size(), " inputs");
  affine_check_shapes(in[0], in[1], opt_, name());
  h_ = in[1];
  return {in[0]};
}

// y may take x's bytes; backward reads y and h, never x.
Roles AffineOp::roles(Mode mode, const Backend&) const {
  Roles r;
  r.aliases = {{.output = 0, .input = 0}};
  if (mode == Mode::training) {
    r.backward_reads_outputs = {0};
    r.backward_reads_inputs = {1};
    r.grad_aliases = {{.output = 0, .input = 0}};
    r.backward_scratch = h_.bytes();  // for a gradient not needed (h holds 2x x's elements)
  }
  return r;
}

void AffineOp::forward(const OpContext& ctx) {
  affine_apply(ctx.input(0), ctx.input(1), opt_, inverse_, ctx.output(0), name());
}

// Both gradients come out of one pass; one not needed goes to the op's backward scratch.
void AffineOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0) && !ctx.needs_grad_input(1)) return;
  const Tensor& y = ctx.output(0);
  const Tensor& s = ctx.scratch();
  auto spare = [&](const Shape& shape) {
    return Tensor(s.storage(), s.offset(), shape, y.dtype());
  };
  Tensor dx = ctx.needs_grad_input(0) ? ctx.grad_input(0) : spare(y.shape());
  Tensor dh = ctx.needs_grad_input(1) ? ctx.grad_input(1) : spare(h_.shape);
  affine_backward(y, ctx.input(1), ctx.grad_output(0), opt_, inverse_, dx, dh, nullptr, name());
}

Value affine(Value x, Value h, AffineOptions options, std::source_location where) {
  return x.tape().record(std::make_unique<AffineOp>(options, false), {x, h}, where)[0];
}

Value affine_inverse(Value y, Value h, AffineOptions options, std::source_location where) {
  return y.tape().record(std::make_unique<AffineOp>(options, true), {y, h}, where)[0];
}

}  // namespace frugal
