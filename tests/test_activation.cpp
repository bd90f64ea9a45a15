// Sigmoid, Tanh, SiLU, GELU, HardSigmoid, HardSwish, ReLU6, Abs, ELU, SELU, Softplus, Softsign,
// Exp, Neg, Sign, Sin, Cos, Atan (and Log and Reciprocal on their domains): finite-difference
// gradient checks in f64 (piecewise ones away from their kinks), values by hand and at the kinks,
// NaN kept, in-place roles where backward allows them, and planned == baseline bitwise.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "core/activation.h"
#include "core/backend.h"
#include "layers/activation.h"
#include "layers/conv2d.h"
#include "run/executor.h"
#include "tests/tape_values.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// Those defined on all of [-5, 8) (log and reciprocal are checked on their domains).
constexpr Activation kAll[] = {
    Activation::sigmoid,   Activation::tanh,     Activation::silu,        Activation::gelu,
    Activation::gelu_tanh, Activation::erf,      Activation::hardsigmoid, Activation::hardswish,
    Activation::relu6,     Activation::abs,      Activation::elu,         Activation::selu,
    Activation::softplus,  Activation::softsign, Activation::exp,         Activation::neg,
    Activation::sign,      Activation::sin,      Activation::cos,         Activation::atan,
    Activation::floor,     Activation::ceil,     Activation::round};

// f64 inputs in [-5, 8) at least 0.05 from every kink (-3, 0, 3, 6).
Tensor away_from_kinks(Shape shape, uint64_t seed) {
  Tensor t = random_tensor(shape, seed, -5, 8);
  double* x = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i)
    for (double k : {-3.0, 0.0, 3.0, 6.0})
      if (std::abs(x[i] - k) < 0.05) x[i] = k + (x[i] < k ? -0.05 : 0.05);
  return t;
}

// y = f(x) and dx for dy = 1 at the given points, through the op on the CPU (f64).
std::pair<std::vector<double>, std::vector<double>> run(Activation a,
                                                        const std::vector<double>& xs) {
  return values_and_grads([a](Value x) { return activation(x, a); }, xs);
}

}  // namespace

TEST_CASE("activations: finite-difference gradients in f64") {
  for (Activation a : kAll) {
    CAPTURE(activation_name(a));
    check_gradients(
        [a](std::span<const Value> in) { return std::vector<Value>{activation(in[0], a)}; },
        {away_from_kinks({2, 3, 4, 5}, 3)});
    // Inside a small network, so the op's gradient flows into a convolution's.
    check_gradients(
        [a](std::span<const Value> in) {
          return std::vector<Value>{conv2d(activation(conv2d(in[0], {.out = 3, .kernel = 3}), a),
                                           {.out = 2, .kernel = 1})};
        },
        {random_tensor({2, 2, 5, 5}, 4)}, {.tolerance = 1e-5});
  }
}

