// Live bytes per step and the timeline SVG, written by hand (a few shapes and text).
#include "report/timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "report/svg.h"

namespace frugal {

using svg::escape_xml;
using svg::format;
using svg::tick_step;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Fill colours per category (outputs, gradInputs, buffers, param grads): Tableau 10.
constexpr const char* kFill[kMemoryCategories] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759"};

}  // namespace

size_t LiveBytes::total(int step) const {
  size_t t = 0;
  for (const auto& c : bytes) t += c[static_cast<size_t>(step)];
  return t;
}

size_t LiveBytes::peak() const {
  size_t p = 0;
  for (int s = 0; s < steps; ++s) p = std::max(p, total(s));
  return p;
}

LiveBytes live_bytes(const Layout& layout) {
  const auto& req = layout.requests;
  LiveBytes lb;
  lb.steps = layout.live.steps;
  for (auto& c : lb.bytes) c.assign(static_cast<size_t>(lb.steps), 0);
  lb.rebuilt.assign(static_cast<size_t>(lb.steps), 0);
  // The plan's blocks: each alias group of requests once, as its root (whose buffer gives the
  // category), over the union of its members' lifetimes, as large as its largest member.
  std::vector<int> buffer_of(req.size());
  for (size_t i = 0; i < layout.request.size(); ++i)
    if (layout.request[i] >= 0)
      buffer_of[static_cast<size_t>(layout.request[i])] = static_cast<int>(i);
  std::vector<int> root(req.size()), first(req.size()), last(req.size());
  std::vector<size_t> bytes(req.size(), 0);
  for (size_t i = 0; i < req.size(); ++i) {
    root[i] = alias_root(req, static_cast<int>(i));
    first[i] = req[i].first;
    last[i] = req[i].last;
  }
  for (size_t i = 0; i < req.size(); ++i) {
    const size_t r = static_cast<size_t>(root[i]);
    first[r] = std::min(first[r], req[i].first);
    last[r] = std::max(last[r], req[i].last);
    bytes[r] = std::max(bytes[r], layout.rounded_bytes(buffer_of[i]));
  }
  // Per category, a difference array over the steps.
  std::vector<std::vector<long long>> delta(
      kMemoryCategories, std::vector<long long>(static_cast<size_t>(lb.steps) + 1, 0));
  for (size_t i = 0; i < req.size(); ++i) {
    const Buffer& b = layout.live.buffers[static_cast<size_t>(buffer_of[i])];
    const MemoryCategory c = memory_category(b);
    if (root[i] != static_cast<int>(i) || c == MemoryCategory::none || bytes[i] == 0) continue;
    auto& d = delta[static_cast<size_t>(c) - 1];
    d[static_cast<size_t>(first[i])] += static_cast<long long>(bytes[i]);
    d[static_cast<size_t>(last[i]) + 1] -= static_cast<long long>(bytes[i]);
    if (b.kind == BufferKind::rebuilt)
      for (int s = first[i]; s <= last[i]; ++s) lb.rebuilt[static_cast<size_t>(s)] += bytes[i];
  }
  for (size_t c = 0; c < delta.size(); ++c) {
    long long live = 0;
    for (int s = 0; s < lb.steps; ++s) {
      live += delta[c][static_cast<size_t>(s)];
      lb.bytes[c][static_cast<size_t>(s)] = static_cast<size_t>(live);
    }
  }
  return lb;
}

