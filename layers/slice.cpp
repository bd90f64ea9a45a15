// Slice forward and backward, with its roles.
#include "layers/slice.h"

namespace frugal {

std::vector<TensorMeta> SliceOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "slice: expects 1 input, got ", in.size());
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "slice: input must be f32 or f64, got ", dtype_name(in[0].dtype));
  const Shape& s = in[0].shape;
  FRUGAL_CHECK(s.rank() >= 2 && s.rank() <= CopyBox::kMaxRank && axis_ >= 1 && axis_ < s.rank(),
               "slice: axis ", axis_, " of x ", s,
               " (ranks 2 to 6, axes 1 to rank-1: the batch axis is not sliced)");
  FRUGAL_CHECK(0 <= begin_ && begin_ < end_ && end_ <= s[static_cast<int>(axis_)], "slice: [",
               begin_, ", ", end_, ") is not inside axis ", axis_, " of x ", s);
  FRUGAL_CHECK(step_ >= 1, "slice: step ", step_, " on axis ", axis_, " of x ", s,
               " (steps of 1 or more)");
  x_ = in[0];
  y_ = x_;
  y_.shape[static_cast<int>(axis_)] = (end_ - begin_ + step_ - 1) / step_;
  return {y_};
}

std::vector<int64_t> SliceOp::shift() const {
  std::vector<int64_t> s(static_cast<size_t>(x_.shape.rank()), 0);
  s[static_cast<size_t>(axis_)] = begin_;
  return s;
}

CopyBox SliceOp::box(bool forward) const {
  std::vector<int64_t> s = shift();
  if (!forward)
    for (int64_t& v : s) v = -v;
  CopyBox b = forward ? shifted_box(x_.shape, y_.shape, s) : shifted_box(y_.shape, x_.shape, s);
  // y's j is x's begin + j * step along the axis: x's stride there times the step.
  const auto a = static_cast<size_t>(axis_);
  (forward ? b.x_stride : b.y_stride)[a] *= step_;
  return b;
}

Roles SliceOp::roles(Mode mode, const Backend&) const {
  Roles r;
  rebuild_by_forward(r, mode, {0}, static_cast<double>(y_.bytes()), y_, 0);
  return r;
}

void SliceOp::forward(const OpContext& ctx) {
  ctx.backend().strided_copy(box(true), ctx.input(0), ctx.output(0));
}

// dx = 0 but at the sliced elements, which take dy.
void SliceOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  Tensor& dx = ctx.grad_input(0);
  ctx.backend().fill(dx, 0.0);
  ctx.backend().strided_copy(box(false), ctx.grad_output(0), dx);
}

Value slice(Value x, int64_t axis, int64_t begin, int64_t end, int64_t step,
            std::source_location where) {
  return x.tape().record(std::make_unique<SliceOp>(axis, begin, end, step), {x}, where)[0];
}

}  // namespace frugal
