// `frugal memory`'s recompute entry: which recomputation a bundled network has (reversible
// units, checkpoint segments, a memory budget's schedule), fitting the budget, and the lines
// and JSON that set the entry beside the planned mode.
#include <cstdio>

#include "apps/memory.h"
#include "apps/options.h"
#include "core/error.h"
#include "models/registry.h"
#include "train/step_budget.h"

namespace frugal {

using nlohmann::ordered_json;

namespace {

double percent_less(size_t before, size_t after) {
  return before == 0 ? 0.0
                     : 100.0 * (1.0 - static_cast<double>(after) / static_cast<double>(before));
}

// Names of the networks with a chain of blocks to checkpoint.
std::string chained_models() {
  std::string names;
  for (const ModelSpec& s : model_specs())
    if (s.chain_blocks > 0) names += (names.empty() ? "" : ", ") + s.name;
  return names;
}

ordered_json runs_json(const std::vector<BlockRun>& runs) {
  ordered_json j = ordered_json::array();
  for (const BlockRun& r : runs)
    j.push_back(r.inner > 0 ? ordered_json{r.begin, r.end, r.inner} : ordered_json{r.begin, r.end});
  return j;
}

}  // namespace

ModelConfig stored_config(const MemoryOptions& o) {
  return {.dropout = o.dropout,
          .batch_norm = o.batch_norm,
          .reversible = false,
          .batch_norm_from_output = o.bn_from_output,
          .layer_norm_from_output = o.ln_from_output};
}

std::optional<ModelConfig> recompute_config(const MemoryOptions& o) {
  const ModelSpec& spec = find_model(o.model);
  FRUGAL_CHECK(o.segments == 0 || spec.chain_blocks > 0, "memory --segments: ", spec.name,
               " has no chain of blocks to checkpoint (these have: ", chained_models(), ")");
  ModelConfig c = stored_config(o);
  if (spec.reversible) {
    c.reversible = true;
    c.checkpoint_rebuilds = o.recompute;  // F's and G's backward plans rebuild too
    return c;
  }
  if (spec.chain_blocks == 0 ||
      (o.segments <= 1 && o.checkpoint_runs.empty() && o.memory_budget == 0))
    return std::nullopt;
  c.segments = o.segments;
  c.checkpoint_runs = o.checkpoint_runs;
  c.checkpoint_rebuilds = o.recompute;
  return c;
}

void apply_memory_budget(MemoryOptions& o, RecomputeSummary& s) {
  FRUGAL_CHECK(o.mode == Mode::training,
               "memory --memory-budget: checkpointing saves memory for backward; use --mode "
               "training");
  FRUGAL_CHECK(o.segments == 0, "memory: give --segments or --memory-budget, not both");
  ModelConfig config = stored_config(o);
  config.checkpoint_rebuilds = o.recompute;
  const TrainingStep step{.model = o.model,
                          .batch = o.batch,
                          .dtype = o.dtype,
                          .config = config,
                          .backend = &backend_named(o.device),
                          .workspace_limit = o.workspace_limit,
                          .workspace_growth = o.workspace_growth,
                          .recompute = o.recompute,
                          .pack = o.pack,
                          .checkpoint_levels = o.checkpoint_levels};
  s.budget_bytes = o.memory_budget;
  s.budget = fit_step_budget(step, o.memory_budget);
  s.minimum = minimum_step_memory(step);
  o.checkpoint_runs = s.budget->schedule.checkpointed;
}

namespace {

// What recompute_config applies, or why nothing.
void describe_config(const MemoryOptions& o, bool applied, RecomputeSummary& s) {
  const ModelSpec& spec = find_model(o.model);
  s.chain_blocks = spec.chain_blocks;
  if (!applied) {
    s.none = spec.chain_blocks > 0
                 ? "none chosen: --segments N or --memory-budget BYTES checkpoint runs of " +
                       spec.name + "'s chain of " + std::to_string(spec.chain_blocks) +
                       " blocks, or --recompute cheap rebuilds op outputs"
                 : spec.name +
                       " has no reversible units and no chain of blocks to checkpoint; "
                       "--recompute cheap rebuilds op outputs";
    return;
  }
  if (spec.reversible) {
    s.applies = "reversible units rebuilt in backward (as bundled)";
    return;
  }
  s.checkpointed = o.segments > 1 ? segment_runs(o.segments, spec.chain_blocks) : o.checkpoint_runs;
  s.applies = o.memory_budget > 0 ? "memory budget's checkpoint runs"
                                  : std::to_string(o.segments) + " checkpoint segments";
}

}  // namespace

void describe_recompute(const MemoryOptions& o, bool applied, RecomputeSummary& s) {
  describe_config(o, applied, s);
  if (!s.rebuilds) return;
  const std::string why = o.rebuild_budget > 0
                              ? "--memory-budget " + bytes_text(o.rebuild_budget)
                              : "--recompute " + std::string(recompute_name(o.recompute));
  const std::string ops = "op outputs rebuilt in backward (" + why + ": " +
                          std::to_string(s.rebuilds->ops) + " ops, " + s.rebuilds->text() + ")";
  s.applies = applied ? s.applies + " + " + ops : ops;
}

ordered_json recompute_json(const MemoryReport& r, const RecomputeSummary& s) {
  ordered_json j{{"applies", s.applies},
                 {"arena_reduction_percent", percent_less(r.planned.arena, r.recompute->arena)},
                 {"total_reduction_percent", percent_less(r.planned.total, r.recompute->total)},
                 {"forward_flops", s.forward_flops},
                 {"recompute_flops", s.recompute_flops}};
  if (s.rebuilds) {
    ordered_json by_name = ordered_json::object();
    for (const auto& [name, n] : s.rebuilds->by_name) by_name[name] = n;
    j["rebuilt_ops"] = s.rebuilds->ops;
    j["rebuilt_by_op"] = by_name;
    j["rebuild_flops"] = s.rebuilds->flops;
    j["rebuild_bytes"] = s.rebuilds->bytes;
  }
  if (s.chain_blocks > 0) {
    j["chain_blocks"] = s.chain_blocks;
    j["checkpointed"] = runs_json(s.checkpointed);
  }
  if (s.budget) {
    ordered_json b{{"budget", s.budget_bytes},
                   {"planned_peak", s.budget->planned_peak},
                   {"stored_peak", s.budget->stored_peak},
                   {"plans", s.budget->plans}};
    if (s.minimum) {
      b["minimum_peak"] = s.minimum->planned_peak;
      b["minimum_checkpointed"] = runs_json(s.minimum->schedule.checkpointed);
    }
    j["budget"] = b;
  }
  return j;
}

void print_recompute(const MemoryOptions& o, const MemoryReport& r, const RecomputeSummary& s) {
  if (!r.recompute) {
    std::printf("recompute: %s\n", s.none.c_str());
    return;
  }
  const ModeMemory& p = r.planned;
  const ModeMemory& c = *r.recompute;
  std::printf(
      "recompute: %s; arena %.2f MiB vs planned %.2f MiB, %.1f%% less (total %.1f%% less)\n",
      s.applies.c_str(), to_mib(c.arena), to_mib(p.arena), percent_less(p.arena, c.arena),
      percent_less(p.total, c.total));
  if (s.chain_blocks > 0 && s.checkpointed.empty())
    std::printf("recompute: no block checkpointed of the %d\n", s.chain_blocks);
  else if (s.chain_blocks > 0)
    std::printf("recompute: checkpointed blocks %s of the %d\n", runs_text(s.checkpointed).c_str(),
                s.chain_blocks);
  if (s.forward_flops > 0)
    std::printf(
        "recompute: %.3f GFLOP of forward again in backward = %.1f%% of the forward, %.1f%% "
        "of a step (taken as 3 forwards)\n",
        s.recompute_flops * 1e-9, 100.0 * s.recompute_flops / s.forward_flops,
        100.0 * s.recompute_flops / (3.0 * s.forward_flops));
  if (s.budget)
    std::printf("budget %s: planned peak %s (plans made: %d); nothing checkpointed: %s\n",
                bytes_text(o.memory_budget).c_str(), bytes_text(s.budget->planned_peak).c_str(),
                s.budget->plans, bytes_text(s.budget->stored_peak).c_str());
  if (s.minimum)
    std::printf("budget: the least peak found is %s, checkpointing %s\n",
                bytes_text(s.minimum->planned_peak).c_str(),
                runs_summary(s.minimum->schedule.checkpointed, s.chain_blocks).c_str());
}

}  // namespace frugal
