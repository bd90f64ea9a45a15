// Choosing which op outputs a planned training step rebuilds in backward. Past 400 lines: one
// search in phases (free rebuilds, a greedy over the peak, segments, then blocks and ops stored
// back) that share its liveness and planning helpers; split apart, each would need all of them.
#include "memory/rebuild.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "memory/layout.h"
#include "memory/planner.h"

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

namespace {

// Peak live bytes over the steps of a liveness (the plan's lower bound), and its step.
std::pair<size_t, int> peak_live(const Liveness& L, size_t alignment) {
  std::vector<int> request;
  const std::vector<size_t> live =
      live_curve(arena_requests(L, false, request), L.steps, alignment);
  const auto peak = std::max_element(live.begin(), live.end());
  return {*peak, static_cast<int>(peak - live.begin())};
}

}  // namespace

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

namespace {

// The forward ops between cut values, as ranges [first, last] of op indices: from the op after
// one cut's producer to the next cut's producer (the first from op 0, the last to the end).
std::vector<std::pair<int, int>> blocks_between(const Step& step, const std::vector<int>& cuts) {
  std::vector<std::pair<int, int>> blocks;
  int first = 0;
  for (int v : cuts) {
    const int p = step.value(v).producer;
    if (p >= first) blocks.emplace_back(first, p);
    first = p + 1;
  }
  if (first < static_cast<int>(step.ops.size()))
    blocks.emplace_back(first, static_cast<int>(step.ops.size()) - 1);
  return blocks;
}

// A segment schedule that fits rebuilds nearly the whole forward. Blocks (the ops between cut
// values) whose outputs can stay stored instead, greedily: each round stores the block that
// saves the most rebuild flops while the step's peak live bytes stay within the budget, and
// keeps it if the real plan fits. Stored blocks are mostly late ones (small maps, many flops),
// whose outputs are freed before the early blocks' backward, where the peak is.
template <typename With>
void store_blocks(const Step& step, const With& with, const std::vector<int>& cuts,
                  size_t alignment, size_t budget, RebuildFit& fit) {
  const std::vector<std::pair<int, int>> blocks = blocks_between(step, cuts);
  std::vector<bool> done(blocks.size(), false);
  std::vector<int> set = fit.rebuild;
  auto without = [&](size_t b) {
    std::vector<int> trial;
    for (int p : set)
      if (p < blocks[b].first || p > blocks[b].second) trial.push_back(p);
    return trial;
  };
  for (;;) {
    size_t best = blocks.size();
    double best_flops = 0;
    for (size_t b = 0; b < blocks.size(); ++b) {
      if (done[b]) continue;
      double flops = 0;
      for (int p : set)
        if (p >= blocks[b].first && p <= blocks[b].second)
          flops += step.ops[static_cast<size_t>(p)].roles.rebuild_flops;
      if (flops == 0) {
        done[b] = true;
        continue;
      }
      ++fit.plans;
      if (peak_live(analyze(step, with(without(b))), alignment).first > budget) {
        done[b] = true;  // storing more blocks only raises the peak: it stays out
        continue;
      }
      if (flops > best_flops) best = b, best_flops = flops;
    }
    if (best == blocks.size()) return;
    done[best] = true;
    std::vector<int> trial = without(best);
    ++fit.plans;
    const size_t arena = planned_arena_bytes(step, with(trial), alignment);
    if (arena > budget) continue;
    set = std::move(trial);
    fit.rebuild = set;
    fit.arena = arena;
  }
}

// Then single rebuilt ops that can stay stored, most rebuild flops per output byte first (a
// convolution with few output channels, a late one on a small map): each kept while the
// peak live bytes stay within the budget; the longest run of them whose real plan fits.
template <typename With>
void store_ops(const Step& step, const With& with, size_t alignment, size_t budget,
               RebuildFit& fit) {
  std::vector<std::pair<double, int>> order;
  for (int p : fit.rebuild) {
    const StepOp& op = step.ops[static_cast<size_t>(p)];
    size_t bytes = 0;
    for (int v : op.outputs) bytes += step.value(v).meta.bytes();
    if (op.roles.rebuild_flops > 0)
      order.emplace_back(op.roles.rebuild_flops / (static_cast<double>(bytes) + 1.0), p);
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<bool> in(step.ops.size(), false);
  for (int p : fit.rebuild) in[static_cast<size_t>(p)] = true;
  auto set_of = [&] {
    std::vector<int> set;
    for (size_t p = 0; p < in.size(); ++p)
      if (in[p]) set.push_back(static_cast<int>(p));
    return set;
  };
  std::vector<int> accepted;  // in order
  for (const auto& [ratio, p] : order) {
    in[static_cast<size_t>(p)] = false;
    ++fit.plans;
    if (peak_live(analyze(step, with(set_of())), alignment).first > budget)
      in[static_cast<size_t>(p)] = true;
    else
      accepted.push_back(p);
  }
  // The real plan packs less tightly than the live bytes: the longest prefix that fits.
  size_t lo = 0, hi = accepted.size();
  std::vector<int> best = fit.rebuild;
  size_t best_arena = fit.arena;
  while (lo < hi) {
    const size_t mid = (lo + hi + 1) / 2;
    for (int p : fit.rebuild) in[static_cast<size_t>(p)] = true;
    for (size_t k = 0; k < mid; ++k) in[static_cast<size_t>(accepted[k])] = false;
    const std::vector<int> trial = set_of();
    ++fit.plans;
    const size_t arena = planned_arena_bytes(step, with(trial), alignment);
    if (arena <= budget) {
      lo = mid;
      best = trial;
      best_arena = arena;
    } else {
      hi = mid - 1;
    }
  }
  fit.rebuild = std::move(best);
  fit.arena = best_arena;
}

}  // namespace

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
  // Segments: keep every m-th cut value (one that alone carries forward everything before
  // it) and rebuild every other output, convolutions included, from the cut before it: a
  // run's forward once more at the start of its backward, as checkpoint segments, on any graph.
  // The first that fits then stores what blocks it can (store_blocks).
  const std::vector<int> cuts = cut_values(step);
  const std::vector<int> all = rebuildable_ops(step, true);
  std::vector<int> lowest;  // the schedule with the lowest peak live bytes, if none fits
  size_t lowest_peak = std::numeric_limits<size_t>::max();
  for (int m = 2; m <= static_cast<int>(cuts.size()); ++m) {
    std::vector<bool> keep(step.ops.size(), false);
    for (size_t c = static_cast<size_t>(m) - 1; c < cuts.size(); c += static_cast<size_t>(m))
      keep[static_cast<size_t>(step.value(cuts[c]).producer)] = true;
    std::vector<int> trial;
    for (int p : all)
      if (!keep[static_cast<size_t>(p)]) trial.push_back(p);
    ++fit.plans;
    const size_t trial_peak = peak_live(analyze(step, with(trial)), alignment).first;
    if (trial_peak < lowest_peak) {
      lowest_peak = trial_peak;
      lowest = trial;
    }
    if (trial_peak <= budget && consider(trial)) {
      store_blocks(step, with, cuts, alignment, budget, fit);
      store_ops(step, with, alignment, budget, fit);
      return fit;
    }
  }
  if (!lowest.empty()) consider(lowest);
  return fit;
}

}  // namespace frugal
