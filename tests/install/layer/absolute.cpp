// Abs forward and backward as loops over host memory, with its roles.
#include "absolute.h"

#include <algorithm>

using namespace frugal;

namespace mylayers {

namespace {

// x (n)  y (n)  mask (mask_bytes(n)) or null.  y may alias x: y[i] is read from x[i] alone,
// before it is written. One mask byte (8 elements) per iteration, so threads never share one.
template <typename T>
void abs_forward(int64_t n, const T* x, T* y, uint8_t* mask) {
  const int64_t bytes = mask_bytes(n);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < bytes; ++b) {
    uint8_t bits = 0;
    for (int64_t i = 8 * b; i < std::min(n, 8 * b + 8); ++i) {
      const bool positive = x[i] > T(0);
      y[i] = positive ? x[i] : -x[i];
      bits |= static_cast<uint8_t>(positive << (i - 8 * b));
    }
    if (mask) mask[b] = bits;
  }
}

// dy (n)  mask (mask_bytes(n))  dx (n).  dx may alias dy.
template <typename T>
void abs_backward(int64_t n, const T* dy, const uint8_t* mask, T* dx) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) dx[i] = (mask[i / 8] >> (i % 8)) & 1 ? dy[i] : -dy[i];
}

void check_host(const OpContext& ctx) {
  FRUGAL_CHECK(ctx.backend().device().is_host(),
               "abs: runs on host memory, needs the CPU backend, got ",
               ctx.backend().device().str());
}

}  // namespace

std::vector<TensorMeta> AbsOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "abs: expects 1 input, got ", in.size());
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "abs: input must be f32 or f64, got ", dtype_name(in[0].dtype), " ", in[0].shape);
  x_ = in[0];
  return {x_};
}

// y may take x's bytes and dx dy's; in training, backward reads only the mask (saved(0)).
Roles AbsOp::roles(Mode mode, const Backend&) const {
  return in_place_mask_roles(mode, x_.shape.numel());
}

// y = |x|; in training also the mask x > 0.
void AbsOp::forward(const OpContext& ctx) {
  check_host(ctx);
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  uint8_t* mask = ctx.training() ? ctx.saved(0).data<uint8_t>() : nullptr;
  if (x.dtype() == DType::f32)
    abs_forward(x.numel(), x.data<float>(), y.data<float>(), mask);
  else
    abs_forward(x.numel(), x.data<double>(), y.data<double>(), mask);
}

// dx = dy * (x > 0 ? 1 : -1), x > 0 read from the mask.
void AbsOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  check_host(ctx);
  const Tensor& dy = ctx.grad_output(0);
  const uint8_t* mask = ctx.saved(0).data<uint8_t>();
  Tensor& dx = ctx.grad_input(0);
  if (dy.dtype() == DType::f32)
    abs_backward(dy.numel(), dy.data<float>(), mask, dx.data<float>());
  else
    abs_backward(dy.numel(), dy.data<double>(), mask, dx.data<double>());
}

Value absolute(Value x, std::source_location where) {
  return x.tape().record(std::make_unique<AbsOp>(), {x}, where)[0];
}

}  // namespace mylayers
