// The passes of a 3-D convolution over (N, C, D, H, W) run as the backend's 2-D convolution of
// depth planes in scratch: forward, and the data and filter gradients. Conv3dOp runs them as
// they are, ConvTranspose3dOp (the adjoint) the other way round, as the 2-D ops share the 2-D
// kernels. A chunk of samples at a time, and one depth tap i at a time (taps in order): the
// input planes that tap reads for the output planes [lo_i, hi_i) whose window reaches into the
// input are moved to (planes, samples, C, H, W) and convolved over (H, W) by the weight's tap
// (K, C/groups, kh, kw), giving those output planes' partial sums in (planes, samples, K, Ho,
// Wo), which add up over the taps. Backward moves dy's planes the same way and runs the 2-D
// filter and data gradients per tap, the data gradients added into each input plane in tap
// order. So a pass reads the tensors as they lie, its moved planes live in its scratch only,
// and it computes exactly conv3d's multiply-adds, none for taps that read the padding. The
// chunk is a function of the geometry alone (at least kChunkPlanes input or output planes), so
// every memory mode and device runs the same arithmetic in the same order.
#pragma once

#include <cstddef>

#include "core/backend.h"
#include "core/copy_box.h"
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
  // Depth planes (of its input or output, the more) a chunk holds at least (fewer where the
  // batch ends first).
  static constexpr int64_t kChunkPlanes = 16;

  Conv3dPlanes() = default;
  // x (N, C, D, H, W) by filters w (K, C/groups, kd, kh, kw). Throws, naming `op`, where
  // the parameters are out of range or a window is larger than its padded axis.
  Conv3dPlanes(const char* op, const Shape& x, const Shape& w, const Conv3dParams& p, DType t);

  int64_t weight_numel() const { return K_ * C_ / p_.plane.groups * kd_ * kh_ * kw_; }
  Shape input() const { return Shape{N_, C_, D_, H_, W_}; }
  Shape output() const { return Shape{N_, K_, Do_, g_.P, g_.Q}; }
  // Multiply-adds of one pass over the batch, as a plain 3-D convolution counts them.
  double macs() const;
  // The samples in a chunk.
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
  // The output planes [lo, hi) whose tap reads an input plane, from input plane `first` on
  // (first + (o - lo) * stride_d for output plane o).
  struct TapRange {
    int64_t lo = 0, hi = 0, first = 0;
    int64_t count() const { return hi - lo; }
  };
  TapRange tap_range(int64_t tap) const;
  // Tap t's input planes of samples [n0, n0 + samples) in x, to (planes, samples, C, H*W).
  CopyBox input_planes(const TapRange& t, int64_t n0, int64_t samples) const;
  Conv2dGeometry chunk_geometry(int64_t samples, int64_t planes) const;
  size_t weight_bytes() const;
  size_t conv_scratch(const Backend& b, bool forward) const;

  const char* op_ = "conv3d";
  Conv3dParams p_;
  DType dtype_ = DType::f32;
  int64_t N_ = 0, C_ = 0, D_ = 0, H_ = 0, W_ = 0, K_ = 0, kd_ = 0, kh_ = 0, kw_ = 0, Do_ = 0;
  int64_t chunk_ = 1;
  Conv2dGeometry g_;  // one tap over a full chunk's output planes: N = chunk_ * Do_
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
