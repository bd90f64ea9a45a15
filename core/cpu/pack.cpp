// Packing kernels of the CPU backend (Backend::pack): a tensor of mostly zeros held as a bit
// per element and its nonzero elements. Blocks of kPackBlock elements go to threads whole, each
// writing its own bits and its own run of values (at its start from the header), so the packed
// bytes do not depend on the thread count. Elements are compared as unsigned integers of their
// width, so -0.0 and NaN are nonzero and come back with every bit. With AVX2, f32 goes eight
// elements at a time: a compare, a lane permutation from a table of the 256 masks and one
// store (pack; while the block's run has room for eight), or one load, the inverse
// permutation and a blend (unpack; the packed form's eight spare elements keep that load in
// bounds). Both paths write the same bytes.
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include <cstring>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

struct PackedView {
  int64_t* starts;  // per block
  uint8_t* mask;
  uint8_t* values;
};

PackedView packed_view(uint8_t* p, int64_t n) {
  const int64_t blocks = packed_blocks(n);
  return {reinterpret_cast<int64_t*>(p), p + 8 * blocks,
          p + 8 * blocks + (mask_bytes(n) + 7) / 8 * 8};
}

template <typename U>
int64_t block_count(const U* x, int64_t n) {
  int64_t c = 0;
  for (int64_t i = 0; i < n; ++i) c += x[i] != 0;
  return c;
}

// Block b: n elements of x; its bits into mask, its nonzero elements into out, never more than
// `count` of them. Returns how many there are (count, unless the counts were another tensor's).
template <typename U>
int64_t pack_block(const U* x, int64_t n, int64_t count, uint8_t* mask, U* out) {
  int64_t j = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    U kept[8];
    int c = 0;
    unsigned bits = 0;
    for (int k = 0; k < 8; ++k) {
      const U v = x[i + k];
      const bool nz = v != 0;
      kept[c] = v;
      c += nz;
      bits |= static_cast<unsigned>(nz) << k;
    }
    // Eight at once while the block's run has room for them; its last ones exactly.
    if (j + 8 <= count)
      std::memcpy(out + j, kept, 8 * sizeof(U));
    else if (j < count)
      std::memcpy(out + j, kept, static_cast<size_t>(std::min<int64_t>(c, count - j)) * sizeof(U));
    j += c;
    mask[i / 8] = static_cast<uint8_t>(bits);
  }
  if (i < n) {
    unsigned bits = 0;
    for (int k = 0; i + k < n; ++k) {
      const U v = x[i + k];
      if (v == 0) continue;
      if (j < count) out[j] = v;
      ++j, bits |= 1u << k;
    }
    mask[i / 8] = static_cast<uint8_t>(bits);
  }
  return j;
}

// Reads one element past the block's run at most (eight on the AVX2 path): the next block's,
// or the spares.
template <typename U>
void unpack_block(const uint8_t* mask, const U* in, int64_t n, U* x) {
  int64_t j = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    const unsigned bits = mask[i / 8];
    for (int k = 0; k < 8; ++k) {
      const bool nz = (bits >> k) & 1u;
      const U v = in[j];
      x[i + k] = nz ? v : U(0);
      j += nz;
    }
  }
  for (int k = 0; i + k < n; ++k) x[i + k] = (mask[i / 8] >> k) & 1u ? in[j++] : U(0);
}

#if defined(__AVX2__)
// For each 8-bit mask m: lanes of the kept elements in order (pack), and for each lane k the
// index of its value among the kept ones (unpack).
struct LaneTables {
  alignas(32) int32_t compress[256][8];
  alignas(32) int32_t expand[256][8];
  LaneTables() {
    for (int m = 0; m < 256; ++m) {
      int c = 0;
      for (int k = 0; k < 8; ++k) {
        expand[m][k] = c;
        if ((m >> k) & 1) compress[m][c++] = k;
      }
      for (int k = c; k < 8; ++k) compress[m][k] = 0;
    }
  }
};
const LaneTables kLanes;

template <>
int64_t pack_block<uint32_t>(const uint32_t* x, int64_t n, int64_t count, uint8_t* mask,
                             uint32_t* out) {
  int64_t j = 0, i = 0;
  const __m256i zero = _mm256_setzero_si256();
  for (; i + 8 <= n && j + 8 <= count; i += 8) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const unsigned bits = ~static_cast<unsigned>(_mm256_movemask_ps(
                              _mm256_castsi256_ps(_mm256_cmpeq_epi32(v, zero)))) &
                          0xffu;
    const __m256i lanes =
        _mm256_load_si256(reinterpret_cast<const __m256i*>(kLanes.compress[bits]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), _mm256_permutevar8x32_epi32(v, lanes));
    j += __builtin_popcount(bits);
    mask[i / 8] = static_cast<uint8_t>(bits);
  }
  // The rest (its run too short for a whole store) one element at a time.
  unsigned bits = 0;
  for (; i < n; ++i) {
    const uint32_t v = x[i];
    if (v != 0) {
      if (j < count) out[j] = v;
      ++j, bits |= 1u << (i % 8);
    }
    if (i % 8 == 7 || i + 1 == n) mask[i / 8] = static_cast<uint8_t>(bits), bits = 0;
  }
  return j;
}

