// Launch geometry and device helpers shared by the custom CUDA kernels (private; .cu only).
// Every kernel runs kThreads threads per block on the default stream; reductions use one fixed
// tree (block_sum), never atomics, so results are the same bits on every run.
#pragma once

#include <cstdint>

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
