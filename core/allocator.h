// Every byte frugal uses goes through an Allocator, tagged with the role it plays, so the
// report can say exactly where memory goes and tests can compare it with the plan.
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "core/device.h"

namespace frugal {

// What a buffer is for (docs/ARCHITECTURE.md, "The roles contract"). `input` is data fed to the
// network (images, labels); `arena` is one planned block that holds many buffers of the other
// roles; `data` holds batches a loader prepares ahead of the step (data/pipeline.h).
enum class Role {
  input,
  output,
  saved,
  scratch,
  grad,
  param,
  param_grad,
  optimizer_state,
  arena,
  data
};
constexpr int kRoleCount = 10;
const char* role_name(Role r);

struct RoleStats {
  size_t current = 0;
  size_t peak = 0;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual Device device() const = 0;
  // Returns `bytes` of memory aligned to alignment(); never null (throws on failure).
  void* allocate(size_t bytes, Role role);
  void release(void* p, size_t bytes, Role role);
  virtual size_t alignment() const = 0;

  const RoleStats& stats(Role r) const { return roles_[static_cast<size_t>(r)]; }
  size_t current_bytes() const { return current_; }
  size_t peak_bytes() const { return peak_; }
  // Number of allocate() calls so far (the planned executor makes none per step).
  size_t allocation_count() const { return count_; }
  void reset_peaks();

 protected:
  virtual void* raw_allocate(size_t bytes) = 0;
  virtual void raw_release(void* p) = 0;

 private:
  std::array<RoleStats, kRoleCount> roles_{};
  size_t current_ = 0, peak_ = 0, count_ = 0;
};

// Host memory, 64-byte aligned.
class CpuAllocator final : public Allocator {
 public:
  Device device() const override { return {}; }
  size_t alignment() const override { return 64; }

 protected:
  void* raw_allocate(size_t bytes) override;
  void raw_release(void* p) override;
};

// `bytes` rounded up to a multiple of `alignment` (> 0): what a buffer occupies in an arena.
inline size_t round_up(size_t bytes, size_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

// The process-wide host allocator.
CpuAllocator& cpu_allocator();

}  // namespace frugal
