// LeakyReLU: y = x > 0 ? x : slope * x, with slope >= 0. Its math runs in the backend's
// leaky_relu kernels; its roles let the planner run it in place and keep only what backward
// reads: its own output, or a 1-bit mask where that lets the output die early.
#pragma once

#include <source_location>

#include "autograd/tape.h"

namespace frugal {

class LeakyReluOp final : public Op {
 public:
  explicit LeakyReluOp(double slope) : slope_(slope) {}

  // What backward reads to tell x > 0: y itself (y > 0 exactly where x > 0, as slope >= 0)
  // or a 1-bit mask of x > 0. The planner chooses (memory/encodings.cpp).
  enum class Saves { output, mask };
  Saves saves = Saves::output;

  std::string name() const override { return "leaky_relu"; }
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
  double slope_;
  TensorMeta x_;
};

// y = x where x > 0, slope * x elsewhere, elementwise (f32 or f64); dx = dy where x > 0, else
// slope * dy. Throws naming the op unless slope is finite and >= 0.
Value leaky_relu(Value x, double slope = 0.01,
                 std::source_location where = std::source_location::current());

}  // namespace frugal
