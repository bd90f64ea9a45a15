// ReLU forward and backward, with its roles.
#include "layers/relu.h"

namespace frugal {

std::vector<TensorMeta> ReluOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "relu: expects 1 input, got ", in.size());
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "relu: input must be f32 or f64, got ", dtype_name(in[0].dtype));
  x_ = in[0];
  return {x_};
}

// In place always allowed; in training, backward reads y or the mask, never x.
Roles ReluOp::roles(Mode mode, const Backend&) const {
  Roles r = in_place_mask_roles(mode, x_.shape.numel(), saves == Saves::mask);
  rebuild_by_forward(r, mode, {0}, static_cast<double>(x_.bytes()), x_, 1);
  r.sparse_outputs = mode == Mode::training;
  return r;
}

// y = max(x, 0); in training also the mask x > 0 when backward reads the mask.
void ReluOp::forward(const OpContext& ctx) {
  Tensor none;
  bool mask = ctx.training() && saves == Saves::mask;
  ctx.backend().relu_forward(ctx.input(0), ctx.output(0), mask ? ctx.saved(0) : none);
}

// dx = dy * [x > 0]  (x > 0 exactly where y > 0)
void ReluOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  if (saves == Saves::mask)
    ctx.backend().relu_backward_mask(ctx.grad_output(0), ctx.saved(0), ctx.grad_input(0));
  else
    ctx.backend().relu_backward_output(ctx.grad_output(0), ctx.output(0), ctx.grad_input(0));
}

Value relu(Value x, std::source_location where) {
  return x.tape().record(std::make_unique<ReluOp>(), {x}, where)[0];
}

}  // namespace frugal
