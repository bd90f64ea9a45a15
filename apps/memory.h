// `frugal memory`: the memory of one bundled network in one configuration, per mode
// (baseline, eager, planned, and recompute where the network recomputes) and optnet
// category, as a table or JSON; `--memory-budget` chooses the checkpoint runs; `--optnet-tables`
// sets frugal's figures beside optnet's published ones; `--timeline` and `--trace` draw the
// planned layout over the step.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/model_options.h"
#include "autograd/op.h"
#include "autograd/tape.h"
#include "memory/layout.h"
#include "models/model_config.h"
#include "recompute/budget.h"
#include "report/report.h"
#include "report/text_file.h"
#include "run/executor.h"

namespace frugal {

struct MemoryOptions : ModelChoice {
  bool json = false;
  bool run = false;           // also execute one real step and compare measured with planned bytes
  bool workspaces = false;    // list each convolution pass's algorithm and workspace
  bool sim_choices = false;   // --device sim: cuDNN-like scratch choices (set_sim_scratch_choices)
  bool ops = false;           // list what the planned step keeps, encodes or rebuilds per op
  std::string timeline = {};  // write the planned layout's live bytes over the step here (SVG)
  std::string trace = {};     // write the planned layout as Chrome trace events here (JSON)
  std::vector<BlockRun> checkpoint_runs = {};  // the runs the budget chose (run_memory sets it)
  int ranks = 1;                               // data parallel: report one rank's memory (--ranks)
  int zero = 0;                                // and its ZeRO stage (--zero)
  size_t bucket_bytes = 0;                     // gradient bucket size (0: the executor's default)
};

// --ranks N: one rank's memory of a data-parallel training step beside one process's (printed
// when `print`), as JSON.
nlohmann::ordered_json print_ranks(const MemoryOptions& options, bool print);

// The network with every activation stored: the planned mode's tape (RevNets: the stored
// twins of the reversible units).
ModelConfig stored_config(const MemoryOptions& options);
// The same network with its recomputation applied (RevNets as bundled; CIFAR ResNets with
// --segments or the budget's runs), or nullopt when it has none. Throws on --segments for a
// network without a chain of blocks.
std::optional<ModelConfig> recompute_config(const MemoryOptions& options);

// What the recompute entry applies, for the reports.
struct RecomputeSummary {
  std::string applies;  // "reversible units ...", "checkpoint segments ...", or empty: none
  std::string none;     // why there is no recompute entry
  std::vector<BlockRun> checkpointed;
  int chain_blocks = 0;
  double forward_flops = 0;                // of the stored network's forward
  double recompute_flops = 0;              // forward flops paid again in backward
  size_t budget_bytes = 0;                 // --memory-budget
  std::optional<BudgetSchedule> budget;    // its schedule
  std::optional<BudgetSchedule> minimum;   // the lowest planned peak found (with a budget)
  std::optional<RebuildSummary> rebuilds;  // --recompute: the ops rebuilt in backward
  int batch_norms_from_output = -1;        // --bn-from-output: how many switched (-1: not asked)
  int layer_norms_from_output = -1;        // --ln-from-output: likewise
};
// Fits options.memory_budget: sets options.checkpoint_runs and the summary's budget and
// minimum. Throws when no schedule fits (naming the minimum) or the options cannot have one.
void apply_memory_budget(MemoryOptions& options, RecomputeSummary& summary);
// The scratch chosen for passes with choices (cuDNN's algorithms): a summary line, and with
// --workspaces one row per pass. Nothing where no op offers a choice (the CPU).
void print_workspaces(const MemoryOptions& options);
// --ops: one row per op of the planned layout (with the rebuilds --recompute chose): its first
// output kept for backward, compact (a 1-bit mask), rebuilt at a step, or not read. Training.
void print_ops(const MemoryOptions& options);
// Fills the summary's description: what recompute_config applies (`applied`), or why nothing.
void describe_recompute(const MemoryOptions& options, bool applied, RecomputeSummary& summary);

// A bundled network recorded over a batch: the loss in training, the output in inference.
struct RecordedModel {
  ParamStore store;
  std::unique_ptr<Tape> tape;
  Value images, labels, out;
  std::vector<Value> extra_inputs = {};  // the network's other inputs (ModelStep::extra_inputs)
  int batch_norms_from_output = 0;       // ModelStep::batch_norms_from_output
  int layer_norms_from_output = 0;       // ModelStep::layer_norms_from_output
};
// Records options.model over a batch of options.batch, with `config` or as the options give
// it (recompute_config, else stored_config). Throws frugal::Error on bad options.
void record_model(RecordedModel& r, const MemoryOptions& options);
void record_model(RecordedModel& r, const MemoryOptions& options, const ModelConfig& config);
// The layout the report plans in memory mode m for this recording (executor-equal).
Layout recorded_layout(RecordedModel& r, const MemoryOptions& options, MemoryMode m);

// Records the stored network with shapes only and plans it in every mode; where the network
// recomputes, records it again with recomputation for the recompute entry (and, given a
// summary, says what that applies and what it costs).
MemoryReport memory_report_for(const MemoryOptions& options, RecomputeSummary* summary = nullptr);
// The report as one JSON object: {"model","batch","mode","dtype","modes":{...}}; "recompute"
// is null where there is none.
nlohmann::ordered_json memory_report_json(const MemoryOptions& options, const MemoryReport& r,
                                          const RecomputeSummary* summary = nullptr);
// The recompute entry's details as JSON, and its lines under the table.
nlohmann::ordered_json recompute_json(const MemoryReport& r, const RecomputeSummary& s);
void print_recompute(const MemoryOptions& options, const MemoryReport& r,
                     const RecomputeSummary& s);
// Prints the report for one configuration. Throws frugal::Error on bad options, or when a
// real step's measured bytes differ from the plan.
void run_memory(const MemoryOptions& options);
// optnet's three published conditions, ours beside theirs, row by row.
void run_optnet_tables(bool json);
// The bundled networks, one per line.
void print_model_list();

}  // namespace frugal
