// Linear forward and backward, with its roles: backward reads x (for dw) and w (for dx).
#include "layers/linear.h"

#include <cmath>

namespace frugal {

std::vector<TensorMeta> LinearOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 2 || in.size() == 3, "linear: expects inputs x, w[, b], got ",
               in.size());
  const Shape &x = in[0].shape, &w = in[1].shape;
  FRUGAL_CHECK(x.rank() >= 2 && w.rank() == 2, "linear: expects x (N,I) or (..., I) and w (O,I), ",
               "got x ", x, ", w ", w, " (flatten the input first)");
  const int64_t features = x[x.rank() - 1];
  FRUGAL_CHECK(features == w[1], "linear: input features ", features, " != weight features ", w[1],
               " (x ", x, ", w ", w, ")");
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "linear: input must be f32 or f64, got ", dtype_name(in[0].dtype));
  FRUGAL_CHECK(in[1].dtype == in[0].dtype, "linear: input is ", dtype_name(in[0].dtype),
               " but the weight is ", dtype_name(in[1].dtype));
  bias_ = in.size() == 3;
  dims_ = {x.numel() / features, features, w[0], static_cast<int64_t>(dtype_size(in[0].dtype))};
  if (bias_)
    FRUGAL_CHECK(in[2].shape == Shape{w[0]} && in[2].dtype == in[0].dtype, "linear: bias ",
                 in[2].shape, " ", dtype_name(in[2].dtype), " for weight ", w, " ",
                 dtype_name(in[1].dtype));
  std::vector<int64_t> y(x.dims().begin(), x.dims().end() - 1);
  y.push_back(w[0]);
  return {{Shape(y), in[0].dtype}};
}

// x, y, dx and dy as the (rows, features) matrices the kernels take: views of the same bytes.
Tensor LinearOp::rows(const Tensor& t, int64_t features) const {
  return t.defined() ? t.reshape(Shape{dims_.n, features}) : t;
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
  Tensor y = rows(ctx.output(0), dims_.out);
  ctx.backend().linear_forward(rows(ctx.input(0), dims_.in), ctx.input(1),
                               bias_ ? ctx.input(2) : none, y);
}

// dx = dy w;  dw = dy^T x;  db = sum_n dy
// dw and db first, then dx, which may be written over x (Roles::grad_takes_input).
void LinearOp::backward(const OpContext& ctx) {
  Tensor none;
  const bool dw = ctx.needs_grad_input(1), db = bias_ && ctx.needs_grad_input(2);
  const Tensor dy = rows(ctx.grad_output(0), dims_.out);
  if (dw || db)
    ctx.backend().linear_backward_weight(rows(ctx.input(0), dims_.in), dy,
                                         dw ? ctx.grad_input(1) : none,
                                         db ? ctx.grad_input(2) : none);
  if (ctx.needs_grad_input(0)) {
    Tensor dx = rows(ctx.grad_input(0), dims_.in);
    ctx.backend().linear_backward_data(dy, ctx.input(1), dx);
  }
}

Value linear(Value x, const LinearOptions& o, std::source_location where) {
  Tape& t = x.tape();
  FRUGAL_CHECK(x.shape().rank() >= 2 && o.out >= 1, source_line(where),
               ": linear: expects x (N,I) or (..., I) and out >= 1; got x ", x.shape(), ", out ",
               o.out, " (flatten the input first)");
  const std::string name = o.name.empty() ? t.unique_name("linear") : o.name;
  const int64_t I = x.shape()[x.shape().rank() - 1];
  const Init init = Init::uniform(1.0 / std::sqrt(static_cast<double>(I)));
  std::vector<Value> in = {x, t.param(name + ".weight", {o.out, I}, init)};
  if (o.bias) in.push_back(t.param(name + ".bias", {o.out}, init));
  return t.record(std::make_unique<LinearOp>(), std::move(in), where)[0];
}

}  // namespace frugal
