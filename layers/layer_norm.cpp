// LayerNorm forward and backward, with its roles.
#include "layers/layer_norm.h"

#include "core/kernel_checks.h"

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
  FRUGAL_CHECK(options_.eps > 0, "layer_norm: eps must be positive, got ", options_.eps);
  x_ = in[0];
  rows_ = x.numel() / g.numel();
  return {x_};
}

Roles LayerNormOp::roles(Mode mode, const Backend&) const {
  Roles r;
  if (mode == Mode::training) {
    const TensorMeta row{Shape{rows_}, x_.dtype};
    r.saved = {row, row};                          // mean, inv_std
    r.grad_aliases = {{.output = 0, .input = 0}};  // each row's dx is written after its sums
    if (options_.from_output) {
      r.backward_reads_inputs = {1, 2};
      r.backward_reads_outputs = {0};
      r.aliases = {{.output = 0, .input = 0}};  // rows normalized after their sums
    } else {
      r.backward_reads_inputs = {0, 1};
    }
    // Forward again gives the same bits (no state): two passes over x and one write.
    rebuild_by_forward(r, mode, {0, 1, 2}, 2.0 * static_cast<double>(x_.bytes()), x_, 8);
  } else {
    r.aliases = {{.output = 0, .input = 0}};  // rows normalized after their sums
  }
  return r;
}

void LayerNormOp::forward(const OpContext& ctx) {
  Tensor none;
  if (options_.from_output && ctx.training()) {
    // What backward will need, before anything runs (or a parameter is updated).
    Backend& b = ctx.backend();
    const std::string who = "layer_norm" + (options_.name.empty() ? "" : " " + options_.name);
    FRUGAL_CHECK(b.offers_layernorm_from_output(), who,
                 ": from its output (--ln-from-output) does not run on ", b.device().str());
    check_invertible_weights(who, to_host(b, ctx.input(1), gamma_host_), "element",
                             "--ln-from-output");
  }
  ctx.backend().layernorm_forward(ctx.input(0), ctx.input(1), ctx.input(2), options_.eps,
                                  ctx.output(0), ctx.training() ? ctx.saved(0) : none,
                                  ctx.training() ? ctx.saved(1) : none);
}

void LayerNormOp::backward(const OpContext& ctx) {
  FRUGAL_CHECK(ctx.training(), "layer_norm: backward runs only in training mode");
  Tensor none;
  Tensor& dx = ctx.needs_grad_input(0) ? ctx.grad_input(0) : none;
  Tensor& dgamma = ctx.needs_grad_input(1) ? ctx.grad_input(1) : none;
  Tensor& dbeta = ctx.needs_grad_input(2) ? ctx.grad_input(2) : none;
  if (options_.from_output)
    ctx.backend().layernorm_backward_from_output(ctx.output(0), ctx.grad_output(0), ctx.input(1),
                                                 ctx.input(2), ctx.saved(1), dx, dgamma, dbeta);
  else
    ctx.backend().layernorm_backward(ctx.input(0), ctx.grad_output(0), ctx.input(1), ctx.saved(0),
                                     ctx.saved(1), dx, dgamma, dbeta);
}

int read_layer_norm_outputs(Tape& tape, const Backend& backend) {
  int set = 0;
  for (size_t k = 0; k < tape.ops().size(); ++k) {
    auto* ln = dynamic_cast<LayerNormOp*>(tape.ops()[k].op.get());
    if (ln == nullptr || ln->from_output()) continue;
    if (tape.output_kept_input_dies(static_cast<int>(k), backend)) {
      ln->set_from_output(true);
      ++set;
    }
  }
  return set;
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
  LayerNormOptions named = o;
  named.name = name;  // what its errors call it
  return t.record(std::make_unique<LayerNormOp>(named), {x, gamma, beta}, where)[0];
}

}  // namespace frugal
