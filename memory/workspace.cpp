// The workspace choice: the step is planned with every pass at its least scratch; then, in
// order of time saved, each pass's scratch buffers move to the lowest free range of the arena at
// their step that holds the fastest choice that fits (first fit over the buffers live then).
// Nothing else moves, so the plan stays valid and its arena grows only into the room allowed,
// with no second planning (which, the planner being a heuristic, could pack the larger
// buffers worse and grow the arena; each trial also cost a whole planning).
#include "memory/workspace.h"

#include <algorithm>
#include <numeric>
#include <utility>

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

std::vector<Pass> passes_of(const Step& step, size_t limit) {
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
  return passes;
}

size_t& scratch_of(Step& step, const Pass& p) {
  Roles& r = step.ops[static_cast<size_t>(p.op)].roles;
  return p.backward ? r.backward_scratch : r.forward_scratch;
}

// The requests holding a pass's scratch: the backward's, or the forward's and its rebuild's.
std::vector<int> requests_of(const Layout& l, const Pass& p) {
  const size_t k = static_cast<size_t>(p.op);
  std::vector<int> buffers;
  if (p.backward) {
    buffers.push_back(l.live.bwd_scratch[k]);
  } else {
    buffers.push_back(l.live.fwd_scratch[k]);
    buffers.push_back(l.live.rebuild_scratch[k]);
  }
  std::vector<int> out;
  for (int b : buffers)
    if (b >= 0 && l.request[static_cast<size_t>(b)] >= 0)
      out.push_back(l.request[static_cast<size_t>(b)]);
  return out;
}

// The lowest offset at which `bytes` fit beside every other request live during request r's
// lifetime, ending at or below `cap`; SIZE_MAX if none.
size_t first_fit(const Layout& l, int r, size_t bytes, size_t cap) {
  const PlanBuffer& me = l.requests[static_cast<size_t>(r)];
  std::vector<std::pair<size_t, size_t>> taken;  // [begin, end) of the others, live with r
  for (size_t i = 0; i < l.requests.size(); ++i) {
    const PlanBuffer& b = l.requests[i];
    if (static_cast<int>(i) == r || b.bytes == 0 || b.last < me.first || b.first > me.last)
      continue;
    const size_t at = l.plan.offsets[i];
    taken.emplace_back(at, at + round_up(b.bytes, l.plan.alignment));
  }
  std::sort(taken.begin(), taken.end());
  size_t at = 0;
  for (const auto& [begin, end] : taken) {
    if (begin >= at + bytes) break;
    at = std::max(at, end);
  }
  return at + bytes <= cap ? at : SIZE_MAX;
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

void least_workspaces(Step& step, size_t limit) {
  for (const Pass& p : passes_of(step, limit)) scratch_of(step, p) = p.choices.front().bytes;
}

WorkspacePlan choose_workspaces(Step& step, Layout& planned, size_t limit, size_t growth) {
  FRUGAL_CHECK(planned.memory == MemoryMode::planned,
               "choose_workspaces: the choice is made on the planned layout");
  std::vector<Pass> passes = passes_of(step, limit);
  WorkspacePlan out;
  if (passes.empty()) return out;
  const size_t align = planned.plan.alignment;
  out.arena_least = planned.plan.arena_bytes;
  const size_t cap = growth > SIZE_MAX - out.arena_least ? SIZE_MAX : out.arena_least + growth;
  for (const Pass& p : passes)
    for (int r : requests_of(planned, p))
      FRUGAL_CHECK(planned.requests[static_cast<size_t>(r)].bytes == p.choices.front().bytes,
                   "choose_workspaces: ", step.ops[static_cast<size_t>(p.op)].name, " (op ", p.op,
                   ") was not planned at its least scratch (least_workspaces first)");

  // Upgrades, the most time saved first; each pass takes the fastest choice for which every
  // one of its scratch buffers finds a free range (the others stay where they are).
  std::vector<size_t> order(passes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto gain = [&](size_t i) {
      return passes[i].choices.front().seconds - passes[i].choices.back().seconds;
    };
    return gain(a) > gain(b);
  });
  for (size_t i : order) {
    Pass& p = passes[i];
    const std::vector<int> reqs = requests_of(planned, p);
    for (size_t c = p.choices.size(); c-- > 1;) {
      const size_t bytes = round_up(p.choices[c].bytes, align);
      std::vector<size_t> at;
      for (int r : reqs) {
        const size_t where = first_fit(planned, r, bytes, cap);
        if (where == SIZE_MAX) break;
        at.push_back(where);
      }
      if (at.size() != reqs.size()) continue;
      // Each buffer lives in steps of its own (a pass and its rebuild never share one), so the
      // ranges found one by one hold together.
      for (size_t j = 0; j < reqs.size(); ++j) {
        const size_t r = static_cast<size_t>(reqs[j]);
        planned.requests[r].bytes = p.choices[c].bytes;
        planned.plan.offsets[r] = at[j];
        planned.plan.arena_bytes = std::max(planned.plan.arena_bytes, at[j] + bytes);
      }
      p.chosen = c;
      break;
    }
  }
  for (const Pass& p : passes) scratch_of(step, p) = p.choices[p.chosen].bytes;
  // The layout's buffers say the same bytes as their requests.
  for (size_t b = 0; b < planned.live.buffers.size(); ++b) {
    Buffer& buf = planned.live.buffers[b];
    const int r = planned.request[b];
    if (r < 0 || (buf.kind != BufferKind::fwd_scratch && buf.kind != BufferKind::bwd_scratch))
      continue;
    buf.bytes = planned.requests[static_cast<size_t>(r)].bytes;
    buf.meta = {Shape{static_cast<int64_t>(buf.bytes)}, DType::u8};
  }
  const std::vector<size_t> live = live_curve(planned.requests, planned.live.steps, align);
  planned.plan.lower_bound = *std::max_element(live.begin(), live.end());
  out.arena = planned.plan.arena_bytes;
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
