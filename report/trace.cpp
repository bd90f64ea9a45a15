// The Chrome trace-event writer (report/timeline.h): buffers as complete events on lanes,
// one process per category, and live bytes as counters.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "report/timeline.h"

namespace frugal {

namespace {

using nlohmann::ordered_json;

constexpr int kInputsPid = kMemoryCategories + 1;  // categories are pids 1..4; 0 holds counters

int pid_of(const Buffer& b) {
  const MemoryCategory c = memory_category(b);
  return c == MemoryCategory::none ? kInputsPid : static_cast<int>(c);
}

ordered_json metadata(const char* name, int pid, int tid, const std::string& value) {
  ordered_json j{{"name", name}, {"ph", "M"}, {"pid", pid}};
  if (tid >= 0) j["tid"] = tid;
  j["args"] = {{"name", value}};
  return j;
}

}  // namespace

std::string trace_json(const Layout& layout, const std::string& title) {
  const auto& bufs = layout.live.buffers;
  ordered_json events = ordered_json::array();
  events.push_back(metadata("process_name", 0, -1, "live bytes"));
  for (int pid = 1; pid <= kInputsPid; ++pid) {
    const auto c = pid == kInputsPid ? MemoryCategory::none : static_cast<MemoryCategory>(pid);
    events.push_back(metadata("process_name", pid, -1, memory_category_name(c)));
  }

  // Lanes: within a category, buffers in order of first step go to the first lane free by then.
  std::vector<int> order(bufs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return bufs[static_cast<size_t>(a)].first < bufs[static_cast<size_t>(b)].first;
  });
  std::vector<std::vector<int>> lane_end(kInputsPid + 1);  // pid -> last step of each lane
  for (int i : order) {
    const Buffer& b = bufs[static_cast<size_t>(i)];
    const int pid = pid_of(b);
    auto& ends = lane_end[static_cast<size_t>(pid)];
    auto free = std::find_if(ends.begin(), ends.end(), [&](int end) { return end < b.first; });
    const int tid = static_cast<int>(free - ends.begin());
    if (free == ends.end()) {
      ends.push_back(b.last);
      events.push_back(metadata("thread_name", pid, tid, "lane " + std::to_string(tid)));
    } else {
      *free = b.last;
    }
    ordered_json args{{"bytes", b.bytes}, {"offset", layout.offset(i)},
                      {"label", b.label}, {"kind", buffer_kind_name(b.kind)},
                      {"first", b.first}, {"last", b.last}};
    if (b.alias_of >= 0) args["in_place_of"] = bufs[static_cast<size_t>(b.alias_of)].label;
    events.push_back({{"name", b.label},
                      {"cat", memory_category_name(memory_category(b))},
                      {"ph", "X"},
                      {"ts", b.first},
                      {"dur", b.last - b.first + 1},
                      {"pid", pid},
                      {"tid", tid},
                      {"args", args}});
  }

  // Live bytes per category at each step, then zero after the last step.
  const LiveBytes lb = live_bytes(layout);
  for (int s = 0; s <= lb.steps; ++s) {
    ordered_json args = ordered_json::object();
    for (int c = 0; c < kMemoryCategories; ++c)
      args[memory_category_name(static_cast<MemoryCategory>(c + 1))] =
          s < lb.steps ? lb.bytes[static_cast<size_t>(c)][static_cast<size_t>(s)] : 0;
    events.push_back({{"name", "live bytes"}, {"ph", "C"}, {"ts", s}, {"pid", 0}, {"args", args}});
  }

  ordered_json trace{{"traceEvents", events},
                     {"displayTimeUnit", "ms"},
                     {"otherData",
                      {{"title", title},
                       {"memory", memory_mode_name(layout.memory)},
                       {"mode", mode_name(layout.live.mode)},
                       {"time unit", "1 us = 1 timeline step"},
                       {"arena_bytes", layout.plan.arena_bytes},
                       {"lower_bound", layout.plan.lower_bound},
                       {"buffers", bufs.size()}}}};
  return trace.dump(1) + "\n";
}

}  // namespace frugal
