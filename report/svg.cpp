// Small helpers for the hand-written SVG pictures.
#include "report/svg.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>

namespace frugal::svg {

std::string format(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

std::string escape_xml(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

// A round tick spacing (1, 2 or 5 times a power of ten) giving about six ticks up to `top`.
double tick_step(double top) {
  const double raw = top / 6.0;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * mag >= raw) return m * mag;
  return 10.0 * mag;
}

}  // namespace frugal::svg
