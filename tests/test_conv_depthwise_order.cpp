// The depthwise passes against their tap-by-tap loops, bit for bit: each blocked loop says it
// adds every output's terms in the order the tap-by-tap loop adds them, fused where the CPU fuses
// (or nowhere), so the two must agree exactly on every geometry the blocked loops take.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "check/gradcheck.h"
#include "core/cpu/conv2d_depthwise.h"
#include "tests/conv_cases.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// The depthwise filter gradient of filter k at stride 1 as its tap-by-tap loop sums it: in the
// wide form (rows of the padded plane's width, dy's columns past Q zero), tap (r, s)'s products
// of dy at flat index i and x at i + r*dilation_h*Ws + s*dilation_w go into lane i % 32, samples
// in order, each a multiply-add fused (std::fma) or not; then the 32 lanes in order.
template <typename T>
std::vector<T> tap_by_tap_filter(const Conv2dGeometry& g, const Tensor& x, const Tensor& dy,
                                 bool fused) {
  const int64_t Hp = g.H + g.pad_h + g.pad_h_end, Ws = g.W + g.pad_w + g.pad_w_end;
  const int64_t wide = g.P * Ws, taps = g.R * g.S, m = g.K / g.C;
  std::vector<T> dw(static_cast<size_t>(g.K * taps));
  std::vector<T> xp(static_cast<size_t>(Hp * Ws + g.S * g.dilation_w)), dyw(wide);
  for (int64_t k = 0; k < g.K; ++k) {
    std::vector<T> lanes(static_cast<size_t>(taps * 32), T(0));
    for (int64_t n = 0; n < g.N; ++n) {
      std::fill(xp.begin(), xp.end(), T(0));
      std::fill(dyw.begin(), dyw.end(), T(0));
      for (int64_t i = 0; i < g.H; ++i)
        for (int64_t j = 0; j < g.W; ++j)
          xp[(i + g.pad_h) * Ws + j + g.pad_w] =
              x.data<T>()[((n * g.C + k / m) * g.H + i) * g.W + j];
      for (int64_t i = 0; i < g.P; ++i)
        for (int64_t j = 0; j < g.Q; ++j)
          dyw[i * Ws + j] = dy.data<T>()[((n * g.K + k) * g.P + i) * g.Q + j];
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t off = t / g.S * g.dilation_h * Ws + t % g.S * g.dilation_w;
        for (int64_t i = 0; i < wide; ++i) {
          T& lane = lanes[t * 32 + i % 32];
          lane = fused ? std::fma(dyw[i], xp[off + i], lane) : lane + dyw[i] * xp[off + i];
        }
      }
    }
    for (int64_t t = 0; t < taps; ++t) {
      T total = 0;
      for (int64_t l = 0; l < 32; ++l) total += lanes[t * 32 + l];
      dw[k * taps + t] = total;
    }
  }
  return dw;
}

// The depthwise forward and data gradient as their tap-by-tap loops sum: each output from its
// bias, each dx element from zero, adding taps in (r, s) order (dx: the channel's filters in
// order, each filter's taps), each term a multiply-add fused or not. Any stride and dilation.
template <typename T>
std::pair<std::vector<T>, std::vector<T>> tap_by_tap_passes(const Conv2dGeometry& g,
                                                            const Tensor& x, const Tensor& w,
                                                            const Tensor& b, const Tensor& dy,
                                                            bool fused) {
  const int64_t m = g.K / g.C;
  auto madd = [&](T a, T c, T acc) { return fused ? std::fma(a, c, acc) : acc + a * c; };
  std::vector<T> y(static_cast<size_t>(g.N * g.K * g.P * g.Q));
  std::vector<T> dx(static_cast<size_t>(x.numel()), T(0));
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t k = 0; k < g.K; ++k) {
      const T* xc = x.data<T>() + (n * g.C + k / m) * g.H * g.W;
      const T* wk = w.data<T>() + k * g.R * g.S;
      for (int64_t p = 0; p < g.P; ++p)
        for (int64_t q = 0; q < g.Q; ++q) {
          T acc = b.data<T>()[k];
          for (int64_t r = 0; r < g.R; ++r)
            for (int64_t s = 0; s < g.S; ++s) {
              const int64_t h = p * g.stride_h - g.pad_h + r * g.dilation_h;
              const int64_t u = q * g.stride_w - g.pad_w + s * g.dilation_w;
              const bool in = h >= 0 && h < g.H && u >= 0 && u < g.W;
              acc = madd(wk[r * g.S + s], in ? xc[h * g.W + u] : T(0), acc);
            }
          y[static_cast<size_t>(((n * g.K + k) * g.P + p) * g.Q + q)] = acc;
        }
    }
  // dx: each element gathers, per filter and tap, the dy element whose tap read it.
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t h = 0; h < g.H; ++h)
        for (int64_t u = 0; u < g.W; ++u) {
          T acc = 0;
          for (int64_t k = c * m; k < (c + 1) * m; ++k)
            for (int64_t r = 0; r < g.R; ++r)
              for (int64_t s = 0; s < g.S; ++s) {
                const int64_t ph = h + g.pad_h - r * g.dilation_h;
                const int64_t pw = u + g.pad_w - s * g.dilation_w;
                if (ph < 0 || pw < 0 || ph % g.stride_h || pw % g.stride_w) continue;
                const int64_t p = ph / g.stride_h, q = pw / g.stride_w;
                if (p >= g.P || q >= g.Q) continue;
                acc = madd(w.data<T>()[(k * g.R + r) * g.S + s],
                           dy.data<T>()[((n * g.K + k) * g.P + p) * g.Q + q], acc);
              }
          dx[static_cast<size_t>(((n * g.C + c) * g.H + h) * g.W + u)] = acc;
        }
  return {y, dx};
}

