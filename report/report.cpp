// Memory report: baseline sums, eager simulation, planned arena.
#include "report/report.h"
#include "run/plan.h"

#include <algorithm>

#include "autograd/tape.h"
#include "memory/eager.h"
#include "memory/layout.h"

namespace frugal {

namespace {

size_t* category(CategoryBytes& c, const Buffer& b) {
  switch (memory_category(b)) {
    case MemoryCategory::none:
      return nullptr;
    case MemoryCategory::outputs:
      return &c.outputs;
    case MemoryCategory::grad_inputs:
      return &c.grad_inputs;
    case MemoryCategory::buffers:
      return &c.buffers;
    case MemoryCategory::param_grads:
      return &c.params;
  }
  return nullptr;
}

struct ParamTotals {
  size_t weights = 0, trainable = 0;
};

ParamTotals param_totals(const Tape& tape) {
  ParamTotals t;
  for (Parameter* p : tape.params().all()) {
    t.weights += p->meta.bytes();
    if (p->trainable) t.trainable += p->meta.bytes();
  }
  return t;
}

}  // namespace

CategoryBytes peak_by_category(const Liveness& live) {
  // Per category, a difference array over the timeline; an alias group counts once, as its
  // root, over the union of its members' lifetimes.
  const size_t steps = static_cast<size_t>(live.steps) + 1;
  std::vector<int> first(live.buffers.size()), last(live.buffers.size());
  std::vector<int> root(live.buffers.size());
  for (size_t i = 0; i < live.buffers.size(); ++i) {
    root[i] = live.alias_root(static_cast<int>(i));
    first[i] = live.buffers[i].first;
    last[i] = live.buffers[i].last;
  }
  for (size_t i = 0; i < live.buffers.size(); ++i) {
    const size_t r = static_cast<size_t>(root[i]);
    first[r] = std::min(first[r], live.buffers[i].first);
    last[r] = std::max(last[r], live.buffers[i].last);
  }
  CategoryBytes dummy, peak;
  std::vector<std::vector<long long>> delta(3, std::vector<long long>(steps + 1, 0));
  auto slot = [&](const Buffer& b) -> int {
    size_t* p = category(dummy, b);
    if (p == &dummy.outputs) return 0;
    if (p == &dummy.grad_inputs) return 1;
    if (p == &dummy.buffers) return 2;
    return -1;
  };
  size_t param_grads = 0;
  for (size_t i = 0; i < live.buffers.size(); ++i) {
    const Buffer& b = live.buffers[i];
    if (root[i] != static_cast<int>(i)) continue;
    if (b.role == Role::param_grad) {
      // Fused updates free weight gradients early; report their peak with the params.
      continue;
    }
    int s = slot(b);
    if (s < 0) continue;
    delta[static_cast<size_t>(s)][static_cast<size_t>(first[i])] += static_cast<long long>(b.bytes);
    delta[static_cast<size_t>(s)][static_cast<size_t>(last[i]) + 1] -=
        static_cast<long long>(b.bytes);
  }
  std::vector<long long> pg(steps + 1, 0);
  for (const Buffer& b : live.buffers)
    if (b.role == Role::param_grad && b.alias_of < 0 && b.view_of < 0) {
      pg[static_cast<size_t>(b.first)] += static_cast<long long>(b.bytes);
      pg[static_cast<size_t>(b.last) + 1] -= static_cast<long long>(b.bytes);
    }
  size_t* out[3] = {&peak.outputs, &peak.grad_inputs, &peak.buffers};
  for (size_t c = 0; c < 3; ++c) {
    long long cur = 0;
    for (size_t t = 0; t < steps; ++t) {
      cur += delta[c][t];
      *out[c] = std::max(*out[c], static_cast<size_t>(cur));
    }
  }
  long long cur = 0;
  for (size_t t = 0; t < steps; ++t) {
    cur += pg[t];
    param_grads = std::max(param_grads, static_cast<size_t>(cur));
  }
  peak.params = param_grads;
  return peak;
}

namespace {
// One tensor per trainable parameter for SGD's momentum, two for AdamW's moments.
size_t optimizer_state_bytes(const ParamTotals& params, const ReportOptions& options) {
  return params.trainable * (options.optimizer_kind == OptimizerKind::adamw ? 2 : 1);
}
}  // namespace

LayoutOptions report_layout_options(Mode mode, const ReportOptions& options) {
  return {.optimizer = mode == Mode::training && options.optimizer,
          .keep = options.keep,
          .alignment = options.alignment,
          .workspace_limit = options.workspace_limit,
          .workspace_growth = options.workspace_growth,
          .recompute = options.recompute,
          .pack = options.pack,
          .rebuild_budget = options.rebuild_budget};
}

MemoryReport memory_report(Tape& tape, Mode mode, const Backend& backend,
                           const ReportOptions& options) {
  MemoryReport r;
  r.mode = mode;
  r.dtype = tape.dtype();
  const bool training = mode == Mode::training;
  const bool optimizer = training && options.optimizer;
  const ParamTotals params = param_totals(tape);
  const size_t momentum = optimizer ? optimizer_state_bytes(params, options) : 0;

  const LayoutOptions lo = report_layout_options(mode, options);

  // Baseline: Torch's modules, full encodings, every buffer its own memory.
  const Liveness base = memory_layout(tape, mode, MemoryMode::baseline, backend, lo).live;
  for (const Buffer& b : base.buffers)
    if (size_t* c = category(r.baseline.bytes, b)) *c += b.bytes;
  r.baseline.bytes.params += params.weights;
  if (!training) r.baseline.bytes.params += params.trainable;  // gradWeight from construction
  r.baseline.bytes.optimizer_state = momentum;
  const CategoryBytes& bb = r.baseline.bytes;
  r.baseline.total = bb.outputs + bb.grad_inputs + bb.buffers + bb.params;

  // Eager: PyTorch frees at the last reference; its caching allocator serves the requests.
  // Eager runs the same ops as baseline, each buffer freed after its last use.
  const Liveness& eager_live = base;
  std::vector<EagerEvent> events;
  for (const Buffer& b : eager_live.buffers)
    if (b.kind != BufferKind::input && b.view_of < 0) {
      // Weight gradients stay allocated between steps (set_to_none=False, the old default).
      int last = b.role == Role::param_grad ? eager_live.final_step() : b.last;
      events.push_back({b.bytes, b.first, last});
    }
  const EagerResult sim = simulate_caching_allocator(events);
  r.eager.bytes = peak_by_category(eager_live);
  r.eager.bytes.params += params.weights;
  r.eager.bytes.optimizer_state = momentum;
  r.eager.arena = sim.peak_reserved;
  r.eager.total = sim.peak_reserved + params.weights;

  r.planned = planned_memory(tape, mode, backend, options);
  return r;
}

ModeMemory planned_memory(Tape& tape, Mode mode, const Backend& backend,
                          const ReportOptions& options, Layout* planned) {
  const ParamTotals params = param_totals(tape);
  const bool optimizer = mode == Mode::training && options.optimizer;
  Layout local;
  Layout& layout = planned ? *planned : local;
  layout =
      memory_layout(tape, mode, MemoryMode::planned, backend, report_layout_options(mode, options));
  ModeMemory m;
  m.bytes = peak_by_category(layout.live);
  m.bytes.params += params.weights;
  m.bytes.optimizer_state = optimizer ? optimizer_state_bytes(params, options) : 0;
  m.arena = layout.plan.arena_bytes;
  m.lower_bound = layout.plan.lower_bound;
  m.total = layout.plan.arena_bytes + params.weights;
  for (int k = 0; k < layout.live.ops; ++k) {
    if (!layout.live.packed[static_cast<size_t>(k)]) continue;
    for (int v : tape.ops()[static_cast<size_t>(k)].outputs) {
      ++m.packed_outputs;
      m.packed_dense += tape.value(v).meta.bytes();
    }
  }
  return m;
}

RebuildSummary rebuild_summary(const Tape& tape, const Layout& layout) {
  RebuildSummary s;
  const Liveness& L = layout.live;
  for (int k = 0; k < L.ops; ++k) {
    if (L.op_rebuild_step[static_cast<size_t>(k)] < 0 || L.packed[static_cast<size_t>(k)]) continue;
    const Roles& r = L.roles[static_cast<size_t>(k)];
    ++s.ops;
    s.rebuilt.push_back(k);
    s.flops += r.rebuild_flops;
    s.bytes += r.rebuild_bytes;
    const std::string name = tape.ops()[static_cast<size_t>(k)].op->name();
    auto it = std::find_if(s.by_name.begin(), s.by_name.end(),
                           [&](const auto& e) { return e.first == name; });
    if (it == s.by_name.end())
      s.by_name.emplace_back(name, 1);
    else
      ++it->second;
  }
  return s;
}

std::string RebuildSummary::text() const {
  std::string t;
  for (const auto& [name, n] : by_name)
    t += (t.empty() ? "" : ", ") + std::to_string(n) + " " + name;
  return t.empty() ? "none" : t;
}

}  // namespace frugal
