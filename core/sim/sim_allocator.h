// The simulated device's memory. Why a simulated device at all: the CPU's memory is the host's,
// so a CPU run cannot tell whether host code reads a tensor behind the backend's back; a CUDA
// run can, but needs a GPU. Here every block has two addresses: the device address tensors
// carry, a range of address space mapped PROT_NONE (any host access faults at once, SIGSEGV),
// and the host address of the bytes themselves, known to this allocator and the sim backend
// alone. Linux only (mmap).
#pragma once

#include <mutex>
#include <unordered_map>

#include "core/allocator.h"

namespace frugal {

class SimAllocator final : public Allocator {
 public:
  SimAllocator() = default;
  ~SimAllocator() override;
  SimAllocator(const SimAllocator&) = delete;
  SimAllocator& operator=(const SimAllocator&) = delete;

  Device device() const override { return {DeviceKind::sim, 0}; }
  size_t alignment() const override { return 64; }  // the CPU's: the same plans, the same bits

  // The host address of the block whose device address is `device_block` (a Storage's data()).
  // Throws unless it is a live block of this allocator. For the sim backend alone.
  void* host_address(const void* device_block) const;

 protected:
  void* raw_allocate(size_t bytes) override;
  void raw_release(void* p) override;

 private:
  struct Block {
    void* host = nullptr;
    size_t bytes = 0, reserved = 0;
  };
  // The bytes themselves, allocated as the CPU allocates host memory (same alignment, same
  // huge pages), but counted only by this allocator's own figures.
  CpuAllocator host_;
  mutable std::mutex mutex_;
  std::unordered_map<const void*, Block> blocks_;  // by device address
};

// The process-wide sim allocator (sim_backend().allocator()).
SimAllocator& sim_allocator();

}  // namespace frugal
