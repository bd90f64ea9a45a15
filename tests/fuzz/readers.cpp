// The readers' fuzz entries: bytes to a per-process temporary file, then the reader.
#include "tests/fuzz/readers.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <span>
#include <vector>

#include "core/error.h"
#include "data/cifar.h"
#include "data/idx.h"
#include "data/image.h"
#include "data/resample.h"
#include "data/safetensors.h"

namespace frugal::fuzz {
namespace {

// A file of `data` under the temp directory, one per process and reader.
std::string write_temp(const char* reader, const uint8_t* data, size_t size) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("frugal-fuzz-" + std::to_string(getpid()) + "-" + reader))
                               .string();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

// Runs `read`; a frugal::Error is the expected answer to a bad file.
template <typename F>
void expect_error_or_success(F read) {
  try {
    read();
  } catch (const Error&) {
  }
}

}  // namespace

void read_idx(const uint8_t* data, size_t size) {
  const std::string path = write_temp("idx", data, size);
  expect_error_or_success([&] { read_idx_images(path); });
  expect_error_or_success([&] {
    read_idx_images(path, {.mean = 0.5, .std = 0.25, .pad = 2, .height = 28, .width = 28});
  });
  expect_error_or_success([&] { read_idx_labels(path); });
  std::filesystem::remove(path);
}

void read_cifar(const uint8_t* data, size_t size) {
  const std::string path = write_temp("cifar", data, size);
  expect_error_or_success([&] { read_cifar10({path}); });
  std::filesystem::remove(path);
}

void read_safetensors(const uint8_t* data, size_t size) {
  const std::string path = write_temp("safetensors", data, size);
  expect_error_or_success([&] {
    const Safetensors file = load_safetensors(path);
    save_safetensors(path, file);  // what loads must save and load again
    load_safetensors(path);
  });
  std::filesystem::remove(path);
}

void read_image(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  jpeg_exif_orientation(bytes);
  for (int64_t min_side : {int64_t{0}, int64_t{16}})
    expect_error_or_success([&] {
      const RgbImage img = decode_image(bytes, "fuzz", min_side);
      std::vector<float> out(3 * 8 * 8);
      const CropBox box{img.height / 4.0, img.width / 3.0, img.height / 2.0, img.width / 2.0};
      resample(img, box, 8, 8, true, Normalize{}, out.data());
    });
  const std::string path = write_temp("image", data, size);
  expect_error_or_success([&] { decode_image(read_image_file(path), path, 0); });
  std::filesystem::remove(path);
}

Reader reader_named(const std::string& name) {
  if (name == "idx") return read_idx;
  if (name == "cifar") return read_cifar;
  if (name == "safetensors") return read_safetensors;
  if (name == "image") return read_image;
  return nullptr;
}

}  // namespace frugal::fuzz
