// Reductions over trailing axes: gradient checks in f64 for each kind, a case by hand against
// PyTorch's values, NaN and infinities, roles, the same bits for any thread count, planned
// equal to baseline bitwise (with rebuilds), and error messages.
#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/add.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/reduce.h"
#include "layers/relu.h"
#include "run/executor.h"
#include "tests/tape_values.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

constexpr Reduction kAll[] = {Reduction::sum, Reduction::mean,       Reduction::max,
                              Reduction::min, Reduction::sum_square, Reduction::l1,
                              Reduction::l2,  Reduction::log_sum_exp};

}  // namespace

TEST_CASE("reduce: finite-difference gradients in f64, every kind, one and two axes") {
  for (Reduction r : kAll)
    for (int axes : {1, 2}) {
      CAPTURE(std::string(reduction_name(r)));
      CAPTURE(axes);
      // Values at least 0.1 from 0 (l1's kink); the extremes of random rows stand apart.
      check_gradients(
          [r, axes](std::span<const Value> x) { return std::vector<Value>{reduce(x[0], r, axes)}; },
          {kink_free({3, 4, 5}, 11 + static_cast<uint64_t>(r))});
    }
}

TEST_CASE("reduce: by hand, as PyTorch computes it") {
  // x.sum(1), x.mean(1), x.amax(1), x.amin(1), (x * x).sum(1), vector_norm(x, 1 and 2, dim=1)
  // and logsumexp(x, 1) in float64 with dy = [1, -2], as torch 1.13 prints them.
  struct Case {
    Reduction r;
    double y[2], dx[8];
  };
  const Case cases[] = {
      {Reduction::sum, {3.5, 4.5}, {1, 1, 1, 1, -2, -2, -2, -2}},
      {Reduction::mean, {0.875, 1.125}, {0.25, 0.25, 0.25, 0.25, -0.5, -0.5, -0.5, -0.5}},
      {Reduction::max, {4, 3}, {0, 0, 1, 0, 0, -2, 0, 0}},
      {Reduction::min, {-2, -1}, {0, 1, 0, 0, 0, 0, -2, 0}},
      {Reduction::sum_square, {21.25, 16.25}, {2, -4, 8, 1, 0, -12, 4, -10}},
      {Reduction::l1, {7.5, 6.5}, {1, -1, 1, 1, 0, -2, 2, -2}},
      {Reduction::l2,
       {4.6097722286464435, 4.031128874149275},
       {0.21693045781865616, -0.4338609156373123, 0.8677218312746247, 0.10846522890932808, 0,
        -1.4884168150705015, 0.49613893835683387, -1.2403473458920846}},
      {Reduction::log_sum_exp,
       {4.07923918860024, 3.5155942559266227},
       {0.0459942362801911, 0.0022899181862095623, 0.923818931059596, 0.027896914474003043,
        -0.059460260794837835, -1.1942912636570835, -0.021874207513113173, -0.7243742680349655}},
  };
  for (const Case& c : cases) {
    CAPTURE(std::string(reduction_name(c.r)));
    ParamStore store;
    Tape tape(store, DType::f64);
    Value x = tape.input("x", {2, 4}, DType::f64, true);
    Value y = reduce(x, c.r, 1);
    CHECK(y.shape() == Shape{2});
    Executor ex(tape, cpu_backend(), {.poison = true, .keep = {x, y}, .optimizer = std::nullopt});
    ex.set_input(x, from({2, 4}, {1, -2, 4, 0.5, 0, 3, -1, 2.5}));
    ex.forward();
    for (int i = 0; i < 2; ++i)
      CHECK(element_as_double(ex.value(y), i) == doctest::Approx(c.y[i]).epsilon(1e-15));
    std::pair<Value, Tensor> seed{y, from({2}, {1, -2})};
    ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
    for (int i = 0; i < 8; ++i)
      CHECK(element_as_double(ex.grad(x), i) == doctest::Approx(c.dx[i]).epsilon(1e-15));
  }
}

TEST_CASE("reduce: NaN wins, infinities as PyTorch, the first extreme takes the gradient") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  Tensor x = from({4, 3}, {1, nan, 2, 5, 5, -1, inf, 1, 2, -inf, -inf, -inf});
  Tensor dy = from({4}, {1, 1, 1, 1});
  auto run = [&](Reduction r) {
    Tensor y = Tensor::empty({4}, DType::f64), index = Tensor::empty({4}, DType::i32);
    Tensor dx = Tensor::empty({4, 3}, DType::f64);
    cpu_backend().reduce_rows_forward(r, x, y, index);
    cpu_backend().reduce_rows_backward(r, x, y, index, dy, dx);
    return std::tuple<Tensor, Tensor, Tensor>{y, index, dx};
  };
  {
    const auto [y, index, dx] = run(Reduction::max);
    CHECK(std::isnan(element_as_double(y, 0)));  // NaN wins, its column kept
    CHECK(index.data<int32_t>()[0] == 1);
    CHECK(element_as_double(y, 1) == 5);  // a tie: the first column
    CHECK(index.data<int32_t>()[1] == 0);
    CHECK(element_as_double(dx, 3) == 1);
    CHECK(element_as_double(dx, 4) == 0);
    CHECK(element_as_double(y, 2) == inf);
    CHECK(element_as_double(y, 3) == -inf);
  }
  {
    const auto [y, index, dx] = run(Reduction::log_sum_exp);
    CHECK(std::isnan(element_as_double(y, 0)));
    CHECK(element_as_double(y, 1) == doctest::Approx(5 + std::log(2 + std::exp(-6.0))));
    CHECK(element_as_double(y, 2) == inf);   // logsumexp([inf, 1, 2]) = inf
    CHECK(element_as_double(y, 3) == -inf);  // of -infs, -inf
  }
  {
    const auto [y, index, dx] = run(Reduction::sum);
    CHECK(std::isnan(element_as_double(y, 0)));
    CHECK(element_as_double(y, 2) == inf);
  }
}

