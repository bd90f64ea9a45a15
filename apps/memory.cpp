// `frugal memory`: reports from memory/report.h for the bundled networks.
#include "apps/memory.h"

#include "apps/commands.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "autograd/executor.h"
#include "core/rng.h"
#include "memory/report.h"
#include "memory/timeline.h"
#include "models/registry.h"

namespace frugal {

using nlohmann::ordered_json;

void record_model(RecordedModel& r, const MemoryOptions& o) {
  const ModelSpec& spec = find_model(o.model);
  FRUGAL_CHECK(o.batch > 0, "memory: batch must be positive, got ", o.batch);
  r.tape = std::make_unique<Tape>(r.store, o.dtype);
  std::vector<int64_t> dims{o.batch};
  for (int64_t d : spec.input.dims()) dims.push_back(d);
  r.images = r.tape->input("images", Shape(dims), o.dtype);
  r.labels = r.tape->input("labels", {o.batch}, DType::i32);
  Value y = spec.build(r.images, {.dropout = o.dropout, .batch_norm = o.batch_norm});
  r.out = o.mode == Mode::training ? model_loss(spec, y, r.labels) : y;
}

Layout recorded_layout(RecordedModel& r, const MemoryOptions& o, MemoryMode m) {
  const ReportOptions ro{.keep = {r.out.id()}};
  return memory_layout(*r.tape, o.mode, m, cpu_backend(), report_layout_options(o.mode, ro));
}

void write_text_file(const std::string& path, const std::string& text, const char* what) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  FRUGAL_CHECK(f != nullptr, what, ": cannot open '", path, "' for writing");
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  FRUGAL_CHECK(std::fclose(f) == 0 && ok, what, ": cannot write '", path, "'");
}

namespace {

double mib(size_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

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
  } else if (m.arena) {
    j["reserved"] = m.arena;
  }
  return j;
}

}  // namespace

ordered_json memory_report_json(const MemoryOptions& o, const MemoryReport& r) {
  return {{"model", o.model},
          {"batch", o.batch},
          {"mode", mode_name(o.mode)},
          {"dtype", dtype_name(o.dtype)},
          {"modes",
           {{"baseline", mode_json(r.baseline, false)},
            {"eager", mode_json(r.eager, false)},
            {"planned", mode_json(r.planned, true)}}}};
}

namespace {

void print_row(const char* name, const ModeMemory& m) {
  std::printf("%-10s %10.2f %10.2f %11.2f %10.2f %10.2f %10.2f\n", name, mib(m.total),
              mib(m.bytes.outputs), mib(m.bytes.grad_inputs), mib(m.bytes.buffers),
              mib(m.bytes.params), mib(m.bytes.optimizer_state));
}

void print_table(const MemoryOptions& o, const MemoryReport& r) {
  std::printf("%s, batch %lld, %s, %s (MiB)\n", o.model.c_str(), static_cast<long long>(o.batch),
              mode_name(o.mode), dtype_name(o.dtype));
  std::printf("%-10s %10s %10s %11s %10s %10s %10s\n", "mode", "total", "outputs", "gradInputs",
              "buffers", "params", "optimizer");
  print_row("baseline", r.baseline);
  print_row("eager", r.eager);
  print_row("planned", r.planned);
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
              mib(r.planned.arena), mib(r.planned.lower_bound), gap);
  std::printf("eager: caching allocator reserves %.2f MiB at peak\n", mib(r.eager.arena));
  std::printf(
      "(categories peak at different times in eager and planned; optimizer state is "
      "not in the totals)\n");
}

// Runs one real step in planned and baseline memory and checks that the allocator handed out
// exactly the planned bytes, and that both modes give the same loss bits.
void run_and_compare(const MemoryOptions& o, const MemoryReport& r) {
  const ModelSpec& spec = find_model(o.model);
  std::vector<Tensor> results;
  for (MemoryMode m : {MemoryMode::planned, MemoryMode::baseline}) {
    // Each mode from the same initial weights (the first step's update must not leak over).
    RecordedModel rec{ParamStore(1), nullptr, {}, {}, {}};
    record_model(rec, o);
    std::optional<SgdConfig> sgd;
    if (o.mode == Mode::training) sgd = SgdConfig{.lr = 0.01, .momentum = 0.9};
    const size_t before = cpu_allocator().current_bytes();
    Executor ex(*rec.tape, cpu_backend(),
                {.mode = o.mode, .memory = m, .keep = {rec.out}, .sgd = sgd});
    const size_t held = cpu_allocator().current_bytes() - before;
    Tensor& x = ex.input(rec.images);
    Rng rng(7);
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (o.dtype == DType::f32)
        x.data<float>()[i] = static_cast<float>(rng.normal());
      else
        x.data<double>()[i] = rng.normal();
    }
    Tensor& labels = ex.input(rec.labels);
    for (int64_t i = 0; i < labels.numel(); ++i)
      labels.data<int32_t>()[i] = static_cast<int32_t>(rng.below(spec.classes));
    ex.forward();
    Tensor out = Tensor::empty(ex.value(rec.out).shape(), ex.value(rec.out).dtype());
    copy_bytes(ex.value(rec.out), out);
    if (o.mode == Mode::training) ex.backward(rec.out);
    results.push_back(out);
    const size_t inputs = x.bytes() + labels.bytes();
    if (m == MemoryMode::planned) {
      std::printf(
          "run: planned executor allocated %zu bytes = arena %zu + inputs %zu; report "
          "planned arena %zu: %s\n",
          held, ex.arena_bytes(), inputs, r.planned.arena,
          held == r.planned.arena + inputs ? "equal" : "DIFFERENT");
      FRUGAL_CHECK(held == r.planned.arena + inputs, "memory --run: measured ", held,
                   " bytes, planned ", r.planned.arena + inputs);
    } else {
      std::printf("run: baseline executor allocated %zu bytes\n", held);
    }
  }
  const bool same = bitwise_equal(results[0], results[1]);
  std::printf("run: planned and baseline %s are %s\n",
              o.mode == Mode::training ? "losses" : "outputs",
              same ? "bitwise equal" : "DIFFERENT");
  FRUGAL_CHECK(same, "memory --run: planned and baseline results differ");
}

}  // namespace

