// Conv2d: 2-D convolution over (N,C,H,W) with stride, zero padding (each side its own),
// dilation and groups (depthwise: one group per input channel), by the backend's kernels (on
// the CPU, direct kernels for stride-1 f32 layers, loops of their own for depthwise ones,
// im2col + GEMM for the rest). Backward reads x and w; the kernels' working memory (padded tiles,
// im2col columns) is scratch that lives only during the op's forward or backward, so it never adds
// to the step's peak for long.
#pragma once

#include <source_location>
#include <string>

#include "autograd/tape.h"

namespace frugal {

struct Conv2dOptions {
  int64_t out = 0;     // output channels K
  int64_t kernel = 1;  // R = S
  int64_t stride = 1;
  int64_t pad = 0;
  int64_t dilation = 1;
  int64_t groups = 1;  // in and out channels both divisible by it; = in channels: depthwise
  bool bias = true;
  std::string name{};  // parameter prefix; default tape.unique_name("conv2d")
};

// Everything about a convolution but its tensors: ONNX's Conv attributes.
struct Conv2dParams {
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1, groups = 1;

  // The same stride, padding and dilation along both axes and on every side.
  static Conv2dParams uniform(int64_t stride, int64_t pad, int64_t dilation = 1,
                              int64_t groups = 1) {
    return {stride, stride, pad, pad, pad, pad, dilation, dilation, groups};
  }
};

// Throws, naming `op`, unless strides, dilations and groups are >= 1 and pads >= 0.
void check_conv_params(const char* op, const Conv2dParams& p);

// Throws, naming `op`, unless x's channels (in[0].shape[1]) and the weight's first two extents
// (K, C/groups) fit `groups`, x and the weight are both f32 or both f64, and a bias (in[2],
// where given) is (K) of their type. Returns whether there is a bias.
bool check_conv_operands(const char* op, std::span<const TensorMeta> in, int64_t groups);

// Marks r rebuildable by forward under a memory budget (Roles::rebuild_expensive): from x, w
// (and b), at 2 flops per multiply-add of the convolution g. conv2d and conv_transpose2d (whose
// g is the convolution it is the adjoint of) share it.
void set_conv_rebuildable(Roles& r, const Conv2dGeometry& g, DType t, bool bias);

// Inputs {x (N,C,H,W), w (K,C/groups,R,S)} and optionally b (K); output y (N,K,P,Q). To use
// weights of your own (shared, tied), record it with them:
// tape.record(std::make_unique<Conv2dOp>(stride, pad), {x, w, b}, where) (docs/NEW_LAYER.md,
// "Weights of your own in built-in ops").
class Conv2dOp final : public Op {
 public:
  Conv2dOp(int64_t stride, int64_t pad) : p_(Conv2dParams::uniform(stride, pad)) {}
  explicit Conv2dOp(const Conv2dParams& p) : p_(p) {}

  std::string name() const override { return "conv2d"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;
  const Conv2dGeometry& geometry() const { return g_; }

 private:
  Conv2dParams p_;
  bool bias_ = false;
  DType dtype_ = DType::f32;
  Conv2dGeometry g_;
};

// y = conv2d(x) with parameters "<name>.weight" (K,C/groups,k,k), normal(0,
// sqrt(2/(k*k*K/groups))), and "<name>.bias" (K), zeros. Example: conv2d(x, {.out = 64, .kernel =
// 3, .pad = 1}).
Value conv2d(Value x, const Conv2dOptions& o,
             std::source_location where = std::source_location::current());

}  // namespace frugal
