// LeakyReLU: gradient check with either saved encoding, a hand-computed case, errors, and what
// the planner does with its roles: in place, output kept until its backward or a mask instead,
// bitwise equal to the baseline.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "check/gradcheck.h"
#include "layers/add.h"
#include "layers/conv2d.h"
#include "layers/leaky_relu.h"
#include "layers/maxpool2d.h"
#include "run/executor.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// One SGD step of conv2d -> leaky_relu -> (conv2d | max_pool2d) seeded with a fixed upstream
// gradient; returns the output, the input gradient and the updated weights. Checks the
// planner's choices for the leaky_relu in planned mode.
std::vector<Tensor> step(MemoryMode memory, bool pool_after) {
  ParamStore store(7);
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {2, 3, 6, 6}, DType::f32, /*requires_grad=*/true);
  Value a = conv2d(x, {.out = 4, .kernel = 3, .pad = 1});
  Value h = leaky_relu(a, 0.1);
  Value y = pool_after ? max_pool2d(h, {.kernel = 2}) : conv2d(h, {.out = 2, .kernel = 3});
  Executor ex(
      tape, cpu_backend(),
      {.memory = memory, .poison = true, .keep = {y}, .optimizer = OptimizerConfig{.lr = 0.1}});
  ex.set_input(x, random_tensor(x.shape(), 1, -1, 1, DType::f32));
  ex.forward();
  std::pair<Value, Tensor> seed{y, random_tensor(y.shape(), 2, -1, 1, DType::f32)};
  std::vector<Tensor> out = {clone(ex.value(y))};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  out.push_back(clone(ex.grad(x)));
  for (Parameter* p : store.all()) out.push_back(clone(p->value));

  if (memory == MemoryMode::planned) {
    const Liveness& live = ex.liveness();
    const Buffer& ba = live.buffers[static_cast<size_t>(live.value_buffer[a.id()])];
    const Buffer& bh = live.buffers[static_cast<size_t>(live.value_buffer[h.id()])];
    const int k = tape.value(h.id()).producer;  // the leaky_relu's op index
    // In place: nothing reads a after the leaky_relu, so h takes a's bytes.
    CHECK(bh.alias_of == live.value_buffer[a.id()]);
    CHECK(ba.last == k);
    CHECK(ex.value(h).raw() == ex.value(a).raw());
    // Gradient alias: d a takes the bytes of d h, which dies in the leaky_relu's backward.
    const int da = live.grad_buffer[a.id()], dh = live.grad_buffer[h.id()];
    CHECK(live.buffers[static_cast<size_t>(da)].alias_of == dh);
    if (pool_after) {
      // max_pool2d's backward does not read h: a 1-bit mask lets h die in forward.
      CHECK(op_of<LeakyReluOp>(h).saves == LeakyReluOp::Saves::mask);
      REQUIRE(live.saved_buffers[static_cast<size_t>(k)].size() == 1);
      const Buffer& mask =
          live.buffers[static_cast<size_t>(live.saved_buffers[static_cast<size_t>(k)][0])];
      CHECK(mask.bytes == static_cast<size_t>((h.shape().numel() + 7) / 8));
      CHECK(mask.last == live.backward_step(k));
      CHECK(bh.last == k + 1);
    } else {
      // conv2d's backward reads h anyway (for dw): backward reads h, no mask.
      CHECK(op_of<LeakyReluOp>(h).saves == LeakyReluOp::Saves::output);
      CHECK(live.saved_buffers[static_cast<size_t>(k)].empty());
      CHECK(bh.last == live.backward_step(k));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("gradcheck leaky_relu") {
  for (LeakyReluOp::Saves saves : {LeakyReluOp::Saves::output, LeakyReluOp::Saves::mask}) {
    CAPTURE(saves == LeakyReluOp::Saves::mask);
    check_gradients(
        [saves](std::span<const Value> x) {
          Value y = leaky_relu(x[0], 0.2);
          op_of<LeakyReluOp>(y).saves = saves;
          return std::vector<Value>{y};
        },
        {kink_free({2, 3, 4, 5}, 3)});
  }
}

TEST_CASE("leaky_relu hand-computed") {
  for (LeakyReluOp::Saves saves : {LeakyReluOp::Saves::output, LeakyReluOp::Saves::mask}) {
    ParamStore store;
    Tape tape(store, DType::f32);
    Value x = tape.input("x", {1, 5}, DType::f32, true);
    Value y = leaky_relu(x, 0.25);
    op_of<LeakyReluOp>(y).saves = saves;
    Executor ex(tape, cpu_backend(),
                {.poison = true, .keep = {x, y}, .encodings_as_recorded = true});
    const float in[5] = {-2, -0.5f, 0, 0.5f, 3};
    for (int i = 0; i < 5; ++i) ex.input(x).data<float>()[i] = in[i];
    ex.forward();
    const float want[5] = {-0.5f, -0.125f, 0, 0.5f, 3};
    for (int i = 0; i < 5; ++i) CHECK(ex.value(y).data<float>()[i] == want[i]);
    Tensor dy = Tensor::empty({1, 5}, DType::f32);
    for (int i = 0; i < 5; ++i) dy.data<float>()[i] = static_cast<float>(i + 1);
    std::pair<Value, Tensor> seed{y, dy};
    ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
    const float dwant[5] = {0.25f, 0.5f, 0.75f, 4, 5};  // x = 0 takes the slope side
    for (int i = 0; i < 5; ++i) CHECK(ex.grad(x).data<float>()[i] == dwant[i]);
  }
}

TEST_CASE("leaky_relu keeps NaN as PyTorch does with either saved encoding") {
  // y = slope * NaN = NaN; backward takes the slope side at NaN (x > 0 is false), as PyTorch's
  // leaky_relu_backward: dy * slope.
  for (LeakyReluOp::Saves saves : {LeakyReluOp::Saves::output, LeakyReluOp::Saves::mask}) {
    ParamStore store;
    Tape tape(store, DType::f32);
    Value x = tape.input("x", {1, 3}, DType::f32, true);
    Value y = leaky_relu(x, 0.25);
    op_of<LeakyReluOp>(y).saves = saves;
    Executor ex(tape, cpu_backend(),
                {.poison = true, .keep = {x, y}, .encodings_as_recorded = true});
    const float in[3] = {std::numeric_limits<float>::quiet_NaN(), -2, 3};
    for (int i = 0; i < 3; ++i) ex.input(x).data<float>()[i] = in[i];
    ex.forward();
    CHECK(std::isnan(ex.value(y).data<float>()[0]));
    CHECK(ex.value(y).data<float>()[1] == -0.5f);
    CHECK(ex.value(y).data<float>()[2] == 3);
    Tensor dy = Tensor::empty({1, 3}, DType::f32);
    for (int i = 0; i < 3; ++i) dy.data<float>()[i] = static_cast<float>(i + 1);
    std::pair<Value, Tensor> seed{y, dy};
    ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
    const float dwant[3] = {0.25f, 0.5f, 3};
    for (int i = 0; i < 3; ++i) CHECK(ex.grad(x).data<float>()[i] == dwant[i]);
  }
}

TEST_CASE("leaky_relu rejects a negative slope and integer input") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 3}, DType::f32);
  CHECK_THROWS_WITH_AS(leaky_relu(x, -0.1),
                       doctest::Contains("leaky_relu: slope must be finite and >= 0"), Error);
  CHECK_THROWS_WITH_AS(leaky_relu(x, -0.1), doctest::Contains("test_leaky_relu.cpp:"), Error);
  Value labels = tape.input("labels", {4}, DType::i32);
  CHECK_THROWS_WITH_AS(leaky_relu(labels),
                       doctest::Contains("leaky_relu: input must be f32 or f64, got i32 [4]"),
                       Error);
}

