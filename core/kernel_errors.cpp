// The errors of the fixed-point and affine kernels, worded once for every backend.
#include "core/kernel_errors.h"

#include "core/error.h"

namespace frugal {

void throw_fixed_point_range(double y, int64_t i, int range_bits, const std::string& who) {
  throw Error(detail::concat(who, ": value ", y, " at element ", i,
                             " is outside the fixed-point range (-2^", range_bits, ", 2^",
                             range_bits, "), where grid additions stay exact: use a larger ",
                             "FixedPoint::range_bits"));
}

void throw_off_grid(int64_t i, int frac, bool in_place, double a, const std::string& who) {
  throw Error(detail::concat(who, ": element ", i,
                             " of the input is not on the fixed-point grid 2^-", frac, " (",
                             in_place ? "updated in place to " : "", a,
                             "): record fixed_point(x) before the first exact reversible block"));
}

void throw_off_grid(int frac, const std::string& who) {
  throw Error(detail::concat(who, ": an element of the input is not on the fixed-point grid 2^-",
                             frac,
                             ": record fixed_point(x) before the first exact reversible block"));
}

void throw_affine_scale(double hs, double s, int64_t i, const Shape& shape, double clamp,
                        double min_scale, const std::string& who) {
  const std::string at =
      detail::concat(" at element ", i, " of ", shape, ", from h = ", hs, " (clamp ", clamp, ")");
  FRUGAL_CHECK(std::isfinite(hs), who, ": scale s is ", s, at, ": F returned a non-finite value");
  FRUGAL_CHECK(std::isfinite(s), who, ": scale s is ", s, at, ": e^clamp overflows");
  throw Error(detail::concat(who, ": scale s = exp(clamp·tanh(h/clamp)) = ", s, at,
                             " is below min_scale ", min_scale, ": (y - t) / s would lose x"));
}

}  // namespace frugal
