// Checkpoint segments: a checkpointed step is bitwise equal to the inline step (outputs,
// gradients, updated weights, BatchNorm statistics, dropout), and it stores less.
#include <doctest/doctest.h>

#include "check/gradcheck.h"
#include "layers/add.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "layers/softmax_cross_entropy.h"
#include "recompute/checkpoint.h"
#include "report/report.h"
#include "run/executor.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

Value block(Value h) {
  Value b = relu(batch_norm(conv2d(h, {.out = 8, .kernel = 3, .pad = 1, .bias = false})));
  b = dropout(b, 0.1);
  b = batch_norm(conv2d(b, {.out = 8, .kernel = 3, .pad = 1, .bias = false}));
  return relu(add(b, h));
}

// Blocks [from, to).
Value blocks(Value v, int from, int to) {
  for (int j = from; j < to; ++j) {
    Tape::Scope s(v.tape(), "block" + std::to_string(j));
    v = block(v);
  }
  return v;
}

// Six blocks, in segments of `per` blocks (0: inline); with `inner`, each segment checkpoints
// its own blocks `inner` at a time but the last piece (two levels).
Value net(Value x, int per, int inner = 0) {
  Value h = relu(conv2d(x, {.out = 8, .kernel = 3, .pad = 1}));
  for (int i = 0; i < 6;) {
    const int n = per > 0 ? per : 1;
    auto segment = [i, n, inner](Value v) {
      int j = i;
      for (; inner > 0 && j + inner < i + n; j += inner)
        v = checkpoint(v, [j, inner](Value u) { return blocks(u, j, j + inner); });
      return blocks(v, j, i + n);
    };
    h = per > 0 ? checkpoint(h, segment) : segment(h);
    i += n;
  }
  return linear(flatten(h), {.out = 5});
}

std::vector<Tensor> train(int per, MemoryMode memory, int inner = 0) {
  ParamStore store(3);
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {4, 3, 6, 6}, DType::f32);
  Value labels = tape.input("labels", {4}, DType::i32);
  Value loss = softmax_cross_entropy(net(x, per, inner), labels);
  Executor ex(tape, cpu_backend(),
              {.memory = memory,
               .poison = true,
               .seed = 2,
               .keep = {loss},
               .optimizer = OptimizerConfig{.lr = 0.1, .momentum = 0.9}});
  std::vector<Tensor> out;
  for (int s = 0; s < 2; ++s) {
    ex.set_input(x, random_tensor({4, 3, 6, 6}, 10 + s, -1, 1, DType::f32));
    ex.set_input(labels, random_labels(4, 5, 20 + s));
    ex.forward();
    out.push_back(clone(ex.value(loss)));
    ex.backward(loss);
  }
  for (Parameter* p : store.all()) out.push_back(clone(p->value));  // weights and BN stats
  return out;
}

}  // namespace

TEST_CASE("checkpointed training is bitwise equal to inline training") {
  const auto inline_run = train(0, MemoryMode::baseline);
  for (int per : {1, 2, 3}) {
    for (MemoryMode m : {MemoryMode::baseline, MemoryMode::planned}) {
      CAPTURE(per);
      const auto run = train(per, m);
      REQUIRE(run.size() == inline_run.size());
      for (size_t i = 0; i < run.size(); ++i) CHECK(bitwise_equal(run[i], inline_run[i]));
    }
  }
}

// Two levels: a segment's rebuild checkpoints its blocks again, so they run three times in a
// step; dropout replays its masks and BatchNorm updates its statistics once at every level.
TEST_CASE("nested checkpoints train bitwise equal to inline training") {
  const auto inline_run = train(0, MemoryMode::baseline);
  for (auto [per, inner] : {std::pair{3, 1}, {3, 2}, {6, 2}, {6, 4}}) {
    for (MemoryMode m : {MemoryMode::baseline, MemoryMode::planned}) {
      CAPTURE(per);
      CAPTURE(inner);
      const auto run = train(per, m, inner);
      REQUIRE(run.size() == inline_run.size());
      for (size_t i = 0; i < run.size(); ++i) CHECK(bitwise_equal(run[i], inline_run[i]));
    }
  }
}

TEST_CASE("checkpoint segments lower the planned activation memory") {
  auto outputs = [](int per, int inner) {
    ParamStore store = ParamStore::shapes_only();
    Tape tape(store, DType::f32);
    Value x = tape.input("x", {32, 3, 16, 16}, DType::f32);
    Value labels = tape.input("labels", {32}, DType::i32);
    Value loss = softmax_cross_entropy(net(x, per, inner), labels);
    return memory_report(tape, Mode::training, cpu_backend(), {.keep = {loss.id()}}).planned;
  };
  const ModeMemory plain = outputs(0, 0), seg = outputs(3, 0);
  CHECK(seg.bytes.outputs < plain.bytes.outputs);
  CHECK(seg.arena < plain.arena);
  // One segment of all six blocks rebuilds them all at once; inner checkpoints of two keep
  // their inputs and one piece's activations.
  CHECK(outputs(6, 2).arena < outputs(6, 0).arena);
}

TEST_CASE("gradcheck checkpoint") {
  check_gradients(
      [](std::span<const Value> in) {
        auto seg = [](Value h) {
          return relu(batch_norm(conv2d(h, {.out = 2, .kernel = 3, .pad = 1})));
        };
        return std::vector<Value>{checkpoint(in[0], seg)};
      },
      {random_tensor({2, 2, 3, 3}, 4)}, {.tolerance = 1e-5});
}
