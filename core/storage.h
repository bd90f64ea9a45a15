// A block of memory owned through an Allocator; released when the last Tensor drops it. Or a
// borrowed block that someone else owns and releases (a backend's host view of device memory).
#pragma once

#include <cstddef>
#include <memory>

#include "core/allocator.h"

namespace frugal {

class Storage {
 public:
  Storage(Allocator& alloc, size_t bytes, Role role);
  // Borrows `bytes` at `data` on `device`: never released here; the owner outlives the storage.
  Storage(void* data, size_t bytes, Device device, Role role);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  // The block's address on its device. Only host memory (device().is_host()) may be
  // dereferenced by host code; anything else is for the device's backend alone.
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Role role() const { return role_; }
  Device device() const { return device_; }

 private:
  Allocator* alloc_ = nullptr;  // null for borrowed memory
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Role role_;
  Device device_;
};

}  // namespace frugal
