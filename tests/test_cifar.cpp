// CIFAR-10 binary files, image placement and augmentation, synthetic data: values read from
// small generated files, hand-computed placements, seeded draws that replay, and errors that
// name the file (missing, empty, truncated, bad label).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "data/augment.h"
#include "data/batcher.h"
#include "data/cifar.h"
#include "data/synthetic.h"
#include "models/registry.h"
#include "tests/temp_dir.h"
#include "train/train_data.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

using Bytes = std::vector<unsigned char>;

// Record r: label labels[r]; channel c pixel i = (r + 3 * c + i) % 256.
Bytes cifar_records(const std::vector<int>& labels) {
  Bytes b;
  for (size_t r = 0; r < labels.size(); ++r) {
    b.push_back(static_cast<unsigned char>(labels[r]));
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 1024; ++i) b.push_back(static_cast<unsigned char>((r + 3 * c + i) % 256));
  }
  return b;
}

float normalized(int pixel, int c) {
  return (pixel / 255.0f - kCifarMean[c]) / kCifarStd[c];
}

}  // namespace

TEST_CASE("cifar: records are read, normalized per channel and concatenated in order") {
  TempDir dir("frugal-cifar");
  write_bytes(dir / "test_batch.bin", cifar_records({3, 9}));
  CHECK(is_cifar10_dir(dir.path.string()));
  CHECK(!is_cifar10_dir(dir / "nowhere"));
  const Dataset d = load_cifar10(dir.path.string(), false);
  CHECK(d.pixels.shape() == Shape{2, 3, 32, 32});
  CHECK(d.labels.data<int32_t>()[0] == 3);
  CHECK(d.labels.data<int32_t>()[1] == 9);
  const Tensor images = d.float_images();
  const float* x = images.data<float>();
  CHECK(x[0] == normalized(0, 0));
  CHECK(x[1024 + 5] == normalized(8, 1));                // record 0, green, pixel 5
  CHECK(x[3072 + 2 * 1024 + 300] == normalized(51, 2));  // record 1, blue: (1+6+300) % 256
  CHECK(d.background == std::vector<float>{normalized(0, 0), normalized(0, 1), normalized(0, 2)});

  for (int i = 1; i <= 5; ++i)
    write_bytes(dir / ("data_batch_" + std::to_string(i) + ".bin"), cifar_records({i, 0}));
  const Dataset t = load_cifar10(dir.path.string(), true);
  CHECK(t.size() == 10);
  CHECK(t.labels.data<int32_t>()[8] == 5);  // data_batch_5's first record
}

TEST_CASE("cifar: missing, empty, truncated and mislabelled files name the file") {
  TempDir dir("frugal-cifar");
  for (int i = 1; i <= 5; ++i)
    if (i != 3) write_bytes(dir / ("data_batch_" + std::to_string(i) + ".bin"), cifar_records({1}));
  CHECK(error_message([&] { load_cifar10(dir.path.string(), true); }) ==
        dir / "data_batch_3.bin" + ": no such file (CIFAR-10 binary version expected)");
  write_bytes(dir / "empty.bin", {});
  CHECK(error_message([&] { read_cifar10({dir / "empty.bin"}); }) ==
        dir / "empty.bin" + ": empty file, expected records of 3073 bytes");
  Bytes b = cifar_records({1, 2});
  b.resize(b.size() - 100);
  write_bytes(dir / "short.bin", b);
  CHECK(error_message([&] { read_cifar10({dir / "short.bin"}); }) ==
        dir / "short.bin" +
            ": truncated or corrupt: 6046 bytes is not a whole number of 3073-byte records (1 "
            "label + 3x32x32)");
  write_bytes(dir / "label.bin", cifar_records({1, 12}));
  CHECK(error_message([&] { read_cifar10({dir / "label.bin"}); }) ==
        dir / "label.bin" + ": record 1 has label 12, expected 0..9 (corrupt file?)");
}

TEST_CASE("cifar: images must fit the model's input") {
  TempDir dir("frugal-cifar");
  write_bytes(dir / "test_batch.bin", cifar_records({0}));
  CHECK(error_message([&] { load_data(dir.path.string(), find_model("small-cnn"), false); }) ==
        "small-cnn takes images [1,28,28]; cifar10's [3,32,32] do not fit (they may be centred in "
        "a larger frame and grey replicated to 3 channels, never cropped)");
  CHECK(load_data(dir.path.string(), find_model("resnet20"), false).size() == 1);
  // Smaller than the images: framing cannot fit them, resampling can.
  const ModelSpec small = model_at_size(find_model("resnet18"), 24);
  CHECK(error_message([&] { load_data(dir.path.string(), small, false); }) ==
        "resnet18 takes images [3,24,24]; cifar10's [3,32,32] do not fit (they may be centred in "
        "a larger frame and grey replicated to 3 channels, never cropped); --resize resamples "
        "them to any size");
  const Dataset resized = load_data(dir.path.string(), small, false, {}, 1, {.resize = true});
  CHECK(resized.resize);
  Batcher b(resized, false, 0);
  Tensor x = Tensor::empty({1, 3, 24, 24}, DType::f32), y = Tensor::empty({1}, DType::i32);
  b.copy(0, x, y);
  CHECK(y.data<int32_t>()[0] == 0);
}

