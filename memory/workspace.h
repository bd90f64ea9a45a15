// Scratch that buys speed (cuDNN's convolution workspaces): for each op pass that offers
// choices (Roles::forward_choices / backward_choices), the fastest whose scratch fits the room
// the planned arena leaves free at that pass's step, so that the arena is no larger than with
// every pass at its least scratch (or, where asked, at most `growth` bytes larger). Frameworks
// cap the workspace by hand (Caffe 8 MiB a layer, MXNet 1 GiB) or not at all; here the plan
// decides, and the choice is the same in every memory mode (it is made on the planned layout
// of the step, whatever mode then runs), so planned and baseline steps run the same algorithms
// and give the same bits.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/roles.h"

namespace frugal {

struct Step;
struct Layout;

// The scratch one op pass was given, among its choices.
struct ScratchPick {
  int op = -1;
  std::string op_name;  // the step's name of the op ("conv2d")
  bool backward = false;
  ScratchChoice least;    // its first choice (the least scratch)
  ScratchChoice fastest;  // the fastest within the limit, room or not
  ScratchChoice chosen;   // what the plan had room for
};

struct WorkspacePlan {
  std::vector<ScratchPick> picks;  // every pass with choices, in op order, forward first
  size_t arena_least = 0;          // the planned arena with every pass at its least scratch
  size_t arena = 0;                // the planned arena with the picks
  double seconds_least = 0, seconds_fastest = 0, seconds_chosen = 0;  // summed over picks
};

// Gives every pass that offers choices its least scratch (its first choice) in step's roles.
// No pass may need more than `limit` bytes: one whose least scratch is above it is an error
// naming the op and both sizes. Plan the step after this, then choose_workspaces.
void least_workspaces(Step& step, size_t limit);

// Upgrades the passes of `planned` (plan_layout's planned layout of `step` after
// least_workspaces) in order of time saved: each takes the fastest choice within `limit` whose
// scratch fits a free range of the arena at its step (every buffer live then keeps its place),
// the arena allowed to grow by at most `growth` bytes. The new sizes go into step's roles and
// the layout (its buffers, requests, offsets, arena and lower bound); nothing else moves, so
// the arena grows only into `growth`. Deterministic for the same step and layout.
WorkspacePlan choose_workspaces(Step& step, Layout& planned, size_t limit, size_t growth = 0);

}  // namespace frugal
