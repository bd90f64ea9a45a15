// Saved-encoding choice: a 1-bit mask where it lets a full tensor die early.
#include "memory/encodings.h"

#include <algorithm>

namespace frugal {

namespace {
void set_encoding(StepOp& op, bool compact) {
  op.compact = compact;
  op.roles = compact ? *op.compact_roles : *op.full_roles;
}
}  // namespace

int choose_encodings(Step& step, std::span<const int> keep, bool free_for_grads) {
  int compact = 0;
  for (StepOp& op : step.ops) {
    if (!op.compact_roles) continue;
    bool output_kept = false;
    for (int out : op.outputs) {
      if (std::find(keep.begin(), keep.end(), out) != keep.end()) output_kept = true;
      for (int c : step.value(out).consumers) {
        const StepOp& reader = step.ops[static_cast<size_t>(c)];
        const Roles& r = reader.roles;
        const std::vector<bool> grads = step.input_grads(reader);
        for (int slot : r.backward_reads_inputs) {
          if (!backward_reads_input(r, slot, grads)) continue;
          const bool frees =
              free_for_grads && std::find(r.grad_takes_input.begin(), r.grad_takes_input.end(),
                                          slot) != r.grad_takes_input.end();
          if (reader.inputs[static_cast<size_t>(slot)] == out && !frees) output_kept = true;
        }
        // A reader that rebuilds this output in backward (a reversible block) rebuilds it
        // inexactly; baseline reads the rebuilt copy, so planned must too. It costs nothing:
        // the original dies at once and the copy lives from the rebuild to this op's backward.
        for (int slot : r.rebuilds_inputs)
          if (reader.inputs[static_cast<size_t>(slot)] == out) output_kept = true;
      }
    }
    set_encoding(op, !output_kept);
    compact += output_kept ? 0 : 1;
  }
  return compact;
}

void use_full_encodings(Step& step) {
  for (StepOp& op : step.ops)
    if (op.compact_roles) set_encoding(op, false);
}

}  // namespace frugal
