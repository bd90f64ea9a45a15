// Batcher: per-epoch seeded shuffling and the one copy of each batch into executor inputs,
// a plain memcpy per sample unless the image needs a frame, channels or augmentation.
#include "data/batcher.h"

#include <cstring>
#include <numeric>
#include <utility>

#include "core/error.h"
#include "core/rng.h"

namespace frugal {

Batcher::Batcher(const Dataset& data, bool shuffle, uint64_t seed)
    : Batcher(data, BatcherOptions{.shuffle = shuffle, .seed = seed}) {}

Batcher::Batcher(const Dataset& data, const BatcherOptions& options)
    : data_(data), options_(options), order_(static_cast<size_t>(data.size())) {
  std::iota(order_.begin(), order_.end(), int64_t{0});
}

void Batcher::start_epoch(int epoch) {
  epoch_ = epoch;
  std::iota(order_.begin(), order_.end(), int64_t{0});
  if (!options_.shuffle) return;
  Rng rng(options_.seed, static_cast<uint64_t>(epoch));
  for (size_t i = order_.size(); i > 1; --i)
    std::swap(order_[i - 1], order_[static_cast<size_t>(rng.below(i))]);
}

bool image_fits(const Shape& s, const Shape& in) {
  if (s.rank() != 3 || in.rank() != 3) return false;
  return (in[0] == s[0] || s[0] == 1) && in[1] >= s[1] && in[2] >= s[2] &&
         (in[1] - s[1]) % 2 == 0 && (in[2] - s[2]) % 2 == 0;
}

// images (N,C,H,W) f32 -> x (B,K,P,Q);  labels (N) i32 -> y (B)
void Batcher::copy(int64_t first, Tensor& images, Tensor& labels) const {
  const Shape& s = data_.images.shape();
  const int64_t B = images.shape()[0];
  Shape want = s;
  want[0] = B;
  const Shape& in = images.shape();
  const bool fits = in.rank() == 4 && images.dtype() == DType::f32 &&
                    image_fits({s[1], s[2], s[3]}, {in[1], in[2], in[3]});
  FRUGAL_CHECK(fits, "batcher: input ", images.shape(), " ", dtype_name(images.dtype()),
               ", expected ", want, " f32");
  FRUGAL_CHECK(labels.shape() == Shape{B} && labels.dtype() == DType::i32, "batcher: labels ",
               labels.shape(), " ", dtype_name(labels.dtype()), ", expected ", Shape{B}, " i32");
  FRUGAL_CHECK(first >= 0 && first + B <= size(), "batcher: batch [", first, ", ", first + B,
               ") outside the data set of ", size());
  const int64_t C = s[1], H = s[2], W = s[3], K = in[1], P = in[2], Q = in[3];
  const Augment& a = options_.augment;
  const bool plain = in == want && a.crop_pad == 0 && !a.flip;
  const float* x = data_.images.data<float>();
  const int32_t* l = data_.labels.data<int32_t>();
  float* y = images.data<float>();
  int32_t* t = labels.data<int32_t>();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = order_[static_cast<size_t>(first + b)];
    t[b] = l[n];
    if (plain) {
      std::memcpy(y + b * C * H * W, x + n * C * H * W, static_cast<size_t>(C * H * W) * 4);
    } else {
      const AugmentDraw d = draw_augment(a, options_.seed, epoch_, n);
      place_image(x + n * C * H * W, C, H, W, y + b * K * P * Q, K, P, Q, data_.background, d);
    }
  }
}

const Tensor& Batcher::copy(Backend& be, int64_t first, Tensor& images, Tensor& labels) {
  auto host = [](Tensor& t, Tensor& staging) -> Tensor& {
    if (t.device().is_host()) return t;
    if (!staging.defined() || staging.meta() != t.meta())
      staging = Tensor::empty(t.shape(), t.dtype());
    return staging;
  };
  Tensor& x = host(images, staged_images_);
  Tensor& y = host(labels, staged_labels_);
  copy(first, x, y);
  if (&x != &images) be.copy_to_device(x, images);
  if (&y != &labels) be.copy_to_device(y, labels);
  return y;
}

}  // namespace frugal
