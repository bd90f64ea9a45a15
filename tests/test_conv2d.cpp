// Conv2d: gradient checks, a hand-computed case, the kernels against direct loops (row tiles,
// 1, 2 and 3 threads, stride, padding, 1x1), the direct f32 kernels against the same loops and
// across thread counts, scratch sizes, determinism, roles, shape errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "check/gradcheck.h"
#include "core/cpu/conv2d_direct.h"
#include "layers/conv2d.h"
#include "tests/worst.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

Conv2dGeometry geometry(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S,
                        int64_t stride_h, int64_t stride_w, int64_t pad_h, int64_t pad_w) {
  Conv2dGeometry g{.N = N, .C = C, .H = H, .W = W, .K = K, .R = R, .S = S};
  g.stride_h = stride_h, g.stride_w = stride_w, g.pad_h = pad_h, g.pad_w = pad_w;
  g.pad_h_end = pad_h, g.pad_w_end = pad_w;
  g.P = (H + 2 * pad_h - R) / stride_h + 1;
  g.Q = (W + 2 * pad_w - S) / stride_w + 1;
  return g;
}

// A tensor filled with NaN: a kernel must overwrite every element it owns.
Tensor nan_tensor(Shape s, DType t) {
  Tensor x = Tensor::empty(std::move(s), t);
  cpu_backend().fill(x, std::numeric_limits<double>::quiet_NaN());
  return x;
}
Tensor scratch_for(const Conv2dGeometry& g, DType t) {
  Backend& be = cpu_backend();
  size_t bytes = std::max(be.conv2d_forward_scratch(g, t), be.conv2d_backward_scratch(g, t));
  return nan_tensor({static_cast<int64_t>(std::max<size_t>(bytes, 1))}, DType::u8);
}

struct ConvRun {
  Tensor y, dx, dw, db;
};
// Runs forward, backward data and backward filter on fresh NaN-filled outputs and scratch.
ConvRun run(const Conv2dGeometry& g, const Tensor& x, const Tensor& w, const Tensor& b,
            const Tensor& dy) {
  const DType t = x.dtype();
  ConvRun r{nan_tensor({g.N, g.K, g.P, g.Q}, t), nan_tensor(x.shape(), t), nan_tensor(w.shape(), t),
            b.defined() ? nan_tensor({g.K}, t) : Tensor()};
  Tensor scratch = scratch_for(g, t);
  cpu_backend().conv2d_forward(g, x, w, b, r.y, scratch);
  cpu_backend().conv2d_backward_data(g, dy, w, r.dx, scratch);
  cpu_backend().conv2d_backward_filter(g, x, dy, r.dw, r.db, scratch);
  return r;
}

void check_close(const Tensor& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double a = element_as_double(got, i), e = want[static_cast<size_t>(i)];
    worst = worse(worst, std::abs(a - e) / std::max(1.0, std::abs(e)));
  }
  CHECK(worst <= tol);
}

// The kernels of `g` in dtype t on random data against a direct six-deep loop in double;
// returns what the kernels gave.
ConvRun check_against_direct(const Conv2dGeometry& g, DType t, bool bias, double tol) {
  INFO("N,C,H,W ", g.N, ",", g.C, ",", g.H, ",", g.W, "  K,R,S ", g.K, ",", g.R, ",", g.S);
  Tensor x = random_tensor({g.N, g.C, g.H, g.W}, 1, -1, 1, t);
  Tensor w = random_tensor({g.K, g.C, g.R, g.S}, 2, -1, 1, t);
  Tensor b = bias ? random_tensor({g.K}, 3, -1, 1, t) : Tensor();
  Tensor dy = random_tensor({g.N, g.K, g.P, g.Q}, 4, -1, 1, t);
  ConvRun r = run(g, x, w, b, dy);
  auto at = [](const Tensor& v, int64_t i) { return element_as_double(v, i); };
  std::vector<double> y(static_cast<size_t>(r.y.numel())), dx(static_cast<size_t>(x.numel())),
      dw(static_cast<size_t>(w.numel())), db(static_cast<size_t>(g.K));
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t k = 0; k < g.K; ++k)
      for (int64_t p = 0; p < g.P; ++p)
        for (int64_t q = 0; q < g.Q; ++q) {
          const int64_t yi = ((n * g.K + k) * g.P + p) * g.Q + q;
          double acc = bias ? at(b, k) : 0, d = at(dy, yi);
          for (int64_t c = 0; c < g.C; ++c)
            for (int64_t rr = 0; rr < g.R; ++rr)
              for (int64_t s = 0; s < g.S; ++s) {
                const int64_t h = p * g.stride_h - g.pad_h + rr, v = q * g.stride_w - g.pad_w + s;
                if (h < 0 || h >= g.H || v < 0 || v >= g.W) continue;
                const int64_t xi = ((n * g.C + c) * g.H + h) * g.W + v;
                const int64_t wi = ((k * g.C + c) * g.R + rr) * g.S + s;
                acc += at(x, xi) * at(w, wi);
                dx[static_cast<size_t>(xi)] += at(w, wi) * d;
                dw[static_cast<size_t>(wi)] += at(x, xi) * d;
              }
          y[static_cast<size_t>(yi)] = acc;
          db[static_cast<size_t>(k)] += d;
        }
  check_close(r.y, y, tol);
  check_close(r.dx, dx, tol);
  check_close(r.dw, dw, tol);
  if (bias) check_close(r.db, db, tol);
  return r;
}

