// Batch normalization kernels of the CPU backend. x is viewed as (N,C,S) with S = H*W (1 for
// (N,C) input); every per-channel reduction runs in one thread (the loop is parallel over
// channels) and accumulates in double, in eight interleaved lanes summed in a fixed order, so
// the compiler can vectorize it and results are the same bits every run.
#include <array>
#include <cmath>
#include <vector>

#include "core/cpu/channel_sums.h"
#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

using cpu::channel_sums;

// y = (x - mean) * (inv_std * gamma) + beta over channel c; elementwise, so y may alias x.
template <typename T>
void normalize_channel(const ChannelDims& d, int64_t c, const T* x, T mean, T inv_std, T gamma,
                       T beta, T* y) {
  const T scale = inv_std * gamma;
  for (int64_t n = 0; n < d.N; ++n) {
    const int64_t base = (n * d.C + c) * d.S;
    for (int64_t s = 0; s < d.S; ++s) y[base + s] = (x[base + s] - mean) * scale + beta;
  }
}

// x (N,C,S)  gamma, beta, running_mean, running_var, mean, inv_std (C)  y (N,C,S)
template <typename T>
void batchnorm_forward_train_t(const ChannelDims& d, const T* x, const T* gamma, const T* beta,
                               T* rm, T* rv, double momentum, double eps, T* y, T* mean,
                               T* inv_std) {
  const double M = static_cast<double>(d.N * d.S);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < d.C; ++c) {
    const double mu =
        channel_sums<1>(d, c, [&](int64_t i) { return std::array<double, 1>{double(x[i])}; })[0] /
        M;
    const double sq = channel_sums<1>(d, c, [&](int64_t i) {
      const double e = x[i] - mu;
      return std::array<double, 1>{e * e};
    })[0];
    const double var = sq / M;  // biased: normalization; unbiased: running statistic
    mean[c] = static_cast<T>(mu);
    inv_std[c] = static_cast<T>(1.0 / std::sqrt(var + eps));
    rm[c] = static_cast<T>((1 - momentum) * rm[c] + momentum * mu);
    rv[c] = static_cast<T>((1 - momentum) * rv[c] + momentum * var * M / (M - 1));
    normalize_channel(d, c, x, mean[c], inv_std[c], gamma[c], beta[c], y);
  }
}

// x (N,C,S)  gamma, beta, running_mean, running_var (C)  y (N,C,S), y may alias x
template <typename T>
void batchnorm_forward_infer_t(const ChannelDims& d, const T* x, const T* gamma, const T* beta,
                               const T* rm, const T* rv, double eps, T* y) {
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < d.C; ++c) {
    const T inv_std = static_cast<T>(1.0 / std::sqrt(static_cast<double>(rv[c]) + eps));
    normalize_channel(d, c, x, rm[c], inv_std, gamma[c], beta[c], y);
  }
}

// x, y (N,C,S)  gamma, beta, mean, inv_std (C): the normalization of a training forward.
template <typename T>
void batchnorm_normalize_t(const ChannelDims& d, const T* x, const T* gamma, const T* beta,
                           const T* mean, const T* inv_std, T* y) {
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < d.C; ++c)
    normalize_channel(d, c, x, mean[c], inv_std[c], gamma[c], beta[c], y);
}

// dx = k (M dy - sum dy - x^ sum dy x^) over channel c with k = gamma inv_std / M and
// x^ = (v - shift) scale: v = x with (mean, inv_std), or v = y with (beta, 1 / gamma).
// Element by element after the sums, so dx may alias dy.
template <typename T>
void channel_dx(const ChannelDims& d, int64_t c, const T* v, const T* dy, double shift,
                double scale, double k, double M, double sum_dy, double sum_dy_xhat, T* dx) {
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t s = 0; s < d.S; ++s) {
      const int64_t i = (n * d.C + c) * d.S + s;
      const double xhat = (v[i] - shift) * scale;
      dx[i] = static_cast<T>(k * (M * dy[i] - sum_dy - xhat * sum_dy_xhat));
    }
}

