// safetensors files: an 8-byte little-endian header length, a JSON header mapping each tensor
// name to {dtype, shape, data_offsets} (plus a "__metadata__" string map), then the raw
// little-endian data. PyTorch's `safetensors` package reads what this writes, and vice versa.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace frugal {

struct Safetensors {
  std::vector<std::pair<std::string, Tensor>> tensors;  // in file order (by data offset)
  std::map<std::string, std::string> metadata;

  // The tensor called `name`, or nullptr.
  const Tensor* find(const std::string& name) const;
};

// Writes host tensors (f32 as F32, f64 as F64, i32 as I32, u8 as U8) in the order given, the
// header padded with spaces to a multiple of 8 bytes. Names must be unique and not empty.
// Writes `path`.tmp first, fsyncs it and renames it over `path`, so an interrupted save leaves
// the old file intact; a write that fails removes `path`.tmp before it throws.
void save_safetensors(const std::string& path, const Safetensors& file);

// Throws, naming `path` and why, unless save_safetensors could write it: not a directory, its
// folder exists, and a file can be created there (tried, then removed). For a long run's
// checkpoint path, checked before any work that a failed save would lose.
void check_writable(const std::string& path);

// Reads and checks a whole file: header length within the file, valid JSON, known dtypes,
// shapes whose bytes match their data_offsets, offsets inside the data, covering it with no
// gap or overlap. Every error names the file and the tensor at fault.
Safetensors load_safetensors(const std::string& path);

}  // namespace frugal
