// Errors: every failure throws frugal::Error with the op, the shapes and what was expected.
// FRUGAL_CHECK is the one macro for checks; it formats its message only when the check fails.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace frugal {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream s;
  (s << ... << args);
  return s.str();
}
}  // namespace detail

}  // namespace frugal

// Throws frugal::Error("<parts...>") when cond is false.
#define FRUGAL_CHECK(cond, ...)                                                \
  do {                                                                         \
    if (!(cond)) throw ::frugal::Error(::frugal::detail::concat(__VA_ARGS__)); \
  } while (0)
