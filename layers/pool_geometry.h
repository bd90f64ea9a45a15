// Pooling options and output-size arithmetic shared by MaxPool2d and AvgPool2d, so that both
// pools (and their tests) size their outputs exactly as PyTorch and Torch7 do, floor or ceil.
#pragma once

#include <cstdint>
#include <span>

#include "core/backend.h"
#include "core/tensor.h"

namespace frugal {

struct Pool2dOptions {
  int64_t kernel = 2;
  int64_t kernel_w = 0;  // 0: kernel (a square window); else the window's width (global pooling)
  int64_t stride = 0;    // 0: same as kernel
  int64_t pad = 0;       // at most kernel / 2
  // Along the width where it differs (ONNX's pools: 1-D ones as a height of 1, rectangular
  // windows): stride_w 0 takes stride (the window's width where that is 0 too), pad_w < 0 pad.
  int64_t stride_w = 0;
  int64_t pad_w = -1;
  bool ceil = false;  // ceil mode: a partial last window counts
  // Average pooling: the divisor counts the padding (PyTorch's default) or, when false, only
  // the window's elements inside the input.
  bool count_include_pad = true;
  // Padding at the end of an axis where it differs from its start (ONNX's asymmetric pads,
  // TensorFlow's SAME): pad_end < 0 takes pad (below), pad_w_end < 0 the width's pad (right).
  int64_t pad_end = -1;
  int64_t pad_w_end = -1;
  // Max pools: window taps `dilation` apart (dilation_w 0: dilation), as PyTorch's MaxPool2d.
  int64_t dilation = 1;
  int64_t dilation_w = 0;
};

// Output extent of one pooled dimension: floor or ceil of
// (in + pad + pad_end - dilation (kernel - 1) - 1) / stride + 1; in ceil mode the last window
// is dropped if it would start inside the end padding, i.e. if (out - 1) * stride >= in + pad
// (PyTorch's pooling_output_shape).
int64_t pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, bool ceil,
                         int64_t pad_end = -1, int64_t dilation = 1);

// Checks that op `op` ("max_pool2d") has one input x (N,C,H,W) f32/f64 and sane options,
// naming the op, the shape and the options on error; returns the geometry with P,Q filled in.
Pool2dGeometry pool2d_geometry(const char* op, std::span<const TensorMeta> in,
                               const Pool2dOptions& o);

}  // namespace frugal
