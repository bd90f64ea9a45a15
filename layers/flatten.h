// Flatten: (N, d1, d2, ...) -> (N, d1*d2*...), the step from convolutional features to a
// linear layer. The same bytes in another shape: the output may take the input's bytes,
// and the input's gradient may take the output gradient's bytes.
#pragma once

#include <source_location>

#include "autograd/tape.h"

namespace frugal {

class FlattenOp final : public Op {
 public:
  std::string name() const override { return "flatten"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;
};

// (N, ...) -> (N, product of the rest); x needs rank >= 2.
Value flatten(Value x, std::source_location where = std::source_location::current());

}  // namespace frugal
