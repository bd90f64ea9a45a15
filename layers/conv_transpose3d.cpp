// ConvTranspose3d on the passes of a 3-D convolution (layers/conv3d_planes.h), with its roles:
// backward reads x (for d w) and w (for d x).
#include "layers/conv_transpose3d.h"

#include <algorithm>
#include <cmath>

namespace frugal {

std::vector<TensorMeta> ConvTranspose3dOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 2 || in.size() == 3, "conv_transpose3d: expects inputs x, w[, b], got ",
               in.size());
  const Shape &x = in[0].shape, &w = in[1].shape;
  FRUGAL_CHECK(x.rank() == 5 && w.rank() == 5,
               "conv_transpose3d: expects x (N,C,D,H,W) and w (C,K/groups,kd,kh,kw), got x ", x,
               ", w ", w);
  const Conv2dParams& q = p_.plane;
  check_conv_params("conv_transpose3d", q);
  const int64_t stride[3] = {p_.stride_d, q.stride_h, q.stride_w};
  for (int a = 0; a < 3; ++a)
    FRUGAL_CHECK(output_padding_[a] >= 0 && output_padding_[a] < stride[a],
                 "conv_transpose3d: output padding ", output_padding_[0], "x", output_padding_[1],
                 "x", output_padding_[2], " must be >= 0 and below the stride ", stride[0], "x",
                 stride[1], "x", stride[2]);
  FRUGAL_CHECK(x[1] == w[0] && x[1] % q.groups == 0, "conv_transpose3d: input channels ", x[1],
               " != the weight's first dimension ", w[0], " or not divisible by ", q.groups,
               " groups (x ", x, ", w ", w, ")");
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "conv_transpose3d: input must be f32 or f64, got ", dtype_name(in[0].dtype));
  FRUGAL_CHECK(in[1].dtype == in[0].dtype, "conv_transpose3d: input is ", dtype_name(in[0].dtype),
               " but the weight is ", dtype_name(in[1].dtype));
  const int64_t K = w[1] * q.groups;
  bias_ = in.size() == 3;
  if (bias_)
    FRUGAL_CHECK(in[2].shape == Shape{K} && in[2].dtype == in[0].dtype, "conv_transpose3d: bias ",
                 in[2].shape, " ", dtype_name(in[2].dtype), " for ", K, " output channels");
  const int64_t pads[3][2] = {
      {p_.pad_front, p_.pad_back}, {q.pad_top, q.pad_bottom}, {q.pad_left, q.pad_right}};
  const int64_t dilation[3] = {p_.dilation_d, q.dilation_h, q.dilation_w};
  Shape y{x[0], K, 0, 0, 0};
  for (int a = 0; a < 3; ++a) {
    y[a + 2] = (x[a + 2] - 1) * stride[a] - pads[a][0] - pads[a][1] + dilation[a] * (w[a + 2] - 1) +
               output_padding_[a] + 1;
    FRUGAL_CHECK(y[a + 2] >= 1, "conv_transpose3d: the padding ", pads[a][0], ",", pads[a][1],
                 " of axis ", a + 2, " leaves no output (x ", x, ", w ", w, ")");
  }
  dtype_ = in[0].dtype;
  // The convolution this is the adjoint of: input y, filters (C, K/groups, kd, kh, kw), output
  // x (the output padding below the stride: the convolution's window ignores those planes).
  planes_ = Conv3dPlanes("conv_transpose3d", y, w, p_, dtype_);
  FRUGAL_CHECK(planes_.output() == x, "conv_transpose3d: the convolution of ", y, " gives ",
               planes_.output(), ", not x ", x);
  return {{y, dtype_}};
}

Roles ConvTranspose3dOp::roles(Mode mode, const Backend& backend) const {
  Roles r;
  r.forward_scratch = planes_.backward_scratch(backend, true, false);
  if (mode == Mode::training) {
    r.backward_reads_inputs = {0, 1};
    r.backward_scratch =
        std::max(planes_.forward_scratch(backend), planes_.backward_scratch(backend, false, true));
    set_conv3d_rebuildable(r, planes_, dtype_, bias_);
  }
  return r;
}

// y = the convolution's data gradient of x through w, then + b per channel.
void ConvTranspose3dOp::forward(const OpContext& ctx) {
  Backend& b = ctx.backend();
  Tensor none, &y = ctx.output(0);
  planes_.backward(b, none, ctx.input(0), ctx.input(1), &y, nullptr, ctx.scratch_or_none());
  if (bias_) add_channel_bias(b, y, ctx.input(2));
}

// d x = the convolution of d y; d w = its filter gradient with x as the output gradient; d b =
// the sum of d y per channel.
void ConvTranspose3dOp::backward(const OpContext& ctx) {
  Backend& b = ctx.backend();
  const Tensor& dy = ctx.grad_output(0);
  if (ctx.needs_grad_input(0))
    planes_.forward(b, dy, ctx.input(1), ctx.grad_input(0), ctx.scratch_or_none());
  if (ctx.needs_grad_input(1))
    planes_.backward(b, dy, ctx.input(0), ctx.input(1), nullptr, &ctx.grad_input(1),
                     ctx.scratch_or_none());
  if (bias_ && ctx.needs_grad_input(2)) channel_bias_grad(b, dy, ctx.grad_input(2));
}

Value conv_transpose3d(Value x, const ConvTranspose3dOptions& o, std::source_location where) {
  Tape& t = x.tape();
  FRUGAL_CHECK(x.shape().rank() == 5 && o.out >= 1 && o.kernel >= 1, source_line(where),
               ": conv_transpose3d: expects x (N,C,D,H,W), out >= 1 and kernel >= 1; got x ",
               x.shape(), ", out ", o.out, ", kernel ", o.kernel);
  FRUGAL_CHECK(o.groups >= 1 && x.shape()[1] % o.groups == 0 && o.out % o.groups == 0,
               source_line(where), ": conv_transpose3d: ", o.groups, " groups do not divide the ",
               x.shape()[1], " input and ", o.out, " output channels");
  const std::string name = o.name.empty() ? t.unique_name("conv_transpose3d") : o.name;
  const int64_t k = o.kernel, fan = k * k * k * x.shape()[1] / o.groups;
  std::vector<Value> in = {x, t.param(name + ".weight", {x.shape()[1], o.out / o.groups, k, k, k},
                                      Init::normal(std::sqrt(2.0 / static_cast<double>(fan))))};
  if (o.bias) in.push_back(t.param(name + ".bias", {o.out}, Init::zeros()));
  const Conv3dParams p{.stride_d = o.stride,
                       .pad_front = o.pad,
                       .pad_back = o.pad,
                       .dilation_d = o.dilation,
                       .plane = Conv2dParams::uniform(o.stride, o.pad, o.dilation, o.groups)};
  return t.record(
      std::make_unique<ConvTranspose3dOp>(p, o.output_padding, o.output_padding, o.output_padding),
      std::move(in), where)[0];
}

}  // namespace frugal
