// LogSoftMax, NLL and the fused softmax cross-entropy: gradient checks, hand-computed cases,
// numerical stability, in-place kernels, determinism of the mean, label and shape errors.
#include <doctest/doctest.h>

#include <cmath>

#include "check/gradcheck.h"
#include "layers/add.h"
#include "layers/dropout.h"
#include "layers/flatten.h"
#include "layers/log_softmax.h"
#include "layers/nll_loss.h"
#include "layers/softmax_cross_entropy.h"
#include "layers/threshold.h"
#include "run/executor.h"

using namespace frugal;
using namespace frugal::testing;

namespace {
template <typename T>
void fill(Tensor& t, std::initializer_list<T> values) {
  REQUIRE(static_cast<int64_t>(values.size()) == t.numel());
  int64_t i = 0;
  for (T v : values) t.data<T>()[i++] = v;
}

// A loss graph over logits (N,C) f64 and labels: its loss and d loss / d logits.
struct LossRun {
  double loss;
  Tensor dx;
};
LossRun run_loss(bool fused, const Tensor& x, const Tensor& labels) {
  ParamStore store;
  Tape tape(store, DType::f64);
  Value xv = tape.input("x", x.shape(), DType::f64, true);
  Value lv = tape.input("labels", labels.shape(), DType::i32);
  Value loss = fused ? softmax_cross_entropy(xv, lv) : nll_loss(log_softmax(xv), lv);
  Executor ex(tape, cpu_backend(), {.poison = true, .keep = {xv, loss}});
  ex.set_input(xv, x);
  ex.set_input(lv, labels);
  ex.forward();
  const double l = ex.value(loss).data<double>()[0];
  ex.backward(loss);
  return {l, clone(ex.grad(xv))};
}
}  // namespace

TEST_CASE("gradcheck log_softmax") {
  check_gradients([](std::span<const Value> x) { return std::vector<Value>{log_softmax(x[0])}; },
                  {random_tensor({4, 5}, 51, -2, 2)});
  check_gradients([](std::span<const Value> x) { return std::vector<Value>{log_softmax(x[0])}; },
                  {random_tensor({1, 1}, 52)});
}

TEST_CASE("log_softmax hand-computed and stable") {
  for (DType t : {DType::f32, DType::f64}) {
    Tensor x = Tensor::empty({3, 2}, t), y = Tensor::empty({3, 2}, t);
    // softmax of (0, ln 3) is (1/4, 3/4); of (1000, 1000) and (-1000, -1000) is (1/2, 1/2).
    const double ln3 = std::log(3.0);
    const double in[6] = {0, ln3, 1000, 1000, -1000, -1000};
    const double want[6] = {std::log(0.25), std::log(0.75), -std::log(2.0),
                            -std::log(2.0), -std::log(2.0), -std::log(2.0)};
    for (int i = 0; i < 6; ++i) {
      if (t == DType::f32)
        x.data<float>()[i] = static_cast<float>(in[i]);
      else
        x.data<double>()[i] = in[i];
    }
    cpu_backend().log_softmax_forward(x, y);
    for (int i = 0; i < 6; ++i)
      CHECK(element_as_double(y, i) == doctest::Approx(want[i]).epsilon(1e-6));
  }
}

TEST_CASE("log_softmax in place") {
  for (DType t : {DType::f32, DType::f64}) {
    Tensor x = random_tensor({7, 10}, 53, -5, 5, t), y = Tensor::empty({7, 10}, t);
    cpu_backend().log_softmax_forward(x, y);
    Tensor z = clone(x);
    cpu_backend().log_softmax_forward(z, z);
    CHECK(bitwise_equal(y, z));
    // Backward: dx may take dy's bytes.
    Tensor dy = random_tensor({7, 10}, 54, -1, 1, t), dx = Tensor::empty({7, 10}, t);
    cpu_backend().log_softmax_backward(dy, y, dx);
    cpu_backend().log_softmax_backward(dy, y, dy);
    CHECK(bitwise_equal(dx, dy));
  }
}

