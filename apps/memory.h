// `frugal memory`: the memory of one bundled network in one configuration, per mode
// (baseline, eager, planned) and optnet category, as a table or JSON; `--optnet-tables`
// sets frugal's figures beside optnet's published ones; `--timeline` and `--trace` draw the
// planned layout over the step.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "autograd/executor.h"
#include "autograd/op.h"
#include "autograd/tape.h"
#include "memory/layout.h"
#include "memory/report.h"

namespace frugal {

struct MemoryOptions {
  std::string model = "resnet110";
  int64_t batch = 64;
  Mode mode = Mode::training;
  DType dtype = DType::f32;
  bool dropout = true;
  bool batch_norm = true;
  bool json = false;
  bool run = false;           // also execute one real step and compare measured with planned bytes
  std::string timeline = {};  // write the planned layout's live bytes over the step here (SVG)
  std::string trace = {};     // write the planned layout as Chrome trace events here (JSON)
};

// A bundled network recorded over a batch: the loss in training, the output in inference.
struct RecordedModel {
  ParamStore store;
  std::unique_ptr<Tape> tape;
  Value images, labels, out;
};
// Records options.model over a batch of options.batch (throws frugal::Error on bad options).
void record_model(RecordedModel& r, const MemoryOptions& options);
// The layout the report plans in memory mode m for this recording (executor-equal).
Layout recorded_layout(RecordedModel& r, const MemoryOptions& options, MemoryMode m);
// Writes `text` to `path`, throwing frugal::Error naming `what` and the path when it cannot.
void write_text_file(const std::string& path, const std::string& text, const char* what);

// Records the network with shapes only and plans it in every mode.
MemoryReport memory_report_for(const MemoryOptions& options);
// The report as one JSON object: {"model","batch","mode","dtype","modes":{...}}.
nlohmann::ordered_json memory_report_json(const MemoryOptions& options, const MemoryReport& r);
// Prints the report for one configuration. Throws frugal::Error on bad options, or when a
// real step's measured bytes differ from the plan.
void run_memory(const MemoryOptions& options);
// optnet's three published conditions, ours beside theirs, row by row.
void run_optnet_tables(bool json);
// The bundled networks, one per line.
void print_model_list();

}  // namespace frugal
