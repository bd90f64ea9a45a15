// Packing kernels of the CPU backend (Backend::pack): a tensor of mostly zeros held as a bit
// per element and its nonzero elements. Blocks of kPackBlock elements go to threads whole, each
// writing its own bits and its own run of values (at its start from the header), so the packed
// bytes do not depend on the thread count. Elements are compared as unsigned integers of their
// width, so -0.0 and NaN are nonzero and come back with every bit. f32 values whose sign bits
// are all clear (a ReLU's) take 31 bits each in groups of kPackGroup (packed_f32_words). With
// AVX2, f32 goes eight elements at a time: a compare, a lane permutation from a table of the
// 256 masks and one store (compacting a block), or one load, the inverse permutation and a
// blend (expanding it; eight spare elements past the values keep that load in bounds), and a
// group's 31-bit fields eight lanes at once. Every path writes the same bytes.
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

// Set bits among the first n of mask.
int64_t mask_popcount(const uint8_t* mask, int64_t n) {
  int64_t c = 0;
  for (int64_t i = 0; i < n / 8; ++i) c += __builtin_popcount(mask[i]);
  if (n % 8) c += __builtin_popcount(mask[n / 8] & ((1u << (n % 8)) - 1));
  return c;
}

// A block's values start at header & kStartBits; kGroupedBit is set where they are grouped
// (f32, every sign bit clear), so a corrupt header or size is caught whichever way it falls.
constexpr int64_t kGroupedBit = int64_t{1} << 62;
constexpr int64_t kStartBits = kGroupedBit - 1;
int64_t start_of(int64_t header) {  // a negative (corrupt) header as it is, for the error
  return header < 0 ? header : header & kStartBits;
}

// A block's worth of f32 scratch for the calling thread (kPackBlock + 8 elements; on the heap,
// so that OpenMP threads with small stacks can run the kernels).
uint32_t* block_scratch() {
  thread_local std::vector<uint32_t> scratch(kPackBlock + 8);
  return scratch.data();
}

// --- f64: each nonzero element as it is.

int64_t block_words(const uint64_t* x, int64_t n) {
  int64_t c = 0;
  for (int64_t i = 0; i < n; ++i) c += x[i] != 0;
  return c;
}

// Block b: n elements of x; its bits into mask, its nonzero elements into out, never more than
// `count` of them. Returns how many there are (count, unless the counts were another tensor's).
int64_t pack_block(const uint64_t* x, int64_t n, int64_t count, uint8_t* mask, uint64_t* out,
                   int64_t*) {
  int64_t j = 0;
  unsigned bits = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t v = x[i];
    if (v != 0) {
      if (j < count) out[j] = v;
      ++j, bits |= 1u << (i % 8);
    }
    if (i % 8 == 7 || i + 1 == n) mask[i / 8] = static_cast<uint8_t>(bits), bits = 0;
  }
  return j;
}

void unpack_block(const uint8_t* mask, const uint64_t* in, int64_t n, uint64_t* x) {
  int64_t j = 0;
  for (int64_t i = 0; i < n; ++i) x[i] = (mask[i / 8] >> (i % 8)) & 1u ? in[j++] : 0u;
}

// --- f32: compacted, then 31 bits a value in whole groups where no sign bit is set.

#if defined(__AVX2__)
// For each 8-bit mask m: lanes of the kept elements in order (compact), and for each lane k the
// index of its value among the kept ones (expand).
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
#endif

// The nonzero elements of x[0, n) in order into kept (room for n), their bits into mask,
// the OR of all of them into `any`; returns how many.
int64_t compact(const uint32_t* x, int64_t n, uint8_t* mask, uint32_t* kept, uint32_t& any) {
  int64_t j = 0, i = 0;
  any = 0;
#if defined(__AVX2__)
  const __m256i zero = _mm256_setzero_si256();
  __m256i all = zero;
  for (; i + 8 <= n; i += 8) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    all = _mm256_or_si256(all, v);
    const unsigned bits = ~static_cast<unsigned>(_mm256_movemask_ps(
                              _mm256_castsi256_ps(_mm256_cmpeq_epi32(v, zero)))) &
                          0xffu;
    const __m256i lanes =
        _mm256_load_si256(reinterpret_cast<const __m256i*>(kLanes.compress[bits]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(kept + j),
                        _mm256_permutevar8x32_epi32(v, lanes));
    j += __builtin_popcount(bits);
    mask[i / 8] = static_cast<uint8_t>(bits);
  }
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), all);
  for (uint32_t l : lanes) any |= l;
