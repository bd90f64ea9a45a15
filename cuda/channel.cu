// Per-channel bias add and bias gradient on CUDA; see cuda/channel.h.
#include "cuda/channel.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {
// y (N,K,S) += b (K); one thread per element of y.
template <typename T>
__global__ void add_channel_bias_kernel(const T* b, int64_t K, int64_t S, T* y, int64_t n) {
  const int64_t i = thread_index();
  if (i < n) y[i] += b[i / S % K];
}

// dy (N,K,S)  db (K); one block per channel k, thread t sums the elements j = t, t + kThreads,
// ... of the channel's N*S values, then block_sum.
template <typename T>
__global__ void sum_channels_kernel(const T* dy, int64_t N, int64_t K, int64_t S, T* db) {
  const int64_t k = blockIdx.x, M = N * S;
  double sum = 0;
  for (int64_t j = threadIdx.x; j < M; j += kThreads) sum += dy[(j / S * K + k) * S + j % S];
  sum = block_sum(sum);
  if (threadIdx.x == 0) db[k] = static_cast<T>(sum);
}
}  // namespace

void add_channel_bias(const Tensor& b, int64_t N, int64_t K, int64_t S, Tensor& y) {
  const int64_t n = N * K * S;
  if (y.dtype() == DType::f32)
    launch(n, add_channel_bias_kernel<float>, b.device_data<float>(), K, S, y.device_data<float>(),
           n);
  else
    launch(n, add_channel_bias_kernel<double>, b.device_data<double>(), K, S,
           y.device_data<double>(), n);
}

void sum_channels(const Tensor& dy, int64_t N, int64_t K, int64_t S, Tensor& db) {
  if (dy.dtype() == DType::f32)
    launch_blocks(K, sum_channels_kernel<float>, dy.device_data<float>(), N, K, S,
                  db.device_data<float>());
  else
    launch_blocks(K, sum_channels_kernel<double>, dy.device_data<double>(), N, K, S,
                  db.device_data<double>());
}

}  // namespace frugal
