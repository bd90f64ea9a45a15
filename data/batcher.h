// Batcher: walks a Dataset in a seeded order, one shuffle per epoch, and copies a batch
// straight into the tensors an executor reads (one copy per batch; a device's inputs through
// one host staging buffer and the backend), placing each image in the model's input frame and
// augmenting it when asked.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/backend.h"
#include "data/augment.h"
#include "data/idx.h"
#include "data/pipeline.h"

namespace frugal {

struct BatcherOptions {
  bool shuffle = false;
  uint64_t seed = 0;
  Augment augment = {};  // training only: random crop and flip
};

class Batcher {
 public:
  // `data` must outlive the batcher. With shuffle off the order is 0..N-1 in every epoch.
  Batcher(const Dataset& data, bool shuffle, uint64_t seed);
  Batcher(const Dataset& data, const BatcherOptions& options);
  ~Batcher();

  // Sets this epoch's order: a Fisher-Yates shuffle drawn from (seed, epoch) alone, so
  // epoch e sees the same order whatever ran before it. Augmentation draws per (epoch, sample).
  void start_epoch(int epoch);
  // Copies samples order[first .. first+B) into images (B,K,P,Q) f32 and labels (B) i32,
  // where B = images.shape()[0]. Samples are (C,H,W); the input takes them as they are, or
  // centred in a frame P >= H, Q >= W (P-H, Q-W even), or resampled to fill it when the data
  // set says `resize` (any P, Q); grey replicated when C == 1.
  // Throws if they do not fit the input or the data set.
  // Host memory only.
  void copy(int64_t first, Tensor& images, Tensor& labels) const;
  // As above, into tensors on any device: one in host memory is written straight, one on be's
  // device through a host staging tensor (made on first use) and be.copy_to_device. Returns the
  // labels in host memory: `labels` itself, or its staging copy.
  const Tensor& copy(Backend& be, int64_t first, Tensor& images, Tensor& labels);

  int64_t size() const { return static_cast<int64_t>(order_.size()); }
  // Image-file data sets (Dataset::source): seconds copy() waited for the decode workers, files
  // replaced for failing to decode (skip_bad), and the bytes of the batches decoded ahead.
  double data_wait_seconds() const;
  int64_t skipped_files() const;
  size_t data_bytes() const;
  int epoch() const { return epoch_; }
  const std::vector<int64_t>& order() const { return order_; }

 private:
  const Dataset& data_;
  BatcherOptions options_;
  int epoch_ = 0;
  std::vector<int64_t> order_;
  Tensor staged_images_, staged_labels_;      // host copies of device inputs (copy with a backend)
  std::unique_ptr<DecodePipeline> pipeline_;  // image files only
};

// Whether samples (C,H,W) fit an input (K,P,Q) as Batcher::copy places them: framed, or
// resampled to any size when `resize`.
bool image_fits(const Shape& sample, const Shape& input, bool resize = false);

}  // namespace frugal
