// Softmax along one axis (ONNX's Softmax from opset 13, torch.softmax(x, dim)): y = exp(x) /
// sum exp(x) along `axis`, shifted by the maximum so large inputs do not overflow. y may take
// x's bytes and dx dy's; backward reads y.
#pragma once

#include <source_location>

#include "autograd/tape.h"

namespace frugal {

class SoftmaxOp final : public Op {
 public:
  explicit SoftmaxOp(int64_t axis) : axis_(axis) {}
  std::string name() const override { return "softmax"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  int64_t axis_;  // negative counts from the end until infer resolves it
};

// Example: softmax(logits, 1), class probabilities of (N, C) or (N, C, H, W) logits.
Value softmax(Value x, int64_t axis, std::source_location where = std::source_location::current());

}  // namespace frugal
