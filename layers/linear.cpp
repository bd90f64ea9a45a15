// Linear forward and backward, with its roles: backward reads x (for dw) and w (for dx).
#include "layers/linear.h"

#include <cmath>

namespace frugal {

std::vector<TensorMeta> LinearOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 2 || in.size() == 3, "linear: expects inputs x, w[, b], got ",
               in.size());
  const Shape &x = in[0].shape, &w = in[1].shape;
  FRUGAL_CHECK(x.rank() == 2 && w.rank() == 2, "linear: expects x (N,I) and w (O,I), got x ", x,
               ", w ", w, " (flatten the input first)");
  FRUGAL_CHECK(x[1] == w[1], "linear: input features ", x[1], " != weight features ", w[1], " (x ",
               x, ", w ", w, ")");
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "linear: input must be f32 or f64, got ", dtype_name(in[0].dtype));
  FRUGAL_CHECK(in[1].dtype == in[0].dtype, "linear: input is ", dtype_name(in[0].dtype),
               " but the weight is ", dtype_name(in[1].dtype));
  bias_ = in.size() == 3;
  dims_ = {x[0], x[1], w[0], static_cast<int64_t>(dtype_size(in[0].dtype))};
  if (bias_)
    FRUGAL_CHECK(in[2].shape == Shape{w[0]} && in[2].dtype == in[0].dtype, "linear: bias ",
                 in[2].shape, " ", dtype_name(in[2].dtype), " for weight ", w, " ",
                 dtype_name(in[1].dtype));
  return {{Shape{x[0], w[0]}, in[0].dtype}};
}

Roles LinearOp::roles(Mode mode, const Backend&) const {
  Roles r;
  if (mode == Mode::training) {
    r.backward_reads_inputs = {0, 1};
    r.grad_takes_input = {0};  // dw from x first, then dx, which may take x's bytes
    // Rebuilt by forward under a memory budget: 2 flops per multiply-add.
    const auto [n, i, o, elem] = dims_;
    std::vector<int> reads{0, 1};
    if (bias_) reads.push_back(2);
    set_rebuildable(r, std::move(reads), 2.0 * static_cast<double>(n * i * o),
                    static_cast<double>(elem * (n * i + i * o + n * o)));
    r.rebuild_expensive = true;
  }
  return r;
}

// y = x w^T + b
void LinearOp::forward(const OpContext& ctx) {
  Tensor none;
  ctx.backend().linear_forward(ctx.input(0), ctx.input(1), bias_ ? ctx.input(2) : none,
                               ctx.output(0));
}

// dx = dy w;  dw = dy^T x;  db = sum_n dy
// dw and db first, then dx, which may be written over x (Roles::grad_takes_input).
void LinearOp::backward(const OpContext& ctx) {
  Tensor none;
  const bool dw = ctx.needs_grad_input(1), db = bias_ && ctx.needs_grad_input(2);
  if (dw || db)
    ctx.backend().linear_backward_weight(ctx.input(0), ctx.grad_output(0),
                                         dw ? ctx.grad_input(1) : none,
                                         db ? ctx.grad_input(2) : none);
  if (ctx.needs_grad_input(0))
    ctx.backend().linear_backward_data(ctx.grad_output(0), ctx.input(1), ctx.grad_input(0));
}

Value linear(Value x, const LinearOptions& o, std::source_location where) {
  Tape& t = x.tape();
  FRUGAL_CHECK(x.shape().rank() == 2 && o.out >= 1, source_line(where),
               ": linear: expects x (N,I) and out >= 1; got x ", x.shape(), ", out ", o.out,
               " (flatten the input first)");
  const std::string name = o.name.empty() ? t.unique_name("linear") : o.name;
  const int64_t I = x.shape()[1];
  const Init init = Init::uniform(1.0 / std::sqrt(static_cast<double>(I)));
  std::vector<Value> in = {x, t.param(name + ".weight", {o.out, I}, init)};
  if (o.bias) in.push_back(t.param(name + ".bias", {o.out}, init));
  return t.record(std::make_unique<LinearOp>(), std::move(in), where)[0];
}

}  // namespace frugal
