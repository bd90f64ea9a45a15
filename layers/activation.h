// Sigmoid, Tanh, SiLU, GELU (exact and tanh), Erf, Sqrt, HardSigmoid, HardSwish, ReLU6, Abs,
// ELU, SELU, Softplus, Softsign, Exp, Log, Neg, Reciprocal, Sign, Sin, Cos, Atan: one op over
// the backend's activation kernels (core/activation.h holds the formulas). Sigmoid, Tanh, Sqrt,
// ReLU6, Exp, Neg, Sign and Reciprocal run in place and backward reads their output (Neg and
// Sign: nothing at all); the others' backward reads their input, so they run in place only in
// inference. The input gradient may always take the output gradient's bytes.
#pragma once

#include <source_location>

#include "autograd/tape.h"
#include "core/activation.h"

namespace frugal {

class ActivationOp final : public Op {
 public:
  explicit ActivationOp(Activation a) : a_(a) {}
  std::string name() const override { return activation_name(a_); }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  Activation a_;
  TensorMeta x_;
};

// Elementwise over an f32 or f64 tensor of any shape, as PyTorch's functions of the same names
// (gelu: the exact, erf form; gelu_tanh: gelu(x, approximate="tanh")); NaN propagates.
Value activation(Value x, Activation a,
                 std::source_location where = std::source_location::current());
Value sigmoid(Value x, std::source_location where = std::source_location::current());
Value tanh(Value x, std::source_location where = std::source_location::current());
Value silu(Value x, std::source_location where = std::source_location::current());
Value gelu(Value x, std::source_location where = std::source_location::current());
Value gelu_tanh(Value x, std::source_location where = std::source_location::current());
Value erf(Value x, std::source_location where = std::source_location::current());
Value sqrt(Value x, std::source_location where = std::source_location::current());
Value hardsigmoid(Value x, std::source_location where = std::source_location::current());
Value hardswish(Value x, std::source_location where = std::source_location::current());
Value relu6(Value x, std::source_location where = std::source_location::current());
Value abs(Value x, std::source_location where = std::source_location::current());
Value elu(Value x, std::source_location where = std::source_location::current());
Value selu(Value x, std::source_location where = std::source_location::current());
Value softplus(Value x, std::source_location where = std::source_location::current());
Value softsign(Value x, std::source_location where = std::source_location::current());
Value exp(Value x, std::source_location where = std::source_location::current());
Value log(Value x, std::source_location where = std::source_location::current());
Value neg(Value x, std::source_location where = std::source_location::current());
Value reciprocal(Value x, std::source_location where = std::source_location::current());
Value sign(Value x, std::source_location where = std::source_location::current());
Value sin(Value x, std::source_location where = std::source_location::current());
Value cos(Value x, std::source_location where = std::source_location::current());
Value atan(Value x, std::source_location where = std::source_location::current());

}  // namespace frugal
