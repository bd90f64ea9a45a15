// ConvTranspose2d on the backend's convolution kernels, with its roles: backward reads x (for
// d w) and w (for d x).
#include "layers/conv_transpose2d.h"

#include <cmath>

namespace frugal {

std::vector<TensorMeta> ConvTranspose2dOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 2 || in.size() == 3, "conv_transpose2d: expects inputs x, w[, b], got ",
               in.size());
  const Shape &x = in[0].shape, &w = in[1].shape;
  FRUGAL_CHECK(x.rank() == 4 && w.rank() == 4,
               "conv_transpose2d: expects x (N,C,H,W) and w (C,K/groups,R,S), got x ", x, ", w ",
               w);
  const Conv2dParams& p = p_;
  check_conv_params("conv_transpose2d", p);
  FRUGAL_CHECK(output_padding_h_ >= 0 && output_padding_w_ >= 0 && output_padding_h_ < p.stride_h &&
                   output_padding_w_ < p.stride_w,
               "conv_transpose2d: output padding ", output_padding_h_, "x", output_padding_w_,
               " must be >= 0 and below the stride ", p.stride_h, "x", p.stride_w);
  FRUGAL_CHECK(x[1] == w[0] && x[1] % p.groups == 0, "conv_transpose2d: input channels ", x[1],
               " != the weight's first dimension ", w[0], " or not divisible by ", p.groups,
               " groups (x ", x, ", w ", w, ")");
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "conv_transpose2d: input must be f32 or f64, got ", dtype_name(in[0].dtype));
  FRUGAL_CHECK(in[1].dtype == in[0].dtype, "conv_transpose2d: input is ", dtype_name(in[0].dtype),
               " but the weight is ", dtype_name(in[1].dtype));
  const int64_t K = w[1] * p.groups;
  bias_ = in.size() == 3;
  if (bias_)
    FRUGAL_CHECK(in[2].shape == Shape{K} && in[2].dtype == in[0].dtype, "conv_transpose2d: bias ",
                 in[2].shape, " ", dtype_name(in[2].dtype), " for ", K, " output channels");
  const int64_t P = (x[2] - 1) * p.stride_h - p.pad_top - p.pad_bottom + p.dilation_h * (w[2] - 1) +
                    output_padding_h_ + 1;
  const int64_t Q = (x[3] - 1) * p.stride_w - p.pad_left - p.pad_right + p.dilation_w * (w[3] - 1) +
                    output_padding_w_ + 1;
  FRUGAL_CHECK(P >= 1 && Q >= 1, "conv_transpose2d: the padding ", p.pad_top, ",", p.pad_left, ",",
               p.pad_bottom, ",", p.pad_right, " leaves no output (x ", x, ", w ", w, ")");
  // The convolution this is the adjoint of: input y (N,K,P,Q), filters (C, K/groups, R, S),
  // output x (N,C,H,W).
  g_ = {.N = x[0], .C = K, .H = P, .W = Q, .K = x[1], .R = w[2], .S = w[3]};
  g_.stride_h = p.stride_h, g_.stride_w = p.stride_w;
  g_.pad_h = p.pad_top, g_.pad_w = p.pad_left, g_.pad_h_end = p.pad_bottom;
  g_.pad_w_end = p.pad_right, g_.dilation_h = p.dilation_h, g_.dilation_w = p.dilation_w;
  g_.groups = p.groups;
  g_.P = x[2], g_.Q = x[3];
  dtype_ = in[0].dtype;
  const Shape y{x[0], K, P, Q};
  Shape out;
  bias_g_ = broadcast_of(y, Shape{1, K, 1, 1}, &out);
  return {{y, dtype_}};
}

Roles ConvTranspose2dOp::roles(Mode mode, const Backend& backend) const {
  Roles r;
  r.forward_scratch = backend.conv2d_backward_scratch(g_, dtype_);
  if (mode == Mode::training) {
    r.backward_reads_inputs = {0, 1};
    r.backward_scratch = std::max(backend.conv2d_forward_scratch(g_, dtype_),
                                  backend.conv2d_backward_scratch(g_, dtype_));
    set_conv_rebuildable(r, g_, dtype_, bias_);
  }
  return r;
}

namespace {
// The bias (K) as (1,K,1,1), for the broadcast kernels.
Tensor channel_view(const Tensor& b) {
  return Tensor(b.storage(), b.offset(), Shape{1, b.numel(), 1, 1}, b.dtype());
}
}  // namespace

// y = the convolution's data gradient of x through w, then + b per channel.
void ConvTranspose2dOp::forward(const OpContext& ctx) {
  Tensor scratch = ctx.scratch_or_none();
  Backend& be = ctx.backend();
  Tensor& y = ctx.output(0);
  be.conv2d_backward_data(g_, ctx.input(0), ctx.input(1), y, scratch);
  if (bias_) be.binary_forward(BinaryKind::add, bias_g_, y, channel_view(ctx.input(2)), y);
}

// d x = the convolution of d y; d w = its filter gradient with x as the output gradient; d b =
// the sum of d y per channel.
void ConvTranspose2dOp::backward(const OpContext& ctx) {
  Tensor none, scratch = ctx.scratch_or_none();
  Backend& be = ctx.backend();
  const Tensor& dy = ctx.grad_output(0);
  if (ctx.needs_grad_input(0))
    be.conv2d_forward(g_, dy, ctx.input(1), none, ctx.grad_input(0), scratch);
  if (ctx.needs_grad_input(1))
    be.conv2d_backward_filter(g_, dy, ctx.input(0), ctx.grad_input(1), none, scratch);
  if (bias_ && ctx.needs_grad_input(2)) {
    Tensor db = channel_view(ctx.grad_input(2));
    be.binary_backward(BinaryKind::add, bias_g_, none, none, dy, none, db);
  }
}

Value conv_transpose2d(Value x, const ConvTranspose2dOptions& o, std::source_location where) {
  Tape& t = x.tape();
  FRUGAL_CHECK(x.shape().rank() == 4 && o.out >= 1 && o.kernel >= 1, source_line(where),
               ": conv_transpose2d: expects x (N,C,H,W), out >= 1 and kernel >= 1; got x ",
               x.shape(), ", out ", o.out, ", kernel ", o.kernel);
  FRUGAL_CHECK(o.groups >= 1 && x.shape()[1] % o.groups == 0 && o.out % o.groups == 0,
               source_line(where), ": conv_transpose2d: ", o.groups, " groups do not divide the ",
               x.shape()[1], " input and ", o.out, " output channels");
  const std::string name = o.name.empty() ? t.unique_name("conv_transpose2d") : o.name;
  const int64_t k = o.kernel, fan = k * k * x.shape()[1] / o.groups;
  std::vector<Value> in = {x, t.param(name + ".weight", {x.shape()[1], o.out / o.groups, k, k},
                                      Init::normal(std::sqrt(2.0 / static_cast<double>(fan))))};
  if (o.bias) in.push_back(t.param(name + ".bias", {o.out}, Init::zeros()));
  const Conv2dParams p = Conv2dParams::uniform(o.stride, o.pad, o.dilation, o.groups);
  return t.record(std::make_unique<ConvTranspose2dOp>(p, o.output_padding, o.output_padding),
                  std::move(in), where)[0];
}

}  // namespace frugal