#endif
  unsigned bits = 0;
  for (; i < n; ++i) {
    const uint32_t v = x[i];
    any |= v;
    kept[j] = v;
    j += v != 0;
    bits |= static_cast<unsigned>(v != 0) << (i % 8);
    if (i % 8 == 7 || i + 1 == n) mask[i / 8] = static_cast<uint8_t>(bits), bits = 0;
  }
  return j;
}

// x[0, n) from its mask and kept values. Reads up to eight elements past the last kept one.
void expand(const uint8_t* mask, const uint32_t* kept, int64_t n, uint32_t* x) {
  int64_t j = 0, i = 0;
#if defined(__AVX2__)
  for (; i + 8 <= n; i += 8) {
    const unsigned bits = mask[i / 8];
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kept + j));
    const __m256i lanes = _mm256_load_si256(reinterpret_cast<const __m256i*>(kLanes.expand[bits]));
    const __m256i keep =
        _mm256_cmpgt_epi32(_mm256_and_si256(_mm256_set1_epi32(static_cast<int>(bits)),
                                            _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128)),
                           _mm256_setzero_si256());
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(x + i),
                        _mm256_and_si256(_mm256_permutevar8x32_epi32(v, lanes), keep));
    j += __builtin_popcount(bits);
  }
#endif
  for (; i < n; ++i) x[i] = (mask[i / 8] >> (i % 8)) & 1u ? kept[j++] : 0u;
}

// One group of kPackGroup values (sign bits clear) into 31 bits each: value i goes to lane
// i % 8, and each lane's 32 values form one bit stream, the first value in the low bits, over
// 31 words (word w of lane l at out[8 w + l]).
void pack_group(const uint32_t* v, uint32_t* out) {
#if defined(__AVX2__)
  __m256i acc = _mm256_setzero_si256();
  int bits = 0;  // bits of acc in use
  for (int i = 0, w = 0; i < 32; ++i) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + 8 * i));
    acc = _mm256_or_si256(acc, _mm256_sll_epi32(x, _mm_cvtsi32_si128(bits)));
    if (bits == 0) {
      bits = 31;
      continue;
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8 * w++), acc);
    acc = _mm256_srl_epi32(x, _mm_cvtsi32_si128(32 - bits));
    --bits;
  }
#else
  for (int l = 0; l < 8; ++l) {
    uint64_t acc = 0;
    int bits = 0;
    for (int i = 0, w = 0; i < 32; ++i) {
      acc |= static_cast<uint64_t>(v[8 * i + l]) << bits;
      bits += 31;
      if (bits >= 32) out[8 * w++ + l] = static_cast<uint32_t>(acc), acc >>= 32, bits -= 32;
    }
  }
#endif
}

void unpack_group(const uint32_t* in, uint32_t* v) {
#if defined(__AVX2__)
  const __m256i low31 = _mm256_set1_epi32(0x7fffffff);
  __m256i acc = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(v), _mm256_and_si256(acc, low31));
  acc = _mm256_srli_epi32(acc, 31);
  for (int i = 1; i < 32; ++i) {  // acc holds i bits of value i
    __m256i x = acc;
    if (i < 31) {
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 8 * i));
      x = _mm256_or_si256(x, _mm256_sll_epi32(w, _mm_cvtsi32_si128(i)));
      acc = _mm256_srl_epi32(w, _mm_cvtsi32_si128(31 - i));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + 8 * i), _mm256_and_si256(x, low31));
  }
#else
  for (int l = 0; l < 8; ++l) {
    uint64_t acc = 0;
    int bits = 0;
    for (int i = 0, w = 0; i < 32; ++i) {
      if (bits < 31) acc |= static_cast<uint64_t>(in[8 * w++ + l]) << bits, bits += 32;
      v[8 * i + l] = static_cast<uint32_t>(acc) & 0x7fffffffu;
      acc >>= 31, bits -= 31;
    }
  }
#endif
}

// The words n f32 elements' values take: their nonzero count, or packed_f32_words of it where
// no element has its sign bit set.
int64_t block_words(const uint32_t* x, int64_t n) {
  int64_t c = 0;
  uint32_t any = 0;
  for (int64_t i = 0; i < n; ++i) c += x[i] != 0, any |= x[i];
  return any >> 31 ? c : packed_f32_words(c);
}

