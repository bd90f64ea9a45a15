// LeakyReLU forward and backward, with its roles, over the backend's leaky_relu kernels.
#include "layers/leaky_relu.h"

#include <cmath>

namespace frugal {

std::vector<TensorMeta> LeakyReluOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "leaky_relu: expects 1 input, got ", in.size());
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "leaky_relu: input must be f32 or f64, got ", dtype_name(in[0].dtype), " ",
               in[0].shape);
  FRUGAL_CHECK(std::isfinite(slope_) && slope_ >= 0, "leaky_relu: slope must be finite and >= 0 ",
               "(backward tells x > 0 from y > 0), got ", slope_);
  x_ = in[0];
  return {x_};
}

// In place always allowed; in training, backward reads y or the mask, never x.
Roles LeakyReluOp::roles(Mode mode, const Backend&) const {
  Roles r = in_place_mask_roles(mode, x_.shape.numel(), saves == Saves::mask);
  rebuild_by_forward(r, mode, {0}, static_cast<double>(x_.bytes()), x_, 2);
  return r;
}

// y = x > 0 ? x : slope * x; in training also the mask x > 0 when backward reads the mask.
void LeakyReluOp::forward(const OpContext& ctx) {
  Tensor none;
  Tensor& mask = ctx.training() && saves == Saves::mask ? ctx.saved(0) : none;
  ctx.backend().leaky_relu_forward(ctx.input(0), slope_, ctx.output(0), mask);
}

// dx = dy * (x > 0 ? 1 : slope), where x > 0 is read from the mask, or as y > 0.
void LeakyReluOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  if (saves == Saves::mask)
    ctx.backend().leaky_relu_backward_mask(ctx.grad_output(0), ctx.saved(0), slope_,
                                           ctx.grad_input(0));
  else
    ctx.backend().leaky_relu_backward_output(ctx.grad_output(0), ctx.output(0), slope_,
                                             ctx.grad_input(0));
}

Value leaky_relu(Value x, double slope, std::source_location where) {
  return x.tape().record(std::make_unique<LeakyReluOp>(slope), {x}, where)[0];
}

}  // namespace frugal
