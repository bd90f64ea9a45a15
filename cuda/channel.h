// Per-channel bias kernels shared by linear and conv2d on CUDA (private): a tensor viewed as
// (N,K,S), S = 1 for (N,K). No CUDA headers: callers pass frugal tensors.
#pragma once

#include "core/tensor.h"

namespace frugal {

// y (N,K,S) += b (K), broadcast over n and s.
void add_channel_bias(const Tensor& b, int64_t N, int64_t K, int64_t S, Tensor& y);
// db (K) = sum over n and s of dy (N,K,S), in double by one fixed tree per channel.
void sum_channels(const Tensor& dy, int64_t N, int64_t K, int64_t S, Tensor& db);

}  // namespace frugal
