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

template <typename T>
struct Value {
  const T* x;
  __device__ void operator()(int64_t i, int64_t, double* out) const { out[0] = x[i]; }
};

template <typename T>
__global__ void store_sums_kernel(const double* sums, T* db, int64_t K) {
  const int64_t k = thread_index();
  if (k < K) db[k] = static_cast<T>(sums[k]);
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

void sum_channels(const Tensor& dy, int64_t N, int64_t K, int64_t S, Tensor& db, double* partials,
                  double* sums) {
  const ChannelSplit split = channel_split("bias gradient", N, K, S, 1);
  if (dy.dtype() == DType::f32) {
    channel_sums<1>(split, Value<float>{dy.device_data<float>()}, partials, sums);
    launch(K, store_sums_kernel<float>, static_cast<const double*>(sums), db.device_data<float>(),
           K);
  } else {
    channel_sums<1>(split, Value<double>{dy.device_data<double>()}, partials, sums);
    launch(K, store_sums_kernel<double>, static_cast<const double*>(sums), db.device_data<double>(),
           K);
  }
}

}  // namespace frugal
