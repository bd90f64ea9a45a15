// Threshold, dropout and add: gradient checks, hand-computed cases, in-place kernels equal to
// out-of-place ones bit for bit, dropout replay, NaN propagation, and error messages.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "check/gradcheck.h"
#include "layers/add.h"
#include "layers/dropout.h"
#include "layers/threshold.h"
#include "run/executor.h"

using namespace frugal;
using namespace frugal::testing;

namespace {
// Values at least 0.1 away from `at` on both sides (no kink inside the difference step).
Tensor away_from(double at, Shape s, uint64_t seed) {
  Tensor t = random_tensor(std::move(s), seed, 0.1, 1.0);
  double* x = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) x[i] = at + (i % 3 == 0 ? -x[i] : x[i]);
  return t;
}

// kernel(x, y) out of place, then kernel(z, z) in place on a copy z of x: same bits.
void check_in_place(const Tensor& x, const std::function<void(const Tensor&, Tensor&)>& kernel) {
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  kernel(x, y);
  Tensor z = clone(x);
  kernel(z, z);
  CHECK(bitwise_equal(y, z));
}

// A bit mask for x: ceil(numel / 8) bytes.
Tensor mask_for(const Tensor& x) {
  return Tensor::empty({(x.numel() + 7) / 8}, DType::u8);
}

double fraction_set(const Tensor& mask, int64_t n) {
  int64_t set = 0;
  for (int64_t i = 0; i < n; ++i) set += (mask.data<uint8_t>()[i / 8] >> (i % 8)) & 1;
  return static_cast<double>(set) / static_cast<double>(n);
}
}  // namespace

TEST_CASE("gradcheck threshold") {
  check_gradients(
      [](std::span<const Value> x) { return std::vector<Value>{threshold(x[0], 0.2, -0.3)}; },
      {away_from(0.2, {2, 3, 4, 5}, 11)});
  // optnet's AlexNet form.
  check_gradients(
      [](std::span<const Value> x) { return std::vector<Value>{threshold(x[0], 0, 1e-6)}; },
      {away_from(0, {3, 7}, 12)});
}

TEST_CASE("threshold hand-computed") {
  ParamStore store;
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {1, 4}, DType::f32, true);
  Value y = threshold(x, 0, 1e-6);
  Executor ex(tape, cpu_backend(), {.keep = {x, y}});
  const float in[4] = {-1, 0, 5e-7f, 3};
  for (int i = 0; i < 4; ++i) ex.input(x).data<float>()[i] = in[i];
  ex.forward();
  const float want[4] = {1e-6f, 1e-6f, 5e-7f, 3};
  for (int i = 0; i < 4; ++i) CHECK(ex.value(y).data<float>()[i] == want[i]);
  Tensor dy = Tensor::empty({1, 4}, DType::f32);
  for (int i = 0; i < 4; ++i) dy.data<float>()[i] = static_cast<float>(i + 1);
  std::pair<Value, Tensor> seed{y, dy};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  const float dwant[4] = {0, 0, 3, 4};
  for (int i = 0; i < 4; ++i) CHECK(ex.grad(x).data<float>()[i] == dwant[i]);
}

TEST_CASE("threshold and masked_scale in place") {
  for (DType t : {DType::f32, DType::f64}) {
    Tensor x = random_tensor({1001}, 5, -1, 1, t);
    Tensor m1 = mask_for(x), m2 = mask_for(x);
    check_in_place(
        x, [&](const Tensor& a, Tensor& b) { cpu_backend().threshold_forward(a, 0.1, -2, b, m1); });
    Tensor y = Tensor::empty(x.shape(), x.dtype());
    cpu_backend().threshold_forward(x, 0.1, -2, y, m2);  // m1 is from the in-place run
    CHECK(bitwise_equal(m1, m2));
    check_in_place(x,
                   [&](const Tensor& a, Tensor& b) { cpu_backend().masked_scale(a, m1, 1.5, b); });
  }
}

TEST_CASE("masked_scale hand-computed") {
  Tensor dy = Tensor::empty({10}, DType::f64), dx = Tensor::empty({10}, DType::f64);
  Tensor mask = Tensor::empty({2}, DType::u8);
  for (int i = 0; i < 10; ++i) dy.data<double>()[i] = i + 1;
  mask.data<uint8_t>()[0] = 0b10000101;  // elements 0, 2, 7
  mask.data<uint8_t>()[1] = 0b10;        // element 9
  cpu_backend().masked_scale(dy, mask, 2.0, dx);
  const double want[10] = {2, 0, 6, 0, 0, 0, 0, 16, 0, 20};
  for (int i = 0; i < 10; ++i) CHECK(dx.data<double>()[i] == want[i]);
}

