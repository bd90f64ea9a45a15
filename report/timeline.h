// Pictures of a layout over time: live bytes per step stacked by optnet category as a
// hand-written SVG, and every buffer as a Chrome trace event (opens in Perfetto and
// chrome://tracing). Pure functions from a Layout to a string; nothing is run.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "memory/layout.h"

namespace frugal {

// Live bytes at each timeline step, per category (outputs, gradInputs, buffers, param grads),
// as the plan places them: each buffer's bytes rounded to the alignment over [first, last]; an
// alias group the plan merged counts once, as its root, over the union of its members'
// lifetimes; inputs are not counted. In planned mode the largest total is the plan's lower bound.
struct LiveBytes {
  int steps = 0;
  std::array<std::vector<size_t>, kMemoryCategories> bytes;  // [category - 1][step]
  std::vector<size_t> rebuilt;  // [step]: of the outputs, the copies rebuilt in backward
  size_t total(int step) const;
  size_t peak() const;
};
LiveBytes live_bytes(const Layout& layout);

// An SVG (width x height pixels) of live bytes over the step, stacked by category, with
// horizontal lines for the arena size (id "arena") and the lower bound (id "lower-bound"),
// the outputs rebuilt in backward outlined at the bottom (id "rebuilt", where there are any),
// the forward/backward boundary, axes in MiB and a legend. Deterministic.
std::string timeline_svg(const Layout& layout, const std::string& title, int width = 960,
                         int height = 480);

// Chrome trace-event JSON ({"traceEvents": [...]}): one complete event ("ph":"X") per buffer,
// ts = first step and dur = last - first + 1 (one step = one microsecond), grouped in one
// process per category (inputs too) with lanes as threads so events never overlap on a lane;
// args give bytes, offset and label. Counter events ("ph":"C") give live bytes per category
// at each step. Deterministic.
std::string trace_json(const Layout& layout, const std::string& title);

}  // namespace frugal