TEST_CASE("planned leaky_relu runs in place and keeps its output for backward") {
  const std::vector<Tensor> base = step(MemoryMode::baseline, false);
  const std::vector<Tensor> planned = step(MemoryMode::planned, false);
  REQUIRE(base.size() == planned.size());
  for (size_t i = 0; i < base.size(); ++i) CHECK(bitwise_equal(base[i], planned[i]));
}

TEST_CASE("planned leaky_relu saves a mask where its output would otherwise die") {
  const std::vector<Tensor> base = step(MemoryMode::baseline, true);
  const std::vector<Tensor> planned = step(MemoryMode::planned, true);
  REQUIRE(base.size() == planned.size());
  for (size_t i = 0; i < base.size(); ++i) CHECK(bitwise_equal(base[i], planned[i]));
}

TEST_CASE("planned leaky_relu is not in place when its input is read later") {
  ParamStore store(1);
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {2, 3, 6, 6}, DType::f32);
  Value a = conv2d(x, {.out = 4, .kernel = 3, .pad = 1});
  Value h = leaky_relu(a);
  Value y = add(h, a);  // a is read again after the leaky_relu
  Executor ex(tape, cpu_backend(), {.memory = MemoryMode::planned, .keep = {y}});
  const Liveness& live = ex.liveness();
  CHECK(live.buffers[static_cast<size_t>(live.value_buffer[h.id()])].alias_of == -1);
  CHECK(ex.value(h).raw() != ex.value(a).raw());
}
