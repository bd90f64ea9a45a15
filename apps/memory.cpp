// `frugal memory`: reports from report/report.h for the bundled networks. Past 400 lines: the
// report, its recompute summary and the --run checks read the same recorded steps.
#include "apps/memory.h"
#include "apps/options.h"
#include "run/plan.h"

#include "apps/commands.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/rng.h"
#include "cuda/cuda_entry.h"
#include "models/onnx.h"
#include "models/registry.h"
#include "models/step.h"
#include "report/report.h"
#include "report/timeline.h"
#include "run/executor.h"
#include "train/step_budget.h"

namespace frugal {

using nlohmann::ordered_json;

void record_model(RecordedModel& r, const MemoryOptions& o) {
  const std::optional<ModelConfig> recompute = recompute_config(o);
  record_model(r, o, recompute ? *recompute : stored_config(o));
}

void record_model(RecordedModel& r, const MemoryOptions& o, const ModelConfig& config) {
  const ModelSpec& spec = find_model(o.model);
  FRUGAL_CHECK(o.batch > 0, "memory: batch must be positive, got ", o.batch);
  r.tape = std::make_unique<Tape>(r.store, o.dtype);
  const ModelStep step = record_model_step(*r.tape, spec, o.batch, o.mode, config);
  r.images = step.images;
  r.labels = step.labels;
  r.extra_inputs = step.extra_inputs;
  r.batch_norms_from_output = step.batch_norms_from_output;
  r.layer_norms_from_output = step.layer_norms_from_output;
  r.out = step.out();
}

Layout recorded_layout(RecordedModel& r, const MemoryOptions& o, MemoryMode m) {
  const ReportOptions ro{.optimizer_kind = o.optimizer,
                         .keep = {r.out.id()},
                         .workspace_limit = o.workspace_limit,
                         .workspace_growth = o.workspace_growth,
                         .recompute = o.recompute,
                         .rebuild_budget = o.rebuild_budget,
                         .pack = o.pack};
  return memory_layout(*r.tape, o.mode, m, backend_named(o.device),
                       report_layout_options(o.mode, ro));
}

namespace {

// Relative saving of `on` against `off`, in percent.
double saving(size_t off, size_t on) {
  return off == 0 ? 0.0 : 100.0 * (1.0 - static_cast<double>(on) / static_cast<double>(off));
}

ordered_json mode_json(const ModeMemory& m, bool planned) {
  ordered_json j{{"total", m.total},
                 {"outputs", m.bytes.outputs},
                 {"grad_inputs", m.bytes.grad_inputs},
                 {"buffers", m.bytes.buffers},
                 {"params", m.bytes.params},
                 {"optimizer_state", m.bytes.optimizer_state}};
  if (planned) {
    j["arena"] = m.arena;
    j["lower_bound"] = m.lower_bound;
    if (m.packed_outputs > 0) {
      j["packed_outputs"] = m.packed_outputs;
      j["packed_dense_bytes"] = m.packed_dense;
    }
  } else if (m.arena) {
    j["reserved"] = m.arena;
  }
  return j;
}

}  // namespace

ordered_json memory_report_json(const MemoryOptions& o, const MemoryReport& r,
                                const RecomputeSummary* s) {
  ordered_json recompute = nullptr;
  if (r.recompute) {
    recompute = mode_json(*r.recompute, true);
    if (s) recompute.update(recompute_json(r, *s));
  }
  ordered_json j{{"model", o.model},
                 {"batch", o.batch},
                 {"mode", mode_name(o.mode)},
                 {"dtype", dtype_name(o.dtype)},
                 {"modes",
                  {{"baseline", mode_json(r.baseline, false)},
                   {"eager", mode_json(r.eager, false)},
                   {"planned", mode_json(r.planned, true)},
                   {"recompute", recompute}}}};
  if (!r.recompute && s) j["recompute_note"] = s->none;
  if (s && s->batch_norms_from_output >= 0)
    j["batch_norms_from_output"] = s->batch_norms_from_output;
  if (s && s->layer_norms_from_output >= 0)
    j["layer_norms_from_output"] = s->layer_norms_from_output;
  return j;
}

namespace {

void print_row(const char* name, const ModeMemory& m) {
  std::printf("%-10s %10.2f %10.2f %11.2f %10.2f %10.2f %10.2f\n", name, to_mib(m.total),
              to_mib(m.bytes.outputs), to_mib(m.bytes.grad_inputs), to_mib(m.bytes.buffers),
              to_mib(m.bytes.params), to_mib(m.bytes.optimizer_state));
}

void print_table(const MemoryOptions& o, const MemoryReport& r, const RecomputeSummary* s) {
  std::printf("%s, batch %lld, %s, %s (MiB)\n", o.model.c_str(), static_cast<long long>(o.batch),
              mode_name(o.mode), dtype_name(o.dtype));
  std::printf("%-10s %10s %10s %11s %10s %10s %10s\n", "mode", "total", "outputs", "gradInputs",
              "buffers", "params", "optimizer");
  print_row("baseline", r.baseline);
  print_row("eager", r.eager);
  print_row("planned", r.planned);
  if (r.recompute) print_row("recompute", *r.recompute);
  const CategoryBytes &b = r.baseline.bytes, &p = r.planned.bytes;
  std::printf("%-10s %9.1f%% %9.1f%% %10.1f%% %9.1f%% %9.1f%%\n", "saving",
              saving(r.baseline.total, r.planned.total), saving(b.outputs, p.outputs),
              saving(b.grad_inputs, p.grad_inputs), saving(b.buffers, p.buffers),
              saving(b.params, p.params));
  const double gap = r.planned.lower_bound
                         ? 100.0 * (static_cast<double>(r.planned.arena) /
                                        static_cast<double>(r.planned.lower_bound) -
                                    1.0)
                         : 0.0;
  std::printf("planned arena %.2f MiB, liveness lower bound %.2f MiB (arena %.2f%% above)\n",
              to_mib(r.planned.arena), to_mib(r.planned.lower_bound), gap);
  if (r.planned.packed_outputs > 0)
    std::printf(
        "pack: %d ReLU outputs (%.2f MiB dense) wait for backward packed, outside the arena: "
        "a bit per element and the nonzero values, so their bytes depend on the data (--run "
        "measures them)\n",
        r.planned.packed_outputs, to_mib(r.planned.packed_dense));
  if (s) print_norms_from_output(s->batch_norms_from_output, s->layer_norms_from_output);
  std::printf("eager: caching allocator reserves %.2f MiB at peak\n", to_mib(r.eager.arena));
  std::printf(
      "(categories peak at different times in eager and planned; optimizer state is "
      "not in the totals)\n");
  if (s) print_recompute(o, r, *s);
}

// One real step of `config` in memory mode m from fixed weights and data: the loss (or the
// output), the bytes the executor allocated and, planned, the allocator's peak over a second
// step above what the first left held (0: the step allocates nothing). On a CUDA device, also
// the driver's figures: its used memory before the executor, after it was made and at the end.
struct StepRun {
  Tensor out;
  size_t held = 0, inputs = 0, second_step_peak = 0;
  // --pack: the packed outputs' memory after the first step and after the second.
  size_t packed_first = 0, packed = 0;
  bool driver = false;
  size_t driver_before = 0, driver_made = 0, driver_after = 0;
};

// Standard normal images and uniform labels, on the host.
void random_batch(const ModelSpec& spec, Tensor& x, Tensor& labels) {
  Rng rng(7);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (x.dtype() == DType::f32)
      x.data<float>()[i] = static_cast<float>(rng.normal());
    else
      x.data<double>()[i] = rng.normal();
  }
  for (int64_t i = 0; i < labels.numel(); ++i)
    labels.data<int32_t>()[i] = static_cast<int32_t>(rng.below(spec.classes));
}

StepRun run_step(const MemoryOptions& o, const ModelConfig& config, MemoryMode m,
                 Recompute rebuild = Recompute::none, size_t rebuild_budget = 0) {
  const ModelSpec& spec = find_model(o.model);
  Backend& be = backend_named(o.device);
  const bool cuda = be.device().kind == DeviceKind::cuda;
  // Each run from the same initial weights (the first step's update must not leak over).
  RecordedModel rec{ParamStore(1, be), nullptr, {}, {}, {}};
  record_model(rec, o, config);
  load_exported_weights(rec.store, o.model);  // an ONNX model's, not zeros
  std::optional<OptimizerConfig> optimizer;
  if (o.mode == Mode::training)
    optimizer = OptimizerConfig{.lr = 0.01, .momentum = 0.9, .kind = o.optimizer};
  Allocator& alloc = be.allocator();
  StepRun run;
  run.driver = cuda;
  be.synchronize();
  if (cuda) run.driver_before = cuda_memory_info().used();
  const size_t before = alloc.current_bytes();
  Executor ex(*rec.tape, be,
              {.mode = o.mode,
               .memory = m,
               .keep = {rec.out},
               .optimizer = optimizer,
               .workspace_limit = o.workspace_limit,
               .workspace_growth = o.workspace_growth,
               .recompute = rebuild,
               .rebuild_budget = rebuild_budget,
               .pack = o.pack && m == MemoryMode::planned && o.mode == Mode::training});
  run.held = alloc.current_bytes() - before;
  if (cuda) run.driver_made = cuda_memory_info().used();
  Tensor x = Tensor::empty(ex.input(rec.images).shape(), o.dtype);
  // Labels only in training (inference records none).
  const bool training = o.mode == Mode::training;
  Tensor labels = training ? Tensor::empty(ex.input(rec.labels).shape(), DType::i32)
                           : Tensor::empty({1}, DType::i32);
  random_batch(spec, x, labels);
  ex.set_input(rec.images, x);
  if (training) ex.set_input(rec.labels, labels);
  run.inputs = x.bytes() + (training ? labels.bytes() : 0);
  const std::vector<Tensor> extra = random_extra_inputs(spec, rec.extra_inputs, 11);
  for (size_t i = 0; i < extra.size(); ++i) {
    ex.set_input(rec.extra_inputs[i], extra[i]);
    run.inputs += extra[i].bytes();
  }
  // Planned: the first step makes the optimizer state; the second should allocate nothing.
  for (int step = 0; step < (m == MemoryMode::planned ? 2 : 1); ++step) {
    const size_t settled = alloc.current_bytes();
    alloc.reset_peaks();
    ex.forward();
    if (step == 0) run.out = clone_to_host(be, ex.value(rec.out));
    if (o.mode == Mode::training) ex.backward(rec.out);
    be.synchronize();
    run.second_step_peak = alloc.peak_bytes() - settled;
    (step == 0 ? run.packed_first : run.packed) = ex.packed_bytes();
  }
  if (cuda) run.driver_after = cuda_memory_info().used();
  return run;
}

double mib_signed(size_t to, size_t from) {
  return (static_cast<double>(to) - static_cast<double>(from)) / (1024.0 * 1024.0);
}

// Checks that a planned executor allocated exactly the report's arena (plus the inputs) and
// that a step allocates nothing more (with packed outputs: only what their memory grew by, and
// that memory within their dense bytes, a bit per element, a header and spare elements each);
// on a CUDA device, prints what the driver saw.
void check_planned_run(const char* name, const StepRun& run, size_t arena,
                       const ModeMemory& planned) {
  std::printf(
      "run: %s executor allocated %zu bytes = arena %zu + inputs %zu (report: %s); a second "
      "step allocates %zu bytes more\n",
      name, run.held, run.held - run.inputs, run.inputs,
      run.held == arena + run.inputs ? "equal" : "DIFFERENT", run.second_step_peak);
  const double dense = static_cast<double>(planned.packed_dense);
  const size_t grown = run.packed - run.packed_first;
  if (planned.packed_outputs > 0)
    std::printf(
        "run: %s: the packed ReLU outputs hold %.2f MiB, %.1f%% of their %.2f MiB dense (the "
        "step's data), kept for the next step, which grew them by %.2f MiB\n",
        name, to_mib(run.packed), 100.0 * static_cast<double>(run.packed) / dense,
        to_mib(planned.packed_dense), to_mib(grown));
  if (run.driver)
    std::printf(
        "run: %s, the driver's used device memory: +%.2f MiB as the executor was made (it "
        "allocated %.2f MiB), +%.2f MiB more over two steps (cuDNN, cuBLAS and optimizer state)\n",
        name, mib_signed(run.driver_made, run.driver_before), to_mib(run.held),
        mib_signed(run.driver_after, run.driver_made));
  const bool packed_fit =
      static_cast<double>(run.packed) <= dense * (1 + 1.0 / 32) + 65536.0 * planned.packed_outputs;
  FRUGAL_CHECK(run.held == arena + run.inputs && run.second_step_peak <= grown && packed_fit,
               "memory --run: ", name, " measured ", run.held, " bytes, ", run.second_step_peak,
               " more in a second step and ", run.packed, " packed (", grown, " grown); planned ",
               arena + run.inputs, " and packed outputs of ", planned.packed_dense, " dense bytes");
}

// Runs one real step in planned and baseline memory (and with recomputation, where the report
// has it) and checks that the allocator handed out exactly the planned bytes, and that every
// run gives the baseline's loss bits.
void run_and_compare(const MemoryOptions& o, const MemoryReport& r) {
  const StepRun planned = run_step(o, stored_config(o), MemoryMode::planned);
  check_planned_run("planned", planned, r.planned.arena, r.planned);
  const StepRun baseline = run_step(o, stored_config(o), MemoryMode::baseline);
  std::printf("run: baseline executor allocated %zu bytes\n", baseline.held);
  const char* what = o.mode == Mode::training ? "losses" : "outputs";
  const bool same = bitwise_equal(planned.out, baseline.out);
  std::printf("run: planned and baseline %s are %s\n", what, same ? "bitwise equal" : "DIFFERENT");
  FRUGAL_CHECK(same, "memory --run: planned and baseline results differ");
  if (!r.recompute) return;
  const std::optional<ModelConfig> config = recompute_config(o);
  const StepRun recompute = run_step(o, config ? *config : stored_config(o), MemoryMode::planned,
                                     o.recompute, o.rebuild_budget);
  check_planned_run("recompute", recompute, r.recompute->arena, *r.recompute);
  const bool equal = bitwise_equal(recompute.out, baseline.out);
  std::printf("run: recompute and baseline %s are %s\n", what,
              equal ? "bitwise equal" : "DIFFERENT");
  FRUGAL_CHECK(equal, "memory --run: recompute and baseline results differ");
}

}  // namespace

