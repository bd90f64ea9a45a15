// Seeded, counter-based random numbers: the value at (seed, stream, index) never depends on
// thread count or call order, so dropout masks replay exactly and init is reproducible.
#pragma once

#include <cstdint>

namespace frugal {

// 64 random bits for (seed, stream, index) (splitmix64 finalizer over the mixed key).
uint64_t random_bits(uint64_t seed, uint64_t stream, uint64_t index);
// Uniform in [0, 1) with 53 bits of precision.
double random_uniform(uint64_t seed, uint64_t stream, uint64_t index);
// Standard normal (Box-Muller over two uniforms at 2*index and 2*index+1).
double random_normal(uint64_t seed, uint64_t stream, uint64_t index);

// A sequential generator for host-side uses (shuffling, init): draws index 0, 1, 2, ...
class Rng {
 public:
  explicit Rng(uint64_t seed, uint64_t stream = 0) : seed_(seed), stream_(stream) {}
  uint64_t next_bits() { return random_bits(seed_, stream_, counter_++); }
  double uniform() { return random_uniform(seed_, stream_, counter_++); }
  double normal() { return random_normal(seed_, stream_, counter_++); }
  // Uniform integer in [0, n).
  uint64_t below(uint64_t n) { return next_bits() % n; }

 private:
  uint64_t seed_, stream_, counter_ = 0;
};

}  // namespace frugal
