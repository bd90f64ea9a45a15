// Memory budgets: the checkpoint DP against brute force on small chains and monotone in the
// budget; ResNet-110 at half its planned peak; the error naming the minimum; a budget's
// schedule of ResNet-20 with measured bytes equal to planned, training bitwise equal to
// storing every activation.
#include <doctest/doctest.h>

#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>

#include "check/gradcheck.h"
#include "core/error.h"
#include "models/registry.h"
#include "models/step.h"
#include "recompute/budget.h"
#include "run/executor.h"
#include "train/step_budget.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// A chain of n blocks with small integer sizes and costs (exact in the DP with unit 1).
std::vector<ChainBlock> random_chain(int n, std::mt19937& rng) {
  auto draw = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<ChainBlock> chain;
  size_t input = static_cast<size_t>(draw(1, 8));
  for (int i = 0; i < n; ++i) {
    ChainBlock b;
    b.input = input;
    b.output = input = static_cast<size_t>(draw(1, 8));
    b.held = static_cast<size_t>(draw(0, 24));
    b.param_grads = static_cast<size_t>(draw(0, 4));
    b.arena = b.input + b.held + b.output + b.param_grads + static_cast<size_t>(draw(0, 12));
    b.flops = draw(1, 20);
    chain.push_back(b);
  }
  return chain;
}

// Every schedule of the chain: each block stored, starting a checkpointed run, or continuing
// the run of the block before.
void each_schedule(int n, const std::function<void(const std::vector<BlockRun>&)>& visit) {
  std::vector<BlockRun> runs;
  std::function<void(int, bool)> go = [&](int i, bool in_run) {
    if (i == n) return visit(runs);
    go(i + 1, false);  // stored
    runs.push_back({i, i + 1});
    go(i + 1, true);  // a new run
    runs.pop_back();
    if (in_run) {
      ++runs.back().end;
      go(i + 1, true);  // the run goes on
      --runs.back().end;
    }
  };
  go(0, false);
}

// Two planned training steps of resnet20 at batch 4 with these runs checkpointed (test
// poisoning on): the losses, the logits, d images and every weight gradient of each step, then
// the updated weights and running statistics.
std::vector<Tensor> train_resnet20(const std::vector<BlockRun>& runs) {
  const std::string name = "resnet20";
  const ModelSpec& spec = find_model(name);
  ParamStore store(5);
  Tape tape(store, DType::f32);
  Value images = tape.input("images", {4, 3, 32, 32}, DType::f32, true);
  Value labels = tape.input("labels", {4}, DType::i32);
  Value logits = spec.build(images, {.checkpoint_runs = runs});
  Value loss = model_loss(spec, logits, labels);
  Executor ex(tape, cpu_backend(),
              {.memory = MemoryMode::planned,
               .poison = true,
               .seed = 3,
               .keep = {loss, logits},
               .keep_param_grads = true,
               .optimizer = OptimizerConfig{.lr = 0.1, .momentum = 0.9}});
  std::vector<Tensor> out;
  for (int s = 0; s < 2; ++s) {
    ex.set_input(images, random_tensor({4, 3, 32, 32}, 10 + s, -1, 1, DType::f32));
    ex.set_input(labels, random_labels(4, 10, 20 + s));
    ex.forward();
    out.push_back(clone(ex.value(loss)));
    out.push_back(clone(ex.value(logits)));
    ex.backward(loss);
    out.push_back(clone(ex.grad(images)));
    for (size_t v = 0; v < tape.values().size(); ++v)
      if (tape.values()[v].kind == ValueKind::param && tape.values()[v].requires_grad)
        out.push_back(clone(ex.grad(Value(&tape, static_cast<int>(v)))));
  }
  for (Parameter* p : store.all()) out.push_back(clone(p->value));
  return out;
}

// The bytes a real training step of `step` takes, as `frugal memory --run` measures them:
// what the executor allocates (beyond the inputs), after checking that a second step
// allocates nothing more.
size_t measured_step_bytes(const TrainingStep& step) {
  const ModelSpec& spec = find_model(step.model);
  ParamStore store(5);
  Tape tape(store, step.dtype);
  Value images = tape.input("images", {step.batch, 3, 32, 32}, step.dtype);
  Value labels = tape.input("labels", {step.batch}, DType::i32);
  Value loss = model_loss(spec, spec.build(images, step.config), labels);
  Allocator& alloc = cpu_allocator();
  const size_t before = alloc.current_bytes();
  Executor ex(tape, cpu_backend(),
              {.memory = MemoryMode::planned,
               .keep = {loss},
               .optimizer = OptimizerConfig{.lr = 0.1, .momentum = 0.9}});
  const size_t held = alloc.current_bytes() - before;
  const size_t inputs = ex.input(images).bytes() + ex.input(labels).bytes();
  for (int s = 0; s < 2; ++s) {
    ex.set_input(images, random_tensor({step.batch, 3, 32, 32}, 10 + s, -1, 1, step.dtype));
    ex.set_input(labels, random_labels(step.batch, 10, 20 + s));
    const size_t settled = alloc.current_bytes();  // after the first step: momentum too
    alloc.reset_peaks();
    ex.forward();
    ex.backward(loss);
    if (s == 1) CHECK(alloc.peak_bytes() == settled);  // the step allocates nothing
  }
  return held - inputs;
}

}  // namespace