MemoryReport memory_report_for(const MemoryOptions& o, RecomputeSummary* summary) {
  RecordedModel rec{ParamStore::shapes_only(), nullptr, {}, {}, {}};
  record_model(rec, o, stored_config(o));
  if (summary && o.bn_from_output) summary->batch_norms_from_output = rec.batch_norms_from_output;
  if (summary && o.ln_from_output) summary->layer_norms_from_output = rec.layer_norms_from_output;
  Backend& be = backend_named(o.device);
  MemoryReport r = memory_report(*rec.tape, o.mode, be,
                                 {.keep = {rec.out.id()},
                                  .workspace_limit = o.workspace_limit,
                                  .workspace_growth = o.workspace_growth,
                                  .pack = o.pack});
  const std::optional<ModelConfig> config = recompute_config(o);
  const bool rebuilds =
      o.mode == Mode::training && (o.recompute != Recompute::none || o.rebuild_budget > 0);
  if (config || rebuilds) {
    RecordedModel again{ParamStore::shapes_only(), nullptr, {}, {}, {}};
    record_model(again, o, config ? *config : stored_config(o));
    const ReportOptions ro{.keep = {again.out.id()},
                           .workspace_limit = o.workspace_limit,
                           .workspace_growth = o.workspace_growth,
                           .recompute = rebuilds ? o.recompute : Recompute::none,
                           .rebuild_budget = o.rebuild_budget,
                           .pack = o.pack};
    Layout layout;
    r.recompute = planned_memory(*again.tape, o.mode, be, ro, &layout);
    if (summary) {
      summary->forward_flops = forward_flops(*rec.tape);
      summary->recompute_flops =
          summary->forward_flops - forward_flops(*again.tape) + inner_checkpoint_flops(*again.tape);
      if (rebuilds) {
        summary->rebuilds = rebuild_summary(*again.tape, layout);
        summary->recompute_flops += summary->rebuilds->flops;
      }
    }
  }
  if (summary) describe_recompute(o, config.has_value(), *summary);
  return r;
}

