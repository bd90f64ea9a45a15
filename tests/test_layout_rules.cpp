// The folders' dependency rules, read from the sources' #include lines: dependencies run one
// way, in the order data flows (record -> plan -> run), and docs/ARCHITECTURE.md names every
// folder that holds code.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = FRUGAL_SOURCE_DIR;

struct Source {
  std::string path;                   // relative to the repository root: "memory/liveness.cpp"
  std::vector<std::string> includes;  // project includes: "autograd/tape.h"
  std::string text;
};

bool is_source(const fs::path& p) {
  const std::string e = p.extension().string();
  return e == ".h" || e == ".cpp" || e == ".cu" || e == ".cuh";
}

// Every source file under `folder` (recursively).
std::vector<Source> sources(const std::string& folder) {
  std::vector<Source> out;
  if (!fs::exists(kRoot / folder)) return out;
  static const std::regex include(R"(^\s*#\s*include\s*"([^"]+)\")");
  for (const auto& entry : fs::recursive_directory_iterator(kRoot / folder)) {
    if (!entry.is_regular_file() || !is_source(entry.path())) continue;
    Source s;
    s.path = fs::relative(entry.path(), kRoot).generic_string();
    std::ifstream in(entry.path());
    std::stringstream all;
    all << in.rdbuf();
    s.text = all.str();
    std::istringstream lines(s.text);
    for (std::string line; std::getline(lines, line);) {
      std::smatch m;
      if (std::regex_search(line, m, include)) s.includes.push_back(m[1]);
    }
    out.push_back(std::move(s));
  }
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// Fails naming each file of `folder` that includes a header under one of `forbidden`.
void check_no_include(const std::string& folder, const std::vector<std::string>& forbidden) {
  const std::vector<Source> files = sources(folder);
  CHECK(!files.empty());
  for (const Source& s : files)
    for (const std::string& inc : s.includes)
      for (const std::string& f : forbidden) {
        INFO(s.path, " includes ", inc);
        CHECK_FALSE(starts_with(inc, f));
      }
}

}  // namespace

TEST_CASE("layout rule: planning (memory/) knows no tape, layer, network or runner") {
  check_no_include("memory",
                   {"autograd/", "layers/", "models/", "run/", "recompute/", "report/", "train/"});
}

TEST_CASE("layout rule: recording (autograd/) knows nothing of planning or running") {
  check_no_include("autograd", {"memory/", "run/", "recompute/", "report/", "layers/", "models/"});
}

TEST_CASE("layout rule: layers reach memory only through the Backend") {
  check_no_include("layers", {"core/cpu/", "cuda/", "memory/", "run/", "models/"});
  for (const Source& s : sources("layers")) {
    INFO(s.path, " calls cpu_backend()");
    CHECK(s.text.find("cpu_backend()") == std::string::npos);
  }
}

TEST_CASE("layout rule: models record, they never plan") {
  check_no_include("models", {"memory/", "run/", "report/", "train/"});
}

TEST_CASE("layout rule: nothing in the library includes apps/") {
  for (const char* folder : {"core", "autograd", "layers", "memory", "run", "recompute", "report",
                             "check", "models", "data", "train", "cuda", "dist"})
    check_no_include(folder, {"apps/"});
}

TEST_CASE("layout rule: MPI only in its communicator, and no public header includes it") {
  for (const char* folder : {"core", "autograd", "layers", "memory", "run", "recompute", "report",
                             "check", "models", "data", "train", "cuda", "dist", "apps"})
    for (const Source& s : sources(folder)) {
      INFO(s.path, " includes mpi.h");
      CHECK((s.text.find("#include <mpi.h>") == std::string::npos || s.path == "dist/mpi.cpp"));
    }
  check_no_include("dist", {"run/", "layers/", "models/", "memory/", "train/"});
}

TEST_CASE("layout rule: no code cites ../shared") {
  for (const char* folder : {"core", "autograd", "layers", "memory", "run", "recompute", "report",
                             "check", "models", "data", "train", "cuda", "apps", "bench"})
    for (const Source& s : sources(folder)) {
      INFO(s.path);
      CHECK(s.text.find("shared/") == std::string::npos);
      CHECK(s.text.find("DESIGN.md") == std::string::npos);
    }
}

TEST_CASE("docs/ARCHITECTURE.md names every folder that holds code") {
  std::ifstream in(kRoot / "docs" / "ARCHITECTURE.md");
  REQUIRE(in);
  std::stringstream all;
  all << in.rdbuf();
  const std::string doc = all.str();
  std::set<std::string> folders;
  for (const auto& entry : fs::directory_iterator(kRoot)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name.empty() || name[0] == '.' || starts_with(name, "build"))
      continue;
    for (const auto& f : fs::recursive_directory_iterator(entry.path()))
      if (f.is_regular_file() && is_source(f.path())) {
        folders.insert(name);
        break;
      }
  }
  CHECK(folders.size() >= 10);
  for (const std::string& f : folders) {
    INFO("docs/ARCHITECTURE.md does not name the folder ", f, "/");
    CHECK(doc.find("`" + f + "/`") != std::string::npos);
  }
}
