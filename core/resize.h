// Bilinear resizing (ONNX's Resize in linear mode, PyTorch's interpolate(mode="bilinear")):
// where each output row or column reads the input, one function shared by the CPU and CUDA
// kernels so both read the same two neighbours with the same weights.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define FRUGAL_RESIZE_HD __host__ __device__
#else
#define FRUGAL_RESIZE_HD
#endif

namespace frugal {

// ONNX's coordinate_transformation_mode (PyTorch: align_corners=False exports
// pytorch_half_pixel, align_corners=True align_corners).
enum class ResizeCoordinates { half_pixel, pytorch_half_pixel, align_corners, asymmetric };

struct ResizeGeometry {
  int64_t N = 0, C = 0, H = 0, W = 0;  // input
  int64_t P = 0, Q = 0;                // output
  ResizeCoordinates mode = ResizeCoordinates::half_pixel;
  double scale_h = 1, scale_w = 1;  // output / input, as given (scales) or P / H, Q / W (sizes)
};

// Output index o of `out` reads input i0 with weight 1 - l1 and i1 with weight l1.
struct ResizeTap {
  int64_t i0, i1;
  double l1;
};

FRUGAL_RESIZE_HD inline ResizeTap resize_tap(int64_t o, int64_t in, int64_t out, double scale,
                                             ResizeCoordinates mode) {
  double x = 0;
  switch (mode) {
    case ResizeCoordinates::half_pixel:
      x = (static_cast<double>(o) + 0.5) / scale - 0.5;
      break;
    case ResizeCoordinates::pytorch_half_pixel:
      x = out > 1 ? (static_cast<double>(o) + 0.5) / scale - 0.5 : 0.0;
      break;
    case ResizeCoordinates::align_corners:
      x = out > 1
              ? static_cast<double>(o) * static_cast<double>(in - 1) / static_cast<double>(out - 1)
              : 0.0;
      break;
    case ResizeCoordinates::asymmetric:
      x = static_cast<double>(o) / scale;
      break;
  }
  if (x < 0) x = 0;  // before the first pixel: its value (PyTorch clamps; ONNX pads the edge)
  int64_t i0 = static_cast<int64_t>(floor(x));
  if (i0 > in - 1) i0 = in - 1;
  const int64_t i1 = i0 + 1 < in ? i0 + 1 : in - 1;
  double l1 = x - static_cast<double>(i0);
  if (l1 > 1) l1 = 1;
  return {i0, i1, l1};
}

}  // namespace frugal
