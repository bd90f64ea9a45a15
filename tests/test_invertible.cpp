// Generic invertible op: gradient check, round trip per block and per stack, gradients and
// BatchNorm statistics against the inline twin (with dropout), planned bitwise equal to
// baseline, check_invertible, an input that other ops still read, and the recording errors.
#include <doctest/doctest.h>

#include "check/gradcheck.h"
#include "layers/add.h"
#include "layers/affine.h"
#include "layers/batchnorm2d.h"
#include "layers/channel_slice.h"
#include "layers/concat.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/leaky_relu.h"
#include "layers/relu.h"
#include "recompute/invertible.h"
#include "report/report.h"
#include "tests/reversible_harness.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// BN, ReLU, conv 3x3, [dropout], BN, ReLU, conv 3x3 to twice the channels: [h_s, t].
Value scale_shift(Value h, bool with_dropout) {
  const int64_t c = h.shape()[1];
  h = conv2d(relu(batch_norm(h)), {.out = c, .kernel = 3, .pad = 1, .bias = false});
  if (with_dropout) h = dropout(h, 0.2);
  return conv2d(relu(batch_norm(h)), {.out = 2 * c, .kernel = 3, .pad = 1, .bias = false});
}

// A coupling written with plain ops: [x1, x2] -> [x2, affine(x1, net(x2))], and its inverse.
// The inverse records the same layers in the same order, so it shares their parameters.
SubNet coupling(bool d) {
  return [=](Value x) {
    const int64_t c = x.shape()[1];
    Value x1 = channel_slice(x, 0, c / 2), x2 = channel_slice(x, c / 2, c);
    return concat({x2, affine(x1, scale_shift(x2, d))});
  };
}
SubNet coupling_inverse(bool d) {
  return [=](Value y) {
    const int64_t c = y.shape()[1];
    Value x2 = channel_slice(y, 0, c / 2), y1 = channel_slice(y, c / 2, c);
    return concat({affine_inverse(y1, scale_shift(x2, d)), x2});
  };
}

// `depth` couplings, invertible ops or inline; probes[i] sees block i's input.
Net chain(int depth, bool invertible_op, bool d, std::vector<ProbeRecord>* probes = nullptr) {
  return [=](Value x) {
    for (int i = 0; i < depth; ++i) {
      if (probes) x = probe(x, (*probes)[static_cast<size_t>(i)]);
      x = invertible_op ? invertible(x, coupling(d), coupling_inverse(d)) : coupling(d)(x);
    }
    return x;
  };
}

Value halve_negatives(Value x) {
  return leaky_relu(x, 0.5);
}
Value double_negatives(Value y) {
  return leaky_relu(y, 2.0);
}

// x = relu(conv(a)) feeds, in tape order: a conv whose backward reads x after the rebuild, the
// invertible op, a residual add reading x in forward after it, and a conv whose backward reads
// x before the rebuild. ReLU's backward reads x too.
Net fan_out(bool invertible_op, const SubNet& fw, const SubNet& inv) {
  return [=](Value a) {
    Value x = relu(conv2d(a, {.out = 4, .kernel = 3, .pad = 1}));
    Value before = conv2d(x, {.out = 4, .kernel = 1});
    Value y = invertible_op ? invertible(x, fw, inv) : fw(x);
    Value after = conv2d(x, {.out = 4, .kernel = 1});
    return add(add(add(x, y), after), before);
  };
}

}  // namespace

TEST_CASE("gradcheck invertible") {
  check_gradients(
      [](std::span<const Value> in) { return std::vector<Value>{chain(2, true, false)(in[0])}; },
      {random_tensor({2, 4, 3, 3}, 9)}, {.tolerance = 1e-5});
  check_gradients(
      [](std::span<const Value> in) {
        return std::vector<Value>{invertible(in[0], halve_negatives, double_negatives)};
      },
      {kink_free({2, 3, 2, 2}, 2)});
}

TEST_CASE("invertible round trip per block and per stack of 4") {
  for (int depth : {1, 4}) {
    CAPTURE(depth);
    std::vector<ProbeRecord> probes(static_cast<size_t>(depth));
    run_step(chain(depth, true, true, &probes), DType::f64, MemoryMode::planned);
    check_round_trips(probes);
  }
}

TEST_CASE("invertible gradients and statistics equal the inline twin") {
  for (bool with_dropout : {false, true}) {
    CAPTURE(with_dropout);
    check_equal_to_twin(run_step(chain(3, true, with_dropout), DType::f64, MemoryMode::planned),
                        run_step(chain(3, false, with_dropout), DType::f64, MemoryMode::baseline));
  }
}

