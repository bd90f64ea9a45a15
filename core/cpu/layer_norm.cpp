// Layer normalization kernels of the CPU backend. x is viewed as (R, C) rows; each row's
// statistics and its dx run in one thread (the loop is parallel over rows), dgamma and dbeta in
// one thread per block of columns summing the rows in order; every sum accumulates in double,
// the row sums in eight interleaved lanes added in a fixed order. So results are the same bits
// for any thread count, every run. Backward takes x^ from x, or from the output y (from_output).
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "core/cpu/channel_sums.h"
#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

using cpu::row_sums;

template <typename T>
void layernorm_forward_t(const RowDims& d, const T* x, const T* gamma, const T* beta, double eps,
                         T* y, T* mean, T* inv_std) {
  const double C = static_cast<double>(d.C);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < d.R; ++r) {
    const T* xr = x + r * d.C;
    T* yr = y + r * d.C;
    const double mu =
        row_sums<1>(d.C, [&](int64_t j) { return std::array<double, 1>{xr[j]}; })[0] / C;
    const double sq = row_sums<1>(d.C, [&](int64_t j) {
      const double e = xr[j] - mu;
      return std::array<double, 1>{e * e};
    })[0];
    const T m = static_cast<T>(mu), inv = static_cast<T>(1.0 / std::sqrt(sq / C + eps));
    if (mean) mean[r] = m;
    if (inv_std) inv_std[r] = inv;
    for (int64_t j = 0; j < d.C; ++j) yr[j] = (xr[j] - m) * inv * gamma[j] + beta[j];
  }
}

// Row r's x^ as a function of the column j, from v: x ((x - mean) inv_std, per row), or with
// kFromOutput y ((y - beta) times 1 / gamma, per column; inv_gamma holds 1 / gamma in double).
template <bool kFromOutput, typename T>
struct Normalized {
  const T *v, *mean, *inv_std, *beta;
  const double* inv_gamma;
  int64_t C;
  auto row(int64_t r) const {
    const T* vr = v + r * C;
    if constexpr (kFromOutput) {
      return [vr, b = beta, ig = inv_gamma](int64_t j) {
        return (static_cast<double>(vr[j]) - b[j]) * ig[j];
      };
    } else {
      const double mu = mean[r], inv = inv_std[r];
      return [vr, mu, inv](int64_t j) { return (vr[j] - mu) * inv; };
    }
  }
};

// dgamma = sum_r dy x^, dbeta = sum_r dy per column, rows in order, columns in blocks of 64
// over the threads; then dx row by row after its two sums, so dx may alias dy.
template <bool kFromOutput, typename T>
void layernorm_backward_t(const RowDims& d, const Normalized<kFromOutput, T>& xhat, const T* dy,
                          const T* gamma, const T* inv_std, T* dx, T* dgamma, T* dbeta) {
  constexpr int64_t kBlock = 64;
  if (dgamma || dbeta) {
    const int64_t blocks = (d.C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t j0 = b * kBlock, j1 = std::min(d.C, j0 + kBlock);
      double g[kBlock] = {}, s[kBlock] = {};
      for (int64_t r = 0; r < d.R; ++r) {
        const auto hat = xhat.row(r);
        const T* dyr = dy + r * d.C;
        for (int64_t j = j0; j < j1; ++j) {
          g[j - j0] += dyr[j] * hat(j);
          s[j - j0] += dyr[j];
        }
      }
      for (int64_t j = j0; j < j1; ++j) {
        if (dgamma) dgamma[j] = static_cast<T>(g[j - j0]);
        if (dbeta) dbeta[j] = static_cast<T>(s[j - j0]);
      }
    }
  }
  if (!dx) return;
  const double C = static_cast<double>(d.C);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < d.R; ++r) {
    const double inv = inv_std[r];
    const auto hat = xhat.row(r);
    const T* dyr = dy + r * d.C;
    const auto [sum_g, sum_g_xhat] = row_sums<2>(d.C, [&](int64_t j) {
      const double g = static_cast<double>(dyr[j]) * gamma[j];
      return std::array<double, 2>{g, g * hat(j)};
    });
    const double a = sum_g / C, b = sum_g_xhat / C;
    T* dxr = dx + r * d.C;
    for (int64_t j = 0; j < d.C; ++j) {
      const double g = static_cast<double>(dyr[j]) * gamma[j];
      dxr[j] = static_cast<T>(inv * (g - a - hat(j) * b));
    }
  }
}

