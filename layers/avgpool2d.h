// AvgPool2d: the mean over each k x k window, padding counted as zeros (PyTorch's
// count_include_pad=True, ceil mode included). Backward reads nothing but dy.
#pragma once

#include <source_location>

#include "autograd/tape.h"
#include "layers/pool_geometry.h"

namespace frugal {

class AvgPool2dOp final : public Op {
 public:
  explicit AvgPool2dOp(Pool2dOptions o) : options_(o) {}
  std::string name() const override { return "avg_pool2d"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  Pool2dOptions options_;
  Pool2dGeometry g_;
  DType x_dtype_ = DType::f32;
};

// y (N,C,P,Q) = window means of x (N,C,H,W); the divisor counts padding up to the padded
// border, as PyTorch's AvgPool2d(count_include_pad=True).
Value avg_pool2d(Value x, const Pool2dOptions& o,
                 std::source_location where = std::source_location::current());

}  // namespace frugal
