// Gather by fixed indices (a table's rows, slices of an activation along any axis) and the
// constant op an ONNX import records for values computed from shapes: finite-difference
// gradients in f64, values and gradients by hand (a repeated index sums), planned == baseline
// bitwise, and errors that name what is wrong (the simulated device: tests/test_sim_device.cpp).
#include <doctest/doctest.h>

#include <span>
#include <utility>
#include <vector>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/binary.h"
#include "layers/constant.h"
#include "layers/conv2d.h"
#include "layers/gather.h"
#include "layers/reshape.h"
#include "layers/transpose.h"
#include "run/executor.h"

using namespace frugal;
using namespace frugal::testing;

namespace {
Value plus(Value a, Value b) {
  return binary(BinaryKind::add, a, b);
}  // broadcast

Tensor values(const Shape& s, std::vector<double> v) {
  Tensor t = Tensor::empty(s, DType::f64);
  for (size_t i = 0; i < v.size(); ++i) t.data<double>()[i] = v[i];
  return t;
}
}  // namespace

TEST_CASE("gather: finite-difference gradients in f64") {
  // Along a middle axis, indices repeated and negative, as a (2, 2) block.
  check_gradients(
      [](auto x) {
        return std::vector<Value>{gather(x[0], 2, {3, -1, 0, 3}, {2, 2})};
      },
      {random_tensor({2, 3, 4, 2}, 1)});
  // One index, the axis dropped; and the last axis.
  check_gradients([](auto x) { return std::vector<Value>{gather(x[0], 1, {1}, {})}; },
                  {random_tensor({2, 3, 4}, 2)});
  check_gradients(
      [](auto x) {
        return std::vector<Value>{gather(x[0], 2, {2, 0}, {2})};
      },
      {random_tensor({2, 3, 3}, 3)});
  // A table of biases (5 positions, 2 heads) gathered at 3 x 3 pairs, viewed as (heads, 3, 3)
  // and added to scores (N, heads, 3, 3): Swin's relative position bias, a weight's gradient.
  check_gradients(
      [](auto x) {
        Tape& tape = x[0].tape();
        Value table = tape.param("table", {5, 2}, Init::normal(1.0));
        Value b = gather(table, 0, {2, 1, 0, 3, 2, 1, 4, 3, 2}, {9});
        b = reshape(transpose(reshape(b, Shape{3, 3, 2}), {2, 0, 1}), Shape{1, 2, 3, 3});
        return std::vector<Value>{plus(x[0], b)};
      },
      {random_tensor({2, 2, 3, 3}, 4)});
}

TEST_CASE("gather: values and gradients by hand") {
  ParamStore store;
  Tape tape(store, DType::f64);
  Value x = tape.input("x", {1, 3, 2}, DType::f64, true);  // [[0 1] [2 3] [4 5]]
  Value y = gather(x, 1, {2, 0, -1}, {3});
  CHECK(y.shape() == Shape{1, 3, 2});
  Executor ex(tape, cpu_backend(), {.keep = {x, y}});
  ex.set_input(x, values({1, 3, 2}, {0, 1, 2, 3, 4, 5}));
  ex.forward();
  const double* yv = ex.value(y).data<double>();
  CHECK(std::vector<double>(yv, yv + 6) == std::vector<double>{4, 5, 0, 1, 4, 5});
  std::pair<Value, Tensor> seed{y, values({1, 3, 2}, {1, 10, 100, 1000, 0.5, 0.25})};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  const double* dx = ex.grad(x).data<double>();
  // Row 2 is taken twice (2 and -1): its gradient sums dy's first and third rows, in order.
  CHECK(std::vector<double>(dx, dx + 6) == std::vector<double>{100, 1000, 0, 0, 1.5, 10.25});
}

TEST_CASE("constant: the value it holds, every step, with nothing flowing back") {
  ParamStore store;
  Tape tape(store, DType::f64);
  Value x = tape.input("x", {2, 2}, DType::f64, true);
  Value c = constant(tape, values({2}, {-100, 0}));
  Value y = plus(x, c);
  Executor ex(tape, cpu_backend(), {.memory = MemoryMode::planned, .keep = {x, y}});
  for (int step = 0; step < 2; ++step) {
    ex.set_input(x, values({2, 2}, {1, 2, 3, 4}));
    ex.forward();
    const double* yv = ex.value(y).data<double>();
    CHECK(std::vector<double>(yv, yv + 4) == std::vector<double>{-99, 2, -97, 4});
    std::pair<Value, Tensor> seed{y, values({2, 2}, {1, 2, 3, 4})};
    ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
    const double* dx = ex.grad(x).data<double>();
    CHECK(std::vector<double>(dx, dx + 4) == std::vector<double>{1, 2, 3, 4});
  }
  CHECK_THROWS_WITH_AS(constant(tape, Tensor::empty({2}, DType::i32)),
                       doctest::Contains("constant: the value must be f32 or f64, got i32"), Error);
}

TEST_CASE("gather and constant: planned equals baseline bitwise") {
  check_planned_equals_baseline([](Value x) {
    Tape& tape = x.tape();
    Value a = conv2d(x, {.out = 4, .kernel = 3, .pad = 1});  // (4, 4, 6, 6)
    Value table = tape.param("table", {7, 4}, Init::normal(0.5));
    Value bias = gather(table, 0, {0, 3, 6, 3, 1, 2}, {6});      // (6, 4)
    bias = reshape(transpose(bias, {1, 0}), Shape{1, 4, 1, 6});  // per row and column
    Tensor mask = Tensor::empty({1, 1, 6, 6}, DType::f32);
    for (int64_t i = 0; i < 36; ++i) mask.data<float>()[i] = (i / 6 + i % 6) % 3 == 0 ? -1.f : 0.f;
    Value masked = plus(plus(a, bias), constant(tape, mask));
    Value rows = gather(masked, 2, {5, 0, 2, 2}, {4});  // (4, 4, 4, 6)
    // Rank 5: (N, 2, 2, 4, 6) against a (1, 2, 1, 4, 6) constant.
    Tensor five = Tensor::empty({1, 2, 1, 4, 6}, DType::f32);
    for (int64_t i = 0; i < five.numel(); ++i) five.data<float>()[i] = 0.125f * (i % 5);
    Value r5 = plus(reshape(rows, Shape{4, 2, 2, 4, 6}), constant(tape, five));
    return reshape(r5, Shape{4, 4, 4, 6});
  });
}

TEST_CASE("gather: errors name what is wrong") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 3, 4}, DType::f32);
  CHECK_THROWS_WITH_AS(gather(x, 3, {0}, {1}), doctest::Contains("gather: axis 3 of x [2,3,4]"),
                       Error);
  CHECK_THROWS_WITH_AS(gather(x, 1, {3}, {1}),
                       doctest::Contains("gather: index 3 outside axis 1 of x [2,3,4]"), Error);
  CHECK_THROWS_WITH_AS(gather(x, 1, {0, 1}, {3}),
                       doctest::Contains("gather: 2 indices for index dims [3]"), Error);
  Tensor t = Tensor::empty({2, 3}, DType::f32), y = Tensor::empty({2, 1}, DType::f32);
  const std::vector<int64_t> bad = {3};
  CHECK_THROWS_WITH_AS(cpu_backend().gather_forward(t, bad, 2, y),
                       doctest::Contains("gather: index 3 outside an axis of 3"), Error);
}
