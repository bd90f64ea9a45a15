// Sampling an image at a grid's points: PyTorch's F.grid_sample and ONNX's GridSample (spatial
// transformer networks, warping a frame by an optical flow). x (N,C,H,W) read at grid (N,P,Q,2),
// whose last axis is (x, y) in [-1, 1] across the image; bilinear or nearest, points outside
// reading zeros, the border or the reflected image; align_corners either way (core/
// grid_sample.h). Gradients to x (its adjoint: each dy added into the taps that read it) and to
// the grid (bilinear: the slope between the taps; nearest: 0, as PyTorch). Backward reads the
// grid, and x only for the grid's gradient; the output can be rebuilt from both.
#pragma once

#include <source_location>

#include "autograd/tape.h"
#include "core/backend.h"

namespace frugal {

struct GridSampleOptions {
  GridSampleMode mode = GridSampleMode::bilinear;
  GridSamplePadding padding = GridSamplePadding::zeros;
  bool align_corners = false;  // PyTorch's default since 1.3
};

class GridSampleOp final : public Op {
 public:
  explicit GridSampleOp(GridSampleOptions o) : o_(o) {}
  std::string name() const override { return "grid_sample"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  GridSampleOptions o_;
  GridSampleGeometry g_;
  DType dtype_ = DType::f32;
};

// x (N,C,H,W) at grid (N,P,Q,2) -> (N,C,P,Q). Example: an affine warp,
// grid_sample(x, affine_grid_of_theta, {.align_corners = false}).
Value grid_sample(Value x, Value grid, GridSampleOptions o = {},
                  std::source_location where = std::source_location::current());

}  // namespace frugal