// v, dy, dx (N,C,S)  gamma, inv_std, dgamma, dbeta (C); with x^ = (v - shift) scale (v = x,
// shift = mean, scale = inv_std; or v = y, shift = beta, scale = 1 / gamma, `from_output`)
// and M = N*S values per channel (y = gamma x^ + beta, mean and var from the batch):
//   dbeta = sum dy,  dgamma = sum dy x^,
//   dx = gamma inv_std / M * (M dy - sum dy - x^ sum dy x^)
// dx is written after both sums, element by element, so it may alias dy.
template <typename T>
void batchnorm_backward_t(const ChannelDims& d, const T* v, const T* dy, const T* gamma,
                          const T* shift, const T* inv_std, bool from_output, T* dx, T* dgamma,
                          T* dbeta) {
  const double M = static_cast<double>(d.N * d.S);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < d.C; ++c) {
    const double at = shift[c], inv = inv_std[c];
    const double scale = from_output ? 1.0 / static_cast<double>(gamma[c]) : inv;
    const auto [sum_dy, sum_dy_xhat] = channel_sums<2>(d, c, [&](int64_t i) {
      return std::array<double, 2>{double(dy[i]), dy[i] * ((v[i] - at) * scale)};
    });
    if (dgamma) dgamma[c] = static_cast<T>(sum_dy_xhat);
    if (dbeta) dbeta[c] = static_cast<T>(sum_dy);
    const double k = static_cast<double>(gamma[c]) * inv / M;
    if (dx) channel_dx(d, c, v, dy, at, scale, k, M, sum_dy, sum_dy_xhat, dx);
  }
}

// Synchronized batch norm: local per-channel sums (see Backend::batchnorm_sums).
template <typename T>
void batchnorm_sums_t(const ChannelDims& d, const T* x, const T* mean, const T* inv_std,
                      const T* dy, double* sums) {
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < d.C; ++c) {
    if (!mean) {
      sums[c] = channel_sums<1>(d, c, [&](int64_t i) { return std::array<double, 1>{x[i]}; })[0];
    } else if (!dy) {
      const double mu = mean[c];
      sums[c] = channel_sums<1>(d, c, [&](int64_t i) {
        const double e = x[i] - mu;
        return std::array<double, 1>{e * e};
      })[0];
    } else {
      const double mu = mean[c], inv = inv_std[c];
      const auto [sum_dy, sum_dy_xhat] = channel_sums<2>(d, c, [&](int64_t i) {
        return std::array<double, 2>{double(dy[i]), dy[i] * ((x[i] - mu) * inv)};
      });
      sums[c] = sum_dy;
      sums[d.C + c] = sum_dy_xhat;
    }
  }
}

template <typename T>
void batchnorm_sync_stats_t(int64_t C, const double* sum, const double* sq, double M,
                            double momentum, double eps, T* rm, T* rv, T* mean, T* inv_std) {
  for (int64_t c = 0; c < C; ++c) {
    if (!sq) {
      mean[c] = static_cast<T>(sum[c] / M);
      continue;
    }
    const double var = sq[c] / M;
    inv_std[c] = static_cast<T>(1.0 / std::sqrt(var + eps));
    rm[c] = static_cast<T>((1 - momentum) * rm[c] + momentum * double(mean[c]));
    rv[c] = static_cast<T>((1 - momentum) * rv[c] + momentum * var * M / (M - 1));
  }
}

template <typename T>
void batchnorm_backward_data_t(const ChannelDims& d, const T* x, const T* dy, const T* gamma,
                               const T* mean, const T* inv_std, const double* sums, double M,
                               double scale, T* dx) {
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < d.C; ++c) {
    const double mu = mean[c], inv = inv_std[c], k = static_cast<double>(gamma[c]) * inv / M;
    channel_dx(d, c, x, dy, mu, inv, k, M, sums[c] / scale, sums[d.C + c] / scale, dx);
  }
}

