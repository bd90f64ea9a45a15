// Affine coupling blocks: gradient checks (the affine transform and the block), the rebuild's
// round trip per block and per stack, gradients and BatchNorm statistics against the
// stored-activation twin (with dropout), planned bitwise equal to baseline, the scale error.
#include <doctest/doctest.h>

#include "check/gradcheck.h"
#include "layers/add.h"
#include "layers/batchnorm2d.h"
#include "layers/channel_slice.h"
#include "layers/concat.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/relu.h"
#include "recompute/affine_coupling.h"
#include "report/report.h"
#include "tests/reversible_harness.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// BN, ReLU, conv 3x3, [dropout], BN, ReLU, conv 3x3 to `out` channels.
Value half_net(Value h, int64_t out, bool with_dropout) {
  const int64_t c = h.shape()[1];
  h = conv2d(relu(batch_norm(h)), {.out = c, .kernel = 3, .pad = 1, .bias = false});
  if (with_dropout) h = dropout(h, 0.2);
  return conv2d(relu(batch_norm(h)), {.out = out, .kernel = 3, .pad = 1, .bias = false});
}

// F: a half to [h_s, t] (twice its channels); G: a half to a half.
HalfNet F(bool d) {
  return [=](Value h) { return half_net(h, 2 * h.shape()[1], d); };
}
HalfNet G(bool d) {
  return [=](Value h) { return half_net(h, h.shape()[1], d); };
}

// The block with stored activations, F and G under the scopes the block gives them.
Value stored_block(Value x, int index, bool d) {
  Tape& t = x.tape();
  const int64_t c = x.shape()[1];
  Value x1 = channel_slice(x, 0, c / 2), x2 = channel_slice(x, c / 2, c), y1, y2;
  {
    Tape::Scope s(t, "affine_coupling" + std::to_string(index) + "/F");
    y1 = affine(x1, F(d)(x2));
  }
  {
    Tape::Scope s(t, "affine_coupling" + std::to_string(index) + "/G");
    y2 = add(x2, G(d)(y1));
  }
  return concat({y1, y2});
}

// `depth` blocks; with probes, probes[i] sees block i's input (and its rebuilt copy).
Net chain(int depth, bool reversible, bool d, std::vector<ProbeRecord>* probes = nullptr) {
  return [=](Value x) {
    for (int i = 0; i < depth; ++i) {
      if (probes) x = probe(x, (*probes)[static_cast<size_t>(i)]);
      x = reversible ? affine_coupling_block(x, F(d), G(d)) : stored_block(x, i, d);
    }
    return x;
  };
}

}  // namespace

TEST_CASE("gradcheck affine") {
  for (bool inverse : {false, true}) {
    CAPTURE(inverse);
    check_gradients(
        [inverse](std::span<const Value> in) {
          return std::vector<Value>{inverse ? affine_inverse(in[0], in[1]) : affine(in[0], in[1]),
                                    inverse ? affine_inverse(in[2], in[3], {.clamp = 0.5})
                                            : affine(in[2], in[3], {.clamp = 0.5})};
        },
        {random_tensor({2, 3, 2, 2}, 1), random_tensor({2, 6, 2, 2}, 2, -3, 3),
         random_tensor({3, 2}, 3), random_tensor({3, 4}, 4)});
  }
}

TEST_CASE("affine values and inverse") {
  ParamStore store;
  Tape tape(store, DType::f64);
  Value x = tape.input("x", {1, 1}, DType::f64, true), h = tape.input("h", {1, 2}, DType::f64);
  Value y = affine(x, h), z = affine_inverse(y, h);
  Executor ex(tape, cpu_backend(), {.keep = {y, z}});
  Tensor xv = Tensor::empty({1, 1}, DType::f64), hv = Tensor::empty({1, 2}, DType::f64);
  xv.data<double>()[0] = 3;
  hv.data<double>()[0] = 2;  // s = exp(2 tanh(1))
  hv.data<double>()[1] = 0.5;
  ex.set_input(x, xv);
  ex.set_input(h, hv);
  ex.forward();
  const double s = std::exp(2 * std::tanh(1.0));
  CHECK(element_as_double(ex.value(y), 0) == doctest::Approx(3 * s + 0.5).epsilon(1e-15));
  CHECK(std::abs(element_as_double(ex.value(z), 0) - 3) < 1e-15);
  Tensor dz = Tensor::empty({1, 1}, DType::f64);
  dz.data<double>()[0] = 1;
  std::pair<Value, Tensor> seed{z, dz};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));  // h needs no gradient
  CHECK(std::abs(element_as_double(ex.grad(x), 0) - 1) < 1e-15);
}

