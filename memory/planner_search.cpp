// The planner's search: placement orders other than size desc (lifetime, size*lifetime, first
// use, breadth) raced against each other, then a bounded local search over the winner's order.
// Only runs when the greedy core's size-desc packing leaves something to gain.
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <limits>

#include "memory/planner_blocks.h"

namespace frugal::planner {
namespace {

enum class Order { size, length, area, first_use, breadth };
constexpr Order kOrders[] = {Order::size, Order::length, Order::area, Order::first_use,
                             Order::breadth};
constexpr int kOrderCount = 5;

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
  if (order == Order::size) return size_order(p);
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

void improve(const Problem& p, size_t lower_bound, bool search_orders, size_t& arena,
             std::vector<size_t>& offsets, std::string& strategy) {
  Race race;
  race.finished[0] = arena;
  std::vector<std::vector<size_t>> placed(kOrderCount);
  placed[0] = std::move(offsets);
#pragma omp parallel for schedule(dynamic, 1) if (p.blocks.size() > 1000)
  for (int k = 1; k < kOrderCount; ++k) place(p, k, race, placed[k]);
  int winner = 0;
  for (int k = 1; k < kOrderCount; ++k)
    if (race.finished[k] < race.finished[winner]) winner = k;
  arena = race.finished[winner];
  strategy = order_name(kOrders[winner]);
  offsets = std::move(placed[winner]);
  if (search_orders) {
    std::vector<int> order = placement_order(p, kOrders[winner]);
    const size_t before = arena;
    search(p, lower_bound, order, arena, offsets);
    if (arena < before) strategy += ", then local search";
  }
}

}  // namespace frugal::planner