// Each schedule again with every subset of its runs rebuilt in two levels, each run with
// lowest_inner (the choice the DP offers), where that inner is not 0.
void each_nested(const std::vector<ChainBlock>& chain, std::vector<BlockRun> runs,
                 const std::function<void(const std::vector<BlockRun>&)>& visit, size_t at = 0) {
  if (at == runs.size()) return visit(runs);
  each_nested(chain, runs, visit, at + 1);
  const int inner = lowest_inner(chain, runs[at].begin, runs[at].end);
  if (inner == 0) return;
  runs[at].inner = inner;
  each_nested(chain, runs, visit, at + 1);
}

TEST_CASE("budget dp matches brute force over every schedule of small chains") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 1 + trial % 7;
    const int levels = 1 + trial % 2;
    const std::vector<ChainBlock> chain = random_chain(n, rng);
    std::map<size_t, double> least;  // peak -> least recompute at exactly that peak
    auto visit = [&](const std::vector<BlockRun>& runs) {
      const size_t peak = chain_peak(chain, runs);
      const double cost = chain_recompute(chain, runs);
      auto [it, added] = least.emplace(peak, cost);
      if (!added) it->second = std::min(it->second, cost);
    };
    each_schedule(n, [&](const std::vector<BlockRun>& runs) {
      if (levels == 1) return visit(runs);
      each_nested(chain, runs, visit);
    });
    const ChainSchedule lowest = min_peak_chain(chain, levels);
    CAPTURE(trial);
    CHECK(lowest.peak == least.begin()->first);
    for (size_t limit = least.begin()->first - 1; limit <= least.rbegin()->first; ++limit) {
      CAPTURE(limit);
      std::optional<double> best;
      for (auto [peak, cost] : least)
        if (peak <= limit && (!best || cost < *best)) best = cost;
      const std::optional<ChainSchedule> s = solve_chain(chain, limit, 1, levels);
      REQUIRE(s.has_value() == best.has_value());
      if (!s) continue;
      CHECK(s->recompute == *best);
      CHECK(s->peak <= limit);
      CHECK(chain_peak(chain, s->checkpointed) == s->peak);
      CHECK(chain_recompute(chain, s->checkpointed) == s->recompute);
    }
  }
}

TEST_CASE("inner checkpoints: their runs, their model and its errors") {
  CHECK(inner_runs({3, 10, 3}) == std::vector<BlockRun>{{3, 6}, {6, 9}});
  CHECK(inner_runs({3, 9, 3}) == std::vector<BlockRun>{{3, 6}});  // the last piece stored
  CHECK(inner_runs({0, 4, 1}) == std::vector<BlockRun>{{0, 1}, {1, 2}, {2, 3}});
  CHECK(inner_runs({0, 4}).empty());
  CHECK(runs_text(std::vector<BlockRun>{{0, 4, 2}, {5, 6}}) == "[0, 4)/2 [5, 6)");
  CHECK_THROWS_WITH_AS(check_block_runs(std::vector<BlockRun>{{0, 4, 4}}, 9),
                       doctest::Contains("a run of 4 blocks takes 1 to 3 (or 0: none)"), Error);
  CHECK_THROWS_AS(check_block_runs(std::vector<BlockRun>{{0, 4, -1}}, 9), Error);
  // Eight equal blocks, one run of all of them: with inner checkpoints of k it keeps k + 8/k
  // blocks' worth at once instead of 8, and rebuilds the inner ones twice.
  const ChainBlock b{.input = 10, .output = 10, .held = 30, .arena = 60, .flops = 1};
  const std::vector<ChainBlock> chain(8, b);
  const std::vector<BlockRun> one{{0, 8}};
  for (int k = 1; k < 8; ++k) {
    CAPTURE(k);
    const std::vector<BlockRun> nested{{0, 8, k}};
    CHECK(chain_peak(chain, nested) < chain_peak(chain, one));
    const int inner_blocks = static_cast<int>(inner_runs(nested[0]).size()) * k;
    CHECK(chain_recompute(chain, nested) == 8 + inner_blocks);
  }
  const int k = lowest_inner(chain, 0, 8);
  CHECK((k == 2 || k == 3));  // about sqrt(8)
  CHECK(min_peak_chain(chain).peak < min_peak_chain(chain, 1).peak);
}

