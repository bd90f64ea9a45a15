// BatchNorm2d: gradient checks (input, gamma, beta; (N,C,H,W), (N,C), (N,C,L), (N,C,D,H,W)),
// BatchNorm1d's and 3d's shapes the (N,C,1,S) one bit for bit, training vs
// inference outputs and the running-statistics update against hand-computed values, roles,
// in-place inference equal to out-of-place bitwise, the rebuild from saved statistics equal to
// the training forward bitwise, determinism and error messages.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <utility>

#include "check/gradcheck.h"
#include "layers/batchnorm2d.h"
#include "layers/relu.h"
#include "run/executor.h"
#include "tests/tape_values.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

double at(const Tensor& t, int64_t i) {
  return element_as_double(t, i);
}

}  // namespace

TEST_CASE("gradcheck batch_norm") {
  // Non-trivial gamma and beta; input, gamma and beta are all checked (running statistics are
  // not differentiable). Training mode: the batch statistics depend on x.
  for (Shape shape :
       {Shape{4, 3, 3, 2}, Shape{6, 4}, Shape{2, 2, 1, 1}, Shape{3, 2, 5}, Shape{2, 2, 2, 3, 2}}) {
    INFO("x ", shape);
    check_gradients(
        [](std::span<const Value> x) {
          Value y = batch_norm(x[0], {.eps = 1e-3, .name = "bn"});
          randomize_param(x[0].tape(), "bn.weight", 3, 0.5, 1.5);
          randomize_param(x[0].tape(), "bn.bias", 4, -1, 1);
          return std::vector<Value>{y};
        },
        {random_tensor(shape, 7, -2, 2)});
  }
  // Stacked: the second batch norm's dx feeds the first's backward.
  check_gradients(
      [](std::span<const Value> x) {
        return std::vector<Value>{batch_norm(relu(batch_norm(x[0])), {.momentum = 0.5})};
      },
      {random_tensor({3, 2, 2, 3}, 9, -2, 2)});
}

// BatchNorm1d over (N,C,L) and BatchNorm3d over (N,C,D,H,W) are the kernels over (N,C,S):
// outputs, input and parameter gradients and running statistics equal those of the same
// values as (N,C,1,S), bit for bit.
TEST_CASE("batch_norm over (N,C,L) and (N,C,D,H,W) is the (N,C,1,S) one bitwise") {
  auto step = [](const Shape& shape) {
    ParamStore store;
    Tape tape(store);
    Value x = tape.input("x", shape, DType::f32, true);
    Value y = batch_norm(x, {.momentum = 0.3, .name = "bn"});
    randomize_param(tape, "bn.weight", 3, 0.5, 1.5);
    randomize_param(tape, "bn.bias", 4, -1, 1);
    Executor ex(tape, cpu_backend(),
                {.poison = true, .keep = {y}, .keep_param_grads = true, .optimizer = std::nullopt});
    ex.set_input(x, random_tensor({shape.numel()}, 11, -2, 2, DType::f32).reshape(shape));
    ex.forward();
    std::pair<Value, Tensor> seed{
        y, random_tensor({shape.numel()}, 12, -1, 1, DType::f32).reshape(shape)};
    ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
    return batch_norm_results(ex, tape, store, x, y);
  };
  for (const auto& [shape, flat] : {std::pair{Shape{3, 4, 7}, Shape{3, 4, 1, 7}},
                                    std::pair{Shape{2, 4, 3, 2, 5}, Shape{2, 4, 1, 30}}}) {
    INFO("x ", shape);
    const std::vector<Tensor> a = step(shape), b = step(flat);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i)
      CHECK(std::memcmp(a[i].raw(), b[i].raw(), a[i].bytes()) == 0);
  }
}

