// Convolutions beyond the plain one: groups (depthwise included, with a channel multiplier),
// dilation and padding that differs per side. The CPU kernels against a direct loop in double
// (depthwise: the same bits on 1, 2 and 3 threads), finite-difference gradients in f64, a case by
// hand, planned == baseline bitwise, and errors that name what is wrong.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "core/cpu/conv2d_depthwise.h"
#include "core/cpu/conv2d_direct.h"
#include "core/cpu/stream_out.h"
#include "layers/conv2d.h"
#include "layers/relu.h"
#include "tests/conv_cases.h"
#include "tests/worst.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

double worst_error(const Tensor& got, const std::vector<double>& want) {
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double a = element_as_double(got, i), e = want[static_cast<size_t>(i)];
    worst = worse(worst, std::abs(a - e) / std::max(1.0, std::abs(e)));
  }
  return worst;
}

// The kernels on random data against a direct loop over (n, k, p, q, c in k's group, r, s) in
// double, on 1, 2 and 3 threads.
void check_against_direct(const Geo& c, DType t, double tol) {
  const Conv2dGeometry g = geometry(c);
  INFO("N,C,H,W ", g.N, ",", g.C, ",", g.H, ",", g.W, " K,R,S ", g.K, ",", g.R, ",", g.S,
       " groups ", g.groups, " dilation ", g.dilation_h, "x", g.dilation_w, " pads ", g.pad_h, ",",
       g.pad_w, ",", g.pad_h_end, ",", g.pad_w_end, " stride ", g.stride_h, "x", g.stride_w, " ",
       std::string(dtype_name(t)));
  REQUIRE(g.P >= 1);
  const int64_t Cg = g.C / g.groups, Kg = g.K / g.groups;
  Tensor x = random_tensor({g.N, g.C, g.H, g.W}, 1, -1, 1, t);
  Tensor w = random_tensor({g.K, Cg, g.R, g.S}, 2, -1, 1, t);
  Tensor b = random_tensor({g.K}, 3, -1, 1, t);
  Tensor dy = random_tensor({g.N, g.K, g.P, g.Q}, 4, -1, 1, t);
  auto at = [](const Tensor& v, int64_t i) { return element_as_double(v, i); };
  std::vector<double> y(static_cast<size_t>(g.N * g.K * g.P * g.Q)),
      dx(static_cast<size_t>(x.numel())), dw(static_cast<size_t>(w.numel())),
      db(static_cast<size_t>(g.K));
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t k = 0; k < g.K; ++k)
      for (int64_t p = 0; p < g.P; ++p)
        for (int64_t q = 0; q < g.Q; ++q) {
          const int64_t yi = ((n * g.K + k) * g.P + p) * g.Q + q;
          double acc = at(b, k), d = at(dy, yi);
          for (int64_t cc = 0; cc < Cg; ++cc)
            for (int64_t r = 0; r < g.R; ++r)
              for (int64_t s = 0; s < g.S; ++s) {
                const int64_t h = p * g.stride_h - g.pad_h + r * g.dilation_h;
                const int64_t v = q * g.stride_w - g.pad_w + s * g.dilation_w;
                if (h < 0 || h >= g.H || v < 0 || v >= g.W) continue;
                const int64_t ci = k / Kg * Cg + cc;
                const int64_t xi = ((n * g.C + ci) * g.H + h) * g.W + v;
                const int64_t wi = ((k * Cg + cc) * g.R + r) * g.S + s;
                acc += at(x, xi) * at(w, wi);
                dx[static_cast<size_t>(xi)] += at(w, wi) * d;
                dw[static_cast<size_t>(wi)] += at(x, xi) * d;
              }
          y[static_cast<size_t>(yi)] = acc;
          db[static_cast<size_t>(k)] += d;
        }
  const int saved = cpu_backend().threads();
  std::vector<ConvRun> runs;
  for (int threads : {1, 2, 3}) {
    set_cpu_threads(threads);
    runs.push_back(run(g, x, w, b, dy));
  }
  set_cpu_threads(saved);
  for (const ConvRun& r : runs) {
    CHECK(worst_error(r.y, y) <= tol);
    CHECK(worst_error(r.dx, dx) <= tol);
    CHECK(worst_error(r.dw, dw) <= tol);
    CHECK(worst_error(r.db, db) <= tol);
  }
  // The depthwise loops sum each element on one thread in one order; im2col + GEMM tiles by
  // thread count (as the plain convolution: the same bits in every memory mode, not on every
  // thread count).
  if (!depthwise_conv::applies(g)) return;
  for (size_t i = 1; i < runs.size(); ++i) {
    CHECK(same_bits(runs[i].y, runs[0].y));
    CHECK(same_bits(runs[i].dx, runs[0].dx));
    CHECK(same_bits(runs[i].dw, runs[0].dw));
    CHECK(same_bits(runs[i].db, runs[0].db));
  }
}

