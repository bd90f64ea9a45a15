// Pad: x with borders (ONNX's Pad, torch's F.pad): before[k] values before and after[k] after
// x's extent on axis k; negative amounts crop. Constant mode: every border value is `value`, one
// op whose backward reads nothing (dx is dy's interior) and whose output can be rebuilt.
// Reflect mode (torch's ReflectionPad, ONNX's "reflect") mirrors x about its edge elements,
// which are not repeated, so an amount must be below the axis' extent; edge mode (torch's
// ReplicationPad, ONNX's "edge") repeats the edge element. Those two record slices of x and one
// concat per padded axis (their gradients sum into x's), after any crop; at most 4096 a side.
#pragma once

#include <source_location>
#include <vector>

#include "autograd/tape.h"

namespace frugal {

enum class PadMode { constant, reflect, edge };

struct PadOptions {
  std::vector<int64_t> before, after;  // per axis of x, outermost first (the batch axis: 0)
  double value = 0;                    // constant mode
  PadMode mode = PadMode::constant;
};
const char* pad_mode_name(PadMode m);  // "constant", "reflect", "edge"

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

// Examples: pad(x, {.before = {0, 0, 1, 1}, .after = {0, 0, 1, 1}}), a 1-pixel zero border;
// pad(x, {.before = {0, 0, 3, 3}, .after = {0, 0, 3, 3}, .mode = PadMode::reflect}), torch's
// nn.ReflectionPad2d(3).
Value pad(Value x, PadOptions o, std::source_location where = std::source_location::current());

}  // namespace frugal
