// Small helpers for the hand-written SVG pictures (report/timeline.h, report/curves.h).
#pragma once

#include <string>

namespace frugal::svg {

// printf into a string (up to 511 characters: for short elements, not lists of points).
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// s with &, <, > and " escaped for XML text and attributes.
std::string escape_xml(const std::string& s);
// A round tick spacing (1, 2 or 5 times a power of ten) giving about six ticks up to `top`.
double tick_step(double top);

}  // namespace frugal::svg
