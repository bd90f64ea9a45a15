// PReLU forward and backward, with its roles.
#include "layers/prelu.h"

namespace frugal {

std::vector<TensorMeta> PReluOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 2, "prelu: expects 2 inputs (x, slope), got ", in.size());
  const Shape& x = in[0].shape;
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "prelu: input must be f32 or f64, got ", dtype_name(in[0].dtype), " (x ", x, ")");
  FRUGAL_CHECK(x.rank() >= 2, "prelu: x ", x, " is not (N, C, ...)");
  FRUGAL_CHECK(
      (in[1].shape == Shape{x[1]} || in[1].shape == Shape{1}) && in[1].dtype == in[0].dtype,
      "prelu: slope ", in[1].shape, " ", dtype_name(in[1].dtype), ", expected [", x[1], "] or [1] ",
      dtype_name(in[0].dtype), " for x ", x);
  x_ = in[0];
  return {x_};
}

Roles PReluOp::roles(Mode mode, const Backend& backend) const {
  Roles r;
  if (mode == Mode::training) {
    r.backward_reads_inputs = {0, 1};
    r.grad_aliases = {{.output = 0, .input = 0}};  // elementwise; the slope's sums come first
    r.backward_scratch = backend.prelu_backward_scratch(x_);
    // Forward again gives the same bits: one read of x, one write.
    rebuild_by_forward(r, mode, {0, 1}, static_cast<double>(x_.bytes()), x_, 1);
  } else {
    r.aliases = {{.output = 0, .input = 0}};  // elementwise
  }
  return r;
}

void PReluOp::forward(const OpContext& ctx) {
  ctx.backend().prelu_forward(ctx.input(0), ctx.input(1), ctx.output(0));
}

void PReluOp::backward(const OpContext& ctx) {
  FRUGAL_CHECK(ctx.training(), "prelu: backward runs only in training mode");
  Tensor none;
  Tensor& dx = ctx.needs_grad_input(0) ? ctx.grad_input(0) : none;
  Tensor& dslope = ctx.needs_grad_input(1) ? ctx.grad_input(1) : none;
  ctx.backend().prelu_backward(ctx.input(0), ctx.grad_output(0), ctx.input(1), dx, dslope,
                               ctx.has_scratch() ? ctx.scratch() : none);
}

Value prelu(Value x, const PReluOptions& o, std::source_location where) {
  Tape& t = x.tape();
  const Shape s = x.shape();  // a copy: recording the parameter may move the tape's values
  FRUGAL_CHECK(s.rank() >= 2, source_line(where), ": prelu: x ", s, " is not (N, C, ...)");
  const std::string name = o.name.empty() ? t.unique_name("prelu") : o.name;
  Value slope =
      t.param(name + ".weight", Shape{o.per_channel ? s[1] : 1}, Init::constant(o.init), true);
  return t.record(std::make_unique<PReluOp>(), {x, slope}, where)[0];
}

}  // namespace frugal
