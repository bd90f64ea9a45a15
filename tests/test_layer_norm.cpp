// LayerNorm: gradient checks in f64 (input, weight, bias; one and two normalized axes), a case
// by hand against PyTorch's values, roles, in-place inference equal to out-of-place bitwise,
// planned equal to baseline bitwise (with rebuilds), results independent of the thread count,
// and error messages.
#include <doctest/doctest.h>
#include <omp.h>

#include <cstring>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/activation.h"
#include "layers/add.h"
#include "layers/conv2d.h"
#include "layers/layer_norm.h"
#include "layers/linear.h"
#include "layers/reshape.h"
#include "layers/transpose.h"
#include "run/executor.h"
#include "tests/tape_values.h"

using namespace frugal;
using namespace frugal::testing;

TEST_CASE("layer_norm: finite-difference gradients in f64") {
  for (int axes : {1, 2}) {
    INFO(axes, " normalized axes");
    check_gradients(
        [axes](std::span<const Value> x) {
          Value y = layer_norm(x[0], axes, {.eps = 1e-3, .name = "ln"});
          randomize_param(x[0].tape(), "ln.weight", 3, 0.5, 1.5);
          randomize_param(x[0].tape(), "ln.bias", 4, -1, 1);
          return std::vector<Value>{y};
        },
        {random_tensor({3, 2, 4, 5}, 7, -2, 2)});
  }
  // Stacked, and a row of one value's width (a (N, T, 1) sequence: x^ is 0, dx is 0).
  check_gradients(
      [](std::span<const Value> x) {
        return std::vector<Value>{layer_norm(gelu(layer_norm(x[0], 1)), 1), layer_norm(x[1], 1)};
      },
      {random_tensor({2, 3, 9}, 9, -2, 2), random_tensor({2, 3, 1}, 10)});
}

TEST_CASE("layer_norm: by hand, as PyTorch computes it") {
  // torch.nn.functional.layer_norm(x, [3], weight, bias, 1e-5) in float64 and its backward for
  // dy, as torch 1.13 prints them.
  ParamStore store;
  Tape tape(store, DType::f64);
  Value x = tape.input("x", {2, 3}, DType::f64, true);
  Value y = layer_norm(x, 1, {.name = "ln"});
  Parameter& gamma = *store.find("ln.weight");
  Parameter& beta = *store.find("ln.bias");
  for (int c = 0; c < 3; ++c) {  // PyTorch's initial values
    CHECK(element_as_double(gamma.value, c) == 1);
    CHECK(element_as_double(beta.value, c) == 0);
  }
  copy_bytes(from({3}, {1, 2, 0.5}), gamma.value);
  copy_bytes(from({3}, {0, 1, -1}), beta.value);
  Executor ex(tape, cpu_backend(), {.poison = true, .keep = {x, y}, .optimizer = std::nullopt});
  ex.set_input(x, from({2, 3}, {1, 2, 4, 0, 0, 3}));
  ex.forward();
  const double want_y[] = {-1.069041531450298,  0.46547923427485083,  -0.3318490428435641,
                           -0.7071050134262237, -0.41421002685244734, -0.29289498657377633};
  for (int i = 0; i < 6; ++i)
    CHECK(element_as_double(ex.value(y), i) == doctest::Approx(want_y[i]).epsilon(1e-13));
  std::pair<Value, Tensor> seed{y, from({2, 3}, {1, 0, 2, -1, 1, 0})};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  const double want_dx[] = {0.34362000136861953, -0.5154308610986374, 0.17181085973001814,
                            -1.060656930888104,  1.0606581093905671,  -1.178502463172748e-06};
  const double want_dg[] = {-0.3619365180240742, -0.7071050134262237, 2.6726038286257436};
  const double want_db[] = {0, 1, 2};
  for (int i = 0; i < 6; ++i)
    CHECK(element_as_double(ex.grad(x), i) ==
          doctest::Approx(want_dx[i]).epsilon(1e-10).scale(1e-6));
  const Value g = param_value(tape, "ln.weight"), b = param_value(tape, "ln.bias");
  for (int c = 0; c < 3; ++c) {
    CHECK(element_as_double(ex.grad(g), c) == doctest::Approx(want_dg[c]).epsilon(1e-13));
    CHECK(element_as_double(ex.grad(b), c) == want_db[c]);
  }
}