TEST_CASE("gradcheck nll_loss") {
  check_gradients([](std::span<const Value> x) { return std::vector<Value>{nll_loss(x[0], x[1])}; },
                  {random_tensor({5, 4}, 55), random_labels(5, 4, 56)});
  check_gradients(
      [](std::span<const Value> x) {
        return std::vector<Value>{nll_loss(log_softmax(x[0]), x[1])};
      },
      {random_tensor({6, 3}, 57, -2, 2), random_labels(6, 3, 58)});
}

TEST_CASE("nll_loss hand-computed") {
  ParamStore store;
  Tape tape(store, DType::f32);
  Value logp = tape.input("logp", {2, 2}, DType::f32, true);
  Value labels = tape.input("labels", {2}, DType::i32);
  Value loss = nll_loss(logp, labels);
  CHECK(loss.shape() == Shape{1});
  Executor ex(tape, cpu_backend(), {.poison = true, .keep = {logp, loss}});
  fill<float>(ex.input(logp), {-1, -2, -3, -4});
  fill<int32_t>(ex.input(labels), {1, 0});
  ex.forward();
  CHECK(ex.value(loss).data<float>()[0] == 2.5f);  // (2 + 3) / 2
  ex.backward(loss);
  const float want[4] = {0, -0.5f, -0.5f, 0};
  for (int i = 0; i < 4; ++i) CHECK(ex.grad(logp).data<float>()[i] == want[i]);
}

TEST_CASE("gradcheck softmax_cross_entropy") {
  check_gradients(
      [](std::span<const Value> x) {
        return std::vector<Value>{softmax_cross_entropy(x[0], x[1])};
      },
      {random_tensor({5, 4}, 59, -2, 2), random_labels(5, 4, 60)});
  check_gradients(
      [](std::span<const Value> x) {
        return std::vector<Value>{softmax_cross_entropy(x[0], x[1])};
      },
      {random_tensor({1, 7}, 61, -2, 2), random_labels(1, 7, 62)});
}

TEST_CASE("softmax_cross_entropy equals nll_loss of log_softmax") {
  Tensor x = random_tensor({9, 6}, 63, -3, 3);
  Tensor labels = random_labels(9, 6, 64);
  LossRun fused = run_loss(true, x, labels), split = run_loss(false, x, labels);
  CHECK(fused.loss == doctest::Approx(split.loss).epsilon(1e-12));
  for (int64_t i = 0; i < x.numel(); ++i)
    CHECK(fused.dx.data<double>()[i] == doctest::Approx(split.dx.data<double>()[i]).epsilon(1e-12));
}

TEST_CASE("softmax_cross_entropy hand-computed and stable") {
  Tensor x = Tensor::empty({2, 3}, DType::f64), labels = Tensor::empty({2}, DType::i32);
  fill<double>(x, {1000, 0, -1000, 0, 0, 0});
  fill<int32_t>(labels, {2, 1});
  // Row 0: logsumexp = 1000 (to double precision), loss 2000. Row 1: ln 3.
  LossRun r = run_loss(true, x, labels);
  CHECK(r.loss == doctest::Approx((2000 + std::log(3.0)) / 2).epsilon(1e-12));
  // dx = (softmax - onehot) / N
  const double third = 1.0 / 3;
  const double want[6] = {0.5, 0, -0.5, third / 2, (third - 1) / 2, third / 2};
  for (int i = 0; i < 6; ++i) CHECK(r.dx.data<double>()[i] == doctest::Approx(want[i]));
}

TEST_CASE("loss means are the same bits for any thread count") {
  // 300 rows span several fixed chunks of the ordered sum.
  for (DType t : {DType::f32, DType::f64}) {
    Tensor x = random_tensor({300, 10}, 65, -4, 4, t), labels = random_labels(300, 10, 66);
    auto losses = [&]() {
      Tensor a = Tensor::empty({1}, t), b = Tensor::empty({1}, t);
      cpu_backend().softmax_cross_entropy_forward(x, labels, a);
      cpu_backend().nll_forward(x, labels, b);
      return std::pair{a, b};
    };
    const int threads = cpu_backend().threads();
    auto [a1, b1] = losses();
    set_cpu_threads(1);
    auto [a2, b2] = losses();
    set_cpu_threads(threads);
    CHECK(bitwise_equal(a1, a2));
    CHECK(bitwise_equal(b1, b2));
  }
}

