// Static splits of a kernel's work over OpenMP threads, shared by the CPU kernels whose results
// must not depend on how a team of threads is scheduled.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace frugal {

// How many parts `units` of work are cut into for `threads` threads: one per thread, at most
// one per unit.
inline int parts(int64_t units, int threads) {
  return static_cast<int>(std::clamp<int64_t>(units, 1, threads));
}

// Runs body(part, u0, u1) on the static ranges [u0, u1) of `parts` equal shares of [0, units).
// One part runs on the calling thread, where Eigen may thread its GEMMs. Several run in one
// OpenMP region, where Eigen's GEMMs stay single-threaded (Parallelizer.h skips threading when
// omp_get_num_threads() > 1). A smaller team than asked for takes the parts in turn, so the
// split, and with it every result, depends on `parts` only.
template <typename F>
void for_parts(int parts, int64_t units, const F& body) {
  if (parts == 1) return body(0, 0, units);
#pragma omp parallel num_threads(parts)
  {
    const int team = omp_get_num_threads();
    for (int part = omp_get_thread_num(); part < parts; part += team)
      body(part, units * part / parts, units * (part + 1) / parts);
  }
}

}  // namespace frugal
