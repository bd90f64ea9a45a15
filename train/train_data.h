// The data a training run reads, chosen by `--data`: Fashion-MNIST's IDX files (the default
// directory, or any directory holding them), CIFAR-10's binary files, or "synthetic" random
// images of the model's input size. Checks that the images fit the model's input.
#pragma once

#include <cstdint>
#include <string>

#include "data/idx.h"
#include "models/registry.h"

namespace frugal {

struct TrainData {
  Dataset train, test;
};

// Sizes of the synthetic sets: `train` and `test` samples of the model's input shape, with
// labels over the model's default classes.
struct SyntheticSizes {
  int64_t train = 256, test = 64;
};

// Loads the training or test set of `data` ("synthetic", a CIFAR-10 directory, else a
// Fashion-MNIST directory) for `model`; throws naming the file at fault, or when the images
// do not fit the model's input (Fashion-MNIST's 1x28x28 fit 3x32x32 nets: centred and
// replicated to three channels).
Dataset load_data(const std::string& data, const ModelSpec& model, bool train,
                  const SyntheticSizes& synthetic = {}, uint64_t seed = 1);
// Both sets.
TrainData load_train_data(const std::string& data, const ModelSpec& model,
                          const SyntheticSizes& synthetic = {}, uint64_t seed = 1);

}  // namespace frugal
