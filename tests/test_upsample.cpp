// Nearest upsampling: finite-difference gradients in f64, a case by hand, planned == baseline
// bitwise (rebuilds included), and errors that name what is wrong.
#include <doctest/doctest.h>

#include <cstring>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/conv2d.h"
#include "layers/relu.h"
#include "layers/upsample2d.h"

using namespace frugal;
using namespace frugal::testing;

TEST_CASE("upsample_nearest2d: finite-difference gradients in f64") {
  check_gradients([](auto x) { return std::vector<Value>{upsample_nearest2d(x[0], 2)}; },
                  {random_tensor({2, 3, 3, 4}, 1)});
  check_gradients(
      [](auto x) {
        return std::vector<Value>{x[0].tape().record(std::make_unique<UpsampleNearestOp>(3, 1),
                                                     {x[0]}, std::source_location::current())[0]};
      },
      {random_tensor({1, 2, 2, 3}, 2)});
}

TEST_CASE("upsample_nearest2d: by hand") {
  // [1 2; 3 4] at 2x: each value a 2x2 block; backward sums each block of dy.
  const Pool2dGeometry g{
      .N = 1, .C = 1, .H = 2, .W = 2, .P = 4, .Q = 4, .kernel_h = 2, .kernel_w = 2};
  Tensor x = Tensor::empty({1, 1, 2, 2}, DType::f64), y = Tensor::empty({1, 1, 4, 4}, DType::f64);
  const double xs[] = {1, 2, 3, 4};
  std::memcpy(x.raw(), xs, sizeof xs);
  cpu_backend().upsample_nearest_forward(g, x, y);
  const double want[] = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
  for (int i = 0; i < 16; ++i) CHECK(y.data<double>()[i] == want[i]);
  Tensor dy = Tensor::empty({1, 1, 4, 4}, DType::f64), dx = Tensor::empty({1, 1, 2, 2}, DType::f64);
  for (int i = 0; i < 16; ++i) dy.data<double>()[i] = i;
  cpu_backend().upsample_nearest_backward(g, dy, dx);
  const double sums[] = {0 + 1 + 4 + 5, 2 + 3 + 6 + 7, 8 + 9 + 12 + 13, 10 + 11 + 14 + 15};
  for (int i = 0; i < 4; ++i) CHECK(dx.data<double>()[i] == sums[i]);
}

TEST_CASE("upsample_nearest2d: planned equals baseline bitwise") {
  check_planned_equals_baseline([](Value x) {
    Value d = relu(conv2d(x, {.out = 6, .kernel = 3, .stride = 2, .pad = 1}));
    return relu(conv2d(upsample_nearest2d(d, 2), {.out = 4, .kernel = 3, .pad = 1}));
  });
}

TEST_CASE("upsample_nearest2d: errors name what is wrong") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 3, 4, 4}, DType::f32);
  CHECK_THROWS_WITH_AS(upsample_nearest2d(x, 0),
                       doctest::Contains("scale 0x0 must be whole numbers in 1..4096"), Error);
  Value flat = tape.input("f", {2, 3}, DType::f32);
  CHECK_THROWS_WITH_AS(upsample_nearest2d(flat, 2),
                       doctest::Contains("upsample_nearest2d: expects x (N,C,H,W), got [2,3]"),
                       Error);
  const Pool2dGeometry g{
      .N = 2, .C = 3, .H = 4, .W = 4, .P = 9, .Q = 8, .kernel_h = 2, .kernel_w = 2};
  Tensor a = Tensor::empty({2, 3, 4, 4}, DType::f32), b = Tensor::empty({2, 3, 9, 8}, DType::f32);
  CHECK_THROWS_WITH_AS(cpu_backend().upsample_nearest_forward(g, a, b),
                       doctest::Contains("factors 2x2 must be >= 1 and give 9x8 from 4x4"), Error);
}
