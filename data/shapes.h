// The synthetic segmentation task of `frugal segment`: images of filled shapes (rectangles,
// discs, triangles) over a noisy background of another colour, each pixel labelled with the
// class of the shape drawn over it last (0: background). The classes differ in form, not in
// colour (every shape takes a random colour), so a network must see a shape's outline to label
// its pixels. A function of (N, channels, side, seed) alone.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace frugal {

constexpr int64_t kShapeClasses = 4;  // background, rectangle, disc, triangle

struct SegmentationSet {
  Tensor images;  // (N, C, S, S) f32, values within about [-2, 2]
  Tensor labels;  // (N, S, S) i32 in [0, kShapeClasses)
};

// N images of `channels` x side x side (side 8 to 4096), each with 1 to 3 shapes of radius
// side/8 to side/4.
SegmentationSet shapes_dataset(int64_t N, int64_t channels, int64_t side, uint64_t seed);

// Intersection over union per class, accumulated over batches: the predicted class of a pixel
// is its largest logit (the first on ties).
class IouMeter {
 public:
  explicit IouMeter(int64_t classes);
  // logits (B, K, H, W) f32 in host memory, K >= classes (the first `classes` are read), and
  // labels (B, H, W) i32; the first `rows` samples count.
  void add(const Tensor& logits, const Tensor& labels, int64_t rows);
  // IoU of each class (NaN where the class is neither predicted nor labelled).
  std::vector<double> per_class() const;
  // Mean over the classes that occur (in labels or predictions).
  double mean() const;
  double pixel_accuracy() const;

 private:
  int64_t classes_;
  std::vector<int64_t> inter_, pred_, label_;
  int64_t correct_ = 0, pixels_ = 0;
};

}  // namespace frugal
