// Reshape: the same elements, in the same order, in another shape with as many (torch's view,
// ONNX's Reshape once its 0 and -1 entries are resolved). The output may take the input's
// bytes and the input's gradient the output gradient's, so in a planned step it costs nothing.
#pragma once

#include <source_location>

#include "autograd/tape.h"

namespace frugal {

class ReshapeOp final : public Op {
 public:
  explicit ReshapeOp(Shape to) : to_(std::move(to)) {}
  std::string name() const override { return "reshape"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  Shape to_;
};

// x viewed as `to` (to.numel() == x's element count, else throws naming both).
Value reshape(Value x, Shape to, std::source_location where = std::source_location::current());

// ONNX's Reshape target: 0 copies x's extent on that axis (unless allow_zero), one -1 takes what
// is left. Throws naming the shapes where that cannot give x's element count.
Shape resolve_reshape(const Shape& x, const std::vector<int64_t>& target, bool allow_zero = false);

}  // namespace frugal
