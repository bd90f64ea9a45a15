// ConvTranspose2d: the adjoint of a 2-D convolution (PyTorch's ConvTranspose2d, ONNX's
// ConvTranspose): each input pixel scatters its kernel-weighted values into the output, which
// is larger by the stride (U-Net decoders, learned 2x upsampling). Run on the convolution
// kernels of the backend: forward is a convolution's data gradient, backward a convolution
// (d x) and its filter gradient (d w), the bias gradient a per-channel sum.
#pragma once

#include <source_location>
#include <string>

#include "autograd/tape.h"
#include "core/broadcast.h"
#include "layers/conv2d.h"

namespace frugal {

struct ConvTranspose2dOptions {
  int64_t out = 0;     // output channels
  int64_t kernel = 1;  // R = S
  int64_t stride = 1;
  int64_t pad = 0;             // removed from each side of the full output
  int64_t output_padding = 0;  // added at the bottom and right, below the stride
  int64_t dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  std::string name{};  // parameter prefix; default tape.unique_name("conv_transpose2d")
};

// Inputs {x (N,C,H,W), w (C, K/groups, R, S)} and optionally b (K); output y (N, K, P, Q) with
// P = (H - 1) stride - pad_top - pad_bottom + dilation (R - 1) + output_padding + 1 (Q alike).
// Output padding must be below the stride along its axis.
class ConvTranspose2dOp final : public Op {
 public:
  ConvTranspose2dOp(const Conv2dParams& p, int64_t output_padding_h, int64_t output_padding_w)
      : p_(p), output_padding_h_(output_padding_h), output_padding_w_(output_padding_w) {}

  std::string name() const override { return "conv_transpose2d"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;
  // The convolution whose adjoint this is: its input is y, its output x.
  const Conv2dGeometry& geometry() const { return g_; }

 private:
  Conv2dParams p_;
  int64_t output_padding_h_ = 0, output_padding_w_ = 0;
  bool bias_ = false;
  DType dtype_ = DType::f32;
  Conv2dGeometry g_;
  Broadcast bias_g_;  // y (N,K,P,Q) against the bias viewed as (1,K,1,1)
};

// y = conv_transpose2d(x) with parameters "<name>.weight" (C, out/groups, k, k), normal with
// std sqrt(2 / (k k C / groups)), and "<name>.bias" (out), zeros. Example: 2x upsampling,
// conv_transpose2d(x, {.out = 16, .kernel = 2, .stride = 2}).
Value conv_transpose2d(Value x, const ConvTranspose2dOptions& o,
                       std::source_location where = std::source_location::current());

}  // namespace frugal
