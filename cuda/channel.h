// Per-channel bias kernels shared by linear and conv2d on CUDA (private): a tensor viewed as
// (N,K,S), S = 1 for (N,K). No CUDA headers: callers pass frugal tensors.
#pragma once

#include "core/tensor.h"

namespace frugal {

// Doubles of device memory the backend keeps for per-channel partial sums and for the sums
// (CudaBackend::reduce_; launch.cuh's channel_sums).
constexpr int64_t kPartialDoubles = int64_t{1} << 19, kSumDoubles = int64_t{1} << 14;

// y (N,K,S) += b (K), broadcast over n and s.
void add_channel_bias(const Tensor& b, int64_t N, int64_t K, int64_t S, Tensor& y);
// db (K) = sum over n and s of dy (N,K,S), in double in an order fixed by the shape
// (launch.cuh's channel_sums), through the backend's reduction memory.
void sum_channels(const Tensor& dy, int64_t N, int64_t K, int64_t S, Tensor& db, double* partials,
                  double* sums);

}  // namespace frugal
