// LogSoftMax forward and backward, with its roles.
#include "layers/log_softmax.h"

namespace frugal {

std::vector<TensorMeta> LogSoftmaxOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "log_softmax: expects 1 input, got ", in.size());
  const Shape& s = in[0].shape;
  FRUGAL_CHECK(s.rank() == 2 && s[0] >= 1 && s[1] >= 1, "log_softmax: x ", s,
               " must be (N,C) with N, C >= 1");
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "log_softmax: input must be f32 or f64, got ", dtype_name(in[0].dtype));
  return {in[0]};
}

Roles LogSoftmaxOp::roles(Mode mode, const Backend&) const {
  Roles r;
  r.aliases = {{.output = 0, .input = 0}};
  if (mode == Mode::training) {
    r.backward_reads_outputs = {0};
    r.grad_aliases = {{.output = 0, .input = 0}};
  }
  return r;
}

// y = (x - max) - log sum exp(x - max), per row
void LogSoftmaxOp::forward(const OpContext& ctx) {
  ctx.backend().log_softmax_forward(ctx.input(0), ctx.output(0));
}

// dx = dy - exp(y) sum_c dy, per row
void LogSoftmaxOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  ctx.backend().log_softmax_backward(ctx.grad_output(0), ctx.output(0), ctx.grad_input(0));
}

Value log_softmax(Value x, std::source_location where) {
  return x.tape().record(std::make_unique<LogSoftmaxOp>(), {x}, where)[0];
}

}  // namespace frugal
