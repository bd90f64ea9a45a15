// Concat forward and backward, with its roles.
#include "layers/concat.h"

#include "core/copy_box.h"

namespace frugal {

std::vector<TensorMeta> ConcatOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(!in.empty(), "concat: expects at least 1 input, got 0");
  const Shape& s0 = in[0].shape;
  FRUGAL_CHECK(s0.rank() >= 2 && s0.rank() <= CopyBox::kMaxRank && axis_ >= 1 && axis_ < s0.rank(),
               "concat: axis ", axis_, " of input 0 ", s0,
               " (ranks 2 to 6, axes 1 to rank-1: the batch axis is not joined)");
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "concat: inputs must be f32 or f64, got ", dtype_name(in[0].dtype));
  const int a = static_cast<int>(axis_);
  Shape y = s0;
  for (size_t i = 1; i < in.size(); ++i) {
    const Shape& s = in[i].shape;
    bool fits = s.rank() == s0.rank();
    for (int k = 0; fits && k < s.rank(); ++k) fits = k == a || s[k] == s0[k];
    FRUGAL_CHECK(fits, "concat: input ", i, " ", s, " does not match input 0 ", s0,
                 " (all but dim ", a, " must be equal)");
    FRUGAL_CHECK(in[i].dtype == in[0].dtype, "concat: input ", i, " is ", dtype_name(in[i].dtype),
                 ", input 0 is ", dtype_name(in[0].dtype));
    y[a] += s[a];
  }
  xs_.assign(in.begin(), in.end());
  y_ = {y, in[0].dtype};
  return {y_};
}

bool ConcatOp::channels() const {
  return axis_ == 1 && (y_.shape.rank() == 2 || y_.shape.rank() == 4);
}

std::vector<int64_t> ConcatOp::shift(size_t i) const {
  std::vector<int64_t> s(static_cast<size_t>(y_.shape.rank()), 0);
  for (size_t j = 0; j < i; ++j) s[static_cast<size_t>(axis_)] -= xs_[j].shape[int(axis_)];
  return s;
}

Roles ConcatOp::roles(Mode mode, const Backend&) const {
  Roles r;
  std::vector<int> all(xs_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  rebuild_by_forward(r, mode, std::move(all), static_cast<double>(y_.bytes()), y_, 0);
  return r;
}

// y[:, offset_i : offset_i + Ci] = x_i (along the axis)
void ConcatOp::forward(const OpContext& ctx) {
  if (!channels()) {
    for (size_t i = 0; i < xs_.size(); ++i)
      ctx.backend().strided_copy(shifted_box(xs_[i].shape, y_.shape, shift(i)),
                                 ctx.input(static_cast<int>(i)), ctx.output(0));
    return;
  }
  std::vector<Tensor> xs;
  for (size_t i = 0; i < xs_.size(); ++i) xs.push_back(ctx.input(static_cast<int>(i)));
  ctx.backend().concat_forward(xs, ctx.output(0));
}

// dx_i = dy[:, offset_i : offset_i + Ci]; inputs needing no gradient pass a shaped, undefined
// tensor so the kernel still knows their offset.
void ConcatOp::backward(const OpContext& ctx) {
  if (!channels()) {
    for (size_t i = 0; i < xs_.size(); ++i) {
      const int k = static_cast<int>(i);
      if (!ctx.needs_grad_input(k)) continue;
      std::vector<int64_t> back = shift(i);
      for (int64_t& v : back) v = -v;
      ctx.backend().strided_copy(shifted_box(y_.shape, xs_[i].shape, back), ctx.grad_output(0),
                                 ctx.grad_input(k));
    }
    return;
  }
  std::vector<Tensor> dxs;
  for (size_t i = 0; i < xs_.size(); ++i) {
    const int k = static_cast<int>(i);
    dxs.push_back(ctx.needs_grad_input(k) ? ctx.grad_input(k)
                                          : Tensor(nullptr, 0, xs_[i].shape, xs_[i].dtype));
  }
  ctx.backend().concat_backward(ctx.grad_output(0), dxs);
}

Value concat(std::vector<Value> xs, std::source_location where) {
  return concat(std::move(xs), 1, where);
}

Value concat(std::vector<Value> xs, int64_t axis, std::source_location where) {
  FRUGAL_CHECK(!xs.empty(), source_line(where), ": concat: expects at least 1 input, got 0");
  Tape& tape = xs[0].tape();
  return tape.record(std::make_unique<ConcatOp>(axis), std::move(xs), where)[0];
}

}  // namespace frugal
