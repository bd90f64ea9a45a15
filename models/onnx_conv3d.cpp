// Conv3d as frugal's Conv3dOp; ConvTranspose3d as per-plane 2-D transposed convolutions and
// the depth taps' partial sums placed and added (models/onnx_conv3d.h).
#include "models/onnx_conv3d.h"

#include <memory>
#include <vector>

#include "core/error.h"
#include "layers/add.h"
#include "layers/binary.h"
#include "layers/conv3d.h"
#include "layers/conv_transpose2d.h"
#include "layers/pad.h"
#include "layers/reshape.h"
#include "layers/slice.h"
#include "layers/transpose.h"

namespace frugal {

Value record_conv3d_depth(const OnnxNode& n, std::span<const Value> in,
                          std::source_location where) {
  const Shape x = in[0].shape(), w = in[1].shape();  // copies
  FRUGAL_CHECK(x.rank() == 5 && w.rank() == 5, "a 3-D convolution of ", x, " with weight ", w,
               ": expected x (N, C, D, H, W) and a weight (K, C/groups, kd, kh, kw)");
  const bool deep = n.depth_kernel > 0;  // else 1 deep: unit_axis 2
  FRUGAL_CHECK((deep ? w[2] == n.depth_kernel : w[2] == 1) &&
                   (n.kernel_h == 0 || (w[3] == n.kernel_h && w[4] == n.kernel_w)),
               "kernel_shape (", deep ? n.depth_kernel : 1, ", ", n.kernel_h, ", ", n.kernel_w,
               ") but the weight is ", w);
  Conv3dParams p{.plane = n.conv};
  if (deep)
    p.stride_d = n.depth_stride, p.pad_front = n.depth_pad_begin, p.pad_back = n.depth_pad_end,
    p.dilation_d = n.depth_dilation;
  return in[0].tape().record(std::make_unique<Conv3dOp>(p),
                             std::vector<Value>(in.begin(), in.end()), where)[0];
}

Value record_conv_transpose3d_depth(const OnnxNode& n, std::span<const Value> in,
                                    std::source_location where) {
  const Shape x = in[0].shape(), w = in[1].shape();  // copies
  FRUGAL_CHECK(x.rank() == 5 && w.rank() == 5, "a 3-D transposed convolution of ", x,
               " with weight ", w,
               ": expected x (N, C, D, H, W) and a weight (C, K/groups, kd, kh, kw)");
  const int64_t N = x[0], C = x[1], D = x[2], H = x[3], W = x[4], kd = w[2];
  const int64_t K = w[1] * n.conv.groups;
  FRUGAL_CHECK(
      kd == n.depth_kernel && (n.kernel_h == 0 || (w[3] == n.kernel_h && w[4] == n.kernel_w)),
      "kernel_shape (", n.depth_kernel, ", ", n.kernel_h, ", ", n.kernel_w, ") but the weight is ",
      w);
  const int64_t sd = n.depth_stride, dd = n.depth_dilation, pb = n.depth_pad_begin;
  const int64_t out =
      (D - 1) * sd - pb - n.depth_pad_end + dd * (kd - 1) + 1 + n.depth_output_padding;
  FRUGAL_CHECK(out >= 1, "a 3-D transposed convolution of ", x, ": its padding leaves ", out,
               " output planes");
  const Value moved =
      reshape(transpose(in[0], {0, 2, 1, 3, 4}, where), Shape{N * D, C, H, W}, where);
  const Value taps = reshape(in[1], Shape{C, w[1] * kd, w[3], w[4]}, where);
  const Value z = in[0].tape().record(
      std::make_unique<ConvTranspose2dOp>(n.conv, n.output_padding_h, n.output_padding_w),
      {moved, taps}, where)[0];
  const Shape zs = z.shape();  // (N * D, K * kd, Ho, Wo)
  const int64_t Ho = zs[2], Wo = zs[3], plane = K * Ho * Wo;
  const Value partial = reshape(z, Shape{N, D, K, kd, Ho * Wo}, where);
  Value sum;
  for (int64_t i = 0; i < kd; ++i) {
    Value t = kd > 1 ? slice(partial, 3, i, i + 1, 1, where) : partial;
    t = reshape(t, Shape{N, D, 1, plane}, where);
    if (sd > 1)  // input plane d at d*sd, zero planes between
      t = pad(t, {.before = {0, 0, 0, 0}, .after = {0, 0, sd - 1, 0}}, where);
    t = reshape(t, Shape{N, D * sd, plane}, where);
    // Plane d*sd lands at d*sd + i*dd - pb; the output runs over [0, out).
    const int64_t shift = i * dd - pb;
    t = pad(t, {.before = {0, shift, 0}, .after = {0, out - (D * sd + shift), 0}}, where);
    sum = i == 0 ? t : add(sum, t, where);
  }
  Value y = transpose(reshape(sum, Shape{N, out, K, Ho, Wo}, where), {0, 2, 1, 3, 4}, where);
  if (in.size() > 2)
    y = binary(BinaryKind::add, y, reshape(in[2], Shape{1, K, 1, 1, 1}, where), where);
  return y;
}

}  // namespace frugal
