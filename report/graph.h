// The graph picture: graphviz DOT with one node per buffer, edges from the tape, and one
// colour per memory slot, so buffers that share bytes in the layout share a colour. Scopes
// ("stage2/block3") become nested clusters so large networks stay legible.
#pragma once

#include <string>
#include <vector>

#include "memory/layout.h"

namespace frugal {

class Tape;

// Memory slots: groups of buffers that all share at least one byte of the layout. Byte ranges
// [offset, offset + bytes) are covered by as few groups as possible (a minimum clique cover
// of the interval graph: the range ending first, stabbed at its last byte, takes every
// unassigned range holding that byte). Returns buffer -> slot, numbered in order of each
// slot's first buffer; -1 for inputs and empty buffers. Two buffers share a slot only if their
// ranges overlap.
std::vector<int> memory_slots(const Layout& layout);

// The fill colour of a slot: a fixed 12-colour palette, then generated light colours; distinct
// for slots 0..32779 (white for -1).
std::string slot_colour(int slot);

struct GraphOptions {
  bool all_buffers = false;  // training: saved, scratch and gradient buffers too
  std::string title = {};    // first line of the graph label
};

// DOT text: nodes labelled with the op, shape and bytes (and offset when planned), coloured
// by memory slot; edges producer -> consumer (gradients: d output -> d input, laid out like the
// forward edges); nodes grouped in one cluster per scope. Deterministic.
std::string graph_dot(const Tape& tape, const Layout& layout, const GraphOptions& options = {});

}  // namespace frugal
