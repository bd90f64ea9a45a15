// Group normalization kernels of the CPU backend. x (N, C, S) is N x G rows, each a sample's
// C/G consecutive channels (contiguous). A row's statistics, its per-channel gradient sums and
// its dx run in one thread (loops parallel over rows); dgamma and dbeta add the samples' sums
// in order. Every sum accumulates in double in eight interleaved lanes added in a fixed order,
// so results are the same bits for any thread count, every run.
#include <array>
#include <cmath>

#include "core/cpu/channel_sums.h"
#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

using cpu::row_sums;

template <typename T>
void groupnorm_forward_t(const GroupDims& d, const T* x, const T* gamma, const T* beta, double eps,
                         T* y, T* mean, T* inv_std) {
  const int64_t L = d.row();
  const double count = static_cast<double>(L);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < d.N * d.G; ++r) {
    const T* xr = x + r * L;
    T* yr = y + r * L;
    const double mu =
        row_sums<1>(L, [&](int64_t j) { return std::array<double, 1>{xr[j]}; })[0] / count;
    const double sq = row_sums<1>(L, [&](int64_t j) {
      const double e = xr[j] - mu;
      return std::array<double, 1>{e * e};
    })[0];
    const T m = static_cast<T>(mu), inv = static_cast<T>(1.0 / std::sqrt(sq / count + eps));
    if (mean) mean[r] = m;
    if (inv_std) inv_std[r] = inv;
    const int64_t c0 = (r % d.G) * d.Cg;
    for (int64_t k = 0; k < d.Cg; ++k) {
      const T g = gamma[c0 + k], b = beta[c0 + k];
      const T* xc = xr + k * d.S;
      T* yc = yr + k * d.S;
      for (int64_t s = 0; s < d.S; ++s) yc[s] = (xc[s] - m) * inv * g + b;
    }
  }
}

// Per (sample, channel): the sums of dy and dy x^ over the channel's S values (one pass over x
// and dy); dgamma and dbeta add them over the samples in order, each row's dx sums add them
// over its channels (weighted by gamma) in order; then dx row by row, so dx may alias dy.
// sums: 2 N C doubles of the op's backward scratch.
template <typename T>
void groupnorm_backward_t(const GroupDims& d, const T* x, const T* dy, const T* gamma,
                          const T* mean, const T* inv_std, T* dx, T* dgamma, T* dbeta,
                          double* sums) {
  const int64_t L = d.row(), C = d.G * d.Cg, rows = d.N * d.G;
  double* sum_dy = sums;
  double* sum_dy_xhat = sums + d.N * C;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const double mu = mean[r], inv = inv_std[r];
    for (int64_t k = 0; k < d.Cg; ++k) {
      const T *xc = x + r * L + k * d.S, *dyc = dy + r * L + k * d.S;
      const auto [s, sx] = row_sums<2>(d.S, [&](int64_t j) {
        const double g = dyc[j];
        return std::array<double, 2>{g, g * ((xc[j] - mu) * inv)};
      });
      const int64_t at = r * d.Cg + k;  // (n, c) = n * C + g * Cg + k
      sum_dy[at] = s;
      sum_dy_xhat[at] = sx;
    }
  }
  if (dgamma || dbeta) {
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < C; ++c) {
      double g = 0, b = 0;
      for (int64_t n = 0; n < d.N; ++n) {
        g += sum_dy_xhat[n * C + c];
        b += sum_dy[n * C + c];
      }
      if (dgamma) dgamma[c] = static_cast<T>(g);
      if (dbeta) dbeta[c] = static_cast<T>(b);
    }
  }
  if (!dx) return;
  const double count = static_cast<double>(L);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const double mu = mean[r], inv = inv_std[r];
    const int64_t c0 = (r % d.G) * d.Cg;
    double sum_g = 0, sum_g_xhat = 0;
    for (int64_t k = 0; k < d.Cg; ++k) {
      const int64_t at = r * d.Cg + k;
      sum_g += static_cast<double>(gamma[c0 + k]) * sum_dy[at];
      sum_g_xhat += static_cast<double>(gamma[c0 + k]) * sum_dy_xhat[at];
    }
    const double a = sum_g / count, b = sum_g_xhat / count;
    for (int64_t k = 0; k < d.Cg; ++k) {
      const double gk = gamma[c0 + k];
      const T *xc = x + r * L + k * d.S, *dyc = dy + r * L + k * d.S;
      T* dxc = dx + r * L + k * d.S;
      for (int64_t s = 0; s < d.S; ++s)
        dxc[s] = static_cast<T>(inv * (dyc[s] * gk - a - ((xc[s] - mu) * inv) * b));
    }
  }
}

template <typename T>
T* data_or_null(Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace

void CpuBackend::groupnorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                   int64_t groups, double eps, Tensor& y, Tensor& mean,
                                   Tensor& inv_std) {
  const GroupDims d = check_groupnorm_forward(x, gamma, beta, groups, y, mean, inv_std, device());
  if (x.dtype() == DType::f32)
    groupnorm_forward_t(d, x.data<float>(), gamma.data<float>(), beta.data<float>(), eps,
                        y.data<float>(), data_or_null<float>(mean), data_or_null<float>(inv_std));
  else
    groupnorm_forward_t(d, x.data<double>(), gamma.data<double>(), beta.data<double>(), eps,
                        y.data<double>(), data_or_null<double>(mean),
                        data_or_null<double>(inv_std));
}

size_t CpuBackend::groupnorm_backward_scratch(const TensorMeta& x) const {
  return 2 * static_cast<size_t>(x.shape[0] * x.shape[1]) * sizeof(double);
}

void CpuBackend::groupnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                    const Tensor& mean, const Tensor& inv_std, int64_t groups,
                                    Tensor& dx, Tensor& dgamma, Tensor& dbeta,
                                    const Tensor& scratch) {
  const GroupDims d =
      check_groupnorm_backward(x, dy, gamma, mean, inv_std, groups, dx, dgamma, dbeta, device());
  double* sums = scratch_doubles("group_norm backward", scratch,
                                 groupnorm_backward_scratch(x.meta()), device());
  if (x.dtype() == DType::f32)
    groupnorm_backward_t(d, x.data<float>(), dy.data<float>(), gamma.data<float>(),
                         mean.data<float>(), inv_std.data<float>(), data_or_null<float>(dx),
                         data_or_null<float>(dgamma), data_or_null<float>(dbeta), sums);
  else
    groupnorm_backward_t(d, x.data<double>(), dy.data<double>(), gamma.data<double>(),
                         mean.data<double>(), inv_std.data<double>(), data_or_null<double>(dx),
                         data_or_null<double>(dgamma), data_or_null<double>(dbeta), sums);
}

}  // namespace frugal
