// x clamped to [lo, hi] (torch.clamp, ONNX's Clip with any bounds: F.normalize's clamp_min(eps)
// of a norm, a user's clamp): y = min(max(x, lo), hi), NaN staying NaN; backward passes dy
// where lo <= x <= hi (the bounds included, as PyTorch), reading x. In inference y may take x's
// bytes; in training dx may take dy's. (ReLU and ReLU6, the clamps to [0, inf) and [0, 6],
// have ops of their own that keep a mask or the output instead.)
#pragma once

#include <source_location>

#include "autograd/tape.h"

namespace frugal {

class ClampOp final : public Op {
 public:
  ClampOp(double lo, double hi) : lo_(lo), hi_(hi) {}
  std::string name() const override { return "clamp"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  double lo_, hi_;
  TensorMeta x_;
};

// y = clamp(x, lo, hi) elementwise; lo <= hi, either may be infinite (-inf, inf: one bound).
Value clamp(Value x, double lo, double hi,
            std::source_location where = std::source_location::current());

}  // namespace frugal