TEST_CASE("labels outside the class range throw naming the op the label and C") {
  Tensor x = random_tensor({2, 3}, 67);
  Tensor labels = Tensor::empty({2}, DType::i32);
  fill<int32_t>(labels, {0, 3});
  CHECK_THROWS_WITH_AS(run_loss(false, x, labels),
                       doctest::Contains("nll_loss: label 3 of sample 1 is outside [0, 3)"), Error);
  fill<int32_t>(labels, {-1, 0});
  CHECK_THROWS_WITH_AS(
      run_loss(true, x, labels),
      doctest::Contains("softmax_cross_entropy: label -1 of sample 0 is outside [0, 3)"), Error);
}

TEST_CASE("loss shape errors name the op and the shapes") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {4, 3}, DType::f32);
  Value short_labels = tape.input("l", {3}, DType::i32);
  Value float_labels = tape.input("f", {4}, DType::f32);
  Value images = tape.input("i", {4, 3, 2, 2}, DType::f32);
  CHECK_THROWS_WITH_AS(
      nll_loss(x, short_labels),
      doctest::Contains("nll_loss: labels [3] i32 for scores [4,3], expected [4] i32"), Error);
  CHECK_THROWS_WITH_AS(softmax_cross_entropy(x, float_labels),
                       doctest::Contains("softmax_cross_entropy: labels [4] f32 for scores [4,3]"),
                       Error);
  CHECK_THROWS_WITH_AS(softmax_cross_entropy(images, float_labels),
                       doctest::Contains("softmax_cross_entropy: scores [4,3,2,2] must be (N,C)"),
                       Error);
  CHECK_THROWS_WITH_AS(log_softmax(images),
                       doctest::Contains("log_softmax: x [4,3,2,2] must be (N,C)"), Error);
  CHECK(tape.ops().empty());  // nothing was recorded
}

TEST_CASE("planned in-place chain equals baseline") {
  // threshold -> dropout -> add -> flatten -> log_softmax -> nll_loss: the planner may run
  // each of them in place; results must be the same bits as with separate buffers.
  auto run = [](MemoryMode memory, int& aliased) {
    ParamStore store;
    Tape tape(store, DType::f32);
    Value x = tape.input("x", {4, 3, 2, 2}, DType::f32, true);
    Value labels = tape.input("labels", {4}, DType::i32);
    Value a = threshold(x, 0.1, 0.0);
    Value b = dropout(a, 0.3);
    Value c = add(b, threshold(x, -0.2, 0.5));
    Value loss = nll_loss(log_softmax(flatten(c)), labels);
    Executor ex(tape, cpu_backend(),
                {.memory = memory, .poison = true, .seed = 3, .keep = {x, loss}});
    ex.set_input(x, random_tensor({4, 3, 2, 2}, 68, -1, 1, DType::f32));
    ex.set_input(labels, random_labels(4, 12, 69));
    ex.forward();
    Tensor l = clone(ex.value(loss));
    ex.backward(loss);
    aliased = 0;
    for (const Buffer& buf : ex.liveness().buffers) aliased += buf.alias_of >= 0;
    return std::pair{l, clone(ex.grad(x))};
  };
  int base_aliases = 0, planned_aliases = 0;
  auto [l1, g1] = run(MemoryMode::baseline, base_aliases);
  auto [l2, g2] = run(MemoryMode::planned, planned_aliases);
  CHECK(base_aliases == 0);
  CHECK(planned_aliases >= 4);
  CHECK(bitwise_equal(l1, l2));
  CHECK(bitwise_equal(g1, g2));
}