TEST_CASE("batch_norm hand-computed: training step then running statistics then inference") {
  // x (4,2): channel 0 = 1 2 3 4 (mean 2.5, biased var 1.25, unbiased 5/3),
  //          channel 1 = 2 2 2 6 (mean 3, biased var 3, unbiased 4).
  ParamStore store;
  Tape tape(store, DType::f64);
  Value x = tape.input("x", {4, 2}, DType::f64, true);
  const double eps = 1e-5;
  Value y = batch_norm(x, {.eps = eps, .momentum = 0.1, .name = "bn"});
  Parameter& gamma = *store.find("bn.weight");
  Parameter& beta = *store.find("bn.bias");
  Parameter& mean = *store.find("bn.running_mean");
  Parameter& var = *store.find("bn.running_var");
  CHECK((gamma.trainable && beta.trainable && !mean.trainable && !var.trainable));
  for (int c = 0; c < 2; ++c) {  // PyTorch's initial values
    CHECK(at(gamma.value, c) == 1);
    CHECK(at(beta.value, c) == 0);
    CHECK(at(mean.value, c) == 0);
    CHECK(at(var.value, c) == 1);
  }
  copy_bytes(from({2}, {2, 0.5}), gamma.value);
  copy_bytes(from({2}, {1, -1}), beta.value);
  const Tensor input = from({4, 2}, {1, 2, 2, 2, 3, 2, 4, 6});
  const double mu[2] = {2.5, 3}, biased[2] = {1.25, 3}, unbiased[2] = {5.0 / 3, 4};
  const double g[2] = {2, 0.5}, b[2] = {1, -1};

  {
    Executor ex(tape, cpu_backend(), {.poison = true, .keep = {x, y}, .optimizer = std::nullopt});
    ex.set_input(x, input);
    ex.forward();
    for (int i = 0; i < 8; ++i) {
      const int c = i % 2;
      INFO("element ", i);
      CHECK(at(ex.value(y), i) ==
            doctest::Approx(g[c] * (at(input, i) - mu[c]) / std::sqrt(biased[c] + eps) + b[c]));
    }
    // One step: running = 0.9 running + 0.1 batch statistic (unbiased variance).
    for (int c = 0; c < 2; ++c) {
      CHECK(at(mean.value, c) == doctest::Approx(0.1 * mu[c]).epsilon(1e-15));
      CHECK(at(var.value, c) == doctest::Approx(0.9 + 0.1 * unbiased[c]).epsilon(1e-15));
    }
    // dy = 1: dbeta = M, dgamma = sum x^ = 0, dx = 0 (a constant shift is normalized away).
    std::pair<Value, Tensor> seed{y, from({4, 2}, {1, 1, 1, 1, 1, 1, 1, 1})};
    ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
    for (int i = 0; i < 8; ++i) CHECK(std::abs(at(ex.grad(x), i)) < 1e-12);
    const Value gamma_v = param_value(tape, "bn.weight"), beta_v = param_value(tape, "bn.bias");
    for (int c = 0; c < 2; ++c) {
      CHECK(std::abs(at(ex.grad(gamma_v), c)) < 1e-12);
      CHECK(at(ex.grad(beta_v), c) == 4);
    }
  }
  // Inference: the running statistics normalize, and stay as they are.
  const double rm[2] = {0.1 * mu[0], 0.1 * mu[1]};
  const double rv[2] = {0.9 + 0.1 * unbiased[0], 0.9 + 0.1 * unbiased[1]};
  Executor ex(tape, cpu_backend(),
              {.mode = Mode::inference, .poison = true, .keep = {y}, .optimizer = std::nullopt});
  ex.set_input(x, input);
  ex.forward();
  for (int i = 0; i < 8; ++i) {
    const int c = i % 2;
    INFO("element ", i);
    CHECK(at(ex.value(y), i) ==
          doctest::Approx(g[c] * (at(input, i) - rm[c]) / std::sqrt(rv[c] + eps) + b[c]));
  }
  for (int c = 0; c < 2; ++c) {
    CHECK(at(mean.value, c) == doctest::Approx(rm[c]).epsilon(1e-15));
    CHECK(at(var.value, c) == doctest::Approx(rv[c]).epsilon(1e-15));
  }
}

