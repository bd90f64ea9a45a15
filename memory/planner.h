// The arena planner: a pure function from buffer lifetimes to byte offsets in one arena.
// Greedy by size with best-fit gaps (TensorFlow Lite's arena planner, the "offline greedy by
// size" of Pisarchyk & Lee 2020), tried under several orders, keeping the smallest arena, then
// a bounded local search over the placement order.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "memory/alias.h"

namespace frugal {

// One buffer of a step: its size and its lifetime [first, last] (inclusive timeline steps).
// alias_of: this buffer takes the bytes of buffer alias_of (same offset). Chains (a->b->c) resolve
// to their root; the members of a group are packed as one block whose lifetime is the union of
// theirs and whose size is the largest member's.
struct PlanBuffer {
  size_t bytes = 0;
  int first = 0;
  int last = 0;
  int alias_of = -1;
};

struct Plan {
  std::vector<size_t> offsets;  // per buffer, a multiple of alignment
  size_t arena_bytes = 0;       // max over buffers of offset + rounded bytes
  size_t lower_bound = 0;       // max over time of live rounded bytes, each alias group once
  size_t alignment = 1;         // what sizes were rounded up to
  std::string strategy;         // the order that won, e.g. "greedy best-fit, size desc"
};

struct PlanOptions {
  // After the greedy orders, a local search over placement orders from the best of them, when
  // it is more than 0.01% above the lower bound and has at most 4096 blocks (bounded work).
  bool search = true;
};

// Packs the buffers: each size rounded up to `alignment`, zero-byte buffers at offset 0, alias
// groups merged first. Orders: size desc, lifetime desc, size*lifetime desc, first use asc, by
// breadth (most crowded time first); the smallest arena wins, ties going to the earlier order.
// The last four are tried (in parallel, each giving up once it cannot win) only when size desc
// is more than 0.01% above the lower bound. Then the local search of PlanOptions. Deterministic.
// Throws frugal::Error naming the buffer when first > last, alias_of is out of range or the aliases
// form a cycle, or when alignment is 0.
Plan plan_arena(std::span<const PlanBuffer> buffers, size_t alignment, PlanOptions options = {});

// True when no two buffers with overlapping lifetimes share a byte unless they are in the same
// alias group (whose members must share one offset), every offset is aligned to plan.alignment
// and the arena covers every buffer; otherwise false, with the first problem in *why (when not
// null). Malformed buffers throw as in plan_arena.
bool plan_is_valid(std::span<const PlanBuffer> buffers, const Plan& plan, std::string* why);

}  // namespace frugal
