// Error prefixes that point at the model line being recorded.
#include "core/error.h"

namespace frugal {

std::string source_line(const std::source_location& where) {
  return std::string(where.file_name()) + ":" + std::to_string(where.line());
}

Error error_at(const std::source_location& where, const std::exception& e) {
  return Error(source_line(where) + ": " + e.what());
}

}  // namespace frugal
