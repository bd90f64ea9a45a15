// Synthetic data: random normal images of a model's input size with random labels, for
// speed and memory checks of networks whose data set is not at hand (ImageNet's 3x224x224).
#pragma once

#include <cstdint>

#include "data/idx.h"

namespace frugal {

// N samples of shape `sample` (C,H,W), pixels standard normal, labels uniform in
// [0, classes); a function of (seed, N, shape) alone.
Dataset synthetic_dataset(const Shape& sample, int64_t N, int64_t classes, uint64_t seed);

}  // namespace frugal