std::vector<Value> one(Value v) {
  return {v};
}

}  // namespace

TEST_CASE(
    "grouped conv2d: kernels match a direct loop, depthwise gives the same bits on any thread "
    "count") {
  const Conv2dParams uneven{.stride_h = 1,
                            .stride_w = 2,
                            .pad_top = 0,
                            .pad_left = 2,
                            .pad_bottom = 2,
                            .pad_right = 1,
                            .dilation_h = 2,
                            .dilation_w = 1,
                            .groups = 1};
  Conv2dParams uneven_depthwise = uneven;
  uneven_depthwise.groups = 3;
  Conv2dParams uneven_stride1 = uneven_depthwise;
  uneven_stride1.stride_w = 1;
  // Strides of 3 and 2 (six phase planes), the dilated rows' taps falling in every phase.
  const Conv2dParams strided{.stride_h = 3,
                             .stride_w = 2,
                             .pad_top = 1,
                             .pad_left = 0,
                             .pad_bottom = 2,
                             .pad_right = 1,
                             .dilation_h = 2,
                             .dilation_w = 1,
                             .groups = 4};
  const Geo cases[] = {
      {2, 4, 7, 6, 4, 3, 3, params(1, 1, 1, 4)},    // depthwise, MobileNet's 3x3
      {2, 3, 9, 8, 6, 3, 3, params(2, 1, 1, 3)},    // depthwise, 2 filters per channel, stride 2
      {1, 5, 11, 9, 5, 5, 5, params(2, 2, 1, 5)},   // EfficientNet's 5x5 stride 2
      {2, 3, 9, 10, 3, 3, 3, params(1, 2, 2, 3)},   // dilated depthwise
      {2, 3, 8, 7, 3, 3, 2, uneven_depthwise},      // every side its own padding
      {2, 3, 8, 7, 6, 3, 3, uneven_stride1},        // the same at stride 1, 2 per channel
      {2, 4, 13, 11, 8, 3, 5, strided},             // strides 3 and 2, 2 per channel
      {1, 3, 15, 14, 3, 7, 7, params(2, 3, 1, 3)},  // 7x7 at stride 2
      {2, 4, 6, 7, 6, 3, 3, params(1, 2, 2, 2)},    // 2 groups, dilated
      {3, 6, 5, 5, 9, 1, 1, params(1, 0, 1, 3)},    // grouped 1x1 (ShuffleNet v1)
      {2, 6, 8, 8, 4, 3, 3, params(2, 1, 1, 2)},    // grouped, stride 2
      {2, 3, 8, 7, 4, 3, 2, uneven},                // one group, uneven padding and steps
      {2, 3, 9, 9, 4, 3, 3, params(1, 2, 2, 1)},    // one group, dilated (no direct kernel)
      // Rows a block wide or more (AVX-512's 32 floats): forward and data gradient in row pairs
      // (an odd row left over), the 5x5 filter gradient a row of taps at once.
      {1, 2, 9, 36, 2, 5, 5, params(1, 2, 1, 2)},  // EfficientNet's 5x5
      {2, 3, 8, 33, 3, 3, 3, params(1, 1, 1, 3)},  // MobileNet's 3x3
      {1, 2, 7, 30, 4, 5, 5, params(1, 2, 1, 2)},  // 2 filters per channel: forward pairs only
      // Padded rows whole vectors (16 and 32 floats; 8 of f64): the filter gradient a column of
      // taps at once, over rows of dy whose vectors of sums differ, and a tail past the blocks.
      {2, 3, 13, 14, 3, 3, 3, params(1, 1, 1, 3)},  // MobileNet's 14x14 layer, 13 rows
      {1, 2, 9, 28, 2, 5, 5, params(1, 2, 1, 2)},   // EfficientNet's 28x28 layer, 9 rows
      {2, 3, 6, 14, 6, 3, 3, params(1, 1, 1, 3)},   // 2 filters per channel
      {2, 3, 12, 6, 3, 3, 5, params(1, 1, 1, 3)},   // 3x5: columns in groups of 3 and 2
      // Padding and dilation wider than the plane (DeepLabV3's ASPP: rates 12-36 around a 4x4
      // map): im2col's row shifts pass every element of the plane.
      {1, 2, 4, 4, 3, 3, 3, params(1, 24, 24, 1)},
      {2, 3, 3, 5, 4, 3, 3, params(1, 7, 7, 1)},
      {1, 2, 2, 2, 3, 3, 3, params(1, 5, 1, 1)},  // plain, padding past the plane
      {1, 3, 2, 3, 3, 3, 3, params(1, 5, 1, 3)},  // depthwise, the same
      {1, 3, 3, 2, 6, 3, 3, params(2, 6, 3, 3)},  // depthwise, strided and dilated, the same
      {2, 2, 3, 3, 4, 3, 3, params(3, 7, 1, 1)},  // plain at stride 3, the same
  };
  for (const Geo& c : cases) {
    check_against_direct(c, DType::f64, 1e-12);
    check_against_direct(c, DType::f32, 2e-5);
  }
  // Depthwise convolutions take their own loops; dilated or unevenly padded
  // ones never reach the stride-1 direct kernels.
  CHECK(depthwise_conv::applies(geometry(cases[0])));
  CHECK_FALSE(depthwise_conv::applies(geometry(cases[8])));
  // Per thread, forward: the padded input plane (9 x 8 and 2 of slack) and a wide output one
  // (7 x 8), each rounded up to whole 64-byte lines (16 floats). Backward, the data
  // gradient's, more: dy (7 x 8) behind 2 rows and 2 of zeros (rounded up) and above 2 zero
  // rows (the whole rounded up), dx's padded plane and the 9 weights (rounded up).
  const size_t threads = static_cast<size_t>(cpu_backend().threads());
  const auto lines = [](size_t n) { return (n + 15) / 16 * 16; };
  CHECK(cpu_backend().conv2d_forward_scratch(geometry(cases[0]), DType::f32) ==
        threads * (lines(9 * 8 + 2) + lines(7 * 8)) * sizeof(float));
  CHECK(cpu_backend().conv2d_backward_scratch(geometry(cases[0]), DType::f32) ==
        threads * lines(lines(lines(2 * 8 + 2) + 9 * 8) + 9 * 8 + 9) * sizeof(float));
  // At stride 2, four phase planes of the padded 11 x 10 input, 6 x 5 each, 1 of slack, and
  // the output's 5 rows 5 wide.
  CHECK(cpu_backend().conv2d_forward_scratch(geometry(cases[1]), DType::f32) ==
        threads * (lines(4 * 6 * 5 + 1) + lines(5 * 5)) * sizeof(float));
  CHECK_FALSE(direct_conv::applies(geometry(cases[12]), DType::f32));
  Geo same = cases[12];
  same.p = params(1, 1, 1, 1);
  CHECK(conv_is_plain(geometry(same)));
  CHECK_FALSE(conv_is_plain(geometry(cases[11])));
}