std::vector<Value> one(Value v) {
  return {v};
}

// Sets the CPU backend's thread count for one scope, then restores it.
struct Threads {
  explicit Threads(int n) : saved(cpu_backend().threads()) { set_cpu_threads(n); }
  ~Threads() { set_cpu_threads(saved); }
  int saved;
};

constexpr int64_t kBudget = int64_t{1} << 20;  // the backend's column bytes per thread

}  // namespace

TEST_CASE("gradcheck conv2d") {
  check_gradients([](auto x) { return one(conv2d(x[0], {.out = 4, .kernel = 3, .pad = 1})); },
                  {random_tensor({2, 3, 5, 5}, 1)});
  // Stride 2 with padding over a non-square input.
  check_gradients(
      [](auto x) { return one(conv2d(x[0], {.out = 3, .kernel = 3, .stride = 2, .pad = 1})); },
      {random_tensor({2, 2, 6, 5}, 2)});
  // No bias, even kernel, no padding.
  check_gradients([](auto x) { return one(conv2d(x[0], {.out = 2, .kernel = 2, .bias = false})); },
                  {random_tensor({1, 2, 4, 3}, 3)});
  // 1x1: a GEMM straight over x, no columns.
  check_gradients([](auto x) { return one(conv2d(x[0], {.out = 3, .kernel = 1})); },
                  {random_tensor({2, 4, 3, 2}, 4)});
  // Two convs in a row: the second reads the first's output in its backward.
  check_gradients(
      [](auto x) {
        Value h = conv2d(x[0], {.out = 3, .kernel = 3, .stride = 2});
        return one(conv2d(h, {.out = 2, .kernel = 1, .stride = 2}));
      },
      {random_tensor({2, 2, 7, 7}, 5)});
  // Two threads and one sample: each thread runs a tile of output rows in forward and a range
  // of channels (of column rows in the filter gradient) in backward.
  Threads two(2);
  check_gradients([](auto x) { return one(conv2d(x[0], {.out = 3, .kernel = 3, .pad = 1})); },
                  {random_tensor({1, 3, 6, 5}, 6)});
  check_gradients([](auto x) { return one(conv2d(x[0], {.out = 2, .kernel = 1})); },
                  {random_tensor({1, 3, 5, 4}, 7)});
}

TEST_CASE("conv2d hand-computed") {
  // x = 1..9 as 3x3, w = [1 2; 3 4], b = 1, dy = ones (2x2).
  Conv2dGeometry g = geometry(1, 1, 3, 3, 1, 2, 2, 1, 1, 0, 0);
  Tensor x = Tensor::empty({1, 1, 3, 3}, DType::f32), w = Tensor::empty({1, 1, 2, 2}, DType::f32);
  Tensor b = Tensor::empty({1}, DType::f32), dy = Tensor::empty({1, 1, 2, 2}, DType::f32);
  for (int i = 0; i < 9; ++i) x.data<float>()[i] = static_cast<float>(i + 1);
  for (int i = 0; i < 4; ++i) w.data<float>()[i] = static_cast<float>(i + 1);
  cpu_backend().fill(b, 1);
  cpu_backend().fill(dy, 1);
  ConvRun r = run(g, x, w, b, dy);
  check_close(r.y, {38, 48, 68, 78}, 0);
  check_close(r.dx, {1, 3, 2, 4, 10, 6, 3, 7, 4}, 0);
  check_close(r.dw, {12, 16, 24, 28}, 0);
  check_close(r.db, {4}, 0);
  // A 3x3 window of ones at stride 2, pad 1 over [1 2; 3 4]: one output, the sum.
  Conv2dGeometry g2 = geometry(1, 1, 2, 2, 1, 3, 3, 2, 2, 1, 1);
  REQUIRE(g2.P == 1);
  Tensor x2 = Tensor::empty({1, 1, 2, 2}, DType::f32), w2 = Tensor::empty({1, 1, 3, 3}, DType::f32);
  for (int i = 0; i < 4; ++i) x2.data<float>()[i] = static_cast<float>(i + 1);
  cpu_backend().fill(w2, 1);
  Tensor y2 = nan_tensor({1, 1, 1, 1}, DType::f32), scratch = scratch_for(g2, DType::f32);
  cpu_backend().conv2d_forward(g2, x2, w2, Tensor(), y2, scratch);
  check_close(y2, {10}, 0);
}