TEST_CASE("layer_norm: roles, in place in inference, the same bits for any thread count") {
  ParamStore store(3);
  Tape tape(store);
  Value x = tape.input("x", {4, 6, 33}, DType::f32, true);
  (void)layer_norm(x, 1);
  CHECK(store.find("layer_norm0.weight") != nullptr);
  CHECK(store.find("layer_norm0.bias") != nullptr);
  Op& op = *tape.ops().back().op;
  const Roles train = op.roles(Mode::training, cpu_backend());
  CHECK(train.saved.size() == 2);
  CHECK(train.saved[0].shape == Shape{24});
  CHECK(train.backward_reads_inputs == std::vector<int>{0, 1});
  CHECK(train.rebuildable);
  const Roles infer = op.roles(Mode::inference, cpu_backend());
  CHECK(infer.aliases.size() == 1);
  // In place equals out of place, and 1 thread equals 2, bit for bit (forward and backward).
  Tensor in = random_tensor({4, 6, 33}, 5, -3, 3, DType::f32);
  Tensor gamma = random_tensor({33}, 6, 0.5, 1.5, DType::f32);
  Tensor beta = random_tensor({33}, 7, -1, 1, DType::f32);
  Tensor dy = random_tensor({4, 6, 33}, 8, -1, 1, DType::f32);
  auto run = [&](int threads, bool in_place) {
    omp_set_num_threads(threads);
    Tensor x1 = clone(in), y1 = in_place ? x1 : Tensor::empty({4, 6, 33}, DType::f32);
    Tensor mean = Tensor::empty({24}, DType::f32), inv = Tensor::empty({24}, DType::f32);
    cpu_backend().layernorm_forward(x1, gamma, beta, 1e-5, y1, mean, inv);
    Tensor dx = clone(dy), dg = Tensor::empty({33}, DType::f32),
           db = Tensor::empty({33}, DType::f32);
    Tensor d = clone(dy);
    cpu_backend().layernorm_backward(in, d, gamma, mean, inv, in_place ? d : dx, dg, db);
    return std::vector<Tensor>{clone(y1), in_place ? clone(d) : dx, dg, db};
  };
  const std::vector<Tensor> a = run(1, false), b = run(2, true);
  omp_set_num_threads(2);
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(std::memcmp(a[i].raw(), b[i].raw(), a[i].bytes()) == 0);
  }
}

TEST_CASE("layer_norm: planned equals baseline bitwise") {
  // ConvNeXt's block in small: depthwise conv, channels last, LayerNorm, Linear, GELU, Linear,
  // channels first again, a residual add.
  check_planned_equals_baseline([](Value x) {
    Value a = conv2d(x, {.out = 8, .kernel = 3, .pad = 1});
    Value t = transpose(conv2d(a, {.out = 8, .kernel = 3, .pad = 1, .dilation = 1, .groups = 8}),
                        {0, 2, 3, 1});
    const Shape s = t.shape();
    Value r = reshape(t, Shape{s[0] * s[1] * s[2], s[3]});
    r = linear(gelu(linear(layer_norm(r, 1), {.out = 16})), {.out = 8});
    Value back = transpose(reshape(r, s), {0, 3, 1, 2});
    return conv2d(layer_norm(add(back, a), 3), {.out = 4, .kernel = 3, .stride = 2});
  });
}

TEST_CASE("layer_norm: errors name what is wrong") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 3, 4}, DType::f32);
  CHECK_THROWS_WITH_AS(layer_norm(x, 3),
                       doctest::Contains("layer_norm: 3 trailing axes of x [2,3,4]"), Error);
  Value w = tape.param("w", Shape{3}, Init::ones(), true);
  Value b = tape.param("b", Shape{3}, Init::zeros(), true);
  CHECK_THROWS_WITH_AS(tape.record(std::make_unique<LayerNormOp>(LayerNormOptions{}),
                                   std::vector<Value>{x, w, b}, std::source_location::current()),
                       doctest::Contains("layer_norm: weight [3] is not the trailing axes of x "
                                         "[2,3,4]"),
                       Error);
  Tensor t = Tensor::empty({2, 4}, DType::f32), g = Tensor::empty({3}, DType::f32);
  Tensor none;
  CHECK_THROWS_WITH_AS(cpu_backend().layernorm_forward(t, g, g, 1e-5, t, none, none),
                       doctest::Contains("layer_norm: x [2,4] is not rows of gamma's [3]"), Error);
}
