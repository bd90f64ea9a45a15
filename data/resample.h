// Resampling for training inputs: one separable pass that crops, resizes, flips and normalizes
// a decoded image (data/image.h) into a model's (3,H,W) f32 input, and the same filter over
// float planes (held data sets resampled to fill an input: Dataset::resize).
#pragma once

#include <array>
#include <cstdint>

#include "data/image.h"

namespace frugal {

// A region of an image in its pixel coordinates.
struct CropBox {
  double top = 0, left = 0, height = 0, width = 0;
};

// Per-channel normalization: x = (v / 255 - mean) / std.
struct Normalize {
  std::array<double, 3> mean{0.485, 0.456, 0.406};  // ImageNet's
  std::array<double, 3> std{0.229, 0.224, 0.225};
};

// Resamples `box` of `image` to (3, out_h, out_w) f32 at `out`, mirrored left-right when
// `flip`, normalized: a separable triangle (bilinear) filter whose support widens with the
// scale when shrinking, so downscaling averages rather than skips pixels (as PIL's bilinear).
void resample(const RgbImage& image, const CropBox& box, int64_t out_h, int64_t out_w, bool flip,
              const Normalize& normalize, float* out);

// The same filter over float planes: x (C,H,W) -> y (C,out_h,out_w), `box` of each plane
// resampled, mirrored when `flip`, with no normalization (the weights are non-negative and sum
// to 1, so it commutes with any per-channel affine one). Pixels outside x repeat its edge.
void resample_planes(const float* x, int64_t C, int64_t H, int64_t W, const CropBox& box,
                     int64_t out_h, int64_t out_w, bool flip, float* y);

}  // namespace frugal
