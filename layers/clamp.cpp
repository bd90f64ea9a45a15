// x clamped to [lo, hi]: forward, backward and roles.
#include "layers/clamp.h"

#include <cmath>

namespace frugal {

std::vector<TensorMeta> ClampOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "clamp: expects 1 input, got ", in.size());
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "clamp: input must be f32 or f64, got ", dtype_name(in[0].dtype), " (x ",
               in[0].shape, ")");
  FRUGAL_CHECK(!std::isnan(lo_) && !std::isnan(hi_) && lo_ <= hi_, "clamp: bounds [", lo_, ", ",
               hi_, "] must be numbers with lo <= hi");
  x_ = in[0];
  return {x_};
}

// Clamped from 0 (ReLU6, MobileNetV2's), the output is zero wherever x <= 0: worth packing.
Roles ClampOp::roles(Mode mode, const Backend&) const {
  Roles r = input_reading_roles(mode, x_, 1);
  r.sparse_outputs = mode == Mode::training && lo_ == 0;
  return r;
}

void ClampOp::forward(const OpContext& ctx) {
  ctx.backend().clamp_forward(ctx.input(0), lo_, hi_, ctx.output(0));
}

void ClampOp::backward(const OpContext& ctx) {
  FRUGAL_CHECK(ctx.training(), "clamp: backward runs only in training mode");
  if (!ctx.needs_grad_input(0)) return;
  ctx.backend().clamp_backward(ctx.input(0), lo_, hi_, ctx.grad_output(0), ctx.grad_input(0));
}

Value clamp(Value x, double lo, double hi, std::source_location where) {
  return x.tape().record(std::make_unique<ClampOp>(lo, hi), {x}, where)[0];
}

}  // namespace frugal
