// Threshold, as Torch's nn.Threshold: y = x > threshold ? x : value (optnet's AlexNet uses
// threshold(x, 0, 1e-6)). In place when the planner allows; backward reads a 1-bit mask.
#pragma once

#include <source_location>

#include "autograd/tape.h"

namespace frugal {

class ThresholdOp final : public Op {
 public:
  ThresholdOp(double threshold, double value) : threshold_(threshold), value_(value) {}
  std::string name() const override { return "threshold"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  double threshold_, value_;
  TensorMeta x_;
};

// y = x > threshold ? x : value, elementwise; dx = dy where x > threshold, else 0.
Value threshold(Value x, double threshold, double value,
                std::source_location where = std::source_location::current());

}  // namespace frugal
