// Conv3d: the forward against a direct loop in f64 over strides, padding per side, dilation,
// groups, windows 1 deep and batches of several chunks; finite-difference gradients in f64; f32
// against f64 through both 2-D kernel families; a case by hand; planned == baseline bitwise
// (rebuilds included); a step's forward cost; errors that name what is wrong. ConvTranspose3d:
// tests/test_conv_transpose3d.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/binary.h"
#include "layers/conv3d.h"
#include "layers/relu.h"
#include "run/executor.h"
#include "tests/conv3d_cases.h"
#include "tests/worst.h"
#include "train/step_budget.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

struct Case {
  Shape x;  // (N, C, D, H, W)
  int64_t K, kd, kh, kw;
  Conv3dParams p;
  bool bias = true;
};

// y of the op against sum over (c in k's group, i, r, s) of x * w (+ b), in double.
void check_against_loop(const Case& c) {
  const int64_t N = c.x[0], C = c.x[1], D = c.x[2], H = c.x[3], W = c.x[4];
  const Conv2dParams& q = c.p.plane;
  const int64_t Cg = C / q.groups, Kg = c.K / q.groups;
  ParamStore store(1);
  Tape tape(store, DType::f64);
  Value x = tape.input("x", c.x, DType::f64);
  Value w = tape.param("w", {c.K, Cg, c.kd, c.kh, c.kw}, Init::normal(0.5));
  std::vector<Value> in{x, w};
  if (c.bias) in.push_back(tape.param("b", {c.K}, Init::normal(0.5)));
  Value y = tape.record(std::make_unique<Conv3dOp>(c.p), in, std::source_location::current())[0];
  const Conv3dOp& op = op_of<Conv3dOp>(y);
  INFO("x ", c.x, " w ", Shape{c.K, Cg, c.kd, c.kh, c.kw}, " depth stride ", c.p.stride_d, " pads ",
       c.p.pad_front, ",", c.p.pad_back, " dilation ", c.p.dilation_d, " groups ", q.groups, "; ",
       op.planes().chunk_samples(), " samples a chunk");
  const Tensor xv = random_tensor(c.x, 2);
  Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {y}});
  ex.set_input(x, xv);
  ex.forward();
  const Tensor& yv = ex.value(y);
  const Shape& ys = yv.shape();
  const int64_t Do = ys[2], Ho = ys[3], Wo = ys[4];
  REQUIRE(Do ==
          conv_output_size(D, c.kd, c.p.stride_d, c.p.pad_front, c.p.pad_back, c.p.dilation_d));
  const double* xp = xv.data<double>();
  const double* wp = store.find("w")->value.data<double>();
  const double* bp = c.bias ? store.find("b")->value.data<double>() : nullptr;
  double worst = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < c.K; ++k)
      for (int64_t o = 0; o < Do; ++o)
        for (int64_t h = 0; h < Ho; ++h)
          for (int64_t v = 0; v < Wo; ++v) {
            double acc = bp ? bp[k] : 0;
            for (int64_t cc = 0; cc < Cg; ++cc)
              for (int64_t i = 0; i < c.kd; ++i)
                for (int64_t r = 0; r < c.kh; ++r)
                  for (int64_t s = 0; s < c.kw; ++s) {
                    const int64_t d = o * c.p.stride_d - c.p.pad_front + i * c.p.dilation_d;
                    const int64_t a = h * q.stride_h - q.pad_top + r * q.dilation_h;
                    const int64_t e = v * q.stride_w - q.pad_left + s * q.dilation_w;
                    if (d < 0 || d >= D || a < 0 || a >= H || e < 0 || e >= W) continue;
                    const int64_t ci = k / Kg * Cg + cc;
                    acc += xp[(((n * C + ci) * D + d) * H + a) * W + e] *
                           wp[(((k * Cg + cc) * c.kd + i) * c.kh + r) * c.kw + s];
                  }
            const double got = yv.data<double>()[(((n * c.K + k) * Do + o) * Ho + h) * Wo + v];
            worst = worse(worst, std::abs(got - acc) / std::max(1.0, std::abs(acc)));
          }
  CHECK(worst <= 1e-13);
}

}  // namespace

