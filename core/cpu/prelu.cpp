// PReLU kernels of the CPU backend: elementwise passes parallel over (sample, channel) planes;
// the slope's gradient summed per channel in double in channel sums' fixed order (and the
// channels' sums in order where one slope serves them all), so the same bits for any thread
// count, every run.
#include <array>

#include "core/cpu/channel_sums.h"
#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

template <typename T>
void prelu_forward_t(const ChannelDims& d, const T* x, const T* slope, bool shared, T* y) {
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < d.N * d.C; ++p) {
    const T a = slope[shared ? 0 : p % d.C];
    const T* xp = x + p * d.S;
    T* yp = y + p * d.S;
    for (int64_t s = 0; s < d.S; ++s) yp[s] = xp[s] > T(0) ? xp[s] : a * xp[s];
  }
}

// per_channel: C doubles of the op's backward scratch.
template <typename T>
void prelu_backward_t(const ChannelDims& d, const T* x, const T* dy, const T* slope, bool shared,
                      T* dx, T* dslope, double* per_channel) {
  if (dslope) {
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < d.C; ++c)
      per_channel[c] = cpu::channel_sums<1>(d, c, [&](int64_t i) {
        return std::array<double, 1>{x[i] > T(0) ? 0.0 : static_cast<double>(x[i]) * dy[i]};
      })[0];
    if (shared) {
      double sum = 0;
      for (int64_t c = 0; c < d.C; ++c) sum += per_channel[c];
      dslope[0] = static_cast<T>(sum);
    } else {
      for (int64_t c = 0; c < d.C; ++c) dslope[c] = static_cast<T>(per_channel[c]);
    }
  }
  if (!dx) return;
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < d.N * d.C; ++p) {
    const T a = slope[shared ? 0 : p % d.C];
    const T *xp = x + p * d.S, *dyp = dy + p * d.S;
    T* dxp = dx + p * d.S;
    for (int64_t s = 0; s < d.S; ++s) dxp[s] = xp[s] > T(0) ? dyp[s] : a * dyp[s];
  }
}

template <typename T>
T* data_or_null(Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace

void CpuBackend::prelu_forward(const Tensor& x, const Tensor& slope, Tensor& y) {
  check_defined("prelu", "y", y);
  const ChannelDims d = check_prelu("prelu", x, slope, {&y}, Tensor(), device());
  const bool shared = slope.numel() == 1 && d.C > 1;
  if (x.dtype() == DType::f32)
    prelu_forward_t(d, x.data<float>(), slope.data<float>(), shared, y.data<float>());
  else
    prelu_forward_t(d, x.data<double>(), slope.data<double>(), shared, y.data<double>());
}

size_t CpuBackend::prelu_backward_scratch(const TensorMeta& x) const {
  return static_cast<size_t>(x.shape[1]) * sizeof(double);
}

void CpuBackend::prelu_backward(const Tensor& x, const Tensor& dy, const Tensor& slope, Tensor& dx,
                                Tensor& dslope, const Tensor& scratch) {
  check_defined("prelu backward", "dy", dy);
  const ChannelDims d = check_prelu("prelu backward", x, slope, {&dy, &dx}, dslope, device());
  double* sums = dslope.defined() ? scratch_doubles("prelu backward", scratch,
                                                    prelu_backward_scratch(x.meta()), device())
                                  : nullptr;
  const bool shared = slope.numel() == 1 && d.C > 1;
  if (x.dtype() == DType::f32)
    prelu_backward_t(d, x.data<float>(), dy.data<float>(), slope.data<float>(), shared,
                     data_or_null<float>(dx), data_or_null<float>(dslope), sums);
  else
    prelu_backward_t(d, x.data<double>(), dy.data<double>(), slope.data<double>(), shared,
                     data_or_null<double>(dx), data_or_null<double>(dslope), sums);
}

}  // namespace frugal
