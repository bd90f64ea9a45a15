// The eager mode's memory: a simulation of PyTorch's caching allocator (default settings of
// c10/cuda/CUDACachingAllocator.cpp) fed with a step's buffers, each freed after its last use.
#pragma once

#include <cstddef>
#include <span>

namespace frugal {

// A buffer allocated at step first (before the step runs) and freed after step last.
struct EagerEvent {
  size_t bytes = 0;
  int first = 0;
  int last = 0;
};

struct EagerResult {
  size_t peak_allocated = 0;  // max over time of the sizes of the blocks handed out
  size_t peak_reserved = 0;   // segments obtained from the device; never released
};

// Replays the events: at each step, frees of buffers whose last < step come first, then the
// allocations of that step in input order. Zero-byte buffers allocate nothing. Deterministic.
// Throws frugal::Error naming the event when first > last.
EagerResult simulate_caching_allocator(std::span<const EagerEvent> events);

}  // namespace frugal
