// A running largest difference that a NaN cannot hide: std::max(worst, d) keeps worst when d is
// NaN, so a check of the largest difference between two outputs passed where one was all NaN.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

namespace frugal::testing {

// The larger of worst and d, a NaN d counting as infinitely far.
inline double worse(double worst, double d) {
  return std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(worst, d);
}

}  // namespace frugal::testing
