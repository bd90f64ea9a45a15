// The segment phase of fit_rebuilds (memory/rebuild.h): when rebuilding single ops cannot fit a
// budget, whole runs of the forward are rebuilt from kept cut values, as checkpoint segments on
// any graph, and what fits is stored back. Internal to memory/.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "memory/liveness.h"
#include "memory/rebuild.h"
#include "memory/step.h"

namespace frugal {

// Peak live bytes over the steps of a liveness (the plan's lower bound), and its step.
std::pair<size_t, int> peak_live(const Liveness& L, size_t alignment);

// Searches segment schedules for `budget` bytes of arena on top of `options` (whose rebuilds
// stay): uniform ones first (every m-th cut value kept), then uneven ones (the kept cuts moved
// one at a time, and a stored tail of blocks), each then storing back what blocks and ops fit.
// Of the schedules whose real plan fits, `fit` gets the one that rebuilds the fewest flops;
// where none fits, the smallest arena found (fit.fits false). Adds to fit.plans.
void fit_segments(const Step& step, const LivenessOptions& options, size_t alignment, size_t budget,
                  RebuildFit& fit);

}  // namespace frugal
