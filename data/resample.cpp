// The bilinear (triangle) resampler of data/resample.h: per-axis taps, then rows filtered
// horizontally and columns vertically.
#include "data/resample.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

namespace frugal {

namespace {

// For one output axis of `out` samples over [start, start + length) of a source axis of `n`
// pixels: each output's first source pixel and weights (triangle filter, support widened by
// the scale when shrinking; edge pixels repeat).
struct Taps {
  std::vector<int64_t> first;
  std::vector<int64_t> count;
  std::vector<float> weights;  // per output, `width` entries
  int64_t width = 0;
};

Taps taps(double start, double length, int64_t n, int64_t out) {
  const double scale = length / static_cast<double>(out);
  const double support = std::max(1.0, scale);
  Taps t;
  t.width = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  t.first.resize(static_cast<size_t>(out));
  t.count.resize(static_cast<size_t>(out));
  t.weights.assign(static_cast<size_t>(out * t.width), 0.0f);
  for (int64_t o = 0; o < out; ++o) {
    const double center = start + (static_cast<double>(o) + 0.5) * scale;
    const int64_t lo = static_cast<int64_t>(std::floor(center - support));
    const int64_t hi = static_cast<int64_t>(std::ceil(center + support));
    std::vector<double> w;
    double sum = 0;
    for (int64_t j = lo; j <= hi && static_cast<int64_t>(w.size()) < t.width; ++j) {
      const double d = std::abs(static_cast<double>(j) + 0.5 - center) / support;
      const double v = d < 1 ? 1 - d : 0;
      w.push_back(v);
      sum += v;
    }
    t.first[static_cast<size_t>(o)] = lo;
    t.count[static_cast<size_t>(o)] = static_cast<int64_t>(w.size());
    for (size_t k = 0; k < w.size(); ++k)
      t.weights[static_cast<size_t>(o * t.width) + k] =
          static_cast<float>(sum > 0 ? w[k] / sum : (k == 0 ? 1.0 : 0.0));
    (void)n;
  }
  return t;
}

int64_t clamp_index(int64_t j, int64_t n) {
  return std::min(std::max(j, int64_t{0}), n - 1);
}

}  // namespace

void resample(const RgbImage& image, const CropBox& box, int64_t out_h, int64_t out_w, bool flip,
              const Normalize& nz, float* out) {
  FRUGAL_CHECK(image.height > 0 && image.width > 0 && out_h > 0 && out_w > 0 && box.height > 0 &&
                   box.width > 0,
               "resample: image ", image.width, "x", image.height, ", box ", box.width, "x",
               box.height, ", output ", out_w, "x", out_h);
  const Taps ty = taps(box.top, box.height, image.height, out_h);
  const Taps tx = taps(box.left, box.width, image.width, out_w);
  // The source rows any output row reads, filtered horizontally first.
  const int64_t row0 = clamp_index(ty.first.front(), image.height);
  const int64_t row1 =
      clamp_index(ty.first.back() + ty.count.back() - 1, image.height);  // inclusive
  const int64_t rows = row1 - row0 + 1;
  std::vector<float> mid(static_cast<size_t>(rows * out_w * 3));
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* src = image.rgb.data() + (r + row0) * image.width * 3;
    float* dst = mid.data() + r * out_w * 3;
    for (int64_t x = 0; x < out_w; ++x) {
      float acc[3] = {0, 0, 0};
      const float* w = tx.weights.data() + x * tx.width;
      for (int64_t k = 0; k < tx.count[static_cast<size_t>(x)]; ++k) {
        const int64_t j = clamp_index(tx.first[static_cast<size_t>(x)] + k, image.width);
        for (int c = 0; c < 3; ++c) acc[c] += w[k] * src[j * 3 + c];
      }
      for (int c = 0; c < 3; ++c) dst[x * 3 + c] = acc[c];
    }
  }
  float scale[3], shift[3];
  for (int c = 0; c < 3; ++c) {
    scale[c] = static_cast<float>(1.0 / (255.0 * nz.std[static_cast<size_t>(c)]));
    shift[c] = static_cast<float>(nz.mean[static_cast<size_t>(c)] / nz.std[static_cast<size_t>(c)]);
  }
  for (int64_t y = 0; y < out_h; ++y) {
    const float* w = ty.weights.data() + y * ty.width;
    for (int64_t x = 0; x < out_w; ++x) {
      float acc[3] = {0, 0, 0};
      for (int64_t k = 0; k < ty.count[static_cast<size_t>(y)]; ++k) {
        const int64_t r = clamp_index(ty.first[static_cast<size_t>(y)] + k, image.height) - row0;
        for (int c = 0; c < 3; ++c)
          acc[c] += w[k] * mid[static_cast<size_t>((r * out_w + x) * 3 + c)];
      }
      const int64_t ox = flip ? out_w - 1 - x : x;
      for (int c = 0; c < 3; ++c)
        out[(c * out_h + y) * out_w + ox] = std::clamp(acc[c], 0.0f, 255.0f) * scale[c] - shift[c];
    }
  }
}

void resample_planes(const float* x, int64_t C, int64_t H, int64_t W, const CropBox& box,
                     int64_t out_h, int64_t out_w, bool flip, float* y) {
  FRUGAL_CHECK(C > 0 && H > 0 && W > 0 && out_h > 0 && out_w > 0 && box.height > 0 && box.width > 0,
               "resample: planes ", C, "x", H, "x", W, ", box ", box.width, "x", box.height,
               ", output ", out_w, "x", out_h);
  const Taps ty = taps(box.top, box.height, H, out_h);
  const Taps tx = taps(box.left, box.width, W, out_w);
  std::vector<float> mid(static_cast<size_t>(H * out_w));  // rows filtered horizontally
  for (int64_t c = 0; c < C; ++c) {
    const float* xc = x + c * H * W;
    for (int64_t r = 0; r < H; ++r)
      for (int64_t o = 0; o < out_w; ++o) {
        float acc = 0;
        const float* w = tx.weights.data() + o * tx.width;
        for (int64_t k = 0; k < tx.count[static_cast<size_t>(o)]; ++k)
          acc += w[k] * xc[r * W + clamp_index(tx.first[static_cast<size_t>(o)] + k, W)];
        mid[static_cast<size_t>(r * out_w + o)] = acc;
      }
    float* yc = y + c * out_h * out_w;
    for (int64_t o = 0; o < out_h; ++o) {
      const float* w = ty.weights.data() + o * ty.width;
      for (int64_t q = 0; q < out_w; ++q) {
        float acc = 0;
        for (int64_t k = 0; k < ty.count[static_cast<size_t>(o)]; ++k)
          acc += w[k] * mid[static_cast<size_t>(
                            clamp_index(ty.first[static_cast<size_t>(o)] + k, H) * out_w + q)];
        yc[o * out_w + (flip ? out_w - 1 - q : q)] = acc;
      }
    }
  }
}

}  // namespace frugal