TEST_CASE("activations: values by hand, the derivative at the kinks, NaN kept") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double phi1 = 0.5 * (1 + std::erf(1 / std::sqrt(2.0)));  // Phi(1)
  struct Case {
    Activation a;
    std::vector<double> x, y, dy;
  };
  const std::vector<Case> cases = {
      {Activation::sigmoid, {0, 2}, {0.5, 1 / (1 + std::exp(-2.0))}, {0.25, 0}},
      {Activation::tanh, {0, 1}, {0, std::tanh(1.0)}, {1, 1 - std::tanh(1.0) * std::tanh(1.0)}},
      {Activation::silu, {0, 1}, {0, 1 / (1 + std::exp(-1.0))}, {0.5, 0}},
      {Activation::gelu, {0, 1}, {0, phi1}, {0.5, phi1 + std::exp(-0.5) / std::sqrt(2 * M_PI)}},
      // gelu_tanh and erf: torch.nn.functional.gelu(x, approximate="tanh") and torch.erf in
      // float64, their values and autograd's derivatives as torch 1.13 prints them.
      {Activation::gelu_tanh,
       {0, 1, -2},
       {0, 0.8411919906082768, -0.04540230591222494},
       {0.5, 1.0829640838457826, -0.0860992566236183}},
      {Activation::erf,
       {0, 1, -0.5},
       {0, 0.8427007929497149, -0.5204998778130465},
       {1.1283791670955126, 0.4151074974205947, 0.8787825789354448}},
      {Activation::hardsigmoid, {-3, 0, 3, 4}, {0, 0.5, 1, 1}, {0, 1.0 / 6, 0, 0}},
      {Activation::hardswish, {-3, 1, 3, 4}, {0, 2.0 / 3, 3, 4}, {0.5 - 1, 1.0 / 3 + 0.5, 1.5, 1}},
      {Activation::relu6, {-1, 0, 3, 6, 7}, {0, 0, 3, 6, 6}, {0, 0, 1, 0, 0}},
      // ELU, SELU, Softplus (past its threshold of 20 too), Softsign, Exp, Neg: torch 1.13's
      // float64 values and autograd's derivatives (at 0 ELU and SELU take the left piece's).
      {Activation::elu,
       {-2, -0.5, 0, 0.5, 3},
       {-0.8646647167633873, -0.3934693402873666, 0, 0.5, 3},
       {0.1353352832366127, 0.6065306597126334, 1, 1, 1}},
      {Activation::selu,
       {-2, -0.5, 0, 0.5, 3},
       {-1.5201664685956948, -0.6917581878028713, 0, 0.5253504936777402, 3.1521029620664414},
       {0.2379328722516818, 1.0663411530445053, 1.7580993408473766, 1.0507009873554805,
        1.0507009873554805}},
      {Activation::softplus,
       {-2, 0, 0.5, 3, 25},
       {0.1269280110429725, 0.6931471805599453, 0.9740769841801067, 3.048587351573742, 25},
       {0.11920292202211755, 0.5, 0.6224593312018546, 0.9525741268224333, 1}},
      {Activation::softsign,
       {-2, 0, 0.5, 25},
       {-0.6666666666666666, 0, 0.3333333333333333, 0.9615384615384616},
       {0.1111111111111111, 1, 0.4444444444444444, 0.001479289940828403}},
      {Activation::exp,
       {-2, 0, 3},
       {0.1353352832366127, 1, 20.085536923187668},
       {0.1353352832366127, 1, 20.085536923187668}},
      {Activation::neg, {-2, 0.5}, {2, -0.5}, {-1, -1}},
      {Activation::log,
       {0.25, 2, 3},
       {-1.3862943611198906, 0.6931471805599453, 1.0986122886681098},
       {4, 0.5, 0.3333333333333333}},
      {Activation::reciprocal,
       {0.25, 2, 3},
       {4, 0.5, 0.3333333333333333},
       {-16, -0.25, -0.1111111111111111}},
      // Sin, Cos, Atan, Sign: torch 1.13's float64 values and derivatives (sign's 0).
      {Activation::sin,
       {-2, 0, 0.5, 3},
       {-0.9092974268256817, 0, 0.479425538604203, 0.1411200080598672},
       {-0.4161468365471424, 1, 0.8775825618903728, -0.9899924966004454}},
      {Activation::cos,
       {-2, 0, 0.5, 3},
       {-0.4161468365471424, 1, 0.8775825618903728, -0.9899924966004454},
       {0.9092974268256817, 0, -0.479425538604203, -0.1411200080598672}},
      {Activation::atan,
       {-2, 0, 0.5, 3},
       {-1.1071487177940904, 0, 0.4636476090008061, 1.2490457723982544},
       {0.2, 1, 0.8, 0.1}},
      {Activation::sign, {-2, 0, 0.5, 3}, {-1, 0, 1, 1}, {0, 0, 0, 0}},
      {Activation::floor, {-2.5, 0, 0.5, 3}, {-3, 0, 0, 3}, {0, 0, 0, 0}},
      {Activation::ceil, {-2.5, 0, 0.5, 3}, {-2, 0, 1, 3}, {0, 0, 0, 0}},
      {Activation::round, {-2.5, 0.5, 1.5, 2.4}, {-2, 0, 2, 2}, {0, 0, 0, 0}},  // halves to even
  };
  for (const Case& c : cases) {
    CAPTURE(std::string(activation_name(c.a)));
    auto [y, dx] = run(c.a, c.x);
    for (size_t i = 0; i < c.x.size(); ++i) {
      CAPTURE(c.x[i]);
      CHECK(y[i] == doctest::Approx(c.y[i]).epsilon(1e-12));
      if (c.a != Activation::sigmoid && c.a != Activation::silu)
        CHECK(dx[i] == doctest::Approx(c.dy[i]).epsilon(1e-12));
    }
    auto [ny, ndx] = run(c.a, {nan, 1.0});
    CHECK(std::isnan(ny[0]) == (c.a != Activation::sign));  // torch.sign(nan) is 0
    // ELU's and SELU's right piece and Neg pass dy on without reading x: PyTorch's gradient at
    // NaN is dy scaled there too; Sign's, Floor's, Ceil's and Round's are 0.
    const bool passes_dy = c.a == Activation::elu || c.a == Activation::selu ||
                           c.a == Activation::neg || c.a == Activation::sign ||
                           c.a == Activation::floor || c.a == Activation::ceil ||
                           c.a == Activation::round;
    CHECK(std::isnan(ndx[0]) != passes_dy);
    CHECK_FALSE(std::isnan(ny[1]));
  }
  // sigmoid' (2) and silu' (1) by their closed forms.
  const double s2 = 1 / (1 + std::exp(-2.0)), s1 = 1 / (1 + std::exp(-1.0));
  CHECK(run(Activation::sigmoid, {2}).second[0] == doctest::Approx(s2 * (1 - s2)).epsilon(1e-12));
  CHECK(run(Activation::silu, {1}).second[0] ==
        doctest::Approx(s1 * (1 + (1 - s1))).epsilon(1e-12));
  // hardswish at -3 is 0 with derivative -1/2 (PyTorch: x/3 + 1/2 from -3 inclusive).
  CHECK(run(Activation::hardswish, {-3.5}).second[0] == 0);
}