std::string timeline_svg(const Layout& layout, const std::string& title, int width, int height) {
  const LiveBytes lb = live_bytes(layout);
  const double left = 80, right = 180, top = 50, bottom = 60;
  const double pw = width - left - right, ph = height - top - bottom;
  const size_t arena = layout.plan.arena_bytes, bound = layout.plan.lower_bound;
  const double ymax =
      std::max(1.0, 1.08 * static_cast<double>(std::max({arena, bound, lb.peak()})) / kMiB);
  const int S = std::max(1, lb.steps);
  auto X = [&](int step) { return left + pw * step / S; };
  auto Y = [&](double bytes) { return top + ph * (1.0 - bytes / kMiB / ymax); };

  std::string s = format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d "
      "%d\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n",
      width, height, width, height);
  s += format("<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", width, height);
  s +=
      format("<text x=\"%.1f\" y=\"24\" font-size=\"15\">", left) + escape_xml(title) + "</text>\n";

  // Grid lines and ticks in MiB, under the areas.
  const double step_mib = tick_step(ymax);
  for (double v = 0; v <= ymax + 1e-9; v += step_mib) {
    const double y = top + ph * (1.0 - v / ymax);
    s += format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n",
                left, y, left + pw, y);
    s += format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", left - 6, y + 4, v);
  }

  // Stacked step areas, bottom to top in category order.
  std::vector<size_t> below(static_cast<size_t>(lb.steps), 0);
  for (int c = 0; c < kMemoryCategories; ++c) {
    const auto& series = lb.bytes[static_cast<size_t>(c)];
    std::string d = format("M%.1f %.1f", X(0), Y(0));
    for (int t = 0; t < lb.steps; ++t) {
      const double y =
          Y(static_cast<double>(below[static_cast<size_t>(t)] + series[static_cast<size_t>(t)]));
      d += format(" L%.1f %.1f L%.1f %.1f", X(t), y, X(t + 1), y);
    }
    for (int t = lb.steps - 1; t >= 0; --t) {
      const double y = Y(static_cast<double>(below[static_cast<size_t>(t)]));
      d += format(" L%.1f %.1f L%.1f %.1f", X(t + 1), y, X(t), y);
    }
    s += format("<path class=\"%s\" d=\"",
                memory_category_name(static_cast<MemoryCategory>(c + 1))) +
         d + format(" Z\" fill=\"%s\" stroke=\"none\"/>\n", kFill[c]);
    for (int t = 0; t < lb.steps; ++t)
      below[static_cast<size_t>(t)] += series[static_cast<size_t>(t)];
  }

  // The rebuilt outputs: outlined over the bottom of the outputs' area.
  const bool rebuilds =
      std::any_of(lb.rebuilt.begin(), lb.rebuilt.end(), [](size_t b) { return b > 0; });
  if (rebuilds) {
    std::string d = format("M%.1f %.1f", X(0), Y(0));
    for (int t = 0; t < lb.steps; ++t) {
      const double y = Y(static_cast<double>(lb.rebuilt[static_cast<size_t>(t)]));
      d += format(" L%.1f %.1f L%.1f %.1f", X(t), y, X(t + 1), y);
    }
    s += "<path id=\"rebuilt\" d=\"" + d +
         format(
             " L%.1f %.1f Z\" fill=\"white\" fill-opacity=\"0.45\" stroke=\"#222222\" "
             "stroke-width=\"1\"/>\n",
             X(lb.steps), Y(0));
  }

  // Axes and the forward / backward / end marks.
  s += format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", left,
              top, left, top + ph);
  s += format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", left,
              top + ph, left + pw, top + ph);
  s += format(
      "<text transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"middle\">live memory "
      "(MiB)</text>\n",
      left - 52, top + ph / 2);
  const int n = layout.live.ops;
  const bool training = layout.live.mode == Mode::training;
  s += format(
      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">timeline step: forward 0..%d%s, then the "
      "end step (%d steps)</text>\n",
      left + pw / 2, top + ph + 40, n - 1,
      training ? format(", backward %d..%d", n, 2 * n - 1).c_str() : "", lb.steps);
  for (int t : {0, n, training ? 2 * n : -1, lb.steps}) {
    if (t < 0 || (t == lb.steps && training)) continue;
    s += format(
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888888\" "
        "stroke-dasharray=\"2 3\"/>\n",
        X(t), top, X(t), top + ph);
    s += format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"10\">%d</text>\n",
                X(t), top + ph + 16, t);
  }
  s +=
      format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#555555\">forward</text>\n",
             (X(0) + X(n)) / 2, top + 14);
  if (training)
    s += format(
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#555555\">backward</text>\n",
        (X(n) + X(2 * n)) / 2, top + 14);

  // The arena and the lower bound.
  const double ya = Y(static_cast<double>(arena)), yb = Y(static_cast<double>(bound));
  s += format(
      "<line id=\"arena\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" "
      "stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n",
      left, ya, left + pw, ya);
  s += format(
      "<line id=\"lower-bound\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\" "
      "stroke-width=\"1\" stroke-dasharray=\"2 2\"/>\n",
      left, yb, left + pw, yb);

  // Legend, right of the plot.
  const double lx = left + pw + 16;
  double ly = top + 8;
  for (int c = kMemoryCategories - 1; c >= 0; --c, ly += 20) {
    s += format("<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", lx, ly,
                kFill[c]);
    s += format("<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", lx + 18, ly + 10,
                memory_category_name(static_cast<MemoryCategory>(c + 1)));
  }
  s += format(
      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" "
      "stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n",
      lx, ly + 6, lx + 12, ly + 6);
  s +=
      format("<text x=\"%.1f\" y=\"%.1f\">arena %.2f MiB</text>\n", lx + 18, ly + 10, arena / kMiB);
  ly += 20;
  s += format(
      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\" stroke-dasharray=\"2 "
      "2\"/>\n",
      lx, ly + 6, lx + 12, ly + 6);
  s += format("<text x=\"%.1f\" y=\"%.1f\">lower bound %.2f MiB</text>\n", lx + 18, ly + 10,
              bound / kMiB);
  if (rebuilds) {
    ly += 20;
    s += format(
        "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"white\" "
        "stroke=\"#222222\"/>\n",
        lx, ly);
    s += format("<text x=\"%.1f\" y=\"%.1f\">rebuilt in backward</text>\n", lx + 18, ly + 10);
  }
  s += "</svg>\n";
  return s;
}

}  // namespace frugal
