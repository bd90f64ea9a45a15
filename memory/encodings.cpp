// Saved-encoding choice: a 1-bit mask where it lets a full tensor die early.
#include "memory/encodings.h"

#include <algorithm>

#include "autograd/tape.h"

namespace frugal {

int choose_encodings(Tape& tape, Mode mode, const Backend& backend, std::span<const int> keep) {
  int compact = 0;
  for (OpNode& node : tape.ops()) {
    if (!node.op->has_compact_encoding()) continue;
    bool output_kept = false;
    for (int out : node.outputs) {
      if (std::find(keep.begin(), keep.end(), out) != keep.end()) output_kept = true;
      for (int c : tape.value(out).consumers) {
        const OpNode& reader = tape.ops()[static_cast<size_t>(c)];
        const Roles r = reader.op->roles(mode, backend);
        for (int slot : r.backward_reads_inputs)
          if (reader.inputs[static_cast<size_t>(slot)] == out) output_kept = true;
        // A reader that rebuilds this output in backward (a reversible block) rebuilds it
        // inexactly; baseline reads the rebuilt copy, so planned must too. It costs nothing:
        // the original dies at once and the copy lives from the rebuild to this op's backward.
        for (int slot : r.rebuilds_inputs)
          if (reader.inputs[static_cast<size_t>(slot)] == out) output_kept = true;
      }
    }
    node.op->use_compact_encoding(!output_kept);
    compact += output_kept ? 0 : 1;
  }
  return compact;
}

void use_full_encodings(Tape& tape) {
  for (OpNode& node : tape.ops())
    if (node.op->has_compact_encoding()) node.op->use_compact_encoding(false);
}

}  // namespace frugal
