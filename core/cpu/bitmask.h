// Bit masks of the CPU backend (private): u8 tensors of ceil(n/8) bytes, bit i%8 of byte i/8.
// Writers go a whole mask byte (8 elements) at a time, so threads never share a byte and the
// mask is written without races; readers test one bit per element.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

// For i in [0, n): bit i = step(i), where step(i) also writes element i of the kernel's
// outputs. mask may be null (no mask wanted); step still runs for every i.
template <typename Step>
void write_mask(int64_t n, uint8_t* mask, Step step) {
  const int64_t bytes = mask_bytes(n);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < bytes; ++b) {
    uint8_t bits = 0;
    const int64_t end = std::min<int64_t>(n, 8 * b + 8);
    for (int64_t i = 8 * b; i < end; ++i) bits |= static_cast<uint8_t>(step(i)) << (i - 8 * b);
    if (mask) mask[b] = bits;
  }
}

inline bool mask_bit(const uint8_t* mask, int64_t i) {
  return (mask[i >> 3] >> (i & 7)) & 1;
}

}  // namespace frugal
