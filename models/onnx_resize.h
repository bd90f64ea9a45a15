// ONNX's Resize in nearest mode at any size: which input row or column each output one takes,
// as ONNX defines it (every coordinate transformation PyTorch writes and each nearest_mode), so
// F.interpolate(mode="nearest") to a size that is no whole multiple, or by a scale such as 1.5,
// records as two gathers (layers/gather.h), whose backward adds each output gradient back to
// the pixel it came from. Whole factors in the modes that pick the same pixels stay one
// upsample_nearest2d op.
#pragma once

#include <cstdint>
#include <vector>

#include "core/resize.h"

namespace frugal {

// ONNX's nearest_mode: how a fractional source coordinate becomes an index.
enum class NearestMode { round_prefer_floor, round_prefer_ceil, floor, ceil };

// For output positions 0..out-1 along an axis of `in` elements: the input index each takes.
// `scale` is the output's size over the input's, given by the file's scales, or 0 where the
// file gives sizes (then out / in, computed exactly as in * x / out). Indices are clamped into
// [0, in). Throws unless 1 <= in and 1 <= out <= 2^20.
std::vector<int64_t> nearest_indices(int64_t in, int64_t out, double scale,
                                     ResizeCoordinates coordinates, NearestMode mode);

}  // namespace frugal
