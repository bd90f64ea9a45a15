// Constant: a value fixed when the model is recorded, with no inputs (what an ONNX import
// computes from shapes: Swin's shifted-window attention mask). Forward copies it into its
// output; nothing flows back. The output can be rebuilt from nothing.
#pragma once

#include <source_location>

#include "autograd/tape.h"

namespace frugal {

class ConstantOp final : public Op {
 public:
  explicit ConstantOp(Tensor value) : value_(std::move(value)) {}
  std::string name() const override { return "constant"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  Tensor value_;  // on the host, f32 or f64
};

// A value of `tape` holding `value` (a host tensor, f32 or f64), copied in at every forward.
Value constant(Tape& tape, Tensor value,
               std::source_location where = std::source_location::current());

}  // namespace frugal
