// The readers' fuzz corpus replayed as a plain test: every seed (tests/fuzz/corpus/<reader>/)
// and every input a fuzzer once crashed on (tests/fuzz/regressions/<reader>/) goes through its
// reader in a child with capped memory, and must read or fail with a frugal::Error: no crash,
// no allocation beyond the cap. The sanitizer build (-DFRUGAL_SANITIZE=ON) runs this file alone.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/alloc_cap.h"
#include "tests/fuzz/readers.h"
#include "tests/temp_dir.h"

namespace fs = std::filesystem;
using namespace frugal::testing;

TEST_CASE("fuzz corpus: every seed and regression input reads or fails with an error") {
  const fs::path root = fs::path(FRUGAL_SOURCE_DIR) / "tests" / "fuzz";
  for (const char* reader : {"idx", "cifar", "safetensors", "image"}) {
    const frugal::fuzz::Reader read = frugal::fuzz::reader_named(reader);
    REQUIRE(bool(read));
    for (const char* kind : {"corpus", "regressions"}) {
      const fs::path dir = root / kind / reader;
      REQUIRE_MESSAGE(fs::is_directory(dir), dir.string());
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(dir))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      CHECK_MESSAGE(!files.empty(), dir.string(), " holds no inputs");
      for (const fs::path& f : files) {
        const std::vector<unsigned char> bytes = read_bytes(f.string());
        const std::string result = run_capped([&] { read(bytes.data(), bytes.size()); });
        CHECK_MESSAGE(result == "ok", f.string(), ": ", result);
      }
    }
  }
}
