// Where memory lives and kernels run.
#pragma once

#include <string>

namespace frugal {

enum class DeviceKind { cpu, cuda };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;
  bool operator==(const Device&) const = default;
  std::string str() const {
    return kind == DeviceKind::cpu ? "cpu" : "cuda:" + std::to_string(index);
  }
};

}  // namespace frugal
