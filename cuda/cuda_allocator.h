// Device memory for frugal's tensors: an Allocator over cudaMalloc (256-byte aligned), with the
// same per-role accounting as the host allocator. No CUDA headers: the rest of the library may
// include it.
#pragma once

#include "core/allocator.h"

namespace frugal {

class CudaAllocator final : public Allocator {
 public:
  // Memory of the current CUDA device.
  CudaAllocator();
  Device device() const override { return {DeviceKind::cuda, device_}; }
  size_t alignment() const override { return 256; }

 protected:
  // Null when the device is out of memory (Allocator::allocate then names the role); throws
  // frugal::Error with CUDA's message on any other failure.
  void* raw_allocate(size_t bytes) override;
  void raw_release(void* p) override;

 private:
  int device_ = 0;
};

}  // namespace frugal
