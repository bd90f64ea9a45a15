// Batch normalization kernels of the CUDA backend, custom so that they follow the CPU twin's
// semantics exactly (biased variance to normalize, unbiased for the running variance, saved
// inv_std). x is viewed as (N,C,S); the per-channel sums of training and backward run in double
// over many blocks, in an order the shape alone fixes (launch.cuh's channel_sums), so results
// are the same bits on every run; normalization and dx run one thread per element.
#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {

// The per-channel sums, spread over many blocks in an order fixed by the shape
// (launch.cuh's channel_sums): sum x; then sum (x - mean)^2 around the exact double mean; in
// backward, sum dy and sum dy x^.
template <typename T>
struct SumX {
  const T* x;
  __device__ void operator()(int64_t i, int64_t, double* out) const { out[0] = x[i]; }
};
template <typename T>
struct SumSquaredDeviation {
  const T* x;
  const double* sum_x;
  double M;
  __device__ void operator()(int64_t i, int64_t c, double* out) const {
    const double e = x[i] - sum_x[c] / M;
    out[0] = e * e;
  }
};
template <typename T>
struct SumDyDyXhat {
  const T* x;
  const T* dy;
  const T* mean;
  const T* inv_std;
  __device__ void operator()(int64_t i, int64_t c, double* out) const {
    const double mu = mean[c], inv = inv_std[c];
    out[0] = dy[i];
    out[1] = dy[i] * ((x[i] - mu) * inv);
  }
};

// Per channel, from the sums of x and of squared deviations: mean, inv_std and the running
// statistics (biased variance to normalize, unbiased for the running variance).
template <typename T>
__global__ void batchnorm_statistics_kernel(ChannelDims d, const double* sum_x,
                                            const double* sum_sq, T* rm, T* rv, double momentum,
                                            double eps, T* mean, T* inv_std) {
  const int64_t c = thread_index();
  if (c >= d.C) return;
  const double M = static_cast<double>(d.N * d.S);
  const double mu = sum_x[c] / M, var = sum_sq[c] / M;
  mean[c] = static_cast<T>(mu);
  inv_std[c] = static_cast<T>(1.0 / sqrt(var + eps));
  rm[c] = static_cast<T>((1 - momentum) * rm[c] + momentum * mu);
  rv[c] = static_cast<T>((1 - momentum) * rv[c] + momentum * var * M / (M - 1));  // unbiased
}