TEST_CASE("grouped conv2d: depthwise outputs streamed past the caches keep their bits") {
  // Large outputs leave the forward and the data gradient through non-temporal stores
  // (StreamOut); forced here on small ones. Each output starts one element past an aligned
  // address between guard elements, so a thread's share starts and ends inside a vector:
  // the same bits as plain stores on 1, 2 and 3 threads, and nothing written outside.
  const Geo cases[] = {
      {2, 5, 7, 7, 5, 3, 3, params(1, 1, 1, 5)},    // 49-element planes: shares end mid-vector
      {1, 6, 28, 28, 6, 5, 5, params(1, 2, 1, 6)},  // EfficientNet's 28x28 5x5
      {2, 3, 13, 14, 3, 3, 3, params(2, 1, 1, 3)},  // stride 2: rows joined from two phases
      {1, 2, 11, 13, 2, 3, 3, params(3, 1, 1, 2)},  // stride 3: rows gathered from three
      {2, 3, 9, 8, 6, 3, 3, params(1, 1, 1, 3)},    // 2 filters per channel
      {1, 4, 5, 3, 4, 3, 3, params(1, 1, 1, 4)},    // rows shorter than a vector
  };
  const int saved = cpu_backend().threads();
  const int64_t from = stream_from();
  for (const Geo& c : cases)
    for (DType t : {DType::f32, DType::f64}) {
      const Conv2dGeometry g = geometry(c);
      INFO("N,C,H,W ", g.N, ",", g.C, ",", g.H, ",", g.W, " K,R,S ", g.K, ",", g.R, ",", g.S,
           " stride ", g.stride_h, " ", std::string(dtype_name(t)));
      Tensor x = random_tensor({g.N, g.C, g.H, g.W}, 1, -1, 1, t);
      Tensor w = random_tensor(Shape{g.K, 1, g.R, g.S}, 2, -1, 1, t);
      Tensor dy = random_tensor({g.N, g.K, g.P, g.Q}, 4, -1, 1, t);
      const int64_t guard = 40;
      // Output `shape` inside a buffer of guards filled with 7s, one element past its start.
      auto guarded = [&](Shape shape) {
        Tensor all = Tensor::empty({shape.numel() + 2 * guard + 1}, t);
        cpu_backend().fill(all, 7);
        return Tensor(all.storage(), (guard + 1) * dtype_size(t), std::move(shape), t);
      };
      auto untouched = [&](const Tensor& out) {
        const Tensor all(out.storage(), 0, {out.numel() + 2 * guard + 1}, t);
        for (int64_t i = 0; i < all.numel(); ++i)
          if ((i <= guard || i > guard + out.numel()) && element_as_double(all, i) != 7)
            return false;
        return true;
      };
      Tensor y_plain, dx_plain;
      for (int threads : {1, 2, 3})
        for (int64_t bytes : {std::numeric_limits<int64_t>::max(), int64_t{0}}) {
          set_cpu_threads(threads);
          set_stream_from(bytes);
          Tensor y = guarded({g.N, g.K, g.P, g.Q}), dx = guarded(x.shape());
          const size_t scratch_bytes =
              std::max<size_t>({cpu_backend().conv2d_forward_scratch(g, t),
                                cpu_backend().conv2d_backward_scratch(g, t), 1});
          Tensor scratch = nan_tensor({static_cast<int64_t>(scratch_bytes)}, DType::u8);
          cpu_backend().conv2d_forward(g, x, w, Tensor(), y, scratch);
          cpu_backend().conv2d_backward_data(g, dy, w, dx, scratch);
          CHECK(untouched(y));
          CHECK(untouched(dx));
          if (!y_plain.defined()) {
            y_plain = y, dx_plain = dx;
            continue;
          }
          CHECK(same_bits(y, y_plain));
          CHECK(same_bits(dx, dx_plain));
        }
    }
  set_stream_from(from);
  set_cpu_threads(saved);
}

