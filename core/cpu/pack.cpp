// Packing kernels of the CPU backend (Backend::pack; the format is described there). Blocks of
// kPackBlock elements go to threads whole, each writing its own words at its start from the
// header, so the packed bytes do not depend on the thread count. Elements are compared as
// unsigned integers of their width, so -0.0 and NaN are nonzero and come back with every bit.
// A block keeps a mask where that takes fewer words than keeping its zeros as values (a ReLU's
// output; a block of an activation without zeros has none). f32 values go in groups of
// kPackGroup, each as narrow as its exponents' range allows: a group of a normal activation's
// values spans about 10 binades (4 exponent bits, 28 bits a value with the sign, 27 without).
// With AVX2, f32 goes eight elements at a time: a compare, a lane permutation from a table of
// the 256 masks and one store (compacting a block), or one load, the inverse permutation and a
// blend (expanding it), and a group's fields eight lanes at once. Every path writes the same
// bytes. Past 400 lines: the count, the pack and the checks before an unpack walk the same
// blocks and groups through the helpers here, and must agree to the word.
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

constexpr int64_t kStartBits = kPackMaskBit - 1;
int64_t start_of(int64_t header) {  // a negative (corrupt) header as it is, for the error
  return header < 0 ? header : header & kStartBits;
}

// Set bits among the first n of mask.
int64_t mask_popcount(const uint8_t* mask, int64_t n) {
  int64_t c = 0;
  for (int64_t i = 0; i < n / 8; ++i) c += __builtin_popcount(mask[i]);
  if (n % 8) c += __builtin_popcount(mask[n / 8] & ((1u << (n % 8)) - 1));
  return c;
}

// The calling thread's scratch (on the heap, so that OpenMP threads with small stacks can run
// the kernels): a block's elements and eight more, and a block's mask.
struct Scratch {
  std::vector<uint32_t> values = std::vector<uint32_t>(kPackBlock + 8);
  std::vector<uint8_t> mask = std::vector<uint8_t>(kPackBlock / 8);
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// --- f64: each element as it is, the nonzero ones after a mask where that is smaller.

int64_t nonzero_count(const uint64_t* x, int64_t n) {
  int64_t c = 0;
  for (int64_t i = 0; i < n; ++i) c += x[i] != 0;
  return c;
}

bool masked_f64(int64_t n, int64_t c) {
  return packed_mask_words(n, DType::f64) + c < n;
}

// Block of n elements: its words into out unless they are not `count` (counts of another
// tensor); returns how many it takes. Sets kPackMaskBit in *header where it keeps a mask.
int64_t pack_block(const uint64_t* x, int64_t n, int64_t count, uint64_t* out, int64_t* header) {
  const int64_t c = nonzero_count(x, n);
  const bool masked = masked_f64(n, c);
  const int64_t mw = masked ? packed_mask_words(n, DType::f64) : 0;
  if (mw + (masked ? c : n) != count || !out) return mw + (masked ? c : n);
  if (!masked) {
    std::memcpy(out, x, static_cast<size_t>(n) * sizeof(uint64_t));
    return count;
  }
  *header |= kPackMaskBit;
  uint8_t* mask = reinterpret_cast<uint8_t*>(out);
  std::memset(mask, 0, static_cast<size_t>(mw) * sizeof(uint64_t));
  uint64_t* values = out + mw;
  int64_t j = 0;
  for (int64_t i = 0; i < n; ++i)
    if (x[i] != 0) values[j++] = x[i], mask[i / 8] |= static_cast<uint8_t>(1u << (i % 8));
  return count;
}

void unpack_block(const uint64_t* in, int64_t n, bool masked, int64_t, uint64_t* x) {
  if (!masked) return static_cast<void>(std::memcpy(x, in, static_cast<size_t>(n) * 8));
  const uint8_t* mask = reinterpret_cast<const uint8_t*>(in);
  const uint64_t* values = in + packed_mask_words(n, DType::f64);
  int64_t j = 0;
  for (int64_t i = 0; i < n; ++i) x[i] = (mask[i / 8] >> (i % 8)) & 1u ? values[j++] : 0u;
}

// --- f32: groups of kPackGroup values as narrow as their exponents allow.

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

__m256i shift_left(__m256i v, int bits) {
  return _mm256_sll_epi32(v, _mm_cvtsi32_si128(bits));
}
__m256i shift_right(__m256i v, int bits) {  // 0 where bits is 32
  return _mm256_srl_epi32(v, _mm_cvtsi32_si128(bits));
}
#endif

// The nonzero elements of x[0, n) in order into kept (room for n), their bits into mask;
// returns how many.
int64_t compact(const uint32_t* x, int64_t n, uint8_t* mask, uint32_t* kept) {
  int64_t j = 0, i = 0;
#if defined(__AVX2__)
  const __m256i zero = _mm256_setzero_si256();
  for (; i + 8 <= n; i += 8) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
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
#endif
  unsigned bits = 0;
  for (; i < n; ++i) {
    const uint32_t v = x[i];
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

// How a group of kPackGroup values is held: exponents base + [0, 2^e), s sign bits (0 where
// every sign bit is clear), w = 23 + e + s bits a value.
struct GroupCode {
  uint32_t base = 0, e = 0, s = 0;
  int w() const { return static_cast<int>(23 + e + s); }
  uint32_t header() const { return pack_group_header(base, e, s); }
};

GroupCode group_code(const uint32_t* v) {
  uint32_t lo = 255, hi = 0, signs = 0;
#if defined(__AVX2__)
  const __m256i exponent = _mm256_set1_epi32(0xff);
  __m256i vlo = exponent, vhi = _mm256_setzero_si256(), vs = _mm256_setzero_si256();
  for (int i = 0; i < kPackGroup; i += 8) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + i));
    const __m256i ex = _mm256_and_si256(_mm256_srli_epi32(x, 23), exponent);
    vlo = _mm256_min_epu32(vlo, ex), vhi = _mm256_max_epu32(vhi, ex);
    vs = _mm256_or_si256(vs, x);
  }
  alignas(32) uint32_t l[8], h[8], s[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(l), vlo);
  _mm256_store_si256(reinterpret_cast<__m256i*>(h), vhi);
  _mm256_store_si256(reinterpret_cast<__m256i*>(s), vs);
  for (int k = 0; k < 8; ++k) lo = std::min(lo, l[k]), hi = std::max(hi, h[k]), signs |= s[k];
#else
  for (int i = 0; i < kPackGroup; ++i) {
    const uint32_t ex = (v[i] >> 23) & 0xffu;
    lo = std::min(lo, ex), hi = std::max(hi, ex), signs |= v[i];
  }
#endif
  GroupCode g;
  g.e = hi == lo ? 0 : 32 - static_cast<uint32_t>(__builtin_clz(hi - lo));
  g.s = signs >> 31;
  g.base = std::min(lo, 256 - (1u << g.e));  // base + 2^e - 1 <= 255 (an 8-bit range at 0)
  return g;
}