// y = (x - mean) (inv_std gamma) + beta; one thread per element; y may be x.
template <typename T>
__global__ void batchnorm_normalize_kernel(ChannelDims d, const T* x, const T* gamma, const T* beta,
                                           const T* mean, const T* inv_std, T* y, int64_t n) {
  const int64_t i = thread_index();
  if (i >= n) return;
  const int64_t c = i / d.S % d.C;
  y[i] = (x[i] - mean[c]) * (inv_std[c] * gamma[c]) + beta[c];
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

// x, dy, dx (N,C,S)  gamma, mean, inv_std (C); sums (C, 2): sum dy and sum dy x^ per channel;
// with x^ = (x - mean) inv_std and M = N*S values per channel:
//   dx = gamma inv_std / M * (M dy - sum dy - x^ sum dy x^)
// One thread per element; dx may alias dy.
template <typename T>
__global__ void batchnorm_dx_kernel(ChannelDims d, const T* x, const T* dy, const T* gamma,
                                    const T* mean, const T* inv_std, const double* sums, T* dx,
                                    int64_t n) {
  const int64_t i = thread_index();
  if (i >= n) return;
  const int64_t c = i / d.S % d.C;
  const double M = static_cast<double>(d.N * d.S);
  const double mu = mean[c], inv = inv_std[c];
  const double k = gamma[c] * inv / M;
  const double xhat = (x[i] - mu) * inv;
  dx[i] = static_cast<T>(k * (M * dy[i] - sums[2 * c] - xhat * sums[2 * c + 1]));
}

// dgamma = sum dy x^, dbeta = sum dy (either may be null).
template <typename T>
__global__ void batchnorm_dparams_kernel(const double* sums, T* dgamma, T* dbeta, int64_t C) {
  const int64_t c = thread_index();
  if (c >= C) return;
  if (dgamma) dgamma[c] = static_cast<T>(sums[2 * c + 1]);
  if (dbeta) dbeta[c] = static_cast<T>(sums[2 * c]);
}

template <typename T>
T* ptr(const Tensor& t) {
  return t.defined() ? t.device_data<T>() : nullptr;
}

template <typename T>
void forward_train_t(const ChannelDims& d, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                     Tensor& rm, Tensor& rv, double momentum, double eps, Tensor& y, Tensor& mean,
                     Tensor& inv_std, double* partials, double* sums) {
  const ChannelSplit split = channel_split("batch_norm", d.N, d.C, d.S, 1);
  const T* xp = x.device_data<T>();
  double *sum_x = sums, *sum_sq = sums + d.C;
  channel_sums<1>(split, SumX<T>{xp}, partials, sum_x);
  channel_sums<1>(split, SumSquaredDeviation<T>{xp, sum_x, static_cast<double>(d.N * d.S)},
                  partials, sum_sq);
  launch(d.C, batchnorm_statistics_kernel<T>, d, static_cast<const double*>(sum_x),
         static_cast<const double*>(sum_sq), rm.device_data<T>(), rv.device_data<T>(), momentum,
         eps, mean.device_data<T>(), inv_std.device_data<T>());
  const int64_t n = x.numel();
  launch(n, batchnorm_normalize_kernel<T>, d, xp, gamma.device_data<T>(), beta.device_data<T>(),
         static_cast<const T*>(mean.device_data<T>()),
         static_cast<const T*>(inv_std.device_data<T>()), y.device_data<T>(), n);
}

template <typename T>
void backward_t(const ChannelDims& d, const Tensor& x, const Tensor& dy, const Tensor& gamma,
                const Tensor& mean, const Tensor& inv_std, Tensor& dx, Tensor& dgamma,
                Tensor& dbeta, double* partials, double* sums) {
  const ChannelSplit split = channel_split("batch_norm backward", d.N, d.C, d.S, 2);
  channel_sums<2>(split,
                  SumDyDyXhat<T>{x.device_data<T>(), dy.device_data<T>(), mean.device_data<T>(),
                                 inv_std.device_data<T>()},
                  partials, sums);
  launch(d.C, batchnorm_dparams_kernel<T>, static_cast<const double*>(sums), ptr<T>(dgamma),
         ptr<T>(dbeta), d.C);
  if (!dx.defined()) return;
  const int64_t n = x.numel();
  launch(n, batchnorm_dx_kernel<T>, d, static_cast<const T*>(x.device_data<T>()),
         static_cast<const T*>(dy.device_data<T>()), static_cast<const T*>(gamma.device_data<T>()),
         static_cast<const T*>(mean.device_data<T>()),
         static_cast<const T*>(inv_std.device_data<T>()), static_cast<const double*>(sums),
         dx.device_data<T>(), n);
}

}  // namespace

void CudaBackend::batchnorm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                          Tensor& running_mean, Tensor& running_var,
                                          double momentum, double eps, Tensor& y, Tensor& mean,
                                          Tensor& inv_std) {
  const ChannelDims d = check_batchnorm_train(
      x, y, {&gamma, &beta, &running_mean, &running_var, &mean, &inv_std}, device());
  if (x.dtype() == DType::f32)
    forward_train_t<float>(d, x, gamma, beta, running_mean, running_var, momentum, eps, y, mean,
                           inv_std, partials(), sums());
  else
    forward_train_t<double>(d, x, gamma, beta, running_mean, running_var, momentum, eps, y, mean,
                            inv_std, partials(), sums());
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

void CudaBackend::batchnorm_normalize(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                      const Tensor& mean, const Tensor& inv_std, Tensor& y) {
  const ChannelDims d =
      check_batchnorm("batch_norm", x, y, {&gamma, &beta, &mean, &inv_std}, device());
  const int64_t n = x.numel();
  if (x.dtype() == DType::f32)
    launch(n, batchnorm_normalize_kernel<float>, d, x.device_data<float>(),
           gamma.device_data<float>(), beta.device_data<float>(), mean.device_data<float>(),
           inv_std.device_data<float>(), y.device_data<float>(), n);
  else
    launch(n, batchnorm_normalize_kernel<double>, d, x.device_data<double>(),
           gamma.device_data<double>(), beta.device_data<double>(), mean.device_data<double>(),
           inv_std.device_data<double>(), y.device_data<double>(), n);
}

void CudaBackend::batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                     const Tensor& mean, const Tensor& inv_std, Tensor& dx,
                                     Tensor& dgamma, Tensor& dbeta) {
  const ChannelDims d =
      check_batchnorm_backward(x, dy, gamma, mean, inv_std, dx, dgamma, dbeta, device());
  if (x.dtype() == DType::f32)
    backward_t<float>(d, x, dy, gamma, mean, inv_std, dx, dgamma, dbeta, partials(), sums());
  else
    backward_t<double>(d, x, dy, gamma, mean, inv_std, dx, dgamma, dbeta, partials(), sums());
}

}  // namespace frugal
