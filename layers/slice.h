// Slice: y = x[begin:end] along one axis (any axis, step 1; ONNX's Slice, torch's narrow).
// Backward writes dy into a zeroed dx. Backward reads nothing; the output can be rebuilt.
#pragma once

#include <source_location>

#include "autograd/tape.h"

namespace frugal {

class SliceOp final : public Op {
 public:
  SliceOp(int64_t axis, int64_t begin, int64_t end) : axis_(axis), begin_(begin), end_(end) {}
  std::string name() const override { return "slice"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  std::vector<int64_t> shift() const;  // x's index of y's origin, per axis
  int64_t axis_, begin_, end_;
  TensorMeta x_, y_;
};

// x[..., begin:end, ...] on `axis` (0 <= begin < end <= x's extent there; the batch axis 0
// is not sliced). Example: slice(x, 1, 0, 16), x's first 16 channels.
Value slice(Value x, int64_t axis, int64_t begin, int64_t end,
            std::source_location where = std::source_location::current());

}  // namespace frugal
