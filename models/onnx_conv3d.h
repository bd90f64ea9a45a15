// Conv3d whose window is 1 wide along no axis (torchvision's r3d_18 and mc3_18: 3x3x3 and
// (3, 7, 7) windows; R(2+1)D's (1, 1, 1) downsampling with stride 2 along every axis), recorded
// as frugal's 2-D convolution and data movement. Every depth plane of x (N, C, D, H, W) is
// convolved once over (H, W) by all kd depth taps of every filter at once: one conv2d over
// (N*D, C, H, W) with the weight (K, C/groups, kd, kh, kw) moved to (K*kd, C/groups, kh, kw),
// giving each plane's partial sums for each tap, (N, D, K, kd, Ho*Wo). Output plane o then adds
// the partial sums of tap i from input plane o*sd + i*dd - pad (zeros where that lies in the
// padding), taps in order. The convolution keeps x once (its moved copy), as PyTorch's conv3d
// keeps x; the partial sums, kd times the output, live only until they are added up. At depth
// stride 1 the multiply-adds are conv3d's (plus the padding planes' share); at stride sd every
// input plane's taps are computed, about sd times conv3d's, except for a (1, kh, kw) window,
// whose planes are picked first. ConvTranspose3d likewise (record_conv_transpose3d_depth).
#pragma once

#include <source_location>
#include <span>

#include "autograd/tape.h"
#include "models/onnx_graph.h"

namespace frugal {

// in: x (N, C, D, H, W), the weight (K, C/groups, kd, kh, kw) and an optional bias (K); n's
// depth_* the depth window, n.conv the (H, W) one (models/onnx_reader.h's conv_window).
// Returns (N, K, Do, Ho, Wo).
Value record_conv3d_depth(const OnnxNode& n, std::span<const Value> in,
                          std::source_location where = std::source_location::current());

// ConvTranspose3d (3-D U-Nets' up-convolutions) the same way: every input depth plane
// through the 2-D transposed convolution by all kd taps at once (the weight (C, K/groups, kd,
// kh, kw) read as (C, K/groups*kd, kh, kw)), then tap i's partial sums of input plane d placed
// at output plane d*sd + i*dd - pad (zero planes between them where sd > 1) and the taps added
// in order. in: x (N, C, D, H, W), the weight, an optional bias (K); returns
// (N, K, (D-1)*sd - pads + dd*(kd-1) + 1 + output_padding, Ho, Wo).
Value record_conv_transpose3d_depth(const OnnxNode& n, std::span<const Value> in,
                                    std::source_location where = std::source_location::current());

}  // namespace frugal
