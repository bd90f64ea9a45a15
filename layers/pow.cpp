// x to a constant power: forward, backward and roles.
#include "layers/pow.h"

#include <cmath>

namespace frugal {

std::vector<TensorMeta> PowOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "pow: expects 1 input, got ", in.size());
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "pow: input must be f32 or f64, got ", dtype_name(in[0].dtype), " (x ", in[0].shape,
               ")");
  FRUGAL_CHECK(std::isfinite(exponent_), "pow: the exponent must be finite, got ", exponent_);
  x_ = in[0];
  return {x_};
}

Roles PowOp::roles(Mode mode, const Backend&) const {
  return input_reading_roles(mode, x_, 1);
}

void PowOp::forward(const OpContext& ctx) {
  ctx.backend().pow_forward(ctx.input(0), exponent_, ctx.output(0));
}

void PowOp::backward(const OpContext& ctx) {
  FRUGAL_CHECK(ctx.training(), "pow: backward runs only in training mode");
  if (!ctx.needs_grad_input(0)) return;
  ctx.backend().pow_backward(ctx.input(0), exponent_, ctx.grad_output(0), ctx.grad_input(0));
}

Value power(Value x, double exponent, std::source_location where) {
  return x.tape().record(std::make_unique<PowOp>(exponent), {x}, where)[0];
}

}  // namespace frugal
