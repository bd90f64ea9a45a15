// Conv2d forward and backward, with its roles: backward reads x (for dw) and w (for dx); the
// kernels' working memory is forward and backward scratch sized by the backend.
#include "layers/conv2d.h"

#include <cmath>

namespace frugal {

std::vector<TensorMeta> Conv2dOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 2 || in.size() == 3, "conv2d: expects inputs x, w[, b], got ",
               in.size());
  const Shape &x = in[0].shape, &w = in[1].shape;
  FRUGAL_CHECK(x.rank() == 4 && w.rank() == 4,
               "conv2d: expects x (N,C,H,W) and w (K,C,R,S), got x ", x, ", w ", w);
  FRUGAL_CHECK(x[1] == w[1], "conv2d: input channels ", x[1], " != weight channels ", w[1], " (x ",
               x, ", w ", w, ")");
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "conv2d: input must be f32 or f64, got ", dtype_name(in[0].dtype));
  FRUGAL_CHECK(in[1].dtype == in[0].dtype, "conv2d: input is ", dtype_name(in[0].dtype),
               " but the weight is ", dtype_name(in[1].dtype));
  FRUGAL_CHECK(stride_ >= 1 && pad_ >= 0, "conv2d: stride ", stride_, " and pad ", pad_,
               " must be >= 1 and >= 0");
  bias_ = in.size() == 3;
  if (bias_)
    FRUGAL_CHECK(in[2].shape == Shape{w[0]} && in[2].dtype == in[0].dtype, "conv2d: bias ",
                 in[2].shape, " ", dtype_name(in[2].dtype), " for weight ", w, " ",
                 dtype_name(in[1].dtype));
  g_ = {.N = x[0], .C = x[1], .H = x[2], .W = x[3], .K = w[0], .R = w[2], .S = w[3]};
  g_.stride_h = g_.stride_w = stride_;
  g_.pad_h = g_.pad_w = pad_;
  FRUGAL_CHECK(g_.H + 2 * pad_ >= g_.R && g_.W + 2 * pad_ >= g_.S, "conv2d: kernel ", g_.R, "x",
               g_.S, " is larger than the padded input ", g_.H + 2 * pad_, "x", g_.W + 2 * pad_,
               " (x ", x, ", w ", w, ", pad ", pad_, ")");
  g_.P = (g_.H + 2 * pad_ - g_.R) / stride_ + 1;
  g_.Q = (g_.W + 2 * pad_ - g_.S) / stride_ + 1;
  dtype_ = in[0].dtype;
  return {{Shape{g_.N, g_.K, g_.P, g_.Q}, dtype_}};
}

// The scratch is the backend's least; where the backend has faster algorithms that need more
// (cuDNN), it offers them as choices and runs the fastest that fits what the plan gives.
Roles Conv2dOp::roles(Mode mode, const Backend& backend) const {
  Roles r;
  r.forward_scratch = backend.conv2d_forward_scratch(g_, dtype_);
  r.forward_choices = backend.conv2d_scratch_choices(g_, dtype_, false);
  if (mode == Mode::training) {
    r.backward_reads_inputs = {0, 1};
    r.backward_scratch = backend.conv2d_backward_scratch(g_, dtype_);
    r.backward_choices = backend.conv2d_scratch_choices(g_, dtype_, true);
  }
  return r;
}

namespace {
// The scratch the plan gave the op, else an undefined tensor.
Tensor scratch_of(const OpContext& ctx) {
  return ctx.has_scratch() ? ctx.scratch() : Tensor();
}
}  // namespace

// y = w * x + b  (scratch: the backend's, e.g. padded tiles or the im2col columns of a chunk)
void Conv2dOp::forward(const OpContext& ctx) {
  Tensor none, scratch = scratch_of(ctx);
  ctx.backend().conv2d_forward(g_, ctx.input(0), ctx.input(1), bias_ ? ctx.input(2) : none,
                               ctx.output(0), scratch);
}

// dx = w^T * dy (col2im of the columns);  dw = dy * cols(x)^T;  db = sum over N,P,Q of dy
void Conv2dOp::backward(const OpContext& ctx) {
  Tensor none, scratch = scratch_of(ctx);
  if (ctx.needs_grad_input(0))
    ctx.backend().conv2d_backward_data(g_, ctx.grad_output(0), ctx.input(1), ctx.grad_input(0),
                                       scratch);
  const bool dw = ctx.needs_grad_input(1), db = bias_ && ctx.needs_grad_input(2);
  if (dw || db)
    ctx.backend().conv2d_backward_filter(g_, ctx.input(0), ctx.grad_output(0),
                                         dw ? ctx.grad_input(1) : none,
                                         db ? ctx.grad_input(2) : none, scratch);
}

Value conv2d(Value x, const Conv2dOptions& o, std::source_location where) {
  Tape& t = x.tape();
  FRUGAL_CHECK(x.shape().rank() == 4 && o.out >= 1 && o.kernel >= 1, source_line(where),
               ": conv2d: expects x (N,C,H,W), out >= 1 and kernel >= 1; got x ", x.shape(),
               ", out ", o.out, ", kernel ", o.kernel);
  const std::string name = o.name.empty() ? t.unique_name("conv2d") : o.name;
  const int64_t k = o.kernel;
  std::vector<Value> in = {
      x, t.param(name + ".weight", {o.out, x.shape()[1], k, k},
                 Init::normal(std::sqrt(2.0 / static_cast<double>(k * k * o.out))))};
  if (o.bias) in.push_back(t.param(name + ".bias", {o.out}, Init::zeros()));
  return t.record(std::make_unique<Conv2dOp>(o.stride, o.pad), std::move(in), where)[0];
}

}  // namespace frugal
