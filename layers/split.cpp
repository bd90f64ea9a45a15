// Split forward and backward, with its roles.
#include "layers/split.h"

#include "core/copy_box.h"

namespace frugal {

std::vector<TensorMeta> SplitOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "split: expects 1 input, got ", in.size());
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "split: input must be f32 or f64, got ", dtype_name(in[0].dtype));
  const Shape& s = in[0].shape;
  FRUGAL_CHECK(s.rank() >= 2 && s.rank() <= CopyBox::kMaxRank && axis_ >= 0 && axis_ < s.rank(),
               "split: axis ", axis_, " of x ", s, " (ranks 2 to 6, axes 0 to rank-1)");
  // Each size checked against what is left of the axis before it is added: sizes from a file
  // may be anything, and their sum must not overflow.
  const int64_t extent = s[static_cast<int>(axis_)];
  int64_t total = 0;
  bool fits = !sizes_.empty();
  for (int64_t n : sizes_) {
    fits = fits && n >= 1 && n <= extent - total;
    if (!fits) break;
    total += n;
  }
  FRUGAL_CHECK(fits && total == extent, "split: sizes of ", sizes_.size(),
               " parts do not cut axis ", axis_, " of x ", s, " (", extent,
               ") into parts of at least 1");
  x_ = in[0];
  parts_.clear();
  for (int64_t n : sizes_) {
    TensorMeta p = x_;
    p.shape[static_cast<int>(axis_)] = n;
    parts_.push_back(p);
  }
  return parts_;
}

std::vector<int64_t> SplitOp::shift(size_t part) const {
  std::vector<int64_t> s(static_cast<size_t>(x_.shape.rank()), 0);
  for (size_t i = 0; i < part; ++i) s[static_cast<size_t>(axis_)] += sizes_[i];
  return s;
}

// Not rebuildable: a rebuild would rewrite every part (the parts are usually read at once).
Roles SplitOp::roles(Mode, const Backend&) const {
  return {};
}

void SplitOp::forward(const OpContext& ctx) {
  for (size_t i = 0; i < parts_.size(); ++i)
    ctx.backend().strided_copy(shifted_box(x_.shape, parts_[i].shape, shift(i)), ctx.input(0),
                               ctx.output(static_cast<int>(i)));
}

// dx = [dy_0, dy_1, ...] along the axis (an unused part's gradient is zero).
void SplitOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  for (size_t i = 0; i < parts_.size(); ++i) {
    std::vector<int64_t> back = shift(i);
    for (int64_t& v : back) v = -v;
    ctx.backend().strided_copy(shifted_box(parts_[i].shape, x_.shape, back),
                               ctx.grad_output(static_cast<int>(i)), ctx.grad_input(0));
  }
}

std::vector<Value> split(Value x, int64_t axis, std::vector<int64_t> sizes,
                         std::source_location where) {
  return x.tape().record(std::make_unique<SplitOp>(axis, std::move(sizes)), {x}, where);
}

}  // namespace frugal
