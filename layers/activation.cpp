// The activation op: shape and dtype checks, roles (in place where backward allows it) and the
// backend's kernels.
#include "layers/activation.h"

namespace frugal {

std::vector<TensorMeta> ActivationOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, name(), ": expects 1 input, got ", in.size());
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64, name(),
               ": input must be f32 or f64, got ", dtype_name(in[0].dtype), " ", in[0].shape);
  x_ = in[0];
  return {x_};
}

Roles ActivationOp::roles(Mode mode, const Backend&) const {
  if (activation_backward_reads_output(a_) || activation_backward_reads_nothing(a_)) {
    Roles r = in_place_mask_roles(mode, x_.shape.numel(), /*saves_mask=*/false);
    if (activation_backward_reads_nothing(a_)) r.backward_reads_outputs.clear();
    rebuild_by_forward(r, mode, {0}, static_cast<double>(x_.bytes()), x_, 8);
    // ReLU6 is zero wherever x <= 0: its outputs are worth packing (ExecutorOptions::pack).
    r.sparse_outputs = mode == Mode::training && a_ == Activation::relu6;
    return r;
  }
  return input_reading_roles(mode, x_, 8);
}

void ActivationOp::forward(const OpContext& ctx) {
  ctx.backend().activation_forward(a_, ctx.input(0), ctx.output(0));
}

void ActivationOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  const Tensor& v = activation_backward_reads_nothing(a_)  ? ctx.grad_output(0)
                    : activation_backward_reads_output(a_) ? ctx.output(0)
                                                           : ctx.input(0);
  ctx.backend().activation_backward(a_, v, ctx.grad_output(0), ctx.grad_input(0));
}

Value activation(Value x, Activation a, std::source_location where) {
  return x.tape().record(std::make_unique<ActivationOp>(a), {x}, where)[0];
}

Value sigmoid(Value x, std::source_location where) {
  return activation(x, Activation::sigmoid, where);
}
Value tanh(Value x, std::source_location where) {
  return activation(x, Activation::tanh, where);
}
Value silu(Value x, std::source_location where) {
  return activation(x, Activation::silu, where);
}
Value gelu(Value x, std::source_location where) {
  return activation(x, Activation::gelu, where);
}
Value gelu_tanh(Value x, std::source_location where) {
  return activation(x, Activation::gelu_tanh, where);
}
Value erf(Value x, std::source_location where) {
  return activation(x, Activation::erf, where);
}
Value sqrt(Value x, std::source_location where) {
  return activation(x, Activation::sqrt, where);
}
Value hardsigmoid(Value x, std::source_location where) {
  return activation(x, Activation::hardsigmoid, where);
}
Value hardswish(Value x, std::source_location where) {
  return activation(x, Activation::hardswish, where);
}
Value relu6(Value x, std::source_location where) {
  return activation(x, Activation::relu6, where);
}
Value abs(Value x, std::source_location where) {
  return activation(x, Activation::abs, where);
}
Value elu(Value x, std::source_location where) {
  return activation(x, Activation::elu, where);
}
Value selu(Value x, std::source_location where) {
  return activation(x, Activation::selu, where);
}
Value softplus(Value x, std::source_location where) {
  return activation(x, Activation::softplus, where);
}
Value softsign(Value x, std::source_location where) {
  return activation(x, Activation::softsign, where);
}
Value exp(Value x, std::source_location where) {
  return activation(x, Activation::exp, where);
}
Value log(Value x, std::source_location where) {
  return activation(x, Activation::log, where);
}
Value neg(Value x, std::source_location where) {
  return activation(x, Activation::neg, where);
}
Value reciprocal(Value x, std::source_location where) {
  return activation(x, Activation::reciprocal, where);
}
Value sign(Value x, std::source_location where) {
  return activation(x, Activation::sign, where);
}
Value sin(Value x, std::source_location where) {
  return activation(x, Activation::sin, where);
}
Value cos(Value x, std::source_location where) {
  return activation(x, Activation::cos, where);
}
Value atan(Value x, std::source_location where) {
  return activation(x, Activation::atan, where);
}

}  // namespace frugal
