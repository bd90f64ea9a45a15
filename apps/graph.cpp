// `frugal graph`: a bundled network as a graphviz picture, one node per buffer, buffers that
// share memory in the layout sharing a colour. Writes DOT text, or SVG through graphviz's
// `dot` (an error naming the missing program when graphviz is not installed).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "apps/commands.h"
#include "apps/model_options.h"
#include "models/step.h"
#include "report/graph.h"
#include "report/report.h"
#include "report/text_file.h"
#include "run/plan.h"

extern char** environ;

namespace frugal {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Runs `dot -Tsvg -o path` with the DOT text on its standard input.
void render_svg(const std::string& dot, const std::string& path) {
  int fds[2];
  FRUGAL_CHECK(pipe(fds) == 0, "graph: pipe failed: ", std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[0], STDIN_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  std::string program = "dot", format = "-Tsvg", flag = "-o", out = path;
  char* argv[] = {program.data(), format.data(), flag.data(), out.data(), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, "dot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[0]);
  if (spawned != 0) {
    close(fds[1]);
    FRUGAL_CHECK(
        false, "graph: cannot run graphviz's `dot` (", std::strerror(spawned),
        "); install graphviz (apt install graphviz) or write a .dot file with -o FILE.dot");
  }
  for (size_t done = 0; done < dot.size();) {
    const ssize_t n = write(fds[1], dot.data() + done, dot.size() - done);
    if (n <= 0) break;  // dot exited early; its status says why
    done += static_cast<size_t>(n);
  }
  close(fds[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  FRUGAL_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "graph: `dot -Tsvg -o ", path,
               "` failed (exit status ", WIFEXITED(status) ? WEXITSTATUS(status) : -1, ")");
}

}  // namespace

Action add_graph_command(CLI::App& app) {
  auto o = std::make_shared<ModelChoice>();
  o->batch = 1;
  o->mode = Mode::inference;
  auto baseline = std::make_shared<bool>(false);
  auto all = std::make_shared<bool>(false);
  auto file = std::make_shared<std::string>();
  CLI::App* c = app.add_subcommand(
      "graph", "A bundled network as a graph picture; buffers that share memory share a colour");
  add_model_options(c, o, {.dtype = false, .batch_norm = false, .recompute = false});
  auto planned_flag = std::make_shared<bool>(true);
  auto* planned = c->add_flag("--planned", *planned_flag, "Colour by the planned arena (default)");
  c->add_flag("--baseline", *baseline, "Every buffer its own memory (one colour each)")
      ->excludes(planned);
  c->add_flag("--all-buffers", *all, "Training: saved, scratch and gradient buffers too");
  c->add_option("-o,--output", *file, "FILE.dot (graphviz text) or FILE.svg (runs dot -Tsvg)")
      ->required();
  return [o, baseline, all, file, planned_flag] {
    const bool svg = ends_with(*file, ".svg");
    FRUGAL_CHECK(svg || ends_with(*file, ".dot"), "graph: output '", *file,
                 "' must end in .dot or .svg");
    const MemoryMode memory = *baseline ? MemoryMode::baseline : MemoryMode::planned;
    ParamStore store = ParamStore::shapes_only();
    Tape tape(store, o->dtype);
    check_from_output_flags(*o, "graph");
    const ModelStep step = record_model_step(tape, find_model(o->model), o->batch, o->mode,
                                             {.dropout = o->dropout,
                                              .batch_norm = o->batch_norm,
                                              .batch_norm_from_output = o->bn_from_output,
                                              .layer_norm_from_output = o->ln_from_output});
    FRUGAL_CHECK(!o->pack || (o->mode == Mode::training && memory == MemoryMode::planned),
                 "graph --pack: packs ReLU outputs for backward in planned memory; use --mode "
                 "training --planned");
    const Layout layout =
        memory_layout(tape, o->mode, memory, backend_named(o->device),
                      report_layout_options(o->mode, {.keep = {step.out().id()},
                                                      .workspace_limit = o->workspace_limit,
                                                      .workspace_growth = o->workspace_growth,
                                                      .recompute = o->recompute,
                                                      .pack = o->pack}));
    const GraphOptions go{.all_buffers = *all,
                          .title = o->model + ", batch " + std::to_string(o->batch) + ", " +
                                   mode_name(o->mode) + ", " + dtype_name(o->dtype)};
    const std::string dot = graph_dot(tape, layout, go);
    if (svg)
      render_svg(dot, *file);
    else
      write_text_file(*file, dot, "graph");
    std::printf("wrote %s (%s, arena %.2f MiB)\n", file->c_str(), memory_mode_name(memory),
                static_cast<double>(layout.plan.arena_bytes) / (1024.0 * 1024.0));
  };
}

}  // namespace frugal
