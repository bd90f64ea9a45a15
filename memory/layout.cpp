// The memory layout of a step: encodings, liveness and offsets for baseline or planned memory.
#include "memory/layout.h"

#include <algorithm>

#include "core/error.h"
#include "memory/encodings.h"
#include "memory/rebuild.h"

namespace frugal {

const char* memory_mode_name(MemoryMode m) {
  return m == MemoryMode::planned ? "planned" : "baseline";
}

namespace {

LivenessOptions liveness_options(MemoryMode memory, const LayoutOptions& o) {
  const bool planned = memory == MemoryMode::planned;
  LivenessOptions l;
  l.keep = o.keep;
  l.aliases = planned;
  l.fuse_optimizer = planned;
  l.optimizer = o.optimizer;
  l.keep_param_grads = o.keep_param_grads || !planned;
  if (planned) l.rebuild = o.rebuild;
  l.forward_only = o.forward_only;
  l.grad_bucket_bytes = o.grad_bucket_bytes;
  l.bucket_alignment = o.alignment;
  return l;
}

// Baseline: each buffer its own memory, drawn side by side in buffer order.
Plan side_by_side(const std::vector<PlanBuffer>& requests, size_t alignment) {
  Plan p;
  p.alignment = alignment;
  p.strategy = "baseline: every buffer its own memory";
  for (const PlanBuffer& r : requests) {
    p.offsets.push_back(p.arena_bytes);
    p.arena_bytes += round_up(r.bytes, alignment);
  }
  p.lower_bound = p.arena_bytes;
  return p;
}

}  // namespace

MemoryCategory memory_category(const Buffer& b) {
  switch (b.kind) {
    case BufferKind::input:
      return MemoryCategory::none;
    case BufferKind::value:
    case BufferKind::rebuilt:  // a value's copy rebuilt in backward
      return MemoryCategory::outputs;
    case BufferKind::saved:
    case BufferKind::fwd_scratch:
    case BufferKind::bwd_scratch:
      return MemoryCategory::buffers;
    case BufferKind::grad:
    case BufferKind::grad_temp:
      return b.role == Role::param_grad ? MemoryCategory::param_grads : MemoryCategory::grad_inputs;
    case BufferKind::grad_bucket:
      return MemoryCategory::param_grads;
  }
  return MemoryCategory::none;
}

const char* memory_category_name(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::none:
      return "inputs";
    case MemoryCategory::outputs:
      return "outputs";
    case MemoryCategory::grad_inputs:
      return "gradInputs";
    case MemoryCategory::buffers:
      return "buffers";
    case MemoryCategory::param_grads:
      return "param grads";
  }
  return "?";
}

long long Layout::offset(int i) const {
  const Buffer& b = live.buffers.at(static_cast<size_t>(i));
  if (b.view_of >= 0) {
    const long long owner = offset(b.view_of);
    return owner < 0 ? -1 : owner + static_cast<long long>(b.view_offset);
  }
  const int r = request.at(static_cast<size_t>(i));
  return r < 0 ? -1 : static_cast<long long>(plan.offsets[static_cast<size_t>(r)]);
}

size_t Layout::rounded_bytes(int i) const {
  return round_up(live.buffers.at(static_cast<size_t>(i)).bytes, plan.alignment);
}

std::vector<PlanBuffer> arena_requests(const Liveness& live, bool inputs_in_arena,
                                       std::vector<int>& request) {
  // Requests are numbered first: an alias may name a later buffer (a gradient alias: d input
  // takes d output's bytes).
  auto placed = [&](const Buffer& b) {
    return b.view_of < 0 && (b.kind != BufferKind::input || inputs_in_arena);
  };
  request.assign(live.buffers.size(), -1);
  int count = 0;
  for (size_t i = 0; i < live.buffers.size(); ++i)
    if (placed(live.buffers[i])) request[i] = count++;
  std::vector<PlanBuffer> requests;
  for (size_t i = 0; i < live.buffers.size(); ++i) {
    const Buffer& b = live.buffers[i];
    if (!placed(b)) continue;
    const int alias = b.alias_of >= 0 ? request[static_cast<size_t>(b.alias_of)] : -1;
    requests.push_back({.bytes = b.bytes, .first = b.first, .last = b.last, .alias_of = alias});
  }
  return requests;
}

