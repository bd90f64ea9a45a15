// MaxPool2d: the maximum over each k x k window (padding never wins). Backward keeps only a
// one-byte window-argmax per output, so neither x nor y has to outlive the forward pass.
#pragma once

#include <source_location>

#include "autograd/tape.h"
#include "layers/pool_geometry.h"

namespace frugal {

class MaxPool2dOp final : public Op {
 public:
  explicit MaxPool2dOp(Pool2dOptions o) : options_(o) {}
  std::string name() const override { return "max_pool2d"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  Pool2dOptions options_;
  Pool2dGeometry g_;
  DType x_dtype_ = DType::f32;
};

// y (N,C,P,Q) = max over windows of x (N,C,H,W); P,Q as PyTorch's MaxPool2d (floor or ceil).
Value max_pool2d(Value x, const Pool2dOptions& o,
                 std::source_location where = std::source_location::current());

}  // namespace frugal