TEST_CASE("activations: in place where backward allows it, planned equals baseline bitwise") {
  for (Activation a : kAll) {
    CAPTURE(std::string(activation_name(a)));
    const InPlace in_place = planned_in_place([a](Value v) { return activation(v, a); });
    CHECK(in_place.output ==
          (activation_backward_reads_output(a) || activation_backward_reads_nothing(a)));
    CHECK(in_place.gradient);
    if (activation_backward_reads_nothing(a)) {  // neg keeps nothing for backward
      const Roles roles = ActivationOp(a).roles(Mode::training, cpu_backend());
      CHECK(roles.backward_reads_inputs.empty());
      CHECK(roles.backward_reads_outputs.empty());
    }
    check_planned_equals_baseline([a](Value v) { return activation(v, a); });
  }
  // In inference every one of them runs in place.
  for (Activation a : kAll) {
    ParamStore store(1);
    Tape tape(store, DType::f32);
    Value x = tape.input("x", {2, 3, 6, 6}, DType::f32);
    Value h = conv2d(x, {.out = 4, .kernel = 3, .pad = 1});
    Value act = activation(h, a);
    Value y = conv2d(act, {.out = 2, .kernel = 3});
    Executor ex(tape, cpu_backend(),
                {.mode = Mode::inference, .memory = MemoryMode::planned, .keep = {y}});
    const Liveness& live = ex.liveness();
    CHECK(live.buffers[static_cast<size_t>(live.value_buffer[act.id()])].alias_of ==
          live.value_buffer[h.id()]);
  }
}

TEST_CASE("activations: sqrt on positive values (gradients, by hand, in place)") {
  check_gradients([](std::span<const Value> in) { return std::vector<Value>{sqrt(in[0])}; },
                  {random_tensor({2, 3, 4}, 5, 0.2, 4)});
  auto [y, dx] = run(Activation::sqrt, {4, 0.25, -1});
  CHECK(y[0] == 2);
  CHECK(y[1] == 0.5);
  CHECK(dx[0] == 0.25);
  CHECK(dx[1] == 1);
  CHECK(std::isnan(y[2]));  // as torch.sqrt
  CHECK(activation_backward_reads_output(Activation::sqrt));
  check_planned_equals_baseline([](Value v) { return sqrt(sigmoid(v)); });
}

TEST_CASE("activations: log and reciprocal on their domains, and at 0 as torch") {
  for (Activation a : {Activation::log, Activation::reciprocal}) {
    CAPTURE(activation_name(a));
    check_gradients(
        [a](std::span<const Value> in) { return std::vector<Value>{activation(in[0], a)}; },
        {random_tensor({2, 3, 4}, 6, 0.2, 4)});
    check_planned_equals_baseline([a](Value v) { return activation(sigmoid(v), a); });
  }
  const double inf = std::numeric_limits<double>::infinity();
  auto [ly, ldx] = run(Activation::log, {-1, 0, -0.0});
  CHECK(std::isnan(ly[0]));
  CHECK(ly[1] == -inf);
  CHECK(ly[2] == -inf);
  CHECK(ldx[0] == -1);  // torch: grad / self
  CHECK(ldx[1] == inf);
  CHECK(ldx[2] == -inf);
  auto [ry, rdx] = run(Activation::reciprocal, {-1, 0, -0.0});
  CHECK(ry[0] == -1);
  CHECK(ry[1] == inf);
  CHECK(ry[2] == -inf);
  CHECK(rdx[0] == -1);  // torch: -grad * result^2
  CHECK(rdx[1] == -inf);
  CHECK(rdx[2] == -inf);
  CHECK(activation_backward_reads_output(Activation::reciprocal));
  CHECK(!activation_backward_reads_output(Activation::log));
}

TEST_CASE("activations: abs (by hand, at 0 and -0, NaN kept)") {
  const double nan = std::nan("");
  auto [y, dx] = run(Activation::abs, {-2, 3, 0, -0.0, nan});
  CHECK(y[0] == 2);
  CHECK(y[1] == 3);
  CHECK(y[2] == 0);
  CHECK(!std::signbit(y[3]));  // abs(-0) is +0, as torch.abs
  CHECK(std::isnan(y[4]));
  CHECK(dx[0] == -1);
  CHECK(dx[1] == 1);
  CHECK(dx[2] == 0);  // PyTorch's sign(0)
  CHECK(dx[3] == 0);
  CHECK(std::isnan(dx[4]));
  CHECK(!activation_backward_reads_output(Activation::abs));
}

