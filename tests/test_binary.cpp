// Broadcast Mul, Sub, Div, Add, maximum and minimum (and the kernels' masks and comparisons,
// tests/test_select.cpp for their op): finite-difference gradients in f64 for every kind over every
// broadcast pattern a CNN uses, values by hand, in place where the roles allow, planned ==
// baseline bitwise on a squeeze-and-excitation block, and errors that name both shapes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/activation.h"
#include "layers/avgpool2d.h"
#include "layers/binary.h"
#include "layers/conv2d.h"
#include "layers/relu.h"
#include "run/executor.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

constexpr BinaryKind kAll[] = {BinaryKind::add, BinaryKind::sub,     BinaryKind::mul,
                               BinaryKind::div, BinaryKind::maximum, BinaryKind::minimum,
                               BinaryKind::pow};

// (a, b) shapes: one shape; SE's (N,C,1,1) on either side; per-channel (C,1,1); a scalar;
// rows against a row (N,F) and (F); both broadcast ((N,1,H,1) against (1,C,1,W)); a bias over
// leading axes ((N,L,C) against (C), a position embedding (1,L,C), on either side); a broadcast
// inside ((C,1,W) against (N,C,H,W)).
const std::vector<std::pair<Shape, Shape>> kPatterns = {
    {{2, 3, 4, 5}, {2, 3, 4, 5}},
    {{2, 3, 4, 5}, {2, 3, 1, 1}},
    {{2, 3, 1, 1}, {2, 3, 4, 5}},
    {{2, 3, 4, 5}, {3, 1, 1}},
    {{2, 3, 4, 5}, {1}},
    {{3, 4}, {4}},
    {{2, 1, 3, 1}, {1, 3, 1, 4}},
    {{2, 3, 4, 5}, {5}},
    {{5}, {2, 3, 4, 5}},
    {{2, 3, 4, 5}, {1, 3, 4, 5}},
    {{3, 4, 5}, {2, 3, 4, 5}},
    {{2, 3, 4, 5}, {3, 1, 5}},
    // Past rank 4, axes read alike merged: Swin's mask over windows and heads, (B, nW, heads,
    // L, L) against (1, nW, 1, L, L); six axes that merge to four.
    {{2, 4, 3, 2, 5}, {1, 4, 1, 2, 5}},
    {{2, 1, 3, 2, 2, 2}, {2, 2, 1, 2, 2, 2}},
};

}  // namespace

TEST_CASE("binary ops: finite-difference gradients in f64 over every broadcast pattern") {
  for (BinaryKind k : kAll)
    for (const auto& [sa, sb] : kPatterns) {
      CAPTURE(std::string(binary_name(k)));
      CAPTURE(sa);
      CAPTURE(sb);
      // Divisors kept away from zero; pow's bases positive (any exponent defined there).
      Tensor b = k == BinaryKind::div ? random_tensor(sb, 2, 0.5, 1.5) : random_tensor(sb, 2);
      Tensor a = k == BinaryKind::pow ? random_tensor(sa, 1, 0.5, 1.5) : random_tensor(sa, 1);
      check_gradients([k](auto x) { return std::vector<Value>{binary(k, x[0], x[1])}; }, {a, b});
    }
  // x * x: both operands one value, its gradient the sum of the two contributions.
  check_gradients([](auto x) { return std::vector<Value>{mul(x[0], x[0])}; },
                  {random_tensor({2, 3}, 3)});
}