TEST_CASE("conv2d kernels match direct loops") {
  // Beside the small cases: row tiles (one f64 sample's columns, 18 x 32400 doubles, are 4.7 MB:
  // tiles of 40 rows fill 1 MiB), a row whose columns alone pass the budget (576 x 460 doubles),
  // and single samples that the threads cut into tiles.
  const Conv2dGeometry tiled = geometry(3, 2, 180, 180, 2, 3, 3, 1, 1, 1, 1);
  for (int threads : {1, 2, 3}) {
    Threads t(threads);
    INFO("threads ", threads);
    check_against_direct(geometry(2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1), DType::f64, true, 1e-12);
    check_against_direct(geometry(3, 2, 9, 8, 5, 3, 3, 2, 2, 1, 1), DType::f64, true, 1e-12);
    check_against_direct(geometry(2, 3, 8, 9, 2, 3, 2, 2, 1, 0, 2), DType::f64, false, 1e-12);
    check_against_direct(geometry(3, 5, 4, 3, 6, 1, 1, 1, 1, 0, 0), DType::f64, true, 1e-12);
    check_against_direct(geometry(1, 5, 7, 3, 6, 1, 1, 1, 1, 0, 0), DType::f64, true, 1e-12);
    check_against_direct(geometry(2, 4, 6, 6, 3, 1, 1, 2, 2, 0, 0), DType::f64, true, 1e-12);
    check_against_direct(geometry(2, 2, 5, 5, 3, 5, 5, 1, 1, 2, 2), DType::f32, true, 1e-5);
    check_against_direct(geometry(1, 3, 9, 7, 4, 3, 3, 1, 1, 1, 1), DType::f64, true, 1e-12);
    // A kernel larger than the input, uneven strides and padding.
    check_against_direct(geometry(2, 2, 3, 2, 2, 5, 4, 2, 3, 2, 2), DType::f64, true, 1e-12);
    check_against_direct(tiled, DType::f64, true, 1e-12);
    check_against_direct(geometry(1, 64, 2, 460, 2, 3, 3, 1, 1, 1, 1), DType::f64, true, 1e-12);
  }
}

