// The workspace choice: upgrades in order of time saved, each taken where the live bytes at its
// step stay under the arena of the least-scratch plan, then checked with the real planner; if
// the arena grew, the longest prefix of upgrades that keeps it is found by bisection.
#include "memory/workspace.h"

#include <algorithm>
#include <numeric>

#include "core/allocator.h"
#include "core/error.h"
#include "memory/layout.h"

namespace frugal {

namespace {

// One pass that offers choices, and where it stands.
struct Pass {
  int op = 0;
  bool backward = false;
  std::vector<ScratchChoice> choices;  // within the limit, scratch ascending
  size_t chosen = 0;                   // index into choices
};

size_t& scratch_of(Step& step, const Pass& p) {
  Roles& r = step.ops[static_cast<size_t>(p.op)].roles;
  return p.backward ? r.backward_scratch : r.forward_scratch;
}

void set_scratch(Step& step, const std::vector<Pass>& passes) {
  for (const Pass& p : passes) scratch_of(step, p) = p.choices[p.chosen].bytes;
}

Layout plan_copy(const Step& step, const LayoutOptions& options) {
  Step copy = step;
  return plan_layout(copy, MemoryMode::planned, options);
}

// The timeline step at which a pass's scratch lives (docs/ARCHITECTURE.md, "Liveness"): op k's
// forward at k, its backward at 2n - 1 - k.
int scratch_step(const Layout& l, const Pass& p) {
  return p.backward ? 2 * l.live.ops - 1 - p.op : p.op;
}

double total_seconds(const std::vector<Pass>& passes, int which) {  // 0 least, 1 fastest, 2 chosen
  double s = 0;
  for (const Pass& p : passes)
    s += which == 0   ? p.choices.front().seconds
         : which == 1 ? p.choices.back().seconds
                      : p.choices[p.chosen].seconds;
  return s;
}

}  // namespace

WorkspacePlan choose_workspaces(Step& step, const LayoutOptions& options, size_t limit) {
  std::vector<Pass> passes;
  for (size_t k = 0; k < step.ops.size(); ++k) {
    const StepOp& op = step.ops[k];
    for (bool backward : {false, true}) {
      const std::vector<ScratchChoice>& all =
          backward ? op.roles.backward_choices : op.roles.forward_choices;
      if (all.empty() || (backward && step.mode != Mode::training)) continue;
      Pass p;
      p.op = static_cast<int>(k);
      p.backward = backward;
      for (const ScratchChoice& c : all)
        if (c.bytes <= limit) p.choices.push_back(c);
      FRUGAL_CHECK(!p.choices.empty(), op.name, " (op ", k, "): its ",
                   backward ? "backward" : "forward", " pass needs at least ", all.front().bytes,
                   " bytes of scratch (", all.front().name, "), above the workspace limit of ",
                   limit, " bytes");
      passes.push_back(std::move(p));
    }
  }
  WorkspacePlan out;
  if (passes.empty()) return out;
  set_scratch(step, passes);
  const Layout least = plan_copy(step, options);
  out.arena_least = least.plan.arena_bytes;
  std::vector<size_t> live = live_curve(least.requests, least.live.steps, least.plan.alignment);

  // Upgrades, the most time saved first; each takes the fastest choice whose extra bytes fit
  // under the least plan's arena at its step.
  std::vector<size_t> order(passes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto gain = [&](size_t i) {
      return passes[i].choices.front().seconds - passes[i].choices.back().seconds;
    };
    return gain(a) > gain(b);
  });
  std::vector<size_t> taken;  // passes upgraded, in order
  for (size_t i : order) {
    Pass& p = passes[i];
    const int t = scratch_step(least, p);
    const size_t base = round_up(p.choices.front().bytes, least.plan.alignment);
    size_t& at = live[static_cast<size_t>(t)];
    for (size_t c = p.choices.size(); c-- > 1;) {
      const size_t bytes = round_up(p.choices[c].bytes, least.plan.alignment);
      if (at - base + bytes <= out.arena_least) {
        at = at - base + bytes;
        p.chosen = c;
        taken.push_back(i);
        break;
      }
    }
  }

  // The real planner decides: keep the longest prefix of the upgrades whose arena is no larger.
  auto arena_with = [&](size_t prefix) {
    std::vector<Pass> trial = passes;
    for (size_t j = prefix; j < taken.size(); ++j) trial[taken[j]].chosen = 0;
    set_scratch(step, trial);
    return plan_copy(step, options).plan.arena_bytes;
  };
  size_t keep = taken.size();
  if (!taken.empty() && arena_with(keep) > out.arena_least) {
    size_t lo = 0, hi = keep;  // arena_with(lo) fits; arena_with(hi) does not
    while (hi - lo > 1) {
      const size_t mid = lo + (hi - lo) / 2;
      (arena_with(mid) <= out.arena_least ? lo : hi) = mid;
    }
    keep = lo;
  }
  for (size_t j = keep; j < taken.size(); ++j) passes[taken[j]].chosen = 0;
  set_scratch(step, passes);
  out.arena = plan_copy(step, options).plan.arena_bytes;
  for (const Pass& p : passes)
    out.picks.push_back({.op = p.op,
                         .op_name = step.ops[static_cast<size_t>(p.op)].name,
                         .backward = p.backward,
                         .least = p.choices.front(),
                         .fastest = p.choices.back(),
                         .chosen = p.choices[p.chosen]});
  out.seconds_least = total_seconds(passes, 0);
  out.seconds_fastest = total_seconds(passes, 1);
  out.seconds_chosen = total_seconds(passes, 2);
  return out;
}

}  // namespace frugal
