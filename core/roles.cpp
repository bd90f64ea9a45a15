// Names of the modes a step is planned in; marking an op's roles rebuildable.
#include "core/roles.h"

#include <algorithm>

namespace frugal {

const char* mode_name(Mode m) {
  return m == Mode::training ? "training" : "inference";
}

const char* recompute_name(Recompute r) {
  switch (r) {
    case Recompute::none:
      return "none";
    case Recompute::cheap:
      return "cheap";
    case Recompute::all:
      return "all";
  }
  return "?";
}

bool backward_reads_input(const Roles& r, int slot, const std::vector<bool>& grads) {
  if (std::find(r.backward_reads_inputs.begin(), r.backward_reads_inputs.end(), slot) ==
      r.backward_reads_inputs.end())
    return false;
  bool conditional = false;
  for (const ReadFor& f : r.reads_only_for) {
    if (f.input != slot) continue;
    conditional = true;
    if (f.grad >= 0 && static_cast<size_t>(f.grad) < grads.size() && grads[f.grad]) return true;
  }
  return !conditional;
}

void set_rebuildable(Roles& r, std::vector<int> reads, double flops, double bytes_moved) {
  r.rebuildable = true;
  r.rebuild_reads_inputs = std::move(reads);
  r.rebuild_flops = flops;
  r.rebuild_bytes = bytes_moved;
}

}  // namespace frugal
