// Offsets occupied over time, the engine under plan_arena: a segment tree over time leaves whose
// nodes keep merged runs of occupied offsets, so that a best-fit query meets a few run lists
// instead of every placed block that lives at the same time.
#pragma once

#include <cstddef>
#include <vector>

namespace frugal {

// Occupied offsets [begin, end).
struct Run {
  size_t begin = 0;
  size_t end = 0;
};
using Runs = std::vector<Run>;

// Runs kept sorted, disjoint and not touching, with the largest gap below the top, so that a
// query can pass over a set that has no room for its request.
class RunSet {
 public:
  const Runs& runs() const { return runs_; }
  size_t top() const { return runs_.empty() ? 0 : runs_.back().end; }
  size_t max_gap() const { return max_gap_; }
  void add(Run r);

 private:
  Runs runs_;
  size_t max_gap_ = 0;
};

// Node x of the tree keeps `cover` (blocks whose lifetime spans x's whole range, stored at the
// canonical nodes of their lifetime) and `below` (everything stored at x or under it). What is
// occupied during leaves [lo, hi] is then `below` of their canonical nodes plus `cover` of the
// ancestors of those.
class Occupancy {
 public:
  explicit Occupancy(int leaves) : leaves_(leaves), cover_(4 * leaves), below_(4 * leaves) {}

  // Marks `run` occupied during leaves [lo, hi].
  void add(int lo, int hi, Run run) { add(1, 0, leaves_ - 1, lo, hi, run); }

  // The lowest offset of the smallest gap of at least `bytes` that is free during all of
  // [lo, hi]; the top of what is occupied then when no gap fits.
  size_t best_fit(int lo, int hi, size_t bytes);

 private:
  // Node x covers leaves [l, r]; its children 2x and 2x+1 split them at the middle, which on a
  // training step's timeline is where forward turns into backward.
  void add(int x, int l, int r, int lo, int hi, Run run);
  void collect(int x, int l, int r, int lo, int hi);

  int leaves_;
  std::vector<RunSet> cover_, below_;
  std::vector<const RunSet*> occupied_;  // scratch of best_fit
  Runs candidates_, cut_;
};

}  // namespace frugal
