// Abs: y = |x| elementwise, a layer written outside frugal's tree against the installed package
// (docs/NEW_LAYER.md walks through it). Backward needs the sign of x, which y has lost, so the
// op saves a 1-bit mask of x > 0 and reads nothing else: y may take x's bytes.
#pragma once

#include <source_location>

#include "autograd/tape.h"

namespace mylayers {

class AbsOp final : public frugal::Op {
 public:
  std::string name() const override { return "abs"; }
  std::vector<frugal::TensorMeta> infer(std::span<const frugal::TensorMeta> in) override;
  frugal::Roles roles(frugal::Mode mode, const frugal::Backend& backend) const override;
  void forward(const frugal::OpContext& ctx) override;
  void backward(const frugal::OpContext& ctx) override;

 private:
  frugal::TensorMeta x_;
};

// y = |x| elementwise (f32 or f64); dx = dy where x > 0, else -dy (at x = 0 too: a
// subgradient). Runs on host memory: the CPU backend.
frugal::Value absolute(frugal::Value x,
                       std::source_location where = std::source_location::current());

}  // namespace mylayers
