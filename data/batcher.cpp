// Batcher: per-epoch seeded shuffling and the one copy of each batch into executor inputs.
#include "data/batcher.h"

#include <cstring>
#include <numeric>
#include <utility>

#include "core/error.h"
#include "core/rng.h"

namespace frugal {

Batcher::Batcher(const Dataset& data, bool shuffle, uint64_t seed)
    : data_(data), shuffle_(shuffle), seed_(seed), order_(static_cast<size_t>(data.size())) {
  std::iota(order_.begin(), order_.end(), int64_t{0});
}

void Batcher::start_epoch(int epoch) {
  std::iota(order_.begin(), order_.end(), int64_t{0});
  if (!shuffle_) return;
  Rng rng(seed_, static_cast<uint64_t>(epoch));
  for (size_t i = order_.size(); i > 1; --i)
    std::swap(order_[i - 1], order_[static_cast<size_t>(rng.below(i))]);
}

// images (N,C,H,W) f32 -> x (B,C,H,W);  labels (N) i32 -> y (B)
void Batcher::copy(int64_t first, Tensor& images, Tensor& labels) const {
  const Shape& s = data_.images.shape();
  const int64_t B = images.shape()[0];
  Shape want = s;
  want[0] = B;
  FRUGAL_CHECK(images.shape() == want && images.dtype() == DType::f32, "batcher: input ",
               images.shape(), " ", dtype_name(images.dtype()), ", expected ", want, " f32");
  FRUGAL_CHECK(labels.shape() == Shape{B} && labels.dtype() == DType::i32, "batcher: labels ",
               labels.shape(), " ", dtype_name(labels.dtype()), ", expected ", Shape{B}, " i32");
  FRUGAL_CHECK(first >= 0 && first + B <= size(), "batcher: batch [", first, ", ", first + B,
               ") outside the data set of ", size());
  const size_t sample = static_cast<size_t>(s.numel() / s[0]);
  const float* x = data_.images.data<float>();
  const int32_t* l = data_.labels.data<int32_t>();
  float* y = images.data<float>();
  int32_t* t = labels.data<int32_t>();
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = order_[static_cast<size_t>(first + b)];
    std::memcpy(y + b * sample, x + n * sample, sample * sizeof(float));
    t[b] = l[n];
  }
}

}  // namespace frugal