TEST_CASE("binary ops: the CPU's row and broadcast loops give the shared formulas' bits") {
  // The CUDA kernels evaluate core/broadcast.h element by element; the CPU's fast paths (rows,
  // operands of the output's shape, trailing-axis broadcasts, biases over leading axes) must
  // give the same bits, on the threads too (a bias of 600 over 4 x 10 rows: blocks of 256).
  std::vector<std::pair<Shape, Shape>> patterns = kPatterns;
  patterns.push_back({{4, 10, 600}, {600}});
  patterns.push_back({{1, 10, 600}, {4, 10, 600}});
  // Every kind, the masks and comparisons of layers/select.h too: operands on a grid of
  // quarters, so that comparisons find equal elements, and masks of 0s and 1s.
  constexpr BinaryKind kEvery[] = {
      BinaryKind::add,         BinaryKind::sub,     BinaryKind::mul,
      BinaryKind::div,         BinaryKind::mask,    BinaryKind::unmask,
      BinaryKind::greater,     BinaryKind::less,    BinaryKind::greater_equal,
      BinaryKind::less_equal,  BinaryKind::equal,   BinaryKind::logical_or,
      BinaryKind::logical_xor, BinaryKind::maximum, BinaryKind::minimum,
      BinaryKind::pow};
  auto quarters = [](Tensor t, bool mask) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      float& v = t.data<float>()[i];
      v = mask ? (v > 1 ? 1.0f : 0.0f) : std::round(v * 4) / 4;
    }
    return t;
  };
  for (BinaryKind k : kEvery)
    for (const auto& [sa, sb] : patterns) {
      CAPTURE(std::string(binary_name(k)));
      CAPTURE(sa);
      CAPTURE(sb);
      Shape ys;
      const Broadcast g = broadcast_of(sa, sb, &ys);
      const bool masks = k == BinaryKind::mask || k == BinaryKind::unmask;
      Tensor a = quarters(random_tensor(sa, 3, 0.5, 1.5, DType::f32), false);
      Tensor b = quarters(random_tensor(sb, 4, 0.5, 1.5, DType::f32), masks);
      Tensor dy = random_tensor(ys, 5, -1, 1, DType::f32);
      Tensor y = Tensor::empty(ys, DType::f32), da = Tensor::empty(sa, DType::f32);
      Tensor db = Tensor::empty(sb, DType::f32);
      cpu_backend().binary_forward(k, g, a, b, y);
      cpu_backend().binary_backward(k, g, a, b, dy, da, db);
      const float *av = a.data<float>(), *bv = b.data<float>(), *dyv = dy.data<float>();
      for (int64_t i = 0; i < g.numel(); ++i) {
        const float want = binary_math::forward(k, av[binary_math::operand_index(g, g.a, i)],
                                                bv[binary_math::operand_index(g, g.b, i)]);
        REQUIRE(std::memcmp(&y.data<float>()[i], &want, sizeof want) == 0);
      }
      for (int which : {0, 1}) {
        const Tensor& d = which == 0 ? da : db;
        for (int64_t e = 0; e < d.numel(); ++e) {
          const float want = binary_math::reduce_grad(k, g, which, e, av, bv, dyv);
          REQUIRE(std::memcmp(&d.data<float>()[e], &want, sizeof want) == 0);
        }
      }
    }
}

namespace {

// y = a op b in f64 for operands of these shapes and values, then its backward from dy: y, da
// and db.
struct ByHand {
  std::vector<double> y, da, db;
};
ByHand by_hand(BinaryKind k, const Shape& sa, const std::vector<double>& as, const Shape& sb,
               const std::vector<double>& bs, const std::vector<double>& dys) {
  ParamStore store;
  Tape tape(store, DType::f64);
  Value a = tape.input("a", sa, DType::f64, true);
  Value b = tape.input("b", sb, DType::f64, true);
  Value y = binary(k, a, b);
  Executor ex(tape, cpu_backend(), {.keep = {a, b, y}});
  auto tensor = [](const Shape& s, const std::vector<double>& v) {
    Tensor t = Tensor::empty(s, DType::f64);
    REQUIRE(static_cast<int64_t>(v.size()) == t.numel());
    std::memcpy(t.raw(), v.data(), t.bytes());
    return t;
  };
  ex.set_input(a, tensor(sa, as));
  ex.set_input(b, tensor(sb, bs));
  ex.forward();
  std::pair<Value, Tensor> seed{y, tensor(y.shape(), dys)};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  auto values = [](const Tensor& t) {
    return std::vector<double>(t.data<double>(), t.data<double>() + t.numel());
  };
  return {values(ex.value(y)), values(ex.grad(a)), values(ex.grad(b))};
}

}  // namespace

TEST_CASE("binary ops: values and gradients by hand") {
  // (1, 2, 1, 2) / (2, 1, 1): each pair of a divided by its own element of b.
  const ByHand r =
      by_hand(BinaryKind::div, {1, 2, 1, 2}, {1, 2, 3, 4}, {2, 1, 1}, {2, 4}, {1, 1, 1, 1});
  CHECK(r.y == std::vector<double>{0.5, 1, 0.75, 1});
  CHECK(r.da == std::vector<double>{0.5, 0.5, 0.25, 0.25});
  // d/db of (a0 + a1) / b0 = -(1 + 2) / 4; of (a2 + a3) / b1 = -(3 + 4) / 16.
  CHECK(r.db == std::vector<double>{-0.75, -7.0 / 16});
}

