// The caching-allocator simulation: hand-computed cases for rounding, the two pools, reuse of
// freed blocks, splitting, coalescing, and peak_reserved >= peak_allocated on random traces.
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "core/error.h"
#include "memory/eager.h"

using namespace frugal;

namespace {
constexpr size_t KiB = 1024, MiB = 1024 * 1024;

EagerResult run(std::vector<EagerEvent> events) {
  return simulate_caching_allocator(events);
}
}  // namespace

TEST_CASE("eager: sizes round up to 512 bytes, small requests take a 2 MiB segment") {
  CHECK(run({{1, 0, 0}}).peak_allocated == 512);
  CHECK(run({{1, 0, 0}}).peak_reserved == 2 * MiB);
  CHECK(run({{513, 0, 0}}).peak_allocated == 1024);
  CHECK(run({{1024, 0, 0}}).peak_allocated == 1024);
  CHECK(run({{0, 0, 0}}).peak_reserved == 0);  // nothing to allocate
  CHECK(run({}).peak_reserved == 0);
  // Four 512 KiB requests fill one small segment; a fifth needs another.
  CHECK(run({{512 * KiB, 0, 0}, {512 * KiB, 0, 0}, {512 * KiB, 0, 0}, {512 * KiB, 0, 0}})
            .peak_reserved == 2 * MiB);
  const EagerResult five = run({{512 * KiB, 0, 0},
                                {512 * KiB, 0, 0},
                                {512 * KiB, 0, 0},
                                {512 * KiB, 0, 0},
                                {512 * KiB, 0, 0}});
  CHECK(five.peak_reserved == 4 * MiB);
  CHECK(five.peak_allocated == 5 * 512 * KiB);
}

TEST_CASE("eager: large requests take 20 MiB segments below 10 MiB, else their size in 2 MiB") {
  const EagerResult mid = run({{5 * MiB, 0, 0}, {5 * MiB, 0, 0}});  // both split from one segment
  CHECK(mid.peak_allocated == 10 * MiB);
  CHECK(mid.peak_reserved == 20 * MiB);
  const EagerResult big = run({{11 * MiB, 0, 0}});
  // 11 MiB takes a 12 MiB segment; the 1 MiB rest is not above 1 MiB, so it is not split off.
  CHECK(big.peak_allocated == 12 * MiB);
  CHECK(big.peak_reserved == 12 * MiB);
}

TEST_CASE("eager: a block whose remainder is too small to split is counted whole") {
  // 19.5 MiB takes a 20 MiB segment; 0.5 MiB <= 1 MiB stays attached, so 20 MiB are allocated.
  const EagerResult r = run({{19 * MiB + 512 * KiB, 0, 0}, {12 * MiB, 0, 0}});
  CHECK(r.peak_allocated == 32 * MiB);
  CHECK(r.peak_reserved == 32 * MiB);
}

TEST_CASE("eager: freed blocks are reused, best fit first, splitting large ones") {
  // A dies after step 0; B at step 1 reuses its bytes.
  const EagerResult reuse = run({{1000, 0, 0}, {1000, 1, 1}});
  CHECK(reuse.peak_allocated == 1024);
  CHECK(reuse.peak_reserved == 2 * MiB);
  // A 12 MiB segment freed at step 1 serves two 4 MiB requests (split: 8 MiB > 1 MiB left).
  const EagerResult split = run({{12 * MiB, 0, 0}, {4 * MiB, 1, 2}, {4 * MiB, 2, 2}});
  CHECK(split.peak_reserved == 12 * MiB);
  CHECK(split.peak_allocated == 12 * MiB);
  // The pools do not mix: a freed small block cannot serve a large request.
  const EagerResult pools = run({{1 * MiB, 0, 0}, {1 * MiB + 512, 1, 1}});
  CHECK(pools.peak_reserved == 2 * MiB + 20 * MiB);
}

TEST_CASE("eager: adjacent free blocks coalesce") {
  // One 2 MiB segment holds A B C D (512 KiB each). B and C die after step 0 and merge into
  // 1 MiB, which holds E at step 1; without coalescing E would need a new segment.
  const EagerResult r = run({{512 * KiB, 0, 1},
                             {512 * KiB, 0, 0},
                             {512 * KiB, 0, 0},
                             {512 * KiB, 0, 1},
                             {1 * MiB, 1, 1}});
  CHECK(r.peak_reserved == 2 * MiB);
  CHECK(r.peak_allocated == 2 * MiB);
}

TEST_CASE("eager: frees come before allocations of the same step") {
  // A (live 0..1) then B at step 2 can take A's block; C at step 1 cannot.
  const EagerResult r = run({{2 * MiB, 0, 1}, {2 * MiB, 1, 1}, {2 * MiB, 2, 2}});
  CHECK(r.peak_allocated == 4 * MiB);
  CHECK(r.peak_reserved == 20 * MiB);  // all from one 20 MiB segment, split each time
}

TEST_CASE("eager: malformed input throws, random traces keep reserved >= allocated") {
  CHECK_THROWS_AS(run({{8, 2, 1}}), Error);
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<EagerEvent> events;
    size_t live_max = 0;
    const int n = 1 + static_cast<int>(rng() % 200);
    for (int i = 0; i < n; ++i) {
      const int first = static_cast<int>(rng() % 50);
      const size_t bytes = rng() % (size_t{1} << (rng() % 26));
      events.push_back({bytes, first, first + static_cast<int>(rng() % 20)});
    }
    for (int t = 0; t < 70; ++t) {
      size_t live = 0;
      for (const EagerEvent& e : events)
        if (e.bytes > 0 && e.first <= t && t <= e.last) live += e.bytes;
      live_max = std::max(live_max, live);
    }
    const EagerResult r = simulate_caching_allocator(events);
    REQUIRE(r.peak_reserved >= r.peak_allocated);
    REQUIRE(r.peak_allocated >= live_max);
    REQUIRE(r.peak_reserved % (2 * MiB) == 0);
  }
}
