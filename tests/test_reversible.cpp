// Reversible blocks: inverse round trip, gradients against the stored-activation twin,
// activation memory independent of depth, BatchNorm statistics updated once, dropout replay,
// planned bitwise equal to baseline.
#include <doctest/doctest.h>

#include "check/gradcheck.h"
#include "layers/channel_slice.h"
#include "layers/conv2d.h"
#include "layers/relu.h"
#include "recompute/reversible.h"
#include "report/report.h"
#include "run/executor.h"
#include "run/plan.h"
#include "tests/reversible_harness.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

Value chain(Value x, int depth, bool reversible, bool with_dropout) {
  for (int i = 0; i < depth; ++i)
    x = reversible ? reversible_block(
                         x, [=](Value h) { return revnet_half(h, with_dropout); },
                         [=](Value h) { return revnet_half(h, with_dropout); })
                   : stored_twin(x, i, with_dropout);
  return x;
}

StepResult run(bool reversible, int depth, DType dtype, MemoryMode memory, bool with_dropout) {
  return run_step([=](Value x) { return chain(x, depth, reversible, with_dropout); }, dtype,
                  memory);
}

}  // namespace

TEST_CASE("reversible gradients equal the stored-activation twin") {
  for (bool with_dropout : {false, true}) {
    CAPTURE(with_dropout);
    // Dropout masks replay: the halves draw what the stored twin draws. BatchNorm running
    // statistics are updated once per step, as in the twin.
    check_equal_to_twin(run(true, 3, DType::f64, MemoryMode::planned, with_dropout),
                        run(false, 3, DType::f64, MemoryMode::baseline, with_dropout));
  }
}

TEST_CASE("reversible planned is bitwise equal to reversible baseline") {
  StepResult a = run(true, 2, DType::f32, MemoryMode::planned, true);
  StepResult b = run(true, 2, DType::f32, MemoryMode::baseline, true);
  CHECK(bitwise_equal(a.y, b.y));
  CHECK(bitwise_equal(a.dx, b.dx));
  for (size_t i = 0; i < a.grads.size(); ++i) CHECK(bitwise_equal(a.grads[i], b.grads[i]));
}

TEST_CASE("reversible planned training is bitwise equal to baseline") {
  CHECK_NOTHROW(check_planned_equals_baseline([](Value x) { return chain(x, 2, true, true); }));
}

TEST_CASE("reversible round trip per block and per stack of 4") {
  for (int depth : {1, 4}) {
    CAPTURE(depth);
    std::vector<ProbeRecord> probes(static_cast<size_t>(depth));
    const Net net = [&](Value x) {
      for (int i = 0; i < depth; ++i)
        x = chain(probe(x, probes[static_cast<size_t>(i)]), 1, true, true);
      return x;
    };
    run_step(net, DType::f64, MemoryMode::planned);
    check_round_trips(probes);
  }
}

TEST_CASE("gradcheck reversible") {
  check_gradients(
      [](std::span<const Value> in) { return std::vector<Value>{chain(in[0], 2, true, false)}; },
      {random_tensor({2, 4, 3, 3}, 9)}, {.tolerance = 1e-5});
}

TEST_CASE("reversible chain activation memory does not grow with depth") {
  auto outputs = [](int depth) {
    ParamStore store = ParamStore::shapes_only();
    Tape tape(store, DType::f32);
    Value x = tape.input("x", {8, 16, 16, 16}, DType::f32, true);
    Value y = chain(x, depth, true, false);
    MemoryReport r = memory_report(tape, Mode::training, cpu_backend(), {.keep = {y.id()}});
    return r.planned.bytes.outputs;
  };
  const size_t d4 = outputs(4), d16 = outputs(16);
  CHECK(d4 == d16);
  auto stored = [](int depth) {
    ParamStore store = ParamStore::shapes_only();
    Tape tape(store, DType::f32);
    Value x = tape.input("x", {8, 16, 16, 16}, DType::f32, true);
    Value y = chain(x, depth, false, false);
    return memory_report(tape, Mode::training, cpu_backend(), {.keep = {y.id()}})
        .planned.bytes.outputs;
  };
  CHECK(stored(16) > 3 * stored(4));
}

TEST_CASE("a reversible block rebuilds its input in its output's bytes, dx in dy's") {
  // Three blocks, the last one's output kept: the first two blocks' rebuilt inputs and input
  // gradients take the bytes of their outputs (which die at their backward) and output
  // gradients; the step stays bitwise the baseline's (the other cases).
  ParamStore store = ParamStore::shapes_only();
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {4, 8, 8, 8}, DType::f32, true);
  Value h = chain(x, 1, true, false);
  Value y = chain(chain(h, 1, true, false), 1, true, false);
  const Layout l = memory_layout(tape, Mode::training, MemoryMode::planned, cpu_backend(),
                                 {.optimizer = true, .keep = {y.id()}});
  const Liveness& live = l.live;
  const int rebuilt = live.rebuilt_buffer[static_cast<size_t>(h.id())];
  REQUIRE(rebuilt >= 0);
  CHECK(live.buffers[static_cast<size_t>(rebuilt)].alias_of >= 0);
  const int dh = live.grad_buffer[static_cast<size_t>(h.id())];
  REQUIRE(dh >= 0);
  CHECK(live.buffers[static_cast<size_t>(dh)].alias_of >= 0);
  CHECK(plan_is_valid(l.requests, l.plan, nullptr));
}

TEST_CASE("reversible rejects odd channels and halves that change shape") {
  ParamStore store;
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {1, 3, 4, 4}, DType::f32);
  auto id = [](Value h) { return relu(h); };
  CHECK_THROWS_WITH_AS(reversible_block(x, id, id), doctest::Contains("even number of channels"),
                       Error);
  Value x4 = tape.input("x4", {1, 4, 4, 4}, DType::f32);
  auto wider = [](Value h) { return conv2d(h, {.out = 3, .kernel = 1}); };
  CHECK_THROWS_WITH_AS(reversible_block(x4, wider, id),
                       doctest::Contains("must return its input's shape"), Error);
}

TEST_CASE("gradcheck channel_slice") {
  check_gradients(
      [](std::span<const Value> in) {
        return std::vector<Value>{channel_slice(in[0], 1, 3), channel_slice(in[0], 0, 2)};
      },
      {random_tensor({2, 4, 3, 2}, 1)});
  check_gradients(
      [](std::span<const Value> in) { return std::vector<Value>{channel_slice(in[0], 2, 5)}; },
      {random_tensor({3, 5}, 2)});
}

TEST_CASE("a reversible block leaves a kept output's gradient as backward was seeded") {
  // The block rearranges dy's halves in place only where dx takes dy's bytes (dy dies there);
  // a kept output's gradient, and an input that needs no gradient, leave dy as it was.
  for (bool x_grad : {true, false})
    for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned}) {
      CAPTURE(x_grad);
      CAPTURE(memory_mode_name(memory));
      ParamStore store(3);
      Tape tape(store, DType::f64);
      Value x = tape.input("x", {3, 4, 3, 3}, DType::f64, x_grad);
      Value y = chain(x, 1, true, false);
      Executor ex(tape, cpu_backend(), {.mode = Mode::training, .memory = memory, .keep = {y}});
      ex.set_input(x, random_tensor({3, 4, 3, 3}, 1));
      ex.forward();
      const Tensor dy = random_tensor({3, 4, 3, 3}, 2);
      const std::pair<Value, Tensor> seed{y, dy};
      ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
      CHECK(bitwise_equal(ex.grad(y), dy));
    }
}
