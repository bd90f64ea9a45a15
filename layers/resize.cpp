// Bilinear and bicubic resizing forward and backward, with their roles.
#include "layers/resize.h"

#include <cmath>

namespace frugal {

std::vector<TensorMeta> ResizeOp::infer(std::span<const TensorMeta> in) {
  const std::string op = name();
  FRUGAL_CHECK(in.size() == 1, op, ": expects 1 input, got ", in.size());
  const Shape& x = in[0].shape;
  FRUGAL_CHECK(x.rank() == 4, op, ": expects x (N,C,H,W), got ", x);
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64, op,
               ": input must be f32 or f64, got ", dtype_name(in[0].dtype));
  FRUGAL_CHECK(o_.height >= 1 && o_.width >= 1 && o_.height <= (int64_t{1} << 20) &&
                   o_.width <= (int64_t{1} << 20) && x[2] >= 1 && x[3] >= 1,
               op, ": ", x, " to ", o_.height, "x", o_.width, " (sizes must be 1 to 2^20)");
  g_ = {.N = x[0],
        .C = x[1],
        .H = x[2],
        .W = x[3],
        .P = o_.height,
        .Q = o_.width,
        .mode = o_.mode,
        .scale_h = o_.scale_h > 0 ? o_.scale_h : double(o_.height) / double(x[2]),
        .scale_w = o_.scale_w > 0 ? o_.scale_w : double(o_.width) / double(x[3]),
        .method = method_,
        .cubic_a = o_.cubic_a};
  FRUGAL_CHECK(std::isfinite(g_.scale_h) && std::isfinite(g_.scale_w), op, ": scales ", g_.scale_h,
               ", ", g_.scale_w, " are not finite");
  FRUGAL_CHECK(std::isfinite(o_.cubic_a), op, ": cubic coefficient ", o_.cubic_a, " is not finite");
  dtype_ = in[0].dtype;
  return {{Shape{g_.N, g_.C, g_.P, g_.Q}, dtype_}};
}

Roles ResizeOp::roles(Mode mode, const Backend&) const {
  Roles r;
  const TensorMeta y{Shape{g_.N, g_.C, g_.P, g_.Q}, dtype_};
  const double x_bytes = static_cast<double>(g_.N * g_.C * g_.H * g_.W * dtype_size(dtype_));
  rebuild_by_forward(r, mode, {0}, x_bytes, y, method_ == ResizeMethod::cubic ? 31 : 7);
  return r;
}

void ResizeOp::forward(const OpContext& ctx) {
  ctx.backend().resize_forward(g_, ctx.input(0), ctx.output(0));
}

void ResizeOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  ctx.backend().resize_backward(g_, ctx.grad_output(0), ctx.grad_input(0));
}

Value resize_bilinear(Value x, ResizeOptions o, std::source_location where) {
  return x.tape().record(std::make_unique<ResizeOp>(o, ResizeMethod::linear), {x}, where)[0];
}

Value resize_bicubic(Value x, ResizeOptions o, std::source_location where) {
  return x.tape().record(std::make_unique<ResizeOp>(o, ResizeMethod::cubic), {x}, where)[0];
}

}  // namespace frugal
