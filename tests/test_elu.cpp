// The ELU family with its constants (nn.ELU(alpha), nn.CELU(alpha), SELU's form with others):
// finite-difference gradient checks in f64 (backward from the output and, with a negative
// alpha, from the input), values and gradients by hand against PyTorch's, NaN kept, roles (in
// place where backward reads the output), planned == baseline bitwise, and error messages.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "core/backend.h"
#include "layers/conv2d.h"
#include "layers/elu.h"
#include "run/executor.h"
#include "tests/tape_values.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

struct Member {
  const char* what;
  EluCoefficients c;
};
// nn.ELU(0.5), nn.ELU(-0.5) (backward from x), nn.CELU(2), nn.CELU(0.7), aten::elu(x, 1.5, 2, 1).
const Member kMembers[] = {
    {"elu 0.5", {.alpha = 0.5}},
    {"elu -0.5", {.alpha = -0.5}},
    {"celu 2", {.alpha = 2, .input_scale = 0.5}},
    {"celu 0.7", {.alpha = 0.7, .input_scale = 1 / 0.7}},
    {"scaled", {.alpha = 1.5, .scale = 2}},
};

// y and dx for dy = 1 at xs, through the op on the CPU (f64).
std::pair<std::vector<double>, std::vector<double>> run(const EluCoefficients& c,
                                                        const std::vector<double>& xs) {
  return values_and_grads([&c](Value x) { return elu_family(x, c); }, xs);
}

}  // namespace

TEST_CASE("elu family: finite-difference gradients in f64") {
  for (const Member& m : kMembers) {
    CAPTURE(m.what);
    // kink_free: every input at least 0.1 from the kink at 0.
    check_gradients(
        [&](std::span<const Value> in) { return std::vector<Value>{elu_family(in[0], m.c)}; },
        {kink_free({2, 3, 4, 5}, 7)});
    // Inside a small network, so the gradient flows on into a convolution's.
    check_gradients(
        [&](std::span<const Value> in) {
          return std::vector<Value>{conv2d(elu_family(conv2d(in[0], {.out = 3, .kernel = 3}), m.c),
                                           {.out = 2, .kernel = 1})};
        },
        {random_tensor({2, 2, 5, 5}, 8)});
  }
  check_gradients([](std::span<const Value> in) { return std::vector<Value>{celu(in[0], 3)}; },
                  {kink_free({3, 7}, 9)});
  check_gradients([](std::span<const Value> in) { return std::vector<Value>{elu(in[0], 0.3)}; },
                  {kink_free({3, 7}, 10)});
}

TEST_CASE("elu family: by hand, as PyTorch computes it") {
  // F.elu(x, 0.5), F.elu(x, -0.5), F.celu(x, 2.0) and aten::elu(x, 1.5, 2.0, 1.0) at
  // x = -2, -0.5, 0, 1.5 and their gradients for dy = 1, float64, as torch 1.13 prints them.
  struct Case {
    const char* what;
    EluCoefficients c;
    std::vector<double> y, dx;
  };
  const Case cases[] = {
      {"elu 0.5",
       {.alpha = 0.5},
       {-0.43233235838169365, -0.1967346701436833, 0, 1.5},
       {0.06766764161830635, 0.3032653298563167, 0.5, 1}},
      {"elu -0.5",
       {.alpha = -0.5},
       {0.43233235838169365, 0.1967346701436833, 0, 1.5},
       {-0.06766764161830635, -0.3032653298563167, -0.5, 1}},
      {"celu 2",
       {.alpha = 2, .input_scale = 0.5},
       {-1.2642411176571153, -0.44239843385719024, 0, 1.5},
       {0.36787944117144233, 0.7788007830714049, 1, 1}},
      {"scaled",
       {.alpha = 1.5, .scale = 2},
       {-2.593994150290162, -1.1804080208620997, 0, 3},
       {0.4060058497098381, 1.8195919791379003, 3, 2}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    auto [y, dx] = run(c.c, {-2, -0.5, 0, 1.5});
    for (size_t i = 0; i < y.size(); ++i) {
      CAPTURE(i);
      CHECK(y[i] == doctest::Approx(c.y[i]).epsilon(1e-14));
      CHECK(dx[i] == doctest::Approx(c.dx[i]).epsilon(1e-14));
    }
    // NaN in, NaN out; the right piece passes dy on, as PyTorch's gradient at NaN does.
    auto [ny, ndx] = run(c.c, {NAN, -1});
    CHECK(std::isnan(ny[0]));
    CHECK(ndx[0] == c.c.scale);
    CHECK_FALSE(std::isnan(ndx[1]));
  }
  // alpha 1, scale 1: the default ELU's values (layers/activation.h computes it too).
  auto [y, dx] = run({}, {-1});
  CHECK(y[0] == doctest::Approx(std::expm1(-1.0)).epsilon(1e-15));
  CHECK(dx[0] == doctest::Approx(std::exp(-1.0)).epsilon(1e-14));
}

TEST_CASE("elu family: in place where backward reads the output, planned equals baseline") {
  for (const Member& m : kMembers) {
    CAPTURE(m.what);
    const Roles r = EluOp(m.c).roles(Mode::training, cpu_backend());
    const bool from_output = m.c.alpha >= 0;
    CHECK(r.backward_reads_outputs == (from_output ? std::vector<int>{0} : std::vector<int>{}));
    CHECK(r.backward_reads_inputs == (from_output ? std::vector<int>{} : std::vector<int>{0}));
    CHECK(r.rebuildable);
    const InPlace in_place = planned_in_place([c = m.c](Value v) { return elu_family(v, c); });
    CHECK(in_place.output == from_output);
    CHECK(in_place.gradient);
    check_planned_equals_baseline([c = m.c](Value v) { return elu_family(v, c); });
  }
  // In inference every member runs in place.
  const Roles i = EluOp({.alpha = -0.5}).roles(Mode::inference, cpu_backend());
  CHECK(i.aliases.size() == 1);
  CHECK(EluOp({.alpha = 2, .input_scale = 0.5}).name() == "celu");
  CHECK(EluOp({.alpha = 2, .scale = 1.5}).name() == "selu");
  CHECK(EluOp({.alpha = 0.5}).name() == "elu");
}

TEST_CASE("elu family: errors name what is wrong") {
  ParamStore store;
  Tape tape(store);
  Value labels = tape.input("labels", {4}, DType::i32);
  CHECK_THROWS_WITH_AS(elu(labels, 0.5),
                       doctest::Contains("elu: input must be f32 or f64, got i32"), Error);
  Value x = tape.input("x", {4}, DType::f32);
  CHECK_THROWS_WITH_AS(celu(x, 0), doctest::Contains("celu: alpha must be finite and not 0, got 0"),
                       Error);
  CHECK_THROWS_WITH_AS(elu(x, INFINITY),
                       doctest::Contains("elu: alpha, scale and input scale must be finite"),
                       Error);
  // The backend refuses to read the output where it does not tell the pieces apart.
  Tensor t = Tensor::empty({4}, DType::f32), d = Tensor::empty({4}, DType::f32);
  cpu_backend().fill(t, 1.0);
  cpu_backend().fill(d, 1.0);
  CHECK_THROWS_WITH_AS(cpu_backend().elu_backward(t, true, {.alpha = -1}, d, d),
                       doctest::Contains("elu backward: reading the output needs alpha >= 0"),
                       Error);
}
