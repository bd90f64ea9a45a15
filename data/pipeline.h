// The decode pipeline of an image-file Dataset: worker threads decode, crop and normalize the
// samples of the batches that follow the one asked for, into a bounded set of batch buffers
// (host memory from the allocator, role `data`), so a step finds its batch ready when decoding
// keeps up. Each sample is a function of (seed, epoch, index) alone, so batches are the same
// bits whatever the number of workers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/tensor.h"
#include "data/image_folder.h"

namespace frugal {

class DecodePipeline {
 public:
  // `depth` batches are decoded ahead of the one asked for.
  DecodePipeline(const ImageSource& source, uint64_t seed, int workers, int depth = 2);
  ~DecodePipeline();
  DecodePipeline(const DecodePipeline&) = delete;
  DecodePipeline& operator=(const DecodePipeline&) = delete;

  // Writes samples order[first .. first+B) of `epoch` to out (B,3,S,S) and their labels, from
  // the batch decoded ahead when there is one, then queues the next batches of `order`. The
  // first error of the batch (by sample) is rethrown.
  void fill(int epoch, const std::vector<int64_t>& order, int64_t first, int64_t B, float* out,
            int32_t* labels);

  double waited_seconds() const { return waited_; }  // in fill, waiting for workers
  int64_t skipped() const;                           // files replaced (skip_bad)
  size_t buffer_bytes() const;                       // batch buffers held (role data)
  int workers() const { return static_cast<int>(threads_.size()); }

 private:
  struct Job;
  std::shared_ptr<Job> queue(int epoch, const std::vector<int64_t>& order, int64_t first,
                             int64_t B);
  void work();

  const ImageSource& source_;
  uint64_t seed_;
  int depth_;
  mutable std::mutex mutex_;
  std::condition_variable work_ready_, sample_done_;
  std::deque<std::shared_ptr<Job>> jobs_;
  std::vector<Tensor> free_;  // batch buffers not in use
  bool stop_ = false;
  int64_t skipped_ = 0;
  double waited_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace frugal
