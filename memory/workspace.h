// Scratch that buys speed (cuDNN's convolution workspaces): for each op pass that offers
// choices (Roles::forward_choices / backward_choices), the fastest whose scratch fits the room
// the planned arena leaves at that pass's step, so that the arena is no larger than with every
// pass at its least scratch. Frameworks cap the workspace by hand (Caffe 8 MiB a layer, MXNet
// 1 GiB) or not at all; here the plan decides, and the choice is the same in every memory mode
// (it is made on the planned layout of the step, whatever mode then runs), so planned and
// baseline steps run the same algorithms and give the same bits.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/roles.h"

namespace frugal {

struct Step;
struct LayoutOptions;

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

// Chooses every pass's scratch into step's roles (forward_scratch / backward_scratch) and says
// what it chose. No pass gets a choice above `limit` bytes; one whose least scratch is above
// it is an error naming the op and both sizes. Passes with no choices keep their scratch;
// with none at all in the step, nothing is planned. Deterministic for the same step.
WorkspacePlan choose_workspaces(Step& step, const LayoutOptions& options, size_t limit);

}  // namespace frugal
