// The arena planner's inner pieces, shared by its greedy core (planner.cpp) and its search
// over placement orders (planner_search.cpp). Not part of the planner's contract: use
// memory/planner.h.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "memory/planner_occupancy.h"

namespace frugal::planner {

// An alias group merged into one block: the union of the lifetimes, the largest member.
struct Block {
  size_t bytes = 0;
  int first = 0;
  int last = 0;
};

// The blocks of one alias-merged step, with their lifetimes as time leaves; `live` is the bytes
// live during each leaf.
struct Problem {
  std::vector<Block> blocks;
  std::vector<int> leaf_lo, leaf_hi;
  int leaves = 1;
  std::vector<size_t> live;
};

// The non-empty blocks by size desc; ties go to the earlier first use, then the index.
std::vector<int> size_order(const Problem& p);

// Places the blocks in the order `ids` into `offsets` (per block) and returns the arena, or
// gives up and returns SIZE_MAX as soon as `beaten(arena so far)` says it cannot win.
template <typename Beaten>
size_t place_in_order(const Problem& p, const std::vector<int>& ids, std::vector<size_t>& offsets,
                      const Beaten& beaten) {
  Occupancy occupancy(p.leaves);
  size_t arena = 0;
  offsets.assign(p.blocks.size(), 0);
  for (int i : ids) {
    offsets[i] = occupancy.best_fit(p.leaf_lo[i], p.leaf_hi[i], p.blocks[i].bytes);
    occupancy.add(p.leaf_lo[i], p.leaf_hi[i], {offsets[i], offsets[i] + p.blocks[i].bytes});
    arena = std::max(arena, offsets[i] + p.blocks[i].bytes);
    if (beaten(arena)) return std::numeric_limits<size_t>::max();
  }
  return arena;
}

// The other placement orders, raced against size desc's `arena` and `offsets` (per block), then
// the local search when `search` is set; replaces them with a smaller packing if one is found
// and names the order that won in `strategy`.
void improve(const Problem& p, size_t lower_bound, bool search, size_t& arena,
             std::vector<size_t>& offsets, std::string& strategy);

}  // namespace frugal::planner