template <typename T>
T* ptr(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace

void CpuBackend::batchnorm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                         Tensor& running_mean, Tensor& running_var, double momentum,
                                         double eps, Tensor& y, Tensor& mean, Tensor& inv_std) {
  const ChannelDims d = check_batchnorm_train(
      x, y, {&gamma, &beta, &running_mean, &running_var, &mean, &inv_std}, device());
  if (x.dtype() == DType::f32)
    batchnorm_forward_train_t(d, x.data<float>(), gamma.data<float>(), beta.data<float>(),
                              running_mean.data<float>(), running_var.data<float>(), momentum, eps,
                              y.data<float>(), mean.data<float>(), inv_std.data<float>());
  else
    batchnorm_forward_train_t(d, x.data<double>(), gamma.data<double>(), beta.data<double>(),
                              running_mean.data<double>(), running_var.data<double>(), momentum,
                              eps, y.data<double>(), mean.data<double>(), inv_std.data<double>());
}

void CpuBackend::batchnorm_forward_infer(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                         const Tensor& running_mean, const Tensor& running_var,
                                         double eps, Tensor& y) {
  const ChannelDims d =
      check_batchnorm("batch_norm", x, y, {&gamma, &beta, &running_mean, &running_var}, device());
  if (x.dtype() == DType::f32)
    batchnorm_forward_infer_t(d, x.data<float>(), gamma.data<float>(), beta.data<float>(),
                              running_mean.data<float>(), running_var.data<float>(), eps,
                              y.data<float>());
  else
    batchnorm_forward_infer_t(d, x.data<double>(), gamma.data<double>(), beta.data<double>(),
                              running_mean.data<double>(), running_var.data<double>(), eps,
                              y.data<double>());
}

void CpuBackend::batchnorm_normalize(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                     const Tensor& mean, const Tensor& inv_std, Tensor& y) {
  const ChannelDims d =
      check_batchnorm("batch_norm", x, y, {&gamma, &beta, &mean, &inv_std}, device());
  if (x.dtype() == DType::f32)
    batchnorm_normalize_t(d, x.data<float>(), gamma.data<float>(), beta.data<float>(),
                          mean.data<float>(), inv_std.data<float>(), y.data<float>());
  else
    batchnorm_normalize_t(d, x.data<double>(), gamma.data<double>(), beta.data<double>(),
                          mean.data<double>(), inv_std.data<double>(), y.data<double>());
}

void CpuBackend::batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                    const Tensor& mean, const Tensor& inv_std, Tensor& dx,
                                    Tensor& dgamma, Tensor& dbeta) {
  const ChannelDims d =
      check_batchnorm_backward(x, dy, gamma, mean, inv_std, dx, dgamma, dbeta, device());
  if (x.dtype() == DType::f32)
    batchnorm_backward_t(d, x.data<float>(), dy.data<float>(), gamma.data<float>(),
                         mean.data<float>(), inv_std.data<float>(), false, ptr<float>(dx),
                         ptr<float>(dgamma), ptr<float>(dbeta));
  else
    batchnorm_backward_t(d, x.data<double>(), dy.data<double>(), gamma.data<double>(),
                         mean.data<double>(), inv_std.data<double>(), false, ptr<double>(dx),
                         ptr<double>(dgamma), ptr<double>(dbeta));
}

void CpuBackend::batchnorm_backward_from_output(const Tensor& y, const Tensor& dy,
                                                const Tensor& gamma, const Tensor& beta,
                                                const Tensor& inv_std, Tensor& dx, Tensor& dgamma,
                                                Tensor& dbeta) {
  const ChannelDims d =
      check_batchnorm_backward(y, dy, gamma, beta, inv_std, dx, dgamma, dbeta, device());
  check_invertible_weights("batch_norm backward from its output", gamma);
  if (y.dtype() == DType::f32)
    batchnorm_backward_t(d, y.data<float>(), dy.data<float>(), gamma.data<float>(),
                         beta.data<float>(), inv_std.data<float>(), true, ptr<float>(dx),
                         ptr<float>(dgamma), ptr<float>(dbeta));
  else
    batchnorm_backward_t(d, y.data<double>(), dy.data<double>(), gamma.data<double>(),
                         beta.data<double>(), inv_std.data<double>(), true, ptr<double>(dx),
                         ptr<double>(dgamma), ptr<double>(dbeta));
}

