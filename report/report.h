// The memory report: bytes per optnet category (outputs, gradInputs, buffers, params) for the
// baseline, eager and planned modes of one tape, plus the planned arena and the liveness
// lower bound. Needs only shapes: nothing is run.
#pragma once

#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "autograd/op.h"
#include "memory/layout.h"
#include "memory/liveness.h"

namespace frugal {

class Tape;

struct CategoryBytes {
  size_t outputs = 0;          // op outputs (the network input is not counted)
  size_t grad_inputs = 0;      // gradients w.r.t. op inputs
  size_t buffers = 0;          // saved extras and scratch
  size_t params = 0;           // weights (and running statistics) + weight gradients
  size_t optimizer_state = 0;  // momentum or AdamW's moments; apart, not in optnet's total
};

struct ModeMemory {
  CategoryBytes bytes;
  // baseline: sum of every buffer; eager: caching allocator's peak reserved + params;
  // planned: arena + params.
  size_t total = 0;
  size_t arena = 0;        // planned: the one arena; eager: peak reserved
  size_t lower_bound = 0;  // planned: max over time of live bytes
  // planned with ReportOptions::pack: the op outputs that wait for backward packed outside the
  // arena, and their dense bytes (what they hold packed depends on the data: at most these
  // and a bit per element).
  int packed_outputs = 0;
  size_t packed_dense = 0;
};

struct MemoryReport {
  Mode mode = Mode::training;
  DType dtype = DType::f32;
  ModeMemory baseline, eager, planned;
  // planned + recompute: the same network with its recomputation applied (reversible blocks,
  // checkpoint segments), planned; set by the caller, which records that tape.
  std::optional<ModeMemory> recompute;
};

struct ReportOptions {
  bool optimizer = true;  // training: an optimizer step follows backward
  // Its state: SGD's momentum (one tensor per trainable parameter) or AdamW's two moments.
  OptimizerKind optimizer_kind = OptimizerKind::sgd;
  size_t alignment = 0;        // 0: the backend's allocator's (64 bytes on the CPU, 256 on CUDA)
  std::vector<int> keep = {};  // value ids read after the step (the loss), as the executor's
  size_t workspace_limit = std::numeric_limits<size_t>::max();  // as ExecutorOptions
  size_t workspace_growth = 0;            // bytes the arena may grow for faster scratch
  Recompute recompute = Recompute::none;  // as ExecutorOptions
  size_t rebuild_budget = 0;              // as ExecutorOptions
  bool pack = false;                      // as ExecutorOptions
};

// The layout options memory_report plans with: an optimizer step in training, the kept values
// and the alignment. memory_layout(tape, mode, m, backend, report_layout_options(mode, o))
// gives the layout behind the report's figures for memory mode m.
LayoutOptions report_layout_options(Mode mode, const ReportOptions& options);

// Plans the tape in each mode. Baseline follows Torch's nn modules: every buffer its own
// memory for the whole step, full saved encodings, and weight gradients even in inference.
// In the eager and planned modes a category's figure is its peak live bytes (categories
// peak at different times, so they need not add up to the total).
MemoryReport memory_report(Tape& tape, Mode mode, const Backend& backend,
                           const ReportOptions& options = {});

// The planned mode alone: compact encodings, aliases, fused optimizer, one arena (and the
// layout behind the figures into *planned, when given).
ModeMemory planned_memory(Tape& tape, Mode mode, const Backend& backend,
                          const ReportOptions& options = {}, Layout* planned = nullptr);

// What a layout rebuilds in backward (Recompute): how many ops of each kind, in tape order of
// first appearance, and what the rebuilds cost in all.
struct RebuildSummary {
  int ops = 0;
  std::vector<std::pair<std::string, int>> by_name;  // ("batch_norm", 36), ...
  std::vector<int> rebuilt;                          // op indices
  double flops = 0, bytes = 0;                       // Roles::rebuild_flops, rebuild_bytes
  std::string text() const;                          // "36 batch_norm, 36 relu, 2 add"
};
RebuildSummary rebuild_summary(const Tape& tape, const Layout& layout);

// Peak live bytes per category of a liveness with the given offsets' alias groups once.
CategoryBytes peak_by_category(const Liveness& live);

}  // namespace frugal
