// Choosing which op outputs a planned training step rebuilds in backward: the free rebuilds, a
// greedy over the peak, then segments (memory/rebuild_segments.cpp).
#include "memory/rebuild.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "memory/layout.h"
#include "memory/planner.h"
#include "memory/rebuild_segments.h"

namespace frugal {

std::vector<int> rebuildable_ops(const Step& step, bool expensive) {
  std::vector<int> ops;
  for (size_t k = 0; k < step.ops.size(); ++k) {
    const Roles& r = step.ops[k].roles;
    if (r.rebuildable && (expensive || !r.rebuild_expensive)) ops.push_back(static_cast<int>(k));
  }
  return ops;
}

size_t planned_arena_bytes(const Step& step, const LivenessOptions& options, size_t alignment) {
  std::vector<int> request;
  return plan_arena(arena_requests(analyze(step, options), false, request), alignment).arena_bytes;
}

namespace {

class Chooser {
 public:
  Chooser(const Step& step, const LivenessOptions& options)
      : step_(step), options_(options), natural_(analyze(step, without_rebuilds(options))) {
    candidate_.assign(step.ops.size(), false);
    for (int k : rebuildable_ops(step)) candidate_[static_cast<size_t>(k)] = true;
  }

  // Heads (rebuildable ops whose outputs some backward reads) in tape order, each with the
  // rebuildable producers that only its rebuild would read, kept where nothing costs more.
  std::vector<int> choose() {
    std::vector<int> chosen;
    std::vector<bool> in(step_.ops.size(), false);
    for (size_t p = 0; p < step_.ops.size(); ++p) {
      if (!candidate_[p] || in[p] || need(static_cast<int>(p)) < 0) continue;
      std::vector<int> trial = chosen;
      std::vector<bool> trial_in = in;
      add_closure(static_cast<int>(p), trial, trial_in);
      std::sort(trial.begin(), trial.end());
      if (!costs_nothing(trial)) continue;
      chosen = std::move(trial);
      in = std::move(trial_in);
    }
    return chosen;
  }

 private:
  static LivenessOptions without_rebuilds(LivenessOptions o) {
    o.rebuild.clear();
    return o;
  }

  // The first backward step that reads one of op k's outputs, or -1.
  int need(int k) const {
    int s = -1;
    for (int v : step_.ops[static_cast<size_t>(k)].outputs) {
      const int f = natural_.first_backward_read[static_cast<size_t>(v)];
      if (f >= 0) s = s < 0 ? f : std::min(s, f);
    }
    return s;
  }

  // p, and the rebuildable producers of what p's rebuild reads that nothing else reads in
  // backward (they are rebuilt only for p), recursively.
  void add_closure(int p, std::vector<int>& set, std::vector<bool>& in) const {
    if (in[static_cast<size_t>(p)]) return;
    in[static_cast<size_t>(p)] = true;
    set.push_back(p);
    const StepOp& op = step_.ops[static_cast<size_t>(p)];
    for (int slot : op.roles.rebuild_reads_inputs) {
      const StepValue& u = step_.value(op.inputs[static_cast<size_t>(slot)]);
      if (u.kind != StepValueKind::op_output) continue;
      if (candidate_[static_cast<size_t>(u.producer)] && need(u.producer) < 0)
        add_closure(u.producer, set, in);
    }
  }

  // No rebuild of `set` reads a value past the end of its natural lifetime, nor rebuilds
  // one earlier than its own backward readers would.
  bool costs_nothing(const std::vector<int>& set) const {
    LivenessOptions o = options_;
    o.rebuild = set;
    const Liveness L = analyze(step_, o);
    for (int p : set) {
      const int s = L.op_rebuild_step[static_cast<size_t>(p)];
      if (s < 0) continue;
      const StepOp& op = step_.ops[static_cast<size_t>(p)];
      for (int slot : op.roles.rebuild_reads_inputs) {
        const int v = op.inputs[static_cast<size_t>(slot)];
        const StepValue& u = step_.value(v);
        if (u.kind != StepValueKind::op_output) continue;
        if (L.op_rebuild_step[static_cast<size_t>(u.producer)] >= 0) {
          const int own = need(u.producer);
          if (own >= 0 && own > s) return false;  // rebuilt earlier than its readers need
        } else {
          const int b = natural_.value_buffer[static_cast<size_t>(v)];
          if (natural_.buffers[static_cast<size_t>(b)].last < s) return false;  // kept longer
        }
      }
    }
    return true;
  }

