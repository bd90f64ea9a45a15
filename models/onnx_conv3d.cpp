// Conv3d and ConvTranspose3d as frugal's Conv3dOp and ConvTranspose3dOp (models/onnx_conv3d.h).
#include "models/onnx_conv3d.h"

#include <memory>
#include <vector>

#include "core/error.h"
#include "layers/conv3d.h"
#include "layers/conv_transpose3d.h"

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
  FRUGAL_CHECK(
      w[2] == n.depth_kernel && (n.kernel_h == 0 || (w[3] == n.kernel_h && w[4] == n.kernel_w)),
      "kernel_shape (", n.depth_kernel, ", ", n.kernel_h, ", ", n.kernel_w, ") but the weight is ",
      w);
  const Conv3dParams p{.stride_d = n.depth_stride,
                       .pad_front = n.depth_pad_begin,
                       .pad_back = n.depth_pad_end,
                       .dilation_d = n.depth_dilation,
                       .plane = n.conv};
  return in[0].tape().record(std::make_unique<ConvTranspose3dOp>(
                                 p, n.depth_output_padding, n.output_padding_h, n.output_padding_w),
                             std::vector<Value>(in.begin(), in.end()), where)[0];
}

}  // namespace frugal
