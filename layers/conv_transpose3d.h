// ConvTranspose3d: the adjoint of a 3-D convolution over (N, C, D, H, W) (PyTorch's
// ConvTranspose3d, ONNX's ConvTranspose with a 3-D window: 3-D U-Nets' up-convolutions), run
// on the passes of layers/conv3d_planes.h as ConvTranspose2d runs on the 2-D kernels: forward
// is the convolution's data gradient, backward the convolution (d x) and its filter gradient
// (d w), the bias gradient a per-channel sum. Backward reads x (for d w) and w (for d x): x
// itself is kept, no moved copy of it.
#pragma once

#include <source_location>
#include <string>

#include "autograd/tape.h"
#include "layers/conv3d_planes.h"

namespace frugal {

struct ConvTranspose3dOptions {
  int64_t out = 0;     // output channels
  int64_t kernel = 1;  // kd = kh = kw
  int64_t stride = 1;
  int64_t pad = 0;             // removed from each side of the full output
  int64_t output_padding = 0;  // added at the back, bottom and right, below the stride
  int64_t dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  std::string name{};  // parameter prefix; default tape.unique_name("conv_transpose3d")
};

// Inputs {x (N, C, D, H, W), w (C, K/groups, kd, kh, kw)} and optionally b (K); output y (N, K,
// Do, Ho, Wo) with Do = (D - 1) sd - pad_front - pad_back + dd (kd - 1) + output_padding_d + 1
// (Ho, Wo alike). Output padding must be below the stride along its axis.
class ConvTranspose3dOp final : public Op {
 public:
  ConvTranspose3dOp(const Conv3dParams& p, int64_t output_padding_d, int64_t output_padding_h,
                    int64_t output_padding_w)
      : p_(p), output_padding_{output_padding_d, output_padding_h, output_padding_w} {}

  std::string name() const override { return "conv_transpose3d"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;
  // The convolution whose adjoint this is: its input is y, its output x.
  const Conv3dPlanes& planes() const { return planes_; }

 private:
  Conv3dParams p_;
  int64_t output_padding_[3];
  bool bias_ = false;
  DType dtype_ = DType::f32;
  Conv3dPlanes planes_;
};

// y = conv_transpose3d(x) with parameters "<name>.weight" (C, out/groups, k, k, k), normal with
// std sqrt(2 / (k^3 C / groups)), and "<name>.bias" (out), zeros. Example: 2x upsampling of a
// volume, conv_transpose3d(x, {.out = 16, .kernel = 2, .stride = 2}).
Value conv_transpose3d(Value x, const ConvTranspose3dOptions& o,
                       std::source_location where = std::source_location::current());

}  // namespace frugal
