// Transpose: y = x with its axes permuted (ONNX's Transpose, torch.permute): y's axis k is x's
// axis perm[k]; ranks 1 to 6 (ShuffleNet's channel shuffle permutes a 5-D view). A copy
// through the backend's strided copy; backward permutes dy back. Backward reads nothing, and
// the output can be rebuilt in backward.
#pragma once

#include <source_location>
#include <vector>

#include "autograd/tape.h"

namespace frugal {

class TransposeOp final : public Op {
 public:
  explicit TransposeOp(std::vector<int64_t> perm) : perm_(std::move(perm)) {}
  std::string name() const override { return "transpose"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  std::vector<int64_t> perm_, inverse_;
  TensorMeta x_, y_;
};

// Example: transpose(x, {0, 2, 1, 3}) swaps axes 1 and 2 of a 4-D x.
Value transpose(Value x, std::vector<int64_t> perm,
                std::source_location where = std::source_location::current());

}  // namespace frugal
