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
  const int64_t dim = s[static_cast<int>(axis_)];
  FRUGAL_CHECK(step_ != 0, "slice: step 0 on axis ", axis_, " of x ", s);
  if (step_ > 0)
    FRUGAL_CHECK(0 <= begin_ && begin_ < end_ && end_ <= dim, "slice: [", begin_, ", ", end_,
                 ") is not inside axis ", axis_, " of x ", s);
  else
    FRUGAL_CHECK(-1 <= end_ && end_ < begin_ && begin_ < dim, "slice: [", begin_, ", ", end_,
                 ") with step ", step_, " is not inside axis ", axis_, " of x ", s,
                 " (a negative step runs from begin down to end, end excluded, end >= -1)");
  x_ = in[0];
  y_ = x_;
  // ceil(span / |step|) without overflow for any step (|INT64_MIN| too); a step past the span
  // takes one element, and is then 1 (or -1) so that the copy's stride stays in range.
  const auto span = static_cast<uint64_t>(step_ > 0 ? end_ - begin_ : begin_ - end_);
  const uint64_t stride =
      step_ > 0 ? static_cast<uint64_t>(step_) : 0 - static_cast<uint64_t>(step_);
  const auto count = static_cast<int64_t>((span - 1) / stride + 1);
  if (count == 1) step_ = step_ > 0 ? 1 : -1;
  y_.shape[static_cast<int>(axis_)] = count;
  return {y_};
}

CopyBox SliceOp::box(bool forward) const {
  // Over y's elements: y's j along the axis is x's begin + j * step (a negative step walks x
  // backwards), every other axis as it is.
  CopyBox b;
  b.rank = y_.shape.rank();
  const std::vector<int64_t> xs = row_strides(x_.shape), ys = row_strides(y_.shape);
  const auto a = static_cast<size_t>(axis_);
  int64_t* from = forward ? b.x_stride : b.y_stride;  // x's side of the copy
  int64_t* to = forward ? b.y_stride : b.x_stride;
  for (size_t k = 0; k < static_cast<size_t>(b.rank); ++k) {
    b.size[k] = y_.shape[static_cast<int>(k)];
    from[k] = xs[k];
    to[k] = ys[k];
  }
  from[a] *= step_;
  (forward ? b.x_offset : b.y_offset) = begin_ * xs[a];
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
