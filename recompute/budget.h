// Checkpoint schedules under a memory budget. A chain of blocks runs forward, then backward in
// reverse; a schedule marks runs of blocks as checkpointed (only a run's input is kept, the run
// is recomputed in backward) and stores every other block's activations; a run may itself be
// rebuilt with checkpoints inside it (two levels, in the line of Griewank's revolve). solve_chain
// is an optimal dynamic programme over the chain on a memory model measured per block (Beaumont
// et al. 2019 for one level); fit_memory_budget checks each choice with the real planner and
// tightens the model until the planned peak fits.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace frugal {

// Blocks [begin, end) of a chain. With `inner` > 0 the run's rebuild in backward checkpoints its
// own blocks `inner` at a time from its start, all but the last piece (checkpoint_sequential
// inside the run): it keeps less while it is rebuilt, and those blocks are rebuilt twice.
struct BlockRun {
  int begin = 0, end = 0;
  int inner = 0;
  bool operator==(const BlockRun&) const = default;
};

// Throws frugal::Error unless the runs are non-empty, sorted, disjoint and within [0, blocks),
// each `inner` 0 or from 1 to the run's length - 1.
void check_block_runs(std::span<const BlockRun> runs, int blocks);
// The checkpointed runs inside `run`'s rebuild (none when run.inner is 0), in chain positions.
std::vector<BlockRun> inner_runs(const BlockRun& run);

// PyTorch's checkpoint_sequential (1.13), run for run: segments - 1 checkpointed runs of
// floor(blocks / segments) blocks from the start, and the rest stored as the last segment
// (54 blocks in 4: [0, 13) [13, 26) [26, 39), then 15 stored). None for segments <= 1; throws
// above `blocks`.
std::vector<BlockRun> segment_runs(int segments, int blocks);

// One block of the chain, measured alone (bytes, and a forward cost for the recompute).
struct ChainBlock {
  size_t input = 0;        // its input (the previous block's output)
  size_t output = 0;       // its output
  size_t held = 0;         // what its forward leaves alive for its backward, besides in and out
  size_t arena = 0;        // planned training arena of the block alone (one checkpoint of it)
  size_t param_grads = 0;  // its weight gradients
  double flops = 0;        // its forward cost, paid again when it is checkpointed
};

struct ChainSchedule {
  std::vector<BlockRun> checkpointed;  // sorted and disjoint; the other blocks are stored
  double recompute = 0;                // flops of the checkpointed blocks
  size_t peak = 0;                     // chain_peak of the schedule
};

// The memory model: the chain's peak live bytes over forward and backward under a schedule.
// A stored block keeps input + held until its backward, which peaks at max(arena, input +
// held + output); a checkpointed run keeps its input, and its backward adds the run's arena
// (inputs, held and outputs of its blocks, its weight gradients and the largest transient of
// one block), d input, d output and the weight gradients handed out. A run with inner
// checkpoints has for arena the peak of its own blocks under them plus its weight gradients.
// Throws on a run that is empty, unsorted, overlapping or outside the chain.
size_t chain_peak(std::span<const ChainBlock> blocks, std::span<const BlockRun> checkpointed);
// The forward flops the schedule recomputes (a run's inner checkpoints' blocks twice).
double chain_recompute(std::span<const ChainBlock> blocks, std::span<const BlockRun> checkpointed);
// The `inner` that gives run [begin, end) its lowest chain_peak (the least recompute among
// equal peaks; 0 when none is lower than the run rebuilt in one level). The DP and
// min_peak_chain offer each run in one level and with this inner.
int lowest_inner(std::span<const ChainBlock> blocks, int begin, int end);

// The schedule with the least recompute whose chain_peak is at most `limit`, or nullopt, each
// run in one level or with its lowest_inner. Optimal for the model with bytes counted in whole
// units of `unit` (rounded up, so the result's chain_peak never exceeds `limit`); unit 0 picks
// 1/2048 to 1/(200 n) of the all-stored peak, as fine as about 2e8 steps of the DP allow.
// `levels` 1: every run in one level.
std::optional<ChainSchedule> solve_chain(std::span<const ChainBlock> blocks, size_t limit,
                                         size_t unit = 0, int levels = 2);
// The schedule with the least chain_peak (the least recompute among equal peaks, greedily), its
// runs in one level or (`levels` 2) with their lowest_inner.
ChainSchedule min_peak_chain(std::span<const ChainBlock> blocks, int levels = 2);

// The real planned peak of the whole step with these runs checkpointed.
using PlannedPeak = std::function<size_t(const std::vector<BlockRun>& checkpointed)>;

struct BudgetSchedule {
  ChainSchedule schedule;
  size_t planned_peak = 0;  // real planned peak of the schedule
  size_t stored_peak = 0;   // real planned peak with nothing checkpointed
  int plans = 0;            // schedules planned for real
};

// The schedule with the least recompute (of those tried) whose real planned peak is at most
// `budget`: solves on the model offset by the real all-stored peak, plans the choice, and
// while the plan exceeds the budget tightens the offset by the excess and solves again.
// Throws frugal::Error naming `what`, the budget and minimum_memory's peak when none fits.
// `levels` as solve_chain's.
BudgetSchedule fit_memory_budget(std::span<const ChainBlock> blocks, size_t budget,
                                 const PlannedPeak& planned_peak, const std::string& what,
                                 int levels = 2);
// The lowest real planned peak found: min_peak_chain's schedule (with `levels` 2, also its
// one-level one) or every block checkpointed.
BudgetSchedule minimum_memory(std::span<const ChainBlock> blocks, const PlannedPeak& planned_peak,
                              int levels = 2);

// "123456", "200M", "1.5G", "64KiB", "2GB": bytes, with K, M, G, T as powers of 1024.
// Throws frugal::Error on anything else, or on zero unless `zero_allowed`.
size_t parse_bytes(const std::string& text, bool zero_allowed = false);
// "[0, 3) [5, 9)", or "none"; a run with inner checkpoints "[0, 40)/6".
std::string runs_text(std::span<const BlockRun> runs);
// runs_text for up to 6 runs, else "31 runs over 52 of the 54 blocks" (", 4 with inner
// checkpoints" where some have them); "every block" when
// each of the `blocks` is a run of its own.
std::string runs_summary(std::span<const BlockRun> runs, int blocks);
// "87.3 MiB (91545600 bytes)"
std::string bytes_text(size_t bytes);

}  // namespace frugal
