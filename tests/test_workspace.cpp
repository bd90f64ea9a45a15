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

}  // namespace

TEST_CASE("workspace: the fastest choice the arena has room for, and no more") {
  Step s = chain({{0, 10e-3, "least"}, {2000, 5e-3, "middle"}, {5000, 1e-3, "fastest"}});
  const WorkspacePlan w = choose_workspaces(s, kKeepY2, SIZE_MAX);
  REQUIRE(w.picks.size() == 1);
  CHECK(w.picks[0].chosen.name == "middle");
  CHECK(w.picks[0].fastest.name == "fastest");
  CHECK(w.picks[0].least.name == "least");
  CHECK(s.ops[0].roles.forward_scratch == 2000);
  CHECK(w.arena == w.arena_least);
  CHECK(w.arena_least == 4096);
  CHECK(w.seconds_chosen == doctest::Approx(5e-3));
  // The step planned with the choice: the arena did not grow.
  Step planned = s;
  CHECK(plan_layout(planned, MemoryMode::planned, kKeepY2).plan.arena_bytes == 4096);
}

TEST_CASE("workspace: the limit caps the choice; a least scratch above it is an error") {
  Step s = chain({{0, 10e-3, "least"}, {1000, 5e-3, "small"}, {2000, 4e-3, "middle"}});
  const WorkspacePlan w = choose_workspaces(s, kKeepY2, 1500);
  REQUIRE(w.picks.size() == 1);
  CHECK(w.picks[0].chosen.name == "small");
  CHECK(w.picks[0].fastest.name == "small");  // the fastest within the limit

  Step tight = chain({{512, 10e-3, "least"}, {2000, 5e-3, "middle"}});
  CHECK_THROWS_WITH_AS(choose_workspaces(tight, kKeepY2, 100),
                       "conv_a (op 0): its forward pass needs at least 512 bytes of scratch "
                       "(least), above the workspace limit of 100 bytes",
                       Error);
}

TEST_CASE("workspace: with room for one upgrade of two, the larger gain takes it") {
  // op 1's step is already full (y1 + y2 = the arena): its choice cannot grow; op 0 has room.
  Step s = chain({{0, 3e-3, "a least"}, {2048, 2e-3, "a fast"}},
                 {{0, 9e-3, "b least"}, {1024, 1e-3, "b fast"}});
  const WorkspacePlan w = choose_workspaces(s, kKeepY2, SIZE_MAX);
  REQUIRE(w.picks.size() == 2);
  CHECK(w.picks[0].chosen.name == "a fast");
  CHECK(w.picks[1].chosen.name == "b least");
  CHECK(w.arena == w.arena_least);
}

TEST_CASE("workspace: no choices, nothing planned; the same picks for every memory mode") {
  Step none = chain({});
  const WorkspacePlan w = choose_workspaces(none, kKeepY2, SIZE_MAX);
  CHECK(w.picks.empty());
  CHECK(w.arena == 0);
  Step a = chain({{0, 10e-3, "least"}, {2000, 5e-3, "middle"}});
  Step b = a;
  choose_workspaces(a, kKeepY2, SIZE_MAX);
  choose_workspaces(b, kKeepY2, SIZE_MAX);
  CHECK(a.ops[0].roles.forward_scratch == b.ops[0].roles.forward_scratch);
  const Layout baseline = plan_layout(a, MemoryMode::baseline, kKeepY2);
  const int scratch = baseline.live.fwd_scratch[0];
  REQUIRE(scratch >= 0);
  CHECK(baseline.live.buffers[static_cast<size_t>(scratch)].bytes == 2000);
}
