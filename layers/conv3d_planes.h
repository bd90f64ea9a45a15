// The passes of a 3-D convolution over (N, C, D, H, W) run as the backend's 2-D convolution of
// depth planes in scratch: forward, and the data and filter gradients. Conv3dOp runs them as
// they are, ConvTranspose3dOp (the adjoint) the other way round, as the 2-D ops share the 2-D
// kernels. A chunk of samples at a time, its planes are moved to (planes, samples, C, H, W)
// and convolved over (H, W) by every depth tap of every filter at once (the weight (K,
// C/groups, kd, kh, kw) moved to (K*kd, C/groups, kh, kw)); output plane o adds the partial
// sums of tap i from input plane o*sd + i*dd - pad, taps in order. The gradients place dy
// where each tap's partial sums were and run the 2-D filter and data gradients over them. So a
// pass reads the tensors as they lie, and its moved planes and partial sums (kd times a chunk's
// output) live in its scratch only. The chunk is a function of the geometry alone (at least
// kChunkPlanes planes), so every memory mode and device runs the same arithmetic in the same
// order. At depth stride sd > 1 every input plane's taps are computed (about sd times the
// multiply-adds), except for a window 1 deep, whose planes are picked first.
#pragma once

#include <cstddef>

#include "core/backend.h"
#include "core/roles.h"
#include "core/tensor.h"
#include "layers/conv2d.h"

namespace frugal {

// Everything about a 3-D convolution but its tensors: ONNX's Conv attributes over (D, H, W).
struct Conv3dParams {
  int64_t stride_d = 1, pad_front = 0, pad_back = 0, dilation_d = 1;  // along depth
  Conv2dParams plane{};  // along H and W, and the groups
};

class Conv3dPlanes {
 public:
  // Depth planes a chunk holds at least (fewer where the batch ends first).
  static constexpr int64_t kChunkPlanes = 16;

  Conv3dPlanes() = default;
  // x (N, C, D, H, W) by filters w (K, C/groups, kd, kh, kw). Throws, naming `op`, where
  // the parameters are out of range or a window is larger than its padded axis.
  Conv3dPlanes(const char* op, const Shape& x, const Shape& w, const Conv3dParams& p, DType t);

  Shape input() const { return Shape{N_, C_, D_, H_, W_}; }
  Shape output() const { return Shape{N_, K_, Do_, g_.P, g_.Q}; }
  // Multiply-adds of one pass over the batch, as a plain 3-D convolution counts them.
  double macs() const;
  // The 2-D convolution of one full chunk's planes, and the samples in a chunk.
  const Conv2dGeometry& plane_geometry() const { return g_; }
  int64_t chunk_samples() const { return chunk_; }

  size_t forward_scratch(const Backend& b) const;
  size_t backward_scratch(const Backend& b, bool data, bool filter) const;
  // y (N, K, Do, Ho, Wo) = x convolved by w (no bias).
  void forward(Backend& b, const Tensor& x, const Tensor& w, Tensor& y,
               const Tensor& scratch) const;
  // From dy (N, K, Do, Ho, Wo): dx (N, C, D, H, W) where dx is given, reading w, and dw where
  // given, reading x (which may then be undefined otherwise). Each chunk of x is read before
  // its chunk of dx is written, so dx may take x's bytes.
  void backward(Backend& b, const Tensor& x, const Tensor& dy, const Tensor& w, Tensor* dx,
                Tensor* dw, const Tensor& scratch) const;

 private:
  // The output planes [lo, hi) whose tap i reads an input plane.
  struct TapRange {
    int64_t lo = 0, hi = 0;
  };
  TapRange tap_range(int64_t tap) const;
  // Index among the convolved planes of the plane that output plane o's tap i reads.
  int64_t plane_of(int64_t o, int64_t tap) const { return o * plane_step_ + tap_offset(tap); }
  int64_t tap_offset(int64_t tap) const;
  Conv2dGeometry chunk_geometry(int64_t samples) const;
  size_t weight_bytes() const;

  const char* op_ = "conv3d";
  Conv3dParams p_;
  DType dtype_ = DType::f32;
  int64_t N_ = 0, C_ = 0, D_ = 0, H_ = 0, W_ = 0, K_ = 0, kd_ = 0, kh_ = 0, kw_ = 0, Do_ = 0;
  // The input planes convolved: first_plane_ + j * plane_stride_ for j in [0, planes_) (every
  // plane, or for a window 1 deep those the outputs read: none where every output reads the
  // depth padding, whose passes write zeros); output plane o's tap i reads plane index
  // o * plane_step_ + tap_offset(i).
  int64_t planes_ = 0, first_plane_ = 0, plane_stride_ = 1, plane_step_ = 1;
  int64_t chunk_ = 1;
  Conv2dGeometry g_;  // one full chunk's planes: N = chunk_ * planes_, K = K_ * kd_
};

// Marks r rebuildable by forward under a memory budget (Roles::rebuild_expensive), from x, w
// (and b), at 2 flops per multiply-add of the convolution c. conv3d and conv_transpose3d
// (whose c is the convolution it is the adjoint of) share it.
void set_conv3d_rebuildable(Roles& r, const Conv3dPlanes& c, DType t, bool bias);

// y (N, K, D, H, W) += b (K) per channel, and db = the sum of dy (N, K, D, H, W) per channel:
// the bias of conv3d and conv_transpose3d.
void add_channel_bias(Backend& be, Tensor& y, const Tensor& b);
void channel_bias_grad(Backend& be, const Tensor& dy, Tensor& db);

}  // namespace frugal
