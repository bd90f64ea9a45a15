// Where memory lives and kernels run.
#pragma once

#include <string>

namespace frugal {

// sim: the simulated device (core/sim/), host memory that host code cannot reach, for tests.
enum class DeviceKind { cpu, cuda, sim };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;
  bool operator==(const Device&) const = default;
  // Whether host code may dereference this device's memory (only the CPU's).
  bool is_host() const { return kind == DeviceKind::cpu; }
  std::string str() const {
    switch (kind) {
      case DeviceKind::cpu:
        return "cpu";
      case DeviceKind::sim:
        return "sim";
      case DeviceKind::cuda:
        break;
    }
    return "cuda:" + std::to_string(index);
  }
};

}  // namespace frugal
