// The layout pictures over time: the live-bytes SVG (well formed, arena and lower-bound
// lines, peak equal to the planner's lower bound), the Chrome trace (parses back, one complete
// event per buffer, lanes without overlap), and the layout equal to the executor's and report's.
#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "memory/layout.h"
#include "models/registry.h"
#include "report/report.h"
#include "report/timeline.h"
#include "run/executor.h"
#include "run/plan.h"

using namespace frugal;

namespace {

struct Recording {
  ParamStore store;
  std::unique_ptr<Tape> tape;
  Value loss;
};

void record(Recording& r, const std::string& model, Mode mode, int64_t batch = 4) {
  const ModelSpec& spec = find_model(model);
  r.tape = std::make_unique<Tape>(r.store, DType::f32);
  std::vector<int64_t> dims{batch};
  for (int64_t d : spec.input.dims()) dims.push_back(d);
  Value x = r.tape->input("images", Shape(dims), DType::f32);
  Value labels = r.tape->input("labels", {batch}, DType::i32);
  Value y = spec.build(x, {});
  r.loss = mode == Mode::training ? model_loss(spec, y, labels) : y;
}

Layout layout_of(Recording& r, Mode mode, MemoryMode memory) {
  const ReportOptions ro{.keep = {r.loss.id()}};
  return memory_layout(*r.tape, mode, memory, cpu_backend(), report_layout_options(mode, ro));
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("timeline svg is well formed with the arena and lower-bound lines") {
  for (Mode mode : {Mode::training, Mode::inference}) {
    const std::string where = mode_name(mode);
    CAPTURE(where);
    Recording r{ParamStore::shapes_only(), nullptr, {}};
    record(r, "small-cnn", mode);
    const Layout layout = layout_of(r, mode, MemoryMode::planned);
    const std::string svg = timeline_svg(layout, "small-cnn <&> test");
    CHECK(svg.rfind("<svg", 0) == 0);
    CHECK(svg.substr(svg.size() - 7) == "</svg>\n");
    CHECK(count(svg, "<svg") == 1);
    CHECK(count(svg, "<text") == count(svg, "</text>"));
    CHECK(count(svg, "<path") == kMemoryCategories);
    CHECK(svg.find("id=\"arena\"") != std::string::npos);
    CHECK(svg.find("id=\"lower-bound\"") != std::string::npos);
    CHECK(svg.find("live memory (MiB)") != std::string::npos);
    CHECK(svg.find("small-cnn &lt;&amp;&gt; test") != std::string::npos);
    for (const char* legend : {"outputs", "gradInputs", "buffers", "param grads"})
      CHECK(svg.find(std::string(">") + legend + "</text>") != std::string::npos);
    CHECK((svg.find(">backward</text>") != std::string::npos) == (mode == Mode::training));
  }
}

TEST_CASE("live bytes peak at the planner's lower bound") {
  for (const char* model : {"small-cnn", "resnet20"})
    for (Mode mode : {Mode::training, Mode::inference}) {
      const std::string where = std::string(model) + ", " + mode_name(mode);
      CAPTURE(where);
      Recording r{ParamStore::shapes_only(), nullptr, {}};
      record(r, model, mode);
      const Layout layout = layout_of(r, mode, MemoryMode::planned);
      const LiveBytes lb = live_bytes(layout);
      CHECK(lb.steps == layout.live.steps);
      CHECK(lb.peak() == layout.plan.lower_bound);
      CHECK(layout.plan.lower_bound <= layout.plan.arena_bytes);
      // No parameter gradients in inference; all four categories in training.
      const size_t param_grads = *std::max_element(lb.bytes[3].begin(), lb.bytes[3].end());
      CHECK((param_grads > 0) == (mode == Mode::training));
    }
}

TEST_CASE("trace events parse back, one complete event per buffer") {
  Recording r{ParamStore::shapes_only(), nullptr, {}};
  record(r, "small-cnn", Mode::training);
  const Layout layout = layout_of(r, Mode::training, MemoryMode::planned);
  const nlohmann::json trace = nlohmann::json::parse(trace_json(layout, "small-cnn"));
  REQUIRE(trace.contains("traceEvents"));
  size_t complete = 0, counters = 0;
  std::map<std::pair<int, int>, int> lane_end;  // (pid, tid) -> last step so far
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "C") ++counters;
    if (e["ph"] != "X") continue;
    ++complete;
    const int ts = e["ts"], dur = e["dur"];
    CHECK(dur >= 1);
    // Events arrive by first step; each lane's events never overlap.
    auto [it, fresh] =
        lane_end.emplace(std::make_pair(e["pid"].get<int>(), e["tid"].get<int>()), ts + dur - 1);
    if (!fresh) {
      CHECK(it->second < ts);
      it->second = ts + dur - 1;
    }
    CHECK(e["args"]["bytes"].get<size_t>() > 0);
  }
  CHECK(complete == layout.live.buffers.size());
  CHECK(counters == static_cast<size_t>(layout.live.steps) + 1);
  CHECK(trace["otherData"]["arena_bytes"] == layout.plan.arena_bytes);
}

TEST_CASE("layout equals the executor's and the report's") {
  for (Mode mode : {Mode::training, Mode::inference}) {
    const std::string where = mode_name(mode);
    CAPTURE(where);
    Recording r{ParamStore(1), nullptr, {}};
    record(r, "small-cnn", mode);
    const ReportOptions ro{.keep = {r.loss.id()}};
    const MemoryReport report = memory_report(*r.tape, mode, cpu_backend(), ro);
    const Layout layout = layout_of(r, mode, MemoryMode::planned);
    CHECK(layout.plan.arena_bytes == report.planned.arena);
    CHECK(layout.plan.lower_bound == report.planned.lower_bound);
    std::optional<OptimizerConfig> sgd;
    if (mode == Mode::training) sgd = OptimizerConfig{.lr = 0.1, .momentum = 0.9};
    Executor ex(*r.tape, cpu_backend(),
                {.mode = mode, .memory = MemoryMode::planned, .keep = {r.loss}, .optimizer = sgd});
    CHECK(ex.arena_bytes() == layout.plan.arena_bytes);
    REQUIRE(ex.liveness().buffers.size() == layout.live.buffers.size());
    for (size_t i = 0; i < layout.live.buffers.size(); ++i) {
      CHECK(ex.liveness().buffers[i].first == layout.live.buffers[i].first);
      CHECK(ex.liveness().buffers[i].last == layout.live.buffers[i].last);
    }
    // Baseline: every buffer side by side, nothing shared.
    const Layout base = layout_of(r, mode, MemoryMode::baseline);
    CHECK(base.plan.arena_bytes == base.plan.lower_bound);
    std::string why;
    CHECK(plan_is_valid(base.requests, base.plan, &why));
  }
}

TEST_CASE("timeline and trace are deterministic") {
  std::string svg[2], trace[2];
  for (int run = 0; run < 2; ++run) {
    Recording r{ParamStore::shapes_only(), nullptr, {}};
    record(r, "resnet20", Mode::training, 8);
    const Layout layout = layout_of(r, Mode::training, MemoryMode::planned);
    svg[run] = timeline_svg(layout, "resnet20");
    trace[run] = trace_json(layout, "resnet20");
  }
  CHECK(svg[0] == svg[1]);
  CHECK(trace[0] == trace[1]);
}
