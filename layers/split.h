// Split: x cut along one axis into consecutive parts of the given sizes, one output each
// (ONNX's Split, torch's split and chunk: ShuffleNetV2 halves its channels so). Backward joins
// the parts' gradients (an unused part's gradient is zero). Backward reads nothing. Any axis:
// the ONNX importer splits axis 0 only where a Transpose moved the batch off it (attention's
// q, k, v out of one tensor, timm's `qkv.unbind(0)`).
#pragma once

#include <source_location>
#include <vector>

#include "autograd/tape.h"

namespace frugal {

class SplitOp final : public Op {
 public:
  SplitOp(int64_t axis, std::vector<int64_t> sizes) : axis_(axis), sizes_(std::move(sizes)) {}
  std::string name() const override { return "split"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  std::vector<int64_t> shift(size_t part) const;  // x's index of part's origin
  int64_t axis_;
  std::vector<int64_t> sizes_;
  TensorMeta x_;
  std::vector<TensorMeta> parts_;
};

// The parts of x along `axis` (0 to rank-1), sizes summing to x's extent there, each >= 1.
std::vector<Value> split(Value x, int64_t axis, std::vector<int64_t> sizes,
                         std::source_location where = std::source_location::current());

}  // namespace frugal
