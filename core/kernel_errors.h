// The host side of the fixed-point and affine kernels that every backend shares: the grid's
// arithmetic, and the errors those kernels raise, found again over host copies of the values
// so that a device's kernel reports exactly what the CPU's does.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "core/shape.h"

namespace frugal {

// t rounded to an integer, ties to even. For |t| < 2^(digits-1), t ± 2^(digits-1) keeps no
// fraction bits, so the addition rounds t (in the default rounding mode) and the subtraction is
// exact; a larger |t| is an integer already. NaN stays NaN. (Rather than std::nearbyint, which
// the baseline x86-64 build would call once per element.)
template <typename T>
T round_to_integer(T t) {
  constexpr T magic = static_cast<T>(uint64_t{1} << (std::numeric_limits<T>::digits - 1));
  const T m = std::copysign(magic, t);
  return std::abs(t) < magic ? (t + m) - m : t;
}

// The grid of `range_bits` with `frac` fraction bits, in T.
template <typename T>
struct Grid {
  T scale, inv, limit;  // 2^frac, 2^-frac, 2^range
  Grid(int range_bits, int frac)
      : scale(std::ldexp(T(1), frac)),
        inv(std::ldexp(T(1), -frac)),
        limit(std::ldexp(T(1), range_bits)) {}
  T round(T x) const { return round_to_integer(x * scale) * inv; }
  bool on(T x) const { return round_to_integer(x * scale) == x * scale; }  // false for NaN
  bool inside(T y) const { return std::abs(y) < limit; }                   // false for NaN
};

// Fraction bits of the grid in T (24 or 53 minus range_bits); range_bits is checked by the layer.
template <typename T>
int grid_frac_bits(int range_bits) {
  return std::numeric_limits<T>::digits - range_bits;
}

[[noreturn]] void throw_fixed_point_range(double y, int64_t i, int range_bits,
                                          const std::string& who);

// After a rounding whose range check failed somewhere: throws for the first y[i] outside.
template <typename T>
void throw_round_failure(const T* y, int64_t n, const Grid<T>& grid, int range_bits,
                         const std::string& who) {
  for (int64_t i = 0; i < n; ++i)
    if (!grid.inside(y[i])) throw_fixed_point_range(static_cast<double>(y[i]), i, range_bits, who);
}

[[noreturn]] void throw_off_grid(int64_t i, int frac, bool in_place, double a,
                                 const std::string& who);
[[noreturn]] void throw_off_grid(int frac, const std::string& who);

// After a grid addition whose checks failed somewhere: throws for the first element outside the
// range or with an input off the grid. In place (a is y), an input off the grid shows as a
// result off it.
template <typename T>
[[noreturn]] void throw_add_failure(const T* a, const T* y, bool in_place, int64_t n,
                                    const Grid<T>& grid, int range_bits, int frac,
                                    const std::string& who) {
  for (int64_t i = 0; i < n; ++i) {
    if (!grid.inside(y[i])) throw_fixed_point_range(static_cast<double>(y[i]), i, range_bits, who);
    const bool off = in_place ? !grid.on(y[i]) : !grid.on(a[i]);
    if (off) throw_off_grid(i, frac, in_place, static_cast<double>(a[i]), who);
  }
  throw_off_grid(frac, who);
}

// The affine scale s (computed in the kernel's type from h_s) of element i of a tensor of
// `shape` is below min_scale or not finite.
[[noreturn]] void throw_affine_scale(double hs, double s, int64_t i, const Shape& shape,
                                     double clamp, double min_scale, const std::string& who);

}  // namespace frugal
