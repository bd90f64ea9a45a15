// Image files: decoding JPEG (RGB, grey, CMYK, EXIF orientation, reduced scale) and PNG, the
// errors bad files give, resampling, folder scanning, the crops, and the decode pipeline whose
// batches are the same bits with 1, 2 or 4 workers.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/batcher.h"
#include "data/image.h"
#include "data/image_folder.h"
#include "data/resample.h"
#include "tests/images.h"
#include "tests/temp_dir.h"

namespace fs = std::filesystem;
using namespace frugal;
using namespace frugal::testing;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The largest difference between two images' bytes (same size required).
int max_difference(const RgbImage& a, const RgbImage& b) {
  REQUIRE(a.height == b.height);
  REQUIRE(a.width == b.width);
  int d = 0;
  for (size_t i = 0; i < a.rgb.size(); ++i) d = std::max(d, std::abs(a.rgb[i] - b.rgb[i]));
  return d;
}

RgbImage decode(const std::vector<uint8_t>& bytes, int64_t min_side = 0) {
  return decode_image(bytes, "test", min_side);
}

// The pixel (y, x) of `img`.
const uint8_t* at(const RgbImage& img, int64_t y, int64_t x) {
  return &img.rgb[static_cast<size_t>((y * img.width + x) * 3)];
}

// A folder ROOT/{train,val}/<class>/ of `per_class` JPEGs and PNGs per class and split.
void write_folder(const fs::path& root, const std::vector<std::string>& classes, int per_class) {
  for (const char* split : {"train", "val"})
    for (size_t c = 0; c < classes.size(); ++c) {
      const fs::path dir = root / split / classes[c];
      fs::create_directories(dir);
      for (int i = 0; i < per_class; ++i) {
        RgbImage card = test_card(20 + 3 * i + static_cast<int64_t>(c), 16 + i);
        if (i % 2)
          write_file((dir / ("img" + std::to_string(i) + ".png")).string(), test_png(card));
        else
          write_file((dir / ("img" + std::to_string(i) + ".JPG")).string(), test_jpeg(card));
      }
    }
}

}  // namespace

TEST_CASE("image: JPEG and PNG decode to RGB, grey is replicated, CMYK converted") {
  const RgbImage card = test_card(37, 23);  // odd sizes
  const RgbImage png = decode(test_png(card));
  CHECK(png.rgb == card.rgb);  // lossless
  CHECK(max_difference(decode(test_jpeg(card, JpegKind::rgb, 100)), card) <= 8);
  CHECK(max_difference(decode(test_png(card, false, true)), card) == 0);  // alpha dropped

  for (const RgbImage& grey :
       {decode(test_png(card, true)), decode(test_jpeg(card, JpegKind::grey, 100))}) {
    CHECK(grey.width == 37);
    for (int64_t p = 0; p < grey.width * grey.height; ++p) {
      CHECK(grey.rgb[3 * p] == grey.rgb[3 * p + 1]);
      CHECK(grey.rgb[3 * p] == grey.rgb[3 * p + 2]);
    }
  }
  const RgbImage cmyk = decode(test_jpeg(card, JpegKind::cmyk, 100));
  CHECK(max_difference(cmyk, card) <= 12);  // JPEG's rounding, through C, M, Y and K

  for (auto [w, h] : {std::pair{1, 1}, {1, 9}, {9, 1}, {17, 3}}) {
    CAPTURE(w);
    CAPTURE(h);
    const RgbImage small = test_card(w, h);
    CHECK(decode(test_png(small)).rgb == small.rgb);
    const RgbImage j = decode(test_jpeg(small));
    CHECK(j.width == w);
    CHECK(j.height == h);
  }
}

