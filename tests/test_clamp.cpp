// x clamped to [lo, hi]: gradient checks in f64 with both bounds and with one, a case by hand
// against PyTorch's values (the bounds themselves pass the gradient, NaN stays NaN), roles and
// in-place plans, planned equal to baseline bitwise, and error messages.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/activation.h"
#include "layers/clamp.h"
#include "layers/conv2d.h"
#include "run/executor.h"
#include "tests/tape_values.h"

using namespace frugal;
using namespace frugal::testing;

TEST_CASE("clamp: finite-difference gradients in f64") {
  // Inputs in [-2, 2] with bounds inside: elements on both sides of each bound. (The
  // finite differences step across no bound: none lies within the step of one.)
  for (auto [lo, hi] : {std::pair{-0.7, 0.9}, {-INFINITY, 0.3}, {-0.25, INFINITY}}) {
    CAPTURE(lo);
    CAPTURE(hi);
    check_gradients(
        [lo, hi](std::span<const Value> x) { return std::vector<Value>{clamp(x[0], lo, hi)}; },
        {random_tensor({2, 3, 5}, 31, -2, 2)});
  }
}

TEST_CASE("clamp: by hand, as PyTorch computes it") {
  // torch.clamp(x, -1, 2) and its gradient for dy = 1 in float64, as torch 1.13 gives them:
  // the gradient passes at the bounds themselves, not outside them, and is 0 at NaN.
  const double nan = std::nan("");
  const double in[6] = {-3, -1, 0.5, 2, 7, nan};
  const double want_y[6] = {-1, -1, 0.5, 2, 2, nan}, want_dx[6] = {0, 1, 1, 1, 0, 0};
  ParamStore store;
  Tape tape(store, DType::f64);
  Value x = tape.input("x", {6}, DType::f64, true);
  Value y = clamp(x, -1, 2);
  Executor ex(tape, cpu_backend(), {.poison = true, .keep = {x, y}, .optimizer = std::nullopt});
  ex.set_input(x, from({6}, {in[0], in[1], in[2], in[3], in[4], in[5]}));
  ex.forward();
  std::pair<Value, Tensor> seed{y, from({6}, {1, 1, 1, 1, 1, 1})};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  for (int i = 0; i < 6; ++i) {
    CAPTURE(i);
    const double got = element_as_double(ex.value(y), i);
    if (std::isnan(want_y[i]))
      CHECK(std::isnan(got));
    else
      CHECK(got == want_y[i]);
    CHECK(element_as_double(ex.grad(x), i) == want_dx[i]);
  }
}

TEST_CASE("clamp: in place where it may be, planned equals baseline bitwise") {
  ParamStore store(1);
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {2, 3, 6, 6}, DType::f32, true);
  Value c = clamp(conv2d(x, {.out = 4, .kernel = 3, .pad = 1}), -0.2, 0.4);
  (void)conv2d(c, {.out = 2, .kernel = 3});
  const Roles r = tape.ops().at(tape.ops().size() - 2).op->roles(Mode::training, cpu_backend());
  CHECK(r.backward_reads_inputs == std::vector<int>{0});
  CHECK(r.grad_aliases.size() == 1);
  CHECK(r.rebuildable);
  const Roles i = tape.ops().at(tape.ops().size() - 2).op->roles(Mode::inference, cpu_backend());
  CHECK(i.aliases.size() == 1);
  // F.normalize's shape: a clamp_min of a positive value, then a sigmoid reading it.
  check_planned_equals_baseline(
      [](Value v) { return sigmoid(clamp(clamp(v, -0.3, 0.5), 0.1, INFINITY)); });
}

TEST_CASE("clamp: errors name what is wrong") {
  ParamStore store;
  Tape tape(store);
  Value labels = tape.input("labels", {4}, DType::i32);
  CHECK_THROWS_WITH_AS(clamp(labels, 0, 1),
                       doctest::Contains("clamp: input must be f32 or f64, got i32"), Error);
  Value x = tape.input("x", {4}, DType::f32);
  CHECK_THROWS_WITH_AS(clamp(x, 2, 1),
                       doctest::Contains("clamp: bounds [2, 1] must be numbers with lo <= hi"),
                       Error);
  CHECK_THROWS_WITH_AS(clamp(x, std::nan(""), 1), doctest::Contains("clamp: bounds [nan, 1]"),
                       Error);
}