template <>
void unpack_block<uint32_t>(const uint8_t* mask, const uint32_t* in, int64_t n, uint32_t* x) {
  int64_t j = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    const unsigned bits = mask[i / 8];
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + j));
    const __m256i lanes = _mm256_load_si256(reinterpret_cast<const __m256i*>(kLanes.expand[bits]));
    const __m256i keep =
        _mm256_cmpgt_epi32(_mm256_and_si256(_mm256_set1_epi32(static_cast<int>(bits)),
                                            _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128)),
                           _mm256_setzero_si256());
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(x + i),
                        _mm256_and_si256(_mm256_permutevar8x32_epi32(v, lanes), keep));
    j += __builtin_popcount(bits);
  }
  for (int k = 0; i + k < n; ++k) x[i + k] = (mask[i / 8] >> k) & 1u ? in[j++] : 0u;
}
#endif

template <typename U>
int64_t pack_counts_t(const U* x, int64_t n, std::vector<int64_t>& counts) {
  const int64_t blocks = packed_blocks(n);
  counts.assign(static_cast<size_t>(blocks), 0);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b)
    counts[static_cast<size_t>(b)] = block_count(x + b * kPackBlock, packed_block_size(n, b));
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  return total;
}

template <typename U>
void pack_t(const U* x, int64_t n, std::span<const int64_t> counts, int64_t total, uint8_t* p) {
  const PackedView v = packed_view(p, n);
  const int64_t blocks = packed_blocks(n);
  int64_t start = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    v.starts[b] = start;
    start += counts[static_cast<size_t>(b)];
  }
  U* values = reinterpret_cast<U*>(v.values);
  for (int k = 0; k < kPackSpare; ++k) values[total + k] = U(0);  // the spares
  std::memset(v.mask + mask_bytes(n), 0, static_cast<size_t>(v.values - v.mask - mask_bytes(n)));
  std::vector<int64_t> found(static_cast<size_t>(blocks));
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b)
    found[static_cast<size_t>(b)] =
        pack_block(x + b * kPackBlock, packed_block_size(n, b), counts[static_cast<size_t>(b)],
                   v.mask + b * (kPackBlock / 8), values + v.starts[b]);
  for (int64_t b = 0; b < blocks; ++b)
    FRUGAL_CHECK(found[static_cast<size_t>(b)] == counts[static_cast<size_t>(b)], "pack: block ", b,
                 " holds ", found[static_cast<size_t>(b)], " nonzero elements, its count says ",
                 counts[static_cast<size_t>(b)],
                 " (counts of another tensor?); the packed tensor is not valid");
}

template <typename U>
void unpack_t(const uint8_t* p, int64_t n, int64_t total, U* x) {
  const PackedView v = packed_view(const_cast<uint8_t*>(p), n);
  const int64_t blocks = packed_blocks(n);
  FRUGAL_CHECK(v.starts[0] == 0, "unpack: packed tensor does not hold ", n,
               " elements: its first block starts at value ", v.starts[0]);
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t next = b + 1 < blocks ? v.starts[b + 1] : total;
    const int64_t held = next - v.starts[b];
    FRUGAL_CHECK(held >= 0 && held <= packed_block_size(n, b),
                 "unpack: packed tensor does not hold ", n, " elements: block ", b, " holds ", held,
                 " (not a packed tensor, or overwritten)");
  }
  const U* values = reinterpret_cast<const U*>(v.values);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b)
    unpack_block(v.mask + b * (kPackBlock / 8), values + v.starts[b], packed_block_size(n, b),
                 x + b * kPackBlock);
}

}  // namespace

int64_t CpuBackend::pack_counts(const Tensor& x, std::vector<int64_t>& counts) {
  check_packable("pack", x, device());
  if (x.dtype() == DType::f32)
    return pack_counts_t(static_cast<uint32_t*>(x.raw()), x.numel(), counts);
  return pack_counts_t(static_cast<uint64_t*>(x.raw()), x.numel(), counts);
}

void CpuBackend::pack(const Tensor& x, std::span<const int64_t> counts, Tensor& packed) {
  const int64_t total = check_pack(x, counts, packed, device());
  if (x.dtype() == DType::f32)
    pack_t(static_cast<uint32_t*>(x.raw()), x.numel(), counts, total, packed.data<uint8_t>());
  else
    pack_t(static_cast<uint64_t*>(x.raw()), x.numel(), counts, total, packed.data<uint8_t>());
}

void CpuBackend::unpack(const Tensor& packed, Tensor& x) {
  const int64_t total = check_unpack(packed, x, device());
  if (x.dtype() == DType::f32)
    unpack_t(packed.data<uint8_t>(), x.numel(), total, static_cast<uint32_t*>(x.raw()));
  else
    unpack_t(packed.data<uint8_t>(), x.numel(), total, static_cast<uint64_t*>(x.raw()));
}

}  // namespace frugal