TEST_CASE("gradcheck dropout") {
  // Training: the mask is fixed by the executor's seed, so finite differences see it too.
  check_gradients([](std::span<const Value> x) { return std::vector<Value>{dropout(x[0], 0.4)}; },
                  {random_tensor({4, 5, 6}, 13)});
  check_gradients([](std::span<const Value> x) { return std::vector<Value>{dropout(x[0], 0.0)}; },
                  {random_tensor({3, 4}, 14)});
}

TEST_CASE("dropout replay") {
  const double p = 0.3;
  Tensor x = random_tensor({100003}, 6, 0.5, 1.0, DType::f32);  // never 0: y = 0 iff dropped
  auto run = [&](uint64_t seed, Tensor& y, Tensor& mask) {
    y = Tensor::empty(x.shape(), x.dtype());
    mask = mask_for(x);
    cpu_backend().dropout_forward(x, p, seed, 3, y, mask);
  };
  Tensor y1, m1, y2, m2, y3, m3;
  run(7, y1, m1);
  run(7, y2, m2);
  run(8, y3, m3);
  CHECK(bitwise_equal(y1, y2));
  CHECK(bitwise_equal(m1, m2));
  CHECK_FALSE(bitwise_equal(m1, m3));
  CHECK(fraction_set(m1, x.numel()) == doctest::Approx(1 - p).epsilon(0.01));
  const float scale = static_cast<float>(1 / (1 - p));
  bool consistent = true;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const bool keep = (m1.data<uint8_t>()[i / 8] >> (i % 8)) & 1;
    consistent &= y1.data<float>()[i] == (keep ? x.data<float>()[i] * scale : 0.0f);
  }
  CHECK(consistent);
  // The mask does not depend on the thread count.
  const int threads = cpu_backend().threads();
  set_cpu_threads(1);
  run(7, y2, m2);
  set_cpu_threads(threads);
  CHECK(bitwise_equal(y1, y2));
  CHECK(bitwise_equal(m1, m2));
}

TEST_CASE("dropout replays through the executor seed") {
  auto forward = [](uint64_t seed) {
    ParamStore store;
    Tape tape(store, DType::f64);
    Value x = tape.input("x", {8, 16}, DType::f64, true);
    Value y = dropout(x, 0.5);
    Executor ex(tape, cpu_backend(), {.seed = seed, .keep = {y}});
    ex.set_input(x, random_tensor({8, 16}, 21, 0.5, 1.0));
    ex.forward();
    return clone(ex.value(y));
  };
  CHECK(bitwise_equal(forward(1), forward(1)));
  CHECK_FALSE(bitwise_equal(forward(1), forward(2)));
}

TEST_CASE("dropout in place and in inference") {
  for (DType t : {DType::f32, DType::f64}) {
    Tensor x = random_tensor({777}, 8, -1, 1, t);
    Tensor mask = mask_for(x);
    check_in_place(x, [&](const Tensor& a, Tensor& b) {
      cpu_backend().dropout_forward(a, 0.25, 4, 5, b, mask);
    });
  }
  ParamStore store;
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {5, 6}, DType::f32);
  Value y = dropout(x, 0.5);
  CHECK(tape.ops().back().op->roles(Mode::inference, cpu_backend()).saved.empty());
  Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {x, y}});
  Tensor in = random_tensor({5, 6}, 9, -1, 1, DType::f32);
  ex.set_input(x, in);
  ex.forward();
  CHECK(bitwise_equal(ex.value(y), in));
}

TEST_CASE("dropout rejects p outside the unit interval") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 3}, DType::f32);
  CHECK_THROWS_WITH_AS(dropout(x, 1.0), doctest::Contains("dropout: p must be in [0, 1), got 1"),
                       Error);
  CHECK_THROWS_WITH_AS(dropout(x, -0.5), doctest::Contains("got -0.5 (x [2,3])"), Error);
}

TEST_CASE("gradcheck add") {
  check_gradients([](std::span<const Value> x) { return std::vector<Value>{add(x[0], x[1])}; },
                  {random_tensor({2, 3, 4}, 15), random_tensor({2, 3, 4}, 16)});
  // Fan-in to one value: add(x, x) = 2x; and x read by two ops.
  check_gradients([](std::span<const Value> x) { return std::vector<Value>{add(x[0], x[0])}; },
                  {random_tensor({3, 5}, 17)});
  check_gradients(
      [](std::span<const Value> x) { return std::vector<Value>{add(add(x[0], x[1]), x[0])}; },
      {random_tensor({6}, 18), random_tensor({6}, 19)});
}