TEST_CASE("grouped conv2d: finite-difference gradients in f64") {
  check_gradients(
      [](auto x) { return one(conv2d(x[0], {.out = 4, .kernel = 3, .pad = 1, .groups = 4})); },
      {random_tensor({2, 4, 5, 5}, 1)});
  check_gradients(
      [](auto x) {
        return one(conv2d(x[0], {.out = 6, .kernel = 3, .stride = 2, .pad = 1, .groups = 3}));
      },
      {random_tensor({2, 3, 6, 5}, 2)});
  check_gradients(
      [](auto x) {
        return one(conv2d(x[0], {.out = 6, .kernel = 3, .pad = 2, .dilation = 2, .groups = 2}));
      },
      {random_tensor({1, 4, 6, 6}, 3)});
  // Every side its own padding, through the op with weights of the test's own.
  check_gradients(
      [](auto x) {
        Tape& t = x[0].tape();
        Value w = t.param("w", {3, 1, 2, 3}, Init::normal(0.5));
        const Conv2dParams p{.stride_h = 2,
                             .stride_w = 1,
                             .pad_top = 1,
                             .pad_left = 0,
                             .pad_bottom = 0,
                             .pad_right = 2,
                             .groups = 3};
        return t.record(std::make_unique<Conv2dOp>(p), {x[0], w}, std::source_location::current());
      },
      {random_tensor({2, 3, 5, 4}, 4)});
}