TEST_CASE("image: the EXIF orientation turns the image, in both byte orders") {
  const RgbImage card = test_card(24, 16);
  const std::vector<uint8_t> jpeg = test_jpeg(card, JpegKind::rgb, 100);
  const RgbImage plain = decode(jpeg);
  for (bool le : {true, false})
    for (int o = 1; o <= 8; ++o) {
      CAPTURE(o);
      const std::vector<uint8_t> tagged = with_exif_orientation(jpeg, o, le);
      CHECK(jpeg_exif_orientation(tagged) == o);
      const RgbImage turned = decode(tagged);
      const bool swap = o >= 5;
      CHECK(turned.width == (swap ? 16 : 24));
      CHECK(turned.height == (swap ? 24 : 16));
      // Where the top-left of the stored image went.
      const int64_t W = turned.width - 1, H = turned.height - 1;
      const std::pair<int64_t, int64_t> corner[9] = {{0, 0}, {0, 0}, {0, W}, {H, W}, {H, 0},
                                                     {0, 0}, {0, W}, {H, W}, {H, 0}};
      const auto [y, x] = corner[o];
      for (int c = 0; c < 3; ++c) CHECK(at(turned, y, x)[c] == at(plain, 0, 0)[c]);
    }
  CHECK(jpeg_exif_orientation(jpeg) == 1);
}

TEST_CASE("image: JPEGs decode at the smallest scale that keeps the shorter side") {
  const std::vector<uint8_t> jpeg = test_jpeg(test_card(400, 240));
  CHECK(decode(jpeg, 0).width == 400);
  CHECK(decode(jpeg, 240).width == 400);
  const RgbImage half = decode(jpeg, 120);
  CHECK(half.width == 200);
  CHECK(half.height == 120);
  CHECK(decode(jpeg, 30).height == 30);  // 1/8
  CHECK(decode(jpeg, 29).height == 30);
  CHECK(decode(test_png(test_card(400, 240)), 30).height == 240);  // PNG: full size
}

TEST_CASE("image: bad files give an error naming the file and what is wrong") {
  TempDir dir("frugal-image");
  const std::vector<uint8_t> jpeg = test_jpeg(test_card(64, 48));
  const std::vector<uint8_t> png = test_png(test_card(64, 48));
  auto decode_file = [&](const std::string& name, const std::vector<uint8_t>& bytes) {
    const std::string path = dir / name;
    write_file(path, bytes);
    return error_of([&] { decode_image(read_image_file(path), path, 0); });
  };
  CHECK(decode_file("zero.jpg", {}) == dir / "zero.jpg" + ": empty file (0 bytes), not an image");
  CHECK(decode_file("text.jpg", {'h', 'e', 'l', 'l', 'o'}) ==
        dir / "text.jpg" + ": not an image (neither JPEG nor PNG by its first bytes)");
  const std::vector<uint8_t> cut(jpeg.begin(), jpeg.begin() + static_cast<long>(jpeg.size() / 2));
  CHECK(decode_file("cut.jpg", cut).find(dir / "cut.jpg" + ": corrupt or truncated JPEG") == 0);
  const std::vector<uint8_t> head(jpeg.begin(), jpeg.begin() + 40);
  CHECK(decode_file("head.jpg", head) ==
        dir / "head.jpg" + ": image of 0x0 pixels (a truncated or corrupt header?)");
  std::vector<uint8_t> broken = jpeg;
  for (size_t i = broken.size() / 2; i < broken.size() / 2 + 64; ++i) broken[i] = 0xff;
  CHECK(decode_file("broken.jpg", broken).find(dir / "broken.jpg" + ": corrupt") == 0);
  const std::vector<uint8_t> pcut(png.begin(), png.begin() + static_cast<long>(png.size() / 2));
  CHECK(decode_file("cut.png", pcut).find(dir / "cut.png" + ": corrupt or truncated PNG") == 0);
  CHECK(error_of([&] { read_image_file(dir / "none.png"); }).find(dir / "none.png") == 0);
}