TEST_CASE("invertible planned training is bitwise equal to baseline") {
  CHECK_NOTHROW(check_planned_equals_baseline(chain(2, true, true)));
}

TEST_CASE("invertible keeps an input that other ops still read") {
  const std::pair<SubNet, SubNet> pairs[] = {{halve_negatives, double_negatives},
                                             {coupling(true), coupling_inverse(true)}};
  for (const auto& [fw, inv] : pairs) {
    // Bitwise equal and finite: with poisoned buffers a read of freed bytes is NaN.
    CHECK_NOTHROW(check_planned_equals_baseline(fan_out(true, fw, inv)));
    check_equal_to_twin(run_step(fan_out(true, fw, inv), DType::f64, MemoryMode::planned),
                        run_step(fan_out(false, fw, inv), DType::f64, MemoryMode::baseline));
  }
  // The plan: x is not overwritten by the op's output, lives until the last conv's backward,
  // and ReLU's backward reads the rebuilt copy.
  ParamStore store(1);
  Tape tape(store, DType::f32);
  Value x = relu(conv2d(tape.input("a", {2, 3, 4, 4}, DType::f32, true), {.out = 4, .kernel = 1}));
  Value y = invertible(x, halve_negatives, double_negatives);
  Value z = add(add(x, y), conv2d(x, {.out = 4, .kernel = 1}));
  Executor ex(tape, cpu_backend(), {.memory = MemoryMode::planned, .keep = {z}});
  const Liveness& L = ex.liveness();
  auto root = [&](int b) { return L.alias_root(b); };
  const int xb = L.value_buffer[static_cast<size_t>(x.id())];
  CHECK(root(L.value_buffer[static_cast<size_t>(y.id())]) != root(xb));
  const int last_conv = static_cast<int>(tape.ops().size()) - 2;
  CHECK(L.buffers[static_cast<size_t>(xb)].last >= L.backward_step(last_conv));
  const int relu_op = tape.value(x.id()).producer;
  CHECK(L.value_at(x.id(), L.backward_step(relu_op)) ==
        L.rebuilt_buffer[static_cast<size_t>(x.id())]);
}

TEST_CASE("invertible check reports the reconstruction error") {
  const InvertibleCheck exact = check_invertible(halve_negatives, double_negatives, {2, 3, 4, 4});
  CHECK(exact.max_abs == 0);
  for (bool d : {false, true}) {
    CAPTURE(d);
    const InvertibleCheck c = check_invertible(coupling(d), coupling_inverse(d), {2, 4, 3, 3}, 7);
    CHECK(c.relative < 1e-14);
    CHECK(c.within(1e-12));
    CHECK_NOTHROW(c.require(1e-12));
  }
  const InvertibleCheck f32 =
      check_invertible(coupling(true), coupling_inverse(true), {2, 4, 3, 3}, 7, DType::f32);
  CHECK(f32.relative < 1e-5);
  auto identity = [](Value y) { return leaky_relu(y, 1.0); };  // wrong for x < 0
  const InvertibleCheck wrong = check_invertible(halve_negatives, identity, {2, 3, 4, 4});
  CHECK(wrong.relative > 0.4);
  CHECK(!wrong.within(1e-3));
  CHECK(wrong.rebuilt_at_worst == doctest::Approx(wrong.x_at_worst / 2));
  CHECK_THROWS_WITH_AS(wrong.require(1e-3),
                       doctest::Contains("invertible check: inverse(forward(x)) differs from x"),
                       Error);
}

TEST_CASE("invertible chain activation memory does not grow with depth") {
  auto outputs = [](int depth) {
    ParamStore store = ParamStore::shapes_only();
    Tape tape(store, DType::f32);
    Value y = chain(depth, true, false)(tape.input("x", {8, 16, 16, 16}, DType::f32, true));
    return memory_report(tape, Mode::training, cpu_backend(), {.keep = {y.id()}})
        .planned.bytes.outputs;
  };
  CHECK(outputs(4) == outputs(16));
}

TEST_CASE("invertible rejects an inverse of another shape or with its own parameters") {
  ParamStore store;
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {1, 4, 2, 2}, DType::f32);
  auto half = [](Value y) { return channel_slice(y, 0, 2); };
  CHECK_THROWS_WITH_AS(invertible(x, halve_negatives, half),
                       doctest::Contains("the inverse must return the forward's input shape"),
                       Error);
  auto conv = [](Value y) { return conv2d(y, {.out = 4, .kernel = 1}); };
  CHECK_THROWS_WITH_AS(invertible(x, halve_negatives, conv),
                       doctest::Contains("which the forward does not"), Error);
}
