// Where a step's time goes, from the executor's per-op times (ExecutorOptions::profile): by
// op kind (its name: conv2d, batch_norm, ...) and the slowest single ops, in seconds per step,
// each split into forward, backward, rebuilds (recompute) and optimizer updates. `frugal bench
// --profile` prints it (and puts it in --json).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run/executor.h"

namespace frugal {

class Tape;

struct ProfileRow {
  std::string what;  // an op kind ("conv2d"), or one op: "#12 conv2d (32,64,56,56) layer1.0"
  int ops = 0;       // ops of that kind (1 for a single op)
  OpTimes per_step;  // seconds per step
};

struct Profile {
  int steps = 0;                    // steps the times are summed over
  std::vector<ProfileRow> kinds;    // every kind, the slowest first
  std::vector<ProfileRow> slowest;  // the slowest single ops, the slowest first
  OpTimes other;                    // per step, outside any op: updates at the step's end
  OpTimes all;                      // per step: every op and `other`
};

// The profile of an executor built with ExecutorOptions::profile over its tape, with the `top`
// slowest single ops. An error if it timed no step.
Profile profile_of(const Tape& tape, const Executor& ex, int top = 10);
// A table of the kinds (share of the step, ms per step in each pass), then the slowest ops.
std::string profile_text(const Profile& p);
nlohmann::ordered_json profile_json(const Profile& p);

}  // namespace frugal
