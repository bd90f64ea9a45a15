// ReLU: gradient check, a hand-computed case, mask vs output encodings.
#include <doctest/doctest.h>

#include "autograd/executor.h"
#include "layers/relu.h"
#include "tests/gradcheck.h"

using namespace frugal;
using namespace frugal::testing;

namespace {
// Values bounded away from the kink at 0.
Tensor kink_free(Shape s, uint64_t seed) {
  Tensor t = random_tensor(std::move(s), seed, 0.1, 1.0);
  for (int64_t i = 0; i < t.numel(); i += 2) t.data<double>()[i] *= -1;
  return t;
}
}  // namespace

TEST_CASE("gradcheck relu") {
  check_gradients([](std::span<const Value> x) { return std::vector<Value>{relu(x[0])}; },
                  {kink_free({2, 3, 4, 5}, 3)});
  // Backward reading the output instead of the mask.
  check_gradients(
      [](std::span<const Value> x) {
        Value y = relu(x[0]);
        auto& op = static_cast<ReluOp&>(*x[0].tape().ops().back().op);
        op.saves = ReluOp::Saves::output;
        return std::vector<Value>{y};
      },
      {kink_free({7, 3}, 4)});
}

TEST_CASE("relu hand-computed") {
  ParamStore store;
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {1, 5}, DType::f32, true);
  Value y = relu(x);
  Executor ex(tape, cpu_backend(), {.keep = {x, y}});
  float in[5] = {-2, -0.5f, 0, 0.5f, 3};
  for (int i = 0; i < 5; ++i) ex.input(x).data<float>()[i] = in[i];
  ex.forward();
  float want[5] = {0, 0, 0, 0.5f, 3};
  for (int i = 0; i < 5; ++i) CHECK(ex.value(y).data<float>()[i] == want[i]);
  Tensor dy = Tensor::empty({1, 5}, DType::f32);
  for (int i = 0; i < 5; ++i) dy.data<float>()[i] = static_cast<float>(i + 1);
  std::pair<Value, Tensor> seed{y, dy};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  float dwant[5] = {0, 0, 0, 4, 5};
  for (int i = 0; i < 5; ++i) CHECK(ex.grad(x).data<float>()[i] == dwant[i]);
}

TEST_CASE("relu rejects integer input") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("labels", {4}, DType::i32);
  CHECK_THROWS_WITH_AS(relu(x), doctest::Contains("relu: input must be f32 or f64"), Error);
}
