// The arena planner's greedy core: alias groups merged into blocks, lifetimes mapped to time
// leaves, the lower bound, and best-fit packing by size desc (memory/planner_occupancy.h); the
// other orders and the local search are in planner_search.cpp. Also the validity check the
// tests and debug builds use.
#include "memory/planner.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/allocator.h"
#include "core/error.h"
#include "memory/planner_blocks.h"

namespace frugal {
namespace planner {
namespace {

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

// Size desc leaves at most this fraction of the lower bound to gain, or the search runs: below
// it no reported figure changes, and on deep training steps the other orders' fragmented
// packings cost several times more to compute.
constexpr double kCloseEnough = 1e-4;

}  // namespace

std::vector<int> size_order(const Problem& p) {
  std::vector<int> ids;
  for (int i = 0; i < static_cast<int>(p.blocks.size()); ++i)
    if (p.blocks[i].bytes > 0) ids.push_back(i);
  std::sort(ids.begin(), ids.end(), [&](int a, int b) {
    const Block &x = p.blocks[a], &y = p.blocks[b];
    if (x.bytes != y.bytes) return x.bytes > y.bytes;
    if (x.first != y.first) return x.first < y.first;
    return a < b;
  });
  return ids;
}

}  // namespace planner

using namespace planner;

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

  // Size desc first; the other orders and the search only when it is not close enough to the
  // bound.
  std::vector<size_t> offsets;
  plan.arena_bytes = place_in_order(p, size_order(p), offsets, [](size_t) { return false; });
  plan.strategy = "greedy best-fit, size desc";
  const double gap = static_cast<double>(plan.arena_bytes - plan.lower_bound);
  if (gap > kCloseEnough * static_cast<double>(plan.lower_bound))
    improve(p, plan.lower_bound, options.search, plan.arena_bytes, offsets, plan.strategy);
  plan.offsets.resize(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) plan.offsets[i] = offsets[g.of[i]];
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