TEST_CASE("reduce: roles, and the same bits for any thread count") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {4, 6, 5, 7}, DType::f32, true);
  CHECK(reduce(x, Reduction::max, 2).shape() == Shape{4, 6});
  const Roles max = tape.ops().back().op->roles(Mode::training, cpu_backend());
  CHECK(max.saved.size() == 1);
  CHECK(max.saved[0].shape == Shape{4, 6});
  CHECK(max.saved[0].dtype == DType::i32);
  CHECK(max.backward_reads_inputs.empty());
  CHECK(max.rebuildable);
  (void)reduce(x, Reduction::l2, 3);
  const Roles l2 = tape.ops().back().op->roles(Mode::training, cpu_backend());
  CHECK(l2.saved.empty());
  CHECK(l2.backward_reads_inputs == std::vector<int>{0});
  CHECK(l2.backward_reads_outputs == std::vector<int>{0});
  (void)reduce(x, Reduction::sum, 1);
  const Roles sum = tape.ops().back().op->roles(Mode::training, cpu_backend());
  CHECK(sum.backward_reads_inputs.empty());
  CHECK(sum.backward_reads_outputs.empty());
  // Long rows (sums in lanes), 1 thread against 2, every kind.
  Tensor in = random_tensor({40, 1003}, 5, -3, 3, DType::f32);
  Tensor dy = random_tensor({40}, 6, -1, 1, DType::f32);
  for (Reduction r : kAll) {
    CAPTURE(std::string(reduction_name(r)));
    auto run = [&](int threads) {
      omp_set_num_threads(threads);
      Tensor y = Tensor::empty({40}, DType::f32), index = Tensor::empty({40}, DType::i32);
      Tensor dx = Tensor::empty({40, 1003}, DType::f32);
      cpu_backend().reduce_rows_forward(r, in, y, index);
      cpu_backend().reduce_rows_backward(r, in, y, index, dy, dx);
      return std::vector<Tensor>{y, dx};
    };
    const std::vector<Tensor> a = run(1), b = run(2);
    omp_set_num_threads(2);
    for (size_t i = 0; i < a.size(); ++i)
      CHECK(std::memcmp(a[i].raw(), b[i].raw(), a[i].bytes()) == 0);
  }
}

TEST_CASE("reduce: planned equals baseline bitwise") {
  // Pooled features by several reductions side by side, as a network's head might take them.
  check_planned_equals_baseline([](Value x) {
    Value a = relu(conv2d(x, {.out = 8, .kernel = 3, .pad = 1}));
    Value m = reduce(a, Reduction::max, 2), s = reduce(a, Reduction::l2, 2);
    Value l =
        reduce(reduce(conv2d(a, {.out = 6, .kernel = 3, .pad = 1}), Reduction::log_sum_exp, 1),
               Reduction::sum, 1);
    return add(add(linear(m, {.out = 3}), linear(s, {.out = 3})), linear(l, {.out = 3}));
  });
}

TEST_CASE("reduce: errors name what is wrong") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 3, 4}, DType::f32);
  CHECK_THROWS_WITH_AS(reduce(x, Reduction::sum, 3),
                       doctest::Contains("reduce_sum: 3 trailing axes of x [2,3,4]"), Error);
  Value i = tape.input("i", {2, 3}, DType::i32);
  CHECK_THROWS_WITH_AS(reduce(i, Reduction::max, 1),
                       doctest::Contains("reduce_max: input must be f32 or f64, got i32"), Error);
  Tensor t = Tensor::empty({2, 5}, DType::f32), y = Tensor::empty({3}, DType::f32);
  Tensor none;
  CHECK_THROWS_WITH_AS(cpu_backend().reduce_rows_forward(Reduction::l1, t, y, none),
                       doctest::Contains("reduce_l1: x [2,5] is not rows of y [3]"), Error);
  Tensor y2 = Tensor::empty({2}, DType::f32), dx = Tensor::empty({2, 5}, DType::f32);
  CHECK_THROWS_WITH_AS(cpu_backend().reduce_rows_backward(Reduction::max, t, y2, none, y2, dx),
                       doctest::Contains("reduce_max backward: missing index"), Error);
}
