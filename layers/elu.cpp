// The ELU family's op: checks, roles (in place where backward reads the output) and the
// backend's kernels.
#include "layers/elu.h"

#include <cmath>

namespace frugal {

std::string EluOp::name() const {
  return c_.input_scale != 1 ? "celu" : c_.scale != 1 ? "selu" : "elu";
}

std::vector<TensorMeta> EluOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, name(), ": expects 1 input, got ", in.size());
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64, name(),
               ": input must be f32 or f64, got ", dtype_name(in[0].dtype), " ", in[0].shape);
  FRUGAL_CHECK(std::isfinite(c_.alpha) && std::isfinite(c_.scale) && std::isfinite(c_.input_scale),
               name(), ": alpha, scale and input scale must be finite, got ", c_.alpha, ", ",
               c_.scale, ", ", c_.input_scale);
  x_ = in[0];
  return {x_};
}

Roles EluOp::roles(Mode mode, const Backend&) const {
  if (!elu_backward_reads_output(c_)) return input_reading_roles(mode, x_, 8);
  Roles r = in_place_mask_roles(mode, x_.shape.numel(), /*saves_mask=*/false);
  rebuild_by_forward(r, mode, {0}, static_cast<double>(x_.bytes()), x_, 8);
  return r;
}

void EluOp::forward(const OpContext& ctx) {
  ctx.backend().elu_forward(ctx.input(0), c_, ctx.output(0));
}

void EluOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  const bool from_output = elu_backward_reads_output(c_);
  ctx.backend().elu_backward(from_output ? ctx.output(0) : ctx.input(0), from_output, c_,
                             ctx.grad_output(0), ctx.grad_input(0));
}

Value elu_family(Value x, EluCoefficients c, std::source_location where) {
  return x.tape().record(std::make_unique<EluOp>(c), {x}, where)[0];
}

Value elu(Value x, double alpha, std::source_location where) {
  return elu_family(x, {.alpha = alpha}, where);
}

Value celu(Value x, double alpha, std::source_location where) {
  FRUGAL_CHECK(alpha != 0 && std::isfinite(alpha), "celu: alpha must be finite and not 0, got ",
               alpha);
  return elu_family(x, {.alpha = alpha, .input_scale = 1 / alpha}, where);
}

}  // namespace frugal
