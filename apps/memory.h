// `frugal memory`: the memory of one bundled network in one configuration, per mode
// (baseline, eager, planned) and optnet category, as a table or JSON; `--optnet-tables`
// sets frugal's figures beside optnet's published ones.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "autograd/op.h"
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
  bool run = false;  // also execute one real step and compare measured with planned bytes
};

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
