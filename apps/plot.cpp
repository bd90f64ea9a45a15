// `frugal plot`: training curves of one or more `frugal train --log` runs side by side, as SVG.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "report/curves.h"
#include "report/text_file.h"

namespace frugal {
namespace {

struct PlotOptions {
  std::vector<std::string> logs;
  std::string output;
  std::string title = "training curves";
};

void run_plot(const PlotOptions& o) {
  std::vector<RunCurves> runs;
  for (const std::string& log : o.logs) runs.push_back(read_run_log(log));
  write_text_file(o.output, curves_svg(runs, o.title), "plot");
  std::printf("wrote %s (%zu runs)\n", o.output.c_str(), runs.size());
}

}  // namespace

Action add_plot_command(CLI::App& app) {
  auto o = std::make_shared<PlotOptions>();
  CLI::App* c = app.add_subcommand(
      "plot", "Loss, accuracy and learning rate of frugal train --log runs, side by side (SVG)");
  c->add_option("logs", o->logs, "JSON-lines logs of frugal train --log")->required();
  c->add_option("-o,--output", o->output, "The SVG file to write")->required();
  c->add_option("--title", o->title, "Title of the picture")->capture_default_str();
  return [o] { run_plot(*o); };
}

}  // namespace frugal
