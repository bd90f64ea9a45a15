// Dropout forward and backward, with its roles.
#include "layers/dropout.h"

namespace frugal {

std::vector<TensorMeta> DropoutOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "dropout: expects 1 input, got ", in.size());
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "dropout: input must be f32 or f64, got ", dtype_name(in[0].dtype));
  FRUGAL_CHECK(p_ >= 0 && p_ < 1, "dropout: p must be in [0, 1), got ", p_, " (x ", in[0].shape,
               ")");
  x_ = in[0];
  return {x_};
}

// In place always allowed; in training, backward reads only the mask of kept elements.
Roles DropoutOp::roles(Mode mode, const Backend&) const {
  // A rebuild draws the same mask again: randomness is a function of (seed, step, op).
  Roles r = in_place_mask_roles(mode, x_.shape.numel());
  rebuild_by_forward(r, mode, {0}, static_cast<double>(x_.bytes()), x_, 2);
  return r;
}

// Training: y = x * keep / (1 - p) and the mask keep. Inference: y = x (a no-op in place).
void DropoutOp::forward(const OpContext& ctx) {
  if (ctx.training())
    ctx.backend().dropout_forward(ctx.input(0), p_, ctx.seed(), stream, ctx.output(0),
                                  ctx.saved(0));
  else
    ctx.backend().copy(ctx.input(0), ctx.output(0));
}

// dx = dy * keep / (1 - p)
void DropoutOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  ctx.backend().masked_scale(ctx.grad_output(0), ctx.saved(0), 1.0 / (1.0 - p_), ctx.grad_input(0));
}

Value dropout(Value x, double p, std::source_location where) {
  return x.tape().record(std::make_unique<DropoutOp>(p), {x}, where)[0];
}

}  // namespace frugal