TEST_CASE("augment: placement pads, replicates channels, shifts and flips") {
  // x (1,2,2) = [[1,2],[3,4]] into y (3,4,4) with background -1.
  const float x[4] = {1, 2, 3, 4}, bg[1] = {-1};
  std::vector<float> y(48);
  place_image(x, 1, 2, 2, y.data(), 3, 4, 4, bg, {});
  const std::vector<float> centred = {-1, -1, -1, -1, -1, 1, 2, -1, -1, 3, 4, -1, -1, -1, -1, -1};
  for (int k = 0; k < 3; ++k)
    CHECK(std::vector<float>(y.begin() + 16 * k, y.begin() + 16 * k + 16) == centred);
  place_image(x, 1, 2, 2, y.data(), 1, 4, 4, bg, {.dy = 1, .dx = -1, .flip = false});
  CHECK(std::vector<float>(y.begin(), y.begin() + 16) ==
        std::vector<float>{-1, -1, 1, 2, -1, -1, 3, 4, -1, -1, -1, -1, -1, -1, -1, -1});
  place_image(x, 1, 2, 2, y.data(), 1, 2, 2, bg, {.dy = 0, .dx = 0, .flip = true});
  CHECK(std::vector<float>(y.begin(), y.begin() + 4) == std::vector<float>{2, 1, 4, 3});
}

TEST_CASE("augment: draws replay per (seed, epoch, index) and cover the range") {
  const Augment a{.crop_pad = 4, .flip = true};
  std::set<int> shifts;
  int flips = 0;
  for (int64_t i = 0; i < 400; ++i) {
    const AugmentDraw d = draw_augment(a, 7, 2, i), again = draw_augment(a, 7, 2, i);
    CHECK((d.dy == again.dy && d.dx == again.dx && d.flip == again.flip));
    CHECK((std::abs(d.dy) <= 4 && std::abs(d.dx) <= 4));
    shifts.insert(d.dy);
    flips += d.flip;
  }
  CHECK(shifts.size() == 9);
  CHECK((flips > 150 && flips < 250));
  int same = 0;
  for (int64_t i = 0; i < 100; ++i) {
    const AugmentDraw d = draw_augment(a, 7, 2, i), e = draw_augment(a, 7, 3, i);
    same += d.dy == e.dy && d.dx == e.dx && d.flip == e.flip;
  }
  CHECK(same < 10);
  const AugmentDraw none = draw_augment({}, 7, 2, 5);
  CHECK((none.dy == 0 && none.dx == 0 && !none.flip));
}

TEST_CASE("batcher: augmented batches depend on the sample, not on its place in the batch") {
  Dataset d = synthetic_dataset({1, 6, 6}, 8, 10, 3);
  d.background = {-5};
  BatcherOptions o{.shuffle = true, .seed = 11, .augment = {.crop_pad = 2, .flip = true}};
  Batcher a(d, o), b(d, o);
  a.start_epoch(1);
  b.start_epoch(1);
  Tensor x4 = Tensor::empty({4, 3, 8, 8}, DType::f32), y4 = Tensor::empty({4}, DType::i32);
  Tensor x1 = Tensor::empty({1, 3, 8, 8}, DType::f32), y1 = Tensor::empty({1}, DType::i32);
  a.copy(4, x4, y4);
  for (int64_t j = 0; j < 4; ++j) {
    b.copy(4 + j, x1, y1);
    CHECK(y1.data<int32_t>()[0] == y4.data<int32_t>()[j]);
    CHECK(std::memcmp(x1.raw(), x4.data<float>() + j * 192, 192 * 4) == 0);
  }
  Tensor small = Tensor::empty({1, 1, 5, 5}, DType::f32);
  CHECK(error_message([&] { a.copy(0, small, y1); }) ==
        "batcher: input [1,1,5,5] f32, expected [1,1,6,6] f32");
}

TEST_CASE("synthetic: seeded random images of a model's input size") {
  const Dataset a = synthetic_dataset({3, 4, 5}, 6, 1000, 9),
                b = synthetic_dataset({3, 4, 5}, 6, 1000, 9);
  CHECK(a.images.shape() == Shape{6, 3, 4, 5});
  CHECK(std::memcmp(a.images.raw(), b.images.raw(), a.images.meta().bytes()) == 0);
  CHECK(std::memcmp(a.labels.raw(), b.labels.raw(), a.labels.meta().bytes()) == 0);
  for (int64_t n = 0; n < 6; ++n)
    CHECK((a.labels.data<int32_t>()[n] >= 0 && a.labels.data<int32_t>()[n] < 1000));
  const Dataset s = load_data("synthetic", find_model("resnet18"), true, {.train = 3, .test = 2});
  CHECK(s.images.shape() == Shape{3, 3, 224, 224});
  CHECK(s.classes == 1000);
  CHECK(error_message([&] {
          synthetic_dataset({3, 4}, 6, 10, 1);
        }).find("synthetic data: sample [3,4]") == 0);
}
