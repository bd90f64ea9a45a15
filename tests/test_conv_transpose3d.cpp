// ConvTranspose3d: the forward against a direct scatter in f64 (output padding, groups, chunks,
// gaps between the taps' planes, windows 1 deep, outputs reached by no tap); finite-difference
// gradients in f64; the adjoint identity with conv3d; planned == baseline bitwise on a small 3-D
// U-Net; the forward cost budgets weigh it (and conv_transpose2d) by; errors that name what is
// wrong.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/binary.h"
#include "layers/conv3d.h"
#include "layers/conv_transpose2d.h"
#include "layers/conv_transpose3d.h"
#include "layers/relu.h"
#include "run/executor.h"
#include "tests/conv3d_cases.h"
#include "tests/worst.h"
#include "train/step_budget.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

struct TransposedCase {
  Shape x;  // (N, C, D, H, W)
  int64_t K, kd, kh, kw;
  Conv3dParams p;
  int64_t output_padding[3];
};

// y of the op against the scatter of every x * w into y (+ b), in double.
void check_transposed_against_loop(const TransposedCase& c) {
  const int64_t N = c.x[0], C = c.x[1], D = c.x[2], H = c.x[3], W = c.x[4];
  const Conv2dParams& q = c.p.plane;
  const int64_t Cg = C / q.groups, Kg = c.K / q.groups;
  ParamStore store(1);
  Tape tape(store, DType::f64);
  Value x = tape.input("x", c.x, DType::f64);
  Value w = tape.param("w", {C, Kg, c.kd, c.kh, c.kw}, Init::normal(0.5));
  Value b = tape.param("b", {c.K}, Init::normal(0.5));
  Value y = tape.record(std::make_unique<ConvTranspose3dOp>(
                            c.p, c.output_padding[0], c.output_padding[1], c.output_padding[2]),
                        {x, w, b}, std::source_location::current())[0];
  INFO("x ", c.x, " w ", Shape{C, Kg, c.kd, c.kh, c.kw}, " depth stride ", c.p.stride_d, " pads ",
       c.p.pad_front, ",", c.p.pad_back, " groups ", q.groups, "; y ", y.shape());
  const Tensor xv = random_tensor(c.x, 3);
  Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {y}});
  ex.set_input(x, xv);
  ex.forward();
  const Shape ys = y.shape();
  const int64_t Do = ys[2], Ho = ys[3], Wo = ys[4];
  std::vector<double> want(static_cast<size_t>(ys.numel()));
  const double* xp = xv.data<double>();
  const double* wp = store.find("w")->value.data<double>();
  const double* bp = store.find("b")->value.data<double>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < c.K; ++k)
      for (int64_t o = 0; o < Do * Ho * Wo; ++o)
        want[static_cast<size_t>((n * c.K + k) * Do * Ho * Wo + o)] = bp[k];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ci = 0; ci < C; ++ci)
      for (int64_t d = 0; d < D; ++d)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t v = 0; v < W; ++v)
            for (int64_t kk = 0; kk < Kg; ++kk)
              for (int64_t i = 0; i < c.kd; ++i)
                for (int64_t r = 0; r < c.kh; ++r)
                  for (int64_t s = 0; s < c.kw; ++s) {
                    const int64_t od = d * c.p.stride_d - c.p.pad_front + i * c.p.dilation_d;
                    const int64_t oh = h * q.stride_h - q.pad_top + r * q.dilation_h;
                    const int64_t ow = v * q.stride_w - q.pad_left + s * q.dilation_w;
                    if (od < 0 || od >= Do || oh < 0 || oh >= Ho || ow < 0 || ow >= Wo) continue;
                    const int64_t k = ci / Cg * Kg + kk;
                    want[static_cast<size_t>((((n * c.K + k) * Do + od) * Ho + oh) * Wo + ow)] +=
                        xp[(((n * C + ci) * D + d) * H + h) * W + v] *
                        wp[(((ci * Kg + kk) * c.kd + i) * c.kh + r) * c.kw + s];
                  }
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i)
    worst = worse(worst, std::abs(ex.value(y).data<double>()[i] - want[i]) /
                             std::max(1.0, std::abs(want[i])));
  CHECK(worst <= 1e-13);
}

}  // namespace

