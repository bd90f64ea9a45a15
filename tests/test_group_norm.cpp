// GroupNorm: gradient checks in f64 (input, weight, bias; 1, 2 and C groups, a channel of one
// value), a case by hand against PyTorch's values, equal in f64 to the five nodes PyTorch's
// ONNX export writes (reshape, layer norm per group, reshape, per-channel mul and add), roles,
// in-place inference and backward equal to out-of-place bitwise, the same bits for any thread
// count, planned equal to baseline bitwise (with rebuilds), and error messages.
#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <cstring>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/activation.h"
#include "layers/add.h"
#include "layers/binary.h"
#include "layers/conv2d.h"
#include "layers/group_norm.h"
#include "layers/layer_norm.h"
#include "layers/relu.h"
#include "layers/reshape.h"
#include "run/executor.h"
#include "tests/tape_values.h"
#include "tests/worst.h"

using namespace frugal;
using namespace frugal::testing;

TEST_CASE("group_norm: finite-difference gradients in f64") {
  for (int64_t groups : {1, 2, 4}) {
    INFO(groups, " groups");
    check_gradients(
        [groups](std::span<const Value> x) {
          Value y = group_norm(x[0], groups, {.eps = 1e-3, .name = "gn"});
          randomize_param(x[0].tape(), "gn.weight", 3, 0.5, 1.5);
          randomize_param(x[0].tape(), "gn.bias", 4, -1, 1);
          return std::vector<Value>{y};
        },
        {random_tensor({3, 4, 3, 5}, 7, -2, 2)});
  }
  // Stacked with an activation between; (N, C) input whose groups of one channel hold one value
  // (x^ is 0, dx is 0); a fixed (not affine) one.
  check_gradients(
      [](std::span<const Value> x) {
        return std::vector<Value>{group_norm(gelu(group_norm(x[0], 3)), 1, {.affine = false}),
                                  group_norm(x[1], 3)};
      },
      {random_tensor({2, 6, 7}, 9, -2, 2), random_tensor({2, 3}, 10)});
}

TEST_CASE("group_norm: by hand, as PyTorch computes it") {
  // torch.nn.functional.group_norm(x, 2, weight, bias, 1e-5) in float64 on a (1, 4, 2) x and
  // its backward for dy, as torch 1.13 prints them.
  ParamStore store;
  Tape tape(store, DType::f64);
  Value x = tape.input("x", {1, 4, 2}, DType::f64, true);
  Value y = group_norm(x, 2, {.name = "gn"});
  copy_bytes(from({4}, {1, 2, 0.5, -1}), store.find("gn.weight")->value);
  copy_bytes(from({4}, {0, 1, -1, 0.5}), store.find("gn.bias")->value);
  Executor ex(tape, cpu_backend(), {.poison = true, .keep = {x, y}, .optimizer = std::nullopt});
  ex.set_input(x, from({1, 4, 2}, {1, 2, 4, 0, 0, 3, -1, 2}));
  ex.forward();
  const double want_y[] = {-0.5070913937723915, 0.1690304645907974,  4.042548362634351,
                           -1.366426504271161,  -1.3162271335632032, -0.36754573287359343,
                           1.7649085342528128,  -0.13245426712640662};
  for (int i = 0; i < 8; ++i)
    CHECK(element_as_double(ex.value(y), i) == doctest::Approx(want_y[i]).epsilon(1e-13));
  std::pair<Value, Tensor> seed{y, from({1, 4, 2}, {1, 0, 2, -1, 1, 0, 3, -2})};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  const double want_dx[] = {0.8499786518934384,   -0.7340741228732723, 0.15455147777243994,
                            -0.27045600679260673, 0.8696227199435969,  -0.8696208225883848,
                            -0.869628412009233,   0.869626514654021};
  const double want_dg[] = {-0.5070913937723915, 4.225761614769931, -0.6324542671264065,
                            -5.059634137011252};
  for (int i = 0; i < 8; ++i)
    CHECK(element_as_double(ex.grad(x), i) == doctest::Approx(want_dx[i]).epsilon(1e-12));
  const Value g = param_value(tape, "gn.weight"), b = param_value(tape, "gn.bias");
  for (int c = 0; c < 4; ++c) {
    CHECK(element_as_double(ex.grad(g), c) == doctest::Approx(want_dg[c]).epsilon(1e-13));
    CHECK(element_as_double(ex.grad(b), c) == 1);
  }
}

