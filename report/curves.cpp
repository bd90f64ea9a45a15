// Training curves from JSON-lines logs, as an SVG of three panels.
#include "report/curves.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "report/svg.h"

namespace frugal {

using svg::escape_xml;
using svg::format;

namespace {

// Tableau 10.
constexpr const char* kColours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

double number(const nlohmann::json& j, const char* key, const std::string& where) {
  FRUGAL_CHECK(j.contains(key) && j[key].is_number(), where, ": no number '", key, "'");
  const double v = j[key].get<double>();
  FRUGAL_CHECK(std::isfinite(v), where, ": '", key, "' is not finite");
  return v;
}

struct Panel {
  const char* title;
  std::vector<std::pair<const char*, std::vector<CurvePoint> RunCurves::*>> metrics;
  bool percent;
};

}  // namespace

RunCurves read_run_log(const std::string& path) {
  std::ifstream in(path);
  FRUGAL_CHECK(in.good(), path, ": cannot open");
  RunCurves r;
  r.name = std::filesystem::path(path).filename().string();
  std::string line;
  int number_of_line = 0;
  while (std::getline(in, line)) {
    ++number_of_line;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(number_of_line);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      throw Error(where + ": not a JSON line of frugal train --log");
    }
    FRUGAL_CHECK(j.is_object(), where, ": not a JSON object");
    const double step = number(j, "global_step", where);
    r.train_loss.push_back({step, number(j, "train_loss", where)});
    r.train_acc.push_back({step, number(j, "train_acc", where)});
    r.test_acc.push_back({step, number(j, "test_acc", where)});
    r.lr.push_back({step, number(j, "lr_end", where)});
    if (j.contains("memory") && j["memory"].is_string()) r.memory = j["memory"].get<std::string>();
    if (j.contains("train_memory_bytes") && j["train_memory_bytes"].is_number_unsigned())
      r.memory_bytes = j["train_memory_bytes"].get<size_t>();
  }
  FRUGAL_CHECK(!r.train_loss.empty(), path, ": no epochs logged");
  return r;
}

std::string curves_svg(const std::vector<RunCurves>& runs, const std::string& title, int width) {
  FRUGAL_CHECK(!runs.empty(), "plot: no runs");
  const std::vector<Panel> panels = {
      {"training loss", {{"train_loss", &RunCurves::train_loss}}, false},
      {"accuracy (solid: test, dashed: train)",
       {{"test_acc", &RunCurves::test_acc}, {"train_acc", &RunCurves::train_acc}},
       true},
      {"learning rate (at each epoch's end)", {{"lr", &RunCurves::lr}}, false}};
  const double left = 70, right = 230, top = 40, panel_h = 200, gap = 50;
  const double plot_w = width - left - right;
  const double height = top + panels.size() * (panel_h + gap);
  double max_step = 0;
  for (const RunCurves& r : runs)
    for (const CurvePoint& p : r.train_loss) max_step = std::max(max_step, p.step);
  if (max_step <= 0) max_step = 1;

  std::string s = format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" viewBox=\"0 0 %d "
      "%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
      width, height, width, height);
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s +=
      format("<text x=\"%.1f\" y=\"22\" font-size=\"15\">", left) + escape_xml(title) + "</text>\n";
  for (size_t k = 0; k < panels.size(); ++k) {
    const Panel& panel = panels[k];
    const double y0 = top + static_cast<double>(k) * (panel_h + gap) + 10;
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const RunCurves& r : runs)
      for (const auto& [name, member] : panel.metrics)
        for (const CurvePoint& p : r.*member)
          lo = std::min(lo, p.value), hi = std::max(hi, p.value);
    if (panel.percent) lo = std::min(lo, 0.0), hi = std::max(hi, 1.0);
    if (hi <= lo) hi = lo + 1;
    lo = std::min(lo, 0.0);
    const auto X = [&](double step) { return left + plot_w * step / max_step; };
    const auto Y = [&](double v) { return y0 + panel_h * (1 - (v - lo) / (hi - lo)); };
    s += format("<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">%s</text>\n", left, y0 - 6,
                panel.title);
    s += format(
        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
        "stroke=\"#999999\"/>\n",
        left, y0, plot_w, panel_h);
    for (int t = 0; t <= 4; ++t) {
      const double v = lo + (hi - lo) * t / 4;
      s += format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", left - 6, Y(v) + 4,
                  panel.percent ? format("%.0f%%", 100 * v).c_str() : format("%.3g", v).c_str());
    }
    s += format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">step %.0f</text>\n", left + plot_w,
                y0 + panel_h + 16, max_step);
    for (size_t r = 0; r < runs.size(); ++r) {
      const char* colour = kColours[r % std::size(kColours)];
      for (size_t m = 0; m < panel.metrics.size(); ++m) {
        const auto& [name, member] = panel.metrics[m];
        const std::vector<CurvePoint>& points = runs[r].*member;
        std::string line;
        for (const CurvePoint& p : points) line += format("%.2f,%.2f ", X(p.step), Y(p.value));
        // Built by concatenation: a long run's points outgrow format's buffer.
        s += format("<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", colour,
                    m > 0 ? " stroke-dasharray=\"5,4\"" : "") +
             line + "\"/>\n";
        for (const CurvePoint& p : points)
          s += format(
              "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"%s\" data-run=\"%zu\" "
              "data-metric=\"%s\" data-step=\"%.17g\" data-value=\"%.17g\"/>\n",
              X(p.step), Y(p.value), colour, r, name, p.step, p.value);
      }
    }
  }
  // The legend: one line per run with its memory.
  for (size_t r = 0; r < runs.size(); ++r) {
    const double ly = top + 20 + 36 * static_cast<double>(r), lx = left + plot_w + 16;
    s += format("<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", lx, ly,
                kColours[r % std::size(kColours)]);
    s += format("<text x=\"%.1f\" y=\"%.1f\">", lx + 18, ly + 10) + escape_xml(runs[r].name) +
         "</text>\n";
    std::string memory = runs[r].memory.empty() ? "memory" : "memory " + runs[r].memory;
    memory += format(", %.1f MiB", static_cast<double>(runs[r].memory_bytes) / (1024.0 * 1024.0));
    s += format("<text x=\"%.1f\" y=\"%.1f\" fill=\"#555555\">", lx + 18, ly + 25) +
         escape_xml(memory) + "</text>\n";
  }
  s += "</svg>\n";
  return s;
}

}  // namespace frugal