// sums f64: (C) from x, or (2C) from x and dy.
void CpuBackend::batchnorm_sums(const Tensor& x, const Tensor& mean, const Tensor& inv_std,
                                const Tensor& dy, Tensor& sums) {
  const char* op = "batchnorm_sums";
  std::vector<const Tensor*> per_channel;
  for (const Tensor* t : {&mean, &inv_std})
    if (t->defined()) per_channel.push_back(t);
  FRUGAL_CHECK(!dy.defined() || (mean.defined() && inv_std.defined()), op,
               ": dy needs mean and inv_std");
  const ChannelDims d = check_batchnorm(op, x, dy.defined() ? dy : x, {}, device());
  for (const Tensor* t : per_channel)
    FRUGAL_CHECK(t->shape() == Shape{d.C} && t->dtype() == x.dtype(), op, ": per-channel ",
                 t->shape(), " ", dtype_name(t->dtype()), " for x ", x.shape());
  const int64_t K = dy.defined() ? 2 : 1;
  FRUGAL_CHECK(sums.dtype() == DType::f64 && sums.numel() == K * d.C, op, ": sums ", sums.shape(),
               " ", dtype_name(sums.dtype()), ", expected ", K * d.C, " f64");
  if (x.dtype() == DType::f32)
    batchnorm_sums_t(d, x.data<float>(), ptr<float>(mean), ptr<float>(inv_std), ptr<float>(dy),
                     sums.data<double>());
  else
    batchnorm_sums_t(d, x.data<double>(), ptr<double>(mean), ptr<double>(inv_std), ptr<double>(dy),
                     sums.data<double>());
}

void CpuBackend::batchnorm_sync_stats(const Tensor& sum, const Tensor& sq, double M,
                                      double momentum, double eps, Tensor& running_mean,
                                      Tensor& running_var, Tensor& mean, Tensor& inv_std) {
  const char* op = "batchnorm_sync_stats";
  const int64_t C = mean.numel();
  FRUGAL_CHECK(M >= 2, op, ": ", M, " values per channel over all ranks; at least 2 are needed");
  for (const Tensor* t : {&sum, &sq})
    FRUGAL_CHECK(!t->defined() || (t->dtype() == DType::f64 && t->numel() == C), op, ": sums ",
                 t->shape(), ", expected ", C, " f64");
  for (const Tensor* t : {&running_mean, &running_var, &inv_std})
    FRUGAL_CHECK(t->meta() == mean.meta(), op, ": per-channel tensors differ: ", t->shape(), " ",
                 dtype_name(t->dtype()), " and ", mean.shape(), " ", dtype_name(mean.dtype()));
  check_device(op, {&sum, &sq, &running_mean, &running_var, &mean, &inv_std}, device());
  if (mean.dtype() == DType::f32)
    batchnorm_sync_stats_t(C, sum.data<double>(), ptr<double>(sq), M, momentum, eps,
                           running_mean.data<float>(), running_var.data<float>(),
                           mean.data<float>(), inv_std.data<float>());
  else
    batchnorm_sync_stats_t(C, sum.data<double>(), ptr<double>(sq), M, momentum, eps,
                           running_mean.data<double>(), running_var.data<double>(),
                           mean.data<double>(), inv_std.data<double>());
}

void CpuBackend::batchnorm_backward_data(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                         const Tensor& mean, const Tensor& inv_std,
                                         const Tensor& sums, double M, double scale, Tensor& dx) {
  const char* op = "batchnorm_backward_data";
  Tensor none;
  const ChannelDims d =
      check_batchnorm_backward(x, dy, gamma, mean, inv_std, dx, none, none, device());
  FRUGAL_CHECK(sums.dtype() == DType::f64 && sums.numel() == 2 * d.C, op, ": sums ", sums.shape(),
               ", expected ", 2 * d.C, " f64");
  FRUGAL_CHECK(M >= 1 && scale > 0, op, ": M ", M, " and scale ", scale, " must be positive");
  if (x.dtype() == DType::f32)
    batchnorm_backward_data_t(d, x.data<float>(), dy.data<float>(), gamma.data<float>(),
                              mean.data<float>(), inv_std.data<float>(), sums.data<double>(), M,
                              scale, dx.data<float>());
  else
    batchnorm_backward_data_t(d, x.data<double>(), dy.data<double>(), gamma.data<double>(),
                              mean.data<double>(), inv_std.data<double>(), sums.data<double>(), M,
                              scale, dx.data<double>());
}

}  // namespace frugal
