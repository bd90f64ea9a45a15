// Output written past the caches: a kernel's rows gathered into a small staging buffer and
// stored a whole aligned vector at a time with non-temporal stores, for outputs too large to be
// read again from the caches. A plain store to a line that is not cached first reads the line
// from memory (to own it), so writing an output with them moves its bytes twice; these move
// them once. Pure copies: the bits stored are the bits computed.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace frugal {

// Outputs of at least this many bytes are worth writing past the caches: 32 MiB, the last-level
// cache a core of this project's Zen 4 EPYC shares (the C library reports the whole package's,
// 320 MiB there). Smaller outputs may still be in that cache when the next layer reads them,
// or, with the layer's input, stay there between runs: MobileNetV2's 14x14 depthwise layer at
// batch 32 (14 MiB out) took 1.1-1.5x as long streamed, EfficientNet's 28x28 one (24 MiB) 0.9x
// while other tenants loaded the machine's memory and 0.94-1.15x when they did not, MobileNetV2's
// 56x56 ones (57 MiB) 0.7-0.9x either way (docs/BENCHMARKS.md, "depthwise outputs past the
// caches").
// set_stream_from changes it (tests: 0 streams every output).
inline std::atomic<int64_t>& stream_from_setting() {
  static std::atomic<int64_t> bytes{int64_t{32} << 20};
  return bytes;
}
inline int64_t stream_from() {
  return stream_from_setting().load(std::memory_order_relaxed);
}
inline void set_stream_from(int64_t bytes) {
  stream_from_setting().store(bytes, std::memory_order_relaxed);
}

// Elements appended in order to one contiguous output (one thread's share of it). Rows are
// written into the stage (reserve, then commit); whole vectors at aligned addresses leave
// with non-temporal stores, the unaligned head and the tail with plain ones. finish() stores
// what is held and orders the non-temporal stores before whatever the thread does next (an
// sfence), so a barrier after it hands the output to the other threads whole.
template <typename T>
class StreamOut {
 public:
#if defined(__AVX512F__)
  static constexpr int64_t kVector = 64;
#elif defined(__AVX__)
  static constexpr int64_t kVector = 32;
#else
  static constexpr int64_t kVector = 16;
#endif
  static constexpr int64_t kStage = 4096 / sizeof(T);  // elements staged at most
  // The longest row reserve() takes.
  static constexpr int64_t kRowMax = kStage / 2;

  explicit StreamOut(T* to) : to_(to) {}
  StreamOut(const StreamOut&) = delete;
  StreamOut& operator=(const StreamOut&) = delete;

  // Room for the next n <= kRowMax elements, to be written and then committed.
  T* reserve(int64_t n) {
    if (held_ + n > kStage) flush(false);
    return stage_ + held_;
  }
  void commit(int64_t n) {
    held_ += n;
  }

  void finish() {
    flush(true);
#if defined(__SSE2__)
    _mm_sfence();
#endif
  }

 private:
  // Stores what is held: the elements before the first aligned address plainly, then whole
  // vectors streamed, then the rest plainly if `all`, else kept for the next flush (to_ then
  // lies on a vector boundary, so only the first flush has a head).
  void flush(bool all) {
    constexpr int64_t L = kVector / static_cast<int64_t>(sizeof(T));
    const auto address = reinterpret_cast<uintptr_t>(to_);
    const int64_t head = std::min<int64_t>(
        held_, static_cast<int64_t>((kVector - address % kVector) % kVector / sizeof(T)));
    std::memcpy(to_, stage_, head * sizeof(T));
    const int64_t whole = (held_ - head) / L * L;
    for (int64_t i = head; i < head + whole; i += L) stream(stage_ + i, to_ + i);
    const int64_t rest = held_ - head - whole;
    if (all) {
      std::memcpy(to_ + head + whole, stage_ + head + whole, rest * sizeof(T));
      to_ += held_;
      held_ = 0;
      return;
    }
    std::memmove(stage_, stage_ + head + whole, rest * sizeof(T));
    to_ += head + whole;
    held_ = rest;
  }
  static void stream(const T* from, T* to) {
#if defined(__AVX512F__)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(to), _mm512_loadu_si512(from));
#elif defined(__AVX__)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(to),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from)));
#elif defined(__SSE2__)
    _mm_stream_si128(reinterpret_cast<__m128i*>(to),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(from)));
#else
    std::memcpy(to, from, kVector);
#endif
  }

  alignas(64) T stage_[kStage];
  T* to_;
  int64_t held_ = 0;
};

}  // namespace frugal
