// Choosing which op outputs a planned training step rebuilds in backward.
#include "memory/rebuild.h"

#include <algorithm>

#include "memory/planner.h"

namespace frugal {

std::vector<int> rebuildable_ops(const Step& step) {
  std::vector<int> ops;
  for (size_t k = 0; k < step.ops.size(); ++k)
    if (step.ops[k].roles.rebuildable) ops.push_back(static_cast<int>(k));
  return ops;
}

size_t planned_arena_bytes(const Step& step, const LivenessOptions& options, size_t alignment) {
  const Liveness L = analyze(step, options);
  std::vector<PlanBuffer> requests;
  std::vector<int> request(L.buffers.size(), -1);
  for (size_t i = 0; i < L.buffers.size(); ++i)
    if (L.buffers[i].kind != BufferKind::input)
      request[i] = static_cast<int>(requests.size()), requests.push_back({});
  for (size_t i = 0; i < L.buffers.size(); ++i) {
    if (request[i] < 0) continue;
    const Buffer& b = L.buffers[i];
    requests[static_cast<size_t>(request[i])] = {
        .bytes = b.bytes,
        .first = b.first,
        .last = b.last,
        .alias_of = b.alias_of >= 0 ? request[static_cast<size_t>(b.alias_of)] : -1};
  }
  return plan_arena(requests, alignment).arena_bytes;
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

}  // namespace frugal