TEST_CASE("gradcheck affine_coupling") {
  check_gradients(
      [](std::span<const Value> in) { return std::vector<Value>{chain(2, true, false)(in[0])}; },
      {random_tensor({2, 4, 3, 3}, 9)}, {.tolerance = 1e-5});
}

TEST_CASE("affine coupling round trip per block and per stack of 4") {
  for (int depth : {1, 4}) {
    CAPTURE(depth);
    std::vector<ProbeRecord> probes(static_cast<size_t>(depth));
    run_step(chain(depth, true, true, &probes), DType::f64, MemoryMode::planned);
    check_round_trips(probes);
  }
}

TEST_CASE("affine coupling gradients and statistics equal the stored-activation twin") {
  for (bool with_dropout : {false, true}) {
    CAPTURE(with_dropout);
    // Dropout masks replay in F and G; BatchNorm statistics are updated once per step.
    check_equal_to_twin(run_step(chain(3, true, with_dropout), DType::f64, MemoryMode::planned),
                        run_step(chain(3, false, with_dropout), DType::f64, MemoryMode::baseline));
  }
}

TEST_CASE("affine coupling planned training is bitwise equal to baseline") {
  CHECK_NOTHROW(check_planned_equals_baseline(chain(2, true, true)));
}

TEST_CASE("affine coupling chain activation memory does not grow with depth") {
  auto outputs = [](int depth) {
    ParamStore store = ParamStore::shapes_only();
    Tape tape(store, DType::f32);
    Value y = chain(depth, true, false)(tape.input("x", {8, 16, 16, 16}, DType::f32, true));
    return memory_report(tape, Mode::training, cpu_backend(), {.keep = {y.id()}})
        .planned.bytes.outputs;
  };
  CHECK(outputs(4) == outputs(16));
}

TEST_CASE("affine coupling scale underflow and non-finite scale are errors") {
  // F = [x2, x2]: h_s = t = x2, so x2[1] sets the scale of element 1 (clamp 100: s >= e^-100).
  auto forward_with = [](double x2_1) {
    ParamStore store;
    Tape tape(store, DType::f64);
    Value x = tape.input("x", {1, 4, 1, 1}, DType::f64);
    auto both = [](Value h) { return concat({h, h}); };
    Value y = affine_coupling_block(x, both, [](Value h) { return relu(h); }, {.clamp = 100});
    Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {y}});
    Tensor xv = random_tensor({1, 4, 1, 1}, 1);
    xv.data<double>()[3] = x2_1;
    ex.set_input(x, xv);
    ex.forward();
  };
  CHECK_NOTHROW(forward_with(-5));
  CHECK_THROWS_WITH_AS(forward_with(-1e6),  // s = exp(100 tanh(-1e4)) = e^-100 < 1e-6
                       doctest::Contains("affine_coupling 'affine_coupling0': scale s = "
                                         "exp(clamp·tanh(h/clamp)) = 3.72008e-44 at element 1 "
                                         "of [1,2,1,1], from h = -1e+06 (clamp 100) is below "
                                         "min_scale 1e-06"),
                       Error);
  CHECK_THROWS_WITH_AS(forward_with(std::nan("")),
                       doctest::Contains("at element 1 of [1,2,1,1], from h = nan (clamp 100): "
                                         "F returned a non-finite value"),
                       Error);
}

TEST_CASE("affine coupling rejects bad options and an F of the wrong width") {
  ParamStore store;
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {1, 4, 2, 2}, DType::f32);
  auto id = [](Value h) { return relu(h); };
  auto both = [](Value h) { return concat({h, h}); };
  CHECK_THROWS_WITH_AS(affine_coupling_block(x, both, id, {.clamp = 0}),
                       doctest::Contains("clamp must be finite and > 0"), Error);
  CHECK_THROWS_WITH_AS(affine_coupling_block(x, both, id, {.min_scale = 1}),
                       doctest::Contains("min_scale must be in [0, 1)"), Error);
  CHECK_THROWS_WITH_AS(affine_coupling_block(x, id, id),
                       doctest::Contains("F must return twice its input's channels"), Error);
  CHECK_THROWS_WITH_AS(affine(x, x), doctest::Contains("affine: h must be [1,8,2,2]"), Error);
}
