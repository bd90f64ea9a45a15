// Resizing to any size: bilinear (ONNX's Resize in linear mode, PyTorch's
// interpolate(mode="bilinear") and nn.Upsample(mode="bilinear")), each output pixel a weighted
// mean of its two by two input neighbours; bicubic (cubic mode, interpolate(mode="bicubic")),
// of its four by four with Keys' kernel; align_corners either way (core/resize.h). Linear in
// x, so backward reads nothing; the output can be rebuilt.
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
  double cubic_a = -0.75;  // bicubic: the kernel's coefficient (PyTorch's -0.75)
};

class ResizeOp final : public Op {
 public:
  ResizeOp(ResizeOptions o, ResizeMethod method) : o_(o), method_(method) {}
  std::string name() const override {
    return method_ == ResizeMethod::cubic ? "resize_bicubic" : "resize_bilinear";
  }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  ResizeOptions o_;
  ResizeMethod method_;
  ResizeGeometry g_;
  DType dtype_ = DType::f32;
};

// x (N,C,H,W) -> (N,C,height,width). Example: resize_bilinear(x, {.height = 64, .width = 64}).
Value resize_bilinear(Value x, ResizeOptions o,
                      std::source_location where = std::source_location::current());
// The same with bicubic weights. Example: resize_bicubic(x, {.height = 224, .width = 224}).
Value resize_bicubic(Value x, ResizeOptions o,
                     std::source_location where = std::source_location::current());

}  // namespace frugal
