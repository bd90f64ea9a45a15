// Softmax forward and backward, with its roles.
#include "layers/softmax.h"

namespace frugal {

std::vector<TensorMeta> SoftmaxOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "softmax: expects 1 input, got ", in.size());
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "softmax: input must be f32 or f64, got ", dtype_name(in[0].dtype));
  const int rank = in[0].shape.rank();
  FRUGAL_CHECK(axis_ >= -rank && axis_ < rank, "softmax: axis ", axis_, " is not an axis of x ",
               in[0].shape);
  if (axis_ < 0) axis_ += rank;
  return {in[0]};
}

Roles SoftmaxOp::roles(Mode mode, const Backend&) const {
  Roles r;
  r.aliases = {{.output = 0, .input = 0}};
  if (mode == Mode::training) {
    r.backward_reads_outputs = {0};
    r.grad_aliases = {{.output = 0, .input = 0}};
  }
  return r;
}

void SoftmaxOp::forward(const OpContext& ctx) {
  ctx.backend().softmax_forward(ctx.input(0), static_cast<int>(axis_), ctx.output(0));
}

// dx = y (dy - sum_axis dy y)
void SoftmaxOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  ctx.backend().softmax_backward(ctx.output(0), ctx.grad_output(0), static_cast<int>(axis_),
                                 ctx.grad_input(0));
}

Value softmax(Value x, int64_t axis, std::source_location where) {
  return x.tape().record(std::make_unique<SoftmaxOp>(axis), {x}, where)[0];
}

}  // namespace frugal
