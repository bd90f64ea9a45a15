// Errors: every failure throws frugal::Error with the op, the shapes and what was expected.
// FRUGAL_CHECK is the one macro for checks; it formats its message only when the check fails.
#pragma once

#include <source_location>
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

// "file:line" of a model line, the prefix of every error raised while recording it.
std::string source_line(const std::source_location& where);
// `e` again, its message prefixed with source_line(where).
Error error_at(const std::source_location& where, const std::exception& e);

}  // namespace frugal

// Throws frugal::Error("<parts...>") when cond is false.
#define FRUGAL_CHECK(cond, ...)                                                \
  do {                                                                         \
    if (!(cond)) throw ::frugal::Error(::frugal::detail::concat(__VA_ARGS__)); \
  } while (0)