// torch.pow of two tensors, as torch 1.13 gives it in float64: at a = 0 the gradients are 0
// where b >= 0 (b = 0: y = 1), infinite where b < 0.
TEST_CASE("binary ops: pow by hand, zeros included") {
  const ByHand r =
      by_hand(BinaryKind::pow, {5}, {2, 0, 0, 4, 0}, {5}, {3, 2, 0, -0.5, -1}, {1, 1, 1, 1, 1});
  CHECK(r.y == std::vector<double>{8, 0, 1, 0.5, INFINITY});
  CHECK(r.da == std::vector<double>{12, 0, 0, -0.0625, -INFINITY});
  CHECK(r.db[0] == doctest::Approx(8 * std::log(2.0)).epsilon(1e-15));
  CHECK(r.db[1] == 0);
  CHECK(r.db[2] == 0);
  CHECK(r.db[3] == doctest::Approx(0.5 * std::log(4.0)).epsilon(1e-15));
  CHECK(r.db[4] == -INFINITY);
  // GeM's learned exponent: one p for every element, its gradient summed over them.
  const ByHand gem = by_hand(BinaryKind::pow, {2, 2}, {1, 2, 3, 4}, {1}, {2}, {1, 1, 1, 1});
  CHECK(gem.y == std::vector<double>{1, 4, 9, 16});
  CHECK(gem.da == std::vector<double>{2, 4, 6, 8});
  CHECK(gem.db[0] ==
        doctest::Approx(4 * std::log(2.0) + 9 * std::log(3.0) + 16 * std::log(4.0)).epsilon(1e-14));
}

// torch.maximum and torch.minimum: the extreme, NaN where either operand is; the gradient to
// the extreme operand, half to each at a tie (as torch.maximum's backward), summed over a
// broadcast operand's copies.
TEST_CASE("binary ops: maximum and minimum by hand, ties and NaN") {
  for (BinaryKind k : {BinaryKind::maximum, BinaryKind::minimum}) {
    CAPTURE(std::string(binary_name(k)));
    const bool max = k == BinaryKind::maximum;
    const ByHand r = by_hand(k, {1, 4}, {1, 2, 3, NAN}, {1}, {2}, {1, 10, 100, 1000});
    CHECK(r.y[0] == (max ? 2 : 1));
    CHECK(r.y[1] == 2);
    CHECK(r.y[2] == (max ? 3 : 2));
    CHECK(std::isnan(r.y[3]));
    // a: all where it is the extreme, half of the tie, none where b is; at the NaN both
    // operands get dy, as torch.maximum's backward gives it.
    CHECK(r.da == std::vector<double>{max ? 0.0 : 1.0, 5, max ? 100.0 : 0.0, 1000});
    // b: the element it is the extreme of, the other half of the tie, the NaN's dy.
    CHECK(r.db == std::vector<double>{max ? 1.0 + 5 + 1000 : 5.0 + 100 + 1000});
  }
}

TEST_CASE("binary ops: in place where the roles allow, planned equals baseline bitwise") {
  // Squeeze and excitation, x * sigmoid(conv(pool(x))) with the scale on either side, then a
  // difference and a quotient by a positive per-channel divisor (1 + s^2).
  for (bool scale_first : {false, true})
    check_planned_equals_baseline([scale_first](Value x) {
      Value h = conv2d(x, {.out = 6, .kernel = 3, .pad = 1});
      Value s = avg_pool2d(h, {.kernel = 6});
      s = sigmoid(conv2d(s, {.out = 6, .kernel = 1}));
      Value y = scale_first ? mul(s, h) : mul(h, s);
      y = sub(y, conv2d(x, {.out = 6, .kernel = 1}));
      Tape& t = x.tape();
      Value d = t.param("d", {6, 1, 1}, Init::normal(1));
      Value one = t.param("one", {1}, Init::ones(), false);
      return div(y, binary(BinaryKind::add, one, mul(d, d)));
    });
  // In planned training, sub's output takes its first operand's bytes and its gradient dy's.
  ParamStore store(1);
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {2, 3, 4, 4}, DType::f32, true);
  Value h = conv2d(x, {.out = 3, .kernel = 1});
  Value y = sub(h, tape.param("c", {3, 1, 1}, Init::normal(1)));
  Value z = conv2d(y, {.out = 2, .kernel = 1});
  Executor ex(tape, cpu_backend(),
              {.memory = MemoryMode::planned, .keep = {z}, .optimizer = OptimizerConfig{}});
  const Liveness& live = ex.liveness();
  CHECK(live.buffers[static_cast<size_t>(live.value_buffer[y.id()])].alias_of ==
        live.value_buffer[h.id()]);
  CHECK(live.buffers[static_cast<size_t>(live.grad_buffer[h.id()])].alias_of ==
        live.grad_buffer[y.id()]);
}