namespace {

// The planned layout over the step (with recomputation where the network has it): an SVG
// timeline and/or a Chrome trace.
void write_pictures(const MemoryOptions& o) {
  if (o.timeline.empty() && o.trace.empty()) return;
  RecordedModel rec{ParamStore::shapes_only(), nullptr, {}, {}, {}};
  record_model(rec, o);
  const Layout layout = recorded_layout(rec, o, MemoryMode::planned);
  const std::string title =
      o.model + ", batch " + std::to_string(o.batch) + ", " + mode_name(o.mode) + ", " +
      dtype_name(o.dtype) + ", planned" +
      (recompute_config(o) || o.recompute != Recompute::none ? " + recompute" : "");
  std::FILE* note = o.json ? stderr : stdout;
  if (!o.timeline.empty()) {
    write_text_file(o.timeline, timeline_svg(layout, title), "memory --timeline");
    std::fprintf(note, "wrote %s\n", o.timeline.c_str());
  }
  if (!o.trace.empty()) {
    write_text_file(o.trace, trace_json(layout, title), "memory --trace");
    std::fprintf(note, "wrote %s (open in https://ui.perfetto.dev or chrome://tracing)\n",
                 o.trace.c_str());
  }
}

}  // namespace

void run_memory(const MemoryOptions& options) {
  MemoryOptions o = options;
  FRUGAL_CHECK(!o.sim_choices || o.device == "sim",
               "memory --sim-scratch-choices: made-up choices of the simulated device; add "
               "--device sim");
  set_sim_scratch_choices(o.sim_choices);
  FRUGAL_CHECK(!o.pack || o.mode == Mode::training,
               "memory --pack: keeps ReLU outputs packed for backward; use --mode training");
  check_from_output_flags(o, "memory");
  FRUGAL_CHECK(o.recompute == Recompute::none || o.mode == Mode::training, "memory --recompute ",
               recompute_name(o.recompute),
               ": rebuilds activations for backward; use --mode training");
  RecomputeSummary s;
  if (o.memory_budget > 0 && find_model(o.model).chain_blocks == 0) {
    // No chain of blocks to checkpoint: op outputs rebuilt until the arena fits.
    FRUGAL_CHECK(o.mode == Mode::training,
                 "memory --memory-budget: rebuilding saves memory for "
                 "backward; use --mode training");
    o.rebuild_budget = o.memory_budget;
  } else if (o.memory_budget > 0) {
    apply_memory_budget(o, s);
  }
  const MemoryReport r = memory_report_for(o, &s);
  FRUGAL_CHECK(!s.budget || (r.recompute && r.recompute->arena == s.budget->planned_peak),
               "memory --memory-budget: the report plans ", r.recompute ? r.recompute->arena : 0,
               " bytes where the budget's schedule planned ", s.budget->planned_peak);
  if (o.json) {
    ordered_json j = memory_report_json(o, r, &s);
    if (o.ranks > 1) j["per_rank"] = print_ranks(o, false);
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_table(o, r, &s);
    if (o.ranks > 1) print_ranks(o, true);
  }
  print_workspaces(o);
  if (o.ops) print_ops(o);
  write_pictures(o);
  if (o.run) run_and_compare(o, r);
}