TEST_CASE("conv3d: the forward matches a direct loop") {
  const Conv2dParams plain = Conv2dParams::uniform(1, 1);
  const Conv2dParams uneven{.stride_h = 2,
                            .stride_w = 1,
                            .pad_top = 0,
                            .pad_left = 2,
                            .pad_bottom = 1,
                            .pad_right = 0,
                            .dilation_h = 1,
                            .dilation_w = 2,
                            .groups = 2};
  const Case cases[] = {
      {{2, 3, 4, 5, 5}, 4, 3, 3, 3, params(1, 1, 1, 1, plain)},  // r3d_18's 3x3x3
      // 7 samples of 3 planes: chunks of 6 and 1
      {{7, 2, 3, 4, 4}, 3, 3, 3, 3, params(1, 1, 1, 1, plain), false},
      {{2, 2, 7, 6, 5}, 4, 3, 3, 3, params(2, 1, 1, 1, Conv2dParams::uniform(2, 1))},  // stride 2
      {{2, 4, 6, 5, 6}, 6, 2, 3, 2, params(1, 2, 0, 2, uneven)},  // dilated, padded unevenly
      {{3, 2, 7, 4, 3}, 2, 2, 1, 1, params(3, 0, 1, 1, plain)},   // stride 3 > the window: gaps
      {{2, 4, 5, 6, 6}, 6, 1, 1, 1, params(2, 0, 0, 1, Conv2dParams::uniform(2, 0))},  // (1,1,1)/2
      {{2, 3, 4, 5, 5}, 4, 1, 3, 3, params(1, 0, 0, 1, plain)},  // (1, 3, 3): mc3_18, R(2+1)D
      {{2, 2, 5, 3, 3}, 3, 1, 1, 1, params(2, 2, 1, 1, plain)},  // 1 deep, planes in the padding
      {{1, 2, 3, 4, 4}, 2, 3, 1, 1, params(1, 1, 1, 1, Conv2dParams::uniform(1, 0))},  // (3,1,1)
      // 1 deep, every output plane in the padding: the bias alone, as PyTorch gives
      {{5, 4, 1, 4, 2}, 4, 1, 2, 1, params(3, 1, 1, 1, Conv2dParams::uniform(1, 0, 1, 2))},
  };
  for (const Case& c : cases) check_against_loop(c);
}

TEST_CASE("conv3d: finite-difference gradients in f64") {
  check_gradients([](auto x) { return one(conv3d(x[0], {.out = 3, .kernel = 3, .pad = 1})); },
                  {random_tensor({2, 2, 3, 4, 4}, 1)});
  // 3 samples of 8 planes: chunks of 2 samples and 1, whose filter gradients add up.
  check_gradients(
      [](auto x) { return one(conv3d(x[0], {.out = 2, .kernel = 3, .pad = 1, .bias = false})); },
      {random_tensor({3, 1, 8, 3, 3}, 2)});
  check_gradients(
      [](auto x) {
        return one(conv3d(x[0], {.out = 4, .kernel = 3, .stride = 2, .pad = 1, .groups = 2}));
      },
      {random_tensor({2, 2, 5, 5, 4}, 3)});
  // Depth stride 3 past a window of 2 (planes no tap reads), dilation and uneven depth pads,
  // and a window 1 deep whose outputs skip planes and read the padding, with weights of the
  // test's own.
  check_gradients(
      [](auto x) {
        Tape& t = x[0].tape();
        Value w = t.param("w", {2, 2, 2, 1, 2}, Init::normal(0.5));
        Value b = t.param("b", {2}, Init::normal(0.5));
        Conv2dParams q = Conv2dParams::uniform(1, 0);
        q.pad_right = 1;
        return t.record(std::make_unique<Conv3dOp>(params(3, 0, 1, 2, q)), {x[0], w, b},
                        std::source_location::current());
      },
      {random_tensor({2, 2, 7, 3, 3}, 4)});
  check_gradients(
      [](auto x) {
        Tape& t = x[0].tape();
        Value w = t.param("w", {3, 2, 1, 3, 3}, Init::normal(0.5));
        return t.record(std::make_unique<Conv3dOp>(params(2, 2, 1, 1, Conv2dParams::uniform(2, 1))),
                        {x[0], w}, std::source_location::current());
      },
      {random_tensor({2, 2, 5, 5, 5}, 5)});
  // Every output plane in the depth padding: no gradient reaches x or w, db counts outputs.
  check_gradients(
      [](auto x) {
        Tape& t = x[0].tape();
        Value w = t.param("w", {3, 2, 1, 1, 2}, Init::normal(0.5));
        Value b = t.param("b", {3}, Init::normal(0.5));
        return t.record(std::make_unique<Conv3dOp>(params(3, 1, 1, 1, Conv2dParams{})),
                        {x[0], w, b}, std::source_location::current());
      },
      {random_tensor({2, 2, 1, 2, 3}, 9)});
}

