// Fill, copy, accumulate, the finiteness check, SGD, AdamW and the thread setting of the CPU
// backend.
#include <omp.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/adamw.h"
#include "core/cpu/cpu_backend.h"
#include "core/cpu/parts.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {
int g_threads = 0;
}

void set_cpu_threads(int threads) {
  g_threads = threads;
  if (threads > 0) omp_set_num_threads(threads);
}

int CpuBackend::threads() const {
  return g_threads > 0 ? g_threads : omp_get_max_threads();
}

Backend& cpu_backend() {
  static CpuBackend b;
  return b;
}

// Host and "device" are one memory here: both copies are plain copies of host bytes.
void CpuBackend::copy_to_device(const Tensor& host, Tensor& dev) {
  copy_bytes(host, dev);
}

void CpuBackend::copy_to_host(const Tensor& dev, Tensor& host) {
  copy_bytes(dev, host);
}

void CpuBackend::fill(Tensor& t, double value) {
  const int64_t n = t.numel();
  switch (t.dtype()) {
    case DType::f32: {
      float* p = t.data<float>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(value);
      break;
    }
    case DType::f64: {
      double* p = t.data<double>();
      for (int64_t i = 0; i < n; ++i) p[i] = value;
      break;
    }
    case DType::i32: {
      int32_t* p = t.data<int32_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int32_t>(value);
      break;
    }
    case DType::u8:
      std::memset(t.raw(), static_cast<int>(value), t.bytes());
      break;
  }
}

void CpuBackend::copy(const Tensor& x, Tensor& y) {
  check_copy(x, y);
  if (x.raw() != y.raw()) std::memmove(y.raw(), x.raw(), x.bytes());
}

namespace {
template <typename T>
void accumulate_t(const T* x, T* y, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

template <typename T>
void sgd_t(T* w, const T* dw, T* v, int64_t n, const OptimizerConfig& c) {
  const T lr = static_cast<T>(c.lr), m = static_cast<T>(c.momentum),
          wd = static_cast<T>(c.weight_decay);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    T g = dw[i] + wd * w[i];
    v[i] = m * v[i] + g;
    w[i] -= lr * v[i];
  }
}

template <typename T>
void adamw_t(T* w, const T* dw, T* m, T* v, int64_t n, const OptimizerConfig& c) {
  const AdamwScalars<T> k = adamw_scalars<T>(c);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) adamw_element(k, w[i], dw[i], m[i], v[i]);
}
}  // namespace

void CpuBackend::accumulate(const Tensor& x, Tensor& y) {
  check_same("accumulate", x, y, device());
  if (x.dtype() == DType::f32)
    accumulate_t(x.data<float>(), y.data<float>(), x.numel());
  else
    accumulate_t(x.data<double>(), y.data<double>(), x.numel());
}

namespace {
// t (n): the first i with t[i] NaN or +-inf, or -1. Each part scans its static range; the
// smallest hit wins, so the answer does not depend on the thread count.
template <typename T>
int64_t first_non_finite_t(const T* t, int64_t n, int threads) {
  const int k = parts(n / 4096 + 1, threads);
  std::vector<int64_t> first(static_cast<size_t>(k), -1);
  for_parts(k, n, [&](int part, int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      if (!std::isfinite(t[i])) {
        first[static_cast<size_t>(part)] = i;
        return;
      }
  });
  for (int64_t i : first)
    if (i >= 0) return i;  // parts are in index order
  return -1;
}
}  // namespace

int64_t CpuBackend::first_non_finite(const Tensor& t) {
  if (t.dtype() == DType::f32) return first_non_finite_t(t.data<float>(), t.numel(), threads());
  if (t.dtype() == DType::f64) return first_non_finite_t(t.data<double>(), t.numel(), threads());
  return -1;
}

namespace {
template <typename T>
void subtract_t(const T* a, const T* b, T* y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 32768)
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] - b[i];
}
}  // namespace

void CpuBackend::subtract(const Tensor& a, const Tensor& b, Tensor& y) {
  check_subtract(a, b, y, device());
  if (a.dtype() == DType::f32)
    subtract_t(a.data<float>(), b.data<float>(), y.data<float>(), a.numel());
  else
    subtract_t(a.data<double>(), b.data<double>(), y.data<double>(), a.numel());
}

void CpuBackend::sgd_step(Tensor& w, const Tensor& dw, Tensor& v, const OptimizerConfig& c) {
  check_sgd(w, dw, v, device());
  if (w.dtype() == DType::f32)
    sgd_t(w.data<float>(), dw.data<float>(), v.data<float>(), w.numel(), c);
  else
    sgd_t(w.data<double>(), dw.data<double>(), v.data<double>(), w.numel(), c);
}

void CpuBackend::adamw_step(Tensor& w, const Tensor& dw, Tensor& m, Tensor& v,
                            const OptimizerConfig& c) {
  check_adamw(w, dw, m, v, c, device());
  if (w.dtype() == DType::f32)
    adamw_t(w.data<float>(), dw.data<float>(), m.data<float>(), v.data<float>(), w.numel(), c);
  else
    adamw_t(w.data<double>(), dw.data<double>(), m.data<double>(), v.data<double>(), w.numel(), c);
}

}  // namespace frugal
