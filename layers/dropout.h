// Dropout: in training, zeroes each element with probability p and scales the rest by
// 1/(1-p); the mask is a function of (executor seed, op stream, index), so it replays. In
// inference it is the identity. Backward reads a 1-bit mask; in place when allowed.
#pragma once

#include <source_location>

#include "autograd/tape.h"

namespace frugal {

class DropoutOp final : public Op {
 public:
  explicit DropoutOp(double p) : p_(p) {}
  std::string name() const override { return "dropout"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  double p_;
  TensorMeta x_;
};

// Training: keep where random_uniform(ctx.seed(), stream, i) >= p, y = x * keep / (1 - p).
// Inference: y = x. Throws unless p is in [0, 1).
Value dropout(Value x, double p, std::source_location where = std::source_location::current());

}  // namespace frugal
