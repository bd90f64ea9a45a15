// The host arithmetic and argument checks the communicators share: a collective's own sums,
// in an order fixed by the group, so the result is the same bits on every run and rank.
#pragma once

#include <cstdint>

#include "core/error.h"
#include "core/tensor.h"

namespace frugal {

// Throws unless x is f32 or f64 host memory (collectives that sum).
inline void check_reducible(const Tensor& x, const char* what) {
  FRUGAL_CHECK(x.dtype() == DType::f32 || x.dtype() == DType::f64, what, ": sums f32 or f64, got ",
               dtype_name(x.dtype()), " ", x.shape());
  (void)x.raw();  // throws for memory that is not the host's
}

// Throws unless y holds `count` elements of x's dtype in host memory.
inline void check_same_kind(const Tensor& x, const Tensor& y, int64_t count, const char* what) {
  FRUGAL_CHECK(y.dtype() == x.dtype() && y.numel() == count, what, ": the result holds ", y.numel(),
               " ", dtype_name(y.dtype()), ", expected ", count, " ", dtype_name(x.dtype()));
  (void)x.raw();
  (void)y.raw();
}

// x[i] *= s (in x's precision), skipped when s == 1.
inline void scale_elements(void* x, DType t, int64_t n, double s) {
  if (s == 1.0) return;
  if (t == DType::f32) {
    float* p = static_cast<float*>(x);
    const float f = static_cast<float>(s);
    for (int64_t i = 0; i < n; ++i) p[i] *= f;
  } else {
    double* p = static_cast<double*>(x);
    for (int64_t i = 0; i < n; ++i) p[i] *= s;
  }
}

// acc[i] += x[i].
inline void add_elements(void* acc, const void* x, DType t, int64_t n) {
  if (t == DType::f32) {
    float* a = static_cast<float*>(acc);
    const float* b = static_cast<const float*>(x);
    for (int64_t i = 0; i < n; ++i) a[i] += b[i];
  } else {
    double* a = static_cast<double*>(acc);
    const double* b = static_cast<const double*>(x);
    for (int64_t i = 0; i < n; ++i) a[i] += b[i];
  }
}

}  // namespace frugal
