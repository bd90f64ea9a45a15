// Launch geometry and device helpers shared by the custom CUDA kernels (private; .cu only).
// Every kernel runs kThreads threads per block on the default stream; reductions use one fixed
// tree (block_sum) or, where a sequential loop's bits are wanted, ordered_block_sum; never
// atomics, so results are the same bits on every run.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/error.h"
#include "cuda/channel.h"
#include "cuda/check.h"

namespace frugal {

constexpr int kThreads = 256;  // threads per block; a multiple of the warp size

// Launches kernel on `blocks` blocks of kThreads threads and checks the launch.
template <typename... Params, typename... Args>
void launch_blocks(int64_t blocks, void (*kernel)(Params...), Args... args) {
  if (blocks <= 0) return;
  kernel<<<static_cast<unsigned>(blocks), kThreads>>>(args...);
  FRUGAL_CUDA_CHECK(cudaGetLastError());
}

// One thread per element of n: thread_index() in [0, n) and some past the end.
template <typename... Params, typename... Args>
void launch(int64_t n, void (*kernel)(Params...), Args... args) {
  launch_blocks((n + kThreads - 1) / kThreads, kernel, args...);
}

// ReLU on the bits: x where x > 0 or x is NaN, else +0. Any float comparison and select here
// compiles to a max instruction that turns a NaN into the canonical NaN (seen on an H100: bits
// 0x7fc00000 became 0x7fffffff), where the CPU keeps x's bits; integers cannot be rewritten so.
__device__ inline float relu_bits(float x) {
  const int32_t b = __float_as_int(x);
  const bool keep = b > 0 || (b & 0x7fffffff) > 0x7f800000;  // positive (+inf, +NaN) or any NaN
  return __int_as_float(keep ? b : 0);
}
__device__ inline double relu_bits(double x) {
  const long long b = __double_as_longlong(x);
  const bool keep = b > 0 || (b & 0x7fffffffffffffffll) > 0x7ff0000000000000ll;
  return __longlong_as_double(keep ? b : 0ll);
}

__device__ inline int64_t thread_index() {
  return static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
}

// Sum of v over the block, by one fixed tree; every thread of the block calls it and gets it.
__device__ inline double block_sum(double v) {
  __shared__ double partial[kThreads];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int k = kThreads / 2; k > 0; k /= 2) {
    if (static_cast<int>(threadIdx.x) < k) partial[threadIdx.x] += partial[threadIdx.x + k];
    __syncthreads();
  }
  const double sum = partial[0];
  __syncthreads();  // a second call may overwrite partial
  return sum;
}

// Sum over j in [0, count) of term(j), in the order of a sequential loop (j = 0, 1, ...; the
// first term as it is), so the bits are a one-thread loop's: the block computes the terms
// kThreads at a time, each thread one (coalesced loads, the index arithmetic in parallel), and
// thread 0 alone adds them in order. Every thread of the block calls it; thread 0 gets the sum.
// For sums too long for one thread per sum: a loop of thousands of terms in one thread, as in a
// global pool or a broadcast operand's gradient, left most of the GPU idle on latency.
template <typename T, typename Term>
__device__ T ordered_block_sum(int64_t count, Term term) {
  __shared__ T staged[kThreads];
  T acc = T(0);
  for (int64_t base = 0; base < count; base += kThreads) {
    const int64_t j = base + threadIdx.x;
    if (j < count) staged[threadIdx.x] = term(j);
    __syncthreads();
    if (threadIdx.x == 0) {
      const int m = static_cast<int>(min(count - base, static_cast<int64_t>(kThreads)));
      for (int t = 0; t < m; ++t) acc = base + t == 0 ? staged[t] : acc + staged[t];
    }
    __syncthreads();
  }
  return acc;
}

// Whether a sum of `count` terms for each of `sums` outputs goes to ordered_block_sum (a block
// per output) rather than one thread per output: where the terms are many and the block count
// fits a grid.
inline bool ordered_blocks_pay(int64_t count, int64_t sums) {
  return count >= 512 && sums < (int64_t{1} << 31);
}