TEST_CASE("batch_norm roles and parameters") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 5, 4, 3}, DType::f32, true);
  Value y = batch_norm(x);
  Value z = batch_norm(y, {.name = "head"});
  (void)z;
  CHECK(store.find("batch_norm0.weight") != nullptr);
  CHECK(store.find("batch_norm0.running_var") != nullptr);
  CHECK(store.find("head.bias") != nullptr);
  CHECK(store.find("head.running_mean")->value.shape() == Shape{5});
  const Op& op = *tape.ops()[0].op;
  CHECK(op.updates_state());
  CHECK((op.differentiable(0) && op.differentiable(1) && op.differentiable(2)));
  CHECK((!op.differentiable(3) && !op.differentiable(4)));
  Roles train = op.roles(Mode::training, cpu_backend());
  CHECK(train.saved == std::vector<TensorMeta>{{Shape{5}, DType::f32}, {Shape{5}, DType::f32}});
  CHECK(train.backward_reads_inputs == std::vector<int>{0, 1});
  CHECK(train.backward_reads_outputs.empty());  // backward never reads y
  CHECK(train.aliases.empty());                 // ... but it reads x, so y cannot take x's bytes
  Roles infer = op.roles(Mode::inference, cpu_backend());
  CHECK(infer.saved.empty());
  REQUIRE(infer.aliases.size() == 1);
  CHECK((infer.aliases[0].output == 0 && infer.aliases[0].input == 0));
}

TEST_CASE("batch_norm inference in place equals out of place bitwise") {
  for (DType t : {DType::f32, DType::f64}) {
    for (Shape shape : {Shape{3, 4, 5, 6}, Shape{7, 4}}) {
      const Tensor x = random_tensor(shape, 1, -3, 3, t);
      const Tensor gamma = random_tensor({4}, 2, 0.5, 2, t), beta = random_tensor({4}, 3, -1, 1, t);
      const Tensor mean = random_tensor({4}, 4, -1, 1, t), var = random_tensor({4}, 5, 0.1, 2, t);
      Tensor y = Tensor::empty(shape, t), inplace = Tensor::empty(shape, t);
      copy_bytes(x, inplace);
      cpu_backend().batchnorm_forward_infer(x, gamma, beta, mean, var, 1e-5, y);
      cpu_backend().batchnorm_forward_infer(inplace, gamma, beta, mean, var, 1e-5, inplace);
      CHECK(bitwise_equal(y, inplace));
    }
  }
  // Through the planner: in inference the planned executor runs batch norm in place.
  ParamStore store(3);
  Tape tape(store);
  Value x = tape.input("x", {2, 3, 4, 4}, DType::f32);
  Value h = relu(x);
  Value y = relu(batch_norm(h));
  randomize_param(tape, "batch_norm0.running_mean", 5, -1, 1);
  randomize_param(tape, "batch_norm0.running_var", 6, 0.5, 2);
  auto run = [&](MemoryMode memory) {
    Executor ex(
        tape, cpu_backend(),
        {.mode = Mode::inference, .memory = memory, .keep = {y}, .optimizer = std::nullopt});
    ex.set_input(x, random_tensor({2, 3, 4, 4}, 8, -1, 1, DType::f32));
    ex.forward();
    if (memory == MemoryMode::planned) {
      const Liveness& live = ex.liveness();
      const int bn_out = live.value_buffer[static_cast<size_t>(tape.ops()[1].outputs[0])];
      CHECK(live.buffers[static_cast<size_t>(bn_out)].alias_of >= 0);
    }
    Tensor out = Tensor::empty(y.shape(), DType::f32);
    copy_bytes(ex.value(y), out);
    return out;
  };
  CHECK(bitwise_equal(run(MemoryMode::baseline), run(MemoryMode::planned)));
}

