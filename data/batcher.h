// Batcher: walks a Dataset in a seeded order, one shuffle per epoch, and copies a batch
// straight into the tensors an executor reads (one copy per batch, no staging buffer).
#pragma once

#include <cstdint>
#include <vector>

#include "data/idx.h"

namespace frugal {

class Batcher {
 public:
  // `data` must outlive the batcher. With shuffle off the order is 0..N-1 in every epoch.
  Batcher(const Dataset& data, bool shuffle, uint64_t seed);

  // Sets this epoch's order: a Fisher-Yates shuffle drawn from (seed, epoch) alone, so
  // epoch e sees the same order whatever ran before it.
  void start_epoch(int epoch);
  // Copies samples order[first .. first+B) into images (B,...) f32 and labels (B) i32,
  // where B = images.shape()[0]; throws if they do not fit the data set.
  void copy(int64_t first, Tensor& images, Tensor& labels) const;

  int64_t size() const { return static_cast<int64_t>(order_.size()); }
  const std::vector<int64_t>& order() const { return order_; }

 private:
  const Dataset& data_;
  bool shuffle_;
  uint64_t seed_;
  std::vector<int64_t> order_;
};

}  // namespace frugal
