// Resizing (ONNX's Resize in linear and cubic modes, PyTorch's interpolate(mode="bilinear")
// and interpolate(mode="bicubic")): where each output row or column reads the input, one
// function per method shared by the CPU and CUDA kernels so both read the same neighbours with
// the same weights.
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

// Bilinear (two by two neighbours) or bicubic (four by four, Keys' kernel with coefficient
// cubic_a: PyTorch's -0.75, TensorFlow's -0.5).
enum class ResizeMethod { linear, cubic };

struct ResizeGeometry {
  int64_t N = 0, C = 0, H = 0, W = 0;  // input
  int64_t P = 0, Q = 0;                // output
  ResizeCoordinates mode = ResizeCoordinates::half_pixel;
  double scale_h = 1, scale_w = 1;  // output / input, as given (scales) or P / H, Q / W (sizes)
  ResizeMethod method = ResizeMethod::linear;
  double cubic_a = -0.75;
};

// The input coordinate output index o stands at (ONNX's coordinate_transformation_mode).
FRUGAL_RESIZE_HD inline double resize_source(int64_t o, int64_t in, int64_t out, double scale,
                                             ResizeCoordinates mode) {
  switch (mode) {
    case ResizeCoordinates::half_pixel:
      return (static_cast<double>(o) + 0.5) / scale - 0.5;
    case ResizeCoordinates::pytorch_half_pixel:
      return out > 1 ? (static_cast<double>(o) + 0.5) / scale - 0.5 : 0.0;
    case ResizeCoordinates::align_corners:
      return out > 1 ? static_cast<double>(o) * static_cast<double>(in - 1) /
                           static_cast<double>(out - 1)
                     : 0.0;
    case ResizeCoordinates::asymmetric:
      return static_cast<double>(o) / scale;
  }
  return 0.0;
}

// Output index o of `out` reads input i0 with weight 1 - l1 and i1 with weight l1.
struct ResizeTap {
  int64_t i0, i1;
  double l1;
};

FRUGAL_RESIZE_HD inline ResizeTap resize_tap(int64_t o, int64_t in, int64_t out, double scale,
                                             ResizeCoordinates mode) {
  double x = resize_source(o, in, out, scale, mode);
  if (x < 0) x = 0;  // before the first pixel: its value (PyTorch clamps; ONNX pads the edge)
  int64_t i0 = static_cast<int64_t>(floor(x));
  if (i0 > in - 1) i0 = in - 1;
  const int64_t i1 = i0 + 1 < in ? i0 + 1 : in - 1;
  double l1 = x - static_cast<double>(i0);
  if (l1 > 1) l1 = 1;
  return {i0, i1, l1};
}

// Output index o of `out` reads inputs i[0..3] (floor(x) - 1 to floor(x) + 2, each clamped to
// the input: ONNX pads the edge, PyTorch clamps) with weights w[0..3], Keys' cubic kernel at
// distances 1 + t, t, 1 - t and 2 - t (t = x - floor(x); the coordinate is not clamped, as
// neither ONNX nor PyTorch clamps it in cubic mode).
struct ResizeCubicTap {
  int64_t i[4];
  double w[4];
};

FRUGAL_RESIZE_HD inline ResizeCubicTap resize_cubic_tap(int64_t o, int64_t in, int64_t out,
                                                        double scale, ResizeCoordinates mode,
                                                        double a) {
  const double x = resize_source(o, in, out, scale, mode);
  const double f = floor(x), t = x - f;
  // |d| <= 1: (a + 2)|d|^3 - (a + 3)|d|^2 + 1; 1 < |d| < 2: a|d|^3 - 5a|d|^2 + 8a|d| - 4a
  auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };
  auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };
  ResizeCubicTap c{};
  c.w[0] = far(t + 1);
  c.w[1] = near(t);
  c.w[2] = near(1 - t);
  c.w[3] = far(2 - t);
  const double from = f < -2 ? -2 : f > static_cast<double>(in) ? static_cast<double>(in) : f;
  const int64_t first = static_cast<int64_t>(from) - 1;
  for (int k = 0; k < 4; ++k) {
    const int64_t i = first + k;
    c.i[k] = i < 0 ? 0 : i > in - 1 ? in - 1 : i;
  }
  return c;
}

// The output at taps r (rows) and c (columns) of an input plane W wide: along each of the four
// rows first, then down the column of those four (PyTorch's order).
template <typename T>
FRUGAL_RESIZE_HD inline T resize_cubic_value(const T* plane, int64_t W, const ResizeCubicTap& r,
                                             const ResizeCubicTap& c) {
  T sum = T(0);
  for (int k = 0; k < 4; ++k) {
    const T* row = plane + r.i[k] * W;
    const T along = static_cast<T>(c.w[0]) * row[c.i[0]] + static_cast<T>(c.w[1]) * row[c.i[1]] +
                    static_cast<T>(c.w[2]) * row[c.i[2]] + static_cast<T>(c.w[3]) * row[c.i[3]];
    sum += static_cast<T>(r.w[k]) * along;
  }
  return sum;
}

// Backward of one output: d added into the sixteen inputs it read, row by row.
template <typename T>
FRUGAL_RESIZE_HD inline void resize_cubic_add(T* plane, int64_t W, const ResizeCubicTap& r,
                                              const ResizeCubicTap& c, T d) {
  for (int k = 0; k < 4; ++k) {
    T* row = plane + r.i[k] * W;
    const T dr = static_cast<T>(r.w[k]) * d;
    for (int j = 0; j < 4; ++j) row[c.i[j]] += static_cast<T>(c.w[j]) * dr;
  }
}

}  // namespace frugal
