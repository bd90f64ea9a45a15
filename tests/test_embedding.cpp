// Embedding (rows of a table at indices the step is given: nn.Embedding of class labels):
// finite-difference gradients in f64, values and gradients by hand with i32 and float-carried
// indices that change from step to step, planned == baseline bitwise, the simulated device's
// bits, and errors that name the index at fault.
#include <doctest/doctest.h>

#include <span>
#include <utility>
#include <vector>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/binary.h"
#include "layers/constant.h"
#include "layers/conv2d.h"
#include "layers/embedding.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/reshape.h"
#include "run/executor.h"
#include "tests/device/harness.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

Tensor values(const Shape& s, DType t, std::vector<double> v) {
  Tensor x = Tensor::empty(s, t);
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::i32) x.data<int32_t>()[i] = static_cast<int32_t>(v[i]);
    if (t == DType::f32) x.data<float>()[i] = static_cast<float>(v[i]);
    if (t == DType::f64) x.data<double>()[i] = v[i];
  }
  return x;
}

// x (N, 4, 6, 6) through a convolution, plus a class embedding per sample and channel.
Value conditioned(Value x, Value labels) {
  Value table = x.tape().param("classes", {5, 4}, Init::normal(0.5));
  Value e = reshape(embedding(table, labels), Shape{x.shape()[0], 4, 1, 1});
  return binary(BinaryKind::add, conv2d(x, {.out = 4, .kernel = 3, .pad = 1}), e);
}

}  // namespace

TEST_CASE("embedding: finite-difference gradients in f64") {
  // Token ids (2, 3), repeated and negative, into a (6, 2, 2) table, added to x (2, 3, 2, 2).
  check_gradients(
      [](auto x) {
        Tape& tape = x[0].tape();
        Value table = tape.param("table", {6, 2, 2}, Init::normal(1.0));
        Value ids = constant(tape, values({2, 3}, DType::f64, {1, 5, 1, -1, 0, 3}));
        return std::vector<Value>{binary(BinaryKind::mul, x[0], embedding(table, ids))};
      },
      {random_tensor({2, 3, 2, 2}, 1)});
}

TEST_CASE("embedding: values and gradients by hand, the indices an input of each step") {
  for (DType index_type : {DType::i32, DType::f32, DType::f64}) {
    CAPTURE(dtype_name(index_type));
    ParamStore store;
    Tape tape(store, DType::f64);
    Value table = tape.param("table", {4, 2}, Init::zeros());
    Value ids = tape.input("ids", {3}, index_type);
    Value y = embedding(table, ids);
    CHECK(y.shape() == Shape{3, 2});
    store.all()[0]->value = values({4, 2}, DType::f64, {0, 1, 10, 11, 20, 21, 30, 31});
    Executor ex(tape, cpu_backend(), {.keep = {y}, .keep_param_grads = true});
    // Step 1: rows 2, 0 and 2 again (its gradient sums dy's first and third rows, in order).
    ex.set_input(ids, values({3}, index_type, {2, 0, 2}));
    ex.forward();
    const double* yv = ex.value(y).data<double>();
    CHECK(std::vector<double>(yv, yv + 6) == std::vector<double>{20, 21, 0, 1, 20, 21});
    std::pair<Value, Tensor> seed{y, values({3, 2}, DType::f64, {1, 10, 100, 1000, 0.5, 0.25})};
    ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
    const double* dt = ex.grad(table).data<double>();
    CHECK(std::vector<double>(dt, dt + 8) ==
          std::vector<double>{100, 1000, 0, 0, 1.5, 10.25, 0, 0});
    // Step 2: other indices (-1 is the last row); backward reads this step's.
    ex.set_input(ids, values({3}, index_type, {-1, 1, 3}));
    ex.forward();
    yv = ex.value(y).data<double>();
    CHECK(std::vector<double>(yv, yv + 6) == std::vector<double>{30, 31, 10, 11, 30, 31});
    ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
    dt = ex.grad(table).data<double>();
    CHECK(std::vector<double>(dt, dt + 8) ==
          std::vector<double>{0, 0, 100, 1000, 0, 0, 1.5, 10.25});
  }
}

TEST_CASE("embedding: planned equals baseline bitwise") {
  check_planned_equals_baseline([](Value x) {
    const int64_t n = x.shape()[0];
    std::vector<double> labels;
    for (int64_t i = 0; i < n; ++i) labels.push_back(static_cast<double>((3 * i + 1) % 5));
    return conditioned(x, constant(x.tape(), values({n}, DType::f32, labels)));
  });
}

TEST_CASE("sim device: embedding's steps equal the CPU's bitwise") {
  const Network net = [](Value x) {
    Value labels = constant(x.tape(), values({2}, DType::f32, {4, 1}));
    return linear(flatten(conditioned(x, labels)), {.out = 5});
  };
  for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned})
    check_all_bitwise(train_on(cpu_backend(), net, {2, 3, 6, 6}, 5, memory, 2),
                      train_on(sim_backend(), net, {2, 3, 6, 6}, 5, memory, 2));
}

TEST_CASE("embedding: errors name what is wrong") {
  ParamStore store;
  Tape tape(store);
  Value table = tape.param("table", {4, 3}, Init::zeros());
  Value bytes = tape.input("bytes", {2}, DType::u8);
  CHECK_THROWS_WITH_AS(embedding(table, bytes),
                       doctest::Contains("embedding: indices must be i32 or whole numbers"), Error);
  Value ids = tape.input("ids", {2, 2}, DType::f32);
  CHECK_THROWS_WITH_AS(embedding(ids, bytes), doctest::Contains("embedding: indices"), Error);
  Value y = embedding(table, ids);
  CHECK(y.shape() == Shape{2, 2, 3});
  Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {y}});
  ex.set_input(ids, values({2, 2}, DType::f32, {0, 1, 2.5, 3}));
  CHECK_THROWS_WITH_AS(
      ex.forward(),
      doctest::Contains("embedding: index 2.5 at position 2 of the indices [2,2] is not a whole"),
      Error);
  ex.set_input(ids, values({2, 2}, DType::f32, {0, 1, 3, 4}));
  CHECK_THROWS_WITH_AS(
      ex.forward(),
      doctest::Contains("embedding: index 4 at position 3 of the indices [2,2] is outside the "
                        "table's 4 rows"),
      Error);
  ex.set_input(ids, values({2, 2}, DType::f32, {0, -5, 3, 1}));
  CHECK_THROWS_WITH_AS(ex.forward(), doctest::Contains("index -5 at position 1"), Error);
  ex.set_input(ids, values({2, 2}, DType::f32, {0, 1e30, 3, 1}));
  CHECK_THROWS_WITH_AS(ex.forward(), doctest::Contains("index 1e+30 at position 1"), Error);
  // An empty table; f32 indices into more rows than f32 holds exactly (shapes only).
  Value empty = tape.param("empty", {4, 0}, Init::zeros());
  CHECK_THROWS_WITH_AS(embedding(empty, ids), doctest::Contains("embedding: table [4,0] is empty"),
                       Error);
  ParamStore shapes = ParamStore::shapes_only();
  Tape big(shapes);
  Value rows = big.param("rows", {(int64_t{1} << 24) + 1, 1}, Init::zeros());
  CHECK_THROWS_WITH_AS(embedding(rows, big.input("ids", {2}, DType::f32)),
                       doctest::Contains("f32 indices cannot name each of the table's 16777217"),
                       Error);
  CHECK(embedding(rows, big.input("ids64", {2}, DType::f64)).shape() == Shape{2, 1});
}
