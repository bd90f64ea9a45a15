// Sim memory: a PROT_NONE reservation per block as its device address, the bytes in host memory.
#include "core/sim/sim_allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include "core/error.h"

namespace frugal {

SimAllocator::~SimAllocator() {
  for (auto& [device, b] : blocks_) {
    munmap(const_cast<void*>(device), b.reserved);
    host_.release(b.host, b.bytes, Role::input);
  }
}

void* SimAllocator::raw_allocate(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t reserved = (bytes + page - 1) / page * page;
  // Address space only: no memory behind it, and no access allowed, ever.
  void* device =
      mmap(nullptr, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (device == MAP_FAILED) return nullptr;
  void* host = nullptr;
  try {
    host = host_.allocate(bytes, Role::input);
  } catch (...) {
    munmap(device, reserved);
    throw;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  blocks_[device] = {host, bytes, reserved};
  return device;
}

void SimAllocator::raw_release(void* p) {
  Block b;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(p);
    if (it == blocks_.end()) return;  // not ours: nothing to give back
    b = it->second;
    blocks_.erase(it);
  }
  munmap(p, b.reserved);
  host_.release(b.host, b.bytes, Role::input);
}

void* SimAllocator::host_address(const void* device_block) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(device_block);
  FRUGAL_CHECK(it != blocks_.end(), "sim allocator: ", device_block,
               " is not a live block of the sim device");
  return it->second.host;
}

// Never destroyed, so a tensor released during exit still finds its block.
SimAllocator& sim_allocator() {
  static SimAllocator* a = new SimAllocator();
  return *a;
}

}  // namespace frugal
