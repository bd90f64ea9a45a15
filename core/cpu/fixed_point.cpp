// Fixed-point kernels of the CPU backend: rounding onto the grid and exact grid addition
// (layers/fixed_point.h), with their range and grid checks (core/kernel_checks.h).
#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

constexpr int64_t kParallelMin = 32768;  // fewer elements than this: one thread

// x (n)  y (n):  y = q(x); y may alias x.
template <typename T>
void round_t(const Tensor& xt, int range_bits, Tensor& yt, const std::string& who) {
  const Grid<T> grid(range_bits, grid_frac_bits<T>(range_bits));
  const int64_t n = xt.numel();
  const T* x = xt.data<T>();
  T* y = yt.data<T>();
  int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const T yi = grid.round(x[i]);
    bad |= static_cast<int>(!grid.inside(yi));
    y[i] = yi;
  }
  if (bad) throw_round_failure(y, n, grid, range_bits, who);
}

// a (n)  f (n)  y (n):  y = a ± q(f); y may alias a.
template <typename T>
void add_t(const Tensor& at, const Tensor& ft, int range_bits, bool subtract, Tensor& yt,
           const std::string& who) {
  const int frac = grid_frac_bits<T>(range_bits);
  const Grid<T> grid(range_bits, frac);
  const int64_t n = at.numel();
  const T* a = at.data<T>();
  const T* f = ft.data<T>();
  T* y = yt.data<T>();
  const T sign = subtract ? T(-1) : T(1);
  int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const T ai = a[i];
    const T yi = ai + sign * grid.round(f[i]);
    bad |= static_cast<int>(!grid.on(ai)) | static_cast<int>(!grid.inside(yi));
    y[i] = yi;
  }
  if (bad) throw_add_failure(a, y, a == y, n, grid, range_bits, frac, who);
}

}  // namespace

void CpuBackend::fixed_point_round(const Tensor& x, int range_bits, Tensor& y,
                                   const std::string& who) {
  check_fixed_point_round(x, y, who, device());
  if (x.dtype() == DType::f32)
    round_t<float>(x, range_bits, y, who);
  else
    round_t<double>(x, range_bits, y, who);
}

void CpuBackend::fixed_point_add(const Tensor& a, const Tensor& f, int range_bits, bool subtract,
                                 Tensor& y, const std::string& who) {
  check_fixed_point_add(a, f, y, who, device());
  if (a.dtype() == DType::f32)
    add_t<float>(a, f, range_bits, subtract, y, who);
  else
    add_t<double>(a, f, range_bits, subtract, y, who);
}

}  // namespace frugal
