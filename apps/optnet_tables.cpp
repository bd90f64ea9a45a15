// `frugal memory --optnet-tables`: optnet's three published conditions
// (the figures of optnet's README, listed in docs/MEMORY.md), frugal's planned-vs-baseline saving
// beside optnet's.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/memory.h"
#include "models/registry.h"
#include "report/report.h"

namespace frugal {

namespace {

// optnet's published figures in MiB, off -> on, per category (-1: not published).
struct Published {
  const char* model;
  double off_total, off_outputs, off_grad_inputs, off_buffers, off_params;
  double on_total, on_outputs, on_grad_inputs, on_buffers, on_params;
};

struct Condition {
  const char* name;
  const char* title;
  Mode mode;
  int64_t batch;
  DType dtype;
  bool dropout, resnet_bn;
  std::vector<const char*> categories;
  std::vector<Published> rows;
};

const std::vector<Condition>& conditions() {
  static const std::vector<Condition> c = {
      {"inference-cpu-b1-f64",
       "Inference, CPU, batch 1, double (with Dropout; ResNet-110 with BN)",
       Mode::inference,
       1,
       DType::f64,
       true,
       true,
       {"total", "outputs", "buffers", "params"},
       {{"alexnet", 973, 6, -1, 43, 924, 472, 1.5, -1, 9, 462},
        {"vgg-a", 2311, 69, -1, 215, 2027, 1106, 31, -1, 61, 1014},
        {"googlenet", 505, 69, -1, 145, 292, 193, 31, -1, 16, 146},
        {"resnet110", 113, 16, -1, 71, 26, 15, 0.5, -1, 1.3, 13}}},
      {"inference-b128-f32",
       "Inference, batch 128, float (optnet: cuDNN, no im2col buffers)",
       Mode::inference,
       128,
       DType::f32,
       true,
       true,
       {"total", "outputs", "params"},
       {{"alexnet", 859, 397, -1, -1, 462, 328, 97, -1, -1, 231},
        {"vgg-a", 5400, 4386, -1, -1, 1014, 2467, 1960, -1, -1, 507},
        {"googlenet", 4536, 4390, -1, -1, 146, 2066, 1993, -1, -1, 73},
        {"resnet110", 1049, 1036, -1, -1, 13, 39, 32, -1, -1, 7}}},
      {"training-b64-f32",
       "Training, batch 64, float (no Dropout; ResNet-110 without BN)",
       Mode::training,
       64,
       DType::f32,
       false,
       false,
       {"total", "outputs", "gradInputs", "params"},
       {{"alexnet", 963, 195, 303, -1, 462, 816, 195, 156, -1, 462},
        {"vgg-a", 5433, 2191, 2228, -1, 1014, 4228, 2191, 1023, -1, 1014},
        {"googlenet", 6092, 2195, 3346, -1, 146, 4844, 2195, 2098, -1, 146},
        {"resnet110", 664, 259, 392, -1, 13, 428, 259, 156, -1, 13}}},
  };
  return c;
}

double pct(double off, double on) {
  return off > 0 ? 100.0 * (1.0 - on / off) : 0.0;
}

// (ours off, ours on, optnet off, optnet on) for one category.
struct Cell {
  double off, on, p_off, p_on;
};

Cell cell(const std::string& category, const MemoryReport& r, const Published& p) {
  const CategoryBytes &b = r.baseline.bytes, &q = r.planned.bytes;
  auto m = [](size_t x) { return static_cast<double>(x) / (1024.0 * 1024.0); };
  if (category == "total")
    return {m(r.baseline.total), m(r.planned.total), p.off_total, p.on_total};
  if (category == "outputs") return {m(b.outputs), m(q.outputs), p.off_outputs, p.on_outputs};
  if (category == "gradInputs")
    return {m(b.grad_inputs), m(q.grad_inputs), p.off_grad_inputs, p.on_grad_inputs};
  if (category == "buffers") return {m(b.buffers), m(q.buffers), p.off_buffers, p.on_buffers};
  return {m(b.params), m(q.params), p.off_params, p.on_params};
}

}  // namespace

void run_optnet_tables(bool json) {
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const Condition& c : conditions()) {
    if (!json) {
      std::printf("\n%s\n%-10s", c.title, "network");
      for (const char* cat : c.categories) std::printf(" | %-33s", cat);
      std::printf("\n%-10s", "");
      for (size_t i = 0; i < c.categories.size(); ++i)
        std::printf(" | %-33s", "frugal MiB off->on  saving (optnet)");
      std::printf("\n");
    }
    for (const Published& p : c.rows) {
      MemoryOptions o;
      o.model = p.model;
      o.batch = c.batch;
      o.mode = c.mode;
      o.dtype = c.dtype;
      o.dropout = c.dropout;
      o.batch_norm = c.resnet_bn || std::string(p.model) != "resnet110";
      const MemoryReport r = memory_report_for(o);
      if (json) {
        nlohmann::ordered_json j = memory_report_json(o, r);
        j["condition"] = c.name;
        nlohmann::ordered_json pub;
        for (const char* cat : c.categories) {
          Cell x = cell(cat, r, p);
          pub[cat] = {{"off_mib", x.p_off}, {"on_mib", x.p_on}, {"saving", pct(x.p_off, x.p_on)}};
        }
        j["optnet"] = pub;
        all.push_back(j);
        continue;
      }
      std::printf("%-10s", p.model);
      for (const char* cat : c.categories) {
        Cell x = cell(cat, r, p);
        std::printf(" | %8.1f->%8.1f %5.1f%% (%3.0f%%)", x.off, x.on, pct(x.off, x.on),
                    pct(x.p_off, x.p_on));
      }
      std::printf("\n");
    }
  }
  if (json) std::printf("%s\n", all.dump(2).c_str());
}

}  // namespace frugal
