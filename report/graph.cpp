// The graph picture: memory slots from the layout's byte ranges, and the DOT text.
#include "report/graph.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "autograd/tape.h"

namespace frugal {

namespace {

struct Range {
  size_t begin, end;
  int buffer;
};

std::string human_bytes(size_t bytes) {
  char buf[32];
  if (bytes < 1024)
    std::snprintf(buf, sizeof buf, "%zu B", bytes);
  else if (bytes < 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out + "\"";
}

// Where a buffer is drawn: the scope of the op that makes it (a parameter's gradient: of the
// op that reads the parameter first; network inputs and their gradients: the top level).
const std::string& scope_of(const Tape& tape, const Buffer& b) {
  static const std::string top;
  if (b.op >= 0) return tape.ops()[static_cast<size_t>(b.op)].scope;
  if (b.value < 0) return top;
  const ValueNode& v = tape.value(b.value);
  if (v.kind == ValueKind::op_output) return tape.ops()[static_cast<size_t>(v.producer)].scope;
  if (v.kind == ValueKind::param && !v.consumers.empty())
    return tape.ops()[static_cast<size_t>(v.consumers[0])].scope;
  return top;
}

std::string node_label(const Tape& tape, const Layout& layout, int i) {
  const Buffer& b = layout.live.buffers[static_cast<size_t>(i)];
  std::string title = b.label;
  if (b.kind == BufferKind::value) {
    const ValueNode& v = tape.value(b.value);
    title = tape.ops()[static_cast<size_t>(v.producer)].op->name() + " " +
            std::to_string(v.producer) +
            (v.output_index ? " out" + std::to_string(v.output_index) : "");
  }
  std::string s = title + "\n";
  if (b.meta.dtype != DType::u8) s += b.meta.shape.str() + "\n";
  s += human_bytes(b.bytes);
  if (layout.memory == MemoryMode::planned && layout.offset(i) >= 0)
    s += " @ " + human_bytes(static_cast<size_t>(layout.offset(i)));
  const int r = layout.request[static_cast<size_t>(i)];
  if (r >= 0 && layout.requests[static_cast<size_t>(r)].alias_of >= 0) s += "\nin place";
  return s;
}

std::string node_line(const Tape& tape, const Layout& layout, int i, int slot);

const char* node_style(BufferKind k) {
  switch (k) {
    case BufferKind::input:
      return "shape=ellipse, style=filled";
    case BufferKind::value:
      return "shape=box, style=\"filled,rounded\"";
    case BufferKind::rebuilt:
      return "shape=box, style=\"filled,rounded,dashed\"";
    case BufferKind::saved:
    case BufferKind::fwd_scratch:
    case BufferKind::bwd_scratch:
      return "shape=note, style=filled";
    case BufferKind::grad:
    case BufferKind::grad_temp:
    case BufferKind::grad_bucket:
      return "shape=box, style=\"filled,dashed\"";
  }
  return "shape=box";
}

// One node: "b<i> [label=..., shape..., fillcolor=...];".
std::string node_line(const Tape& tape, const Layout& layout, int i, int slot) {
  const Buffer& b = layout.live.buffers[static_cast<size_t>(i)];
  std::string line = "b";
  line += std::to_string(i);
  line += " [label=" + quoted(node_label(tape, layout, i)) + ", " + node_style(b.kind);
  line += ", fillcolor=" + quoted(slot_colour(slot)) + "];";
  return line;
}

// Scopes as a tree of clusters; node 0 is the top level.
struct Cluster {
  std::string name;
  std::vector<int> buffers, children;
};

void write_cluster(const std::vector<Cluster>& clusters, int c, const std::string& indent,
                   const std::vector<std::string>& nodes, std::string& out) {
  const Cluster& cl = clusters[static_cast<size_t>(c)];
  std::string inner = indent;
  if (c > 0) {
    out += indent + "subgraph cluster_" + std::to_string(c) + " {\n";
    inner += "  ";
    out += inner + "label=" + quoted(cl.name) + "; style=rounded; color=\"#aaaaaa\";\n";
  }
  for (int i : cl.buffers) out += inner + nodes[static_cast<size_t>(i)] + "\n";
  for (int child : cl.children) write_cluster(clusters, child, inner, nodes, out);
  if (c > 0) out += indent + "}\n";
}

}  // namespace

std::vector<int> memory_slots(const Layout& layout) {
  const auto& bufs = layout.live.buffers;
  std::vector<Range> ranges;
  for (size_t i = 0; i < bufs.size(); ++i) {
    const long long offset = layout.offset(static_cast<int>(i));
    if (offset < 0 || bufs[i].bytes == 0) continue;
    ranges.push_back({static_cast<size_t>(offset), static_cast<size_t>(offset) + bufs[i].bytes,
                      static_cast<int>(i)});
  }
  std::vector<Range> by_begin = ranges;
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return std::tie(a.end, a.begin, a.buffer) < std::tie(b.end, b.begin, b.buffer);
  });
  std::sort(by_begin.begin(), by_begin.end(), [](const Range& a, const Range& b) {
    return std::tie(a.begin, a.buffer) < std::tie(b.begin, b.buffer);
  });
  // Every unassigned range ends after the stab point p (the one ending first is unassigned),
  // so the ranges holding p are exactly the unassigned ones beginning at or before p.
  std::vector<int> slot(bufs.size(), -1);
  size_t next = 0;
  int count = 0;
  for (const Range& r : ranges) {
    if (slot[static_cast<size_t>(r.buffer)] >= 0) continue;
    const size_t p = r.end - 1;
    for (; next < by_begin.size() && by_begin[next].begin <= p; ++next)
      if (slot[static_cast<size_t>(by_begin[next].buffer)] < 0)
        slot[static_cast<size_t>(by_begin[next].buffer)] = count;
    ++count;
  }
  // Numbered in order of first buffer, so the palette goes to the start of the network.
  std::vector<int> renumber(static_cast<size_t>(count), -1);
  int used = 0;
  for (int& s : slot)
    if (s >= 0) {
      if (renumber[static_cast<size_t>(s)] < 0) renumber[static_cast<size_t>(s)] = used++;
      s = renumber[static_cast<size_t>(s)];
    }
  return slot;
}

