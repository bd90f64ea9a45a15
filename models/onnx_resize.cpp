// ONNX's nearest Resize as source indices per axis (models/onnx_resize.h).
#include "models/onnx_resize.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace frugal {

std::vector<int64_t> nearest_indices(int64_t in, int64_t out, double scale,
                                     ResizeCoordinates coordinates, NearestMode mode) {
  // (A size beyond 2^20, as resize_bilinear refuses too, is an error before any allocation.)
  FRUGAL_CHECK(in >= 1 && out >= 1 && out <= (int64_t{1} << 20), "nearest resize from ", in, " to ",
               out, ": sizes must be 1 to 2^20");
  const auto x_in = static_cast<double>(in), x_out = static_cast<double>(out);
  // x / scale, exactly where the scale is a ratio of sizes (a whole source coordinate stays
  // whole, so floor and the rounding ties fall where ONNX's do).
  auto unscale = [&](double x) { return scale > 0 ? x / scale : x * x_in / x_out; };
  std::vector<int64_t> index(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    const auto x = static_cast<double>(i);
    double source = 0;
    switch (coordinates) {
      case ResizeCoordinates::half_pixel:
        source = unscale(x + 0.5) - 0.5;
        break;
      case ResizeCoordinates::pytorch_half_pixel:
        source = out > 1 ? unscale(x + 0.5) - 0.5 : 0;
        break;
      case ResizeCoordinates::align_corners:
        source = out > 1 ? x * (x_in - 1) / (x_out - 1) : 0;
        break;
      case ResizeCoordinates::asymmetric:
        source = unscale(x);
        break;
    }
    const double below = std::floor(source);
    const bool tie = source - below == 0.5;
    double k = 0;
    switch (mode) {
      case NearestMode::round_prefer_floor:
        k = tie ? below : std::round(source);
        break;
      case NearestMode::round_prefer_ceil:
        k = tie ? below + 1 : std::round(source);
        break;
      case NearestMode::floor:
        k = below;
        break;
      case NearestMode::ceil:
        k = std::ceil(source);
        break;
    }
    index[static_cast<size_t>(i)] = static_cast<int64_t>(std::clamp(k, 0.0, x_in - 1));
  }
  return index;
}

}  // namespace frugal