TEST_CASE("conv2d scratch follows the geometry, dtype and threads") {
  Backend& be = cpu_backend();
  const Conv2dGeometry tiled = geometry(3, 2, 180, 180, 2, 3, 3, 1, 1, 1, 1);
  const int64_t tile = 18 * 180 * 40;  // column elements of 40 output rows
  {
    Threads t(1);
    CHECK(be.conv2d_forward_scratch(tiled, DType::f64) == tile * 8);
    CHECK(be.conv2d_backward_scratch(tiled, DType::f64) == tile * 8);
    if (!direct_conv::applies(tiled, DType::f32))  // im2col columns: 80 rows in 1 MiB
      CHECK(be.conv2d_forward_scratch(tiled, DType::f32) == 2 * tile * 4);
  }
  {
    // Forward: a tile per thread. Backward: one tile of twice the rows, shared by the threads.
    Threads t(2);
    CHECK(be.conv2d_forward_scratch(tiled, DType::f64) == 2 * tile * 8);
    CHECK(be.conv2d_backward_scratch(tiled, DType::f64) == 2 * tile * 8);
    // One sample: the same 40-row tiles, which the two threads take in turn.
    Conv2dGeometry one = tiled;
    one.N = 1;
    CHECK(be.conv2d_forward_scratch(one, DType::f64) == 2 * tile * 8);
    // One small sample: four tiles of a quarter of its rows, two held at once.
    CHECK(be.conv2d_forward_scratch(geometry(1, 2, 8, 8, 2, 3, 3, 1, 1, 1, 1), DType::f64) ==
          2 * 18 * 8 * 2 * 8);
  }
  // GoogLeNet's first conv at batch 1 in double: 14 MiB of columns per sample, now bounded by the
  // budget of each thread; in general by threads x budget whenever one output row fits it.
  const int64_t threads = be.threads();
  const Conv2dGeometry conv1 = geometry(1, 3, 224, 224, 64, 7, 7, 2, 2, 3, 3);
  CHECK(be.conv2d_forward_scratch(conv1, DType::f64) <= static_cast<size_t>(threads * kBudget));
  for (const Conv2dGeometry& g : {conv1, tiled, geometry(64, 16, 32, 32, 16, 3, 3, 1, 1, 1, 1),
                                  geometry(16, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1),
                                  geometry(2, 512, 14, 14, 512, 3, 3, 1, 1, 1, 1),
                                  geometry(5, 3, 227, 227, 96, 11, 11, 4, 4, 0, 0)})
    for (DType t : {DType::f32, DType::f64}) {
      CHECK(be.conv2d_forward_scratch(g, t) <= static_cast<size_t>(threads * kBudget));
      CHECK(be.conv2d_backward_scratch(g, t) <= static_cast<size_t>(threads * kBudget));
    }
  // A 1x1, stride-1, unpadded conv needs no scratch.
  CHECK(be.conv2d_forward_scratch(geometry(8, 64, 8, 8, 64, 1, 1, 1, 1, 0, 0), DType::f32) == 0);
  CHECK(be.conv2d_backward_scratch(geometry(1, 64, 8, 8, 64, 1, 1, 1, 1, 0, 0), DType::f32) == 0);
}

TEST_CASE("direct f32 conv2d kernels match direct loops, with the same bits on 1, 2, 3 threads") {
  // Stride-1 f32 convolutions, which the direct kernels take in a build with AVX and FMA:
  // rows that end in a short vector (Q = 6, 13, 11), filter counts that leave a register block
  // part empty (4, 13, 9), more input channels than one chunk (70; and 520 filters, whose
  // packed filters take chunks of a few channels, and whose data gradient has 520 inputs),
  // R != S, uneven and no padding, 5- and 7-wide filters (taps past S in the filter gradient),
  // one sample cut into tiles for the threads, and a sample whose rows take several tiles.
  // The filter gradient goes direct where rows are whole vectors (Q = 8, 16, 32, 120).
  const std::vector<Conv2dGeometry> cases = {
      geometry(2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1),     geometry(3, 70, 9, 13, 13, 3, 3, 1, 1, 1, 1),
      geometry(2, 5, 12, 20, 9, 3, 5, 1, 1, 0, 2),   geometry(1, 4, 11, 11, 6, 3, 3, 1, 1, 0, 0),
      geometry(2, 3, 16, 16, 24, 7, 7, 1, 1, 3, 3),  geometry(2, 6, 9, 9, 5, 3, 1, 1, 1, 1, 0),
      geometry(2, 16, 6, 6, 520, 3, 3, 1, 1, 1, 1),  geometry(1, 64, 120, 120, 8, 3, 3, 1, 1, 1, 1),
      geometry(4, 16, 32, 32, 16, 3, 3, 1, 1, 1, 1), geometry(2, 5, 12, 16, 9, 3, 5, 1, 1, 0, 2),
      geometry(3, 70, 8, 8, 13, 3, 3, 1, 1, 1, 1),   geometry(2, 6, 10, 16, 5, 3, 1, 1, 1, 1, 0)};
  for (const Conv2dGeometry& g : cases) {
    const bool direct = direct_conv::applies(g, DType::f32);
    INFO("N,C,H,W ", g.N, ",", g.C, ",", g.H, ",", g.W, "  K,R,S ", g.K, ",", g.R, ",", g.S,
         (direct ? "  direct" : "  im2col (direct kernels not built)"));
    // f32 rounding grows with the longest sum: C R S terms in y, K R S in dx, N P Q in dw.
    const double terms =
        static_cast<double>(std::max({g.C * g.R * g.S, g.K * g.R * g.S, g.N * g.P * g.Q}));
    std::vector<ConvRun> runs;
    for (int threads : {1, 2, 3}) {
      Threads t(threads);
      INFO("threads ", threads);
      runs.push_back(check_against_direct(g, DType::f32, true, 1e-5 + 2e-8 * terms));
    }
    if (!direct) continue;  // the im2col path's tiles depend on the thread count
    for (size_t i = 1; i < runs.size(); ++i) {
      CHECK(bitwise_equal(runs[0].y, runs[i].y));
      CHECK(bitwise_equal(runs[0].dx, runs[i].dx));
      if (direct_conv::filter_applies(g)) CHECK(bitwise_equal(runs[0].dw, runs[i].dw));
    }
  }
}

