// The graph picture: memory slots group only buffers that share bytes (a hand-computed case
// and the bundled networks), colours follow slots, baseline uses more colours than planned,
// scopes become clusters, and the DOT text is deterministic.
#include <doctest/doctest.h>

#include <regex>
#include <set>

#include "models/registry.h"
#include "report/graph.h"
#include "report/report.h"
#include "run/plan.h"

using namespace frugal;

namespace {

struct Recording {
  ParamStore store = ParamStore::shapes_only();
  std::unique_ptr<Tape> tape;
  Value out;
};

void record(Recording& r, const std::string& model, Mode mode) {
  const ModelSpec& spec = find_model(model);
  r.tape = std::make_unique<Tape>(r.store, DType::f32);
  std::vector<int64_t> dims{2};
  for (int64_t d : spec.input.dims()) dims.push_back(d);
  Value x = r.tape->input("images", Shape(dims), DType::f32);
  Value labels = r.tape->input("labels", {2}, DType::i32);
  Value y = spec.build(x, {});
  r.out = mode == Mode::training ? model_loss(spec, y, labels) : y;
}

Layout layout_of(Recording& r, Mode mode, MemoryMode memory) {
  const ReportOptions ro{.keep = {r.out.id()}};
  return memory_layout(*r.tape, mode, memory, cpu_backend(), report_layout_options(mode, ro));
}

bool share_bytes(const Layout& l, int a, int b) {
  const long long oa = l.offset(a), ob = l.offset(b);
  const auto ea = oa + static_cast<long long>(l.live.buffers[static_cast<size_t>(a)].bytes);
  const auto eb = ob + static_cast<long long>(l.live.buffers[static_cast<size_t>(b)].bytes);
  return oa >= 0 && ob >= 0 && oa < eb && ob < ea;
}

// Node -> fill colour, read back from the DOT text.
std::map<int, std::string> node_colours(const std::string& dot) {
  std::map<int, std::string> colours;
  const std::regex node(R"re(\bb(\d+) \[label=.*fillcolor="(#[0-9a-f]{6})"\];)re");
  for (std::sregex_iterator it(dot.begin(), dot.end(), node), end; it != end; ++it)
    colours[std::stoi((*it)[1])] = (*it)[2];
  return colours;
}

}  // namespace

TEST_CASE("memory slots hand-computed") {
  // Byte ranges A [0,100) B [50,150) C [120,200) D [0,40) and an input E (own storage).
  Layout l;
  for (size_t bytes : {100, 100, 80, 40, 16}) {
    Buffer b;
    b.bytes = bytes;
    l.live.buffers.push_back(b);
  }
  l.live.buffers[4].kind = BufferKind::input;
  l.request = {0, 1, 2, 3, -1};
  l.plan.offsets = {0, 50, 120, 0};
  // D ends first: its last byte 39 is held by A and D; then B's last byte 149 by B and C.
  CHECK(memory_slots(l) == std::vector<int>{0, 1, 1, 0, -1});
  CHECK(slot_colour(-1) == "#ffffff");
  std::set<std::string> colours;
  for (int slot = 0; slot < 32780; ++slot) colours.insert(slot_colour(slot));
  CHECK(colours.size() == 32780);
}

TEST_CASE("graph colours are shared only by buffers that share bytes") {
  for (const char* model : {"small-cnn", "resnet20"})
    for (MemoryMode memory : {MemoryMode::planned, MemoryMode::baseline}) {
      const std::string where = std::string(model) + ", " + memory_mode_name(memory);
      CAPTURE(where);
      Recording r;
      record(r, model, Mode::training);
      const Layout layout = layout_of(r, Mode::training, memory);
      const std::vector<int> slot = memory_slots(layout);
      const auto colours = node_colours(graph_dot(*r.tape, layout, {.all_buffers = true}));
      CHECK(colours.size() == layout.live.buffers.size());
      for (size_t i = 0; i < slot.size(); ++i) {
        const Buffer& b = layout.live.buffers[i];
        CHECK((slot[i] < 0) == (b.kind == BufferKind::input || b.bytes == 0));
        CHECK(colours.at(static_cast<int>(i)) == slot_colour(slot[i]));
      }
      int violations = 0;
      for (auto a = colours.begin(); a != colours.end(); ++a)
        for (auto b = std::next(a); b != colours.end(); ++b)
          if (a->second == b->second && a->second != "#ffffff" &&
              !share_bytes(layout, a->first, b->first)) {
            ++violations;
            MESSAGE(a->first, " ", b->first, " ", a->second);
          }
      CHECK(violations == 0);
    }
}

TEST_CASE("baseline uses more colours than planned") {
  for (Mode mode : {Mode::inference, Mode::training}) {
    const std::string where = mode_name(mode);
    CAPTURE(where);
    Recording r;
    record(r, "small-cnn", mode);
    std::set<std::string> used[2];
    int i = 0;
    for (MemoryMode memory : {MemoryMode::planned, MemoryMode::baseline}) {
      for (const auto& [node, colour] :
           node_colours(graph_dot(*r.tape, layout_of(r, mode, memory), {})))
        used[i].insert(colour);
      ++i;
    }
    CHECK(used[0].size() < used[1].size());
  }
}

TEST_CASE("graph groups scopes into clusters and is deterministic") {
  std::string dot[2];
  for (auto& d : dot) {
    Recording r;
    record(r, "resnet20", Mode::inference);
    d = graph_dot(*r.tape, layout_of(r, Mode::inference, MemoryMode::planned), {.title = "t"});
  }
  CHECK(dot[0] == dot[1]);
  CHECK(dot[0].rfind("digraph frugal {", 0) == 0);
  CHECK(dot[0].find("label=\"stage2\"") != std::string::npos);
  CHECK(dot[0].find("label=\"block1\"") != std::string::npos);
  CHECK(dot[0].find("memory slots; same colour = same bytes") != std::string::npos);
  CHECK(dot[0].find(" -> ") != std::string::npos);
  // Every edge joins two drawn nodes.
  const auto colours = node_colours(dot[0]);
  const std::regex edge(R"(b(\d+) -> b(\d+))");
  for (std::sregex_iterator it(dot[0].begin(), dot[0].end(), edge), end; it != end; ++it) {
    CHECK(colours.count(std::stoi((*it)[1])) == 1);
    CHECK(colours.count(std::stoi((*it)[2])) == 1);
  }
}
