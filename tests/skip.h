// A test case that cannot run here (a data set or a folder of exports that is not on this
// machine) says so with skip_case(): CTest then reports it skipped, not passed
// (tests/CMakeLists.txt gives every case SKIP_REGULAR_EXPRESSION on the marker).
#pragma once

#include <cstdio>
#include <string>

namespace frugal::testing {

inline constexpr const char* kSkipMarker = "frugal test skipped: ";

// Prints the marker and why; the caller returns from the case right after, before checking
// anything: CTest reports a case that printed the marker skipped whatever it did.
inline void skip_case(const std::string& why) {
  std::printf("%s%s\n", kSkipMarker, why.c_str());
  std::fflush(stdout);
}

}  // namespace frugal::testing
