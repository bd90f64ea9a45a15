// Gather forward and backward, with its roles.
#include "layers/gather.h"

namespace frugal {

std::vector<TensorMeta> GatherOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "gather: expects 1 input, got ", in.size());
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "gather: input must be f32 or f64, got ", dtype_name(in[0].dtype));
  const Shape& s = in[0].shape;
  FRUGAL_CHECK(axis_ >= 0 && axis_ < s.rank(), "gather: axis ", axis_, " of x ", s);
  int64_t count = 1;
  for (int64_t d : index_dims_) {
    FRUGAL_CHECK(d >= 1, "gather: index dims ", Shape(index_dims_), " of x ", s);
    count *= d;
  }
  FRUGAL_CHECK(count == static_cast<int64_t>(index_.size()) && count >= 1,
               "gather: ", index_.size(), " indices for index dims ", Shape(index_dims_));
  const int a = static_cast<int>(axis_);
  const int64_t extent = s[a];
  for (int64_t& k : index_) {
    FRUGAL_CHECK(k >= -extent && k < extent, "gather: index ", k, " outside axis ", axis_, " of x ",
                 s);
    if (k < 0) k += extent;
  }
  std::vector<int64_t> dims(s.dims().begin(), s.dims().begin() + a);
  dims.insert(dims.end(), index_dims_.begin(), index_dims_.end());
  dims.insert(dims.end(), s.dims().begin() + a + 1, s.dims().end());
  outer_ = 1;
  for (int k = 0; k < a; ++k) outer_ *= s[k];
  y_ = TensorMeta{Shape(dims), in[0].dtype};
  return {y_};
}

Roles GatherOp::roles(Mode mode, const Backend&) const {
  Roles r;
  rebuild_by_forward(r, mode, {0}, static_cast<double>(y_.bytes()), y_, 0);
  return r;
}

void GatherOp::forward(const OpContext& ctx) {
  ctx.backend().gather_forward(ctx.input(0), index_, outer_, ctx.output(0));
}

// dx = 0 but at the gathered slices, which sum the dy slices taken from them.
void GatherOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  ctx.backend().gather_backward(ctx.grad_output(0), index_, outer_, ctx.grad_input(0));
}

Value gather(Value x, int64_t axis, std::vector<int64_t> index, std::vector<int64_t> index_dims,
             std::source_location where) {
  return x.tape().record(std::make_unique<GatherOp>(axis, std::move(index), std::move(index_dims)),
                         {x}, where)[0];
}

}  // namespace frugal
