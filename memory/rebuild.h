// Op-level recomputation: which op outputs a planned training step drops after forward and
// rebuilds in backward (Roles::rebuildable, LivenessOptions::rebuild). Pure: reads a step
// description and plans it, nothing more.
#pragma once

#include <cstddef>
#include <vector>

#include "memory/liveness.h"
#include "memory/step.h"

namespace frugal {

// Every op whose roles say it can be rebuilt, in tape order; convolutions and linear layers
// (Roles::rebuild_expensive) only with `expensive`.
std::vector<int> rebuildable_ops(const Step& step, bool expensive = false);

// The rebuilds a planned training step makes when asked for the cheap ones: of three
// candidates, the one the real planner (plan_arena) places in the smallest arena, the one
// with fewer rebuilds on a tie:
//  - none;
//  - the free rebuilds: rebuildable ops whose rebuild at step s reads inputs that live to s
//    anyway, or that are themselves rebuilt there and read by nothing else (BatchNorm then
//    ReLU from the convolution's output); no rebuild makes another value live longer or
//    rebuilds it earlier than its own readers need. Chosen greedily in tape order, so of a
//    chain of blocks each reading the previous one's rebuilt output, every other block is;
//  - every rebuildable op: chains of rebuilds pull whole runs of blocks back at once, which
//    wins where a run is rebuilt after the memory of later runs is freed (a ResNet's stages).
// The free rebuilds described above, in tape order.
std::vector<int> free_rebuilds(const Step& step, const LivenessOptions& options);

std::vector<int> choose_rebuilds(const Step& step, const LivenessOptions& options,
                                 size_t alignment);

// Rebuilds that fit a planned training step into `budget` bytes of arena, adding the least
// rebuild work it can: the cheap choice first; then, while the arena is above the budget, the
// rebuild (with the cheap producers only it reads) that lowers the step's peak live bytes
// most per flop, among the outputs live at the peak, convolutions and linear layers
// included; each accepted set is placed by the real planner until one fits. Where that
// stalls, segments (memory/rebuild_segments.h): every m-th cut value kept (m = 2, 3, ...),
// every other output rebuilt, the first m that fits; the kept cuts moved one at a time where
// none does; and a stored tail of blocks in front of uneven segments. Each then stores back
// the blocks between cut values and the single ops that fit; of all, the real plan that fits
// with the fewest rebuild flops.
// `fits` false: none found; `arena` is then the smallest arena found.
struct RebuildFit {
  std::vector<int> rebuild;
  size_t arena = 0;
  bool fits = false;
  int plans = 0;  // liveness analyses and plans made
};
RebuildFit fit_rebuilds(const Step& step, const LivenessOptions& options, size_t alignment,
                        size_t budget);

// The op outputs (of rebuildable ops) that alone carry the forward past their producer:
// nothing produced before them is read after them. A ResNet's block outputs, GoogLeNet's
// inception outputs. In tape order.
std::vector<int> cut_values(const Step& step);

// The arena that analyze + plan_arena give `step` with `options` (a test and search helper).
size_t planned_arena_bytes(const Step& step, const LivenessOptions& options, size_t alignment);

}  // namespace frugal
