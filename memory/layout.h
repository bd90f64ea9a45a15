// The memory layout of one step: the buffers and lifetimes (Liveness) and the byte offset of
// each buffer (Plan), from a plain step description. This is the one pipeline (choose
// encodings, analyze, plan) that the executor, the report, the timeline, the trace, the graph
// picture and the budget search all read.
#pragma once

#include <cstddef>
#include <limits>
#include <span>
#include <vector>

#include "memory/liveness.h"
#include "memory/planner.h"
#include "memory/step.h"
#include "memory/workspace.h"

namespace frugal {

enum class MemoryMode { baseline, planned };
const char* memory_mode_name(MemoryMode m);

// optnet's categories, as the report, the timeline and the trace group buffers. Inputs are
// the user's and belong to none.
enum class MemoryCategory { none, outputs, grad_inputs, buffers, param_grads };
constexpr int kMemoryCategories = 4;  // outputs .. param_grads
MemoryCategory memory_category(const Buffer& b);
const char* memory_category_name(MemoryCategory c);  // "outputs", "gradInputs", ...

struct LayoutOptions {
  bool optimizer = false;         // training: an optimizer step runs (ExecutorOptions::optimizer)
  bool keep_param_grads = false;  // every parameter gradient lives to the end (tests)
  std::vector<int> keep = {};     // value ids read after the step (the loss)
  size_t alignment = 64;          // the allocator's alignment (run/plan.h: 0, the backend's)
  bool encodings_as_recorded = false;  // leave each op's saved encoding as recorded
  // Network inputs in the arena too (a sub-graph planned into an outer op's scratch);
  // otherwise they get their own storage every step and no request.
  bool inputs_in_arena = false;
  // The most scratch any one op pass may be given where it has a choice (cuDNN's workspace);
  // run/plan.h's memory_layout chooses within it (memory/workspace.h).
  size_t workspace_limit = std::numeric_limits<size_t>::max();
  size_t workspace_growth = 0;  // bytes the arena may grow for faster scratch
  Recompute recompute = Recompute::none;
  std::vector<int> rebuild = {};  // ops to rebuild besides those `recompute` chooses
  // Planned training: the outputs of ops with Roles::sparse_outputs (ReLUs) that backward reads
  // leave the arena after their last forward reader and come back packed (LivenessOptions::
  // pack); those a rebuild chose are rebuilt instead.
  bool pack = false;
  bool forward_only = false;  // training forward without backward (LivenessOptions)
  // Planned training: > 0 rebuilds op outputs until the arena fits this many bytes
  // (memory/rebuild.h's fit_rebuilds; convolutions only when nothing cheaper fits), or throws
  // naming the smallest arena found.
  size_t rebuild_budget = 0;
  // Data-parallel training: parameter gradients in buckets of about this many bytes
  // (LivenessOptions::grad_bucket_bytes); 0: none.
  size_t grad_bucket_bytes = 0;
};

struct Layout {
  MemoryMode memory = MemoryMode::planned;
  Liveness live;
  // One request per buffer in the arena (inputs only with LayoutOptions::inputs_in_arena).
  std::vector<PlanBuffer> requests;
  std::vector<int> request;  // buffer -> index in requests and plan.offsets, -1 if none
  // planned: the arena from plan_arena. baseline: every buffer its own memory for the whole
  // step, drawn as consecutive aligned ranges, so arena_bytes = lower_bound = their sum.
  Plan plan;
  // The scratch chosen for passes that offer a choice (empty where none does).
  WorkspacePlan workspace;

  // Offset of buffer i in the layout, or -1 for a buffer outside it (an input).
  long long offset(int i) const;
  // Bytes of buffer i rounded up to the alignment (what it occupies in the layout).
  size_t rounded_bytes(int i) const;
};

// The planner's requests for a liveness: one per buffer in the arena (inputs only with
// `inputs_in_arena`), in buffer order, aliases as request indices; request[i] is buffer i's
// request or -1.
std::vector<PlanBuffer> arena_requests(const Liveness& live, bool inputs_in_arena,
                                       std::vector<int>& request);
// Live rounded bytes at each timeline step (steps + 1 entries), each alias group once (its
// largest member over the union of its members' lifetimes): the curve whose maximum is the
// plan's lower bound.
std::vector<size_t> live_curve(std::span<const PlanBuffer> requests, int steps, size_t alignment);

// Chooses the saved encodings for the memory mode (planned: compact where that lets a tensor
// die; baseline: full outputs, as Torch's modules) into `step`, analyzes liveness and places
// every buffer. Deterministic.
Layout plan_layout(Step& step, MemoryMode memory, const LayoutOptions& options = {});

}  // namespace frugal
