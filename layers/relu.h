// ReLU: y = max(x, 0). In place when the planner allows (y takes x's bytes), and its
// backward keeps only what it reads: a 1-bit mask, or its output when that is kept anyway.
#pragma once

#include <source_location>

#include "autograd/tape.h"

namespace frugal {

class ReluOp final : public Op {
 public:
  // What backward reads: a 1-bit mask (default; x's memory can then be reused) or y itself.
  enum class Saves { mask, output };
  Saves saves = Saves::mask;

  std::string name() const override { return "relu"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;
  bool has_compact_encoding() const override { return true; }
  void use_compact_encoding(bool compact) override {
    saves = compact ? Saves::mask : Saves::output;
  }
  bool compact_encoding() const override { return saves == Saves::mask; }

 private:
  TensorMeta x_;
};

Value relu(Value x, std::source_location where = std::source_location::current());

}  // namespace frugal
