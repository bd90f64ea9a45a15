// x to a constant power: gradient checks in f64 for integer, negative, fractional and zero
// exponents, a case by hand against PyTorch's values (NaN below 0 for a fractional exponent),
// roles and in-place plans, planned equal to baseline bitwise, and error messages.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/activation.h"
#include "layers/conv2d.h"
#include "layers/pow.h"
#include "run/executor.h"
#include "tests/tape_values.h"

using namespace frugal;
using namespace frugal::testing;

TEST_CASE("pow: finite-difference gradients in f64") {
  for (double e : {3.0, 2.0, -1.0, 1.5, -0.5, 0.0}) {
    CAPTURE(e);
    // Positive inputs, so that every exponent is defined and smooth there.
    check_gradients([e](std::span<const Value> x) { return std::vector<Value>{power(x[0], e)}; },
                    {random_tensor({2, 3, 4}, 21, 0.3, 2)});
  }
  // Integer exponents over both signs.
  check_gradients([](std::span<const Value> x) { return std::vector<Value>{power(x[0], 3)}; },
                  {random_tensor({2, 3, 4}, 22, -2, 2)});
}

TEST_CASE("pow: by hand, as PyTorch computes it") {
  // x ** e and its gradient for dy = 1 in float64, as torch 1.13 prints them.
  struct Case {
    double e, y[4], dx[4];
  };
  const double nan = std::nan("");
  const Case cases[] = {
      {3, {8, 0.125, 27, -3.375}, {12, 0.75, 27, 6.75}},
      {-1,
       {0.5, 2, 0.3333333333333333, -0.6666666666666666},
       {-0.25, -4, -0.1111111111111111, -0.4444444444444444}},
      {1.5,
       {2.8284271247461903, 0.3535533905932738, 5.196152422706632, nan},
       {2.121320343559643, 1.0606601717798214, 2.598076211353316, nan}},
      {0, {1, 1, 1, 1}, {0, 0, 0, 0}},
      {-0.5,
       {0.7071067811865475, 1.414213562373095, 0.5773502691896258, nan},
       {-0.1767766952966369, -1.4142135623730951, -0.09622504486493763, nan}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.e);
    ParamStore store;
    Tape tape(store, DType::f64);
    Value x = tape.input("x", {4}, DType::f64, true);
    Value y = power(x, c.e);
    Executor ex(tape, cpu_backend(), {.poison = true, .keep = {x, y}, .optimizer = std::nullopt});
    ex.set_input(x, from({4}, {2, 0.5, 3, -1.5}));
    ex.forward();
    std::pair<Value, Tensor> seed{y, from({4}, {1, 1, 1, 1})};
    ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
    for (int i = 0; i < 4; ++i) {
      CAPTURE(i);
      const double got = element_as_double(ex.value(y), i);
      const double grad = element_as_double(ex.grad(x), i);
      if (std::isnan(c.y[i])) {
        CHECK(std::isnan(got));
        CHECK(std::isnan(grad));
      } else {
        CHECK(got == doctest::Approx(c.y[i]).epsilon(1e-15));
        CHECK(grad == doctest::Approx(c.dx[i]).epsilon(1e-15));
      }
    }
  }
}

TEST_CASE("pow: in place where it may be, planned equals baseline bitwise") {
  ParamStore store(1);
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {2, 3, 6, 6}, DType::f32, true);
  Value h = sigmoid(conv2d(x, {.out = 4, .kernel = 3, .pad = 1}));
  Value p = power(h, 1.7);
  (void)conv2d(p, {.out = 2, .kernel = 3});
  const Roles r = tape.ops().at(tape.ops().size() - 2).op->roles(Mode::training, cpu_backend());
  CHECK(r.backward_reads_inputs == std::vector<int>{0});
  CHECK(r.grad_aliases.size() == 1);
  CHECK(r.rebuildable);
  const Roles i = tape.ops().at(tape.ops().size() - 2).op->roles(Mode::inference, cpu_backend());
  CHECK(i.aliases.size() == 1);
  // Generalized-mean pooling (GeM) in its elementwise parts: a power, the inverse power.
  check_planned_equals_baseline([](Value v) { return power(power(sigmoid(v), 3), 1.0 / 3); });
}

TEST_CASE("pow: errors name what is wrong") {
  ParamStore store;
  Tape tape(store);
  Value labels = tape.input("labels", {4}, DType::i32);
  CHECK_THROWS_WITH_AS(power(labels, 2),
                       doctest::Contains("pow: input must be f32 or f64, got i32"), Error);
  Value x = tape.input("x", {4}, DType::f32);
  CHECK_THROWS_WITH_AS(power(x, INFINITY),
                       doctest::Contains("pow: the exponent must be finite, got inf"), Error);
}
