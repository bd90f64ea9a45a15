// MaxPool2d forward and backward, with its roles: in training it saves the argmax index of
// every window (a byte, or half a byte where the backend packs small windows) and backward
// reads nothing else.
#include "layers/maxpool2d.h"

namespace frugal {

std::vector<TensorMeta> MaxPool2dOp::infer(std::span<const TensorMeta> in) {
  g_ = pool2d_geometry("max_pool2d", in, options_);
  x_dtype_ = in[0].dtype;
  FRUGAL_CHECK(g_.kernel_h * g_.kernel_w <= 256, "max_pool2d: kernel ", g_.kernel_h, "x",
               g_.kernel_w, " has more than 256 positions, too many for its u8 argmax index (x ",
               in[0].shape, ")");
  return {{Shape{g_.N, g_.C, g_.P, g_.Q}, in[0].dtype}};
}

Roles MaxPool2dOp::roles(Mode mode, const Backend& backend) const {
  Roles r;
  if (mode == Mode::training) r.saved = {maxpool_index_meta(g_, backend.maxpool_index_bits(g_))};
  const TensorMeta y{Shape{g_.N, g_.C, g_.P, g_.Q}, x_dtype_};
  const double x_bytes = static_cast<double>(g_.N * g_.C * g_.H * g_.W * dtype_size(x_dtype_));
  rebuild_by_forward(r, mode, {0}, x_bytes, y, static_cast<double>(g_.kernel_h * g_.kernel_w));
  return r;
}

// y = max over the window; in training also the window position of the max.
void MaxPool2dOp::forward(const OpContext& ctx) {
  Tensor none;
  ctx.backend().maxpool2d_forward(g_, ctx.input(0), ctx.output(0),
                                  ctx.training() ? ctx.saved(0) : none);
}

// dx = dy routed to the argmax of each window (summed where windows overlap)
void MaxPool2dOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  ctx.backend().maxpool2d_backward(g_, ctx.grad_output(0), ctx.saved(0), ctx.grad_input(0));
}

Value max_pool2d(Value x, const Pool2dOptions& o, std::source_location where) {
  return x.tape().record(std::make_unique<MaxPool2dOp>(o), {x}, where)[0];
}

}  // namespace frugal
