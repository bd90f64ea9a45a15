// IDX loading and batching: small valid and broken files (plain and .gz) written to a temp
// directory, checking the values read and that each error names the file and the problem.
#include <doctest/doctest.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/batcher.h"
#include "data/idx.h"
#include "tests/alloc_cap.h"
#include "tests/skip.h"

namespace fs = std::filesystem;
using namespace frugal;

namespace {

using Bytes = std::vector<unsigned char>;

// A fresh directory under the system temp dir, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "frugal-idx-XXXXXX").string();
    REQUIRE(mkdtemp(t.data()) != nullptr);
    path = t;
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

// Header (0, 0, type, rank, big-endian extents) followed by `data`.
Bytes idx(const std::vector<uint32_t>& dims, const Bytes& data, unsigned char type = 0x08) {
  Bytes b = {0, 0, type, static_cast<unsigned char>(dims.size())};
  for (uint32_t d : dims)
    for (int shift : {24, 16, 8, 0}) b.push_back(static_cast<unsigned char>(d >> shift));
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

void write(const std::string& path, const Bytes& b) {
  if (path.ends_with(".gz")) {
    gzFile f = gzopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(gzwrite(f, b.data(), static_cast<unsigned>(b.size())) == int(b.size()));
    gzclose(f);
  } else {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
}

// Three 2x3 images with pixels 0, 10, ..., 170, and their labels.
const Bytes kPixels = {0,  10,  20,  30,  40,  50,  60,  70,  80,
                       90, 100, 110, 120, 130, 140, 150, 160, 170};
const Bytes kLabels = {7, 0, 9};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("idx: reads plain and gzipped images and labels") {
  TempDir dir;
  for (const std::string ext : {"", ".gz"}) {
    write(dir / ("img" + ext), idx({3, 2, 3}, kPixels));
    write(dir / ("lab" + ext), idx({3}, kLabels));
    Dataset d = load_idx(dir / ("img" + ext), dir / ("lab" + ext), {.mean = 0.5, .std = 0.25});
    CHECK(d.size() == 3);
    CHECK(!d.images.defined());  // held as the file's bytes
    CHECK(d.pixels.shape() == Shape{3, 1, 2, 3});
    CHECK(d.pixels.dtype() == DType::u8);
    CHECK(d.labels.shape() == Shape{3});
    const Tensor x = d.float_images();
    for (int i = 0; i < 18; ++i) {
      CHECK(d.pixels.data<uint8_t>()[i] == kPixels[i]);
      CHECK(x.data<float>()[i] == float((kPixels[i] / 255.0 - 0.5) / 0.25));
    }
    CHECK(d.labels.data<int32_t>()[0] == 7);
    CHECK(d.labels.data<int32_t>()[2] == 9);
  }
}

TEST_CASE("idx: pads images with the background pixel") {
  TempDir dir;
  write(dir / "img", idx({3, 2, 3}, kPixels));
  Tensor x = read_idx_images(dir / "img", {.mean = 0.5, .std = 0.25, .pad = 2});
  REQUIRE(x.shape() == Shape{3, 1, 6, 7});
  const float* y = x.data<float>();
  const float background = float((0 - 0.5) / 0.25);
  CHECK(y[0] == background);                                     // corner
  CHECK(y[42 + 2 * 7 + 2] == float((60 / 255.0 - 0.5) / 0.25));  // image 1, pixel (0,0)
  CHECK(y[42 + 2 * 7 + 3] == float((70 / 255.0 - 0.5) / 0.25));  // image 1, pixel (0,1)
  CHECK(y[2 * 7 + 3] == float((10 / 255.0 - 0.5) / 0.25));       // image 0, pixel (0,1)
  CHECK(y[3 * 7 + 6] == background);                             // right border
}

TEST_CASE("idx: truncated data names the file and the missing bytes") {
  TempDir dir;
  for (const std::string name : {"short", "short.gz"}) {
    write(dir / name, idx({3, 2, 3}, Bytes(kPixels.begin(), kPixels.end() - 5)));
    const std::string e = error_of([&] { read_idx_images(dir / name); });
    CHECK(e.find(dir / name) != std::string::npos);
    CHECK(e.find("truncated: header [3,2,3] promises 18 bytes of data, file has 13") !=
          std::string::npos);
  }
  write(dir / "header", Bytes{0, 0, 8, 3, 0, 0});
  CHECK(error_of([&] { read_idx_images(dir / "header"); }).find("truncated header") !=
        std::string::npos);
  write(dir / "long", idx({3}, Bytes{1, 2, 3, 4}));
  CHECK(error_of([&] { read_idx_labels(dir / "long"); }).find("trailing bytes") !=
        std::string::npos);
}

// Issue 15's headers: each is an error naming the file and the field, found before anything
// the header promises is allocated (the reader runs with 64 MiB of address space to spare).
TEST_CASE("idx: hostile headers are errors within the file's own memory") {
  TempDir dir;
  auto images = [&](const std::string& name, const Bytes& b, const ImageOptions& o = {}) {
    write(dir / name, b);
    return frugal::testing::run_capped([&] { read_idx_images(dir / name, o); });
  };
  auto labels = [&](const std::string& name, const Bytes& b) {
    write(dir / name, b);
    return frugal::testing::run_capped([&] { read_idx_labels(dir / name); });
  };
  // 64 x (2^29 - 2^15 + 1) x (2^29 + 2^15 + 1) = 2^64 + 64: wrapped, an 81-byte file "held" 64.
  CHECK(images("wrap",
               idx({64, (1u << 29) - (1u << 15) + 1, (1u << 29) + (1u << 15) + 1}, Bytes(65))) ==
        "error: " + dir / "wrap" +
            ": header extents [64,536838145,536903681]: the element count overflows 64 bits "
            "(corrupt header?)");
  CHECK(images("zero", idx({1u << 22, 1u << 21, 1u << 21}, {})) ==
        "error: " + dir / "zero" +
            ": header extents [4194304,2097152,2097152]: the element count overflows 64 bits "
            "(corrupt header?)");
  CHECK(images("empty", idx({0xffffffffu, 0, 0}, {})) ==
        "error: " + dir / "empty" +
            ": header extents [4294967295,0,0]: images of height or width 0");
  for (const std::string name : {"labels", "labels.gz"})
    CHECK(labels(name, idx({0xffffffffu}, {5})) ==
          "error: " + dir / name +
              ": truncated: header [4294967295] promises 4294967295 bytes of data, file has 1");
  const ImageOptions mnist{.height = 28, .width = 28};
  for (const std::string name : {"many", "many.gz"}) {
    CHECK(images(name, idx({1u << 22, 28, 28}, {}), mnist) ==
          "error: " + dir / name +
              ": truncated: header [4194304,28,28] promises 3288334336 bytes of data, file has 0");
  }
  CHECK(images("more", idx({1u << 31, 28, 28}, {})) ==
        "error: " + dir / "more" +
            ": truncated: header [2147483648,28,28] promises 1683627180032 bytes of data, file "
            "has 0");
  // A compressed file's size says little of its data's: the promise is held to the limit.
  CHECK(images("more.gz", idx({1u << 31, 28, 28}, {})) ==
        "error: " + dir / "more.gz" +
            ": header [2147483648,28,28] promises 1.5 TiB (1683627180032 bytes) of data, over "
            "the limit of 32.0 GiB (34359738368 bytes)");
  // A valid file still reads under the cap.
  CHECK(images("ok", idx({3, 2, 3}, kPixels), {.pad = 2}) == "ok");
}

TEST_CASE("idx: wrong magic, data type, rank and image size") {
  TempDir dir;
  Bytes bad = idx({3, 2, 3}, kPixels);
  bad[0] = 0x1f;
  write(dir / "magic", bad);
  CHECK(error_of([&] { read_idx_images(dir / "magic"); }) ==
        dir / "magic" + ": not an IDX file (magic starts 0x1f 0x0, expected 0x0 0x0)");
  write(dir / "type", idx({3, 2, 3}, kPixels, 0x0d));
  CHECK(error_of([&] { read_idx_images(dir / "type"); }) ==
        dir / "type" + ": IDX data type 0xd, expected 0x8 (unsigned byte)");
  write(dir / "rank", idx({3, 6}, kPixels));
  CHECK(error_of([&] { read_idx_images(dir / "rank"); }) ==
        dir / "rank" + ": IDX rank 2, expected 3 for images (N,H,W)");
  write(dir / "size", idx({3, 2, 3}, kPixels));
  CHECK(error_of([&] { read_idx_images(dir / "size", {.height = 28, .width = 28}); }) ==
        dir / "size" + ": images are 2x3, expected 28x28");
}

TEST_CASE("idx: image and label counts must match") {
  TempDir dir;
  write(dir / "img.gz", idx({3, 2, 3}, kPixels));
  write(dir / "lab.gz", idx({2}, Bytes{1, 2}));
  CHECK(error_of([&] { load_idx(dir / "img.gz", dir / "lab.gz"); }) ==
        dir / "img.gz" + " has 3 images but " + dir / "lab.gz" + " has 2 labels");
}

TEST_CASE("idx: labels outside 0..9") {
  TempDir dir;
  write(dir / "lab", idx({3}, Bytes{1, 12, 3}));
  CHECK(error_of([&] { read_idx_labels(dir / "lab"); }) ==
        dir / "lab" + ": label 12 at index 1 outside 0..9");
}

TEST_CASE("idx: missing files") {
  TempDir dir;
  CHECK(error_of([&] { read_idx_labels(dir / "nope"); }) == dir / "nope" + ": no such file");
  const std::string e = error_of([&] { load_fashion_mnist(dir.path.string(), true); });
  CHECK(e.find("fashion-mnist: neither " + dir / "train-images-idx3-ubyte") == 0);
  CHECK(e.find("dataset-fashion-mnist") != std::string::npos);
}

TEST_CASE("batcher: seeded shuffle per epoch, one copy per batch") {
  TempDir dir;
  write(dir / "img", idx({3, 2, 3}, kPixels));
  write(dir / "lab", idx({3}, kLabels));
  const Dataset d = load_idx(dir / "img", dir / "lab");
  Batcher a(d, true, 42), b(d, true, 42), plain(d, false, 42);
  a.start_epoch(1);
  b.start_epoch(0);
  b.start_epoch(1);  // the order depends on (seed, epoch) only
  CHECK(a.order() == b.order());
  plain.start_epoch(3);
  CHECK(plain.order() == std::vector<int64_t>{0, 1, 2});
  bool differs = false;  // some epoch among the first few reorders three samples
  for (int e = 0; e < 8; ++e) {
    a.start_epoch(e);
    differs |= a.order() != plain.order();
  }
  CHECK(differs);

  Tensor x = Tensor::empty({2, 1, 2, 3}, DType::f32), y = Tensor::empty({2}, DType::i32);
  a.copy(1, x, y);
  for (int j = 0; j < 2; ++j) {
    const int64_t n = a.order()[1 + j];
    CHECK(y.data<int32_t>()[j] == kLabels[n]);
    CHECK(x.data<float>()[j * 6 + 5] == d.float_images().data<float>()[n * 6 + 5]);
  }
  CHECK_THROWS_AS(a.copy(2, x, y), Error);
  Tensor wrong = Tensor::empty({2, 1, 3, 2}, DType::f32);
  CHECK_THROWS_WITH_AS(a.copy(0, wrong, y), "batcher: input [2,1,3,2] f32, expected [2,1,2,3] f32",
                       Error);
}

TEST_CASE("fashion-mnist: the installed data set loads") {
  if (!fs::exists(kFashionMnistDir)) {
    testing::skip_case(std::string(kFashionMnistDir) + " not installed");
    return;
  }
  const Dataset test = load_fashion_mnist(kFashionMnistDir, false, 2);
  CHECK(test.pixels.shape() == Shape{10000, 1, 32, 32});
  CHECK(test.float_images().data<float>()[0] == test.background[0]);  // the padding
  CHECK(test.size() == 10000);
  int counts[10] = {};
  for (int64_t i = 0; i < test.size(); ++i) counts[test.labels.data<int32_t>()[i]]++;
  for (int c : counts) CHECK(c == 1000);  // the test set is balanced
}

TEST_CASE("batcher: bytes through the tables give the floats' batches bit for bit") {
  TempDir dir;
  write(dir / "img", idx({3, 2, 3}, kPixels));
  write(dir / "lab", idx({3}, kLabels));
  const Dataset bytes = load_idx(dir / "img", dir / "lab", {.mean = 0.3, .std = 0.7});
  Dataset floats = bytes;
  floats.images = bytes.float_images();
  floats.pixels = Tensor();
  for (const Augment a : {Augment{}, Augment{.crop_pad = 1, .flip = true}})
    for (const Shape& input : {Shape{2, 1, 2, 3}, Shape{2, 3, 4, 5}}) {
      CAPTURE(input);
      Batcher from_bytes(bytes, {.shuffle = true, .seed = 5, .augment = a});
      Batcher from_floats(floats, {.shuffle = true, .seed = 5, .augment = a});
      from_bytes.start_epoch(2);
      from_floats.start_epoch(2);
      Tensor x1 = Tensor::empty(input, DType::f32), x2 = Tensor::empty(input, DType::f32);
      Tensor y1 = Tensor::empty({2}, DType::i32), y2 = Tensor::empty({2}, DType::i32);
      from_bytes.copy(1, x1, y1);
      from_floats.copy(1, x2, y2);
      CHECK(bitwise_equal(x1, x2));
      CHECK(bitwise_equal(y1, y2));
    }
}