namespace {

// dx, dw and y of a conv3d at x's and w's shapes (pad 1 where 3 deep), in `t`, through the
// direct kernels or im2col, from seeded data: every output as doubles.
std::vector<double> conv3d_pass(bool direct, DType t, const Shape& xs, const Shape& ws) {
  set_cpu_direct_conv(direct);
  ParamStore store(1);
  Tape tape(store, t);
  Value x = tape.input("x", xs, t, true);
  Value w = tape.input("w", ws, t, true);
  const int64_t pd = ws[2] == 3 ? 1 : 0;
  Value y =
      tape.record(std::make_unique<Conv3dOp>(params(1, pd, pd, 1, Conv2dParams::uniform(1, 1))),
                  {x, w}, std::source_location::current())[0];
  Executor ex(tape, cpu_backend(), {.memory = MemoryMode::planned, .keep = {x, w, y}});
  ex.set_input(x, random_tensor(xs, 1, -1, 1, t));
  ex.set_input(w, random_tensor(ws, 2, -1, 1, t));
  ex.forward();
  std::pair<Value, Tensor> seed{y, random_tensor(y.shape(), 3, -1, 1, t)};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  set_cpu_direct_conv(true);
  std::vector<double> out;
  for (const Tensor* v : {&ex.value(y), &ex.grad(x), &ex.grad(w)})
    for (int64_t i = 0; i < v->numel(); ++i) out.push_back(element_as_double(*v, i));
  return out;
}

double relative_l2(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i) d += (a[i] - b[i]) * (a[i] - b[i]), n += b[i] * b[i];
  return std::sqrt(d / n);
}

}  // namespace

TEST_CASE(
    "conv3d: f32 through the direct kernels and through im2col is float64's within rounding") {
  // R(2+1)D's (1, 3, 3) layer and r3d_18's 3x3x3, small: y, dx and dw together.
  for (const auto& [xs, ws] : {std::pair<Shape, Shape>{{2, 16, 4, 8, 8}, {24, 16, 1, 3, 3}},
                               {{2, 8, 4, 8, 8}, {8, 8, 3, 3, 3}}}) {
    INFO("x ", xs, " w ", ws);
    const std::vector<double> exact = conv3d_pass(false, DType::f64, xs, ws);
    CHECK(relative_l2(conv3d_pass(true, DType::f32, xs, ws), exact) <= 2e-6);
    CHECK(relative_l2(conv3d_pass(false, DType::f32, xs, ws), exact) <= 2e-6);
  }
}

