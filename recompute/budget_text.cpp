// Sizes and checkpoint schedules as text: byte sizes parsed from options, runs and sizes
// printed in reports and errors (recompute/budget.h).
#include <cctype>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "recompute/budget.h"

namespace frugal {

size_t parse_bytes(const std::string& text, bool zero_allowed) {
  const auto fail = [&text] {
    return Error("'" + text + "' is not a size in bytes (e.g. 1073741824, 200M, 1.5G, 64KiB)");
  };
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.'))
    throw fail();
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    throw fail();
  }
  std::string suffix;
  for (char c : text.substr(used)) suffix += static_cast<char>(std::tolower(c));
  double scale = 0;
  const char* prefixes = "kmgt";
  if (suffix.empty() || suffix == "b") scale = 1;
  for (int p = 0; p < 4 && scale == 0; ++p) {
    const std::string k(1, prefixes[p]);
    if (suffix == k || suffix == k + "b" || suffix == k + "ib") scale = std::pow(1024.0, p + 1);
  }
  if (scale == 0 || !std::isfinite(v) || (scale == 1 && v != std::floor(v))) throw fail();
  const double bytes = std::floor(v * scale);
  FRUGAL_CHECK((zero_allowed || bytes >= 1) && bytes < 1e19, "'", text, "' must be ",
               zero_allowed ? "" : "at least one byte and ", "below 2^63");
  return static_cast<size_t>(bytes);
}

std::string runs_text(std::span<const BlockRun> runs) {
  std::string s;
  for (const BlockRun& r : runs) {
    s += (s.empty() ? "[" : " [") + std::to_string(r.begin) + ", " + std::to_string(r.end) + ")";
    if (r.inner > 0) s.append("/").append(std::to_string(r.inner));
  }
  return s.empty() ? "none" : s;
}

std::string runs_summary(std::span<const BlockRun> runs, int blocks) {
  int covered = 0, nested = 0;
  for (const BlockRun& r : runs) covered += r.end - r.begin, nested += r.inner > 0;
  if (static_cast<int>(runs.size()) == blocks && covered == blocks) return "every block";
  if (runs.size() <= 6) return runs_text(runs);
  return std::to_string(runs.size()) + " runs over " + std::to_string(covered) + " of the " +
         std::to_string(blocks) + " blocks" +
         (nested > 0 ? ", " + std::to_string(nested) + " with inner checkpoints" : "");
}

std::string bytes_text(size_t bytes) {
  char s[64];
  std::snprintf(s, sizeof s, "%.1f MiB (%zu bytes)", static_cast<double>(bytes) / 1048576.0, bytes);
  return s;
}

}  // namespace frugal