TEST_CASE("image: resampling crops, scales, flips and normalizes in one pass") {
  const RgbImage card = test_card(8, 6);
  const Normalize unit{{0, 0, 0}, {1, 1, 1}};
  std::vector<float> out(3 * 6 * 8);
  resample(card, {0, 0, 6, 8}, 6, 8, false, unit, out.data());  // the same size: the pixels
  for (int64_t y = 0; y < 6; ++y)
    for (int64_t x = 0; x < 8; ++x)
      for (int c = 0; c < 3; ++c)
        CHECK(out[static_cast<size_t>((c * 6 + y) * 8 + x)] ==
              doctest::Approx(at(card, y, x)[c] / 255.0).epsilon(1e-6));
  std::vector<float> flipped(out.size());
  resample(card, {0, 0, 6, 8}, 6, 8, true, unit, flipped.data());
  for (int64_t y = 0; y < 6; ++y)
    for (int64_t x = 0; x < 8; ++x)
      CHECK(flipped[static_cast<size_t>(y * 8 + x)] == out[static_cast<size_t>(y * 8 + 7 - x)]);
  // Halving averages pairs (a wider filter), not one pixel of each.
  RgbImage stripes;
  stripes.height = 2;
  stripes.width = 8;
  for (int64_t p = 0; p < 16; ++p)
    for (int c = 0; c < 3; ++c) stripes.rgb.push_back(p % 2 ? 255 : 0);
  std::vector<float> half(3 * 1 * 4);
  resample(stripes, {0, 0, 2, 8}, 1, 4, false, unit, half.data());
  for (int x = 1; x < 3; ++x) CHECK(half[static_cast<size_t>(x)] == doctest::Approx(0.5));
  // ImageNet normalization of a mid-grey pixel.
  RgbImage grey{1, 1, {128, 128, 128}};
  float y[3];
  resample(grey, {0, 0, 1, 1}, 1, 1, false, Normalize{}, y);
  CHECK(y[0] == doctest::Approx((128 / 255.0 - 0.485) / 0.229).epsilon(1e-5));
  CHECK(y[2] == doctest::Approx((128 / 255.0 - 0.406) / 0.225).epsilon(1e-5));
}

