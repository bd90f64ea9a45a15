// The arena planner: alias groups merged into blocks, lifetimes mapped to time leaves, then
// greedy best-fit packing (memory/planner_occupancy.h) under several orders raced against each
// other; and the validity check the tests and debug builds use.
#include "memory/planner.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <limits>
#include <map>
#include <set>

#include "core/error.h"
#include "memory/planner_occupancy.h"

namespace frugal {
namespace {

size_t round_up(size_t bytes, size_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

// An alias group merged into one block: the union of the lifetimes, the largest member.
struct Block {
  size_t bytes = 0;
  int first = 0;
  int last = 0;
};

struct Groups {
  std::vector<int> of;        // buffer -> group
  std::vector<Block> blocks;  // group -> block, bytes rounded up to the alignment
};

Groups alias_groups(std::span<const PlanBuffer> buffers, size_t alignment) {
  const int n = static_cast<int>(buffers.size());
  for (int i = 0; i < n; ++i) {
    const PlanBuffer& b = buffers[i];
    FRUGAL_CHECK(b.first <= b.last, "plan_arena: buffer ", i, " has first ", b.first, " > last ",
                 b.last);
    FRUGAL_CHECK(b.alias_of >= -1 && b.alias_of < n, "plan_arena: buffer ", i, " has alias_of ",
                 b.alias_of, ", expected -1 or an index below ", n);
  }
  // Resolve each alias chain to its root; a chain that comes back to itself is a cycle.
  constexpr int kUnknown = -1, kVisiting = -2;
  std::vector<int> root(n, kUnknown);
  std::vector<int> path;
  for (int i = 0; i < n; ++i) {
    int j = i;
    path.clear();
    while (root[j] == kUnknown && buffers[j].alias_of >= 0) {
      root[j] = kVisiting;
      path.push_back(j);
      j = buffers[j].alias_of;
    }
    if (root[j] == kUnknown) root[j] = j;
    FRUGAL_CHECK(root[j] != kVisiting, "plan_arena: the aliases of buffer ", j, " form a cycle");
    for (int k : path) root[k] = root[j];
  }
  Groups g;
  g.of.assign(n, -1);
  for (int i = 0; i < n; ++i) {
    if (root[i] != i) continue;
    g.of[i] = static_cast<int>(g.blocks.size());
    g.blocks.push_back({0, buffers[i].first, buffers[i].last});
  }
  for (int i = 0; i < n; ++i) {
    g.of[i] = g.of[root[i]];
    Block& block = g.blocks[g.of[i]];
    block.bytes = std::max(block.bytes, round_up(buffers[i].bytes, alignment));
    block.first = std::min(block.first, buffers[i].first);
    block.last = std::max(block.last, buffers[i].last);
  }
  return g;
}

// The blocks of one alias-merged step, with their lifetimes as time leaves; `live` is the bytes
// live during each leaf.
struct Problem {
  std::vector<Block> blocks;
  std::vector<int> leaf_lo, leaf_hi;
  int leaves = 1;
  std::vector<size_t> live;
};

enum class Order { size, length, area, first_use, breadth };
constexpr Order kOrders[] = {Order::size, Order::length, Order::area, Order::first_use,
                             Order::breadth};
constexpr int kOrderCount = 5;

// The other orders are tried only when size desc leaves more than this fraction of the lower
// bound to gain: below it they cannot change a reported figure, and on deep training steps their
// fragmented packings cost several times more to compute.
constexpr double kCloseEnough = 1e-4;

// The arenas of the orders that finished. An order gives up once it cannot win: when its arena
// reaches that of a finished earlier order or passes that of a finished later one (ties go to the
// earlier order). The winner never gives up, so the result does not depend on timing.
struct Race {
  std::array<std::atomic<size_t>, kOrderCount> finished;

  Race() {
    for (auto& arena : finished) arena = std::numeric_limits<size_t>::max();
  }
  bool beaten(int k, size_t arena) const {
    for (int j = 0; j < kOrderCount; ++j) {
      const size_t other = finished[j].load(std::memory_order_relaxed);
      if (j < k ? arena >= other : (j > k && arena > other)) return true;
    }
    return false;
  }
};

const char* order_name(Order order) {
  switch (order) {
    case Order::size:
      return "greedy best-fit, size desc";
    case Order::length:
      return "greedy best-fit, lifetime desc";
    case Order::area:
      return "greedy best-fit, size*lifetime desc";
    case Order::first_use:
      return "greedy best-fit, first use asc";
    case Order::breadth:
      return "greedy best-fit, by breadth";
  }
  return "?";
}

// For each block, its most crowded leaf: the first leaf of its lifetime with the most live
// bytes (range maximum over a sparse table of leaves).
std::vector<int> crowded_leaf(const Problem& p) {
  const int L = p.leaves;
  auto better = [&](int a, int b) { return p.live[b] > p.live[a] ? b : a; };  // a < b
  std::vector<std::vector<int>> table{std::vector<int>(L)};
  for (int leaf = 0; leaf < L; ++leaf) table[0][leaf] = leaf;
  for (int k = 1; (1 << k) <= L; ++k) {
    const std::vector<int>& prev = table.back();
    std::vector<int> next(L - (1 << k) + 1);
    for (size_t i = 0; i < next.size(); ++i) next[i] = better(prev[i], prev[i + (1 << (k - 1))]);
    table.push_back(std::move(next));
  }
  std::vector<int> leaf(p.blocks.size(), 0);
  for (size_t i = 0; i < p.blocks.size(); ++i) {
    if (p.blocks[i].bytes == 0) continue;
    const int lo = p.leaf_lo[i], hi = p.leaf_hi[i], k = std::bit_width(unsigned(hi - lo + 1)) - 1;
    leaf[i] = better(table[k][lo], table[k][hi - (1 << k) + 1]);
  }
  return leaf;
}

// The non-empty blocks in placement order; ties go to the earlier first use, then the index.
// Breadth (TensorFlow Lite's "greedy by breadth"): the most crowded leaves first, each leaf's
// blocks not yet placed by size desc.
std::vector<int> placement_order(const Problem& p, Order order) {
  const std::vector<Block>& blocks = p.blocks;
  const std::vector<int> crowded = order == Order::breadth ? crowded_leaf(p) : std::vector<int>();
  auto key = [&](int i) -> size_t {
    const Block& b = blocks[i];
    const size_t length = static_cast<size_t>(b.last - b.first) + 1;
    switch (order) {
      case Order::size:
        return b.bytes;
      case Order::length:
        return length;
      case Order::area:
        return b.bytes * length;
      case Order::first_use:
        return std::numeric_limits<size_t>::max() - b.first;
      case Order::breadth:
        return p.live[crowded[i]];
    }
    return 0;
  };
  std::vector<int> ids;
  for (int i = 0; i < static_cast<int>(blocks.size()); ++i)
    if (blocks[i].bytes > 0) ids.push_back(i);
  std::vector<size_t> keys(blocks.size());
  for (int i : ids) keys[i] = key(i);
  std::sort(ids.begin(), ids.end(), [&](int a, int b) {
    if (keys[a] != keys[b]) return keys[a] > keys[b];
    if (!crowded.empty() && crowded[a] != crowded[b]) return crowded[a] < crowded[b];
    if (!crowded.empty() && blocks[a].bytes != blocks[b].bytes)
      return blocks[a].bytes > blocks[b].bytes;
    if (blocks[a].first != blocks[b].first) return blocks[a].first < blocks[b].first;
    if (blocks[a].bytes != blocks[b].bytes) return blocks[a].bytes > blocks[b].bytes;
    return a < b;
  });
  return ids;
}

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

// Places the blocks in order kOrders[k]; fills `offsets` (per block) and records the arena in
// race.finished[k], unless the race shows the order cannot win, when it gives up.
void place(const Problem& p, int k, Race& race, std::vector<size_t>& offsets) {
  const size_t arena = place_in_order(p, placement_order(p, kOrders[k]), offsets,
                                      [&](size_t a) { return race.beaten(k, a); });
  if (arena != std::numeric_limits<size_t>::max()) race.finished[k] = arena;
}

// Local search over placement orders, from the race's winner: move one block to an earlier
// place in the order (or swap two), place again, and keep the new order when its arena is no
// larger (sideways moves let it cross plateaus). The moves come from a fixed-seed generator, so
// the result is a function of the input. Runs only on steps of at most kSearchBlocks blocks,
// for at most kSearchMoves moves and kSearchWork block placements in all, and stops at the
// lower bound.
constexpr size_t kSearchBlocks = 4096;
constexpr size_t kSearchWork = 400'000;
constexpr int kSearchMoves = 2000;

uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void search(const Problem& p, size_t lower_bound, std::vector<int>& order, size_t& arena,
            std::vector<size_t>& offsets) {
  const size_t n = order.size();
  if (n < 2 || n > kSearchBlocks) return;
  uint64_t rng = 0x5eed ^ n;
  std::vector<int> candidate;
  std::vector<size_t> trial;
  size_t work = 0;
  for (int move = 0; move < kSearchMoves && work < kSearchWork && arena > lower_bound; ++move) {
    work += n;
    candidate = order;
    const size_t j = 1 + splitmix(rng) % (n - 1), i = splitmix(rng) % j;
    if (splitmix(rng) % 2)
      std::rotate(candidate.begin() + i, candidate.begin() + j, candidate.begin() + j + 1);
    else
      std::swap(candidate[i], candidate[j]);
    const size_t a = place_in_order(p, candidate, trial, [&](size_t x) { return x > arena; });
    if (a == std::numeric_limits<size_t>::max()) continue;
    order.swap(candidate);
    offsets.swap(trial);
    arena = a;
  }
}

}  // namespace

Plan plan_arena(std::span<const PlanBuffer> buffers, size_t alignment, PlanOptions options) {
  FRUGAL_CHECK(alignment > 0, "plan_arena: alignment must be positive");
  const Groups g = alias_groups(buffers, alignment);
  const int groups = static_cast<int>(g.blocks.size());
  Problem p{.blocks = g.blocks,
            .leaf_lo = std::vector<int>(groups),
            .leaf_hi = std::vector<int>(groups),
            .live = {}};

  // Time leaves: the distinct first steps of non-empty blocks. Two lifetimes overlap exactly when
  // they share a leaf, since the later of their first steps lies in both.
  std::vector<int> steps;
  for (const Block& b : p.blocks)
    if (b.bytes > 0) steps.push_back(b.first);
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  p.leaves = std::max(1, static_cast<int>(steps.size()));
  std::vector<size_t> live(p.leaves + 1, 0);  // live bytes, as differences between leaves
  for (int i = 0; i < groups; ++i) {
    const Block& b = p.blocks[i];
    if (b.bytes == 0) continue;
    p.leaf_lo[i] = static_cast<int>(std::ranges::lower_bound(steps, b.first) - steps.begin());
    p.leaf_hi[i] = static_cast<int>(std::ranges::upper_bound(steps, b.last) - steps.begin()) - 1;
    live[p.leaf_lo[i]] += b.bytes;
    live[p.leaf_hi[i] + 1] -= b.bytes;  // unsigned wrap-around cancels in the running sum
  }
  Plan plan;
  plan.alignment = alignment;
  p.live.resize(p.leaves);
  size_t running = 0;
  for (int leaf = 0; leaf < p.leaves; ++leaf) {
    p.live[leaf] = running += live[leaf];
    plan.lower_bound = std::max(plan.lower_bound, running);
  }

  // Size desc first; then the others, in parallel, unless it is already close enough to the bound.
  Race race;
  std::vector<std::vector<size_t>> offsets(kOrderCount);
  place(p, 0, race, offsets[0]);
  const double gap = static_cast<double>(race.finished[0] - plan.lower_bound);
  if (gap > kCloseEnough * static_cast<double>(plan.lower_bound)) {
#pragma omp parallel for schedule(dynamic, 1) if (groups > 1000)
    for (int k = 1; k < kOrderCount; ++k) place(p, k, race, offsets[k]);
  }
  int winner = 0;
  for (int k = 1; k < kOrderCount; ++k)
    if (race.finished[k] < race.finished[winner]) winner = k;
  plan.arena_bytes = race.finished[winner];
  plan.strategy = order_name(kOrders[winner]);
  if (options.search && static_cast<double>(plan.arena_bytes - plan.lower_bound) >
                            kCloseEnough * static_cast<double>(plan.lower_bound)) {
    std::vector<int> order = placement_order(p, kOrders[winner]);
    const size_t before = plan.arena_bytes;
    search(p, plan.lower_bound, order, plan.arena_bytes, offsets[winner]);
    if (plan.arena_bytes < before) plan.strategy += ", then local search";
  }
  plan.offsets.resize(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) plan.offsets[i] = offsets[winner][g.of[i]];
#ifndef NDEBUG
  std::string why;
  FRUGAL_CHECK(plan_is_valid(buffers, plan, &why), "plan_arena: invalid plan: ", why);
#endif
  return plan;
}

bool plan_is_valid(std::span<const PlanBuffer> buffers, const Plan& plan, std::string* why) {
  auto fail = [&](auto... parts) {
    if (why) *why = detail::concat(parts...);
    return false;
  };
  const size_t n = buffers.size();
  if (plan.offsets.size() != n) return fail(plan.offsets.size(), " offsets for ", n, " buffers");
  if (plan.alignment == 0) return fail("alignment 0");
  const Groups g = alias_groups(buffers, plan.alignment);
  std::vector<size_t> group_offset(g.blocks.size(), std::numeric_limits<size_t>::max());
  std::vector<int> order;  // non-empty buffers by first use
  for (size_t i = 0; i < n; ++i) {
    const size_t off = plan.offsets[i], bytes = round_up(buffers[i].bytes, plan.alignment);
    if (off % plan.alignment != 0) return fail("buffer ", i, " at unaligned offset ", off);
    if (off + bytes > plan.arena_bytes)
      return fail("buffer ", i, " ends at ", off + bytes, " past the arena ", plan.arena_bytes);
    size_t& shared = group_offset[g.of[i]];
    if (shared != std::numeric_limits<size_t>::max() && shared != off)
      return fail("buffer ", i, " at ", off, " but its alias group is at ", shared);
    shared = off;
    if (bytes > 0) order.push_back(static_cast<int>(i));
  }
  // Sweep over time. Each live group occupies [offset, offset + its largest live member); the live
  // groups are kept disjoint, so a grown or new one need only be checked against its neighbours.
  auto by_first = [&](int a, int b) { return buffers[a].first < buffers[b].first; };
  auto by_last = [&](int a, int b) { return buffers[a].last < buffers[b].last; };
  std::vector<int> ends = order;
  std::stable_sort(order.begin(), order.end(), by_first);
  std::stable_sort(ends.begin(), ends.end(), by_last);
  std::map<size_t, int> live;                                   // offset -> group
  std::vector<std::multiset<size_t>> members(g.blocks.size());  // live member sizes per group
  auto extent = [&](int group) { return *members[group].rbegin(); };
  size_t next_end = 0;
  for (int i : order) {
    for (; next_end < ends.size() && buffers[ends[next_end]].last < buffers[i].first; ++next_end) {
      const int e = ends[next_end], group = g.of[e];
      members[group].erase(members[group].find(round_up(buffers[e].bytes, plan.alignment)));
      if (members[group].empty()) live.erase(plan.offsets[e]);
    }
    const int group = g.of[i];
    const size_t off = plan.offsets[i];
    if (members[group].empty()) {
      auto [it, inserted] = live.emplace(off, group);
      if (!inserted) return fail("buffer ", i, " shares offset ", off, " with a live buffer");
      if (it != live.begin()) {
        const auto prev = std::prev(it);
        if (prev->first + extent(prev->second) > off)
          return fail("buffer ", i, " at ", off, " overlaps a live buffer at ", prev->first);
      }
    }
    members[group].insert(round_up(buffers[i].bytes, plan.alignment));
    const auto next = std::next(live.find(off));
    if (next != live.end() && off + extent(group) > next->first)
      return fail("buffer ", i, " at ", off, " overlaps a live buffer at ", next->first);
  }
  return true;
}

}  // namespace frugal