  const Step& step_;
  LivenessOptions options_;
  Liveness natural_;
  std::vector<bool> candidate_;
};

}  // namespace

std::vector<int> free_rebuilds(const Step& step, const LivenessOptions& options) {
  if (step.mode != Mode::training) return {};
  return Chooser(step, options).choose();
}

std::vector<int> choose_rebuilds(const Step& step, const LivenessOptions& options,
                                 size_t alignment) {
  if (step.mode != Mode::training) return {};
  auto arena = [&](const std::vector<int>& set) {
    LivenessOptions o = options;
    o.rebuild.insert(o.rebuild.end(), set.begin(), set.end());
    return planned_arena_bytes(step, o, alignment);
  };
  // The candidates, each placed by the real planner; the smallest arena wins, the one with
  // fewer rebuilds on a tie (none, then the free rebuilds, then all of them).
  std::vector<int> best;
  size_t best_arena = arena(best);
  for (std::vector<int> set : {free_rebuilds(step, options), rebuildable_ops(step)}) {
    if (set.empty()) continue;
    const size_t a = arena(set);
    if (a < best_arena) {
      best = std::move(set);
      best_arena = a;
    }
  }
  return best;
}

std::vector<int> cut_values(const Step& step) {
  // Between op p and p + 1, the op outputs produced at or before p that an op after p reads:
  // a difference array over the gaps of each value's [producer, last forward reader).
  const int n = static_cast<int>(step.ops.size());
  std::vector<int> crossing(static_cast<size_t>(n) + 1, 0), last_reader(step.values.size(), -1);
  for (size_t v = 0; v < step.values.size(); ++v) {
    const StepValue& u = step.values[v];
    if (u.kind != StepValueKind::op_output) continue;
    for (int c : u.consumers) last_reader[v] = std::max(last_reader[v], c);
    if (last_reader[v] > u.producer) {
      ++crossing[static_cast<size_t>(u.producer)];
      --crossing[static_cast<size_t>(last_reader[v])];
    }
  }
  std::vector<int> cuts;
  int live = 0;
  for (int p = 0; p + 1 < n; ++p) {
    live += crossing[static_cast<size_t>(p)];
    if (live != 1) continue;
    for (int v : step.ops[static_cast<size_t>(p)].outputs)
      if (last_reader[static_cast<size_t>(v)] > p &&
          step.ops[static_cast<size_t>(p)].roles.rebuildable)
        cuts.push_back(v);
  }
  return cuts;
}

RebuildFit fit_rebuilds(const Step& step, const LivenessOptions& options, size_t alignment,
                        size_t budget) {
  RebuildFit fit;
  FRUGAL_CHECK(step.mode == Mode::training, "memory budget: rebuilds bound a training step");
  auto with = [&](const std::vector<int>& set) {
    LivenessOptions o = options;
    o.rebuild.insert(o.rebuild.end(), set.begin(), set.end());
    return o;
  };
  fit.arena = std::numeric_limits<size_t>::max();
  // Plans `trial`; keeps it as the fit if its arena is the smallest so far; true once it fits.
  auto consider = [&](const std::vector<int>& trial) {
    const size_t arena = planned_arena_bytes(step, with(trial), alignment);
    ++fit.plans;
    if (arena < fit.arena) {
      fit.arena = arena;
      fit.rebuild = trial;
    }
    fit.fits = fit.arena <= budget;
    return fit.fits;
  };
  std::vector<int> set = choose_rebuilds(step, options, alignment);
  fit.plans = 3;
  if (consider(set)) return fit;
  std::vector<bool> in(step.ops.size(), false);
  for (int k : set) in[static_cast<size_t>(k)] = true;
  std::vector<bool> useless(step.ops.size(), false);
  const std::vector<int> candidates = rebuildable_ops(step, true);
  Liveness L = analyze(step, with(set));
  auto [peak, at] = peak_live(L, alignment);
  for (int round = 0; round < 4 * static_cast<int>(step.ops.size()); ++round) {
    // Candidates live at the peak step, by bytes freed there per flop.
    std::vector<std::pair<double, int>> order;
    for (int p : candidates) {
      if (in[static_cast<size_t>(p)] || useless[static_cast<size_t>(p)]) continue;
      size_t held = 0;
      for (int v : step.ops[static_cast<size_t>(p)].outputs) {
        const Buffer& b = L.buffers[static_cast<size_t>(L.value_buffer[static_cast<size_t>(v)])];
        if (b.first <= at && at <= b.last) held += b.bytes;
      }
      if (held == 0) continue;
      const double flops = step.ops[static_cast<size_t>(p)].roles.rebuild_flops;
      order.emplace_back(static_cast<double>(held) / (flops + 1.0), p);
    }
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    bool accepted = false;
    for (size_t c = 0; c < order.size() && c < 8 && !accepted; ++c) {
      const int p = order[c].second;
      std::vector<int> trial = set;
      trial.push_back(p);
      // The cheap producers only this rebuild reads come with it.
      for (int slot : step.ops[static_cast<size_t>(p)].roles.rebuild_reads_inputs) {
        const StepValue& u =
            step.value(step.ops[static_cast<size_t>(p)].inputs[static_cast<size_t>(slot)]);
        if (u.kind == StepValueKind::op_output && !in[static_cast<size_t>(u.producer)] &&
            step.ops[static_cast<size_t>(u.producer)].roles.rebuildable &&
            !step.ops[static_cast<size_t>(u.producer)].roles.rebuild_expensive)
          trial.push_back(u.producer);
      }
      std::sort(trial.begin(), trial.end());
      trial.erase(std::unique(trial.begin(), trial.end()), trial.end());
      Liveness T = analyze(step, with(trial));
      ++fit.plans;
      const auto [tpeak, tat] = peak_live(T, alignment);
      if (tpeak >= peak) {
        useless[static_cast<size_t>(p)] = true;
        continue;
      }
      accepted = true;
      set = std::move(trial);
      for (int k : set) in[static_cast<size_t>(k)] = true;
      L = std::move(T);
      peak = tpeak;
      at = tat;
    }
    if (!accepted) break;
    if (peak <= budget && consider(set)) return fit;
  }
  if (consider(set)) return fit;
  // Segments: whole runs of the forward rebuilt from kept cut values.
  fit_segments(step, options, alignment, budget, fit);
  return fit;
}

}  // namespace frugal