TEST_CASE("activations: bad input names the op") {
  ParamStore store;
  Tape tape(store);
  Value labels = tape.input("labels", {4}, DType::i32);
  CHECK_THROWS_WITH_AS(gelu(labels), doctest::Contains("gelu: input must be f32 or f64, got i32"),
                       Error);
}

TEST_CASE("activations: f32 kernels give their scalar loop's bits on every thread count") {
  // The f32 CPU kernels of sigmoid, SiLU and exp (and SiLU's gradient) go 8 at a time with
  // their own e^x (core/cpu/expf_avx2.h) where the build targets AVX2 and FMA; they must give
  // the scalar loop's bits, std::exp's included. The scalar loop is the same kernel over
  // pieces of 7 (fewer than 8: no vectors), since the element function's bits depend on how the
  // compiler fuses its multiply-adds where it is inlined. x over a 2^20 spread of every float
  // (each sign, exponent and a stride of mantissas), the ends of expf's main path (+-88,
  // -103.97, +-88.72) with their neighbours, denormals, zeros, infinities and NaN; an odd
  // count, so a scalar tail too.
  std::vector<float> xs;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4093) {
    float f;
    const auto u = static_cast<uint32_t>(b);
    std::memcpy(&f, &u, sizeof f);
    xs.push_back(f);
  }
  for (float f : {0.0f, -0.0f, 88.0f, -88.0f, 88.7228f, 88.72284f, -103.97f, -103.28f, -104.0f,
                  1e-40f, -1e-40f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()})
    for (float to :
         {-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()}) {
      float g = f;  // f and its 3 neighbours each way
      for (int k = 0; k < 4; ++k, g = std::nextafter(g, to)) xs.push_back(g);
    }
  if (xs.size() % 2 == 0) xs.push_back(0.5f);
  const auto n = static_cast<int64_t>(xs.size());
  Tensor x = Tensor::empty({n}, DType::f32), dy = Tensor::empty({n}, DType::f32);
  std::memcpy(x.raw(), xs.data(), xs.size() * sizeof(float));
  for (int64_t i = 0; i < n; ++i) dy.data<float>()[i] = 0.25f + static_cast<float>(i % 7);
  // Forward into y and backward into dx over [begin, begin + count) of x and dy.
  auto pass = [&](Activation a, int64_t begin, int64_t count, float* y, float* dx) {
    Tensor xp = Tensor::empty({count}, DType::f32), yp = Tensor::empty({count}, DType::f32),
           dyp = Tensor::empty({count}, DType::f32), dxp = Tensor::empty({count}, DType::f32);
    std::memcpy(xp.raw(), x.data<float>() + begin, static_cast<size_t>(count) * sizeof(float));
    std::memcpy(dyp.raw(), dy.data<float>() + begin, static_cast<size_t>(count) * sizeof(float));
    cpu_backend().activation_forward(a, xp, yp);
    cpu_backend().activation_backward(a, a == Activation::silu ? xp : yp, dyp, dxp);
    std::memcpy(y + begin, yp.raw(), static_cast<size_t>(count) * sizeof(float));
    std::memcpy(dx + begin, dxp.raw(), static_cast<size_t>(count) * sizeof(float));
  };
  auto wrong = [](const std::vector<float>& got, const std::vector<float>& want) {
    int64_t count = 0;
    for (size_t i = 0; i < got.size(); ++i)
      count += std::memcmp(&got[i], &want[i], sizeof(float)) != 0 &&
               !(std::isnan(got[i]) && std::isnan(want[i]));
    return count;
  };
  const int saved = cpu_backend().threads();
  for (Activation a : {Activation::sigmoid, Activation::silu, Activation::exp}) {
    CAPTURE(std::string(activation_name(a)));
    std::vector<float> y1(xs.size()), dx1(xs.size());
    set_cpu_threads(1);
    for (int64_t i = 0; i < n; i += 7)
      pass(a, i, std::min<int64_t>(7, n - i), y1.data(), dx1.data());
    for (int threads : {1, 2}) {
      set_cpu_threads(threads);
      std::vector<float> y(xs.size()), dx(xs.size());
      pass(a, 0, n, y.data(), dx.data());
      CHECK(wrong(y, y1) == 0);
      CHECK(wrong(dx, dx1) == 0);
    }
    // The scalar pieces are the element function's values (to rounding: see above).
    for (size_t i = 0; i < xs.size(); i += 997)
      if (std::isfinite(y1[i]))
        CHECK(y1[i] == doctest::Approx(activation_math::forward(a, xs[i])).epsilon(1e-6));
  }
  set_cpu_threads(saved);
}
