// Synthetic data from the counter-based RNG: sample n's pixels and label depend only on
// (seed, n), so a data set of any size replays exactly.
#include "data/synthetic.h"

#include "core/error.h"
#include "core/rng.h"

namespace frugal {

Dataset synthetic_dataset(const Shape& sample, int64_t N, int64_t classes, uint64_t seed) {
  FRUGAL_CHECK(sample.rank() == 3 && N > 0 && classes > 0, "synthetic data: sample ", sample, ", ",
               N, " samples and ", classes, " classes: expected (C,H,W), N > 0, classes > 0");
  Dataset d;
  d.images = Tensor::empty({N, sample[0], sample[1], sample[2]}, DType::f32);
  d.labels = Tensor::empty({N}, DType::i32);
  d.background = std::vector<float>(static_cast<size_t>(sample[0]), 0.0f);
  d.classes = classes;
  d.name = "synthetic";
  const int64_t S = sample.numel();
  float* x = d.images.data<float>();
  int32_t* y = d.labels.data<int32_t>();
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    Rng rng(seed, 0x5e000000u + static_cast<uint64_t>(n));
    y[n] = static_cast<int32_t>(rng.below(static_cast<uint64_t>(classes)));
    for (int64_t i = 0; i < S; ++i) x[n * S + i] = static_cast<float>(rng.normal());
  }
  return d;
}

}  // namespace frugal