TEST_CASE("budget dp never needs more recompute for a larger budget") {
  std::mt19937 rng(12);
  const std::vector<ChainBlock> chain = random_chain(40, rng);
  const size_t low = min_peak_chain(chain).peak, high = chain_peak(chain, {});
  double previous = std::numeric_limits<double>::infinity();
  for (size_t limit = low; limit <= high; limit += 3) {
    const std::optional<ChainSchedule> s = solve_chain(chain, limit);
    if (!s) continue;  // rounding to units may lose the very lowest limits
    CHECK(s->peak <= limit);
    CHECK(s->recompute <= previous);
    previous = s->recompute;
  }
  CHECK(solve_chain(chain, high)->recompute == 0);  // the all-stored peak needs no recompute
}

TEST_CASE("checkpoint segments cut the chain as PyTorch's checkpoint_sequential does") {
  // checkpoint_sequential(functions, k): k - 1 checkpointed runs of len // k, the rest stored.
  CHECK(segment_runs(4, 54) == std::vector<BlockRun>{{0, 13}, {13, 26}, {26, 39}});
  const std::vector<BlockRun> ten = segment_runs(10, 54);
  REQUIRE(ten.size() == 9);
  for (int i = 0; i < 9; ++i) CHECK(ten[static_cast<size_t>(i)] == BlockRun{5 * i, 5 * i + 5});
  CHECK(segment_runs(3, 9) == std::vector<BlockRun>{{0, 3}, {3, 6}});
  CHECK(segment_runs(9, 9).size() == 8);  // every block its own segment, the last stored
  CHECK(segment_runs(1, 54).empty());
  CHECK(segment_runs(0, 54).empty());
  CHECK_THROWS_AS(segment_runs(55, 54), Error);
}

TEST_CASE("budget parses byte sizes") {
  CHECK(parse_bytes("123456") == 123456);
  CHECK(parse_bytes("200M") == 200u << 20);
  CHECK(parse_bytes("1.5G") == 3u << 29);
  CHECK(parse_bytes("64KiB") == 64u << 10);
  CHECK(parse_bytes("2gb") == 2ull << 30);
  for (const char* bad : {"", "-5M", "1.5", "12Q", "M", "0", "inf", "nanG"})
    CHECK_THROWS_AS(parse_bytes(bad), Error);
}

TEST_CASE("memory budget at half of resnet110's planned training peak fits") {
  const TrainingStep step{.model = "resnet110", .batch = 64};
  const size_t stored = planned_step_peak(step);
  const BudgetSchedule b = fit_step_budget(step, stored / 2);
  CHECK(b.stored_peak == stored);
  CHECK(b.planned_peak <= stored / 2);
  CHECK(!b.schedule.checkpointed.empty());
  CHECK(b.schedule.recompute > 0);
  TrainingStep chosen = step;
  chosen.config.checkpoint_runs = b.schedule.checkpointed;
  CHECK(planned_step_peak(chosen) == b.planned_peak);  // the real plan, not the model
  MESSAGE("resnet110 batch 64: stored ", stored, " bytes, budget ", stored / 2, ", planned ",
          b.planned_peak, ", runs ", runs_text(b.schedule.checkpointed));
}

// Two levels reach below the least one-level peak on a deep chain, in the model and in the
// real plan, and a budget there fits.
TEST_CASE("two-level checkpoints take resnet110 below the least one-level peak") {
  const TrainingStep step{.model = "resnet110", .batch = 16};
  const std::vector<ChainBlock> chain = measure_chain(step);
  const ChainSchedule one = min_peak_chain(chain, 1), two = min_peak_chain(chain);
  CHECK(two.peak < one.peak);
  int nested = 0;
  for (const BlockRun& r : two.checkpointed) nested += r.inner > 0;
  CHECK(nested > 0);
  TrainingStep s1 = step, s2 = step;
  s1.config.checkpoint_runs = one.checkpointed;
  s2.config.checkpoint_runs = two.checkpointed;
  const size_t real1 = planned_step_peak(s1), real2 = planned_step_peak(s2);
  CHECK(real2 < real1);
  const BudgetSchedule b = fit_step_budget(step, real1 - 1);
  CHECK(b.planned_peak < real1);
  MESSAGE("resnet110 batch 16: least peak one level ", real1, " bytes, two levels ", real2, " (",
          runs_summary(two.checkpointed, 54), "); budget ", real1 - 1, ": ", b.planned_peak,
          " with ", runs_summary(b.schedule.checkpointed, 54));
}