template <typename T>
T* data_or_null(Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace

void CpuBackend::layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                   double eps, Tensor& y, Tensor& mean, Tensor& inv_std) {
  const RowDims d = check_layernorm_forward(x, gamma, beta, y, mean, inv_std, device());
  if (x.dtype() == DType::f32)
    layernorm_forward_t(d, x.data<float>(), gamma.data<float>(), beta.data<float>(), eps,
                        y.data<float>(), data_or_null<float>(mean), data_or_null<float>(inv_std));
  else
    layernorm_forward_t(d, x.data<double>(), gamma.data<double>(), beta.data<double>(), eps,
                        y.data<double>(), data_or_null<double>(mean),
                        data_or_null<double>(inv_std));
}

void CpuBackend::layernorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                    const Tensor& mean, const Tensor& inv_std, Tensor& dx,
                                    Tensor& dgamma, Tensor& dbeta) {
  const RowDims d =
      check_layernorm_backward(x, dy, gamma, mean, inv_std, dx, dgamma, dbeta, device());
  auto run = [&]<typename T>() {
    const Normalized<false, T> xhat{x.data<T>(), mean.data<T>(), inv_std.data<T>(),
                                    nullptr,     nullptr,        d.C};
    layernorm_backward_t(d, xhat, dy.data<T>(), gamma.data<T>(), inv_std.data<T>(),
                         data_or_null<T>(dx), data_or_null<T>(dgamma), data_or_null<T>(dbeta));
  };
  if (x.dtype() == DType::f32)
    run.template operator()<float>();
  else
    run.template operator()<double>();
}

void CpuBackend::layernorm_backward_from_output(const Tensor& y, const Tensor& dy,
                                                const Tensor& gamma, const Tensor& beta,
                                                const Tensor& inv_std, Tensor& dx, Tensor& dgamma,
                                                Tensor& dbeta) {
  const char* op = "layer_norm backward from its output";
  const RowDims d =
      check_layernorm(op, y, dy, {&gamma, &beta, &dgamma, &dbeta}, {&inv_std}, device());
  for (auto [what, t] : {std::pair{"dy", &dy}, {"beta", &beta}, {"inv_std", &inv_std}})
    check_defined(op, what, *t);
  FRUGAL_CHECK(!dx.defined() || dx.meta() == y.meta(), op, ": dx ", dx.shape(), " for y ",
               y.shape());
  if (dx.defined()) check_device(op, {&dx}, device());
  check_invertible_weights(op, gamma, "element", "--ln-from-output");
  auto run = [&]<typename T>() {
    std::vector<double> inv_gamma(static_cast<size_t>(d.C));  // C values, freed on return
    for (int64_t j = 0; j < d.C; ++j)
      inv_gamma[static_cast<size_t>(j)] = 1.0 / static_cast<double>(gamma.data<T>()[j]);
    const Normalized<true, T> xhat{y.data<T>(),    nullptr,          nullptr,
                                   beta.data<T>(), inv_gamma.data(), d.C};
    layernorm_backward_t(d, xhat, dy.data<T>(), gamma.data<T>(), inv_std.data<T>(),
                         data_or_null<T>(dx), data_or_null<T>(dgamma), data_or_null<T>(dbeta));
  };
  if (y.dtype() == DType::f32)
    run.template operator()<float>();
  else
    run.template operator()<double>();
}

}  // namespace frugal