TEST_CASE("batch_norm rebuilt from saved statistics gives the training forward's bits") {
  for (DType t : {DType::f32, DType::f64}) {
    for (Shape shape : {Shape{3, 4, 5, 6}, Shape{7, 4}}) {
      const Tensor x = random_tensor(shape, 1, -3, 3, t);
      const Tensor gamma = random_tensor({4}, 2, 0.5, 2, t), beta = random_tensor({4}, 3, -1, 1, t);
      Tensor rm = random_tensor({4}, 4, -1, 1, t), rv = random_tensor({4}, 5, 0.1, 2, t);
      Tensor y = Tensor::empty(shape, t), mean = Tensor::empty({4}, t);
      Tensor inv_std = Tensor::empty({4}, t), rebuilt = Tensor::empty(shape, t);
      Tensor inplace = Tensor::empty(shape, t);
      cpu_backend().batchnorm_forward_train(x, gamma, beta, rm, rv, 0.1, 1e-5, y, mean, inv_std);
      cpu_backend().batchnorm_normalize(x, gamma, beta, mean, inv_std, rebuilt);
      CHECK(bitwise_equal(y, rebuilt));
      copy_bytes(x, inplace);
      cpu_backend().batchnorm_normalize(inplace, gamma, beta, mean, inv_std, inplace);
      CHECK(bitwise_equal(y, inplace));
    }
  }
  // The op's roles: rebuildable from x, gamma and beta (the saved statistics too).
  ParamStore store;
  Tape tape(store);
  batch_norm(tape.input("x", {2, 5, 4, 3}, DType::f32, true));
  const Roles r = tape.ops()[0].op->roles(Mode::training, cpu_backend());
  CHECK(r.rebuildable);
  CHECK(r.rebuild_reads_inputs == std::vector<int>{0, 1, 2});
  CHECK(!tape.ops()[0].op->roles(Mode::inference, cpu_backend()).rebuildable);
}

TEST_CASE("batch_norm kernels give the same bits with one thread and with all") {
  const Tensor x = random_tensor({4, 6, 5, 3}, 1, -2, 2, DType::f32);
  const Tensor dy = random_tensor({4, 6, 5, 3}, 2, -1, 1, DType::f32);
  const Tensor gamma = random_tensor({6}, 3, 0.5, 2, DType::f32);
  const Tensor beta = random_tensor({6}, 4, -1, 1, DType::f32);
  auto run = [&](int threads) {
    const int before = cpu_backend().threads();
    set_cpu_threads(threads);
    std::vector<Tensor> t;
    for (Shape s :
         {x.shape(), Shape{6}, Shape{6}, Shape{6}, Shape{6}, x.shape(), Shape{6}, Shape{6}})
      t.push_back(Tensor::empty(s, DType::f32));
    cpu_backend().fill(t[1], 0);
    cpu_backend().fill(t[2], 1);
    // y, running mean, running var, mean, inv_std, dx, dgamma, dbeta
    cpu_backend().batchnorm_forward_train(x, gamma, beta, t[1], t[2], 0.1, 1e-5, t[0], t[3], t[4]);
    cpu_backend().batchnorm_backward(x, dy, gamma, t[3], t[4], t[5], t[6], t[7]);
    set_cpu_threads(before);
    return t;
  };
  std::vector<Tensor> one = run(1), all = run(cpu_backend().threads());
  for (size_t i = 0; i < one.size(); ++i) CHECK(bitwise_equal(one[i], all[i]));
}

TEST_CASE("batch_norm errors name the op and the shapes") {
  ParamStore store;
  Tape tape(store);
  Value v6 = tape.input("v6", {2, 3, 1, 1, 1, 4}, DType::f32);
  CHECK_THROWS_WITH_AS(batch_norm(v6),
                       doctest::Contains("batch_norm: input must be (N,C), (N,C,L), (N,C,H,W) or "
                                         "(N,C,D,H,W), got [2,3,1,1,1,4]"),
                       Error);
  // Per-channel inputs that do not match x's channels.
  Value x = tape.input("x", {2, 4, 5, 5}, DType::f32);
  Value c3 = tape.param("c3", {3}, Init::ones());
  Value c4 = tape.param("c4", {4}, Init::ones());
  CHECK_THROWS_WITH_AS(
      tape.record(std::make_unique<BatchNormOp>(BatchNormOptions{}), {x, c3, c4, c4, c4},
                  std::source_location::current()),
      doctest::Contains("batch_norm: weight [3] f32, expected [4] f32 for x [2,4,5,5]"), Error);
  // Training needs more than one value per channel, as PyTorch.
  Value one = tape.input("one", {1, 3}, DType::f32);
  Value y = batch_norm(one);
  Executor ex(tape, cpu_backend(), {.keep = {y}, .optimizer = std::nullopt});
  CHECK_THROWS_WITH_AS(
      ex.forward(),
      doctest::Contains("batch_norm: training needs more than 1 value per channel, got x [1,3]"),
      Error);
}
