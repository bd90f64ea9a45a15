// Threshold forward and backward, with its roles.
#include "layers/threshold.h"

namespace frugal {

std::vector<TensorMeta> ThresholdOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "threshold: expects 1 input, got ", in.size());
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "threshold: input must be f32 or f64, got ", dtype_name(in[0].dtype));
  x_ = in[0];
  return {x_};
}

// In place always allowed; in training, backward reads only the mask x > th.
Roles ThresholdOp::roles(Mode mode, const Backend&) const {
  Roles r = in_place_mask_roles(mode, x_.shape.numel());
  rebuild_by_forward(r, mode, {0}, static_cast<double>(x_.bytes()), x_, 1);
  return r;
}

// y = x > th ? x : value; in training also the mask x > th.
void ThresholdOp::forward(const OpContext& ctx) {
  Tensor none;
  ctx.backend().threshold_forward(ctx.input(0), threshold_, value_, ctx.output(0),
                                  ctx.training() ? ctx.saved(0) : none);
}

// dx = dy * [x > th]
void ThresholdOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  ctx.backend().masked_scale(ctx.grad_output(0), ctx.saved(0), 1.0, ctx.grad_input(0));
}

Value threshold(Value x, double threshold, double value, std::source_location where) {
  return x.tape().record(std::make_unique<ThresholdOp>(threshold, value), {x}, where)[0];
}

}  // namespace frugal