template <typename T>
bool same_as(const Tensor& got, const std::vector<T>& want) {
  return got.bytes() == want.size() * sizeof(T) &&
         std::memcmp(got.raw(), want.data(), got.bytes()) == 0;
}

}  // namespace

TEST_CASE("grouped conv2d: depthwise passes add each output's terms as the tap-by-tap loops do") {
  // Every blocked loop (two rows at once, four vectors a row, blocks of two vectors; for the
  // filter gradient taps in groups, a row or columns of taps at once, a column alone two vectors
  // of sums at a time) says it adds each output's terms in its tap-by-tap loop's order: then
  // every output equals that loop's, all fused where the CPU fuses or none (the tests are built
  // for any CPU, the library for this one). GCC once left one multiply-add of the filter
  // gradient's one-column pass unfused: taps one rounding off.
  const Geo stride1[] = {
      {3, 5, 7, 8, 5, 5, 5, params(1, 2, 1, 5)},     // rows of 12: f64 columns in 2 sweeps
      {3, 5, 14, 16, 10, 5, 5, params(1, 2, 1, 5)},  // 2 filters per channel
      {2, 4, 28, 28, 4, 5, 5, params(1, 2, 1, 4)},   // EfficientNet's 28x28 5x5
      {2, 4, 14, 14, 4, 3, 3, params(1, 1, 1, 4)},   // MobileNet's 14x14 3x3
      {2, 3, 12, 6, 3, 3, 5, params(1, 1, 1, 3)},    // 3x5: columns of 3 and 2
      {2, 3, 30, 30, 3, 5, 3, params(1, 1, 1, 3)},   // 5x3, rows of 32
      {2, 3, 9, 36, 3, 5, 5, params(1, 2, 1, 3)},    // AVX-512's rows of taps
      {2, 3, 10, 21, 3, 3, 3, params(1, 1, 1, 3)},   // rows of 23: taps in groups
      {2, 3, 5, 5, 3, 3, 3, params(1, 1, 1, 3)},     // short planes: one tap at a time
      {2, 3, 11, 12, 3, 3, 3, params(1, 2, 2, 3)},   // dilated
      {2, 3, 56, 56, 3, 3, 3, params(1, 1, 1, 3)},   // MobileNet's 56x56 3x3
  };
  const Geo strided[] = {
      {2, 3, 56, 56, 3, 3, 3, params(2, 1, 1, 3)},  // MobileNet's stride-2 3x3
      {1, 5, 11, 9, 5, 5, 5, params(2, 2, 1, 5)},   // EfficientNet's 5x5 stride 2
      {2, 3, 13, 14, 6, 3, 3, params(3, 1, 2, 3)},  // stride 3, dilated, 2 per channel
  };
  auto check = [](const Geo& c, DType t, bool filter) {
    const Conv2dGeometry g = geometry(c);
    INFO("N,C,H,W ", g.N, ",", g.C, ",", g.H, ",", g.W, " K,R,S ", g.K, ",", g.R, ",", g.S,
         " stride ", g.stride_h, " dilation ", g.dilation_h, " ", std::string(dtype_name(t)));
    REQUIRE(depthwise_conv::applies(g));
    Tensor x = random_tensor({g.N, g.C, g.H, g.W}, 1, -1, 1, t);
    Tensor w = random_tensor(Shape{g.K, 1, g.R, g.S}, 2, -1, 1, t);
    Tensor b = random_tensor({g.K}, 3, -1, 1, t);
    Tensor dy = random_tensor({g.N, g.K, g.P, g.Q}, 4, -1, 1, t);
    const ConvRun got = run(g, x, w, b, dy);
    auto equals = [&]<typename T>(bool fused) {
      const auto [y, dx] = tap_by_tap_passes<T>(g, x, w, b, dy, fused);
      return std::array{same_as(got.y, y), same_as(got.dx, dx),
                        !filter || same_as(got.dw, tap_by_tap_filter<T>(g, x, dy, fused))};
    };
    const auto fused = t == DType::f64 ? equals.template operator()<double>(true)
                                       : equals.template operator()<float>(true);
    const auto plain = t == DType::f64 ? equals.template operator()<double>(false)
                                       : equals.template operator()<float>(false);
    CHECK((fused[0] || plain[0]));
    CHECK((fused[1] || plain[1]));
    CHECK((fused[2] || plain[2]));
  };
  for (DType t : {DType::f32, DType::f64}) {
    for (const Geo& c : stride1) check(c, t, true);
    for (const Geo& c : strided) check(c, t, false);
  }
}
