// The workspace choice (memory/workspace.h) on hand-made steps: a pass gets the fastest choice
// the arena has room for at its step, never one that grows the arena, never one above the
// limit; an impossible limit names the op; and every memory mode plans the same scratch.
#include <doctest/doctest.h>

#include "core/error.h"
#include "memory/layout.h"
#include "memory/workspace.h"

using namespace frugal;

namespace {

// x (input) -> op 0 -> y1 (1024 bytes) -> op 1 -> y2 (3072 bytes, kept), in inference: the
// arena holds y1 alone at op 0's step and y1 + y2 at op 1's, so op 0's scratch has 2048 bytes
// of room under the 4096 the arena needs anyway.
Step chain(std::vector<ScratchChoice> op0, std::vector<ScratchChoice> op1 = {}) {
  Step s;
  s.mode = Mode::inference;
  auto value = [&](StepValueKind kind, int64_t floats, int producer) {
    StepValue v;
    v.kind = kind;
    v.meta = {Shape{floats}, DType::f32};
    v.producer = producer;
    s.values.push_back(v);
  };
  value(StepValueKind::input, 64, -1);
  value(StepValueKind::op_output, 256, 0);
  value(StepValueKind::op_output, 768, 1);
  s.values[0].consumers = {0};
  s.values[1].consumers = {1};
  for (int k = 0; k < 2; ++k) {
    StepOp op;
    op.name = k == 0 ? "conv_a" : "conv_b";
    op.inputs = {k};
    op.outputs = {k + 1};
    op.differentiable = {false};
    op.roles.forward_choices = k == 0 ? op0 : op1;
    if (!op.roles.forward_choices.empty())
      op.roles.forward_scratch = op.roles.forward_choices.front().bytes;
    s.ops.push_back(op);
  }
  return s;
}

const LayoutOptions kKeepY2{.keep = {2}};

// The pipeline of run/plan.cpp's memory_layout: least scratch, plan, choose within the plan.
WorkspacePlan choose(Step& s, size_t limit, size_t growth = 0, Layout* out = nullptr) {
  least_workspaces(s, limit);
  Layout l = plan_layout(s, MemoryMode::planned, kKeepY2);
  WorkspacePlan w = choose_workspaces(s, l, limit, growth);
  std::string why;
  CHECK_MESSAGE(plan_is_valid(l.requests, l.plan, &why), why);
  if (!w.picks.empty()) CHECK(l.plan.arena_bytes == w.arena);
  if (out) *out = std::move(l);
  return w;
}

}  // namespace

TEST_CASE("workspace: the fastest choice the arena has room for, and no more") {
  Step s = chain({{0, 10e-3, "least"}, {2000, 5e-3, "middle"}, {5000, 1e-3, "fastest"}});
  Layout l;
  const WorkspacePlan w = choose(s, SIZE_MAX, 0, &l);
  REQUIRE(w.picks.size() == 1);
  CHECK(w.picks[0].chosen.name == "middle");
  CHECK(w.picks[0].fastest.name == "fastest");
  CHECK(w.picks[0].least.name == "least");
  CHECK(s.ops[0].roles.forward_scratch == 2000);
  CHECK(w.arena == w.arena_least);
  CHECK(w.arena_least == 4096);
  CHECK(w.seconds_chosen == doctest::Approx(5e-3));
  // The layout holds the choice: its scratch buffer has the bytes, the live curve counts them.
  const int scratch = l.live.fwd_scratch[0];
  REQUIRE(scratch >= 0);
  CHECK(l.live.buffers[static_cast<size_t>(scratch)].bytes == 2000);
  CHECK(l.live.buffers[static_cast<size_t>(scratch)].meta.bytes() == 2000);
  CHECK(live_curve(l.requests, l.live.steps, l.plan.alignment)[0] == 1024 + 2048);
}

TEST_CASE("workspace: growth lets the arena grow by at most that many bytes") {
  auto fresh = [] {
    return chain({{0, 10e-3, "least"}, {2000, 5e-3, "middle"}, {5000, 1e-3, "fastest"}});
  };
  Step s = fresh();
  const WorkspacePlan any = choose(s, SIZE_MAX, SIZE_MAX);
  CHECK(any.picks[0].chosen.name == "fastest");
  CHECK(any.arena_least == 4096);
  CHECK(any.arena > 4096);
  CHECK(any.arena <= 4096 + 5056);
  // One byte less room than that took, and the fastest no longer fits.
  Step t = fresh();
  const WorkspacePlan less = choose(t, SIZE_MAX, any.arena - 4096 - 1);
  CHECK(less.picks[0].chosen.name == "middle");
  CHECK(less.arena == 4096);
  Step u = fresh();
  CHECK(choose(u, SIZE_MAX, any.arena - 4096).arena == any.arena);
}

TEST_CASE("workspace: the limit caps the choice, a least scratch above it is an error") {
  Step s = chain({{0, 10e-3, "least"}, {1000, 5e-3, "small"}, {2000, 4e-3, "middle"}});
  const WorkspacePlan w = choose(s, 1500);
  REQUIRE(w.picks.size() == 1);
  CHECK(w.picks[0].chosen.name == "small");
  CHECK(w.picks[0].fastest.name == "small");  // the fastest within the limit

  Step tight = chain({{512, 10e-3, "least"}, {2000, 5e-3, "middle"}});
  CHECK_THROWS_WITH_AS(least_workspaces(tight, 100),
                       "conv_a (op 0): its forward pass needs at least 512 bytes of scratch "
                       "(least), above the workspace limit of 100 bytes",
                       Error);
  // A layout not planned at the least scratch is refused.
  Step early = chain({{0, 10e-3, "least"}, {2000, 5e-3, "middle"}});
  early.ops[0].roles.forward_scratch = 2000;
  Layout l = plan_layout(early, MemoryMode::planned, kKeepY2);
  CHECK_THROWS_WITH_AS(choose_workspaces(early, l, SIZE_MAX),
                       doctest::Contains("was not planned at its least scratch"), Error);
}

TEST_CASE("workspace: with room for one upgrade of two, the larger gain takes it") {
  // op 1's step is already full (y1 + y2 = the arena): its choice cannot grow; op 0 has room.
  Step s = chain({{0, 3e-3, "a least"}, {2048, 2e-3, "a fast"}},
                 {{0, 9e-3, "b least"}, {1024, 1e-3, "b fast"}});
  const WorkspacePlan w = choose(s, SIZE_MAX);
  REQUIRE(w.picks.size() == 2);
  CHECK(w.picks[0].chosen.name == "a fast");
  CHECK(w.picks[1].chosen.name == "b least");
  CHECK(w.arena == w.arena_least);
}

TEST_CASE("workspace: no choices, nothing planned, the same picks for every memory mode") {
  Step none = chain({});
  const WorkspacePlan w = choose(none, SIZE_MAX);
  CHECK(w.picks.empty());
  CHECK(w.arena == 0);
  Step a = chain({{0, 10e-3, "least"}, {2000, 5e-3, "middle"}});
  Step b = a;
  choose(a, SIZE_MAX);
  choose(b, SIZE_MAX);
  CHECK(a.ops[0].roles.forward_scratch == b.ops[0].roles.forward_scratch);
  const Layout baseline = plan_layout(a, MemoryMode::baseline, kKeepY2);
  const int scratch = baseline.live.fwd_scratch[0];
  REQUIRE(scratch >= 0);
  CHECK(baseline.live.buffers[static_cast<size_t>(scratch)].bytes == 2000);
}