TEST_CASE("add hand-computed") {
  ParamStore store;
  Tape tape(store, DType::f32);
  Value a = tape.input("a", {2}, DType::f32, true);
  Value b = tape.input("b", {2}, DType::f32, true);
  Value y = add(a, b);
  Executor ex(tape, cpu_backend(), {.keep = {a, b, y}});
  ex.input(a).data<float>()[0] = 1, ex.input(a).data<float>()[1] = 2;
  ex.input(b).data<float>()[0] = 10, ex.input(b).data<float>()[1] = 20;
  ex.forward();
  CHECK(ex.value(y).data<float>()[0] == 11);
  CHECK(ex.value(y).data<float>()[1] == 22);
  Tensor dy = Tensor::empty({2}, DType::f32);
  dy.data<float>()[0] = 3, dy.data<float>()[1] = 4;
  std::pair<Value, Tensor> seed{y, dy};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  CHECK(bitwise_equal(ex.grad(a), dy));
  CHECK(bitwise_equal(ex.grad(b), dy));
}

TEST_CASE("add in place") {
  for (DType t : {DType::f32, DType::f64}) {
    Tensor a = random_tensor({513}, 10, -1, 1, t), b = random_tensor({513}, 11, -1, 1, t);
    check_in_place(a, [&](const Tensor& x, Tensor& y) { cpu_backend().add(x, b, y); });
    check_in_place(b, [&](const Tensor& x, Tensor& y) { cpu_backend().add(a, x, y); });
  }
}

TEST_CASE("add names both shapes on mismatch") {
  ParamStore store;
  Tape tape(store);
  Value a = tape.input("a", {2, 3}, DType::f32);
  Value b = tape.input("b", {2, 4}, DType::f32);
  Value c = tape.input("c", {2, 3}, DType::f64);
  CHECK_THROWS_WITH_AS(add(a, b),
                       doctest::Contains("add: shapes must match, got a [2,3] f32 and b [2,4] f32"),
                       Error);
  CHECK_THROWS_WITH_AS(add(a, c), doctest::Contains("a [2,3] f32 and b [2,3] f64"), Error);
}

namespace {
void set_element(Tensor& t, int64_t i, double v) {
  if (t.dtype() == DType::f32)
    t.data<float>()[i] = static_cast<float>(v);
  else
    t.data<double>()[i] = v;
}
}  // namespace

TEST_CASE("threshold and dropout keep NaN as PyTorch does and leave finite results unchanged") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Backend& be = cpu_backend();
  for (DType t : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(t));
    // threshold(x, 0.5, -3): x unless x <= 0.5 (torch.threshold), so NaN passes; its mask bit
    // (x > 0.5) is clear, so its gradient is 0.
    Tensor x = Tensor::empty({5}, t);
    const double in[5] = {nan, 0.5, 1, -inf, inf}, want[5] = {nan, -3, 1, -3, inf};
    for (int i = 0; i < 5; ++i) set_element(x, i, in[i]);
    Tensor y = Tensor::empty({5}, t), mask = mask_for(x);
    be.threshold_forward(x, 0.5, -3, y, mask);
    CHECK(mask.data<uint8_t>()[0] == 0b10100);
    CHECK(std::isnan(element_as_double(y, 0)));
    for (int i = 1; i < 5; ++i) CHECK(element_as_double(y, i) == want[i]);

    // dropout: PyTorch multiplies by the 0/1 mask, so a dropped NaN or inf gives NaN; a dropped
    // finite x still gives +0 bit for bit, a kept one x * 1/(1-p).
    const int64_t n = 200;
    Tensor d = random_tensor({n}, 21, -1, 1, t);
    for (int64_t i = 0; i < n; i += 4) set_element(d, i, i % 8 ? inf : nan);
    Tensor dy = Tensor::empty({n}, t), dm = mask_for(d);
    be.dropout_forward(d, 0.5, 3, 4, dy, dm);
    int dropped_bad = 0, kept_bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      CAPTURE(i);
      const bool keep = (dm.data<uint8_t>()[i / 8] >> (i % 8)) & 1;
      const double xi = element_as_double(d, i), yi = element_as_double(dy, i);
      if (!std::isfinite(xi)) {
        (keep ? kept_bad : dropped_bad)++;
        CHECK(std::isnan(yi) == (std::isnan(xi) || !keep));
        if (keep && std::isinf(xi)) CHECK(yi == xi);
      } else if (keep) {
        CHECK(yi == (t == DType::f32 ? double(static_cast<float>(xi) * 2.0f) : xi * 2.0));
      } else {
        CHECK((yi == 0 && !std::signbit(yi)));
      }
    }
    CHECK(dropped_bad > 0);
    CHECK(kept_bad > 0);
    // In place gives the same bits, NaN included.
    check_in_place(d, [&](const Tensor& a, Tensor& b) { be.dropout_forward(a, 0.5, 3, 4, b, dm); });
  }
}
