// A simulation of PyTorch's caching allocator with its default settings (one stream, no
// max_split_size, no garbage collection, no expandable segments): sizes rounded to 512 bytes, two
// pools, best-fit free blocks split and coalesced, segments from the device never given back.
#include "memory/eager.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "core/error.h"

namespace frugal {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kMinBlockSize = 512;         // every size is rounded up to a multiple of this
constexpr size_t kSmallSize = 1 * kMiB;       // the largest request served by the small pool
constexpr size_t kSmallBuffer = 2 * kMiB;     // small pool segments
constexpr size_t kLargeBuffer = 20 * kMiB;    // segment for large requests below kMinLargeAlloc
constexpr size_t kMinLargeAlloc = 10 * kMiB;  // from here a segment is the request itself ...
constexpr size_t kRoundLarge = 2 * kMiB;      // ... rounded up to this

size_t round_size(size_t bytes) {
  return std::max(kMinBlockSize, (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize);
}

size_t segment_size(size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

// A piece of a segment; the pieces of a segment form a list by address.
struct Block {
  size_t addr = 0;
  size_t size = 0;
  int prev = -1;
  int next = -1;
  bool allocated = false;
  bool small = false;
};

class CachingAllocator {
 public:
  int malloc(size_t bytes) {
    const size_t size = round_size(bytes);
    const bool small = size <= kSmallSize;
    auto& pool = small ? small_ : large_;
    int b;
    auto it = pool.lower_bound({size, 0});  // best fit: smallest, then lowest address
    if (it != pool.end()) {
      b = it->second;
      pool.erase(it);
    } else {
      const size_t segment = segment_size(size);
      b = new_block({.addr = reserved_, .size = segment, .small = small});
      reserved_ += segment;  // simulated addresses: segments laid end to end
    }
    const size_t remaining = blocks_[b].size - size;
    if (small ? remaining >= kMinBlockSize : remaining > kSmallSize) {
      const int r = new_block({.addr = blocks_[b].addr + size,
                               .size = remaining,
                               .prev = b,
                               .next = blocks_[b].next,
                               .small = small});
      if (blocks_[r].next >= 0) blocks_[blocks_[r].next].prev = r;
      blocks_[b].next = r;
      blocks_[b].size = size;
      pool.emplace(std::pair{remaining, blocks_[r].addr}, r);
    }
    blocks_[b].allocated = true;
    allocated_ += blocks_[b].size;  // PyTorch counts the whole block, unsplit remainder included
    peak_allocated_ = std::max(peak_allocated_, allocated_);
    return b;
  }

  void free(int b) {
    allocated_ -= blocks_[b].size;
    blocks_[b].allocated = false;
    merge(b, blocks_[b].prev);
    merge(b, blocks_[b].next);
    pool_of(b).emplace(std::pair{blocks_[b].size, blocks_[b].addr}, b);
  }

  EagerResult result() const { return {peak_allocated_, reserved_}; }

 private:
  using Pool = std::map<std::pair<size_t, size_t>, int>;  // (size, addr) -> free block

  Pool& pool_of(int b) { return blocks_[b].small ? small_ : large_; }

  int new_block(Block block) {
    if (unused_.empty()) {
      blocks_.push_back(block);
      return static_cast<int>(blocks_.size()) - 1;
    }
    const int b = unused_.back();
    unused_.pop_back();
    blocks_[b] = block;
    return b;
  }

  // Absorbs the free neighbour n (prev or next of b in its segment) into b.
  void merge(int b, int n) {
    if (n < 0 || blocks_[n].allocated) return;
    pool_of(n).erase({blocks_[n].size, blocks_[n].addr});
    Block& block = blocks_[b];
    if (n == block.prev) {
      block.addr = blocks_[n].addr;
      block.prev = blocks_[n].prev;
      if (block.prev >= 0) blocks_[block.prev].next = b;
    } else {
      block.next = blocks_[n].next;
      if (block.next >= 0) blocks_[block.next].prev = b;
    }
    block.size += blocks_[n].size;
    unused_.push_back(n);
  }

  std::vector<Block> blocks_;
  std::vector<int> unused_;  // slots of merged-away blocks
  Pool small_, large_;
  size_t allocated_ = 0, peak_allocated_ = 0, reserved_ = 0;
};

}  // namespace

EagerResult simulate_caching_allocator(std::span<const EagerEvent> events) {
  std::vector<int> allocs;
  for (int i = 0; i < static_cast<int>(events.size()); ++i) {
    FRUGAL_CHECK(events[i].first <= events[i].last, "simulate_caching_allocator: event ", i,
                 " has first ", events[i].first, " > last ", events[i].last);
    if (events[i].bytes > 0) allocs.push_back(i);
  }
  std::vector<int> frees = allocs;
  std::stable_sort(allocs.begin(), allocs.end(),
                   [&](int a, int b) { return events[a].first < events[b].first; });
  std::stable_sort(frees.begin(), frees.end(),
                   [&](int a, int b) { return events[a].last < events[b].last; });
  CachingAllocator allocator;
  std::vector<int> block(events.size(), -1);
  size_t next_free = 0;
  for (int i : allocs) {
    for (; next_free < frees.size() && events[frees[next_free]].last < events[i].first; ++next_free)
      allocator.free(block[frees[next_free]]);
    block[i] = allocator.malloc(events[i].bytes);
  }
  return allocator.result();
}

}  // namespace frugal
