// Conv3d: its checks, roles and the bias around the passes of layers/conv3d_planes.h.
#include "layers/conv3d.h"

#include <cmath>

namespace frugal {

std::vector<TensorMeta> Conv3dOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 2 || in.size() == 3, "conv3d: expects inputs x, w[, b], got ",
               in.size());
  const Shape &x = in[0].shape, &w = in[1].shape;
  FRUGAL_CHECK(x.rank() == 5 && w.rank() == 5,
               "conv3d: expects x (N,C,D,H,W) and w (K,C/groups,kd,kh,kw), got x ", x, ", w ", w);
  check_conv_params("conv3d", p_.plane);
  bias_ = check_conv_operands("conv3d", in, p_.plane.groups);
  dtype_ = in[0].dtype;
  planes_ = Conv3dPlanes("conv3d", x, w, p_, dtype_);
  return {{planes_.output(), dtype_}};
}

Roles Conv3dOp::roles(Mode mode, const Backend& backend) const {
  Roles r;
  r.forward_scratch = planes_.forward_scratch(backend);
  if (mode == Mode::training) {
    r.backward_reads_inputs = {0, 1};
    r.grad_takes_input = {0};  // each chunk of x is read before its dx is written over it
    r.backward_scratch = planes_.backward_scratch(backend, true, true);
    set_conv3d_rebuildable(r, planes_, dtype_, bias_);
  }
  return r;
}

// y = the planes' convolution, then + b per channel.
void Conv3dOp::forward(const OpContext& ctx) {
  Backend& b = ctx.backend();
  Tensor& y = ctx.output(0);
  planes_.forward(b, ctx.input(0), ctx.input(1), y, ctx.scratch_or_none());
  if (bias_) add_channel_bias(b, y, ctx.input(2));
}

// db = the sum of dy over (N, Do, Ho, Wo); dw from x, then dx (over x's bytes, chunk by chunk).
void Conv3dOp::backward(const OpContext& ctx) {
  Backend& b = ctx.backend();
  const Tensor& dy = ctx.grad_output(0);
  if (bias_ && ctx.needs_grad_input(2)) channel_bias_grad(b, dy, ctx.grad_input(2));
  Tensor* dx = ctx.needs_grad_input(0) ? &ctx.grad_input(0) : nullptr;
  Tensor* dw = ctx.needs_grad_input(1) ? &ctx.grad_input(1) : nullptr;
  if (dx || dw) planes_.backward(b, ctx.input(0), dy, ctx.input(1), dx, dw, ctx.scratch_or_none());
}

Value conv3d(Value x, const Conv3dOptions& o, std::source_location where) {
  Tape& t = x.tape();
  FRUGAL_CHECK(x.shape().rank() == 5 && o.out >= 1 && o.kernel >= 1, source_line(where),
               ": conv3d: expects x (N,C,D,H,W), out >= 1 and kernel >= 1; got x ", x.shape(),
               ", out ", o.out, ", kernel ", o.kernel);
  const std::string name = o.name.empty() ? t.unique_name("conv3d") : o.name;
  FRUGAL_CHECK(o.groups >= 1 && x.shape()[1] % o.groups == 0 && o.out % o.groups == 0,
               source_line(where), ": conv3d: ", o.groups, " groups do not divide the ",
               x.shape()[1], " input and ", o.out, " output channels");
  const int64_t k = o.kernel, fan_out = k * k * k * o.out / o.groups;
  std::vector<Value> in = {x, t.param(name + ".weight", {o.out, x.shape()[1] / o.groups, k, k, k},
                                      Init::normal(std::sqrt(2.0 / static_cast<double>(fan_out))))};
  if (o.bias) in.push_back(t.param(name + ".bias", {o.out}, Init::zeros()));
  const Conv3dParams p{.stride_d = o.stride,
                       .pad_front = o.pad,
                       .pad_back = o.pad,
                       .dilation_d = o.dilation,
                       .plane = Conv2dParams::uniform(o.stride, o.pad, o.dilation, o.groups)};
  return t.record(std::make_unique<Conv3dOp>(p), std::move(in), where)[0];
}

}  // namespace frugal
