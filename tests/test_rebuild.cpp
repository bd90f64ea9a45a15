// Op-level recomputation: outputs dropped after forward and rebuilt in backward, just before
// their first backward reader. Lifetimes on a small chain, the cheap choice, memory budgets
// (convolutions rebuilt), cut values, forward-only plans, and bitwise equality with the step
// that keeps everything on every bundled network, on random DAGs and with dropout. Past 400
// lines: each case is the one property (rebuilt == stored, bit for bit, or a plan's bytes) on
// another kind of graph, sharing this file's train and plan helpers.
#include <doctest/doctest.h>

#include <limits>

#include "check/modecheck.h"
#include "layers/add.h"
#include "layers/avgpool2d.h"
#include "layers/batchnorm2d.h"
#include "layers/concat.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/relu.h"
#include "layers/softmax_cross_entropy.h"
#include "memory/rebuild.h"
#include "models/registry.h"
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

namespace {

// Two SGD steps of a bundled network at batch 2: baseline against planned with the cheap
// rebuilds and with every rebuild (convolutions too), bit for bit.
void check_network_rebuilds(const char* name) {
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

}  // namespace

// One of each family (the VGGs, the deeper CIFAR ResNets and RevNets repeat these blocks).
TEST_CASE("rebuild: the CIFAR-size bundled networks give the same bits with rebuilds") {
  for (const char* name : {"small-cnn", "resnet20", "revnet38", "densenet40"})
    check_network_rebuilds(name);
}

// The ImageNet-size ones in two cases, which CTest can run side by side.
TEST_CASE("rebuild: AlexNet, VGG-A and GoogLeNet give the same bits with rebuilds") {
  for (const char* name : {"alexnet", "vgg-a", "googlenet"}) check_network_rebuilds(name);
}

TEST_CASE("rebuild: ResNet-18, ResNet-50 and DenseNet-121 give the same bits with rebuilds") {
  for (const char* name : {"resnet18", "resnet50", "densenet121"}) check_network_rebuilds(name);
}

TEST_CASE(
    "rebuild: under a budget that needs segments, blocks and ops stay stored where they fit") {
  // GoogLeNet at batch 16 with 55% of its arena (planned only, nothing allocated): segments
  // rebuild nearly the whole forward; the blocks (between cut values) and the expensive ops
  // that still fit stay stored.
  auto plan = [](int64_t batch, double share) {
    ParamStore store = ParamStore::shapes_only();
    Tape tape(store, DType::f32);
    const ModelSpec& spec = find_model("googlenet");
    Value x =
        tape.input("images", {batch, spec.input[0], spec.input[1], spec.input[2]}, DType::f32);
    Value labels = tape.input("labels", {batch}, DType::i32);
    Value loss = softmax_cross_entropy(spec.build(x, {}), labels);
    const Step step = lower_step(tape, Mode::training, cpu_backend());
    LayoutOptions o{.optimizer = true, .keep = {loss.id()}};
    const size_t none =
        memory_layout(tape, Mode::training, MemoryMode::planned, cpu_backend(), o).plan.arena_bytes;
    o.rebuild_budget = static_cast<size_t>(share * static_cast<double>(none));
    const Layout L = memory_layout(tape, Mode::training, MemoryMode::planned, cpu_backend(), o);
    double flops = 0, forward = 0;
    for (size_t k = 0; k < step.ops.size(); ++k)
      if (L.live.op_rebuild_step[k] >= 0) flops += step.ops[k].roles.rebuild_flops;
    for (int k : rebuildable_ops(step, true))
      forward += step.ops[static_cast<size_t>(k)].roles.rebuild_flops;
    MESSAGE("googlenet b", batch, ": arena ", none, " bytes, with a budget of ", o.rebuild_budget,
            ": ", L.plan.arena_bytes, " bytes, rebuilding ", flops / forward,
            " of the rebuildable forward flops");
    CHECK(L.plan.arena_bytes <= o.rebuild_budget);
    CHECK(flops > 0);
    return std::pair<double, size_t>{flops / forward, o.rebuild_budget};
  };
  CHECK(plan(16, 0.55).first < 0.5);  // segments alone: 0.58
  // Training at batch 2 under such a budget gives the baseline's bits.
  const size_t budget = plan(2, 0.7).second;
  const std::vector<Tensor> base = train_model("googlenet", MemoryMode::baseline, 2);
  const std::vector<Tensor> fitted =
      train_model("googlenet", MemoryMode::planned, 2, {}, Recompute::none, budget);
  REQUIRE(base.size() == fitted.size());
  for (size_t i = 0; i < base.size(); ++i) {
    CAPTURE(i);
    CHECK(bitwise_equal(base[i], fitted[i]));
  }
}

TEST_CASE("rebuild: uneven segments and a stored tail fit ResNet-50 in less, rebuilding less") {
  // ResNet-50 at batch 8, planned only. Uniform segments keep every m-th cut value; the
  // search also moves kept cuts one at a time and stores a tail of late blocks: its smallest
  // arena is below every uniform spacing's, and under a budget that a uniform spacing meets it
  // rebuilds far less of the forward.
  ParamStore store = ParamStore::shapes_only();
  Tape tape(store, DType::f32);
  const ModelSpec& spec = find_model("resnet50");
  Value x = tape.input("images", {8, spec.input[0], spec.input[1], spec.input[2]}, DType::f32);
  Value labels = tape.input("labels", {8}, DType::i32);
  softmax_cross_entropy(spec.build(x, {}), labels);
  const Step step = lower_step(tape, Mode::training, cpu_backend());
  LivenessOptions lo;
  lo.optimizer = true;
  const std::vector<int> cuts = cut_values(step);
  const std::vector<int> all = rebuildable_ops(step, true);
  auto arena = [&](const std::vector<int>& set) {
    LivenessOptions o = lo;
    o.rebuild = set;
    return planned_arena_bytes(step, o, 64);
  };
  size_t uniform = std::numeric_limits<size_t>::max();
  for (size_t m = 2; m <= cuts.size(); ++m) {
    std::vector<bool> keep(step.ops.size(), false);
    for (size_t c = m - 1; c < cuts.size(); c += m)
      keep[static_cast<size_t>(step.value(cuts[c]).producer)] = true;
    std::vector<int> set;
    for (int p : all)
      if (!keep[static_cast<size_t>(p)]) set.push_back(p);
    uniform = std::min(uniform, arena(set));
  }
  const RebuildFit least = fit_rebuilds(step, lo, 64, 1 << 20);
  CHECK_FALSE(least.fits);
  MESSAGE("resnet50 b8: smallest uniform-segment arena ", uniform, " bytes, found ", least.arena);
  CHECK(least.arena < uniform * 0.97);
  CHECK(arena(least.rebuild) == least.arena);
  // A budget between the two fits now; one a uniform spacing meets rebuilds less than half
  // the forward's flops.
  auto share = [&](const std::vector<int>& set) {
    double flops = 0, forward = 0;
    for (int p : set) flops += step.ops[static_cast<size_t>(p)].roles.rebuild_flops;
    for (int p : all) forward += step.ops[static_cast<size_t>(p)].roles.rebuild_flops;
    return flops / forward;
  };
  const RebuildFit between = fit_rebuilds(step, lo, 64, (uniform + least.arena) / 2);
  CHECK(between.fits);
  CHECK(between.arena <= (uniform + least.arena) / 2);
  const size_t roomy = uniform * 5 / 4;
  const RebuildFit fit = fit_rebuilds(step, lo, 64, roomy);
  REQUIRE(fit.fits);
  CHECK(arena(fit.rebuild) <= roomy);
  MESSAGE("budget ", roomy, " bytes: ", fit.arena, ", rebuilding ", share(fit.rebuild),
          " of the forward's flops");
  CHECK(share(fit.rebuild) < 0.5);
}

TEST_CASE("rebuild: cut values of a residual chain are its block outputs") {
  ParamStore store = ParamStore::shapes_only();
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {2, 3, 8, 8}, DType::f32);
  conv2d(residual_blocks(x, 3), {.out = 4, .kernel = 1});
  const Step step = lower_step(tape, Mode::training, cpu_backend());
  const std::vector<int> cuts = cut_values(step);
  std::vector<int> block_outputs;  // the stem's relu and each block's last relu
  for (int r : {0, 2, 4, 6})
    block_outputs.push_back(tape.ops()[op_index(tape, "relu", r)].outputs[0]);
  for (int v : block_outputs) CHECK(std::count(cuts.begin(), cuts.end(), v) == 1);
  // Inside a block two values cross (the block input and the branch), so nothing there is a cut.
  CHECK(std::count(cuts.begin(), cuts.end(), tape.ops()[op_index(tape, "relu", 1)].outputs[0]) ==
        0);
}

