// Nearest upsampling by whole factors (PyTorch's nn.Upsample(scale_factor=s, mode="nearest"),
// ONNX's Resize in nearest mode): each pixel becomes an s_h x s_w block. Backward sums each
// block. Nothing is read in backward, and the output can be rebuilt in backward.
#pragma once

#include <source_location>

#include "autograd/tape.h"
#include "core/backend.h"

namespace frugal {

class UpsampleNearestOp final : public Op {
 public:
  UpsampleNearestOp(int64_t scale_h, int64_t scale_w) : scale_h_(scale_h), scale_w_(scale_w) {}
  std::string name() const override { return "upsample_nearest2d"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  int64_t scale_h_, scale_w_;
  Pool2dGeometry g_;
  DType dtype_ = DType::f32;
};

// x (N,C,H,W) -> (N,C,H scale,W scale). Example: upsample_nearest2d(x, 2).
Value upsample_nearest2d(Value x, int64_t scale,
                         std::source_location where = std::source_location::current());

}  // namespace frugal
