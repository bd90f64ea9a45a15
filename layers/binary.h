// Mul, Sub, Div (and Add), maximum, minimum and pow with broadcasting, and the masks and
// comparisons of layers/select.h: y = a op b where each axis of a and b (right-aligned, rank up to
// 4) has the output's size or 1. Squeeze-and-excitation's x * s with s (N,C,1,1), a per-channel
// scale (C,1,1), a scalar (1), or two values of one shape. The output may take the bytes of an
// operand of its shape; backward reads a and b for mul, div, maximum, minimum and pow, b alone for
// a mask, nothing for add and sub (comparisons have none), and the gradient of an operand of the
// output's shape may take dy's bytes. The gradient of a broadcast operand is summed over the axes
// it was broadcast along, in a fixed order.
#pragma once

#include <source_location>

#include "autograd/tape.h"
#include "core/broadcast.h"

namespace frugal {

class BinaryOp final : public Op {
 public:
  explicit BinaryOp(BinaryKind kind) : kind_(kind) {}

  std::string name() const override { return binary_name(kind_); }
  bool differentiable(int input) const override { return binary_differentiable(kind_, input); }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;
  BinaryKind kind() const { return kind_; }

 private:
  BinaryKind kind_;
  Broadcast g_;
  TensorMeta y_;
  bool a_full_ = true, b_full_ = true;  // the operand has the output's shape
};

// y = a op b, broadcast; throws naming both shapes where they do not broadcast.
Value binary(BinaryKind kind, Value a, Value b,
             std::source_location where = std::source_location::current());
Value mul(Value a, Value b, std::source_location where = std::source_location::current());
Value sub(Value a, Value b, std::source_location where = std::source_location::current());
Value div(Value a, Value b, std::source_location where = std::source_location::current());
// torch.maximum and torch.minimum (ONNX's Max and Min of two): NaN where either operand is; at a
// tie each operand gets half the gradient.
Value maximum(Value a, Value b, std::source_location where = std::source_location::current());
Value minimum(Value a, Value b, std::source_location where = std::source_location::current());
// a^b elementwise, broadcast (torch.pow of two tensors): da = dy b a^(b - 1) (0 where b is 0),
// db = dy a^b ln a (0 where a is 0 and b >= 0), as PyTorch's. (Named power, as layers/pow.h's
// constant exponent: a frugal::pow would hide std::pow's overloads in namespace frugal.)
Value power(Value a, Value b, std::source_location where = std::source_location::current());

}  // namespace frugal