TEST_CASE("rebuild: a memory budget rebuilds convolutions when it must, with the same bits") {
  const Net net = [](Value x) { return residual_blocks(x, 4); };
  const Shape input{8, 4, 16, 16};
  // The arenas of the two-step training check's tape, planned without and with a budget.
  auto arena = [&](size_t budget, Recompute r) {
    ParamStore store = ParamStore::shapes_only();
    Tape tape(store, DType::f32);
    Value x = tape.input("x", input, DType::f32, true);
    Value labels = tape.input("labels", {input[0]}, DType::i32);
    Value loss = softmax_cross_entropy(linear(flatten(net(x)), {.out = 5}), labels);
    LayoutOptions o{
        .optimizer = true, .keep = {loss.id()}, .recompute = r, .rebuild_budget = budget};
    const Layout L = memory_layout(tape, Mode::training, MemoryMode::planned, cpu_backend(), o);
    int convs = 0;
    for (size_t k = 0; k < tape.ops().size(); ++k)
      convs += L.live.op_rebuild_step[k] >= 0 && tape.ops()[k].op->name() == "conv2d";
    return std::pair<size_t, int>{L.plan.arena_bytes, convs};
  };
  const auto [cheap, cheap_convs] = arena(0, Recompute::cheap);
  CHECK(cheap_convs == 0);  // the cheap choice never rebuilds a convolution
  const size_t budget = cheap * 3 / 4;
  const auto [fitted, convs] = arena(budget, Recompute::none);
  MESSAGE("cheap rebuilds: ", cheap, " bytes; budget ", budget, ": ", fitted, " bytes, ", convs,
          " convolutions rebuilt");
  CHECK(fitted <= budget);
  CHECK(convs > 0);
  // An impossible budget names the smallest arena found.
  CHECK_THROWS_WITH_AS(arena(1024, Recompute::none),
                       doctest::Contains("is below the smallest planned arena found"), Error);
  // Training under the budget gives the baseline's bits.
  const std::vector<Tensor> base = train_two_steps(net, MemoryMode::baseline, input);
  ParamStore store(3);
  Tape tape(store, DType::f32);
  Value x = tape.input("x", input, DType::f32, true);
  Value labels = tape.input("labels", {input[0]}, DType::i32);
  Value loss = softmax_cross_entropy(linear(flatten(net(x)), {.out = 5}), labels);
  Executor ex(tape, cpu_backend(),
              {.memory = MemoryMode::planned,
               .poison = true,
               .seed = 2,
               .keep = {loss},
               .optimizer = OptimizerConfig{.lr = 0.1, .momentum = 0.9},
               .rebuild_budget = budget});
  CHECK(ex.arena_bytes() <= budget);
  std::vector<Tensor> out;
  for (int s = 0; s < 2; ++s) {
    ex.set_input(x, random_tensor(input, 10 + s, -1, 1, DType::f32));
    ex.set_input(labels, random_labels(input[0], 5, 20 + s));
    ex.forward();
    out.push_back(clone(ex.value(loss)));
    ex.backward(loss);
    out.push_back(clone(ex.grad(x)));
  }
  for (Parameter* p : store.all()) out.push_back(clone(p->value));
  REQUIRE(out.size() == base.size());
  for (size_t i = 0; i < out.size(); ++i) {
    CAPTURE(i);
    CHECK(bitwise_equal(out[i], base[i]));
  }
}

TEST_CASE("rebuild: forward-only training plans give forward's bits in less memory") {
  ParamStore store(2);
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {4, 3, 8, 8}, DType::f32, true);
  Value y = dropout(residual_blocks(x, 2), 0.25);
  auto run = [&](bool forward_only) {
    Executor ex(tape, cpu_backend(),
                {.memory = MemoryMode::planned,
                 .poison = true,
                 .seed = 5,
                 .keep = {y},
                 .forward_only = forward_only});
    ex.set_input(x, random_tensor({4, 3, 8, 8}, 1, -1, 1, DType::f32));
    ex.forward();
    if (forward_only)
      CHECK_THROWS_WITH_AS(ex.backward(std::span<const std::pair<Value, Tensor>>()),
                           "executor: backward on a forward-only executor", Error);
    return std::pair<Tensor, size_t>{clone(ex.value(y)), ex.arena_bytes()};
  };
  const auto [full, full_bytes] = run(false);
  const auto [fwd, fwd_bytes] = run(true);
  CHECK(bitwise_equal(full, fwd));
  CHECK(fwd_bytes < full_bytes);
}
