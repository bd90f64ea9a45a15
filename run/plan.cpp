// Lowering a tape into a step description, and the planning pipeline over it.
#include "run/plan.h"

#include <algorithm>

namespace frugal {

Step lower_step(Tape& tape, Mode mode, const Backend& backend) {
  Step step;
  step.mode = mode;
  for (const ValueNode& v : tape.values()) {
    StepValue s;
    s.kind = v.kind == ValueKind::input   ? StepValueKind::input
             : v.kind == ValueKind::param ? StepValueKind::param
                                          : StepValueKind::op_output;
    s.meta = v.meta;
    s.name = v.name;
    s.producer = v.producer;
    s.output_index = v.output_index;
    s.requires_grad = v.requires_grad;
    s.consumers = v.consumers;
    step.values.push_back(std::move(s));
  }
  for (OpNode& node : tape.ops()) {
    Op& op = *node.op;
    StepOp s;
    s.name = op.name();
    s.inputs = node.inputs;
    s.outputs = node.outputs;
    for (size_t i = 0; i < node.inputs.size(); ++i)
      s.differentiable.push_back(op.differentiable(static_cast<int>(i)));
    s.roles = op.roles(mode, backend);
    if (op.has_compact_encoding()) {
      const bool now = op.compact_encoding();
      op.use_compact_encoding(false);
      s.full_roles = op.roles(mode, backend);
      op.use_compact_encoding(true);
      s.compact_roles = op.roles(mode, backend);
      op.use_compact_encoding(now);
    }
    step.ops.push_back(std::move(s));
  }
  return step;
}

void apply_encodings(Tape& tape, const Step& step) {
  for (size_t k = 0; k < step.ops.size(); ++k)
    if (step.ops[k].compact) tape.ops()[k].op->use_compact_encoding(*step.ops[k].compact);
}

Layout memory_layout(Tape& tape, Mode mode, MemoryMode memory, const Backend& backend,
                     const LayoutOptions& options) {
  Step step = lower_step(tape, mode, backend);
  LayoutOptions o = options;
  if (o.alignment == 0) o.alignment = backend.allocator().alignment();
  // Scratch is chosen on the planned layout whatever `memory` is, so every mode runs the same
  // kernels; where no op offers a choice (the CPU) a baseline layout needs no planned one.
  least_workspaces(step, o.workspace_limit);
  const bool choices = std::any_of(step.ops.begin(), step.ops.end(), [](const StepOp& op) {
    return !op.roles.forward_choices.empty() || !op.roles.backward_choices.empty();
  });
  Layout layout = plan_layout(step, choices ? MemoryMode::planned : memory, o);
  WorkspacePlan workspace;
  if (choices) {
    // A memory budget holds with the growth too.
    size_t growth = o.workspace_growth;
    if (o.rebuild_budget > 0)
      growth =
          std::min(growth, o.rebuild_budget - std::min(o.rebuild_budget, layout.plan.arena_bytes));
    workspace = choose_workspaces(step, layout, o.workspace_limit, growth);
    if (memory != MemoryMode::planned) layout = plan_layout(step, memory, o);
  }
  layout.workspace = std::move(workspace);
  apply_encodings(tape, step);
  return layout;
}

}  // namespace frugal