TEST_CASE("conv3d: a temporal sum by hand") {
  // One channel, the window (3, 1, 1) of ones, depth padding 1: each output plane is the sum
  // of its plane and the two beside it; planes of 1, 2, 4, 8 give 3, 7, 14, 12. Bias 0.5.
  ParamStore store(1);
  Tape tape(store, DType::f64);
  Value x = tape.input("x", {1, 1, 4, 2, 1}, DType::f64);
  Value w = tape.param("w", {1, 1, 3, 1, 1}, Init::constant(1.0));
  Value b = tape.param("b", {1}, Init::constant(0.5));
  Value y = tape.record(std::make_unique<Conv3dOp>(params(1, 1, 1, 1, Conv2dParams{})), {x, w, b},
                        std::source_location::current())[0];
  REQUIRE(y.shape() == Shape{1, 1, 4, 2, 1});
  Tensor xv = Tensor::empty({1, 1, 4, 2, 1}, DType::f64);
  const double planes[] = {1, 1, 2, 2, 4, 4, 8, 8};
  std::memcpy(xv.raw(), planes, sizeof planes);
  Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {y}});
  ex.set_input(x, xv);
  ex.forward();
  const double expect[] = {3.5, 3.5, 7.5, 7.5, 14.5, 14.5, 12.5, 12.5};
  for (int i = 0; i < 8; ++i) CHECK(ex.value(y).data<double>()[i] == expect[i]);
}

TEST_CASE("conv3d: planned equals baseline bitwise") {
  // A video block in small over 4 clips of 6 frames: 3x3x3, a strided one, a (1, 1, 1)
  // downsampling beside it; the batch in chunks of 3 clips (16 planes a chunk at least).
  check_planned_equals_baseline(
      [](Value x) {
        Value a = relu(conv3d(x, {.out = 4, .kernel = 3, .pad = 1}));
        Value b = relu(conv3d(a, {.out = 6, .kernel = 3, .stride = 2, .pad = 1}));
        Value d = conv3d(a, {.out = 6, .kernel = 1, .stride = 2, .bias = false});
        return relu(binary(BinaryKind::add, b, d));
      },
      {4, 2, 6, 6, 6});
}

TEST_CASE("conv3d: a step's forward cost counts its multiply-adds") {
  // What a memory budget weighs recomputation by: 2 flops per multiply-add, 3 * 27 of them
  // for each of the 2 * 4 * 4 * 5 * 5 outputs.
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 3, 4, 5, 5}, DType::f32);
  conv3d(x, {.out = 4, .kernel = 3, .pad = 1, .bias = false});
  CHECK(forward_flops(tape) == 2.0 * 800 * 81);
}

TEST_CASE("conv3d: errors name what is wrong") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 6, 4, 8, 8}, DType::f32);
  CHECK_THROWS_WITH_AS(
      conv3d(x, {.out = 4, .kernel = 3, .groups = 4}),
      doctest::Contains("4 groups do not divide the 6 input and 4 output channels"), Error);
  CHECK_THROWS_WITH_AS(conv3d(x, {.out = 4, .kernel = 5}),
                       doctest::Contains("a depth window of 5 (dilation 1) is deeper than the "
                                         "padded input's 4 planes"),
                       Error);
  Value w = tape.param("w", {5, 2, 3, 3, 3}, Init::zeros());
  CHECK_THROWS_WITH_AS(tape.record(std::make_unique<Conv3dOp>(Conv3dParams{}), {x, w},
                                   std::source_location::current()),
                       doctest::Contains("conv3d: input channels 6 != weight channels 2"), Error);
  Value flat = tape.input("flat", {2, 6, 8, 8}, DType::f32);
  CHECK_THROWS_WITH_AS(conv3d(flat, {.out = 4, .kernel = 3}),
                       doctest::Contains("conv3d: expects x (N,C,D,H,W)"), Error);
  // Groups of 0, through the op (the builder refuses them first): an error, not a division.
  Value w1 = tape.param("w1", {4, 6, 1, 1, 1}, Init::zeros());
  Conv3dParams none = params(1, 0, 0, 1, Conv2dParams{});
  none.plane.groups = 0;
  CHECK_THROWS_WITH_AS(
      tape.record(std::make_unique<Conv3dOp>(none), {x, w1}, std::source_location::current()),
      doctest::Contains("conv3d: stride 1x1, dilation 1x1 and groups 0 must be >= 1"), Error);
}