TEST_CASE("binary ops: bad input names the op and both shapes") {
  ParamStore store;
  Tape tape(store);
  Value a = tape.input("a", {2, 3, 4, 5}, DType::f32);
  Value b = tape.input("b", {2, 4, 1, 1}, DType::f32);
  CHECK_THROWS_WITH_AS(mul(a, b),
                       doctest::Contains("mul: shapes [2,3,4,5] and [2,4,1,1] do not broadcast "
                                         "(axis -3: 3 against 4)"),
                       Error);
  Value five = tape.input("five", {1, 2, 3, 4, 5}, DType::f32);
  CHECK(div(five, a).shape() == Shape{1, 2, 3, 4, 5});  // one axis, once merged
  Value odd = tape.input("odd", {2, 1, 2, 1, 2}, DType::f32);
  Value even = tape.input("even", {1, 2, 1, 2, 1}, DType::f32);
  CHECK_THROWS_WITH_AS(
      binary(BinaryKind::add, odd, even),
      doctest::Contains("add: broadcast of [2,1,2,1,2] and [1,2,1,2,1]: more than four axes"),
      Error);
  Value labels = tape.input("labels", {2}, DType::i32);
  CHECK_THROWS_WITH_AS(sub(labels, labels),
                       doctest::Contains("sub: inputs must be both f32 or both f64, got i32"),
                       Error);
}

// A product or quotient by a constant (a weight that is not trained: attention's 1/sqrt(d), a
// fixed gain) reads only the constant in backward, so the activation it scales may die after
// forward: a ReLU before it keeps a 1-bit mask instead of its output. A trained factor keeps
// it. Gradients in f64 against finite differences; planned == baseline bitwise.
TEST_CASE("binary ops: a product by a constant keeps the constant, not the activation") {
  for (BinaryKind k : {BinaryKind::mul, BinaryKind::div}) {
    CAPTURE(std::string(binary_name(k)));
    auto scaled = [k](Value v, bool trained) {
      Value c = v.tape().param("c", Shape{4, 1, 1}, Init::constant(1.25), trained);
      return binary(k, relu(v), c);
    };
    check_gradients(
        [&](auto x) {
          return std::vector<Value>{scaled(conv2d(x[0], {.out = 4, .kernel = 3}), false)};
        },
        {random_tensor({2, 3, 6, 6}, 8)});
    check_planned_equals_baseline([&](Value v) { return scaled(v, false); });
    for (bool trained : {false, true}) {
      CAPTURE(trained);
      ParamStore store(1);
      Tape tape(store, DType::f32);
      Value x = tape.input("x", {8, 3, 16, 16}, DType::f32, true);
      Value r = relu(conv2d(x, {.out = 4, .kernel = 3, .pad = 1}));
      Value c = tape.param("c", Shape{4, 1, 1}, Init::constant(1.25), trained);
      Value y = conv2d(binary(k, r, c), {.out = 2, .kernel = 3});
      Executor ex(
          tape, cpu_backend(),
          {.memory = MemoryMode::planned, .keep = {y}, .optimizer = OptimizerConfig{.lr = 0.1}});
      const Liveness& live = ex.liveness();
      const int b = live.value_buffer[r.id()];
      // Dies in forward (its 1-bit mask kept) where nothing wants c's gradient.
      CHECK((live.buffers[static_cast<size_t>(b)].last < live.ops) == !trained);
    }
  }
}
