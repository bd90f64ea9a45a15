// The CPU's gather along one axis and its backward: rows of I elements copied, or added back
// in ascending order of the index, so a repeated index sums the same way every run.
#include <algorithm>

#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

// x (O, D, I) -> y (O, K, I): y[o, k, :] = x[o, index[k], :].
template <typename T>
void gather_rows(const T* x, std::span<const int64_t> index, int64_t O, int64_t D, int64_t I,
                 T* y) {
  const auto K = static_cast<int64_t>(index.size());
  for (int64_t o = 0; o < O; ++o)
    for (int64_t k = 0; k < K; ++k)
      std::copy_n(x + (o * D + index[static_cast<size_t>(k)]) * I, I, y + (o * K + k) * I);
}

// dx (O, D, I) = 0, then dx[o, index[k], :] += dy[o, k, :] for k ascending.
template <typename T>
void scatter_add_rows(const T* dy, std::span<const int64_t> index, int64_t O, int64_t D, int64_t I,
                      T* dx) {
  const auto K = static_cast<int64_t>(index.size());
  std::fill_n(dx, O * D * I, T(0));
  for (int64_t o = 0; o < O; ++o)
    for (int64_t k = 0; k < K; ++k) {
      T* row = dx + (o * D + index[static_cast<size_t>(k)]) * I;
      const T* from = dy + (o * K + k) * I;
      for (int64_t i = 0; i < I; ++i) row[i] += from[i];
    }
}

}  // namespace

void CpuBackend::gather_forward(const Tensor& x, std::span<const int64_t> index, int64_t outer,
                                Tensor& y) {
  const auto [D, I] = check_gather("gather", x, index, outer, y, device());
  if (x.dtype() == DType::f32)
    gather_rows(x.data<float>(), index, outer, D, I, y.data<float>());
  else
    gather_rows(x.data<double>(), index, outer, D, I, y.data<double>());
}

void CpuBackend::gather_backward(const Tensor& dy, std::span<const int64_t> index, int64_t outer,
                                 Tensor& dx) {
  const auto [D, I] = check_gather("gather backward", dx, index, outer, dy, device());
  if (dx.dtype() == DType::f32)
    scatter_add_rows(dy.data<float>(), index, outer, D, I, dx.data<float>());
  else
    scatter_add_rows(dy.data<double>(), index, outer, D, I, dx.data<double>());
}

}  // namespace frugal
