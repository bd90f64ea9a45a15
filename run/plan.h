// From a recorded tape to a plan: lowers the tape into the plain step description that
// planning reads (memory/step.h), runs the one planning pipeline (memory/layout.h) and hands
// the chosen saved encodings back to the ops that will run. The executor, the reports and the
// budget search all plan through here, so what they show is what runs.
#pragma once

#include "autograd/tape.h"
#include "memory/layout.h"

namespace frugal {

// The step a tape records, in `mode`, with each op's roles for `backend` (and both of its
// encodings' roles where it has a choice). Reads the ops; changes nothing.
Step lower_step(Tape& tape, Mode mode, const Backend& backend);
// Sets each op's saved encoding to the one chosen in `step` (ops without a choice untouched).
void apply_encodings(Tape& tape, const Step& step);
// lower_step, plan_layout, apply_encodings: the layout the executor of the same tape, mode
// and memory mode binds. Mutates only the ops' encoding choices. Deterministic.
Layout memory_layout(Tape& tape, Mode mode, MemoryMode memory, const Backend& backend,
                     const LayoutOptions& options = {});

}  // namespace frugal
