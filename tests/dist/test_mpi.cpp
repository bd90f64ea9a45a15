// The MPI communicator and data-parallel training on several ranks: run by CTest under
// `mpirun --oversubscribe -np N` (N = 2 and 3, loopback). Every rank runs every case in the
// same order; each checks its own results, so a failure names the rank's output.
//
// - Collectives: sums, chunks, gathers and broadcasts against values computed here.
// - N ranks with a global batch B give the weights of one process with batch B after 5 steps
//   (SGD and AdamW, B divisible by N and not), within 1e-5 relative; every rank holds the same
//   bits; a second run gives the same bits (fixed buckets, fixed reduction order); planned ==
//   baseline bitwise.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <memory>

#include "dist/communicators.h"
#include "tests/dist_net.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

Communicator* world = nullptr;

Tensor ramp(int64_t n, DType t, double a, double b) {
  Tensor x = Tensor::empty({n}, t);
  for (int64_t i = 0; i < n; ++i) {
    const double v = a * double(i) + b;
    if (t == DType::f32)
      x.data<float>()[i] = static_cast<float>(v);
    else
      x.data<double>()[i] = v;
  }
  return x;
}

// Rank q's contribution: (q + 1) * i + 0.5 * q, exact in f32 for these sizes.
double contribution(int q, int64_t i) {
  return double(q + 1) * double(i) + 0.5 * q;
}

}  // namespace

TEST_CASE("mpi: allreduce, reduce-scatter, all-gather, broadcast and barrier") {
  Communicator& c = *world;
  const int N = c.size(), r = c.rank();
  for (DType t : {DType::f32, DType::f64})
    for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{7}, int64_t{1000}, int64_t{0}}) {
      CAPTURE(n);
      Tensor x = ramp(n, t, r + 1, 0.5 * r), y = ramp(n, t, 2 * (r + 1), r);
      CommHandle hx = c.allreduce_sum(x), hy = c.allreduce_sum(y, 0.5);  // two in flight
      hx.wait();
      hy.wait();
      for (int64_t i = 0; i < n; ++i) {
        double want = 0;
        for (int q = 0; q < N; ++q) want += contribution(q, i);
        CHECK(element_as_double(x, i) == want);
        CHECK(element_as_double(y, i) == want);  // 0.5 * (2 (q+1) i + q)
      }
      Tensor in = ramp(n, t, r + 1, 0.5 * r);
      const ChunkRange mine = chunk_of(n, N, r);
      Tensor part = Tensor::empty({mine.size()}, t);
      c.reduce_scatter_sum(in, part).wait();
      for (int64_t i = 0; i < mine.size(); ++i) {
        double want = 0;
        for (int q = 0; q < N; ++q) want += contribution(q, mine.begin + i);
        CHECK(element_as_double(part, i) == want);
      }
      Tensor all = Tensor::empty({n}, t);
      const Tensor own = ramp(mine.size(), t, 0, r);  // rank r's chunk holds r
      c.all_gather(own, all).wait();
      for (int q = 0; q < N; ++q) {
        const ChunkRange cq = chunk_of(n, N, q);
        for (int64_t i = cq.begin; i < cq.end; ++i) CHECK(element_as_double(all, i) == q);
      }
      Tensor b = ramp(n, t, 1, 100 * r);
      c.broadcast(b, N - 1).wait();
      for (int64_t i = 0; i < n; ++i) CHECK(element_as_double(b, i) == double(i) + 100 * (N - 1));
    }
  // Inexact sums: reduce-scatter gives allreduce's bits for this rank's chunk, in place too,
  // and an in-place all-gather puts the rest back.
  for (DType t : {DType::f32, DType::f64}) {
    const int64_t n = 1001;
    const Tensor x = random_tensor({n}, 50 + static_cast<uint64_t>(r), -1, 1, t);
    Tensor full = clone(x), scattered = clone(x);
    c.allreduce_sum(full, 1.0 / 3).wait();
    const ChunkRange mine = chunk_of(n, N, r);
    const size_t es = dtype_size(t);
    Tensor part(scattered.storage(), static_cast<size_t>(mine.begin) * es, {mine.size()}, t);
    c.reduce_scatter_sum(scattered, part, 1.0 / 3).wait();
    for (int64_t i = 0; i < mine.size(); ++i)
      CHECK(element_as_double(part, i) == element_as_double(full, mine.begin + i));
    c.all_gather(part, scattered).wait();
    CHECK(bitwise_equal(scattered, full));
  }
  c.barrier().wait();
  Tensor labels = Tensor::empty({3}, DType::i32);
  CHECK_THROWS_WITH(c.allreduce_sum(labels), doctest::Contains("sums f32 or f64, got i32"));
  CHECK_THROWS_WITH(c.broadcast(labels, N), doctest::Contains("is not in 0.."));
}

