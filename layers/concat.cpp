// Concat forward and backward, with its roles.
#include "layers/concat.h"

namespace frugal {

std::vector<TensorMeta> ConcatOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(!in.empty(), "concat: expects at least 1 input, got 0");
  const Shape& s0 = in[0].shape;
  FRUGAL_CHECK(s0.rank() == 2 || s0.rank() == 4, "concat: input 0 ", s0,
               " must be (N,C) or (N,C,H,W)");
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "concat: inputs must be f32 or f64, got ", dtype_name(in[0].dtype));
  Shape y = s0;
  for (size_t i = 1; i < in.size(); ++i) {
    const Shape& s = in[i].shape;
    const bool fits = s.rank() == s0.rank() && s[0] == s0[0] &&
                      (s.rank() == 2 || (s[2] == s0[2] && s[3] == s0[3]));
    FRUGAL_CHECK(fits, "concat: input ", i, " ", s, " does not match input 0 ", s0,
                 " (all but dim 1 must be equal)");
    FRUGAL_CHECK(in[i].dtype == in[0].dtype, "concat: input ", i, " is ", dtype_name(in[i].dtype),
                 ", input 0 is ", dtype_name(in[0].dtype));
    y[1] += s[1];
  }
  xs_.assign(in.begin(), in.end());
  y_ = {y, in[0].dtype};
  return {y_};
}

Roles ConcatOp::roles(Mode mode, const Backend&) const {
  Roles r;
  std::vector<int> all(xs_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  rebuild_by_forward(r, mode, std::move(all), static_cast<double>(y_.bytes()), y_, 0);
  return r;
}

// y[:, offset_i : offset_i + Ci] = x_i
void ConcatOp::forward(const OpContext& ctx) {
  std::vector<Tensor> xs;
  for (size_t i = 0; i < xs_.size(); ++i) xs.push_back(ctx.input(static_cast<int>(i)));
  ctx.backend().concat_forward(xs, ctx.output(0));
}

// dx_i = dy[:, offset_i : offset_i + Ci]; inputs needing no gradient pass a shaped, undefined
// tensor so the kernel still knows their offset.
void ConcatOp::backward(const OpContext& ctx) {
  std::vector<Tensor> dxs;
  for (size_t i = 0; i < xs_.size(); ++i) {
    const int k = static_cast<int>(i);
    dxs.push_back(ctx.needs_grad_input(k) ? ctx.grad_input(k)
                                          : Tensor(nullptr, 0, xs_[i].shape, xs_[i].dtype));
  }
  ctx.backend().concat_backward(ctx.grad_output(0), dxs);
}

Value concat(std::vector<Value> xs, std::source_location where) {
  FRUGAL_CHECK(!xs.empty(), source_line(where), ": concat: expects at least 1 input, got 0");
  Tape& tape = xs[0].tape();
  return tape.record(std::make_unique<ConcatOp>(), std::move(xs), where)[0];
}

}  // namespace frugal