TEST_CASE("conv_transpose3d: the forward matches a direct scatter") {
  const Conv2dParams two = Conv2dParams::uniform(2, 0);
  Conv2dParams uneven{.stride_h = 2,
                      .stride_w = 1,
                      .pad_top = 1,
                      .pad_left = 0,
                      .pad_bottom = 0,
                      .pad_right = 1,
                      .dilation_h = 1,
                      .dilation_w = 2,
                      .groups = 2};
  const TransposedCase cases[] = {
      {{2, 3, 2, 3, 3}, 4, 2, 2, 2, params(2, 0, 0, 1, two), {0, 0, 0}},     // the up-convolution
      {{1, 4, 3, 3, 2}, 6, 3, 3, 2, params(2, 1, 1, 1, uneven), {1, 1, 0}},  // grouped, padded
      {{9, 2, 2, 2, 2}, 2, 2, 2, 2, params(2, 0, 0, 1, two), {1, 1, 1}},  // chunks, output padding
      {{2, 2, 4, 3, 3}, 3, 1, 2, 2, params(1, 0, 0, 1, two), {0, 0, 0}},  // (1, 2, 2)
      // gaps between the taps' planes, dilated
      {{2, 2, 3, 3, 3}, 2, 2, 1, 1, params(3, 1, 0, 2, Conv2dParams{}), {2, 0, 0}},
      {{2, 2, 3, 3, 3}, 3, 1, 2, 2, params(2, 0, 0, 1, two), {1, 0, 0}},  // 1 deep, strided
      // 1 deep, every plane of the convolution's output in its padding: the bias alone
      {{2, 2, 1, 3, 3}, 2, 1, 2, 2, params(3, 1, 0, 1, Conv2dParams::uniform(1, 0)), {2, 0, 0}},
  };
  for (const TransposedCase& c : cases) check_transposed_against_loop(c);
}

TEST_CASE("conv_transpose3d: finite-difference gradients in f64") {
  check_gradients(
      [](auto x) { return one(conv_transpose3d(x[0], {.out = 3, .kernel = 2, .stride = 2})); },
      {random_tensor({2, 2, 2, 3, 2}, 6)});
  check_gradients(
      [](auto x) {
        return one(conv_transpose3d(x[0], {.out = 4,
                                           .kernel = 3,
                                           .stride = 2,
                                           .pad = 1,
                                           .output_padding = 1,
                                           .groups = 2,
                                           .bias = false}));
      },
      {random_tensor({2, 2, 3, 2, 3}, 7)});
  // Depth stride 3 past a window of 2 (output planes no tap writes), with weights of the
  // test's own.
  check_gradients(
      [](auto x) {
        Tape& t = x[0].tape();
        Value w = t.param("w", {2, 3, 2, 1, 2}, Init::normal(0.5));
        Value b = t.param("b", {3}, Init::normal(0.5));
        return t.record(
            std::make_unique<ConvTranspose3dOp>(params(3, 0, 1, 1, Conv2dParams{}), 1, 0, 0),
            {x[0], w, b}, std::source_location::current());
      },
      {random_tensor({2, 2, 3, 2, 2}, 8)});
  // 1 deep at depth stride 2: output planes between the input's get the bias alone.
  check_gradients(
      [](auto x) {
        Tape& t = x[0].tape();
        Value w = t.param("w", {2, 3, 1, 2, 2}, Init::normal(0.5));
        Value b = t.param("b", {3}, Init::normal(0.5));
        return t.record(std::make_unique<ConvTranspose3dOp>(
                            params(2, 0, 0, 1, Conv2dParams::uniform(2, 0)), 1, 0, 1),
                        {x[0], w, b}, std::source_location::current());
      },
      {random_tensor({2, 2, 3, 2, 2}, 10)});
}

