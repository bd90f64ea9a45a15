// Threshold, dropout, masked scale (their shared backward), add and channel concatenation
// of the CPU backend. Elementwise kernels give the same bits in place (y aliasing x) as out
// of place: each element is read before it is written, by the same thread.
#include <cstring>
#include <span>

#include "core/cpu/bitmask.h"
#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"
#include "core/rng.h"

namespace frugal {

namespace {
// x (n)  y (n)  mask (ceil(n/8)) or null:  y = x <= th ? value : x (NaN kept, as PyTorch's
// threshold), bit = x > th (clear at NaN).
template <typename T>
void threshold_forward_t(const T* x, T th, T value, T* y, uint8_t* mask, int64_t n) {
  write_mask(n, mask, [&](int64_t i) {
    const T xi = x[i];
    y[i] = xi <= th ? value : xi;
    return xi > th;
  });
}

// x (n)  y (n)  mask (ceil(n/8)) or null; keep is a function of (seed, stream, i) only.
// A dropped element is x - x: +0 for finite x, NaN for NaN and +-inf, as PyTorch's x * 0 up to
// the sign of zero, so dropout never hides a non-finite input.
template <typename T>
void dropout_forward_t(const T* x, double p, uint64_t seed, uint64_t stream, T* y, uint8_t* mask,
                       int64_t n) {
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  write_mask(n, mask, [&](int64_t i) {
    const bool keep = random_uniform(seed, stream, static_cast<uint64_t>(i)) >= p;
    const T xi = x[i];
    y[i] = keep ? xi * scale : xi - xi;
    return keep;
  });
}

// dy (n)  mask (ceil(n/8))  dx (n)
template <typename T>
void masked_scale_t(const T* dy, const uint8_t* mask, T scale, T* dx, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) dx[i] = mask_bit(mask, i) ? dy[i] * scale : T(0);
}

// a (n)  b (n)  y (n)
template <typename T>
void add_t(const T* a, const T* b, T* y, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}
}  // namespace

void CpuBackend::threshold_forward(const Tensor& x, double threshold, double value, Tensor& y,
                                   Tensor& mask) {
  check_same("threshold", x, y, device());
  check_mask("threshold", mask, x.numel(), device());
  uint8_t* m = mask.defined() ? mask.data<uint8_t>() : nullptr;
  if (x.dtype() == DType::f32)
    threshold_forward_t(x.data<float>(), static_cast<float>(threshold), static_cast<float>(value),
                        y.data<float>(), m, x.numel());
  else
    threshold_forward_t(x.data<double>(), threshold, value, y.data<double>(), m, x.numel());
}

void CpuBackend::dropout_forward(const Tensor& x, double p, uint64_t seed, uint64_t stream,
                                 Tensor& y, Tensor& mask) {
  check_same("dropout", x, y, device());
  check_mask("dropout", mask, x.numel(), device());
  check_dropout_p(p);
  uint8_t* m = mask.defined() ? mask.data<uint8_t>() : nullptr;
  if (x.dtype() == DType::f32)
    dropout_forward_t(x.data<float>(), p, seed, stream, y.data<float>(), m, x.numel());
  else
    dropout_forward_t(x.data<double>(), p, seed, stream, y.data<double>(), m, x.numel());
}

void CpuBackend::masked_scale(const Tensor& dy, const Tensor& mask, double scale, Tensor& dx) {
  check_same("masked_scale", dy, dx, device());
  check_required_mask("masked_scale", mask, dy.numel(), device());
  const uint8_t* m = mask.data<uint8_t>();
  if (dy.dtype() == DType::f32)
    masked_scale_t(dy.data<float>(), m, static_cast<float>(scale), dx.data<float>(), dy.numel());
  else
    masked_scale_t(dy.data<double>(), m, scale, dx.data<double>(), dy.numel());
}

void CpuBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  check_add(a, b, y, device());
  if (a.dtype() == DType::f32)
    add_t(a.data<float>(), b.data<float>(), y.data<float>(), a.numel());
  else
    add_t(a.data<double>(), b.data<double>(), y.data<double>(), a.numel());
}

// Channel concatenation as byte copies: for each sample n, part i is one contiguous block of
// Ci*H*W elements at channel offset sum_{j<i} Cj inside y's sample of (sum Ci)*H*W elements.
// Backward skips undefined parts, which still carry their shape (Tensor(nullptr, 0, s, t)).
namespace {
// Copies each part's sample block into y (to_y) or out of y (backward), in parallel over N.
void concat_copy(std::span<const Tensor> xs, const Tensor& y, bool to_y) {
  const int64_t N = y.shape()[0];
  if (N == 0) return;
  const size_t y_sample = y.bytes() / static_cast<size_t>(N);
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    char* yn = static_cast<char*>(y.raw()) + static_cast<size_t>(n) * y_sample;
    for (const Tensor& x : xs) {
      const size_t x_sample = x.bytes() / static_cast<size_t>(N);
      if (x.defined()) {
        char* xn = static_cast<char*>(x.raw()) + static_cast<size_t>(n) * x_sample;
        if (to_y)
          std::memcpy(yn, xn, x_sample);
        else
          std::memcpy(xn, yn, x_sample);
      }
      yn += x_sample;
    }
  }
}
}  // namespace

void CpuBackend::concat_forward(std::span<const Tensor> xs, Tensor& y) {
  check_concat_forward(xs, y, device());
  concat_copy(xs, y, true);
}

void CpuBackend::concat_backward(const Tensor& dy, std::span<Tensor> dxs) {
  check_concat("concat backward", dxs, dy, device());
  concat_copy(dxs, dy, false);
}

}  // namespace frugal