TEST_CASE("grouped conv2d: a depthwise case by hand") {
  // Two channels, one 2x2 filter each: [1 0; 0 1] (trace) and [0 1; 1 0], over 1..9 and -1..-9,
  // pad 0: y0 = x[p,q] + x[p+1,q+1], y1 = -(x[p,q+1] + x[p+1,q]).
  const Geo c{1, 2, 3, 3, 2, 2, 2, params(1, 0, 1, 2)};
  const Conv2dGeometry g = geometry(c);
  Tensor x = Tensor::empty({1, 2, 3, 3}, DType::f64), w = Tensor::empty({2, 1, 2, 2}, DType::f64);
  for (int i = 0; i < 9; ++i) x.data<double>()[i] = i + 1, x.data<double>()[9 + i] = -(i + 1);
  const double filters[] = {1, 0, 0, 1, 0, 1, 1, 0};
  std::memcpy(w.raw(), filters, sizeof filters);
  Tensor dy = Tensor::empty({1, 2, 2, 2}, DType::f64);
  cpu_backend().fill(dy, 1);
  ConvRun r = run(g, x, w, Tensor(), dy);
  CHECK(worst_error(r.y, {6, 8, 12, 14, -6, -8, -12, -14}) == 0);
  // dx: how many outputs read each pixel through a 1 of its channel's filter.
  CHECK(worst_error(r.dx, {1, 1, 0, 1, 2, 1, 0, 1, 1, 0, 1, 1, 1, 2, 1, 1, 1, 0}) == 0);
  // dw[k, r, s] = sum of the 2x2 window of x's channel k at offset (r, s).
  CHECK(worst_error(r.dw, {12, 16, 24, 28, -12, -16, -24, -28}) == 0);
}

TEST_CASE("grouped conv2d: planned equals baseline bitwise") {
  // A MobileNetV2 block in small: expand 1x1, depthwise 3x3 stride 2, project 1x1.
  check_planned_equals_baseline([](Value x) {
    Value h = relu(conv2d(x, {.out = 8, .kernel = 1}));
    h = relu(conv2d(h, {.out = 8, .kernel = 3, .stride = 2, .pad = 1, .groups = 8}));
    h = conv2d(h, {.out = 6, .kernel = 3, .pad = 2, .dilation = 2, .groups = 2});
    return conv2d(h, {.out = 4, .kernel = 1});
  });
}

TEST_CASE("grouped conv2d: errors name what is wrong") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 6, 8, 8}, DType::f32);
  CHECK_THROWS_WITH_AS(
      conv2d(x, {.out = 4, .kernel = 3, .groups = 4}),
      doctest::Contains("4 groups do not divide the 6 input and 4 output channels"), Error);
  Value w = tape.param("w", {6, 2, 3, 3}, Init::zeros());
  CHECK_THROWS_WITH_AS(tape.record(std::make_unique<Conv2dOp>(params(1, 0, 1, 2)), {x, w},
                                   std::source_location::current()),
                       doctest::Contains("input channels 6 != weight channels 2 x 2 groups"),
                       Error);
  CHECK_THROWS_WITH_AS(tape.record(std::make_unique<Conv2dOp>(params(1, 0, 4, 3)), {x, w},
                                   std::source_location::current()),
                       doctest::Contains("conv2d: kernel 3x3 is larger than the padded input 8x8"),
                       Error);
  CHECK_THROWS_WITH_AS(tape.record(std::make_unique<Conv2dOp>(params(1, 0, 0, 3)), {x, w},
                                   std::source_location::current()),
                       doctest::Contains("dilation 0x0 and groups 3 must be >= 1"), Error);
}
