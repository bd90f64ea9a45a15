// Reduction kernels of the CPU backend. x is viewed as (R, C) rows; each row runs in one
// thread (the loop is parallel over rows), its sums in double in batch norm's fixed lanes
// (core/cpu/channel_sums.h), so results are the same bits for any thread count, every run.
#include <array>
#include <cmath>
#include <limits>

#include "core/cpu/channel_sums.h"
#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

template <typename F>
double row_sum(int64_t C, const F& f) {
  return cpu::channel_sums<1>(ChannelDims{1, 1, C}, 0,
                              [&](int64_t j) { return std::array<double, 1>{f(j)}; })[0];
}

// The column of row xr's first maximum (`max`) or minimum; the first NaN wins.
template <typename T>
int64_t extreme(const T* xr, int64_t C, bool max) {
  int64_t at = 0;
  for (int64_t j = 0; j < C; ++j) {
    if (std::isnan(xr[j])) return j;
    if (max ? xr[j] > xr[at] : xr[j] < xr[at]) at = j;
  }
  return at;
}

template <typename T>
void reduce_forward_t(Reduction r, const RowDims& d, const T* x, T* y, int32_t* index) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < d.R; ++i) {
    const T* xr = x + i * d.C;
    double v = 0;
    switch (r) {
      case Reduction::sum:
      case Reduction::mean:
        v = row_sum(d.C, [&](int64_t j) { return static_cast<double>(xr[j]); });
        if (r == Reduction::mean) v /= static_cast<double>(d.C);
        break;
      case Reduction::max:
      case Reduction::min: {
        const int64_t at = extreme(xr, d.C, r == Reduction::max);
        if (index) index[i] = static_cast<int32_t>(at);
        v = xr[at];
        break;
      }
      case Reduction::sum_square:
      case Reduction::l2:
        v = row_sum(d.C, [&](int64_t j) {
          const double e = xr[j];
          return e * e;
        });
        if (r == Reduction::l2) v = std::sqrt(v);
        break;
      case Reduction::l1:
        v = row_sum(d.C, [&](int64_t j) { return std::abs(static_cast<double>(xr[j])); });
        break;
      case Reduction::log_sum_exp: {
        // m + log sum e^(x - m); NaN (the first NaN) or an infinite m stands as it is
        // (logsumexp of [inf, 1] is inf, of [-inf, -inf] -inf, as in PyTorch).
        const double m = xr[extreme(xr, d.C, true)];
        v = std::isfinite(m)
                ? m + std::log(row_sum(d.C, [&](int64_t j) { return std::exp(xr[j] - m); }))
                : m;
        break;
      }
    }
    y[i] = static_cast<T>(v);
  }
}

template <typename T>
void reduce_backward_t(Reduction r, const RowDims& d, const T* x, const T* y, const int32_t* index,
                       const T* dy, T* dx) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < d.R; ++i) {
    const T yi = y ? y[i] : T(0);
    const int64_t at = index ? index[i] : -1;
    for (int64_t j = 0; j < d.C; ++j) {
      const int64_t k = i * d.C + j;
      dx[k] = reduce_math::grad<T>(r, dy[i], x ? x[k] : T(0), yi, d.C, j == at);
    }
  }
}

}  // namespace

void CpuBackend::reduce_rows_forward(Reduction r, const Tensor& x, Tensor& y, Tensor& index) {
  const RowDims d = check_reduce_forward(r, x, y, index, device());
  int32_t* idx = index.defined() ? index.data<int32_t>() : nullptr;
  if (x.dtype() == DType::f32)
    reduce_forward_t(r, d, x.data<float>(), y.data<float>(), idx);
  else
    reduce_forward_t(r, d, x.data<double>(), y.data<double>(), idx);
}

void CpuBackend::reduce_rows_backward(Reduction r, const Tensor& x, const Tensor& y,
                                      const Tensor& index, const Tensor& dy, Tensor& dx) {
  const RowDims d = check_reduce_backward(r, x, y, index, dy, dx, device());
  const int32_t* idx = reduction_keeps_index(r) ? index.data<int32_t>() : nullptr;
  if (dx.dtype() == DType::f32)
    reduce_backward_t(r, d, reduction_reads_input(r) ? x.data<float>() : nullptr,
                      reduction_reads_output(r) ? y.data<float>() : nullptr, idx, dy.data<float>(),
                      dx.data<float>());
  else
    reduce_backward_t(r, d, reduction_reads_input(r) ? x.data<double>() : nullptr,
                      reduction_reads_output(r) ? y.data<double>() : nullptr, idx,
                      dy.data<double>(), dx.data<double>());
}

}  // namespace frugal