TEST_CASE("batcher --resize: held bytes fill the input as the image folders' resampler does") {
  // A grey 10x12 data set of two images; the folder path resamples the same pixels as RGB.
  const int64_t H = 10, W = 12, P = 23, Q = 17;
  Dataset d;
  d.pixels = Tensor::empty({2, 1, H, W}, DType::u8);
  uint8_t* px = d.pixels.data<uint8_t>();
  for (int64_t i = 0; i < d.pixels.numel(); ++i) px[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
  const double mean = 0.3, sd = 0.4;
  d.tables = {pixel_table(mean, sd)};
  d.background = {d.tables[0][0]};
  d.labels = Tensor::empty({2}, DType::i32);
  d.labels.data<int32_t>()[0] = 3;
  d.labels.data<int32_t>()[1] = 7;
  d.name = "test";
  CHECK_FALSE(image_fits({1, H, W}, {3, P, Q}));  // odd margins: no frame
  CHECK(image_fits({1, H, W}, {3, P, Q}, true));
  CHECK(image_fits({1, H, W}, {3, 4, 5}, true));  // smaller too
  CHECK_FALSE(image_fits({3, H, W}, {1, P, Q}, true));
  d.resize = true;
  Batcher b(d, false, 0);
  b.start_epoch(0);
  Tensor x = Tensor::empty({2, 3, P, Q}, DType::f32);
  Tensor y = Tensor::empty({2}, DType::i32);
  b.copy(0, x, y);
  CHECK(y.data<int32_t>()[1] == 7);
  for (int64_t n = 0; n < 2; ++n) {
    RgbImage img{H, W, {}};
    for (int64_t p = 0; p < H * W; ++p)
      for (int c = 0; c < 3; ++c) img.rgb.push_back(px[n * H * W + p]);
    std::vector<float> want(static_cast<size_t>(3 * P * Q));
    resample(img, {0, 0, double(H), double(W)}, P, Q, false,
             Normalize{{mean, mean, mean}, {sd, sd, sd}}, want.data());
    const float* got = x.data<float>() + n * 3 * P * Q;
    for (int64_t i = 0; i < 3 * P * Q; ++i)
      REQUIRE(got[i] == doctest::Approx(want[static_cast<size_t>(i)]).epsilon(1e-5));
  }
  // The augmentation's flip mirrors the resampled image; its shift moves the source window.
  Batcher flipped(d, BatcherOptions{.augment = {.crop_pad = 0, .flip = true}});
  flipped.start_epoch(0);
  Tensor z = Tensor::empty({2, 3, P, Q}, DType::f32);
  flipped.copy(0, z, y);
  for (int64_t n = 0; n < 2; ++n) {
    const float* a = x.data<float>() + n * 3 * P * Q;
    const float* f = z.data<float>() + n * 3 * P * Q;
    const bool mirrored = draw_augment({.crop_pad = 0, .flip = true}, 0, 0, n).flip;
    for (int64_t r = 0; r < P; ++r)
      for (int64_t q = 0; q < Q; ++q) CHECK(f[r * Q + q] == a[r * Q + (mirrored ? Q - 1 - q : q)]);
  }
  // Same size with no augmentation: the plain copy, bit for bit the framed path's.
  d.resize = false;
  Tensor framed = Tensor::empty({2, 1, H, W}, DType::f32);
  Batcher(d, false, 0).copy(0, framed, y);
  d.resize = true;
  Tensor same = Tensor::empty({2, 1, H, W}, DType::f32);
  Batcher(d, false, 0).copy(0, same, y);
  CHECK(std::memcmp(framed.data<float>(), same.data<float>(), framed.bytes()) == 0);
  // A constant image stays constant at any size and shift.
  std::vector<float> flat(2 * 5 * 7, 0.25f), big(2 * 9 * 4);
  resample_planes(flat.data(), 2, 5, 7, {-1.5, 2.0, 5, 7}, 9, 4, true, big.data());
  for (float v : big) CHECK(v == doctest::Approx(0.25f));
}

TEST_CASE("image folder: classes from train/, files sorted, bad names and layouts are errors") {
  TempDir dir("frugal-folder");
  const fs::path root = dir.path;
  write_folder(root, {"cat", "ant", "bee"}, 3);
  write_file((root / "train" / "ant" / ".hidden.jpg").string(), {1, 2, 3});  // ignored
  const ImageFolder f = scan_image_folder(root.string(), false);
  CHECK(f.classes == std::vector<std::string>{"ant", "bee", "cat"});
  CHECK(f.train.size() == 9);
  CHECK(f.val.size() == 9);
  CHECK(f.train.front().label == 0);
  CHECK(f.train.back().label == 2);
  CHECK(fs::path(f.train[0].path).filename() == "img0.JPG");
  CHECK(fs::path(f.train[1].path).filename() == "img1.png");
  CHECK(is_image_folder(root.string()));

  write_file((root / "train" / "bee" / "notes.txt").string(), {'x'});
  CHECK(error_of([&] { scan_image_folder(root.string(), false); }) ==
        (root / "train" / "bee" / "notes.txt").string() +
            ": not an image file name (expected .jpg, .jpeg or .png) (--skip-bad leaves such "
            "files out)");
  write_file((root / "val" / "cat" / "png.jpg").string(), test_png(test_card(4, 4)));
  write_file((root / "val" / "cat" / "zero.png").string(), {});
  const ImageFolder skipping = scan_image_folder(root.string(), true);
  REQUIRE(skipping.skipped.size() == 3);
  CHECK(skipping.skipped[1] ==
        (root / "val" / "cat" / "png.jpg").string() + ": named JPEG but its bytes are PNG");
  CHECK(skipping.skipped[2] ==
        (root / "val" / "cat" / "zero.png").string() + ": empty file (0 bytes), not an image");
  CHECK(skipping.train.size() == 9);

  fs::create_directories(root / "train" / "dog");
  CHECK(error_of([&] { scan_image_folder(root.string(), true); }) ==
        (root / "val" / "dog").string() + ": class 'dog' of train/ is missing from val/");
  fs::create_directories(root / "val" / "dog");
  CHECK(error_of([&] { scan_image_folder(root.string(), true); }) ==
        (root / "train" / "dog").string() + ": class folder holds no image");
  fs::remove_all(root / "train" / "dog");
  CHECK(error_of([&] { scan_image_folder(root.string(), true); }) ==
        (root / "val" / "dog").string() + ": class 'dog' of val/ is not in train/");
  CHECK(error_of([&] {
          scan_image_folder((root / "nowhere").string(), true);
        }).find("no such folder") != std::string::npos);
}

TEST_CASE("image folder: crops stay inside the image and depend on (seed, epoch, index)") {
  const ImageTransform train{.size = 32, .train = true};
  int flips = 0;
  for (int64_t i = 0; i < 200; ++i) {
    const CropDraw d = draw_crop(train, 60, 90, 7, 1, i);
    CHECK(d.box.top >= 0);
    CHECK(d.box.left >= 0);
    CHECK(d.box.top + d.box.height <= 60);
    CHECK(d.box.left + d.box.width <= 90);
    CHECK(d.box.height * d.box.width >= 0.08 * 60 * 90 * 0.9);
    flips += d.flip;
    const CropDraw again = draw_crop(train, 60, 90, 7, 1, i);
    CHECK(again.box.top == d.box.top);
    CHECK(again.flip == d.flip);
  }
  CHECK(flips > 60);
  CHECK(flips < 140);
  const CropDraw eval = draw_crop({.size = 32}, 60, 90, 7, 1, 3);  // centre, side 60 * 0.875
  CHECK(eval.box.height == doctest::Approx(52.5));
  CHECK(eval.box.left == doctest::Approx((90 - 52.5) / 2));
  CHECK(!eval.flip);
}

TEST_CASE("image folder: batches are the same bits with 1, 2 and 4 decode workers") {
  TempDir dir("frugal-pipeline");
  write_folder(dir.path, {"a", "b"}, 6);
  const ImageFolder f = scan_image_folder(dir.path.string(), false);
  std::vector<Tensor> first;
  for (int workers : {1, 2, 4}) {
    CAPTURE(workers);
    const Dataset d =
        image_dataset(f.train, {.size = 16, .train = true, .workers = workers}, 2, "folder");
    CHECK(d.sample_shape() == Shape{3, 16, 16});
    Batcher b(d, {.shuffle = true, .seed = 11});
    std::vector<Tensor> batches;
    for (int epoch = 0; epoch < 2; ++epoch) {
      b.start_epoch(epoch);
      for (int64_t first_sample = 0; first_sample + 4 <= d.size(); first_sample += 4) {
        Tensor x = Tensor::empty({4, 3, 16, 16}, DType::f32);
        Tensor y = Tensor::empty({4}, DType::i32);
        b.copy(first_sample, x, y);
        for (int64_t j = 0; j < 4; ++j)
          CHECK(y.data<int32_t>()[j] == d.labels.data<int32_t>()[b.order()[first_sample + j]]);
        batches.push_back(x);
      }
    }
    CHECK(b.data_bytes() > 0);
    if (first.empty())
      first = batches;
    else
      for (size_t i = 0; i < batches.size(); ++i) CHECK(bitwise_equal(first[i], batches[i]));
  }
  // Another epoch crops otherwise.
  CHECK(!bitwise_equal(first[0], first[3]));
}

TEST_CASE("image folder: a file that fails to decode stops the batch, or is replaced") {
  TempDir dir("frugal-badfile");
  write_folder(dir.path, {"a"}, 4);
  ImageFolder f = scan_image_folder(dir.path.string(), false);
  const std::string bad = f.train[2].path;
  const std::vector<uint8_t> jpeg = test_jpeg(test_card(30, 20));
  write_file(bad, std::vector<uint8_t>(jpeg.begin(), jpeg.begin() + 200));  // truncated
  Tensor x = Tensor::empty({4, 3, 8, 8}, DType::f32), y = Tensor::empty({4}, DType::i32);
  {
    const Dataset d = image_dataset(f.train, {.size = 8, .workers = 2}, 1, "folder");
    Batcher b(d, {});
    b.start_epoch(0);
    CHECK(error_of([&] { b.copy(0, x, y); }).find(bad + ": ") == 0);
  }
  const Dataset d = image_dataset(f.train, {.size = 8, .skip_bad = true, .workers = 2}, 1, "f");
  Batcher b(d, {});
  b.start_epoch(0);
  b.copy(0, x, y);
  CHECK(b.skipped_files() == 1);
  // Sample 2 is replaced by sample 3.
  CHECK(std::memcmp(x.data<float>() + 2 * 192, x.data<float>() + 3 * 192, 192 * 4) == 0);
}