TEST_CASE("direct f32 conv2d scratch stays within a bound per thread, whatever the batch") {
  Backend& be = cpu_backend();
  const int64_t threads = be.threads();
  for (const Conv2dGeometry& g : {geometry(64, 16, 32, 32, 16, 3, 3, 1, 1, 1, 1),
                                  geometry(64, 64, 8, 8, 64, 3, 3, 1, 1, 1, 1),
                                  geometry(64, 512, 14, 14, 512, 3, 3, 1, 1, 1, 1),
                                  geometry(64, 64, 224, 224, 64, 3, 3, 1, 1, 1, 1)}) {
    if (!direct_conv::applies(g, DType::f32)) continue;
    INFO("N,C,H ", g.N, ",", g.C, ",", g.H, "  K ", g.K);
    // Input tiles of 3/4 MiB and packed filters of 1/4 MiB per thread.
    CHECK(be.conv2d_forward_scratch(g, DType::f32) <= static_cast<size_t>(threads * kBudget));
    CHECK(be.conv2d_backward_scratch(g, DType::f32) <= static_cast<size_t>(threads * kBudget));
    Conv2dGeometry twice = g;
    twice.N *= 2;
    CHECK(be.conv2d_forward_scratch(twice, DType::f32) == be.conv2d_forward_scratch(g, DType::f32));
    CHECK(be.conv2d_backward_scratch(twice, DType::f32) ==
          be.conv2d_backward_scratch(g, DType::f32));
  }
  // A small conv asks for little: one tile and one block of packed filters per thread.
  const Conv2dGeometry small = geometry(1, 2, 8, 8, 2, 3, 3, 1, 1, 1, 1);
  if (direct_conv::applies(small, DType::f32))
    CHECK(be.conv2d_forward_scratch(small, DType::f32) <= static_cast<size_t>(threads) * 4096);
}

TEST_CASE("conv2d kernels are deterministic") {
  for (int threads : {1, 2}) {
    Threads t(threads);
    for (Conv2dGeometry g : {geometry(5, 2, 180, 180, 2, 3, 3, 1, 1, 1, 1),
                             geometry(1, 2, 180, 180, 3, 3, 3, 1, 1, 1, 1),
                             geometry(16, 16, 16, 16, 16, 3, 3, 1, 1, 1, 1),
                             geometry(8, 32, 8, 8, 64, 1, 1, 1, 1, 0, 0),
                             geometry(1, 32, 8, 8, 64, 1, 1, 1, 1, 0, 0)}) {
      INFO("threads ", threads, "  N,C,H ", g.N, ",", g.C, ",", g.H);
      Tensor x = random_tensor({g.N, g.C, g.H, g.W}, 1, -1, 1, DType::f32);
      Tensor w = random_tensor({g.K, g.C, g.R, g.S}, 2, -1, 1, DType::f32);
      Tensor b = random_tensor({g.K}, 3, -1, 1, DType::f32);
      Tensor dy = random_tensor({g.N, g.K, g.P, g.Q}, 4, -1, 1, DType::f32);
      ConvRun a = run(g, x, w, b, dy), c = run(g, x, w, b, dy);
      CHECK(bitwise_equal(a.y, c.y));
      CHECK(bitwise_equal(a.dx, c.dx));
      CHECK(bitwise_equal(a.dw, c.dw));
      CHECK(bitwise_equal(a.db, c.db));
      // Scratch inside a larger arena at an odd offset, as a planned step hands it out: the
      // kernels use the bytes they asked for and nothing else, so the bits do not change.
      Backend& be = cpu_backend();
      const int64_t need = static_cast<int64_t>(std::max(
          be.conv2d_forward_scratch(g, DType::f32), be.conv2d_backward_scratch(g, DType::f32)));
      Tensor arena = nan_tensor({need + 4096}, DType::u8);
      Tensor scratch(arena.storage(), arena.offset() + 40, Shape{std::max<int64_t>(need, 1)},
                     DType::u8);
      ConvRun d{nan_tensor(a.y.shape(), DType::f32), nan_tensor(x.shape(), DType::f32),
                nan_tensor(w.shape(), DType::f32), nan_tensor(b.shape(), DType::f32)};
      be.conv2d_forward(g, x, w, b, d.y, scratch);
      be.conv2d_backward_data(g, dy, w, d.dx, scratch);
      be.conv2d_backward_filter(g, x, dy, d.dw, d.db, scratch);
      CHECK(bitwise_equal(a.y, d.y));
      CHECK(bitwise_equal(a.dx, d.dx));
      CHECK(bitwise_equal(a.dw, d.dw));
      CHECK(bitwise_equal(a.db, d.db));
    }
  }
}