// The model's two least peaks can be close enough for the real plans to order them otherwise
// (ResNet-56 at batch 32: its nested least peak plans 75 KB above its one-level one), so the
// minimum with two levels plans both and is never the higher.
// What `frugal memory` reports as rebuilt beyond the outer runs: the inner runs' blocks once
// more, as the chain model counts them.
TEST_CASE("inner checkpoints' flops are the model's second rebuild") {
  const TrainingStep step{.model = "resnet20", .batch = 4};
  const std::vector<ChainBlock> chain = measure_chain(step);
  for (const std::vector<BlockRun>& runs :
       {std::vector<BlockRun>{{0, 5, 2}, {5, 9, 1}}, {{1, 8, 3}}, {{0, 4}}}) {
    CAPTURE(runs_text(runs));
    ParamStore store = ParamStore::shapes_only();
    Tape tape(store);
    record_model_step(tape, find_model(step.model), step.batch, Mode::training,
                      {.checkpoint_runs = runs});
    std::vector<BlockRun> outer = runs;
    for (BlockRun& r : outer) r.inner = 0;
    const double second = chain_recompute(chain, runs) - chain_recompute(chain, outer);
    CHECK(inner_checkpoint_flops(tape) == doctest::Approx(second).epsilon(1e-12));
  }
}

TEST_CASE("two levels never name a higher minimum than one") {
  for (auto [model, batch] : {std::pair{"resnet20", 8}, {"resnet56", 32}, {"resnet110", 16}}) {
    CAPTURE(model);
    TrainingStep one{.model = model, .batch = batch, .checkpoint_levels = 1};
    TrainingStep two = one;
    two.checkpoint_levels = 2;
    CHECK(minimum_step_memory(two).planned_peak <= minimum_step_memory(one).planned_peak);
  }
}

TEST_CASE("an impossible memory budget names the minimum") {
  const TrainingStep step{.model = "resnet110", .batch = 64};
  const BudgetSchedule least = minimum_step_memory(step);
  CHECK(least.planned_peak < least.stored_peak / 4);
  const std::string minimum = bytes_text(least.planned_peak);
  try {
    fit_step_budget(step, 50u << 20);
    FAIL("a 50 MiB budget for resnet110 at batch 64 was accepted");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.find("memory budget 50.0 MiB (52428800 bytes) is below the minimum " + minimum) !=
          std::string::npos);
    CHECK(what.find("resnet110 batch 64") != std::string::npos);
  }
  // The minimum itself fits.
  CHECK(fit_step_budget(step, least.planned_peak).planned_peak <= least.planned_peak);
  CHECK_THROWS_WITH_AS(fit_step_budget({.model = "vgg16", .batch = 2}, 1u << 30),
                       doctest::Contains("vgg16 has no chain of blocks"), Error);
}

TEST_CASE("budget schedule of resnet20 measures its planned bytes and trains bitwise equal") {
  const TrainingStep step{.model = "resnet20", .batch = 4};
  const size_t stored = planned_step_peak(step);
  const size_t least = minimum_step_memory(step).planned_peak;
  const BudgetSchedule b = fit_step_budget(step, (stored + least) / 2);
  REQUIRE(!b.schedule.checkpointed.empty());
  CHECK(b.planned_peak <= (stored + least) / 2);
  TrainingStep chosen = step;
  chosen.config.checkpoint_runs = b.schedule.checkpointed;
  CHECK(measured_step_bytes(chosen) == b.planned_peak);  // measured equals planned
  const std::vector<Tensor> plain = train_resnet20({});
  const std::vector<Tensor> budgeted = train_resnet20(b.schedule.checkpointed);
  REQUIRE(plain.size() == budgeted.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    CAPTURE(i);
    CHECK(bitwise_equal(plain[i], budgeted[i]));
  }
  // Runs with inner checkpoints, the stride-2 blocks inside them.
  const std::vector<BlockRun> nested{{0, 5, 2}, {5, 9, 1}};
  chosen.config.checkpoint_runs = nested;
  CHECK(measured_step_bytes(chosen) == planned_step_peak(chosen));
  const std::vector<Tensor> two = train_resnet20(nested);
  REQUIRE(plain.size() == two.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    CAPTURE(i);
    CHECK(bitwise_equal(plain[i], two[i]));
  }
}