// Sets kGroupedBit in *start where the values go grouped.
int64_t pack_block(const uint32_t* x, int64_t n, int64_t count, uint8_t* mask, uint32_t* out,
                   int64_t* start) {
  uint32_t* kept = block_scratch();
  uint32_t any;
  const int64_t c = compact(x, n, mask, kept, any);
  const bool grouped = any >> 31 == 0;
  const int64_t words = grouped ? packed_f32_words(c) : c;
  if (words != count) return words;  // another tensor's counts: nothing written
  if (grouped) *start |= kGroupedBit;
  const int64_t groups = grouped ? c / kPackGroup : 0;
  for (int64_t g = 0; g < groups; ++g)
    pack_group(kept + g * kPackGroup, out + g * (kPackGroup - 8));
  std::memcpy(out + groups * (kPackGroup - 8), kept + groups * kPackGroup,
              static_cast<size_t>(c - groups * kPackGroup) * sizeof(uint32_t));
  return words;
}

// The block's c values from `in`, grouped or not. Reads up to eight words past them where they
// are not grouped (the next block's, or the spares).
void unpack_block(const uint8_t* mask, const uint32_t* in, int64_t n, bool grouped, int64_t c,
                  uint32_t* x) {
  if (!grouped || c < kPackGroup) return expand(mask, in, n, x);
  uint32_t* kept = block_scratch();
  const int64_t groups = c / kPackGroup;
  for (int64_t g = 0; g < groups; ++g)
    unpack_group(in + g * (kPackGroup - 8), kept + g * kPackGroup);
  std::memcpy(kept + groups * kPackGroup, in + groups * (kPackGroup - 8),
              static_cast<size_t>(c - groups * kPackGroup) * sizeof(uint32_t));
  std::memset(kept + c, 0, 8 * sizeof(uint32_t));
  expand(mask, kept, n, x);
}

// --- both

template <typename U>
int64_t pack_counts_t(const U* x, int64_t n, std::vector<int64_t>& counts) {
  const int64_t blocks = packed_blocks(n);
  counts.assign(static_cast<size_t>(blocks), 0);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b)
    counts[static_cast<size_t>(b)] = block_words(x + b * kPackBlock, packed_block_size(n, b));
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
                   v.mask + b * (kPackBlock / 8), values + v.starts[b], &v.starts[b]);
  for (int64_t b = 0; b < blocks; ++b)
    FRUGAL_CHECK(found[static_cast<size_t>(b)] == counts[static_cast<size_t>(b)], "pack: block ", b,
                 " takes ", found[static_cast<size_t>(b)], " elements of values, its count says ",
                 counts[static_cast<size_t>(b)],
                 " (counts of another tensor?); the packed tensor is not valid");
}

template <typename U>
void unpack_t(const uint8_t* p, int64_t n, int64_t total, U* x) {
  const PackedView v = packed_view(const_cast<uint8_t*>(p), n);
  const int64_t blocks = packed_blocks(n);
  FRUGAL_CHECK(v.starts[0] == 0 || v.starts[0] == kGroupedBit,
               "unpack: packed tensor does not hold ", n,
               " elements: its first block starts at value ", v.starts[0]);
  std::vector<int64_t> nonzero(static_cast<size_t>(blocks));
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t next = b + 1 < blocks ? start_of(v.starts[b + 1]) : total;
    const int64_t held = next - start_of(v.starts[b]);
    const bool grouped = v.starts[b] & kGroupedBit;
    const int64_t c = mask_popcount(v.mask + b * (kPackBlock / 8), packed_block_size(n, b));
    FRUGAL_CHECK(v.starts[b] >= 0 && (sizeof(U) == 4 || !grouped) &&
                     held == (grouped ? packed_f32_words(c) : c),
                 "unpack: packed tensor does not hold ", n, " elements: block ", b, " holds ", held,
                 " elements of values for ", c, " nonzero", grouped ? " grouped" : "",
                 " (not a packed tensor, or overwritten)");
    nonzero[static_cast<size_t>(b)] = c;
  }
  const U* values = reinterpret_cast<const U*>(v.values);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* mask = v.mask + b * (kPackBlock / 8);
    const U* in = values + (v.starts[b] & kStartBits);
    if constexpr (sizeof(U) == 4)
      unpack_block(mask, in, packed_block_size(n, b), (v.starts[b] & kGroupedBit) != 0,
                   nonzero[static_cast<size_t>(b)], x + b * kPackBlock);
    else
      unpack_block(mask, in, packed_block_size(n, b), x + b * kPackBlock);
  }
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