// A header word that pack_group wrote, as a code; false for any other word.
bool read_group_header(uint32_t h, GroupCode& g) {
  if ((h & 0xffffe000u) != kPackGroupTag) return false;
  g.base = h & 0xffu, g.e = (h >> 8) & 0xfu, g.s = (h >> 12) & 1u;
  return g.e <= 8 && g.base + (1u << g.e) - 1 <= 255;
}

// Words that c values take: whole groups (a header word and w words a lane each) and the rest
// as they are.
int64_t value_words(const uint32_t* v, int64_t c) {
  int64_t words = c % kPackGroup;
  for (int64_t g = 0; g < c / kPackGroup; ++g) words += 1 + 8 * group_code(v + g * kPackGroup).w();
  return words;
}

// One group of kPackGroup values into out (1 + 8 w words); returns the words written.
int64_t pack_group(const uint32_t* v, uint32_t* out) {
  const GroupCode g = group_code(v);
  const int w = g.w();
  *out++ = g.header();
#if defined(__AVX2__)
  const __m256i mantissa = _mm256_set1_epi32(0x7fffff), exponent = _mm256_set1_epi32(0xff);
  const __m256i base = _mm256_set1_epi32(static_cast<int>(g.base));
  __m256i acc = _mm256_setzero_si256();
  int bits = 0;  // bits of acc in use
  for (int i = 0; i < 32; ++i) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + 8 * i));
    const __m256i d = _mm256_sub_epi32(_mm256_and_si256(_mm256_srli_epi32(x, 23), exponent), base);
    const __m256i f =
        _mm256_or_si256(_mm256_or_si256(_mm256_and_si256(x, mantissa), _mm256_slli_epi32(d, 23)),
                        shift_left(_mm256_srli_epi32(x, 31), static_cast<int>(23 + g.e)));
    acc = _mm256_or_si256(acc, shift_left(f, bits));
    bits += w;
    if (bits >= 32) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), acc);
      out += 8, bits -= 32;
      acc = shift_right(f, w - bits);
    }
  }
#else
  for (int l = 0; l < 8; ++l) {
    uint64_t acc = 0;
    int bits = 0;
    for (int i = 0, k = 0; i < 32; ++i) {
      const uint32_t x = v[8 * i + l];
      const uint64_t f = (x & 0x7fffffu) | (((x >> 23) & 0xffu) - g.base) << 23 |
                         static_cast<uint64_t>(x >> 31) << (23 + g.e);
      acc |= f << bits;
      bits += w;
      if (bits >= 32) out[8 * k++ + l] = static_cast<uint32_t>(acc), acc >>= 32, bits -= 32;
    }
  }