TEST_CASE("group_norm: equals its export's five nodes in f64 (forward and every gradient)") {
  // What PyTorch's ONNX export writes for nn.GroupNorm(3, 6): reshape to (N, 3, -1), normalize
  // each row, reshape back, multiply by the weight and add the bias per channel.
  const Shape s{2, 6, 4, 3};
  const Tensor in = random_tensor(s, 21, -2, 2), dy = random_tensor(s, 24);
  const Tensor w = random_tensor({6}, 22, 0.5, 1.5), b = random_tensor({6}, 23, -1, 1);
  auto run = [&](bool fused) {
    ParamStore store;
    Tape tape(store, DType::f64);
    Value x = tape.input("x", s, DType::f64, true);
    Value gamma = tape.param("w", Shape{6}, Init::ones(), true);
    Value beta = tape.param("b", Shape{6}, Init::zeros(), true);
    Value y;
    if (fused) {
      y = tape.record(std::make_unique<GroupNormOp>(3, 1e-4), {x, gamma, beta},
                      std::source_location::current())[0];
    } else {
      Value r = reshape(x, Shape{2, 3, 24});
      Value n = reshape(layer_norm(r, 1, {.eps = 1e-4, .name = "ln"}), s);
      store.find("ln.weight")->trainable = false;
      store.find("ln.bias")->trainable = false;
      y = binary(BinaryKind::add, binary(BinaryKind::mul, n, reshape(gamma, Shape{6, 1, 1})),
                 reshape(beta, Shape{6, 1, 1}));
    }
    copy_bytes(w, store.find("w")->value);
    copy_bytes(b, store.find("b")->value);
    Executor ex(tape, cpu_backend(), {.keep = {x, y}, .optimizer = std::nullopt});
    ex.set_input(x, in);
    ex.forward();
    std::pair<Value, Tensor> seed{y, dy};
    ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
    return std::vector<Tensor>{clone(ex.value(y)), clone(ex.grad(x)), clone(ex.grad(gamma)),
                               clone(ex.grad(beta))};
  };
  const std::vector<Tensor> a = run(true), c = run(false);
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    double worst = 0, scale = 0;
    for (int64_t k = 0; k < a[i].numel(); ++k) {
      worst = worse(worst, std::abs(element_as_double(a[i], k) - element_as_double(c[i], k)));
      scale = std::max(scale, std::abs(element_as_double(c[i], k)));
    }
    CHECK(worst <= 1e-12 * scale);
  }
}

