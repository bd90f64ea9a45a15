// Pad: x with constant borders (ONNX's Pad in constant mode, torch's F.pad): before[k] values
// before and after[k] after x's extent on axis k, all equal to `value`; negative amounts crop.
// Backward reads nothing (dx is dy's interior); the output can be rebuilt.
#pragma once

#include <source_location>
#include <vector>

#include "autograd/tape.h"

namespace frugal {

struct PadOptions {
  std::vector<int64_t> before, after;  // per axis of x, outermost first (the batch axis: 0)
  double value = 0;
};

class PadOp final : public Op {
 public:
  explicit PadOp(PadOptions o) : o_(std::move(o)) {}
  std::string name() const override { return "pad"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  std::vector<int64_t> shift() const;  // x's index of y's origin: -before
  PadOptions o_;
  TensorMeta x_, y_;
};

// Example: pad(x, {.before = {0, 0, 1, 1}, .after = {0, 0, 1, 1}}), a 1-pixel zero border.
Value pad(Value x, PadOptions o, std::source_location where = std::source_location::current());

}  // namespace frugal
