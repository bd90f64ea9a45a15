// Names of the modes a step is planned in; marking an op's roles rebuildable.
#include "core/roles.h"

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

void set_rebuildable(Roles& r, std::vector<int> reads, double flops, double bytes_moved) {
  r.rebuildable = true;
  r.rebuild_reads_inputs = std::move(reads);
  r.rebuild_flops = flops;
  r.rebuild_bytes = bytes_moved;
}

}  // namespace frugal
