// The data a training run reads, chosen by `--data`: Fashion-MNIST's IDX files (the default
// directory, or any directory holding them), CIFAR-10's binary files, an image folder
// (train/<class>/, val/<class>/: data/image_folder.h), or "synthetic" random images of the
// model's input size. Checks that the images fit the model's input.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/idx.h"
#include "models/registry.h"

namespace frugal {

struct TrainData {
  Dataset train, test;
  std::vector<std::string> class_names;  // an image folder's, in label order; else empty
  std::vector<std::string> skipped;      // files an image folder's scan left out (skip_bad)
};

// How images are read: an image folder's decoding, and (`resize`) how held data sets meet a
// larger or smaller input.
struct FolderOptions {
  int64_t image_size = 0;        // the input's side (0: the model's)
  int workers = 0;               // decode threads (0: the machine's cores)
  bool skip_bad = false;         // leave out badly named files; replace files that fail to decode
  bool augment = true;           // training: random resized crops and flips (else as evaluation)
  double crop_fraction = 0.875;  // evaluation's centre crop (ImageTransform)
  // IDX, CIFAR-10 and synthetic data: resample each image to fill the input (Dataset::resize)
  // rather than centre it in a frame; image folders always resample.
  bool resize = false;
};

// `model` with its input resized to image_size x image_size (0: as it is). Throws unless the
// model takes 3-channel square images.
ModelSpec model_at_size(const ModelSpec& model, int64_t image_size);

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
                  const SyntheticSizes& synthetic = {}, uint64_t seed = 1,
                  const FolderOptions& folder = {});
// Both sets.
TrainData load_train_data(const std::string& data, const ModelSpec& model,
                          const SyntheticSizes& synthetic = {}, uint64_t seed = 1,
                          const FolderOptions& folder = {});

}  // namespace frugal
