// Op-level recomputation: outputs dropped after forward and rebuilt in backward, just before
// their first backward reader. Lifetimes on a small chain, and bitwise equality with the step
// that keeps everything on every bundled network, on random DAGs and with dropout.
#include <doctest/doctest.h>

#include "check/modecheck.h"
#include "layers/add.h"
#include "layers/avgpool2d.h"
#include "layers/batchnorm2d.h"
#include "layers/concat.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/maxpool2d.h"
#include "layers/relu.h"
#include "memory/rebuild.h"
#include "recorded_model.h"
#include "run/plan.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// conv -> batch_norm -> relu -> conv -> batch_norm -> add(skip) -> relu, twice.
Value residual_blocks(Value x, int blocks) {
  Value h = relu(batch_norm(conv2d(x, {.out = 4, .kernel = 3, .pad = 1})));
  for (int b = 0; b < blocks; ++b) {
    Value y = relu(batch_norm(conv2d(h, {.out = 4, .kernel = 3, .pad = 1})));
    y = batch_norm(conv2d(y, {.out = 4, .kernel = 3, .pad = 1}));
    h = relu(add(y, h));
  }
  return h;
}

int op_index(const Tape& tape, const std::string& name, int nth) {
  for (size_t k = 0; k < tape.ops().size(); ++k)
    if (tape.ops()[k].op->name() == name && nth-- == 0) return static_cast<int>(k);
  return -1;
}

}  // namespace

TEST_CASE("rebuild: batch norm and relu rebuilt before the convolution's backward") {
  ParamStore store(1);
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {2, 3, 6, 6}, DType::f32, true);
  Value y = conv2d(relu(batch_norm(conv2d(x, {.out = 4, .kernel = 3, .pad = 1}))),
                   {.out = 4, .kernel = 3, .pad = 1});
  (void)y;
  const int bn = op_index(tape, "batch_norm", 0), re = op_index(tape, "relu", 0),
            conv = op_index(tape, "conv2d", 1);
  LayoutOptions o;
  o.rebuild = {bn, re};
  Layout L = memory_layout(tape, Mode::training, MemoryMode::planned, cpu_backend(), o);
  const Liveness& live = L.live;
  CHECK(live.op_rebuild_step[bn] == live.backward_step(conv));
  CHECK(live.op_rebuild_step[re] == live.backward_step(conv));
  CHECK(live.rebuilds_at[live.backward_step(conv)] == std::vector<int>{bn, re});
  const int bn_out = tape.ops()[bn].outputs[0], re_out = tape.ops()[re].outputs[0];
  // The forward copies die with forward; the rebuilt ReLU output takes the rebuilt
  // BatchNorm output's bytes and lives to the convolution's backward.
  CHECK(live.buffers[live.value_buffer[re_out]].last == conv);
  CHECK(live.buffers[live.value_buffer[bn_out]].last == re);
  const int rebuilt = live.rebuilt_buffer[re_out];
  REQUIRE(rebuilt >= 0);
  CHECK(live.alias_root(rebuilt) == live.rebuilt_buffer[bn_out]);
  CHECK(live.buffers[rebuilt].first == live.backward_step(conv));
  CHECK(live.value_at(re_out, live.backward_step(conv)) == rebuilt);
  CHECK(live.value_at(re_out, conv) == live.value_buffer[re_out]);
  // Planned without rebuilds keeps the ReLU output to the convolution's backward.
  Layout keep = memory_layout(tape, Mode::training, MemoryMode::planned, cpu_backend());
  CHECK(keep.live.buffers[keep.live.value_buffer[re_out]].last >= keep.live.backward_step(conv));
  // Baseline never rebuilds.
  Layout base = memory_layout(tape, Mode::training, MemoryMode::baseline, cpu_backend(), o);
  CHECK(base.live.op_rebuild_step[bn] == -1);
}

