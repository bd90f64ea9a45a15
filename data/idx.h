// IDX files (the MNIST family's format: big-endian header, then unsigned bytes), plain or
// gzip-compressed, read into host tensors: images (N,1,H,W) f32 normalized, labels (N) i32.
// Every error names the file and what was wrong with it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace frugal {

// Debian's dataset-fashion-mnist installs the four .gz files here.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
// Mean and standard deviation of Fashion-MNIST's training pixels, scaled to [0,1].
inline constexpr double kFashionMnistMean = 0.2860;
inline constexpr double kFashionMnistStd = 0.3530;

struct ImageOptions {
  double mean = 0.0, std = 1.0;   // x = (pixel / 255 - mean) / std
  int pad = 0;                    // border of background (pixel 0) on each side: 28 + 2*2 = 32
  int64_t height = 0, width = 0;  // expected image size before padding; 0 accepts any
};

// A byte's normalized value per channel: table[c][v] for pixel value v of channel c.
using PixelTable = std::array<float, 256>;

struct ImageSource;  // data/image_folder.h

struct Dataset {
  // The images, held one of two ways: as the files' bytes, `pixels` (N,C,H,W) u8 with `tables`
  // (one per channel) turning each byte into its normalized float as a batch is copied (a
  // quarter of the memory of floats); or as floats, `images` (N,C,H,W) f32 normalized
  // (synthetic data). Exactly one of the two is defined, unless `source` is: image files
  // decoded as batches are drawn (data/image_folder.h).
  Tensor images;
  Tensor pixels;
  std::shared_ptr<const ImageSource> source;
  std::vector<PixelTable> tables = {};
  Tensor labels;                       // (N) i32, in [0, classes)
  std::vector<float> background = {};  // per channel: a black pixel normalized (padding)
  int64_t classes = 10;
  std::string name = "";  // "fashion-mnist", "cifar10", "synthetic": for messages
  std::vector<std::string> class_names = {};  // by label, where known (image folders)
  // How a sample smaller than the model's input is placed (held images only): centred in a
  // frame of `background` (false), or resampled to fill the input by the image folders'
  // bilinear filter (true), e.g. Fashion-MNIST at 64 x 64 as its JPEG files are read.
  bool resize = false;
  int64_t size() const { return labels.defined() ? labels.shape()[0] : 0; }
  // One image's shape (C,H,W).
  Shape sample_shape() const;
  // The images as normalized floats (N,C,H,W): `images`, or `pixels` through the tables.
  Tensor float_images() const;
};

// Reads an IDX file of rank 3 (N,H,W) unsigned bytes as pixels (N,1,H+2 pad,W+2 pad) u8, the
// border 0; ".gz" files are decompressed. options.mean and std are not used here.
Tensor read_idx_pixels(const std::string& path, const ImageOptions& options = {});
// The table of x = (v / 255 - mean) / std.
PixelTable pixel_table(double mean, double std);

// Reads an IDX file of rank 3 (N,H,W) unsigned bytes; ".gz" files are decompressed.
Tensor read_idx_images(const std::string& path, const ImageOptions& options = {});
// Reads an IDX file of rank 1 (N) unsigned bytes; every label must lie in 0..classes-1.
Tensor read_idx_labels(const std::string& path, int classes = 10);
// Images and labels from two files whose counts must match.
Dataset load_idx(const std::string& images_path, const std::string& labels_path,
                 const ImageOptions& options = {}, int classes = 10);

// Fashion-MNIST's training (60000) or test (10000) set from `dir`, which holds
// {train,t10k}-{images-idx3,labels-idx1}-ubyte, each plain or .gz. Images are 28x28
// normalized with the data set's mean and std, plus `pad` pixels of border on each side.
Dataset load_fashion_mnist(const std::string& dir = kFashionMnistDir, bool train = true,
                           int pad = 0);

}  // namespace frugal
