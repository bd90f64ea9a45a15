// The frugal command: `frugal train`, `frugal eval`, `frugal memory`, `frugal graph`, `frugal
// bench`. Bad data or options print one line, `error: <message>`, and exit non-zero (1, or
// CLI11's code for a command line it cannot parse).
#include <cstdio>
#include <exception>
#include <vector>

#include "apps/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"frugal: a C++ deep-learning framework that trains in far less memory"};
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, frugal::Action>> commands;
  for (auto add :
       {frugal::add_train_command, frugal::add_eval_command, frugal::add_memory_command,
        frugal::add_graph_command, frugal::add_bench_command, frugal::add_export_command,
        frugal::add_predict_command, frugal::add_plot_command, frugal::add_segment_command}) {
    frugal::Action action = add(app);
    commands.emplace_back(app.get_subcommands({}).back(), std::move(action));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "error: %s (see --help)\n", e.what());
    return e.get_exit_code();
  }
  try {
    for (auto& [command, action] : commands)
      if (command->parsed()) action();
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
