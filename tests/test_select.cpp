// Comparisons and selection (layers/select.h): finite-difference gradients in f64 of where()
// over broadcast patterns, with a fixed condition and with one compared from an activation;
// values and gradients by hand, infinities, NaNs and signed zeros kept bit for bit; planned ==
// baseline bitwise; no gradient through a comparison; errors that name every shape.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/activation.h"
#include "layers/binary.h"
#include "layers/constant.h"
#include "layers/conv2d.h"
#include "layers/select.h"
#include "layers/softmax.h"
#include "run/executor.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// A fixed condition of 0s and 1s of `shape`, from `seed`.
Value fixed_mask(Tape& tape, const Shape& shape, uint64_t seed, DType dtype) {
  Tensor m = random_tensor(shape, seed, 0, 2, dtype);
  for (int64_t i = 0; i < m.numel(); ++i) {
    if (dtype == DType::f64)
      m.data<double>()[i] = m.data<double>()[i] > 1 ? 1 : 0;
    else
      m.data<float>()[i] = m.data<float>()[i] > 1 ? 1.0f : 0.0f;
  }
  return constant(tape, std::move(m));
}

}  // namespace

TEST_CASE("select: finite-difference gradients in f64, broadcast every way") {
  // (condition, a, b): one shape; a mask over positions against per-channel values; a scalar
  // branch (masked_fill's value); the condition the widest; rows against a row.
  const std::vector<std::vector<Shape>> patterns = {
      {{2, 3, 4, 5}, {2, 3, 4, 5}, {2, 3, 4, 5}},
      {{1, 1, 4, 5}, {2, 3, 4, 5}, {3, 1, 1}},
      {{2, 3, 4, 5}, {1}, {2, 3, 4, 5}},
      {{2, 3, 4, 5}, {2, 3, 1, 1}, {5}},
      {{4, 1}, {4, 6}, {6}},
  };
  uint64_t seed = 10;
  for (const std::vector<Shape>& s : patterns) {
    CAPTURE(s[0]);
    CAPTURE(s[1]);
    CAPTURE(s[2]);
    ++seed;
    check_gradients(
        [&](auto x) {
          Value c = fixed_mask(x[0].tape(), s[0], seed, DType::f64);
          return std::vector<Value>{select(c, x[0], x[1])};
        },
        {random_tensor(s[1], seed + 100), random_tensor(s[2], seed + 200)});
  }
  // torch.where(x > 0.25, x, 0.1 * x), the condition compared from the activation itself
  // (kink_free keeps every element 0.1 away from 0, none near 0.25 within the step).
  check_gradients(
      [](auto x) {
        Tape& t = x[0].tape();
        Tensor quarter = Tensor::zeros(Shape{1}, DType::f64);
        quarter.data<double>()[0] = 0.25;
        Tensor tenth = Tensor::zeros(Shape{1}, DType::f64);
        tenth.data<double>()[0] = 0.1;
        Value c = compare(BinaryKind::greater, x[0], constant(t, quarter));
        return std::vector<Value>{select(c, x[0], mul(x[0], constant(t, tenth)))};
      },
      {kink_free({2, 3, 4, 5}, 7)});
}

