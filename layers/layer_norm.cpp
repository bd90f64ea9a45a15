// LayerNorm forward and backward, with its roles.
#include "layers/layer_norm.h"

namespace frugal {

std::vector<TensorMeta> LayerNormOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 3, "layer_norm: expects 3 inputs (x, weight, bias), got ", in.size());
  const Shape &x = in[0].shape, &g = in[1].shape;
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "layer_norm: input must be f32 or f64, got ", dtype_name(in[0].dtype), " (x ", x,
               ")");
  bool fits = g.rank() >= 1 && g.rank() < x.rank();
  for (int k = 0; fits && k < g.rank(); ++k) fits = g[k] == x[x.rank() - g.rank() + k];
  FRUGAL_CHECK(fits, "layer_norm: weight ", g, " is not the trailing axes of x ", x,
               " (the batch axis is never normalized)");
  for (int i = 1; i < 3; ++i)
    FRUGAL_CHECK(in[i].shape == g && in[i].dtype == in[0].dtype,
                 "layer_norm: ", i == 1 ? "weight " : "bias ", in[i].shape, " ",
                 dtype_name(in[i].dtype), ", expected ", g, " ", dtype_name(in[0].dtype), " for x ",
                 x);
  FRUGAL_CHECK(eps_ > 0, "layer_norm: eps must be positive, got ", eps_);
  x_ = in[0];
  rows_ = x.numel() / g.numel();
  return {x_};
}

Roles LayerNormOp::roles(Mode mode, const Backend&) const {
  Roles r;
  if (mode == Mode::training) {
    const TensorMeta row{Shape{rows_}, x_.dtype};
    r.saved = {row, row};  // mean, inv_std
    r.backward_reads_inputs = {0, 1};
    r.grad_aliases = {{.output = 0, .input = 0}};  // each row's dx is written after its sums
    // Forward again gives the same bits (no state): two passes over x and one write.
    rebuild_by_forward(r, mode, {0, 1, 2}, 2.0 * static_cast<double>(x_.bytes()), x_, 8);
  } else {
    r.aliases = {{.output = 0, .input = 0}};  // rows normalized after their sums
  }
  return r;
}

void LayerNormOp::forward(const OpContext& ctx) {
  Tensor none;
  ctx.backend().layernorm_forward(ctx.input(0), ctx.input(1), ctx.input(2), eps_, ctx.output(0),
                                  ctx.training() ? ctx.saved(0) : none,
                                  ctx.training() ? ctx.saved(1) : none);
}

void LayerNormOp::backward(const OpContext& ctx) {
  FRUGAL_CHECK(ctx.training(), "layer_norm: backward runs only in training mode");
  Tensor none;
  Tensor& dx = ctx.needs_grad_input(0) ? ctx.grad_input(0) : none;
  Tensor& dgamma = ctx.needs_grad_input(1) ? ctx.grad_input(1) : none;
  Tensor& dbeta = ctx.needs_grad_input(2) ? ctx.grad_input(2) : none;
  ctx.backend().layernorm_backward(ctx.input(0), ctx.grad_output(0), ctx.input(1), ctx.saved(0),
                                   ctx.saved(1), dx, dgamma, dbeta);
}

Value layer_norm(Value x, int axes, const LayerNormOptions& o, std::source_location where) {
  Tape& t = x.tape();
  const Shape& s = x.shape();
  FRUGAL_CHECK(axes >= 1 && axes < s.rank(), source_line(where), ": layer_norm: ", axes,
               " trailing axes of x ", s, " (1 to rank - 1: the batch axis is never normalized)");
  const std::string name = o.name.empty() ? t.unique_name("layer_norm") : o.name;
  const Shape normalized(std::vector<int64_t>(s.dims().end() - axes, s.dims().end()));
  Value gamma = t.param(name + ".weight", normalized, Init::ones(), true);
  Value beta = t.param(name + ".bias", normalized, Init::zeros(), true);
  return t.record(std::make_unique<LayerNormOp>(o.eps), {x, gamma, beta}, where)[0];
}

}  // namespace frugal
