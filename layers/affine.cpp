// Affine transform forward, inverse and backward over the backend's affine kernels.
#include "layers/affine.h"

#include <cmath>

namespace frugal {

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

void affine_apply(Backend& be, const Tensor& x, const Tensor& h, const AffineOptions& o,
                  bool inverse, Tensor& y, const std::string& who) {
  be.affine_forward(x, h, o.clamp, o.min_scale, inverse, y, who);
}

void affine_backward(Backend& be, const Tensor& y, const Tensor& h, const Tensor& dy,
                     const AffineOptions& o, bool inverse, Tensor& dx, Tensor& dh, Tensor* x,
                     const std::string& who) {
  Tensor none;
  be.affine_backward(y, h, dy, o.clamp, o.min_scale, inverse, dx, dh, x ? *x : none, who);
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
  affine_apply(ctx.backend(), ctx.input(0), ctx.input(1), opt_, inverse_, ctx.output(0), name());
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
  affine_backward(ctx.backend(), y, ctx.input(1), ctx.grad_output(0), opt_, inverse_, dx, dh,
                  nullptr, name());
}

Value affine(Value x, Value h, AffineOptions options, std::source_location where) {
  return x.tape().record(std::make_unique<AffineOp>(options, false), {x, h}, where)[0];
}

Value affine_inverse(Value y, Value h, AffineOptions options, std::source_location where) {
  return y.tape().record(std::make_unique<AffineOp>(options, true), {y, h}, where)[0];
}

}  // namespace frugal
