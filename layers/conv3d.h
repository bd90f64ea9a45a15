// Conv3d: 3-D convolution over (N, C, D, H, W) (video networks, 3-D U-Nets) with stride,
// zero padding (each side its own), dilation and groups along every axis, as the backend's 2-D
// convolution of the input's depth planes in scratch (layers/conv3d_planes.h), then the bias.
// Backward reads x (for dw) and w (for dx): the op keeps x itself, as PyTorch's conv3d does,
// and dx may take x's bytes.
#pragma once

#include <source_location>
#include <string>

#include "autograd/tape.h"
#include "layers/conv3d_planes.h"

namespace frugal {

struct Conv3dOptions {
  int64_t out = 0;     // output channels K
  int64_t kernel = 1;  // kd = kh = kw
  int64_t stride = 1;
  int64_t pad = 0;
  int64_t dilation = 1;
  int64_t groups = 1;  // in and out channels both divisible by it
  bool bias = true;
  std::string name{};  // parameter prefix; default tape.unique_name("conv3d")
};

// Inputs {x (N, C, D, H, W), w (K, C/groups, kd, kh, kw)} and optionally b (K); output
// y (N, K, Do, Ho, Wo). With weights of your own: tape.record(std::make_unique<Conv3dOp>(p),
// {x, w, b}, where).
class Conv3dOp final : public Op {
 public:
  explicit Conv3dOp(const Conv3dParams& p) : p_(p) {}

  std::string name() const override { return "conv3d"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;
  const Conv3dPlanes& planes() const { return planes_; }

 private:
  Conv3dParams p_;
  bool bias_ = false;
  DType dtype_ = DType::f32;
  Conv3dPlanes planes_;
};

// y = conv3d(x) with parameters "<name>.weight" (K, C/groups, k, k, k), normal(0,
// sqrt(2/(k^3*K/groups))), and "<name>.bias" (K), zeros. Example: conv3d(x, {.out = 64,
// .kernel = 3, .pad = 1}).
Value conv3d(Value x, const Conv3dOptions& o,
             std::source_location where = std::source_location::current());

}  // namespace frugal
