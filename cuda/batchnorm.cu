// Batch normalization kernels of the CUDA backend, custom so that they follow the CPU twin's
// semantics exactly (biased variance to normalize, unbiased for the running variance, saved
// inv_std). x is viewed as (N,C,S); training and backward run one block per channel, summing
// in double by block_sum's fixed tree, so results are the same bits on every run.
#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {

// Index of value j in [0, N*S) of channel c: sample j / S, position j % S.
__device__ inline int64_t at(const ChannelDims& d, int64_t c, int64_t j) {
  return (j / d.S * d.C + c) * d.S + j % d.S;
}

// x, y (N,C,S)  gamma, beta, running_mean, running_var, mean, inv_std (C); one block per
// channel. y is written after both sums, each element by the thread that read it: y may be x.
template <typename T>
__global__ void batchnorm_forward_train_kernel(ChannelDims d, const T* x, const T* gamma,
                                               const T* beta, T* rm, T* rv, double momentum,
                                               double eps, T* y, T* mean, T* inv_std) {
  const int64_t c = blockIdx.x, M = d.N * d.S;
  double sum = 0, sq = 0;
  for (int64_t j = threadIdx.x; j < M; j += kThreads) sum += x[at(d, c, j)];
  const double mu = block_sum(sum) / static_cast<double>(M);
  for (int64_t j = threadIdx.x; j < M; j += kThreads) {
    const double e = x[at(d, c, j)] - mu;
    sq += e * e;
  }
  const double var = block_sum(sq) / static_cast<double>(M);  // biased: normalization
  const T m = static_cast<T>(mu), inv = static_cast<T>(1.0 / sqrt(var + eps));
  if (threadIdx.x == 0) {
    mean[c] = m;
    inv_std[c] = inv;
    rm[c] = static_cast<T>((1 - momentum) * rm[c] + momentum * mu);
    rv[c] = static_cast<T>((1 - momentum) * rv[c] + momentum * var * M / (M - 1));  // unbiased
  }
  const T scale = inv * gamma[c], b = beta[c];
  for (int64_t j = threadIdx.x; j < M; j += kThreads) {
    const int64_t i = at(d, c, j);
    y[i] = (x[i] - m) * scale + b;
  }
}

// x, y (N,C,S)  gamma, beta, running_mean, running_var (C); one thread per element; y may be x.
template <typename T>
__global__ void batchnorm_forward_infer_kernel(ChannelDims d, const T* x, const T* gamma,
                                               const T* beta, const T* rm, const T* rv, double eps,
                                               T* y, int64_t n) {
  const int64_t i = thread_index();
  if (i >= n) return;
  const int64_t c = i / d.S % d.C;
  const T inv = static_cast<T>(1.0 / sqrt(static_cast<double>(rv[c]) + eps));
  y[i] = (x[i] - rm[c]) * (inv * gamma[c]) + beta[c];
}

// x, dy, dx (N,C,S)  gamma, mean, inv_std, dgamma, dbeta (C); with x^ = (x - mean) inv_std and
// M = N*S values per channel:  dbeta = sum dy,  dgamma = sum dy x^,
//   dx = gamma inv_std / M * (M dy - sum dy - x^ sum dy x^)
// One block per channel; dx is written after both sums, so it may alias dy.
template <typename T>
__global__ void batchnorm_backward_kernel(ChannelDims d, const T* x, const T* dy, const T* gamma,
                                          const T* mean, const T* inv_std, T* dx, T* dgamma,
                                          T* dbeta) {
  const int64_t c = blockIdx.x, M = d.N * d.S;
  const double mu = mean[c], inv = inv_std[c];
  double sum_dy = 0, sum_dy_xhat = 0;
  for (int64_t j = threadIdx.x; j < M; j += kThreads) {
    const int64_t i = at(d, c, j);
    sum_dy += dy[i];
    sum_dy_xhat += dy[i] * ((x[i] - mu) * inv);
  }
  sum_dy = block_sum(sum_dy);
  sum_dy_xhat = block_sum(sum_dy_xhat);
  if (threadIdx.x == 0) {
    if (dgamma) dgamma[c] = static_cast<T>(sum_dy_xhat);
    if (dbeta) dbeta[c] = static_cast<T>(sum_dy);
  }
  if (!dx) return;
  const double k = gamma[c] * inv / static_cast<double>(M);
  for (int64_t j = threadIdx.x; j < M; j += kThreads) {
    const int64_t i = at(d, c, j);
    const double xhat = (x[i] - mu) * inv;
    dx[i] = static_cast<T>(k * (static_cast<double>(M) * dy[i] - sum_dy - xhat * sum_dy_xhat));
  }
}

