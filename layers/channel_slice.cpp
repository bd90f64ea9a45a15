// Channel slice forward and backward, through the backend's concat kernels.
#include "layers/channel_slice.h"

namespace frugal {

std::vector<TensorMeta> ChannelSliceOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "channel_slice: expects 1 input, got ", in.size());
  FRUGAL_CHECK(in[0].shape.rank() == 4 || in[0].shape.rank() == 2,
               "channel_slice: x must be (N,C,H,W) or (N,C), got ", in[0].shape);
  FRUGAL_CHECK(0 <= begin_ && begin_ < end_ && end_ <= in[0].shape[1], "channel_slice: range [",
               begin_, ", ", end_, ") is not inside the ", in[0].shape[1], " channels of x ",
               in[0].shape);
  x_ = in[0];
  return {parts()[1]};
}

std::vector<TensorMeta> ChannelSliceOp::parts() const {
  std::vector<TensorMeta> p(3, x_);
  p[0].shape[1] = begin_;
  p[1].shape[1] = end_ - begin_;
  p[2].shape[1] = x_.shape[1] - end_;
  return p;
}

Roles ChannelSliceOp::roles(Mode mode, const Backend&) const {
  Roles r;
  if (mode == Mode::training) {
    const auto p = parts();
    r.backward_scratch = p[0].bytes() + p[2].bytes();  // zeros around the slice
  }
  return r;
}

// y = x[:, begin:end]: concat's backward with the other ranges left out.
void ChannelSliceOp::forward(const OpContext& ctx) {
  const auto p = parts();
  Tensor dst[3] = {Tensor(nullptr, 0, p[0].shape, p[0].dtype), ctx.output(0),
                   Tensor(nullptr, 0, p[2].shape, p[2].dtype)};
  ctx.backend().concat_backward(ctx.input(0), dst);
}

// dx = [0, dy, 0] along channels.
void ChannelSliceOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  const auto p = parts();
  std::vector<Tensor> src;
  const Tensor& s = ctx.scratch();
  size_t at = 0;
  for (int i = 0; i < 3; ++i) {
    if (i == 1) {
      src.push_back(ctx.grad_output(0));
    } else if (p[static_cast<size_t>(i)].shape[1] > 0) {
      Tensor z(s.storage(), s.offset() + at, p[static_cast<size_t>(i)].shape,
               p[static_cast<size_t>(i)].dtype);
      ctx.backend().fill(z, 0.0);
      at += z.bytes();
      src.push_back(z);
    }
  }
  ctx.backend().concat_forward(src, ctx.grad_input(0));
}

Value channel_slice(Value x, int64_t begin, int64_t end, std::source_location where) {
  return x.tape().record(std::make_unique<ChannelSliceOp>(begin, end), {x}, where)[0];
}

}  // namespace frugal