MemoryReport memory_report_for(const MemoryOptions& o) {
  RecordedModel rec{ParamStore::shapes_only(), nullptr, {}, {}, {}};
  record_model(rec, o);
  ReportOptions ro{.keep = {rec.out.id()}};
  return memory_report(*rec.tape, o.mode, cpu_backend(), ro);
}

namespace {

// The planned layout over the step: an SVG timeline and/or a Chrome trace.
void write_pictures(const MemoryOptions& o) {
  if (o.timeline.empty() && o.trace.empty()) return;
  RecordedModel rec{ParamStore::shapes_only(), nullptr, {}, {}, {}};
  record_model(rec, o);
  const Layout layout = recorded_layout(rec, o, MemoryMode::planned);
  const std::string title = o.model + ", batch " + std::to_string(o.batch) + ", " +
                            mode_name(o.mode) + ", " + dtype_name(o.dtype) + ", planned";
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

void run_memory(const MemoryOptions& o) {
  const MemoryReport r = memory_report_for(o);
  if (o.json)
    std::printf("%s\n", memory_report_json(o, r).dump(2).c_str());
  else
    print_table(o, r);
  write_pictures(o);
  if (o.run) run_and_compare(o, r);
}

void print_model_list() {
  for (const ModelSpec& s : model_specs())
    std::printf("%-11s %s\n", s.name.c_str(), s.description.c_str());
}

Action add_memory_command(CLI::App& app) {
  auto o = std::make_shared<MemoryOptions>();
  auto mode = std::make_shared<std::string>("training");
  auto dtype = std::make_shared<std::string>("f32");
  auto list = std::make_shared<bool>(false);
  auto tables = std::make_shared<bool>(false);
  CLI::App* c = app.add_subcommand(
      "memory", "Memory of a bundled network per mode (baseline, eager, planned), from shapes");
  std::vector<std::string> names;
  for (const ModelSpec& s : model_specs()) names.push_back(s.name);
  c->add_option("--model", o->model, "Network (see --list)")
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  c->add_option("--batch", o->batch, "Batch size")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  c->add_option("--mode", *mode, "inference or training")
      ->check(CLI::IsMember({"inference", "training"}))
      ->capture_default_str();
  c->add_option("--dtype", *dtype, "f32 or f64")
      ->check(CLI::IsMember({"f32", "f64"}))
      ->capture_default_str();
  c->add_flag(
      "--no-dropout", [o](int64_t) { o->dropout = false; }, "Leave Dropout out");
  c->add_flag(
      "--no-batch-norm", [o](int64_t) { o->batch_norm = false; }, "Leave BatchNorm out (ResNets)");
  c->add_flag("--json", o->json, "Print one JSON object (byte counts)");
  c->add_flag("--run", o->run, "Also run one real step: measured bytes must equal planned bytes");
  c->add_option("--timeline", o->timeline,
                "Write live bytes over the step (planned layout) as an SVG to this file");
  c->add_option(
      "--trace", o->trace,
      "Write the planned layout as Chrome trace events (JSON, for Perfetto) to this file");
  c->add_flag("--list", *list, "List the bundled networks");
  c->add_flag("--optnet-tables", *tables,
              "optnet's three published conditions, frugal beside optnet (with --json: an array)");
  return [o, mode, dtype, list, tables] {
    if (*list) return print_model_list();
    if (*tables) return run_optnet_tables(o->json);
    o->mode = *mode == "inference" ? Mode::inference : Mode::training;
    o->dtype = parse_dtype(*dtype);
    run_memory(*o);
  };
}

}  // namespace frugal