void print_model_list() {
  for (const ModelSpec& s : model_specs())
    std::printf("%-11s %s\n", s.name.c_str(), s.description.c_str());
}

Action add_memory_command(CLI::App& app) {
  auto o = std::make_shared<MemoryOptions>();
  auto list = std::make_shared<bool>(false);
  auto tables = std::make_shared<bool>(false);
  CLI::App* c = app.add_subcommand(
      "memory",
      "Memory of a bundled network per mode (baseline, eager, planned, recompute), from shapes");
  add_model_options(c, o);
  c->add_flag("--json", o->json, "Print one JSON object (byte counts)");
  c->add_flag("--run", o->run, "Also run one real step: measured bytes must equal planned bytes");
  c->add_flag("--ops", o->ops,
              "Training: one row per op saying what the planned step (with --recompute, its "
              "rebuilds) does with its output for backward: kept, compact (a 1-bit mask), "
              "rebuilt (the step it is rebuilt at) or not read");
  c->add_flag("--workspaces", o->workspaces,
              "List each convolution pass's algorithm and workspace where the device has a "
              "choice (CUDA: cuDNN's), beside the fastest within the limit");
  c->add_flag("--sim-scratch-choices", o->sim_choices,
              "With --device sim: each convolution pass offers three made-up scratch choices as "
              "cuDNN's algorithms do, to try the workspace choice (--workspaces, "
              "--workspace-growth) without a GPU");
  c->add_option("--timeline", o->timeline,
                "Write live bytes over the step (planned layout) as an SVG to this file");
  c->add_option(
      "--trace", o->trace,
      "Write the planned layout as Chrome trace events (JSON, for Perfetto) to this file");
  c->add_option("--ranks", o->ranks,
                "Training over this many data-parallel ranks: also report one rank's memory "
                "(its slice of --batch, gradient buckets, optimizer state whole or sharded)")
      ->check(whole_number(1, 1 << 20));
  c->add_option("--zero", o->zero,
                "With --ranks: ZeRO stage (0, 1 or 2: optimizer state sharded over the ranks "
                "from 1 on)")
      ->check(CLI::Range(0, 2));
  add_bytes_option(c, "--bucket-size", &o->bucket_bytes,
                   "With --ranks: bytes of gradients per bucket (default: the executor's)");
  c->add_flag("--list", *list, "List the bundled networks");
  c->add_flag("--optnet-tables", *tables,
              "optnet's three published conditions, frugal beside optnet (with --json: an array)");
  return [o, list, tables] {
    if (*list) return print_model_list();
    if (*tables) return run_optnet_tables(o->json);
    run_memory(*o);
  };
}

}  // namespace frugal
