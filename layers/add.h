// Add: y = a + b for two values of the same shape (residual connections). The output may
// take either input's bytes; backward reads nothing and hands dy to both inputs.
#pragma once

#include <source_location>

#include "autograd/tape.h"

namespace frugal {

class AddOp final : public Op {
 public:
  std::string name() const override { return "add"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  TensorMeta y_;
};

// y = a + b, elementwise; throws naming both shapes unless they (and the dtypes) match.
// add(x, x) is allowed: the executor sums the two gradient contributions.
Value add(Value a, Value b, std::source_location where = std::source_location::current());

}  // namespace frugal
