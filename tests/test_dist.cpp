// Data-parallel gradient buckets in one process (the several-rank tests are tests/dist/, under
// mpirun): every parameter gradient a view into a planned bucket, the arena within 1% of its
// lower bound, and a group of one giving exactly the bits of a step without a communicator,
// planned and baseline, whatever the bucket size.
#include <doctest/doctest.h>

#include "dist/communicators.h"
#include "tests/dist_net.h"

using namespace frugal;
using namespace frugal::testing;

TEST_CASE("dist: gradient buckets are planned buffers, and one rank changes no bit") {
  std::unique_ptr<Communicator> self = self_communicator();
  for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adamw})
    for (MemoryMode memory : {MemoryMode::planned, MemoryMode::baseline})
      for (size_t bucket : {size_t{0}, size_t{1}, size_t{4096}}) {
        CAPTURE(std::string(optimizer_name(kind)));
        CAPTURE(std::string(memory_mode_name(memory)));
        CAPTURE(bucket);
        const DistRun plain = dist_run(nullptr, 6, kind, memory);
        const DistRun one = dist_run(self.get(), 6, kind, memory, DType::f32, 5, bucket);
        CHECK(plain.bucket_count == 0);
        CHECK(one.views);
        CHECK(one.bucket_count == (bucket == 1 ? 8u : bucket == 0 ? 1u : 3u));
        if (memory == MemoryMode::planned) CHECK(one.arena_over_bound <= 1.01);
        CHECK(same_bits(one.weights, plain.weights));
        CHECK(same_bits(one.moments, plain.moments));
      }
}

TEST_CASE("dist: synchronized batch norm over one rank is batch norm") {
  // Its own kernels (local sums, statistics from the ranks' sums, dx from the ranks' sums)
  // over a group of one give, in f64, the bits of the batch norm whose gradient is checked
  // against finite differences (test_batchnorm.cpp); in f32 they round the mean before the
  // squared deviations, so they differ within rounding (and so they did run).
  std::unique_ptr<Communicator> self = self_communicator();
  for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adamw}) {
    CAPTURE(std::string(optimizer_name(kind)));
    CHECK(same_bits(resnet_run(self.get(), 4, kind, true, DType::f64, 3),
                    resnet_run(nullptr, 4, kind, false, DType::f64, 3)));
  }
  const std::vector<Tensor> plain =
      resnet_run(nullptr, 4, OptimizerKind::sgd, false, DType::f32, 1);
  const std::vector<Tensor> synced =
      resnet_run(self.get(), 4, OptimizerKind::sgd, true, DType::f32, 1);
  CHECK(!same_bits(synced, plain));
  CHECK(relative_difference(synced, plain) <= 1e-6);
}
