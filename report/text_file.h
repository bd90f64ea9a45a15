// Writing a report (an SVG, a trace, a DOT graph) to a file without leaving half of one behind.
#pragma once

#include <string>

namespace frugal {

// Writes `text` to `path` through a temporary file in the same folder, renamed over `path`
// once complete; on any failure the temporary is removed, `path` is left as it was, and
// frugal::Error names `what` and the path.
void write_text_file(const std::string& path, const std::string& text, const char* what);

}  // namespace frugal
