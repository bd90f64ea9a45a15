// AvgPool2d forward and backward, with its roles: backward is a fixed linear map of dy, so
// it reads no input, output or saved tensor.
#include "layers/avgpool2d.h"

namespace frugal {

std::vector<TensorMeta> AvgPool2dOp::infer(std::span<const TensorMeta> in) {
  g_ = pool2d_geometry("avg_pool2d", in, options_);
  FRUGAL_CHECK(g_.dilation_h == 1 && g_.dilation_w == 1, "avg_pool2d: dilation ", g_.dilation_h,
               "x", g_.dilation_w, ": average pools take none");
  x_dtype_ = in[0].dtype;
  return {{Shape{g_.N, g_.C, g_.P, g_.Q}, in[0].dtype}};
}

Roles AvgPool2dOp::roles(Mode mode, const Backend&) const {
  Roles r;
  const TensorMeta y{Shape{g_.N, g_.C, g_.P, g_.Q}, x_dtype_};
  const double x_bytes = static_cast<double>(g_.N * g_.C * g_.H * g_.W * dtype_size(x_dtype_));
  rebuild_by_forward(r, mode, {0}, x_bytes, y, static_cast<double>(g_.kernel_h * g_.kernel_w));
  return r;
}

// y = sum of the window / its area (padding included)
void AvgPool2dOp::forward(const OpContext& ctx) {
  ctx.backend().avgpool2d_forward(g_, ctx.input(0), ctx.output(0));
}

// dx = sum over the windows covering x of dy / area
void AvgPool2dOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  ctx.backend().avgpool2d_backward(g_, ctx.grad_output(0), ctx.grad_input(0));
}

Value avg_pool2d(Value x, const Pool2dOptions& o, std::source_location where) {
  return x.tape().record(std::make_unique<AvgPool2dOp>(o), {x}, where)[0];
}

}  // namespace frugal
