// Bilinear resizing to any size (ONNX's Resize in linear mode, PyTorch's
// interpolate(mode="bilinear") and nn.Upsample(mode="bilinear"), with align_corners either
// way): each output pixel a weighted mean of its two by two input neighbours
// (core/resize.h). Linear, so backward reads nothing; the output can be rebuilt.
#pragma once

#include <source_location>

#include "autograd/tape.h"
#include "core/backend.h"

namespace frugal {

struct ResizeOptions {
  int64_t height = 0, width = 0;  // the output's H and W
  ResizeCoordinates mode = ResizeCoordinates::pytorch_half_pixel;
  // output / input as an export gives it (0: height / H and width / W)
  double scale_h = 0, scale_w = 0;
};

class ResizeBilinearOp final : public Op {
 public:
  explicit ResizeBilinearOp(ResizeOptions o) : o_(o) {}
  std::string name() const override { return "resize_bilinear"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  ResizeOptions o_;
  ResizeGeometry g_;
  DType dtype_ = DType::f32;
};

// x (N,C,H,W) -> (N,C,height,width). Example: resize_bilinear(x, {.height = 64, .width = 64}).
Value resize_bilinear(Value x, ResizeOptions o,
                      std::source_location where = std::source_location::current());

}  // namespace frugal