TEST_CASE("select: values and gradients by hand, every element exactly a's or b's") {
  ParamStore store;
  Tape tape(store, DType::f32);
  Value a = tape.input("a", {6}, DType::f32, true);
  Value b = tape.input("b", {1}, DType::f32, true);
  Value c = tape.input("c", {6}, DType::f32);
  Value y = select(c, a, b);
  Value gt = compare(BinaryKind::greater, a, b);
  Value ne = logical_not(compare(BinaryKind::equal, a, b));
  Value either = compare(BinaryKind::logical_or, gt, c),
        one = compare(BinaryKind::logical_xor, gt, c);
  Executor ex(tape, cpu_backend(), {.keep = {a, b, y, gt, ne, either, one}});
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float as[] = {-inf, nan, -0.0f, 2.0f, inf, 0.0f}, bs[] = {-0.0f};
  const float cs[] = {1, 1, 1, 0, 1, 0};
  Tensor av = Tensor::empty({6}, DType::f32), bv = Tensor::empty({1}, DType::f32);
  Tensor cv = Tensor::empty({6}, DType::f32);
  std::memcpy(av.raw(), as, sizeof as);
  std::memcpy(bv.raw(), bs, sizeof bs);
  std::memcpy(cv.raw(), cs, sizeof cs);
  ex.set_input(a, av);
  ex.set_input(b, bv);
  ex.set_input(c, cv);
  ex.forward();
  const float* yv = ex.value(y).data<float>();
  const float want[] = {-inf, nan, -0.0f, -0.0f, inf, -0.0f};
  for (int i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(std::memcmp(&yv[i], &want[i], sizeof(float)) == 0);
  }
  // a > b (-0 and 0 equal, NaN compares false) and its complement's complement.
  const float gts[] = {0, 0, 0, 1, 1, 0}, nes[] = {1, 1, 0, 1, 1, 0};
  // gt or c, gt xor c.
  const float ors[] = {1, 1, 1, 1, 1, 0}, xors[] = {1, 1, 1, 1, 0, 0};
  for (int i = 0; i < 6; ++i) {
    CHECK(ex.value(gt).data<float>()[i] == gts[i]);
    CHECK(ex.value(ne).data<float>()[i] == nes[i]);
    CHECK(ex.value(either).data<float>()[i] == ors[i]);
    CHECK(ex.value(one).data<float>()[i] == xors[i]);
  }
  Tensor dy = Tensor::empty({6}, DType::f32);
  const float dys[] = {1, 2, 3, 4, 5, 6};
  std::memcpy(dy.raw(), dys, sizeof dys);
  std::pair<Value, Tensor> seed{y, dy};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  const float* da = ex.grad(a).data<float>();
  const float das[] = {1, 2, 3, 0, 5, 0};
  for (int i = 0; i < 6; ++i) CHECK(da[i] == das[i]);
  CHECK(ex.grad(b).data<float>()[0] == 10);  // 4 + 6, where c is 0
}

TEST_CASE("select: no gradient through a comparison, planned equals baseline bitwise") {
  ParamStore store;
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {2, 3}, DType::f32, true);
  Value m = compare(BinaryKind::less_equal, x, x);
  CHECK(!tape.value(m.id()).requires_grad);
  CHECK(!tape.value(logical_not(m).id()).requires_grad);
  CHECK(tape.value(select(m, x, x).id()).requires_grad);
  // A leaky activation written with where, attention-like scores filled with -inf by a fixed
  // causal mask before a softmax, and a choice between two activations by a compared mask.
  check_planned_equals_baseline([](Value v) {
    Tape& t = v.tape();
    Value h = conv2d(v, {.out = 4, .kernel = 3, .pad = 1});
    Tensor zero = Tensor::zeros(Shape{1}, DType::f32), tenth = Tensor::zeros(Shape{1}, DType::f32);
    tenth.data<float>()[0] = 0.1f;
    h = select(compare(BinaryKind::greater, h, constant(t, zero)), h, mul(h, constant(t, tenth)));
    Tensor causal = Tensor::zeros(Shape{6, 6}, DType::f32);
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 6; ++j) causal.data<float>()[i * 6 + j] = j > i ? 1.0f : 0.0f;
    Tensor minus_inf = Tensor::zeros(Shape{1}, DType::f32);
    minus_inf.data<float>()[0] = -std::numeric_limits<float>::infinity();
    Value s = softmax(select(constant(t, causal), constant(t, minus_inf), h), -1);
    Value g = conv2d(v, {.out = 4, .kernel = 1});
    return select(compare(BinaryKind::greater_equal, s, g), s, g);
  });
}

TEST_CASE("select: bad input names every shape") {
  ParamStore store;
  Tape tape(store);
  Value c = tape.input("c", {2, 3}, DType::f32);
  Value a = tape.input("a", {4, 3}, DType::f32);
  Value b = tape.input("b", {3}, DType::f32);
  CHECK_THROWS_WITH_AS(select(c, a, b),
                       doctest::Contains("where: condition [2,3], a [4,3], b [3]: shapes"), Error);
  CHECK_THROWS_WITH_AS(compare(BinaryKind::mul, a, b),
                       doctest::Contains("compare: 'mul' is not a comparison"), Error);
  Value labels = tape.input("labels", {3}, DType::i32);
  CHECK_THROWS_WITH_AS(compare(BinaryKind::less, labels, labels),
                       doctest::Contains("less: inputs must be both f32 or both f64"), Error);
}
