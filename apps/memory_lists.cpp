// The lists of `frugal memory`: --ops (what the planned step does with each op's output for
// backward) and --workspaces (each convolution pass's algorithm and workspace).
#include <cstdio>
#include <limits>
#include <string>

#include "apps/memory.h"
#include "apps/options.h"
#include "run/plan.h"

namespace frugal {

// --ops: per op of the planned layout (with the rebuilds --recompute chose), what becomes of
// its first output between forward and backward, and the bytes it holds meanwhile.
void print_ops(const MemoryOptions& o) {
  FRUGAL_CHECK(o.mode == Mode::training,
               "memory --ops: what an op keeps for backward; use --mode training");
  RecordedModel rec{ParamStore::shapes_only(), nullptr, {}, {}, {}};
  record_model(rec, o);
  const Layout layout = recorded_layout(rec, o, MemoryMode::planned);
  const Liveness& L = layout.live;
  std::FILE* out = o.json ? stderr : stdout;
  std::fprintf(out, "%5s  %-22s %-40s %10s\n", "op", "name", "its output for backward", "MiB kept");
  int kept = 0, compact = 0, rebuilt = 0, packed = 0;
  for (int k = 0; k < L.ops; ++k) {
    const OpNode& node = rec.tape->ops()[static_cast<size_t>(k)];
    const int v = node.outputs[0];
    const Buffer& b = L.buffers[static_cast<size_t>(L.value_buffer[static_cast<size_t>(v)])];
    const int at = L.op_rebuild_step[static_cast<size_t>(k)];
    std::string what;
    double held = 0;
    if (at >= 0 && L.packed[static_cast<size_t>(k)]) {
      what = "packed, unpacked at step " + std::to_string(at);
      ++packed;
    } else if (at >= 0) {
      what = "rebuilt at step " + std::to_string(at);
      ++rebuilt;
    } else if (b.last >= L.ops) {
      what = "kept";
      held = static_cast<double>(b.bytes);
      ++kept;
    } else if (node.op->has_compact_encoding() && node.op->compact_encoding()) {
      what = "compact (1-bit mask)";
      ++compact;
    } else {
      what = "not read in backward";
    }
    std::fprintf(out, "%5d  %-22s %-40s %10.2f\n", k, node.op->name().c_str(), what.c_str(),
                 held / (1024.0 * 1024.0));
  }
  std::fprintf(out,
               "ops: %d kept, %d compact, %d rebuilt, %d packed, %d others; planned arena %.2f "
               "MiB\n",
               kept, compact, rebuilt, packed, L.ops - kept - compact - rebuilt - packed,
               to_mib(layout.plan.arena_bytes));
}

// The scratch chosen for passes with choices (cuDNN's algorithms on CUDA): a summary line, and
// with --workspaces one row per pass. Nothing where no op offers a choice (the CPU).
void print_workspaces(const MemoryOptions& o) {
  RecordedModel rec{ParamStore::shapes_only(), nullptr, {}, {}, {}};
  record_model(rec, o);
  const Layout layout = recorded_layout(rec, o, MemoryMode::planned);
  const WorkspacePlan& w = layout.workspace;
  if (w.picks.empty()) return;
  std::FILE* out = o.json ? stderr : stdout;
  if (o.workspaces) {
    std::fprintf(out, "%-22s %-8s %-42s %9s %9s   %-42s %9s %9s\n", "op", "pass", "algorithm",
                 "MiB", "ms", "fastest within the limit", "MiB", "ms");
    for (const ScratchPick& p : w.picks) {
      const std::string label = "op " + std::to_string(p.op) + " " + p.op_name;
      std::fprintf(out, "%-22s %-8s %-42s %9.2f %9.3f   %-42s %9.2f %9.3f\n", label.c_str(),
                   p.backward ? "backward" : "forward", p.chosen.name.c_str(),
                   to_mib(p.chosen.bytes), p.chosen.seconds * 1e3, p.fastest.name.c_str(),
                   to_mib(p.fastest.bytes), p.fastest.seconds * 1e3);
    }
  }
  size_t at_fastest = 0;
  for (const ScratchPick& p : w.picks) at_fastest += p.chosen.seconds == p.fastest.seconds;
  std::fprintf(
      out,
      "workspaces: %zu convolution passes, %zu at their fastest algorithm; measured time "
      "%.2f ms chosen, %.2f ms fastest (%.0f%% of its speed), %.2f ms with the least "
      "workspace; planned arena %.2f MiB (%.2f MiB with the least)%s%s\n",
      w.picks.size(), at_fastest, w.seconds_chosen * 1e3, w.seconds_fastest * 1e3,
      w.seconds_chosen > 0 ? 100.0 * w.seconds_fastest / w.seconds_chosen : 100.0,
      w.seconds_least * 1e3, to_mib(w.arena), to_mib(w.arena_least),
      o.workspace_limit == std::numeric_limits<size_t>::max()
          ? ""
          : (", limit " + bytes_text(o.workspace_limit)).c_str(),
      o.workspace_growth == 0 ? "" : (", growth " + bytes_text(o.workspace_growth)).c_str());
}

}  // namespace frugal
