// The output positions of a convolution whose filter tap reads inside the input: what lets the
// CPU's convolution loops run without a bounds check. Private to the CPU backend.
#pragma once

#include <algorithm>
#include <cstdint>

namespace frugal {

struct Span {
  int64_t lo, hi;
};

// Output positions o in [0, out) whose input position o*stride - pad + k lies in [0, in),
// clipped to [o0, o1): the range [lo, hi). (k is a tap's offset: r*dilation.)
inline Span inside(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad, int64_t o0,
                   int64_t o1) {
  auto ceil_div = [&](int64_t a) { return a <= 0 ? 0 : (a + stride - 1) / stride; };
  const int64_t lo = std::clamp(ceil_div(pad - k), o0, o1);
  return {lo, std::clamp(std::min(out, ceil_div(in + pad - k)), lo, o1)};
}

}  // namespace frugal
