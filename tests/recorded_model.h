// A bundled network recorded at batch 2 and summarized for the model tests: trainable
// elements, output shape, op names in tape order and parameter names.
#pragma once

#include <string>
#include <vector>

#include "autograd/tape.h"
#include "models/registry.h"

namespace frugal::testing {

struct Recorded {
  size_t params = 0;               // trainable elements
  Shape output;                    // of the network at batch 2
  std::vector<std::string> ops;    // op names in tape order
  std::vector<std::string> names;  // parameter names
  int count(const std::string& op) const {
    int n = 0;
    for (const std::string& name : ops) n += name == op;
    return n;
  }
  bool has_param(const std::string& name) const {
    for (const std::string& n : names)
      if (n == name) return true;
    return false;
  }
};

// Records model `name` at batch 2 in f32 (recording allocates only the parameters, or nothing
// on a shapes-only store).
inline Recorded record_model(const std::string& name, const ModelConfig& config = {},
                             bool shapes_only = false) {
  const ModelSpec& spec = find_model(name);
  ParamStore store = shapes_only ? ParamStore::shapes_only() : ParamStore(1);
  Tape tape(store, DType::f32);
  Shape input{2, spec.input[0], spec.input[1], spec.input[2]};
  Value y = spec.build(tape.input("images", input, DType::f32), config);
  Recorded r{store.count_elements(true), y.shape(), {}, {}};
  for (const OpNode& op : tape.ops()) r.ops.push_back(op.op->name());
  for (Parameter* p : store.all()) r.names.push_back(p->name);
  return r;
}

}  // namespace frugal::testing
