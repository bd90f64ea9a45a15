// The readers' fuzz entries: bytes to a per-process temporary file, then the reader.
#include "tests/fuzz/readers.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "data/cifar.h"
#include "data/idx.h"
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

Reader reader_named(const std::string& name) {
  if (name == "idx") return read_idx;
  if (name == "cifar") return read_cifar;
  if (name == "safetensors") return read_safetensors;
  return nullptr;
}

}  // namespace frugal::fuzz
