// Whole-or-nothing text files for reports.
#include "report/text_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace frugal {

void write_text_file(const std::string& path, const std::string& text, const char* what) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  FRUGAL_CHECK(f != nullptr, what, ": cannot open '", path, "' for writing (", std::strerror(errno),
               ")");
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  if (ok) ok = std::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    const int err = errno;
    std::remove(tmp.c_str());
    FRUGAL_CHECK(false, what, ": cannot write '", path, "' (", std::strerror(err), ")");
  }
}

}  // namespace frugal
