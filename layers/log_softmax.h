// LogSoftMax over the last dim of (N,C): y = x - logsumexp(x) per row, computed with the row
// max subtracted so large logits do not overflow. Backward reads only y; in place when the
// planner allows, forward (y over x) and backward (dx over dy).
#pragma once

#include <source_location>

#include "autograd/tape.h"

namespace frugal {

class LogSoftmaxOp final : public Op {
 public:
  std::string name() const override { return "log_softmax"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;
};

// y[n,c] = x[n,c] - log sum_k exp x[n,k]; x must be (N,C) f32/f64.
Value log_softmax(Value x, std::source_location where = std::source_location::current());

}  // namespace frugal