TEST_CASE("group_norm: roles, in place, the same bits for any thread count") {
  ParamStore store(3);
  Tape tape(store);
  Value x = tape.input("x", {4, 6, 5, 7}, DType::f32, true);
  (void)group_norm(x, 3);
  CHECK(store.find("group_norm0.weight")->trainable);
  Op& op = *tape.ops().back().op;
  const Roles train = op.roles(Mode::training, cpu_backend());
  REQUIRE(train.saved.size() == 2);
  CHECK(train.saved[0].shape == Shape{12});
  CHECK(train.backward_reads_inputs == std::vector<int>{0, 1});
  CHECK(train.grad_aliases.size() == 1);
  CHECK(train.backward_scratch == 2 * 4 * 6 * sizeof(double));  // the CPU's sums per (n, c)
  CHECK(train.rebuildable);
  CHECK(op.roles(Mode::inference, cpu_backend()).aliases.size() == 1);
  Value z = tape.input("z", {2, 4}, DType::f32);
  (void)group_norm(z, 2, {.affine = false, .name = "fixed"});
  CHECK(!store.find("fixed.weight")->trainable);
  CHECK(!store.find("fixed.bias")->trainable);
  // In place equals out of place, and 1 thread equals 2, bit for bit (forward and backward).
  const Shape s{4, 6, 5, 7};
  Tensor in = random_tensor(s, 5, -3, 3, DType::f32);
  Tensor gamma = random_tensor({6}, 6, 0.5, 1.5, DType::f32);
  Tensor beta = random_tensor({6}, 7, -1, 1, DType::f32);
  Tensor dy = random_tensor(s, 8, -1, 1, DType::f32);
  auto run = [&](int threads, bool in_place) {
    omp_set_num_threads(threads);
    Tensor x1 = clone(in), y1 = in_place ? x1 : Tensor::empty(s, DType::f32);
    Tensor mean = Tensor::empty({12}, DType::f32), inv = Tensor::empty({12}, DType::f32);
    cpu_backend().groupnorm_forward(x1, gamma, beta, 3, 1e-5, y1, mean, inv);
    Tensor dx = Tensor::empty(s, DType::f32), dg = Tensor::empty({6}, DType::f32),
           db = Tensor::empty({6}, DType::f32);
    Tensor d = clone(dy);
    Tensor scratch = Tensor::empty({2 * 4 * 6}, DType::f64);  // the sums of each (n, c)
    cpu_backend().groupnorm_backward(in, d, gamma, mean, inv, 3, in_place ? d : dx, dg, db,
                                     scratch);
    return std::vector<Tensor>{clone(y1), in_place ? clone(d) : dx, dg, db};
  };
  const std::vector<Tensor> a = run(1, false), b = run(2, true);
  omp_set_num_threads(2);
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(std::memcmp(a[i].raw(), b[i].raw(), a[i].bytes()) == 0);
  }
}

TEST_CASE("group_norm: planned equals baseline bitwise") {
  // A GroupNorm ResNet's basic block in small: conv, GN, ReLU, conv, GN, residual add, ReLU.
  check_planned_equals_baseline([](Value x) {
    Value a = relu(group_norm(conv2d(x, {.out = 8, .kernel = 3, .pad = 1}), 4));
    Value b = group_norm(conv2d(a, {.out = 8, .kernel = 3, .pad = 1}), 4);
    Value c = relu(add(b, a));
    return conv2d(group_norm(c, 8, {.affine = false}), {.out = 4, .kernel = 3, .stride = 2});
  });
}

TEST_CASE("group_norm: errors name what is wrong") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 6, 4}, DType::f32);
  CHECK_THROWS_WITH_AS(group_norm(x, 4),
                       doctest::Contains("group_norm: 4 groups of the channels of x [2,6,4]"),
                       Error);
  Value w = tape.param("w", Shape{4}, Init::ones(), true);
  CHECK_THROWS_WITH_AS(tape.record(std::make_unique<GroupNormOp>(2, 1e-5),
                                   std::vector<Value>{x, w, w}, std::source_location::current()),
                       doctest::Contains("group_norm: weight [4] f32, expected [6] f32"), Error);
  Value w6 = tape.param("w6", Shape{6}, Init::ones(), true);
  CHECK_THROWS_WITH_AS(tape.record(std::make_unique<GroupNormOp>(2, 0),
                                   std::vector<Value>{x, w6, w6}, std::source_location::current()),
                       doctest::Contains("group_norm: eps must be positive"), Error);
  Tensor t = Tensor::empty({2, 6, 4}, DType::f32), g = Tensor::empty({6}, DType::f32);
  Tensor none;
  CHECK_THROWS_WITH_AS(cpu_backend().groupnorm_forward(t, g, g, 5, 1e-5, t, none, none),
                       doctest::Contains("group_norm: 5 groups do not divide the 6 channels"),
                       Error);
  Tensor dy = Tensor::empty({2, 6, 4}, DType::f32), stats = Tensor::empty({4}, DType::f32);
  CHECK_THROWS_WITH_AS(
      cpu_backend().groupnorm_backward(t, dy, g, stats, stats, 2, t, none, none, none),
      doctest::Contains("group_norm backward: needs 192 bytes of scratch, got 0"), Error);
  Tensor m = Tensor::empty({3}, DType::f32);
  CHECK_THROWS_WITH_AS(cpu_backend().groupnorm_forward(t, g, g, 2, 1e-5, t, m, none),
                       doctest::Contains("a per-group tensor is [3] f32, expected 4 values"),
                       Error);
}
