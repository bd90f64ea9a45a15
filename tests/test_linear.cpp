// Linear: gradient checks, a hand-computed case, batch 1 split over threads against direct
// loops, determinism, roles and parameters, and shape errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "layers/transpose.h"
#include "run/executor.h"
#include "tests/worst.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

Tensor from(Shape s, std::vector<float> v) {
  Tensor t = Tensor::empty(std::move(s), DType::f32);
  REQUIRE(t.numel() == static_cast<int64_t>(v.size()));
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = v[i];
  return t;
}
Tensor nan_tensor(Shape s) {
  Tensor t = Tensor::empty(std::move(s), DType::f32);
  cpu_backend().fill(t, std::numeric_limits<double>::quiet_NaN());
  return t;
}
void check_equal(const Tensor& got, std::vector<float> want) {
  REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) CHECK(got.data<float>()[i] == want[i]);
}

std::vector<Value> one(Value v) {
  return {v};
}

}  // namespace

TEST_CASE("gradcheck linear") {
  check_gradients([](auto x) { return one(linear(x[0], {.out = 4})); }, {random_tensor({3, 5}, 1)});
  check_gradients([](auto x) { return one(linear(x[0], {.out = 2, .bias = false})); },
                  {random_tensor({4, 3}, 2)});
  // Batch of one (a matrix-vector product inside), then a second layer reading its output.
  check_gradients([](auto x) { return one(linear(linear(x[0], {.out = 6}), {.out = 3})); },
                  {random_tensor({1, 7}, 3)});
  // Over (N, T, I) tokens and (N, H, W, C) channels-last maps: the leading axes are rows.
  check_gradients([](auto x) { return one(linear(x[0], {.out = 4})); },
                  {random_tensor({2, 3, 5}, 4)});
  check_gradients([](auto x) { return one(linear(linear(x[0], {.out = 6}), {.out = 2})); },
                  {random_tensor({2, 2, 3, 4}, 5)});
}

TEST_CASE("linear over leading axes: the 2-D linear's bits, planned equals baseline") {
  ParamStore store(1);
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {2, 3, 5}, DType::f32, true);
  Value y = linear(x, {.out = 4, .name = "fc"});
  CHECK(y.shape() == Shape{2, 3, 4});
  Executor ex(tape, cpu_backend(), {.keep = {x, y}, .optimizer = std::nullopt});
  const Tensor in = random_tensor({2, 3, 5}, 6, -1, 1, DType::f32);
  ex.set_input(x, in);
  ex.forward();
  const Tensor& w = store.find("fc.weight")->value;
  const Tensor& b = store.find("fc.bias")->value;
  Tensor rows = Tensor::empty({6, 4}, DType::f32);
  cpu_backend().linear_forward(in.reshape(Shape{6, 5}), w, b, rows);
  CHECK(std::memcmp(rows.raw(), ex.value(y).raw(), rows.bytes()) == 0);
  check_planned_equals_baseline([](Value v) {
    Value t = transpose(v, {0, 2, 3, 1});  // channels last
    return transpose(linear(relu(linear(t, {.out = 8})), {.out = 3}), {0, 3, 1, 2});
  });
}

TEST_CASE("linear hand-computed") {
  Tensor x = from({2, 3}, {1, 2, 3, 4, 5, 6}), w = from({2, 3}, {1, 0, -1, 2, 1, 0});
  Tensor b = from({2}, {0.5f, -1}), dy = from({2, 2}, {1, 2, 3, 4});
  Tensor y = nan_tensor({2, 2}), dx = nan_tensor({2, 3}), dw = nan_tensor({2, 3}),
         db = nan_tensor({2});
  Backend& be = cpu_backend();
  be.linear_forward(x, w, b, y);
  check_equal(y, {-1.5f, 3, -1.5f, 12});
  be.linear_backward_data(dy, w, dx);
  check_equal(dx, {5, 2, -1, 11, 4, -3});
  be.linear_backward_weight(x, dy, dw, db);
  check_equal(dw, {13, 17, 21, 18, 24, 30});
  check_equal(db, {4, 6});
  // Without bias, and a bias gradient alone.
  Tensor none;
  be.linear_forward(x, w, none, y);
  check_equal(y, {-2, 4, -2, 13});
  Tensor db2 = nan_tensor({2});
  be.linear_backward_weight(x, dy, none, db2);
  check_equal(db2, {4, 6});
}

