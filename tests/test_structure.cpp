// Concat and flatten: gradient checks, hand-computed cases (channel interleaving per sample,
// skipped gradients), output shapes and error messages.
#include <doctest/doctest.h>

#include "check/gradcheck.h"
#include "layers/concat.h"
#include "layers/flatten.h"
#include "run/executor.h"

using namespace frugal;
using namespace frugal::testing;

namespace {
void fill(Tensor& t, std::initializer_list<float> values) {
  REQUIRE(static_cast<int64_t>(values.size()) == t.numel());
  int64_t i = 0;
  for (float v : values) t.data<float>()[i++] = v;
}

std::vector<float> elements(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}
}  // namespace

TEST_CASE("gradcheck concat") {
  check_gradients(
      [](std::span<const Value> x) {
        return std::vector<Value>{concat({x[0], x[1], x[2]})};
      },
      {random_tensor({2, 1, 3, 3}, 31), random_tensor({2, 2, 3, 3}, 32),
       random_tensor({2, 3, 3, 3}, 33)});
  check_gradients(
      [](std::span<const Value> x) {
        return std::vector<Value>{concat({x[0], x[1]})};
      },
      {random_tensor({3, 2}, 34), random_tensor({3, 4}, 35)});
  // One input twice (fan-in) and a single input.
  check_gradients(
      [](std::span<const Value> x) {
        return std::vector<Value>{concat({x[0], x[1], x[0]}), concat({x[1]})};
      },
      {random_tensor({2, 2, 1, 2}, 36), random_tensor({2, 1, 1, 2}, 37)});
}

TEST_CASE("concat hand-computed") {
  ParamStore store;
  Tape tape(store, DType::f32);
  Value a = tape.input("a", {2, 1}, DType::f32, true);
  Value b = tape.input("b", {2, 2}, DType::f32, true);
  Value y = concat({a, b});
  CHECK(y.shape() == Shape{2, 3});
  Executor ex(tape, cpu_backend(), {.keep = {a, b, y}});
  fill(ex.input(a), {1, 2});
  fill(ex.input(b), {3, 4, 5, 6});
  ex.forward();
  CHECK(elements(ex.value(y)) == std::vector<float>{1, 3, 4, 2, 5, 6});
  Tensor dy = Tensor::empty({2, 3}, DType::f32);
  fill(dy, {10, 20, 30, 40, 50, 60});
  std::pair<Value, Tensor> seed{y, dy};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  CHECK(elements(ex.grad(a)) == std::vector<float>{10, 40});
  CHECK(elements(ex.grad(b)) == std::vector<float>{20, 30, 50, 60});
}

TEST_CASE("concat of images hand-computed") {
  // x0 (2,1,1,2), x1 (2,1,1,2): y (2,2,1,2) holds each sample's channels in turn.
  Tensor x0 = Tensor::empty({2, 1, 1, 2}, DType::f32), x1 = Tensor::empty({2, 1, 1, 2}, DType::f32);
  fill(x0, {1, 2, 3, 4});
  fill(x1, {5, 6, 7, 8});
  Tensor y = Tensor::empty({2, 2, 1, 2}, DType::f32);
  std::vector<Tensor> xs{x0, x1};
  cpu_backend().concat_forward(xs, y);
  CHECK(elements(y) == std::vector<float>{1, 2, 5, 6, 3, 4, 7, 8});
  // Backward skips a part without gradient (undefined, but still carrying its shape).
  Tensor dx1 = Tensor::empty({2, 1, 1, 2}, DType::f32);
  std::vector<Tensor> dxs{Tensor(nullptr, 0, {2, 1, 1, 2}, DType::f32), dx1};
  cpu_backend().concat_backward(y, dxs);
  CHECK(elements(dx1) == std::vector<float>{5, 6, 7, 8});
}

TEST_CASE("concat gradient only where needed") {
  ParamStore store;
  Tape tape(store, DType::f64);
  Value a = tape.input("a", {2, 3, 2, 2}, DType::f64);  // no gradient
  Value b = tape.input("b", {2, 1, 2, 2}, DType::f64, true);
  Value y = concat({a, b});
  Executor ex(tape, cpu_backend(), {.poison = true, .keep = {b, y}});
  ex.set_input(a, random_tensor({2, 3, 2, 2}, 38));
  ex.set_input(b, random_tensor({2, 1, 2, 2}, 39));
  ex.forward();
  Tensor dy = random_tensor({2, 4, 2, 2}, 40);
  std::pair<Value, Tensor> seed{y, dy};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t i = 0; i < 4; ++i)
      CHECK(ex.grad(b).data<double>()[n * 4 + i] == dy.data<double>()[n * 16 + 12 + i]);
}

TEST_CASE("concat errors name the op and the shapes") {
  ParamStore store;
  Tape tape(store);
  Value a = tape.input("a", {2, 3, 4, 4}, DType::f32);
  Value b = tape.input("b", {2, 3, 5, 5}, DType::f32);
  Value c = tape.input("c", {3, 3, 4, 4}, DType::f32);
  Value d = tape.input("d", {2, 3}, DType::f32);
  Value e = tape.input("e", {2, 1, 4, 4}, DType::f64);
  CHECK_THROWS_WITH_AS(
      concat({a, b}),
      doctest::Contains("concat: input 1 [2,3,5,5] does not match input 0 [2,3,4,4]"), Error);
  CHECK_THROWS_WITH_AS(concat({a, c}), doctest::Contains("input 1 [3,3,4,4]"), Error);
  CHECK_THROWS_WITH_AS(concat({a, d}), doctest::Contains("input 1 [2,3]"), Error);
  CHECK_THROWS_WITH_AS(concat({a, e}), doctest::Contains("concat: input 1 is f64, input 0 is f32"),
                       Error);
  CHECK_THROWS_WITH_AS(concat({}), doctest::Contains("concat: expects at least 1 input"), Error);
  Value r1 = tape.input("r1", {2}, DType::f32);
  CHECK_THROWS_WITH_AS(concat({r1}),
                       doctest::Contains("concat: axis 1 of input 0 [2] (ranks 2 to 6"), Error);
  CHECK_THROWS_WITH_AS(concat({a, a}, 0), doctest::Contains("the batch axis is not joined"), Error);
}

TEST_CASE("gradcheck flatten") {
  check_gradients([](std::span<const Value> x) { return std::vector<Value>{flatten(x[0])}; },
                  {random_tensor({2, 3, 2, 2}, 41)});
  check_gradients([](std::span<const Value> x) { return std::vector<Value>{flatten(x[0])}; },
                  {random_tensor({3, 5}, 42)});
}

TEST_CASE("flatten shapes and bytes") {
  ParamStore store;
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {2, 3, 4, 5}, DType::f32, true);
  Value y = flatten(x);
  CHECK(y.shape() == Shape{2, 60});
  Executor ex(tape, cpu_backend(), {.keep = {x, y}});
  ex.set_input(x, random_tensor({2, 3, 4, 5}, 43, -1, 1, DType::f32));
  ex.forward();
  CHECK(bitwise_equal(ex.value(y).reshape({2, 3, 4, 5}), ex.value(x)));

  Tape other(store, DType::f32);
  CHECK(flatten(other.input("z", {0, 3, 4}, DType::f32)).shape() == Shape{0, 12});
  CHECK(flatten(other.input("w", {5, 7}, DType::f32)).shape() == Shape{5, 7});
  Value v = other.input("v", {6}, DType::f32);
  CHECK_THROWS_WITH_AS(flatten(v), doctest::Contains("flatten: x [6] must be (N, ...)"), Error);
}