TEST_CASE("mpi: N ranks train to the weights of one process with the global batch") {
  Communicator& c = *world;
  for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adamw})
    for (int64_t batch : {int64_t{12}, int64_t{7}}) {
      CAPTURE(std::string(optimizer_name(kind)));
      CAPTURE(batch);
      const DistRun one = dist_run(nullptr, batch, kind, MemoryMode::planned);
      const DistRun many = dist_run(&c, batch, kind, MemoryMode::planned);
      CHECK(many.bucket_count >= 1);
      CHECK(many.views);
      CHECK(many.arena_over_bound <= 1.01);
      CHECK(relative_difference(many.weights, one.weights) <= 1e-5);
      // Every rank holds rank 0's bits.
      for (const Tensor& w : many.weights) {
        Tensor root = clone(w);
        c.broadcast(root, 0).wait();
        CHECK(bitwise_equal(root, w));
      }
    }
}

TEST_CASE("mpi: a fixed rank count gives the same bits every run, planned or baseline") {
  Communicator& c = *world;
  for (size_t bucket : {size_t{0}, size_t{1}}) {  // the default buckets, and one per gradient
    CAPTURE(bucket);
    const DistRun a =
        dist_run(&c, 10, OptimizerKind::adamw, MemoryMode::planned, DType::f32, 5, bucket);
    const DistRun b =
        dist_run(&c, 10, OptimizerKind::adamw, MemoryMode::planned, DType::f32, 5, bucket);
    const DistRun base =
        dist_run(&c, 10, OptimizerKind::adamw, MemoryMode::baseline, DType::f32, 5, bucket);
    CHECK(same_bits(a.weights, b.weights));
    CHECK(same_bits(a.moments, b.moments));
    CHECK(same_bits(a.weights, base.weights));
    CHECK(same_bits(a.moments, base.moments));
  }
}

TEST_CASE("mpi: ZeRO 1 and 2 give stage 0's bits, with 1/N of the optimizer state per rank") {
  Communicator& c = *world;
  const int N = c.size();
  for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adamw})
    for (MemoryMode memory : {MemoryMode::planned, MemoryMode::baseline}) {
      CAPTURE(std::string(optimizer_name(kind)));
      CAPTURE(std::string(memory_mode_name(memory)));
      const size_t bucket = 1024;  // several buckets
      const DistRun zero0 = dist_run(&c, 11, kind, memory, DType::f32, 5, bucket, 0);
      CHECK(zero0.state_bytes == zero0.reported_state);
      for (int zero : {1, 2}) {
        CAPTURE(zero);
        const DistRun z = dist_run(&c, 11, kind, memory, DType::f32, 5, bucket, zero);
        CHECK(same_bits(z.weights, zero0.weights));
        CHECK(same_bits(z.moments, zero0.moments));  // gathered from the ranks' chunks
        CHECK(z.state_bytes <= zero0.state_bytes / N + zero0.state_bytes / 20 + 64);
        CHECK(z.grad_bytes == zero0.grad_bytes);   // sharding adds no gradient memory
        CHECK(z.state_bytes == z.reported_state);  // the allocator's bytes are the report's
      }
    }
}

