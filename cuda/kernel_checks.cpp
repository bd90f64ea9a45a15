// Argument checks of the CUDA backend; see cuda/kernel_checks.h.
#include "cuda/kernel_checks.h"

namespace frugal {

namespace {
bool is_float(const Tensor& t) {
  return t.dtype() == DType::f32 || t.dtype() == DType::f64;
}
}  // namespace

void check_on_device(const char* op, std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    FRUGAL_CHECK(!t->defined() || t->device().kind == DeviceKind::cuda, op, ": tensor ", t->shape(),
                 " ", dtype_name(t->dtype()), " is in ", t->device().str(),
                 " memory; the CUDA backend needs CUDA tensors");
}

void check_same(const char* op, const Tensor& x, const Tensor& y) {
  FRUGAL_CHECK(x.meta() == y.meta(), op, ": x ", x.shape(), " ", dtype_name(x.dtype()), " and y ",
               y.shape(), " ", dtype_name(y.dtype()), " must match");
  FRUGAL_CHECK(is_float(x), op, ": expects f32 or f64, got ", dtype_name(x.dtype()));
  check_on_device(op, {&x, &y});
}

void check_mask(const char* op, const Tensor& mask, int64_t n) {
  if (!mask.defined()) return;
  FRUGAL_CHECK(mask.dtype() == DType::u8 && mask.numel() == mask_bytes(n), op, ": mask ",
               mask.shape(), " ", dtype_name(mask.dtype()), " for ", n, " elements, expected [",
               mask_bytes(n), "] u8");
  check_on_device(op, {&mask});
}

LinearDims check_linear(const char* op, const Tensor& x, const Tensor& w, const Tensor& b,
                        const Tensor& y) {
  FRUGAL_CHECK(is_float(x), op, ": needs f32 or f64, got ", dtype_name(x.dtype()));
  FRUGAL_CHECK(
      x.shape().rank() == 2 && y.shape().rank() == 2 && (!w.defined() || w.shape().rank() == 2), op,
      ": expects x (N,I), w (O,I), y (N,O); got x ", x.shape(), " w ", w.shape(), " y ", y.shape());
  const LinearDims d{x.shape()[0], x.shape()[1], y.shape()[1]};
  FRUGAL_CHECK(y.shape()[0] == d.N && (!w.defined() || w.shape() == Shape{d.O, d.I}), op, ": x ",
               x.shape(), " w ", w.shape(), " y ", y.shape(), " do not agree");
  FRUGAL_CHECK(!b.defined() || b.shape() == Shape{d.O}, op, ": bias ", b.shape(), " for ", d.O,
               " outputs");
  FRUGAL_CHECK(y.dtype() == x.dtype() && (!w.defined() || w.dtype() == x.dtype()) &&
                   (!b.defined() || b.dtype() == x.dtype()),
               op, ": mixed dtypes");
  check_on_device(op, {&x, &w, &b, &y});
  return d;
}

void check_conv(const char* op, const Conv2dGeometry& g, const Tensor& x, const Tensor& w,
                const Tensor& y) {
  FRUGAL_CHECK(x.defined() && y.defined(), op, ": missing input or output tensor");
  FRUGAL_CHECK(is_float(x), op, ": needs f32 or f64, got ", dtype_name(x.dtype()));
  FRUGAL_CHECK(y.dtype() == x.dtype() && (!w.defined() || w.dtype() == x.dtype()), op,
               ": mixed dtypes");
  FRUGAL_CHECK(x.numel() == g.N * g.C * g.H * g.W && y.numel() == g.N * g.K * g.P * g.Q &&
                   (!w.defined() || w.numel() == g.K * g.C * g.R * g.S),
               op, ": tensors x ", x.shape(), " w ", w.shape(), " y ", y.shape(),
               " do not match the geometry N,C,H,W = ", g.N, ",", g.C, ",", g.H, ",", g.W,
               " K,R,S = ", g.K, ",", g.R, ",", g.S, " P,Q = ", g.P, ",", g.Q);
  FRUGAL_CHECK(g.stride_h > 0 && g.stride_w > 0 && g.H + 2 * g.pad_h >= g.R &&
                   g.W + 2 * g.pad_w >= g.S && g.P == (g.H + 2 * g.pad_h - g.R) / g.stride_h + 1 &&
                   g.Q == (g.W + 2 * g.pad_w - g.S) / g.stride_w + 1,
               op, ": output ", g.P, "x", g.Q, " does not follow from input ", g.H, "x", g.W);
  check_on_device(op, {&x, &w, &y});
}

void check_pool(const char* op, const Pool2dGeometry& g, const Tensor& x, const Tensor& y) {
  const Shape xs{g.N, g.C, g.H, g.W}, ys{g.N, g.C, g.P, g.Q};
  FRUGAL_CHECK(x.shape() == xs && y.shape() == ys && x.dtype() == y.dtype() && is_float(x), op,
               ": input side ", x.shape(), " ", dtype_name(x.dtype()), ", output side ", y.shape(),
               " ", dtype_name(y.dtype()), "; expected ", xs, " and ", ys,
               ", both f32 or both f64");
  check_on_device(op, {&x, &y});
}

void check_channel(const char* op, const Tensor& t, const Tensor& x, int64_t C) {
  FRUGAL_CHECK(t.defined() && t.shape() == Shape{C} && t.dtype() == x.dtype(), op,
               ": per-channel tensor ", t.defined() ? t.shape().str() : "undefined", ", expected [",
               C, "] ", dtype_name(x.dtype()), " for x ", x.shape());
  check_on_device(op, {&t});
}

ChannelDims check_batchnorm(const char* op, const Tensor& x, const Tensor& y,
                            std::initializer_list<const Tensor*> per_channel) {
  const int rank = x.shape().rank();
  FRUGAL_CHECK(rank == 2 || rank == 4, op, ": x must be (N,C,H,W) or (N,C), got ", x.shape());
  FRUGAL_CHECK(is_float(x), op, ": x must be f32 or f64, got ", dtype_name(x.dtype()));
  FRUGAL_CHECK(y.meta() == x.meta(), op, ": x ", x.shape(), " and y ", y.shape(), " differ");
  const ChannelDims d{x.shape()[0], x.shape()[1], rank == 4 ? x.shape()[2] * x.shape()[3] : 1};
  for (const Tensor* t : per_channel) check_channel(op, *t, x, d.C);
  check_on_device(op, {&x, &y});
  return d;
}

void check_rows(const char* op, const Tensor& x, const Tensor& y) {
  FRUGAL_CHECK(x.shape().rank() == 2 && x.shape()[0] >= 1 && x.shape()[1] >= 1 && is_float(x), op,
               ": x ", x.shape(), " ", dtype_name(x.dtype()), ", expected (N,C) f32/f64");
  FRUGAL_CHECK(!y.defined() || x.meta() == y.meta(), op, ": x ", x.shape(), " ",
               dtype_name(x.dtype()), " and ", y.shape(), " ", dtype_name(y.dtype()),
               " must match");
  check_on_device(op, {&x, &y});
}

void check_labels(const char* op, const Tensor& x, const Tensor& labels, const Tensor& loss) {
  check_rows(op, x, Tensor());
  const int64_t N = x.shape()[0];
  FRUGAL_CHECK(labels.dtype() == DType::i32 && labels.shape() == Shape{N}, op, ": labels ",
               labels.shape(), " ", dtype_name(labels.dtype()), " for x ", x.shape(),
               ", expected [", N, "] i32");
  FRUGAL_CHECK(loss.numel() == 1 && loss.dtype() == x.dtype(), op, ": loss ", loss.shape(), " ",
               dtype_name(loss.dtype()), ", expected [1] ", dtype_name(x.dtype()));
  check_on_device(op, {&labels, &loss});
}

void check_concat(const char* op, std::span<const Tensor> xs, const Tensor& y) {
  const Shape& ys = y.shape();
  FRUGAL_CHECK(!xs.empty() && (ys.rank() == 2 || ys.rank() == 4), op, ": ", xs.size(),
               " parts into y ", ys, ", expected at least one part and y (N,C) or (N,C,H,W)");
  int64_t C = 0;
  for (const Tensor& x : xs) {
    const Shape& s = x.shape();
    const bool fits = x.dtype() == y.dtype() && s.rank() == ys.rank() && s[0] == ys[0] &&
                      (s.rank() == 2 || (s[2] == ys[2] && s[3] == ys[3]));
    FRUGAL_CHECK(fits, op, ": part ", s, " ", dtype_name(x.dtype()), " does not fit y ", ys, " ",
                 dtype_name(y.dtype()), " (N, H, W and dtype must match)");
    C += s[1];
    check_on_device(op, {&x});
  }
  FRUGAL_CHECK(C == ys[1], op, ": parts have ", C, " channels in all, y ", ys, " has ", ys[1]);
  check_on_device(op, {&y});
}

}  // namespace frugal
