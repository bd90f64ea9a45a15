// Conv3d: 3-D convolution over (N, C, D, H, W) (video networks, 3-D U-Nets) with stride,
// zero padding (each side its own), dilation and groups along every axis, by the backend's 2-D
// convolution run over the input's depth planes in scratch. A chunk of samples at a time, its
// planes are moved to (planes, samples, C, H, W) and convolved over (H, W) by every depth tap
// of every filter at once (the weight (K, C/groups, kd, kh, kw) read as (K*kd, C/groups, kh,
// kw)); output plane o adds the partial sums of tap i from input plane o*sd + i*dd - pad, taps
// in order, then the bias. Backward moves the chunk's planes again, places dy where each
// tap's partial sums were, and runs the 2-D filter and data gradients over them. So the op
// keeps x itself for backward, as PyTorch's conv3d does, and its moved planes and partial
// sums (kd times a chunk's output) live in scratch during its own pass only. The chunk is a
// function of the geometry alone (at least kChunkPlanes planes), so every memory mode and
// device runs the same arithmetic in the same order. At depth stride sd > 1 every input plane's
// taps are computed (about sd times conv3d's multiply-adds), except for a window 1 deep,
// whose planes are picked first.
#pragma once

#include <source_location>
#include <string>

#include "autograd/tape.h"
#include "layers/conv2d.h"

namespace frugal {

// Everything about a 3-D convolution but its tensors: ONNX's Conv attributes over (D, H, W).
struct Conv3dParams {
  int64_t stride_d = 1, pad_front = 0, pad_back = 0, dilation_d = 1;  // along depth
  Conv2dParams plane{};  // along H and W, and the groups
};

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
  // Depth planes a chunk holds at least (fewer where the batch ends first).
  static constexpr int64_t kChunkPlanes = 16;

  explicit Conv3dOp(const Conv3dParams& p) : p_(p) {}

  std::string name() const override { return "conv3d"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

  // The 2-D convolution of one chunk's planes, and the samples in a chunk.
  const Conv2dGeometry& plane_geometry() const { return g_; }
  int64_t chunk_samples() const { return chunk_; }

 private:
  // The output planes [lo, hi) whose tap i reads an input plane.
  struct TapRange {
    int64_t lo = 0, hi = 0;
  };
  TapRange tap_range(int64_t tap) const;
  // Index among the convolved planes of the plane that output plane o's tap i reads.
  int64_t plane_of(int64_t o, int64_t tap) const { return o * plane_step_ + tap_offset(tap); }
  int64_t tap_offset(int64_t tap) const;
  size_t forward_bytes(const Backend& backend) const;
  size_t backward_bytes(const Backend& backend) const;
  Conv2dGeometry chunk_geometry(int64_t samples) const;

  Conv3dParams p_;
  bool bias_ = false;
  DType dtype_ = DType::f32;
  int64_t N_ = 0, C_ = 0, D_ = 0, H_ = 0, W_ = 0, K_ = 0, kd_ = 0, kh_ = 0, kw_ = 0, Do_ = 0;
  // The input planes convolved: first_plane_ + j * plane_stride_ for j in [0, planes_) (every
  // plane, or for a window 1 deep those the outputs read); output plane o's tap i reads plane
  // index o * plane_step_ + tap_offset(i).
  int64_t planes_ = 0, first_plane_ = 0, plane_stride_ = 1, plane_step_ = 1;
  int64_t chunk_ = 1;
  Conv2dGeometry g_;  // one full chunk's planes: N = chunk_ * planes_, K = K_ * kd_
};

// y = conv3d(x) with parameters "<name>.weight" (K, C/groups, k, k, k), normal(0,
// sqrt(2/(k^3*K/groups))), and "<name>.bias" (K), zeros. Example: conv3d(x, {.out = 64,
// .kernel = 3, .pad = 1}).
Value conv3d(Value x, const Conv3dOptions& o,
             std::source_location where = std::source_location::current());

}  // namespace frugal
