// Planner benchmark: a synthetic training step shaped like a deep pre-activation bottleneck
// ResNet on CIFAR (forward values alive until their backward, short-lived gradients, scratch),
// planned by plan_arena; prints buffers, arena, lower bound, the gap between them and the time.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "autograd/tape.h"
#include "core/allocator.h"
#include "memory/eager.h"
#include "memory/encodings.h"
#include "memory/liveness.h"
#include "memory/planner.h"
#include "models/registry.h"
#include "models/step.h"
#include "run/plan.h"

using namespace frugal;

namespace {

// One forward op: what it reads, what its backward reads, its scratch and parameters.
struct Op {
  std::vector<int> inputs;  // values read (-1: the network input)
  size_t out_bytes = 0, param_bytes = 0, saved_bytes = 0, scratch_bytes = 0;
  bool saves_input = false;   // backward reads the inputs (conv, BN, linear)
  bool saves_output = false;  // backward reads the output (ReLU)
  bool in_place = false;      // may take its input's bytes when nothing else needs them
};

struct Net {
  std::vector<Op> ops;  // op k produces value k
  size_t input_bytes = 0;
  int add(Op op) {
    ops.push_back(std::move(op));
    return static_cast<int>(ops.size()) - 1;
  }
};

// Pre-activation bottleneck ResNet for 32x32 images: 3 stages of `blocks` blocks (ResNet-1001 has
// 111), each BN-ReLU-conv1x1, BN-ReLU-conv3x3, BN-ReLU-conv1x1, plus the residual add.
Net resnet(int blocks, size_t batch) {
  const size_t f = 4;  // float32
  Net net;
  net.input_bytes = batch * 3 * 32 * 32 * f;
  auto act = [&](size_t c, size_t hw) { return batch * c * hw * hw * f; };
  auto conv = [&](int x, size_t ci, size_t co, size_t k, size_t hw) {
    const size_t im2col = k == 1 ? 0 : ci * k * k * hw * hw * f;  // one sample's
    return net.add({.inputs = {x},
                    .out_bytes = act(co, hw),
                    .param_bytes = co * ci * k * k * f,
                    .scratch_bytes = im2col,
                    .saves_input = true});
  };
  auto bn_relu = [&](int x, size_t c, size_t hw) {
    x = net.add({.inputs = {x},
                 .out_bytes = act(c, hw),
                 .param_bytes = 2 * c * f,
                 .saved_bytes = 2 * c * f,
                 .saves_input = true});
    return net.add(
        {.inputs = {x}, .out_bytes = act(c, hw), .saves_output = true, .in_place = true});
  };
  int x = conv(-1, 3, 16, 3, 32);
  size_t c_in = 16;
  for (int stage = 0; stage < 3; ++stage) {
    const size_t mid = size_t{16} << stage, c_out = 4 * mid, hw = size_t{32} >> stage;
    for (int b = 0; b < blocks; ++b) {
      int y = conv(bn_relu(x, c_in, hw), c_in, mid, 1, hw);
      y = conv(bn_relu(y, mid, hw), mid, mid, 3, hw);
      y = conv(bn_relu(y, mid, hw), mid, c_out, 1, hw);
      if (c_in != c_out) x = conv(x, c_in, c_out, 1, hw);  // projection shortcut
      x = net.add({.inputs = {y, x}, .out_bytes = act(c_out, hw)});
      c_in = c_out;
    }
  }
  x = bn_relu(x, c_in, 8);
  x = net.add({.inputs = {x}, .out_bytes = batch * c_in * f});  // average pool
  x = net.add({.inputs = {x},
               .out_bytes = batch * 10 * f,
               .param_bytes = 10 * c_in * f,
               .saves_input = true});                                       // linear
  net.add({.inputs = {x}, .out_bytes = f, .saved_bytes = batch * 10 * f});  // loss, softmax kept
  return net;
}

// The training step's buffers on the timeline: forward op k at step k, its backward at 2n-1-k,
// the optimizer at 2n. An in-place op takes its input's bytes when the input dies as it runs.
// `detailed` adds what a finer-grained liveness records per op: forward and backward scratch, a
// saved buffer (BN's normalized input, ReLU's mask) and a temporary for the input gradient.
std::vector<PlanBuffer> training_step(const Net& net, bool detailed) {
  const int n = static_cast<int>(net.ops.size());
  auto bwd = [&](int k) { return 2 * n - 1 - k; };
  std::vector<std::vector<int>> readers(n);
  for (int k = 0; k < n; ++k)
    for (int v : net.ops[k].inputs)
      if (v >= 0) readers[v].push_back(k);
  std::vector<PlanBuffer> buffers;
  buffers.push_back({net.input_bytes, 0, bwd(0), -1});
  std::vector<int> value(n, -1);
  for (int k = 0; k < n; ++k) {
    const Op& op = net.ops[k];
    int last = op.saves_output ? bwd(k) : k;
    for (int r : readers[k]) last = std::max(last, net.ops[r].saves_input ? bwd(r) : r);
    const int in = op.inputs[0];
    const bool in_place = op.in_place && in >= 0 && buffers[value[in]].last == k;
    value[k] = static_cast<int>(buffers.size());
    buffers.push_back({op.out_bytes, k, last, in_place ? value[in] : -1});
    if (op.saved_bytes) buffers.push_back({op.saved_bytes, k, bwd(k), -1});
    if (op.scratch_bytes) buffers.push_back({op.scratch_bytes, k, k, -1});
    if (op.scratch_bytes) buffers.push_back({op.scratch_bytes, bwd(k), bwd(k), -1});
    if (op.param_bytes) buffers.push_back({op.param_bytes, bwd(k), 2 * n, -1});
    if (detailed) {
      const size_t quarter = (op.out_bytes + 3) / 4;
      buffers.push_back({quarter, k, k, -1});
      buffers.push_back({quarter, bwd(k), bwd(k), -1});
      buffers.push_back({op.saves_output ? quarter : op.out_bytes, k, bwd(k), -1});
      buffers.push_back({op.out_bytes, bwd(k), bwd(k), -1});
    }
    // The gradient of this value: made by the backward of its last reader, read by its own.
    if (readers[k].empty()) continue;
    const int made = bwd(*std::max_element(readers[k].begin(), readers[k].end()));
    buffers.push_back({op.out_bytes, made, bwd(k), -1});
    for (size_t r = 0; r + 1 < readers[k].size(); ++r)  // further contributions, summed at once
      buffers.push_back({op.out_bytes, bwd(readers[k][r]), bwd(readers[k][r]), -1});
  }
  return buffers;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

void report(const char* name, const std::vector<PlanBuffer>& buffers, int runs, size_t alignment) {
  std::vector<double> times, cpu_times;  // CPU time too: it holds on a busy machine
  Plan plan;
  for (int run = 0; run < runs; ++run) {
    const auto start = std::chrono::steady_clock::now();
    const std::clock_t cpu_start = std::clock();
    plan = plan_arena(buffers, alignment);
    cpu_times.push_back(1000.0 * double(std::clock() - cpu_start) / CLOCKS_PER_SEC);
    times.push_back(ms_since(start));
  }
  std::sort(times.begin(), times.end());
  std::sort(cpu_times.begin(), cpu_times.end());
  std::string why;
  const auto start = std::chrono::steady_clock::now();
  const bool valid = plan_is_valid(buffers, plan, &why);
  const double check_ms = ms_since(start);
  // Eager: each buffer freed after its last use, an in-place op writing into its input's block
  // (here aliases point to earlier buffers, so a backward pass folds chains into their roots).
  std::vector<EagerEvent> events;
  size_t total = 0;
  for (const PlanBuffer& b : buffers) {
    events.push_back({b.bytes, b.first, b.last});
    total += b.bytes;
  }
  for (size_t i = buffers.size(); i-- > 0;) {
    if (buffers[i].alias_of < 0) continue;
    EagerEvent& root = events[buffers[i].alias_of];
    root.last = std::max(root.last, events[i].last);
    events[i].bytes = 0;
  }
  const EagerResult eager = simulate_caching_allocator(events);
  const double mib = 1024.0 * 1024.0;
  std::printf("%s: %zu buffers, baseline %.1f MiB\n", name, buffers.size(), total / mib);
  std::printf("  planned  arena %.1f MiB, lower bound %.1f MiB, gap %.3f%% (%zu bytes), %s\n",
              plan.arena_bytes / mib, plan.lower_bound / mib,
              100.0 * (double(plan.arena_bytes) / double(plan.lower_bound) - 1.0),
              plan.arena_bytes - plan.lower_bound, plan.strategy.c_str());
  std::printf(
      "  plan_arena %.1f ms (median of %d, min %.1f; CPU, all threads, %.1f), plan_is_valid %.1f "
      "ms: %s\n",
      times[times.size() / 2], runs, times.front(), cpu_times[runs / 2], check_ms,
      valid ? "valid" : why.c_str());
  std::printf("  eager (PyTorch caching allocator) allocated %.1f MiB, reserved %.1f MiB\n",
              eager.peak_allocated / mib, eager.peak_reserved / mib);
}

// The real training step of a bundled network: recorded with shapes only, analyzed as the
// planned executor does (aliases, compact encodings, fused SGD), inputs left out of the arena.
std::vector<PlanBuffer> model_step(const std::string& model, int64_t batch, int* ops) {
  const ModelSpec& spec = find_model(model);
  ParamStore store = ParamStore::shapes_only();
  Tape tape(store, DType::f32);
  const Value loss = record_model_step(tape, spec, batch, Mode::training).loss;
  // The planned executor's own pipeline; only the requests are kept, to plan them again.
  const Layout layout = memory_layout(tape, Mode::training, MemoryMode::planned, cpu_backend(),
                                      {.optimizer = true, .keep = {loss.id()}});
  *ops = layout.live.ops;
  return layout.requests;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_planner: plan_arena on synthetic deep-ResNet training steps"};
  int blocks = 0, runs = 7;
  size_t batch = 64;
  app.add_option("--blocks", blocks, "blocks per stage, 111 for ResNet-1001 (0: the default set)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--batch", batch, "batch size")->check(CLI::PositiveNumber);
  app.add_option("--runs", runs, "timed runs of plan_arena (the median is reported)")
      ->check(CLI::PositiveNumber);
  std::vector<std::string> models;
  app.add_option("--models", models,
                 "bundled networks to plan instead of the synthetic steps ('all' for every one)");
  CLI11_PARSE(app, argc, argv);
  if (!models.empty()) {
    if (models.size() == 1 && models[0] == "all") {
      models.clear();
      for (const ModelSpec& m : model_specs()) models.push_back(m.name);
    }
    for (const std::string& m : models) {
      int ops = 0;
      const auto start = std::chrono::steady_clock::now();
      std::vector<PlanBuffer> buffers = model_step(m, static_cast<int64_t>(batch), &ops);
      const double record_ms = ms_since(start);
      const std::string name = m + " training step, batch " + std::to_string(batch) + ", " +
                               std::to_string(ops) + " ops (record + liveness " +
                               std::to_string(static_cast<int>(record_ms)) + " ms)";
      report(name.c_str(), buffers, runs, cpu_allocator().alignment());  // as the executor plans
    }
    return 0;
  }
  // By default ResNet-1001 as a lean and as a detailed liveness (~24k buffers), and a 3x deeper
  // lean one (~32k buffers on a 3x longer timeline).
  struct Case {
    int blocks;
    bool detailed;
  };
  std::vector<Case> cases = {{111, false}, {111, true}, {333, false}};
  if (blocks > 0) cases = {{blocks, false}, {blocks, true}};
  for (const Case& c : cases) {
    const Net net = resnet(c.blocks, batch);
    const std::string name = "ResNet-" + std::to_string(9 * c.blocks + 2) + " training step (" +
                             (c.detailed ? "detailed" : "lean") + "), batch " +
                             std::to_string(batch) + ", " + std::to_string(net.ops.size()) + " ops";
    report(name.c_str(), training_step(net, c.detailed), runs, 256);
  }
  return 0;
}