std::vector<size_t> live_curve(std::span<const PlanBuffer> req, int steps, size_t alignment) {
  std::vector<int> root(req.size());
  for (size_t i = 0; i < req.size(); ++i) root[i] = alias_root(req, static_cast<int>(i));
  std::vector<size_t> bytes(req.size(), 0);
  std::vector<int> first(req.size(), steps), last(req.size(), -1);
  for (size_t i = 0; i < req.size(); ++i) {
    const size_t r = static_cast<size_t>(root[i]);
    bytes[r] = std::max(bytes[r], round_up(req[i].bytes, alignment));
    first[r] = std::min(first[r], req[i].first);
    last[r] = std::max(last[r], req[i].last);
  }
  std::vector<long long> delta(static_cast<size_t>(steps) + 2, 0);
  for (size_t r = 0; r < req.size(); ++r)
    if (last[r] >= 0) {
      delta[static_cast<size_t>(first[r])] += static_cast<long long>(bytes[r]);
      delta[static_cast<size_t>(last[r]) + 1] -= static_cast<long long>(bytes[r]);
    }
  std::vector<size_t> live(static_cast<size_t>(steps) + 1, 0);
  long long cur = 0;
  for (size_t t = 0; t < live.size(); ++t) {
    cur += delta[t];
    live[t] = static_cast<size_t>(cur);
  }
  return live;
}

Layout plan_layout(Step& step, MemoryMode memory, const LayoutOptions& options) {
  FRUGAL_CHECK(options.alignment > 0, "memory layout: alignment must be positive");
  LivenessOptions lo = liveness_options(memory, options);
  const bool choose = !options.encodings_as_recorded;
  int masks = 0;
  if (choose && memory == MemoryMode::planned) masks = choose_encodings(step, lo.keep);
  if (choose && memory != MemoryMode::planned) use_full_encodings(step);
  // Packing first, so that the candidates below, the rebuilds and a budget's fit are chosen
  // over the packed step's arena (an op a rebuild takes is rebuilt, not packed; the packed
  // bytes are outside it). Roles::sparse_outputs is the same in either saved encoding.
  if (memory == MemoryMode::planned && step.mode == Mode::training && !options.forward_only &&
      options.pack)
    for (size_t k = 0; k < step.ops.size(); ++k)
      if (step.ops[k].roles.sparse_outputs) lo.pack.push_back(static_cast<int>(k));
  // Input gradients over inputs (Roles::grad_takes_input) change what the planner packs, and
  // with them a ReLU read by a convolution may keep a mask instead (so that the convolution's
  // input gradient can take its output's bytes): fewer bytes where backward peaks, a mask more
  // until forward ends. Three candidates, each placed by the real planner over the whole
  // training step (a forward-only plan decides as its training twin does: one tape, one
  // encoding per op): neither, the aliases, the aliases with those masks (where the encodings
  // are chosen here); the smallest arena wins, the earlier on a tie.
  if (memory == MemoryMode::planned && step.mode == Mode::training) {
    LivenessOptions whole = lo;
    whole.forward_only = false;
    whole.grads_take_inputs = false;
    size_t best = planned_arena_bytes(step, whole, options.alignment);
    int choice = 0;
    whole.grads_take_inputs = true;
    if (const size_t a = planned_arena_bytes(step, whole, options.alignment); a < best)
      best = a, choice = 1;
    Step freed = step;
    if (choose && choose_encodings(freed, lo.keep, true) != masks &&
        planned_arena_bytes(freed, whole, options.alignment) < best)
      choice = 2;
    if (choice == 2) choose_encodings(step, lo.keep, true);
    lo.grads_take_inputs = choice != 0;
  }
  if (memory == MemoryMode::planned && step.mode == Mode::training && !options.forward_only &&
      options.recompute != Recompute::none) {
    const std::vector<int> chosen = options.recompute == Recompute::all
                                        ? rebuildable_ops(step, /*expensive=*/true)
                                        : choose_rebuilds(step, lo, options.alignment);
    lo.rebuild.insert(lo.rebuild.end(), chosen.begin(), chosen.end());
  }
  if (memory == MemoryMode::planned && step.mode == Mode::training && !options.forward_only &&
      options.rebuild_budget > 0) {
    const RebuildFit fit = fit_rebuilds(step, lo, options.alignment, options.rebuild_budget);
    auto mib = [](size_t b) {
      return detail::concat(static_cast<double>(b) / (1 << 20), " MiB (", b, " bytes)");
    };
    FRUGAL_CHECK(fit.fits, "memory budget ", mib(options.rebuild_budget),
                 " is below the smallest planned arena found, ", mib(fit.arena), ", rebuilding ",
                 fit.rebuild.size(), " op outputs (convolutions included)");
    lo.rebuild.insert(lo.rebuild.end(), fit.rebuild.begin(), fit.rebuild.end());
  }
  Layout l;
  l.memory = memory;
  l.live = analyze(step, lo);
  l.requests = arena_requests(l.live, options.inputs_in_arena, l.request);
  l.plan = memory == MemoryMode::planned ? plan_arena(l.requests, options.alignment)
                                         : side_by_side(l.requests, options.alignment);
  return l;
}

}  // namespace frugal
