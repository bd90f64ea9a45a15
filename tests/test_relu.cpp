// ReLU: gradient check, a hand-computed case, mask vs output encodings, NaN kept as PyTorch;
// and the gradient check's own checks at ReLU's kink, its sample of a tensor's elements.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "check/gradcheck.h"
#include "layers/relu.h"
#include "run/executor.h"

using namespace frugal;
using namespace frugal::testing;

TEST_CASE("gradcheck relu") {
  check_gradients([](std::span<const Value> x) { return std::vector<Value>{relu(x[0])}; },
                  {kink_free({2, 3, 4, 5}, 3)});
  // Backward reading the output instead of the mask.
  check_gradients(
      [](std::span<const Value> x) {
        Value y = relu(x[0]);
        op_of<ReluOp>(y).saves = ReluOp::Saves::output;
        return std::vector<Value>{y};
      },
      {kink_free({7, 3}, 4)});
}

// The gradient check itself must fail where analytic and numeric differ: at ReLU's kink, x = 0,
// backward gives 0 and central differences 1/2. With max_elements it still compares the first
// and the last element, and one in every stretch between.
TEST_CASE("gradcheck finds a wrong gradient, sampling elements or not") {
  auto build = [](std::span<const Value> x) { return std::vector<Value>{relu(x[0])}; };
  auto kink_at = [](int64_t at) {
    Tensor t = kink_free({1000}, 5);
    t.data<double>()[at] = 0;
    return t;
  };
  for (int64_t most : {int64_t{0}, int64_t{10}, int64_t{2}})
    for (int64_t at : {int64_t{0}, int64_t{999}}) {
      CAPTURE(most);
      CAPTURE(at);
      const std::string where = "input 0 element " + std::to_string(at);
      CHECK_THROWS_WITH_AS(check_gradients(build, {kink_at(at)}, {.max_elements = most}),
                           doctest::Contains(where.c_str()), Error);
    }
  // Kinks at every element from 1 to 998 are found by whichever the sample lands on; a kink-free
  // input passes sampled; a sample without both ends is refused.
  Tensor zeros = kink_free({1000}, 6);
  for (int64_t i = 1; i < 999; ++i) zeros.data<double>()[i] = 0;
  CHECK_THROWS_AS(check_gradients(build, {zeros}, {.max_elements = 10}), Error);
  CHECK_NOTHROW(check_gradients(build, {kink_free({1000}, 7)}, {.max_elements = 10}));
  CHECK_THROWS_WITH_AS(check_gradients(build, {kink_free({1000}, 7)}, {.max_elements = 1}),
                       doctest::Contains("max_elements 1"), Error);
}

// The sample itself: min(n, most) elements, increasing, both ends, one in each stretch.
TEST_CASE("gradcheck's sample of a large tensor's elements") {
  for (int64_t most : {0, 2, 3, 10, 96})
    for (int64_t n : {int64_t{1}, most - 1, most, most + 1, int64_t{1000}}) {
      if (n < 1) continue;
      CAPTURE(most);
      CAPTURE(n);
      const std::vector<int64_t> e = gradcheck_sample(n, most, 3);
      REQUIRE(static_cast<int64_t>(e.size()) == (most == 0 ? n : std::min(n, most)));
      CHECK(e.front() == 0);
      CHECK(e.back() == n - 1);
      for (size_t k = 1; k < e.size(); ++k) CHECK(e[k - 1] < e[k]);
      if (most == 0 || n <= most) continue;
      for (int64_t k = 0; k < most - 2; ++k) {  // element k + 1 lies in stretch k of 1 .. n-2
        const int64_t at = e[static_cast<size_t>(k + 1)];
        CHECK(at >= 1 + k * (n - 2) / (most - 2));
        CHECK(at < 1 + (k + 1) * (n - 2) / (most - 2));
      }
    }
  // Another seed places the middle elements elsewhere.
  CHECK(gradcheck_sample(1000, 10, 3) != gradcheck_sample(1000, 10, 4));
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
  // y = x <= 0 ? +0 : x (NaN kept), mask bit = x > 0, dx = bit ? dy : +0, on lengths around
  // multiples of 8 and on NaN, -0, infinities and denormals; in place too.
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
      const float want_y = xi <= 0.0f ? 0.0f : xi, want_dx = pos ? dy.data<float>()[i] : 0.0f;
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

TEST_CASE("relu keeps NaN as PyTorch does and leaves finite results and masks unchanged") {
  // The issue: relu([NaN, -1, 2]) gave [0, 0, 2], so one NaN pixel made a finite loss. Now
  // y = [NaN, +0, 2] as torch.relu; -0 and negatives still give +0, infinities as max(x, 0).
  // The mask bit (x > 0) stays clear at NaN, so the gradient there is 0, from the mask and from
  // the output alike.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const double in[6] = {nan, -1, 2, -0.0, inf, -inf};
  const double want[6] = {nan, 0, 2, 0, inf, 0};
  const double dwant[6] = {0, 0, 3, 0, 5, 0};
  Backend& be = cpu_backend();
  for (DType t : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(t));
    Tensor x = Tensor::empty({6}, t), dy = Tensor::empty({6}, t);
    for (int i = 0; i < 6; ++i) {
      if (t == DType::f32) {
        x.data<float>()[i] = static_cast<float>(in[i]);
        dy.data<float>()[i] = static_cast<float>(i + 1);
      } else {
        x.data<double>()[i] = in[i];
        dy.data<double>()[i] = i + 1;
      }
    }
    Tensor y = Tensor::empty({6}, t), dx = Tensor::empty({6}, t), dxo = Tensor::empty({6}, t);
    Tensor mask = Tensor::empty({1}, DType::u8);
    be.relu_forward(x, y, mask);
    be.relu_backward_mask(dy, mask, dx);
    be.relu_backward_output(dy, y, dxo);
    CHECK(mask.data<uint8_t>()[0] == 0b010100);  // 2 and inf
    for (int i = 0; i < 6; ++i) {
      CAPTURE(i);
      const double yi = element_as_double(y, i);
      CHECK(std::isnan(yi) == std::isnan(want[i]));
      if (!std::isnan(want[i])) CHECK((yi == want[i] && !std::signbit(yi)));
      CHECK(element_as_double(dx, i) == dwant[i]);
      CHECK(element_as_double(dxo, i) == dwant[i]);
    }
  }
  // The issue's example through a recorded model.
  ParamStore store;
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {3}, DType::f32);
  Value y = relu(x);
  Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {y}});
  const float issue[3] = {std::numeric_limits<float>::quiet_NaN(), -1, 2};
  for (int i = 0; i < 3; ++i) ex.input(x).data<float>()[i] = issue[i];
  ex.forward();
  CHECK(std::isnan(ex.value(y).data<float>()[0]));
  CHECK(ex.value(y).data<float>()[1] == 0);
  CHECK(ex.value(y).data<float>()[2] == 2);
}
