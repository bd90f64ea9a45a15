// Conv3d whose window is 1 wide along no axis (torchvision's r3d_18 and mc3_18: 3x3x3 and
// (3, 7, 7) windows; R(2+1)D's (1, 1, 1) downsampling with stride 2 along every axis) or 1 deep
// ((1, k, k): mc3_18's and R(2+1)D's spatial convolutions), recorded as frugal's Conv3dOp
// (layers/conv3d.h), which keeps x itself for backward as PyTorch's conv3d does.
// ConvTranspose3d (3-D U-Nets' up-convolutions) as frugal's ConvTranspose3dOp
// (layers/conv_transpose3d.h), which keeps x itself as well.
#pragma once

#include <source_location>
#include <span>

#include "autograd/tape.h"
#include "models/onnx_graph.h"

namespace frugal {

// in: x (N, C, D, H, W), the weight (K, C/groups, kd, kh, kw) and an optional bias (K); n's
// depth_* the depth window (a window 1 deep, unit_axis 2, where depth_kernel is 0), n.conv the
// (H, W) one (models/onnx_reader.h's conv_window). Returns (N, K, Do, Ho, Wo).
Value record_conv3d_depth(const OnnxNode& n, std::span<const Value> in,
                          std::source_location where = std::source_location::current());

// ConvTranspose3d: in: x (N, C, D, H, W), the weight (C, K/groups, kd, kh, kw), an optional
// bias (K); returns (N, K, (D-1)*sd - pads + dd*(kd-1) + 1 + output_padding, Ho, Wo).
Value record_conv_transpose3d_depth(const OnnxNode& n, std::span<const Value> in,
                                    std::source_location where = std::source_location::current());

}  // namespace frugal
