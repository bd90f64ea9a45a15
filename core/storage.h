// A block of memory owned through an Allocator; released when the last Tensor drops it.
#pragma once

#include <cstddef>
#include <memory>

#include "core/allocator.h"

namespace frugal {

class Storage {
 public:
  Storage(Allocator& alloc, size_t bytes, Role role);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Role role() const { return role_; }
  Device device() const { return alloc_.device(); }

 private:
  Allocator& alloc_;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Role role_;
};

}  // namespace frugal
