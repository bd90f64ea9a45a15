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
  const Conv2dParams& p = p_;
  check_conv_params("conv2d", p);
  bias_ = check_conv_operands("conv2d", in, p.groups);
  g_ = {.N = x[0], .C = x[1], .H = x[2], .W = x[3], .K = w[0], .R = w[2], .S = w[3]};
  g_.stride_h = p.stride_h, g_.stride_w = p.stride_w;
  g_.pad_h = p.pad_top, g_.pad_w = p.pad_left, g_.pad_h_end = p.pad_bottom;
  g_.pad_w_end = p.pad_right, g_.dilation_h = p.dilation_h, g_.dilation_w = p.dilation_w;
  g_.groups = p.groups;
  g_.P = conv_output_size(g_.H, g_.R, p.stride_h, p.pad_top, p.pad_bottom, p.dilation_h);
  g_.Q = conv_output_size(g_.W, g_.S, p.stride_w, p.pad_left, p.pad_right, p.dilation_w);
  FRUGAL_CHECK(g_.P >= 1 && g_.Q >= 1, "conv2d: kernel ", g_.R, "x", g_.S,
               " is larger than the padded input ", g_.H + p.pad_top + p.pad_bottom, "x",
               g_.W + p.pad_left + p.pad_right, " (x ", x, ", w ", w, ", dilation ", p.dilation_h,
               "x", p.dilation_w, ")");
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
    r.grad_takes_input = {0};  // dw from x first, then dx, which may take x's bytes
    r.backward_scratch = backend.conv2d_backward_scratch(g_, dtype_);
    r.backward_choices = backend.conv2d_scratch_choices(g_, dtype_, true);
    set_conv_rebuildable(r, g_, dtype_, bias_);
  }
  return r;
}

void check_conv_params(const char* op, const Conv2dParams& p) {
  FRUGAL_CHECK(p.stride_h >= 1 && p.stride_w >= 1 && p.dilation_h >= 1 && p.dilation_w >= 1 &&
                   p.groups >= 1 && p.pad_top >= 0 && p.pad_left >= 0 && p.pad_bottom >= 0 &&
                   p.pad_right >= 0,
               op, ": stride ", p.stride_h, "x", p.stride_w, ", dilation ", p.dilation_h, "x",
               p.dilation_w, " and groups ", p.groups, " must be >= 1, pads ", p.pad_top, ",",
               p.pad_left, ",", p.pad_bottom, ",", p.pad_right, " >= 0");
}

bool check_conv_operands(const char* op, std::span<const TensorMeta> in, int64_t groups) {
  const Shape &x = in[0].shape, &w = in[1].shape;
  FRUGAL_CHECK(x[1] % groups == 0 && w[0] % groups == 0, op, ": ", groups,
               " groups do not divide the ", x[1], " input and ", w[0], " output channels (x ", x,
               ", w ", w, ")");
  FRUGAL_CHECK(x[1] == w[1] * groups, op, ": input channels ", x[1], " != weight channels ", w[1],
               groups > 1 ? detail::concat(" x ", groups, " groups") : "", " (x ", x, ", w ", w,
               ")");
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64, op,
               ": input must be f32 or f64, got ", dtype_name(in[0].dtype));
  FRUGAL_CHECK(in[1].dtype == in[0].dtype, op, ": input is ", dtype_name(in[0].dtype),
               " but the weight is ", dtype_name(in[1].dtype));
  const bool bias = in.size() == 3;
  if (bias)
    FRUGAL_CHECK(in[2].shape == Shape{w[0]} && in[2].dtype == in[0].dtype, op, ": bias ",
                 in[2].shape, " ", dtype_name(in[2].dtype), " for weight ", w, " ",
                 dtype_name(in[1].dtype));
  return bias;
}

void set_conv_rebuildable(Roles& r, const Conv2dGeometry& g, DType t, bool bias) {
  const double macs =
      static_cast<double>(g.N * g.K * g.P * g.Q) * static_cast<double>(g.C / g.groups * g.R * g.S);
  const double elem = static_cast<double>(dtype_size(t));
  std::vector<int> reads{0, 1};
  if (bias) reads.push_back(2);
  set_rebuildable(r, std::move(reads), 2 * macs,
                  elem * static_cast<double>(g.N * (g.C * g.H * g.W + g.K * g.P * g.Q) +
                                             g.K * g.C / g.groups * g.R * g.S));
  r.rebuild_expensive = true;
}

// y = w * x + b  (scratch: the backend's, e.g. padded tiles or the im2col columns of a chunk)
void Conv2dOp::forward(const OpContext& ctx) {
  Tensor none, scratch = ctx.scratch_or_none();
  ctx.backend().conv2d_forward(g_, ctx.input(0), ctx.input(1), bias_ ? ctx.input(2) : none,
                               ctx.output(0), scratch);
}

// dw = dy * cols(x)^T and db = sum over N,P,Q of dy, then dx = w^T * dy (col2im of the
// columns): dx may be written over x (Roles::grad_takes_input).
void Conv2dOp::backward(const OpContext& ctx) {
  Tensor none, scratch = ctx.scratch_or_none();
  const bool dw = ctx.needs_grad_input(1), db = bias_ && ctx.needs_grad_input(2);
  if (dw || db)
    ctx.backend().conv2d_backward_filter(g_, ctx.input(0), ctx.grad_output(0),
                                         dw ? ctx.grad_input(1) : none,
                                         db ? ctx.grad_input(2) : none, scratch);
  if (ctx.needs_grad_input(0))
    ctx.backend().conv2d_backward_data(g_, ctx.grad_output(0), ctx.input(1), ctx.grad_input(0),
                                       scratch);
}

Value conv2d(Value x, const Conv2dOptions& o, std::source_location where) {
  Tape& t = x.tape();
  FRUGAL_CHECK(x.shape().rank() == 4 && o.out >= 1 && o.kernel >= 1, source_line(where),
               ": conv2d: expects x (N,C,H,W), out >= 1 and kernel >= 1; got x ", x.shape(),
               ", out ", o.out, ", kernel ", o.kernel);
  const std::string name = o.name.empty() ? t.unique_name("conv2d") : o.name;
  FRUGAL_CHECK(o.groups >= 1 && x.shape()[1] % o.groups == 0 && o.out % o.groups == 0,
               source_line(where), ": conv2d: ", o.groups, " groups do not divide the ",
               x.shape()[1], " input and ", o.out, " output channels");
  const int64_t k = o.kernel, fan_out = k * k * o.out / o.groups;
  std::vector<Value> in = {x, t.param(name + ".weight", {o.out, x.shape()[1] / o.groups, k, k},
                                      Init::normal(std::sqrt(2.0 / static_cast<double>(fan_out))))};
  if (o.bias) in.push_back(t.param(name + ".bias", {o.out}, Init::zeros()));
  const Conv2dParams p = Conv2dParams::uniform(o.stride, o.pad, o.dilation, o.groups);
  return t.record(std::make_unique<Conv2dOp>(p), std::move(in), where)[0];
}

}  // namespace frugal
