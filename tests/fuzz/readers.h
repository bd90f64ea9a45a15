// One entry per file reader for fuzzing: the bytes are written to a temporary file and read
// back through the reader, which must either succeed or throw frugal::Error; anything else (a
// crash, a sanitizer report, another exception) is a bug. Used by the libFuzzer targets
// (fuzz_*.cpp, -DFRUGAL_FUZZ=ON) and by the replay of the corpus in the test suite.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace frugal::fuzz {

// IDX: read as images (default options, and 28x28 padded by 2 as the command reads them) and
// as labels.
void read_idx(const uint8_t* data, size_t size);
// CIFAR-10: one record file.
void read_cifar(const uint8_t* data, size_t size);
// safetensors: load, then save what loaded and load that again.
void read_safetensors(const uint8_t* data, size_t size);
// Images (JPEG, PNG): the EXIF orientation, a decode at full size and at a reduced scale, then
// a crop resampled to 8x8; also read through a file.
void read_image(const uint8_t* data, size_t size);

// The reader entry for a corpus folder name ("idx", "cifar", "safetensors", "image"), or
// nullptr.
using Reader = void (*)(const uint8_t*, size_t);
Reader reader_named(const std::string& name);

}  // namespace frugal::fuzz