#endif
  return 1 + 8 * w;
}

// The group of kPackGroup values `in` holds (its header checked by values_hold) into v;
// returns the words it takes.
int64_t unpack_group(const uint32_t* in, uint32_t* v) {
  GroupCode g;
  read_group_header(*in++, g);
  const int w = g.w();
  const uint32_t field = w == 32 ? 0xffffffffu : (1u << w) - 1;
#if defined(__AVX2__)
  const __m256i mantissa = _mm256_set1_epi32(0x7fffff), fmask = _mm256_set1_epi32(int(field));
  const __m256i emask = _mm256_set1_epi32(static_cast<int>((1u << g.e) - 1));
  const __m256i base = _mm256_set1_epi32(static_cast<int>(g.base));
  __m256i acc = _mm256_setzero_si256();
  int have = 0;  // bits of acc not yet taken
  for (int i = 0; i < 32; ++i) {
    __m256i f;
    if (have >= w) {
      f = _mm256_and_si256(acc, fmask);
      acc = shift_right(acc, w), have -= w;
    } else {
      const __m256i word = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in));
      in += 8;
      f = _mm256_and_si256(_mm256_or_si256(acc, shift_left(word, have)), fmask);
      acc = shift_right(word, w - have), have += 32 - w;
    }
    const __m256i ex = _mm256_add_epi32(_mm256_and_si256(_mm256_srli_epi32(f, 23), emask), base);
    const __m256i x =
        _mm256_or_si256(_mm256_or_si256(_mm256_and_si256(f, mantissa), _mm256_slli_epi32(ex, 23)),
                        _mm256_slli_epi32(shift_right(f, static_cast<int>(23 + g.e)), 31));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + 8 * i), x);
  }
#else
  for (int l = 0; l < 8; ++l) {
    uint64_t acc = 0;
    int have = 0;
    for (int i = 0, k = 0; i < 32; ++i) {
      if (have < w) acc |= static_cast<uint64_t>(in[8 * k++ + l]) << have, have += 32;
      const uint32_t f = static_cast<uint32_t>(acc) & field;
      acc >>= w, have -= w;
      const uint32_t ex = ((f >> 23) & ((1u << g.e) - 1)) + g.base;
      v[8 * i + l] =
          (f & 0x7fffffu) | ex << 23 | static_cast<uint32_t>(uint64_t{f} >> (23 + g.e)) << 31;
    }
  }
#endif
  return 1 + 8 * w;
}

// Checks the groups of c values at in[0, held) (every header, and that they and the rest fill
// it exactly); false where they do not.
bool values_hold(const uint32_t* in, int64_t held, int64_t c) {
  int64_t at = 0;
  for (int64_t g = 0; g < c / kPackGroup; ++g) {
    GroupCode code;
    if (at >= held || !read_group_header(in[at], code)) return false;
    at += 1 + 8 * code.w();
  }
  return at + c % kPackGroup == held;
}

// Block of n elements: its words into out (unless out is null or they are not `count`: counts
// of another tensor); returns how many it takes. Sets kPackMaskBit in *header where it keeps a
// mask: where the mask and the nonzero values take fewer words than every element as a value.
int64_t pack_block(const uint32_t* x, int64_t n, int64_t count, uint32_t* out, int64_t* header) {
  Scratch& s = scratch();
  uint32_t* kept = s.values.data();
  const int64_t c = compact(x, n, s.mask.data(), kept);
  const int64_t dense = value_words(x, n);
  const int64_t mw = packed_mask_words(n, DType::f32);
  const int64_t sparse = c < n ? mw + value_words(kept, c) : dense;
  const bool masked = sparse < dense;
  const int64_t words = masked ? sparse : dense;
  if (words != count || !out) return words;
  const uint32_t* v = x;
  int64_t m = n;
  if (masked) {
    *header |= kPackMaskBit;
    std::memset(out + mw - 1, 0, sizeof(uint32_t));
    std::memcpy(out, s.mask.data(), static_cast<size_t>(mask_bytes(n)));
    out += mw, v = kept, m = c;
  }
  for (int64_t g = 0; g < m / kPackGroup; ++g) out += pack_group(v + g * kPackGroup, out);
  std::memcpy(out, v + m / kPackGroup * kPackGroup,
              static_cast<size_t>(m % kPackGroup) * sizeof(uint32_t));
  return words;
}

