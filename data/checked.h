// Checked sizes for the file readers: every count, offset and byte length computed from what a
// file says goes through these, so an overflow or an absurd size is an error naming the file
// and the field, never a wrapped number, a giant allocation or a bare std::bad_alloc.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/tensor.h"

namespace frugal {

// The largest single tensor a reader allocates (32 GiB): far beyond any data set frugal
// trains on, far below what a corrupt header can ask for.
inline constexpr int64_t kMaxReadTensorBytes = int64_t{32} << 30;

// a * b and a + b for sizes read from `path` (a, b >= 0); an overflow of int64 throws
// "<path>: <field> ... overflows 64 bits".
int64_t checked_mul(const std::string& path, const std::string& field, int64_t a, int64_t b);
int64_t checked_add(const std::string& path, const std::string& field, int64_t a, int64_t b);
// The product of `dims` (each >= 0), checked as checked_mul does.
int64_t checked_count(const std::string& path, const std::string& field,
                      std::span<const int64_t> dims);

// An uninitialized host tensor for data read from `path`. Its bytes are checked for overflow
// and against kMaxReadTensorBytes, and running out of memory is an error naming path and field.
Tensor reader_tensor(const std::string& path, const std::string& field, const Shape& shape,
                     DType dtype);

// "3.2 GiB (3435973836 bytes)": a byte count people can read, exact in parentheses.
std::string readable_bytes(int64_t bytes);

}  // namespace frugal