TEST_CASE("conv2d roles and parameters") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {8, 3, 32, 32}, DType::f32);
  Value y = conv2d(x, {.out = 16, .kernel = 3, .pad = 1});
  Value z = conv2d(y, {.out = 8, .kernel = 1, .bias = false, .name = "proj"});
  CHECK(y.shape() == Shape{8, 16, 32, 32});
  CHECK(z.shape() == Shape{8, 8, 32, 32});
  REQUIRE(store.find("conv2d0.weight") != nullptr);
  CHECK(store.find("conv2d0.weight")->value.shape() == Shape{16, 3, 3, 3});
  CHECK(element_as_double(store.find("conv2d0.bias")->value, 5) == 0);
  CHECK(store.find("proj.weight") != nullptr);
  CHECK(store.find("proj.bias") == nullptr);
  const Op& op = *tape.ops()[0].op;
  Roles train = op.roles(Mode::training, cpu_backend());
  CHECK(train.backward_reads_inputs == std::vector<int>{0, 1});
  CHECK(train.backward_reads_outputs.empty());
  CHECK(train.aliases.empty());
  // The scratch the backend asks for this geometry.
  const Conv2dGeometry g = geometry(8, 3, 32, 32, 16, 3, 3, 1, 1, 1, 1);
  CHECK(train.forward_scratch == cpu_backend().conv2d_forward_scratch(g, DType::f32));
  CHECK(train.backward_scratch == cpu_backend().conv2d_backward_scratch(g, DType::f32));
  CHECK(train.backward_scratch > 0);
  Roles infer = op.roles(Mode::inference, cpu_backend());
  CHECK(infer.backward_reads_inputs.empty());
  CHECK(infer.backward_scratch == 0);
  CHECK(tape.ops()[1].op->roles(Mode::training, cpu_backend()).forward_scratch == 0);
}

TEST_CASE("conv2d shape errors") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {1, 3, 8, 8}, DType::f32);
  Value w = tape.param("w", {4, 4, 3, 3}, Init::zeros());
  CHECK_THROWS_WITH_AS(
      tape.record(std::make_unique<Conv2dOp>(1, 0), {x, w}, std::source_location::current()),
      doctest::Contains("conv2d: input channels 3 != weight channels 4 (x [1,3,8,8], w [4,4,3,3])"),
      Error);
  Value w3 = tape.param("w3", {4, 3, 3, 3}, Init::zeros()), b = tape.param("b", {5}, Init::zeros());
  CHECK_THROWS_WITH_AS(
      tape.record(std::make_unique<Conv2dOp>(1, 0), {x, w3, b}, std::source_location::current()),
      doctest::Contains("conv2d: bias [5] f32 for weight [4,3,3,3]"), Error);
  Value flat = tape.input("flat", {4, 10}, DType::f32);
  CHECK_THROWS_WITH_AS(conv2d(flat, {.out = 8}), doctest::Contains("conv2d: expects x (N,C,H,W)"),
                       Error);
  CHECK_THROWS_WITH_AS(conv2d(flat, {.out = 8}), doctest::Contains("test_conv2d.cpp"), Error);
  Value tiny = tape.input("tiny", {1, 1, 2, 2}, DType::f32);
  CHECK_THROWS_WITH_AS(conv2d(tiny, {.out = 1, .kernel = 5}),
                       doctest::Contains("conv2d: kernel 5x5 is larger than the padded input 2x2"),
                       Error);
  Value xd = tape.input("xd", {1, 3, 8, 8}, DType::f64);
  CHECK_THROWS_WITH_AS(conv2d(xd, {.out = 2}),
                       doctest::Contains("conv2d: input is f64 but the weight is f32"), Error);
  CHECK_THROWS_WITH_AS(conv2d(x, {.out = 2, .stride = 0}), doctest::Contains("conv2d: stride 0"),
                       Error);
}