template <typename T>
T* ptr(const Tensor& t) {
  return t.defined() ? t.device_data<T>() : nullptr;
}

template <typename T>
void backward_t(const ChannelDims& d, const Tensor& x, const Tensor& dy, const Tensor& gamma,
                const Tensor& mean, const Tensor& inv_std, Tensor& dx, Tensor& dgamma,
                Tensor& dbeta) {
  launch_blocks(d.C, batchnorm_backward_kernel<T>, d, x.device_data<T>(), dy.device_data<T>(),
                gamma.device_data<T>(), mean.device_data<T>(), inv_std.device_data<T>(), ptr<T>(dx),
                ptr<T>(dgamma), ptr<T>(dbeta));
}

}  // namespace

void CudaBackend::batchnorm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                          Tensor& running_mean, Tensor& running_var,
                                          double momentum, double eps, Tensor& y, Tensor& mean,
                                          Tensor& inv_std) {
  const ChannelDims d = check_batchnorm(
      "batch_norm", x, y, {&gamma, &beta, &running_mean, &running_var, &mean, &inv_std}, device());
  FRUGAL_CHECK(d.N * d.S > 1, "batch_norm: training needs more than 1 value per channel, got x ",
               x.shape());
  if (x.dtype() == DType::f32)
    launch_blocks(d.C, batchnorm_forward_train_kernel<float>, d, x.device_data<float>(),
                  gamma.device_data<float>(), beta.device_data<float>(),
                  running_mean.device_data<float>(), running_var.device_data<float>(), momentum,
                  eps, y.device_data<float>(), mean.device_data<float>(),
                  inv_std.device_data<float>());
  else
    launch_blocks(d.C, batchnorm_forward_train_kernel<double>, d, x.device_data<double>(),
                  gamma.device_data<double>(), beta.device_data<double>(),
                  running_mean.device_data<double>(), running_var.device_data<double>(), momentum,
                  eps, y.device_data<double>(), mean.device_data<double>(),
                  inv_std.device_data<double>());
}

void CudaBackend::batchnorm_forward_infer(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                          const Tensor& running_mean, const Tensor& running_var,
                                          double eps, Tensor& y) {
  const ChannelDims d =
      check_batchnorm("batch_norm", x, y, {&gamma, &beta, &running_mean, &running_var}, device());
  const int64_t n = x.numel();
  if (x.dtype() == DType::f32)
    launch(n, batchnorm_forward_infer_kernel<float>, d, x.device_data<float>(),
           gamma.device_data<float>(), beta.device_data<float>(), running_mean.device_data<float>(),
           running_var.device_data<float>(), eps, y.device_data<float>(), n);
  else
    launch(n, batchnorm_forward_infer_kernel<double>, d, x.device_data<double>(),
           gamma.device_data<double>(), beta.device_data<double>(),
           running_mean.device_data<double>(), running_var.device_data<double>(), eps,
           y.device_data<double>(), n);
}

void CudaBackend::batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                     const Tensor& mean, const Tensor& inv_std, Tensor& dx,
                                     Tensor& dgamma, Tensor& dbeta) {
  const ChannelDims d =
      check_batchnorm_backward(x, dy, gamma, mean, inv_std, dx, dgamma, dbeta, device());
  if (x.dtype() == DType::f32)
    backward_t<float>(d, x, dy, gamma, mean, inv_std, dx, dgamma, dbeta);
  else
    backward_t<double>(d, x, dy, gamma, mean, inv_std, dx, dgamma, dbeta);
}

}  // namespace frugal