TEST_CASE("rebuild: the free rebuilds take every other block output of a residual chain") {
  ParamStore store = ParamStore::shapes_only();
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {8, 3, 16, 16}, DType::f32);
  conv2d(residual_blocks(x, 4), {.out = 4, .kernel = 1});
  Step step = lower_step(tape, Mode::training, cpu_backend());
  LivenessOptions lo;
  lo.optimizer = true;
  const std::vector<int> chosen = free_rebuilds(step, lo);
  auto has = [&](const std::string& name, int nth) {
    return std::count(chosen.begin(), chosen.end(), op_index(tape, name, nth)) == 1;
  };
  // Stem: batch_norm 0, relu 0. Block b: batch_norm 2b+1, relu 2b+1, batch_norm 2b+2, add b,
  // relu 2b+2. Every block's first BatchNorm and ReLU; the stem output is rebuilt, so block
  // 0's add is not (that would rebuild the stem output earlier than its own readers need it),
  // block 1's is, block 2's is not...
  CHECK(has("batch_norm", 0));
  CHECK(has("relu", 0));
  for (int b = 0; b < 4; ++b) {
    CAPTURE(b);
    CHECK(has("batch_norm", 2 * b + 1));
    CHECK(has("relu", 2 * b + 1));
    CHECK(has("add", b) == (b % 2 == 1));
    CHECK(has("relu", 2 * b + 2) == (b % 2 == 1));
  }
  LayoutOptions none, cheap;
  cheap.recompute = Recompute::cheap;
  none.optimizer = cheap.optimizer = true;
  const size_t kept = memory_layout(tape, Mode::training, MemoryMode::planned, cpu_backend(), none)
                          .plan.arena_bytes;
  const size_t rebuilt =
      memory_layout(tape, Mode::training, MemoryMode::planned, cpu_backend(), cheap)
          .plan.arena_bytes;
  MESSAGE("residual chain: planned ", kept, " bytes, with cheap rebuilds ", rebuilt);
  CHECK(rebuilt < kept * 0.8);
  // The cheap choice is the best the planner finds of none, the free ones and all.
  auto arena = [&](const std::vector<int>& set) {
    LivenessOptions o = lo;
    o.rebuild = set;
    return planned_arena_bytes(step, o, 64);
  };
  const size_t chosen_arena = arena(choose_rebuilds(step, lo, 64));
  CHECK(chosen_arena <= arena(chosen));
  CHECK(chosen_arena <= arena(rebuildable_ops(step)));
  CHECK(chosen_arena < arena({}));
}

TEST_CASE("rebuild: residual blocks, pools, concat and dropout give the same bits") {
  check_planned_equals_baseline([](Value x) { return residual_blocks(x, 3); });
  check_planned_equals_baseline([](Value x) {
    Value a = relu(batch_norm(conv2d(x, {.out = 4, .kernel = 3, .pad = 1})));
    Value p = max_pool2d(a, {.kernel = 3, .stride = 1, .pad = 1});
    Value q = avg_pool2d(a, {.kernel = 3, .stride = 1, .pad = 1});
    Value c = concat({dropout(p, 0.3), q});
    return relu(add(batch_norm(conv2d(c, {.out = 4, .kernel = 1})), a));
  });
}

TEST_CASE("rebuild: random DAGs give the same bits with every rebuild and the cheap ones") {
  // Each node reads one or two earlier nodes; ops drawn from the rebuildable ones and
  // convolutions, so rebuilds chain through each other and pull inputs at different steps.
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    CAPTURE(seed);
    check_planned_equals_baseline([seed](Value x) {
      std::vector<Value> nodes{conv2d(x, {.out = 4, .kernel = 3, .pad = 1})};
      uint64_t r = seed * 0x9E3779B97F4A7C15ull;
      auto draw = [&](uint64_t n) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<int>((r >> 33) % n);
      };
      for (int i = 0; i < 10; ++i) {
        Value a = nodes[static_cast<size_t>(draw(nodes.size()))];
        Value b = nodes[static_cast<size_t>(draw(nodes.size()))];
        switch (draw(6)) {
          case 0:
            nodes.push_back(batch_norm(a));
            break;
          case 1:
            nodes.push_back(relu(a));
            break;
          case 2:
            nodes.push_back(add(a, b));
            break;
          case 3:
            nodes.push_back(conv2d(a, {.out = 4, .kernel = 3, .pad = 1}));
            break;
          case 4:
            nodes.push_back(dropout(a, 0.25));
            break;
          default:
            nodes.push_back(max_pool2d(a, {.kernel = 3, .stride = 1, .pad = 1}));
            break;
        }
      }
      Value y = nodes.back();
      for (size_t i = 0; i + 1 < nodes.size(); i += 3) y = add(y, nodes[i]);
      return y;
    });
  }
}

TEST_CASE("rebuild: every bundled network at batch 2 gives the same bits with rebuilds") {
  for (const char* name :
       {"small-cnn", "alexnet", "vgg-a", "googlenet", "resnet20", "revnet38", "resnet18"}) {
    CAPTURE(name);
    const std::vector<Tensor> base = train_model(name, MemoryMode::baseline, 2);
    for (Recompute r : {Recompute::cheap, Recompute::all}) {
      CAPTURE(recompute_name(r));
      const std::vector<Tensor> rebuilt = train_model(name, MemoryMode::planned, 2, {}, r);
      REQUIRE(base.size() == rebuilt.size());
      for (size_t i = 0; i < base.size(); ++i) {
        CAPTURE(i);
        CHECK(bitwise_equal(base[i], rebuilt[i]));
      }
    }
  }
}
