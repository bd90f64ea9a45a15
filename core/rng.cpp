// Counter-based RNG (splitmix64 mixing).
#include "core/rng.h"

#include <cmath>

namespace frugal {

namespace {
uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

uint64_t random_bits(uint64_t seed, uint64_t stream, uint64_t index) {
  return mix(mix(mix(seed) ^ stream) ^ index);
}

double random_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
  return static_cast<double>(random_bits(seed, stream, index) >> 11) * 0x1.0p-53;
}

double random_normal(uint64_t seed, uint64_t stream, uint64_t index) {
  double u1 = random_uniform(seed, stream, 2 * index);
  double u2 = random_uniform(seed, stream, 2 * index + 1);
  if (u1 < 1e-300) u1 = 1e-300;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace frugal