TEST_CASE("linear at batch 1 over 1, 2 and 3 threads matches direct loops") {
  // 300 x 200 weights: big enough that forward and backward data split the batch-1 product
  // over the threads by hand.
  const int64_t I = 300, O = 200;
  Tensor x = random_tensor({1, I}, 1), w = random_tensor({O, I}, 2), b = random_tensor({O}, 3);
  Tensor dy = random_tensor({1, O}, 4);
  auto at = [](const Tensor& t, int64_t i) { return t.data<double>()[i]; };
  const int saved = cpu_backend().threads();
  for (int threads : {1, 2, 3}) {
    INFO("threads ", threads);
    set_cpu_threads(threads);
    Tensor y = Tensor::empty({1, O}, DType::f64), dx = Tensor::empty({1, I}, DType::f64);
    Tensor dw = Tensor::empty({O, I}, DType::f64), db = Tensor::empty({O}, DType::f64);
    cpu_backend().linear_forward(x, w, b, y);
    cpu_backend().linear_backward_data(dy, w, dx);
    cpu_backend().linear_backward_weight(x, dy, dw, db);
    double worst = 0;
    for (int64_t o = 0; o < O; ++o) {
      double acc = at(b, o);
      for (int64_t i = 0; i < I; ++i) {
        acc += at(x, i) * at(w, o * I + i);
        worst = worse(worst, std::abs(at(dw, o * I + i) - at(dy, o) * at(x, i)));
      }
      worst = worse(worse(worst, std::abs(at(y, o) - acc)), std::abs(at(db, o) - at(dy, o)));
    }
    for (int64_t i = 0; i < I; ++i) {
      double acc = 0;
      for (int64_t o = 0; o < O; ++o) acc += at(dy, o) * at(w, o * I + i);
      worst = worse(worst, std::abs(at(dx, i) - acc));
    }
    CHECK(worst < 1e-12);
    Tensor y2 = Tensor::empty({1, O}, DType::f64), dx2 = Tensor::empty({1, I}, DType::f64);
    cpu_backend().linear_forward(x, w, b, y2);
    cpu_backend().linear_backward_data(dy, w, dx2);
    CHECK(bitwise_equal(y, y2));
    CHECK(bitwise_equal(dx, dx2));
  }
  set_cpu_threads(saved);
}

TEST_CASE("linear kernels are deterministic") {
  Tensor x = random_tensor({64, 512}, 1, -1, 1, DType::f32);
  Tensor w = random_tensor({256, 512}, 2, -1, 1, DType::f32);
  Tensor b = random_tensor({256}, 3, -1, 1, DType::f32);
  Tensor dy = random_tensor({64, 256}, 4, -1, 1, DType::f32);
  auto run = [&]() {
    std::vector<Tensor> r = {nan_tensor({64, 256}), nan_tensor({64, 512}), nan_tensor({256, 512}),
                             nan_tensor({256})};
    cpu_backend().linear_forward(x, w, b, r[0]);
    cpu_backend().linear_backward_data(dy, w, r[1]);
    cpu_backend().linear_backward_weight(x, dy, r[2], r[3]);
    return r;
  };
  std::vector<Tensor> a = run(), c = run();
  for (size_t i = 0; i < a.size(); ++i) CHECK(bitwise_equal(a[i], c[i]));
}

TEST_CASE("linear roles and parameters") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {8, 100}, DType::f32);
  Value y = linear(x, {.out = 10});
  linear(y, {.out = 5, .bias = false, .name = "head"});
  CHECK(y.shape() == Shape{8, 10});
  const Tensor& w = store.find("linear0.weight")->value;
  CHECK(w.shape() == Shape{10, 100});
  CHECK(store.find("linear0.bias")->value.shape() == Shape{10});
  CHECK(store.find("head.weight") != nullptr);
  CHECK(store.find("head.bias") == nullptr);
  double lo = 1, hi = -1;  // uniform in (-0.1, 0.1): 1/sqrt(100)
  for (int64_t i = 0; i < w.numel(); ++i) {
    lo = std::min(lo, element_as_double(w, i));
    hi = std::max(hi, element_as_double(w, i));
  }
  CHECK(lo >= -0.1);
  CHECK(hi <= 0.1);
  CHECK(hi - lo > 0.18);
  Roles r = tape.ops()[0].op->roles(Mode::training, cpu_backend());
  CHECK(r.backward_reads_inputs == std::vector<int>{0, 1});
  CHECK(r.backward_reads_outputs.empty());
  CHECK(r.forward_scratch + r.backward_scratch == 0);
  CHECK(tape.ops()[0].op->roles(Mode::inference, cpu_backend()).backward_reads_inputs.empty());
}

TEST_CASE("linear shape errors") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 5}, DType::f32);
  Value w = tape.param("w", {3, 4}, Init::zeros());
  CHECK_THROWS_WITH_AS(
      tape.record(std::make_unique<LinearOp>(), {x, w}, std::source_location::current()),
      doctest::Contains("linear: input features 5 != weight features 4 (x [2,5], w [3,4])"), Error);
  Value w5 = tape.param("w5", {3, 5}, Init::zeros()), b = tape.param("b", {4}, Init::zeros());
  CHECK_THROWS_WITH_AS(
      tape.record(std::make_unique<LinearOp>(), {x, w5, b}, std::source_location::current()),
      doctest::Contains("linear: bias [4] f32 for weight [3,5]"), Error);
  Value vector = tape.input("vector", {5}, DType::f32);
  CHECK_THROWS_WITH_AS(
      linear(vector, {.out = 10}),
      doctest::Contains("linear: expects x (N,I) or (..., I) and out >= 1; got x [5]"), Error);
  CHECK_THROWS_WITH_AS(linear(vector, {.out = 10}), doctest::Contains("test_linear.cpp"), Error);
  Value xd = tape.input("xd", {2, 5}, DType::f64);
  CHECK_THROWS_WITH_AS(linear(xd, {.out = 2}),
                       doctest::Contains("linear: input is f64 but the weight is f32"), Error);
  // The kernels check their tensors too.
  Tensor t = Tensor::empty({2, 5}, DType::f32), y = Tensor::empty({2, 3}, DType::f32);
  CHECK_THROWS_WITH_AS(
      cpu_backend().linear_forward(t, Tensor::empty({3, 4}, DType::f32), Tensor(), y),
      doctest::Contains("linear forward: x [2,5] w [3,4] y [2,3]"), Error);
}
