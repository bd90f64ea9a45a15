// PReLU: gradient checks in f64 (input and slope, per channel and shared, on 4-D and 2-D
// inputs), a case by hand against PyTorch's values (x = 0 and a negative slope included), roles,
// in-place inference and backward equal to out-of-place bitwise, the same bits for any thread
// count, planned equal to baseline bitwise (with rebuilds), and error messages.
#include <doctest/doctest.h>
#include <omp.h>

#include <cstring>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/prelu.h"
#include "run/executor.h"
#include "tests/tape_values.h"

using namespace frugal;
using namespace frugal::testing;

TEST_CASE("prelu: finite-difference gradients in f64") {
  for (bool per_channel : {true, false}) {
    INFO("per channel ", per_channel);
    check_gradients(
        [per_channel](std::span<const Value> x) {
          Value y = prelu(x[0], {.per_channel = per_channel, .name = "p"});
          randomize_param(x[0].tape(), "p.weight", 3, -1, 1);  // negative slopes too
          return std::vector<Value>{y, prelu(x[1], {.per_channel = per_channel})};
        },
        {kink_free({3, 4, 3, 5}, 7), kink_free({5, 6}, 8)});
  }
}

TEST_CASE("prelu: by hand, as PyTorch computes it") {
  // torch.nn.functional.prelu(x, weight) in float64 and its backward for dy, as torch 1.13
  // prints them: at x = 0 the slope's side (y = -0.0 for a negative slope, dx = slope dy).
  ParamStore store;
  Tape tape(store, DType::f64);
  Value x = tape.input("x", {2, 2, 2}, DType::f64, true);
  Value y = prelu(x, {.name = "p"});
  CHECK(element_as_double(store.find("p.weight")->value, 1) == 0.25);  // PyTorch's first value
  copy_bytes(from({2}, {0.25, -0.5}), store.find("p.weight")->value);
  Executor ex(tape, cpu_backend(), {.poison = true, .keep = {x, y}, .optimizer = std::nullopt});
  ex.set_input(x, from({2, 2, 2}, {1, -2, 0, -0.5, 3, -1, 2, -4}));
  ex.forward();
  const double want_y[] = {1.0, -0.5, -0.0, 0.25, 3.0, -0.25, 2.0, 2.0};
  for (int i = 0; i < 8; ++i) CHECK(element_as_double(ex.value(y), i) == want_y[i]);
  CHECK(std::signbit(element_as_double(ex.value(y), 2)));
  std::pair<Value, Tensor> seed{y, from({2, 2, 2}, {1, 2, 3, -1, 0.5, -2, 1, 1})};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  const double want_dx[] = {1.0, 0.5, -1.5, 0.5, 0.5, -0.5, 1.0, -0.5};
  for (int i = 0; i < 8; ++i) CHECK(element_as_double(ex.grad(x), i) == want_dx[i]);
  const Value w = param_value(tape, "p.weight");
  CHECK(element_as_double(ex.grad(w), 0) == -2.0);
  CHECK(element_as_double(ex.grad(w), 1) == -3.5);
}

TEST_CASE("prelu: roles, in place, the same bits for any thread count") {
  ParamStore store(3);
  Tape tape(store);
  Value x = tape.input("x", {4, 6, 5, 7}, DType::f32, true);
  (void)prelu(x);
  CHECK(store.find("prelu0.weight")->meta.shape == Shape{6});
  Op& op = *tape.ops().back().op;
  const Roles train = op.roles(Mode::training, cpu_backend());
  CHECK(train.saved.empty());
  CHECK(train.backward_reads_inputs == std::vector<int>{0, 1});
  CHECK(train.grad_aliases.size() == 1);
  CHECK(train.backward_scratch == 6 * sizeof(double));  // the CPU's sums per channel
  CHECK(train.rebuildable);
  CHECK(op.roles(Mode::inference, cpu_backend()).aliases.size() == 1);
  const Shape s{4, 6, 5, 7};
  Tensor in = random_tensor(s, 5, -3, 3, DType::f32), dy = random_tensor(s, 8, -1, 1, DType::f32);
  for (int64_t slopes : {6, 1}) {
    CAPTURE(slopes);
    Tensor a = random_tensor({slopes}, 6, -1, 1, DType::f32);
    auto run = [&](int threads, bool in_place) {
      omp_set_num_threads(threads);
      Tensor x1 = clone(in), y1 = in_place ? x1 : Tensor::empty(s, DType::f32);
      cpu_backend().prelu_forward(x1, a, y1);
      Tensor dx = Tensor::empty(s, DType::f32), da = Tensor::empty({slopes}, DType::f32);
      Tensor d = clone(dy);
      Tensor scratch = Tensor::empty({6}, DType::f64);  // the sums of each channel
      cpu_backend().prelu_backward(in, d, a, in_place ? d : dx, da, scratch);
      return std::vector<Tensor>{clone(y1), in_place ? clone(d) : dx, da};
    };
    const std::vector<Tensor> one = run(1, false), two = run(2, true);
    omp_set_num_threads(2);
    for (size_t i = 0; i < one.size(); ++i) {
      CAPTURE(i);
      CHECK(std::memcmp(one[i].raw(), two[i].raw(), one[i].bytes()) == 0);
    }
  }
}

TEST_CASE("prelu: planned equals baseline bitwise") {
  check_planned_equals_baseline([](Value x) {
    Value a = prelu(conv2d(x, {.out = 8, .kernel = 3, .pad = 1}));
    Value b = prelu(conv2d(a, {.out = 8, .kernel = 3, .pad = 1}), {.per_channel = false});
    return prelu(linear(flatten(b), {.out = 6}));
  });
}

TEST_CASE("prelu: errors name what is wrong") {
  ParamStore store;
  Tape tape(store);
  Value v = tape.input("v", {5}, DType::f32);
  CHECK_THROWS_WITH_AS(prelu(v), doctest::Contains("prelu: x [5] is not (N, C, ...)"), Error);
  Value x = tape.input("x", {2, 6, 4}, DType::f32);
  Value w = tape.param("w", Shape{4}, Init::ones(), true);
  CHECK_THROWS_WITH_AS(tape.record(std::make_unique<PReluOp>(), std::vector<Value>{x, w},
                                   std::source_location::current()),
                       doctest::Contains("prelu: slope [4] f32, expected [6] or [1] f32"), Error);
  Tensor t = Tensor::empty({2, 6, 4}, DType::f32), s = Tensor::empty({3}, DType::f32);
  CHECK_THROWS_WITH_AS(cpu_backend().prelu_forward(t, s, t),
                       doctest::Contains("prelu: a slope tensor is [3] f32, expected 6 values"),
                       Error);
}
