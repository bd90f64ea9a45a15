// Memory budgets for the bundled networks: a training step recorded from shapes only, the
// chain of blocks a network can checkpoint with each block measured alone, and the schedule
// recompute/budget.h chooses, verified against the planned layout of the whole step.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "autograd/tape.h"
#include "memory/layout.h"
#include "models/model_config.h"
#include "recompute/budget.h"

namespace frugal {

// One training step of a bundled network: SGD with momentum, the loss kept.
struct TrainingStep {
  std::string model = "resnet110";
  int64_t batch = 64;
  DType dtype = DType::f32;
  ModelConfig config = {};
  bool keep_logits = false;  // the trainer also reads the logits after forward
  // The backend whose kernels (their scratch) and allocator (its alignment) the plan is for;
  // null: the CPU backend.
  const Backend* backend = nullptr;
  // The most scratch one convolution pass may take (ExecutorOptions::workspace_limit).
  size_t workspace_limit = std::numeric_limits<size_t>::max();
  size_t workspace_growth = 0;  // bytes the arena may grow for faster scratch
  // Op outputs rebuilt in backward around the checkpoint runs (ExecutorOptions::recompute):
  // the step is planned with them; the blocks' memory model stays without them and the fit's
  // correction against the real plan closes the gap.
  Recompute recompute = Recompute::none;
  // ReLU outputs packed outside the arena (ExecutorOptions::pack): the step is planned so.
  bool pack = false;
  // 2: a checkpoint run may checkpoint its own blocks inside it (BlockRun::inner); 1: not.
  int checkpoint_levels = 2;
};

// The planned arena of the step recorded with step.config (step.backend, nothing allocated):
// what the executor of the same step binds, network inputs aside.
size_t planned_step_peak(const TrainingStep& step);
// Forward cost of a tape: 2 flops per multiply-add of conv2d, conv3d, their transposes and
// linear, one per output element of every other op (a checkpoint or reversible op too: what runs
// inside it is not counted, so stored minus recomputing tape is the recompute).
double forward_flops(const Tape& tape);
// The forward flops that checkpoint ops inside checkpoint ops of `tape` run again in backward
// (BlockRun::inner), beyond what forward_flops of the tape without them tells: an inner
// segment runs in its outer segment's rebuild and once more for its own backward.
double inner_checkpoint_flops(const Tape& tape);
// Each block of the model's chain measured alone: the step is recorded with every block its
// own checkpoint op and each segment's tape is planned. Throws if the model has no chain.
std::vector<ChainBlock> measure_chain(const TrainingStep& step);
// The checkpoint runs with the least recompute whose real planned step fits `budget` bytes
// (fit_memory_budget over measure_chain); step.config's own runs and segments are ignored.
// Throws naming the minimum when no schedule fits, or when the model has no chain.
BudgetSchedule fit_step_budget(const TrainingStep& step, size_t budget);
// The lowest real planned peak found for the step (minimum_memory over measure_chain).
BudgetSchedule minimum_step_memory(const TrainingStep& step);

}  // namespace frugal
