// The CPU's softmax over one axis: x seen as (outer, C, inner); each (outer, inner) column is
// one softmax, its maximum and sums taken along C in order (sums in f64), the columns of one
// outer index together so the inner loop runs over contiguous memory.
#include <cmath>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

template <typename T>
void softmax_forward_t(const T* x, T* y, AxisDims d) {
#pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < d.outer; ++o) {
    std::vector<T> m(static_cast<size_t>(d.inner));
    std::vector<double> s(static_cast<size_t>(d.inner), 0.0);
    const T* xo = x + o * d.C * d.inner;
    T* yo = y + o * d.C * d.inner;
    for (int64_t i = 0; i < d.inner; ++i) m[static_cast<size_t>(i)] = xo[i];
    for (int64_t c = 1; c < d.C; ++c)
      for (int64_t i = 0; i < d.inner; ++i) {
        const T v = xo[c * d.inner + i];
        T& mi = m[static_cast<size_t>(i)];
        mi = v > mi || std::isnan(v) ? v : mi;
      }
    for (int64_t c = 0; c < d.C; ++c)
      for (int64_t i = 0; i < d.inner; ++i) {
        const T e = std::exp(xo[c * d.inner + i] - m[static_cast<size_t>(i)]);
        yo[c * d.inner + i] = e;
        s[static_cast<size_t>(i)] += static_cast<double>(e);
      }
    for (int64_t c = 0; c < d.C; ++c)
      for (int64_t i = 0; i < d.inner; ++i)
        yo[c * d.inner + i] =
            static_cast<T>(static_cast<double>(yo[c * d.inner + i]) / s[static_cast<size_t>(i)]);
  }
}

template <typename T>
void softmax_backward_t(const T* y, const T* dy, T* dx, AxisDims d) {
#pragma omp parallel for schedule(static)
  for (int64_t o = 0; o < d.outer; ++o) {
    std::vector<double> dot(static_cast<size_t>(d.inner), 0.0);
    const int64_t base = o * d.C * d.inner;
    for (int64_t c = 0; c < d.C; ++c)
      for (int64_t i = 0; i < d.inner; ++i) {
        const int64_t at = base + c * d.inner + i;
        dot[static_cast<size_t>(i)] += static_cast<double>(dy[at]) * static_cast<double>(y[at]);
      }
    for (int64_t c = 0; c < d.C; ++c)
      for (int64_t i = 0; i < d.inner; ++i) {
        const int64_t at = base + c * d.inner + i;
        dx[at] = static_cast<T>(static_cast<double>(y[at]) *
                                (static_cast<double>(dy[at]) - dot[static_cast<size_t>(i)]));
      }
  }
}

}  // namespace

void CpuBackend::softmax_forward(const Tensor& x, int axis, Tensor& y) {
  const AxisDims d = check_softmax("softmax", x, y, Tensor(), axis, device());
  if (x.numel() == 0) return;
  if (x.dtype() == DType::f32)
    softmax_forward_t(x.data<float>(), y.data<float>(), d);
  else
    softmax_forward_t(x.data<double>(), y.data<double>(), d);
}

void CpuBackend::softmax_backward(const Tensor& y, const Tensor& dy, int axis, Tensor& dx) {
  const AxisDims d = check_softmax("softmax backward", y, dx, dy, axis, device());
  if (y.numel() == 0) return;
  if (y.dtype() == DType::f32)
    softmax_backward_t(y.data<float>(), dy.data<float>(), dx.data<float>(), d);
  else
    softmax_backward_t(y.data<double>(), dy.data<double>(), dx.data<double>(), d);
}

}  // namespace frugal
