// Op-level recomputation: which op outputs a planned training step drops after forward and
// rebuilds in backward (Roles::rebuildable, LivenessOptions::rebuild). Pure: reads a step
// description and plans it, nothing more.
#pragma once

#include <cstddef>
#include <vector>

#include "memory/liveness.h"
#include "memory/step.h"

namespace frugal {

// Every op whose roles say it can be rebuilt, in tape order.
std::vector<int> rebuildable_ops(const Step& step);

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

// The arena that analyze + plan_arena give `step` with `options` (a test and search helper).
size_t planned_arena_bytes(const Step& step, const LivenessOptions& options, size_t alignment);

}  // namespace frugal
