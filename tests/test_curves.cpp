// Training curves (report/curves.h): the logs read back, every logged value drawn as a point
// that carries it, well-formed XML, and errors that name the file and line.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "report/curves.h"
#include "tests/temp_dir.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::string log_line(int epoch, int step, double loss, double train, double test, double lr,
                     const char* memory, size_t bytes) {
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "{\"epoch\":%d,\"global_step\":%d,\"train_loss\":%.17g,\"train_acc\":%.17g,"
      "\"test_acc\":%.17g,\"lr_end\":%.17g,\"memory\":\"%s\",\"train_memory_bytes\":%zu}\n",
      epoch, step, loss, train, test, lr, memory, bytes);
  return buf;
}

// Every element opened is closed, in order (tags only; the SVG has no CDATA or comments).
bool balanced(const std::string& xml) {
  std::vector<std::string> open;
  const std::regex tag(R"(<(/?)([a-zA-Z]+)[^>]*?(/?)>)");
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), tag); it != std::sregex_iterator();
       ++it) {
    const std::smatch& m = *it;
    if (m[3] == "/") continue;  // self-closing
    if (m[1] == "/") {
      if (open.empty() || open.back() != m[2]) return false;
      open.pop_back();
    } else {
      open.push_back(m[2]);
    }
  }
  return open.empty();
}

}  // namespace

TEST_CASE("curves: every logged value is drawn as a point carrying it") {
  TempDir dir("frugal-curves");
  write_text(dir / "planned.jsonl",
             log_line(1, 937, 0.44, 0.85, 0.89, 0.02, "planned", 16 << 20) +
                 log_line(2, 1874, 0.31, 0.89, 0.9025, 0.0, "planned", 16 << 20));
  write_text(dir / "baseline.jsonl",
             log_line(1, 937, 0.45, 0.84, 0.88, 0.02, "baseline", 63 << 20) + "\n");
  const std::vector<RunCurves> runs = {read_run_log(dir / "planned.jsonl"),
                                       read_run_log(dir / "baseline.jsonl")};
  CHECK(runs[0].name == "planned.jsonl");
  CHECK(runs[0].memory == "planned");
  CHECK(runs[1].memory_bytes == size_t{63} << 20);
  REQUIRE(runs[0].test_acc.size() == 2);
  CHECK(runs[0].test_acc[1].step == 1874);
  CHECK(runs[0].test_acc[1].value == 0.9025);

  const std::string svg = curves_svg(runs, "planned & baseline");
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(balanced(svg));
  CHECK(svg.find("planned &amp; baseline") != std::string::npos);
  CHECK(svg.find("63.0 MiB") != std::string::npos);
  std::map<std::tuple<int, std::string, double>, double> drawn;
  const std::regex point(
      R"re(data-run="(\d+)" data-metric="(\w+)" data-step="([^"]+)" data-value="([^"]+)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), point); it != std::sregex_iterator();
       ++it)
    drawn[{std::stoi((*it)[1]), (*it)[2], std::stod((*it)[3])}] = std::stod((*it)[4]);
  CHECK(drawn.size() == 4 * 3);  // four metrics, three epochs in all
  for (int r = 0; r < 2; ++r)
    for (auto [metric, member] : {std::pair{"train_loss", &RunCurves::train_loss},
                                  {"train_acc", &RunCurves::train_acc},
                                  {"test_acc", &RunCurves::test_acc},
                                  {"lr", &RunCurves::lr}})
      for (const CurvePoint& p : runs[static_cast<size_t>(r)].*member)
        CHECK(drawn.at({r, metric, p.step}) == p.value);
}

TEST_CASE("curves: a bad log names the file and the line") {
  TempDir dir("frugal-curves");
  write_text(dir / "bad.jsonl", log_line(1, 10, 1, 0.5, 0.5, 0.1, "planned", 1) + "not json\n");
  CHECK_THROWS_WITH_AS(read_run_log(dir / "bad.jsonl"),
                       (dir / "bad.jsonl" + ":2: not a JSON line of frugal train --log").c_str(),
                       Error);
  write_text(dir / "field.jsonl", "{\"global_step\": 3}\n");
  CHECK_THROWS_WITH_AS(read_run_log(dir / "field.jsonl"),
                       (dir / "field.jsonl" + ":1: no number 'train_loss'").c_str(), Error);
  write_text(dir / "empty.jsonl", "\n");
  CHECK_THROWS_WITH_AS(read_run_log(dir / "empty.jsonl"),
                       (dir / "empty.jsonl" + ": no epochs logged").c_str(), Error);
  CHECK_THROWS_AS(read_run_log(dir / "none.jsonl"), Error);
}