std::string slot_colour(int slot) {
  // ColorBrewer Set3 (its grey swapped for a tan), then light colours whose channels are all
  // 1 mod 3 in [160, 253]: 32768 of them, none in the palette, each slot its own.
  static const char* palette[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
                                  "#b3de69", "#fccde5", "#e5d8bd", "#bc80bd", "#ccebc5", "#ffed6f"};
  constexpr int kPalette = 12;
  if (slot < 0) return "#ffffff";
  if (slot < kPalette) return palette[slot];
  // An odd multiplier permutes 15 bits, so neighbouring slots get unlike colours; bits
  // 0,3,6,.. give red, 1,4,7,.. green, 2,5,8,.. blue.
  const unsigned x = (static_cast<unsigned>(slot - kPalette) * 0x2f1bu) & 0x7fffu;
  int rgb[3] = {0, 0, 0};
  for (int bit = 0; bit < 15; ++bit) rgb[bit % 3] |= static_cast<int>((x >> bit) & 1u) << (bit / 3);
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", 160 + 3 * rgb[0], 160 + 3 * rgb[1],
                160 + 3 * rgb[2]);
  return buf;
}

std::string graph_dot(const Tape& tape, const Layout& layout, const GraphOptions& options) {
  const Liveness& L = layout.live;
  const std::vector<int> slot = memory_slots(layout);
  std::vector<bool> shown(L.buffers.size(), false);
  std::vector<std::string> nodes(L.buffers.size());
  std::vector<Cluster> clusters(1);
  std::map<std::string, int> cluster_of{{"", 0}};
  int shown_count = 0, slots = 0;
  for (size_t i = 0; i < L.buffers.size(); ++i) {
    const Buffer& b = L.buffers[i];
    shown[i] = options.all_buffers || b.kind == BufferKind::input || b.kind == BufferKind::value;
    if (!shown[i]) continue;
    ++shown_count;
    slots = std::max(slots, slot[i] + 1);
    nodes[i] = node_line(tape, layout, static_cast<int>(i), slot[i]);
    // The cluster path, made on first use: "stage2/block3" under "stage2" under the top.
    const std::string& scope = scope_of(tape, b);
    int parent = 0;
    for (size_t end = 0; end != std::string::npos;) {
      end = scope.find('/', end + 1);
      const std::string path = scope.substr(0, end);
      auto [it, fresh] = cluster_of.emplace(path, static_cast<int>(clusters.size()));
      if (fresh) {
        clusters.push_back({path.substr(path.rfind('/') + 1), {}, {}});
        clusters[static_cast<size_t>(parent)].children.push_back(it->second);
      }
      parent = it->second;
      if (scope.empty()) break;
    }
    clusters[static_cast<size_t>(parent)].buffers.push_back(static_cast<int>(i));
  }

  std::string title = options.title.empty() ? "" : options.title + "\n";
  if (layout.memory == MemoryMode::planned)
    title += "planned: arena " + human_bytes(layout.plan.arena_bytes) + " (lower bound " +
             human_bytes(layout.plan.lower_bound) + ")\n" + std::to_string(shown_count) +
             " buffers in " + std::to_string(slots) + " memory slots; same colour = same bytes";
  else
    title += "baseline: every buffer its own memory, " + human_bytes(layout.plan.arena_bytes) +
             " in all; " + std::to_string(shown_count) + " buffers shown";
  std::string out = "digraph frugal {\n";
  out += "  graph [label=" + quoted(title) +
         ", labelloc=t, fontname=Helvetica, fontsize=14, nodesep=0.15, ranksep=0.3];\n";
  out += "  node [fontname=Helvetica, fontsize=9, margin=\"0.06,0.03\", height=0.3];\n";
  out += "  edge [arrowsize=0.5, color=\"#555555\"];\n";
  write_cluster(clusters, 0, "  ", nodes, out);

  std::set<std::pair<int, int>> edges;
  auto edge = [&](int from, int to, const char* style) {
    if (from < 0 || to < 0 || !shown[static_cast<size_t>(from)] ||
        !shown[static_cast<size_t>(to)] || !edges.insert({from, to}).second)
      return;
    out += "  b" + std::to_string(from) + " -> b" + std::to_string(to) + style + ";\n";
  };
  const auto& ops = tape.ops();
  for (size_t k = 0; k < ops.size(); ++k)
    for (int in : ops[k].inputs)
      for (int o : ops[k].outputs)
        edge(L.value_buffer[static_cast<size_t>(in)], L.value_buffer[static_cast<size_t>(o)], "");
  if (!options.all_buffers) return out + "}\n";
  for (size_t k = 0; k < ops.size(); ++k) {
    const int y = L.value_buffer[static_cast<size_t>(ops[k].outputs.at(0))];
    for (int s : L.saved_buffers[k]) edge(y, s, " [style=dashed]");
    edge(y, L.fwd_scratch[k], " [style=dotted]");
    edge(y, L.bwd_scratch[k], " [style=dotted]");
    if (L.mode != Mode::training) continue;
    for (size_t i = 0; i < ops[k].inputs.size(); ++i) {
      const int dx = L.grad_buffer[static_cast<size_t>(ops[k].inputs[i])];
      const int temp = L.grad_temp_buffers[k].empty() ? -1 : L.grad_temp_buffers[k][i];
      if (dx < 0 || !ops[k].op->differentiable(static_cast<int>(i))) continue;
      // Drawn from d input up to d output (arrow reversed), so gradients lie as values do.
      const char* back = " [dir=back, style=dashed, color=\"#999999\"]";
      for (int o : ops[k].outputs)
        edge(temp >= 0 ? temp : dx, L.grad_buffer[static_cast<size_t>(o)], back);
      edge(dx, temp, back);
    }
  }
  for (size_t v = 0; v < L.rebuilt_buffer.size(); ++v)
    edge(L.value_buffer[v], L.rebuilt_buffer[v], " [style=dotted]");
  return out + "}\n";
}

}  // namespace frugal
