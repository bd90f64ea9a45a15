// MaxPool2d: the maximum over each k x k window (padding never wins). Backward keeps only a
// window-argmax per output (one byte, or 4 bits where the backend packs windows of up to 16
// positions: the CPU's), so neither x nor y has to outlive the forward pass.
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
// relu(max_pool2d(x)) has the bits of max_pool2d(relu(x)), forward and backward (ReLU is
// monotone, keeps NaN where it is and makes both zeros +0; a window whose maximum is not
// positive passes no gradient either way), and keeps less: ReLU's backward reads the pooled
// output, which the next layer keeps anyway, instead of a mask of the full-size input. The
// bundled models and the ONNX import record that order (tests/test_pool.cpp checks it).
Value max_pool2d(Value x, const Pool2dOptions& o,
                 std::source_location where = std::source_location::current());

}  // namespace frugal