TEST_CASE("mpi: ResNet-20 with synchronized batch norm trains as one process") {
  // In f64 the ranks give one process's weights and running statistics within rounding. In
  // f32, ResNet-20 on random data at batch 8 amplifies rounding (batch norm's backward cancels
  // terms): one process's f32 run already differs from its f64 twin by ~1e-4 after 5 steps,
  // so the ranks' f32 run is held to that, and to 1e-4.
  Communicator& c = *world;
  const int64_t batch = 8;  // 4 + 4, or 3 + 3 + 2 on three ranks
  for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adamw}) {
    CAPTURE(std::string(optimizer_name(kind)));
    const std::vector<Tensor> one = resnet_run(nullptr, batch, kind, false, DType::f64);
    const std::vector<Tensor> many = resnet_run(&c, batch, kind, true, DType::f64);
    CHECK(relative_difference(many, one) <= 1e-10);
    const std::vector<Tensor> local = resnet_run(&c, batch, kind, false, DType::f64);
    CHECK(relative_difference(local, one) > 1e-4);  // per-rank statistics differ
  }
  const std::vector<Tensor> f64 = resnet_run(nullptr, batch, OptimizerKind::sgd, false, DType::f64);
  const std::vector<Tensor> one = resnet_run(nullptr, batch, OptimizerKind::sgd, false);
  const std::vector<Tensor> many = resnet_run(&c, batch, OptimizerKind::sgd, true);
  const double rounding = relative_difference(one, f64);
  MESSAGE("f32: ranks vs one process ", relative_difference(many, one),
          ", one process vs its f64 twin ", rounding);
  CHECK(relative_difference(many, one) <= std::max(1e-5, 2 * rounding));
  CHECK(relative_difference(many, one) <= 1e-4);
}

TEST_CASE("mpi: synchronized batch norm inside checkpointed and reversible blocks") {
  // Their sub-graphs' batch norms share the ranks' statistics too (f64, 2 steps).
  Communicator& c = *world;
  const int64_t batch = 6;
  for (const char* model : {"resnet20", "revnet38"}) {
    CAPTURE(std::string(model));
    std::vector<BlockRun> runs;
    if (std::string(model) == "resnet20") runs = {{.begin = 1, .end = 4}, {.begin = 5, .end = 8}};
    const std::vector<Tensor> one = resnet_run(nullptr, batch, OptimizerKind::sgd, false,
                                               DType::f64, 2, 0, nullptr, model, runs);
    const std::vector<Tensor> many =
        resnet_run(&c, batch, OptimizerKind::sgd, true, DType::f64, 2, 0, nullptr, model, runs);
    CHECK(relative_difference(many, one) <= 1e-10);
  }
}

TEST_CASE("mpi: ZeRO 2 with AdamW: state and gradients per rank within 1/N + 5% of stage 0's") {
  // ResNet-20, default buckets: the optimizer state measured by the allocator, the gradients
  // at their planned peak (at most two buckets), against stage 0 with its own default buckets.
  Communicator& c = *world;
  const int N = c.size();
  DistRun zero0, zero2;
  const int64_t batch = 2 * N;
  resnet_run(&c, batch, OptimizerKind::adamw, false, DType::f32, 1, 0, &zero0);
  resnet_run(&c, batch, OptimizerKind::adamw, false, DType::f32, 1, 2, &zero2);
  const double whole = double(zero0.state_bytes + zero0.grad_bytes);
  MESSAGE(N, " ranks: stage 2 ", zero2.state_bytes, " + ", zero2.grad_bytes, " bytes, stage 0 ",
          zero0.state_bytes, " + ", zero0.grad_bytes);
  CHECK(double(zero2.state_bytes + zero2.grad_bytes) <= whole / N + 0.05 * whole);
  CHECK(zero2.state_bytes == zero2.reported_state);
}

TEST_CASE("mpi: double precision matches one process within 1e-12") {
  Communicator& c = *world;
  const DistRun one = dist_run(nullptr, 9, OptimizerKind::sgd, MemoryMode::planned, DType::f64);
  const DistRun many = dist_run(&c, 9, OptimizerKind::sgd, MemoryMode::planned, DType::f64);
  CHECK(relative_difference(many.weights, one.weights) <= 1e-12);
}

int main(int argc, char** argv) {
  std::unique_ptr<Communicator> comm = mpi_communicator({.timeout_seconds = 60});
  world = comm.get();
  doctest::Context context(argc, argv);
  const int failed = context.run();
  std::printf("rank %d of %d: %s\n", comm->rank(), comm->size(), failed ? "FAILED" : "passed");
  return failed;
}
