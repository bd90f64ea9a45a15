// Communicator: the collectives data-parallel training needs (allreduce, reduce-scatter,
// all-gather, broadcast, barrier) over a fixed group of ranks, non-blocking: each call starts
// the operation and returns a handle to wait on. Implementations: `dist/` (MPI over host
// memory; one rank without any library). No public header includes a communication library.
//
// Contract, for every implementation:
// - Every rank calls the same collectives in the same order with the same element counts and
//   dtypes; a mismatch is an error, or a timeout naming the ranks that did not answer.
// - Results are a function of the ranks' inputs and the group size alone: a fixed reduction
//   order, the same bits from run to run and on every rank.
// - A tensor handed to a call must stay alive, and must not be touched, until its handle's
//   wait() returns.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/tensor.h"

namespace frugal {

// The state of one started collective, shared by the caller's handle and the implementation.
class CommWork {
 public:
  virtual ~CommWork() = default;
  // Blocks until the collective is complete on this rank; throws frugal::Error when it failed
  // (a rank died or stopped answering: the message names it).
  virtual void wait() = 0;
  // True once wait() would return at once.
  virtual bool done() = 0;
};

class CommHandle {
 public:
  CommHandle() = default;
  explicit CommHandle(std::shared_ptr<CommWork> work) : work_(std::move(work)) {}
  void wait() {
    if (work_) work_->wait();
    work_.reset();
  }
  bool done() const { return !work_ || work_->done(); }
  bool pending() const { return work_ != nullptr; }

 private:
  std::shared_ptr<CommWork> work_;
};

// Rank r's part of n elements split over `ranks` ranks: [n*r/ranks, n*(r+1)/ranks).
struct ChunkRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
inline ChunkRange chunk_of(int64_t n, int ranks, int r) {
  return {n * r / ranks, n * (r + 1) / ranks};
}

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "mpi", "self", ...
  virtual std::string name() const = 0;

  // x := sum over ranks of (prescale * x), in place, f32 or f64 (prescale is applied in x's
  // precision before the sum: 1/N for a mean, b_r/B for a batch split unevenly).
  virtual CommHandle allreduce_sum(Tensor& x, double prescale = 1.0) = 0;
  // y := this rank's chunk (chunk_of(x.numel(), size(), rank())) of the sum over ranks of
  // (prescale * x); y has that chunk's element count and may be that chunk of x itself. x is
  // scratch: its contents afterwards are unspecified. Each chunk is summed in the order
  // allreduce_sum sums it, so the two give the same bits.
  virtual CommHandle reduce_scatter_sum(Tensor& x, Tensor& y, double prescale = 1.0) = 0;
  // y := every rank's x, in rank order, where rank r's x is chunk_of(y.numel(), size(), r);
  // x may be rank r's chunk of y itself.
  virtual CommHandle all_gather(const Tensor& x, Tensor& y) = 0;
  // x := root's x, on every rank (any dtype).
  virtual CommHandle broadcast(Tensor& x, int root) = 0;
  virtual CommHandle barrier() = 0;
};

}  // namespace frugal