// The block of n elements that `in` holds (checked by values_hold) into x.
void unpack_block(const uint32_t* in, int64_t n, bool masked, int64_t c, uint32_t* x) {
  uint32_t* v = x;
  const uint8_t* mask = reinterpret_cast<const uint8_t*>(in);
  if (masked) in += packed_mask_words(n, DType::f32), v = scratch().values.data();
  for (int64_t g = 0; g < c / kPackGroup; ++g) in += unpack_group(in, v + g * kPackGroup);
  std::memcpy(v + c / kPackGroup * kPackGroup, in,
              static_cast<size_t>(c % kPackGroup) * sizeof(uint32_t));
  if (!masked) return;
  std::memset(v + c, 0, 8 * sizeof(uint32_t));
  expand(mask, v, n, x);
}

bool values_hold(const uint64_t*, int64_t held, int64_t c) {
  return held == c;
}

// --- both

template <typename U>
int64_t pack_counts_t(const U* x, int64_t n, std::vector<int64_t>& counts) {
  const int64_t blocks = packed_blocks(n);
  counts.assign(static_cast<size_t>(blocks), 0);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b)
    counts[static_cast<size_t>(b)] =
        pack_block(x + b * kPackBlock, packed_block_size(n, b), -1, nullptr, nullptr);
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  return total;
}

template <typename U>
void pack_t(const U* x, int64_t n, std::span<const int64_t> counts, int64_t total, uint8_t* p) {
  int64_t* headers = reinterpret_cast<int64_t*>(p);
  U* words = reinterpret_cast<U*>(p + 8 * packed_blocks(n));
  const int64_t blocks = packed_blocks(n);
  int64_t start = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    headers[b] = start;
    start += counts[static_cast<size_t>(b)];
  }
  for (int k = 0; k < kPackSpare; ++k) words[total + k] = U(0);  // the spares
  std::vector<int64_t> found(static_cast<size_t>(blocks));
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b)
    found[static_cast<size_t>(b)] =
        pack_block(x + b * kPackBlock, packed_block_size(n, b), counts[static_cast<size_t>(b)],
                   words + headers[b], &headers[b]);
  for (int64_t b = 0; b < blocks; ++b)
    FRUGAL_CHECK(found[static_cast<size_t>(b)] == counts[static_cast<size_t>(b)], "pack: block ", b,
                 " takes ", found[static_cast<size_t>(b)], " elements of words, its count says ",
                 counts[static_cast<size_t>(b)],
                 " (counts of another tensor?); the packed tensor is not valid");
}

template <typename U>
void unpack_t(const uint8_t* p, int64_t n, int64_t total, U* x) {
  const int64_t* headers = reinterpret_cast<const int64_t*>(p);
  const U* words = reinterpret_cast<const U*>(p + 8 * packed_blocks(n));
  const int64_t blocks = packed_blocks(n);
  const DType t = sizeof(U) == 4 ? DType::f32 : DType::f64;
  FRUGAL_CHECK(start_of(headers[0]) == 0, "unpack: packed tensor does not hold ", n,
               " elements: its first block starts at word ", headers[0]);
  // Every block's header, mask and groups checked before anything is written.
  std::vector<int64_t> nonzero(static_cast<size_t>(blocks)), held(static_cast<size_t>(blocks));
  std::vector<char> fine(static_cast<size_t>(blocks));
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t start = start_of(headers[b]);
    const int64_t next = b + 1 < blocks ? start_of(headers[b + 1]) : total;
    const int64_t m = packed_block_size(n, b);
    const bool masked = headers[b] & kPackMaskBit;
    const int64_t mw = masked ? packed_mask_words(m, t) : 0;
    // (a negative header's own value as what the block holds, for the error: no overflow)
    const bool signs = start >= 0 && next >= 0;
    int64_t h = signs ? next - start : std::min(start, next), c = m;
    bool ok = signs && h >= mw && next <= total;
    if (ok && masked) c = mask_popcount(reinterpret_cast<const uint8_t*>(words + start), m);
    ok = ok && values_hold(words + start + mw, h - mw, c);
    nonzero[static_cast<size_t>(b)] = c, held[static_cast<size_t>(b)] = h;
    fine[static_cast<size_t>(b)] = ok;
  }
  for (int64_t b = 0; b < blocks; ++b)
    FRUGAL_CHECK(fine[static_cast<size_t>(b)], "unpack: packed tensor does not hold ", n,
                 " elements: block ", b, " holds ", held[static_cast<size_t>(b)],
                 " elements of words for ", nonzero[static_cast<size_t>(b)],
                 headers[b] & kPackMaskBit ? " nonzero values and a mask" : " values",
                 " (not a packed tensor, or overwritten)");
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b)
    unpack_block(words + start_of(headers[b]), packed_block_size(n, b),
                 (headers[b] & kPackMaskBit) != 0, nonzero[static_cast<size_t>(b)],
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
