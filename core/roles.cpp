// Names of the modes a step is planned in.
#include "core/roles.h"

namespace frugal {

const char* mode_name(Mode m) {
  return m == Mode::training ? "training" : "inference";
}

}  // namespace frugal
