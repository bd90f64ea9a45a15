// The `frugal` subcommands: each file in apps/ adds its own to the CLI11 app and runs it when
// it was given. Throwing frugal::Error prints `error: <message>` and exits 1.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace frugal {

// A subcommand's action, run after parsing if the subcommand was given.
using Action = std::function<void()>;

Action add_train_command(CLI::App& app);
Action add_eval_command(CLI::App& app);
Action add_memory_command(CLI::App& app);
Action add_graph_command(CLI::App& app);
Action add_bench_command(CLI::App& app);
Action add_export_command(CLI::App& app);
Action add_predict_command(CLI::App& app);
Action add_plot_command(CLI::App& app);
Action add_segment_command(CLI::App& app);

}  // namespace frugal
