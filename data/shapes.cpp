// Drawing the synthetic shapes and counting IoU.
#include "data/shapes.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/rng.h"

namespace frugal {

SegmentationSet shapes_dataset(int64_t N, int64_t channels, int64_t side, uint64_t seed) {
  FRUGAL_CHECK(N >= 1 && channels >= 1 && channels <= 64 && side >= 8 && side <= 4096,
               "shapes: ", N, " images of ", channels, " x ", side, " x ", side,
               " (need N >= 1, 1..64 channels, sides 8..4096)");
  SegmentationSet s{Tensor::empty({N, channels, side, side}, DType::f32),
                    Tensor::empty({N, side, side}, DType::i32)};
  const int64_t plane = side * side;
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    Rng rng(seed, static_cast<uint64_t>(n));
    float* img = s.images.data<float>() + n * channels * plane;
    int32_t* lab = s.labels.data<int32_t>() + n * plane;
    std::vector<float> bg(static_cast<size_t>(channels));
    for (float& b : bg) b = static_cast<float>(rng.uniform() - 0.5);
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t i = 0; i < plane; ++i)
        img[c * plane + i] = bg[static_cast<size_t>(c)] + static_cast<float>(0.2 * rng.normal());
    std::fill(lab, lab + plane, 0);
    const int64_t shapes = 1 + static_cast<int64_t>(rng.below(3));
    for (int64_t k = 0; k < shapes; ++k) {
      const auto cls = static_cast<int32_t>(1 + rng.below(3));
      const double r = side / 8.0 + rng.uniform() * (side / 4.0 - side / 8.0);
      const double cx = r + rng.uniform() * (side - 2 * r), cy = r + rng.uniform() * (side - 2 * r);
      const double a = r * (0.6 + 0.4 * rng.uniform()), b = r * (0.6 + 0.4 * rng.uniform());
      std::vector<float> colour(static_cast<size_t>(channels));
      for (int64_t c = 0; c < channels; ++c)  // at least 0.5 away from the background
        colour[static_cast<size_t>(c)] =
            bg[static_cast<size_t>(c)] +
            static_cast<float>((rng.uniform() < 0.5 ? -1 : 1) * (0.5 + 0.5 * rng.uniform()));
      for (int64_t y = 0; y < side; ++y)
        for (int64_t x = 0; x < side; ++x) {
          const double dx = x + 0.5 - cx, dy = y + 0.5 - cy;
          const bool inside = cls == 1   ? std::abs(dx) <= a && std::abs(dy) <= b
                              : cls == 2 ? dx * dx + dy * dy <= r * r
                                         : dy >= -r && dy <= r && std::abs(dx) <= (dy + r) / 2;
          if (!inside) continue;
          lab[y * side + x] = cls;
          for (int64_t c = 0; c < channels; ++c)
            img[c * plane + y * side + x] =
                colour[static_cast<size_t>(c)] + static_cast<float>(0.2 * rng.normal());
        }
    }
  }
  return s;
}

IouMeter::IouMeter(int64_t classes)
    : classes_(classes),
      inter_(static_cast<size_t>(classes)),
      pred_(static_cast<size_t>(classes)),
      label_(static_cast<size_t>(classes)) {
  FRUGAL_CHECK(classes >= 1, "iou: ", classes, " classes");
}

void IouMeter::add(const Tensor& logits, const Tensor& labels, int64_t rows) {
  const Shape& x = logits.shape();
  FRUGAL_CHECK(logits.dtype() == DType::f32 && labels.dtype() == DType::i32 && x.rank() == 4 &&
                   x[1] >= classes_ && labels.shape() == Shape({x[0], x[2], x[3]}) && rows <= x[0],
               "iou: logits ", x, " and labels ", labels.shape(), ", expected (B,K>=", classes_,
               ",H,W) f32 and (B,H,W) i32");
  const int64_t K = x[1], plane = x[2] * x[3];
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t i = 0; i < plane; ++i) {
      const float* l = logits.data<float>() + n * K * plane + i;
      int64_t best = 0;
      for (int64_t k = 1; k < classes_; ++k)
        if (l[k * plane] > l[best * plane]) best = k;
      const int32_t want = labels.data<int32_t>()[n * plane + i];
      FRUGAL_CHECK(want >= 0 && want < classes_, "iou: label ", want, " outside [0, ", classes_,
                   ")");
      ++pred_[static_cast<size_t>(best)];
      ++label_[static_cast<size_t>(want)];
      if (best == want) ++inter_[static_cast<size_t>(best)], ++correct_;
      ++pixels_;
    }
}

std::vector<double> IouMeter::per_class() const {
  std::vector<double> iou;
  for (size_t k = 0; k < inter_.size(); ++k) {
    const int64_t uni = pred_[k] + label_[k] - inter_[k];
    iou.push_back(uni > 0 ? double(inter_[k]) / double(uni) : NAN);
  }
  return iou;
}

double IouMeter::mean() const {
  double sum = 0;
  int n = 0;
  for (double v : per_class())
    if (!std::isnan(v)) sum += v, ++n;
  return n > 0 ? sum / n : 0.0;
}

double IouMeter::pixel_accuracy() const {
  return pixels_ > 0 ? double(correct_) / double(pixels_) : 0.0;
}

}  // namespace frugal
