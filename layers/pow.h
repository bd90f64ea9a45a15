// x to a constant power (torch.pow(x, e), x ** e; ONNX's Pow by a constant exponent): y = x^e,
// backward dy e x^(e - 1) from x, as PyTorch (NaN for a negative x and a fractional e). In
// inference y may take x's bytes; in training dx may take dy's.
#pragma once

#include <source_location>

#include "autograd/tape.h"

namespace frugal {

class PowOp final : public Op {
 public:
  explicit PowOp(double exponent) : exponent_(exponent) {}
  std::string name() const override { return "pow"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  double exponent_;
  TensorMeta x_;
};

// y = x^exponent elementwise, for any finite exponent. (Named power: a frugal::pow would hide
// std::pow's overloads in code of namespace frugal.)
Value power(Value x, double exponent, std::source_location where = std::source_location::current());

}  // namespace frugal
