// Offsets occupied over time: run sets with their largest gap, the segment tree over time, and
// the best-fit query that cuts candidate gaps by the few run sets live during a lifetime.
#include "memory/planner_occupancy.h"

#include <algorithm>
#include <limits>

namespace frugal {
namespace {

// The first run at or after `it` that ends past `offset`, galloping: successive searches in one
// list go up in offset and usually land close together.
Runs::const_iterator first_past(Runs::const_iterator it, Runs::const_iterator end, size_t offset) {
  auto before = [&](Run r) { return r.end <= offset; };
  ptrdiff_t step = 1;
  while (step < end - it && before(it[step])) it += step, step *= 2;
  return std::partition_point(it, it + std::min(step + 1, end - it), before);
}

// Cuts the candidate gaps by the occupied runs, keeping the pieces that still fit `bytes`. Most
// candidates meet no run of a given set, so both sides are skipped over by galloping and the
// untouched candidates are copied whole.
void cut_candidates(const Runs& runs, size_t bytes, const Runs& candidates, Runs& out) {
  out.resize(candidates.size() + runs.size() + 1);  // each run adds at most one piece
  Run* o = out.data();
  auto c = candidates.begin();
  auto r = runs.begin();
  while (c != candidates.end()) {
    r = first_past(r, runs.end(), c->begin);
    if (r == runs.end()) break;
    const auto touched = first_past(c, candidates.end(), r->begin);
    o = std::copy(c, touched, o);
    c = touched;
    if (c == candidates.end() || r->end <= c->begin) continue;
    size_t start = c->begin;
    for (; r != runs.end() && r->begin < c->end; ++r) {
      if (r->begin > start && r->begin - start >= bytes) *o++ = {start, r->begin};
      start = std::max(start, r->end);
    }
    if (c->end > start && c->end - start >= bytes) *o++ = {start, c->end};
    if (r != runs.begin()) --r;  // the last run may reach into the next candidate
    ++c;
  }
  o = std::copy(c, candidates.end(), o);
  out.resize(o - out.data());
}

}  // namespace

void RunSet::add(Run r) {
  auto it =
      std::partition_point(runs_.begin(), runs_.end(), [&](Run x) { return x.end < r.begin; });
  size_t below = it == runs_.begin() ? 0 : std::prev(it)->end;  // end of the run before a gap
  if (it == runs_.end()) {  // above the top: a new gap opens below r
    max_gap_ = std::max(max_gap_, r.begin - below);
    if (runs_.empty()) runs_.reserve(8);  // most sets stay small: one allocation
    runs_.push_back(r);
    return;
  }
  // The gaps r fills or cuts: the one before each run it merges with, and the one before the run
  // after. Only when one of them was the largest must the largest be found again.
  bool shrinks_max = false;
  auto jt = it;
  for (; jt != runs_.end() && jt->begin <= r.end; ++jt) {
    if (r.begin < jt->begin && jt->begin - below == max_gap_) shrinks_max = true;
    below = jt->end;
    r.begin = std::min(r.begin, jt->begin);
    r.end = std::max(r.end, jt->end);
  }
  if (jt != runs_.end() && r.end > below && jt->begin - below == max_gap_) shrinks_max = true;
  if (it == jt) {
    runs_.insert(it, r);
  } else {
    *it = r;
    runs_.erase(it + 1, jt);
  }
  if (!shrinks_max) return;
  max_gap_ = 0;
  below = 0;
  for (Run x : runs_) max_gap_ = std::max(max_gap_, x.begin - below), below = x.end;
}

void Occupancy::add(int x, int l, int r, int lo, int hi, Run run) {
  below_[x].add(run);
  if (lo <= l && r <= hi) {
    cover_[x].add(run);
    return;
  }
  const int m = (l + r) / 2;
  if (lo <= m) add(2 * x, l, m, lo, hi, run);
  if (hi > m) add(2 * x + 1, m + 1, r, lo, hi, run);
}

void Occupancy::collect(int x, int l, int r, int lo, int hi) {
  const bool inside = lo <= l && r <= hi;
  const RunSet& mine = inside ? below_[x] : cover_[x];
  if (!mine.runs().empty()) occupied_.push_back(&mine);
  if (inside) return;
  const int m = (l + r) / 2;
  if (lo <= m) collect(2 * x, l, m, lo, hi);
  if (hi > m) collect(2 * x + 1, m + 1, r, lo, hi);
}

// A fitting gap of the union lies in a fitting gap of every set, so it lies above the top of each
// set without one; from there the candidates are cut by the other sets in turn, shortest first.
size_t Occupancy::best_fit(int lo, int hi, size_t bytes) {
  constexpr size_t kEnd = std::numeric_limits<size_t>::max();
  occupied_.clear();
  collect(1, 0, leaves_ - 1, lo, hi);
  size_t floor = 0;
  std::erase_if(occupied_, [&](const RunSet* set) {
    if (set->max_gap() >= bytes) return false;
    floor = std::max(floor, set->top());
    return true;
  });
  std::sort(occupied_.begin(), occupied_.end(),
            [](const RunSet* a, const RunSet* b) { return a->runs().size() < b->runs().size(); });
  candidates_.assign(1, {floor, kEnd});
  for (const RunSet* set : occupied_) {
    if (set->top() <= floor) continue;
    cut_candidates(set->runs(), bytes, candidates_, cut_);
    candidates_.swap(cut_);
  }
  size_t best = candidates_.back().begin, best_gap = kEnd;  // the top, [top, kEnd), comes last
  for (Run c : candidates_)
    if (c.end - c.begin < best_gap) best_gap = c.end - c.begin, best = c.begin;
  return best;
}

}  // namespace frugal
