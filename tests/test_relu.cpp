// ReLU: gradient check, a hand-computed case, mask vs output encodings.
#include <doctest/doctest.h>

#include <cstring>
#include <limits>

#include "check/gradcheck.h"
#include "layers/relu.h"
#include "run/executor.h"

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

TEST_CASE("relu f32 kernels give the scalar definition's bits at every length and value") {
  // The f32 kernels run eight elements at a time (SSE2) with a scalar tail: check both against
  // y = x > 0 ? x : +0, mask bit = x > 0, dx = bit ? dy : +0, on lengths around multiples of 8
  // and on NaN, -0, infinities and denormals; in place too.
  const float special[] = {std::numeric_limits<float>::quiet_NaN(),
                           -0.0f,
                           0.0f,
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           1e-42f,
                           -1e-42f};
  Backend& be = cpu_backend();
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 100003}) {
    CAPTURE(n);
    Tensor x = Tensor::empty({n}, DType::f32), dy = Tensor::empty({n}, DType::f32);
    copy_bytes(random_tensor({n}, 5, -1, 1, DType::f32), x);
    copy_bytes(random_tensor({n}, 6, -1, 1, DType::f32), dy);
    for (int64_t i = 0; i < n; i += 3) x.data<float>()[i] = special[(i / 3) % 7];
    Tensor y = Tensor::empty({n}, DType::f32), dx = Tensor::empty({n}, DType::f32);
    Tensor mask = Tensor::empty({(n + 7) / 8}, DType::u8);
    be.relu_forward(x, y, mask);
    be.relu_backward_mask(dy, mask, dx);
    for (int64_t i = 0; i < n; ++i) {
      const float xi = x.data<float>()[i];
      const bool pos = xi > 0.0f;
      const float want_y = pos ? xi : 0.0f, want_dx = pos ? dy.data<float>()[i] : 0.0f;
      CHECK(std::memcmp(&y.data<float>()[i], &want_y, 4) == 0);
      CHECK(std::memcmp(&dx.data<float>()[i], &want_dx, 4) == 0);
      CHECK(((mask.data<uint8_t>()[i / 8] >> (i % 8)) & 1) == int(pos));
    }
    Tensor inplace = clone(x);
    Tensor no_mask;
    be.relu_forward(inplace, inplace, no_mask);
    CHECK(bitwise_equal(inplace, y));
  }
}
