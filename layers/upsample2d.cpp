// Nearest upsampling forward and backward, with its roles.
#include "layers/upsample2d.h"

namespace frugal {

std::vector<TensorMeta> UpsampleNearestOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "upsample_nearest2d: expects 1 input, got ", in.size());
  const Shape& x = in[0].shape;
  FRUGAL_CHECK(x.rank() == 4, "upsample_nearest2d: expects x (N,C,H,W), got ", x);
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "upsample_nearest2d: input must be f32 or f64, got ", dtype_name(in[0].dtype));
  FRUGAL_CHECK(scale_h_ >= 1 && scale_w_ >= 1 && scale_h_ <= 4096 && scale_w_ <= 4096,
               "upsample_nearest2d: scale ", scale_h_, "x", scale_w_,
               " must be whole numbers in "
               "1..4096");
  g_ = {.N = x[0], .C = x[1], .H = x[2], .W = x[3], .P = x[2] * scale_h_, .Q = x[3] * scale_w_};
  g_.kernel_h = g_.stride_h = scale_h_;
  g_.kernel_w = g_.stride_w = scale_w_;
  dtype_ = in[0].dtype;
  return {{Shape{g_.N, g_.C, g_.P, g_.Q}, dtype_}};
}

Roles UpsampleNearestOp::roles(Mode mode, const Backend&) const {
  Roles r;
  const double x_bytes = static_cast<double>(g_.N * g_.C * g_.H * g_.W * dtype_size(dtype_));
  rebuild_by_forward(r, mode, {0}, x_bytes, {Shape{g_.N, g_.C, g_.P, g_.Q}, dtype_}, 0);
  return r;
}

void UpsampleNearestOp::forward(const OpContext& ctx) {
  ctx.backend().upsample_nearest_forward(g_, ctx.input(0), ctx.output(0));
}

void UpsampleNearestOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  ctx.backend().upsample_nearest_backward(g_, ctx.grad_output(0), ctx.grad_input(0));
}

Value upsample_nearest2d(Value x, int64_t scale, std::source_location where) {
  return x.tape().record(std::make_unique<UpsampleNearestOp>(scale, scale), {x}, where)[0];
}

}  // namespace frugal