TEST_CASE("conv_transpose3d: the adjoint of conv3d") {
  // <conv_transpose(x), z> == <x, conv(z)> with the same weights: the two ops are transposes.
  const Conv3dParams p = params(2, 1, 0, 1, Conv2dParams::uniform(2, 1, 1, 2));
  ParamStore store(5);
  Tape tape(store, DType::f64);
  Value x = tape.input("x", {3, 4, 3, 3, 2}, DType::f64);
  Value w = tape.param("w", {4, 3, 3, 3, 3}, Init::normal(0.5));
  Value y = tape.record(std::make_unique<ConvTranspose3dOp>(p, 1, 0, 1), {x, w},
                        std::source_location::current())[0];
  Value z = tape.input("z", y.shape(), DType::f64);
  Value c = tape.record(std::make_unique<Conv3dOp>(p), {z, w}, std::source_location::current())[0];
  REQUIRE(c.shape() == x.shape());
  Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {y, c}});
  const Tensor xv = random_tensor(x.shape(), 6), zv = random_tensor(z.shape(), 7);
  ex.set_input(x, xv);
  ex.set_input(z, zv);
  ex.forward();
  double a = 0, b = 0;
  for (int64_t i = 0; i < y.shape().numel(); ++i)
    a += ex.value(y).data<double>()[i] * zv.data<double>()[i];
  for (int64_t i = 0; i < x.shape().numel(); ++i)
    b += xv.data<double>()[i] * ex.value(c).data<double>()[i];
  CHECK(std::abs(a - b) <= 1e-12 * std::abs(a));
}

TEST_CASE("conv_transpose3d: planned equals baseline bitwise") {
  // A 3-D U-Net step in small: down by a strided convolution, up by a transposed one, the
  // skip joined by adding.
  check_planned_equals_baseline(
      [](Value x) {
        Value a = relu(conv3d(x, {.out = 4, .kernel = 3, .pad = 1}));
        Value d = relu(conv3d(a, {.out = 6, .kernel = 3, .stride = 2, .pad = 1}));
        Value u = conv_transpose3d(d, {.out = 4, .kernel = 2, .stride = 2});
        return relu(binary(BinaryKind::add, a, u));
      },
      {4, 2, 6, 6, 6});
}

TEST_CASE("conv_transpose2d and conv_transpose3d: a step's forward cost counts multiply-adds") {
  // Each input element meets out/groups * window weights: 2 * 3 * 100 elements times 4 * 27,
  // and 2 * 4 * 25 times 3 * 9 (groups of 2), not one flop per output element.
  ParamStore store;
  Tape tape3(store);
  conv_transpose3d(tape3.input("x", {2, 3, 4, 5, 5}, DType::f32),
                   {.out = 4, .kernel = 3, .bias = false});
  CHECK(forward_flops(tape3) == 2.0 * 600 * 108);
  Tape tape2(store);
  conv_transpose2d(tape2.input("x", {2, 4, 5, 5}, DType::f32),
                   {.out = 6, .kernel = 3, .stride = 2, .groups = 2, .bias = false});
  CHECK(forward_flops(tape2) == 2.0 * 200 * 27);
}

TEST_CASE("conv_transpose3d: errors name what is wrong") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 6, 4, 8, 8}, DType::f32);
  CHECK_THROWS_WITH_AS(
      conv_transpose3d(x, {.out = 4, .kernel = 3, .groups = 4}),
      doctest::Contains("4 groups do not divide the 6 input and 4 output channels"), Error);
  CHECK_THROWS_WITH_AS(
      conv_transpose3d(x, {.out = 4, .kernel = 3, .stride = 2, .output_padding = 2}),
      doctest::Contains("output padding 2x2x2 must be >= 0 and below the stride 2x2x2"), Error);
  Value w = tape.param("w", {5, 2, 3, 3, 3}, Init::zeros());
  CHECK_THROWS_WITH_AS(tape.record(std::make_unique<ConvTranspose3dOp>(Conv3dParams{}, 0, 0, 0),
                                   {x, w}, std::source_location::current()),
                       doctest::Contains("input channels 6 != the weight's first dimension 5"),
                       Error);
  CHECK_THROWS_WITH_AS(conv_transpose3d(x, {.out = 4, .kernel = 1, .pad = 3}),
                       doctest::Contains("the padding 3,3 of axis 2 leaves no output"), Error);
}