// Per-channel sums over (N,C,S) data spread over many blocks, in an order fixed by the shape
// alone: block (b, c) sums the values j in [b chunk, (b+1) chunk) of channel c (j = n S + s) by
// block_sum's tree into partials[(c B + b) Q + q]; channel_finish then adds the B partials of
// each channel in order into sums[c Q + q]. One block per channel left the GPU nearly idle
// where channels are few and large (CIFAR ResNets: 16 channels of 65536 values).
struct ChannelSplit {
  int64_t C = 0, S = 0, M = 0;  // channels, values per sample and channel, values per channel
  int64_t B = 1, chunk = 0;     // blocks per channel, values per block
};

// Q quantities per value: `f(i, c, out)` sets out[0..Q) for element i of channel c.
template <int Q, typename F>
__global__ void channel_partials_kernel(ChannelSplit s, F f, double* partials) {
  const int64_t b = blockIdx.x, c = blockIdx.y;
  const int64_t end = min((b + 1) * s.chunk, s.M);
  double acc[Q] = {};
  for (int64_t j = b * s.chunk + threadIdx.x; j < end; j += kThreads) {
    double v[Q];
    f((j / s.S * s.C + c) * s.S + j % s.S, c, v);
    for (int q = 0; q < Q; ++q) acc[q] += v[q];
  }
  for (int q = 0; q < Q; ++q) {
    const double total = block_sum(acc[q]);
    if (threadIdx.x == 0) partials[(c * s.B + b) * Q + q] = total;
  }
}

template <int Q>
__global__ void channel_finish_kernel(ChannelSplit s, const double* partials, double* sums) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= s.C) return;
  for (int q = 0; q < Q; ++q) {
    double t = 0;
    for (int64_t b = 0; b < s.B; ++b) t += partials[(c * s.B + b) * Q + q];
    sums[c * Q + q] = t;
  }
}

// The split of (N,C,S) for Q quantities: about 16384 values a block, at most 64 blocks a
// channel, within kPartialDoubles; throws if C * Q exceeds kSumDoubles.
inline ChannelSplit channel_split(const char* op, int64_t N, int64_t C, int64_t S, int Q) {
  FRUGAL_CHECK(C * Q <= kSumDoubles, op, ": ", C, " channels; the CUDA backend reduces at most ",
               kSumDoubles / Q, " at once");
  ChannelSplit s{.C = C, .S = S, .M = N * S};
  const int64_t most = std::max<int64_t>(1, std::min<int64_t>(64, kPartialDoubles / (C * Q)));
  s.B = std::max<int64_t>(1, std::min(most, (s.M + 16383) / 16384));
  s.chunk = (s.M + s.B - 1) / s.B;
  return s;
}

// Sums of f over every channel into sums[c Q + q] (device), through partials (device).
template <int Q, typename F>
void channel_sums(const ChannelSplit& s, F f, double* partials, double* sums) {
  if (s.C == 0) return;
  channel_partials_kernel<Q>
      <<<dim3(static_cast<unsigned>(s.B), static_cast<unsigned>(s.C)), kThreads>>>(s, f, partials);
  FRUGAL_CUDA_CHECK(cudaGetLastError());
  launch_blocks((s.C + kThreads - 1) / kThreads, channel_finish_kernel<Q>, s,
                static_cast<const double*>(partials), sums);
}

// Bit masks: u8, bit i%8 of byte i/8. In a one-thread-per-element launch, element i sits in
// lane i%32, so a warp ballot holds 4 whole bytes; lanes 0, 8, 16, 24 write one byte each and no
// byte has two writers. Every lane must call it (bit = false past the end); mask may be null.
__device__ inline void store_mask_bit(uint8_t* mask, int64_t i, int64_t n, bool bit) {
  const unsigned bits = __ballot_sync(0xffffffffu, bit);
  const unsigned lane = threadIdx.x % 32;
  if (mask != nullptr && lane % 8 == 0 && i < n) mask[i / 8] = static_cast<uint8_t>(bits >> lane);
}

__device__ inline bool mask_bit(const uint8_t* mask, int64_t i) {
  return (mask[i / 8] >> (i % 8)) & 1;
}

__device__ inline float device_exp(float x) {
  return expf(x);
}
__device__ inline double device_exp(double x) {
  return exp(x);
}
__device__ inline float device_log(float x) {
  return logf(x);
}
__device__ inline double device_log(double x) {
  return log(x);
}

}  // namespace frugal
