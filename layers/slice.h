// Slice: y = x[begin:end:step] along one axis (any axis, any step but 0; ONNX's Slice, torch's
// narrow, x[..., ::2] and torch.flip, which exports as a step of -1). Backward writes dy into a
// zeroed dx. Backward reads nothing; the output can be rebuilt.
#pragma once

#include <source_location>

#include "autograd/tape.h"
#include "core/copy_box.h"

namespace frugal {

class SliceOp final : public Op {
 public:
  SliceOp(int64_t axis, int64_t begin, int64_t end, int64_t step = 1)
      : axis_(axis), begin_(begin), end_(end), step_(step) {}
  std::string name() const override { return "slice"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  // x to y (forward), or y to x (backward), through strides: every step-th element.
  CopyBox box(bool forward) const;
  int64_t axis_, begin_, end_, step_;
  TensorMeta x_, y_;
};

// x[..., begin:end:step, ...] on `axis`, the batch axis 0 not sliced. A positive step takes
// ceil((end - begin) / step) elements, 0 <= begin < end <= x's extent there; a negative one
// runs down from begin, ceil((begin - end) / -step) elements, -1 <= end < begin < the extent.
// Examples: slice(x, 1, 0, 16), x's first 16 channels; slice(x, 3, 1, W, 2), x[..., 1::2];
// slice(x, 3, W - 1, -1, -1), x flipped along its width.
Value slice(Value x, int64_t axis, int64_t begin, int64_t end, int64_t step = 1,
            std::source_location where = std::source_location::current());

}  // namespace frugal
